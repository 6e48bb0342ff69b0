"""ltrlib: learning to rank on non-IID data, the helper package behind the notebooks.

Its parts stand in layers, and a module imports only from its own layer or below
(`tests/test_layout.py` checks every import, those inside functions too):

1. foundations: ``config`` (paths, scales, budgets), ``sessions`` (a notebook's parameters'
   defaults, run ids), ``processes`` (threads and worker processes), ``randomness`` (seed
   streams), ``atomic``, ``records`` (reading records and tables back), ``timing``,
   ``progress``, ``metrics``;
2. data: ``data`` (datasets, readers, the synthetic twin), ``provenance``, ``manifest`` (a
   run's record, ``run.json``), ``study_record`` (a study's ``design.json`` and ``seed.json``),
   ``trec`` (TREC run files and qrels);
3. the engine: ``train`` (rankers, backends, tuning);
4. analyses, the papers' methods and the notebooks' experiments: ``noniid``, ``clients``,
   ``merge``, ``bilambdamart``, ``neural``, ``foltr``, ``clicklog``, ``xgboost_tutorial``, and
   ``reproducibility`` (our run files scored against ranx, and repro_eval between runs);
5. reports: ``report``, ``plots``, ``fidelity``;
6. runs: ``runner``, ``studies``, ``lab``, ``dashboard``;
7. the command line: ``cli``.
"""

__version__ = "0.1.0"
