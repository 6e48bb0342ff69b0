"""TREC run files and qrels read back by ranx and ir_measures, who must score every query as
our metrics do (where scores are distinct: the module docstring says how ties differ)."""

import gzip

import numpy as np
import pytest

from ltrlib import reproducibility, trec
from ltrlib.metrics import average_precision, ndcg, reciprocal_rank

# Gain 2^label - 1, ours and ranx's ndcg_burges; trec_eval's default gain is the label itself.
GAINS = {rel: 2**rel - 1 for rel in range(5)}


def _ranx():
    """ranx through `ltrlib.trec.import_ranx` (pytest.importorskip would import it plainly,
    and its numba threading layer would abort this worker's threaded tests)."""
    try:
        return trec.import_ranx()
    except ImportError:
        pytest.skip("ranx is not installed")


def _data(seed=0, queries=30):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, queries)
    sizes[3] = 1  # a one-document query
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    qids = rng.permutation(1000)[:queries]
    y = rng.integers(0, 5, offsets[-1])
    y[offsets[5]:offsets[6]] = 0  # a query without a relevant document
    return qids, offsets, y, rng.normal(size=offsets[-1])


def test_the_files_hold_our_order_and_read_back_exactly(tmp_path):
    qids, offsets, y, s = _data()
    s[offsets[0] + 1] = s[offsets[0]]  # a tie in the first query
    run = trec.read_run(trec.write_run(tmp_path / "m.run", qids, offsets, s, "Bi-λMART w/o d"))
    assert list(run.columns) == list(trec.RUN_COLUMNS) and len(run) == offsets[-1]
    assert set(run.tag) == {"Bi-λMART_w/o_d"} and set(run.Q0) == {"Q0"}
    first = run[run.qid == str(qids[0])]
    assert first["rank"].tolist() == list(range(1, offsets[1] + 1))
    assert (np.diff(first.score.to_numpy()) <= 0).all()
    # The tie keeps row order (row 0 before row 1), as our metrics rank it.
    tied = first[first.score == s[offsets[0]]].docno.tolist()
    assert tied == sorted(tied) and tied[0].endswith("-00")
    # Scores survive the text exactly.
    back = dict(zip(run.docno, run.score))
    ids = trec.docnos(qids, offsets)
    assert all(back[d] == v for d, v in zip(ids, s))
    qrels = trec.read_qrels(trec.write_qrels(tmp_path / "qrels", qids, offsets, y))
    assert qrels.rel.tolist() == y.tolist() and qrels.docno.tolist() == ids.tolist()
    # Compressed when the name says so.
    gz = trec.write_run(tmp_path / "m.run.gz", qids, offsets, s, "m")
    assert gzip.open(gz).read(2) and trec.read_run(gz).score.tolist() == trec.read_run(tmp_path / "m.run").score.tolist()


def _ours(y, s, offsets, qids):
    return {"ndcg@10": dict(zip(map(str, qids), ndcg(y, s, offsets, 10))),
            "map": dict(zip(map(str, qids), average_precision(y, s, offsets))),
            "mrr": dict(zip(map(str, qids), reciprocal_rank(y, s, offsets)))}


def test_ranx_scores_every_query_as_we_do(tmp_path):
    ranx = _ranx()
    qids, offsets, y, s = _data(1)
    qrels = ranx.Qrels.from_file(str(trec.write_qrels(tmp_path / "qrels", qids, offsets, y)), kind="trec")
    run = ranx.Run.from_file(str(trec.write_run(tmp_path / "m.run", qids, offsets, s, "m")), kind="trec")
    ours = _ours(y, s, offsets, qids)
    theirs = {m: ranx.evaluate(qrels, run, name, return_mean=False)
              for m, name in (("ndcg@10", "ndcg_burges@10"), ("map", "map"), ("mrr", "mrr"))}
    # ranx leaves out queries without a relevant document (ours score them 0 by convention).
    judged = [str(q) for q, a, b in zip(qids, offsets[:-1], offsets[1:]) if y[a:b].max() > 0]
    for metric in ours:
        by_query = dict(zip(qrels.keys(), theirs[metric]))
        agree = [q for q in judged if abs(by_query[q] - ours[metric][q]) < 1e-9]
        assert len(agree) == len(judged), (metric, sorted(set(judged) - set(agree)))


def test_ir_measures_scores_every_query_as_we_do(tmp_path):
    ir_measures = pytest.importorskip("ir_measures")
    qids, offsets, y, s = _data(2)
    qrels = list(ir_measures.read_trec_qrels(str(trec.write_qrels(tmp_path / "qrels", qids, offsets, y))))
    run = list(ir_measures.read_trec_run(str(trec.write_run(tmp_path / "m.run", qids, offsets, s, "m"))))
    measures = {"ndcg@10": ir_measures.nDCG(gains=GAINS) @ 10, "map": ir_measures.AP, "mrr": ir_measures.RR}
    ours = _ours(y, s, offsets, qids)
    judged = {str(q) for q, a, b in zip(qids, offsets[:-1], offsets[1:]) if y[a:b].max() > 0}
    for metric, measure in measures.items():
        theirs = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
        assert set(theirs) >= judged
        assert all(abs(theirs[q] - ours[metric][q]) < 1e-9 for q in judged), metric


def test_explicit_docnos_name_a_subsets_documents_as_the_full_qrels_do(tmp_path):
    """A re-ranker's run lists part of each query (notebook 06's top-k lists) under the ids the
    full data give its documents; against the full qrels ranx then divides by the full
    list's ideal DCG, as our NDCG with ``ideal_dcg`` does."""
    ranx = _ranx()
    from ltrlib.metrics import ideal_dcg

    qids, offsets, y, s = _data(3)
    keep = (np.arange(offsets[-1]) - np.repeat(offsets[:-1], np.diff(offsets))) % 3 == 0  # each query's row 0
    sub = np.concatenate([[0], np.cumsum(np.add.reduceat(keep.astype(np.int64), offsets[:-1]))])
    ids = trec.docnos(qids, offsets)[keep]
    path = trec.write_run(tmp_path / "top.run", qids, sub, s[keep], "top", docnos=ids)
    assert sorted(trec.read_run(path).docno) == sorted(ids)
    qrels = ranx.Qrels.from_file(str(trec.write_qrels(tmp_path / "qrels", qids, offsets, y)), kind="trec")
    theirs = dict(zip(qrels.keys(), ranx.evaluate(qrels, ranx.Run.from_file(str(path), kind="trec"),
                                                  "ndcg_burges@10", return_mean=False)))
    ours = ndcg(y[keep], s[keep], sub, 10, ideal_dcg=ideal_dcg(y, offsets, 10))
    judged = [(str(q), v) for q, v, a, b in zip(qids, ours, offsets[:-1], offsets[1:]) if y[a:b].max() > 0]
    assert all(abs(theirs[q] - v) < 1e-9 for q, v in judged) and any(v < 1 for _, v in judged)
    with pytest.raises(ValueError, match="docnos holds 3 ids for .* scored documents"):
        trec.write_run(tmp_path / "bad.run", qids, sub, s[keep], "top", docnos=ids[:3])
    with pytest.raises(ValueError, match="docnos repeats"):
        trec.write_run(tmp_path / "bad.run", qids, sub, s[keep], "top", docnos=np.r_[ids[:1], ids[:-1]])
    assert not (tmp_path / "bad.run").exists()


def test_bad_input_is_refused_by_name(tmp_path):
    qids, offsets, y, s = _data()
    s[4] = np.nan
    with pytest.raises(ValueError, match="score of row 4 is nan"):
        trec.write_run(tmp_path / "m.run", qids, offsets, s, "m")
    with pytest.raises(ValueError, match="3 scores for"):
        trec.write_run(tmp_path / "m.run", qids, offsets, s[:3], "m")
    with pytest.raises(ValueError, match="tag must not be empty"):
        trec.write_run(tmp_path / "m.run", qids, offsets, np.zeros_like(s), "  ")
    assert not (tmp_path / "m.run").exists()  # nothing half-written
    (tmp_path / "bad.run").write_text("1 Q0 d 1\n")
    with pytest.raises(ValueError, match=r"bad.run: not a TREC file of 6 columns \(line 1 has fewer\)"):
        trec.read_run(tmp_path / "bad.run")


def test_importing_ranx_leaves_numbas_threading_layer_alone(monkeypatch):
    """ranx sets numba's layer to workqueue, which is not thread-safe: two threads launching
    our parallel NDCG kernel at once then abort the process (FOLTR's Dask threads did)."""
    import numba

    monkeypatch.setattr(numba.config, "THREADING_LAYER", "default")
    _ranx()
    assert numba.config.THREADING_LAYER == "default"


def test_ranx_leaves_numbas_typed_containers_compiled_on_disk():
    """ranx's runs are numba typed dicts, whose operations numba compiled afresh in every
    kernel (about 9 s a process). After `import_ranx` they are kept in numba's cache: of two
    new processes, the second reads back what the first compiled (or read) rather than
    compiling it."""
    import subprocess
    import sys

    count_hits = (
        "from ltrlib.trec import import_ranx; import_ranx()\n"
        "from numba import types; from numba.core.caching import FunctionCache\n"
        "from numba.typed import Dict, typeddict\n"
        "assert isinstance(typeddict._contains._cache, FunctionCache), typeddict._contains._cache\n"
        "d = Dict.empty(types.unicode_type, types.float64); d['a'] = 1.0; assert 'a' in d\n"
        "print(sum(typeddict._contains.stats.cache_hits.values()))")
    hits = [subprocess.run([sys.executable, "-c", count_hits], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert hits[1].strip() == "1", hits


def test_the_runs_command_lists_a_runs_files_and_how_to_score_them(tmp_path, capsys):
    from ltrlib import cli
    from ltrlib.data import Dataset
    from ltrlib.report import Reporter

    qids, offsets, y, s = _data(queries=8)
    data = Dataset(np.zeros((y.size, 1), np.float32), y, qids, offsets)
    rep = Reporter("r", "04_linear_merge", root=tmp_path)
    rep.run_file("M12α", data, s)
    rep.run_file("M1", data, -s)
    listing = trec.list_runs(rep.run_dir)
    assert listing.run.tolist() == ["M1.run.gz", "M12α.run.gz"] and (listing.queries == 8).all()
    assert (listing.documents == y.size).all() and set(listing.qrels) == {"qrels.gz"}
    assert cli.main(["runs", str(rep.run_dir)]) == 0
    out = capsys.readouterr().out
    assert "M12α.run.gz" in out and "trec_eval" in out and "ndcg_burges@10" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["runs", str(empty)]) == 0 and "no run files" in capsys.readouterr().out


def test_the_runs_command_gives_the_command_that_reproduces_notebook_07s_mean_over_intents(tmp_path, capsys):
    """07's offline NDCG@10 leaves out queries without a relevant document and averages the
    intents' means; the tools count those queries as 0. The command `ltrlib runs` prints for a
    run judged by several qrels gives the table's number, and the plain mean is lower."""
    import re
    import subprocess
    import sys

    from ltrlib import cli
    from ltrlib.data import Dataset
    from ltrlib.report import Reporter

    _ranx()
    qids, offsets, y, s = _data(queries=12)
    rng = np.random.default_rng(5)
    intents = [np.where(rng.random(y.size) < 0.2, y, 0) for _ in range(2)]  # many queries lose every relevant one
    data = [Dataset(np.zeros((y.size, 1), np.float32), labels, qids, offsets) for labels in intents]
    rep = Reporter("r", "07_foltr_noniid", root=tmp_path)
    rep.run_file_records([trec.RunFile("type1.d.linear.perfect.none", data[0], s, "qrels.intent0",
                                       {"qrels.intent1": data[1]})])
    assert cli.main(["runs", str(rep.run_dir)]) == 0
    out = capsys.readouterr().out
    assert "judged by 2 qrels" in out and "counts those queries as 0" in out
    code, args = re.search(r'python -c "(import sys, statistics.*?)" (\S+ \S+ \S+)\n?$', out, re.S).groups()
    got = float(subprocess.run([sys.executable, "-c", code, *args.split()], capture_output=True, text=True,
                               check=True).stdout)
    table = np.mean([np.nanmean(ndcg(labels, s, offsets, k=10, no_relevant="exclude")) for labels in intents])
    plain = np.mean([ndcg(labels, s, offsets, k=10, no_relevant="zero").mean() for labels in intents])
    assert got == pytest.approx(table, abs=1e-12) and plain < table


def test_tied_scores_are_written_in_ascending_docno_and_trec_eval_reads_them_descending(tmp_path):
    """docs/ecosystem.md, Ties: the file holds our order (ties by row, so ascending docno);
    trec_eval (here through ir_measures' pytrec_eval) re-sorts ties by descending docno, and
    reads the file's own order when the score is the negated rank."""
    M = pytest.importorskip("ir_measures")
    offsets, qids = np.array([0, 3]), np.array([3])
    labels, scores = np.array([0, 1, 1]), np.array([0.5, 0.4, 0.5])  # rows 0 and 2 tied
    run = trec.write_run(tmp_path / "r.run", qids, offsets, scores, "m")
    qrels = trec.write_qrels(tmp_path / "q.qrels", qids, offsets, labels)
    assert trec.read_run(run).docno.tolist() == ["3-0", "3-2", "3-1"]
    ours = ndcg(labels, scores, offsets, k=10)[0]  # 3-0 (0), 3-2 (1), 3-1 (1)
    theirs = ndcg(labels[[2, 0, 1]], np.array([3.0, 2.0, 1.0]), offsets, k=10)[0]  # 3-2 before 3-0
    measure = M.nDCG(gains=GAINS) @ 10
    assert abs(theirs - ours) > 0.1
    assert M.calc_aggregate([measure], M.read_trec_qrels(str(qrels)), M.read_trec_run(str(run)))[measure] \
        == pytest.approx(theirs)
    ranked = tmp_path / "ranked.run"
    ranked.write_text("".join(f"{q} Q0 {d} {r} {-r} m\n" for q, d, r in trec.read_run(run)[["qid", "docno", "rank"]]
                              .itertuples(index=False)))
    assert M.calc_aggregate([measure], M.read_trec_qrels(str(qrels)), M.read_trec_run(str(ranked)))[measure] \
        == pytest.approx(ours)


def test_agreement_counts_queries_where_ranx_and_ours_part_and_says_when_ties_explain_it(tmp_path):
    from ltrlib.data import Dataset
    from ltrlib.report import Reporter

    qids, offsets, y, s = _data(queries=12)
    data = Dataset(np.zeros((y.size, 1), np.float32), y, qids, offsets)
    rep = Reporter("r", "08_xgboost_backends", root=tmp_path)
    rep.run_file("distinct", data, s)
    rep.run_file("tied", data, np.round(s))  # many ties: ranx's order may differ from ours
    counts = reproducibility.agreement_counts(rep.run_dir).set_index(["run", "metric"])
    judged = sum(y[a:b].max() > 0 for a, b in zip(offsets[:-1], offsets[1:]))
    distinct = counts.loc["distinct.run.gz"]
    assert (distinct.compared == judged).all() and (distinct.agree == judged).all()
    tied = counts.loc["tied.run.gz"]
    assert (tied.differ_untied == 0).all() and (tied.agree + tied.differ_tied == tied.compared).all()
    assert list(trec.list_runs(rep.run_dir).qrels) == ["qrels.gz", "qrels.gz"]


def test_agreement_gives_ranx_one_key_width_whatever_the_docnos(tmp_path, monkeypatch):
    """numba compiles ranx's kernels for each width of the document keys: `agreement` keys
    the run's and the qrels' documents at `RANX_KEY_DIGITS` on collections whose docnos
    differ in width, the same key for the same docno, and scores as it did with them."""
    from ltrlib.data import Dataset
    from ltrlib.report import Reporter

    ranx = trec.import_ranx()
    real_evaluate, seen = ranx.evaluate, []

    def evaluate(qrels, run, *args, **kwargs):
        seen.append(({len(d) for docs in qrels.qrels.values() for d in docs},
                     {len(d) for docs in run.run.values() for d in docs},
                     all(set(run.run[q]) <= set(qrels.qrels[q]) for q in run.run)))
        return real_evaluate(qrels, run, *args, **kwargs)

    monkeypatch.setattr(ranx, "evaluate", evaluate)
    qids, offsets, y, s = _data(queries=12)
    widths = []
    for name, ids in (("narrow", qids), ("wide", qids + 10**6)):
        data = Dataset(np.zeros((y.size, 1), np.float32), y, ids, offsets)
        rep = Reporter(name, "08_xgboost_backends", root=tmp_path)
        rep.run_file("distinct", data, s)
        widths.append({len(d) for d in trec.docnos(data.query_ids, data.offsets)})
        a = reproducibility.agreement(rep.run_dir / "runs" / "08_xgboost_backends" / "distinct.run.gz",
                           rep.run_dir / "runs" / "08_xgboost_backends" / "qrels.gz")
        assert a.agree.dropna().all() and len(a) > 0
    assert widths[0] != widths[1]
    assert seen == [({trec.RANX_KEY_DIGITS}, {trec.RANX_KEY_DIGITS}, True)] * 2
    with pytest.raises(ValueError, match="ranx_keys: codes must lie in"):
        trec.ranx_keys([10**trec.RANX_KEY_DIGITS])


def _pair_of_models(root, run_id, advanced_q2_rank, doc_prefix=""):
    """A run folder of notebook 08 with two models on two queries of three documents, the
    relevant one first (``d0``): the baseline ranks it second in both queries (RR 1/2), the
    advanced model first in query 1 and at ``advanced_q2_rank`` in query 2."""
    from ltrlib.data import Dataset
    from ltrlib.report import Reporter

    offsets, y = np.array([0, 3, 6]), np.array([1, 0, 0, 1, 0, 0])
    data = Dataset(np.zeros((6, 1), np.float32), y, np.array([1, 2]), offsets)
    rep = Reporter(run_id, "08_xgboost_backends", root=root)
    rep.run_file("base", data, np.array([2.0, 3.0, 1.0, 2.0, 3.0, 1.0]))
    q2 = {1: [3.0, 2.0, 1.0], 2: [2.0, 3.0, 1.0]}[advanced_q2_rank]
    rep.run_file("adv", data, np.array([3.0, 2.0, 1.0, *q2]))
    return rep.run_dir


def test_repro_eval_measures_a_reproduction_and_a_replication_by_hand(tmp_path):
    """RR: the original improves every query by 1/2 (mean 1/2 -> 1), the reproduction only
    query 1 (1/2 -> 3/4): ER = (1/4)/(1/2) = 0.5, ΔRI = RI_orig - RI_rep = 1 - 0.5 = 0.5; the
    baselines are identical (KTU 1, RMSE 0), the advanced runs part on query 2 only."""
    pytest.importorskip("repro_eval")
    original = _pair_of_models(tmp_path, "orig", 1)
    kind, same = reproducibility.reproduction(original, _pair_of_models(tmp_path, "again", 1), "08", "base", "adv")
    value = same.set_index(["statistic", "model", "measure"]).value
    assert kind == "reproduction" and value["KTU", "advanced", "order"] == pytest.approx(1.0)
    assert value["ER", "both", "RR"] == pytest.approx(1.0) and value["ΔRI", "both", "RR"] == pytest.approx(0.0)
    kind, worse = reproducibility.reproduction(original, _pair_of_models(tmp_path, "worse", 2), "08", "base.run.gz", "adv")
    value = worse.set_index(["statistic", "model", "measure"]).value
    assert value["ER", "both", "RR"] == pytest.approx(0.5) and value["ΔRI", "both", "RR"] == pytest.approx(0.5)
    assert value["KTU", "baseline", "order"] == pytest.approx(1.0) and value["KTU", "advanced", "order"] < 1
    assert value["RMSE", "baseline", "RR"] == 0 and value["RMSE", "advanced", "RR"] == pytest.approx(
        np.sqrt(((1 - 1) ** 2 + (1 - 0.5) ** 2) / 2))
    # Other data (another twin seed: other labels) is a replication: no paired statistic.
    other = _pair_of_models(tmp_path, "other", 2)
    qrels = other / "runs" / "08_xgboost_backends" / "qrels.gz"
    trec.write_qrels(qrels, [1, 2], [0, 3, 6], [1, 0, 0, 0, 1, 0])
    kind, frame = reproducibility.reproduction(original, other, "08", "base", "adv")
    assert kind == "replication" and set(frame.statistic) == {"ER", "ΔRI", "t-test p"}


def test_repro_eval_refuses_what_it_cannot_find_by_name(tmp_path, capsys):
    from ltrlib import cli

    run_dir = _pair_of_models(tmp_path, "orig", 1)
    with pytest.raises(ValueError, match=r"no run 'M12' in 08_xgboost_backends \(runs: adv.run.gz, base.run.gz\)"):
        trec.find_run(run_dir, "08", "M12")
    with pytest.raises(ValueError, match="notebook '07' matches 0 run folders"):
        trec.find_run(run_dir, "07", "adv")
    with pytest.raises(ValueError, match="not by 'qrels.intent1.gz'"):
        trec.find_run(run_dir, "08", "adv", qrels="qrels.intent1.gz")
    pytest.importorskip("repro_eval")
    # A model judged by other labels (its own qrels): its "improvement" would not be one.
    from ltrlib.data import Dataset
    from ltrlib.report import Reporter

    other = Dataset(np.zeros((6, 1), np.float32), np.array([0, 1, 0, 1, 0, 0]), np.array([1, 2]), np.array([0, 3, 6]))
    Reporter("orig", "08_xgboost_backends", root=tmp_path).run_file("relabelled", other, np.arange(6.0),
                                                                    qrels="qrels.other")
    with pytest.raises(ValueError, match=r"'base' is judged by qrels.gz and 'relabelled' by qrels.other.gz"):
        reproducibility.reproduction(run_dir, run_dir, "08", "base", "relabelled")
    assert cli.main(["reproduce-eval", str(run_dir), str(run_dir), "--notebook", "08", "--baseline", "base",
                     "--advanced", "adv"]) == 0
    out = capsys.readouterr().out
    assert "reproduction" in out and "KTU" in out and "ER" in out


def test_run_records_name_each_models_run_of_one_test_set():
    from ltrlib.data import Dataset

    data = Dataset(np.zeros((3, 1), np.float32), np.array([1, 0, 2]), np.array([4]), np.array([0, 3]))
    records = trec.run_records({"a": np.arange(3.0), "b": -np.arange(3.0)}, data, qrels="qrels.test")
    assert [(r.name, r.qrels, r.data is data, r.docnos) for r in records] == [("a", "qrels.test", True, None),
                                                                             ("b", "qrels.test", True, None)]


# --------------------------------------------------------------------------- bad input
# Issue 63: each bad run or qrels file, the clear message naming it (and its line where it
# has one), and nothing the user owns changed. Hand-made files of a few lines.
RUN = "1 Q0 1-1 1 3.0 m\n1 Q0 1-0 2 2.0 m\n\n1 Q0 1-2 3 1.0 m\n2 Q0 2-0 1 1.5 m\n"
QRELS = "1 0 1-0 1\n1 0 1-1 0\n1 0 1-2 0\n2 0 2-0 1\n"


def _crc_broken(text: str) -> bytes:
    data = bytearray(gzip.compress(text.encode()))
    data[-8] ^= 0xFF  # gzip's CRC-32 of the text, in the trailer
    return bytes(data)


READ_BAD = [
    # (case, file name, content, line or None, words the message must contain)
    ("gzip cut short", "m.run.gz", gzip.compress(RUN.encode())[:-12], None, "gzip stream is cut short"),
    ("gzip corrupt", "m.run.gz", _crc_broken(RUN), None, "corrupt gzip data"),
    ("a .gz that is not gzip", "m.run.gz", RUN.encode(), None, "named .gz but not gzip-compressed"),
    ("a .gz of 0 bytes", "m.run.gz", b"", None, "an empty file (0 bytes)"),
    ("gzip under a plain name", "m.run", gzip.compress(RUN.encode()), None, "name it m.run.gz"),
    ("not UTF-8", "m.run", RUN.replace("1-0", "1-\xe9").encode("latin-1"), 2, "not UTF-8"),
    ("too few columns", "m.run", RUN.replace(" 1.0 m\n", " 1.0\n"), 4, "(line 4 has fewer)"),
    ("too many columns", "m.run", RUN.replace(" 1.0 m\n", " 1.0 m x\n"), 4, "(line 4 has 7)"),
    ("nan score", "m.run", RUN.replace(" 1.0 m", " nan m"), 4, "score 'nan' of docno '1-2' is not a finite"),
    ("inf score", "m.run.gz", gzip.compress(RUN.replace("3.0", "inf").encode()), 1, "score 'inf' of docno '1-1'"),
    ("-Infinity score", "m.run", RUN.replace("1.5", "-Infinity"), 5, "score '-Infinity' of docno '2-0'"),
    ("score not a number", "m.run", RUN.replace("2.0", "two"), 2, "score 'two' is not a number"),
    ("rank not an integer", "m.run", RUN.replace(" 3 1.0", " 3.5 1.0"), 4, "rank '3.5' is not a 64-bit integer"),
    ("duplicate docno", "m.run", RUN.replace("1-2", "1-1"), 4, "docno '1-1' of query '1' again (first at line 1)"),
    ("qrels cut short", "qrels.gz", gzip.compress(QRELS.encode())[:-3], None, "gzip stream is cut short"),
    ("qrels not gzip", "qrels.gz", QRELS.encode(), None, "named .gz but not gzip-compressed"),
    ("qrels label not an integer", "qrels", QRELS.replace("2-0 1", "2-0 0.5"), 4, "rel '0.5' is not a 64-bit"),
    ("qrels duplicate docno", "qrels", QRELS.replace("1-2", "1-0"), 3, "docno '1-0' of query '1' again"),
]


@pytest.mark.parametrize("name,content,line,words", [c[1:] for c in READ_BAD], ids=[c[0] for c in READ_BAD])
def test_a_bad_run_or_qrels_file_is_refused_by_file_and_line(tmp_path, name, content, line, words):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    read = trec.read_qrels if name.startswith("qrels") else trec.read_run
    with pytest.raises(trec.TrecFormatError) as e:
        read(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: ") and words in msg and "\n" not in msg, msg
    assert (e.value.path, e.value.line) == (str(path), line) and (line is None or f"line {line}" in msg), msg
    assert isinstance(e.value, ValueError)  # the CLI's one mechanism for a one-line error
    assert path.read_bytes() == (content if isinstance(content, bytes) else content.encode())
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_a_run_of_no_lines_reads_as_the_writer_wrote_it(tmp_path):
    """A dataset without documents (an empty D_merge) writes runs and qrels of no lines:
    they read back as empty frames, blank lines and all; CRLF lines read as LF ones."""
    empty = trec.write_run(tmp_path / "e.run.gz", [], [0], [], "m")
    assert trec.read_run(empty).empty and trec.read_qrels(trec.write_qrels(tmp_path / "q", [], [0], [])).empty
    (tmp_path / "blank.run").write_text("\n  \n")
    assert trec.read_run(tmp_path / "blank.run").empty
    (tmp_path / "crlf.run").write_bytes(RUN.replace("\n", "\r\n").encode())
    assert trec.read_run(tmp_path / "crlf.run").equals(trec.read_run(_written(tmp_path / "lf.run", RUN)))


def _written(path, text):
    path.write_text(text)
    return path


NB = "08_xgboost_backends"
FOLDER = {  # a run folder by hand: two models of notebook 08 on two queries, judged by one qrels
    "base.run.gz": "1 Q0 1-1 1 3.0 base\n1 Q0 1-0 2 2.0 base\n1 Q0 1-2 3 1.0 base\n"
                   "2 Q0 2-1 1 3.0 base\n2 Q0 2-0 2 2.0 base\n2 Q0 2-2 3 1.0 base\n",
    "adv.run.gz": "1 Q0 1-0 1 3.0 adv\n1 Q0 1-1 2 2.0 adv\n1 Q0 1-2 3 1.0 adv\n"
                  "2 Q0 2-0 1 3.0 adv\n2 Q0 2-1 2 2.0 adv\n2 Q0 2-2 3 1.0 adv\n",
    "qrels.gz": "1 0 1-0 1\n1 0 1-1 0\n1 0 1-2 0\n2 0 2-0 1\n2 0 2-1 0\n2 0 2-2 0\n",
    "runs.csv": "run,qrels\nadv.run.gz,qrels.gz\nbase.run.gz,qrels.gz\n",
}


def _gz(text):
    return gzip.compress(text.encode(), mtime=0)


def _dup(text):
    lines = text.splitlines(True)
    return "".join([*lines[:2], lines[2].replace("1-2", "1-0"), *lines[3:]])


FOLDER_BAD = [
    # (case, file, new bytes (None: deleted), what `runs`, `runs --check` and `reproduce-eval` say:
    #  "" for nothing, "error: <words>" or "warning: <words>"; the file named is `file` or runs.csv)
    ("intact", "base.run.gz", _gz(FOLDER["base.run.gz"]), ("", "", "")),
    ("run gzip cut short", "base.run.gz", _gz(FOLDER["base.run.gz"])[:-12], ("error: gzip stream is cut short",) * 3),
    ("run not gzip", "base.run.gz", FOLDER["base.run.gz"].encode(), ("error: not gzip-compressed",) * 3),
    ("run of 0 bytes", "base.run.gz", b"", ("error: an empty file (0 bytes)",) * 3),
    ("run of no lines", "base.run.gz", _gz(""),
     ("", "warning: no lines; nothing to compare", "error: no lines; repro_eval has nothing to compare")),
    ("run nan score", "base.run.gz", _gz(FOLDER["base.run.gz"].replace("2.0 base", "nan base", 1)),
     ("error: line 2: score 'nan'",) * 3),
    ("run inf score", "base.run.gz", _gz(FOLDER["base.run.gz"].replace("1.0 base", "inf base", 1)),
     ("error: line 3: score 'inf'",) * 3),
    ("run duplicate docno", "base.run.gz", _gz(_dup(FOLDER["base.run.gz"])),
     ("error: line 3: docno '1-0' of query '1' again (first at line 2)",) * 3),
    ("run listed but missing", "base.run.gz", None,
     ("warning: line 3 lists the run base.run.gz, but", "error: line 3 lists the run base.run.gz, but",
      "error: line 3 lists the run base.run.gz, but")),
    # The listing reads the runs, not the qrels: --check and reproduce-eval read those.
    ("qrels gzip cut short", "qrels.gz", _gz(FOLDER["qrels.gz"])[:-12],
     ("", *("error: gzip stream is cut short",) * 2)),
    ("qrels not gzip", "qrels.gz", FOLDER["qrels.gz"].encode(), ("", *("error: not gzip-compressed",) * 2)),
    ("qrels of no lines", "qrels.gz", _gz(""), ("", "warning: no lines; nothing to compare",
                                                "error: no lines; repro_eval has nothing to compare")),
    ("qrels duplicate docno", "qrels.gz", _gz(_dup(FOLDER["qrels.gz"])), ("", *("error: line 3: docno '1-0'",) * 2)),
    ("qrels listed but missing", "qrels.gz", None, ("warning: line 2 judges adv.run.gz by qrels.gz, but",
                                                    *("error: line 2 judges adv.run.gz by qrels.gz, but",) * 2)),
    ("index of other columns", "runs.csv", b"model,labels\nadv.run.gz,qrels.gz\n",
     ("error: line 1: columns model,labels, not run,qrels",) * 3),
]
COMMANDS = {"runs": [], "runs --check": ["--check"], "reproduce-eval": None}


@pytest.mark.parametrize("file,content,said", [c[1:] for c in FOLDER_BAD], ids=[c[0] for c in FOLDER_BAD])
def test_the_run_commands_say_what_is_wrong_in_one_line_and_change_nothing(tmp_path, capsys, file, content, said):
    """`ltrlib runs`, `runs --check` and `reproduce-eval` on a run folder with one bad file:
    the exit status, one line naming the file (an error, or a warning where reading on is
    right), no traceback, and every file of the folder as it was."""
    from ltrlib import cli

    pytest.importorskip("repro_eval")
    _ranx()
    folder = tmp_path / "r" / "runs" / NB
    folder.mkdir(parents=True)
    for name, text in FOLDER.items():
        (folder / name).write_bytes(text.encode() if name.endswith(".csv") else _gz(text))
    if content is None:
        (folder / file).unlink()
    else:
        (folder / file).write_bytes(content)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    named = folder / ("runs.csv" if content is None else file)
    run_dir = str(tmp_path / "r")
    for (command, flags), says in zip(COMMANDS.items(), said):
        argv = ["runs", run_dir, *flags] if flags is not None else [
            "reproduce-eval", run_dir, run_dir, "--notebook", "08", "--baseline", "base", "--advanced", "adv"]
        status = cli.main(argv)
        err = capsys.readouterr().err
        assert status == (1 if says.startswith("error") else 0), (command, err)
        lines = [line for line in err.splitlines() if line.startswith("ltrlib ")]
        if not says:
            assert not lines, (command, err)
            continue
        kind, words = says.split(": ", 1)
        assert len(lines) == 1 and lines[0].startswith(f"ltrlib {argv[0]}: {kind}: {named}"), (command, err)
        assert words in lines[0] and "Traceback" not in err, (command, err)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
