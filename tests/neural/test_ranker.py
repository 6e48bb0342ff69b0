import numpy as np
import pytest

from ltrlib.data.dataset import Dataset
from ltrlib.metrics import ideal_dcg, ndcg
from ltrlib.neural import NeuralBudget, NeuralRanker
from ltrlib.neural.models import Architecture


def _data(n_queries: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, 11, n_queries)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    X = rng.normal(size=(offsets[-1], 5)).astype(np.float32)
    y = np.clip(np.round(X[:, 0] + X[:, 1] * X[:, 2] + 1), 0, 4).astype(np.int32)
    return Dataset(X, y, np.arange(n_queries), offsets)


def _fit(arch, loss, train, vali, steps=300, seed=0, lr=0.1):
    ranker = NeuralRanker(arch, loss=loss, learning_rate=lr, order_by=4,
                          budget=NeuralBudget(max_steps=steps, patience=steps, eval_every=50, batch_size=8, seed=seed))
    return ranker.fit(train, vali, train_ideal=ideal_dcg(train.y, train.offsets, 5),
                      vali_ideal=ideal_dcg(vali.y, vali.offsets, 5))


@pytest.mark.parametrize("arch", [Architecture("dnn", hidden=(32, 16), dropout=0.0),
                                  Architecture("gsf", hidden=(32, 16), dropout=0.0, group_size=2, difference=True),
                                  Architecture("attn_din", hidden=(32,), dropout=0.0, attention_layers=1, heads=2,
                                               size=8),
                                  Architecture("setrank", hidden=(), attention_layers=1, heads=2, size=16)],
                         ids=["dnn", "gsf2", "attn_din", "setrank"])
@pytest.mark.parametrize("loss", ["lambdarank", "softmax"])
def test_a_model_overfits_a_tiny_training_set(arch, loss):
    """Gradients flow through every part: 16 queries learnt to a training NDCG@5 near 1."""
    train = _data(16, 0)
    ranker = _fit(arch, loss, train, train, steps=400)
    fitted = ndcg(train.y, ranker.score(train), train.offsets, 5).mean()
    untrained = ndcg(train.y, np.zeros(train.n_docs), train.offsets, 5).mean()
    assert fitted > 0.95 > untrained


def test_a_seed_gives_identical_scores_and_another_seed_others():
    train, vali = _data(40, 1), _data(20, 2)
    arch = Architecture("attn_din", hidden=(16,), dropout=0.25, attention_layers=1, heads=2, size=8)
    a = _fit(arch, "softmax", train, vali, steps=60).score(vali)
    b = _fit(arch, "softmax", train, vali, steps=60).score(vali)
    c = _fit(arch, "softmax", train, vali, steps=60, seed=1).score(vali)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_early_stopping_keeps_the_best_evaluation():
    train, vali = _data(40, 3), _data(20, 4)
    ranker = _fit(Architecture("dnn", hidden=(16,), dropout=0.0), "lambdarank", train, vali, steps=300)
    assert len(ranker.curve) == ranker.steps // 50
    assert ranker.curve[ranker.best_step // 50 - 1] == max(ranker.curve)
    kept = ndcg(vali.y, ranker.score(vali), vali.offsets, 5, ideal_dcg=ideal_dcg(vali.y, vali.offsets, 5)).mean()
    assert kept == pytest.approx(max(ranker.curve), abs=1e-6)


def test_every_fit_records_its_curve_and_why_it_stopped():
    """The step of each evaluation, the kept step, and the stop reason: the step cap when
    patience never ran out, patience when it did (the fit converged)."""
    train, vali = _data(40, 3), _data(20, 4)
    arch = Architecture("dnn", hidden=(16,), dropout=0.0)
    capped = _fit(arch, "lambdarank", train, vali, steps=150)  # patience = steps: never runs out
    assert capped.curve_steps == [50, 100, 150] and capped.stop_reason == "step cap" and not capped.converged
    ranker = NeuralRanker(arch, loss="lambdarank", learning_rate=0.1, order_by=4,
                          budget=NeuralBudget(max_steps=5000, patience=100, eval_every=50, batch_size=8))
    ranker.fit(train, vali, train_ideal=ideal_dcg(train.y, train.offsets, 5),
               vali_ideal=ideal_dcg(vali.y, vali.offsets, 5))
    assert ranker.stop_reason == "patience" and ranker.converged
    assert ranker.steps == ranker.best_step + 100 < 5000 and ranker.curve_steps[-1] == ranker.steps


def test_bad_input_is_refused_by_name():
    train = _data(10, 5)
    with pytest.raises(ValueError, match="unknown loss 'listnet'"):
        NeuralRanker(Architecture("dnn"), loss="listnet")
    with pytest.raises(ValueError, match="vali_ideal must hold one ideal DCG per vali query"):
        NeuralRanker(Architecture("dnn", hidden=(4,))).fit(train, train, train_ideal=np.ones(10),
                                                           vali_ideal=np.ones(3))
    with pytest.raises(RuntimeError, match="not fitted"):
        NeuralRanker(Architecture("dnn")).score(train)
    with pytest.raises(ValueError, match="max_steps must be a positive integer"):
        NeuralBudget(max_steps=0)


def test_fit_pads_each_partition_once(monkeypatch):
    """Validation lists are padded once per fit, not at every evaluation (six here)."""
    from ltrlib.neural import ranker as ranker_module

    calls = []
    pad = ranker_module.pad_lists
    monkeypatch.setattr(ranker_module, "pad_lists", lambda *a, **k: calls.append(a[1].size) or pad(*a, **k))
    train, vali = _data(12, 3), _data(6, 4)
    _fit(Architecture("dnn", hidden=(8,), dropout=0.0), "softmax", train, vali, steps=300)
    assert sorted(calls) == sorted([train.offsets.size, vali.offsets.size])
