"""Command line: ``ltrlib run ...``, ``ltrlib fidelity RUN_DIR``, ``ltrlib upgrade RUN ...``,
``ltrlib tune-worker ...``, ``ltrlib calibrate``, ``ltrlib formats`` and the rest (``ltrlib --help`` lists
them; also ``python -m ltrlib ...``). The package's only command line: modules have no ``__main__``.

Subcommands live in a subparser table so that others (``ltrlib data``, ``ltrlib bench`` ...)
can be added beside ``run`` without touching its options.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ltrlib import __version__, config, processes, sessions

__all__ = ["build_parser", "main", "parse_value"]


def parse_value(text: str) -> Any:
    """A ``-p`` value: JSON when it parses (numbers, true/false, null, lists, quoted strings),
    Python's True/False/None, else the text itself.

    So ``-p n_trees 500`` gives an int and ``-p model lgbm`` a string; quote to force a
    string that looks like a number: ``-p name '"123"'``.
    """
    python_literals = {"True": True, "False": False, "None": None}
    if text in python_literals:
        return python_literals[text]
    try:
        return json.loads(text)
    except ValueError:
        return text


#: The notebooks' standard data parameters, as `_add_data_arguments` adds them (argparse's
#: dest names, which are also the keyword names of `run_all`, `tune_worker` and `lab.main`).
_DATA_ARGUMENTS = ("dataset", "data_dir", "scale", "seed")


def _add_data_arguments(parser, *, dataset_help: str, seed_help: str) -> None:
    """``--dataset``, ``--data-dir``, ``--scale`` and ``--seed``: the notebooks' standard data
    parameters, which `run`, `tune-worker` and `lab` all take (read back by `_data_options`)."""
    parser.add_argument("--dataset", default="synthetic", metavar="synthetic|lightgbm-rank|PATH",
                        help=f"{dataset_help} (default: %(default)s)")
    parser.add_argument("--data-dir", default="", metavar="DIR", help="directory of the dataset's files, if separate")
    parser.add_argument("--scale", default="small", choices=sorted(config.SCALES),
                        help="synthetic data size (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help=f"{seed_help} (default: %(default)s)")


def _data_options(args: argparse.Namespace) -> dict[str, Any]:
    """The values of `_add_data_arguments`' options, as keywords for the handler's call."""
    return {name: getattr(args, name) for name in _DATA_ARGUMENTS}


def _add_run_parser(subparsers) -> None:
    run = subparsers.add_parser(
        "run",
        help="execute the notebooks into reports/<run_id>/",
        description="Execute the numbered notebooks with papermill into reports/<run_id>/ "
        "(executed notebooks, tables, figures, metrics.json, index.html). "
        "A repeated run with the same run_id resumes where it stopped.",
    )
    _add_data_arguments(run, dataset_help="'synthetic' (generated, no download), 'lightgbm-rank', or a path "
                        "to a LETOR/SVMlight dataset", seed_help="random seed")
    run.add_argument(
        "--run-id", default=None, metavar="ID", help="report directory name (default: <dataset>-<scale>-seed<seed>)"
    )
    run.add_argument(
        "--only",
        action="append",
        metavar="NN,...",
        help="run only these notebooks: numbers or names, comma-separated (repeatable)",
    )
    run.add_argument("--force", action="store_true", help="rerun completed notebooks; allow new parameters for a run_id")
    run.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        dest="parameters",
        help="extra notebook parameter; VALUE is parsed as JSON when possible (repeatable)",
    )
    run.add_argument("--jobs", type=int, default=1, metavar="N",
                     help="notebooks run at once (default 1): above 1 the batch runs as a graph, each notebook "
                     "once those it reads have completed, with the cores // N threads each (docs/running.md)")
    run.add_argument("--log-output", action="store_true", help="echo the notebooks' output while they run")
    run.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    _add_background(run, "its kernels")
    run.add_argument("--paper-dataset", default="", metavar="NAME",
                     help="the papers' dataset the data is (istella-s, mslr-web10k, mslr-web30k, yahoo-ltrc), "
                     "checked against its feature count: the fidelity ledger then compares the papers' printed "
                     "numbers for it")
    run.set_defaults(handler=_run)


def _add_fidelity_parser(subparsers) -> None:
    fid = subparsers.add_parser(
        "fidelity",
        help="rebuild the fidelity ledger (fidelity.md, .csv) of finished runs; over several seeds, each check's "
        "verdict across them",
        description="Decide every claim of each paper whose notebooks the run executed (the non-IID paper: "
        "00-05, Bi-LambdaMART: 06, FOLTR: 07, XGBoost's tutorial: 08) on its tables and on the paper's "
        "printed numbers; write fidelity.md, fidelity_claims.csv and, with notebooks 03-05, fidelity.csv "
        "(the non-IID paper's numbers beside ours) into each RUN. Given several runs that differ in their "
        "seed only, also print every check's verdict per seed and its verdict across the seeds by the rule "
        "of ltrlib.fidelity.across (docs/fidelity.md), with each comparison's effect and Effect Ratio and their "
        "95%% intervals in --csv.",
    )
    fid.add_argument("runs", nargs="+", metavar="RUN", help="run ids under reports/, or run directories")
    fid.add_argument("--csv", default=None, metavar="PATH",
                     help="with several runs: also write the across-seed table to this CSV file (its folder must "
                     "exist)")
    fid.set_defaults(handler=_fidelity)


def _fidelity(args: argparse.Namespace) -> int:
    from pathlib import Path

    import pandas as pd

    from ltrlib.atomic import atomic_path
    from ltrlib.fidelity import across_runs, write_fidelity
    from ltrlib.report import write_index

    dirs = [_run_dir(r) for r in args.runs]
    if args.csv:  # checked before any ledger is written: the atomic writer would create the folders
        csv = Path(args.csv)
        if csv.is_dir() or not csv.parent.is_dir():
            raise ValueError(f"--csv {args.csv}: " + ("is a folder; give a file path" if csv.is_dir() else
                                                     f"the folder {csv.parent} does not exist"))
    for run_dir in dirs:
        path = write_fidelity(run_dir)
        write_index(run_dir)
        print(path)
    if len(dirs) > 1:
        _, table = across_runs(dirs)
        with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_rows", 500,
                               "display.max_colwidth", 40):
            print(table[["source", "claim", "scope", "rule", "per_seed", "verdict", "p_holm"]].round(4)
                  .to_string(index=False))
        if args.csv:
            with atomic_path(args.csv) as tmp:
                table.to_csv(tmp, index=False)
        _print_bilambdamart_view(dirs)
    return 0


def _print_bilambdamart_view(dirs, metric: str = "ndcg@5", strict: bool = False) -> None:
    """Notebook 06's view of the runs: its comparisons' differences per seed and a t-test
    across the seeds (`ltrlib.fidelity.across_seeds`). When a run did not compare its
    models, ``strict`` raises the ValueError; otherwise a line says why it is not shown."""
    import pandas as pd

    from ltrlib.fidelity import across_seeds

    try:
        per_run, summary = across_seeds(dirs, metric)
    except ValueError as exc:
        if strict:
            raise
        print(f"\nnotebook 06 across seeds: not shown ({exc})")
        return
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print("\nnotebook 06 across seeds", per_run.round(4).to_string(index=False),
              summary.round(4).to_string(index=False), sep="\n\n")


def _add_upgrade_parser(subparsers) -> None:
    up = subparsers.add_parser(
        "upgrade", help="add the numbers of marked tables (<table>_numbers.csv) to runs and study records saved "
        "before tables kept them",
        description="Add, to each RUN_OR_RECORD, the numbers the fidelity ledger reads beside its printed marked "
        "tables (<table>_numbers.csv and .md): rebuilt from the per-query results with the notebook's own builder "
        "(notebooks 06 and 06_neural_competitors, at full precision), or from the printed table where no per-query "
        "results are kept (notebook 04's fusion_baselines: means at their printed decimals, as the numbers' caption "
        "says). A rebuilt table must print as the saved one byte for byte, or it is refused and nothing is written "
        "for it; no existing file is ever rewritten. Exit status 1 when a table was refused (docs/fidelity.md).")
    up.add_argument("runs", nargs="+", metavar="RUN_OR_RECORD",
                    help="a run id under reports/, a run directory, a study seed record "
                    "(reports/<study>/seeds/seed<N>) or a study folder (each of its recorded seeds)")
    up.set_defaults(handler=_upgrade)


def _upgrade(args: argparse.Namespace) -> int:
    from ltrlib.fidelity.upgrade import ADDED, PRESENT, REFUSED, record_folders, table_folders, upgrade_record

    folders = record_folders(_run_dir(r) for r in args.runs)
    for folder in folders:
        table_folders(folder)  # a folder that is neither a run nor a record is refused before anything is written
    refused = 0
    for folder in folders:
        done = upgrade_record(folder)
        counts = {o: sum(u.outcome == o for u in done) for o in (ADDED, PRESENT, REFUSED)}
        refused += counts[REFUSED]
        print(f"{folder}: {counts[ADDED]} added, {counts[PRESENT]} already there, {counts[REFUSED]} refused"
              + ("" if done else " (no marked table the ledger reads)"))
        for u in done:
            name = u.numbers.relative_to(folder).as_posix()
            print(f"  {u.outcome:8} {name}" + ("" if u.outcome == PRESENT else f": {u.note}"))
    return 1 if refused else 0


def _add_tune_worker_parser(subparsers) -> None:
    w = subparsers.add_parser(
        "tune-worker",
        help="join a shared Optuna study of notebook 03 and run its trials",
        description="Run trials of notebook 03's study STUDY ('full.M_full', 'Split1.M1', ...) in the "
        "database STORAGE, beside the notebook and any other worker, until the study has its trials. "
        "Give the notebook's data arguments; the training settings are read from the study, and a "
        "worker whose data or settings differ is refused.",
    )
    w.add_argument("--storage", required=True, metavar="URL",
                   help="the study database, e.g. postgresql://user@host:5432/db (the notebook's -p storage)")
    w.add_argument("--study", required=True, metavar="NAME", help="study name, '<split>.<model>', e.g. full.M_full")
    data = w.add_argument_group("data (as notebook 03's parameters)")
    _add_data_arguments(data, dataset_help="'synthetic', 'lightgbm-rank', or a LETOR/SVMlight dataset",
                        seed_help="seed of the data, the splits and training")
    data.add_argument("--category-feature", default="", metavar="FEATURE",
                      help="real data: the feature holding the topic category")
    data.add_argument("--category-bins", type=int, default=0, metavar="N",
                      help="above 0: quantile-bin --category-feature into N categories")
    for i, rank in enumerate(("most frequent", "most frequent", "second most frequent"), start=1):
        data.add_argument(f"--split{i}-category", default="auto", metavar="C",
                          help=f"category of Split{i}, as the notebook's (default: auto, the {rank} "
                               "query category: 11, 11, 14 on Istella-S)")
    run = w.add_argument_group("trials (default: as recorded in the study)")
    run.add_argument("--n-trials", type=int, default=None, metavar="N",
                     help="finished trials the study needs (default: its target; required to start a new study)")
    run.add_argument("--max-trees", type=int, default=None, metavar="N", help="most trees per trial")
    run.add_argument("--early-stopping", type=int, default=None, metavar="N",
                     help="stop after N trees without validation gain")
    run.add_argument("--backend", default=None, choices=("lightgbm", "xgboost"), help="training backend")
    run.add_argument("--start-from-paper", action=argparse.BooleanOptionalAction, default=None,
                     help="trial 0 is the paper's Table 6 median")
    run.add_argument("--prune", action=argparse.BooleanOptionalAction, default=None,
                     help="stop hopeless trials early (median pruner)")
    run.add_argument("--num-threads", type=int, default=2, metavar="N",
                     help="LightGBM threads; the notebook's for bit-identical trial values (default: %(default)s)")
    run.add_argument("--heartbeat", type=int, default=None, metavar="SECONDS", dest="heartbeat_interval",
                     help="seconds between a running trial's heartbeats "
                     "(a new study: ltrlib.train.tuning.HEARTBEAT_INTERVAL)")
    run.add_argument("--grace-period", type=int, default=None, metavar="SECONDS",
                     help="a trial without heartbeat this long is failed and run again "
                     "(a new study: ltrlib.train.tuning.GRACE_PERIOD)")
    run.add_argument("--wait", type=float, default=0, metavar="SECONDS",
                     help="wait this long for the notebook to start the study (it tunes one model "
                     "after another; default: %(default)s)")
    run.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    w.set_defaults(handler=_tune_worker)


def _tune_worker(args: argparse.Namespace) -> int:
    from ltrlib.clients.workers import tune_worker

    result = tune_worker(
        args.storage, args.study, **_data_options(args),
        category_feature=args.category_feature, category_bins=args.category_bins,
        categories=(args.split1_category, args.split2_category, args.split3_category),
        n_trials=args.n_trials, max_trees=args.max_trees, early_stopping=args.early_stopping,
        backend=args.backend, start_from_paper=args.start_from_paper, prune=args.prune,
        num_threads=args.num_threads, heartbeat_interval=args.heartbeat_interval,
        grace_period=args.grace_period, wait=args.wait, progress=not args.no_progress)
    print(json.dumps({"study": result.study_name, "ran_here": result.n_new, "n_trials": result.n_trials,
                      "best_trial": result.best_trial, "best_value": result.best_value,
                      "best_params": result.best_params}))
    return 0


def _add_lab_parser(subparsers) -> None:
    lab = subparsers.add_parser(
        "lab",
        help="open the notebooks in the project's JupyterLab",
        description="Start JupyterLab at the project root, with .py notebooks opening as notebooks on "
        "the project's kernel. The notebooks' standard parameters default to the options below, so "
        "a session at another scale or on other data needs no edit of a tracked notebook.",
    )
    _add_data_arguments(lab, dataset_help="the notebooks' dataset", seed_help="the notebooks' seed")
    lab.add_argument("--run-id", default="", metavar="ID",
                     help="report folder under reports/ (default: interactive-<dataset>-<scale>-seed<seed>); "
                     "a batch run's id explores it: the session reads its models and results from a copy in "
                     "reports/ID-lab/ and writes there, on the batch's data, and the batch's report is left as it is")
    lab.add_argument("--port", type=int, default=None, help="serve on 127.0.0.1:PORT (default: JupyterLab's)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser")
    lab.add_argument("jupyter_options", nargs=argparse.REMAINDER, metavar="-- JUPYTER OPTION ...",
                     help="after --, options passed to jupyter lab as they are, e.g. "
                     "-- --ServerApp.ip=0.0.0.0 --IdentityProvider.token=SECRET")
    lab.set_defaults(handler=_lab)


def _lab(args: argparse.Namespace) -> int:
    from ltrlib import lab

    extra = args.jupyter_options[1:] if args.jupyter_options[:1] == ["--"] else args.jupyter_options
    return lab.main(**_data_options(args), run_id=args.run_id, port=args.port,
                    open_browser=not args.no_browser, extra=extra)


def _add_index_parser(subparsers) -> None:
    idx = subparsers.add_parser(
        "index", help="rebuild a run's index.html and index.md",
        description="Rebuild RUN's index (reports/RUN/index.html and index.md) from what is on disk.")
    idx.add_argument("run", metavar="RUN", help="a run id under reports/, or a run directory")
    idx.set_defaults(handler=_index)


def _index(args: argparse.Namespace) -> int:
    from ltrlib.report import write_index

    print(write_index(_run_dir(args.run)))
    return 0


def _add_runs_parser(subparsers) -> None:
    runs = subparsers.add_parser(
        "runs", help="list a run's TREC run files and qrels, with the commands that score them",
        description="List RUN's TREC run files (runs/<notebook>/<model>.run: every model's test ranking, "
        "qid Q0 docno rank score tag) and the qrels beside them, then print a trec_eval and a ranx command "
        "on the first, and, where notebook 07 wrote runs, the command that gives its table's number "
        "(docs/ecosystem.md). The tools score a query without a relevant document 0 and count it; "
        "07's offline NDCG@10 leaves such queries out and averages the intents' means, so their plain "
        "mean is lower than its table's. Tied scores are written in our order, row order (ascending docno, "
        "but in 06's stage-2 runs); trec_eval, ir_measures and repro_eval re-sort them by descending docno, "
        "ranx in no set order.")
    runs.add_argument("run", metavar="RUN", help="a run id under reports/, or a run directory")
    runs.add_argument("--check", action="store_true",
                      help="score every run with ranx and with ltrlib.metrics, query by query, and count where they "
                      "agree, differ at tied scores (documented) and differ otherwise")
    runs.set_defaults(handler=_runs)


def _runs(args: argparse.Namespace) -> int:
    import warnings

    import pandas as pd

    from ltrlib.trec import TrecWarning, list_runs

    run_dir = _run_dir(args.run)
    shown, said = warnings.showwarning, set()

    def show(message, category, *rest, **kwargs):
        # A missing or empty run file, once, as one line like the errors': Python's display
        # would add a source line of ltrlib that tells the user nothing.
        if not issubclass(category, TrecWarning):
            shown(message, category, *rest, **kwargs)
        elif str(message) not in said:
            said.add(str(message))
            print(f"ltrlib {args.command}: warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        # --check scores every run: one listed but missing fails it rather than being left out.
        table = list_runs(run_dir, strict=args.check)
        if table.empty:
            print(f"{run_dir}: no run files (notebooks 03-09 write them under runs/)")
            return 0
        with pd.option_context("display.width", 200, "display.max_rows", 500, "display.max_colwidth", 50):
            print(table.to_string(index=False))
            if args.check:
                from ltrlib.reproducibility import agreement_counts

                counts = agreement_counts(run_dir)
                print("\nranx against ltrlib.metrics, queries with a relevant document:")
                print(counts.to_string(index=False))
                print(counts.groupby("metric")[["compared", "agree", "differ_tied", "differ_untied"]].sum()
                      .to_string())
    first = table.iloc[0]
    folder = run_dir / "runs" / first.notebook
    qrels, run = folder / (first.qrels.split(", ")[0] or "qrels.gz"), folder / first.run
    # Our NDCG gains 2^label - 1 (as LightGBM and the papers): ranx's ndcg_burges, not its
    # ndcg nor trec_eval's ndcg_cut, which gain the label itself (docs/ecosystem.md).
    print(f"\n{len(table)} runs, {table.kilobytes.sum() / 1024:.1f} MB (gzip). Score one:\n"
          f"  trec_eval -m map -m recip_rank <(gunzip -c {qrels}) <(gunzip -c {run})\n"
          f"  python -c \"from ranx import evaluate; from ltrlib.trec import ranx_qrels, ranx_run; "
          f"print(evaluate(ranx_qrels('{qrels}'), ranx_run('{run}'), ['ndcg_burges@10', 'map', 'mrr']))\"\n"
          "Both count a query without a relevant document as 0 and break tied scores their own way "
          "(trec_eval by descending docno; the files hold ours, row order).")
    intents = table[table.qrels.str.count(",") > 0]
    if not intents.empty:
        # Notebook 07's Type 1 runs: one qrels per intent, and a table that no tool's default gives.
        first = intents.iloc[0]
        folder = run_dir / "runs" / first.notebook
        run, qrels = folder / first.run, " ".join(str(folder / q) for q in first.qrels.split(", "))
        print(f"\n{first.run} is judged by {first.qrels.count(',') + 1} qrels, one per intent. Its table's offline "
              "NDCG@10 leaves out the queries without a relevant document and averages the intents' means; the "
              "tools' plain mean counts those queries as 0 and is lower. The table's number (ranx; "
              "make_comparable trims the run it is given, so each intent reads it again):\n"
              "  python -c \"import sys, statistics; from ranx import Qrels, evaluate; "
              "from ltrlib.trec import ranx_run, read_qrels\n"
              "def judged(path):\n"
              "    q = read_qrels(path); q = q[q.qid.isin(q.qid[q.rel > 0])].astype({'qid': object, 'docno': object})\n"
              "    return Qrels.from_df(q, q_id_col='qid', doc_id_col='docno', score_col='rel')\n"
              "print(statistics.mean(evaluate(judged(q), ranx_run(sys.argv[1]), 'ndcg_burges@10', "
              f"make_comparable=True) for q in sys.argv[2:]))\" {run} {qrels}")
    return 0


def _add_reproduce_eval_parser(subparsers) -> None:
    rep = subparsers.add_parser(
        "reproduce-eval", help="repro_eval's measures between two runs: KTU, RBO, RMSE, Effect Ratio and ΔRI",
        description="Compare a baseline and an advanced model of one notebook across two runs with repro_eval "
        "(Breuer et al., SIGIR 2020). Runs on the same data (the same qrels) are a reproduction: Kendall's tau "
        "Union and RBO of the document orders, RMSE of the per-query scores, Effect Ratio, ΔRI and paired "
        "t-tests. Runs on other data (another seed of the twin) are a replication: Effect Ratio, ΔRI and "
        "unpaired t-tests only (docs/ecosystem.md).")
    rep.add_argument("original", metavar="RUN", help="the original run: a run id under reports/, or a directory")
    rep.add_argument("reproduced", metavar="RUN", help="the reproduced run")
    rep.add_argument("--notebook", required=True, help="the notebook's number (08) or run folder (06_bilambdamart)")
    rep.add_argument("--baseline", required=True, help="the baseline model: its run file's name or tag")
    rep.add_argument("--advanced", required=True, help="the advanced model: its run file's name or tag")
    rep.add_argument("--measures", default="",
                     help="ir_measures names, comma-separated (default: nDCG@10,AP,RR; nDCG is trec_eval's, "
                     "gaining the label itself)")
    rep.add_argument("--qrels", default="", help="the qrels file, where a run is judged by several (notebook 07)")
    rep.set_defaults(handler=_reproduce_eval)


def _reproduce_eval(args: argparse.Namespace) -> int:
    import pandas as pd

    from ltrlib.reproducibility import REPRO_MEASURES, reproduction

    measures = sessions.parse_list(args.measures, name="--measures") if args.measures else REPRO_MEASURES
    kind, frame = reproduction(_run_dir(args.original), _run_dir(args.reproduced), args.notebook, args.baseline,
                               args.advanced, measures=measures, qrels=args.qrels)
    table = frame.pivot_table(index=["statistic", "model"], columns="measure", values="value", sort=False)
    with pd.option_context("display.width", 200, "display.float_format", "{:.4f}".format):
        print(f"{args.advanced} over {args.baseline} in notebook {args.notebook}: a {kind} "
              f"({'the same qrels' if kind == 'reproduction' else 'other qrels: orders and per-query scores unpaired'})")
        print(table.to_string())
    return 0


def _run_dir(run: str):
    """A run directory given as a path or as a run id under reports/; ValueError naming the
    runs there otherwise."""
    from pathlib import Path

    run_dir = Path(run)
    if not run_dir.is_dir():
        run_dir = Path(config.REPORTS_DIR) / run
    if not run_dir.is_dir():
        runs = sorted(p.name for p in Path(config.REPORTS_DIR).iterdir() if p.is_dir()) \
            if Path(config.REPORTS_DIR).is_dir() else []
        raise ValueError(f"no run {run!r}: neither a directory nor a run under {config.REPORTS_DIR} "
                         f"(runs: {', '.join(runs) or 'none'})")
    return run_dir


def _add_seeds_parser(subparsers) -> None:
    seeds = subparsers.add_parser(
        "bilambdamart-seeds", help="notebook 06's view of `ltrlib fidelity RUN RUN ...`: its comparisons "
        "over runs that differ in their seed only",
        description="For each comparison of notebook 06 (Bi-λMART against λMART*, λMART and w/o d, "
        "Bi-GBT_Softmax against GBT_Softmax, the control), print every run's difference and "
        "significance mark, then their mean, sd and a t-test across the seeds.")
    seeds.add_argument("runs", nargs="+", metavar="RUN", help="run ids under reports/, or run directories")
    seeds.add_argument("--metric", default="ndcg@5", help="a column of notebook 06's tables (default ndcg@5)")
    seeds.set_defaults(handler=_seeds)


def _seeds(args: argparse.Namespace) -> int:
    _print_bilambdamart_view([_run_dir(r) for r in args.runs], args.metric, strict=True)
    return 0


def _add_study_parser(subparsers) -> None:
    study = subparsers.add_parser(
        "study", help="a pre-registered multi-seed study, resumable, its seeds run on a Dask cluster",
        description="ledger: the batch at every seed (default 0-4), every check of the fidelity ledger decided "
        "across the seeds by the rule of ltrlib.fidelity.across. bilambdamart: notebook 06 at every seed of the "
        "profile's design, the pre-registered endpoint decided across them. neural: the Bi-LambdaMART paper's "
        "networks at trial parity with a recorded bilambdamart study's trees. Each seed runs into "
        "reports/<study>-seed<N>/ as a task on a Dask cluster (a LocalCluster of one worker per --threads cores, "
        "or --scheduler's); what the study keeps of it is recorded under reports/<study>/seeds/ and never rerun; "
        "an interrupted seed runs again, resuming its finished notebooks. reports/<study>/study.md and study.csv "
        "are rewritten after every seed.")
    study.add_argument("name", choices=["ledger", "bilambdamart", "neural"], help="the study")
    study.add_argument("--profile", default=None,
                       help="bilambdamart: confirmatory (default), followup or tiny (the tests'); neural: the "
                       "networks' budget, cpu (default), cpu-v2 (issue 61's pilot), gpu or tiny")
    study.add_argument("--scale", default="small", help="ledger: the batch's scale (default small)")
    study.add_argument("--notebooks", default="",
                       help="ledger: the notebooks each seed runs, e.g. 07,08 (default all)")
    study.add_argument("--from", dest="source", default="bilambdamart-followup",
                       help="neural: the recorded Bi-LambdaMART study whose trees the networks are paired with "
                       "(default bilambdamart-followup)")
    study.add_argument("--study", default=None,
                       help="study id under reports/ (default ledger-<scale>, bilambdamart-<profile>, "
                       "<from>-neural)")
    study.add_argument("--seeds", default=None, help="seeds, e.g. 0-9 or 0,2,5 (default: the design's)")
    study.add_argument("--scheduler", default="", metavar="ADDRESS",
                       help="run the seeds on this Dask cluster (tcp://host:8786) instead of a LocalCluster; "
                       "its workers must see this project folder")
    study.add_argument("--threads", type=int, default=None, metavar="N",
                       help="threads per seed (default 2): a LocalCluster gets one worker per N cores")
    study.add_argument("--workers", type=int, default=0, metavar="N",
                       help="LocalCluster workers, that is seeds at once (default: the cores // --threads)")
    study.add_argument("--summarise-only", action="store_true",
                       help="run nothing; rewrite study.md and study.csv from the recorded seeds")
    study.add_argument("--checkpoint", action="store_true",
                       help="run nothing; keep what the seeds in progress have done under "
                       "reports/<study>/progress/ (bilambdamart, neural: their Optuna journals; ledger: their run "
                       "folders, packed); commit it to carry on elsewhere from there")
    study.add_argument("--reading", default="", metavar="RULE",
                       help="ledger: run nothing; read the recorded seeds by another rule version (v1, v2) into "
                       "reports/<study>-reading-<RULE>/, labelled a secondary reading (the study stays as it is)")
    study.add_argument("--beside", default="", metavar="FIRST",
                       help="ledger: run nothing; set the study beside an earlier recorded one (e.g. ledger-small): "
                       "both head tables, every check whose verdict changed and why (a mended check, the rule, the "
                       "protocol or the seeds), and why checks are not decided, into reports/<study>-beside-<FIRST>/")
    study.add_argument("--arm", default="", metavar="ARM",
                       help="ledger, with --beside: a protocol arm, a study of the study's seeds that ran the notebooks "
                       "whose parameters differ as FIRST ran them (e.g. ledger2-small-t300): it splits the step 'the "
                       "protocol or the seeds' into the seeds' and the protocol's")
    study.add_argument("--figures", action="store_true",
                       help="ledger: run nothing; draw the study's verdict chart from its recorded study.csv into "
                       "reports/<study>/figures/, deciding nothing again (for a study recorded before it had "
                       "pictures)")
    study.add_argument("--power", type=int, default=0, metavar="N",
                       help="ledger: run nothing; from the recorded seeds' spreads, the seeds each check would need "
                       "at the paper's effect, and the power at N seeds, into reports/<study>-power/ (to size a "
                       "new study before its first seed)")
    study.add_argument("--status", action="store_true",
                       help="run nothing, write nothing: where the study stands (seeds recorded, in progress with "
                       "their notebooks finished and the one running, checkpointed, not started) and the hours of "
                       "notebooks left at its own measured pace; safe beside the running study")
    study.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                       dest="parameters", help="ledger: a notebook parameter every seed's batch gets, as `ltrlib "
                       "run -p` (part of the design; repeatable)")
    _add_background(study, "its seeds' batches and kernels")
    study.add_argument("--no-progress", action="store_true", help="no progress bar")
    study.set_defaults(handler=_study)


def _study(args: argparse.Namespace) -> int:
    from ltrlib.studies import THREADS_PER_SEED, parse_seeds, run_bilambdamart_study, run_ledger_study, run_neural_study

    seeds = None if args.seeds is None else parse_seeds(args.seeds)
    threads = THREADS_PER_SEED if args.threads is None else args.threads
    if threads < 1 or args.workers < 0:
        raise SystemExit(f"--threads {threads} / --workers {args.workers}: give a positive number of threads and "
                         "zero or more workers")
    where = dict(scheduler=args.scheduler, threads=threads, workers=args.workers, progress=not args.no_progress)
    _go_background(args, "study")
    recorded = Path(config.REPORTS_DIR) / (args.study or f"ledger-{args.scale}")  # a ledger study read back
    if args.status:
        from ltrlib.studies import study_status

        default = {"ledger": f"ledger-{args.scale}", "neural": f"{args.source}-neural",
                   "bilambdamart": f"bilambdamart-{args.profile or 'confirmatory'}"}[args.name]
        print(study_status(Path(config.REPORTS_DIR) / (args.study or default)).render())
        return 0
    if args.name == "ledger" and args.reading:
        from ltrlib.studies import write_ledger_reading

        command = f"{sessions.cli_command()} study ledger --study {recorded.name} --reading {args.reading}"
        print(write_ledger_reading(recorded, args.reading, command) / "reading.md")
        return 0
    if args.arm and not (args.name == "ledger" and args.beside):
        raise SystemExit("--arm: a protocol arm splits a ledger study's comparison with an earlier one; give it "
                         "with `ltrlib study ledger --study S --beside FIRST`")
    if args.name == "ledger" and args.beside:
        from ltrlib.studies import write_study_changes

        arm = f" --arm {args.arm}" if args.arm else ""
        command = f"{sessions.cli_command()} study ledger --study {recorded.name} --beside {args.beside}{arm}"
        print(write_study_changes(recorded.parent / args.beside, recorded, command,
                                  recorded.parent / args.arm if args.arm else None) / "beside.md")
        return 0
    if args.name == "ledger" and args.figures:
        from ltrlib.studies import write_recorded_verdicts

        print(write_recorded_verdicts(recorded))
        return 0
    if args.name == "ledger" and args.power:
        from ltrlib.studies import write_ledger_power

        command = f"{sessions.cli_command()} study ledger --study {recorded.name} --power {args.power}"
        print(write_ledger_power(recorded, args.power, command) / "power.md")
        return 0
    if args.parameters and args.name != "ledger":
        raise SystemExit(f"-p: only a ledger study takes notebook parameters; {args.name}'s are its profile's")
    if args.name == "ledger":
        run_ledger_study(args.scale, study=args.study, seeds=seeds, notebooks=args.notebooks,
                         summarise_only=args.summarise_only, save_progress=args.checkpoint,
                         parameters=_parameters(args.parameters), **where)
        return 0
    if args.name == "neural":
        run_neural_study(args.profile or "cpu", source=args.source, study=args.study, seeds=seeds,
                         summarise_only=args.summarise_only, save_progress=args.checkpoint, **where)
        return 0
    summary = run_bilambdamart_study(args.profile or "confirmatory", study=args.study, seeds=seeds,
                                     summarise_only=args.summarise_only, save_progress=args.checkpoint, **where)
    return 0 if summary is not None else 1


def _add_dashboard_parser(subparsers) -> None:
    dash = subparsers.add_parser(
        "dashboard", help="a run's Optuna studies in optuna-dashboard",
        description="Serve the Optuna studies of run RUN_ID (every journal of reports/RUN_ID/, copied into "
        "one view, each study named by notebook, split and model, e.g. '03 · Split1 · M1', its objective by "
        "the metric it maximised, e.g. 'NDCG@10 (validation)', and a note saying why its parameter importance "
        "is empty when it is; the run's files are not written), one of its journals live under its own study "
        "names (--journal), or a shared study database (--storage), in optuna-dashboard. Ctrl-C stops it.")
    dash.add_argument("run_id", nargs="?", default=None, help="the run under reports/ (not with --storage)")
    dash.add_argument("--journal", default=None, help="serve this journal of the run live, e.g. 06_bilambdamart")
    dash.add_argument("--storage", default=None, help="a study database URL instead of a run")
    dash.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    dash.add_argument("--port", type=int, default=8080)
    dash.set_defaults(handler=_dashboard)


def _dashboard(args: argparse.Namespace) -> int:
    from ltrlib.dashboard import serve

    print(f"optuna-dashboard on http://{args.host}:{args.port}/ (Ctrl-C stops it)", flush=True)
    serve(args.run_id, journal=args.journal, storage_url=args.storage, host=args.host, port=args.port)
    return 0


def _add_calibrate_parser(subparsers) -> None:
    cal = subparsers.add_parser(
        "calibrate", help="the synthetic twin's data statistics against Istella-S's, or the search that set them",
        description="Measure every calibration target of the synthetic twin (ltrlib.noniid.calibration) on "
        "a scale's training set and print target, achieved, tolerance and whether it is met (exit 1 when "
        "one is missed); or rerun the data-statistics search (--search), the learnability curve "
        "(--learnability), or the targets' spread over seeds (--seeds N).")
    cal.add_argument("--scale", default="small", help="scale to measure (tiny, small, paper)")
    cal.add_argument("--seed", type=int, default=0)
    cal.add_argument("--search", action="store_true", help="rerun the data-statistics search")
    cal.add_argument("--trials", type=int, default=200, help="trials of each stage of --search (TPE, then CMA-ES)")
    cal.add_argument("--queries", type=int, default=5_000, help="simulated queries per sample in --search")
    cal.add_argument("--samples", type=int, default=2, help="samples (seeds) each --search trial averages over")
    cal.add_argument("--knobs", default="", help="comma-separated knobs --search varies (default: all; "
                     "the others stay at the current defaults)")
    cal.add_argument("--learnability", action="store_true", help="measure M_full NDCG@10 against feature_noise")
    cal.add_argument("--seeds", type=int, default=0, metavar="N",
                     help="every target's mean and spread over seeds SEED..SEED+N-1 at --scale")
    cal.set_defaults(handler=_calibrate)


def _print_frame(df) -> None:
    import pandas as pd

    with pd.option_context("display.width", 160, "display.max_columns", 20, "display.float_format", "{:.4f}".format):
        print(df.to_string(index=False))


def _calibrate(args: argparse.Namespace) -> int:
    from ltrlib.noniid import calibration as cal

    if args.search:
        knobs = sessions.parse_list(args.knobs, name="--knobs", allow_empty=True) or None
        trials = cal.search(args.trials, n_queries=args.queries, seed=args.seed, n_samples=args.samples, knobs=knobs)
        print("best knobs (paste into SyntheticConfig):")
        best = trials.iloc[0]
        for name in cal.SEARCH_SPACE:
            print(f"  {name} = {best[name]:.3f}")
        start = trials[(trials.stage == "tpe") & (trials.number == 0)]
        print(f"loss {best['value']:.3f} ({best['stage']} trial {best['number']}; "
              f"current defaults: {start['value'].iloc[0]:.3f})")
        return 0
    if args.learnability:
        curve = cal.learnability(args.scale, args.seed)
        print(f"feature_noise for M_full NDCG@10 = {cal.LEARNABILITY_TARGET.paper}: "
              f"{cal.noise_for_target(curve):.3f} (current {cal.SyntheticConfig().feature_noise})")
        return 0
    if args.seeds:
        if args.seeds < 2:
            raise ValueError(f"--seeds needs at least 2 seeds to measure a spread, got {args.seeds}")
        spread = cal.seed_spread(args.scale, range(args.seed, args.seed + args.seeds))
        print(f"Targets over seeds {args.seed}-{args.seed + args.seeds - 1}, scale {args.scale} "
              "(list structure only; seeds_within: share of seeds within tolerance)")
        _print_frame(spread)
        off = spread[(spread["mean"] - spread.paper).abs() > spread.tolerance + 1e-12]
        print(f"\n{len(spread) - len(off)} of {len(spread)} targets within tolerance on the mean over seeds"
              + (f"; off on the mean: {', '.join(off.statistic)}" if len(off) else ""))
        return 0
    sc = config.get_scale(args.scale)
    splits = cal.make_synthetic(sc, args.seed, progress=True)
    table = cal.calibration_table(splits.train, args.seed)
    print(f"Calibration of the synthetic twin, scale {sc.name} ({sc.n_train} training queries), seed {args.seed}")
    _print_frame(table)
    print("\nTable 2 subsets (reported, not fitted):")
    _print_frame(cal.subset_table(splits.train, args.seed))
    print("\nD_merge sizes:")
    _print_frame(cal.merge_sizes_met(splits, args.seed))
    met = int(table.within.sum())
    print(f"\n{met} of {len(table)} targets within tolerance")
    return 0 if met == len(table) else 1


def _add_formats_parser(subparsers) -> None:
    formats_parser = subparsers.add_parser(
        "formats", help="write the synthetic twin in a public collection's layout (MSLR, Istella, Yahoo)",
        description="Write the synthetic twin as the files of a public collection (MSLR-WEB10K's Fold1-5, "
        "Istella-S's, Yahoo LTRC's set 1), so the reading path of that collection can be tried without it.")
    # Checked by the handler: importing the data layer here would slow every `ltrlib --help`.
    formats_parser.add_argument("layout", metavar="mslr|istella|yahoo", help="the collection whose files to write")
    formats_parser.add_argument("folder", help="output folder (created; files in it are replaced)")
    formats_parser.add_argument("--scale", default="tiny", choices=sorted(config.SCALES))
    formats_parser.add_argument("--seed", type=int, default=0)
    formats_parser.set_defaults(handler=_formats)


def _formats(args: argparse.Namespace) -> int:
    from ltrlib.data.catalogue import layouts
    from ltrlib.data.formats import write_layout
    from ltrlib.data.synthetic import make_synthetic

    if args.layout not in layouts():  # before generating the twin, which takes a while at small
        raise ValueError(f"layout {args.layout!r} unknown; choose from {', '.join(layouts())}")
    print(write_layout(make_synthetic(args.scale, args.seed), args.folder, args.layout))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ltrlib", description="ltrlib: learning to rank on non-IID data")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_run_parser(subparsers)
    _add_fidelity_parser(subparsers)
    _add_upgrade_parser(subparsers)
    _add_tune_worker_parser(subparsers)
    _add_lab_parser(subparsers)
    _add_index_parser(subparsers)
    _add_runs_parser(subparsers)
    _add_reproduce_eval_parser(subparsers)
    _add_seeds_parser(subparsers)
    _add_study_parser(subparsers)
    _add_calibrate_parser(subparsers)
    _add_dashboard_parser(subparsers)
    _add_formats_parser(subparsers)
    return parser


def _parameters(pairs: Sequence[Sequence[str]]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name, value in pairs:
        if name in params:
            raise ValueError(f"parameter {name!r} given twice with -p")
        params[name] = parse_value(value)
    return params


def _add_background(parser: argparse.ArgumentParser, sessions_started: str) -> None:
    parser.add_argument("--background", action="store_true",
                        help=f"run at the lowest priority (nice 19), on Linux the sessions {sessions_started} start "
                        "included, so that other work on the machine keeps the cores (docs/studies.md, 'Two "
                        "studies on one machine')")


def _go_background(args: argparse.Namespace, command: str) -> None:
    """`ltrlib.processes.background` when ``--background`` was given, saying where the
    sessions this command starts cannot be lowered."""
    if args.background and not processes.background():
        print(f"ltrlib {command}: --background: at nice 19, but the sessions it starts are not lowered here (no "
              "writable /proc/self/autogroup): with autogroups on, nice alone may leave it half the cores",
              file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    from ltrlib.runner import run_all  # imports papermill; keep `ltrlib --help` fast

    _go_background(args, "run")

    run_dir = run_all(
        **_data_options(args),
        run_id=args.run_id,
        only=args.only,
        force=args.force,
        parameters=_parameters(args.parameters),
        progress=not args.no_progress,
        log_output=args.log_output,
        paper_dataset=args.paper_dataset,
        jobs=args.jobs,
    )
    # The run folder on stdout, alone, as scripts read it; the page to open, for people, beside it.
    print(run_dir)
    print(f"ltrlib run: open {_shown(Path(run_dir) / 'index.html')}", file=sys.stderr)
    return 0


def _shown(path: Path) -> str:
    """``path`` as the user can type it from where they are: relative to the working
    directory when it lies below it (``reports/<run>/index.html``), else absolute."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ltrlib`` console script; returns the exit status."""
    from ltrlib.runner import NotebookError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (NotebookError, ValueError) as exc:
        # Expected failures: the message names what went wrong; a traceback would bury it.
        print(f"ltrlib {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        # A bare KeyboardInterrupt is truthy but prints as "": say what stopped.
        print(f"ltrlib {args.command}: {str(exc) or 'interrupted'}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
