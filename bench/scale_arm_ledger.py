"""What the non-IID paper's section of a one-seed ledger says at two scales, claim by claim
(issue 62, item 3: the scale arm).

Reads two run folders of notebooks 00-05 at the same seed and setup but for the scale (e.g.
the scale arm's recorded seed, ``reports/scale-arm-paper/seeds/seed0``, and
``reports/ledger-small/seeds/seed0``), rebuilds each one's ledger from its tables by today's
checks (the runs ran different code), and prints, as Markdown (`ltrlib.fidelity.beside`):

* the counted checks (the paper's claims in its scopes) by verdict at each scale, and how
  many changed verdict, from what to what;
* every counted check at both scales, verdict and evidence, with ``--study``'s across-seed
  verdict beside them, its seeds read by today's checks and its own rule (e.g.
  ``reports/ledger-small``: what five seeds at the smaller scale decide);
* each comparison's Effect Ratio at both scales.

Runs that differ in more than the scale (seed, parameters) are refused, naming what differs.
One seed decides nothing across seeds; this says whether the scale moves a verdict at it.

    .venv/bin/python bench/scale_arm_ledger.py reports/ledger-small/seeds/seed0 \\
        reports/scale-arm-paper/seeds/seed0 --study reports/ledger-small [--csv out.csv]
"""

from __future__ import annotations

import argparse
from pathlib import Path


from ltrlib.fidelity.across import rule_version
from ltrlib.fidelity.beside import ledgers_beside, setup_difference
from ltrlib.fidelity.noniid import SOURCE
from ltrlib.report import table_to_markdown
from ltrlib.studies import ledger_reading
from ltrlib.study_record import StudyDesign

NOTEBOOKS = ("00_dataset_overview", "01_category_analysis", "02_split_stats", "03_client_models", "04_linear_merge",
             "05_stacking")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("smaller", type=Path, help="run folder (or a study's recorded seed) at the smaller scale")
    parser.add_argument("larger", type=Path, help="run folder (or recorded seed) at the larger scale")
    parser.add_argument("--study", type=Path, help="a study folder whose across-seed verdicts to show beside")
    parser.add_argument("--csv", type=Path, help="write every check at both scales here")
    args = parser.parse_args()
    differ = setup_difference(args.smaller, args.larger, NOTEBOOKS)
    scales = differ.get("run", {}).pop("scale", None)
    if scales is None:
        raise SystemExit(f"{args.smaller} and {args.larger} ran at the same scale: nothing to compare")
    differ = {part: d for part, d in differ.items() if d}
    if differ:
        raise SystemExit(f"the runs differ beyond their scale: {differ}")
    # Both ledgers by today's checks: the runs ran different code, and a check mended between
    # them would otherwise read as a change of scale.
    side = ledgers_beside(args.smaller, args.larger, SOURCE, tuple(f"scale {s}" for s in scales), today=True)
    small, large = side.labels
    print(f"Non-IID checks, one seed at two scales ({args.smaller} against {args.larger}), both ledgers "
          "rebuilt from the runs' tables by today's checks.\n")
    print(side.counts_markdown("changed verdict with the scale"), end="")
    table = side.counted.reset_index()[["claim", "scope", f"ours ({small})", f"ours ({large})",
                                        f"evidence ({small})", f"evidence ({large})"]]
    if args.study is not None:
        # The study's seeds by today's checks and its own rule (a mended check's recorded
        # verdict would be another check's).
        rule = rule_version(StudyDesign.read(args.study))
        across, _ = ledger_reading(args.study, rule)
        across = across[across.source == SOURCE].set_index(["claim", "scope"])["verdict"]
        table.insert(4, f"across seeds ({args.study.name}, today's checks, rule {rule})",
                     [across.get((c, s), "not in the study") for c, s in zip(table.claim, table.scope)])
    print("Every counted check:\n")
    print(table_to_markdown(table), "\n")
    print(side.ratios_markdown(), end="")
    if args.csv:
        side.both.to_csv(args.csv)


if __name__ == "__main__":
    main()
