"""The neural second-stage rankers of the Bi-LambdaMART paper (§5.3), in Flax.

Every model maps a batch of padded lists ``x`` ``(batch, list_size, n_features)`` with its
validity ``mask`` ``(batch, list_size)`` to one score per slot ``(batch, list_size)``;
padded slots are never attended to, never grouped with a real document, and kept out of
the batch-normalisation statistics. The architectures follow the papers the seed cites:
DNN, GSF and ATTN-DIN as TF-Ranking implements them, SetRank as its paper's equations
write it (see below for how its authors' code differs):

==============  =============================================================================
``dnn``         univariate: batch norm of the inputs, then per hidden layer dense, batch
                norm, ReLU, dropout; a dense output (TF-Ranking's DNN ranking network).
``gsf``         groupwise scoring functions, GSF(m) (Ai et al., ICTIR 2019): every document
                heads a group of itself and the next m-1 documents of its list, rolling
                round the end (TF-Ranking's groups); a DNN of the group's concatenated
                features (and, with ``difference``, for m = 2, x_i - x_j) gives one score
                per member; a document's score is the mean over the groups it is in.
                Training shuffles each list before grouping, as TF-Ranking does; scoring
                groups the list in its canonical order (`ltrlib.neural.lists`), so scores
                do not depend on the order of the rows.
``attn_din``    ATTN-DIN (Pasumarthi et al., ICTIR 2020), as TF-Ranking's
                ``DocumentInteractionAttention`` builds it: the documents are projected to
                ``size`` (dense, ReLU), pass ``attention_layers`` blocks of multi-head
                self-attention over the list with ``heads`` heads of ``size`` each
                (queries, keys and values heads x size wide, the output projected back to
                ``size``; residual, layer norm, dropout), and each document's own
                (normalised) features joined with its attention output go through the
                DNN above to a score.
``setrank``     SetRank (Pang et al., SIGIR 2020, its MSAB variant), as the paper's
                equations write the block: the documents are projected to ``size`` (dense,
                ReLU, dropout: the input layer of the authors' code), pass
                ``attention_layers`` multi-head self-attention blocks (H = LN(X +
                MHA(X)), LN(H + rFF(H)) with MHA's linear Q, K, V and output projections
                and rFF a ReLU layer of 4 x size and a linear one back to size, as the
                code's), and a row-wise linear layer scores them: no feed-forward scorer
                on top.
==============  =============================================================================

``dnn``, ``attn_din`` and ``setrank`` are permutation-equivariant by construction; ``gsf``
is so because its input lists come in canonical order.

SetRank's authors' code (github pl8787/SetRank, ``src/modules.py``'s ``multihead_attention``
at commit 3845a5a) departs from those equations in three ways we do not follow: Q, K and V
are dense layers *with* the ReLU activation (``tf.layers.dense(queries, num_units,
activation=activation)``, ``activation=relu`` in its scripts); the heads' concatenation is
added to the input with no output projection; and its run script
(``scripts/train_transformer_istella.sh``) trains the induced variant (IMSAB,
``multi_abstract=True, num_induced=20``), not MSAB. What we take from the code: the input
projection with ReLU and dropout, and the 4 x size feed-forward (``feedforward(...,
num_units=[4*hp.hidden_units, hp.hidden_units])``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import nnx

from ltrlib.randomness import stream_seeds

__all__ = ["ARCHITECTURES", "Architecture", "build_model", "gsf_groups"]


@dataclass(frozen=True)
class Architecture:
    """What a model is built from: ``kind`` (one of `ARCHITECTURES`), ``hidden`` (DNN layer
    sizes), ``dropout``; GSF's ``group_size`` and ``difference``; the attention models'
    ``attention_layers``, ``heads`` and ``size`` (ATTN-DIN: TF-Ranking's head size, the
    width of the projected documents and of each head; SetRank: the model width, split
    over the heads) and ``attention_dropout``."""

    kind: str
    hidden: tuple[int, ...] = (512, 256, 128, 64)
    dropout: float = 0.5
    group_size: int = 1
    difference: bool = False
    attention_layers: int = 1
    heads: int = 1
    size: int = 64
    attention_dropout: float = 0.0

    def __post_init__(self):
        if self.kind not in ARCHITECTURES:
            raise ValueError(f"unknown architecture {self.kind!r}; choose from {list(ARCHITECTURES)}")
        if not 0.0 <= self.dropout < 1.0 or not 0.0 <= self.attention_dropout < 1.0:
            raise ValueError(f"dropout rates must lie in [0, 1), got {self.dropout}, {self.attention_dropout}")
        if self.kind != "setrank" and (not self.hidden or min(self.hidden) < 1):
            raise ValueError(f"hidden layer sizes must be positive, got {self.hidden}")
        if self.kind == "gsf" and self.group_size < 2:
            raise ValueError(f"GSF needs a group size of at least 2, got {self.group_size}")
        if self.difference and not (self.kind == "gsf" and self.group_size == 2):
            raise ValueError("difference features are defined for GSF(2) only (pairs)")
        if self.kind in ("attn_din", "setrank") and min(self.attention_layers, self.heads, self.size) < 1:
            raise ValueError(f"attention layers, heads and size must be positive, got "
                             f"{self.attention_layers}, {self.heads}, {self.size}")
        if self.kind == "setrank" and self.size % self.heads:
            raise ValueError(f"SetRank's size ({self.size}) must split evenly over its {self.heads} heads")


class _Tower(nnx.Module):
    """Dense -> batch norm -> ReLU -> dropout per hidden layer, then a dense output of
    ``n_out``; batch norm of the inputs first (TF-Ranking's DNN)."""

    def __init__(self, n_in: int, hidden: Sequence[int], n_out: int, dropout: float, rngs: nnx.Rngs):
        self.input_norm = nnx.BatchNorm(n_in, rngs=rngs)
        sizes = [n_in, *hidden]
        self.dense = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in zip(sizes[:-1], sizes[1:])])
        self.norms = nnx.List([nnx.BatchNorm(b, rngs=rngs) for b in hidden])
        self.dropout = nnx.Dropout(dropout, rngs=rngs)
        self.out = nnx.Linear(sizes[-1], n_out, rngs=rngs)

    def __call__(self, x, mask):
        h = self.input_norm(x, mask=mask[..., None])
        for dense, norm in zip(self.dense, self.norms):
            h = self.dropout(nnx.relu(norm(dense(h), mask=mask[..., None])))
        return self.out(h)


class DNN(nnx.Module):
    def __init__(self, n_features: int, arch: Architecture, rngs: nnx.Rngs):
        self.tower = _Tower(n_features, arch.hidden, 1, arch.dropout, rngs)

    def __call__(self, x, mask):
        return self.tower(x, mask)[..., 0]


def gsf_groups(mask, group_size: int):
    """GSF's groups of each list, ``(batch, list_size, group_size)`` slot indices: group i is
    headed by slot i and followed by the next ``group_size - 1`` real documents of its list,
    rolling round the end of them (TF-Ranking's groups). Real documents come first in every
    list (`ltrlib.neural.lists.pad_lists`); a group headed by a padded slot is not real."""
    batch, size = mask.shape
    n = jnp.maximum(mask.sum(axis=1), 1)[:, None, None]  # real documents per list
    members = (jnp.arange(size)[None, :, None] + jnp.arange(group_size)[None, None, :]) % n
    return jnp.broadcast_to(members, (batch, size, group_size))


class GSF(nnx.Module):
    def __init__(self, n_features: int, arch: Architecture, rngs: nnx.Rngs):
        self.group_size, self.difference = arch.group_size, arch.difference
        n_in = n_features * (arch.group_size + (1 if arch.difference else 0))
        self.tower = _Tower(n_in, arch.hidden, arch.group_size, arch.dropout, rngs)
        self.rngs = rngs
        self.deterministic = False  # switched by nnx's .train() / .eval(), as Dropout's

    def __call__(self, x, mask):
        if self.deterministic:
            return self._score(x, mask)
        # Training: group each list in a random order of its real documents (padded slots
        # last), as TF-Ranking shuffles, then put the scores back in the slots' order.
        noise = jnp.where(mask, jax.random.uniform(self.rngs.shuffle(), mask.shape), 2.0)
        order = jnp.argsort(noise, axis=1)
        scores = self._score(jnp.take_along_axis(x, order[..., None], axis=1),
                             jnp.take_along_axis(mask, order, axis=1))
        return jnp.take_along_axis(scores, jnp.argsort(order, axis=1), axis=1)

    def _score(self, x, mask):
        batch, size, d = x.shape
        members = gsf_groups(mask, self.group_size)  # (b, L, m)
        feats = jnp.take_along_axis(x[:, None, :, :], members[..., None], axis=2)  # (b, L, m, d)
        parts = [feats.reshape(batch, size, self.group_size * d)]
        if self.difference:
            parts.append(feats[:, :, 0, :] - feats[:, :, 1, :])
        logits = self.tower(jnp.concatenate(parts, axis=-1), mask)  # (b, L, m); group i is real iff slot i is
        # A document's score: the mean of the logits it got in the real groups it is in.
        weight = jnp.broadcast_to(mask[..., None], logits.shape).astype(logits.dtype)
        flat = (jnp.arange(batch)[:, None, None] * size + members).reshape(-1)
        total = jnp.zeros(batch * size, logits.dtype).at[flat].add((logits * weight).reshape(-1))
        count = jnp.zeros(batch * size, logits.dtype).at[flat].add(weight.reshape(-1))
        return (total / jnp.maximum(count, 1.0)).reshape(batch, size)


#: SetRank's row-wise feed-forward layer is this many times its width (its authors' code).
SETRANK_FF = 4


class _AttentionBlock(nnx.Module):
    """Multi-head self-attention over the real documents (``heads`` heads of
    ``head_size``, the output projected back to ``width``), residual and layer norm;
    with ``feed_forward`` > 0 also SetRank's row-wise feed-forward (``width`` ->
    ``feed_forward`` -> ``width``, ReLU between), residual and layer norm."""

    def __init__(self, width: int, heads: int, head_size: int, dropout: float, feed_forward: int,
                 rngs: nnx.Rngs):
        self.attention = nnx.MultiHeadAttention(heads, width, qkv_features=heads * head_size, out_features=width,
                                                dropout_rate=dropout, decode=False, rngs=rngs)
        self.norm = nnx.LayerNorm(width, rngs=rngs)
        self.dropout = nnx.Dropout(dropout, rngs=rngs)
        if feed_forward:
            self.ff = nnx.Linear(width, feed_forward, rngs=rngs)
            self.ff_out = nnx.Linear(feed_forward, width, rngs=rngs)
            self.ff_norm = nnx.LayerNorm(width, rngs=rngs)
        else:
            self.ff = self.ff_out = self.ff_norm = None

    def __call__(self, h, mask):
        pair_mask = nnx.make_attention_mask(mask, mask)
        h = self.norm(h + self.dropout(self.attention(h, mask=pair_mask)))
        if self.ff is not None:
            h = self.ff_norm(h + self.dropout(self.ff_out(nnx.relu(self.ff(h)))))
        return h


class AttnDIN(nnx.Module):
    def __init__(self, n_features: int, arch: Architecture, rngs: nnx.Rngs):
        self.input_norm = nnx.BatchNorm(n_features, rngs=rngs)
        self.project = nnx.Linear(n_features, arch.size, rngs=rngs)
        self.blocks = nnx.List([_AttentionBlock(arch.size, arch.heads, arch.size, arch.attention_dropout, 0, rngs)
                                for _ in range(arch.attention_layers)])
        self.tower = _Tower(n_features + arch.size, arch.hidden, 1, arch.dropout, rngs)

    def __call__(self, x, mask):
        x = self.input_norm(x, mask=mask[..., None])
        h = nnx.relu(self.project(x))
        for block in self.blocks:
            h = block(h, mask)
        return self.tower(jnp.concatenate([x, h], axis=-1), mask)[..., 0]


class SetRank(nnx.Module):
    def __init__(self, n_features: int, arch: Architecture, rngs: nnx.Rngs):
        self.input_norm = nnx.BatchNorm(n_features, rngs=rngs)
        self.project = nnx.Linear(n_features, arch.size, rngs=rngs)
        self.project_dropout = nnx.Dropout(arch.attention_dropout, rngs=rngs)
        head_size = arch.size // arch.heads
        self.blocks = nnx.List([_AttentionBlock(arch.size, arch.heads, head_size, arch.attention_dropout,
                                                SETRANK_FF * arch.size, rngs)
                                for _ in range(arch.attention_layers)])
        self.out = nnx.Linear(arch.size, 1, rngs=rngs)

    def __call__(self, x, mask):
        h = self.project_dropout(nnx.relu(self.project(self.input_norm(x, mask=mask[..., None]))))
        for block in self.blocks:
            h = block(h, mask)
        return self.out(h)[..., 0]


ARCHITECTURES = {"dnn": DNN, "gsf": GSF, "attn_din": AttnDIN, "setrank": SetRank}


def build_model(arch: Architecture, n_features: int, seed: int) -> nnx.Module:
    """A freshly initialised model of ``arch`` for ``n_features`` inputs, from ``seed``
    (its weights, its dropout masks and GSF's shuffles), three streams that no other seed's
    network shares (`ltrlib.randomness.stream_seeds`)."""
    params, dropout, shuffle = stream_seeds(seed, "neural network", 3)
    return ARCHITECTURES[arch.kind](n_features, arch, nnx.Rngs(params=params, dropout=dropout, shuffle=shuffle))
