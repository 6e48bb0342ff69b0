"""Pairwise uptake: its known answers, its invariances, its conventions and its errors."""

import numpy as np
import pandas as pd
import pytest

from ltrlib.bilambdamart.uptake import pairwise_uptake, pairwise_uptake_by_query, uptake_table


@pytest.fixture(scope="module")
def lists():
    """Seeded lists of 3-40 documents: a univariate utility, a term partly predicted by it
    (so residualising matters), a model error, and large per-query offsets."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(3, 41, 80)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    n = int(offsets[-1])
    u = rng.normal(size=n) + np.repeat(rng.normal(0, 3, sizes.size), sizes)
    term = 0.4 * rng.normal(size=n) + 0.3 * u
    error = rng.normal(size=n)
    shift = np.repeat(rng.normal(0, 1e3, sizes.size), sizes)
    return {"u": u, "term": term, "error": error, "shift": shift, "offsets": offsets}


def _model(lists, a, b, noise=0.5):
    """a * (u + b * term + noise * error) + per-query constants: a model on its own scale."""
    return a * (lists["u"] + b * lists["term"] + noise * lists["error"]) + lists["shift"]


def _uptake(lists, scores):
    return pairwise_uptake(scores, lists["u"], lists["term"], lists["offsets"])


def test_univariate_utility_takes_up_nothing_and_the_oracle_everything(lists):
    assert abs(_uptake(lists, lists["u"])) < 1e-12
    assert abs(_uptake(lists, 5.0 * lists["u"] + lists["shift"])) < 1e-12
    assert _uptake(lists, lists["u"] + lists["term"]) == pytest.approx(1.0, abs=1e-12)


def test_uptake_grows_with_the_weight_on_the_term(lists):
    weights = [-2.0, -0.5, -0.1, 0.0, 0.1, 0.3, 1.0, 3.0]
    uptake = np.array([_uptake(lists, _model(lists, 2.0, b)) for b in weights])
    assert np.all(np.diff(uptake) > 0), uptake
    assert np.all(uptake[np.array(weights) < 0] < 0)  # ranking against the standing
    assert abs(uptake[weights.index(0.0)]) < 0.1  # the model error alone: about nothing
    assert uptake[-1] > 0.9


def test_without_a_model_error_any_positive_weight_recovers_the_whole_term(lists):
    # The documented limit of a correlation: u + 0.01 t holds the term as cleanly as u + t.
    for b, expected in [(0.01, 1.0), (1.0, 1.0), (-0.01, -1.0)]:
        assert _uptake(lists, _model(lists, 3.0, b, noise=0.0)) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("a", [1e-3, 0.7, 40.0])
def test_invariant_to_positive_rescaling_and_per_query_shifts(lists, a):
    plain = _uptake(lists, lists["u"] + 0.4 * lists["term"] + 0.5 * lists["error"])
    assert 0.2 < plain < 0.9
    assert _uptake(lists, _model(lists, a, 0.4)) == pytest.approx(plain, abs=1e-9)
    # A negative rescaling reverses the ranking, and the sign of the uptake with it.
    assert _uptake(lists, _model(lists, -a, 0.4)) == pytest.approx(-plain, abs=1e-9)


def test_matches_a_fixed_effects_regression(lists):
    # Independent of the implementation: OLS with one dummy per query, then the
    # correlation of the two residuals (Frisch-Waugh-Lovell).
    u, term, offsets = lists["u"], lists["term"], lists["offsets"]
    scores = _model(lists, 1.5, 0.6)
    query = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    design = np.column_stack([u, query[:, None] == np.arange(offsets.size - 1)])

    def residual(y):
        return y - design @ np.linalg.lstsq(design, y, rcond=None)[0]

    expected = np.corrcoef(residual(scores), residual(term))[0, 1]
    assert _uptake(lists, scores) == pytest.approx(expected, abs=1e-9)


def test_by_query_is_each_querys_own_partial_correlation(lists):
    u, term, offsets = lists["u"], lists["term"], lists["offsets"]
    scores = _model(lists, 0.5, 0.6)
    by_query = pairwise_uptake_by_query(scores, u, term, offsets)
    assert by_query.shape == (offsets.size - 1,)
    for q in (0, 17, 79):
        a, b = offsets[q], offsets[q + 1]
        r = np.corrcoef([scores[a:b], term[a:b], u[a:b]])
        partial = (r[0, 1] - r[0, 2] * r[1, 2]) / np.sqrt((1 - r[0, 2] ** 2) * (1 - r[1, 2] ** 2))
        assert by_query[q] == pytest.approx(partial, abs=1e-9)


def test_nan_when_the_term_has_nothing_beyond_the_univariate_utility(lists):
    u, offsets, shift = lists["u"], lists["offsets"], lists["shift"]
    scores = _model(lists, 1.0, 1.0)
    assert np.isnan(pairwise_uptake(scores, u, np.zeros_like(u), offsets))  # pairwise_weight = 0
    assert np.isnan(pairwise_uptake(scores, u, shift, offsets))  # constant within queries
    assert np.isnan(pairwise_uptake(scores, u, -2.0 * u + shift, offsets))  # a function of u


def test_scores_constant_within_queries_take_up_nothing(lists):
    assert _uptake(lists, lists["shift"]) == 0.0


def test_by_query_marks_the_queries_without_a_term_and_keeps_empty_ones(lists):
    u, term = lists["u"][:9].copy(), lists["term"][:9].copy()
    term[4:6] = 1.5  # query 1: two documents, the term constant
    offsets = np.array([0, 4, 6, 6, 9])  # query 2 is empty
    by_query = pairwise_uptake_by_query(u + term, u, term, offsets)
    assert np.isnan(by_query[1]) and np.isnan(by_query[2])
    assert by_query[0] == pytest.approx(1.0) and by_query[3] == pytest.approx(1.0)
    # An empty query changes nothing in the pooled figure.
    scores = u + 0.5 * lists["error"][:9]
    assert pairwise_uptake(scores, u, term, offsets) == pytest.approx(
        pairwise_uptake(scores, u, term, [0, 4, 6, 9]), abs=1e-12)


def test_table_against_the_reference(lists):
    u, term, offsets = lists["u"], lists["term"], lists["offsets"]
    models = {"λMART*": _model(lists, 1.0, 0.1), "LB": _model(lists, 2.0, 1.0), "oracle": u + term}
    table = uptake_table(models, u, term, offsets)
    assert list(table.columns) == ["model", "uptake", "uptake_minus_reference"]
    assert list(table.model) == ["λMART*", "LB", "oracle"]
    reference = _uptake(lists, models["λMART*"])
    np.testing.assert_allclose(table.uptake, [reference, _uptake(lists, models["LB"]), 1.0])
    np.testing.assert_allclose(table.uptake_minus_reference, table.uptake - reference)
    assert table.uptake_minus_reference.iloc[0] == 0.0

    absent = uptake_table(models, u, term, offsets, reference="λMART")
    assert absent.uptake_minus_reference.isna().all()
    pd.testing.assert_series_equal(absent.uptake, table.uptake)
    assert uptake_table(models, u, term, offsets, reference=None).uptake_minus_reference.isna().all()


def test_table_names_the_model_with_bad_scores(lists):
    u, term, offsets = lists["u"], lists["term"], lists["offsets"]
    with pytest.raises(ValueError, match=r"scores_by_model\['LB'\] has 3 entries"):
        uptake_table({"λMART*": u, "LB": u[:3]}, u, term, offsets)


@pytest.mark.parametrize("change, message", [
    (lambda a: {**a, "scores": a["scores"][:-1]}, r"^scores has \d+ entries but univariate_utility"),
    (lambda a: {**a, "pairwise_term": a["pairwise_term"][1:]}, r"^pairwise_term has \d+ entries"),
    (lambda a: {**a, "scores": a["scores"].reshape(-1, 1)}, r"^scores must be 1-D"),
    (lambda a: {**a, "scores": np.where(np.arange(a["scores"].size) == 5, np.nan, a["scores"])},
     r"^scores has 1 NaN or infinite values \(first at position 5\)"),
    (lambda a: {**a, "univariate_utility": np.append(a["univariate_utility"][:-1], np.inf)},
     r"^univariate_utility has 1 NaN or infinite"),
    (lambda a: {**a, "pairwise_term": np.full_like(a["pairwise_term"], np.nan)}, r"^pairwise_term has \d+ NaN"),
    (lambda a: {**a, "offsets": a["offsets"][1:]}, r"^offsets must run from 0.*offsets\[0\]="),
    (lambda a: {**a, "offsets": a["offsets"][:-1]}, r"^offsets must run from 0 to the number of documents"),
    (lambda a: {**a, "offsets": np.array([0, 30, 20, a["offsets"][-1]])},
     r"^offsets must be non-decreasing; offsets\[1\]=30 > offsets\[2\]=20"),
    (lambda a: {**a, "offsets": a["offsets"] + 0.5}, r"^offsets must be integers"),
    (lambda a: {**a, "offsets": np.array([[0, a["offsets"][-1]]])}, r"^offsets must be 1-D"),
])
def test_bad_input_is_refused_naming_the_parameter(lists, change, message):
    good = {"scores": _model(lists, 1.0, 0.5), "univariate_utility": lists["u"],
            "pairwise_term": lists["term"], "offsets": lists["offsets"]}
    assert np.isfinite(pairwise_uptake(**good))
    with pytest.raises(ValueError, match=message):
        pairwise_uptake(**change(good))
    with pytest.raises(ValueError, match=message):
        pairwise_uptake_by_query(**change(good))


def test_the_inputs_are_not_written(lists):
    scores = _model(lists, 1.0, 0.5)
    before = [scores.copy(), lists["u"].copy(), lists["term"].copy()]
    pairwise_uptake(scores, lists["u"], lists["term"], lists["offsets"])
    for was, now in zip(before, [scores, lists["u"], lists["term"]]):
        np.testing.assert_array_equal(was, now)


def test_the_generators_oracles_on_tiny_data():
    from ltrlib.data.synthetic import ORACLE, ORACLE_UNIVARIATE, make_synthetic, oracle_scores

    test = make_synthetic("tiny", seed=0).test
    oracle = oracle_scores(test)
    univariate = oracle[ORACLE_UNIVARIATE]
    term = oracle[ORACLE] - univariate
    assert term.std() > 0.1  # the default pairwise_weight is 0.3: there is a term to take up
    table = uptake_table({ORACLE: oracle[ORACLE], ORACLE_UNIVARIATE: univariate}, univariate, term,
                         test.offsets, reference=ORACLE_UNIVARIATE)
    uptake = dict(zip(table.model, table.uptake))
    assert uptake[ORACLE] == pytest.approx(1.0, abs=1e-9)
    assert abs(uptake[ORACLE_UNIVARIATE]) < 1e-9
    # Freshness alone (feature f50) carries part of the standing, as the generator says.
    freshness = test.X[:, test.feature_index("f50")]
    assert 0.1 < pairwise_uptake(univariate + freshness, univariate, term, test.offsets) < 0.9
