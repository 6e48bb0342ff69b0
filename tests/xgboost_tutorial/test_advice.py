"""ltrlib.xgboost_tutorial.advice: the reproducibility experiment and its one-ULP control."""

import numpy as np
import pytest

from ltrlib.xgboost_tutorial import advice


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_ulp_apart_moves_one_score_to_the_next_float(dtype):
    scores = np.array([0.25, -1.5, 3.0], dtype=dtype)
    moved = advice.one_ulp_apart(scores)
    assert moved.dtype == scores.dtype and moved[0] == np.nextafter(scores[0], dtype(np.inf))
    assert moved[0] - scores[0] == np.spacing(scores[0]) and np.array_equal(moved[1:], scores[1:])
    assert scores[0] == dtype(0.25)  # the scores themselves are left alone
    row = advice._bitwise("s", advice.ULP_CONTROL, scores, moved)
    assert row["identical"] is False and row["max_abs_difference"] == pytest.approx(float(np.spacing(scores[0])))


def test_reproducibility_holds_its_one_ulp_control():
    """On the tiny twin with three trees: the thread rows bit-identical, the one-ULP row not."""
    from ltrlib.data import load_dataset
    from ltrlib.train import TrainSettings

    splits = load_dataset("synthetic", scale="tiny", seed=0)
    table = advice.reproducibility(splits, {}, TrainSettings(backend="xgboost", max_trees=3, seed=0), max_trees=3)
    threads = table[table.compared.str.startswith("1 thread")]
    assert len(threads) == 2 and threads.identical.all()
    (ulp,) = table[table.compared == advice.ULP_CONTROL].itertuples()
    assert ulp.setting == "topk, k=10" and not ulp.identical and 0 < ulp.max_abs_difference < 1e-6
