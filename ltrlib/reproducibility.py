"""Reproduction analyses of our TREC run files: whether our metrics and ranx agree on a
run, query by query (`agreement`, `agreement_counts`), and repro_eval's reproduction and
replication measures between two run folders (`reproduction`). They read the files that
`ltrlib.trec` writes and lists, and score with `ltrlib.metrics`.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ltrlib.trec import TrecFormatError, TrecWarning, find_run, import_ranx, list_runs, ranx_keys, read_qrels, read_run
from ltrlib.trec.files import read_checked
from ltrlib.trec.ranx_adapter import qrels_frame_to_ranx, run_frame_to_ranx

__all__ = ["RANX_NAMES", "REPRO_MEASURES", "agreement", "agreement_counts", "reproduction"]


#: ranx's names of our metrics (`agreement`): our NDCG gains 2^label - 1, ranx's ndcg_burges.
RANX_NAMES = {"ndcg": "ndcg_burges@{k}", "map": "map", "mrr": "mrr"}


def agreement(run_path: str | os.PathLike, qrels_path: str | os.PathLike, k: int = 10) -> pd.DataFrame:
    """A run file scored query by query by `ltrlib.metrics` and by ranx: ``qid, metric,
    ours, ranx, tied, agree`` for each query with a relevant document (for the others the
    conventions differ: ranx scores 0, ours 1, `ltrlib.metrics.ranking`). Ours ranks by the
    file's ``rank`` column, ranx by the scores, so they may part only where a query has
    ``tied`` scores. NDCG@k divides by the ideal DCG of every judged document of the query
    (a re-ranker's run lists its top-k only); AP and RR are compared where the run holds
    every relevant document (else NaN). Scored over flat arrays with query offsets, all
    queries at once. An empty run or qrels leaves nothing to compare: a `TrecWarning` names
    it and the frame is empty."""
    from ltrlib.metrics import average_precision, ideal_dcg, ndcg, reciprocal_rank

    run, qrels = read_run(run_path), read_qrels(qrels_path)
    if run.empty or qrels.empty:
        # The writers write such files for data without documents; ranx would fail on them
        # with a numpy message naming neither.
        empty = [str(p) for p, f in ((run_path, run), (qrels_path, qrels)) if f.empty]
        warnings.warn(f"{' and '.join(empty)}: no lines; nothing to compare", TrecWarning, stacklevel=2)
        return pd.DataFrame(columns=["qid", "metric", "ours", "ranx", "tied", "agree"])
    ranx = import_ranx()
    names = {m: name.format(k=k) for m, name in RANX_NAMES.items()}
    # ranx meets the documents under keys of one width (`ranx_keys`), the same key for a
    # docno in the run and the qrels: the scores, and so every untied order, are the file's.
    codes = pd.factorize(pd.concat([qrels.docno, run.docno], ignore_index=True))[0]
    judged_qrels = qrels_frame_to_ranx(qrels.assign(docno=ranx_keys(codes[:len(qrels)])))
    keyed_run = run_frame_to_ranx(run.assign(docno=ranx_keys(codes[len(qrels):])), Path(run_path).name)
    theirs = ranx.evaluate(judged_qrels, keyed_run, list(names.values()), return_mean=False)
    theirs = pd.DataFrame({m: np.atleast_1d(theirs[name]) for m, name in names.items()},
                          index=pd.Index(list(judged_qrels.keys()), name="qid"))
    # The queries compared: in the run, in ranx's result, with a relevant judged document
    # (without one, ranx scores 0 and ours 1 by convention).
    relevant = qrels[qrels.rel > 0]
    keep = run.qid.isin(theirs.index) & run.qid.isin(relevant.qid)
    run = run[keep].sort_values(["qid", "rank"], kind="stable")
    if run.empty:
        return pd.DataFrame(columns=["qid", "metric", "ours", "ranx", "tied", "agree"])
    y = run.merge(qrels[["qid", "docno", "rel"]], on=["qid", "docno"], how="left").rel.fillna(0).to_numpy(np.float64)
    qids, starts = np.unique(run.qid.to_numpy(), return_index=True)  # sorted by qid, as the run is
    offsets = np.append(starts, len(run))
    order = -np.arange(len(run), dtype=np.float64)  # the file's order, no ties
    full = qrels[qrels.qid.isin(qids)].sort_values("qid", kind="stable")
    full_offsets = np.append(np.unique(full.qid.to_numpy(), return_index=True)[1], len(full))
    ndcgs = ndcg(y, order, offsets, k, ideal_dcg=ideal_dcg(full.rel.to_numpy(np.float64), full_offsets, k))
    # AP and RR divide by, or look for, every relevant document: only where the run holds all.
    found = np.add.reduceat((y > 0).astype(np.int64), starts)
    whole = found == relevant.groupby("qid").size().reindex(qids).to_numpy()
    aps = np.where(whole, average_precision(y, order, offsets), np.nan)
    rrs = np.where(whole, reciprocal_rank(y, order, offsets), np.nan)
    tied = run.duplicated(["qid", "score"]).groupby(run.qid.to_numpy()).any().reindex(qids).to_numpy()
    parts = []
    for m, ours in (("ndcg", ndcgs), ("map", aps), ("mrr", rrs)):
        value = theirs[m].reindex(qids).to_numpy()
        agree = pd.array(np.abs(ours - value) < 1e-9, dtype="boolean")
        agree[np.isnan(ours)] = pd.NA
        parts.append(pd.DataFrame({"qid": qids, "metric": names[m], "ours": ours, "ranx": value, "tied": tied,
                                   "agree": agree}))
    return pd.concat(parts, ignore_index=True)


def agreement_counts(run_dir: str | os.PathLike, k: int = 10) -> pd.DataFrame:
    """`agreement` of every run file of a run folder against each qrels that judges it
    (`list_runs`), counted: ``notebook, run, qrels, metric, compared, agree, differ_tied,
    differ_untied``. ``differ_untied``
    would be a disagreement our documented conventions do not explain. A run or qrels the
    indexes list but that is missing is a `TrecFormatError`: the counts would leave it out."""
    rows = []
    for r in list_runs(run_dir, strict=True).itertuples():
        folder = Path(run_dir) / "runs" / r.notebook
        for qrels in r.qrels.split(", ") if r.qrels else []:
            a = agreement(folder / r.run, folder / qrels, k).dropna(subset=["agree"])
            for metric, g in a.groupby("metric", sort=False):
                rows.append({"notebook": r.notebook, "run": r.run, "qrels": qrels, "metric": metric, "compared": len(g),
                             "agree": int(g.agree.sum()),
                             "differ_tied": int((~g.agree.astype(bool) & g.tied).sum()),
                             "differ_untied": int((~g.agree.astype(bool) & ~g.tied).sum())})
    return pd.DataFrame(rows, columns=["notebook", "run", "qrels", "metric", "compared", "agree", "differ_tied",
                                       "differ_untied"])


#: repro_eval's measures `reproduction` reports by default, in ir_measures' names: trec_eval's
#: nDCG@10 (it gains the label itself, where our tables gain 2^label - 1), AP and RR.
REPRO_MEASURES = ("nDCG@10", "AP", "RR")


def reproduction(original: str | os.PathLike, reproduced: str | os.PathLike, notebook: str, baseline: str,
                 advanced: str, measures=REPRO_MEASURES, qrels: str = "") -> tuple[str, pd.DataFrame]:
    """repro_eval (Breuer et al., SIGIR 2020) between two runs of ours: the ``baseline`` and
    ``advanced`` models of ``notebook`` (`find_run`) in the ``original`` run folder, and the
    same two in the ``reproduced`` one.

    Where both folders judge the runs by the same qrels (the same data: a run again, on
    another machine or after a change), the pair is a *reproduction* (repro_eval's
    ``RpdEvaluator``): Kendall's τ Union and RBO between the two document orders, the RMSE
    between the per-query scores, the Effect Ratio and ΔRI of the advanced model's
    improvement, and the paired t-test's p per model. Where the qrels differ (another seed
    of the twin draws other queries and documents; the twin against a real collection) it
    is a *replication* (``RplEvaluator``): the orders and per-query scores cannot be paired,
    so only the Effect Ratio, ΔRI and the unpaired t-test apply.

    Returns the kind (``"reproduction"`` or ``"replication"``) and a frame ``statistic,
    model, measure, value`` (``model`` is ``baseline``, ``advanced`` or ``both``; ``measure``
    is ``order`` for KTU and RBO). repro_eval's own conventions hold: ties are broken by
    descending ``docno`` as trec_eval does, and RBO is its non-extrapolated form (p = 0.95,
    depth 1000), so two identical lists of n documents score 1 - 0.95^n, not 1.
    """
    import tempfile

    try:
        with warnings.catch_warnings():  # repro_eval 0.5 imports scipy.stats.stats, deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            import ir_measures
            from repro_eval.Evaluator import RplEvaluator, RpdEvaluator
    except ImportError as err:
        raise ImportError(f"reproduction needs repro_eval ({err}); pip install repro-eval") from None
    files = {}
    for name, folder in (("orig", original), ("rep", reproduced)):
        (files[f"run_b_{name}"], judged_b), (files[f"run_a_{name}"], judged_a) = (
            find_run(folder, notebook, model, qrels) for model in (baseline, advanced))
        # One qrels judges both models of a folder: their improvement is measured on one set of labels.
        if judged_b != judged_a and not read_qrels(judged_b).equals(read_qrels(judged_a)):
            raise ValueError(f"{folder}: {baseline!r} is judged by {judged_b.name} and {advanced!r} by "
                             f"{judged_a.name}, other labels; compare two models judged by one qrels")
        files[f"qrels_{name}"] = judged_a
    parsed = [ir_measures.parse_measure(m) for m in measures]
    same = read_qrels(files["qrels_orig"]).equals(read_qrels(files["qrels_rep"]))
    with tempfile.TemporaryDirectory() as tmp:
        plain = {}
        for key, path in files.items():  # repro_eval reads plain files only
            text, frame = read_checked(path, "qrels" if key.startswith("qrels") else "run")
            if frame.empty:
                # repro_eval fails on one with an AttributeError or KeyError naming no file.
                raise TrecFormatError(f"{path}: no lines; repro_eval has nothing to compare", path)
            plain[key] = str(Path(tmp) / f"{key}.txt")
            with open(plain[key], "w", encoding="utf-8") as out:
                out.write(text)
        paths = {f"{k}_path": v for k, v in plain.items() if k != "qrels_rep"}
        with warnings.catch_warnings():  # its constructor's ir_measures.convert_trec_name, deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            ev = RpdEvaluator(**paths) if same else RplEvaluator(**paths, qrels_rpl_path=plain["qrels_rep"])
        ev.measures = parsed  # all of trec_eval's by default: minutes on a large run
        ev.trim()
        ev.evaluate()
        rows = []

        def per_model(statistic: str, result: dict) -> None:
            # {model: value} of the document order (KTU, RBO), or {model: {measure: value}}
            for model, value in result.items():
                measures = value if isinstance(value, dict) else {"order": value}
                rows.extend((statistic, model, str(m), float(v)) for m, v in measures.items())

        def of_both(statistic: str, result: dict) -> None:
            # {measure: value} of the advanced model's improvement over the baseline (ER, ΔRI)
            rows.extend((statistic, "both", str(m), float(v)) for m, v in result.items())

        if same:
            per_model("KTU", ev.ktu())
            per_model("RBO", ev.rbo())
            per_model("RMSE", ev.rmse())
        of_both("ER", ev.er())
        of_both("ΔRI", ev.dri())
        per_model("t-test p", ev.ttest())
    frame = pd.DataFrame(rows, columns=["statistic", "model", "measure", "value"])
    return ("reproduction" if same else "replication"), frame
