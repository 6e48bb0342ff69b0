"""Tables of the stage-2 experiment: significance letters against earlier rows only."""

import numpy as np
import pandas as pd
import pytest

from ltrlib.bilambdamart.experiment import MODELS, bilambdamart_metrics, ndcg_table, suggest


def _per_query():
    rng = np.random.default_rng(0)
    base = rng.random(200) * 0.5
    values = {"A": base, "B": base + 0.10 + rng.normal(0, 0.01, 200),
              "C": base + 0.10 + rng.normal(0, 0.01, 200), "D": base - 0.2}
    return pd.concat([pd.DataFrame({"model": m, "metric": "ndcg@5", "qid": np.arange(200),
                                    "value": v}) for m, v in values.items()], ignore_index=True)


def test_letters_mark_improvements_over_earlier_rows_only():
    pq = _per_query()
    marked = ndcg_table(pq, ["A", "B", "C", "D"])
    t = marked.formatted()
    assert list(t.index) == ["a. A", "b. B", "c. C", "d. D"]
    cells = t["ndcg@5"]
    assert cells["a. A"] == f"{pq[pq.model == 'A'].value.mean():.4f}"
    assert cells["b. B"].endswith("ᵃ")  # better than A
    assert cells["c. C"].endswith("ᵃ")  # better than A, not than B (same shift)
    assert not any(ch in cells["d. D"] for ch in "ᵃᵇᶜ")  # worse: no improvement marks
    # A is never marked against later rows, though B is significantly different from it.
    assert cells["a. A"][-1].isdigit()
    # The marks are numbers until printed: each mark a boolean beside the full-precision mean.
    numbers = marked.numbers.set_index("model")
    assert numbers.loc["B", ["marked_a", "marked_b", "marked_c", "marked_d"]].tolist() == [True, False, False, False]
    assert not numbers.loc["D", ["marked_a", "marked_b", "marked_c"]].any()
    assert numbers.loc["A", "mean"] == pytest.approx(pq[pq.model == "A"].value.mean(), rel=1e-12)


def test_headline_keys_and_search_space():
    pq = _per_query().replace({"model": {"A": "λMART (stage 1)", "B": "Bi-λMART w/o d"}})
    keys = bilambdamart_metrics(pq, no_listwise=pq)
    assert set(keys) >= {"lambdamart_stage_1.ndcg5", "bi-lambdamart_w_o_d.ndcg5",
                         "no_listwise.bi-lambdamart_w_o_d.ndcg5"}
    optuna = pytest.importorskip("optuna")
    study = optuna.create_study()
    point = suggest(study.ask())
    assert set(point) == {"learning_rate", "num_leaves", "min_data_in_leaf", "min_sum_hessian_in_leaf"}
    assert set(MODELS) == {"λMART", "λMART*", "Bi-λMART", "Bi-λMART w/o d", "GBT_Softmax",
                           "Bi-GBT_Softmax"}


def test_curves_say_which_ideal_dcg_they_use():
    from types import SimpleNamespace

    from ltrlib.bilambdamart.experiment import FittedModel, curves_frame

    fitted = {name: FittedModel(name, SimpleNamespace(curve=[0.1, 0.3, 0.2]), {}, 2, 0.3, pd.DataFrame())
              for name in ("λMART", "Bi-λMART")}
    curves = curves_frame(fitted)
    # Native λMART's curve is LightGBM's (top-k list IDCG); the others use the full list.
    assert list(pd.unique(curves.model)) == ["λMART (top-k IDCG)", "Bi-λMART"]
    assert curves[curves.best].tree.tolist() == [2, 2] and set(curves.metric) == {"ndcg@5"}
