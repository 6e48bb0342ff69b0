"""XGBoost's learning-to-rank tutorial (seed 004; notebook 08) in the ledger: its pair-method
advice as claims on notebook 08's pair-method study.

The tutorial advises, without numbers: the ``mean`` pair method builds more effective pairs
than ``topk`` and suits small training data; ``topk`` suits large data when the top ranks
matter. Notebook 08 trains ``rank:ndcg`` with ``mean`` (1 pair per document) and ``topk``
(each k of its setting) on growing numbers of training queries, on the same test queries
(``pair_method_summary``). A claim holds when the difference has the advised sign and a
paired t-test over the test queries agrees at p < 0.05; the evidence gives the difference
at every training size, so the sizes where the advice holds here can be read off. The
tutorial prints no effect, so no Effect Ratio is computed.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ltrlib.fidelity.claims import CLAIM_COLUMNS, Claim, Finding, Section, decide
from ltrlib.fidelity.sources import read_table
from ltrlib.xgboost_tutorial.comparison import PAIRWISE

__all__ = ["tutorial_claims"]

#: This paper's key in the ledger (`ltrlib.fidelity.ledger.PAPERS`).
SOURCE = "xgboost"
NOTEBOOK = "08_xgboost_backends"
#: The ``mean`` setting of notebook 08's pair-method studies, the others' reference.
REFERENCE = "mean, 1 pair"
ALPHA = 0.05
STATED = "the tutorial's \"Obtaining Good Result\" (seed 004)"


def _topk_vs_mean(summary: pd.DataFrame, metric: str, size: str, topk_better: bool) -> list[Finding]:
    """Per topk setting: its difference to mean on ``metric`` at the smallest or largest
    training size (``size``), with the sign advised; the evidence lists every size."""
    part = summary[summary.metric == metric]
    sizes = sorted(pd.unique(part.train_queries))
    if part.empty or REFERENCE not in set(part.setting):
        return [Finding(metric, None, f"pair_method_summary has no {metric} rows for {REFERENCE!r}")]
    n = sizes[0] if size == "smallest" else sizes[-1]
    out = []
    for setting in [s for s in pd.unique(part.setting) if s != REFERENCE]:
        rows = part[part.setting == setting].set_index("train_queries")
        diff, p = float(rows.loc[n, "diff_vs_reference"]), float(rows.loc[n, "p_value"])
        sign_ok = diff > 0 if topk_better else diff < 0
        holds = None if math.isnan(p) else bool(sign_ok and p < ALPHA)
        every = ", ".join(f"{int(q)} queries {float(r.diff_vs_reference):+.4f} (p = {float(r.p_value):.3g})"
                          for q, r in rows.sort_index().iterrows())
        out.append(Finding(f"{setting}, {metric}, {int(n)} training queries", holds,
                           f"{setting} − mean on {metric}: {every}"))
    return out


def _effective_pairs(summary: pd.DataFrame) -> list[Finding]:
    part = summary[summary.metric == summary.metric.iloc[0]] if not summary.empty else summary
    if part.empty or REFERENCE not in set(part.setting):
        return [Finding("effective pairs", None, f"pair_method_summary has no {REFERENCE!r} rows")]
    n = min(part.train_queries)
    at = part[part.train_queries == n].set_index("setting").effective_pairs_per_query
    return [Finding(f"{s}, {int(n)} training queries", bool(at[REFERENCE] > at[s]),
                    f"effective pairs per query: mean {at[REFERENCE]:.1f}, {s} {at[s]:.1f}")
            for s in at.index if s != REFERENCE]


CLAIMS = (
    Claim("mean_more_effective_pairs", "The mean method builds more effective pairs (pairs of different "
          "labels) per query than topk, at the methods' default pair counts", _effective_pairs, stated=STATED),
    Claim("mean_better_small", "On small training data, mean beats topk on NDCG@10 (the smallest training set)",
          lambda s: _topk_vs_mean(s, "ndcg@10", "smallest", topk_better=False), stated=STATED),
    Claim("topk_better_top_large", "On large training data, topk beats mean at the top ranks (NDCG@1 and "
          "NDCG@3, the largest training set)",
          lambda s: [*_topk_vs_mean(s, "ndcg@1", "largest", topk_better=True),
                     *_topk_vs_mean(s, "ndcg@3", "largest", topk_better=True)], stated=STATED),
)


def _sweep_rows(sweep: pd.DataFrame | None, metric: str = "ndcg@10") -> pd.DataFrame | None:
    if sweep is None or sweep.empty or REFERENCE not in set(sweep.setting):
        return None
    return sweep[sweep.metric == metric].set_index("setting")


def _more_pairs(sweep: pd.DataFrame | None) -> list[Finding]:
    rows = _sweep_rows(sweep)
    if rows is None:
        return [Finding("pair counts", None, "no pair_count_sweep table")]
    counts = rows[rows.index.str.startswith("mean")]
    counts = counts.assign(n=[1 if s == REFERENCE else int(s.split(", ")[1].split()[0]) for s in counts.index])
    counts = counts.sort_values("n")
    if len(counts) < 2:
        return [Finding("pair counts", None, "the sweep has one pair count")]
    pairs = counts.effective_pairs_per_query.to_numpy()
    top = counts.iloc[-1]
    said = "; ".join(f"{int(r.n)} per document: {r.effective_pairs_per_query:.1f} effective pairs per query, "
                     f"NDCG@10 {r['mean']:.4f}, {r.seconds:.1f} s" for _, r in counts.iterrows())
    more_pairs = Finding(f"{int(counts.n.iloc[0])} to {int(top.n)} pairs", bool((pairs[1:] > pairs[:-1]).all()), said)
    better = None if pd.isna(top.p_value) else bool(top.diff_vs_reference > 0 and top.p_value < ALPHA)
    gain = Finding(f"{int(top.n)} pairs vs 1, ndcg@10", better,
                   f"{top.name} − mean, 1 pair: {top.diff_vs_reference:+.4f} (p = {top.p_value:.3g}), "
                   f"{top.seconds:.1f} s against {counts.seconds.iloc[0]:.1f} s")
    return [more_pairs, gain]


def _pairwise_small(sweep: pd.DataFrame | None) -> list[Finding]:
    rows = _sweep_rows(sweep)
    if rows is None or PAIRWISE not in rows.index:
        return [Finding("rank:pairwise", None, "no rank:pairwise row in the pair_count_sweep table")]
    r = rows.loc[PAIRWISE]
    not_worse = None if pd.isna(r.p_value) else bool(r.diff_vs_reference >= 0 or r.p_value >= ALPHA)
    return [Finding(f"rank:pairwise vs rank:ndcg, ndcg@10, {int(r.train_queries)} training queries", not_worse,
                    f"rank:pairwise − rank:ndcg (mean, 1 pair): {r.diff_vs_reference:+.4f} (p = {r.p_value:.3g})")]


#: The advice decided on the pair-count sweep (`pair_count_settings`).
SWEEP_CLAIMS = (
    Claim("more_pairs_more_effective", "Raising lambdarank_num_pair_per_sample (mean) gives more effective "
          "pairs, and the most pairs beat one pair per document on NDCG@10 on small data (at a cost in time)",
          _more_pairs, stated=STATED),
    Claim("pairwise_suits_small_data", "On small data rank:pairwise (RankNet) serves as well as rank:ndcg: "
          "not significantly below it on NDCG@10", _pairwise_small, stated=STATED),
)


def tutorial_claims(summary: pd.DataFrame, sweep: pd.DataFrame | None = None) -> pd.DataFrame:
    """The tutorial's advice decided on notebook 08's ``pair_method_summary`` and its
    ``pair_count_sweep``, as rows of `ltrlib.fidelity.claims.CLAIM_COLUMNS`."""
    rows = decide(SOURCE, CLAIMS, summary) + decide(SOURCE, SWEEP_CLAIMS, sweep)
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


INTRO = ("The tutorial gives advice, not numbers: each claim is checked on notebook 08's pair-method study "
         "(`rank:ndcg`, mean against topk on growing training sets, the same test queries) and reported as "
         "it comes out, with the difference at every training size in its evidence.")


def section(run_dir: str | Path, provenance: dict) -> Section:
    """The tutorial's part of the ledger."""
    missing: list[str] = []
    summary = read_table(run_dir, NOTEBOOK, "pair_method_summary", missing)
    sweep = read_table(run_dir, NOTEBOOK, "pair_count_sweep", missing)
    if summary is None:
        summary = pd.DataFrame(columns=["metric", "setting", "train_queries"])
    claims = tutorial_claims(summary, sweep)
    return Section(SOURCE, claims, intro=INTRO, missing=missing)
