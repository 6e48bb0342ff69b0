"""ltrlib.foltr.rankers: a trained ranker scores a Dataset through ltrlib's one contract."""

import numpy as np
import pytest

from ltrlib.data import Dataset, Scorer
from ltrlib.foltr import partition as P
from ltrlib.foltr.federated import run_federated
from ltrlib.foltr.rankers import FoltrRanker, make_ranker, score_all
from ltrlib.metrics import ndcg


def _data(n_queries, seed, docs=10):
    """Labels follow feature 0, as the federated tests' toy set; per-query scaling gives
    the prepared features values the raw ones do not have."""
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = (rng.random((n, 3)) * [5, 1, 2] + [1, 0, 3]).astype(np.float32)
    y = np.clip(np.floor((X[:, 0] - 1) + rng.normal(0, 0.3, n)), 0, 4).astype(np.int32)
    return Dataset(X=X, y=y, query_ids=np.arange(n_queries) + 100 * seed,
                   offsets=np.arange(0, n + 1, docs), name=f"d{seed}")


@pytest.fixture(scope="module")
def data():
    return P.prepare_data(_data(30, 0), _data(12, 1))


@pytest.mark.parametrize("kind", ["linear", "neural"])
def test_trained_ranker_scores_a_dataset_as_the_kernel(data, kind):
    res = run_federated(P.iid(data, 2, 5), kind, 20, seed=3, eval_every=20, hidden=6)
    model = res.ranker
    assert isinstance(model, Scorer) and isinstance(model, FoltrRanker)
    scores = model.score(data.test)
    assert scores.shape == (data.test.n_docs,) and scores.dtype == np.float64
    spec = make_ranker(kind, data.train.n_features, 6)
    np.testing.assert_array_equal(scores, spec.score(res.weights, data.test.X))
    # The per-document compiled kernel the loop trains with (neural: the evaluation's
    # float32 product differs from it by ~1e-6).
    kernel = np.empty(data.test.n_docs)
    score_all(spec.kind_id, spec.hidden, np.array(res.weights), data.test.X, kernel)
    np.testing.assert_allclose(scores, kernel, rtol=0, atol=0 if kind == "linear" else 1e-5)
    # It is the model the run measured: its NDCG@10 on the test Dataset is the last offline value.
    per_query = ndcg(data.test.y, scores, data.test.offsets, k=10, no_relevant="exclude")
    assert np.nanmean(per_query) == res.offline.value.iloc[-1]


def test_trained_ranker_is_frozen_and_refuses_other_features(data):
    spec = make_ranker("linear", data.train.n_features)
    w = np.array([1.0, 0.0, 0.0])
    model = FoltrRanker(spec, w)
    w[0] = 5.0                                # the model holds its own copy
    assert model.weights[0] == 1.0
    with pytest.raises(ValueError, match="read-only"):
        model.weights[0] = 2.0
    with pytest.raises(ValueError, match=r"weights have shape \(2,\), expected \(3,\)"):
        FoltrRanker(spec, np.zeros(2))
    narrow = Dataset(X=np.zeros((2, 2)), y=[0, 1], query_ids=[0], offsets=[0, 2], name="narrow")
    with pytest.raises(ValueError, match="dataset 'narrow' has 2 features, the ranker was trained on 3"):
        model.score(narrow)
    # Feature 0 ranks the prepared test set: the scores are that column, per-query scaled.
    np.testing.assert_array_equal(model.score(data.test), data.test.X[:, 0].astype(np.float64))
