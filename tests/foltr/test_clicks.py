"""Click models: Table 4 presets, PBM position bias, frequencies against the closed form,
label validation and seeded determinism."""

import numba
import numpy as np
import pytest

from ltrlib.foltr import clicks as C


@numba.njit(cache=True)
def _click_counts(kind, c, s, eta, labels, rng, n):
    """Per-rank click counts and the count of (click at 0 and click at 1) over n sessions."""
    counts = np.zeros(len(labels))
    both = 0
    out = np.zeros(len(labels), dtype=np.bool_)
    for _ in range(n):
        C.simulate_clicks(kind, c, s, eta, labels, rng, out)
        for r in range(len(labels)):
            counts[r] += out[r]
        both += out[0] and out[1]
    return counts, both


def frequencies(model, labels, n=200_000, seed=0):
    lab = model.check_labels(labels)
    counts, both = _click_counts(model.kind, model.click_prob, model.stop_prob, model.eta, lab,
                                 np.random.default_rng(seed), n)
    return counts / n, both / n


def test_table4_presets_values():
    nav = C.sdbn("navigational")
    assert nav.click_prob.tolist() == [0.05, 0.3, 0.5, 0.7, 0.95]
    assert nav.stop_prob.tolist() == [0.2, 0.3, 0.5, 0.7, 0.9]
    inf2 = C.sdbn("informational", n_levels=2)
    assert inf2.click_prob.tolist() == [0.3, 0.7] and inf2.stop_prob.tolist() == [0.1, 0.5]
    assert C.sdbn("perfect", 3).click_prob.tolist() == [0.0, 0.5, 1.0]
    p = C.pbm(1.5)
    assert p.kind == C.PBM and p.eta == 1.5 and p.click_prob.tolist() == [0.0, 0.2, 0.4, 0.8, 1.0]
    assert C.click_model("pbm0.5").eta == 0.5 and C.click_model("Perfect").name == "perfect"


@pytest.mark.parametrize("model", [C.sdbn("navigational"), C.sdbn("informational"), C.sdbn("perfect"),
                                   C.pbm(0.0), C.pbm(1.0), C.pbm(2.0)], ids=repr)
def test_click_frequencies_match_closed_form(model):
    labels = [4, 0, 2, 3, 1, 4, 0, 2]
    freq, _ = frequencies(model, labels)
    exact = model.click_probabilities(labels)
    # 200k sessions: the standard error is below 0.0012 everywhere.
    np.testing.assert_allclose(freq, exact, atol=0.005)


def test_sdbn_stops_after_click_and_pbm_is_independent():
    labels = [4, 4, 4]
    nav = C.sdbn("navigational")
    freq, both = frequencies(nav, labels)
    # click at 1 then continue (prob 1-0.9) then click at 2.
    assert both == pytest.approx(0.95 * 0.1 * 0.95, abs=0.004)
    assert freq[1] == pytest.approx(0.95 * (1 - 0.95 * 0.9), abs=0.004)
    p = C.pbm(1.0)
    freq, both = frequencies(p, labels)
    assert both == pytest.approx(1.0 * 0.5, abs=0.005)
    np.testing.assert_allclose(freq, [1.0, 0.5, 1 / 3], atol=0.005)


def test_perfect_never_clicks_irrelevant_and_always_clicks_perfect():
    m = C.sdbn("perfect")
    rng = np.random.default_rng(3)
    for _ in range(200):
        c = m.simulate(np.array([0, 4, 0, 4, 0]), rng)
        assert c.tolist() == [False, True, False, True, False]


def test_seeded_determinism_and_generator_required():
    m = C.sdbn("informational")
    labels = np.array([1, 2, 3, 0, 4, 1, 1, 2, 3, 0])
    a = [m.simulate(labels, np.random.default_rng(7)).tolist() for _ in range(2)]
    assert a[0] == a[1]
    seq = np.random.default_rng(7)
    runs = [m.simulate(labels, seq).tolist() for _ in range(20)]
    assert len({tuple(r) for r in runs}) > 1
    with pytest.raises(TypeError, match="Generator"):
        m.simulate(labels, 7)


@pytest.mark.parametrize("labels,match", [
    ([0, 1, 5], "label 5 at position 2 is outside 0..4"),
    ([0, -1], "label -1 at position 1"),
    ([0.0, 1.5], "must be integers, got 1.5 at position 1"),
    ([0.0, np.nan], "must be integers"),
    (["a", "b"], "must be numeric"),
    ([[0, 1]], "must be 1-D"),
])
def test_bad_labels_raise_clear_errors(labels, match):
    with pytest.raises(C.LabelError, match=match):
        C.sdbn("perfect").simulate(labels, np.random.default_rng(0))


def test_float_integer_labels_accepted_and_binary_scale_enforced():
    assert C.sdbn("perfect").check_labels(np.array([0.0, 4.0])).tolist() == [0, 4]
    with pytest.raises(C.LabelError, match="outside 0..1"):
        C.sdbn("perfect", n_levels=2).simulate([0, 2], np.random.default_rng(0))


def test_bad_parameters_raise():
    with pytest.raises(ValueError, match="preset must be one of"):
        C.sdbn("lazy")
    with pytest.raises(ValueError, match="n_levels must be one of"):
        C.sdbn("perfect", n_levels=4)
    with pytest.raises(ValueError, match="eta must be finite"):
        C.pbm(-1.0)
    with pytest.raises(ValueError, match="pbm<eta>"):
        C.click_model("pbmx")
    with pytest.raises(ValueError, match=r"click_prob must lie in \[0, 1\]"):
        C.ClickModel("bad", C.SDBN, np.array([0.0, 1.2]), np.zeros(2))


def test_stack_and_read_only_arrays():
    kinds, click, stop, eta = C.stack_click_models([C.sdbn("perfect"), C.pbm(2.0)])
    assert kinds.tolist() == [C.SDBN, C.PBM] and click.shape == (2, 5) and eta.tolist() == [0.0, 2.0]
    with pytest.raises(ValueError, match="different label scales"):
        C.stack_click_models([C.sdbn("perfect"), C.sdbn("perfect", 2)])
    with pytest.raises(ValueError):
        C.sdbn("perfect").click_prob[0] = 0.5
