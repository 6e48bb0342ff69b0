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


def _kernel_shapes(module) -> dict[str, tuple[int, ...]]:
    from flax import nnx

    return {".".join(map(str, path)): tuple(value.shape)
            for path, value in nnx.to_flat_state(nnx.state(module, nnx.Param)) if path[-1] == "kernel"}


def test_setrank_is_built_as_its_papers_msab_with_its_codes_input_layer():
    """Input projection to size d with ReLU and dropout; per block, attention at d split over
    the heads, then a 4d -> d feed-forward: the kernels' shapes, by hand."""
    d, heads, n = 8, 2, 6
    model = build_model(Architecture("setrank", hidden=(), attention_layers=2, heads=heads, size=d,
                                     attention_dropout=0.5), n, seed=0)
    shapes = _kernel_shapes(model)
    assert shapes["project.kernel"] == (n, d)
    for b in (0, 1):
        assert shapes[f"blocks.{b}.attention.query.kernel"] == (d, heads, d // heads)
        assert shapes[f"blocks.{b}.attention.out.kernel"] == (heads, d // heads, d)
        assert shapes[f"blocks.{b}.ff.kernel"] == (d, 4 * d) and shapes[f"blocks.{b}.ff_out.kernel"] == (4 * d, d)
    assert shapes["out.kernel"] == (d, 1)
    assert model.project_dropout.rate == 0.5
    # ReLU after the projection: with the projection's bias pushed far negative, every
    # document's projected features are 0 and the scores equal (a linear projection would not be).
    model.eval()
    model.project.bias[...] = model.project.bias[...] - 1e3
    x = jnp.asarray(np.random.default_rng(0).normal(size=(1, 5, n)), jnp.float32)
    scores = np.asarray(model(x, jnp.ones((1, 5), bool)))
    assert np.ptp(scores) < 1e-5


def test_attn_din_attention_widths_are_tf_rankings():
    """TF-Ranking's DocumentInteractionAttention: documents projected to the head size, each
    of the heads head-size wide, the output back to the head size; the DNN scores the
    features joined with it."""
    size, heads, n = 8, 3, 6
    model = build_model(Architecture("attn_din", hidden=(16,), attention_layers=1, heads=heads, size=size), n,
                        seed=0)
    shapes = _kernel_shapes(model)
    assert shapes["project.kernel"] == (n, size)
    assert shapes["blocks.0.attention.query.kernel"] == (size, heads, size)
    assert shapes["blocks.0.attention.out.kernel"] == (heads, size, size)
    assert shapes["tower.dense.0.kernel"] == (n + size, 16)
