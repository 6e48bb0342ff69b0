"""Notebook 03's client models: M1 on DS1, M2' on DS2' per split and M_full on DS, each
tuned on its own validation part (`ltrlib.train.tuning.fit_tuned`), and their results.

    models = fit_client_models(paper_splits(...), store, settings=TrainSettings(seed=0))
    per_query = client_results(models)        # split, model, test_set, qid, metric, value

Tables 1 and 3 in the paper's layouts are built from ``per_query`` by
`ltrlib.clients.tables`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ltrlib import sessions
from ltrlib.data.dataset import Dataset
from ltrlib.metrics.keys import flatten_metrics
from ltrlib.train.ranker import Ranker, evaluate_rankers
from ltrlib.train.settings import TrainSettings, TuningSettings
from ltrlib.train.tuning import TuningResult, fit_side_by_side, fit_tuned

__all__ = ["ClientModels", "MODEL_NAMES", "TEST_SETS", "client_metrics", "client_results",
           "fit_client_models", "run_scorers", "training_order"]

MODEL_NAMES = ("M1", "M2", "M_full")
# Table columns. The paper's §5.2 trains the second client on DS2' (DS2 without the queries
# holding documents of client 1's category) and from there on writes DS2 for DS2'.
TEST_SETS = ("DS1", "DS2'", "DS")


@dataclass
class ClientModels:
    """The tuned models of notebook 03: ``rankers`` and ``results`` keyed by ``(split,
    model)`` with model in ``M1, M2, M_full`` (M2 is the paper's M2', trained on DS2');
    ``tests`` maps each split to its test sets ``DS1, DS2', DS``; ``reused`` lists the keys
    whose data were identical to an earlier key's, mapped to it (then no training)."""

    rankers: dict[tuple[str, str], Ranker]
    results: dict[tuple[str, str], TuningResult]
    tests: dict[str, dict[str, Dataset]]
    reused: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)

    def subset(self, splits) -> "ClientModels":
        """The models and test sets of some splits only (in the given order)."""
        names = list(splits)
        missing = [s for s in names if s not in self.tests]
        if missing:
            raise ValueError(f"splits {missing} were not fitted; fitted: {list(self.tests)}")
        keep = set(names)
        return ClientModels({k: v for k, v in self.rankers.items() if k[0] in keep},
                            {k: v for k, v in self.results.items() if k[0] in keep},
                            {s: self.tests[s] for s in names},
                            {k: v for k, v in self.reused.items() if k[0] in keep})


def _same_data(a: Dataset, b: Dataset) -> bool:
    return (a.n_queries == b.n_queries and a.n_docs == b.n_docs
            and np.array_equal(a.query_ids, b.query_ids))


def training_order(run_splits, alternatives: Mapping[str, Any], initial: Mapping[str, Any]) -> list[str]:
    """The splits notebook 03 tunes in one pass, in order: the run's, then Table 3's
    alternative configurations it does not run already, then Table 1's initial split."""
    return [*run_splits, *(s for s in alternatives if s not in run_splits), *initial]


def fit_client_models(
    nsplits: Mapping[str, Any],
    store,
    *,
    splits: str | list[str] | None = None,
    settings: TrainSettings = TrainSettings(),
    tuning: TuningSettings = TuningSettings(),
    n_jobs: int = 1,
) -> ClientModels:
    """Tune and train M1 (on DS1), M2' (on DS2') per split, and M_full (on DS) once.

    ``nsplits``: ``ltrlib.noniid.splits.paper_splits(...)``; ``splits``: the names to run
    (a comma-separated string or a list; default all). Each model is tuned on its own
    validation part with `fit_tuned` (study ``"<split>.<model>"``, model stored as
    ``(split, model)``); M_full is tuned and stored once under split ``"full"``, since DS is
    the same for every split. A client whose train and validation data equal those of an
    already fitted model (DS2' is identical in Split1 and Split2, both category 11) reuses
    that model: it is stored again under its own split, with the original study recorded.
    ``settings``: how every model trains (`TrainSettings`; its backend, ``"lightgbm"`` as
    the paper or ``"xgboost"``, is tuned over its own space, `ltrlib.train.search_space`).
    ``tuning``: every model's search (`TuningSettings`: trials, pruning, first point,
    progress; ``tuning.storage`` is where the studies live, by default the run's journal,
    see `fit_tuned`).

    ``n_jobs`` > 1 tunes that many distinct models side by side in worker processes
    (`fit_side_by_side`), each with ``settings.threads // n_jobs`` threads, then loads them
    here.
    """
    names = list(nsplits) if splits is None else (
        sessions.parse_list(splits, name="splits", allow_empty=True) if isinstance(splits, str) else list(splits))
    unknown = [s for s in names if s not in nsplits]
    if unknown or not names:
        raise ValueError(f"splits {unknown or names!r} not available; choose from {list(nsplits)}")
    common = dict(settings=settings, tuning=tuning)
    full = nsplits[names[0]].full
    for s in names[1:]:
        other = nsplits[s].full
        if not (_same_data(full.train, other.train) and _same_data(full.vali, other.vali)):
            raise ValueError(f"{names[0]} and {s} have different full collections DS; "
                             "M_full is trained once for all splits")
    for s in names:
        if len(nsplits[s].clients) != 2:
            raise ValueError(f"{s} has {len(nsplits[s].clients)} clients; notebook 03 expects 2")
    plan = _fit_plan(nsplits, names)
    if n_jobs > 1:
        own = [key for key, trained_as in plan.items() if trained_as == key]
        fits = [("full", "M_full", full.train, full.vali)] + [
            (*key, _client(nsplits, key).train, _client(nsplits, key).vali) for key in own]
        fit_side_by_side(fits, store, n_jobs=n_jobs, **common)
    out = ClientModels({}, {}, {})
    r_full, res_full = fit_tuned(full.train, full.vali, store=store, split="full",
                                 name="M_full", **common)
    for s in names:
        ns = nsplits[s]
        out.tests[s] = {"DS1": ns.clients[0].test, "DS2'": ns.clients[1].test, "DS": ns.full.test}
        for model, client in zip(("M1", "M2"), ns.clients):
            key = (s, model)
            twin = plan[key]
            if twin != key:
                ranker, result = out.rankers[twin], out.results[twin]
                out.reused[key] = twin
                if not store.exists(s, model) or \
                        (store.info(s, model).get("info") or {}).get("tuning") != ranker.info.get("tuning"):
                    store.save(ranker, s, model)
            else:
                ranker, result = fit_tuned(client.train, client.vali, store=store, split=s,
                                           name=model, **common)
            out.rankers[key], out.results[key] = ranker, result
        out.rankers[(s, "M_full")], out.results[(s, "M_full")] = r_full, res_full
    return out


def _fit_plan(nsplits: Mapping[str, Any], names: list[str]) -> dict[tuple[str, str], tuple[str, str]]:
    """Each client model ``(split, model)`` of ``names`` mapped to the model it is trained as:
    itself, or the earlier one with the same training and validation data (DS2' is the same
    in Split1 and Split2, both category 11), which it then reuses."""
    plan: dict[tuple[str, str], tuple[str, str]] = {}
    for s in names:
        for model, client in zip(("M1", "M2"), nsplits[s].clients):
            plan[(s, model)] = next(
                (k for k, own in plan.items() if own == k
                 and _same_data(_client(nsplits, k).train, client.train)
                 and _same_data(_client(nsplits, k).vali, client.vali)), (s, model))
    return plan


def _client(nsplits: Mapping[str, Any], key: tuple[str, str]):
    split, model = key
    return nsplits[split].clients[("M1", "M2").index(model)]


def client_results(models: ClientModels, metrics=("ndcg@10",)) -> pd.DataFrame:
    """Every split's M1, M2, M_full on its DS1, DS2', DS test sets, per query.

    Tidy: ``split, model, test_set, qid, metric, value``. Tables 1 and 3 (rows ``split,
    model``, columns ``DS1, DS2', DS``, ᵃ: paired t-test against M_full) are
    ``ltrlib.metrics.compare(per_query, "M_full", by=["split", "test_set"]).marked(by="split")``
    for one metric; see `ltrlib.clients.tables` for the paper's arrangements.
    """
    parts = []
    for s, tests in models.tests.items():
        rankers = {m: models.rankers[(s, m)] for m in MODEL_NAMES}
        df = evaluate_rankers(rankers, tests, metrics=metrics)
        df.insert(0, "split", s)
        parts.append(df)
    return pd.concat(parts, ignore_index=True)


def run_scorers(models: ClientModels, test_set: str = "DS") -> tuple[dict[str, Ranker], Dataset]:
    """The models whose rankings of ``test_set`` notebook 03 writes as run files, and that
    test set: ``(scorers, data)`` for `ltrlib.report.Reporter.run_files`. ``scorers`` holds
    every split's M1 and M2 as ``<split>.<model>`` (``Split1.M1``) and M_full once, as
    ``M_full``: it is one model, trained once on DS (`fit_client_models`), and each split
    would write the same file again.

    One qrels file stands for one test set, so every split's ``test_set`` must be the same
    data (DS is: the splits share one collection); raises ValueError naming the first split
    whose ``test_set`` differs, or an unknown ``test_set``."""
    if test_set not in TEST_SETS:
        raise ValueError(f"run_scorers: test_set must be one of {TEST_SETS}, got {test_set!r}")
    if not models.tests:
        raise ValueError("run_scorers: models hold no split")
    first, *others = models.tests
    data = models.tests[first][test_set]
    for s in others:
        other = models.tests[s][test_set]
        if not (other is data or (np.array_equal(other.query_ids, data.query_ids)
                                  and np.array_equal(other.offsets, data.offsets)
                                  and np.array_equal(other.y, data.y) and np.array_equal(other.X, data.X))):
            raise ValueError(f"run_scorers: {s}'s {test_set} differs from {first}'s; their runs need "
                             "one qrels file each")
    scorers = {f"{s}.{m}": models.rankers[(s, m)] for s in models.tests for m in ("M1", "M2")}
    return {**scorers, "M_full": models.rankers[(first, "M_full")]}, data


def client_metrics(models: ClientModels, per_query: pd.DataFrame,
                   metric: str = "ndcg@10") -> dict[str, float | int]:
    """Scalars for ``metrics.json`` (keys by `ltrlib.metrics.flatten_metrics`): mean
    ``metric`` per split, model and test set (``split1.m2.ds2p.ndcg10``) and each model's
    early-stopped trees (``split1.m2.trees``)."""
    means = (per_query[per_query.metric == metric]
             .groupby(["split", "model", "test_set", "metric"], sort=False).value.mean().reset_index())
    trees = pd.DataFrame([{"split": s, "model": m, "metric": "trees", "value": int(r.best_iteration)}
                          for (s, m), r in models.rankers.items()])
    return flatten_metrics([means, trees], keys=["split", "model", "test_set"])
