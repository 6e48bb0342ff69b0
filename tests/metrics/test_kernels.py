"""The shared gain/discount/DCG kernels, and that every NDCG in ltrlib goes through them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ltrlib.bilambdamart.objective import mean_ndcg
from ltrlib.foltr.clicks import sdbn, stack_click_models
from ltrlib.foltr.pdgd import LIST_SIZE, client_update
from ltrlib.foltr.views import view_of_queries
from ltrlib.metrics import ideal_dcg, ndcg
from ltrlib.metrics.kernels import dcg_term, discount, gain, query_dcg, query_ideal_dcg, sorted_ideal_dcg


def test_kernel_definitions_by_hand():
    assert [gain(v) for v in (0, 1, 2, 4)] == [0.0, 1.0, 3.0, 15.0]
    assert gain(np.int64(3)) == gain(3.0) == 7.0          # int and float labels alike
    assert discount(0) == 1.0 and discount(2) == 0.5 and discount(1) == 1 / math.log2(3)
    # A DCG term divides by log2(rank + 2) (what the metrics always reported).
    assert dcg_term(2.0, 1) == 3.0 / math.log2(3.0)
    labels = np.array([0.0, 3.0, 1.0])
    order = np.array([1, 2, 0])                            # labels 3, 1, 0 from the top
    assert query_dcg(labels, order, 2) == 7.0 + 1.0 / math.log2(3.0)
    assert query_dcg(labels, order, 0) == 0.0
    assert query_ideal_dcg(labels, 2) == query_dcg(labels, order, 2)
    assert query_ideal_dcg(labels, 99) == sorted_ideal_dcg(np.sort(labels), 3)


def _pdgd_online_ndcg(y, s):
    """PDGD's online NDCG@10 of one query whose Plackett-Luce sample is certain: the scores
    are 1000 apart, so every other document has probability exp(-1000) = 0 at each
    position and the shown list is the descending-score order."""
    n = y.size
    view = view_of_queries("q", np.array([0, n]), y, n_updates=1)
    X = (np.argsort(np.argsort(s)) * 1000.0).astype(np.float32)[:, None]  # rank of each score
    kinds, c, st, eta = stack_click_models((sdbn("perfect"),))
    out = np.zeros(1)
    client_update(0, 1, np.ones(1), np.zeros(1), 0.0, False, 0.0, 1, X, view.rows, view.labels,
                  view.q_off, view.ideal, view.model_choices, kinds, c, st, eta,
                  np.random.default_rng(0), np.random.default_rng(1), out)
    return out[0], view.ideal[0]


@pytest.mark.parametrize("seed", range(12))
def test_metrics_pdgd_and_lb_objective_agree_to_the_bit(seed):
    """One ranking, three users of the kernels: the metrics' NDCG@10, PDGD's online NDCG@10
    and the LB objective's early-stopping NDCG@10 must be the same float. A copy of the DCG
    that drifts (another cutoff, multiplying by the discount instead of dividing, ...)
    shows here; before the kernels were shared the LB objective's differed in the last
    bit for some of these queries."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(11, 25))                          # longer than PDGD's 10 shown
    y = rng.integers(0, 5, n)
    y[rng.integers(0, n)] = 4                              # at least one relevant document
    s = rng.permutation(n).astype(np.float64)              # no ties: PL is then certain
    off = np.array([0, n])
    idcg = ideal_dcg(y, off, LIST_SIZE)
    metrics = ndcg(y, s, off, LIST_SIZE)[0]
    online, pdgd_ideal = _pdgd_online_ndcg(y, s)
    assert pdgd_ideal == idcg[0]
    assert online == metrics
    assert mean_ndcg(s, y, off, idcg, LIST_SIZE) == metrics


def test_query_without_relevant_documents_keeps_each_users_convention():
    y, s, off = np.zeros(12, dtype=np.int64), np.arange(12.0), np.array([0, 12])
    assert ndcg(y, s, off, 10)[0] == 1.0                   # metrics: no_relevant="one"
    assert ndcg(y, s, off, 10, no_relevant="zero")[0] == 0.0
    assert mean_ndcg(s, y, off, ideal_dcg(y, off, 10), 10) == 1.0  # LB early stopping
    assert _pdgd_online_ndcg(y, s)[0] == 0.0               # PDGD online NDCG counts 0


def test_numba_caches_are_dropped_when_a_numba_module_changes(tmp_path, monkeypatch):
    # A caller's numba cache is keyed by the caller's file only; an edit of a callee's file
    # alone (kernels.py, or the rankers FPDGD's rounds call) must not leave callers running
    # code compiled with the old callee.
    from ltrlib.metrics import kernels

    package = tmp_path / "ltrlib"
    source = package / "metrics" / "kernels.py"
    source.parent.mkdir(parents=True)
    source.write_text("import numba  # kernels, version 1\n")
    rankers = package / "foltr" / "rankers.py"
    rankers.parent.mkdir(parents=True)
    rankers.write_text("import numba  # rankers, version 1\n")
    plain = package / "report.py"
    plain.write_text("# no compiled code\n")
    caller_cache = package / "foltr" / "__pycache__" / "rounds.play_rounds-12.py311.nbi"
    caller_cache.parent.mkdir(parents=True)
    monkeypatch.setattr(kernels, "__file__", str(source))

    caller_cache.touch()
    kernels._drop_stale_caches()  # first sight of this version: stale
    assert not caller_cache.exists()
    caller_cache.touch()  # compiled again with version 1
    kernels._drop_stale_caches()
    assert caller_cache.exists()
    plain.write_text("# no compiled code, edited\n")  # a module without numba code: caches stay
    kernels._drop_stale_caches()
    assert caller_cache.exists()
    for edited in (source, rankers):
        edited.write_text(edited.read_text() + "# version 2\n")
        kernels._drop_stale_caches()
        assert not caller_cache.exists()
        caller_cache.touch()
    assert len(list((package / "metrics" / "__pycache__").glob("numba-*.stamp"))) == 1
