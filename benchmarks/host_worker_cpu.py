"""What a bench host's Dask worker spends beside its bench: the worker process's own CPU while
its job waits on a command (`sleep`, the bench's stand-in), with Dask's statistical profiler on
(Dask's default, a sample every 10 ms) and quiet (`QUIET_WORKER`, the profiler off: what
`--cluster local:N` and the bench-hosts guide's worker line set), alternating, one fresh worker
process a run. Quiet and with a core busy; the rows written as data (results.py).

    python benchmarks/host_worker_cpu.py [--runs 3] [--wait 10]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess

import dask
from distributed import Client, LocalCluster
from machine_load import a_core_busy
from results import record

from autoresearch.cluster.host import QUIET_WORKER


def _job(wait_s: float) -> float:
    """Run on the worker: wait on a command for `wait_s`; the worker process's CPU time."""
    subprocess.run(["sleep", str(wait_s)], check=True)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


WAYS = {"profiler on": {"distributed.worker.profile.enabled": True}, "quiet": QUIET_WORKER}


def worker_cpu(wait_s: float, config: dict) -> float:
    """The CPU seconds one fresh worker, started with `config`, spends while its job waits
    `wait_s`."""
    with (
        dask.config.set(config),
        LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        before = client.submit(_job, 0, pure=False).result()
        return client.submit(_job, wait_s, pure=False).result() - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh workers per way and condition")
    parser.add_argument("--wait", type=float, default=10.0, help="seconds a job waits")
    args = parser.parse_args()
    rows = []
    for busy in (False, True):
        with a_core_busy(busy):
            condition = "a core busy" if busy else "quiet"
            cpu: dict[str, list[float]] = {way: [] for way in WAYS}
            for _ in range(args.runs):
                for way, config in WAYS.items():
                    cpu[way].append(worker_cpu(args.wait, config))
            row = {"condition": condition}
            for way, values in cpu.items():
                shown = ", ".join(f"{v:.3f}" for v in values)
                print(f"{condition}, {way}: worker CPU s over a {args.wait:g} s wait: {shown}")
                row[f"{way} (CPU s, median)"] = round(statistics.median(values), 3)
            rows.append(row)
    record("host_worker_cpu", rows, notes=f"a job waiting {args.wait:g} s, {args.runs} runs a way")


if __name__ == "__main__":
    main()
