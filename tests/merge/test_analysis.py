"""ltrlib.merge.analysis: model names, the marked tables 4/5, per-category deltas."""

import numpy as np
import pandas as pd
import pytest

from ltrlib.data.dataset import Dataset
from ltrlib.merge import analysis


def test_merged_model_names_follow_the_paper():
    assert analysis.merged_model_name(0, 2, "α") == "M12α"
    assert analysis.merged_model_name(1, 2, "S") == "M21S"
    assert analysis.merged_model_name(2, 3, "S") == "M312S"


def _per_query(n=40, seed=0):
    # M2 is M1 + 0.2 on every query (significant), M12 is M1 + tiny noise (not significant).
    rng = np.random.default_rng(seed)
    base = rng.random(n) * 0.5
    values = {"M1": base, "M2": base + 0.2, "M12α": base + rng.normal(0, 1e-3, n)}
    return pd.concat([pd.DataFrame({"split": "Split1", "model": m, "qid": np.arange(n),
                                    "metric": "ndcg@10", "value": v}) for m, v in values.items()],
                     ignore_index=True)


def test_marked_table_marks_significant_differences_against_each_baseline():
    marked = analysis.marked_table(_per_query(), models=["M1", "M2", "M12α"])
    table = marked.formatted()
    assert list(table.index) == ["M1 (a)", "M2 (b)", "M12α"]
    cells = table[("Split1", "ndcg@10")]
    assert cells["M2 (b)"].endswith("ᵃ")              # differs from M1
    assert cells["M1 (a)"].endswith("ᵇ")              # and M1 from M2
    assert cells["M12α"].endswith("ᵇ") and "ᵃ" not in cells["M12α"]
    mean_m2 = _per_query().query("model == 'M2'").value.mean()
    assert cells["M2 (b)"].startswith(f"{mean_m2:.4f}")
    numbers = marked.numbers.set_index("model")
    assert numbers.loc["M12α", ["marked_a", "marked_b"]].tolist() == [False, True]
    assert list(marked.formatted(flat=True).columns) == ["Split1 ndcg@10"]  # as the report writes it
    with pytest.raises(KeyError, match="M9"):
        analysis.marked_table(_per_query(), models=["M9"])


def test_category_deltas_on_hand_built_queries():
    pq = _per_query(n=4)
    m1 = pq.model == "M1"
    pq.loc[pq.model == "M12α", "value"] = pq.loc[m1, "value"].to_numpy()
    pq.loc[(pq.model == "M12α") & (pq.qid == 3), "value"] += 0.5   # helps query 3 only
    cats = pd.DataFrame({"qid": [0, 1, 2, 3], "category": [11, 11, 14, 14]})
    out = analysis.category_deltas(pq, cats, models=["M12α"], baselines=("M1",))
    out = out.set_index("category")
    assert list(out.n_queries) == [2, 2]
    assert out.loc[14, "mean_delta"] == pytest.approx(0.25)
    assert out.loc[14, "share_better"] == 0.5 and out.loc[14, "share_worse"] == 0
    assert out.loc[11, "mean_delta"] == 0 and out.loc[11, "share_better"] == 0
    with pytest.raises(KeyError, match="lacks some query ids"):
        analysis.category_deltas(pq, cats.iloc[:2], models=["M12α"])


def test_query_categories_use_the_papers_rule():
    # Query 0: two relevant documents of category 3, one of 5 -> 3. Query 1: none relevant.
    ds = Dataset(X=np.zeros((5, 1), np.float32), y=np.array([1, 2, 1, 0, 0]), query_ids=np.array([7, 8]),
                 offsets=np.array([0, 3, 5]), category=np.array([3, 3, 5, 3, 5]), name="q")
    q = analysis.query_categories(ds)
    assert q.set_index("qid").category.to_dict() == {7: 3, 8: -1}
    with pytest.raises(ValueError, match="no document categories"):
        analysis.query_categories(Dataset(X=ds.X, y=ds.y, query_ids=ds.query_ids, offsets=ds.offsets))


def test_means_table_gives_means_and_paired_p_values():
    from ltrlib.merge.analysis import means_table

    rows = [("S", m, q, "ndcg@10", v) for m, vals in
            (("M1", [0.1, 0.2, 0.3, 0.4]), ("M2", [0.2, 0.3, 0.5, 0.5]), ("M12α", [0.1, 0.2, 0.3, 0.4]))
            for q, v in enumerate(vals)]
    pq = pd.DataFrame(rows, columns=["split", "model", "qid", "metric", "value"])
    t = means_table(pq, models=["M1", "M2", "M12α"]).set_index("model")
    assert t.loc["M2", "value"] == pytest.approx(0.375) and (t.queries == 4).all()
    assert np.isnan(t.loc["M1", "p_vs_M1"]) and np.isnan(t.loc["M2", "p_vs_M2"])
    assert t.loc["M12α", "p_vs_M1"] == 1.0  # identical values: no evidence of a difference
    assert t.loc["M12α", "p_vs_M2"] == pytest.approx(t.loc["M1", "p_vs_M2"])
    assert t.loc["M1", "p_vs_M2"] < 0.05
    # Holm over the table's marked comparisons: M12α against M1 and against M2 (two p).
    from statsmodels.stats.multitest import multipletests

    family = [t.loc["M12α", "p_vs_M1"], t.loc["M12α", "p_vs_M2"]]
    assert [t.loc["M12α", "p_vs_M1_holm"], t.loc["M12α", "p_vs_M2_holm"]] == pytest.approx(
        multipletests(family, method="holm")[1])
    assert t.loc["M12α", "p_vs_M2_holm"] == pytest.approx(min(1.0, 2 * t.loc["M12α", "p_vs_M2"]))
    assert np.isnan(t.loc["M1", "p_vs_M2_holm"])  # a baseline is not marked, so not corrected


def test_the_fusion_and_comparison_tables_carry_holm_over_every_mark_they_print():
    """Notebook 04's ``fusion_baselines_numeric`` and 05's ``comparison_numeric``: `means_table`
    of the marked table's rows, Holm-corrected over every comparison the table marks (each
    row but M1 and M2, against each, in every split and metric), as statsmodels gives it."""
    from statsmodels.stats.multitest import multipletests

    from ltrlib.merge import FUSIONS, means_table

    rng = np.random.default_rng(3)
    rows = ["M1", "M2", "M12α", "M21α", *FUSIONS, "M12wsum", "M21wsum", "oracle"]
    pq = pd.DataFrame([(split, m, q, metric, 0.4 + 0.01 * i + rng.normal(0, 0.05))
                       for split in ("Split1", "Split2") for metric in ("ndcg@10", "map")
                       for i, m in enumerate(rows) for q in range(12)],
                      columns=["split", "model", "qid", "metric", "value"])
    t = means_table(pq, models=rows)
    marked = t[~t.model.isin(["M1", "M2"])]
    raw = marked[["p_vs_M1", "p_vs_M2"]].to_numpy().ravel()
    holm = marked[["p_vs_M1_holm", "p_vs_M2_holm"]].to_numpy().ravel()
    assert len(raw) == 2 * 2 * 2 * (len(rows) - 2)
    np.testing.assert_allclose(holm, multipletests(raw, method="holm")[1])
    assert t[t.model.isin(["M1", "M2"])][["p_vs_M1_holm", "p_vs_M2_holm"]].isna().all().all()


def test_merge_metrics_keys():
    pq = _per_query()
    choices = pd.DataFrame({"split": ["Split1", "Split1"], "client": ["client1", "client2"],
                            "model": ["M12α", "M21α"], "alpha": [0.3, 0.7]})
    m = analysis.merge_metrics(pq, choices=choices)
    assert set(m) == {"split1.m1.ndcg10", "split1.m2.ndcg10", "split1.m12a.ndcg10",
                      "split1.client1.alpha", "split1.client2.alpha"}
    assert m["split1.m2.ndcg10"] == pytest.approx(pq[pq.model == "M2"].value.mean())
    assert m["split1.client2.alpha"] == 0.7


def test_an_experiment_runs_over_the_splits_in_one_call_and_its_meta_models_are_named_by_split():
    from types import SimpleNamespace

    from ltrlib.merge import meta_models, per_split

    seen = []

    def experiment(split, models, *, step):
        seen.append((split, models, step))
        return SimpleNamespace(meta={"M12S": f"meta of {split}"})

    out = per_split(experiment, {"Split1": "s1", "Split2": "s2"}, {"Split1": "m1", "Split2": "m2"},
                    ["Split2", "Split1"], step=0.1)
    assert list(out) == ["Split2", "Split1"] and seen == [("s2", "m2", 0.1), ("s1", "m1", 0.1)]
    assert meta_models(out) == {"Split2 M12S": "meta of s2", "Split1 M12S": "meta of s1"}


def test_run_files_name_each_splits_models_and_leave_out_the_oracle():
    from types import SimpleNamespace

    from ltrlib.merge import collect, merged_run_files

    test = {"Split1": "DS of Split1", "Split2": "DS of Split2"}
    nsplits = {n: SimpleNamespace(full=SimpleNamespace(test=t)) for n, t in test.items()}
    linear = {n: SimpleNamespace(test_scores={"M1": 1, "M12α": 2, "M21α": 3}, per_query=pd.DataFrame({"n": [n]}))
              for n in test}
    selected = {n: SimpleNamespace(test_scores={"M12sel": 4, "oracle": 5}, per_query=pd.DataFrame({"n": [n + "s"]}))
                for n in test}
    records = merged_run_files(nsplits, linear, ["Split2", "Split1"], models=("M12α", "M21α"))
    assert [(r.name, r.data, r.scores, r.qrels) for r in records] == [
        ("Split2.M12α", "DS of Split2", 2, "qrels"), ("Split2.M21α", "DS of Split2", 3, "qrels"),
        ("Split1.M12α", "DS of Split1", 2, "qrels"), ("Split1.M21α", "DS of Split1", 3, "qrels")]
    # Several groups of experiments, in order; the oracle reads the test labels and is never written.
    names = [r.name for r in merged_run_files(nsplits, [linear, selected], ["Split1"])]
    assert names == ["Split1.M1", "Split1.M12α", "Split1.M21α", "Split1.M12sel"]
    assert collect([linear, selected], "per_query").n.tolist() == ["Split1", "Split2", "Split1s", "Split2s"]
