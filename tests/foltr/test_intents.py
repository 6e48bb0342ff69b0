"""ltrlib.foltr.intents: the intent-change collection read into judged intents for Type 1."""

import numpy as np
import pytest

from ltrlib.foltr import partition as P
from ltrlib.foltr.federated import run_federated
from ltrlib.foltr.intents import read_intent_collection

N_Q, DOCS, N_INTENTS = 6, 8, 4


def _write_collection(tmp_path):
    """Query q's document d is ``clueweb-q-d``; intent k judges documents k and k+4 of every
    query relevant (label 1), so a client's relevant documents reveal its intent."""
    rng = np.random.default_rng(0)
    lines = []
    for q in range(1, N_Q + 1):
        for d in range(DOCS):
            feats = " ".join(f"{j + 1}:{v:.3f}" for j, v in enumerate(rng.random(3)))
            sep = "# docid = " if d % 2 else "# "   # both comment forms
            lines.append(f"0 qid:{q} {feats} {sep}clueweb-{q}-{d}")
    features = tmp_path / "intent_change.txt"
    features.write_text("\n".join(lines) + "\n")
    qrels = []
    for k in range(N_INTENTS):
        path = tmp_path / f"{k}.txt"
        path.write_text("".join(f"{q} 0 clueweb-{q}-{d} {int(d in (k, k + 4))}\n"
                                for q in range(1, N_Q + 1) for d in range(DOCS)))
        qrels.append(path)
    return features, qrels


def test_judged_intents_are_read_row_aligned(tmp_path):
    features, qrels = _write_collection(tmp_path)
    data = read_intent_collection(features, qrels, cache=False)
    assert data.intents.shape == (N_INTENTS, N_Q * DOCS) and data.n_levels == 2
    d = np.tile(np.arange(DOCS), N_Q)
    for k in range(N_INTENTS):
        np.testing.assert_array_equal(data.intents[k], ((d == k) | (d == k + 4)).astype(int))
    np.testing.assert_array_equal(data.train.y, (data.intents.max(axis=0)))   # IID labels: the union
    assert data.train.y.sum() == N_Q * DOCS   # every document is relevant to one intent here


def test_type1_shuffles_judged_intents_per_query_and_evaluates_under_each(tmp_path):
    data = read_intent_collection(*_write_collection(tmp_path), cache=False)
    fed = P.type1(data, True, seed=1)
    intent_of = np.empty((N_INTENTS, N_Q), dtype=int)
    for c, client in enumerate(fed.clients):
        labels = client.labels.reshape(N_Q, DOCS)
        assert (labels.sum(axis=1) == 2).all()
        intent_of[c] = labels.argmax(axis=1)          # document k marks intent k
    for q in range(N_Q):
        assert sorted(intent_of[:, q]) == list(range(N_INTENTS))   # a permutation per query
    assert len({tuple(intent_of[:, q]) for q in range(N_Q)}) > 1  # and not the same one
    # The paper's evaluation: the training queries under every intent.
    assert fed.y_test.shape == data.intents.shape and fed.X_test is data.train.X
    iid = P.type1(data, False, seed=1)
    assert all(np.array_equal(c.labels, data.train.y) for c in iid.clients)
    assert P.type4(data, True, mix="type1", seed=1).y_test.shape == data.intents.shape
    r = run_federated(fed, "linear", 3, seed=0, eval_every=3)
    assert np.isfinite(r.offline.value).all()


def test_malformed_collection_is_named(tmp_path):
    features, qrels = _write_collection(tmp_path)
    bad = tmp_path / "bad.txt"
    bad.write_text(features.read_text().replace("# clueweb-1-0", "", 1))
    with pytest.raises(ValueError, match=r"bad.txt:1: no document id"):
        read_intent_collection(bad, qrels, cache=False)
    bad_qrels = tmp_path / "badq.txt"
    bad_qrels.write_text("1 0 clueweb-1-0\n")
    with pytest.raises(ValueError, match=r"badq.txt:1: expected 'qid iteration docid label'"):
        read_intent_collection(features, [bad_qrels], cache=False)
    other = tmp_path / "other.txt"
    other.write_text("1 0 another-doc 1\n")
    with pytest.raises(ValueError, match="none of its relevant"):
        read_intent_collection(features, [other], cache=False)
