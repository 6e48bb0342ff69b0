"""The Lambda Bivariate (LB) objectives as LightGBM custom objectives, compiled with numba.

Notation of §4 of the Bi-LambdaMART paper. The trees score every ordered pair of documents
of a query, ``s_ij = φ(x_ij)`` for ``i ≠ j``; a document's score is

    s_i = 1/(n-1) · Σ_j (s_ij - s_ji)                                         (eq. 5)

and, with ``g_i = ∂ℓ/∂s_i`` and ``h_i = ∂²ℓ/∂s_i²`` from any per-item loss ℓ,

    ∂ℓ/∂s_ij   = (g_i - g_j) / (n-1)                                          (eq. 6)
    ∂²ℓ/∂s_ij² = (h_ii - 2 h_ij + h_jj) / (n-1)²   (exact; eq. 7 has a sign typo)
              ≈ (h_i + h_j) / (n-1)²               (diagonal, as LambdaMART does)

The chain rule follows from ``∂s_i/∂s_ij = 1/(n-1)`` and ``∂s_j/∂s_ij = -1/(n-1)``.

``hessian=`` chooses between the two (`HESSIANS`). ``"exact"`` is eq. 7 with its sign typo
fixed. ``"diagonal"`` (the default, as LambdaMART treats a document's hessian) drops the
cross term: an approximation of eq. 7, not eq. 7; the paper does not say which of the two
its LightGBM code computed. ``"exact"`` keeps the cross term through the *coupling*
``c_ij = -h_ij``, so ``∂²ℓ/∂s_ij² = (h_i + h_j + 2 c_ij) / (n-1)²``. For λRank each
λ-pair {i, j} adds ``σ² |ΔNDCG| ρ(1-ρ)`` to ``h_i``, ``h_j`` and ``c_ij`` alike (with
``norm``, under the same per-pair and per-query factors), and two documents that form no
λ-pair have ``c_ij = 0``; for softmax ``c_ij = Y p_i p_j``. Both couplings are ≥ 0, so the diagonal form underestimates the
curvature of coupled pairs and the exact one takes smaller Newton steps on them
(`bench/bench_exact_hessian.py` prints the ratio and what it does to Bi-λMART). The
exact form costs an n×n buffer per query, O(pairs) like the rest. It only concerns pair
rows: a univariate model's rows are the documents, whose hessian ``h_i`` is exact already.

Per-item losses (``loss=``):

* ``"lambdarank"``: LightGBM's λRank, line for line (``rank_objective.hpp``): pairs with
  different labels where the better-ranked one sits in the top ``truncation`` of the
  current ranking (LightGBM's ``lambdarank_truncation_level``, default 30, so every pair
  of a 20-document list; eq. 8 of the paper sums over every pair; our default is the
  cut-off), weighted by |ΔNDCG| = |gain_i - gain_j| · |1/log2(2+r_i) - 1/log2(2+r_j)| / IDCG,
  with LightGBM's optional ``norm`` (divide by ``0.01 + |s_i - s_j|``, then rescale the
  query by ``log2(1+Σλ)/Σλ``). The difference from LightGBM is the normaliser: IDCG@cutoff
  is supplied per query, so a second-stage model can use the ideal DCG of the query's
  *full* first-stage list (λMART*, Bi-λMART). With ``norm=False`` and the weights held
  at the current ranking, ``g`` and ``h`` are the exact derivatives of
  ``ℓ = Σ_{y_i > y_j} |ΔNDCG_ij| · log(1 + exp(-σ (s_i - s_j)))`` (`lambdarank_loss`).
* ``"softmax"``: ``ℓ = -Σ_i y_i log softmax(s)_i``; ``g_i = Y p_i - y_i``,
  ``h_i = Y p_i (1 - p_i)`` with ``Y = Σ y_i`` (exact gradient; ``h_i`` is the diagonal
  of the item hessian, whose cross terms are ``-Y p_i p_j``).

The kernels are serial on purpose: they run once per boosting iteration and cost O(pairs),
far less than LightGBM's histograms, while a numba parallel launch per call costs tens
of milliseconds on a loaded 2-core machine (measured: 23 ms vs 0.4 ms for 150 queries).

Layouts: documents are flat with query ``offsets`` (query ``q`` owns rows
``offsets[q]:offsets[q+1]``); ordered pairs are flat with ``pair_offsets`` and the
document rows ``left`` (i) and ``right`` (j) of each pair (see `ltrlib.bilambdamart.pairs`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ltrlib.metrics.kernels import discount, gain, query_dcg
from ltrlib.metrics.ranking import check_gain_labels

__all__ = [
    "HESSIANS",
    "check_truncation",
    "LOSSES",
    "LBObjective",
    "aggregate",
    "coupled_gradients",
    "item_gradients",
    "lambdarank_loss",
    "mean_ndcg",
    "pair_gradients",
    "softmax_loss",
]

LOSSES = ("lambdarank", "softmax")
_LAMBDARANK, _SOFTMAX = 0, 1
HESSIANS = ("diagonal", "exact")


# ====================================================================== per-item kernels
# Gain, discount and DCG are the metrics' shared kernels (ltrlib.metrics.kernels).


@njit(cache=True)
def _lambda_pair(y, i, j, rank_i, rank_j):
    # The λ-pair of documents i and j at ranks rank_i and rank_j: (high, low, |ΔDCG|), the
    # better-labelled document first and the DCG change of swapping the two, not yet divided
    # by the ideal DCG (each caller divides as it always has, so results stay bit-identical).
    # Equal labels form no λ-pair: (-1, -1, 0.0). One home for the gradients and the loss,
    # so the loss whose finite differences check the gradients weighs pairs the same way.
    if y[i] == y[j]:
        return -1, -1, 0.0
    if y[i] > y[j]:
        high, low, high_rank, low_rank = i, j, rank_i, rank_j
    else:
        high, low, high_rank, low_rank = j, i, rank_j, rank_i
    return high, low, (gain(y[high]) - gain(y[low])) * abs(discount(high_rank) - discount(low_rank))


@njit(cache=True)
def _lambdarank_query(s, y, a, n, inv_idcg, truncation, sigma, norm, grad, hess, coupling):
    # ``coupling``: an n x n buffer (local rows) receiving c_ij = -d2l/ds_i ds_j, or a 0 x 0
    # array when only the diagonal is wanted; grad and hess are computed the same either way.
    order = np.argsort(-s[a:a + n], kind="mergesort")
    best = s[a + order[0]]
    worst = s[a + order[n - 1]]
    sum_lambdas = 0.0
    top = min(n - 1, truncation)
    for ii in range(top):
        for jj in range(ii + 1, n):
            high, low, delta_dcg = _lambda_pair(y, a + order[ii], a + order[jj], ii, jj)
            if high < 0:
                continue
            delta_score = s[high] - s[low]
            delta_ndcg = delta_dcg * inv_idcg
            if norm and best != worst:
                delta_ndcg /= 0.01 + abs(delta_score)
            p = 1.0 / (1.0 + np.exp(sigma * delta_score))
            lam = -sigma * delta_ndcg * p
            h = sigma * sigma * delta_ndcg * p * (1.0 - p)
            grad[high] += lam
            grad[low] -= lam
            hess[high] += h
            hess[low] += h
            if coupling.shape[0] > 0:
                coupling[high - a, low - a] += h
                coupling[low - a, high - a] += h
            sum_lambdas -= 2.0 * lam
    if norm and sum_lambdas > 0.0:
        factor = np.log2(1.0 + sum_lambdas) / sum_lambdas
        for r in range(a, a + n):
            grad[r] *= factor
            hess[r] *= factor
        # The query's rescaling multiplies its whole item hessian, cross terms included.
        for u in range(coupling.shape[0]):
            for v in range(coupling.shape[1]):
                coupling[u, v] *= factor


@njit(cache=True)
def _softmax_query(s, y, a, n, grad, hess, coupling):
    # ``coupling`` as in _lambdarank_query: here c_ij = Y p_i p_j for every i != j.
    total = 0.0
    for r in range(a, a + n):
        total += y[r]
    if total <= 0.0:
        return
    m = s[a]
    for r in range(a, a + n):
        m = max(m, s[r])
    z = 0.0
    for r in range(a, a + n):
        z += np.exp(s[r] - m)
    for r in range(a, a + n):
        p = np.exp(s[r] - m) / z
        grad[r] = total * p - y[r]
        hess[r] = total * p * (1.0 - p)
    if coupling.shape[0] > 0:
        p = np.empty(n)
        for u in range(n):
            p[u] = np.exp(s[a + u] - m) / z
        for u in range(n):
            for v in range(n):
                if u != v:
                    coupling[u, v] = total * p[u] * p[v]


@njit(cache=True)
def _item_query(s, y, a, n, idcg, loss, truncation, sigma, norm, grad, hess, coupling):
    if loss == _LAMBDARANK:
        if idcg > 0.0:
            _lambdarank_query(s, y, a, n, 1.0 / idcg, truncation, sigma, norm, grad, hess, coupling)
    else:
        _softmax_query(s, y, a, n, grad, hess, coupling)


@njit(cache=True)
def _item_gradients(s, y, offsets, idcg, loss, truncation, sigma, norm):
    n_docs = s.size
    grad = np.zeros(n_docs)
    hess = np.zeros(n_docs)
    no_coupling = np.zeros((0, 0))
    for q in range(offsets.size - 1):
        a = offsets[q]
        n = offsets[q + 1] - a
        if n < 2:
            continue
        _item_query(s, y, a, n, idcg[q], loss, truncation, sigma, norm, grad, hess, no_coupling)
    return grad, hess


@njit(cache=True)
def _coupled_gradients(s, y, offsets, idcg, loss, truncation, sigma, norm, pair_offsets, left, right):
    # _item_gradients plus each ordered pair's coupling c_ij, read off a per-query n x n
    # buffer: lists are at most a few hundred documents, so n^2 floats per query are cheap
    # and the buffer never outlives its query.
    n_docs = s.size
    grad = np.zeros(n_docs)
    hess = np.zeros(n_docs)
    coupling = np.zeros(pair_offsets[-1])
    for q in range(offsets.size - 1):
        a = offsets[q]
        n = offsets[q + 1] - a
        if n < 2:
            continue
        local = np.zeros((n, n))
        _item_query(s, y, a, n, idcg[q], loss, truncation, sigma, norm, grad, hess, local)
        for p in range(pair_offsets[q], pair_offsets[q + 1]):
            coupling[p] = local[left[p] - a, right[p] - a]
    return grad, hess, coupling


@njit(cache=True)
def _lambdarank_loss(s, y, offsets, idcg, truncation, sigma):
    per_query = np.zeros(offsets.size - 1)
    for q in range(offsets.size - 1):
        a = offsets[q]
        n = offsets[q + 1] - a
        if n < 2 or idcg[q] <= 0.0:
            continue
        order = np.argsort(-s[a:a + n], kind="mergesort")
        total = 0.0
        for ii in range(min(n - 1, truncation)):
            for jj in range(ii + 1, n):
                high, low, delta_dcg = _lambda_pair(y, a + order[ii], a + order[jj], ii, jj)
                if high < 0:
                    continue
                w = delta_dcg / idcg[q]
                total += w * np.log1p(np.exp(-sigma * (s[high] - s[low])))
        per_query[q] = total
    return per_query.sum()


@njit(cache=True)
def _mean_ndcg(s, y, offsets, idcg, k):
    # The early-stopping metric, evaluated after every tree. Same conventions and DCG
    # kernel as ltrlib.metrics.ndcg (stable descending sort, a query with IDCG 0 scores 1),
    # so the same numbers to the bit, but serial: see the module docstring on parallel
    # launches.
    total = 0.0
    for q in range(offsets.size - 1):
        a = offsets[q]
        n = offsets[q + 1] - a
        if idcg[q] <= 0.0:
            total += 1.0
            continue
        order = np.argsort(-s[a:a + n], kind="mergesort")
        total += query_dcg(y[a:a + n], order, min(k, n)) / idcg[q]
    return total / (offsets.size - 1)


# ====================================================================== pair kernels


@njit(cache=True)
def _aggregate(pair_scores, offsets, pair_offsets, left, right):
    n_docs = offsets[-1]
    out = np.zeros(n_docs)
    for q in range(offsets.size - 1):
        a = offsets[q]
        n = offsets[q + 1] - a
        if n < 2:
            continue
        for p in range(pair_offsets[q], pair_offsets[q + 1]):
            out[left[p]] += pair_scores[p]
            out[right[p]] -= pair_scores[p]
        for r in range(a, a + n):
            out[r] /= n - 1
    return out


@njit(cache=True)
def _pair_gradients(grad, hess, offsets, pair_offsets, left, right, coupling):
    # An empty ``coupling`` gives the diagonal form, computed exactly as before the exact
    # option existed (so default models train to the same bits).
    exact = coupling.size > 0
    n_pairs = pair_offsets[-1]
    pg = np.empty(n_pairs)
    ph = np.empty(n_pairs)
    for q in range(offsets.size - 1):
        n = offsets[q + 1] - offsets[q]
        if n < 2:
            continue
        inv = 1.0 / (n - 1)
        inv2 = inv * inv
        for p in range(pair_offsets[q], pair_offsets[q + 1]):
            i = left[p]
            j = right[p]
            pg[p] = (grad[i] - grad[j]) * inv
            if exact:
                ph[p] = (hess[i] + hess[j] + 2.0 * coupling[p]) * inv2
            else:
                ph[p] = (hess[i] + hess[j]) * inv2
    return pg, ph


# ====================================================================== Python front


def _loss_code(loss: str) -> int:
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    return _LAMBDARANK if loss == "lambdarank" else _SOFTMAX


def _f64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def _i64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def _check_hessian(hessian: str) -> None:
    if hessian not in HESSIANS:
        raise ValueError(f"hessian must be one of {HESSIANS}, got {hessian!r}")


def check_truncation(truncation) -> int:
    """A λRank truncation level: pairs whose better-ranked document is in the current top
    ``truncation`` (LightGBM's ``lambdarank_truncation_level``); a level at least the list
    length takes every pair."""
    if isinstance(truncation, bool) or not isinstance(truncation, (int, np.integer)) or truncation < 1:
        raise ValueError(f"truncation must be a positive integer, got {truncation!r}")
    return int(truncation)


def _item_args(scores, y, offsets, ideal_dcg, loss, cutoff, sigma, norm, truncation=None) -> tuple:
    # The checked, typed arguments shared by the per-item kernels; the λRank truncation
    # level is the cut-off unless given.
    from ltrlib.metrics import ideal_dcg as _ideal

    offsets = _i64(offsets)
    if loss == "lambdarank":
        check_gain_labels(y, offsets)
    if ideal_dcg is None:
        ideal_dcg = _ideal(y, offsets, cutoff)
    ideal_dcg = _f64(ideal_dcg)
    if ideal_dcg.shape != (offsets.size - 1,):
        raise ValueError(f"ideal_dcg must have one value per query ({offsets.size - 1}), "
                         f"got shape {ideal_dcg.shape}")
    level = check_truncation(int(cutoff) if truncation is None else truncation)
    return (_f64(scores), _f64(y), offsets, ideal_dcg, _loss_code(loss), level, float(sigma), bool(norm))


def item_gradients(scores, y, offsets, ideal_dcg=None, *, loss: str = "lambdarank",
                   cutoff: int = 5, sigma: float = 1.0, norm: bool = True, truncation: int | None = None):
    """``(g, h)`` of the per-item loss at the document scores (float64 arrays).

    ``ideal_dcg``: per-query IDCG@cutoff normaliser (``"lambdarank"`` only), e.g. of the
    full first-stage list; ``None`` uses the IDCG@cutoff of the given lists (LightGBM).
    ``truncation``: λRank pairs need their better-ranked document in the current top
    ``truncation`` (default: the cut-off; the list length or more takes every pair).
    """
    return _item_gradients(*_item_args(scores, y, offsets, ideal_dcg, loss, cutoff, sigma, norm, truncation))


def coupled_gradients(scores, y, offsets, pairs, ideal_dcg=None, *, loss: str = "lambdarank",
                      cutoff: int = 5, sigma: float = 1.0, norm: bool = True, truncation: int | None = None):
    """``(g, h, c)``: `item_gradients`' ``g`` and ``h`` and, for every ordered pair ``p``
    of ``pairs = (pair_offsets, left, right)``, the coupling ``c[p] = -∂²ℓ/∂s_i∂s_j`` of
    its documents: the cross term the exact pair hessian needs (`pair_gradients`).

    One pass computes all three, since the coupling comes from the same λ-pairs (or
    softmax probabilities) as ``g`` and ``h``.
    """
    po, left, right = (_i64(a) for a in pairs)
    args = _item_args(scores, y, offsets, ideal_dcg, loss, cutoff, sigma, norm, truncation)
    if po.shape != args[2].shape or po[-1] != left.size or left.shape != right.shape:
        raise ValueError(f"pairs must be (pair_offsets, left, right) over the {args[2].size - 1} "
                         f"queries; got pair_offsets of shape {po.shape}, {left.size} left "
                         f"and {right.size} right rows")
    return _coupled_gradients(*args, po, left, right)


def lambdarank_loss(scores, y, offsets, ideal_dcg, *, cutoff: int = 5, sigma: float = 1.0,
                    truncation: int | None = None) -> float:
    """The λRank loss whose derivatives `item_gradients` returns with ``norm=False``.

    The |ΔNDCG| weights are those of the ranking at ``scores`` (constant while no two
    documents swap places), so finite differences of this function check the gradients.
    """
    check_gain_labels(y, offsets)
    level = check_truncation(int(cutoff) if truncation is None else truncation)
    return float(_lambdarank_loss(_f64(scores), _f64(y), _i64(offsets), _f64(ideal_dcg), level, float(sigma)))


def softmax_loss(scores, y, offsets) -> float:
    """``Σ_q -Σ_i y_i log softmax(s_q)_i``."""
    s, y, offsets = _f64(scores), _f64(y), _i64(offsets)
    total = 0.0
    for q in range(offsets.size - 1):  # test helper, not a hot path
        a, b = offsets[q], offsets[q + 1]
        z = s[a:b] - s[a:b].max()
        total -= float(np.sum(y[a:b] * (z - np.log(np.exp(z).sum()))))
    return total


def mean_ndcg(scores, y, offsets, ideal_dcg, k: int) -> float:
    """Mean NDCG@k with the given per-query IDCG@k (a query with IDCG 0 counts 1.0)."""
    check_gain_labels(y, offsets)
    return float(_mean_ndcg(_f64(scores), _f64(y), _i64(offsets), _f64(ideal_dcg), int(k)))


def aggregate(pair_scores, offsets, pair_offsets, left, right) -> np.ndarray:
    """Per-document scores ``s_i = 1/(n-1) Σ_j (s_ij - s_ji)`` from ordered-pair scores.

    A query with one document gets 0.
    """
    pair_offsets = _i64(pair_offsets)
    pair_scores = _f64(pair_scores)
    if pair_scores.shape != (pair_offsets[-1],):
        raise ValueError(f"pair_scores must have one value per pair ({pair_offsets[-1]}), "
                         f"got shape {pair_scores.shape}")
    return _aggregate(pair_scores, _i64(offsets), pair_offsets, _i64(left), _i64(right))


def pair_gradients(grad, hess, offsets, pair_offsets, left, right, coupling=None):
    """Pair derivatives ``(g_i - g_j)/(n-1)`` and hessians: diagonal ``(h_i + h_j)/(n-1)²``,
    or exact ``(h_i + h_j + 2 c_ij)/(n-1)²`` given each pair's ``coupling`` (from
    `coupled_gradients`)."""
    pair_offsets = _i64(pair_offsets)
    if coupling is None:
        coupling = np.zeros(0)
    else:
        coupling = _f64(coupling)
        if coupling.shape != (pair_offsets[-1],):
            raise ValueError(f"coupling must have one value per pair ({pair_offsets[-1]}), "
                             f"got shape {coupling.shape}")
    return _pair_gradients(_f64(grad), _f64(hess), _i64(offsets), pair_offsets,
                           _i64(left), _i64(right), coupling)


class LBObjective:
    """A LightGBM custom objective (``params["objective"] = LBObjective(...)``).

    Bivariate (``pairs`` given as ``(pair_offsets, left, right)``): the booster's rows are
    the ordered pairs and its predictions the ``s_ij``. Univariate (``pairs=None``): the
    rows are the documents themselves (λMART*, GBT_Softmax), so the same λRank code serves
    the univariate baselines and the bivariate model alike.

    ``hessian``: ``"diagonal"`` (an approximation of eq. 7) or ``"exact"`` (eq. 7, with
    the cross term; bivariate only, see the module docstring). ``truncation``: the λRank
    truncation level (`check_truncation`), the cut-off unless given.
    """

    def __init__(self, y, offsets, *, ideal_dcg=None, pairs=None, loss: str = "lambdarank",
                 cutoff: int = 5, sigma: float = 1.0, norm: bool = True,
                 hessian: str = "diagonal", truncation: int | None = None):
        from ltrlib.metrics import ideal_dcg as _ideal

        _loss_code(loss)
        _check_hessian(hessian)
        if hessian == "exact" and pairs is None:
            raise ValueError("hessian='exact' needs pairs: a univariate objective's rows are "
                             "the documents, whose hessian h_i is exact already")
        self.hessian = hessian
        if isinstance(cutoff, bool) or int(cutoff) != cutoff or cutoff < 1:
            raise ValueError(f"cutoff must be a positive integer, got {cutoff!r}")
        self.y = _f64(y)
        self.offsets = _i64(offsets)
        if loss == "lambdarank":
            check_gain_labels(self.y, self.offsets)
        self.loss, self.cutoff, self.sigma, self.norm = loss, int(cutoff), float(sigma), bool(norm)
        self.truncation = check_truncation(self.cutoff if truncation is None else truncation)
        self.ideal_dcg = _f64(_ideal(y, self.offsets, cutoff) if ideal_dcg is None else ideal_dcg)
        if self.ideal_dcg.shape != (self.offsets.size - 1,):
            raise ValueError(f"ideal_dcg must have one value per query "
                             f"({self.offsets.size - 1}), got shape {self.ideal_dcg.shape}")
        if pairs is None:
            self.pairs = None
        else:
            po, left, right = pairs
            self.pairs = (_i64(po), _i64(left), _i64(right))

    def __deepcopy__(self, memo):
        # lightgbm.train deep-copies its params, objective included; the arrays are never
        # written, so sharing them saves a copy of the pair index (35 MB at WEB10K size).
        return self

    @property
    def n_rows(self) -> int:
        return int(self.pairs[0][-1]) if self.pairs is not None else int(self.offsets[-1])

    def item_scores(self, preds) -> np.ndarray:
        preds = _f64(preds)
        if self.pairs is None:
            return preds
        return _aggregate(preds, self.offsets, *self.pairs)

    def gradients(self, preds):
        preds = _f64(preds)
        if preds.shape != (self.n_rows,):
            raise ValueError(f"objective: {preds.shape[0]} predictions for {self.n_rows} rows")
        s = self.item_scores(preds)
        args = (s, self.y, self.offsets, self.ideal_dcg, _loss_code(self.loss), self.truncation,
                self.sigma, self.norm)
        if self.hessian == "exact":
            g, h, coupling = _coupled_gradients(*args, *self.pairs)
            return _pair_gradients(g, h, self.offsets, *self.pairs, coupling)
        g, h = _item_gradients(*args)
        if self.pairs is None:
            return g, h
        return _pair_gradients(g, h, self.offsets, *self.pairs, np.zeros(0))

    def __call__(self, preds, train_data=None):
        return self.gradients(preds)
