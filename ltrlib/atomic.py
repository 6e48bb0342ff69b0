"""Atomic file writes: a killed run never leaves a half-written report, model or data file.

Everything the project writes goes to a temporary file beside its destination first and is
then renamed onto it (``os.replace`` is atomic within one file system). The temporary file
gets the permissions a plain ``open(path, "w")`` would give (0666 minus the umask), not
``mkstemp``'s owner-only 0600, so that reports and exported data stay readable by the lab.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "atomic_write_text", "default_file_mode", "exclusive"]


def default_file_mode() -> int:
    """The mode a new file gets from ``open``: 0o666 without the process's umask bits."""
    # os.umask can only be read by setting it; put it straight back.
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, replace: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; move it onto ``path`` only if the block succeeds.

    The temporary file lives in the destination directory so that ``os.replace`` is a rename
    within one file system, which is atomic. On any exception it is removed and ``path`` is
    left as it was. Its name keeps the destination's suffix because some writers (matplotlib's
    ``savefig``) choose the format from it.

    ``replace=False``: never replace a file already at ``path`` (`FileExistsError`, naming it,
    and ``path`` untouched), for writers that add to a record and must not rewrite it. The
    finished file is then hard-linked to ``path``, which, unlike checking first and renaming,
    cannot overwrite a file another process created in between.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        os.chmod(tmp, default_file_mode())
        yield tmp
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise FileExistsError(f"{path} already exists; it is left as it was") from None
    finally:
        # After a successful replace the temporary name no longer exists.
        tmp.unlink(missing_ok=True)


def atomic_write_text(path: str | os.PathLike, text: str, *, replace: bool = True) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically and return the path (``replace``: as in
    `atomic_path`)."""
    path = Path(path)
    with atomic_path(path, replace=replace) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


@contextlib.contextmanager
def exclusive(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock for a read-modify-write of ``path`` (a run's ``metrics.json``
    that notebooks run side by side update, `ltrlib.runner.run_all`'s ``jobs``): an ``flock``
    on ``<path>.lock``, released when the block ends or the process dies. Without flock
    (Windows) it locks nothing: there the batch runs one notebook at a time."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    lock = Path(path).with_name(Path(path).name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
