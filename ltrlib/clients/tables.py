"""Tables 1 and 3 of the non-IID paper in its own layout, from notebook 03's per-query results.

`ltrlib.metrics.compare(per_query, "M_full", by=["split", "test_set"]).marked(by="split")`
gives one block per split (rows ``split, model``, columns ``DS1, DS2', DS``). The paper
prints two other arrangements:

* Table 1, the *initial* split (tie-breaking on category 11, client 2 = the full DS2):
  rows M1, M2, M_full; columns DS1, DS2, DS.
* Table 3, the four alternative splits: a block per partitioning strategy (without
  tie-breaking, exclusive), rows M1, M'2, M_full; per category (11, 14) the columns
  DS1, DS'2, DS.

Both are built here from ``client_results`` output and the split objects (which say each
split's strategy and category), with the same significance marks (ᵃ: paired t-test
against M_full). `client_means` is the tidy numeric companion, read by
`ltrlib.fidelity`; `locals_compared` the paired test of M'2 against M1 on the full test set
that the ledger decides §5.2's "not significantly different" on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pandas as pd

from ltrlib.metrics import MarkedTable, compare
from ltrlib.noniid.splits import STRATEGY_LABELS

__all__ = ["client_means", "locals_compared", "second_test_set", "table1_initial", "table3_alternative"]


def second_test_set(split) -> str:
    """``"DS2'"`` when client 2 holds DS2' (no document of client 1's category, the
    ``exclusive`` rest rule), ``"DS2"`` when it holds every other query (the initial split)."""
    return "DS2'" if split.clients[1].strategy == "exclusive" else "DS2"


def _check(per_query: pd.DataFrame, nsplits: Mapping[str, object]) -> None:
    missing = [s for s in nsplits if s not in set(per_query.split)]
    if missing:
        raise KeyError(f"per_query has no results for splits {missing} "
                       f"(has {list(pd.unique(per_query.split))})")


def _split_marks(per_query: pd.DataFrame, split: str, metric: str, baseline: str | None,
                 alpha: float) -> MarkedTable:
    """One split's models x test sets (``DS1, DS2', DS``), marked against ``baseline``."""
    pq = per_query[(per_query.split == split) & (per_query.metric == metric)]
    if pq.empty:
        raise ValueError(f"per_query has no {metric!r} rows for split {split!r} (metrics: "
                         f"{list(pd.unique(per_query.metric))})")
    return compare(pq, baseline, by="test_set", alpha=alpha).marked()


def client_means(per_query: pd.DataFrame, nsplits: Mapping[str, object],
                 metric: str = "ndcg@10") -> pd.DataFrame:
    """Tidy means of ``metric`` per split, model and test set, with each split's definition:
    ``split, strategy, category, model, test_set, metric, value, queries``. ``test_set`` is
    ``DS1``, ``DS2'`` or ``DS2`` (see `second_test_set`) or ``DS``."""
    _check(per_query, nsplits)
    pq = per_query[(per_query.metric == metric) & per_query.split.isin(list(nsplits))]
    g = pq.groupby(["split", "model", "test_set"], sort=False).value
    out = pd.DataFrame({"value": g.mean(), "queries": g.size()}).reset_index()
    out["strategy"] = out.split.map({s: ns.strategy for s, ns in nsplits.items()})
    out["category"] = out.split.map({s: ns.category for s, ns in nsplits.items()})
    ds2 = {s: second_test_set(ns) for s, ns in nsplits.items()}
    out["test_set"] = [ds2[s] if t == "DS2'" else t for s, t in zip(out.split, out.test_set)]
    out["metric"] = metric
    order = {s: i for i, s in enumerate(nsplits)}
    out = out.sort_values("split", key=lambda s: s.map(order), kind="stable")
    return out[["split", "strategy", "category", "model", "test_set", "metric", "value",
                "queries"]].reset_index(drop=True)


def table1_initial(per_query: pd.DataFrame, initial: Mapping[str, object], metric: str = "ndcg@10",
                   baseline: str | None = "M_full", alpha: float = 0.05) -> MarkedTable:
    """Table 1: rows M1, M2, M_full of the initial split (``initial``, by name, as
    `ltrlib.noniid.splits.initial_splits` gives it); columns DS1, DS2, DS, means marked
    against ``baseline`` (plain with ``baseline=None``), as a `ltrlib.metrics.MarkedTable`.
    Without cells when ``initial`` is empty: data on which the initial split cannot be
    trained."""
    _check(per_query, initial)
    if not initial:
        return MarkedTable(pd.DataFrame(columns=["model", "test_set", "mean"]), (), columns=("test_set",),
                           empty_columns=("DS1", "DS2", "DS"))
    (name, split), = initial.items()
    table = _split_marks(per_query, name, metric, baseline, alpha)
    # Client 2's test set is named for what it holds (`second_test_set`).
    rename = {"DS2'": second_test_set(split)}
    return replace(table, numbers=table.numbers.replace({"test_set": rename}),
                   tests=table.tests.replace({"test_set": rename}) if not table.tests.empty else table.tests)


def table3_alternative(per_query: pd.DataFrame, nsplits: Mapping[str, object],
                       metric: str = "ndcg@10", baseline: str | None = "M_full",
                       alpha: float = 0.05) -> pd.DataFrame:
    """Table 3: one row block per strategy (``partitioning``), rows M1, M2', M_full; columns
    ``Category <c> <test set>`` per category in order of appearance (DS1, DS2', DS).

    ``nsplits``: `ltrlib.noniid.splits.alternative_splits` output (every split two clients,
    client 2 on DS2')."""
    _check(per_query, nsplits)
    if not nsplits:  # every configuration was left out (`alternative_splits` says why)
        return pd.DataFrame(index=pd.MultiIndex.from_tuples([], names=["partitioning", "model"]))
    blocks: dict[str, dict[str, pd.DataFrame]] = {}
    for name, ns in nsplits.items():
        wide = _split_marks(per_query, name, metric, baseline, alpha).formatted().rename(index={"M2": "M2'"})
        wide.columns = [f"Category {ns.category} {t}" for t in wide.columns]
        blocks.setdefault(STRATEGY_LABELS.get(ns.strategy, ns.strategy), {})[name] = wide
    parts = {label: pd.concat(list(b.values()), axis=1) for label, b in blocks.items()}
    table = pd.concat(parts, names=["partitioning", "model"])
    columns = list(dict.fromkeys(c for p in parts.values() for c in p.columns))
    return table.reindex(columns=columns)


def locals_compared(per_query: pd.DataFrame, nsplits: Mapping[str, object], metric: str = "ndcg@10",
                    test_set: str = "DS") -> pd.DataFrame:
    """M2 (M'2) against M1 on ``test_set``, per split: the two-sided paired t-test over the
    test queries (`ltrlib.metrics.comparison.Comparison.differences`). Tidy: ``split, strategy, category, model,
    baseline, units, mean, mean_baseline, diff, t, p`` (model M2, baseline M1).

    §5.2 says of the splits without tie-breaking that the two local models' "overall
    performance is not significantly different" on Istella's test set; this is the test."""
    _check(per_query, nsplits)
    pq = per_query[(per_query.metric == metric) & (per_query.test_set == test_set)
                   & per_query.split.isin(list(nsplits))]
    columns = ["split", "strategy", "category", "model", "baseline", "units", "mean", "mean_baseline", "diff",
               "t", "p"]
    if pq.empty:  # every configuration was left out (`alternative_splits` says why)
        return pd.DataFrame(columns=columns)
    out = compare(pq, "M1", by="split", models=["M1", "M2"]).differences()
    out = out[out.model == "M2"].reset_index(drop=True)
    out.insert(1, "strategy", out.split.map({s: ns.strategy for s, ns in nsplits.items()}))
    out.insert(2, "category", out.split.map({s: ns.category for s, ns in nsplits.items()}))
    return out[columns]
