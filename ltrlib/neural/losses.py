"""The losses of the Bi-LambdaMART paper for neural rankers, on Rax: each one a batch's loss.

``softmax``: −Σ_i y_i log softmax(s)_i, the paper's §6.2 formula with raw labels, the loss
GBT_Softmax and Bi-GBT_Softmax train with (`ltrlib.bilambdamart.objective`) and Rax's default.
TF-Ranking, which the paper's neural runs used, computes the same loss: it divides the
labels by their sum and weighs the list by that sum (its default list weight), which
multiplies back.

``lambdarank``: the λRank loss as TF-Ranking's estimator API trains networks with it (a
pairwise logistic loss with ``create_ndcg_lambda_weight``'s DCG λ-weights):
log(1 + exp(−(s_i − s_j))) over the pairs with y_i > y_j, each weighted by |ΔDCG_ij|, the
change of DCG when i and j swap places in the current ranking (gain 2^y − 1, discount
1 / log(1 + rank)), normalised and reduced as TF-Ranking does (``losses_impl.py``):

* per list, by the ideal DCG of the list's own labels, over all its documents
  (``DCGLambdaWeight(normalized=True)``, no top-n); the discount's base cancels in this ratio;
* multiplied by the list size L (``pair_weight *= tf.shape(labels)[1]``, TF-Ranking's scaling
  of λ-weighted pairwise losses back to the magnitude of unweighted ones);
* summed over the batch and divided by the number of nonzero pair weights in the batch
  (``compute_weighted_loss(..., reduction=SUM_BY_NONZERO_WEIGHTS)``, the default reduction
  of ``tfr.losses.make_loss_fn``), 0 for a batch without a weighted pair.

So a batch's loss is L · Σ_lists Σ_pairs |ΔDCG_ij| ℓ_ij / IDCG_list / #pairs. Why this
reduction: GSF exists only in TF-Ranking's estimator API (``tfr.model.make_groupwise_ranking_fn``),
and its LETOR example, ``examples/tf_ranking_libsvm.py``, trains exactly what Table 6 tunes
(flags ``learning_rate``, ``hidden_layer_dims``, ``dropout_rate``, ``group_size``; batches of
32, ``AdagradOptimizer``) with ``tfr.losses.make_loss_fn(FLAGS.loss)``, whose reduction is
this one; a λ-weight can only be added through ``make_loss_fn(..., lambda_weight=...)``. The
paper's learning rates (Tables 6-7, `ltrlib.neural.competitors.PAPER_POINTS`) are therefore
read in this loss's scale. One departure, ours: TF-Ranking's default λ-weight since its
LambdaLoss update takes the rank discount of the pair's rank *difference*
(``smooth_fraction=0``); ours is the LambdaMART weight |1/log(1+r_i) − 1/log(1+r_j)|
(``smooth_fraction=1``), the one λMART's trees use.

``lambdarank_slot_mean``: the same pairs and weights, averaged per list over its L x L pair
slots and then over the lists: Σ_pairs |ΔDCG_ij| ℓ_ij / (IDCG_list · L) per list. This is the
reduction of TF-Ranking's premade estimators (``SUM_OVER_BATCH_SIZE`` over the
``[batch, L, L]`` pair tensor, ``make_dnn_ranking_estimator``'s default), and the one every
λRank network trained with before issue 61 (the ``cpu`` study's seeds 200-204), kept so that
those runs can be repeated. It is 4-8 times smaller than ``lambdarank`` on lists of 20 with
graded labels (the ratio is L² over the mean number of pairs with y_i > y_j a list
has), so the same Adagrad learning rate takes smaller steps. (TF-Ranking's Keras classes reduce differently again:
``_PairwiseLoss.call`` sums the pair axis to ``[batch, L]`` and Keras averages over those
B x L slots, L times ``lambdarank_slot_mean``.)

``lambdarank_full_list``: the same pairs and weights divided by the ideal DCG@``cutoff`` of
the query's *full* first-stage list instead, averaged over the lists, as λMART* normalises
its trees' λRank (a named variant, ours: the normaliser the trees train with, at another
scale than TF-Ranking's and so at other effective Adagrad steps).

The ranking is read from the scores without a gradient, as λRank does. Every loss returns
the batch's loss, one scalar, reduced as its source reduces it; `list_loss` gives it by name.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import rax

__all__ = ["LOSSES", "delta_dcg_weights", "lambdarank_full_list_loss", "lambdarank_loss",
           "lambdarank_slot_mean_loss", "list_loss", "softmax_loss"]

LOSSES = ("lambdarank", "softmax", "lambdarank_full_list", "lambdarank_slot_mean")


def softmax_loss(scores, labels, mask, ideal_dcg=None):
    """Softmax cross-entropy with raw labels, the mean over the batch's lists (``ideal_dcg``
    is not used)."""
    return rax.softmax_loss(scores, labels, where=mask, reduce_fn=None).mean()


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


def _pair_terms(scores, labels, mask):
    """|ΔDCG_ij| · log(1 + exp(−(s_i − s_j))) for every pair with y_i > y_j, 0 elsewhere:
    ``(batch, L * L)``."""
    return rax.pairwise_logistic_loss(scores, labels, where=mask, lambdaweight_fn=delta_dcg_weights,
                                      reduce_fn=None)


def _weighted_pairs(scores, labels, mask):
    """Σ over a list's pairs of |ΔDCG_ij| · log(1 + exp(−(s_i − s_j))), y_i > y_j: ``(batch,)``."""
    return _pair_terms(scores, labels, mask).sum(axis=-1)


def _list_ideal_dcg(labels, mask):
    """Each list's ideal DCG over all its real documents (TF-Ranking's ``inverse_max_dcg``
    without a top-n), with `delta_dcg_weights`' gain and discount."""
    gain = jnp.where(mask, jnp.exp2(labels) - 1.0, 0.0)
    ideal = -jnp.sort(-gain, axis=-1)  # padded slots have gain 0 and sort last
    discount = 1.0 / jnp.log2(2.0 + jnp.arange(labels.shape[-1]))
    return (ideal * discount).sum(axis=-1)


def _nonzero_pair_weights(scores, labels, mask):
    """How many of each list's pair weights are nonzero: its pairs with y_i > y_j (both real)
    whose |ΔDCG| is not 0, as TF-Ranking's ``SUM_BY_NONZERO_WEIGHTS`` counts them: ``(batch,)``."""
    weights = delta_dcg_weights(scores, labels, where=mask)
    better = (labels[..., :, None] > labels[..., None, :]).reshape(weights.shape)
    ideal = _list_ideal_dcg(labels, mask)[..., None]  # a list without gain has all weights 0
    return ((weights != 0) & better & (ideal > 0)).sum(axis=-1)


def lambdarank_loss(scores, labels, mask, ideal_dcg=None):
    """The batch's λRank loss as TF-Ranking's estimator API reduces it (module docstring):
    L · Σ |ΔDCG_ij| ℓ_ij / IDCG_list over the batch's pairs, divided by their number;
    ``ideal_dcg`` is not used."""
    ideal = _list_ideal_dcg(labels, mask)
    size = labels.shape[-1]
    total = (_weighted_pairs(scores, labels, mask) / jnp.where(ideal > 0, ideal, 1.0) * size).sum()
    count = _nonzero_pair_weights(scores, labels, mask).sum()
    return jnp.where(count > 0, total / jnp.maximum(count, 1), 0.0)


def lambdarank_slot_mean_loss(scores, labels, mask, ideal_dcg=None):
    """The batch's λRank loss averaged over each list's L x L pair slots, then over the lists
    (module docstring); ``ideal_dcg`` is not used."""
    ideal = _list_ideal_dcg(labels, mask)
    size = labels.shape[-1]
    # TF-Ranking: weights x L, then the mean over the L x L pair slots.
    return (_weighted_pairs(scores, labels, mask) / jnp.where(ideal > 0, ideal, 1.0) / size).mean()


def lambdarank_full_list_loss(scores, labels, mask, ideal_dcg):
    """The batch's λRank loss over ``ideal_dcg``, each query's ideal DCG@cutoff of its full
    first-stage list, as λMART* normalises (module docstring), averaged over the lists."""
    # A query without a relevant document has no weighted pair; its normaliser is 0.
    return (_weighted_pairs(scores, labels, mask) / jnp.where(ideal_dcg > 0, ideal_dcg, 1.0)).mean()


_BY_NAME = {"lambdarank": lambdarank_loss, "softmax": softmax_loss, "lambdarank_full_list": lambdarank_full_list_loss,
            "lambdarank_slot_mean": lambdarank_slot_mean_loss}


def list_loss(name: str):
    """The loss function called ``name`` (one of `LOSSES`): ``(scores, labels, mask,
    ideal_dcg) -> the batch's loss``."""
    if name not in _BY_NAME:
        raise ValueError(f"unknown loss {name!r}; choose from {list(LOSSES)}")
    return _BY_NAME[name]
