"""Neural second-stage rankers of the Bi-LambdaMART paper (§5.3-§6, Tables 3 and 5-7), on JAX.

    ranker = NeuralRanker(Architecture("setrank", attention_layers=4, heads=2, size=256),
                          loss="softmax", learning_rate=0.05, order_by=score_column)
    ranker.fit(train, vali, train_ideal=..., vali_ideal=...)   # Adagrad, early stopping
    scores = ranker.score(test)                                  # a `ltrlib.data.Scorer`

Modules: `lists` (flat arrays with offsets <-> padded lists in canonical order), `models`
(DNN, GSF(m), ATTN-DIN, SetRank in Flax), `losses` (λRank and softmax on Rax), `ranker`
(training with early stopping, scoring), `competitors` (the paper's eleven networks on
`ltrlib.bilambdamart`'s stage-2 data, their tuning and Tables 3-7, for notebook
``06_neural_competitors``). The library is JAX with Flax, Optax and Rax: the
"Bi-LambdaMART's neural competitors" section of docs/bilambdamart.md gives the measurements
it was chosen by.
"""

from ltrlib.neural.competitors import (
    NEURAL_MODELS,
    PAPER_POINTS,
    budget_caption,
    fit_neural_models,
    network_curves,
    network_summary,
    neural_model_list,
    paper_marks,
    paper_marks_pvalues,
    table3,
    table3_pvalues,
    table4_rows,
    table5,
    table5_pvalues,
    ranker_means,
    table6,
    table7,
    tree_rows,
)
from ltrlib.neural.lists import pad_lists
from ltrlib.neural.losses import LOSSES
from ltrlib.neural.models import build_model
from ltrlib.neural.ranker import CONVERGED, PAPER_BUDGET, STOP_REASONS, NeuralBudget, NeuralRanker

__all__ = [
    "NEURAL_MODELS", "PAPER_POINTS", "budget_caption", "network_curves", "network_summary", "fit_neural_models", "neural_model_list", "paper_marks",
    "paper_marks_pvalues", "table3", "table3_pvalues", "table4_rows", "table5", "table5_pvalues",
    "ranker_means", "table6", "table7", "tree_rows", "pad_lists", "LOSSES", "build_model", "NeuralBudget",
    "NeuralRanker", "PAPER_BUDGET", "CONVERGED", "STOP_REASONS",
]
