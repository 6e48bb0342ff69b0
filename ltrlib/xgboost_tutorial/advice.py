"""The XGBoost notes' testable statements, as experiments notebook 08 runs and the ledger reads.

The notes (seed 004) give advice, not findings; what can be put to a test:

* **Pair methods at equal budgets** (`equal_budget_settings`, `pair_method_trend`): "small
  data: prefer the mean strategy", "large data: prefer topk if focusing on high-ranking
  documents". ``topk`` with k = 10 pairs each of the top 10 documents with every other (about
  10 x list length pairs per query), ``mean`` with 10 pairs per document samples about as
  many; judged on NDCG@10, the cutoff k matches. The advice is a trend: topk's difference
  to mean grows with the training set, tested on the same test queries at every size.
* **Reproducibility** (`reproducibility`): "results should be the same regardless of
  hardware". The same model trained with 1 and with 2 threads scores the test set
  bit-identically. The control (`ULP_CONTROL`): the same scores with one moved by one unit in
  the last place, compared the same way, are not (the comparison sees a difference as small
  as a thread count could make); two different models are not either, which shows less.
* **Distributed training** (`distributed_against_single`): "can scatter query group onto
  multiple workers ... theoretically sound but can affect accuracy". The rows cut in two
  through query groups, on a two-worker Dask ``LocalCluster``, against one process: a
  paired equivalence test (TOST) over the test queries with a margin of ours.
* **Graded labels** (`graded_objectives`): "if data has multi-level relevance: use
  rank:ndcg or rank:pairwise"; ``rank:map`` is a binary measure. From the backend
  comparison's per-query results: each against ``rank:map`` on NDCG@10.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ltrlib.randomness import stream_seeds
from ltrlib.data.dataset import Splits
from ltrlib.metrics import compare, paired_ttest
from ltrlib.metrics.ranking import evaluate
from ltrlib.train.ranker import train_ranker
from ltrlib.train.settings import TrainSettings

__all__ = ["EQUIVALENCE_MARGIN", "ULP_CONTROL", "distributed_against_single", "equal_budget_metric",
           "equal_budget_settings", "graded_objectives", "one_ulp_apart", "pair_method_trend", "reproducibility"]

#: The margin within which distributed training counts as equivalent to one process (ours:
#: the notes give none). A hundredth of NDCG@10 is below the smallest gap the non-IID paper
#: calls "similar performances" (Split2's local models, 0.742 against 0.727).
EQUIVALENCE_MARGIN = 0.01


def equal_budget_settings(k: int = 10) -> dict[str, dict]:
    """``topk`` with ``k`` and ``mean`` with ``k`` pairs per document: about the same number
    of pairs per query (k x list length), named ``"mean, {k} pairs"`` and ``"topk, k={k}"``."""
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be a positive integer, got {k}")
    return {f"mean, {k} pairs": {"lambdarank_pair_method": "mean", "lambdarank_num_pair_per_sample": k},
            f"topk, k={k}": {"lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": k}}


def equal_budget_metric(k: int) -> str:
    """The metric the equal-budget trend is read at: NDCG at ``k``, the list depth both
    settings spend their pairs on, where the study measures it (1, 3, 10), else NDCG@10."""
    return f"ndcg@{k}" if k in (1, 3, 10) else "ndcg@10"


def pair_method_trend(runs: pd.DataFrame, setting: str, reference: str, metric: str = "ndcg@10") -> pd.DataFrame:
    """``setting`` − ``reference`` on ``metric`` at every training size of
    `ltrlib.xgboost_tutorial.pair_method_experiment`'s ``runs`` (the same test queries at
    every size): ``train_queries, setting, reference, metric, queries, diff, p_value`` (paired
    t-test at that size) and ``change`` (the difference's change from the smallest size) with
    ``p_change`` (paired t-test over the test queries of the per-query differences at this
    size against the smallest; NaN at the smallest)."""
    part = runs[(runs.metric == metric) & runs.setting.isin([setting, reference])]
    if part.empty or set(part.setting) != {setting, reference}:
        raise ValueError(f"runs lack {setting!r} or {reference!r} on {metric!r}")
    wide = part.pivot_table(index=["train_queries", "qid"], columns="setting", values="value")
    diffs = (wide[setting] - wide[reference]).unstack("train_queries")
    sizes = sorted(diffs.columns)
    first = diffs[sizes[0]]
    rows = []
    for n in sizes:
        d = diffs[n]
        rows.append({"train_queries": int(n), "setting": setting, "reference": reference, "metric": metric,
                     "queries": int(d.notna().sum()), "diff": float(d.mean()),
                     "p_value": paired_ttest(wide[setting].xs(n), wide[reference].xs(n)).p,
                     "change": float((d - first).mean()),
                     "p_change": math.nan if n == sizes[0] else paired_ttest(d.to_numpy(), first.to_numpy()).p})
    return pd.DataFrame(rows)


#: The ``compared`` of `reproducibility`'s control row: one setting's 1-thread test scores
#: against a copy with one score moved to the next float of its dtype (`one_ulp_apart`).
ULP_CONTROL = "1-thread scores vs the same with one score moved by 1 ULP"


def one_ulp_apart(scores: np.ndarray) -> np.ndarray:
    """A copy of ``scores`` with its first score moved up to the next representable value of
    its dtype (one unit in the last place): the smallest difference a change of thread count
    could make in a sum of leaf values."""
    out = np.array(scores, copy=True)
    flat = out.reshape(-1)
    flat[0] = np.nextafter(flat[0], np.array(np.inf, dtype=out.dtype))
    return out


def reproducibility(splits: Splits, params: Mapping[str, Any], settings: TrainSettings, k: int = 10,
                    max_trees: int = 30) -> pd.DataFrame:
    """Test scores of the same model trained twice, compared bit for bit: ``setting,
    compared, max_abs_difference, identical``. Each of `equal_budget_settings` with 1 and
    with 2 threads at one seed; ``mean`` at the seed and at a second seed drawn from it
    (`ltrlib.randomness.stream_seeds`, so no other run seed's stream; in XGBoost 3.2 the
    mean method's sampled pairs do not follow ``seed``: identical, measured); the control
    (`ULP_CONTROL`): topk's 1-thread scores against themselves with one score one ULP apart
    (`one_ulp_apart`), which shows the comparison would see the smallest difference threads
    could make; and the two methods against each other (``"both"``), a gross difference.
    Bit-identity needs no converged model: at most ``max_trees`` trees each."""
    rows, first = [], {}
    settings = settings.replace(backend="xgboost", max_trees=min(settings.max_trees, int(max_trees)))
    for name, pair in equal_budget_settings(k).items():
        p = {**dict(params), "objective": "rank:ndcg", **pair}
        one, two = (train_ranker(splits.train, splits.vali, p, settings.replace(num_threads=t)).score(splits.test)
                    for t in (1, 2))
        first[name] = one
        rows.append(_bitwise(name, "1 thread vs 2 threads, same seed", one, two))
        if pair["lambdarank_pair_method"] == "mean":
            second = stream_seeds(settings.seed, "xgboost second seed", 1)[0]
            other = train_ranker(splits.train, splits.vali, p, settings.replace(num_threads=1, seed=second))
            rows.append(_bitwise(name, f"seed {settings.seed} vs seed {second}", one,
                                 other.score(splits.test)))
    (a, sa), (b, sb) = first.items()
    rows.append(_bitwise(b, ULP_CONTROL, sb, one_ulp_apart(sb)))
    rows.append(_bitwise("both", f"{a} vs {b}, same seed", sa, sb))
    return pd.DataFrame(rows)


def _bitwise(setting: str, compared: str, a: np.ndarray, b: np.ndarray) -> dict:
    a, b = np.asarray(a), np.asarray(b)
    return {"setting": setting, "compared": compared, "max_abs_difference": float(np.max(np.abs(a - b))),
            "identical": bool(a.shape == b.shape and a.tobytes() == b.tobytes())}


def distributed_against_single(splits: Splits, params: Mapping[str, Any], settings: TrainSettings,
                               margin: float = EQUIVALENCE_MARGIN, cluster="local",
                               metric: str = "ndcg@10", wanted: bool = True) -> pd.DataFrame | None:
    """One process against the rows cut in two through query groups on ``cluster`` (default
    a two-worker `distributed.LocalCluster`), the same params and trees: one row ``metric,
    queries, single, distributed, diff`` (distributed − single), the 90 % interval of the
    paired difference (``ci_low, ci_high``), ``margin``, ``p_tost`` (the larger of the two
    one-sided t-tests against −margin and +margin, `scipy.stats.ttest_1samp`) and
    ``equivalent`` (p_tost < 0.05: the interval lies within ±margin). None unless ``wanted``
    (the notebook's switch: a cluster costs its start-up)."""
    if not wanted:
        return None
    settings = settings.replace(backend="xgboost", num_threads=1)
    p = {**dict(params), "objective": "rank:ndcg"}
    single = train_ranker(splits.train, splits.vali, p, settings)
    spread = train_ranker(splits.train, splits.vali, p, settings, cluster=cluster, split_queries=True)
    a, b = (evaluate(splits.test, r.score(splits.test), metrics=metric, per_query=True).value.to_numpy()
            for r in (single, spread))
    d = b - a
    n = len(d)
    half = stats.t.ppf(0.95, n - 1) * d.std(ddof=1) / math.sqrt(n) if n > 1 else math.nan
    p_tost = max(stats.ttest_1samp(d, -margin, alternative="greater").pvalue,
                 stats.ttest_1samp(d, margin, alternative="less").pvalue) if n > 1 and d.std() > 0 else \
        (0.0 if n > 1 and abs(d.mean()) < margin else math.nan)
    return pd.DataFrame([{"metric": metric, "queries": n, "single": float(a.mean()), "distributed": float(b.mean()),
                          "diff": float(d.mean()), "ci_low": float(d.mean() - half), "ci_high": float(d.mean() + half),
                          "margin": margin, "p_tost": float(p_tost),
                          "equivalent": bool(p_tost < 0.05) if not math.isnan(p_tost) else False,
                          "trees_single": single.best_iteration, "trees_distributed": spread.best_iteration}])


def graded_objectives(per_query: pd.DataFrame, baseline: str = "XGB map/topk",
                      models: tuple[str, ...] = ("XGB ndcg/topk", "XGB pairwise/topk"),
                      metric: str = "ndcg@10") -> pd.DataFrame:
    """Each of ``models`` against ``rank:map`` (``baseline``) on ``metric``, from
    `ltrlib.xgboost_tutorial.compare_backends`' per-query results: `ltrlib.metrics.comparison.Comparison.differences`' rows
    (``model, baseline, units, mean, mean_baseline, diff, t, p``), the baseline's own row
    left out. Empty when the comparison lacks the baseline."""
    part = per_query[(per_query.metric == metric) & per_query.model.isin([baseline, *models])]
    if baseline not in set(part.model):
        return pd.DataFrame(columns=["model", "baseline", "units", "mean", "mean_baseline", "diff", "t", "p"])
    out = compare(part, baseline, by=(), models=[baseline, *models]).differences()
    return out[out.model != baseline].reset_index(drop=True)
