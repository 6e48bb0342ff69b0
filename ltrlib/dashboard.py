"""A run's Optuna studies in Optuna's dashboard (``ltrlib dashboard RUN``).

A run keeps its studies in journal files under ``reports/<run_id>/`` (``optuna.journal`` for
notebook 03, ``06_bilambdamart.journal``, ``06_neural_competitors.journal``, ...; shared
studies in a database). `optuna-dashboard` reads one storage at a time, so:

* ``ltrlib dashboard RUN`` copies every study of the run's journals into one in-memory
  storage, each named ``<journal>/<study>`` (`snapshot`): all of the run's tuning in one
  view, as it stood when the dashboard started;
* ``--journal NAME`` serves that journal file itself, live: trials a notebook or
  ``ltrlib tune-worker`` adds appear as they finish;
* ``--storage URL`` serves a shared study database (``-p storage`` of notebook 03).

The server listens on loopback by default (``--host``); stop it with Ctrl-C.
"""

from __future__ import annotations

import os
from pathlib import Path

from ltrlib import config

__all__ = ["journals", "serve", "snapshot"]


def journals(run_dir: str | os.PathLike) -> dict[str, Path]:
    """The run's journal files by name (the file's stem); ValueError naming the folder when
    it is not a run or holds none."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"{run_dir} is not a run folder (it does not exist)")
    found = {p.stem: p for p in sorted(run_dir.glob("*.journal"))}
    if not found:
        raise ValueError(f"{run_dir} holds no Optuna journal (*.journal): no notebook of this run tuned a model")
    return found


def snapshot(run_dir: str | os.PathLike):
    """An in-memory Optuna storage holding a copy of every study of the run's journals,
    named ``<journal>/<study>``."""
    import optuna

    from ltrlib.train.tuning.storage import study_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    memory = optuna.storages.InMemoryStorage()
    for name, path in journals(run_dir).items():
        storage = study_storage(path)
        for summary in optuna.get_all_study_summaries(storage, include_best_trial=False):
            optuna.copy_study(from_study_name=summary.study_name, from_storage=storage,
                              to_storage=memory, to_study_name=f"{name}/{summary.study_name}")
    return memory


def serve(run_id: str | None = None, *, journal: str | None = None, storage_url: str | None = None,
          host: str = "127.0.0.1", port: int = 8080, reports_dir: str | os.PathLike | None = None) -> None:
    """Serve a run's studies (`snapshot`), one of its journals live (``journal``), or a
    study database (``storage_url``) in optuna-dashboard; blocks until stopped."""
    from optuna_dashboard import run_server

    from ltrlib.train.tuning.storage import study_storage

    if storage_url:
        storage = study_storage(storage_url)
    else:
        if run_id is None:
            raise ValueError("dashboard: give a run id, or --storage URL")
        run_dir = Path(reports_dir if reports_dir is not None else config.REPORTS_DIR) / run_id
        if journal:
            found = journals(run_dir)
            if journal not in found:
                raise ValueError(f"--journal {journal!r}: {run_dir} has {sorted(found)}")
            storage = study_storage(found[journal])
        else:
            storage = snapshot(run_dir)
    run_server(storage, host=host, port=int(port))
