"""Long-run FPDGD of the authors' code (issue 13): the reference side of bench_foltr_drift.py.

Runs the code of Wang & Zuccon's non-IID FOLTR paper (GitHub ielab/2022-SIGIR-noniid-foltr,
checked at commit 977bcdc), *unmodified and imported, never copied*, on the setting
bench_foltr_drift.py runs ltrlib on: LightGBM's example data, per-query min-max
normalisation, 5 IID clients (the IID block of its runs/run_fpdgd_non_iid_*.py: FedAvg,
mu 0, an update after every interaction, no DP noise), B = 5, learning rate 0.1, its 5-level
"Perfect" click model, 6,087 rounds; the neural ranker has one hidden layer of 64 units, as
its run script. Prints the same windows as bench_foltr_drift.py, per seed and as the mean.

What this script adds around the reference, and why:

* the LightGBM files keep their groups in ``.query`` files, and the reference's loader needs
  a ``qid:`` column, so LETOR copies with ``qid:1..N`` in file order are written to a
  temporary folder (every other byte unchanged);
* the reference never seeds numpy's global generator (its rankers' initialisation and
  sampling use it), so ``np.random.seed(seed)`` is called first, for reproducible runs;
* its loop evaluates the model before each round, never after the last one, so entry ``j`` of
  its per-round NDCG is the model after ``j`` rounds, and the model after the last round is
  scored with its own ``average_ndcg_at_k``.

It needs a Python environment of its own: the reference calls ``np.save`` on a tuple, which
numpy 1.24 and later refuse (at round 499), and imports scikit-learn. For example:

    python3 -m venv /tmp/ref-venv && /tmp/ref-venv/bin/pip install 'numpy<1.24' 'scipy<1.11' \\
        'scikit-learn<1.3' tqdm
    git clone https://github.com/ielab/2022-SIGIR-noniid-foltr /tmp/ref   # or the fetched mirror
    /tmp/ref-venv/bin/python bench/reference_foltr.py --reference /tmp/ref [--rankers linear,neural]

About 3-4 minutes per linear run and 4-6 per neural run on this machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

WINDOWS = {"rounds 1000-2000": (1000, 2000), "rounds 4000-end": (4000, None)}  # as bench_foltr_drift.py
N_FEATURES = 300  # LightGBM's example data


def write_letor_copies(src: Path, dst: Path) -> dict[str, Path]:
    """``rank.train``/``rank.test`` with their ``.query`` groups as LETOR files with qid."""
    out = {}
    for part in ("train", "test"):
        sizes = [int(line) for line in (src / f"rank.{part}.query").read_text().split() if line]
        lines = (src / f"rank.{part}").read_text().splitlines()
        if sum(sizes) != len(lines):
            raise ValueError(f"{src}/rank.{part}: {len(lines)} lines, but its .query file sums to {sum(sizes)}")
        rows, i = [], 0
        for qid, n in enumerate(sizes, start=1):
            for line in lines[i:i + n]:
                label, rest = line.split(" ", 1)
                rows.append(f"{label} qid:{qid} {rest}")
            i += n
        out[part] = dst / f"{part}.txt"
        out[part].write_text("\n".join(rows) + "\n")
    return out


def windows(rounds: np.ndarray, values: np.ndarray, last_round: int) -> dict[str, float]:
    out = {name: float(values[(rounds >= lo) & (rounds <= (last_round if hi is None else hi))].mean())
           for name, (lo, hi) in WINDOWS.items()}
    out["final"] = float(values[rounds == rounds.max()][0])
    return out


def run_reference(files: dict[str, Path], ranker: str, seed: int, n_rounds: int, scratch: Path) -> dict[str, float]:
    from client.federated_optimize import average_ndcg_at_k, train_uniform
    from clicks.click_simulate import CcmClickModel
    from data.LetorDataset import LetorDataset
    from ranker.PDGDLinearRanker import PDGDLinearRanker
    from ranker.PDGDNeuralRanker import PDGDNeuralRanker

    train = LetorDataset(str(files["train"]), N_FEATURES, query_level_norm=True, cache_root=None)
    test = LetorDataset(str(files["test"]), N_FEATURES, query_level_norm=True, cache_root=None)
    perfect = CcmClickModel(click_relevance={0: 0.0, 1: 0.2, 2: 0.4, 3: 0.8, 4: 1.0},
                            stop_relevance={0: 0.0, 1: 0.0, 2: 0.0, 3: 0.0, 4: 0.0}, name="Perfect", depth=10)
    np.random.seed(seed)
    model = (PDGDLinearRanker(N_FEATURES, 0.1) if ranker == "linear"
             else PDGDNeuralRanker(N_FEATURES, 0.1, hidden_layers=[64]))
    params = dict(n_clients=5, interactions_budget=n_rounds, seed=seed, interactions_per_feedback=5,
                  multi_update=True, n_features=N_FEATURES, dataset_path=None, intent_path=None,
                  is_personal_layer=False, is_mixed=False, fed_alg="fedavg", mu=0, click_model=perfect,
                  sensitivity=0, epsilon=0, ranker_generator=model, enable_noise=False)
    result = train_uniform(params=params, traindata=train, testdata=test, message=f"{ranker} seed {seed}",
                           num_update=n_rounds, is_iid=True, non_iid_type="label_dist_skew",
                           save_path=str(scratch / f"{ranker}_{seed}.npy"))
    per_round = np.asarray(result.ndcg_server)  # entry j: the model after j rounds
    final = average_ndcg_at_k(test, result.ranker.get_all_query_result_list(test), 10)
    rounds = np.array(sorted(set(range(0, n_rounds, 100)) | {n_rounds}))
    values = np.array([final if r == n_rounds else per_round[r] for r in rounds])
    return windows(rounds, values, n_rounds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference", required=True, type=Path, help="a checkout of ielab/2022-SIGIR-noniid-foltr")
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "lightgbm-rank",
                    help="LightGBM's example ranking data (default: ../shared/data/lightgbm-rank)")
    ap.add_argument("--rounds", type=int, default=6087)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--rankers", default="linear,neural")
    args = ap.parse_args()
    if not (args.reference / "client" / "federated_optimize.py").exists():
        sys.exit(f"{args.reference} is not a checkout of ielab/2022-SIGIR-noniid-foltr (no client/federated_optimize.py)")
    sys.path.insert(0, str(args.reference))
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        files = write_letor_copies(args.data, Path(tmp))
        print(f"reference {args.reference}: 5 IID clients, B=5, lr 0.1, perfect clicks, T={args.rounds}, seeds {seeds}")
        for ranker in [r.strip() for r in args.rankers.split(",") if r.strip()]:
            per_seed = []
            for seed in seeds:
                start = time.perf_counter()
                w = run_reference(files, ranker, seed, args.rounds, Path(tmp))
                per_seed.append(w)
                print(f"  {ranker} seed {seed}: " + ", ".join(f"{k} {v:.4f}" for k, v in w.items())
                      + f"  ({time.perf_counter() - start:.0f} s)", flush=True)
            mean = {k: float(np.mean([w[k] for w in per_seed])) for k in per_seed[0]}
            print(f"  {ranker} mean of {len(seeds)}: " + ", ".join(f"{k} {v:.4f}" for k, v in mean.items()))


if __name__ == "__main__":
    main()
