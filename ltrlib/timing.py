"""How much of a notebook's wall time goes into fitting models.

`make bench-batch` and every batch run's ``run.json`` report, per notebook, the seconds
spent inside model fitting (gradient-boosted trees, FPDGD's online learning) beside the
notebook's total: the rest is data preparation, evaluation, tables and figures, and that
share says where speed work pays off.

Fitting code wraps itself in :func:`fitting`. The batch runner sets ``LTRLIB_FIT_LOG`` to
a file per notebook before the notebook's kernel starts; each outermost :func:`fitting`
block then appends its seconds to that file as one line (a kernel is a separate process,
so a file is the simplest channel, and an appended line survives a crash of the kernel).
Without the variable, the blocks only add to :data:`seconds` of the running process.

Fits run side by side in worker processes (joblib) inherit the variable. Each line carries
the writer's process and parent ids, and the runner counts only the lines of its own
child, the kernel: the kernel times a side-by-side block as one wall-clock span, and the
workers' overlapping seconds would count the same wall time twice.

`pace` says how fast this machine fits trees against the machine that measured the batch's
default notebook timings (`ltrlib.config.NOTEBOOK_SECONDS`), from a fit of a second or two:
a first batch run on a new machine scales its ETA by it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["ENV_VAR", "PACE_NOISE", "PROBE_REFERENCE_SECONDS", "fitting", "pace", "probe_seconds", "read_log",
           "seconds"]

#: Environment variable naming the file the fitting seconds are appended to.
ENV_VAR = "LTRLIB_FIT_LOG"

#: Seconds spent in outermost `fitting` blocks by this process.
seconds = 0.0

_local = threading.local()


@contextlib.contextmanager
def fitting() -> Iterator[None]:
    """Count the block's wall time as model fitting. Nested blocks count once (the outer)."""
    global seconds
    depth = getattr(_local, "depth", 0)
    _local.depth = depth + 1
    start = time.perf_counter()
    try:
        yield
    finally:
        _local.depth = depth
        if depth == 0:
            elapsed = time.perf_counter() - start
            seconds += elapsed
            log = os.environ.get(ENV_VAR)
            if log:
                with open(log, "a", encoding="utf-8") as fh:
                    fh.write(f"{elapsed:.6f} {os.getpid()} {os.getppid()}\n")


def read_log(path: str | os.PathLike, parent: int | None = None) -> float | None:
    """Total seconds in a fitting log; None if nothing was fitted (no file). ``parent``:
    count only the lines of processes whose parent has this id (the runner's kernel)."""
    p = Path(path)
    if not p.exists():
        return None
    total = 0.0
    for line in p.read_text(encoding="utf-8").splitlines():
        seconds, _pid, ppid = line.split()
        if parent is None or int(ppid) == parent:
            total += float(seconds)
    return total


#: What `probe_seconds` took on the machine that measured `ltrlib.config.NOTEBOOK_SECONDS`
#: (a 2-core VM: three quiet series of seven gave medians of 0.84, 0.62 and 0.80 s).
PROBE_REFERENCE_SECONDS = 0.75
#: A shared VM's fits vary by this factor between runs (the series above; whole notebooks
#: by 30-50 %): a pace within it is noise, and the default timings stand.
PACE_NOISE = 1.3


def probe_seconds() -> float:
    """Seconds of one fixed LightGBM λMART fit, binning included: 300 queries of 40 documents
    with 40 seeded random features, 200 trees, 2 threads (about half a second on the
    reference). LightGBM's trees are most of a
    batch run's time, and how fast a machine grows them is what its ETA needs to know first."""
    import lightgbm as lgb
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.random((300 * 40, 40))
    y = rng.integers(0, 5, len(X))
    start = time.perf_counter()
    data = lgb.Dataset(X, y, group=[40] * 300, params={"verbose": -1})
    lgb.train({"objective": "lambdarank", "num_threads": 2, "verbose": -1, "seed": 0, "deterministic": True,
               "force_row_wise": True}, data, num_boost_round=200)
    return time.perf_counter() - start


def pace() -> float:
    """How many times longer this machine takes to fit than the reference (`probe_seconds`
    over `PROBE_REFERENCE_SECONDS`; 2.0: half as fast), or 1.0 when that is within the
    reference's own run-to-run noise (`PACE_NOISE`)."""
    ratio = probe_seconds() / PROBE_REFERENCE_SECONDS
    return ratio if not 1 / PACE_NOISE <= ratio <= PACE_NOISE else 1.0
