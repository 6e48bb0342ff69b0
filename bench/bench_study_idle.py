"""What a study's own process costs while its seed runs: the share of a core that the study's
Dask scheduler, worker and client take as they wait for a seed's batch, with Dask's default
housekeeping against the study's (`ltrlib.studies.cluster.QUIET_DASK`).

Run: ``.venv/bin/python bench/bench_study_idle.py [--seconds 30] [--rounds 3]``

Each round starts, for each setting in turn, a fresh process that builds the study's
cluster as `dispatch` does on a 2-core machine (`local_cluster(1, 2)`: one worker thread in
the study's process), with Dask's defaults when ``QUIET_DASK`` is emptied, and submits one
task that waits ``--seconds`` while it asks the study's stop event twice a second, as a
seed's `_batch` does, with the main thread in `as_completed`, as `dispatch` waits. Printed:
the process's CPU seconds over the wait's wall seconds (percent of one core) per round,
each setting's median, and their ratio. The batch itself runs in a process of its own and
is not counted. Timings are for comparison in one run; on a loaded machine the shares are
smaller than on a quiet one, their ratio less so.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

_CHILD = r"""
import json, os, sys, time
from dask.distributed import Client, Event, as_completed
from ltrlib.studies import cluster as study_cluster

seconds, quiet = float(sys.argv[1]), sys.argv[2] == "quiet"
if not quiet:
    study_cluster.QUIET_DASK = {}

def wait(s, name):
    stop = Event(name)
    end = time.monotonic() + s
    while time.monotonic() < end:
        time.sleep(0.5)
        stop.is_set()
    return s

cluster = study_cluster.local_cluster(1, 2)
client = Client(cluster)
Event("bench-stop", client=client)
client.submit(wait, 1, "bench-stop", pure=False).result()  # started and warm
t0, w0 = os.times(), time.monotonic()
for future in as_completed([client.submit(wait, seconds, "bench-stop", pure=False)]):
    future.result()
t1, w1 = os.times(), time.monotonic()
print(json.dumps((t1.user + t1.system - t0.user - t0.system) / (w1 - w0) * 100))
client.close()
cluster.close()
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    shares: dict[str, list[float]] = {"defaults": [], "quiet": []}
    for r in range(args.rounds):
        for setting in shares:
            out = subprocess.run([sys.executable, "-c", _CHILD, str(args.seconds), setting], check=True,
                                 capture_output=True, text=True).stdout
            shares[setting].append(json.loads(out.strip().splitlines()[-1]))
            print(f"round {r + 1}: {setting:8s} {shares[setting][-1]:5.1f} % of a core", flush=True)
    medians = {k: statistics.median(v) for k, v in shares.items()}
    print(f"median: Dask's defaults {medians['defaults']:.1f} %, QUIET_DASK {medians['quiet']:.1f} % of a core "
          f"({medians['defaults'] / medians['quiet']:.1f}x less)")


if __name__ == "__main__":
    main()
