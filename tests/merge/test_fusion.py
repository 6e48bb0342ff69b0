"""Standard fusion on ranx (beyond the paper): CombSUM and RRF against hand computations,
the tuned weighted sum picking the better model, scores back in the data's row order."""

from types import SimpleNamespace

import importlib.util

import numpy as np
import pytest

from ltrlib.data import Dataset

# Not pytest.importorskip, which imports ranx plainly: ltrlib imports it through
# ltrlib.trec.import_ranx, keeping numba's threading layer safe for this worker's other tests.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("ranx") is None, reason="ranx is not installed")


def _data(seed=0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 12, 25)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    X = rng.normal(size=(offsets[-1], 3)).astype(np.float32)
    y = np.clip(np.round(X[:, 0] + 1), 0, 4).astype(np.int32)
    return Dataset(X, y, rng.permutation(500)[:25], offsets)


def _per_query(scores, offsets, f):
    return np.concatenate([f(scores[a:b]) for a, b in zip(offsets[:-1], offsets[1:])])


def test_combsum_and_rrf_are_the_textbook_sums():
    from ltrlib.merge.fusion import fuse_scores

    data = _data()
    rng = np.random.default_rng(1)
    scores = {"M1": rng.normal(size=data.n_docs), "M2": rng.normal(size=data.n_docs)}
    minmax = sum(_per_query(s, data.offsets, lambda q: (q - q.min()) / (q.max() - q.min())) for s in scores.values())
    np.testing.assert_allclose(fuse_scores(data, scores, "sum", "min-max"), minmax, rtol=1e-6)
    rank = lambda q: np.argsort(np.argsort(-q)) + 1  # noqa: E731  (1 = top)
    rrf = sum(_per_query(s, data.offsets, lambda q: 1 / (60 + rank(q))) for s in scores.values())
    np.testing.assert_allclose(fuse_scores(data, scores, "rrf", "rank"), rrf, rtol=1e-6)


def test_the_tuned_weighted_sum_leans_on_the_model_that_ranks():
    """On D_merge M1 ranks by the labels' source and M2 is noise: the weights tuned there
    favour M1, and the experiment's tables name every fusion."""
    from ltrlib.merge.fusion import FUSIONS, fusion_experiment

    test, merge1, merge2 = _data(0), _data(1), _data(2)
    models = {"M1": SimpleNamespace(score=lambda ds: ds.X[:, 0].astype(float)),
              "M2": SimpleNamespace(score=lambda ds: np.sin(100 * ds.X[:, 2].astype(float)))}
    split = SimpleNamespace(name="Split1", full=SimpleNamespace(test=test),
                            clients=[SimpleNamespace(merge=merge1), SimpleNamespace(merge=merge2)])
    per_query, weights = fusion_experiment(split, models)
    assert set(per_query.model) == {*FUSIONS, "M12wsum", "M21wsum"}
    assert set(per_query.qid) == set(test.query_ids) and set(per_query.split) == {"Split1"}
    assert all(w[0] > w[1] for w in weights.weights)
    means = per_query[per_query.metric == "ndcg@10"].groupby("model").value.mean()
    assert means["M12wsum"] > means["RRF"]


def test_an_empty_d_merge_gives_equal_weights():
    """A small collection can leave a client's D_merge without queries: its weighted sum is
    not tuned, and its weights are equal (the linear merge's ties go to α = 0.5)."""
    from ltrlib.merge.fusion import fusion_experiment

    test = _data(0)
    empty = Dataset(np.zeros((0, 3), np.float32), np.zeros(0, np.int32), np.zeros(0, np.int64), np.array([0]))
    models = {"M1": SimpleNamespace(score=lambda ds: ds.X[:, 0].astype(float)),
              "M2": SimpleNamespace(score=lambda ds: ds.X[:, 1].astype(float))}
    split = SimpleNamespace(name="S", full=SimpleNamespace(test=test),
                            clients=[SimpleNamespace(merge=empty), SimpleNamespace(merge=_data(1))])
    _, weights = fusion_experiment(split, models)
    assert weights.weights[0] == (0.5, 0.5) and weights.merge_queries.tolist() == [0, 25]


def test_a_cached_fusion_is_read_back_as_computed_and_other_inputs_miss_it(tmp_path, monkeypatch):
    """Notebook 05 reads back what 04 computed on the same inputs (the same frames, weights
    as floats); other scores are other inputs, computed afresh; a half-written pair (the
    weights without the per-query file) is computed again."""
    import pandas as pd

    from ltrlib.merge import fusion

    test = _data(0)
    models = {"M1": SimpleNamespace(score=lambda ds: ds.X[:, 0].astype(float)),
              "M2": SimpleNamespace(score=lambda ds: ds.X[:, 1].astype(float))}
    split = SimpleNamespace(name="Split1", full=SimpleNamespace(test=test),
                            clients=[SimpleNamespace(merge=_data(1)), SimpleNamespace(merge=_data(2))])
    fresh = fusion.fusion_experiment(split, models, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("fusion-Split1-*.parquet"))) == 2
    calls = []
    real = fusion.tuned_wsum
    monkeypatch.setattr(fusion, "tuned_wsum", lambda *a: calls.append(a) or real(*a))
    again = fusion.fusion_experiment(split, models, cache_dir=tmp_path)
    assert calls == []  # read back, not tuned again
    pd.testing.assert_frame_equal(again[0], fresh[0])
    pd.testing.assert_frame_equal(again[1], fresh[1])
    assert all(type(w) is float for ws in again[1].weights for w in ws)
    other = {**models, "M2": SimpleNamespace(score=lambda ds: ds.X[:, 2].astype(float))}
    fusion.fusion_experiment(split, other, cache_dir=tmp_path)
    assert len(calls) == 2 and len(list(tmp_path.glob("fusion-Split1-*.per_query.parquet"))) == 2
    for done in tmp_path.glob("*.per_query.parquet"):
        done.unlink()  # an interrupted write leaves the weights alone
    fusion.fusion_experiment(split, models, cache_dir=tmp_path)
    assert len(calls) == 4


def test_fusion_baselines_run_each_split_on_its_linear_experiments_scores(tmp_path, monkeypatch):
    """Notebooks 04 and 05's fusion baselines: one frame of every split's per-query results
    and one of the weights, each split's in the order named, from its experiment's scores."""
    import pandas as pd

    from ltrlib.merge import fusion

    seen = []

    def fake(split, models, test_scores, metrics, cache_dir):
        seen.append((split, models, test_scores, metrics, cache_dir))
        return pd.DataFrame({"split": [split]}), pd.DataFrame({"split": [split], "w": [0.5]})

    monkeypatch.setattr(fusion, "fusion_experiment", fake)
    experiments = {n: SimpleNamespace(test_scores=f"scores of {n}") for n in ("Split1", "Split2")}
    per_query, weights = fusion.fusion_baselines({"Split1": "s1", "Split2": "s2"}, {"Split1": "m1", "Split2": "m2"},
                                                 experiments, ["Split2", "Split1"], cache_dir=tmp_path)
    assert per_query.split.tolist() == ["s2", "s1"] and weights.split.tolist() == ["s2", "s1"]
    assert seen[0] == ("s2", "m2", "scores of Split2", fusion.TABLE_METRICS, tmp_path)


def test_ranx_sees_one_key_width_whatever_the_collection():
    """numba compiles ranx's kernels for each width of the document keys, so the fusions key
    documents by row at one width (`RANX_KEY_DIGITS`) on every collection, in row order within
    each query, where `docnos` widen with the longest query and the query ids."""
    from ltrlib.merge.fusion import _runs
    from ltrlib.trec import RANX_KEY_DIGITS, docnos

    small = _data()
    offsets = np.array([0, 3, 1203])  # a query of 1,200 documents: docnos four digits wide
    wide = Dataset(np.zeros((1203, 3), np.float32), np.zeros(1203, np.int32), np.array([7, 123456]), offsets)
    widths = [{len(d) for d in docnos(data.query_ids, data.offsets)} for data in (small, wide)]
    assert widths[0] != widths[1]
    for data in (small, wide):
        _, ids, qids = _runs(data, [np.zeros(data.n_docs)], ["M"])
        assert {len(i) for i in ids} == {RANX_KEY_DIGITS}
        assert list(ids) == sorted(ids) and len(set(ids)) == data.n_docs
