"""ltrlib.merge.selection: per-query aggregates and the ranker-selection classifier."""

import numpy as np
import pandas as pd
import pytest

from ltrlib.data.dataset import Dataset, Scorer
from ltrlib.merge import selection


def test_query_aggregates_match_groupby():
    rng = np.random.default_rng(0)
    sizes = np.array([3, 1, 6, 2, 5])
    off = np.r_[0, np.cumsum(sizes)]
    n = off[-1]
    ds = Dataset(X=rng.normal(size=(n, 3)), y=np.zeros(n, int), query_ids=[5, 7, 9, 11, 13],
                 offsets=off, feature_names=("a", "b", "c"))
    s1, s2 = rng.normal(size=n), rng.normal(size=n)
    agg = selection.query_aggregates(ds, {"M1": s1, "M2": s2})
    frame = pd.DataFrame(ds.X.astype(np.float64), columns=["a", "b", "c"]).assign(
        qid=ds.qid, score_M1=s1, score_M2=s2)
    g = frame.groupby("qid")
    for col in ("a", "b", "c", "score_M1", "score_M2"):
        np.testing.assert_allclose(agg[f"{col}:mean"], g[col].mean(), atol=1e-6)
        np.testing.assert_allclose(agg[f"{col}:std"], g[col].std(ddof=0), atol=1e-6)
        np.testing.assert_allclose(agg[f"{col}:max"], g[col].max(), atol=1e-6)
    assert list(agg.index) == [5, 7, 9, 11, 13]
    np.testing.assert_array_equal(agg["n_docs"], sizes)
    for i, (a, b) in enumerate(zip(off[:-1], off[1:])):
        expected = np.corrcoef(s1[a:b], s2[a:b])[0, 1] if b - a > 1 else 0.0
        assert agg["corr_M1_M2"].iloc[i] == pytest.approx(expected, abs=1e-9)
    with pytest.raises(ValueError, match="stats"):
        selection.query_aggregates(ds, stats=("median",))


def _two_kinds(nq, seed):
    """Queries of kind A (feature f0 = -1; M1 ranks them right, M2 reversed) and kind B
    (f0 = +1; the other way round)."""
    rng = np.random.default_rng(seed)
    docs = 10
    n = nq * docs
    kind = rng.random(nq) < 0.5
    y = rng.integers(0, 3, n)
    f0 = np.repeat(np.where(kind, 1.0, -1.0), docs) + 0.1 * rng.normal(size=n)
    ds = Dataset(X=np.column_stack([f0, rng.normal(size=n)]), y=y, query_ids=np.arange(nq) + 1000 * seed,
                 offsets=np.arange(nq + 1) * docs)
    good, bad = y + 0.1 * rng.normal(size=n), -y + 0.1 * rng.normal(size=n)
    b = np.repeat(kind, docs)
    return ds, {"M1": np.where(b, bad, good), "M2": np.where(b, good, bad)}, kind


def test_selector_learns_which_model_to_trust():
    train, s_train, _ = _two_kinds(150, 1)
    test, s_test, kind = _two_kinds(80, 2)
    sel = selection.fit_selector(train, s_train, include_scores=False, seed=0)
    assert not sel.info["fallback"]
    choice = sel.choose(test, s_test)
    assert (choice == kind.astype(int)).mean() > 0.9
    # per document: the chosen model's score
    np.testing.assert_array_equal(sel.score_from_base(test, s_test),
                                  selection.select_scores(test, s_test, choice))
    np.testing.assert_array_equal(selection.oracle_choice(test, s_test), kind.astype(int))
    with pytest.raises(ValueError, match="no base models"):
        sel.score(test)


class FixedScores:
    """A fake local model: the scores it was given, for the one dataset it knows."""

    def __init__(self, ds, scores):
        self.ds, self.scores = ds, scores

    def score(self, data):
        assert data is self.ds
        return self.scores


def test_a_selector_holding_its_models_scores_a_dataset():
    train, s_train, _ = _two_kinds(150, 1)
    test, s_test, _ = _two_kinds(80, 2)
    models = {m: FixedScores(test, s_test[m]) for m in ("M1", "M2")}
    sel = selection.fit_selector(train, s_train, include_scores=False, seed=0, models=models)
    assert isinstance(sel, Scorer) and list(sel.base_models) == ["M1", "M2"]
    np.testing.assert_array_equal(sel.score(test), sel.score_from_base(test, s_test))


def test_selector_falls_back_to_best_mean_model_on_too_little_data():
    train, s_train, _ = _two_kinds(6, 3)
    sel = selection.fit_selector(train, {"M1": s_train["M1"], "M2": train.y.astype(float)})
    assert sel.info["fallback"] and sel.models[sel.default] == "M2"
    assert (sel.choose(train, {"M1": s_train["M1"], "M2": train.y.astype(float)}) == 1).all()
