"""LightGBM as a ranking backend of `ltrlib.train.Ranker` (``backend="lightgbm"``, the
default): LambdaMART (``objective="lambdarank"``), deterministic (``deterministic=True``
with ``force_row_wise=True``), early stopping on validation NDCG@eval_at alone.

`LIGHTGBM` is its `Backend` entry. Public: the parameter and logging helpers that the
bivariate code's own LightGBM fits share (`lightgbm_params`, `quiet_lightgbm`,
`monitor_callback`, `MIN_HESSIAN_FLOOR`), and `CHECKPOINT_SECONDS`.

**A fit that resumes.** Given a ``checkpoint`` path, a fit writes its trees and validation
curve there every `CHECKPOINT_SECONDS` (atomically), and a fit given the same path again
continues from what it finds there with LightGBM's ``init_model``, on freshly binned data,
its early stopping and monitor fed the recorded curve first; the path is removed when the
fit ends, unless it ends by an interrupt (Ctrl-C, a kill). The resumed fit's trees, curve,
best iteration and saved model equal the uninterrupted fit's to the bit
(``tests/train/test_fit_checkpoint.py``): LightGBM's continued training starts from the
raw scores its trees predict, the same sums in the same order as its own score updates.
Those scores are the fit's own: each checkpoint keeps them beside it (a hidden
``.<checkpoint>.scores.npz``, a local cache that a study's checkpoint mirror leaves out), and
a resume on the same machine hands them to LightGBM instead of letting it predict them again
with every earlier tree, on the fit's one thread, which took minutes at Istella-S size and
grew with the trees (`_given_init_scores`); without them, or where they do not match, it
predicts them as before.
Why: at Istella-S size one tuning trial of notebook 03 grows trees for hours of one core
(docs/studies.md), longer than a machine lent for a while may run.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ltrlib.data.dataset import Dataset
from ltrlib.train.backends.base import Backend, DataCache

__all__ = ["CHECKPOINT_SECONDS", "LIGHTGBM", "MIN_HESSIAN_FLOOR", "lightgbm_params", "monitor_callback",
           "quiet_lightgbm"]


def _lgb_defaults(seed: int, eval_at: int, num_threads: int) -> dict:
    return {
        "objective": "lambdarank",
        "metric": "ndcg",
        "eval_at": [eval_at],
        "seed": seed,
        "deterministic": True,
        "force_row_wise": True,
        "num_threads": num_threads,
        "verbosity": -1,
        # Tuning varies min_data_in_leaf; with pre-filtering on, LightGBM would drop features
        # at Dataset construction according to the first value it saw.
        "feature_pre_filter": False,
    }


def _lgb_complete(params: dict) -> dict:
    # Asking for column-wise histograms replaces the row-wise default (LightGBM refuses
    # both); either keeps deterministic=True deterministic.
    if params.get("force_col_wise"):
        params["force_row_wise"] = False
    return params


def _lgb_datasets(train: Dataset, vali: Dataset | None):
    dtrain = train.to_lightgbm(feature_pre_filter=False)
    return dtrain, (None if vali is None else vali.to_lightgbm(reference=dtrain))


def monitor_callback(monitor: Callable[[int, float], None], metric: str, data_name: str = "vali"):
    """A LightGBM callback calling ``monitor(trees, value)`` with ``metric`` on
    ``data_name`` after every tree: how `train_ranker` and `ltrlib.bilambdamart.fit_lb` hand
    the validation curve to a pruner (`ltrlib.train.tuning.pruning_monitor`)."""
    def report(env):
        for name, m, value, _ in env.evaluation_result_list:
            if name == data_name and m == metric:
                monitor(env.iteration + 1, float(value))

    return report


# What a minimum leaf hessian of 0 (the Bi-LambdaMART paper's Bi-λMART value) is passed to
# LightGBM as, by every LightGBM fit (`_lgb_fit`, `ltrlib.bilambdamart.fit_lb`).
# With exactly 0, LightGBM accepts a split whose child is empty and then stops on its own
# check ("Check failed: (best_split_info.left_count) > (0)", its open issue #4739): on the
# tiny twin Bi-λMART at learning rate 0.005, 31 leaves, min data 5 failed by tree 4 with 0
# and trained to the end with 1e-12 or 1e-7 (a hessian floor of 1e-9 on every pair did
# not help). 1e-12 lies far below any leaf worth a split: a pair's hessian is (h_i +
# h_j)/(n-1)^2, 1e-6 to 1e-3 on the twin, and only pairs of queries without a relevant
# document have exactly 0 (and a zero gradient with it).
MIN_HESSIAN_FLOOR = 1e-12


def lightgbm_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` as LightGBM gets them: a minimum leaf hessian of 0 becomes
    `MIN_HESSIAN_FLOOR` (see there); the rest as given."""
    out = dict(params)
    if "min_sum_hessian_in_leaf" in out and float(out["min_sum_hessian_in_leaf"]) < MIN_HESSIAN_FLOOR:
        out["min_sum_hessian_in_leaf"] = MIN_HESSIAN_FLOOR
    return out


def quiet_lightgbm() -> None:
    """Send LightGBM's native log lines (its ``[Warning]`` and ``[Fatal]`` lines) to the
    Python logger ``lightgbm`` at INFO, which prints nothing unless a user configures
    logging, instead of printing them. Why: in a batch run they reach the console, where a
    ``[Fatal]`` line of a trial that was handled reads as a crash; a real failure still
    raises ``LightGBMError`` with the same message. To see them again:
    ``logging.basicConfig(level=logging.INFO)``. Idempotent; every fit calls it, so worker
    processes are quiet too."""
    import logging

    import lightgbm as lgb

    lgb.register_logger(logging.getLogger("lightgbm"))


def _lgb_fit(params: dict, train: Dataset, vali: Dataset | None, max_trees: int,
             early_stopping: int, position: np.ndarray | None = None, cache: DataCache | None = None,
             monitor: Callable[[int, float], None] | None = None,
             checkpoint: str | os.PathLike | None = None) -> tuple[Any, int, list[float]]:
    import lightgbm as lgb

    quiet_lightgbm()
    params = lightgbm_params(params)
    key = f"ndcg@{params['eval_at'][0]}"
    resumed = _read_checkpoint(checkpoint, key, max_trees) if checkpoint is not None else None
    if cache is None or resumed is not None:
        # A resumed fit's datasets get the earlier trees' scores as their initial scores:
        # never the shared ones, which the study's other trials train on.
        dtrain, dvali = _lgb_datasets(train, vali)
    else:
        # No key: a reused Dataset whose binning parameters differ is rebuilt by lgb.train.
        dtrain, dvali = cache.get("lightgbm", (), lambda: _lgb_datasets(train, vali))
    if position is not None:
        dtrain.set_position(position)
    data_key = _data_key(train, vali) if checkpoint is not None else ""
    if resumed is not None:
        scores = _read_scores(checkpoint, resumed["trees"], data_key)
        if scores is not None:
            _given_init_scores(dtrain, scores["train"], resumed["trees"])
            if vali is not None:
                _given_init_scores(dvali, scores["vali"], resumed["trees"])
    callbacks = []
    valid_sets, curve = [], {}
    done, before = (0, []) if resumed is None else (resumed["trees"], resumed["curve"])
    init = None if resumed is None else lgb.Booster(model_str=resumed["model"])
    try:
        if vali is not None:
            valid_sets = [dvali]
            # first_metric_only: stop on NDCG@eval_at alone even if a user adds metrics.
            stopper = lgb.early_stopping(early_stopping, first_metric_only=True, verbose=False)
            callbacks = [_fed(stopper, init, before, params, key, max_trees) if before else stopper,
                         lgb.record_evaluation(curve)]
            if monitor is not None:
                for trees, value in enumerate(before, 1):  # a pruner sees the whole curve
                    monitor(trees, value)
                callbacks.append(monitor_callback(monitor, key))
        if checkpoint is not None:
            callbacks.append(_checkpoint_callback(Path(checkpoint), curve, key, before, data_key))
        booster = lgb.train(params, dtrain, num_boost_round=max_trees - done, valid_sets=valid_sets,
                            valid_names=["vali"] if valid_sets else None, callbacks=callbacks, init_model=init)
    except Exception:
        _remove_checkpoint(checkpoint)  # a pruned or failed trial is not resumed; an interrupt is
        raise
    _remove_checkpoint(checkpoint)
    if resumed is not None:
        booster = _as_one_fit(booster, max_trees, done)
    if vali is None:
        return booster, booster.current_iteration(), []
    return booster, int(booster.best_iteration), before + [float(v) for v in curve["vali"][key]]


#: How often a fit given a ``checkpoint`` writes it: at Istella-S size a tree of notebook
#: 03's first trial takes 3-4 s of one core, so an interruption costs at most about 200
#: trees, and the `small` batch's fits, seconds long, never write one.
CHECKPOINT_SECONDS = 600.0


def _checkpoint_callback(path: Path, curve: dict, key: str, before: list[float], data_key: str):
    """A LightGBM callback writing the trees so far and the validation curve (``before``,
    then what ``record_evaluation`` keeps in ``curve``) to ``path`` (JSON, atomically) every
    `CHECKPOINT_SECONDS`, once the early stopping has passed the tree, and the data's scores
    beside it, marked with ``data_key`` (`_write_scores`)."""
    from ltrlib.atomic import atomic_write_text

    last = time.monotonic()

    def save(env):
        nonlocal last
        if time.monotonic() - last < CHECKPOINT_SECONDS:
            return
        values = list(before) + [float(v) for v in curve.get("vali", {}).get(key, [])]
        state = {"trees": env.iteration + 1, "curve": values, "model": env.model.model_to_string()}
        path.parent.mkdir(parents=True, exist_ok=True)
        # The scores first, marked with their tree count: one cut off before the state's own
        # write is then a scores file for another count, which a resume does not take.
        _write_scores(path, state["trees"], env.model, data_key)
        atomic_write_text(path, json.dumps(state))
        last = time.monotonic()

    save.order = 40  # after record_evaluation (20) and early stopping (30)
    return save


def _read_checkpoint(path: str | os.PathLike, key: str, max_trees: int) -> dict | None:
    """The state `_checkpoint_callback` wrote at ``path``, or None where there is none. A
    file that is not one (a fit of another shape, cut off mid-write by something else) is
    an error naming it: a trial should not silently start again."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_text())
        trees, curve, model = int(state["trees"]), [float(v) for v in state["curve"]], str(state["model"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a LightGBM fit checkpoint ({exc}); remove it to start the fit again") from exc
    if not 0 < trees < max_trees or len(curve) not in (0, trees):
        raise ValueError(f"{path}: a checkpoint of {trees} trees and {len(curve)} {key} values does not fit "
                         f"a fit of at most {max_trees} trees; remove it to start the fit again")
    return {"trees": trees, "curve": curve, "model": model}


def _remove_checkpoint(path: str | os.PathLike | None) -> None:
    if path is not None:
        Path(path).unlink(missing_ok=True)
        _scores_path(path).unlink(missing_ok=True)


def _scores_path(checkpoint: str | os.PathLike) -> Path:
    """Where a checkpoint's fit scores are kept: beside it, hidden, so that a study's
    checkpoint mirror (which leaves hidden files out) does not carry 20 MB of cache a fit."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(f".{checkpoint.name}.scores.npz")


def _data_key(train: Dataset, vali: Dataset | None) -> str:
    """What kept scores must have been computed on (`_write_scores`): the training and
    validation data's labels and query sizes, hashed; a few milliseconds at Istella-S size."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    for part in (train, vali):
        if part is not None:
            h.update(np.ascontiguousarray(part.y).tobytes())
            h.update(np.ascontiguousarray(part.offsets).tobytes())
        h.update(b"|")
    return h.hexdigest()


def _write_scores(checkpoint: Path, trees: int, booster, data_key: str) -> None:
    """The raw scores ``booster`` holds for its training and validation data after
    ``trees`` trees, as LightGBM updates them while it trains, kept for a resume with
    ``data_key`` (`_data_key`, `_read_scores`). They come through the public
    ``eval_train``/``eval_valid``, whose custom metric is handed exactly those scores."""
    from ltrlib.atomic import atomic_path

    kept = {}

    def keep(name):
        def metric(preds, data):
            kept[name] = np.array(preds, dtype=np.float64)  # a copy: the buffer is LightGBM's
            return "kept", 0.0, True

        return metric

    booster.eval_train(feval=keep("train"))
    if getattr(booster, "valid_sets", None):
        booster.eval_valid(feval=keep("vali"))
    with atomic_path(_scores_path(checkpoint)) as tmp, open(tmp, "wb") as f:
        np.savez(f, trees=np.int64(trees), data=np.str_(data_key), **kept)


def _read_scores(checkpoint: str | os.PathLike, trees: int, data_key: str) -> dict | None:
    """The scores `_write_scores` kept beside ``checkpoint``, where they are those of its
    ``trees`` trees on the data ``data_key`` names; otherwise None (the resume then
    predicts them)."""
    path = _scores_path(checkpoint)
    try:
        with np.load(path) as got:
            scores = {name: got[name] for name in got.files}
    except (OSError, ValueError, EOFError):
        return None
    if int(scores.get("trees", -1)) != trees or str(scores.get("data", "")) != data_key:
        return None
    return scores


def _given_init_scores(dataset, scores: np.ndarray, trees: int) -> None:
    """Have the LightGBM ``dataset`` take ``scores`` as its continued-training initial
    scores where LightGBM would predict them with the ``trees`` trees of ``init_model``.
    LightGBM sets those through the Dataset's ``_set_init_score_by_predictor`` (its own
    hook, called when the Dataset is built or given a predictor); this instance's hook
    sets the kept scores for that predictor and defers to LightGBM's otherwise. Should a
    LightGBM release rename the hook, the resume predicts as before, only slower
    (``tests/train/test_fit_checkpoint.py`` fails then, as it asserts nothing is predicted)."""
    predict = dataset._set_init_score_by_predictor

    def given(predictor, data, used_indices):
        if predictor is not None and used_indices is None and predictor.current_iteration() == trees:
            dataset.set_init_score(scores)
            return dataset
        return predict(predictor=predictor, data=data, used_indices=used_indices)

    dataset._set_init_score_by_predictor = given


def _fed(stopper, init, before: list[float], params: dict, key: str, max_trees: int):
    """LightGBM's early stopping ``stopper``, fed the ``before`` curve of the fit's first
    trees (the booster ``init``) as if it had watched them, then watching the resumed trees
    as later ones of the same fit (LightGBM restarts a callback's state at its first iteration)."""
    import lightgbm as lgb

    # LightGBM >= 4.7 hands callbacks named results; earlier releases plain tuples.
    result = getattr(lgb.basic, "EvalResult", lambda *fields: tuple(fields))
    for iteration, value in enumerate(before):
        stopper(lgb.callback.CallbackEnv(model=init, params=params, iteration=iteration, begin_iteration=0,
                                         end_iteration=max_trees,
                                         evaluation_result_list=[result("vali", key, value, True)]))

    def watch(env):
        stopper(lgb.callback.CallbackEnv(model=env.model, params=env.params, iteration=env.iteration,
                                         begin_iteration=0, end_iteration=env.end_iteration,
                                         evaluation_result_list=env.evaluation_result_list))

    watch.order = stopper.order
    return watch


def _as_one_fit(booster, max_trees: int, done: int):
    """A resumed fit's booster as the uninterrupted fit's: LightGBM records the resumed
    part's tree count (``num_iterations``) among the model's parameters; the rest is equal."""
    import lightgbm as lgb

    text = booster.model_to_string()
    line = f"[num_iterations: {max_trees - done}]"
    if text.count(line) == 1:
        text = text.replace(line, f"[num_iterations: {max_trees}]")
    best = booster.best_iteration
    booster = lgb.Booster(model_str=text)
    booster.best_iteration = best
    return booster


def _lgb_loads(text: str):
    import lightgbm as lgb

    return lgb.Booster(model_str=text)


LIGHTGBM = Backend(
    defaults=_lgb_defaults,
    complete=_lgb_complete,
    fit=_lgb_fit,
    predict=lambda m, X, it: m.predict(X, num_iteration=it),
    importance=lambda m, kind, it: m.feature_importance(importance_type=kind, iteration=it),
    n_trees=lambda m: m.current_iteration(),
    # Only the trees up to the best iteration: the saved model predicts what the
    # early-stopped model predicted, and is smaller.
    dumps=lambda m, it: m.model_to_string(num_iteration=it),
    loads=_lgb_loads,
    model_suffix=".txt",
    resumes=True,
)
