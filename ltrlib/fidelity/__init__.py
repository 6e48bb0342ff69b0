"""The fidelity ledger: claim by claim, whether each paper's findings hold on a run's data.

Modules: `claims` (one `Claim` type, findings, the Effect Ratio and ΔRI), `sources` (the
tables each notebook writes that the ledger reads), `datasets` (the papers' datasets, as a
run declares them), one module per paper (`noniid`,
`bilambdamart`, `foltr`, `xgboost_tutorial`), and `ledger` (``fidelity.md``,
``fidelity_claims.csv`` and ``fidelity.csv`` of a run; ``ltrlib fidelity RUN_DIR``).
"""

from ltrlib.fidelity import bilambdamart, claims, datasets, foltr, ledger, noniid, sources, xgboost_tutorial
from ltrlib.fidelity.bilambdamart import across_seeds, bilambdamart_claims, published_numbers, read_tables
from ltrlib.fidelity.claims import (CLAIM_COLUMNS, VERDICTS, Claim, Effect, Finding, Section, decide, delta_ri,
                                    effect_ratio, fmt)
from ltrlib.fidelity.datasets import (PAPER_DATASETS, Declaration, PaperDataset, check_declaration, declared,
                                      paper_dataset)
from ltrlib.fidelity.foltr import foltr_claims, paper_table2, table3_numbers
from ltrlib.fidelity.ledger import (FIDELITY_CLAIMS_CSV, FIDELITY_CSV, FIDELITY_MD, FIDELITY_PUBLISHED_CSV, PAPERS,
                                    Ledger, Paper,
                                    across_runs, executed_papers, fidelity_report, summary_table, write_fidelity)
from ltrlib.fidelity.noniid import check_claims, compare, paper_numbers, read_run_numbers
from ltrlib.fidelity.sources import (NOTEBOOK_TABLES, one_setup_at_several_seeds, read_table, run_setup,
                                     table_path)
from ltrlib.fidelity.xgboost_tutorial import tutorial_claims

# Each module lists its public names once; the package hands all of them on.
__all__ = [*bilambdamart.__all__, *claims.__all__, *datasets.__all__, *foltr.__all__, *ledger.__all__, *noniid.__all__,
           *sources.__all__, *xgboost_tutorial.__all__]
