"""The FOLTR paper (Wang & Zuccon, "Is Non-IID Data a Threat in Federated Online Learning to
Rank?", SIGIR 2022; notebook 07) in the ledger: its findings as claims on notebook 07's runs.

Every claim is decided with the paper's test: a paired t-test over runs, p < 0.05. A run is
one seed of one click model, so a claim about a ranker pairs the IID and non-IID runs of
the same seed and click model (`ltrlib.metrics.paired_ttest`); with one seed and one click
model there is no test and the claim is not available. "Offline" is the final offline
NDCG@10 on the test queries, "online" the cumulative discounted online NDCG (γ = 0.9995).
Online values are compared with the paper's as discounted means per round (the cumulative
value over ``sum_t γ^t``), since the cumulative value grows with T and the batch runs a
shorter T than the paper's 10,000.

The paper prints numbers for Type 1's online performance (Table 2) and Type 2's (Table 3);
its other findings are figures (3-9) and text, which a claim names as where the paper
states it. Encodings the paper leaves open are in the statements: "limited gains" (a
remedy closes less than half the IID gap), "minimal gap" (#R = 2's offline gap is under a
quarter of #R = 1's with the same 10 clients).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from ltrlib.fidelity.claims import CLAIM_COLUMNS, Claim, Effect, Finding, Section, decide, fmt
from ltrlib.fidelity.datasets import declared
from ltrlib.fidelity.sources import read_table
from ltrlib.foltr.federated import cumulative_online, discount_sum
from ltrlib.metrics import paired_ttest
from ltrlib.report import table_to_markdown

__all__ = ["foltr_claims", "paper_table2", "table3_numbers"]

#: This paper's key in the ledger (`ltrlib.fidelity.ledger.PAPERS`).
SOURCE = "foltr"
NOTEBOOK = "07_foltr_noniid"
ALPHA = 0.05
#: The paper's T and its Table 3 value: every Type 2 #R = 1 non-IID cell reads 1589.23.
PAPER_T = 10_000
PAPER_CONSTANT_ONLINE = 1589.23
#: Table 2 (Type 1 online, cumulative at T = 10,000): ranker -> click -> (IID, non-IID).
#: Every IID cell carries the paper's ▲ (significantly above non-IID, p < 0.05).
PAPER_TABLE2 = {
    "linear": {"perfect": (1002.36, 648.71), "navigational": (872.12, 546.25), "informational": (894.95, 566.23)},
    "neural": {"perfect": (1061.57, 668.38), "navigational": (834.08, 505.64), "informational": (842.87, 490.29)},
}
#: Table 3 (MSLR-WEB10K, Type 2 #R = 1, cumulative online at T = 10,000), IID rows:
#: (ranker, click) -> value at B = 2, 5, 10. Every non-IID cell is `PAPER_CONSTANT_ONLINE`.
PAPER_TABLE3_B = (2, 5, 10)
PAPER_TABLE3_IID = {
    ("linear", "perfect"): (742.10, 778.56, 798.05), ("linear", "navigational"): (698.25, 743.35, 771.04),
    ("linear", "informational"): (672.23, 722.23, 757.10), ("neural", "perfect"): (716.55, 781.18, 815.8),
    ("neural", "navigational"): (649.83, 728.96, 775.87), ("neural", "informational"): (612.76, 693.35, 748.64),
}
MEASURES = ("offline", "online")
#: A remedy's gain over FedAvg is "limited" below this share of the IID gap it should close.
LIMITED = 0.5
#: #R = 2's gap is "minimal" below this share of #R = 1's (both with 10 clients).
MINIMAL = 0.25


class Runs:
    """Notebook 07's ``runs_online`` table: one row per run (setting, data, ranker, click,
    remedy, seed, n_rounds, cumulative_online, final_offline, ...)."""

    def __init__(self, frame: pd.DataFrame | None):
        self.frame = frame

    def values(self, setting: str, ranker: str, measure: str, data: str = "non-IID",
               remedy: str = "none") -> pd.Series:
        """The runs' ``measure`` indexed by (click, seed); empty when there are none."""
        f = self.frame
        if f is None:
            return pd.Series(dtype=float)
        part = f[(f.setting == setting) & (f.ranker == ranker) & (f.data == data) & (f.remedy == remedy)]
        if measure == "offline":
            v = part.final_offline.to_numpy(dtype=float)
        else:  # discounted mean per round, comparable across T
            v = np.array([c / discount_sum(t) for c, t in zip(part.cumulative_online, part.n_rounds)])
        return pd.Series(v, index=pd.MultiIndex.from_arrays([part.click, part.seed]), dtype=float)

    def rankers(self, setting: str) -> list[str]:
        f = self.frame
        return [] if f is None else list(pd.unique(f[f.setting == setting].ranker))

    def remedies(self, setting: str, ranker: str) -> list[str]:
        f = self.frame
        if f is None:
            return []
        part = f[(f.setting == setting) & (f.ranker == ranker) & (f.data == "non-IID")]
        return [r for r in pd.unique(part.remedy) if r != "none"]


def _compare(a: pd.Series, b: pd.Series) -> tuple[Effect | None, float, int]:
    """A against B over the runs they share: the effect, the paired t-test's p (NaN with
    fewer than two pairs) and the number of pairs."""
    common = a.index.intersection(b.index)
    if len(common) == 0:
        return None, math.nan, 0
    x, y = a.loc[common].to_numpy(), b.loc[common].to_numpy()
    p = paired_ttest(x, y).p if len(common) >= 2 else math.nan
    return Effect.of(x, y), p, len(common)


def _said(name_a: str, name_b: str, effect: Effect | None, p: float, n: int) -> str:
    if effect is None:
        return f"no runs of both {name_a} and {name_b}"
    return (f"{name_a} {fmt(effect.baseline + effect.improvement)} vs {name_b} {fmt(effect.baseline)} "
            f"(difference {effect.improvement:+.4f}, paired t-test p = {fmt(p, 4)}, {n} runs)")


def _significantly_above(a: pd.Series, b: pd.Series, scope: str, name_a: str, name_b: str) -> Finding:
    """A is significantly above B (mean higher, p < 0.05)."""
    effect, p, n = _compare(a, b)
    holds = None if effect is None or math.isnan(p) else bool(effect.improvement > 0 and p < ALPHA)
    return Finding(scope, holds, _said(name_a, name_b, effect, p, n), effect)


def _not_different(a: pd.Series, b: pd.Series, scope: str, name_a: str, name_b: str) -> Finding:
    """No significant difference between A and B (p ≥ 0.05)."""
    effect, p, n = _compare(a, b)
    holds = None if effect is None or math.isnan(p) else bool(p >= ALPHA)
    return Finding(scope, holds, _said(name_a, name_b, effect, p, n))


def _absent(setting: str, what: str = "") -> list[Finding]:
    return [Finding(setting, None, f"notebook 07 ran no {what or setting} runs (its `settings` parameter)")]


def _each_setting(settings: Iterable[str], measures: tuple[str, ...], judge):
    """``judge(iid, non_iid, scope)`` in each of ``settings``, ranker and measure of the runs."""
    def check(runs: Runs) -> list[Finding]:
        out = []
        for setting in settings:
            rankers = runs.rankers(setting)
            out += [] if rankers else _absent(setting)
            for ranker in rankers:
                for m in measures:
                    out.append(judge(runs.values(setting, ranker, m, "IID"), runs.values(setting, ranker, m),
                                     f"{setting} {ranker} {m}"))
        return out
    return check


def _hurts(settings: Iterable[str], measures: tuple[str, ...] = MEASURES):
    """IID is significantly above non-IID in each setting, ranker and measure."""
    return _each_setting(settings, measures, lambda iid, non, scope: _significantly_above(iid, non, scope, "IID",
                                                                                         "non-IID"))


def _no_difference(settings: Iterable[str]):
    """No significant difference between non-IID and IID in each setting, ranker and measure."""
    return _each_setting(settings, MEASURES, lambda iid, non, scope: _not_different(non, iid, scope, "non-IID", "IID"))


def paper_table2() -> list[Finding]:
    """Table 2 as findings: per ranker, IID above non-IID online in every click model (the
    paper's ▲), with the effect over the click models as discounted means per round."""
    out = []
    for ranker, cells in PAPER_TABLE2.items():
        iid, non = zip(*cells.values())
        per_round = discount_sum(PAPER_T)
        out.append(Finding(f"type1 {ranker} online", all(a > b for a, b in zip(iid, non)),
                           "Table 2 (T = 10,000): " + ", ".join(f"{c} IID {a} vs non-IID {b} ▲"
                                                                for c, (a, b) in cells.items()),
                           Effect.of(np.array(iid) / per_round, np.array(non) / per_round)))
    return out


def _remedies_do_not_close(setting: str):
    """Each remedy's non-IID runs stay significantly below IID FedAvg, and close less than
    `LIMITED` of the gap to it."""
    def check(runs: Runs) -> list[Finding]:
        out = []
        for ranker in runs.rankers(setting):
            iid, fedavg = (runs.values(setting, ranker, "offline", d) for d in ("IID", "non-IID"))
            for remedy in runs.remedies(setting, ranker):
                if remedy.startswith("sharing"):
                    continue
                mine = runs.values(setting, ranker, "offline", remedy=remedy)
                below = _significantly_above(iid, mine, f"{setting} {ranker} {remedy}", "IID FedAvg", remedy)
                gap, _, _ = _compare(iid, fedavg)
                gain, p_gain, _ = _compare(mine, fedavg)
                closed = gain.improvement / gap.improvement if gap and gain and gap.improvement > 0 else math.nan
                holds = None if below.holds is None or math.isnan(closed) else bool(below.holds and closed < LIMITED)
                out.append(Finding(below.scope, holds, f"{below.evidence}; closes {fmt(closed, 2)} of the IID gap "
                                   f"over FedAvg (p = {fmt(p_gain, 4)})", below.effect))
        return out or [Finding(setting, None, f"notebook 07 ran no FedProx or FedPer runs on {setting} "
                               "(its `remedy_settings` parameter)")]
    return check


def _remedy_against_fedavg(setting: str, sharing: bool):
    """Data sharing significantly improves on FedAvg (``sharing``), or FedProx and FedPer do not."""
    def check(runs: Runs) -> list[Finding]:
        out = []
        for ranker in runs.rankers(setting):
            fedavg = runs.values(setting, ranker, "offline")
            for remedy in runs.remedies(setting, ranker):
                if remedy.startswith("sharing") != sharing:
                    continue
                f = _significantly_above(runs.values(setting, ranker, "offline", remedy=remedy), fedavg,
                                         f"{setting} {ranker} {remedy}", remedy, "FedAvg")
                out.append(f if sharing else Finding(f.scope, None if f.holds is None else not f.holds,
                                                     f.evidence, f.effect))
        what = "data sharing" if sharing else "FedProx or FedPer"
        return out or [Finding(setting, None, f"notebook 07 ran no {what} runs on {setting} "
                               "(its `remedy_settings` parameter)")]
    return check


def _r2_minimal(runs: Runs) -> list[Finding]:
    out = []
    for ranker in runs.rankers("type2_R2"):
        r2, _, _ = _compare(runs.values("type2_R2", ranker, "offline", "IID"),
                            runs.values("type2_R2", ranker, "offline"))
        r1, _, _ = _compare(runs.values("type2_R1_10clients", ranker, "offline", "IID"),
                            runs.values("type2_R1_10clients", ranker, "offline"))
        if r2 is None or r1 is None:
            out.append(Finding(f"type2_R2 {ranker}", None, "needs type2_R2 and type2_R1_10clients runs"))
            continue
        holds = abs(r2.improvement) < MINIMAL * abs(r1.improvement)
        out.append(Finding(f"type2_R2 {ranker}", holds,
                           f"offline IID − non-IID: #R = 2 {r2.improvement:+.4f} "
                           f"({100 * r2.relative:+.1f} % of IID), #R = 1 with 10 clients {r1.improvement:+.4f}"))
    return out or _absent("type2_R2")


def _constant_online(runs: Runs) -> list[Finding]:
    """The online metric's exact value, and the #R = 1 non-IID runs' constant 0.8 per round."""
    exact = round(cumulative_online(np.full(PAPER_T, 0.8)), 2)
    out = [Finding("online metric", exact == PAPER_CONSTANT_ONLINE,
                   f"a constant 0.8 over T = {PAPER_T:,} with γ = 0.9995 gives {exact:.2f}")]
    f = runs.frame
    part = None if f is None else f[(f.setting == "type2_R1") & (f.data == "non-IID") & (f.remedy == "none")]
    if part is None or part.empty:
        return out + _absent("type2_R1")
    expected = np.array([0.8 * discount_sum(t) for t in part.n_rounds])
    worst = float(np.max(np.abs(part.cumulative_online.to_numpy(dtype=float) - expected)))
    return out + [Finding("type2_R1 non-IID runs", worst < 1e-6,
                          f"{len(part)} runs: cumulative online NDCG − 0.8 × Σγ^t at their T, largest |difference| "
                          f"{worst:.2e} (4 of 5 clients hold only relevant documents: NDCG 1; one only label 0: 0)")]


def _paper_constant() -> list[Finding]:
    return [Finding("online metric", True, f"Table 3: every non-IID cell {PAPER_CONSTANT_ONLINE}"),
            Finding("type2_R1 non-IID runs", True, f"Table 3: every non-IID cell {PAPER_CONSTANT_ONLINE} "
                    "(the online NDCG over-fits its maximum, §6.2)")]


CLAIMS: tuple[Claim, ...] = (
    Claim("type1_hurts", "Type 1 (document preferences) seriously hurts FPDGD: IID is significantly above "
          "non-IID, offline and online, for the linear and the neural ranker (paired over click models × seeds)",
          _hurts(["type1"]), on_paper=paper_table2, stated="Figure 3 and §5.2 (offline)"),
    Claim("type1_remedies_do_not_close_gap", f"Figure 4: FedProx (every μ) and FedPer on Type 1 stay "
          f"significantly below IID FedAvg offline and give limited gains over FedAvg (close less than "
          f"{LIMITED:.0%} of the gap)", _remedies_do_not_close("type1"), stated="Figure 4 and §5.3"),
    Claim("type2_R1_hurts", "Type 2 with #R = 1 (one label per client) seriously hurts: IID is significantly "
          "above non-IID offline", _hurts(["type2_R1"], ("offline",)), stated="Figure 5 and §6.2"),
    Claim("type2_R1_online_constant", f"Type 2 #R = 1's online NDCG is the constant 0.8 per round "
          f"({PAPER_CONSTANT_ONLINE} at T = 10,000), and our online metric gives that number",
          _constant_online, on_paper=_paper_constant),
    Claim("type2_R2_gap_minimal", f"Type 2 with #R = 2: the offline gap to IID is minimal (under "
          f"{MINIMAL:.0%} of #R = 1's with the same 10 clients)", _r2_minimal, stated="Figure 6 and §6.2"),
    Claim("sharing_improves_type2_R1", "Data sharing significantly improves FedAvg on Type 2 #R = 1 (offline)",
          _remedy_against_fedavg("type2_R1", sharing=True), stated="Figure 7 and §6.3"),
    Claim("fedprox_fedper_no_gain_type2_R1", "FedProx and FedPer give no significant gain over FedAvg on "
          "Type 2 #R = 1 (offline)", _remedy_against_fedavg("type2_R1", sharing=False),
          stated="Figure 7 and §6.3"),
    Claim("type3_no_difference", "Type 3 (click preferences, SDBN and PBM): no significant difference from "
          "IID, offline or online", _no_difference(["type3_sdbn", "type3_pbm"]), stated="Figure 8 and §7.1"),
    Claim("type4_no_difference", "Type 4 (data quantity), alone and on top of Types 1 and 2: no significant "
          "difference from the same data with equal quantities", _no_difference(["type4", "type4_type1",
                                                                                  "type4_type2"]),
          stated="Figure 9 and §7.2"),
)


def foltr_claims(run_dir: str | Path) -> tuple[pd.DataFrame, list[str]]:
    """Every claim on notebook 07's runs, as rows of `ltrlib.fidelity.claims.CLAIM_COLUMNS`,
    and the missing tables."""
    missing: list[str] = []
    runs = Runs(read_table(run_dir, NOTEBOOK, "runs_online", missing))
    return pd.DataFrame(decide(SOURCE, CLAIMS, runs), columns=CLAIM_COLUMNS), missing


INTRO = ("The paper runs MSLR-WEB10K, Yahoo!, Istella-S and the intent-change collection at T = 10,000 "
         "rounds and 5 runs; the batch runs a shorter T and fewer seeds (notebook 07's header), so its "
         "cumulative online values are not the paper's and its tests have less power: with two seeds, "
         "\"no significant difference\" is weak evidence. Online effects are compared as discounted means "
         "per round. Figures 3-9 print no numbers: their claims' `paper` column says where the paper "
         "states them.")


def table3_numbers(runs: Runs, B: int = 5) -> pd.DataFrame:
    """Table 3's printed values beside this run's mean cumulative online NDCG (``table,
    model, metric, paper, ours, diff``; model: data, ranker and click model; metric: the B)."""
    f = runs.frame
    rows = []
    for (ranker, click), values in PAPER_TABLE3_IID.items():
        for b, iid in zip(PAPER_TABLE3_B, values):
            setting = "type2_R1" if b == B else f"type2_R1_B{b}"
            for data, paper in (("IID", iid), ("non-IID", PAPER_CONSTANT_ONLINE)):
                part = f[(f.setting == setting) & (f.data == data) & (f.ranker == ranker) & (f.click == click)
                         & (f.remedy == "none")] if f is not None else None
                ours = float(part.cumulative_online.mean()) if part is not None and len(part) else math.nan
                rows.append({"table": "Table 3", "model": f"{data} {ranker} {click}", "metric": f"B = {b}",
                             "paper": paper, "ours": ours, "diff": ours - paper})
    return pd.DataFrame(rows)


def section(run_dir: str | Path, provenance: dict) -> Section:
    """The FOLTR paper's part of the ledger; on a run declared MSLR-WEB10K at the paper's
    T, Table 3's printed numbers beside ours."""
    missing: list[str] = []
    runs = Runs(read_table(run_dir, NOTEBOOK, "runs_online", missing))
    claims = pd.DataFrame(decide(SOURCE, CLAIMS, runs), columns=CLAIM_COLUMNS)
    declaration = declared(provenance)
    rounds = sorted(set(runs.frame.n_rounds)) if runs.frame is not None else []
    published, lines = None, []
    if declaration is None or SOURCE not in declaration.dataset.papers:
        lines += ["**Numbers.** The paper prints MSLR-WEB10K's online values (Table 3); this run is not declared "
                  "MSLR-WEB10K (`ltrlib run --paper-dataset mslr-web10k`), so only the claims are compared.", ""]
    elif rounds != [PAPER_T]:
        lines += [f"**Numbers.** {declaration.note()} Cumulative online NDCG sums over the rounds: this run's "
                  f"T = {', '.join(map(str, rounds)) or 'none'}, the paper's {PAPER_T:,}, so Table 3 is not "
                  "compared (`-p profile paper` runs the paper's T).", ""]
    else:
        published = table3_numbers(runs)
        lines += [f"**Numbers.** {declaration.note()} Table 3 beside ours (`diff` = ours − paper; file "
                  "[fidelity_published.csv](fidelity_published.csv)).", "",
                  table_to_markdown(published.round(2)), ""]
    return Section(SOURCE, claims, intro=INTRO, missing=missing, lines=lines, published=published)
