"""Training a neural ranker as §5.4 of the Bi-LambdaMART paper does, and scoring with it.

`NeuralRanker.fit` trains one `ltrlib.neural.models` network on padded lists with Adagrad
(Optax's, TF's initial accumulator 0.1), batches of ``batch_size`` lists drawn without
replacement epoch after epoch, and stops early on validation NDCG@``cutoff`` normalised by
the full first-stage list's ideal DCG: every ``eval_every`` steps it is measured, and
training ends ``patience`` steps after its best (or at ``max_steps``); the weights of the
best evaluation are kept. The paper's budget is `PAPER_BUDGET`: 150,000 steps with a
patience of 10,000 (the paper says "epochs"; with TF-Ranking's estimators, whose unit is
the step, we read steps).

A fitted ranker is a `ltrlib.data.Scorer`: ``score(dataset)`` gives one float64 score per
row. One seed fixes the weights' initialisation, the dropout masks, GSF's shuffles and the
order of the batches, so a seed gives the same scores on one machine.
"""

from __future__ import annotations

import math
import os
import time
import dataclasses
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from ltrlib import config
from ltrlib.data.dataset import Dataset
from ltrlib.metrics import ndcg
from ltrlib.neural.lists import PaddedLists, pad_lists
from ltrlib.neural.losses import LOSSES, list_loss
from ltrlib.neural.models import Architecture, build_model

__all__ = ["CONVERGED", "NeuralBudget", "NeuralRanker", "PAPER_BUDGET", "STOP_REASONS", "use_compilation_cache"]

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
    seconds_per_step: float = math.nan  # training steps alone: not the first (compiling), not the evaluations

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
        vali_lists = self._pad(vali)  # once: every evaluation scores the same padded lists
        ideal = np.asarray(train_ideal, dtype=np.float32)
        batch = min(b.batch_size, lists.n_queries)
        model = build_model(self.arch, train.n_features, b.seed)
        optimizer = nnx.Optimizer(model, optax.adagrad(self.learning_rate), wrt=nnx.Param)
        loss_fn = list_loss(self.loss)

        @nnx.jit
        def train_step(model, optimizer, x, y, mask, ideal_dcg):
            def mean_loss(model):
                return loss_fn(model(x, mask), y, mask, ideal_dcg).mean()

            value, grads = nnx.value_and_grad(mean_loss)(model)
            optimizer.update(model, grads)
            return value

        rng = np.random.default_rng(b.seed)
        order, at = rng.permutation(lists.n_queries), 0
        best, best_state, self.curve, self.curve_steps, self.diverged = -math.inf, None, [], [], False
        self.stop_reason = "step cap"
        self.model = model
        step, started, evaluating = 0, 0.0, 0.0
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
            if step % b.eval_every and step != b.max_steps:
                continue
            if not np.isfinite(float(value)):
                self.diverged = True  # the loss overflowed: keep the best weights so far
                self.stop_reason = "diverged"
                break
            evaluation = time.perf_counter()
            score = float(self._vali_ndcg(vali, vali_lists, vali_ideal))
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

    def _vali_ndcg(self, vali: Dataset, vali_lists: PaddedLists, vali_ideal) -> np.ndarray:
        s = self._score_lists(vali_lists)
        return ndcg(vali.y, s, vali.offsets, self.budget.cutoff, ideal_dcg=vali_ideal).mean()

    def score(self, data: Dataset, chunk: int = 256) -> np.ndarray:
        """One float64 score per row of ``data`` (evaluation mode: no dropout, batch norm's
        running statistics, GSF's groups in canonical order)."""
        if self.model is None:
            raise RuntimeError("this NeuralRanker is not fitted: call fit first")
        return self._score_lists(self._pad(data), chunk)

    def _score_lists(self, lists: PaddedLists, chunk: int = 256) -> np.ndarray:
        self.model.eval()
        out = np.empty(lists.mask.shape, dtype=np.float32)
        for a in range(0, lists.n_queries, chunk):
            x, mask = lists.X[a:a + chunk], lists.mask[a:a + chunk]
            n = x.shape[0]
            if n < chunk:  # one compiled shape for every chunk
                x = np.concatenate([x, np.zeros((chunk - n, *x.shape[1:]), x.dtype)])
                mask = np.concatenate([mask, np.zeros((chunk - n, mask.shape[1]), bool)])
            out[a:a + n] = np.asarray(_forward(self.model, x, mask))[:n]
        return lists.to_flat(out)


@nnx.jit
def _forward(model, x, mask):
    return model(x, mask)
