"""The sampled content fingerprint of a ranking file, which the cache key holds.

SHA-256 of the file's size, its first and last MiB and 16 evenly spaced 64 KiB blocks
(files up to 4 MiB whole): cheap enough to pay on every load, unlike hashing a 1.4 GB file.
`ltrlib.data.cache` says what it catches and what it does not.

Two ways to compute the same value, one definition of the blocks: `fingerprint_file` reads
the blocks from disk (the cache's check of a file it has not opened), `fingerprint_bytes`
hashes them in a buffer already mapped for parsing (no second read).
"""

from __future__ import annotations

import hashlib
import os

__all__ = ["fingerprint_blocks", "fingerprint_bytes", "fingerprint_file"]


def fingerprint_blocks(size: int) -> list[tuple[int, int]]:
    """(offset, length) of the blocks the sampled fingerprint hashes: the first and last MiB
    and 16 evenly spaced 64 KiB blocks. Small files (<= 4 MiB) are hashed whole."""
    if size <= 4 << 20:
        return [(0, size)]
    mib, blk = 1 << 20, 64 << 10
    blocks = [(0, mib)]
    span = size - 2 * mib - blk
    blocks += [(mib + span * (k + 1) // 17, blk) for k in range(16)]
    blocks.append((size - mib, mib))
    return blocks


def fingerprint_bytes(data) -> str:
    """Sampled content fingerprint of an in-memory file (same value as `fingerprint_file`)."""
    mv = memoryview(data).cast("B")
    h = hashlib.sha256()
    h.update(str(len(mv)).encode())
    for off, n in fingerprint_blocks(len(mv)):
        h.update(mv[off:off + n])
    return h.hexdigest()


def fingerprint_file(path, size: int | None = None) -> str:
    """Sampled content fingerprint of a file on disk; ``size`` saves a ``stat`` when known."""
    size = os.stat(path).st_size if size is None else size
    h = hashlib.sha256()
    h.update(str(size).encode())
    with open(path, "rb") as fh:
        for off, n in fingerprint_blocks(size):
            fh.seek(off)
            h.update(fh.read(n))
    return h.hexdigest()
