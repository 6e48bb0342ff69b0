"""PDGD kernels: Plackett-Luce sampling, rho, pair weights, gradients, normalisation, learning."""

import itertools

import numba
import numpy as np
import pytest

from ltrlib.foltr import pdgd as D
from ltrlib.foltr.rankers import add_score_gradient, make_ranker, score_rows


@numba.njit(cache=True)
def _sample_counts(scores, n_samples, seed_rng):
    n = len(scores)
    counts = np.zeros((n, n, n))
    ranking = np.empty(n, dtype=np.int64)
    pm = np.empty(n)
    ps = np.empty(n)
    placed = np.empty(n, dtype=np.bool_)
    expo = np.empty(n)
    for _ in range(n_samples):
        D.pl_sample(scores, n, n, seed_rng, ranking, pm, ps, placed, expo)
        counts[ranking[0], ranking[1], ranking[2]] += 1
    return counts


def pl_prob(scores, ranking, n_total=None):
    """Brute-force Plackett-Luce probability of a (prefix) ranking."""
    e = np.exp(np.asarray(scores, dtype=float))
    remaining = set(range(len(scores)))
    p = 1.0
    for d in ranking:
        p *= e[d] / sum(e[i] for i in remaining)
        remaining.remove(d)
    return p


def test_pl_sampling_frequencies_match_closed_form_on_3_docs():
    scores = np.array([1.0, 0.2, -0.7])
    n = 200_000
    counts = _sample_counts(scores, n, np.random.default_rng(0))
    for perm in itertools.permutations(range(3)):
        assert counts[perm] / n == pytest.approx(pl_prob(scores, perm), abs=0.004), perm
    assert counts.sum() == n


def test_pl_sampling_survives_huge_score_gaps():
    scores = np.array([800.0, 0.0, -800.0, 1.0])
    ranking = np.empty(4, dtype=np.int64)
    pm, ps, placed = np.empty(4), np.empty(4), np.empty(4, dtype=np.bool_)
    D.pl_sample(scores, 4, 4, np.random.default_rng(1), ranking, pm, ps, placed, np.empty(4))
    assert ranking[0] == 0 and ranking[1] == 3 and sorted(ranking.tolist()) == [0, 1, 2, 3]
    assert np.all(np.isfinite(ps)) and np.all(ps >= 1.0)


@pytest.mark.parametrize("seed", range(5))
def test_rho_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, k = 7, 5
    scores = rng.normal(0, 1.5, n)
    ranking = np.empty(n, dtype=np.int64)
    pm, ps, placed = np.empty(n), np.empty(n), np.empty(n, dtype=np.bool_)
    D.pl_sample(scores, n, k, rng, ranking, pm, ps, placed, np.empty(n))
    shown = ranking[:k].tolist()
    for i, j in itertools.combinations(range(k), 2):
        swapped = list(shown)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        p, p_star = pl_prob(scores, shown), pl_prob(scores, swapped)
        assert D.pair_rho(scores, ranking, pm, ps, i, j) == pytest.approx(p_star / (p + p_star), rel=1e-9)
        assert D.pair_rho(scores, ranking, pm, ps, j, i) == pytest.approx(p_star / (p + p_star), rel=1e-9)


def test_pair_weight_formula_and_stability():
    for sk, sl in [(0.3, -1.2), (2.0, 2.0), (-4.0, 1.0)]:
        ek, el = np.exp(sk), np.exp(sl)
        assert D.pair_weight(sk, sl) == pytest.approx(ek * el / (ek + el) ** 2, rel=1e-12)
    assert D.pair_weight(1000.0, -1000.0) == 0.0 and D.pair_weight(5.0, 5.0) == 0.25


def test_neural_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    F, H = 6, 5
    spec = make_ranker("neural", F, H, "float64")  # the float64 arithmetic, to finite-difference precision
    w = spec.init(rng) * 3
    X = rng.random((3, F)).astype(np.float32)
    rows = np.arange(3)
    scores, hid = np.empty(3), np.empty((3, H))
    score_rows(1, H, w, X, rows, 0, 3, scores, hid)
    grad = np.zeros(spec.n_params)
    add_score_gradient(1, H, w, X, 1, hid[1], 1.0, grad)
    def kernel_score(v):
        out = np.empty(3)
        score_rows(1, H, v, X, rows, 0, 3, out, np.empty((3, H)))
        return out[1]

    num = np.empty_like(grad)
    for p in range(len(w)):
        d = np.zeros_like(w)
        d[p] = 1e-6
        num[p] = (kernel_score(w + d) - kernel_score(w - d)) / 2e-6
    np.testing.assert_allclose(grad, num, atol=1e-6)
    # The BLAS evaluation path agrees with the training kernel up to float32 rounding.
    np.testing.assert_allclose(scores, spec.score(w, X), atol=1e-5)
    lin = make_ranker("linear", F)
    wl = lin.init(rng)
    np.testing.assert_allclose(lin.score(wl, X), X.astype(float) @ wl, rtol=1e-6)


def test_query_normalisation_and_single_document_queries():
    X = np.array([[1.0, 5.0], [3.0, 5.0], [2.0, 5.0], [7.0, -2.0]], dtype=np.float32)
    out = D.normalise_queries(X, np.array([0, 3, 4]))
    np.testing.assert_allclose(out[:3, 0], [0.0, 1.0, 0.5])
    assert np.all(out[:3, 1] == 0.0)            # constant within the query
    assert np.all(out[3] == 0.0)                # single-document query


def test_ideal_dcg_and_no_relevant_query():
    labels = np.array([0, 2, 1, 0, 0])
    ideal = D.ideal_dcgs(labels, np.array([0, 3, 5]), 10)
    assert ideal[0] == pytest.approx(3 + 1 / np.log2(3)) and ideal[1] == 0.0


def test_batched_neural_gradient_equals_sum_of_per_document_gradients():
    from ltrlib.foltr.rankers import add_neural_gradients

    rng = np.random.default_rng(2)
    F, H = 7, 4
    spec = make_ranker("neural", F, H, "float64")  # the float64 arithmetic, to finite-difference precision
    w = spec.init(rng)
    X = rng.random((6, F)).astype(np.float32)
    rows = np.arange(6)[::-1].copy()
    scores, hid = np.empty(6), np.empty((6, H))
    score_rows(1, H, w, X, rows, 0, 6, scores, hid)
    docs = np.array([4, 1, 2], dtype=np.int64)
    coefs = np.array([0.7, -0.2, -0.5])
    batched = np.zeros(spec.n_params)
    add_neural_gradients(H, w, X, rows, 0, docs, coefs, 3, hid, batched)
    single = np.zeros(spec.n_params)
    for d, c in zip(docs, coefs):
        add_score_gradient(1, H, w, X, rows[d], hid[d], c, single)
    np.testing.assert_allclose(batched, single, atol=1e-12)


def test_initialisation_follows_the_reference():
    """Linear: a random direction of length 0.01; neural: N(0, sd = 1/fan_in) per layer."""
    rng = np.random.default_rng(0)
    lin = make_ranker("linear", 300).init(rng)
    assert np.linalg.norm(lin) == pytest.approx(0.01)
    assert (lin > 0).any() and (lin < 0).any()
    F, H = 300, 64
    w = make_ranker("neural", F, H, "float64").init(rng)
    first, out = w[:F * H + H], w[F * H + H:]
    assert first.std() == pytest.approx(1 / F, rel=0.02) and abs(first.mean()) < 1e-4
    assert out.std() == pytest.approx(1 / H, rel=0.25)
