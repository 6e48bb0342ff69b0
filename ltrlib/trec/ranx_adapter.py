"""ranx, read through one door: `import_ranx` keeps numba's threading layer and caches
ranx's typed containers; `ranx_run` and `ranx_qrels` read our files (plain or gzip) as
ranx's ``Run`` and ``Qrels``; `ranx_keys` gives document keys of one width, so numba
compiles ranx's kernels once per environment."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ltrlib.trec.files import read_qrels, read_run

__all__ = ["RANX_KEY_DIGITS", "import_ranx", "qrels_frame_to_ranx", "ranx_keys", "ranx_qrels", "ranx_run",
           "run_frame_to_ranx"]


def import_ranx():
    """``import ranx``, keeping numba's threading layer as it was. ranx sets numba's layer to
    ``workqueue`` when imported; that layer aborts the process when two threads launch
    parallel kernels at once, as FOLTR's Dask threads do with our NDCG kernel (a pytest
    worker died of it). Every import of ranx in ltrlib and its tests goes through here."""
    import numba

    layer = numba.config.THREADING_LAYER
    try:
        import ranx
    finally:
        numba.config.THREADING_LAYER = layer
    _cache_typed_containers()
    return ranx


@functools.cache
def _cache_typed_containers() -> None:
    """Let numba keep its typed ``Dict`` and ``List`` operations on disk, as it keeps ranx's
    own kernels (``cache=True``). ranx holds runs and qrels in typed dicts, whose operations
    numba compiles in every new process: about 9 of the 11 s that notebook 04's fusions took
    at `tiny` (quiet), again in each kernel and test worker that touches ranx; read from
    numba's cache, the fusions took 2.8 s. Numba keys each entry by the function's source,
    the argument types and the CPU, as for any cached function. Where no cache folder is
    writable, compiling each time is left as it was."""
    from numba.core.dispatcher import Dispatcher
    from numba.typed import typeddict, typedlist

    for module in (typeddict, typedlist):
        for operation in vars(module).values():
            if isinstance(operation, Dispatcher) and operation.py_func.__module__ == module.__name__:
                try:
                    operation.enable_caching()
                except RuntimeError:  # numba found no writable cache folder for it
                    return


def ranx_run(path: str | os.PathLike):
    """A run file, plain or gzip-compressed, as a ``ranx.Run`` named by its tag (ranx's own
    ``Run.from_file`` reads plain files only; the Reporter writes ``.run.gz``)."""
    run = read_run(path)
    return run_frame_to_ranx(run, run.tag.iloc[0] if len(run) else Path(path).name)


def ranx_qrels(path: str | os.PathLike):
    """A qrels file, plain or gzip-compressed, as a ``ranx.Qrels``."""
    return qrels_frame_to_ranx(read_qrels(path))


def run_frame_to_ranx(run: pd.DataFrame, name: str):
    """A run as `ltrlib.trec.read_run` reads it, as a ``ranx.Run`` named ``name``."""
    ids = {"qid": object, "docno": object}  # ranx asks for object columns, not pandas' strings
    out = import_ranx().Run.from_df(run.astype(ids), q_id_col="qid", doc_id_col="docno", score_col="score")
    out.name = name
    return out


def qrels_frame_to_ranx(qrels: pd.DataFrame):
    """Qrels as `ltrlib.trec.read_qrels` reads them, as a ``ranx.Qrels``."""
    qrels = qrels.astype({"qid": object, "docno": object})
    return import_ranx().Qrels.from_df(qrels, q_id_col="qid", doc_id_col="docno", score_col="rel")


#: Digits of the document keys our own ranx calls use (`ranx_keys`): the fusions' and
#: `agreement`'s. ranx turns document ids into numpy strings as wide as the longest, and
#: numba compiles its kernels anew for each width, so ids whose width varied with the
#: collection and the notebook (as `docnos` do) compiled ranx again for each of them: about
#: 30 s a width at `tiny`, paid by every fresh environment. One width is compiled once per
#: environment and read from numba's cache after that.
RANX_KEY_DIGITS = 12


def ranx_keys(codes) -> np.ndarray:
    """Document keys of `RANX_KEY_DIGITS` digits for non-negative integer ``codes`` (rows,
    or codes of `pandas.factorize`), as the object strings ranx wants. Zero-padded, so
    their lexical order is the codes' order. ValueError for a code too wide."""
    codes = np.asarray(codes, dtype=np.int64)
    if codes.size and (codes.min() < 0 or codes.max() >= 10**RANX_KEY_DIGITS):
        raise ValueError(f"ranx_keys: codes must lie in [0, 10^{RANX_KEY_DIGITS}); got {codes.min()}..{codes.max()}")
    return np.char.zfill(codes.astype(str), RANX_KEY_DIGITS).astype(object)
