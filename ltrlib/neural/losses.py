"""The losses of the Bi-LambdaMART paper for neural rankers, per list, on Rax.

``softmax``: −Σ_i y_i log softmax(s)_i, the paper's §6.2 formula with raw labels, the loss
GBT_Softmax and Bi-GBT_Softmax train with (`ltrlib.bivariate.objective`) and Rax's default.
TF-Ranking, which the paper's neural runs used, computes the same loss: it divides the
labels by their sum and weighs the list by that sum (its default list weight), which
multiplies back.

``lambdarank``: the λRank loss as TF-Ranking trains networks with it (a pairwise logistic
loss with ``create_ndcg_lambda_weight``'s DCG λ-weights): log(1 + exp(−(s_i − s_j))) over
the pairs with y_i > y_j, each weighted by |ΔDCG_ij|, the change of DCG when i and j swap
places in the current ranking (gain 2^y − 1, discount 1 / log(1 + rank)), and normalised
as TF-Ranking normalises:

* per list, by the ideal DCG of the list's own labels, over all its documents
  (``normalized=True``, no top-n); the discount's base cancels in this ratio;
* multiplied by the list size L (TF-Ranking's scaling of λ-weighted pairwise losses back to
  the magnitude of unweighted ones);
* averaged over the L x L pair slots of the list (Keras's mean over the loss tensor).

So a list's loss is Σ_pairs |ΔDCG_ij| ℓ_ij / (IDCG_list · L). One departure, ours:
TF-Ranking's default λ-weight since its LambdaLoss update takes the rank discount of the
pair's rank *difference* (``smooth_fraction=0``); ours is the LambdaMART weight
|1/log(1+r_i) − 1/log(1+r_j)| (``smooth_fraction=1``), the one λMART's trees use.

``lambdarank_full_list``: the same pairs and weights divided by the ideal DCG@``cutoff`` of
the query's *full* first-stage list instead, as λMART* normalises its trees' λRank (a named
variant, ours: the normaliser the trees train with, at another scale than TF-Ranking's and
so at other effective Adagrad steps).

The ranking is read from the scores without a gradient, as λRank does. Every loss returns
one value per list ``(batch,)``; the training step averages over the lists.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import rax

__all__ = ["LOSSES", "delta_dcg_weights", "lambdarank_full_list_loss", "lambdarank_loss", "list_loss",
           "softmax_loss"]

LOSSES = ("lambdarank", "softmax", "lambdarank_full_list")


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


def _weighted_pairs(scores, labels, mask):
    """Σ over a list's pairs of |ΔDCG_ij| · log(1 + exp(−(s_i − s_j))), y_i > y_j: ``(batch,)``."""
    pairs = rax.pairwise_logistic_loss(scores, labels, where=mask, lambdaweight_fn=delta_dcg_weights,
                                       reduce_fn=None)
    return pairs.sum(axis=-1)


def _list_ideal_dcg(labels, mask):
    """Each list's ideal DCG over all its real documents (TF-Ranking's ``inverse_max_dcg``
    without a top-n), with `delta_dcg_weights`' gain and discount."""
    gain = jnp.where(mask, jnp.exp2(labels) - 1.0, 0.0)
    ideal = -jnp.sort(-gain, axis=-1)  # padded slots have gain 0 and sort last
    discount = 1.0 / jnp.log2(2.0 + jnp.arange(labels.shape[-1]))
    return (ideal * discount).sum(axis=-1)


def lambdarank_loss(scores, labels, mask, ideal_dcg=None):
    """Per-list λRank loss normalised as TF-Ranking does (module docstring);
    ``ideal_dcg`` is not used."""
    ideal = _list_ideal_dcg(labels, mask)
    size = labels.shape[-1]
    # TF-Ranking: weights x L, then the mean over the L x L pair slots.
    return _weighted_pairs(scores, labels, mask) / jnp.where(ideal > 0, ideal, 1.0) / size


def lambdarank_full_list_loss(scores, labels, mask, ideal_dcg):
    """Per-list λRank loss over ``ideal_dcg``, each query's ideal DCG@cutoff of its full
    first-stage list, as λMART* normalises (module docstring)."""
    # A query without a relevant document has no weighted pair; its normaliser is 0.
    return _weighted_pairs(scores, labels, mask) / jnp.where(ideal_dcg > 0, ideal_dcg, 1.0)


_BY_NAME = {"lambdarank": lambdarank_loss, "softmax": softmax_loss, "lambdarank_full_list": lambdarank_full_list_loss}


def list_loss(name: str):
    """The loss function called ``name`` (one of `LOSSES`)."""
    if name not in _BY_NAME:
        raise ValueError(f"unknown loss {name!r}; choose from {list(LOSSES)}")
    return _BY_NAME[name]
