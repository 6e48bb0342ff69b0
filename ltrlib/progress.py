"""Progress bars for long work: tuning trials, models, cross-validation folds, federated runs.

One helper, so every long loop reports the same way in both places a notebook runs:

* **interactively** (JupyterLab): ``tqdm.auto``, a live widget bar;
* **in a batch run** (the runner sets ``LTRLIB_BATCH``): a plain-text bar on stderr that
  updates at most every `BATCH_INTERVAL` seconds. It lands in the executed notebook as a
  few readable lines (a widget bar would be saved without its state and show nothing), and
  in the terminal with ``ltrlib run --log-output``.

A batch kernel also tells the runner what it is doing. The runner sets `STATUS_ENV` to a
folder per notebook; every process of the kernel (worker processes inherit the variable)
keeps the state of its open bars there, in ``<pid>.json``: each bar's description, count
and total (``tuning Split1.M1``, 3 of 6). `read_status` gathers them, and ``ltrlib run``
shows them beside its own bar. A file is the channel for the reason `ltrlib.timing` gives:
a kernel and its workers are separate processes.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from ltrlib import sessions
from ltrlib.atomic import atomic_write_text

__all__ = ["BATCH_INTERVAL", "STATUS_ENV", "STATUS_INTERVAL", "RunBar", "bar", "fit_status", "read_status"]

#: Seconds between two updates of a batch run's text bar.
BATCH_INTERVAL = 30.0
#: Environment variable naming the folder where a batch kernel's processes keep their bars' state.
STATUS_ENV = "LTRLIB_PROGRESS_DIR"
#: Seconds between two writes of a process's status file while its bars move (opening and
#: closing a bar write at once).
STATUS_INTERVAL = 1.0


def bar(iterable=None, *, total: int | None = None, desc: str = "", enabled: bool = True, **kwargs):
    """A tqdm bar over ``iterable`` (or to `update` by hand), as the module docstring says;
    ``enabled=False`` gives a bar that prints nothing (and reports nothing).

    In a batch run's worker process (a process of the kernel that is no kernel itself: joblib's
    side-by-side tuning) a bar prints nothing, since what it prints reaches no notebook, and
    only reports to the runner; without the runner's `STATUS_ENV` it is off."""
    if sessions.in_batch():
        kwargs = {"file": sys.stderr, "mininterval": BATCH_INTERVAL, "ascii": True, "dynamic_ncols": False,
                  "ncols": 100, **kwargs}
        if "ipykernel" not in sys.modules:
            enabled = enabled and bool(os.environ.get(STATUS_ENV))
            kwargs["file"] = _devnull()
        if enabled and os.environ.get(STATUS_ENV):
            return _status_bar_class()(iterable, total=total, desc=desc, **kwargs)
        from tqdm.std import tqdm
    else:
        from tqdm.auto import tqdm
    return tqdm(iterable, total=total, desc=desc, disable=not enabled, **kwargs)


_DEVNULL: list = []


def _devnull():
    """One null sink per process for a worker's bars (a file per bar would leak a descriptor
    for every trial bar a worker opens)."""
    if not _DEVNULL:
        _DEVNULL.append(open(os.devnull, "w"))  # noqa: SIM115 - lives as long as the process
    return _DEVNULL[0]


class _ProcessStatus:
    """The open bars of this process and the file they are kept in."""

    def __init__(self, folder: Path):
        self.path = folder / f"{os.getpid()}.json"
        self.bars: dict[int, dict] = {}
        self.written = 0.0
        self.pending: threading.Timer | None = None
        # Reentrant: the garbage collector can close a forgotten bar (tqdm's __del__) in the
        # middle of a write, on the same thread, and a plain lock would deadlock there.
        self.lock = threading.RLock()
        self.writing = self.again = False

    def _flush(self) -> None:
        with self.lock:
            self.pending = None
            self._write(True)

    def set(self, key: int, desc: str, n: int, total: int | None, *, now: bool = False,
            detail: str | None = None) -> None:
        """Record a bar's state; ``detail`` (what its postfix says, e.g. a running trial's
        tree count) is kept until replaced."""
        with self.lock:
            entry = self.bars.setdefault(key, {"started": time.time()})
            entry.update(desc=desc, n=int(n), total=None if total is None else int(total))
            if detail is not None:
                entry["detail"] = detail
            self._write(now)

    def drop(self, key: int) -> None:
        with self.lock:
            if self.bars.pop(key, None) is not None:
                self._write(True)

    def _write(self, now: bool) -> None:
        wait = STATUS_INTERVAL - (time.monotonic() - self.written)
        if not now and wait > 0:
            # Too soon after the last write: write the latest state once the interval is over,
            # so a burst of updates ends with its last count on file.
            if self.pending is None:
                self.pending = threading.Timer(wait, self._flush)
                self.pending.daemon = True
                self.pending.start()
            return
        if self.pending is not None:
            self.pending.cancel()
            self.pending = None
        if self.writing:  # reentered (a bar closed by the garbage collector): the outer write redoes it
            self.again = True
            return
        self.writing = True
        try:
            self.again = True
            while self.again:
                self.again = False
                self.written = time.monotonic()
                if self.bars:
                    atomic_write_text(self.path, json.dumps(list(self.bars.values())))
                else:
                    self.path.unlink(missing_ok=True)
        except OSError:  # the runner removed the folder (the notebook ended): nothing to tell
            pass
        finally:
            self.writing = False


_STATUS: dict[tuple[int, str], _ProcessStatus] = {}  # by pid (a forked worker starts its own file) and folder


def _process_status() -> _ProcessStatus:
    key = (os.getpid(), os.environ[STATUS_ENV])
    if key not in _STATUS:
        _STATUS[key] = _ProcessStatus(Path(key[1]))
    return _STATUS[key]


def _status_bar_class():
    """tqdm's text bar, keeping this process's status file up to date as it moves."""
    from tqdm.std import tqdm

    class StatusBar(tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._status = _process_status()  # the file of this process, for the bar's life
            self._reported = self.n
            self._status.set(id(self), self.desc, self.n, self.total, now=True)

        def __iter__(self):
            # tqdm counts an iteration in a local variable and sets ``n`` only when it
            # redraws (every BATCH_INTERVAL here), so the count reported is kept apart.
            for item in super().__iter__():
                yield item
                self._reported += 1
                self._status.set(id(self), self.desc, self._reported, self.total)

        def update(self, n=1):
            shown = super().update(n)
            self._reported = self.n
            self._status.set(id(self), self.desc, self.n, self.total)
            return shown

        def set_postfix_str(self, s="", refresh=True):
            super().set_postfix_str(s, refresh)
            self._status.set(id(self), self.desc, self._reported, self.total, detail=str(s))

        def close(self):
            self._status.drop(id(self))
            super().close()

    return StatusBar


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def _shown(b: dict) -> str:
    """One bar of a notebook's status, as the run's line shows it."""
    return (f"{b['desc']} {b['n']}" + (f"/{b['total']}" if b.get("total") else "")
            + (f" ({b['detail']})" if b.get("detail") else ""))


def read_status(folder: str | os.PathLike) -> list[dict]:
    """The open bars of every process that writes to ``folder`` (`STATUS_ENV`), oldest first:
    dicts with ``desc``, ``n``, ``total``, ``started`` (epoch seconds) and, once its postfix
    was set, ``detail``. The file of a process that has ended (it died with bars open) is
    skipped, and so is a file caught half-replaced. A bar not updated for a long time is
    still shown: a model can take minutes before its first count."""
    bars = []
    folder = Path(folder)
    if not folder.is_dir():
        return bars
    for path in folder.glob("[!.]*.json"):  # not the hidden temporary of a write under way
        try:
            if path.stem.isdigit() and not _alive(int(path.stem)):
                continue
            bars += json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    return sorted(bars, key=lambda b: b.get("started", 0.0))


class RunBar:
    """The bar of a batch run over its notebooks, with an ETA weighted by each notebook's
    expected seconds and, beside it, what the running notebook reports (`read_status`).

    The bar counts expected seconds: a finished notebook adds its whole weight, and the
    running one moves with the clock up to 95 % of its weight, so the bar moves inside a long
    notebook and stalls, rather than overshoots, when the notebook runs slower than expected.
    The ETA is `ltrlib.timing.Estimate`'s: the expectation with its range (``slow``: the
    range's top, `ltrlib.timing.slow_factor`) until enough of the run has finished, then the
    run's own pace; it never grows within a notebook by more than that notebook's elapsed
    time. The line fits the terminal: what the notebook reports is shortened so that the bar
    keeps `MIN_BAR` columns. Without a terminal (CI, a log file) it redraws once a minute.
    """

    #: Columns the bar itself keeps however long the status beside it.
    MIN_BAR = 20

    def __init__(self, expected: dict[str, float], enabled: bool = True, file=None, slow: float | None = None,
                 ncols: int | None = None, clock=None):
        from tqdm.std import tqdm

        from ltrlib import timing

        self.clock = clock or time.monotonic
        self.expected = {name: max(float(s), 1.0) for name, s in expected.items()}
        self.estimate = timing.Estimate(self.expected, slow=timing.PACE_NOISE if slow is None else slow,
                                        clock=self.clock)
        self.file = file if file is not None else sys.stderr
        tty = hasattr(self.file, "isatty") and self.file.isatty()
        self.interval = 1.0 if tty else 60.0
        self.total = round(sum(self.expected.values()), 1)
        self.bar = tqdm(total=self.total, desc="ltrlib run", file=self.file,
                        disable=not enabled, mininterval=self.interval, smoothing=0,
                        ncols=ncols, dynamic_ncols=tty and ncols is None, bar_format=self._format(None))
        self.done = 0.0
        # The notebooks running now (several when the runner runs the batch as a graph,
        # `ltrlib.runner.run_all`'s ``jobs``): name -> (when it started, its status folder).
        self.running: dict[str, tuple[float, Path | None]] = {}
        self._lock = threading.Lock()  # the runner's threads start and finish notebooks
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True) if enabled else None

    def __enter__(self):
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.bar.close()

    def start(self, name: str, status_dir: Path | None = None) -> None:
        """``name`` runs now; its kernel reports into ``status_dir``."""
        self.estimate.start(name)
        with self._lock:
            self.running[name] = (self.clock(), status_dir)
        self._draw()

    def finish(self, name: str) -> None:
        """``name`` is done (or was already): its whole weight counts."""
        self.estimate.finish(name)
        with self._lock:
            self.done += self.expected.get(name, 0.0)
            self.running.pop(name, None)
        self._draw()

    def position(self) -> float:
        """Expected seconds done: finished notebooks, and the clock of each running one."""
        now = self.clock()
        with self._lock:
            moving = sum(min(now - started, 0.95 * self.expected.get(name, 1.0))
                         for name, (started, _) in self.running.items())
            return min(self.done + moving, self.total)

    def remaining(self) -> float | None:
        """The seconds the bar says are left (its ETA, `ltrlib.timing.Estimate.remaining`)."""
        return self.estimate.remaining()

    @staticmethod
    def _format(remaining: float | None, bounds: tuple[float, float] | None = None) -> str:
        from tqdm.std import tqdm

        def clock(seconds: float) -> str:
            return tqdm.format_interval(seconds).replace("{", "").replace("}", "")

        eta = "?" if remaining is None else clock(remaining)
        if bounds is not None:
            eta += f" ({clock(bounds[0])}-{clock(bounds[1])})"
        return "{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<" + eta + "{postfix}]"

    def _columns(self) -> int | None:
        """The line's width: the terminal's now, or the fixed ``ncols``; None without either."""
        if callable(self.bar.dynamic_ncols):
            return self.bar.dynamic_ncols(self.bar.fp)
        return self.bar.ncols

    def _follow(self) -> None:
        while not self._stop.wait(self.interval):
            self._draw()

    def _draw(self) -> None:
        if self.bar.disable:
            return
        with self._lock:
            running = list(self.running.items())
        statuses = []
        for name, (_, status_dir) in running:
            bars = read_status(status_dir) if status_dir is not None else []
            statuses.append((name, bars))
        self.bar.n = round(self.position(), 1)
        self.bar.bar_format = self._format(self.remaining(), self.estimate.bounds())
        columns = self._columns()
        room = None if columns is None else columns - self._fixed_width() - self.MIN_BAR
        self.bar.set_postfix_str(fit_status(statuses, room), refresh=False)
        self.bar.refresh()

    def _fixed_width(self) -> int:
        """Columns of the line without its bar and status: what the status and bar share the rest of."""
        from tqdm.std import tqdm
        from tqdm.utils import disp_len

        shown = dict(self.bar.format_dict, ncols=None, postfix=None,
                     bar_format=self.bar.bar_format.replace("{bar}", ""))
        return disp_len(tqdm.format_meter(**shown)) + len(", ")  # tqdm puts ", " before the status


def fit_status(statuses: list[tuple[str, list[dict]]], room: int | None) -> str:
    """What the running notebooks report, as the run's line shows it, in at most ``room``
    columns (None: no limit): ``03_client_models: models, 2 at a time 4/9 · tuning Split1.M1
    3/6 (trial 3: 340 trees)``. Too long, it is shortened in steps that keep what matters
    most: first the running trials' details go, then each notebook keeps only its innermost
    bar (the last opened), then each notebook's part is cut to an equal share with "…", then
    only the notebooks' names are left, and last the text itself is cut."""
    def parts(detail: bool, innermost: bool) -> list[str]:
        out = []
        for name, shown in statuses:
            shown = shown[-1:] if innermost else shown
            text = " · ".join(_shown(b if detail else {**b, "detail": None}) for b in shown)
            out.append(name + (": " + text if text else ""))
        return out

    def cut(text: str, width: int) -> str:
        return text if len(text) <= width else text[:max(width - 1, 0)] + "…" if width > 0 else ""

    text = " | ".join(parts(True, False))
    if room is None or len(text) <= room:
        return text
    for detail, innermost in ((False, False), (False, True)):
        text = " | ".join(parts(detail, innermost))
        if len(text) <= room:
            return text
    share = (room - len(" | ") * (len(statuses) - 1)) // max(len(statuses), 1)
    if all(share > len(name) + len(": ") for name, _ in statuses):
        return " | ".join(cut(part, share) for part in parts(False, True))
    return cut(" | ".join(name for name, _ in statuses), room)
