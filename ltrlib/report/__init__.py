"""A run's outputs and its pages, in two rooms:

- `ltrlib.report.outputs`: what a notebook saves, through one `Reporter` (tables as CSV and
  Markdown, figures, scalar metrics, TREC runs), each file written atomically;
- `ltrlib.report.pages`: the run folder's ``index.html``, ``index.md`` and ``pages/``, built
  from what is on disk (`write_index`).
"""

from ltrlib.report.outputs import (LEDGER_SECTION, METRICS_FILE, Reporter, clear_notebook_outputs, numbers_caption,
                                   printed_table, read_metrics, settings_frame, table_csv, table_to_markdown,
                                   validate_name, write_table)
from ltrlib.report.pages import embedded_png, html_page, write_index

__all__ = ["LEDGER_SECTION", "METRICS_FILE", "Reporter", "clear_notebook_outputs", "embedded_png", "html_page",
           "numbers_caption", "printed_table", "read_metrics", "settings_frame", "table_csv", "table_to_markdown",
           "validate_name", "write_index", "write_table"]
