"""A run's Optuna studies in Optuna's dashboard (``ltrlib dashboard RUN``).

A run keeps its studies in journal files under ``reports/<run_id>/`` (``optuna.journal``
for notebooks 03 and 05, ``06_bilambdamart.journal``, ``06_neural_competitors.journal``,
...; shared studies in a database). `optuna-dashboard` reads one storage at a time, so:

* ``ltrlib dashboard RUN`` serves a view of every study of the run's journals (`snapshot`),
  as they stood when the dashboard started;
* ``--journal NAME`` serves that journal file itself, live: trials a notebook or
  ``ltrlib tune-worker`` adds appear as they finish, under the journal's own study names;
* ``--storage URL`` serves a shared study database (``-p storage`` of notebook 03).

The view speaks the notebooks' names. A journal names a study after what its notebook
tuned, not after the notebook: ``Split1.M1`` in ``optuna.journal`` is notebook 03's model
M1 on Split1 and ``Split1.M12S`` notebook 05's meta-model (the study's recorded setup
tells them apart: 03 tunes on a validation set, 05 by cross-validation on D_merge), and
``06.control.λMART*`` is notebook 06's control. So each study is shown as
``<notebook> · <split or group> · <model>`` (`study_label`), with the metric it
maximised as its objective's name (`objective_name`: Optuna's ``set_metric_names``,
which the dashboard shows instead of "Objective 0") and a note at the top of its page that
names its journal and study, counts its trials by state, and says why the parameter
importance is empty when it is (the dashboard needs two completed trials: a study of one
completed trial and five pruned has none to compare).

The view is a copy in memory, read from the journals' complete records: the run's files
are neither written nor mended (a journal a notebook is appending to is read up to its
last whole record), and notes or deletions made in the dashboard stay in the view.

The server listens on loopback by default (``--host``); stop it with Ctrl-C.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

from ltrlib import config

__all__ = ["journals", "objective_name", "serve", "snapshot", "study_label"]

#: The notebook that writes each journal (its number, as the view's names start), where
#: one notebook writes it; ``optuna.journal`` is shared by 03 and 05 (`study_label`).
JOURNAL_NOTEBOOKS = {"06_bilambdamart": "06", "06_neural_competitors": "06 neural"}
#: The fewest completed trials optuna-dashboard computes a parameter importance from
#: (``optuna_dashboard._importance``: none with one completed trial or fewer).
IMPORTANCE_MIN_COMPLETE = 2
# The prefix notebook 06's studies start with (``06.<model>``, ``06.control.<model>``,
# ``06n.<model>`` for the neural competitors): the notebook label says it already.
_NOTEBOOK_PREFIX = re.compile(r"\d\d[a-z]?")


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


def study_label(journal: str, study_name: str, setup: dict[str, Any] | None) -> str:
    """The name the view gives study ``study_name`` of journal ``journal`` (its file's
    stem): ``<notebook> · <split or group> · <model>``, e.g. ``03 · Split1 · M1``,
    ``05 · Split2 · M12S``, ``06 · control · λMART*``.

    ``setup`` is the study's recorded setup (its ``setup`` user attribute, `run_study`). In
    ``optuna.journal`` it names the notebook: a hold-out study (``tune``) is notebook 03's
    client model, a cross-validated one (``tune_cv``) notebook 05's meta-model. A journal
    no notebook is known to write keeps its stem as the first part."""
    from ltrlib.train.tuning.storage import JOURNAL_FILE

    setup = setup or {}
    model = setup.get("model")
    if isinstance(model, str) and study_name.endswith(f".{model}"):
        # Keep a model's name whole whatever it holds; the prefix is split at its dots.
        parts = [*study_name[:-len(model) - 1].split("."), model]
    else:
        parts = study_name.split(".")
    if journal == Path(JOURNAL_FILE).stem:
        kind = str(setup.get("kind", ""))
        notebook = "03" if kind == "holdout" else "05" if kind.startswith("cv") else journal
    else:
        notebook = JOURNAL_NOTEBOOKS.get(journal, journal)
        if len(parts) > 1 and _NOTEBOOK_PREFIX.fullmatch(parts[0]):
            parts = parts[1:]
    return " · ".join([notebook, *parts])


def objective_name(setup: dict[str, Any] | None) -> str | None:
    """What a study maximised, from its recorded setup (the tuning code that wrote it
    computes that metric): ``NDCG@10 (validation)`` for notebook 03's models and
    06's stage 1 (``eval_at``), ``NDCG@10 (3-fold CV mean)`` for 05's meta-models, ``NDCG@5
    (validation)`` for 06's stage-2 models and neural competitors (``cutoff``); None when the
    setup says neither."""
    setup = setup or {}
    kind = str(setup.get("kind", ""))
    at = setup.get("cutoff", setup.get("eval_at"))
    if at is None:
        return None
    if kind.startswith("cv") and kind[2:].isdigit():
        return f"NDCG@{at} ({kind[2:]}-fold CV mean)"
    return f"NDCG@{at} (validation)"


def snapshot(run_dir: str | os.PathLike):
    """An in-memory Optuna storage holding a copy of every study of the run's journals,
    named by `study_label` and in its order (notebook, then split or group, then model),
    each with its objective named (`objective_name`) and a note (`study_note`)."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna_dashboard import save_note

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    studies = []
    for journal, path in journals(run_dir).items():
        source = JournalStorage(_JournalRecords(path))
        for summary in optuna.get_all_study_summaries(source, include_best_trial=False):
            label = study_label(journal, summary.study_name, summary.user_attrs.get("setup"))
            studies.append((label, journal, summary.study_name, source))
    taken = Counter(label for label, *_ in studies)
    memory = optuna.storages.InMemoryStorage()
    for label, journal, name, source in sorted(studies, key=lambda s: [_natural(p) for p in s[0].split(" · ")]):
        if taken[label] > 1:  # two journals naming one study alike: say which is which
            label = f"{label} ({journal}.journal)"
        optuna.copy_study(from_study_name=name, from_storage=source, to_storage=memory, to_study_name=label)
        view = optuna.load_study(study_name=label, storage=memory)
        setup = view.user_attrs.get("setup")
        metric = objective_name(setup)
        if metric is not None and len(view.directions) == 1:
            with warnings.catch_warnings():  # experimental since Optuna 3.2, and what the dashboard reads
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                view.set_metric_names([metric])
        save_note(view, study_note(view, f"{journal}.journal", name, metric))
    return memory


def study_note(study, journal: str, name: str, metric: str | None) -> str:
    """The Markdown note at the top of a study's page in the view: where the study comes
    from, what it maximised, its trials by state, and whether the dashboard can show a
    parameter importance (and why not when it cannot)."""
    from optuna.trial import TrialState

    states = Counter(t.state for t in study.get_trials(deepcopy=False))
    complete = states[TrialState.COMPLETE]
    counts = ", ".join(f"{n} {state.name.lower()}" for state, n in sorted(states.items(), key=lambda s: s[0].value)
                       if n) or "none"
    if complete >= IMPORTANCE_MIN_COMPLETE:
        importance = f"computed from the {complete} complete trials"
    else:
        importance = (f"not shown: {complete} complete trial{'' if complete == 1 else 's'}, "
                      f"importance needs at least {IMPORTANCE_MIN_COMPLETE}"
                      + (" (a pruned trial has no final value to compare)" if states[TrialState.PRUNED] else ""))
    return "\n".join([
        f"Study `{name}` of the run's `{journal}`, copied into this view (the run's file is unchanged).",
        "",
        f"* Objective: {metric or 'not recorded in the study setup'}, maximised.",
        f"* Trials: {counts}.",
        f"* Hyperparameter importance: {importance}.",
    ])


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


def _natural(label: str) -> list:
    """Sort key of a label's part: Split2 before Split10, full before Split1."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p.casefold()) for p in re.split(r"(\d+)", label)]


class _JournalRecords:
    """A journal file's complete records, read once, as a read-only Optuna journal backend:
    the snapshot replays them without opening the file for writing, taking its lock or
    mending a torn last record (a notebook may be appending it)."""

    def __init__(self, path: Path):
        from ltrlib.train.tuning.storage import _records_end

        data = path.read_bytes()  # a record being written after the last whole one is left out
        self._records = [json.loads(line) for line in data[:_records_end(data, path)].splitlines()]

    def read_logs(self, log_number_from: int):
        return self._records[log_number_from:]

    def append_logs(self, logs) -> None:
        raise RuntimeError("a run's journal is read-only in the dashboard's view")
