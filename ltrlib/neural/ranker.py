"""Training a neural ranker as §5.4 of the Bi-LambdaMART paper does, and scoring with it.

`NeuralRanker.fit` trains one `ltrlib.neural.models` network on padded lists with Adagrad
(Optax's, TF's initial accumulator 0.1), batches of ``batch_size`` lists drawn without
replacement epoch after epoch, and stops early on validation NDCG@``cutoff`` normalised by
the full first-stage list's ideal DCG: every ``eval_every`` steps it is measured, and
training ends ``patience`` steps after its best (or at ``max_steps``); the weights of the
best evaluation are kept. The paper's budget is `PAPER_BUDGET`: 150,000 steps with a
patience of 10,000 (the paper says "epochs"; with TF-Ranking's estimators, whose unit is
the step, we read steps).

How it runs (issue 61: a loop bound by arithmetic, not by Python). The training lists and
the validation lists go to the device once a fit. The ``eval_every`` steps between two
evaluations run as one compiled call (`_advance`): a ``jax.lax.scan`` over the steps, each
gathering its batch on the device from an index array, then the validation NDCG@cutoff
computed on the device and the best weights kept there; the host reads back two numbers a
call (the NDCG and the last loss) to record the curve, call the monitor and decide
patience. The network's shape, the loss and the list shapes are the compiled program's
static part; the weights, the optimiser's state *and its learning rate*
(``optax.inject_hyperparams``) are arguments, so one network shape compiles once and every
trial of it, at any learning rate, runs the same program, which JAX's persistent
compilation cache (`use_compilation_cache`) shares with later processes too (another seed,
another notebook run). The batches' order is drawn on the host, by the same
``numpy.random.Generator`` and in the same order as before the issue (a step's indices are
32 integers, sent with their chunk), so a seed trains on the same batches as it did; the
arithmetic of a step is the same as well, so a fit's curve and scores are the per-step
loop's within float rounding (tests/neural/test_ranker.py compares them against
``bench/reference_neural.py``, the per-step loop kept as the reference).

A fitted ranker is a `ltrlib.data.Scorer`: ``score(dataset)`` gives one float64 score per
row. One seed fixes the weights' initialisation, the dropout masks, GSF's shuffles and the
order of the batches, so a seed gives the same scores on one machine.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from ltrlib import config
from ltrlib.data.dataset import Dataset
from ltrlib.neural.lists import PaddedLists, pad_lists
from ltrlib.neural.losses import LOSSES, list_loss
from ltrlib.neural.models import Architecture, build_model

__all__ = ["CONVERGED", "NeuralBudget", "NeuralRanker", "PAPER_BUDGET", "STOP_REASONS", "use_compilation_cache"]

# On a GPU, several processes share the device (a study's seeds, notebooks side by side):
# JAX's default has the first of them take 75 % of its memory when it starts. Off, unless
# set already: JAX reads it when it starts a GPU backend, at the first array, after this
# import (no effect on a CPU).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

#: Why training ended: patience ran out after the best evaluation (``"patience"``: the fit
#: converged, by the paper's own criterion), the step cap came first (``"step cap"``: the
#: curve may still have been rising), or the loss overflowed (``"diverged"``).
STOP_REASONS = ("patience", "step cap", "diverged")
CONVERGED = "patience"


#: The folder under ltrlib's cache (``LTRLIB_CACHE_DIR``) that keeps JAX's compiled steps.
COMPILATION_CACHE = "jax"


def use_compilation_cache() -> None:
    """Keep JAX's compiled training and scoring steps on disk, in ``<cache>/jax`` under
    ltrlib's cache folder, unless a compilation cache is configured already
    (``JAX_COMPILATION_CACHE_DIR`` or ``jax.config``).

    Why: a later process that trains the same networks on lists of the same shapes (the
    notebook run again, a study's next seed, the test suite's other batches) loads them
    instead of compiling them. At the tiny scale compiling is most of notebook
    06_neural_competitors' time: run alone on a quiet 2-core machine it took 42-46 s with an
    empty cache and 17 s with a filled one (the fits 34-37 s and 9.5 s).
    The code loaded is the code compiled, so no result changes. An entry a killed process
    left half-written is read as a miss (JAX warns and compiles again); a folder that
    cannot be written leaves the cache off, with a warning. Every step is kept, however
    quick to compile (JAX keeps only those over a second by default): the networks' many
    small steps are what adds up."""
    if jax.config.jax_compilation_cache_dir:
        return
    folder = Path(config.CACHE_DIR) / COMPILATION_CACHE
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK):
            raise PermissionError(f"{folder} is not writable")
    except OSError as exc:
        warnings.warn(f"JAX's compilation cache is off: {exc}; the networks are compiled in every process",
                      stacklevel=2)
        return
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


@dataclass(frozen=True)
class NeuralBudget:
    """How long a network trains (§5.4): at most ``max_steps`` steps of ``batch_size`` lists,
    validation NDCG@``cutoff`` every ``eval_every`` steps, stop ``patience`` steps after
    its best; ``seed`` (weights, dropout, shuffles, batches)."""

    max_steps: int = 150_000
    patience: int = 10_000
    eval_every: int = 500
    batch_size: int = 32
    cutoff: int = 5
    seed: int = 0

    def __post_init__(self):
        for name in ("max_steps", "patience", "eval_every", "batch_size", "cutoff"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")

    def replace(self, **changes) -> NeuralBudget:
        return dataclasses.replace(self, **changes)


PAPER_BUDGET = NeuralBudget()

#: Lists per scoring call, in `NeuralRanker.score` and in validation: one compiled shape.
SCORE_CHUNK = 256


@dataclass
class NeuralRanker:
    """One network (``arch``) trained with ``loss`` (`ltrlib.neural.losses.LOSSES`) at
    Adagrad's ``learning_rate``. ``order_by``: the feature column that puts each list in its
    canonical order (the stage-1 score; `ltrlib.neural.lists`); ``list_size``: slots per
    list (the longest query when None)."""

    arch: Architecture
    loss: str = "softmax"
    learning_rate: float = 0.05
    order_by: int | None = None
    list_size: int | None = None
    budget: NeuralBudget = PAPER_BUDGET
    model: nnx.Module | None = field(default=None, repr=False)
    curve: list[float] = field(default_factory=list, repr=False)  # validation NDCG per evaluation
    curve_steps: list[int] = field(default_factory=list, repr=False)  # the step of each evaluation
    best_step: int = 0
    steps: int = 0
    diverged: bool = False
    stop_reason: str = ""  # one of STOP_REASONS once fitted
    # Per training step, over the chunks after the first (which compiles), their validations included.
    seconds_per_step: float = math.nan

    def __post_init__(self):
        if self.loss not in LOSSES:
            raise ValueError(f"unknown loss {self.loss!r}; choose from {list(LOSSES)}")
        if not (isinstance(self.learning_rate, (int, float)) and math.isfinite(self.learning_rate)
                and self.learning_rate > 0):
            raise ValueError(f"learning_rate must be a positive number, got {self.learning_rate!r}")

    @property
    def converged(self) -> bool:
        """Whether training stopped by patience, not at the step cap or by divergence."""
        return self.stop_reason == CONVERGED

    @property
    def best_iteration(self) -> int:
        """The step whose weights are kept (the trees' ``best_iteration`` counts trees)."""
        return self.best_step

    def _pad(self, data: Dataset) -> PaddedLists:
        return pad_lists(data.X, data.offsets, data.y, list_size=self.list_size, order_by=self.order_by)

    def fit(self, train: Dataset, vali: Dataset, *, train_ideal: np.ndarray, vali_ideal: np.ndarray,
            monitor=None) -> NeuralRanker:
        """Train on ``train``, early-stopping on ``vali``. ``train_ideal`` and ``vali_ideal``:
        each query's ideal DCG@cutoff of its full first-stage list (the λRank loss's
        normaliser and validation NDCG's). ``monitor(step, value)`` sees every evaluation
        (an Optuna pruning monitor may stop the trial). Compiled steps are kept on disk
        (`use_compilation_cache`)."""
        use_compilation_cache()
        for name, part, ideal in (("train", train, train_ideal), ("vali", vali, vali_ideal)):
            if np.shape(ideal) != (part.n_queries,):
                raise ValueError(f"{name}_ideal must hold one ideal DCG per {name} query "
                                 f"({part.n_queries}), got shape {np.shape(ideal)}")
        if train.n_features != vali.n_features:
            raise ValueError(f"train has {train.n_features} features, vali {vali.n_features}")
        if self.list_size is None:
            self.list_size = int(max(np.diff(train.offsets).max(), np.diff(vali.offsets).max()))
        b = self.budget
        lists = self._pad(train)
        batch = min(b.batch_size, lists.n_queries)
        model = build_model(self.arch, train.n_features, b.seed)
        run = _Program.of(model, self.loss, min(b.cutoff, self.list_size))
        data = _TrainLists.to_device(lists, train_ideal)
        checks = _ValiLists.to_device(self._pad(vali), vali_ideal)  # once: every evaluation scores the same lists
        params, rest = run.weights(model)
        state, best = _begin(params, rest, jnp.asarray(self.learning_rate, dtype=jnp.float32))
        batches = _Batches(lists.n_queries, batch, b.seed)

        self.curve, self.curve_steps, self.diverged, self.best_step = [], [], False, 0
        self.stop_reason = "step cap"
        self.model = model
        step, started, first, best_score = 0, math.nan, 0, -math.inf
        while step < b.max_steps:
            n = min(b.eval_every, b.max_steps - step)  # the last chunk may be shorter
            state, best, score, last = run.advance(state, best, data, checks, jnp.asarray(batches.take(n)))
            score, last = float(score), float(last)  # the one sync of a chunk
            step += n
            if math.isnan(started):  # the first chunk compiles: the timing starts after it
                started, first = time.perf_counter(), step
            if not math.isfinite(last):
                self.diverged = True  # the loss overflowed: keep the best weights so far
                self.stop_reason = "diverged"
                break
            self.curve.append(score)
            self.curve_steps.append(step)
            if score > best_score:  # the comparison `_advance` made: it kept these weights
                best_score, self.best_step = score, step
            if monitor is not None:
                monitor(step, score)
            if step - self.best_step >= b.patience:
                self.stop_reason = CONVERGED
                break
        if step > first:
            self.seconds_per_step = (time.perf_counter() - started) / (step - first)
        self.steps = step
        if self.best_step:
            run.restore(model, *best.weights)
        else:  # no evaluation was recorded (diverged at once): the last weights stay
            run.restore(model, state.params, state.rest)
        model.eval()
        return self

    def score(self, data: Dataset, chunk: int = SCORE_CHUNK) -> np.ndarray:
        """One float64 score per row of ``data`` (evaluation mode: no dropout, batch norm's
        running statistics, GSF's groups in canonical order)."""
        if self.model is None:
            raise RuntimeError("this NeuralRanker is not fitted: call fit first")
        return self._score_lists(self._pad(data), chunk)

    def _score_lists(self, lists: PaddedLists, chunk: int = SCORE_CHUNK) -> np.ndarray:
        self.model.eval()
        graphdef, params, rest = nnx.split(self.model, nnx.Param, ...)
        params, rest = nnx.as_pure(params), nnx.as_pure(rest)
        out = np.empty(lists.mask.shape, dtype=np.float32)
        for a in range(0, lists.n_queries, chunk):
            x, mask = lists.X[a:a + chunk], lists.mask[a:a + chunk]
            n = x.shape[0]
            if n < chunk:  # one compiled shape for every chunk
                x = np.concatenate([x, np.zeros((chunk - n, *x.shape[1:]), x.dtype)])
                mask = np.concatenate([mask, np.zeros((chunk - n, mask.shape[1]), bool)])
            out[a:a + n] = np.asarray(_forward(graphdef, params, rest, x, mask))[:n]
        return lists.to_flat(out)


#: Adagrad as TF's (initial accumulator 0.1), its learning rate a value of its state: one
#: transformation for every fit, so that the compiled step does not depend on the rate.
_ADAGRAD = optax.inject_hyperparams(optax.adagrad)(learning_rate=1.0)


class _State(NamedTuple):
    """What a training step changes: the weights, the rest of the network's state (batch
    norm's statistics, the random streams' counters) and the optimiser's state."""

    params: nnx.State
    rest: nnx.State
    opt: optax.OptState


class _Best(NamedTuple):
    """The weights (params, rest) of the best evaluation so far, and its NDCG."""

    weights: tuple
    score: jax.Array


@jax.jit
def _begin(params, rest, learning_rate):
    """The training state at step 0 (Adagrad's accumulators, its learning rate) and the best
    weights so far (a copy, NDCG -inf): one compiled call, not one small one per array."""
    opt = _ADAGRAD.init(params)
    opt.hyperparams["learning_rate"] = learning_rate
    best = _Best(jax.tree.map(jnp.copy, (params, rest)), jnp.asarray(-jnp.inf, jnp.float32))
    return _State(params, rest, opt), best


class _TrainLists(NamedTuple):
    X: jax.Array
    y: jax.Array
    mask: jax.Array
    ideal: jax.Array

    @classmethod
    def to_device(cls, lists: PaddedLists, ideal) -> _TrainLists:
        return cls(jnp.asarray(lists.X), jnp.asarray(lists.y), jnp.asarray(lists.mask),
                   jnp.asarray(np.asarray(ideal, dtype=np.float32)))


class _ValiLists(NamedTuple):
    """Validation lists in chunks of `SCORE_CHUNK` lists (the last padded with empty lists):
    ``X`` ``(chunks, SCORE_CHUNK, L, F)``, ``mask`` ``(chunks, SCORE_CHUNK, L)``; per list
    ``y``, ``rows`` (the flat row of each slot: ties are broken by it, as
    `ltrlib.metrics.ndcg` breaks them), ``ideal`` (the full list's ideal DCG@cutoff) and
    ``real`` (False for the padding lists)."""

    X: jax.Array
    mask: jax.Array
    y: jax.Array
    rows: jax.Array
    ideal: jax.Array
    real: jax.Array

    @classmethod
    def to_device(cls, lists: PaddedLists, ideal) -> _ValiLists:
        n, size = lists.mask.shape
        total = -(-n // SCORE_CHUNK) * SCORE_CHUNK

        def pad(a, fill=0):
            return np.concatenate([a, np.full((total - n, *a.shape[1:]), fill, a.dtype)])

        return cls(jnp.asarray(pad(lists.X).reshape(-1, SCORE_CHUNK, size, lists.X.shape[2])),
                   jnp.asarray(pad(lists.mask).reshape(-1, SCORE_CHUNK, size)),
                   jnp.asarray(pad(lists.y)), jnp.asarray(pad(lists.rows, -1).astype(np.int32)),
                   jnp.asarray(pad(np.asarray(ideal, dtype=np.float32))),
                   jnp.asarray(pad(np.ones(n, bool), False)))


class _Batches:
    """Each step's list indices, drawn as the per-step loop drew them: a permutation of the
    training lists per epoch, ``batch`` lists a step, the last partial batch of an epoch
    dropped."""

    def __init__(self, n_lists: int, batch: int, seed: int):
        self.n, self.batch = n_lists, batch
        self.rng = np.random.default_rng(seed)
        self.order, self.at = self.rng.permutation(n_lists), 0

    def take(self, steps: int) -> np.ndarray:
        out = np.empty((steps, self.batch), dtype=np.int32)
        for s in range(steps):
            if self.at + self.batch > self.order.size:
                self.order, self.at = self.rng.permutation(self.n), 0
            out[s] = self.order[self.at:self.at + self.batch]
            self.at += self.batch
        return out


@dataclass(frozen=True)
class _Program:
    """One network shape's compiled calls: its training-mode and evaluation-mode graphs (the
    static part of `_advance`), its loss and the NDCG cut-off. Equal shapes give equal
    programs, so JAX's caches (in memory and on disk) serve every fit of the shape."""

    train_graph: nnx.GraphDef
    eval_graph: nnx.GraphDef
    loss: str
    cutoff: int

    @classmethod
    def of(cls, model: nnx.Module, loss: str, cutoff: int) -> _Program:
        model.eval()
        eval_graph = nnx.graphdef(model)
        model.train()  # dropout on, batch statistics, GSF's shuffles
        return cls(nnx.graphdef(model), eval_graph, loss, int(cutoff))

    def weights(self, model: nnx.Module):
        """The model's parameters and the rest of its state, as plain arrays (states of
        variables cannot cross JAX's transformations)."""
        _, params, rest = nnx.split(model, nnx.Param, ...)
        return nnx.as_pure(params), nnx.as_pure(rest)

    def advance(self, state: _State, best: _Best, data: _TrainLists, checks: _ValiLists, batches):
        return _advance(state, best, data, checks, batches, train_graph=self.train_graph,
                        eval_graph=self.eval_graph, loss=self.loss, cutoff=self.cutoff)

    def restore(self, model: nnx.Module, params, rest) -> None:
        nnx.update(model, params, rest)


@functools.partial(jax.jit, static_argnames=("train_graph", "eval_graph", "loss", "cutoff"))
def _advance(state: _State, best: _Best, data: _TrainLists, checks: _ValiLists, batches, *,
             train_graph, eval_graph, loss: str, cutoff: int):
    """``batches.shape[0]`` training steps, then the validation NDCG@cutoff, the best weights
    updated: ``(state, best, ndcg, last loss)``. Best is updated only when the last loss is
    finite (a diverged fit keeps its best weights, as it records no evaluation)."""
    loss_fn = list_loss(loss)

    def step(state: _State, idx):
        x, y, mask, ideal = data.X[idx], data.y[idx], data.mask[idx], data.ideal[idx]

        def objective(params, rest):
            model = nnx.merge(train_graph, params, rest)
            value = loss_fn(model(x, mask), y, mask, ideal)
            return value, nnx.as_pure(nnx.state(model, nnx.Not(nnx.Param)))

        (value, rest), grads = jax.value_and_grad(objective, has_aux=True)(state.params, state.rest)
        updates, opt = _ADAGRAD.update(grads, state.opt, state.params)
        return _State(optax.apply_updates(state.params, updates), rest, opt), value

    state, values = jax.lax.scan(step, state, batches)
    score = _vali_ndcg(eval_graph, state.params, state.rest, checks, cutoff)
    last = values[-1]
    better = jnp.isfinite(last) & (score > best.score)
    kept = jax.tree.map(lambda new, old: jnp.where(better, new, old), (state.params, state.rest), best.weights)
    return state, _Best(kept, jnp.where(better, score, best.score)), score, last


def _vali_ndcg(eval_graph, params, rest, checks: _ValiLists, cutoff: int):
    """Mean validation NDCG@cutoff of the network in evaluation mode (`_mean_ndcg`)."""
    model = nnx.merge(eval_graph, params, rest)
    scores = jax.lax.map(lambda chunk: model(*chunk), (checks.X, checks.mask))
    return _mean_ndcg(scores.reshape(checks.y.shape), checks.y, checks.rows, checks.mask.reshape(checks.y.shape),
                      checks.ideal, checks.real, cutoff)


def _mean_ndcg(scores, y, rows, mask, ideal, real, cutoff: int):
    """Mean NDCG@cutoff over the ``real`` lists, each normalised by ``ideal`` (its full
    list's ideal DCG; NDCG 1 where that is 0), as `ltrlib.metrics.ndcg` computes it: gain
    2^y − 1, discount 1/log2(1 + rank), ties in flat row order (``rows``); in float32."""
    # + 0.0 makes a -0.0 score 0.0: the host's sort holds them equal, so must this one.
    key = jnp.where(mask, -(scores + 0.0), jnp.inf)  # padded slots last
    order = jnp.lexsort((rows, key), axis=-1)[:, :cutoff]
    gain = jnp.exp2(jnp.take_along_axis(y, order, axis=-1)) - 1.0  # padded slots: label 0, gain 0
    dcg = (gain / jnp.log2(2.0 + jnp.arange(order.shape[-1], dtype=jnp.float32))).sum(axis=-1)
    ndcg = jnp.where(ideal > 0, dcg / jnp.where(ideal > 0, ideal, 1.0), 1.0)
    return jnp.where(real, ndcg, 0.0).sum() / real.sum()


@functools.partial(jax.jit, static_argnames=("graphdef",))
def _forward(graphdef, params, rest, x, mask):
    return nnx.merge(graphdef, params, rest)(x, mask)
