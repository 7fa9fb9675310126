"""Several bench hosts: a real Dask LocalCluster (worker processes, each with its own clone
directory and one unit of the `bench` resource) measuring the synthetic target, whose bench
sleeps instead of burning CPU."""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import (
    alive,
    eventually,
    experiments,
    git,
    local_cluster,
    run_cli,
    run_on_hosts,
    unified_patch,
    wait_for,
)
from distributed import Client, LocalCluster

from autoresearch.bench.bwrap import bwrap_problem
from autoresearch.bench.runners import SimulatedRunner
from autoresearch.bench.samples import CANDIDATE
from autoresearch.bench.staging import STAGE, staged, unstage
from autoresearch.cluster.host import Host
from autoresearch.loop.session import RunOptions
from autoresearch.progress import Progress
from autoresearch.repo.state_dir import session_paths


@pytest.fixture
def cluster(tmp_path):
    with local_cluster(tmp_path) as local:
        yield local


def sleepy(target, tmp_path: Path, sleep_s: float = 0.2, **overrides) -> dict[str, str]:
    """A noiseless bench whose runs sleep: the rule decides at its first look (3 pairs)."""
    target.configure(min_runs=3, max_runs=3, looks=1, **overrides)
    (target.root / "src" / "knobs.txt").write_text("k = 1\n")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "a knob")
    return {
        "BENCH_SLEEP_S": str(sleep_s),
        "BENCH_COST": "value * k",
        "BENCH_SPANS": str(tmp_path / "spans.txt"),
    }


def drive(target, scheduler: str, env: dict[str, str], progress=None, **options):
    options.setdefault("confirm", False)
    return run_on_hosts(
        target.load(), scheduler, RunOptions(env=env, **options), progress or Progress(quiet=True)
    )


def spans(tmp_path: Path) -> dict[str, list[tuple[float, float]]]:
    found: dict[str, list[tuple[float, float]]] = {}
    for line in (tmp_path / "spans.txt").read_text().splitlines():
        host, start, end = line.rsplit(" ", 2)
        found.setdefault(host, []).append((float(start), float(end)))
    return found


@pytest.mark.e2e
def test_two_hosts_measure_side_by_side_and_one_host_never_runs_two_benches(
    target, tmp_path, cluster
):
    env = sleepy(target, tmp_path)
    target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")
    target.add_hypothesis("b-knob", {"src/knobs.txt": "k = 0.9\n"}, title="knob down")
    target.add_hypothesis("c-noop", {"src/noop.txt": "nothing\n"}, title="no effect")

    outcome = drive(target, cluster.scheduler_address, env)

    assert outcome.kept == 2
    assert all(r.cluster.host and r.cluster.worker for r in experiments(target))
    # Both hosts measured, and one host never ran two benches at once. (Whether the two ran
    # at the same moment is the scheduler's and the machine's load: not asserted.)
    by_host = spans(tmp_path)
    assert len(by_host) == 2
    for runs in by_host.values():
        runs.sort()
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(runs))


@pytest.mark.e2e
def test_a_killed_host_s_experiment_runs_again_and_is_recorded_once(target, tmp_path, cluster):
    env = sleepy(target, tmp_path, sleep_s=0.6)
    env["BENCH_STARTED"] = str(tmp_path / "started")
    env["BENCH_STARTED_VALUE"] = "80"  # the experiment's run, not the calibration's
    target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")
    done = {}
    said = io.StringIO()
    driver = threading.Thread(
        target=lambda: done.setdefault(
            "outcome", drive(target, cluster.scheduler_address, env, Progress(said))
        )
    )
    driver.start()
    with Client(cluster.scheduler_address) as client:
        wait_for(tmp_path / "started")
        busy = eventually(
            lambda: [
                w
                for w, keys in client.processing().items()
                if any("calibration" not in str(key) for key in keys)
            ],
            what="the experiment to start on a host",
        )
        pid = client.run(os.getpid, workers=busy)[busy[0]]
        os.kill(pid, signal.SIGKILL)
        driver.join(timeout=180)
    assert not driver.is_alive()
    (record,) = experiments(target)
    assert record.status == "keep"
    assert record.cluster.worker != busy[0]
    assert done["outcome"].kept == 1
    # The progress says which host left (and the record which measured it).
    assert f"warning: bench host {busy[0]} left" in said.getvalue()


@pytest.mark.e2e
def test_a_killed_driver_sends_its_experiments_again_on_restart(target, tmp_path, cluster):
    env = sleepy(target, tmp_path, sleep_s=0.5)
    env["BENCH_STARTED"] = str(tmp_path / "started")
    env["BENCH_STARTED_VALUE"] = "80"  # the experiment's run, not the calibration's
    target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")
    target.add_hypothesis("b-knob", {"src/knobs.txt": "k = 0.9\n"}, title="knob down")
    command = [sys.executable, "-m", "autoresearch.cli", "run", "--no-confirm", "--quiet"]
    command += ["--cluster", cluster.scheduler_address]
    for key, value in env.items():
        command += ["--env", f"{key}={value}"]
    child = subprocess.Popen(command, cwd=target.root)
    wait_for(tmp_path / "started")
    child.kill()
    child.wait()
    flights = list(session_paths(target.load()).flights.glob("*.json"))
    assert flights, "the dead driver left no marker of what was in flight"
    assert experiments(target) == []

    outcome = drive(target, cluster.scheduler_address, env)

    records = experiments(target)
    assert sorted(r.title for r in records) == ["knob down", "value down"]
    assert len({r.id for r in records}) == 2
    assert outcome.kept == 2
    assert not list(session_paths(target.load()).flights.glob("*.json"))
    assert git(target.root, "show", "autoresearch/t:src/value.txt") == "80\n"


def _simulated(tree: Path, _run: int) -> dict[str, float]:
    """A bench with no process: the synthetic target's cost (`value * k`), read from the
    arm's tree."""
    value = float((tree / "src" / "value.txt").read_text())
    knob = float((tree / "src" / "knobs.txt").read_text().split("=")[1])
    sentinel = float((tree / "src" / "sentinel.txt").read_text())
    return {"time_ms": value * knob, "sentinel_ms": sentinel}


def test_the_session_s_executor_measures_on_the_bench_hosts_too(target, tmp_path):
    """The executor seam reaches the hosts: a job carries the session's executor, and the
    host measures through it (a simulated bench, no process) instead of its own runner."""
    env = sleepy(target, tmp_path)
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"}, title="value down")
    target.add_hypothesis("02-loss", {"src/knobs.txt": "k = 2\n"}, title="knob up")
    with LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=False,
        resources={"bench": 1},
        dashboard_address=":0",
    ) as local:
        outcome = drive(target, local.scheduler_address, env, runner=SimulatedRunner(_simulated))
    records = {r.title: r for r in experiments(target)}
    assert records["value down"].status == "keep" and records["knob up"].status == "discard"
    assert outcome.kept == 1 and records["value down"].cluster.host
    assert not (tmp_path / "spans.txt").exists()  # the real bench never ran


def test_a_session_without_bench_workers_is_refused_with_the_fix(target, tmp_path):
    env = sleepy(target, tmp_path)
    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as plain:
        from autoresearch.errors import UserError

        with pytest.raises(UserError, match="--resources bench=1"):
            drive(target, plain.scheduler_address, env)


def test_a_host_whose_dask_profiler_samples_beside_the_bench_is_said_and_local_hosts_run_without(
    target,
):
    """Dask's profiler wakes every 10 ms in a worker waiting on its bench: `local:N` starts its
    workers without it, and a host started with it on is named at the start with the fix."""
    import dask

    from autoresearch.cluster.dask_executor import connect
    from autoresearch.cluster.host import QUIET_WORKER

    config = target.load()

    def said(scheduler: str) -> str:
        out = io.StringIO()
        with connect(config, scheduler, Progress(out)) as client:
            assert client.scheduler_info()["workers"]
        return out.getvalue()

    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, resources={"bench": 1},
        dashboard_address=":0",
    ) as local:  # fmt: skip
        with dask.config.set({"distributed.worker.profile.enabled": True}):
            warned = said(local.scheduler_address)
        with dask.config.set(QUIET_WORKER):
            assert "profiler" not in said(local.scheduler_address)
    assert "1 bench host(s) run Dask's profiler" in warned
    assert "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False" in warned
    spawned = said("local:1")
    assert "1 bench host(s)" in spawned and "profiler" not in spawned


def test_a_bad_scheduler_address_is_named_before_anything_runs(target):
    done = run_cli("run", "--cluster", "bench one", cwd=target.root)
    assert done.returncode != 0
    assert "--cluster must be a scheduler address" in done.stderr
    assert "'bench one'" in done.stderr
    config = target.config_path.read_text() + '\n[cluster]\nscheduler = "local:0"\n'
    target.config_path.write_text(config)
    done = run_cli("run", cwd=target.root)
    assert "'cluster.scheduler': local:N needs at least one worker" in done.stderr
    assert not target.journal.exists()


def test_a_host_stops_what_a_killed_worker_left_running_before_it_measures(target, tmp_path):
    """A worker killed mid-run leaves its bench running, orphaned; the next job on that host
    (its clone, its token) stops it before measuring, so the two never overlap."""
    from autoresearch.bench.jobs import Job
    from autoresearch.bench.proc import TOKEN_ENV, process_token
    from autoresearch.cluster.host import host_sessions, run_job

    config = target.load()
    job = Job("experiment", "t-0001", config, "autoresearch/t", "0" * 40)  # nothing to fetch
    # The first slot of this machine: what a host process takes when its worker has no name.
    root = host_sessions(job, tmp_path / "hosts") / f"{socket.gethostname()}-0"
    root.mkdir(parents=True)
    orphan = subprocess.Popen(
        ["sleep", "300"],
        env={**os.environ, TOKEN_ENV: process_token(root)},
        start_new_session=True,
    )

    out = run_job(job, None, str(tmp_path / "hosts"))

    assert out.leftovers_stopped == 1
    orphan.wait(timeout=10)  # gone (reaped by the host's kill, so no exit status of its own)
    assert out.failure == "interrupted" and "could not fetch" in out.detail


def test_sessions_of_one_name_in_two_repositories_never_share_a_host_clone(tmp_path):
    """Two repositories' sessions named alike, on the same hosts at once: each has clones of
    its own (keyed by the driver's machine and repository too), so neither stops the other's
    benches as its own leftovers."""
    from conftest import make_target

    from autoresearch.bench.jobs import Job
    from autoresearch.cluster.host import host_sessions

    first, second = (make_target(tmp_path / name).load() for name in ("one", "two"))
    assert first.session.name == second.session.name
    jobs = [Job("experiment", "t-0001", c, "autoresearch/t", "0" * 40) for c in (first, second)]
    places = {host_sessions(job, tmp_path / "hosts") for job in jobs}
    assert len(places) == 2
    moved = replace(jobs[0], origin="another-driver")
    assert host_sessions(moved, tmp_path / "hosts") not in places


def test_a_killed_host_process_takes_its_unconfined_bench_with_it(tmp_path):
    """A host process (a Dask worker) killed with SIGKILL mid-run: its bench, started in a
    session of its own and unconfined, is stopped at once by the watchdog it left."""
    script = (
        "import os, subprocess, sys, time\n"
        "from autoresearch.bench.orphans import stop_orphans_at_exit\n"
        "from autoresearch.bench.proc import TOKEN_ENV\n"
        "stop_orphans_at_exit('host-token-1')\n"
        "env = {**os.environ, TOKEN_ENV: 'host-token-1'}\n"
        "quiet = {'start_new_session': True, 'stdout': subprocess.DEVNULL}\n"
        "bench = subprocess.Popen(['sleep', '300'], env=env, **quiet)\n"
        "other = subprocess.Popen(['sleep', '300'], **quiet)\n"
        "print(bench.pid, other.pid, flush=True)\n"
        "time.sleep(300)\n"
    )
    host = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    bench, other = (int(pid) for pid in host.stdout.readline().split())
    try:
        host.kill()
        host.communicate(timeout=10)
        eventually(lambda: not alive(bench), what="the orphaned bench to be stopped")
        assert alive(other)  # a process without the host's token is not the host's
    finally:
        for pid in (bench, other):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.e2e
def test_a_restarted_worker_takes_back_the_clone_its_killed_predecessor_left(tmp_path):
    """Slots: each worker process holds one locked while it lives, so two live workers never
    share a clone, and the one started after a kill finds the dead one's clone again."""
    take = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from autoresearch.cluster.host import _slot\n"
        "print(_slot(Path(sys.argv[1])).name, flush=True)\n"
        "time.sleep(300)\n"
    )

    def worker() -> tuple[subprocess.Popen, str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", take, str(tmp_path)], stdout=subprocess.PIPE, text=True
        )
        return proc, proc.stdout.readline().strip()

    def end(proc: subprocess.Popen) -> None:
        proc.kill()
        proc.communicate(timeout=10)

    first, first_slot = worker()
    second, second_slot = worker()
    try:
        assert first_slot != second_slot
        end(first)
        restarted, restarted_slot = worker()
        end(restarted)
    finally:
        end(second)
    assert restarted_slot == first_slot


@pytest.mark.e2e
def test_a_best_is_calibrated_once_and_hosts_of_its_kind_take_it_up(target, tmp_path):
    """One job measures the new best's calibration; a host of the same kind adopts it (no
    calibration run of its own), and while it is being measured another judges by the latest
    calibration of an earlier best of its kind; a host of another kind measures its own."""
    from autoresearch.bench.jobs import Job, JobResult
    from autoresearch.cluster.host import host_kind, run_job

    target.configure(min_runs=3, max_runs=3, looks=1, calibration_runs=4)
    git(target.root, "commit", "-qam", "fixed pairs")
    config = target.load()
    bundle = tmp_path / "t.bundle"
    git(target.root, "branch", "autoresearch/t")
    git(target.root, "bundle", "create", "--quiet", str(bundle), "refs/heads/autoresearch/t")
    parent = git(target.root, "rev-parse", "HEAD").strip()
    patch = unified_patch("src/value.txt", "100\n", "80\n").encode()

    def job(host: str, **sharing) -> tuple[JobResult, int]:
        trace = tmp_path / f"{host}.trace"
        env = {"BENCH_TRACE": str(trace)}
        one = Job("experiment", f"t-{host}", config, "autoresearch/t", parent, patch, env=env)
        out = run_job(replace(one, **sharing), bundle.read_bytes(), str(tmp_path / host))
        assert out.failure is None, out
        return out, len(trace.read_text().splitlines())

    first, runs = job("a")
    assert first.calibration_new and runs == 4 + 6  # its calibration, then 3 pairs
    measured = first.calibration
    assert measured.host_kind == host_kind() and measured.commit == parent

    adopted, runs = job("b", calibrations=(measured,), calibrate=False)
    assert not adopted.calibration_new and runs == 6
    assert adopted.calibration == measured

    older = replace(measured, commit="f" * 40)
    borrowed, runs = job("c", calibrate=False, fallbacks=(older,))
    assert not borrowed.calibration_new and runs == 6
    assert borrowed.calibration.commit == "f" * 40

    other = replace(measured, host_kind="another machine")
    own, runs = job("d", calibrations=(other,), calibrate=False, fallbacks=(other,))
    assert own.calibration_new and runs == 4 + 6


@pytest.mark.e2e
def test_a_host_confines_the_candidate_and_the_record_says_how(target, tmp_path):
    """`[sandbox] mode = "bwrap"` holds on bench hosts: the candidate's runs there are
    confined as they are here, and its record says so (the review shows it)."""
    assert bwrap_problem() is None, bwrap_problem()
    env = sleepy(target, tmp_path, sleep_s=0.05, sandbox="bwrap")
    env.pop("BENCH_SPANS")  # a file outside the tree: a confined run may not write it
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})

    with local_cluster(tmp_path, workers=1) as local:
        drive(target, local.scheduler_address, env)

    (record,) = experiments(target)
    assert record.status == "keep", record.error
    assert record.cluster and record.confinement.tool == "bwrap"


def test_a_host_puts_back_an_arm_a_killed_run_left_staged(tmp_path):
    """A confined run has its arm under STAGE (bench/staging.py); a worker killed mid-run
    leaves it there. The next job on the clone opens the host: the arm is back in its place
    before anything looks for it (made again beside the staged one, the next staging failed,
    'Directory not empty', three times, and the night stopped)."""
    root = tmp_path / "host"
    arm = Host(root).trees[CANDIDATE].path
    arm.mkdir(parents=True)
    (arm / "made.txt").write_text("the arm's\n")
    stage = staged(arm)
    stage.__enter__()  # staged; the worker dies before the block ends
    assert not arm.exists() and (root / STAGE / "made.txt").exists()

    Host(root)  # the next job on this clone

    assert (arm / "made.txt").read_text() == "the arm's\n" and not (root / STAGE).exists()
    # An arm made again meanwhile (by a loop before this one): the staged copy is the stale one.
    stage = staged(arm)
    stage.__enter__()
    arm.mkdir()
    (arm / "made.txt").write_text("made again\n")
    unstage(root)
    assert (arm / "made.txt").read_text() == "made again\n" and not (root / STAGE).exists()
    with staged(arm) as seen:  # and the next run stages it again
        assert seen == root / STAGE
