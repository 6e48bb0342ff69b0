"""The Bi-LambdaMART paper's claims, decided on notebook 06's saved tables."""

import json

import pytest

from ltrlib.fidelity.bilambdamart import SEED_COMPARISONS, across_seeds, bilambdamart_claims, read_tables
from ltrlib.metrics import parse_marked

def test_parse_marked_reads_what_mark_significance_writes():
    assert parse_marked("0.7140ᵃᵇ") == (0.714, "ab")
    assert parse_marked(0.5) == (0.5, "")
    with pytest.raises(ValueError, match="marked number"):
        parse_marked("n/a")


def test_claims_hold_and_fail_on_the_tables(tmp_path, tables):
    claims, missing = bilambdamart_claims(tables.bilambdamart_run(tmp_path))
    assert missing == []
    verdict = dict(zip(claims.claim, claims.ours))
    assert set(verdict.values()) == {"holds"}, claims
    # Every claim holds on the paper's own printed numbers (checks their encoding).
    assert set(claims.paper[claims.claim != "control_no_pairwise_gain"]) == {"holds"}
    central = claims.set_index("claim").loc["bi_beats_univariate"]
    assert "+2.01%" in central.evidence and "significant" in central.evidence
    # Effect Ratio: our mean gain over λMART and λMART* against the paper's, averaged over
    # the three datasets it prints Table 2 for; ΔRI: the paper's relative gain minus ours.
    ours = ((0.71 - 0.695) + (0.71 - 0.696)) / 2
    paper = [((bi - lm) + (bi - star)) / 2 for lm, star, bi in
             ((0.4968, 0.4975, 0.5029), (0.5244, 0.5248, 0.5291), (0.8421, 0.8409, 0.8466))]
    paper_base = sum((lm + star) / 2 for lm, star, _ in
                     ((0.4968, 0.4975, 0.5029), (0.5244, 0.5248, 0.5291), (0.8421, 0.8409, 0.8466))) / 3
    assert central.effect_ratio == pytest.approx(ours / (sum(paper) / 3))
    assert central.delta_ri == pytest.approx((sum(paper) / 3) / paper_base - ours / ((0.695 + 0.696) / 2))
    # The control has no paper counterpart.
    assert claims.set_index("claim").loc["control_no_pairwise_gain", "paper"] == "not available"


def test_the_neural_claims_fail_where_the_networks_do_what_the_paper_says_they_do_not(tmp_path, tables):
    networks = dict(tables.NETWORKS, DNN=0.700, SetRank_Softmax=0.6995)  # DNN above the trees and the rest
    claims, missing = bilambdamart_claims(tables.bilambdamart_run(tmp_path, networks=networks))
    verdict = dict(zip(claims.claim, claims.ours))
    assert verdict["trees_beat_networks"] == "does not hold"  # λMART 0.695 < DNN 0.700
    assert verdict["attention_best_networks"] == "does not hold"
    assert verdict["multivariate_beats_dnn"] == "does not hold"
    assert verdict["softmax_helps_networks"] == "does not hold"  # DNN_Softmax 0.671 < DNN 0.700
    assert verdict["bi_softmax_beats_best_network"] == "holds"  # 0.7000† against 0.6995
    assert verdict["gbt_softmax_beats_networks"] == "does not hold"
    # Every neural verdict says what the networks were given.
    evidence = claims.set_index("claim").evidence
    assert "networks: 1 trial(s) each, at most 1000 steps" in evidence["softmax_helps_networks"]


def test_a_run_without_the_neural_notebook_misses_nothing_and_decides_no_neural_claim(tmp_path, tables):
    claims, missing = bilambdamart_claims(tables.bilambdamart_run(tmp_path, networks=None))
    assert missing == []
    neural = claims[claims.claim.isin(["trees_beat_networks", "softmax_helps_networks"])]
    assert set(neural.ours) == {"not available"} and neural.evidence.str.contains("lacks").all()


def test_a_gain_without_significance_does_not_hold(tmp_path, tables):
    claims, _ = bilambdamart_claims(tables.bilambdamart_run(tmp_path, bi="0.7100ᵃ", control_bi="0.6700ᵃᵇ"))
    verdict = dict(zip(claims.claim, claims.ours))
    assert verdict["bi_beats_univariate"] == "does not hold"
    assert verdict["differences_help"] == "holds"  # the paper prints no test for Table 4
    assert verdict["control_no_pairwise_gain"] == "does not hold"  # a gain without pairs


def test_untuned_runs_are_no_comparison_and_missing_tables_are_named(tmp_path, tables):
    claims, _ = bilambdamart_claims(tables.bilambdamart_run(tmp_path, trials=1, control_bi=None))
    assert set(claims.ours) == {"not available"}
    assert claims.evidence.str.contains("not a comparison").all()
    (tmp_path / "tables" / "06_bilambdamart" / "table5_softmax.csv").unlink()
    tables, missing = read_tables(tmp_path)
    assert "table5" not in tables and missing == ["tables/06_bilambdamart/table5_softmax.csv"]


def _seed_run(tables, tmp_path, seed, *, bi="0.7100ᵃᵇᶜ", scale="small", trials=10):
    run = tables.bilambdamart_run(tmp_path / f"seed{seed}", bi=bi, trials=trials)
    params = {"dataset": "synthetic", "data_dir": "", "scale": scale, "seed": seed}
    (run / "run.json").write_text(json.dumps({"params": params, "notebooks": {"06_bilambdamart": {
        "status": "completed", "parameters": {**params, "run_id": f"seed{seed}"}}}}))
    return run


def test_across_seeds_gives_each_run_and_a_test_over_the_seeds(tables, tmp_path):
    from scipy import stats

    # λMART* is 0.6960 (row c) in every run: +2.01 % marked, +0.57 % marked "ab" only.
    runs = [_seed_run(tables, tmp_path, 0), _seed_run(tables, tmp_path, 1, bi="0.7000ᵃᵇ"),
            _seed_run(tables, tmp_path, 2, bi="0.6900")]
    per_run, summary = across_seeds(runs)
    star = per_run[per_run.comparison == "Bi-λMART vs λMART*"].set_index("seed")
    assert star.difference_pct.round(2).tolist() == [2.01, 0.57, -0.86]
    assert star.significant.tolist() == [True, False, False]
    row = summary.set_index("comparison").loc["Bi-λMART vs λMART*"]
    assert row.runs == 3 and row.significant_runs == 1
    assert row.mean_difference_pct == pytest.approx(star.difference_pct.mean())
    assert row.p_across_seeds == pytest.approx(stats.ttest_1samp(star.difference_pct, 0).pvalue)
    assert set(summary.comparison) == {c[0] for c in SEED_COMPARISONS}


def test_across_seeds_refuses_runs_that_are_not_one_setup_at_several_seeds(tables, tmp_path):
    a = _seed_run(tables, tmp_path, 0)
    with pytest.raises(ValueError, match="at least two runs"):
        across_seeds([a])
    with pytest.raises(ValueError, match="both seed 0"):
        across_seeds([a, a])
    with pytest.raises(ValueError, match=r"differ in \['scale'\]"):
        across_seeds([a, _seed_run(tables, tmp_path, 1, scale="paper")])
    with pytest.raises(ValueError, match="n_trials = 1"):
        across_seeds([a, _seed_run(tables, tmp_path, 2, trials=1)])
    with pytest.raises(ValueError, match="no column 'ndcg@7'"):
        across_seeds([a, _seed_run(tables, tmp_path, 3)], metric="ndcg@7")
    with pytest.raises(ValueError, match="run.json is missing"):
        across_seeds([a, tmp_path])


def test_cli_prints_the_seed_comparison(tables, tmp_path, capsys):
    from ltrlib import cli

    runs = [str(_seed_run(tables, tmp_path, s)) for s in (0, 1)]
    assert cli.main(["bilambdamart-seeds", *runs]) == 0
    out = capsys.readouterr().out
    assert "Bi-GBT_Softmax vs GBT_Softmax" in out and "p_across_seeds" in out
    assert cli.main(["bilambdamart-seeds", runs[0], str(tmp_path / "none")]) == 1
    assert "no run" in capsys.readouterr().err
