"""Figure fixes of issue 15: counted axes have integer ticks, legends stay off the data,
and Figure 3 says what its red bars are."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ltrlib import plots


def _integer_ticks(axis) -> bool:
    lo, hi = axis.get_view_interval()
    ticks = [t for t in axis.get_ticklocs() if lo <= t <= hi]
    return len(ticks) >= 2 and all(float(t).is_integer() for t in ticks)


def test_tuning_history_counts_trials_in_whole_numbers():
    df = pd.DataFrame({"split": "Split1", "model": "M1", "trial": [0, 1, 2],
                       "value": [0.70, 0.72, 0.71], "best_so_far": [0.70, 0.72, 0.72]})
    fig = plots.tuning_history(df)
    assert _integer_ticks(fig.axes[0].xaxis)
    plt.close(fig)


def test_merge_pools_count_queries_in_whole_numbers():
    df = pd.DataFrame({"split": "Split1", "key": [0, 0, 1, 2, 2],
                       "client": ["client1", "client2", "client1", "unused", "client2"]})
    fig = plots.merge_pool_frame(df)
    assert _integer_ticks(fig.axes[0].yaxis)
    plt.close(fig)


def test_category_delta_legend_sits_beside_the_bars():
    rows = [{"split": "Split3", "category": c, "model": m, "baseline": "M2", "mean_delta": d, "n_queries": 9}
            for c in range(6) for m, d in (("M12α", 0.05), ("M21α", -0.04))]
    fig = plots.merge_category_deltas(pd.DataFrame(rows), baseline="M2")
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1  # right of the axes, over no bar
    plt.close(fig)


def test_figure3_explains_its_red_bars():
    rows = [{"model": "Split1 M12S", "kind": k, "feature": f, "value": v, "share": v / 6, "rank": r,
             "is_score": f.startswith("s")}
            for k in ("gain", "split") for r, (f, v) in enumerate((("s1", 3.0), ("f7", 2.0), ("s2", 1.0)), 1)]
    fig = plots.stacking_importance(pd.DataFrame(rows))
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert labels == ["local model score (s₁, s₂)", "document feature"]
    assert all(t.get_fontsize() >= 9 for t in fig.axes[0].get_yticklabels())
    plt.close(fig)


def test_package_reexports_every_plot_function():
    """Notebooks call ``plots.<figure>``: every function that returns a Figure, in any plot
    module, must be reachable from the package itself."""
    import importlib
    import inspect

    for module in ("data", "noniid", "train", "merge", "foltr", "clicklog", "neural", "fidelity"):
        mod = importlib.import_module(f"ltrlib.plots.{module}")
        for name, fn in inspect.getmembers(mod, inspect.isfunction):
            if fn.__module__ == mod.__name__ and fn.__annotations__.get("return") == "plt.Figure":
                assert name in plots.__all__ and getattr(plots, name) is fn, f"plots.{module}.{name}"
    assert all(callable(getattr(plots, name)) for name in plots.__all__)


def test_ranker_means_draws_networks_and_trees_per_loss():
    import numpy as np
    import pytest

    from ltrlib.neural import ranker_means

    rng = np.random.default_rng(0)
    pq = pd.concat([pd.DataFrame({"model": m, "metric": "ndcg@5", "qid": range(30), "value": v + rng.normal(0, .1, 30)})
                    for m, v in (("DNN", .60), ("SetRank_Softmax", .62), ("λMART*", .66), ("GBT_Softmax", .65),
                                 ("λMART (stage 1)", .5))])
    means = ranker_means(pq)
    assert list(means.model) == ["DNN", "SetRank_Softmax", "λMART*", "GBT_Softmax"]  # the stage-1 row left out
    # Gaps to the best network of the same loss: DNN for λRank, SetRank_Softmax for softmax.
    assert dict(zip(means.model, means.best_network)) == {"DNN": "DNN", "λMART*": "DNN",
                                                          "SetRank_Softmax": "SetRank_Softmax",
                                                          "GBT_Softmax": "SetRank_Softmax"}
    gap = means.set_index("model").loc["λMART*"]
    assert gap.gap_low < gap.gap < gap.gap_high and gap.gap == pytest.approx(
        pq[pq.model == "λMART*"].value.mean() - pq[pq.model == "DNN"].value.mean())
    assert dict(zip(means.model, means.kind)) == {"DNN": "network", "SetRank_Softmax": "network",
                                                  "λMART*": "tree", "GBT_Softmax": "tree"}
    fig = plots.ranker_means(means)
    assert [ax.get_title() for ax in fig.axes] == ["λRank loss", "softmax loss"]
    plt.close(fig)


def test_networks_across_seeds_draws_a_dot_a_seed_hollow_where_not_converged():
    df = pd.DataFrame([(seed, m, loss, kind, gap, conv) for seed in (1, 2) for m, loss, kind, gap, conv in (
        ("DNN", "lambdarank", "network", 0.0, True), ("SetRank", "lambdarank", "network", -0.01, seed == 1),
        ("λMART*", "lambdarank", "tree", 0.002, None), ("DNN_Softmax", "softmax", "network", 0.0, True),
        ("GBT_Softmax", "softmax", "tree", -0.003, None))], columns=["seed", "model", "loss", "kind", "gap", "converged"])
    fig = plots.networks_across_seeds(df)
    left, right = fig.axes
    assert [left.get_title(), right.get_title()] == ["λRank loss", "softmax loss"]
    assert [t.get_text() for t in left.get_yticklabels()] == ["SetRank", "DNN", "λMART*"]  # the best at the top
    hollow = [c for c in left.collections if len(c.get_facecolors()) == 0]
    assert len(hollow) == 1 and len(hollow[0].get_offsets()) == 1  # SetRank at seed 2 only
    assert sum(len(c.get_offsets()) for c in left.collections) == 6  # a dot a model and seed
    assert "2 seeds" in fig._suptitle.get_text()
    plt.close(fig)


def test_ledger_pictures_draw_the_verdicts_and_the_effect_ratios():
    verdicts = pd.DataFrame([("Paper A", v, n) for v, n in (("holds", 3), ("does not hold", 1), ("not decided", 0),
                                                           ("not available", 2), ("outside the tally", 4))],
                            columns=["paper", "verdict", "checks"])
    fig = plots.verdict_counts(verdicts)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["Paper A"]
    assert [p.get_width() for p in fig.axes[0].patches] == [3, 1, 0, 2, 4]  # one bar, a segment per verdict
    plt.close(fig)
    effects = pd.DataFrame({"claim": "c", "scope": ["s1", "s2", "s3"], "comparison": "A vs B", "dataset": "",
                            "ours_improvement": [0.01, 0.05, 0.02], "paper_improvement": [0.01, 0.01, np.nan],
                            "effect_ratio": [1.0, 5.0, np.nan]})
    fig = plots.effect_ratios(effects, "Paper A")
    er, side = fig.axes
    assert [t.get_text() for t in er.get_yticklabels()] == ["c · s1 · A vs B", "c · s2 · A vs B"]
    assert "1 without a ratio not drawn" in fig._suptitle.get_text()
    assert any(t.get_text() == "5.0" for t in er.texts)  # past the axis: drawn at its edge with its value
    plt.close(fig)
    # Across seeds: the interval of each ratio is drawn.
    across = effects.drop(columns="effect_ratio").assign(effect_ratio_mean=[1.0, 0.5, 0.8],
                                                          effect_ratio_low=[0.5, 0.1, np.nan],
                                                          effect_ratio_high=[1.5, 0.9, np.nan])
    fig = plots.effect_ratios(across)
    assert len(fig.axes[0].collections) == 1 and len(fig.axes[0].get_yticklabels()) == 3
    plt.close(fig)


def test_a_name_shared_with_an_analysis_package_is_a_declared_pair():
    """Issue 65: a plot that takes its analysis function's name draws that function's frame;
    `ltrlib.plots`' docstring declares each such pair, and no other name is shared."""
    import importlib
    import re

    analyses = ("data", "metrics", "train", "noniid", "clients", "merge", "bilambdamart", "neural", "foltr",
                "clicklog", "xgboost_tutorial", "fidelity")
    shared = {}
    for name in analyses:
        package = importlib.import_module(f"ltrlib.{name}")
        common = sorted(set(plots.__all__) & set(package.__all__))
        if common:
            shared[name] = common
    declared = {m.group(1): sorted(re.findall(r"``(\w+)``", m.group(2)))
                for m in re.finditer(r"- ``ltrlib\.(\w+)``: (.*?);?\n(?=- |\n|$)", plots.__doc__, flags=re.S)}
    assert shared == declared
