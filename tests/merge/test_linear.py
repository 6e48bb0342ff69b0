"""ltrlib.merge.linear: alpha selection on cases with known answers, normalisation, n-model search."""

from types import SimpleNamespace

import numpy as np
import pytest

from ltrlib.data.dataset import Dataset, Scorer
from ltrlib.merge import linear
from ltrlib.metrics import evaluate


def make_ds(sizes, y, n_features=2, seed=0):
    sizes = np.asarray(sizes)
    off = np.r_[0, np.cumsum(sizes)]
    X = np.random.default_rng(seed).random((off[-1], n_features))
    return Dataset(X=X, y=np.asarray(y), query_ids=np.arange(sizes.size), offsets=off, name="t")


def pair_queries(diffs1, diffs2):
    """Two-document queries (relevant doc first); per query the score differences
    s(rel) - s(nonrel) of model 1 and model 2."""
    n = len(diffs1)
    ds = make_ds([2] * n, [1, 0] * n)
    s1 = np.ravel([[d, 0.0] for d in diffs1])
    s2 = np.ravel([[d, 0.0] for d in diffs2])
    return ds, s1, s2


def test_alpha_near_one_when_model2_is_truth_and_model1_noise():
    rng = np.random.default_rng(1)
    sizes = rng.integers(15, 30, 120)
    n = sizes.sum()
    y = rng.integers(0, 5, n) * (rng.random(n) < 0.3)
    ds = make_ds(sizes, y)
    noise = rng.normal(size=n)
    truth = y + 0.3 * rng.normal(size=n)
    fit = linear.optimize_linear(ds, {"M1": noise, "M2": truth})
    assert fit.alpha >= 0.85
    # and the other way round: alpha is the weight of the *second* model
    assert linear.optimize_linear(ds, {"M1": truth, "M2": noise}).alpha <= 0.15


def test_constructed_case_alpha_0_3_is_uniquely_best():
    # query 1 is ranked right iff alpha < 1/(1+x1) = 0.305, query 2 iff alpha > 0.295
    x1, x2 = 1 / 0.305 - 1, 1 / 0.295 - 1
    ds, s1, s2 = pair_queries([1.0, -1.0], [-x1, x2])
    fit = linear.optimize_linear(ds, {"M1": s1, "M2": s2}, step=0.01)
    assert fit.alpha == pytest.approx(0.30)
    assert fit.value == pytest.approx(1.0)
    trace = fit.trace
    assert (trace.value >= 1 - 1e-12).sum() == 1  # unique
    assert fit.weights == pytest.approx({"M1": 0.70, "M2": 0.30})


def test_tie_rule_prefers_alpha_closest_to_half():
    # one query ranked right iff alpha > 0.595: alphas 0.60..1.00 tie -> 0.60
    x = 1 / 0.595 - 1  # d = -(1 - a) + a x > 0  <=>  a > 1 / (1 + x) = 0.595
    ds, s1, s2 = pair_queries([-1.0], [x])
    assert linear.optimize_linear(ds, {"a": s1, "b": s2}).alpha == pytest.approx(0.60)
    # everything ties (identical models) -> 0.5
    assert linear.optimize_linear(ds, {"a": s2, "b": s2}).alpha == pytest.approx(0.5)


def test_an_empty_merge_set_ties_everywhere_and_gives_the_uniform_weighting():
    ds, s1, s2 = pair_queries([1.0, -1.0], [-1.0, 1.0])
    empty = ds.take(np.array([], dtype=np.int64))
    fit = linear.optimize_linear(empty, {"a": s1[:0], "b": s2[:0]})
    assert fit.alpha == pytest.approx(0.5) and np.isnan(fit.value)


def test_normalisation_per_query_matches_loop_and_is_affine_invariant():
    rng = np.random.default_rng(2)
    sizes = np.array([5, 1, 7, 3, 4])
    off = np.r_[0, np.cumsum(sizes)]
    s = rng.normal(size=off[-1]) * 10
    s[off[3]:off[4]] = 2.5  # a constant query
    z = linear.normalise_scores(s, off, "zscore")
    mm = linear.normalise_scores(s, off, "minmax")
    for a, b in zip(off[:-1], off[1:]):
        q = s[a:b]
        if np.ptp(q) == 0:
            assert np.all(z[a:b] == 0) and np.all(mm[a:b] == 0)
            continue
        np.testing.assert_allclose(z[a:b], (q - q.mean()) / q.std(), atol=1e-12)
        np.testing.assert_allclose(mm[a:b], (q - q.min()) / (q.max() - q.min()), atol=1e-12)
    # per-query positive affine maps leave both normalisations unchanged
    scale = np.repeat(rng.uniform(0.1, 100, sizes.size), sizes)
    shift = np.repeat(rng.normal(size=sizes.size) * 50, sizes)
    np.testing.assert_allclose(linear.normalise_scores(s * scale + shift, off, "zscore"), z, atol=1e-9)
    np.testing.assert_allclose(linear.normalise_scores(s * scale + shift, off, "minmax"), mm, atol=1e-9)
    np.testing.assert_array_equal(linear.normalise_scores(s, off, "none"), s)
    with pytest.raises(ValueError, match="normalisation"):
        linear.normalise_scores(s, off, "rank")


def test_normalisation_changes_the_choice_when_scales_differ():
    # model 2 is right but on a 1000x smaller scale: raw merging needs alpha ~ 1,
    # z-scored merging does not
    rng = np.random.default_rng(3)
    sizes = np.full(60, 20)
    n = sizes.sum()
    y = (rng.random(n) < 0.2).astype(int)
    ds = make_ds(sizes, y)
    s1 = rng.normal(size=n) * 1000
    s2 = (y + 0.2 * rng.normal(size=n)) * 0.001
    raw = linear.optimize_linear(ds, {"M1": s1, "M2": s2})
    z = linear.optimize_linear(ds, {"M1": s1, "M2": s2}, normalisation="zscore")
    assert raw.alpha > 0.99
    assert 0.5 < z.alpha < 0.99
    merged = z.score_from_base(ds, {"M2": s2, "M1": s1})  # mapping order does not matter
    expected = (1 - z.alpha) * linear.normalise_scores(s1, ds.offsets, "zscore") \
        + z.alpha * linear.normalise_scores(s2, ds.offsets, "zscore")
    np.testing.assert_allclose(merged, expected)


def test_simplex_grid_and_three_model_search():
    g = linear.simplex_grid(3, 0.1)
    assert g.shape == (66, 3)
    np.testing.assert_allclose(g.sum(axis=1), 1)
    assert (g >= 0).all() and len(np.unique(g.round(8), axis=0)) == 66
    np.testing.assert_allclose(linear.simplex_grid(2, 0.25)[:, 1], [0, 0.25, 0.5, 0.75, 1])

    rng = np.random.default_rng(4)
    sizes = rng.integers(10, 25, 80)
    n = sizes.sum()
    y = rng.integers(0, 3, n) * (rng.random(n) < 0.3)
    ds = make_ds(sizes, y)
    scores = {"A": rng.normal(size=n), "B": y + 0.8 * rng.normal(size=n), "C": rng.normal(size=n)}
    grid = linear.optimize_linear(ds, scores, step=0.05, method="grid")
    coord = linear.optimize_linear(ds, scores, step=0.05, method="coordinate")
    for fit in (grid, coord):
        assert sum(fit.weights.values()) == pytest.approx(1)
        assert max(fit.weights, key=fit.weights.get) == "B"
        assert fit.value == pytest.approx(evaluate(ds, fit.score_from_base(ds, scores), metrics="ndcg@10")["ndcg@10"])
    assert grid.value >= coord.value - 1e-12  # exhaustive search is an upper bound
    assert grid.value == pytest.approx(grid.trace.value.max())
    with pytest.raises(AttributeError, match="two models"):
        grid.alpha


def test_bad_parameters_are_named():
    ds, s1, s2 = pair_queries([1.0], [1.0])
    with pytest.raises(ValueError, match="step"):
        linear.optimize_linear(ds, [s1, s2], step=0.03)
    with pytest.raises(ValueError, match="sum to 1"):
        linear.linear_merge([s1, s2], [0.5, 0.6])
    with pytest.raises(ValueError, match="at least 2"):
        linear.linear_merge([s1], [1.0])
    with pytest.raises(ValueError, match="documents"):
        linear.optimize_linear(ds, [s1, s2[:1]])
    with pytest.raises(ValueError, match="offsets"):
        linear.linear_merge([s1, s2], [0.5, 0.5], normalisation="zscore")


def test_alpha_sweep_endpoints_are_the_local_models():
    rng = np.random.default_rng(5)
    sizes = rng.integers(5, 15, 30)
    n = sizes.sum()
    ds = make_ds(sizes, rng.integers(0, 3, n))
    s1, s2 = rng.normal(size=n), rng.normal(size=n)
    sw = linear.alpha_sweep({"D": (ds, [s1, s2])}, step=0.1)
    assert list(sw.columns) == ["alpha", "test_set", "metric", "value"]
    assert len(sw) == 11 * 3
    at0 = linear.sweep_at(sw, 0.0).loc["D"]
    at1 = linear.sweep_at(sw, 1.0 - 1e-9).loc["D"]  # float drift snaps to the grid
    for metric, v in evaluate(ds, s1).items():
        assert at0[metric] == pytest.approx(v)
    for metric, v in evaluate(ds, s2).items():
        assert at1[metric] == pytest.approx(v)


class ColumnModel:
    """A fake ranker scoring by one feature column."""

    def __init__(self, col):
        self.col = col

    def score(self, data):
        return np.asarray(data.X)[:, self.col]


def test_linear_experiment_names_and_shapes():
    rng = np.random.default_rng(6)
    def ds(nq, seed):
        sizes = np.full(nq, 8)
        n = sizes.sum()
        y = rng.integers(0, 3, n)
        X = np.column_stack([y + rng.normal(size=n), rng.normal(size=n)])
        return Dataset(X=X, y=y, query_ids=np.arange(nq) + 100 * seed, offsets=np.r_[0, np.cumsum(sizes)])
    test = ds(20, 1)
    clients = [SimpleNamespace(name="client1", merge=ds(10, 2)),
               SimpleNamespace(name="client2", merge=ds(10, 3))]
    split = SimpleNamespace(name="Split1", full=SimpleNamespace(test=test), clients=clients)
    exp = linear.linear_experiment(split, {"M1": ColumnModel(1), "M2": ColumnModel(0)}, step=0.1)
    assert list(exp.choices.model) == ["M12α", "M21α"]
    assert (exp.choices.alpha > 0.5).all()  # M2 scores by the informative column
    assert set(exp.per_query.model) == {"M1", "M2", "M12α", "M21α"}
    assert set(exp.sweep.test_set) == {"D_merge", "test"}
    assert exp.per_query.groupby(["model", "metric"]).size().eq(20).all()
    # a merged model holds its local models: scoring a Dataset needs no score matrix
    for name, merged in exp.merges.items():
        assert isinstance(merged, Scorer)
        np.testing.assert_array_equal(merged.score(test), exp.test_scores[name])


def test_weights_tuned_from_bare_scores_score_only_from_scores():
    ds, s1, s2 = pair_queries([1.0, -1.0], [2.0, 1.0])
    fit = linear.optimize_linear(ds, {"M1": s1, "M2": s2})
    with pytest.raises(ValueError, match="no base models"):
        fit.score(ds)
    with pytest.raises(KeyError, match="M2"):
        linear.optimize_linear(ds, {"M1": s1, "M2": s2}, models={"M1": ColumnModel(0)})


def test_the_package_exports_each_merge_beside_its_optimiser():
    """ranx-style pairs, as `ltrlib.merge`'s docstring presents them (issue 65)."""
    import ltrlib.merge as merge
    from ltrlib.merge import stacking

    assert merge.optimize_linear is linear.optimize_linear and merge.linear_merge is linear.linear_merge
    assert merge.optimize_stacking is stacking.optimize_stacking
