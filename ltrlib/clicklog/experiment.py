"""Unbiased LambdaMART on position-biased clicks: the experiment of notebook 09.

1. A logging ranker: LightGBM λMART trained on a small labelled sample of the training
   queries (1% by default), early-stopped on the validation set.
2. For each PBM eta, one click log of the largest number of sessions over the training
   queries shown in the logging ranker's order; smaller logs are its first sessions, so
   the curves against sessions are nested (one log per eta, not one per point).
3. On each log: XGBoost with ``lambdarank_unbiased=True`` and with ``False``, and LightGBM
   with the displayed positions in its Dataset (its position-bias model); all trained on
   the clicks with a fixed tree count (no labelled validation data in a click setting).
4. Test NDCG@10 on the true labels, against the logging ranker and a λMART trained on the
   true labels of all training queries (the ceiling). The test scores of the logging ranker,
   the ceiling and every model of the largest log come back too, for TREC run files.

XGBoost's propensity estimates (t+ per position, relative to position 1) are read from the
unbiased models of the largest log and set beside the true PBM ratio 1/rank^eta.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ltrlib.clicklog.logs import ClickLog, simulate_click_log
from ltrlib.data.dataset import Splits
from ltrlib.foltr.clicks import pbm
from ltrlib.metrics import evaluate
from ltrlib.metrics.keys import flatten_metrics
from ltrlib.train import Ranker, TrainSettings, train_ranker, xgboost_propensities

__all__ = ["CLICK_MODELS", "ClickBiasResult", "LOGGING_SETTINGS", "click_bias_experiment",
           "curve_table", "click_bias_metrics", "logging_ranker", "model_run_name", "propensity_errors"]

# name -> (backend, params, uses positions)
CLICK_MODELS: dict[str, tuple[str, dict, bool]] = {
    "XGB unbiased": ("xgboost", {"lambdarank_unbiased": True}, True),
    "XGB biased": ("xgboost", {"lambdarank_unbiased": False}, False),
    "LightGBM positions": ("lightgbm", {}, True),
}
# The logging ranker's limits: a few labelled queries need few trees.
LOGGING_SETTINGS = TrainSettings(max_trees=200, early_stopping=20)


def logging_ranker(splits: Splits, fraction: float = 0.01, *, min_queries: int = 3,
                   settings: TrainSettings = LOGGING_SETTINGS) -> tuple[Ranker, int]:
    """λMART on ``fraction`` of the labelled training queries (at least ``min_queries``,
    drawn with ``settings.seed``), early-stopped on ``splits.vali``. Returns the ranker and
    its number of training queries."""
    if not 0 < fraction <= 1:
        raise ValueError(f"logging fraction must be in (0, 1], got {fraction!r}")
    n = max(int(min_queries), int(math.ceil(fraction * splits.train.n_queries)))
    n = min(n, splits.train.n_queries)
    sample = splits.train.sample_queries(n, settings.seed, name=f"{splits.train.name}-logging{n}")
    r = train_ranker(sample, splits.vali, {"learning_rate": 0.1}, settings)
    return r, n


@dataclass
class ClickBiasResult:
    """``curves``: ``model, eta, sessions, metric, value, seconds``, metric ``ndcg@10`` on
    the test set (eta and sessions NaN for the logging ranker and the ceiling); ``propensities``: ``eta, rank, estimated, t_minus,
    true``; ``click_rates``: ``eta, rank, ctr`` of the largest logs; ``logging_queries``;
    ``test_scores``: run name (`model_run_name`) -> test scores (one per test row) of the logging
    ranker, the ceiling and each model trained on the largest log at the smallest and the
    largest eta (no bias and the strongest, the curves' ends), the rankings whose NDCG@10
    ``curves`` holds there (`ltrlib.report.Reporter.run_file`). The other logs' and etas'
    models are left out: every one would be 17 run files at the default grid, a quarter
    of the run folder at ``small`` (docs/ecosystem.md)."""

    curves: pd.DataFrame
    propensities: pd.DataFrame
    click_rates: pd.DataFrame
    logging_queries: int
    test_scores: dict[str, np.ndarray] = field(default_factory=dict)


def model_run_name(model: str, eta: float | None = None, sessions: int | None = None) -> str:
    """A model's name in `ClickBiasResult.test_scores`: the curves' ``model``, and for a
    model trained on clicks its eta and log size (``XGB unbiased eta=0.5 sessions=6000``)."""
    return model if eta is None else f"{model} eta={float(eta):g} sessions={int(sessions)}"


def _ndcg10(scores: np.ndarray, test) -> float:
    return float(evaluate(test, scores, metrics="ndcg@10")["ndcg@10"])


def click_bias_experiment(splits: Splits, etas: Sequence[float] = (0.0, 0.5, 1.0, 1.5, 2.0),
                          sessions: Sequence[int] = (300, 1000, 3000), *, top_k: int = 10,
                          logging_fraction: float = 0.01,
                          settings: TrainSettings = TrainSettings(max_trees=60),
                          click_params: Mapping[str, Any] | None = None,
                          models: Mapping[str, tuple[str, dict, bool]] | None = None,
                          ceiling_trees: int = 300, progress: bool = True) -> ClickBiasResult:
    """Run the experiment (see the module docstring). ``settings``: every model trained on
    clicks grows ``settings.max_trees`` trees in its own backend; the logging ranker
    (`LOGGING_SETTINGS`' limits) and the ceiling (at most ``ceiling_trees`` trees, patience
    a tenth of it, at least 10) take its seed and threads. ``click_params`` go to every
    model trained on clicks (default: learning rate 0.1); XGBoost models get ``topk`` pairs
    with k = ``top_k`` (one propensity per displayed position). ``progress``: a bar over the
    models trained on clicks (`ltrlib.progress`)."""
    from ltrlib.progress import bar

    sessions = sorted({int(s) for s in sessions})
    if not sessions or sessions[0] < 1:
        raise ValueError(f"sessions must be positive integers, got {sessions}")
    models = dict(models or CLICK_MODELS)
    common = {"learning_rate": 0.1, **dict(click_params or {})}
    test = splits.test
    rows = []
    seed = settings.seed
    logger, n_log = logging_ranker(splits, logging_fraction, settings=settings.replace(
        max_trees=LOGGING_SETTINGS.max_trees, early_stopping=LOGGING_SETTINGS.early_stopping))
    on_test = logger.score(test)
    test_scores = {model_run_name("logging ranker"): on_test}
    rows.append({"model": "logging ranker", "eta": np.nan, "sessions": np.nan,
                 "metric": "ndcg@10", "value": _ndcg10(on_test, test), "seconds": np.nan})
    start = time.perf_counter()
    ceiling = train_ranker(splits.train, splits.vali, {"learning_rate": 0.1}, settings.replace(
        max_trees=ceiling_trees, early_stopping=max(10, ceiling_trees // 10)))
    on_test = ceiling.score(test)
    test_scores[model_run_name("true labels (ceiling)")] = on_test
    rows.append({"model": "true labels (ceiling)", "eta": np.nan, "sessions": np.nan,
                 "metric": "ndcg@10", "value": _ndcg10(on_test, test), "seconds": time.perf_counter() - start})
    scores = logger.score(splits.train)
    props, rates = [], []
    models_bar = bar(total=len(etas) * len(sessions) * len(models), desc="models on clicks", unit="model",
                     enabled=progress)
    for i, eta in enumerate(etas):
        full: ClickLog = simulate_click_log(splits.train, scores, pbm(float(eta)), sessions[-1],
                                            top_k=top_k, seed=np.random.SeedSequence([seed, i]).generate_state(1)[0])
        ctr = full.click_rate_by_position()
        rates.append(pd.DataFrame({"eta": float(eta), "rank": np.arange(1, len(ctr) + 1), "ctr": ctr}))
        for n in sessions:
            log = full.first_sessions(n)
            for name, (backend, params, with_pos) in models.items():
                p = {**common, **params}
                if backend == "xgboost":
                    p = {"lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": top_k, **p}
                t0 = time.perf_counter()
                r = train_ranker(log.data, None, p, settings.replace(backend=backend),
                                 position=log.position if with_pos else None)
                on_test = r.score(test)
                rows.append({"model": name, "eta": float(eta), "sessions": n, "metric": "ndcg@10",
                             "value": _ndcg10(on_test, test), "seconds": time.perf_counter() - t0})
                if n == sessions[-1] and float(eta) in (min(map(float, etas)), max(map(float, etas))):
                    test_scores[model_run_name(name, eta, n)] = on_test
                models_bar.update(1)
                if n == sessions[-1] and backend == "xgboost" and p.get("lambdarank_unbiased"):
                    t_plus, t_minus = xgboost_propensities(r)
                    ranks = np.arange(1, len(t_plus) + 1)
                    props.append(pd.DataFrame({"eta": float(eta), "model": name, "rank": ranks,
                                               "estimated": t_plus, "t_minus": t_minus,
                                               "true": 1.0 / ranks ** float(eta)}))
    models_bar.close()
    return ClickBiasResult(pd.DataFrame(rows), pd.concat(props, ignore_index=True) if props else
                           pd.DataFrame(columns=["eta", "model", "rank", "estimated", "t_minus", "true"]),
                           pd.concat(rates, ignore_index=True), n_log, test_scores)


def curve_table(curves: pd.DataFrame) -> pd.DataFrame:
    """Wide view: rows ``(eta, sessions)``, one column per click-trained model, plus the
    logging ranker and the ceiling as constant columns."""
    fixed = curves[curves.sessions.isna()].set_index("model").value
    wide = (curves[curves.sessions.notna()]
            .pivot_table(index=["eta", "sessions"], columns="model", values="value", sort=False))
    wide.columns.name = None
    for name, value in fixed.items():
        wide[name] = value
    return wide.reset_index().astype({"sessions": int})


def propensity_errors(props: pd.DataFrame) -> pd.DataFrame:
    """Per eta: mean absolute error of XGBoost's estimated t+ against 1/rank^eta over the
    shown positions, and the estimate's and the truth's value at the last position."""
    g = props.assign(abs_err=(props.estimated - props["true"]).abs()).groupby("eta", sort=True)
    return pd.DataFrame({"mae": g.abs_err.mean(), "estimated_last": g.estimated.last(),
                         "true_last": g["true"].last()}).reset_index()


def click_bias_metrics(result: ClickBiasResult) -> dict[str, float]:
    """Scalars for ``metrics.json`` (keys by `ltrlib.metrics.flatten_metrics`): the logging
    ranker's training queries, the fixed models' NDCG@10 (``logging_ranker.ndcg10``), each
    click-trained model's at the largest log (``xgb_unbiased.eta0_5.ndcg10``) and the
    propensity errors (``eta0_5.propensity_mae``)."""
    c = result.curves
    parts = [pd.DataFrame({"metric": ["logging_queries"], "value": [result.logging_queries]}),
             c[c.sessions.isna() | (c.sessions == c.sessions.max())]]
    if not result.propensities.empty:
        errors = propensity_errors(result.propensities)
        parts.append(pd.DataFrame({"eta": errors.eta, "metric": "propensity_mae", "value": errors.mae}))
    return flatten_metrics(parts, keys=["model", "eta"])
