"""ltrlib.merge.stacking: the score-feature layout, the meta-model, its importance frame."""

import numpy as np
import pytest

from ltrlib.data.dataset import Dataset, Scorer
from ltrlib.merge import stacking


def make_ds(nq=30, docs=12, n_features=4, seed=0):
    rng = np.random.default_rng(seed)
    n = nq * docs
    y = rng.integers(0, 3, n) * (rng.random(n) < 0.5)
    return Dataset(X=rng.normal(size=(n, n_features)), y=y, query_ids=np.arange(nq),
                   offsets=np.arange(nq + 1) * docs, feature_names=tuple(f"f{i}" for i in range(n_features)),
                   name="dm")


def test_score_features_are_columns_x_plus_1_to_x_plus_n():
    ds = make_ds()
    rng = np.random.default_rng(1)
    s1, s2 = rng.normal(size=ds.n_docs), rng.normal(size=ds.n_docs)
    aug = stacking.stack_features(ds, {"M1": s1, "M2": s2})
    d = ds.n_features
    assert aug.n_features == d + 2
    assert aug.feature_names[:d] == ds.feature_names
    assert aug.feature_names[d:] == ("score_M1", "score_M2")
    np.testing.assert_array_equal(aug.X[:, :d], ds.X)
    np.testing.assert_array_equal(aug.X[:, d], s1.astype(np.float32))
    np.testing.assert_array_equal(aug.X[:, d + 1], s2.astype(np.float32))
    np.testing.assert_array_equal(aug.offsets, ds.offsets)
    np.testing.assert_array_equal(aug.y, ds.y)


def test_stack_features_rejects_bad_scores():
    ds = make_ds()
    with pytest.raises(ValueError, match="M1"):
        stacking.stack_features(ds, {"M1": np.zeros(ds.n_docs - 1)})
    with pytest.raises(ValueError, match="NaN"):
        stacking.stack_features(ds, {"M1": np.full(ds.n_docs, np.nan)})
    aug = stacking.stack_features(ds, {"M1": np.zeros(ds.n_docs)})
    with pytest.raises(ValueError, match="already has"):
        stacking.stack_features(aug, {"M1": np.zeros(ds.n_docs)})


def test_meta_model_relies_on_the_informative_score_feature():
    ds = make_ds(nq=40)
    rng = np.random.default_rng(2)
    scores = {"M1": rng.normal(size=ds.n_docs), "M2": ds.y + 0.1 * rng.normal(size=ds.n_docs)}
    params = {"learning_rate": 0.1, "num_leaves": 7, "min_data_in_leaf": 10,
              "min_sum_hessian_in_leaf": 1}
    meta = stacking.train_stacking(ds, scores, params=params, n_trees=20)
    imp = stacking.feature_importance({"M12S": meta}, top_k=2)
    gain = imp[imp.kind == "gain"].set_index("feature")
    assert gain.loc["score_M2", "rank"] == 1
    assert gain.loc["score_M2", "is_score"] and not gain.drop(["score_M1", "score_M2"]).is_score.any()
    assert "score_M1" in gain.index  # score features are kept outside the top k
    assert set(imp.kind) == {"gain", "split"}
    np.testing.assert_allclose(imp.groupby("kind").share.sum() <= 1 + 1e-9, True)
    # score_from_base reads the scores by model name, whatever the mapping order
    p1 = meta.score_from_base(ds, scores)
    p2 = meta.score_from_base(ds, {"M2": scores["M2"], "M1": scores["M1"]})
    np.testing.assert_array_equal(p1, p2)
    with pytest.raises(KeyError, match="M2"):
        meta.score_from_base(ds, {"M1": scores["M1"]})
    # trained from score arrays alone, it holds no models to score a Dataset with
    with pytest.raises(ValueError, match="no base models"):
        meta.score(ds)


def test_optimize_stacking_cross_validates_over_queries():
    ds = make_ds(nq=12, docs=20)
    rng = np.random.default_rng(3)
    scores = {"M1": rng.normal(size=ds.n_docs), "M2": ds.y + 0.5 * rng.normal(size=ds.n_docs)}
    res = stacking.optimize_stacking(ds, scores, tuning=stacking.STACKING_TUNING.replace(n_trials=2), n_folds=2,
                                     settings=stacking.STACKING_SETTINGS.replace(max_trees=20))
    assert res.n_trials == 2 and 1 <= res.best_iteration <= 20
    assert set(res.best_params) == {"learning_rate", "num_leaves", "min_data_in_leaf",
                                    "min_sum_hessian_in_leaf"}
    with pytest.raises(ValueError, match="n_folds"):
        stacking.optimize_stacking(ds, scores, n_folds=13)


def test_xgboost_meta_model(tmp_path):
    ds = make_ds(nq=12, docs=20)
    rng = np.random.default_rng(3)
    scores = {"M1": rng.normal(size=ds.n_docs), "M2": ds.y + 0.1 * rng.normal(size=ds.n_docs)}
    # The LightGBM-named first trial is translated into XGBoost's space.
    xgb = stacking.STACKING_SETTINGS.replace(max_trees=10, backend="xgboost")
    res = stacking.optimize_stacking(ds, scores, tuning=stacking.STACKING_TUNING.replace(n_trials=1), n_folds=2,
                                     settings=xgb)
    assert res.best_params == {"learning_rate": 0.1, "max_leaves": 31, "min_child_weight": 1}
    meta = stacking.train_stacking(ds, scores, params=res.best_params, n_trees=10, settings=xgb)
    assert meta.ranker.backend == "xgboost"
    gain = stacking.feature_importance({"M12S": meta}, top_k=1)
    gain = gain[gain.kind == "gain"].set_index("feature")
    assert gain.loc["score_M2", "rank"] == 1


def test_meta_models_may_have_the_papers_range_of_trees(monkeypatch):
    # The paper's tuned meta-models have 60-473 trees: the tree cap must hold them all, and
    # stacking_experiment must tune with it by default.
    assert 473 <= stacking.STACKING_SETTINGS.max_trees <= 600
    from ltrlib import train

    seen = {}

    def fake_tune_cv(data, n_folds, **kw):
        seen.update(kw)
        raise RuntimeError("stop")

    monkeypatch.setattr(train, "tune_cv", fake_tune_cv)
    ds = make_ds(nq=12, docs=20)
    with pytest.raises(RuntimeError, match="stop"):
        stacking.optimize_stacking(ds, {"M1": np.zeros(ds.n_docs)}, n_folds=2)
    assert seen["settings"] == stacking.STACKING_SETTINGS and seen["tuning"] == stacking.STACKING_TUNING
    assert seen["tuning"].prune is True and seen["tuning"].n_trials == 10
    # The paper's patience, so that a slow meta-model is not cut short of its range.
    assert seen["settings"].early_stopping == 100


def test_an_empty_merge_set_falls_back_on_the_uniform_combination():
    from types import SimpleNamespace

    from ltrlib.merge.linear import linear_merge

    class ColumnModel:  # scores a dataset by one of its feature columns
        def __init__(self, j):
            self.j = j

        def score(self, data):
            return np.asarray(data.X)[:, self.j]

    test, merge = make_ds(nq=20, seed=1), make_ds(nq=12, seed=2)
    empty = merge.take(np.array([], dtype=np.int64))
    split = SimpleNamespace(name="S", full=SimpleNamespace(test=test),
                            clients=[SimpleNamespace(name="client1", merge=empty),
                                     SimpleNamespace(name="client2", merge=merge)])
    models = {"M1": ColumnModel(0), "M2": ColumnModel(1)}
    exp = stacking.stacking_experiment(split, models, tuning=stacking.STACKING_TUNING.replace(n_trials=1), n_folds=2)
    first = exp.params.set_index("model").loc["M12S"]
    assert first.merge_queries == 0 and "uniform" in first.note
    assert "M12S" not in exp.meta and "M21S" in exp.meta
    uniform = linear_merge({"M1": test.X[:, 0], "M2": test.X[:, 1]}, {"M1": 0.5, "M2": 0.5})
    pq = exp.per_query[(exp.per_query.model == "M12S") & (exp.per_query.metric == "ndcg@10")]
    from ltrlib.metrics import evaluate
    expected = evaluate(test, uniform, metrics="ndcg@10", per_query=True)
    np.testing.assert_allclose(pq.value.to_numpy(), expected.value.to_numpy())
    # the meta-model holds its local models: it scores a Dataset as the experiment did
    meta = exp.meta["M21S"]
    assert isinstance(meta, Scorer) and list(meta.base_models) == ["M1", "M2"]
    got = evaluate(test, meta.score(test), metrics="ndcg@10", per_query=True).value.to_numpy()
    pq2 = exp.per_query[(exp.per_query.model == "M21S") & (exp.per_query.metric == "ndcg@10")]
    np.testing.assert_allclose(got, pq2.value.to_numpy())


def test_no_meta_model_gives_an_empty_importance_table_and_a_figure_that_says_so():
    # Binned real data can leave every client's D_merge empty: stacking then learns no
    # meta-model (each client falls back on the uniform combination), and Figure 3 says so.
    import matplotlib.pyplot as plt

    from ltrlib import plots

    importance = stacking.feature_importance({})
    assert importance.empty and list(importance.columns) == ["model", "kind", "feature", "value", "share",
                                                            "rank", "is_score"]
    fig = plots.stacking_importance(importance)
    assert "every client's D_merge is empty" in fig.axes[0].texts[0].get_text()
    plt.close(fig)
