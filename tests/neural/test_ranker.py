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


# ---------------------------------------------------------------- the chunked loop (issue 61)

def _reference():
    """bench/reference_neural.py: the per-step loop of before issue 61 (bench/ is not a package)."""
    import importlib.util

    from ltrlib import config

    spec = importlib.util.spec_from_file_location("reference_neural",
                                                  config.PROJ_ROOT / "bench" / "reference_neural.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: One network of each family, with dropout (so the random streams must be consumed alike).
FAMILIES = {
    "dnn": (Architecture("dnn", hidden=(16, 8), dropout=0.25), "lambdarank"),
    "gsf2_with_d": (Architecture("gsf", hidden=(16, 8), dropout=0.25, group_size=2, difference=True), "softmax"),
    "gsf5": (Architecture("gsf", hidden=(16,), dropout=0.5, group_size=5), "lambdarank_slot_mean"),
    "attn_din": (Architecture("attn_din", hidden=(16,), dropout=0.25, attention_layers=1, heads=2, size=8,
                              attention_dropout=0.5), "lambdarank"),
    "setrank": (Architecture("setrank", hidden=(), attention_layers=2, heads=2, size=8, attention_dropout=0.25),
                "softmax"),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_the_chunked_loop_trains_as_the_per_step_loop(family):
    """Same seed, same batches, same arithmetic: the evaluation steps, the kept step and the
    stop reason are equal, the curve within 1e-6 (validation NDCG is float32 on the device,
    float64 on the host) and the kept network's scores within 1e-5. The budget makes the
    fits stop by patience or at a step cap that is not a multiple of the interval."""
    arch, loss = FAMILIES[family]
    train, vali = _data(50, 3), _data(300, 4)  # 300 validation lists: two chunks of 256
    ideal = dict(train_ideal=ideal_dcg(train.y, train.offsets, 5), vali_ideal=ideal_dcg(vali.y, vali.offsets, 5))
    fits = []
    for per_step in (False, True):
        ranker = NeuralRanker(arch, loss=loss, learning_rate=0.1, order_by=4,
                              budget=NeuralBudget(max_steps=130, patience=60, eval_every=20, batch_size=8, seed=7))
        if per_step:
            _reference().fit_per_step(ranker, train, vali, **ideal)
        else:
            ranker.fit(train, vali, **ideal)
        fits.append(ranker)
    new, old = fits
    assert (new.curve_steps, new.best_step, new.stop_reason, new.steps) == \
        (old.curve_steps, old.best_step, old.stop_reason, old.steps)
    np.testing.assert_allclose(new.curve, old.curve, rtol=0, atol=1e-6)
    np.testing.assert_allclose(new.score(vali), old.score(vali), rtol=1e-5, atol=1e-5)
    assert len(set(np.round(new.curve, 4))) > 1  # the curve moved: the test can fail


def test_a_network_shape_compiles_once_whatever_its_learning_rate():
    """The learning rate is an argument of the compiled chunk, not a constant in it: a second
    trial of the same shape at another rate (and another seed) traces and compiles nothing
    (no program is even looked up in the persistent cache)."""
    import jax

    compiles = []

    def count(event, seconds, **_):
        if event in ("/jax/core/compile/backend_compile_duration", "/jax/core/compile/jaxpr_trace_duration"):
            compiles.append(event)

    train, vali = _data(30, 5), _data(10, 6)
    arch = Architecture("attn_din", hidden=(8,), dropout=0.5, attention_layers=1, heads=2, size=4,
                        attention_dropout=0.25)
    first = _fit(arch, "lambdarank", train, vali, steps=100, lr=0.1)
    first.score(vali)
    jax.monitoring.register_event_duration_secs_listener(count)
    try:
        again = _fit(arch, "lambdarank", train, vali, steps=100, lr=0.0123, seed=4)
        again.score(vali)
    finally:
        jax.monitoring.unregister_event_duration_listener(count)
    assert compiles == [] and again.curve != first.curve


def test_validation_ndcg_on_the_device_is_the_hosts_ties_and_all():
    """`_mean_ndcg` against `ltrlib.metrics.ndcg`: tied scores broken by flat row order
    although the padded lists are in another (canonical) order, -0.0 tied with 0.0, lists
    shorter than the cut-off, queries whose ideal DCG is 0 (NDCG 1), padding lists left out."""
    import jax.numpy as jnp

    from ltrlib.neural.lists import pad_lists
    from ltrlib.neural.ranker import _mean_ndcg

    data = _data(60, 8)
    rng = np.random.default_rng(9)
    scores = np.round(rng.normal(size=data.n_docs), 1).astype(np.float32)  # many ties
    scores[scores == 0] = rng.choice([0.0, -0.0], int((scores == 0).sum()))
    ideal = ideal_dcg(data.y, data.offsets, 5) * rng.choice([0.0, 1.0, 1.5], data.n_queries, p=[0.2, 0.4, 0.4])
    host = ndcg(data.y, scores.astype(np.float64), data.offsets, 5, ideal_dcg=ideal).mean()
    lists = pad_lists(data.X, data.offsets, data.y, list_size=12, order_by=4)
    padded = np.where(lists.mask, scores[np.maximum(lists.rows, 0)], 0.0)
    extra = 4  # padding lists, as the validation chunks have
    args = [np.concatenate([a, np.zeros((extra, *a.shape[1:]), a.dtype)])
            for a in (padded, lists.y, lists.rows, lists.mask)]
    real = np.r_[np.ones(data.n_queries, bool), np.zeros(extra, bool)]
    device = _mean_ndcg(*map(jnp.asarray, args), jnp.asarray(np.r_[ideal, np.zeros(extra)], jnp.float32),
                        jnp.asarray(real), 5)
    assert float(device) == pytest.approx(host, abs=1e-6)
    # Without the row order for ties the two disagree: the test can fail.
    shuffled = _mean_ndcg(*map(jnp.asarray, [args[0], args[1], -args[2], args[3]]),
                          jnp.asarray(np.r_[ideal, np.zeros(extra)], jnp.float32), jnp.asarray(real), 5)
    assert abs(float(shuffled) - host) > 1e-4
