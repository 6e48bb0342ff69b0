"""LB objective: pair gradients and exact pair hessians against finite differences of the
loss, the hessian algebra of eq. 7, aggregation, and the λRank kernel against LightGBM's
own lambdarank."""

import numpy as np
import pytest

from ltrlib.bilambdamart.objective import (LBObjective, aggregate, coupled_gradients, item_gradients,
                                       lambdarank_loss, mean_ndcg, pair_gradients, softmax_loss)
from ltrlib.bilambdamart.pairs import pair_index
from ltrlib.metrics import ideal_dcg, ndcg


def _queries(rng, sizes=(5, 1, 4, 6)):
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    y = rng.integers(0, 4, offsets[-1])
    return offsets, y


def _loss_of_pairs(loss, offsets, pairs, y, idcg, cutoff):
    def f(pair_scores):
        s = aggregate(pair_scores, offsets, *pairs.as_tuple())
        if loss == "lambdarank":
            return lambdarank_loss(s, y, offsets, idcg, cutoff=cutoff)
        return softmax_loss(s, y, offsets)
    return f


def _pair_problem(seed: int, loss: str):
    """Four small queries, their ordered pairs, random pair scores, the LBObjective
    arguments (a full-list IDCG larger than the lists' own, as at stage 2; λRank without
    norm, whose derivatives `lambdarank_loss` matches) and the loss as a function of the
    pair scores."""
    rng = np.random.default_rng(seed)
    offsets, y = _queries(rng)
    pairs = pair_index(offsets)
    idcg = ideal_dcg(y, offsets, 3) + 0.7
    common = dict(ideal_dcg=idcg, pairs=pairs.as_tuple(), loss=loss, cutoff=3, norm=False)
    s_pairs = rng.normal(size=pairs.n_pairs)
    return offsets, y, s_pairs, common, _loss_of_pairs(loss, offsets, pairs, y, idcg, 3)


def _finite_differences(f, x, eps: float, second: bool = False) -> np.ndarray:
    """Central first (or second) differences of ``f`` along each coordinate of ``x``."""
    out = np.empty_like(x)
    for p in range(x.size):
        e = np.zeros_like(x)
        e[p] = eps
        out[p] = ((f(x + e) - 2 * f(x) + f(x - e)) / eps**2 if second
                  else (f(x + e) - f(x - e)) / (2 * eps))
    return out


@pytest.mark.parametrize("loss", ["lambdarank", "softmax"])
def test_pair_gradients_match_finite_differences(loss):
    offsets, y, s_pairs, common, f = _pair_problem(1, loss)
    grad, _ = LBObjective(y, offsets, **common)(s_pairs)
    fd = _finite_differences(f, s_pairs, 1e-6)
    assert np.abs(grad).max() > 1e-3  # the check is not vacuous
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-8)


def test_item_lambdarank_gradients_match_finite_differences():
    rng = np.random.default_rng(2)
    offsets, y = _queries(rng, (7, 3, 5))
    idcg = ideal_dcg(y, offsets, 5)
    s = rng.normal(size=offsets[-1])
    g, h = item_gradients(s, y, offsets, idcg, cutoff=5, norm=False)
    eps = 1e-6
    for i in range(s.size):
        e = np.zeros_like(s)
        e[i] = eps
        up = lambdarank_loss(s + e, y, offsets, idcg, cutoff=5)
        down = lambdarank_loss(s - e, y, offsets, idcg, cutoff=5)
        assert g[i] == pytest.approx((up - down) / (2 * eps), rel=1e-5, abs=1e-8)
        gu, _ = item_gradients(s + e, y, offsets, idcg, cutoff=5, norm=False)
        gd, _ = item_gradients(s - e, y, offsets, idcg, cutoff=5, norm=False)
        assert h[i] == pytest.approx((gu[i] - gd[i]) / (2 * eps), rel=1e-4, abs=1e-7)


@pytest.mark.parametrize("truncation", [1, 3, 7])
def test_truncation_keeps_pairs_led_from_the_top(truncation):
    """``truncation``: λ-pairs whose better-ranked document is in the current top
    ``truncation``; the gradients stay the derivatives of the loss so truncated, and a
    level at least the list length takes every pair of eq. 8."""
    rng = np.random.default_rng(3)
    offsets, y = _queries(rng, (7, 3, 5))
    idcg = ideal_dcg(y, offsets, 5)
    s = rng.normal(size=offsets[-1])
    g, _ = item_gradients(s, y, offsets, idcg, cutoff=5, norm=False, truncation=truncation)
    eps = 1e-6
    for i in range(s.size):
        e = np.zeros_like(s)
        e[i] = eps
        up = lambdarank_loss(s + e, y, offsets, idcg, cutoff=5, truncation=truncation)
        down = lambdarank_loss(s - e, y, offsets, idcg, cutoff=5, truncation=truncation)
        assert g[i] == pytest.approx((up - down) / (2 * eps), rel=1e-5, abs=1e-8)
    every, _ = item_gradients(s, y, offsets, idcg, cutoff=5, norm=False, truncation=100)
    # Brute force: every pair of different labels, weighted by |ΔDCG| / IDCG.
    brute = np.zeros_like(s)
    for q in range(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        rank = np.empty(b - a, dtype=int)
        rank[np.argsort(-s[a:b], kind="mergesort")] = np.arange(b - a)
        for i in range(a, b):
            for j in range(a, b):
                if y[i] > y[j] and idcg[q] > 0:
                    w = (2.0 ** y[i] - 2.0 ** y[j]) * abs(1 / np.log2(2 + rank[i - a]) - 1 / np.log2(2 + rank[j - a]))
                    lam = -w / idcg[q] / (1 + np.exp(s[i] - s[j]))
                    brute[i] += lam
                    brute[j] -= lam
    np.testing.assert_allclose(every, brute, rtol=1e-10, atol=1e-12)
    if truncation < 7:
        assert not np.allclose(g, every)  # the longest list has pairs led from below the top
    with pytest.raises(ValueError, match="truncation must be a positive integer"):
        item_gradients(s, y, offsets, idcg, truncation=0)


def test_exact_pair_hessian_is_eq7_without_the_sign_typo():
    # Softmax has a known full item hessian H = Y (diag(p) - p p^T): the second derivative
    # along s_ij must be (H_ii - 2 H_ij + H_jj)/(n-1)^2, and the diagonal approximation
    # we train with is (H_ii + H_jj)/(n-1)^2.
    rng = np.random.default_rng(3)
    offsets = np.array([0, 5])
    y = np.array([3, 0, 1, 0, 2])
    pairs = pair_index(offsets)
    s_pairs = rng.normal(size=pairs.n_pairs)
    f = _loss_of_pairs("softmax", offsets, pairs, y, None, 0)
    s = aggregate(s_pairs, offsets, *pairs.as_tuple())
    p = np.exp(s - s.max())
    p /= p.sum()
    H = y.sum() * (np.diag(p) - np.outer(p, p))
    _, diag = LBObjective(y, offsets, pairs=pairs.as_tuple(), loss="softmax")(s_pairs)
    _, exact = LBObjective(y, offsets, pairs=pairs.as_tuple(), loss="softmax",
                           hessian="exact")(s_pairs)
    eps = 1e-4
    for k in range(pairs.n_pairs):
        i, j = pairs.left[k], pairs.right[k]
        e = np.zeros_like(s_pairs)
        e[k] = eps
        second = (f(s_pairs + e) - 2 * f(s_pairs) + f(s_pairs - e)) / eps**2
        assert second == pytest.approx((H[i, i] - 2 * H[i, j] + H[j, j]) / 16, rel=1e-4)
        assert diag[k] == pytest.approx((H[i, i] + H[j, j]) / 16, rel=1e-10)
        assert exact[k] == pytest.approx((H[i, i] - 2 * H[i, j] + H[j, j]) / 16, rel=1e-10)


@pytest.mark.parametrize("loss", ["lambdarank", "softmax"])
def test_exact_pair_hessian_matches_finite_differences(loss):
    # The second difference of the loss along one s_ij at a time; λRank without norm, whose
    # |ΔNDCG| weights lambdarank_loss holds at the current ranking (no swap within ±eps).
    offsets, y, s_pairs, common, f = _pair_problem(11, loss)
    _, exact = LBObjective(y, offsets, hessian="exact", **common)(s_pairs)
    _, diag = LBObjective(y, offsets, **common)(s_pairs)
    fd = _finite_differences(f, s_pairs, 1e-4, second=True)
    np.testing.assert_allclose(exact, fd, rtol=1e-4, atol=1e-7)
    # Not vacuous: on some pairs the diagonal form misses the curvature by far more.
    assert np.max(np.abs(diag - fd) / np.maximum(fd, 1e-12)) > 0.05


def _lambda_pairs(s, y, offsets, pairs, cutoff):
    """Which ordered pairs are λ-pairs: different labels, the better-ranked of the two in the
    top ``cutoff`` of the ranking by ``s`` (stable, as the kernel sorts)."""
    rank = np.empty(offsets[-1], dtype=np.int64)
    for q in range(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        rank[a + np.argsort(-s[a:b], kind="stable")] = np.arange(b - a)
    i, j = pairs.left, pairs.right
    return (y[i] != y[j]) & (np.minimum(rank[i], rank[j]) < cutoff)


def test_exact_exceeds_diagonal_on_lambda_pairs_only():
    # With LightGBM's norm (no loss to differentiate), the structure still holds: each
    # λ-pair's curvature c_ij enters h_i, h_j and the coupling alike, so the exact hessian
    # exceeds the diagonal one on λ-pairs, equals it elsewhere, and a document's couplings
    # sum to its h_i.
    rng = np.random.default_rng(12)
    offsets, y = _queries(rng, (20, 1, 7, 20, 2))
    pairs = pair_index(offsets)
    s_pairs = rng.normal(size=pairs.n_pairs)
    obj = LBObjective(y, offsets, pairs=pairs.as_tuple(), cutoff=5)
    _, diag = obj(s_pairs)
    _, exact = LBObjective(y, offsets, pairs=pairs.as_tuple(), cutoff=5, hessian="exact")(s_pairs)
    s = obj.item_scores(s_pairs)
    lam = _lambda_pairs(s, y.astype(float), offsets, pairs, 5)
    assert lam.sum() > 10 and (~lam).sum() > 10
    assert np.all(exact[lam] > diag[lam])
    np.testing.assert_array_equal(exact[~lam], diag[~lam])
    g, h, c = coupled_gradients(s, y, offsets, pairs.as_tuple(), cutoff=5)
    g0, h0 = item_gradients(s, y, offsets, cutoff=5)
    np.testing.assert_array_equal(g, g0)
    np.testing.assert_array_equal(h, h0)
    np.testing.assert_allclose(np.bincount(pairs.left, c, minlength=y.size), h, rtol=1e-12)
    n = np.diff(offsets)[np.searchsorted(offsets, pairs.left, side="right") - 1]
    np.testing.assert_allclose(exact, diag + 2 * c / (n - 1) ** 2, rtol=1e-12)


def test_diagonal_hessian_is_the_default_and_unchanged():
    rng = np.random.default_rng(13)
    offsets, y = _queries(rng)
    pairs = pair_index(offsets)
    s_pairs = rng.normal(size=pairs.n_pairs)
    for loss in ("lambdarank", "softmax"):
        default = LBObjective(y, offsets, pairs=pairs.as_tuple(), loss=loss)(s_pairs)
        diagonal = LBObjective(y, offsets, pairs=pairs.as_tuple(), loss=loss,
                               hessian="diagonal")(s_pairs)
        s = aggregate(s_pairs, offsets, *pairs.as_tuple())
        by_hand = pair_gradients(*item_gradients(s, y, offsets, loss=loss), offsets,
                                 *pairs.as_tuple())
        for got in (default, diagonal):
            np.testing.assert_array_equal(got[0], by_hand[0])
            np.testing.assert_array_equal(got[1], by_hand[1])


def test_pair_gradient_formula_and_aggregation():
    rng = np.random.default_rng(4)
    offsets, y = _queries(rng, (4, 2))
    pairs = pair_index(offsets)
    g, h = rng.normal(size=6), rng.random(6)
    pg, ph = pair_gradients(g, h, offsets, *pairs.as_tuple())
    for k in range(pairs.n_pairs):
        i, j = pairs.left[k], pairs.right[k]
        n = 4 if i < 4 else 2
        assert pg[k] == pytest.approx((g[i] - g[j]) / (n - 1))
        assert ph[k] == pytest.approx((h[i] + h[j]) / (n - 1) ** 2)
    sp = rng.normal(size=pairs.n_pairs)
    s = aggregate(sp, offsets, *pairs.as_tuple())
    i0 = [k for k in range(pairs.n_pairs) if pairs.left[k] == 0]
    j0 = [k for k in range(pairs.n_pairs) if pairs.right[k] == 0]
    assert s[0] == pytest.approx((sp[i0].sum() - sp[j0].sum()) / 3)
    # s_ij - s_ji is antisymmetric, so each query's scores sum to zero.
    assert s[:4].sum() == pytest.approx(0, abs=1e-12) and s[4:].sum() == pytest.approx(0, abs=1e-12)


def test_single_document_query_gets_zero_gradient_and_score():
    offsets = np.array([0, 1, 3])
    y = np.array([2, 1, 0])
    pairs = pair_index(offsets)
    assert pairs.n_pairs == 2
    obj = LBObjective(y, offsets, pairs=pairs.as_tuple())
    g, h = obj(np.array([0.3, -0.2]))
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))
    assert obj.item_scores(np.array([0.3, -0.2]))[0] == 0.0


def test_mean_ndcg_matches_ltrlib_metrics():
    rng = np.random.default_rng(5)
    offsets, y = _queries(rng, (8, 3, 1, 12, 5))
    y[offsets[1]:offsets[2]] = 0  # a query without relevant documents
    s = rng.normal(size=offsets[-1]).round(1)  # with ties
    for k in (1, 3, 5):
        idcg = ideal_dcg(y, offsets, k) * 1.3
        assert mean_ndcg(s, y, offsets, idcg, k) == pytest.approx(
            ndcg(y, s, offsets, k, ideal_dcg=idcg).mean(), rel=1e-12)


def test_bad_arguments_are_named():
    offsets, y = np.array([0, 3]), np.array([1, 0, 2])
    with pytest.raises(ValueError, match="loss"):
        LBObjective(y, offsets, loss="hinge")
    with pytest.raises(ValueError, match="cutoff"):
        LBObjective(y, offsets, cutoff=0)
    with pytest.raises(ValueError, match="ideal_dcg"):
        LBObjective(y, offsets, ideal_dcg=np.ones(2))
    with pytest.raises(ValueError, match="predictions"):
        LBObjective(y, offsets)(np.zeros(4))
    pairs = pair_index(offsets)
    with pytest.raises(ValueError, match="hessian must be one of .*'full'"):
        LBObjective(y, offsets, pairs=pairs.as_tuple(), hessian="full")
    with pytest.raises(ValueError, match="hessian='exact' needs pairs"):
        LBObjective(y, offsets, hessian="exact")
    with pytest.raises(ValueError, match="coupling must have one value per pair"):
        pair_gradients(np.zeros(3), np.zeros(3), offsets, *pairs.as_tuple(),
                       coupling=np.zeros(2))
    with pytest.raises(ValueError, match="pairs must be"):
        coupled_gradients(np.zeros(3), y, offsets,
                          (np.array([0, 6]), pairs.left[:5], pairs.right[:5]))
    # The λRank gain 2**label - 1 must be finite (the metrics' own check).
    big, ideal = np.array([1100, 0, 2]), np.ones(1)
    for call in (lambda: LBObjective(big, offsets, ideal_dcg=ideal),
                 lambda: item_gradients(np.zeros(3), big, offsets, ideal),
                 lambda: lambdarank_loss(np.zeros(3), big, offsets, ideal),
                 lambda: mean_ndcg(np.zeros(3), big, offsets, ideal, 3)):
        with pytest.raises(ValueError, match="label 1100, too large for NDCG"):
            call()


def test_univariate_lambdarank_reproduces_lightgbm():
    # With the lists' own IDCG and LightGBM's truncation, our kernel is LightGBM's
    # lambdarank; LightGBM evaluates the sigmoid through a lookup table, hence the tolerance.
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(6)
    sizes = rng.integers(5, 15, 60)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    X = rng.normal(size=(offsets[-1], 5)).astype(np.float32)
    y = np.clip((X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=len(X))).round() + 1, 0, 4).astype(int)
    common = {"num_leaves": 7, "learning_rate": 0.1, "min_data_in_leaf": 5, "verbosity": -1,
              "num_threads": 1, "deterministic": True, "force_row_wise": True, "seed": 0}
    native = lgb.train({**common, "objective": "lambdarank", "lambdarank_truncation_level": 5},
                       lgb.Dataset(X, y, group=sizes), num_boost_round=5)
    ours = lgb.train({**common, "objective": LBObjective(y, offsets, cutoff=5)},
                     lgb.Dataset(X, y.astype(float)), num_boost_round=5)
    a, b = native.predict(X), ours.predict(X)
    assert np.corrcoef(a, b)[0, 1] > 0.999
    np.testing.assert_allclose(a, b, atol=0.02 * np.abs(a).max())
