"""Final rankers from run_jobs and their run files: the data each run's offline NDCG ranks,
one qrels name per label set, every run and every qrels written once."""

import numpy as np
import pytest

from ltrlib.data import Dataset
from ltrlib.foltr import partition as P
from ltrlib.foltr import simulate as S
from ltrlib.metrics import ndcg


def _toy(n_queries, seed, name):
    rng = np.random.default_rng(seed)
    n = n_queries * 12
    X = rng.random((n, 4)).astype(np.float32)
    y = np.clip(np.floor(X[:, 0] * 5 + rng.normal(0, 0.3, n)), 0, 4).astype(np.int32)
    return Dataset(X=X, y=y, query_ids=np.arange(n_queries) + 100 * seed, offsets=np.arange(0, n + 1, 12),
                   category=rng.integers(0, 8, n).astype(np.int32), name=name)


@pytest.fixture(scope="module")
def toy():
    return P.prepare_data(_toy(40, 0, "toy"), _toy(20, 1, "toy_test"))


def _offline_ndcg(files, name):
    """The mean over a run's label sets (Type 1: the intents) of the mean NDCG@10 over
    queries with a relevant document: what run_federated's offline NDCG computes."""
    scores = next(rf.scores for rf in files if rf.name == name)
    rf = next(rf for rf in files if rf.name == name)
    label_sets = [rf.data, *rf.other_labels.values()]
    return np.mean([np.nanmean(ndcg(d.y, scores, d.offsets, k=10, no_relevant="exclude")) for d in label_sets])


def test_kept_rankers_give_the_runs_offline_ndcg(toy):
    jobs = S.grid(["type1", "type2_R1"], [3, 4], rankers=("linear", "neural"), n_rounds=4, eval_every=2)
    keep = S.table2_jobs(jobs, 3)
    assert len(keep) == 4 and all(j.setting == "type1" and j.seed == 3 for j in keep)
    keep += [j for j in jobs if j.setting == "type2_R1" and j.seed == 3 and j.ranker == "linear"]
    off, online, rankers = S.run_jobs(toy, jobs, n_jobs=1, progress=False, keep_rankers=keep)
    assert set(rankers) == set(keep)
    files = S.final_run_files(toy, rankers)
    # Every run once; each Type 1 run judged by the four intents' qrels, the others by the test's.
    assert sorted(rf.name for rf in files) == sorted(S.job_run_name(j) for j in keep)
    intents = [f"qrels.intent{k}" for k in range(P.N_INTENTS)]
    for rf in files:
        assert [rf.qrels, *rf.other_labels] == (intents if rf.name.startswith("type1.") else ["qrels"])
    assert "type1.non-IID.neural.perfect.none" in {rf.name for rf in files}
    for rf in files:
        part = toy.train if rf.name.startswith("type1.") else toy.test
        assert np.array_equal(rf.data.query_ids, part.query_ids) and rf.scores.shape == (part.n_docs,)
    for job in keep:
        name = S.job_run_name(job)
        row = online[(online.setting == job.setting) & (online.ranker == job.ranker) & (online.seed == job.seed)
                     & (online.data == ("non-IID" if job.noniid else "IID"))]
        assert _offline_ndcg(files, name) == pytest.approx(float(row.final_offline.iloc[0]), abs=1e-12), name


def test_a_type1_run_is_judged_by_every_intent_in_the_index(toy, tmp_path):
    from ltrlib import trec
    from ltrlib.report import Reporter

    jobs = S.grid(["type1"], [3], noniid=(True,), n_rounds=2, eval_every=2)
    _, _, rankers = S.run_jobs(toy, jobs, n_jobs=1, progress=False, keep_rankers=jobs)
    (rf,) = S.final_run_files(toy, rankers)
    rep = Reporter("r", "07_foltr_noniid", root=tmp_path)
    rep.run_file(rf.name, rf.data, rf.scores, qrels=rf.qrels, other_labels=rf.other_labels)
    listed = trec.list_runs(rep.run_dir)
    assert listed.qrels.tolist() == [", ".join(f"qrels.intent{k}.gz" for k in range(P.N_INTENTS))]
    for k, ds in enumerate([rf.data, *rf.other_labels.values()]):
        assert trec.read_qrels(rep.runs_dir / f"qrels.intent{k}.gz").rel.tolist() == ds.y.tolist()


def test_errors(toy):
    jobs = S.grid(["type1"], [3, 4], noniid=(True,), n_rounds=2, eval_every=2)
    assert len(S.run_jobs(toy, jobs[:1], n_jobs=1, progress=False)) == 2  # no keep_rankers: as before
    with pytest.raises(ValueError, match="not among jobs"):
        S.run_jobs(toy, jobs[:1], n_jobs=1, progress=False, keep_rankers=jobs[1:])
    fedper = S.grid(["type1"], [3], noniid=(True,), rankers=("neural",), remedies=[("fedper", 0.0)],
                    n_rounds=2, eval_every=2)
    with pytest.raises(ValueError, match="FedPer job"):
        S.run_jobs(toy, fedper, n_jobs=1, progress=False, keep_rankers=fedper)
    # Synthesised intents differ by seed: two seeds' Type 1 labels under one qrels name are refused.
    _, _, rankers = S.run_jobs(toy, jobs, n_jobs=1, progress=False, keep_rankers=jobs)
    with pytest.raises(ValueError, match="pass the rankers of one seed"):
        S.final_run_files(toy, rankers)
    with pytest.raises(TypeError, match="expected a FoltrRanker"):
        S.final_run_files(toy, {jobs[0]: "weights"})
    other = P.prepare_data(_toy(30, 2, "other"), _toy(20, 1, "toy_test"))
    with pytest.raises(ValueError, match="built from other data"):
        P.evaluation_sets(toy, S.build_federation(other, jobs[0]))
