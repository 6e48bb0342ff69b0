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
default notebook timings (`ltrlib.timing.NOTEBOOK_SECONDS`), from a fit of a second or two.
`Estimate` is a batch run's ETA over its notebooks. It trusts the run's own pace only once
enough of the run has finished, and before that says the expectation with a range; the
probe's pace only widens that range (`slow_factor`). The first ``tiny`` run on a loaded
machine showed why (issue 64): the probe read 27.6 where the notebooks ran 1.2-5 times
slower than the table, and an ETA of 4:13:45 at 00:05 came out of a run of 28 minutes.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["ENOUGH_SECONDS", "ENOUGH_SHARE", "ENV_VAR", "LOADED_PACE", "PACE_NOISE", "PROBE_REFERENCE_SECONDS",
           "Estimate", "fitting", "pace", "probe_seconds", "read_log", "seconds", "slow_factor"]

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


#: Seconds each notebook took per scale, by its number (by its name where two notebooks
#: share a number, as the two 06s do): what ``ltrlib run``'s ETA expects of
#: a notebook that no comparable run has recorded (this machine's fitting pace, `pace`, only
#: widens the range the ETA states: `slow_factor`). ``small``: `make reproduce` on a quiet 2-core VM of the kind CI
#: runs on (2,471 s in all, 2026-11-25; ``06_neural_competitors``' 295 s was added with that
#: notebook, so the table sums to 2,765 s); ``tiny``: a tiny batch on a 2-core machine. A
#: scale without figures takes ``small``'s.
NOTEBOOK_SECONDS = {
    "tiny": {"00": 16, "01": 12, "02": 11, "03": 78, "04": 25, "05": 73, "06": 35, "06_neural_competitors": 53,
             "07": 55, "08": 74, "09": 119},
    "small": {"00": 20, "01": 8, "02": 12, "03": 936, "04": 49, "05": 175, "06": 666, "06_neural_competitors": 295,
              "07": 260, "08": 215, "09": 129},
}


#: What `probe_seconds` took on the machine that measured `ltrlib.timing.NOTEBOOK_SECONDS`
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


#: How many times slower than `ltrlib.timing.NOTEBOOK_SECONDS` a loaded machine's notebooks
#: ran: the first ``tiny`` run on a loaded 2-core machine (issue 64), 1.2-5 times per
#: notebook. The top of the range an ETA states before the run's own pace counts.
LOADED_PACE = 5.0
#: The run's own pace counts once its finished notebooks were expected to take this share of
#: the run and at least `ENOUGH_SECONDS`: before that it rests on notebooks 00-02, short and
#: mostly kernel start-up, whose pace alone put a first run's ETA 44 % short at notebook 3.
ENOUGH_SHARE = 0.2
ENOUGH_SECONDS = 60.0


def slow_factor(probe_pace: float) -> float:
    """The top of an expectation's range, as a multiple of it: the probe's pace (`pace`),
    held between the reference's own noise (`PACE_NOISE`) and a loaded machine's worst
    (`LOADED_PACE`). A fit of a second on a loaded machine overstates how much slower whole
    notebooks run (27.6 against 1.2-5), so it widens the range and never moves the estimate."""
    return min(max(float(probe_pace), PACE_NOISE), LOADED_PACE)


class Estimate:
    """The seconds left of a batch run over notebooks with ``expected`` seconds each, as
    notebooks `start` and `finish` by ``clock`` (`time.monotonic`; tests give a fake one).

    * Until the finished notebooks were expected to take `ENOUGH_SHARE` of the run and
      `ENOUGH_SECONDS`, the estimate is the expectation itself, and `bounds` states its range:
      ``1 / PACE_NOISE`` to ``slow`` times it (`slow_factor`).
    * From then on it is the expectation times the run's `pace`: the seconds the finished
      notebooks took over those they were expected to take. No range is stated.
    * A running notebook counts its expected seconds less its own elapsed time, never below 0:
      a notebook that overruns holds the estimate, it does not raise it.
    * Within a notebook the estimate never grows by more than that notebook's elapsed time
      (with several running, by any of theirs): it changes its pace only when a notebook
      finishes, so that can only happen when another notebook finishes beside it.
    """

    def __init__(self, expected: dict[str, float], *, slow: float = PACE_NOISE, clock=time.monotonic):
        self.expected = {name: max(float(s), 0.0) for name, s in expected.items()}
        self.total = sum(self.expected.values())
        self.slow = max(float(slow), 1.0)
        self.clock = clock
        self.running: dict[str, tuple[float, float]] = {}  # name -> (started, the estimate then)
        self.took: dict[str, float | None] = {}  # finished: seconds taken (None: not timed here)
        self._lock = threading.Lock()

    def start(self, name: str) -> None:
        at_start = self.remaining()
        with self._lock:
            self.running[name] = (self.clock(), at_start)

    def finish(self, name: str) -> None:
        """``name`` is done; its seconds count toward the pace when it was started here."""
        with self._lock:
            started = self.running.pop(name, None)
            self.took[name] = None if started is None else self.clock() - started[0]

    def pace(self) -> float | None:
        """Seconds taken per expected second by the finished notebooks, once they rest on
        enough work (see the class docstring); None before."""
        timed = [(took, self.expected.get(name, 0.0)) for name, took in self.took.items() if took is not None]
        expected = sum(e for _, e in timed)
        if not timed or expected < max(ENOUGH_SHARE * self.total, ENOUGH_SECONDS):
            return None
        return sum(t for t, _ in timed) / expected

    def _left(self, factor: float, now: float) -> float:
        left = 0.0
        for name, seconds in self.expected.items():
            if name in self.took:
                continue
            elapsed = now - self.running[name][0] if name in self.running else 0.0
            left += max(factor * seconds - elapsed, 0.0)
        return left

    def remaining(self) -> float:
        """The estimate: seconds left, by the rules of the class docstring."""
        with self._lock:
            now = self.clock()
            pace = self.pace()
            left = self._left(1.0 if pace is None else pace, now)
            for started, at_start in self.running.values():
                left = min(left, at_start + (now - started))
            return round(left, 1)

    def bounds(self) -> tuple[float, float] | None:
        """The range stated beside the estimate while it is the expectation; None once the
        run's own pace counts."""
        point = self.remaining()
        with self._lock:
            if self.pace() is not None:
                return None
            now = self.clock()
            low, high = self._left(1 / PACE_NOISE, now), self._left(self.slow, now)
        return round(min(low, point), 1), round(max(high, point), 1)
