"""Run files of the merge notebooks: every experiment's ``scorers`` (and `fusion_models`)
rank the test set as the experiment's tables judged it, so the run files written from them
read back in ranx with the tables' per-query values; notebook 03's `run_scorers` names
each split's models and writes M_full once."""

import importlib.util
from types import SimpleNamespace

import numpy as np
import pytest

from ltrlib import trec
from ltrlib.data.dataset import Dataset, Scorer
from ltrlib.merge import fusion, linear, selection, stacking
from ltrlib.metrics import evaluate


class ColumnModel:
    """Scores a dataset by one feature column (plus a little of another, to avoid ties)."""

    def __init__(self, j):
        self.j = j

    def score(self, data):
        X = np.asarray(data.X, dtype=np.float64)
        return X[:, self.j] + 1e-3 * X[:, 1 - self.j]


def _ds(nq, seed, docs=8):
    rng = np.random.default_rng(seed)
    n = nq * docs
    y = rng.integers(0, 3, n)
    X = np.column_stack([y + rng.normal(size=n), y + 2 * rng.normal(size=n), rng.normal(size=n)])
    return Dataset(X=X, y=y, query_ids=np.arange(nq) + 1000 * seed, offsets=np.arange(nq + 1) * docs,
                   feature_names=("f0", "f1", "f2"), name=f"d{seed}")


def _split(merge_sizes=(30, 30)):
    clients = [SimpleNamespace(name=f"client{i + 1}", merge=_ds(nq, 2 + i)) for i, nq in enumerate(merge_sizes)]
    return SimpleNamespace(name="Split1", full=SimpleNamespace(test=_ds(25, 1)), clients=clients)


MODELS = {"M1": ColumnModel(0), "M2": ColumnModel(1)}


def _assert_scorers_rank_as_judged(scorers, per_query, test):
    """Each scorer's NDCG@10 on ``test``, query by query, is its row of ``per_query``."""
    judged = per_query[per_query.metric == "ndcg@10"]
    assert set(scorers) == set(judged.model)
    for name, model in scorers.items():
        assert isinstance(model, Scorer), name
        got = evaluate(test, model.score(test), metrics="ndcg@10", per_query=True).value.to_numpy()
        np.testing.assert_array_equal(got, judged[judged.model == name].value.to_numpy(), err_msg=name)


def test_linear_experiment_scorers_are_the_local_models_and_the_merges():
    split = _split()
    exp = linear.linear_experiment(split, MODELS, step=0.1, sweep=False)
    assert list(exp.scorers) == ["M1", "M2", "M12α", "M21α"]
    _assert_scorers_rank_as_judged(exp.scorers, exp.per_query, split.full.test)


@pytest.mark.skipif(importlib.util.find_spec("ranx") is None, reason="ranx is not installed")
def test_fusion_models_rebuilt_from_the_weights_rank_as_the_experiment_judged():
    split = _split()
    per_query, weights = fusion.fusion_experiment(split, MODELS)
    fused = fusion.fusion_models(MODELS, weights)
    assert list(fused) == [*fusion.FUSIONS, "M12wsum", "M21wsum"]
    assert fused["M12wsum"].params == {"weights": weights.weights[0]}
    _assert_scorers_rank_as_judged(fused, per_query, split.full.test)
    with pytest.raises(ValueError, match="splits"):
        fusion.fusion_models(MODELS, weights.assign(split=["Split1", "Split2"]))
    with pytest.raises(ValueError, match="M12wsum"):
        fusion.fusion_models(MODELS, weights.assign(weights=[(1.0,), (0.5, 0.5)]))


def test_selection_scorers_hold_the_selectors_and_the_oracle():
    split = _split()
    exp = selection.selection_experiment(split, MODELS, seed=0)
    assert list(exp.scorers) == ["M12sel", "M21sel", "oracle"]
    assert isinstance(exp.scorers["oracle"], selection.OracleChoice)
    _assert_scorers_rank_as_judged(exp.scorers, exp.per_query, split.full.test)


def test_stacking_scorers_hold_a_uniform_merge_where_d_merge_is_empty():
    split = _split()
    split.clients[0].merge = split.clients[0].merge.take(np.array([], dtype=np.int64))
    exp = stacking.stacking_experiment(split, MODELS, tuning=stacking.STACKING_TUNING.replace(n_trials=1), n_folds=2)
    assert list(exp.scorers) == ["M12S", "M21S"] and list(exp.meta) == ["M21S"]
    assert exp.scorers["M12S"].weights == {"M1": 0.5, "M2": 0.5}
    _assert_scorers_rank_as_judged(exp.scorers, exp.per_query, split.full.test)


@pytest.mark.skipif(importlib.util.find_spec("ranx") is None, reason="ranx is not installed")
def test_run_files_read_back_in_ranx_with_the_tables_values(tmp_path):
    from ltrlib.report import Reporter
    from ltrlib.trec import import_ranx

    ranx = import_ranx()
    split = _split()
    exp = linear.linear_experiment(split, MODELS, step=0.1, sweep=False)
    report = Reporter("r", "04_linear_merge", root=tmp_path)
    paths = report.run_files(exp.scorers, split.full.test, prefix="Split1.")
    qrels = trec.ranx_qrels(report.runs_dir / "qrels.gz")
    judged = exp.per_query[exp.per_query.metric == "ndcg@10"]
    for name, path in paths.items():
        # Our NDCG's gain is 2^label - 1: ranx's ndcg_burges (its ndcg's gain is the label).
        got = ranx.evaluate(qrels, trec.ranx_run(path), "ndcg_burges@10",
                            return_mean=False)
        want = judged[judged.model == name.removeprefix("Split1.")].value.to_numpy()
        # ColumnModel's scores are distinct, so ranx's unstable sort orders as ours does.
        np.testing.assert_allclose(got, want, rtol=1e-9, err_msg=name)


def test_run_scorers_write_each_split_s_models_and_m_full_once():
    from ltrlib.clients import ClientModels, run_scorers

    test = _ds(10, 1)
    full = ColumnModel(0)
    rankers = {(s, m): ColumnModel(i % 2) for s in ("Split1", "Split2") for i, m in enumerate(("M1", "M2"))}
    rankers |= {(s, "M_full"): full for s in ("Split1", "Split2")}
    # Each split's DS1 and DS2' are its own data; DS is one collection's test part.
    tests = {s: {"DS1": _ds(4, 5 + i), "DS2'": _ds(4, 7 + i), "DS": test} for i, s in enumerate(("Split1", "Split2"))}
    scorers, data = run_scorers(ClientModels(rankers, {}, tests))
    assert list(scorers) == ["Split1.M1", "Split1.M2", "Split2.M1", "Split2.M2", "M_full"]
    assert data is test and scorers["M_full"] is full
    with pytest.raises(ValueError, match="test_set"):
        run_scorers(ClientModels(rankers, {}, tests), test_set="DS2")
    with pytest.raises(ValueError, match="Split2's DS1 differs"):
        run_scorers(ClientModels(rankers, {}, tests), test_set="DS1")
