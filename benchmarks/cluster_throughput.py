"""Experiments per hour against the number of bench hosts, on a real Dask LocalCluster.

Each worker process stands for one bench host (one unit of the `bench` resource, its own clone
directory). The bench is a shell script on the synthetic target (tests/synthetic.py) sleeping a
fixed time per run instead of burning CPU, so that eight "hosts" fit on a small machine and the
figure measures the cluster's scheduling, not the machine's cores. Every experiment is a null
patch decided at a fixed 3 pairs (6 runs); each host calibrates the best once (4 runs). The
ideal line is the one-host rate times the hosts; the overhead per experiment is the one-host
cluster's time per experiment against the same experiments run by the local loop, side by
side in one run.

    python benchmarks/cluster_throughput.py [--workers 1,2,4,8] [--per-worker 6] [--sleep 0.5]

`--processes` measures the layout a user runs instead: a `dask scheduler` and `dask worker`
processes started as the guide says (fault_hosts.Hosts), and a session that finds wins (per
host: 8 hypotheses, 3 of them independent 10% wins), so that every keep moves the best under
the hosts: what each host must do for a new best (fetch, build, calibrate) and the wins
measured again against a moved best are in the figure.

    python benchmarks/cluster_throughput.py --processes [--workers 1,3] [--sleep 0.5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from distributed import LocalCluster  # noqa: E402
from machine_load import a_core_busy  # noqa: E402
from results import record  # noqa: E402
from synthetic import git, make_target  # noqa: E402

from autoresearch.cluster import bench_hosts  # noqa: E402
from autoresearch.journal.store import read_journal  # noqa: E402
from autoresearch.loop.driver import run_session  # noqa: E402
from autoresearch.loop.session import RunOptions  # noqa: E402
from autoresearch.progress import Progress  # noqa: E402

# The bench: a shell script that sleeps, then prints the synthetic target's value times the
# factors of its speedup files. A Python bench's own start-up (20-30 ms of CPU a run) would
# make eight hosts on two cores measure the cores, not the cluster.
SLEEPY_BENCH = """#!/bin/sh
sleep "${BENCH_SLEEP_S:-0}"
cat src/value.txt src/speedup-*.txt 2>/dev/null | awk '{v = NR == 1 ? $1 : v * $1}
  END {printf "METRIC time_ms=%f\\nMETRIC sentinel_ms=50\\n", v}'
"""


def sleepy_target(root: Path, calibration_runs: int):
    """The synthetic target benched by SLEEPY_BENCH, decided at a fixed 3 pairs."""
    target = make_target(root)
    target.configure(min_runs=3, max_runs=3, looks=1, calibration_runs=calibration_runs)
    bench = root / "sleepy.sh"
    bench.write_text(SLEEPY_BENCH)
    bench.chmod(0o755)
    config = target.config_path.read_text().replace(
        'command = "./bench.py"', 'command = "./sleepy.sh"'
    )
    target.config_path.write_text(config)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "config")
    return target


def target_with(root: Path, experiments: int):
    target = sleepy_target(root, calibration_runs=4)
    for i in range(experiments):
        target.add_hypothesis(f"{i:03d}-null", {f"src/null-{i}.txt": f"{i}\n"}, title=f"null {i}")
    return target


def target_with_wins(root: Path, hosts: int):
    """Per host: 8 hypotheses, 3 of them 10% wins, each in a file of its own; the rule decides
    at a fixed 3 pairs; the default 10 calibration runs per best."""
    target = sleepy_target(root, calibration_runs=10)
    for i in range(8 * hosts):
        factor = "0.9" if i % 8 in (1, 4, 6) else "1.0"
        target.add_hypothesis(f"{i:03d}-h", {f"src/speedup-{i}.txt": f"{factor}\n"}, title=f"h {i}")
    return target


def processes(counts: list[int], sleep: float, load: str) -> list[dict]:
    """Experiments per hour with real scheduler and worker processes, the best moving."""
    from fault_hosts import Hosts

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for workers in counts:
            print(f"{workers} worker process(es)...", file=sys.stderr, flush=True)
            target = target_with_wins(Path(tmp) / f"w{workers}", workers)
            with Hosts(Path(tmp) / f"dask-{workers}", workers=workers) as hosts:
                command = ["run", "--quiet", "--cluster", hosts.address, "--no-confirm"]
                command.append(f"--env=BENCH_SLEEP_S={sleep}")  # to the hosts' benches
                started = time.monotonic()
                done = subprocess.run(
                    [sys.executable, "-m", "autoresearch.cli", *command],
                    cwd=target.root,
                    capture_output=True,
                    text=True,
                )
                took = time.monotonic() - started
            if done.returncode != 0:
                raise SystemExit(f"{workers} workers: exit {done.returncode}: {done.stderr[-800:]}")
            records = read_journal(target.journal).experiments
            kept = sum(r.status == "keep" for r in records)
            again = sum(len(r.cluster.stale) for r in records if r.cluster is not None)
            calibrated = len(read_journal(target.journal).calibrations)
            rows.append((workers, len(records), kept, again, calibrated, took))
    one = rows[0][1] / rows[0][5] * 3600 if rows[0][0] == 1 else None
    print(
        f"{load}: real `dask scheduler` and `dask worker` processes; per host 8 hypotheses, "
        f"3 of them 10% wins; decided at 3 pairs of {sleep:g} s runs; each best calibrated "
        "(10 runs):\n"
    )
    print(
        "| hosts | experiments | kept | measured again | calibrations | wall s "
        "| experiments/hour | ideal | of ideal |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    data = []
    for workers, experiments, kept, again, calibrated, took in rows:
        rate, ideal, share = against_ideal(experiments, took, one, workers)
        print(
            f"| {workers} | {experiments} | {kept} | {again} | {calibrated} | {took:.1f} | "
            f"{rate} | {ideal} | {share} |"
        )
        data.append(
            {
                "condition": load,
                "hosts": workers,
                "experiments": experiments,
                "kept": kept,
                "measured again": again,
                "calibrations": calibrated,
                "wall s": f"{took:.1f}",
                "experiments/hour": rate,
                "of ideal": share,
            }
        )
    return data


def against_ideal(
    experiments: int, took: float, one: float | None, workers: int
) -> tuple[str, str, str]:
    """Experiments per hour, the ideal line (one host's rate times the hosts) and the share of
    it, as table cells."""
    rate = experiments / took * 3600
    ideal = one * workers if one else None
    return (
        f"{rate:.0f}",
        f"{ideal:.0f}" if ideal else "",
        f"{100 * rate / ideal:.0f}%" if ideal else "",
    )


def on_hosts(config, scheduler: str, options, progress):
    """`run --cluster SCHEDULER`: the night with the bench hosts there as its executor."""
    with bench_hosts(config, scheduler, progress) as hosts:
        return run_session(config, options, progress, executor=hosts)


def timed(run, target, sleep: float) -> float:
    options = RunOptions(env={"BENCH_SLEEP_S": str(sleep)}, confirm=False, accept_noise=True)
    started = time.monotonic()
    run(target.load(), options)
    took = time.monotonic() - started
    records = read_journal(target.journal).experiments
    if any(r.status not in ("discard", "inconclusive") for r in records):
        raise SystemExit(f"unexpected statuses: {sorted({r.status for r in records})}")
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4,8")
    parser.add_argument("--per-worker", type=int, default=6, help="experiments per host")
    parser.add_argument("--sleep", type=float, default=0.5, help="seconds per bench run")
    parser.add_argument(
        "--processes",
        action="store_true",
        help="real scheduler and worker processes, and a session whose best moves",
    )
    args = parser.parse_args()
    name = "cluster_throughput_processes" if args.processes else "cluster_throughput"
    if args.processes and args.workers == "1,2,4,8":
        args.workers = "1,3"
    counts = [int(w) for w in args.workers.split(",")]
    rows = []
    for load in ("quiet", "a core busy"):
        with a_core_busy(load != "quiet"):
            print(f"{load}:", file=sys.stderr, flush=True)
            if args.processes:
                rows += processes(counts, args.sleep, load)
            else:
                rows += local_cluster(counts, args.per_worker, args.sleep, load)
    print(f"machine: {os.cpu_count()} CPUs")
    record(name, rows, notes=f"bench runs of {args.sleep:g} s")
    return 0


def local_cluster(counts: list[int], n: int, sleep: float, load: str) -> list[dict]:
    """Experiments per hour on a LocalCluster of each size, null patches, `n` per host."""
    quiet = Progress(quiet=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        local = timed(
            lambda config, options: run_session(config, options, quiet),
            target_with(Path(tmp) / "local", n),
            sleep,
        )
        for workers in counts:
            print(f"{workers} worker(s)...", file=sys.stderr, flush=True)
            target = target_with(Path(tmp) / f"w{workers}", n * workers)
            with LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                resources={"bench": 1},
                dashboard_address=":0",
                local_directory=str(Path(tmp) / f"dask-{workers}"),
            ) as cluster:
                took = timed(
                    lambda config, options, c=cluster: on_hosts(
                        config, c.scheduler_address, options, quiet
                    ),
                    target,
                    sleep,
                )
            rows.append((workers, n * workers, took))
    one = rows[0][1] / rows[0][2] * 3600 if rows[0][0] == 1 else None
    bench_s = 6 * sleep
    print(
        f"{load}: null experiments decided at 3 pairs (6 runs of {sleep:g} s: {bench_s:g} s of "
        f"bench each), {n} per host, each host calibrating once (4 runs):\n"
    )
    print(
        "| hosts | experiments | wall s | experiments/hour | ideal (1 host's × hosts) | of ideal |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    data = []
    for workers, experiments, took in rows:
        rate, ideal, share = against_ideal(experiments, took, one, workers)
        print(f"| {workers} | {experiments} | {took:.1f} | {rate} | {ideal} | {share} |")
        data.append(
            {
                "condition": load,
                "hosts": workers,
                "experiments": experiments,
                "wall s": f"{took:.1f}",
                "experiments/hour": rate,
                "of ideal": share,
            }
        )
    if rows[0][0] == 1:
        per_cluster, per_local = rows[0][2] / rows[0][1], local / n
        print(
            f"\nPer experiment, one host: the cluster {per_cluster:.2f} s, the local loop "
            f"{per_local:.2f} s ({bench_s:g} s of it bench): the cluster adds "
            f"{per_cluster - per_local:+.2f} s per experiment."
        )
        data[0]["cluster added per experiment"] = f"{per_cluster - per_local:+.2f} s"
    return data


if __name__ == "__main__":
    sys.exit(main())
