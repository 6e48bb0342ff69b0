"""Builders of the tables the fidelity ledger reads, as notebooks 06, 07 and 08 write them:
the `tables` fixture hands them to the tests of every paper and of the ledger."""

import itertools
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ltrlib.foltr.federated import discount_sum

COLUMNS = ["model", "ndcg@1", "ndcg@5"]


def _table(path, rows):
    pd.DataFrame(rows, columns=COLUMNS).to_csv(path, index=False)


#: Notebook 06_neural_competitors' NDCG@5 with which every neural claim holds.
NETWORKS = {"DNN": 0.670, "GSF(2)": 0.672, "GSF(20)": 0.673, "ATTN-DIN": 0.678, "SetRank": 0.679,
            "DNN_Softmax": 0.671, "GSF(2)_Softmax": 0.674, "GSF(20)_Softmax": 0.675,
            "ATTN-DIN_Softmax": 0.681, "SetRank_Softmax": 0.682}


def bilambdamart_run(tmp_path, *, bi="0.7100ᵃᵇᶜ", trials=10, control_bi="0.6610ᵃ", networks=NETWORKS,
                     network_trials=1):
    base = tmp_path / "tables" / "06_bilambdamart"
    base.mkdir(parents=True)
    _table(base / "table2_lambdarank.csv", [
        ["a. λMART (stage 1)", "0.6", "0.6800"], ["b. λMART", "0.6", "0.6950ᵃ"],
        ["c. λMART*", "0.6", "0.6960ᵃ"], ["d. Bi-λMART", "0.6", bi]])
    _table(base / "table4_difference.csv", [["a. Bi-λMART w/o d", "0.6", "0.6990"],
                                            ["b. Bi-λMART", "0.6", bi]])
    _table(base / "table5_softmax.csv", [["a. GBT_Softmax", "0.6", "0.6900"],
                                         ["b. Bi-GBT_Softmax", "0.6", "0.7000ᵃ"]])
    if control_bi is not None:
        _table(base / "control_table2.csv", [["a. λMART (stage 1)", "0.6", "0.6500"],
                                             ["b. λMART*", "0.6", "0.6600ᵃ"],
                                             ["c. Bi-λMART", "0.6", control_bi]])
    metrics = {"06_bilambdamart": {"n_trials": trials}}
    if networks:
        neural = tmp_path / "tables" / "06_neural_competitors"
        neural.mkdir(parents=True)
        lam = [m for m in networks if not m.endswith("_Softmax")]
        _table(neural / "table3_neural_lambdarank.csv",
               [[m, "0.6", f"{networks[m]:.4f}"] for m in lam]
               + [["λMART", "0.6", "0.6950†"], ["λMART*", "0.6", "0.6960†"], ["Bi-λMART", "0.6", "0.7100†*"]])
        _table(neural / "table5_neural_softmax.csv",
               [[m, "0.6", f"{networks[m]:.4f}"] for m in networks if m.endswith("_Softmax")]
               + [["GBT_Softmax", "0.6", "0.6900†"], ["Bi-GBT_Softmax", "0.6", "0.7000†*"]])
        _table(neural / "table4_gsf.csv", [["a. GSF(2)", "0.6", "0.6720"], ["b. GSF(2) with d", "0.6", "0.6730"],
                                           ["c. Bi-λMART w/o d", "0.6", "0.6990ᵃᵇ"], ["d. Bi-λMART", "0.6", bi]])
        metrics["06_neural_competitors"] = {"neural_trials": network_trials, "max_steps": 1000}
    (tmp_path / "metrics.json").write_text(json.dumps(metrics))
    return tmp_path


CLICKS = ("perfect", "navigational", "informational")
T = 300


def _foltr_run(setting, data, ranker, click, seed, offline, online, remedy="none"):
    return {"setting": setting, "data": data, "ranker": ranker, "click": click, "remedy": remedy, "seed": seed,
            "n_rounds": T, "B": 5, "cumulative_online": online * discount_sum(T), "mean_online": online,
            "final_offline": offline, "interactions": 100, "n_clients": 5, "seconds": 1.0}


def foltr_runs(rng, *, type1_gap=0.2, sharing_gain=0.1):
    """Runs with the paper's pattern: Type 1 and #R = 1 hurt, #R = 2 barely, Types 3 and 4
    not at all; sharing helps, FedProx and FedPer do not."""
    rows = []
    for ranker, click, seed in itertools.product(("linear", "neural"), CLICKS, range(3)):
        noise = lambda: rng.normal(0, 0.005)  # noqa: E731
        rows += [_foltr_run("type1", "IID", ranker, click, seed, 0.6 + noise(), 0.5 + noise()),
                 _foltr_run("type1", "non-IID", ranker, click, seed, 0.6 - type1_gap + noise(),
                            0.5 - type1_gap + noise())]
        for setting, gap in (("type2_R1_10clients", 0.2), ("type2_R2", 0.01), ("type4", 0.0)):
            rows += [_foltr_run(setting, "IID", ranker, click, seed, 0.6 + noise(), 0.5 + noise()),
                     _foltr_run(setting, "non-IID", ranker, click, seed, 0.6 - gap + noise(), 0.5 - gap + noise())]
        rows += [_foltr_run("type2_R1", "IID", ranker, click, seed, 0.6 + noise(), 0.5),
                 _foltr_run("type2_R1", "non-IID", ranker, click, seed, 0.3 + noise(), 0.8),
                 _foltr_run("type2_R1", "non-IID", ranker, click, seed, 0.3 + sharing_gain + noise(), 0.8, "sharing"),
                 _foltr_run("type2_R1", "non-IID", ranker, click, seed, 0.3 + noise(), 0.8, "fedprox(mu=0.1)")]
        if click == "perfect":
            for c in ("sdbn", "pbm"):
                rows += [_foltr_run(f"type3_{c}", d, ranker, c, seed, 0.6 + noise(), 0.5 + noise())
                         for d in ("IID", "non-IID")]
    return pd.DataFrame(rows)


def write_foltr_runs(tmp_path, runs):
    base = tmp_path / "tables" / "07_foltr_noniid"
    base.mkdir(parents=True, exist_ok=True)
    runs.to_csv(base / "runs_online.csv", index=False)
    return tmp_path


def pair_summary(top_gain_small=-0.02, top_gain_large=0.03, p=0.01):
    rows = []
    for n, top_gain in ((150, top_gain_small), (3000, top_gain_large)):
        for metric in ("ndcg@1", "ndcg@3", "ndcg@10"):
            rows.append({"train_queries": n, "metric": metric, "setting": "mean, 1 pair", "mean": 0.5,
                         "diff_vs_reference": 0.0, "p_value": np.nan, "effective_pairs_per_query": 50.0})
            rows.append({"train_queries": n, "metric": metric, "setting": "topk, k=10", "mean": 0.5,
                         "diff_vs_reference": top_gain, "p_value": p, "effective_pairs_per_query": 200.0})
    return pd.DataFrame(rows)



@pytest.fixture
def tables():
    """The builders: ``bilambdamart_run(dir, ...)``, ``foltr_runs(rng, ...)`` and
    ``write_foltr_runs(dir, runs)``, ``pair_summary(...)``."""
    return SimpleNamespace(bilambdamart_run=bilambdamart_run, foltr_runs=foltr_runs,
                           write_foltr_runs=write_foltr_runs, pair_summary=pair_summary, CLICKS=CLICKS, NETWORKS=NETWORKS)
