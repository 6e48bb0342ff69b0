"""The fidelity ledger: claim by claim, whether each paper's findings hold on a run's data.

Modules: `claims` (one `Claim` type with its source's place, sentence, test and threshold;
findings and their comparisons, the Effect Ratio and ΔRI), `sources` (the
tables each notebook writes that the ledger reads), `datasets` (the papers' datasets, as a
run declares them), one module per paper (`noniid`,
`bilambdamart`, `foltr`, `xgboost_tutorial`), `ledger` (``fidelity.md``,
``fidelity_claims.csv``, ``fidelity_effects.csv`` and ``fidelity.csv`` of a run; ``ltrlib fidelity
RUN_DIR``), and `across` (every check decided across seeds by a rule written before the
runs). ``tests/fidelity/test_guard.py`` holds every claim to holding, failing and being
unavailable on small tables.
"""

from ltrlib.fidelity.across import across_runs, decide_across
from ltrlib.fidelity.bilambdamart import across_seeds
from ltrlib.fidelity.claims import (
    CLAIM_COLUMNS,
    EFFECT_COLUMNS,
    VERDICTS,
    Claim,
    Comparison,
    Effect,
    Finding,
    decide,
    delta_ri,
    effect_ratio,
)
from ltrlib.fidelity.ledger import (
    FIDELITY_CLAIMS_CSV,
    FIDELITY_CSV,
    FIDELITY_EFFECTS_CSV,
    FIDELITY_HTML,
    FIDELITY_MD,
    FIDELITY_PUBLISHED_CSV,
    PAPERS,
    fidelity_report,
    ledger_html,
    summary_table,
    verdict_frame,
    write_fidelity,
)
from ltrlib.fidelity.xgboost_tutorial import tutorial_claims

__all__ = [
    "across_seeds", "CLAIM_COLUMNS", "EFFECT_COLUMNS", "VERDICTS", "Claim", "Comparison", "Effect", "Finding",
    "decide", "delta_ri", "effect_ratio", "FIDELITY_CLAIMS_CSV", "FIDELITY_CSV", "FIDELITY_EFFECTS_CSV",
    "FIDELITY_HTML", "FIDELITY_MD", "FIDELITY_PUBLISHED_CSV", "PAPERS", "across_runs", "decide_across",
    "fidelity_report", "ledger_html", "summary_table", "verdict_frame", "write_fidelity", "tutorial_claims",
]
