"""Pairwise Differentiable Gradient Descent (Oosterhuis & de Rijke 2018), compiled.

One interaction (``pdgd_interaction``), all on flat arrays:

1. score the query's documents;
2. sample a list of ``min(10, n)`` documents by Plackett-Luce sampling without replacement
   from softmax(scores). At each position the scores of the documents not yet placed are
   shifted by their maximum before exponentiating, so the softmax never overflows nor
   underflows to an all-zero denominator; the per-position maximum ``m_p`` and shifted sum
   ``S_p`` are kept (``D_p = e^{m_p} S_p`` is the denominator over all not-yet-placed
   documents of the query);
3. simulate clicks on it (``ltrlib.foltr.clicks``);
4. infer preferences: every clicked document beats every unclicked document ranked above
   the last click, plus the unclicked one directly below the last click; no click, no
   update;
5. weight each pair (k clicked, l not) by ``rho = P(R*) / (P(R) + P(R*))``, R* being the
   list with k and l swapped. Only positions between them differ: with ``a``, ``b`` the
   documents at the upper and lower position, the numerators agree and at each position
   ``p`` strictly below the upper one ``D*_p = D_p - e^{s_b} + e^{s_a}``, so
   ``P(R*)/P(R) = prod_p D_p / D*_p``. The pair weight is then
   ``rho * e^{s_k} e^{s_l} / (e^{s_k} + e^{s_l})^2`` (computed as ``e^{-|d|}/(1+e^{-|d|})^2``);
6. ``w += lr * (sum_pairs weight * (grad s_k - grad s_l) - mu * (w - w_global))``; the
   FedProx term (``mu > 0``) only applies when there is an update (clicks), as PDGD leaves
   the model untouched otherwise.

Random draws: the query and the click model (when a client has several) come from the
client's Generator, then the clicks also from the client's Generator; the list sampling from
the sampling Generator. ``client_update`` runs B interactions and records each one's online
NDCG@10 (gain ``2^rel - 1``, log2 discount, the client's own labels; a query with no relevant
document counts 0), with the gain, discount and DCG kernels of `ltrlib.metrics.kernels`.

``normalise_queries`` is the query-wise min-max scaling of features. A feature constant
within a query (in particular every feature of a single-document query) becomes 0: there
is nothing to rank on, and 0 keeps the neural input bounded (the reference does the same).
"""

from __future__ import annotations

import numba
import numpy as np

from ltrlib.foltr.clicks import simulate_clicks
from ltrlib.foltr.rankers import add_neural_gradients, add_score_gradient, score_rows
from ltrlib.metrics.kernels import query_dcg, query_ideal_dcg

LIST_SIZE = 10


@numba.njit(cache=True, nogil=True)
def normalise_queries(X, offsets):
    """Query-wise min-max scaling to [0, 1]; constant features (and 1-doc queries) become 0."""
    n, F = X.shape
    out = np.empty((n, F), dtype=np.float32)
    for q in range(len(offsets) - 1):
        a, b = offsets[q], offsets[q + 1]
        for f in range(F):
            lo = np.inf
            hi = -np.inf
            for i in range(a, b):
                v = X[i, f]
                if v < lo:
                    lo = v
                if v > hi:
                    hi = v
            span = hi - lo
            for i in range(a, b):
                out[i, f] = (X[i, f] - lo) / span if span > 0 else 0.0
    return out


@numba.njit(cache=True, nogil=True)
def pl_sample(scores, n, k, rng, ranking, pos_max, pos_sum, placed, expo):
    """Plackett-Luce sample of ``k`` of ``scores[:n]`` into ``ranking[:k]`` (local indices).

    ``pos_max[p]``/``pos_sum[p]``: the maximum score of the documents not yet placed at
    position p and the sum of their ``exp(score - max)``. ``expo[:n]`` is scratch: it holds
    ``exp(score - max)`` and is recomputed only when placing a document changed the maximum,
    so a list costs about ``n`` exponentials instead of ``2 k n``; the sums and the pick read
    the same values in the same order as computing them afresh at every position.
    """
    for i in range(n):
        placed[i] = False
    m_exp = np.nan  # the maximum ``expo`` was computed for (none yet)
    for p in range(k):
        m = -np.inf
        for i in range(n):
            if not placed[i] and scores[i] > m:
                m = scores[i]
        if not m == m_exp:
            for i in range(n):
                if not placed[i]:
                    expo[i] = np.exp(scores[i] - m)
            m_exp = m
        total = 0.0
        for i in range(n):
            if not placed[i]:
                total += expo[i]
        pos_max[p] = m
        pos_sum[p] = total
        u = rng.random() * total
        acc = 0.0
        pick = -1
        for i in range(n):
            if not placed[i]:
                acc += expo[i]
                pick = i
                if u < acc:
                    break
        placed[pick] = True
        ranking[p] = pick


@numba.njit(cache=True, nogil=True)
def swap_ratio(scores, ranking, pos_max, pos_sum, lo, hi):
    """P(R*)/P(R) for the list with the documents at positions lo < hi swapped."""
    sa = scores[ranking[lo]]
    sb = scores[ranking[hi]]
    log_ratio = 0.0
    for p in range(lo + 1, hi + 1):
        m = pos_max[p]
        s = pos_sum[p]
        star = s - np.exp(sb - m) + np.exp(sa - m)
        if star < 1e-300:
            star = 1e-300
        log_ratio += np.log(s) - np.log(star)
    if log_ratio > 700.0:
        log_ratio = 700.0
    return np.exp(log_ratio)


@numba.njit(cache=True, nogil=True)
def pair_rho(scores, ranking, pos_max, pos_sum, i, j):
    lo = min(i, j)
    hi = max(i, j)
    r = swap_ratio(scores, ranking, pos_max, pos_sum, lo, hi)
    return r / (1.0 + r)


@numba.njit(cache=True, nogil=True)
def pair_weight(sk, sl):
    """e^{sk} e^{sl} / (e^{sk} + e^{sl})^2, stable for any score gap."""
    e = np.exp(-abs(sk - sl))
    return e / ((1.0 + e) * (1.0 + e))


@numba.njit(cache=True, nogil=True)
def ideal_dcgs(labels, q_off, k):
    """Ideal DCG@k of every query of a client view (labels in view order), from the
    metrics' shared kernel; serial, as it runs inside a client's thread."""
    nq = len(q_off) - 1
    out = np.zeros(nq)
    for q in range(nq):
        out[q] = query_ideal_dcg(labels[q_off[q]:q_off[q + 1]], k)
    return out


@numba.njit(cache=True, nogil=True)
def prox_step(w, w_global, mu, lr):
    """FedProx's step alone (a zero click gradient): ``w += lr * -mu (w - w_global)``."""
    if mu > 0.0:
        for j in range(len(w)):
            w[j] += lr * (-mu * (w[j] - w_global[j]))


@numba.njit(cache=True, nogil=True)
def interaction_buffers(max_n, w, kind, H):
    """The scratch arrays of `pdgd_interaction` for lists of up to ``max_n`` documents and
    weights like ``w`` (the gradient and hidden activations in its dtype), allocated once
    per run (or per `client_update`) and overwritten by every interaction."""
    return (np.zeros(len(w), dtype=w.dtype), np.empty(max_n), np.empty((max_n, H if kind == 1 else 1), dtype=w.dtype),
            np.empty(max_n, dtype=np.int64), np.empty(max_n), np.empty(max_n),
            np.empty(max_n, dtype=np.bool_), np.empty(LIST_SIZE, dtype=np.bool_),
            np.empty(LIST_SIZE, dtype=np.int64), np.empty(LIST_SIZE),
            np.empty(LIST_SIZE, dtype=np.int64), np.empty(LIST_SIZE), np.empty(max_n))


@numba.njit(cache=True, nogil=True)
def pdgd_interaction(kind, H, w, w_global, mu, prox_always, lr, X, rows, labels, a, b, ideal_q,
                     model, click_kinds, click_c, click_s, click_eta, rng_client, rng_sample, buffers):
    """One query interaction on documents ``rows[a:b]``; returns its online NDCG@10.

    With ``mu > 0`` the step adds FedProx's pull ``-mu (w - w_global)``; with
    ``prox_always`` also when the clicks give no gradient (no click, or no pair), as the
    reference implementation does (its update is ``g - mu (w - w_global)`` with ``g = 0``).
    ``buffers``: `interaction_buffers`."""
    grad, scores, hid, ranking, pos_max, pos_sum, placed, clicks, shown_labels, coef, docs, coefs, expo = buffers
    n = b - a
    k = min(LIST_SIZE, n)
    score_rows(kind, H, w, X, rows, a, b, scores, hid)
    pl_sample(scores, n, k, rng_sample, ranking, pos_max, pos_sum, placed, expo)
    for p in range(k):
        shown_labels[p] = labels[a + ranking[p]]
    n_clicks = simulate_clicks(click_kinds[model], click_c[model], click_s[model], click_eta[model],
                               shown_labels[:k], rng_client, clicks)
    # Online NDCG@k of the shown list; a query without relevant documents counts 0.
    ndcg = query_dcg(labels[a:b], ranking, k) / ideal_q if ideal_q > 0 else 0.0
    if n_clicks == 0:
        if prox_always:
            prox_step(w, w_global, mu, lr)
        return ndcg
    last = 0
    for p in range(k):
        if clicks[p]:
            last = p
    limit = min(last + 1, k - 1)
    # Sum each shown document's pair weights first: the gradient is linear in them, so
    # each document's score gradient is taken once instead of once per pair.
    for p in range(k):
        coef[p] = 0.0
    any_pair = False
    for i in range(k):
        if not clicks[i]:
            continue
        for j in range(limit + 1):
            if clicks[j]:
                continue
            wgt = pair_rho(scores, ranking, pos_max, pos_sum, i, j) * pair_weight(scores[ranking[i]],
                                                                                  scores[ranking[j]])
            coef[i] += wgt
            coef[j] -= wgt
            any_pair = True
    if not any_pair:
        if prox_always:
            prox_step(w, w_global, mu, lr)
        return ndcg
    for j in range(len(grad)):
        grad[j] = 0.0
    if kind == 0:
        for p in range(k):
            if coef[p] != 0.0:
                d = ranking[p]
                add_score_gradient(kind, H, w, X, rows[a + d], hid[d], coef[p], grad)
    else:
        m = 0
        for p in range(k):
            if coef[p] != 0.0:
                docs[m] = ranking[p]
                coefs[m] = coef[p]
                m += 1
        add_neural_gradients(H, w, X, rows, a, docs, coefs, m, hid, grad)
    if mu > 0.0:
        for j in range(len(w)):
            w[j] += lr * (grad[j] - mu * (w[j] - w_global[j]))
    else:
        for j in range(len(w)):
            w[j] += lr * grad[j]
    return ndcg


@numba.njit(cache=True, nogil=True)
def client_interactions(kind, H, w, w_global, mu, prox_always, lr, n_updates, X, rows, labels, q_lo, q_hi,
                        ideal, q_first, q_end, model_choices, click_kinds, click_c, click_s, click_eta,
                        rng_client, rng_sample, online_out, buffers):
    """``n_updates`` PDGD interactions on random queries ``q_first .. q_end - 1`` (documents
    ``rows[q_lo[q]:q_hi[q]]``, ideal DCG ``ideal[q]``) of one client, in place on ``w``.

    Returns the number of interactions performed (0 if the client has no query)."""
    nq = q_end - q_first
    if nq == 0 or n_updates <= 0:
        return 0
    n_models = len(model_choices)
    for t in range(n_updates):
        q = q_first + rng_client.integers(0, nq)
        model = model_choices[0]
        if n_models > 1:
            model = model_choices[rng_client.integers(0, n_models)]
        online_out[t] = pdgd_interaction(kind, H, w, w_global, mu, prox_always, lr, X, rows, labels,
                                         q_lo[q], q_hi[q], ideal[q], model, click_kinds, click_c, click_s,
                                         click_eta, rng_client, rng_sample, buffers)
    return n_updates


@numba.njit(cache=True, nogil=True)
def client_update(kind, H, w, w_global, mu, prox_always, lr, n_updates, X, rows, labels, q_off, ideal,
                  model_choices, click_kinds, click_c, click_s, click_eta,
                  rng_client, rng_sample, online_out):
    """``n_updates`` PDGD interactions on random queries of one client view, in place on ``w``.

    Returns the number of interactions performed (0 if the view has no query).
    """
    nq = len(q_off) - 1
    if nq == 0 or n_updates <= 0:
        return 0
    max_n = 0
    for q in range(nq):
        max_n = max(max_n, q_off[q + 1] - q_off[q])
    buffers = interaction_buffers(max_n, w, kind, H)
    return client_interactions(kind, H, w, w_global, mu, prox_always, lr, n_updates, X, rows, labels,
                               q_off[:-1], q_off[1:], ideal, 0, nq, model_choices, click_kinds, click_c,
                               click_s, click_eta, rng_client, rng_sample, online_out, buffers)
