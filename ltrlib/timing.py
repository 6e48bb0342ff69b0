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
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["ENV_VAR", "fitting", "read_log", "seconds"]

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
