"""Neural second-stage rankers of the Bi-LambdaMART paper (§5.3-§6, Tables 3 and 5-7), on JAX.

    ranker = NeuralRanker(Architecture("setrank", attention_layers=4, heads=2, size=256),
                          loss="softmax", learning_rate=0.05, order_by=score_column)
    ranker.fit(train, vali, train_ideal=..., vali_ideal=...)   # Adagrad, early stopping
    scores = ranker.score(test)                                  # a `ltrlib.data.Scorer`

Modules: `lists` (flat arrays with offsets <-> padded lists in canonical order), `models`
(DNN, GSF(m), ATTN-DIN, SetRank in Flax), `losses` (λRank and softmax on Rax), `ranker`
(training with early stopping, scoring). The library is JAX with Flax, Optax and Rax: the
README's "Neural rankers" section gives the measurements it was chosen by.
"""

from ltrlib.neural import lists, losses, models, ranker
from ltrlib.neural.lists import PaddedLists, pad_lists
from ltrlib.neural.losses import LOSSES, delta_dcg_weights, lambdarank_loss, list_loss, softmax_loss
from ltrlib.neural.models import ARCHITECTURES, Architecture, build_model, gsf_groups
from ltrlib.neural.ranker import PAPER_BUDGET, NeuralBudget, NeuralRanker

__all__ = [*lists.__all__, *losses.__all__, *models.__all__, *ranker.__all__]
