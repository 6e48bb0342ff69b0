"""Independent random streams drawn from one run seed (`stream_seeds`)."""

from __future__ import annotations

__all__ = ["stream_seeds"]


def stream_seeds(seed: int, purpose: str, n: int) -> list[int]:
    """``n`` seeds for ``purpose`` (e.g. ``"foltr runs"``) drawn from a run's ``seed`` through
    ``numpy.random.SeedSequence([seed, crc32(purpose)]).spawn(n)``: independent of every
    other purpose's and of every other run seed's. ``seed + k`` would not be: batch seeds s
    and s + 1 would share the stream of s + 1 (issue 41). Each is a 32-bit integer, what
    LightGBM, XGBoost, JAX and NumPy all accept."""
    import zlib

    import numpy as np

    if n < 0:
        raise ValueError(f"stream_seeds: n = {n} seeds asked for; give zero or more")
    root = np.random.SeedSequence([int(seed), zlib.crc32(purpose.encode())])
    return [int(child.generate_state(1)[0]) for child in root.spawn(n)]
