"""The losses against values computed by hand on a three-document list (plus one padded slot)."""
import math

import jax.numpy as jnp
import pytest

from ltrlib.neural.losses import lambdarank_loss, lambdarank_slot_mean_loss, list_loss, softmax_loss

SCORES = jnp.array([[1.0, 0.0, 2.0, 5.0]])
LABELS = jnp.array([[2.0, 0.0, 1.0, 3.0]])
MASK = jnp.array([[True, True, True, False]])  # the fourth slot is padding: ignored


def test_softmax_loss_is_minus_the_label_weighted_log_softmax():
    log_z = math.log(math.e ** 1 + math.e ** 0 + math.e ** 2)
    by_hand = -(2 * (1 - log_z) + 0 * (0 - log_z) + 1 * (2 - log_z))  # = 3 log_z - 4
    assert float(softmax_loss(SCORES, LABELS, MASK)) == pytest.approx(by_hand, rel=1e-6)
    assert by_hand == pytest.approx(3.2228, abs=1e-4)


def _weighted_pairs_by_hand():
    # Scores rank the documents 3rd, 1st... : doc0 rank 2, doc1 rank 3, doc2 rank 1.
    discount = [1 / math.log2(3), 1 / math.log2(4), 1.0]
    gain = [3.0, 0.0, 1.0]  # 2^y - 1
    pairs = [(0, 1), (0, 2), (2, 1)]  # (better, worse)
    return sum(abs(gain[i] - gain[j]) * abs(discount[i] - discount[j])
               * math.log1p(math.exp(-(float(SCORES[0, i]) - float(SCORES[0, j])))) for i, j in pairs)


def test_lambdarank_slot_mean_is_normalised_as_tf_rankings_premade_estimators():
    """Per list by the ideal DCG of its own labels (all documents, the padded slot out),
    times TF-Ranking's list-size scaling L, averaged over the L x L pair slots: / L."""
    ideal = 3.0 + 1.0 / math.log2(3)  # labels 2 and 1 of the list, at ranks 1 and 2
    by_hand = _weighted_pairs_by_hand() / ideal / 4  # L = 4 slots, the padded one included
    assert float(lambdarank_slot_mean_loss(SCORES, LABELS, MASK)) == pytest.approx(by_hand, rel=1e-6)
    assert by_hand == pytest.approx(0.07959, abs=1e-5)
    # A query with no relevant document has no weighted pair and an ideal DCG of 0: loss 0.
    assert float(lambdarank_slot_mean_loss(SCORES, jnp.zeros_like(LABELS), MASK)) == 0.0


def test_lambdarank_is_reduced_as_tf_rankings_estimators_by_the_nonzero_pair_weights():
    """TF-Ranking's ``make_loss_fn`` default, SUM_BY_NONZERO_WEIGHTS: the batch's weighted
    pairs (weights |ΔDCG| / IDCG_list x L) summed and divided by how many pair weights are
    nonzero in the whole batch, not list by list. Two lists: the one above (3 pairs with
    y_i > y_j) and one of two documents (1 pair), whose own term is worked out here."""
    ideal = 3.0 + 1.0 / math.log2(3)
    first = _weighted_pairs_by_hand() / ideal * 4  # x L
    assert float(lambdarank_loss(SCORES, LABELS, MASK)) == pytest.approx(first / 3, rel=1e-6)
    # Second list: scores (0, 1), labels (1, 0): the better document ranked second.
    second_pairs = (1.0 * (1.0 - 1 / math.log2(3))) * math.log1p(math.exp(1.0))
    second = second_pairs / 1.0 * 4  # its ideal DCG: gain 1 at rank 1
    scores = jnp.array([[1.0, 0.0, 2.0, 5.0], [0.0, 1.0, 0.0, 0.0]])
    labels = jnp.array([[2.0, 0.0, 1.0, 3.0], [1.0, 0.0, 0.0, 0.0]])
    mask = jnp.array([[True, True, True, False], [True, True, False, False]])
    assert float(lambdarank_loss(scores, labels, mask)) == pytest.approx((first + second) / 4, rel=1e-6)
    # Not the mean of the two lists' own ratios (first / 3 + second / 1) / 2.
    assert abs((first + second) / 4 - (first / 3 + second) / 2) > 0.01
    # The scale against the slot mean is L² over the pairs a list has (here 16 / 3).
    assert float(lambdarank_loss(SCORES, LABELS, MASK)) == pytest.approx(
        float(lambdarank_slot_mean_loss(SCORES, LABELS, MASK)) * 16 / 3, rel=1e-6)
    # A batch without a weighted pair: 0, not NaN.
    assert float(lambdarank_loss(SCORES, jnp.zeros_like(LABELS), MASK)) == 0.0


def test_lambdarank_full_list_variant_divides_by_the_full_lists_ideal_dcg():
    ideal = 4.5  # the full first-stage list's ideal DCG@k, larger than this list's
    loss = list_loss("lambdarank_full_list")
    assert float(loss(SCORES, LABELS, MASK, jnp.array([ideal]))) == pytest.approx(
        _weighted_pairs_by_hand() / ideal, rel=1e-6)
    assert float(loss(SCORES, jnp.zeros_like(LABELS), MASK, jnp.array([0.0]))) == 0.0


def test_list_loss_names_the_choices():
    assert list_loss("softmax") is softmax_loss
    with pytest.raises(ValueError, match="choose from"):
        list_loss("listnet")
