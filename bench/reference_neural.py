"""The per-step training loop of `ltrlib.neural.NeuralRanker` before issue 61, kept as the
reference: `bench_neural.py` times it against the chunked loop, and tests/neural/test_ranker.py
checks that both give the same curve and scores.

`fit_per_step(ranker, ...)` is ``NeuralRanker.fit`` as of commit 514fde4, unchanged but
for three things: it is a function of the ranker, the loss is the package's (one scalar a
batch, as `ltrlib.neural.losses` now returns it: the per-list losses' ``.mean()`` of before
is inside each loss), and it records ``first_step_seconds``, the first step's wall time,
which is its compile (`bench_neural.py` leaves it out of a step's time). What makes it slow
(issue 61): one ``nnx.jit`` dispatch a step, which walks the object graph in Python; each
batch cut from host numpy arrays and copied to the device; ``train_step`` a new closure in
every fit and the learning rate baked into the optimiser, so every fit compiles; and the
validation on the host (a sync, a forward per 256 lists, numpy NDCG, a copy of the whole
state when it improves).
"""

from __future__ import annotations

import math
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from ltrlib.metrics import ndcg
from ltrlib.neural.losses import list_loss
from ltrlib.neural.models import build_model
from ltrlib.neural.ranker import CONVERGED, NeuralRanker, use_compilation_cache


def fit_per_step(self: NeuralRanker, train, vali, *, train_ideal, vali_ideal, monitor=None) -> NeuralRanker:
    """``self.fit(train, vali, ...)`` with the per-step loop (module docstring)."""
    use_compilation_cache()
    if self.list_size is None:
        self.list_size = int(max(np.diff(train.offsets).max(), np.diff(vali.offsets).max()))
    b = self.budget
    lists = self._pad(train)
    vali_lists = self._pad(vali)  # once: every evaluation scores the same padded lists
    ideal = np.asarray(train_ideal, dtype=np.float32)
    batch = min(b.batch_size, lists.n_queries)
    model = build_model(self.arch, train.n_features, b.seed)
    optimizer = nnx.Optimizer(model, optax.adagrad(self.learning_rate), wrt=nnx.Param)
    loss_fn = list_loss(self.loss)

    @nnx.jit
    def train_step(model, optimizer, x, y, mask, ideal_dcg):
        def mean_loss(model):
            return loss_fn(model(x, mask), y, mask, ideal_dcg)

        value, grads = nnx.value_and_grad(mean_loss)(model)
        optimizer.update(model, grads)
        return value

    rng = np.random.default_rng(b.seed)
    order, at = rng.permutation(lists.n_queries), 0
    best, best_state, self.curve, self.curve_steps, self.diverged = -math.inf, None, [], [], False
    self.stop_reason = "step cap"
    self.model = model
    step, started, evaluating = 0, 0.0, 0.0
    self.first_step_seconds = math.nan
    fit_start = time.perf_counter()
    model.train()  # dropout on, batch statistics, GSF's shuffles; scoring switches to eval
    while step < b.max_steps:
        if at + batch > order.size:  # a new epoch; the last partial batch is dropped
            order, at = rng.permutation(lists.n_queries), 0
        idx = order[at:at + batch]
        at += batch
        value = train_step(model, optimizer, lists.X[idx], lists.y[idx], lists.mask[idx], ideal[idx])
        step += 1
        if step == 1:
            jax.block_until_ready(value)  # the first step compiles: the timing starts after it
            started = time.perf_counter()
            self.first_step_seconds = started - fit_start
        if step % b.eval_every and step != b.max_steps:
            continue
        if not np.isfinite(float(value)):
            self.diverged = True  # the loss overflowed: keep the best weights so far
            self.stop_reason = "diverged"
            break
        evaluation = time.perf_counter()
        score = float(_vali_ndcg(self, vali, vali_lists, vali_ideal))
        self.curve.append(score)
        self.curve_steps.append(step)
        if score > best:
            best, self.best_step = score, step
            best_state = jax.tree.map(jnp.copy, nnx.state(model))
        if monitor is not None:
            monitor(step, score)
        evaluating += time.perf_counter() - evaluation
        if step - self.best_step >= b.patience:
            self.stop_reason = CONVERGED
            break
        model.train()
    if step > 1:
        self.seconds_per_step = (time.perf_counter() - started - evaluating) / (step - 1)
    self.steps = step
    if best_state is not None:
        nnx.update(model, best_state)
    model.eval()
    return self


def _vali_ndcg(self: NeuralRanker, vali, vali_lists, vali_ideal) -> np.ndarray:
    s = _score_lists(self.model, vali_lists)
    return ndcg(vali.y, s, vali.offsets, self.budget.cutoff, ideal_dcg=vali_ideal).mean()


def _score_lists(model, lists, chunk: int = 256) -> np.ndarray:
    model.eval()
    out = np.empty(lists.mask.shape, dtype=np.float32)
    for a in range(0, lists.n_queries, chunk):
        x, mask = lists.X[a:a + chunk], lists.mask[a:a + chunk]
        n = x.shape[0]
        if n < chunk:  # one compiled shape for every chunk
            x = np.concatenate([x, np.zeros((chunk - n, *x.shape[1:]), x.dtype)])
            mask = np.concatenate([mask, np.zeros((chunk - n, mask.shape[1]), bool)])
        out[a:a + n] = np.asarray(_forward(model, x, mask))[:n]
    return lists.to_flat(out)


@nnx.jit
def _forward(model, x, mask):
    return model(x, mask)
