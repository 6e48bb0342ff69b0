"""The Bi-LambdaMART paper's neural competitors on the tree models' stage-2 data (§5.3-§6).

The same `ltrlib.bilambdamart.Stage2Experiment` the trees train on: its top-k lists with the
listwise-expanded features (§5.5), its training-query sample, its full-list ideal DCGs.
Models (`NEURAL_MODELS`), each a `NeuralRanker`:

======================  ====================================================================
``DNN``, ``GSF(2)``,    λRank loss (Table 3; `ltrlib.neural.losses`' ``lambdarank``, reduced
``GSF(20)``,            as TF-Ranking's estimators reduce it). ``GSF(2)`` has no difference
``ATTN-DIN``,           features, as Table 3's (its numbers are Table 4's "without" row);
``SetRank``,            ``GSF(2) with d`` adds x_i − x_j to each pair (Table 4's "with").
``GSF(2) with d``
``DNN_Softmax``, ...    the same five with the softmax loss (Table 5)
======================  ====================================================================

Each is tuned with Optuna (TPE) by validation NDCG@cutoff over learning rate, dropout and
hidden layers, and the attention models over attention layers, heads, size and attention
dropout (§5.4, `suggest`), its first trial the paper's WEB30K point of Tables 6 and 7
(`PAPER_POINTS`; WEB30K because Table 5 is on it). ``max_width`` caps every layer's width
(the batch's time budget), a departure the tables' captions state.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ltrlib.bilambdamart.experiment import STAGE1_ROW, FittedModel, Stage2Experiment, model_list
from ltrlib.metrics import compare
from ltrlib.metrics.significance import MarkedTable, corrected, paired_tests
from ltrlib.neural.models import Architecture
from ltrlib.neural.ranker import CONVERGED, NeuralBudget, NeuralRanker
from ltrlib.train.settings import TuningSettings

__all__ = ["ATTENTION", "HIDDEN_LAYERS", "NEURAL_MODELS", "PAPER_POINTS", "NeuralSpec", "architecture", "budget_caption",
           "network_curves", "network_summary", "fit_neural_models", "neural_model_list", "paper_marks",
           "paper_marks_pvalues", "ranker_means", "table6",
           "table7", "tree_rows"]

#: Notebook 06's tree models by the loss they train with, as `ranker_means` groups them.
TREE_LOSSES = {"λMART": "lambdarank", "λMART*": "lambdarank", "Bi-λMART": "lambdarank",
               "Bi-λMART w/o d": "lambdarank", "GBT_Softmax": "softmax", "Bi-GBT_Softmax": "softmax"}


@dataclass(frozen=True)
class NeuralSpec:
    name: str
    family: str  # the paper's name of the architecture: a key of PAPER_POINTS
    loss: str = "lambdarank"
    difference: bool = False


_FAMILIES = {"DNN": ("dnn", 1), "GSF(2)": ("gsf", 2), "GSF(20)": ("gsf", 20), "ATTN-DIN": ("attn_din", 1),
             "SetRank": ("setrank", 1)}
NEURAL_MODELS: dict[str, NeuralSpec] = {s.name: s for s in (
    *(NeuralSpec(f, f) for f in _FAMILIES),
    NeuralSpec("GSF(2) with d", "GSF(2)", difference=True),
    *(NeuralSpec(f"{f}_Softmax", f, loss="softmax") for f in _FAMILIES),
)}

#: The paper's WEB30K hyper-parameters (Tables 6 and 7): every study's first trial.
#: ``hidden`` as Table 6 writes it; SetRank has no hidden layers.
PAPER_POINTS: dict[str, dict[str, Any]] = {
    "DNN": {"learning_rate": 0.05, "hidden": "512,256,128,64", "dropout": 0.5},
    "GSF(2)": {"learning_rate": 0.01, "hidden": "4096,1024,256,64", "dropout": 0.5},
    "GSF(20)": {"learning_rate": 0.05, "hidden": "1024,512,256,128", "dropout": 0.5},
    "ATTN-DIN": {"learning_rate": 0.05, "hidden": "512,128,32", "dropout": 0.5,
                 "attention_layers": 1, "heads": 4, "size": 256, "attention_dropout": 0.5},
    "SetRank": {"learning_rate": 0.05, "attention_layers": 4, "heads": 2, "size": 256, "attention_dropout": 0.5},
}
#: The hidden layers the search chooses from: every row of Table 6 and smaller towers.
HIDDEN_LAYERS = ("64,32", "128,64", "256,128,64", "512,128,32", "512,256,128,64", "1024,256,64", "1024,512,256",
                 "1024,512,256,128", "2048,1024,512,256", "4096,1024,256,64")
#: The attention dimensions' choices (Table 7's values among them). SetRank splits its
#: size over its heads, so it draws from the heads that divide every size.
ATTENTION = {"attention_layers": (1, 6), "heads": (1, 2, 4, 6), "setrank_heads": (1, 2, 4),
             "size": (64, 128, 256, 512), "attention_dropout": (0.0, 0.25, 0.5)}
DROPOUTS = (0.0, 0.25, 0.5)


def suggest(trial, family: str) -> dict[str, Any]:
    """One point of ``family``'s search space (§5.4)."""
    point = {"learning_rate": trial.suggest_float("learning_rate", 1e-3, 0.2, log=True)}
    if family != "SetRank":
        point["hidden"] = trial.suggest_categorical("hidden", HIDDEN_LAYERS)
        point["dropout"] = trial.suggest_categorical("dropout", DROPOUTS)
    if family in ("ATTN-DIN", "SetRank"):
        point["attention_layers"] = trial.suggest_int("attention_layers", *ATTENTION["attention_layers"])
        heads = ATTENTION["setrank_heads" if family == "SetRank" else "heads"]
        point["heads"] = trial.suggest_categorical("heads", heads)
        point["size"] = trial.suggest_categorical("size", ATTENTION["size"])
        point["attention_dropout"] = trial.suggest_categorical("attention_dropout", ATTENTION["attention_dropout"])
    return point


def architecture(spec: NeuralSpec, point: Mapping[str, Any], max_width: int = 0) -> Architecture:
    """The network of ``spec`` at ``point`` (`suggest`'s keys); ``max_width`` > 0 caps the
    width of every hidden layer and of the attention layers (ATTN-DIN's heads x size,
    SetRank's size)."""
    kind, group = _FAMILIES[spec.family]
    cap = (lambda w: min(int(w), max_width)) if max_width else int
    hidden = tuple(cap(w) for w in str(point.get("hidden", "")).split(",") if w)
    heads = int(point.get("heads", 1))
    size = int(point.get("size", 64))
    if max_width:
        # ATTN-DIN's size is per head (TF-Ranking's head size); SetRank's is its width.
        size = max(1, min(size, max_width // heads)) if kind == "attn_din" else min(size, max_width)
        if kind == "setrank":
            size -= size % heads
    return Architecture(kind, hidden=hidden, dropout=float(point.get("dropout", 0.0)),
                        group_size=group if kind == "gsf" else 1, difference=spec.difference,
                        attention_layers=int(point.get("attention_layers", 1)), heads=heads, size=size,
                        attention_dropout=float(point.get("attention_dropout", 0.0)))


def neural_model_list(names: str, parameter: str = "neural_models") -> list[str]:
    """Model names from a comma-separated string (a notebook parameter), each one of
    `NEURAL_MODELS`, or ``"all"``; ValueError naming ``parameter`` otherwise."""
    if str(names).strip() == "all":
        return list(NEURAL_MODELS)
    return model_list(names, parameter, NEURAL_MODELS)


#: `fit_neural_models`' search by default: one trial, at the paper's point.
NEURAL_TUNING = TuningSettings(n_trials=1, prune=False, progress=False)


#: XLA's flags for a network's worker (`network_workers`): its CPU programs in one thread.
ONE_THREAD_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"

#: The networks that take longest a step (`bench/bench_neural.py`), started first so that the
#: workers finish together.
_SLOWEST_FIRST = ("SetRank", "SetRank_Softmax", "GSF(20)", "GSF(20)_Softmax")


def network_workers(n_workers: int):
    """The worker processes networks train in (`fit_neural_models`, and
    `bench/bench_neural.py`'s side-by-side column): ``n_workers`` of them, each kept to one
    core of its own and one thread (`ltrlib.processes.one_core_workers`), XLA's CPU programs
    in one thread too, after any flags of this process's own."""
    from ltrlib import processes

    flags = f"{os.environ.get('XLA_FLAGS', '')} {ONE_THREAD_XLA_FLAGS}".strip()
    return processes.one_core_workers(n_workers, env={"XLA_FLAGS": flags})


def fit_neural_models(exp: Stage2Experiment, names, *, budget: NeuralBudget,
                      tuning: TuningSettings = NEURAL_TUNING, study_prefix: str = "06n",
                      max_width: int = 0, n_jobs: int = 1) -> dict[str, FittedModel]:
    """Tune (or resume) each neural model's Optuna study on ``exp``'s stage-2 data and keep
    its best model, as `ltrlib.bilambdamart.fit_models` does for the trees (the same
    `FittedModel`, so the same tables read both). ``budget``: steps, patience, evaluation
    interval, batch size; its ``cutoff`` must be the experiment's and its seed is
    replaced by the experiment's. ``tuning``: the trials (the first at the paper's point,
    `PAPER_POINTS`, whatever ``tuning.first_params`` says; not pruned, so ``tuning.prune``
    must be False) and the studies' storage, ``<study_prefix>.<model>`` in
    ``tuning.storage`` (a journal path, or None for in memory).

    Each network's study runs in a worker process that keeps to one core of its own, with
    XLA's programs in one thread, ``n_jobs`` networks side by side (`network_workers`; one
    worker too). A network's numbers are then
    those of a one-core machine whatever ``n_jobs`` is and wherever it runs: on the CPU,
    XLA's programs round differently with the cores and threads they see. Small networks
    gain almost nothing from a second thread, while a second network beside them doubles
    the work done (issue 61 found everything serial). The trials of one network stay in sequence:
    TPE draws each point from those finished before it. Progress is counted in networks."""
    from concurrent.futures import as_completed

    from ltrlib import sessions, timing
    from ltrlib.progress import bar

    unknown = [n for n in names if n not in NEURAL_MODELS]
    if unknown:
        raise ValueError(f"unknown neural models {unknown}; choose from {list(NEURAL_MODELS)}")
    if budget.cutoff != exp.cutoff:
        raise ValueError(f"budget.cutoff = {budget.cutoff} differs from the experiment's cut-off {exp.cutoff}")
    if int(n_jobs) < 1:
        raise ValueError(f"n_jobs must be >= 1, got {n_jobs}")
    budget = budget.replace(seed=exp.seed)
    train, vali = exp.parts["train"], exp.parts["vali"]
    data = _NetworkData(train, vali, {p: exp.ideal_at(p, exp.cutoff) for p in ("train", "vali")},
                        order_by=exp.n_diff - 1,  # the stage-1 score: each list's canonical order
                        setup={"cutoff": exp.cutoff, "train_docs": train.n_docs,
                               "train_label_sum": int(train.y.sum()), "features": train.n_features,
                               "seed": exp.seed, "top_k": exp.two.top_k, "folds": exp.two.folds})
    names = list(names)
    order = sorted(names, key=lambda n: n not in _SLOWEST_FIRST)  # stable
    workers = min(int(n_jobs), len(order)) or 1
    # In a batch run the workers' trial bars report to the runner (ltrlib.progress) and print nothing.
    in_worker = tuning.replace(progress=tuning.progress and sessions.in_batch())
    fitted = {}
    # The workers' seconds overlap: the run counts this block's wall time (ltrlib.timing).
    with timing.fitting(), network_workers(workers) as pool:
        try:
            calls = [pool.submit(_tune_network, name, data, budget, in_worker, study_prefix, max_width)
                     for name in order]
            for call in bar(as_completed(calls), total=len(calls), unit="network", enabled=tuning.progress,
                            desc=f"networks, {workers} at a time, one core each"):
                f = call.result()
                fitted[f.name] = f
        except BaseException:  # an error, or Ctrl-C: the other networks stop too
            pool.shutdown(wait=False, kill_workers=True)
            raise
    return {name: fitted[name] for name in names}


@dataclass(frozen=True)
class _NetworkData:
    """What a network's study needs of the experiment, sent to its worker."""

    train: Any
    vali: Any
    ideal: Mapping[str, np.ndarray]
    order_by: int
    setup: Mapping[str, Any]


def _tune_network(name: str, data: _NetworkData, budget: NeuralBudget, tuning: TuningSettings,
                  study_prefix: str, max_width: int) -> FittedModel:
    """One network's study and its kept model (in `fit_neural_models`' worker)."""
    from ltrlib.train.tuning import run_study

    spec = NEURAL_MODELS[name]

    def fit(point, monitor=None):
        ranker = NeuralRanker(architecture(spec, point, max_width), loss=spec.loss,
                              learning_rate=float(point["learning_rate"]), order_by=data.order_by, budget=budget)
        return ranker.fit(data.train, data.vali, train_ideal=data.ideal["train"], vali_ideal=data.ideal["vali"],
                          monitor=monitor)

    def objective(trial, monitor):
        ranker = fit(suggest(trial, spec.family), monitor=monitor)
        value = max(ranker.curve) if ranker.curve else -math.inf
        trial.set_user_attr("best_iteration", ranker.best_step)
        trial.set_user_attr("diverged", ranker.diverged)
        trial.set_user_attr("stop_reason", ranker.stop_reason)
        trial.set_user_attr("trees", ranker.steps)  # the trial's cost, in steps
        return value, ranker

    setup = {"model": name, **data.setup, "max_steps": budget.max_steps, "patience": budget.patience,
             "eval_every": budget.eval_every, "batch_size": budget.batch_size, "max_width": max_width}
    if spec.loss == "lambdarank":
        # Issue 61 changed what "lambdarank" reduces by: a journal of the loss before
        # (now `lambdarank_slot_mean`) is refused rather than resumed.
        setup["lambdarank_reduction"] = "sum_by_nonzero_weights"
    result = run_study(objective, tuning.replace(first_params=PAPER_POINTS[spec.family]),
                       study_name=f"{study_prefix}.{name}", seed=data.setup["seed"], setup=setup,
                       searched=tuple(PAPER_POINTS[spec.family]), keep_best=True, unit="steps")
    # A resumed study's best may not have been trained here: retrain its point (one seed,
    # the same weights).
    model = result.ranker or fit(result.best_params)
    return FittedModel(name, model, dict(result.best_params), model.best_step, float(result.best_value),
                       result.trials)


def network_summary(fitted: Mapping[str, FittedModel]) -> pd.DataFrame:
    """`ltrlib.bilambdamart.tuning_summary` for networks, with how each kept fit ended:
    ``steps`` trained, ``best_step`` (the weights kept), ``stop_reason``
    (`ltrlib.neural.ranker.STOP_REASONS`), ``converged`` (stopped by patience) and
    ``trials_converged``, how many of the study's trials stopped by patience. The
    ledger's budget gate reads ``usable`` and ``converged``."""
    from ltrlib.bilambdamart.experiment import tuning_summary

    out = tuning_summary(fitted)
    out["steps"] = [f.model.steps for f in fitted.values()]
    out["best_step"] = [f.model.best_step for f in fitted.values()]
    out["stop_reason"] = [f.model.stop_reason for f in fitted.values()]
    out["converged"] = [f.model.converged for f in fitted.values()]
    out["trials_converged"] = [int((f.tuning.get("stop_reason", pd.Series(dtype=object)) == CONVERGED).sum())
                               for f in fitted.values()]
    # Degenerate trials are a tree's notion (a network's curve starts from its random weights).
    return out.drop(columns=["kept_degenerate"]).assign(usable=out.trials)


def table6(fitted: Mapping[str, FittedModel]) -> pd.DataFrame:
    """Table 6: each model's tuned learning rate, hidden layers and dropout, the layers it
    trained with (``trained_layers``: narrower where ``max_width`` capped them), the step
    whose weights were kept and its validation NDCG."""
    return pd.DataFrame([{"model": name, "learning_rate": f.params["learning_rate"],
                          "hidden_layers": f.params.get("hidden", "-"),
                          "trained_layers": ",".join(map(str, f.model.arch.hidden)) or "-",
                          "dropout": f.params.get("dropout", "-"),
                          "best_step": f.best_iteration, "trials": len(f.tuning), "vali_ndcg": f.vali_ndcg}
                         for name, f in fitted.items()])


def table7(fitted: Mapping[str, FittedModel]) -> pd.DataFrame:
    """Table 7: the attention models' layers, heads, size (as tuned, and ``trained_size`` as
    trained) and attention dropout."""
    return pd.DataFrame([{"model": name, "layers": f.params["attention_layers"], "heads": f.params["heads"],
                          "size": f.params["size"], "trained_size": f.model.arch.size,
                          "dropout": f.params["attention_dropout"]}
                         for name, f in fitted.items() if NEURAL_MODELS[name].family in ("ATTN-DIN", "SetRank")],
                        columns=["model", "layers", "heads", "size", "trained_size", "dropout"])


def _table3_rows(per_query: pd.DataFrame, names) -> tuple[list[str], list[str], list[str]]:
    # Table 3's rows, the networks † is tested against and the trees * is.
    lambdarank = [n for n in names if NEURAL_MODELS[n].loss == "lambdarank" and n != "GSF(2) with d"]
    trees = [m for m in ("λMART", "λMART*", "Bi-λMART") if m in set(per_query.model)]
    return lambdarank + trees, lambdarank, [m for m in ("λMART*",) if m in trees]


def table3(per_query: pd.DataFrame, names) -> MarkedTable:
    """Table 3: the networks of ``names`` trained with the λRank loss (GSF(2) with d is Table
    4's), then notebook 06's λRank trees present in ``per_query``, marked as the paper marks
    (`paper_marks`: † against every network, * against λMART*)."""
    return paper_marks(per_query, *_table3_rows(per_query, names))


def table3_pvalues(per_query: pd.DataFrame, names) -> pd.DataFrame:
    """The tests behind `table3`'s marks with Holm's correction beside them
    (`paper_marks_pvalues`)."""
    return paper_marks_pvalues(per_query, *_table3_rows(per_query, names))


#: Table 4's rows, those of them present: GSF(2) without and with the differences, and the trees'.
TABLE4_ROWS = ("GSF(2)", "GSF(2) with d", "Bi-λMART w/o d", "Bi-λMART")


def table4_rows(per_query: pd.DataFrame) -> list[str]:
    """The rows of `TABLE4_ROWS` that ``per_query`` holds, in Table 4's order."""
    return [m for m in TABLE4_ROWS if m in set(per_query.model)]


def _table5_rows(per_query: pd.DataFrame, names) -> tuple[list[str], list[str], list[str]]:
    # Table 5's rows, the networks † is tested against and the trees * is.
    softmax = [n for n in names if NEURAL_MODELS[n].loss == "softmax"]
    trees = [m for m in ("GBT_Softmax", "Bi-GBT_Softmax") if m in set(per_query.model)]
    return softmax + trees, softmax, [m for m in ("GBT_Softmax",) if m in trees]


def table5(per_query: pd.DataFrame, names) -> MarkedTable:
    """Table 5: the networks of ``names`` trained with the softmax loss, then notebook 06's
    softmax trees present in ``per_query``, marked as the paper marks (`paper_marks`: †
    against every network, * against GBT_Softmax)."""
    return paper_marks(per_query, *_table5_rows(per_query, names))


def table5_pvalues(per_query: pd.DataFrame, names) -> pd.DataFrame:
    """The tests behind `table5`'s marks with Holm's correction beside them
    (`paper_marks_pvalues`)."""
    return paper_marks_pvalues(per_query, *_table5_rows(per_query, names))


def paper_marks(per_query: pd.DataFrame, rows, neural, trees, *, alpha: float = 0.01) -> MarkedTable:
    """Table 5's layout: mean NDCG@k of ``rows`` (model x metric), a † where the row is
    significantly better than *every* model of ``neural`` and a * where it is better than
    every model of ``trees`` (two-sided paired t-test p < ``alpha`` with a positive mean
    difference, the paper's test; a row is not tested against itself). A
    `ltrlib.metrics.MarkedTable`: the marks are booleans (``marked_†``, ``marked_*``)
    until the table is written."""
    rows, neural, trees = list(rows), list(neural), list(trees)
    cells, tests = [], []
    for metric, block in per_query.groupby("metric", sort=False):
        wide = block.pivot_table(index="qid", columns="model", values="value", sort=False)
        wide = wide[[m for m in dict.fromkeys(rows + neural + trees)]]
        # One-sided at alpha/2 in the direction of the difference = two-sided p < alpha and better.
        table = paired_tests(wide, {m: m for m in neural + trees}, alpha=alpha / 2, alternative="greater")
        tests.append(table.assign(metric=metric))
        beats = {(r.model, r.baseline) for r in table.itertuples() if r.significant}
        for m in rows:
            marks = {}
            for symbol, group in (("†", neural), ("*", trees)):
                others = [g for g in group if g != m]
                marks[f"marked_{symbol}"] = bool(others) and all((m, g) in beats for g in others)
            cells.append({"model": m, "metric": metric, "mean": float(wide[m].mean()), **marks})
    numbers = pd.DataFrame(cells, columns=["model", "metric", "mean", "marked_†", "marked_*"])
    tests = pd.concat(tests, ignore_index=True) if tests else pd.DataFrame()
    return MarkedTable(numbers, ("†", "*"), tests=tests, order=tuple(rows), superscript=False,
                       named_columns=False)


def paper_marks_pvalues(per_query: pd.DataFrame, rows, neural, trees, *, alpha: float = 0.01) -> pd.DataFrame:
    """The tests behind `paper_marks`' marks, with Holm's correction beside them: one row per
    cutoff, row of the table and model it is tested against (``metric, model, baseline,
    mark, diff, p, marked, p_holm, marked_holm``). ``mark`` is the symbol the test feeds (†:
    ``baseline`` is in ``neural``, *: in ``trees``); ``p`` the two-sided paired t-test's over
    the test queries and ``marked`` ``p < alpha`` with a positive difference (a cell carries
    its symbol when every test feeding it is marked); ``p_holm`` Holm's step-down over the
    table's family, every test behind a mark it could print (ours: the paper corrects
    nothing, and the table keeps its marks) and ``marked_holm`` the test's mark under it."""
    rows, neural, trees = list(rows), list(neural), list(trees)
    baselines = list(dict.fromkeys(neural + trees))
    tests = compare(per_query, baselines, by="metric", models=list(dict.fromkeys(rows + baselines))).differences()
    tests = tests[tests.model.isin(rows) & (tests.model != tests.baseline)].reset_index(drop=True)
    tests["mark"] = np.where(tests.baseline.isin(neural), "†", "*")
    tests["marked"] = (tests.p < alpha) & (tests["diff"] > 0)
    tests["p_holm"] = corrected(tests.p.to_numpy(dtype=float))
    tests["marked_holm"] = (tests.p_holm < alpha) & (tests["diff"] > 0)
    return tests[["metric", "model", "baseline", "mark", "diff", "p", "marked", "p_holm", "marked_holm"]]


def budget_caption(trials: int, max_steps: int, max_width: int | None = None) -> str:
    """The networks' budget as the neural notebook's captions state it: trials, the first at
    the paper's point, the step cap, and the layer cap when there is one."""
    cap = f", layers capped at {max_width}" if max_width else ""
    return (f"neural networks: {trials} trial(s) each, the first at the paper's Tables 6-7 point, "
            f"at most {max_steps} steps{cap}")


def network_curves(fitted: Mapping[str, FittedModel], split: str = "stage 2", cutoff: int = 5) -> pd.DataFrame:
    """Validation NDCG@cutoff at every evaluation of each network, in the layout
    `ltrlib.plots.validation_curves` draws (``split, model, tree, metric, value, best``;
    ``tree`` holds the training step)."""
    parts = []
    for name, f in fitted.items():
        curve = np.asarray(f.model.curve, dtype=np.float64)
        if curve.size == 0:
            continue
        step = np.asarray(f.model.curve_steps, dtype=np.int64)
        parts.append(pd.DataFrame({"split": split, "model": name, "tree": step, "metric": f"ndcg@{cutoff}",
                                   "value": curve, "best": step == f.best_iteration}))
    return pd.concat(parts, ignore_index=True) if parts else \
        pd.DataFrame(columns=["split", "model", "tree", "metric", "value", "best"])


def tree_rows(path, per_query: pd.DataFrame, stage1: str = STAGE1_ROW) -> tuple[pd.DataFrame, str]:
    """Notebook 06's per-query test results of its main run (``path``, its
    ``per_query_test.parquet``) without its stage-1 row, and a sentence saying what was
    read. They are paired with ``per_query`` (ours, which holds the ``stage1`` row) only
    when both stage-1 rows agree query by query, i.e. both re-ranked the same lists;
    otherwise, or when the file is absent, the frame is empty and the sentence says why."""
    from pathlib import Path

    empty = per_query.iloc[:0]
    path = Path(path)
    if not path.exists():
        return empty, f"{path} is absent (notebook 06 has not run in this run): the tables hold the networks only"
    theirs = pd.read_parquet(path)
    theirs = theirs[theirs.variant == "main"].drop(columns="variant")
    key = ["metric", "qid"]
    a = per_query[per_query.model == stage1].set_index(key).value
    b = theirs[theirs.model == stage1].set_index(key).value
    if a.empty or not a.index.sort_values().equals(b.index.sort_values()) \
            or not np.allclose(a.sort_index().to_numpy(), b.sort_index().to_numpy(), atol=1e-9):
        return empty, (f"{path} re-ranked other lists than this notebook (its stage-1 NDCG per test query differs: "
                       "another folds, top_k, stage2_features or stage 1?): the tables hold the networks only")
    trees = theirs[theirs.model != stage1]
    return trees[per_query.columns], (f"notebook 06's {trees.model.nunique()} tree models read from {path}, "
                                      f"on the same {a.index.get_level_values('qid').nunique()} test lists")


def ranker_means(per_query: pd.DataFrame, metric: str = "ndcg@5") -> pd.DataFrame:
    """Each network's and tree model's mean test ``metric`` and its gap to the best network
    trained with the same loss, with the gap's paired 95 % t-interval over the test queries
    (``model, loss, kind, mean, gap, gap_low, gap_high, queries``; ``kind``: network or
    tree), what `ltrlib.plots.ranker_means` draws. Rows it cannot place (the stage-1 row,
    oracles) are left out."""
    from scipy import stats

    wide = per_query[per_query.metric == metric].pivot_table(index="qid", columns="model", values="value",
                                                              sort=False)
    kinds = {m: (NEURAL_MODELS[m].loss, "network") if m in NEURAL_MODELS else (TREE_LOSSES[m], "tree")
             for m in wide.columns if m in NEURAL_MODELS or m in TREE_LOSSES}
    rows = []
    for model, (loss, kind) in kinds.items():
        networks = [m for m, (lo, k) in kinds.items() if lo == loss and k == "network"]
        best = max(networks, key=lambda m: wide[m].mean()) if networks else model
        d = (wide[model] - wide[best]).dropna().to_numpy(np.float64)
        half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else np.nan
        rows.append({"model": model, "loss": loss, "kind": kind, "mean": float(wide[model].mean()),
                     "best_network": best, "gap": d.mean(), "gap_low": d.mean() - half, "gap_high": d.mean() + half,
                     "queries": d.size})
    return pd.DataFrame(rows, columns=["model", "loss", "kind", "mean", "best_network", "gap", "gap_low", "gap_high",
                                       "queries"])
