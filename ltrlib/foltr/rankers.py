"""Rankers for PDGD on a flat parameter vector: linear, and a neural net with one hidden layer.

Each ranker is a ``RankerSpec`` plus a float64 vector ``w``; the compiled kernels take
``(kind, hidden, w)`` so the federated code can copy, average and send vectors without
knowing the model.

- Linear: ``w`` has ``n_features`` entries, ``s(x) = w . x``. Initial weights are drawn
  uniformly from +-0.01 (small, so the first lists are close to uniform random samples).
- Neural: ``w = [W1 (n_features x hidden, row-major), b1 (hidden), w2 (hidden)]`` and
  ``s(x) = w2 . sigmoid(W1^T x + b1)``. No output bias: a constant shift of every score
  changes neither the Plackett-Luce distribution nor any PDGD pair gradient. Initial
  weights are uniform in +-1/sqrt(fan-in) (``W1``: fan-in ``n_features``; ``w2``: fan-in
  ``hidden``), small enough to start near-random but large enough that hidden units differ.
  The output layer is ``w[spec.output_slice]``; FedPer keeps it on the client.

A trained ranker leaves the federated loop as a ``FoltrRanker`` (its spec and final
weights), ltrlib's one scoring contract: ``score(dataset)`` (`ltrlib.data.Scorer`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from scipy.special import expit

from ltrlib.data.dataset import Dataset

LINEAR = 0
NEURAL = 1
RANKER_KINDS = {"linear": LINEAR, "neural": NEURAL}


#: The neural ranker's arithmetic: float32 (the default, about twice as fast) or float64
#: (the numbers of ltrlib before issue 60, to the bit).
PRECISIONS = ("float32", "float64")


@dataclass(frozen=True)
class RankerSpec:
    kind: str
    n_features: int
    hidden: int = 64
    precision: str = "float32"  # the neural ranker's weights and arithmetic; see `dtype`

    def __post_init__(self):
        if self.kind not in RANKER_KINDS:
            raise ValueError(f"ranker: kind must be one of {sorted(RANKER_KINDS)}, got {self.kind!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"ranker: precision must be one of {PRECISIONS}, got {self.precision!r}")
        if int(self.n_features) < 1:
            raise ValueError(f"ranker: n_features must be >= 1, got {self.n_features!r}")
        if self.kind == "neural" and int(self.hidden) < 1:
            raise ValueError(f"ranker: hidden must be >= 1, got {self.hidden!r}")

    @property
    def kind_id(self) -> int:
        return RANKER_KINDS[self.kind]

    @property
    def dtype(self) -> type:
        """The dtype of the weight vector the kernels train: the neural ranker's
        ``precision``; the linear ranker's is float64 whatever it says (its scores are
        float64 sums of the float32 features, and float32 would not make them faster)."""
        return np.float32 if self.kind == "neural" and self.precision == "float32" else np.float64

    @property
    def n_params(self) -> int:
        if self.kind == "linear":
            return self.n_features
        return self.n_features * self.hidden + 2 * self.hidden

    @property
    def output_slice(self) -> slice:
        """The parameters of the output layer (FedPer keeps them local)."""
        if self.kind == "linear":
            return slice(0, self.n_features)
        return slice(self.n_params - self.hidden, self.n_params)

    def init(self, rng: np.random.Generator) -> np.ndarray:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"RankerSpec.init: rng must be a numpy.random.Generator, got {type(rng).__name__}")
        # As the reference (ielab/2022-SIGIR-noniid-foltr, ranker/LinearRanker.py and
        # PDGDNeuralRanker.py): a random direction of length 0.01 for the linear ranker;
        # for the neural one every weight and bias of a layer drawn from N(0, sd = 1/fan_in).
        if self.kind == "linear":
            u = rng.standard_normal(self.n_features)
            return 0.01 * u / np.linalg.norm(u)
        F, H = self.n_features, self.hidden
        w1 = rng.normal(0.0, 1.0 / F, F * H + H)  # W1 and b1
        w2 = rng.normal(0.0, 1.0 / H, H)
        return np.concatenate([w1, w2]).astype(self.dtype)

    def score(self, w: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Scores of every row of ``X`` (float64)."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.n_params,):
            raise ValueError(f"ranker {self.kind}: w has shape {w.shape}, expected ({self.n_params},)")
        X = np.ascontiguousarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"ranker {self.kind}: X has shape {X.shape}, expected (n, {self.n_features})")
        out = np.empty(len(X))
        if self.kind == "linear":
            score_all(self.kind_id, self.hidden, w, X, out)
            return out
        # Evaluation scores whole test sets: a float32 BLAS product is ~10x faster than the
        # per-document kernel there. Scores differ from the kernel's by ~1e-6, which can only
        # reorder near-ties. In float32 precision the hidden layer stays float32, its sigmoid
        # numpy's vectorised float32 exp (half the time of float64's expit on Type 1's
        # training queries); float64 precision keeps the float64 sigmoid it always had.
        F, H = self.n_features, self.hidden
        W1 = w[: F * H].reshape(F, H).astype(np.float32)
        b1, w2 = w[F * H: F * H + H], w[F * H + H:]
        Xf = X if X.dtype == np.float32 else X.astype(np.float32)
        if self.dtype is np.float64:
            for a in range(0, len(X), 8192):
                z = (Xf[a: a + 8192] @ W1).astype(np.float64) + b1
                out[a: a + 8192] = expit(z) @ w2
            return out
        b1, w2 = b1.astype(np.float32), w2.astype(np.float32)
        for a in range(0, len(X), 8192):
            z = Xf[a: a + 8192] @ W1
            z += b1
            np.negative(z, out=z)
            np.exp(z, out=z)
            z += np.float32(1.0)
            np.reciprocal(z, out=z)
            out[a: a + 8192] = z @ w2
        return out


def make_ranker(kind: str, n_features: int, hidden: int = 64, precision: str = "float32") -> RankerSpec:
    """The `RankerSpec` of a ``kind`` ranker (linear or neural) over ``n_features`` features."""
    return RankerSpec(kind, int(n_features), int(hidden), precision)


@dataclass(frozen=True, eq=False)
class FoltrRanker:
    """A trained ranker as a `ltrlib.data.Scorer`: its spec and its final weights.

    ``score(data)`` is ``spec.score(weights, data.X)``, the scores the federated loop
    evaluates with. The features must be prepared as the training ones were: per-query
    min-max scaled unless ``prepare_data(normalise=False)``; ``FoltrData.train`` and
    ``test`` are. The weights are a read-only copy, so the model cannot change under a caller.
    """

    spec: RankerSpec
    weights: np.ndarray

    def __post_init__(self):
        w = np.array(self.weights, dtype=np.float64)
        if w.shape != (self.spec.n_params,):
            raise ValueError(f"FoltrRanker ({self.spec.kind}): weights have shape {w.shape}, "
                             f"expected ({self.spec.n_params},)")
        w.setflags(write=False)
        object.__setattr__(self, "weights", w)

    def score(self, data: Dataset) -> np.ndarray:
        if data.n_features != self.spec.n_features:
            raise ValueError(f"FoltrRanker ({self.spec.kind}): dataset {data.name!r} has "
                             f"{data.n_features} features, the ranker was trained on {self.spec.n_features}")
        return self.spec.score(self.weights, data.X)


@numba.njit(cache=True, nogil=True, inline="always")
def _sigmoid(z):
    if z >= 0:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z)
    return e / (1.0 + e)


@numba.njit(cache=True, nogil=True)
def _sigmoid_row32(z, out, bits):
    """``out[j] = 1 / (1 + exp(-z[j]))`` in float32 for a row of hidden units, with exp as
    Cephes' ``expf`` computes it (range reduction by ln 2 in two parts, its degree-7
    polynomial, the power of two written into the exponent bits through ``bits``), in plain
    arithmetic that LLVM vectorises: numba's ``np.exp`` is a scalar libm call a unit, and
    those calls were a third of a float32 forward pass. Relative error within 2e-7 of the
    float64 sigmoid (tests/foltr/test_rounds.py); below z = -87 the result is ~1e-38, not 0."""
    f = np.float32
    for j in range(len(z)):
        x = min(max(-z[j], f(-87.0)), f(88.0))
        k = np.floor(x * f(1.44269504088896341) + f(0.5))
        r = x - k * f(0.693359375) + k * f(2.12194440e-4)
        p = f(1.9875691500e-4)
        p = p * r + f(1.3981999507e-3)
        p = p * r + f(8.3334519073e-3)
        p = p * r + f(4.1665795894e-2)
        p = p * r + f(1.6666665459e-1)
        p = p * r + f(5.0000001201e-1)
        out[j] = p * r * r + r + f(1.0)
        bits[j] = (np.int32(k) + np.int32(127)) << np.int32(23)
    scale = bits.view(np.float32)
    for j in range(len(z)):
        out[j] = f(1.0) / (f(1.0) + out[j] * scale[j])


@numba.njit(cache=True, nogil=True)
def _linear_scores(w, X, rows, a, n, scores):
    """``scores[i] = sum_f w[f] * X[rows[a + i], f]``, each sum taken in feature order.

    Eight documents advance together: one document's sum is a chain of dependent additions
    (the order is kept, so no vector reduction), and eight independent chains keep the
    floating-point units busy where one waits out each addition's latency. Every score is
    bit-for-bit the one-document loop's (tests/foltr/test_rounds.py)."""
    F = X.shape[1]
    i = 0
    while i + 8 <= n:
        r0, r1, r2, r3 = rows[a + i], rows[a + i + 1], rows[a + i + 2], rows[a + i + 3]
        r4, r5, r6, r7 = rows[a + i + 4], rows[a + i + 5], rows[a + i + 6], rows[a + i + 7]
        s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
        for f in range(F):
            wf = w[f]
            s0 += wf * X[r0, f]
            s1 += wf * X[r1, f]
            s2 += wf * X[r2, f]
            s3 += wf * X[r3, f]
            s4 += wf * X[r4, f]
            s5 += wf * X[r5, f]
            s6 += wf * X[r6, f]
            s7 += wf * X[r7, f]
        scores[i], scores[i + 1], scores[i + 2], scores[i + 3] = s0, s1, s2, s3
        scores[i + 4], scores[i + 5], scores[i + 6], scores[i + 7] = s4, s5, s6, s7
        i += 8
    for j in range(i, n):
        r = rows[a + j]
        s = 0.0
        for f in range(F):
            s += w[f] * X[r, f]
        scores[j] = s


@numba.njit(cache=True, nogil=True)
def score_rows(kind, H, w, X, rows, a, b, scores, hid):
    """Scores of documents ``rows[a:b]`` into ``scores[:b-a]``; neural also fills ``hid``."""
    F = X.shape[1]
    n = b - a
    if kind == 0:
        _linear_scores(w, X, rows, a, n, scores)
        return
    # The hidden layer of the whole query is one (n x F) @ (F x H) BLAS product on the
    # gathered rows, in the weights' precision: ~3.5x faster than per-document loops at
    # F = 300, H = 64, and float32's product about twice float64's.
    Xq = np.empty((n, F), dtype=w.dtype)
    for i in range(n):
        r = rows[a + i]
        for f in range(F):
            Xq[i, f] = X[r, f]
    Z = np.dot(Xq, w[: F * H].reshape(F, H))
    o = F * H + H
    if w.itemsize == 4:
        # float32: a document's hidden layer in one vectorised pass (`_sigmoid_row32`).
        z = np.empty(H, dtype=np.float32)
        bits = np.empty(H, dtype=np.int32)
        for i in range(n):
            for j in range(H):
                z[j] = Z[i, j] + w[F * H + j]
            _sigmoid_row32(z, hid[i], bits)
            s = 0.0
            for j in range(H):
                s += w[o + j] * hid[i, j]
            scores[i] = s
        return
    for i in range(n):
        s = 0.0
        for j in range(H):
            h = _sigmoid(Z[i, j] + w[F * H + j])
            hid[i, j] = h
            s += w[o + j] * h
        scores[i] = s


@numba.njit(cache=True, nogil=True)
def add_score_gradient(kind, H, w, X, row, hid_i, weight, grad):
    """``grad += weight * d s(x_row) / d w`` (``hid_i``: the document's hidden activations)."""
    F = X.shape[1]
    if kind == 0:
        for f in range(F):
            grad[f] += weight * X[row, f]
        return
    o = F * H + H
    b1 = F * H
    delta = np.empty(H)
    for j in range(H):
        h = hid_i[j]
        grad[o + j] += weight * h
        delta[j] = weight * w[o + j] * h * (1.0 - h)
        grad[b1 + j] += delta[j]
    for f in range(F):
        x = X[row, f]
        if x != 0.0:
            base = f * H
            for j in range(H):
                grad[base + j] += x * delta[j]


@numba.njit(cache=True, nogil=True)
def add_neural_gradients(H, w, X, rows, a, docs, coef, m, hid, grad):
    """``grad += sum_p coef[p] * d s(x_{docs[p]}) / d w`` for p < m (local indices ``docs``),
    the first-layer part as one (F x m) @ (m x H) BLAS product."""
    F = X.shape[1]
    o = F * H + H
    b1 = F * H
    Xs = np.empty((F, m), dtype=w.dtype)
    delta = np.empty((m, H), dtype=w.dtype)
    for p in range(m):
        d = docs[p]
        r = rows[a + d]
        for f in range(F):
            Xs[f, p] = X[r, f]
        for j in range(H):
            h = hid[d, j]
            grad[o + j] += coef[p] * h
            delta[p, j] = coef[p] * w[o + j] * h * (1.0 - h)
            grad[b1 + j] += delta[p, j]
    G = np.dot(Xs, delta)
    for f in range(F):
        base = f * H
        for j in range(H):
            grad[base + j] += G[f, j]


@numba.njit(cache=True, nogil=True)
def score_all(kind, H, w, X, out):
    n = X.shape[0]
    rows = np.arange(n)
    chunk = 256
    hid = np.empty((chunk, H if kind == 1 else 1))
    buf = np.empty(chunk)
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        score_rows(kind, H, w, X, rows, a, b, buf, hid)
        for i in range(b - a):
            out[a + i] = buf[i]
