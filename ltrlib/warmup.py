"""Numba's compiled kernels, built once into its on-disk cache before anything else runs.

ltrlib's hot paths (the metrics, the SVMlight reader and writer, Bi-LambdaMART's objective
and pair rows, FOLTR's simulator, the click logs) and ranx's (rank fusion, evaluation) are
numba functions with ``cache=True``: the first process that calls one compiles it and
writes the result to numba's cache, and every later process reads it back. On a fresh
clone (a fresh virtual environment: ranx's cache lives beside its sources) nothing is there
yet, so the first notebook kernels and test workers compile the same functions at the same
time. Measured on the 2-core reference machine, quiet: a fresh clone's `make test` took
933 s against 700 s with the cache filled (1,765 against 1,318 CPU-seconds), and the tiny
batch's notebook 04 took 100 s instead of 12, compiling ranx.

`compile_kernels` calls each of those paths once, on a small generated collection and one
after another, so the cache is full before any notebook or test needs it. `make install`
runs it (``ltrlib warm-up``), and a user may run it again after changing a kernel. Numba
keys each entry by the function's source, its argument types and the CPU, so what it
writes is what a notebook would have compiled for the same types; a call with other types
still compiles on demand, as before.

JAX's networks are left out: their compiled programs depend on each network's shapes, so
on the data, and JAX keeps them in its own cache (`ltrlib.neural.ranker`).
"""

from __future__ import annotations

import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

__all__ = ["compile_kernels", "STEPS"]


def _collection():
    """A small generated collection (the `tiny` twin's draw at seed 0): every kernel sees
    the dtypes a notebook gives it."""
    from ltrlib.data.synthetic import make_synthetic

    return make_synthetic("tiny", seed=0)


def _scores(data, seed: int = 0) -> np.ndarray:
    """Scores with ties and an order that is neither the labels' nor the rows'."""
    rng = np.random.default_rng(seed)
    return np.round(data.y + rng.normal(0, 1, data.n_docs), 1)


def _metrics(splits, folder: Path) -> None:
    from ltrlib.metrics import evaluate

    for data in (splits.test, splits.vali):
        evaluate(data, _scores(data), metrics=("ndcg@5", "ndcg@10", "ndcg", "map", "map@10", "mrr@10"))


def _svmlight(splits, folder: Path) -> None:
    from ltrlib.data.readers import read_letor
    from ltrlib.data.svmlight import write_svmlight

    path = write_svmlight(splits.test, folder / "test.txt")
    read_letor(path, n_features=splits.test.n_features)
    # Old Mac line breaks (a lone CR) take their own line-splitting kernels.
    old_mac = folder / "test-cr.txt"
    old_mac.write_bytes(path.read_bytes().replace(b"\n", b"\r"))
    read_letor(old_mac, n_features=splits.test.n_features)


def _bivariate(splits, folder: Path) -> None:
    from ltrlib.bivariate import features, objective, pairs, two_stage
    from ltrlib.metrics import ideal_dcg

    data = splits.test.take(np.arange(4))  # a query's pairs grow with its square: a few suffice
    scores = _scores(data)
    offsets = np.asarray(data.offsets, np.int64)
    index = pairs.pair_index(offsets)
    triple = (index.pair_offsets, index.left, index.right)
    two_stage.top_k_mask(scores, offsets, 5)
    features.expand_listwise(data.X, offsets)
    rows = pairs.pair_rows(data.X, index.left, index.right, n_diff=data.n_features)
    pair_scores = rows[:, 0].astype(np.float64)
    item = objective.aggregate(pair_scores, offsets, *triple)
    for loss in ("lambdarank", "softmax"):
        g, h = objective.item_gradients(item, data.y, offsets, loss=loss)
        g, h, c = objective.coupled_gradients(item, data.y, offsets, triple, loss=loss)
        objective.pair_gradients(g, h, offsets, *triple)
        objective.pair_gradients(g, h, offsets, *triple, coupling=c)
    ideal = ideal_dcg(data.y, offsets, 5)
    objective.lambdarank_loss(item, data.y, offsets, ideal)
    objective.mean_ndcg(item, data.y, offsets, ideal, 5)
    objective.softmax_loss(item, data.y, offsets)


def _notebook_defaults(notebook: str) -> dict:
    """The literal defaults of ``notebook``'s parameters cell (those set from the session,
    such as the scale, left out): the warm-up runs what the notebook runs by default."""
    import ast

    from ltrlib import config, runner

    declared = runner.declared_parameters(runner.load_notebook(config.NOTEBOOKS_DIR / f"{notebook}.py"))
    defaults = {}
    for name, parameter in declared.items():
        try:
            defaults[name] = ast.literal_eval(parameter["default"])
        except (ValueError, SyntaxError):
            continue
    return defaults


def _foltr(splits, folder: Path) -> None:
    """Notebook 07's grid at its default settings, two rounds a run: each setting reaches
    the simulator's kernels with its own argument types (lists of click models, a proximal
    term, a server warm-up)."""
    from ltrlib import foltr
    from ltrlib.config import parse_list

    p = _notebook_defaults("07_foltr_noniid")
    data, _ = foltr.load_online_data("synthetic", "", "tiny", 0)
    settings, remedies = foltr.settings_the_data_supports(
        data, parse_list(p["settings"], name="settings"),
        parse_list(p["remedy_settings"], name="remedy_settings", allow_empty=True))
    jobs = foltr.experiment_grid(
        settings, [0], rankers=parse_list(p["rankers"], name="rankers"),
        clicks=parse_list(p["clicks"], name="clicks"), n_rounds=1, eval_every=1, B=p["B"],
        label_overlap=p["label_overlap"], type2_R1_with_10_clients=p["type2_R1_with_10_clients"],
        type2_R1_B_sweep=parse_list(p["type2_R1_B_sweep"], int, "type2_R1_B_sweep", allow_empty=True),
        remedy_settings=remedies, remedy_clicks=parse_list(p["remedy_clicks"], name="remedy_clicks", allow_empty=True),
        mus=parse_list(p["mu_grid"], float, "mu_grid", allow_empty=True), share_fraction=p["share_fraction"],
        warmup_interactions=1)
    # In this process (``n_jobs=1``) and in the notebook's worker processes: joblib hands
    # those the data as read-only memory maps, which numba types apart from writable arrays.
    for n_jobs in sorted({1, p["n_jobs"]}):
        foltr.run_jobs(data, jobs, n_jobs=n_jobs, progress=False)


def _click_logs(splits, folder: Path) -> None:
    from ltrlib.clicklog.logs import simulate_click_log
    from ltrlib.foltr.clicks import pbm, sdbn

    data = splits.train
    for model in (pbm(1.0), sdbn("perfect")):
        simulate_click_log(data, _scores(data), model, 20, seed=0)


def _ranx(splits, folder: Path) -> None:
    """Fusion as notebooks 04-05 run it (`ltrlib.merge.fusion`), and ranx's evaluation of a
    run file as `ltrlib.trec.agreement` runs it."""
    from ltrlib.merge import fusion
    from ltrlib.trec import agreement, docnos, write_qrels, write_run

    data = splits.vali
    scores = {"M1": _scores(data, 1), "M2": _scores(data, 2)}
    for method, norm in fusion.FUSIONS.values():
        fusion.fuse_scores(data, scores, method, norm)
    weights = fusion.tuned_wsum(data, scores)
    fusion.fuse_scores(data, scores, "wsum", "min-max", weights)
    run, qrels = folder / "warm.run.gz", folder / "warm.qrels.gz"
    write_run(run, data.query_ids, data.offsets, scores["M1"], "warm", docnos=docnos(data.query_ids, data.offsets))
    write_qrels(qrels, data.query_ids, data.offsets, data.y)
    agreement(run, qrels)


#: The paths `compile_kernels` runs, by name, in order.
STEPS: dict[str, Callable] = {"metrics": _metrics, "SVMlight": _svmlight, "Bi-LambdaMART": _bivariate,
                              "FOLTR": _foltr, "click logs": _click_logs, "ranx": _ranx}


def compile_kernels(progress: bool = True) -> dict[str, float]:
    """Run every path of `STEPS` once, so numba's cache holds its kernels: the seconds each
    took, by name (compiling where the cache was empty, reading it back where it was not)."""
    from ltrlib.trec import import_ranx

    import_ranx()  # before any kernel: numba's typed containers are cached from here on
    splits = _collection()
    seconds = {}
    with tempfile.TemporaryDirectory(prefix="ltrlib-warm-up-") as tmp, warnings.catch_warnings():
        # The steps' data is odd on purpose (lone CRs, random scores), and ranx's kernels
        # warn of casts as they compile: nothing a user must act on.
        warnings.simplefilter("ignore")
        for name, step in STEPS.items():
            start = time.perf_counter()
            step(splits, Path(tmp))
            seconds[name] = time.perf_counter() - start
            if progress:
                print(f"  {name}: {seconds[name]:.1f} s", flush=True)
    return seconds
