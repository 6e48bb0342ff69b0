"""Command line: ``ltrlib run ...`` and ``ltrlib fidelity RUN_DIR`` (also ``python -m ltrlib ...``).

Subcommands live in a subparser table so that others (``ltrlib data``, ``ltrlib bench`` ...)
can be added beside ``run`` without touching its options.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from ltrlib import __version__, config

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


def _add_run_parser(subparsers) -> None:
    run = subparsers.add_parser(
        "run",
        help="execute the notebooks into reports/<run_id>/",
        description="Execute the numbered notebooks with papermill into reports/<run_id>/ "
        "(executed notebooks, tables, figures, metrics.json, index.html). "
        "A repeated run with the same run_id resumes where it stopped.",
    )
    run.add_argument(
        "--dataset",
        default="synthetic",
        metavar="synthetic|PATH",
        help="'synthetic' (generated, no download) or a path to a LETOR/SVMlight dataset (default: %(default)s)",
    )
    run.add_argument("--data-dir", default="", metavar="DIR", help="directory of the dataset's files, if separate")
    run.add_argument(
        "--scale", default="small", choices=sorted(config.SCALES), help="synthetic data size (default: %(default)s)"
    )
    run.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
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
    run.add_argument("--log-output", action="store_true", help="echo the notebooks' output while they run")
    run.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    run.set_defaults(handler=_run)


def _add_fidelity_parser(subparsers) -> None:
    fid = subparsers.add_parser(
        "fidelity",
        help="rebuild fidelity.md/.csv of a finished run and relink its index",
        description="Compare a run's tables of notebooks 03-05 with the non-IID paper's Tables 1, 3, "
        "4, 5 and claims; write fidelity.md, fidelity.csv and fidelity_claims.csv into RUN_DIR.",
    )
    fid.add_argument("run_dir", metavar="RUN_DIR", help="a run directory, e.g. reports/synthetic-small-seed0")
    fid.set_defaults(handler=_fidelity)


def _fidelity(args: argparse.Namespace) -> int:
    from ltrlib.fidelity import write_fidelity
    from ltrlib.report import write_index

    path = write_fidelity(args.run_dir)
    write_index(args.run_dir)
    print(path)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ltrlib", description="ltrlib: learning to rank on non-IID data")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_run_parser(subparsers)
    _add_fidelity_parser(subparsers)
    return parser


def _parameters(pairs: Sequence[Sequence[str]]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name, value in pairs:
        if name in params:
            raise ValueError(f"parameter {name!r} given twice with -p")
        params[name] = parse_value(value)
    return params


def _run(args: argparse.Namespace) -> int:
    from ltrlib.runner import run_all  # imports papermill; keep `ltrlib --help` fast

    run_dir = run_all(
        dataset=args.dataset,
        data_dir=args.data_dir,
        scale=args.scale,
        seed=args.seed,
        run_id=args.run_id,
        only=args.only,
        force=args.force,
        parameters=_parameters(args.parameters),
        progress=not args.no_progress,
        log_output=args.log_output,
    )
    print(run_dir)
    return 0


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
    except KeyboardInterrupt:
        print(f"ltrlib {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
