"""BivariateRanker / UnivariateRanker: fit, predict, score, permutation invariance."""

import numpy as np
import pytest

from ltrlib.bilambdamart import BivariateRanker, expand_listwise, query_level_columns
from ltrlib.bilambdamart.model import UnivariateRanker, offsets_from_qid
from ltrlib.bilambdamart.model import LB_SETTINGS, RankData, fit_lb
from ltrlib.data import Dataset, Scorer


def _data(seed, n_queries=40):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 9, n_queries)
    qid = np.repeat(np.arange(n_queries) * 10 + seed, sizes)
    base = rng.normal(size=(sizes.sum(), 3))
    offsets = offsets_from_qid(qid)
    # Relevance depends on a document's standing within its query (bivariate signal).
    z = expand_listwise(base, offsets)[:, 4 * 3:]
    y = np.clip(np.round(z[:, 0] + 0.3 * rng.normal(size=len(z))) + 1, 0, 3).astype(int)
    return expand_listwise(base, offsets), y, qid


@pytest.fixture(scope="module")
def fitted():
    X, y, qid = _data(0)
    Xv, yv, qv = _data(1)
    params = {"num_leaves": 7, "min_data_in_leaf": 5, "learning_rate": 0.05,
              "min_sum_hessian_in_leaf": 0.0}
    bi = BivariateRanker(params=params, n_diff=3, max_trees=30, early_stopping=10)
    bi.fit(X, y, qid, eval_set=(Xv, yv, qv))
    return bi


def test_bivariate_ranker_learns(fitted):
    from ltrlib.metrics import ndcg

    X, y, qid = _data(2)
    s = fitted.predict(X, qid)
    off = offsets_from_qid(qid)
    learned = ndcg(y, s, off, 5).mean()
    random = ndcg(y, np.random.default_rng(0).normal(size=len(y)), off, 5).mean()
    assert fitted.model_.best_iteration >= 1 and fitted.model_.curve
    assert learned > random + 0.05


def test_predict_is_invariant_to_document_order(fitted):
    X, y, qid = _data(3)
    off = offsets_from_qid(qid)
    rng = np.random.default_rng(7)
    # Permute documents within every query, and the queries themselves.
    order = np.concatenate([off[q] + rng.permutation(off[q + 1] - off[q])
                            for q in rng.permutation(len(off) - 1)])
    s = fitted.predict(X, qid)
    s_perm = fitted.predict(X[order], qid[order])
    np.testing.assert_allclose(s_perm, s[order], rtol=1e-12, atol=1e-12)
    assert np.ptp(s) > 0  # a constant model would pass trivially


def test_predict_in_chunks_equals_one_pass(fitted):
    X, _, qid = _data(4)
    off = offsets_from_qid(qid)
    np.testing.assert_allclose(fitted.model_.predict(X, off, batch_rows=7),
                               fitted.model_.predict(X, off), rtol=1e-12)


def test_score_of_a_dataset_is_predict_of_its_arrays(fitted):
    X, y, qid = _data(9)
    off = offsets_from_qid(qid)
    ds = Dataset(X=X, y=y, query_ids=qid[off[:-1]], offsets=off)
    assert isinstance(fitted, Scorer) and isinstance(fitted.model_, Scorer)
    np.testing.assert_array_equal(fitted.score(ds), fitted.predict(X, qid))
    np.testing.assert_array_equal(fitted.model_.score(ds), fitted.predict(X, qid))
    with pytest.raises(RuntimeError, match="fit"):
        BivariateRanker().score(ds)


def test_univariate_ranker_with_external_ideal_dcg():
    X, y, qid = _data(5)
    Xv, yv, qv = _data(6)
    from ltrlib.metrics import ideal_dcg

    full = ideal_dcg(y, offsets_from_qid(qid), 5) + 1.0  # as if documents were lost
    full_v = ideal_dcg(yv, offsets_from_qid(qv), 5) + 1.0
    uni = UnivariateRanker(params={"num_leaves": 7, "min_data_in_leaf": 5}, max_trees=20,
                           early_stopping=5, loss="softmax")
    uni.fit(X, y, qid, ideal_dcg=full, eval_set=(Xv, yv, qv, full_v))
    assert uni.predict(X, qid).shape == (len(y),)


def test_validation_reuses_training_bins_and_errors():
    X, y, qid = _data(8)
    train = RankData.build(X, y, offsets_from_qid(qid), n_diff=3)
    vali = RankData.build(X[:, :10], y, offsets_from_qid(qid), n_diff=3)
    with pytest.raises(ValueError, match="reference"):
        fit_lb(train, vali, {"num_leaves": 3}, settings=LB_SETTINGS.replace(max_trees=2))
    with pytest.raises(ValueError, match="contiguous"):
        offsets_from_qid(np.array([1, 1, 2, 1]))
    with pytest.raises(RuntimeError, match="fit"):
        BivariateRanker().predict(X, qid)
    with pytest.raises(ValueError, match="objective"):
        fit_lb(train, None, {"objective": "lambdarank"})
    with pytest.raises(ValueError, match="LightGBM"):
        fit_lb(train, None, {}, settings=LB_SETTINGS.replace(backend="xgboost"))


def test_exact_hessian_reaches_training():
    # The option must get from the wrapper to the booster: leaf values are -lr G/H and the
    # exact hessians are the larger, so the first tree's outputs shrink (here by ~15 % on
    # average; a tree of other splits could shift single leaves, so the mean is compared).
    X, y, qid = _data(10)
    params = {"num_leaves": 7, "min_data_in_leaf": 5, "learning_rate": 0.1,
              "min_sum_hessian_in_leaf": 0.0}
    fits = {h: BivariateRanker(params=params, n_diff=3, max_trees=3, early_stopping=3, hessian=h)
            .fit(X, y, qid) for h in ("diagonal", "exact")}
    first = {h: f.model_.booster.predict(_pair_rows(X, qid), num_iteration=1)
             for h, f in fits.items()}
    assert fits["exact"].model_.info["hessian"] == "exact"
    assert np.abs(first["exact"]).mean() < 0.95 * np.abs(first["diagonal"]).mean()
    with pytest.raises(ValueError, match="hessian='exact' needs pairs"):
        UnivariateRanker(hessian="exact", max_trees=2).fit(X, y, qid)
    with pytest.raises(ValueError, match="hessian must be one of"):
        BivariateRanker(hessian="newton", max_trees=2).fit(X, y, qid)


def _pair_rows(X, qid):
    from ltrlib.bilambdamart.pairs import pair_index, pair_rows

    pairs = pair_index(offsets_from_qid(qid))
    return pair_rows(np.asarray(X, np.float32), pairs.left, pairs.right, 3, True)


def test_query_level_columns_once_give_the_same_trees():
    # The listwise means and stds are equal for i and j, so x_j's copies only ever tie with
    # x_i's, and LightGBM gives a tie to the lower column: leaving them out must change no
    # split, hence no prediction, while the pair rows get 2m columns narrower.
    X, y, qid = _data(3)
    Xv, yv, qv = _data(4)
    params = {"num_leaves": 7, "min_data_in_leaf": 5, "learning_rate": 0.1,
              "min_sum_hessian_in_leaf": 0.0}
    fits = {q: BivariateRanker(params=params, n_diff=3, max_trees=15, early_stopping=15,
                               query_level=q).fit(X, y, qid, eval_set=(Xv, yv, qv))
            for q in ((), query_level_columns(3))}
    full, once = fits.values()
    assert once.model_.booster.num_feature() == full.model_.booster.num_feature() - 2 * 3
    assert once.model_.curve == full.model_.curve
    np.testing.assert_array_equal(once.predict(Xv, qv), full.predict(Xv, qv))


def test_query_level_columns_must_be_constant_within_queries():
    X, y, qid = _data(5)
    with pytest.raises(ValueError, match="'f0' .* varies within a query"):
        RankData.build(X, y, offsets_from_qid(qid), query_level=(0,))
    RankData.build(X, y, offsets_from_qid(qid), query_level=query_level_columns(3))
