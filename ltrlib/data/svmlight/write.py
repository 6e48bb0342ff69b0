"""Writing a `Dataset` as a LETOR/SVMlight file, or in LightGBM's format with a ``.query``
file: only non-zero features, each as the shortest decimal that reads back to the same
float32. Rows are formatted in parallel by `ltrlib.data.svmlight.kernels._format_rows`."""

from __future__ import annotations

from pathlib import Path

import numba
import numpy as np

from ltrlib.atomic import atomic_path
from ltrlib.data.svmlight.kernels import _KERNEL_LOCK, _format_rows

__all__ = ["write_svmlight", "write_lightgbm"]


def _atomic_write(path: Path, write) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        write(fh)


def _write_rows(ds, fh, with_qid: bool, base: int) -> None:
    X = np.ascontiguousarray(ds.X, dtype=np.float32)
    if not np.all(np.isfinite(X)):
        raise ValueError(f"cannot write {ds.name!r}: X holds NaN or infinite values")
    y = np.ascontiguousarray(ds.y, dtype=np.int32)
    qid = np.ascontiguousarray(ds.qid, dtype=np.int64)
    nnz = np.count_nonzero(X, axis=1)
    # Upper bound per row: label, qid, and per value ' ' + index + ':' + <= 24 chars of float.
    row_ub = 12 + 26 + nnz.astype(np.int64) * 46 + 1
    block_rows = max(1, int((64 << 20) // max(1, int(row_ub.max()))))
    nchunks = 4 * numba.get_num_threads()
    for r0 in range(0, X.shape[0], block_rows):
        r1 = min(X.shape[0], r0 + block_rows)
        ub = row_ub[r0:r1]
        nc = min(nchunks, r1 - r0)
        n = r1 - r0
        cuts = [c * n // nc for c in range(nc + 1)]
        csum = np.concatenate([[0], np.cumsum(ub)])
        bounds = np.array([csum[cuts[c]] for c in range(nc)], dtype=np.int64)
        out = np.empty(int(csum[-1]), dtype=np.uint8)
        used = np.zeros(nc, dtype=np.int64)
        with _KERNEL_LOCK:
            _format_rows(X[r0:r1], y[r0:r1], qid[r0:r1], with_qid, base, bounds, out, used)
        for c in range(nc):
            fh.write(memoryview(out[bounds[c]:bounds[c] + used[c]]))


def write_svmlight(dataset, path, *, zero_based: bool = False, qid: bool = True) -> Path:
    """Write a `Dataset` as a LETOR/SVMlight file, atomically (temp file + rename).

    Only non-zero features are written, as in the published collections, with the shortest
    decimal that reads back to the same float32. Column ``c`` is written as index ``c + 1``
    (``c`` with ``zero_based=True``). ``qid=False`` leaves out the ``qid:`` tokens (LightGBM
    format; see `write_lightgbm`). Categories are not written.
    """
    path = Path(path)
    _atomic_write(path, lambda fh: _write_rows(dataset, fh, qid, 0 if zero_based else 1))
    return path


def write_lightgbm(dataset, path, *, zero_based: bool = False) -> tuple[Path, Path]:
    """Write LightGBM's format: ``path`` without qids and ``path.query`` with group sizes."""
    path = Path(path)
    write_svmlight(dataset, path, zero_based=zero_based, qid=False)
    qpath = path.with_name(path.name + ".query")
    sizes = "".join(f"{int(s)}\n" for s in dataset.group_sizes)
    _atomic_write(qpath, lambda fh: fh.write(sizes.encode()))
    return path, qpath
