"""Algorithm 1's rounds, compiled: every client's local PDGD updates, then FedAvg, for a
stretch of rounds in one call (`ltrlib.foltr.federated` calls it once per stretch between
two offline evaluations).

The clients' views reach the kernel as one flat layout (`flat_views`): the rows and labels
of every client one after another, query ``g``'s documents ``rows[q_lo[g]:q_hi[g]]``, and
client ``c``'s queries ``client_q[c] .. client_q[c + 1] - 1``. Each client keeps its own
Generator (a `numba.typed.List` of them), so the random streams are those of one call per
client and round: the same seed gives the same numbers, to the bit, as the Python round
loop this replaces (tests/foltr/test_rounds.py holds that loop and checks it).

Sums that reach a result are taken in numpy's order (`numpy_sum`: its pairwise
summation), and FedAvg is the same BLAS product as ``(counts / n) @ models``.
"""

from __future__ import annotations

import numba
import numpy as np

from ltrlib.foltr.pdgd import client_interactions, interaction_buffers


@numba.njit(cache=True, nogil=True)
def _block_sum(a, lo, n):
    # numpy's pairwise_sum for float64 up to 128 terms (numpy/_core/src/umath/
    # loops_utils.h.src): a plain loop under 8 terms, eight accumulators up to 128.
    if n < 8:
        res = -0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - (n % 8):
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@numba.njit(cache=True, nogil=True)
def _pairwise_sum(a, lo, n):
    # Above 128 terms numpy sums two halves (the first a multiple of 8 long) and adds them.
    # The recursion is unrolled onto a stack of frames: numba's cache cannot reload a
    # recursive function (it crashes the process).
    if n <= 128:
        return _block_sum(a, lo, n)
    f_lo, f_n = np.empty(64, dtype=np.int64), np.empty(64, dtype=np.int64)
    f_left, f_right = np.empty(64), np.zeros(64, dtype=np.bool_)  # the left half's sum; on the right half
    depth = 0
    f_lo[0], f_n[0], f_right[0] = lo, n, False
    while True:
        half = f_n[depth] // 2
        half -= half % 8
        c_lo, c_n = (f_lo[depth] + half, f_n[depth] - half) if f_right[depth] else (f_lo[depth], half)
        if c_n > 128:
            depth += 1
            f_lo[depth], f_n[depth], f_right[depth] = c_lo, c_n, False
            continue
        v = _block_sum(a, c_lo, c_n)
        while f_right[depth]:  # a right half done: its frame's sum goes up
            v = f_left[depth] + v
            if depth == 0:
                return v
            depth -= 1
        f_left[depth], f_right[depth] = v, True


@numba.njit(cache=True, nogil=True)
def numpy_sum(a, n):
    """``a[:n].sum()`` as numpy computes it, bit for bit (a test holds the two alike)."""
    return 0.0 + _pairwise_sum(a, 0, n)


def flat_views(views) -> dict[str, np.ndarray]:
    """The clients' views as the kernel's flat layout (see the module docstring)."""
    row_base = np.cumsum([0] + [len(v.rows) for v in views])
    starts = [v.q_off[:-1] + base for v, base in zip(views, row_base)]
    ends = [v.q_off[1:] + base for v, base in zip(views, row_base)]
    return dict(
        rows=np.concatenate([v.rows for v in views]), labels=np.concatenate([v.labels for v in views]),
        q_lo=np.concatenate(starts), q_hi=np.concatenate(ends), ideal=np.concatenate([v.ideal for v in views]),
        client_q=np.cumsum([0] + [v.n_queries for v in views]).astype(np.int64),
        n_updates=np.array([v.n_updates for v in views], dtype=np.int64),
        choice_off=np.cumsum([0] + [len(v.model_choices) for v in views]).astype(np.int64),
        choices=np.concatenate([v.model_choices for v in views]))


@numba.njit(cache=True, nogil=True)
def play_rounds(t0, t1, kind, H, lr, mu, prox_always, fedper, w_global, init_out, local_out, X, rows, labels,
                q_lo, q_hi, ideal, client_q, n_updates, choice_off, choices, click_kinds, click_c, click_s,
                click_eta, rng_clients, rng_sample, client_models, online):
    """Rounds ``t0 .. t1 - 1``: in client order, each client copies ``w_global`` (under FedPer
    with its own output layer ``local_out[c]``, the last ``H`` parameters), performs its
    ``n_updates[c]`` interactions, and then the server averages the client vectors weighted
    by the interactions each performed (none performed: ``w_global`` stays). ``online[t]``
    gets the mean over clients of each client's mean online NDCG@10 (NaN stays where no
    client interacted). Updates ``w_global``, ``local_out`` and ``online`` in place;
    returns the interactions performed."""
    n_clients = len(n_updates)
    n_params = len(w_global)
    out_lo = n_params - H
    max_n = 1
    for g in range(len(q_lo)):
        max_n = max(max_n, q_hi[g] - q_lo[g])
    buffers = interaction_buffers(max_n, w_global, kind, H)
    online_buf = np.zeros(max(1, n_updates.max()))
    client_means = np.empty(n_clients)
    counts = np.zeros(n_clients)
    interactions = 0
    for t in range(t0, t1):
        n_active = 0
        for c in range(n_clients):
            w = client_models[c]
            w[:] = w_global
            if fedper:
                w[out_lo:] = local_out[c]
            n_c = client_interactions(kind, H, w, w_global, mu, prox_always, lr, n_updates[c], X, rows, labels,
                                      q_lo, q_hi, ideal, client_q[c], client_q[c + 1],
                                      choices[choice_off[c]:choice_off[c + 1]], click_kinds, click_c, click_s,
                                      click_eta, rng_clients[c], rng_sample, online_buf, buffers)
            counts[c] = n_c
            if fedper:
                local_out[c] = w[out_lo:]
            if n_c:
                client_means[n_active] = numpy_sum(online_buf, n_c) / n_c
                n_active += 1
        total = numpy_sum(counts, n_clients)
        interactions += int(total)
        if total > 0:
            w_global[:] = np.dot((counts / total).astype(client_models.dtype), client_models)
        if fedper:
            # The averaged output layers are discarded: nothing of a client's own layer
            # reaches the server's vector or another client.
            w_global[out_lo:] = init_out
        if n_active:
            online[t] = numpy_sum(client_means, n_active) / n_active
    return interactions
