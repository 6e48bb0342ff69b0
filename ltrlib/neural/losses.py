"""The two losses of the Bi-LambdaMART paper for neural rankers, per list, on Rax.

``softmax``: −Σ_i y_i log softmax(s)_i, the paper's §6.2 formula with raw labels, the loss
GBT_Softmax and Bi-GBT_Softmax train with (`ltrlib.bivariate.objective`) and Rax's default.
TF-Ranking, which the paper's neural runs used, first normalises the labels to sum to 1
per list; that rescales each list's loss by 1/Σy and changes the weight of lists, not the
ranking each list's loss prefers.

``lambdarank``: the λRank loss as TF-Ranking trains networks with it, the pairwise logistic
loss log(1 + exp(−(s_i − s_j))) over pairs with y_i > y_j, each weighted by |ΔDCG_ij|,
the change of DCG when i and j swap places in the current ranking (gain 2^y − 1, discount
1 / log2(1 + rank)), over all pairs, and divided by the ideal DCG@``cutoff`` of the query's
*full* first-stage list, as λMART* normalises (the ranking is read from the scores without
a gradient, as λRank does).

Both return one value per list ``(batch,)``; the training step averages over the lists.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import rax

__all__ = ["LOSSES", "delta_dcg_weights", "lambdarank_loss", "list_loss", "softmax_loss"]

LOSSES = ("lambdarank", "softmax")


def softmax_loss(scores, labels, mask, ideal_dcg=None):
    """Per-list softmax cross-entropy with raw labels (``ideal_dcg`` is not used)."""
    return rax.softmax_loss(scores, labels, where=mask, reduce_fn=None)


def delta_dcg_weights(scores, labels, *, where=None, **_):
    """|ΔDCG| of swapping each pair in the ranking by ``scores``, 0 on the diagonal and
    wherever a slot is padded: ``(..., L * L)``, pair (i, j) at ``i * L + j``, the layout
    of a Rax ``lambdaweight_fn``."""
    scores = jax.lax.stop_gradient(scores)
    if where is not None:
        scores = jnp.where(where, scores, -jnp.inf)
    rank = jnp.argsort(jnp.argsort(-scores, axis=-1), axis=-1) + 1  # 1 = top; padded last
    discount = 1.0 / jnp.log2(1.0 + rank)
    gain = jnp.exp2(labels) - 1.0
    weights = (jnp.abs(gain[..., :, None] - gain[..., None, :])
               * jnp.abs(discount[..., :, None] - discount[..., None, :]))
    if where is not None:
        weights = jnp.where(where[..., :, None] & where[..., None, :], weights, 0.0)
    return weights.reshape(*weights.shape[:-2], -1)


def lambdarank_loss(scores, labels, mask, ideal_dcg):
    """Per-list ΔDCG-weighted pairwise logistic loss over the full-list ideal DCG."""
    pairs = rax.pairwise_logistic_loss(scores, labels, where=mask, lambdaweight_fn=delta_dcg_weights,
                                       reduce_fn=None)
    # A query without a relevant document has no weighted pair; its normaliser is 0.
    return pairs.sum(axis=-1) / jnp.where(ideal_dcg > 0, ideal_dcg, 1.0)


_BY_NAME = {"lambdarank": lambdarank_loss, "softmax": softmax_loss}


def list_loss(name: str):
    """The loss function called ``name`` (one of `LOSSES`)."""
    if name not in _BY_NAME:
        raise ValueError(f"unknown loss {name!r}; choose from {list(LOSSES)}")
    return _BY_NAME[name]
