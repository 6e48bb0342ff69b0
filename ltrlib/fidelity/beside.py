"""One paper's section of two runs' one-seed ledgers, check by check: what changes between
two runs that differ in one respect (the FOLTR paper's protocol against the batch's T, the
`paper` scale against `small`).

`ledgers_beside` joins the two runs' ledgers (``fidelity_claims.csv`` as their runs wrote
them, or both rebuilt from their tables by today's checks) on each check and scope, counts the counted checks
(the paper's claims in its scopes) by verdict in each, lists the checks whose verdict moved,
and sets the Effect Ratios of ``fidelity_effects.csv`` beside each other. `setup_difference`
says in which parameters two runs differ, so that a caller can refuse runs that differ in
more than the respect it compares. One seed decides nothing across seeds: this says what
the one respect changes at one seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ltrlib.fidelity.sources import run_setup
from ltrlib.report import table_to_markdown

__all__ = ["LedgersBeside", "ledgers_beside", "setup_difference"]


@dataclass(frozen=True)
class LedgersBeside:
    """Two runs' checks of one paper, side by side; columns are suffixed `` (<label>)``."""

    labels: tuple[str, str]
    both: pd.DataFrame  # every check and scope (index), both runs' verdict ("ours") and evidence
    counted: pd.DataFrame  # the paper's claims in its scopes: ``both``'s counted rows
    verdicts: pd.DataFrame  # counted checks by verdict, a column a run
    moved: pd.DataFrame  # counted checks whose verdict differs
    transitions: pd.DataFrame  # how many moved from which verdict to which
    ratios: pd.DataFrame  # each comparison's Effect Ratio in both runs (and its horizon, where recorded)

    def counts_markdown(self, changed: str = "changed verdict") -> str:
        """The counted checks by verdict in each run, and how many ``changed`` from which
        verdict to which, as Markdown."""
        return (f"Counted checks by verdict ({len(self.counted)} checks):\n\n"
                f"{table_to_markdown(self.verdicts.rename_axis('verdict').reset_index())} \n\n"
                f"{len(self.moved)} of {len(self.counted)} counted checks {changed}:\n\n"
                f"{table_to_markdown(self.transitions) if len(self.moved) else '(none)'} \n\n")

    def ratios_markdown(self, heading: str = "Effect Ratios") -> str:
        """Each comparison's Effect Ratio in both runs, under ``heading``, as Markdown."""
        return f"{heading}:\n\n{table_to_markdown(self.ratios.round(2).reset_index())}\n"


def _ledger(run: Path, today: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run's claims and effects: as the run wrote them (``fidelity_claims.csv``,
    ``fidelity_effects.csv``), or with ``today`` rebuilt from its tables by today's checks
    (`ltrlib.fidelity.ledger.fidelity_report`, nothing written)."""
    if today:
        from ltrlib.fidelity.ledger import fidelity_report

        report = fidelity_report(run)
        return report.claims, report.effects
    return pd.read_csv(Path(run) / "fidelity_claims.csv"), pd.read_csv(Path(run) / "fidelity_effects.csv")


def _checks(claims: pd.DataFrame, source: str) -> pd.DataFrame:
    return claims[claims.source == source].set_index(["claim", "scope"])


def _ratios(effects: pd.DataFrame, source: str) -> pd.DataFrame:
    effects = effects[effects.source == source].set_index(["claim", "scope", "comparison"])
    return effects[[c for c in ("effect_ratio", "horizon") if c in effects.columns]]


def ledgers_beside(first: str | Path, second: str | Path, source: str,
                   labels: tuple[str, str] = ("first", "second"), today: bool = False) -> LedgersBeside:
    """``source``'s checks in the ledgers of run folders ``first`` and ``second``, labelled
    ``labels`` (the respect they differ in, e.g. ``("T = 300", "T = 10,000")``). The paper's
    own verdict (``paper``) is taken from ``second``. Equal labels are told apart by order.
    ``today``: both ledgers rebuilt from the runs' tables by today's checks, so that runs
    made by different code compare by the one respect, not by the checks' versions."""
    a, b = labels
    if a == b:
        a, b = f"first, {a}", f"second, {b}"
    (claims_a, effects_a), (claims_b, effects_b) = _ledger(Path(first), today), _ledger(Path(second), today)
    both = _checks(claims_a, source)[["kind", "beyond", "ours", "evidence"]].join(
        _checks(claims_b, source)[["ours", "evidence", "paper"]], how="outer", suffixes=(f" ({a})", f" ({b})"))
    counted = both[(both.kind == "claim") & ~both.beyond.astype(bool)]
    verdicts = pd.DataFrame({a: counted[f"ours ({a})"].value_counts(),
                             b: counted[f"ours ({b})"].value_counts()}).fillna(0).astype(int)
    moved = counted[counted[f"ours ({a})"] != counted[f"ours ({b})"]]
    transitions = moved.groupby([f"ours ({a})", f"ours ({b})"]).size().rename("checks").reset_index()
    ratios = _ratios(effects_a, source).join(_ratios(effects_b, source), how="outer", suffixes=(f" ({a})", f" ({b})"))
    return LedgersBeside((a, b), both, counted, verdicts, moved, transitions, ratios)


def setup_difference(first: str | Path, second: str | Path, notebooks=()) -> dict[str, dict]:
    """Where two runs' setups differ (`run_setup`: the run's parameters and each of
    ``notebooks``' own): ``{part: {parameter: (first's, second's)}}``, the seed under
    ``"run"``; empty when they ran the same setup at the same seed."""
    (seed_a, a), (seed_b, b) = run_setup(first, notebooks), run_setup(second, notebooks)
    a["run"], b["run"] = {**a["run"], "seed": seed_a}, {**b["run"], "seed": seed_b}
    out: dict[str, dict] = {}
    for part in sorted(set(a) | set(b)):
        pa, pb = a.get(part, {}), b.get(part, {})
        differ = {k: (pa.get(k), pb.get(k)) for k in sorted(set(pa) | set(pb)) if pa.get(k) != pb.get(k)}
        if differ:
            out[part] = differ
    return out
