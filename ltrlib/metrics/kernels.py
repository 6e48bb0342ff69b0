"""NDCG's gain, discount and DCG: the one compiled definition every user of NDCG calls.

The metrics (`ltrlib.metrics.ranking`), PDGD's online NDCG and ideal DCGs
(`ltrlib.foltr.pdgd`) and the LB objectives' λRank weights and early-stopping NDCG
(`ltrlib.bilambdamart.objective`) all compute

    gain(label)  = 2**label - 1
    discount(r)  = 1 / log2(r + 2)          r the 0-based rank
    DCG@k        = sum_{r < k} gain(label_r) / log2(r + 2)

from the functions below, so they cannot drift apart. What differs between the users is
not here but at their call sites, as explicit choices: the order a list is ranked in (a
stable descending sort of the scores in the metrics and the LB objective, a Plackett-Luce
sample in PDGD), the cutoff, and the score of a query whose ideal DCG is 0 (the metrics'
``no_relevant``, 1.0 for the LB early stopping, 0.0 for PDGD's online NDCG).

A DCG term divides the gain by ``log2(r + 2)`` rather than multiplying it by
``discount(r)``: the two differ in the last bit for some ranks, and the division is what
ranx and trec_eval compute and what the metrics always reported. ``discount`` itself is
used where a difference of discounts is needed (λRank's |ΔNDCG|).

These are numba functions meant to be called from other numba functions (numba compiles
them into the caller), as are others across the package (FPDGD's rounds call its PDGD
kernels, which call the rankers' and the click models'). Numba's on-disk cache of a caller
is keyed by the caller's own source file, so it would keep serving code compiled with an
older version of a callee's file (after an edit, or a ``git pull`` that changes only that
file). `_drop_stale_caches` therefore removes the package's numba cache files whenever any
of its modules that use numba changes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from numba import njit


def _drop_stale_caches() -> None:
    """Delete every numba cache file (``__pycache__/*.nbi``, ``*.nbc``) under the ``ltrlib``
    package when its modules that use numba differ from the ones the caches were compiled
    with, recorded as a stamp ``__pycache__/numba-<hash>.stamp`` beside this file (a hash of
    those modules' contents, about 5 ms at import); the next call of each cached function
    compiles it again. Best effort: a read-only install keeps its caches (numba then caches
    elsewhere, and an installed release changes every file at once)."""
    here = Path(__file__)
    package, cache_dir = here.parents[1], here.parent / "__pycache__"
    try:
        digest = hashlib.blake2b(digest_size=8)
        for path in sorted(package.rglob("*.py")):
            text = path.read_bytes()
            if b"numba" in text:
                digest.update(path.relative_to(package).as_posix().encode() + b"\0" + text)
        stamp = cache_dir / f"numba-{digest.hexdigest()}.stamp"
        if stamp.exists():
            return
        for path in package.rglob("__pycache__/*.nb[ic]"):
            path.unlink(missing_ok=True)
        for old in (*cache_dir.glob("numba-*.stamp"), *cache_dir.glob("kernels-*.stamp")):
            old.unlink(missing_ok=True)
        cache_dir.mkdir(exist_ok=True)
        stamp.touch()
    except OSError:
        pass


_drop_stale_caches()

__all__ = [
    "dcg_term",
    "discount",
    "gain",
    "query_dcg",
    "query_ideal_dcg",
    "sorted_ideal_dcg",
]


@njit(cache=True, inline="always")
def gain(label):
    """``2**label - 1`` (labels from 1024 on overflow; `check_gain_labels` refuses them)."""
    return 2.0**label - 1.0


@njit(cache=True, inline="always")
def discount(rank):
    """``1 / log2(rank + 2)`` for the 0-based ``rank``."""
    return 1.0 / np.log2(rank + 2.0)


@njit(cache=True, inline="always")
def dcg_term(label, rank):
    """One document's DCG contribution at the 0-based ``rank`` (see the module docstring
    on dividing rather than multiplying by `discount`)."""
    return gain(label) / np.log2(rank + 2.0)


@njit(cache=True)
def query_dcg(labels, order, k):
    """DCG@k of one query: ``labels`` its documents' labels, ``order`` the positions into
    ``labels`` from rank 0 down, ``k`` at most ``len(order)`` (the caller applies cutoffs)."""
    total = 0.0
    for r in range(k):
        total += dcg_term(labels[order[r]], r)
    return total


@njit(cache=True)
def sorted_ideal_dcg(ascending, k):
    """Ideal DCG@k of one query from its labels sorted ascending (read from the end);
    ``k`` larger than the list means the whole list. For callers that sort once and need
    several cutoffs."""
    n = ascending.size
    total = 0.0
    for r in range(min(k, n)):
        total += dcg_term(ascending[n - 1 - r], r)
    return total


@njit(cache=True)
def query_ideal_dcg(labels, k):
    """Ideal DCG@k of one query's labels (any order); ``k`` larger than the list means the
    whole list."""
    return sorted_ideal_dcg(np.sort(labels), k)
