"""TREC run files and qrels, the form trec_eval, ranx, ir_measures and repro_eval read, in
three rooms:

- `ltrlib.trec.files`: writing and reading run and qrels files, the documents' ids, and the
  errors that name a bad file's line (its docstring states the conventions);
- `ltrlib.trec.ranx_adapter`: ranx through one door (`import_ranx`), our files as ranx's
  ``Run`` and ``Qrels``, document keys of one width;
- `ltrlib.trec.catalogue`: a run folder's run files and the index of the qrels that judge
  each (`list_runs`, `find_run`).

The analyses that read these files (our metrics against ranx's, repro_eval between two
runs) are `ltrlib.reproducibility`'s, a layer above.
"""

from ltrlib.trec.catalogue import RUN_INDEX, find_run, index_run, list_runs
from ltrlib.trec.files import (QRELS_COLUMNS, RUN_COLUMNS, RunFile, TrecFormatError, TrecWarning, docnos, lists_of,
                               read_qrels, read_run, run_order, run_records, write_qrels, write_run)
from ltrlib.trec.ranx_adapter import RANX_KEY_DIGITS, import_ranx, ranx_keys, ranx_qrels, ranx_run

__all__ = ["QRELS_COLUMNS", "RANX_KEY_DIGITS", "RUN_COLUMNS", "RUN_INDEX", "RunFile", "TrecFormatError", "TrecWarning",
           "docnos", "find_run", "import_ranx", "index_run", "list_runs", "lists_of", "ranx_keys", "ranx_qrels",
           "ranx_run", "read_qrels", "read_run", "run_order", "run_records", "write_qrels", "write_run"]
