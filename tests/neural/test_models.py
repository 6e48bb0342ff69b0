"""Permutation equivariance: a list's documents permuted, every model's scores are the same
scores permuted. Exact (to float32 rounding) for all: ATTN-DIN, SetRank and the DNN by
construction, GSF(m) because its groups are formed in the list's canonical order
(descending stage-1 score), whatever order the rows arrive in."""
import jax.numpy as jnp
import numpy as np
import pytest

from ltrlib.neural.lists import pad_lists
from ltrlib.neural.models import Architecture, build_model, gsf_groups

OFFSETS = np.array([0, 20, 33, 36, 50])
ARCHS = {
    "DNN": Architecture("dnn", hidden=(16, 8), dropout=0.1),
    "GSF(2) with d": Architecture("gsf", hidden=(16, 8), group_size=2, difference=True),
    "GSF(20)": Architecture("gsf", hidden=(16, 8), group_size=20),
    "ATTN-DIN": Architecture("attn_din", hidden=(16,), attention_layers=2, heads=2, size=8),
    "SetRank": Architecture("setrank", hidden=(), attention_layers=2, heads=2, size=8),
}


def _scores(model, X, order_by):
    lists = pad_lists(X, OFFSETS, list_size=20, order_by=order_by)
    return lists.to_flat(np.asarray(model(jnp.asarray(lists.X), jnp.asarray(lists.mask))))


@pytest.mark.parametrize("name", ARCHS)
def test_scores_permute_with_the_documents(name):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(OFFSETS[-1], 6)).astype(np.float32)  # column 5: distinct "stage-1 scores"
    model = build_model(ARCHS[name], 6, seed=3)
    model.eval()
    # Attention and the DNN need no canonical order; GSF needs it.
    order_by = 5 if ARCHS[name].kind == "gsf" else None
    perm = np.concatenate([a + rng.permutation(b - a) for a, b in zip(OFFSETS[:-1], OFFSETS[1:])])
    before, after = _scores(model, X, order_by), _scores(model, X[perm], order_by)
    np.testing.assert_allclose(after, before[perm], rtol=1e-5, atol=1e-6)
    assert np.unique(np.round(before, 5)).size > 10  # not a constant: the test can fail


def test_gsf_without_its_canonical_order_is_not_equivariant():
    """The control of the test above: rows in arrival order, GSF(20)'s scores change."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(OFFSETS[-1], 6)).astype(np.float32)
    model = build_model(ARCHS["GSF(20)"], 6, seed=3)
    model.eval()
    perm = np.concatenate([a + rng.permutation(b - a) for a, b in zip(OFFSETS[:-1], OFFSETS[1:])])
    assert np.abs(_scores(model, X[perm], None) - _scores(model, X, None)[perm]).max() > 1e-3


def test_gsf_groups_roll_round_each_lists_real_documents():
    mask = jnp.array([[True, True, True, False]])
    groups = np.asarray(gsf_groups(mask, 2))[0]
    assert groups[:3].tolist() == [[0, 1], [1, 2], [2, 0]]
    groups = np.asarray(gsf_groups(mask, 4))[0]
    assert groups[0].tolist() == [0, 1, 2, 0]  # a list shorter than the group wraps


def test_architecture_refuses_what_it_cannot_build():
    with pytest.raises(ValueError, match="unknown architecture"):
        Architecture("rnn")
    with pytest.raises(ValueError, match="difference features are defined for GSF\\(2\\) only"):
        Architecture("gsf", group_size=20, difference=True)
    with pytest.raises(ValueError, match="must split evenly over its 3 heads"):
        Architecture("setrank", heads=3, size=64)
