"""Multi-seed studies: a notebook, or the whole batch, at every seed of a pre-registered
design, resumable, each seed a task on a Dask cluster.

Three studies share one loop (`ltrlib.studies.loop.run_study`), each a module of its own:
``ltrlib study ledger`` (`ltrlib.studies.ledger`: the batch at every seed, every check of the
ledger decided across them by `ltrlib.fidelity.across`), ``ltrlib study bilambdamart``
(`ltrlib.studies.bilambdamart`: notebook 06, the pre-registered Bi-LambdaMART endpoint) and
``ltrlib study neural`` (`ltrlib.studies.neural`: the networks at trial parity with a
Bi-LambdaMART study's trees). Their records, ``design.json`` and each seed's ``seed.json``,
are read and written by `StudyDesign` and `SeedRecord` alone (`ltrlib.study_record`).

Dispatch (`dispatch`, `ltrlib.studies.cluster`). Every seed not yet recorded is a task on ``dask.distributed``: by
default a `LocalCluster` of one worker process per `THREADS_PER_SEED` cores (on 2 cores,
one seed at a time), each worker's kernels limited to that many threads, so LightGBM,
XGBoost and JAX do not oversubscribe the cores; ``--scheduler ADDRESS`` sends the seeds to
an existing cluster whose workers see the same project folder (docs/studies.md). A seed's
results do not depend on where it ran: a test checks that two seeds run on two workers
write the tables a sequential run writes, byte for byte.

``ltrlib study bilambdamart --profile confirmatory`` runs notebook 06 once per seed of the
profile's design (`ltrlib.bilambdamart.preregistration.PROFILES`), each into its own run
``reports/<study>-seed<N>/``, then writes ``reports/<study>/study.md`` and
``study.csv`` (`ltrlib.bilambdamart.preregistration`: the statistics and the verdict).

Resumption. What a finished seed contributes, its per-query results, pairwise uptake,
tuning summary, Table 8 and provenance, is copied into ``reports/<study>/seeds/seed<N>/``
through a temporary folder renamed into place, so a seed is either wholly recorded or not
at all. A recorded seed is never rerun; an interrupted one is run again, and its run's
Optuna journal resumes its finished trials. The study folder, small (about 1 MB a seed),
can be committed: a later session or another machine with it carries on where this one
stopped. For a seed in progress, ``--checkpoint`` keeps under ``reports/<study>/progress/``
what it has done, so that a checkout without the run folder carries on from there
(`checkpoint`, `ltrlib.studies.checkpoints`): a bilambdamart or neural seed's journal (its finished trials), a ledger
seed's run folder (its finished notebooks). Its ``design.json`` is written once; running the
study again with another design is refused, naming what differs.

Where a study stands, read without touching it (``--status``): `study_status`
(`ltrlib.studies.status`).
"""

# Every name callers took from the one module this package was (the command line, the tests,
# bench/, the docs), so that they keep working; the underscored ones are the tests' reach
# into the machinery.
from ltrlib.studies.bilambdamart import KEPT_TABLES, record_seed, run_bilambdamart_study, study_design
from ltrlib.studies.bilambdamart import summary_markdown, write_summary
from ltrlib.studies.checkpoints import JOURNAL, _restore, checkpoint
from ltrlib.studies.cluster import THREADS_PER_SEED, dispatch, local_cluster
from ltrlib.studies.ledger import LEDGER_VERDICTS, _ledger_frames, ledger_design, ledger_headline, ledger_reading
from ltrlib.studies.ledger import ledger_verdict_frame, run_ledger_study, write_ledger_figures, write_ledger_power
from ltrlib.studies.ledger import write_ledger_reading, write_ledger_summary, write_recorded_verdicts
from ltrlib.studies.compare import study_changes, write_study_changes
from ltrlib.studies.loop import _check_design, _seed_minutes, parse_seeds
from ltrlib.studies.neural import NEURAL_PROFILES, neural_design, run_neural_study, write_neural_summary
from ltrlib.studies.status import study_status
from ltrlib.study_record import SeedRecord, StudyDesign

__all__ = ["JOURNAL", "KEPT_TABLES", "LEDGER_VERDICTS", "NEURAL_PROFILES", "SeedRecord", "StudyDesign",
           "THREADS_PER_SEED", "checkpoint", "dispatch", "ledger_design", "ledger_headline", "ledger_reading",
           "ledger_verdict_frame", "local_cluster", "neural_design", "parse_seeds", "record_seed",
           "run_bilambdamart_study", "run_ledger_study", "run_neural_study", "study_changes", "study_design",
           "study_status",
           "summary_markdown",
           "write_ledger_figures", "write_ledger_power", "write_ledger_reading", "write_ledger_summary",
           "write_neural_summary", "write_recorded_verdicts", "write_study_changes", "write_summary"]
