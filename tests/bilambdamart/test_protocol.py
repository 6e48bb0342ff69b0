"""`make bilambdamart-paper` runs exactly what notebook 06's header calls the paper's protocol."""

import re

from ltrlib import config


def _settings(text: str) -> dict[str, str]:
    return dict(re.findall(r"-p\s+(\w+)\s+(\S+)", text))


def test_makefile_target_runs_the_protocol_the_notebook_header_states():
    notebook = (config.PROJ_ROOT / "notebooks" / "06_bilambdamart.py").read_text(encoding="utf-8")
    header = re.search(r"The paper's protocol, as `make bilambdamart-paper` runs it: `(.*?)`\.",
                       notebook.replace("\n# ", " "), re.S)
    assert header, "notebook 06's header no longer states the paper's protocol"
    makefile = (config.PROJ_ROOT / "Makefile").read_text(encoding="utf-8")
    target = re.search(r"^bilambdamart-paper:.*?\n((?:\t.*\n)+)", makefile, re.M)
    assert target, "the Makefile has no bilambdamart-paper target"
    stated, run = _settings(header.group(1)), _settings(target.group(1).replace("\\\n", " "))
    assert stated == run
    # The protocol's parts the issue names, so the two cannot agree on too little.
    assert {"folds", "stage1_trials", "stage2_features", "train_queries", "n_trials"} <= set(stated)
    assert (stated["stage2_features"], stated["train_queries"], stated["folds"]) == ("0", "0", "10")
    # Every one is a parameter the notebook declares.
    for name in stated:
        assert re.search(rf"^{name}: \w+ = ", notebook, re.M), name


def test_readme_quotes_the_committed_study_verdict():
    """The README, notebook 06 (which prints it) and fidelity.md (which embeds it) give the
    central claim in the same words: both committed studies' `study_verdicts`."""
    from ltrlib.bilambdamart.preregistration import study_verdicts

    readme = (config.PROJ_ROOT / "README.md").read_text(encoding="utf-8")
    assert study_verdicts() in " ".join(readme.split()), "README's Bi-LambdaMART verdict is not the studies'"
