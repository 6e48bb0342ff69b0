"""What the FOLTR section of a one-seed ledger says at two protocols, claim by claim (issue 60).

Reads two run folders of notebook 07 (same data, scale and seed; e.g. the batch's T = 300
and ``-p profile paper``'s T = 10,000), each with the ledger its run wrote
(``fidelity_claims.csv``, ``fidelity_effects.csv``; ``ltrlib fidelity RUN`` rebuilds them),
and prints, as Markdown:

* each run's protocol, read from its ``runs_online`` table (rounds T, runs a curve, runs);
* the counted checks (the paper's claims in its scopes) by verdict at each protocol, and how
  many changed verdict, from what to what;
* every check whose verdict differs, with both evidences;
* the online comparisons' Effect Ratios at both, where the run's own horizon makes one
  (`ltrlib.fidelity.claims`: none where T differs from the paper's 10,000).

The two runs must differ in their protocol only: a run of other data, scale or seed is refused.
One seed decides nothing (the ledger's own caveat); this says what the shortened T changes.

    .venv/bin/python bench/foltr_protocol_ledger.py reports/foltr-t300-small-seed0 \
        reports/foltr-paper-small-seed0 [--csv out.csv]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from ltrlib.fidelity.beside import ledgers_beside
from ltrlib.fidelity.foltr import NOTEBOOK, SOURCE
from ltrlib.fidelity.sources import run_setup
from ltrlib.report import table_to_markdown


def _protocol(run: Path) -> dict:
    online = pd.read_csv(run / "tables" / NOTEBOOK / "runs_online.csv")
    per_curve = online.groupby(["setting", "data", "ranker", "click", "remedy"]).seed.nunique()
    return {"run": run.name, "T": ", ".join(f"{t:,}" for t in sorted(online.n_rounds.unique())),
            "runs a curve": ", ".join(map(str, sorted(per_curve.unique()))), "runs": len(online),
            "run seconds": round(online.seconds.sum())}


#: Notebook 07's parameters that set the protocol, the one thing the two runs may differ in.
PROTOCOL = {"profile", "n_rounds", "n_seeds", "remedy_clicks", "eval_every"}


def _setup_without_protocol(run: Path) -> tuple:
    seed, setup = run_setup(run, [NOTEBOOK])
    setup[NOTEBOOK] = {k: v for k, v in setup[NOTEBOOK].items() if k not in PROTOCOL}
    return seed, setup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("short", type=Path, help="run folder at the shorter protocol (the batch's T)")
    parser.add_argument("paper", type=Path, help="run folder at the paper's protocol (-p profile paper)")
    parser.add_argument("--csv", type=Path, help="write every check at both protocols here")
    args = parser.parse_args()
    a, b = _setup_without_protocol(args.short), _setup_without_protocol(args.paper)
    if a != b:
        raise SystemExit(f"the runs differ beyond their protocol: {args.short} {a} against {args.paper} {b}")
    protocols = [_protocol(args.short), _protocol(args.paper)]
    print(table_to_markdown(pd.DataFrame(protocols)), "\n")
    side = ledgers_beside(args.short, args.paper, SOURCE, tuple(f"T = {p['T']}" for p in protocols))
    short, paper = side.labels
    print(side.counts_markdown(), end="")
    if len(side.moved):
        print(table_to_markdown(side.moved.reset_index()[["claim", "scope", f"ours ({short})", f"ours ({paper})",
                                                           f"evidence ({short})", f"evidence ({paper})"]]), "\n")
    print(side.ratios_markdown("Effect Ratios (an online sum's only where its T is the paper's)"), end="")
    if args.csv:
        side.both.to_csv(args.csv)


if __name__ == "__main__":
    main()
