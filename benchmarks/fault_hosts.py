"""The fault suite's categories for bench hosts (see faults.py): real `dask scheduler` and
`dask worker` processes started as the guide says, a night driven with `run --cluster`, and a
worker process, a whole host, the driver or the scheduler killed with SIGKILL while a bench
runs.

Beyond the night's invariants (fault_night.py): no bench run of a dead worker outlives it into
the next run on its host (no two completed runs of one host's clone overlap), no process of any
host is left, both true wins kept and neither null, a host killed mid-bench named in a record's
cluster.lost (counted as a lost record when nothing says it), and the worker its nanny restarts
takes back the dead one's clone (the machine's slots, one per live worker, never a fresh one).
Half the nights run the hosts' benches confined.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fault_night import Night, Tally

from autoresearch.bench.bwrap import bwrap_problem
from autoresearch.bench.proc import find_processes, process_token
from autoresearch.cluster.host import QUIET_WORKER_ENV, TELLING_SCHEDULER_ENV
from autoresearch.journal.store import read_journal

__all__ = ["HOST_CATEGORIES", "Hosts"]

WORKERS = 3
BENCH_SLEEP_S = 0.4
# Each in a file of its own (the synthetic bench multiplies its time by each factor): two true
# wins and two nulls, independent of each other.
WINS_AND_NULLS = {"a": 0.8, "b": 1.0, "c": 0.7, "d": 1.0}


# What is killed with SIGKILL while a bench runs on a host, night by night.
HOST_FAULTS = ("worker", "host", "driver")


def killed_processes(tally: Tally, trials: int) -> None:
    """Each night: four hypotheses (two wins) over three hosts, and one of HOST_FAULTS in
    turn: a worker process (its nanny starts another), a whole host (`dask worker` and its
    worker, gone for good) or the driver (run again, as a user would)."""
    for trial in range(trials):
        fault = HOST_FAULTS[trial % len(HOST_FAULTS)]
        confined = (trial // len(HOST_FAULTS)) % 2 == 1 and bwrap_problem() is None
        with tempfile.TemporaryDirectory() as tmp, Hosts(Path(tmp) / "dask") as hosts:
            night = Night(Path(tmp), {"sandbox": "bwrap" if confined else "off", "min_runs": 3})
            for i, (name, factor) in enumerate(WINS_AND_NULLS.items()):
                night.queue(f"{i:02d}-{name}", {f"src/speedup-{name}.txt": f"{factor}\n"})
            spans = Path(tmp) / "spans.txt"
            env = {"BENCH_SLEEP_S": str(BENCH_SLEEP_S)}
            if not confined:  # a confined bench has a /tmp of its own: the file is not there
                env["BENCH_SPANS"] = str(spans)
            driver = _drive(night, hosts, env)
            killed = hosts.kill_while_benching(fault, driver, skip=trial)
            code, err = _reap(driver)
            if fault == "driver":  # killed by us: its output is not judged; the rerun's is
                code, err = _reap(_drive(night, hosts, env))
            night._saw(code, err)
            problems = night.check()
            problems["records_lost"] += _lost_results(night)
            problems["processes_left"] += _overlaps(spans) + len(hosts.left_running())
            # A host lost mid-bench is said: some record names it in cluster.lost.
            if fault != "driver" and not _hosts_said_lost(night):
                problems["records_lost"] += 1
            # One clone per live worker, taken back after a restart: slots 0 to workers - 1 of
            # this machine, never a new one (a host that got no work has none).
            clones = hosts.clones()
            slots = {f"{_machine()}-{n}" for n in range(hosts.workers)}
            problems["dirty_trees"] += 0 if set(clones) <= slots else 1
            how = "confined" if confined else "unconfined"
            said = sorted(set(_hosts_said_lost(night)))
            note = _explained(
                f"{how}, killed {killed}, exit {code}, clones {clones}, said lost {said}",
                problems,
                night,
            )
            tally.add(problems, note)
            if not any(problems.values()):
                tally.notes.append(note)


class Hosts:
    """A scheduler and `workers` workers on 127.0.0.1, each a `dask worker` process (its nanny)
    running one worker process with one thread and one unit of the bench resource, started as
    the guide (docs/guides/bench-hosts.md) starts them."""

    def __init__(self, home: Path, supervised: bool = False, workers: int = WORKERS):
        self.home = home
        self.workers = workers
        self.local = home / "local"
        self.port = _free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        # As the guide runs them for a scheduler that may restart: each worker in a loop that
        # starts it again (Dask's workers leave when their scheduler goes away).
        self.supervised = supervised

    def __enter__(self) -> Hosts:
        self.local.mkdir(parents=True)
        log = open(self.home / "dask.log", "w")
        self._log = log
        self.procs.append(self.start_scheduler())
        # As the guide starts a bench host: one worker, one thread, one unit of the resource.
        one = ["--nworkers", "1", "--nthreads", "1", "--resources", "bench=1"]
        one += ["--local-directory", str(self.local), "--no-dashboard"]
        worker = [sys.executable, "-m", "distributed.cli.dask_worker", self.address, *one]
        if self.supervised:
            loop = f"while :; do {shlex.join(worker)}; sleep 1; done"
            worker = ["sh", "-c", loop]
        quiet = {**os.environ, **QUIET_WORKER_ENV}  # the guide's environment
        for _ in range(self.workers):
            self.procs.append(
                subprocess.Popen(worker, stdout=log, stderr=log, start_new_session=True, env=quiet)
            )
        return self

    def start_scheduler(self) -> subprocess.Popen:
        dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
        return subprocess.Popen(
            [*dask, "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"],
            stdout=self._log,
            stderr=self._log,
            start_new_session=True,
            env={**os.environ, **TELLING_SCHEDULER_ENV},  # the guide's environment
        )

    def kill_scheduler(self) -> None:
        os.killpg(self.procs[0].pid, signal.SIGKILL)
        self.procs[0].wait()

    def wait_for_a_bench(self) -> None:
        """Until a bench runs on one of these hosts (not another night's on the machine)."""
        workers = {p.pid for p in self.procs[1:]}
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if any(_ancestor_under(b, workers) for b in _processes_named("bench.py")):
                return
            time.sleep(0.02)

    def __exit__(self, *exc) -> None:
        for proc in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self._log.close()

    def kill_while_benching(self, fault: str, driver: subprocess.Popen, skip: int) -> str:
        """SIGKILL what `fault` names (HOST_FAULTS) while a bench of these hosts runs, after
        `skip` bench runs have been seen to start (the moment moves from night to night)."""
        nannies = {p.pid for p in self.procs[1:]}  # unsupervised: `dask worker` is the nanny
        seen: set[int] = set()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            for bench in _processes_named("bench.py"):
                worker = _ancestor_under(bench, nannies)
                if worker is None or bench in seen:
                    continue
                seen.add(bench)
                if len(seen) <= skip:
                    continue
                if fault == "driver":
                    driver.kill()
                    return f"the driver during bench {bench}"
                if fault == "host":  # the nanny's group: the nanny and its worker
                    nanny = next(n for n in nannies if _ancestor_under(bench, {n}) is not None)
                    os.killpg(nanny, signal.SIGKILL)
                    return f"host {nanny} (nanny and worker) during bench {bench}"
                os.kill(worker, signal.SIGKILL)
                return f"worker {worker} during bench {bench}"
            time.sleep(0.02)
        return "nothing (no bench seen)"

    def left_running(self) -> list[int]:
        """Processes of any host's clone still alive (by each clone's token)."""
        found: list[int] = []
        for root in self._clone_roots():
            found += find_processes(process_token(root))
        return found

    def clones(self) -> list[str]:
        return sorted(p.name for p in self._clone_roots())

    def _clone_roots(self) -> list[Path]:
        sessions = self.local / "dask-scratch-space" / "autoresearch"
        return [p for p in sessions.glob("*/*") if p.is_dir()]


def lost_schedulers(tally: Tally, trials: int) -> None:
    """Each night: the scheduler killed with SIGKILL while a bench runs. Even nights it comes
    back on its port within the grace (the workers, restarted by their loop, join it again)
    and the night goes on to its end; odd nights it stays away past the grace: the driver
    stops with a one-line error naming the address, what was in flight is recorded as
    interrupted, and the next run (on a scheduler started again) takes those up."""
    for trial in range(trials):
        back = trial % 2 == 0
        with tempfile.TemporaryDirectory() as tmp, Hosts(Path(tmp) / "dask", True) as hosts:
            night = Night(Path(tmp), {"min_runs": 3})
            grace = 60 if back else 4
            text = night.target.config_path.read_text()
            night.target.config_path.write_text(
                text + f"\n[cluster]\nscheduler_grace_s = {grace}\n"
            )
            night.commit("a grace for the scheduler")
            for i, (name, factor) in enumerate(WINS_AND_NULLS.items()):
                night.queue(f"{i:02d}-{name}", {f"src/speedup-{name}.txt": f"{factor}\n"})
            env = {"BENCH_SLEEP_S": str(BENCH_SLEEP_S)}
            driver = _drive(night, hosts, env)
            _calibrated(night)  # the fault lands on experiments in flight, not the calibration
            hosts.wait_for_a_bench()
            hosts.kill_scheduler()
            if back:
                time.sleep(2)
                hosts.procs[0] = hosts.start_scheduler()
            code, err = _reap(driver)
            said = [line for line in err.splitlines() if line.startswith("error:")]
            stopped = code == 1 and said and hosts.address in said[-1]
            night._saw(code, err)
            interrupted = sum(
                r.status == "interrupted" for r in read_journal(night.target.journal).experiments
            )
            resumed = ""
            if not back:
                hosts.procs[0] = hosts.start_scheduler()
                began = time.monotonic()
                code, err = _reap(_drive(night, hosts, env))
                night._saw(code, err)
                lines = err.strip().splitlines()
                resumed = f"; resumed: exit {code} after {time.monotonic() - began:.0f} s"
                resumed += f", {lines[-1][:300]}" if lines else ""
            problems = night.check()
            problems["records_lost"] += _lost_results(night)
            problems["processes_left"] += len(hosts.left_running())
            if not back and not (stopped and interrupted):
                problems["tracebacks"] += 1  # not the one-line stop it should have been
            how = "back within the grace" if back else f"away past {grace} s"
            note = f"scheduler {how}: {interrupted} interrupted, {said[-1] if said else 'exit 0'}"
            note = _explained(note[:300] + resumed, problems, night)
            tally.add(problems, note)
            if not any(problems.values()):
                tally.notes.append(note)


def _calibrated(night: Night) -> None:
    """Until the night's first calibration is journaled: a night on bench hosts calibrates the
    best on one host before it sends any experiment (cluster/ready.py)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if night.target.journal.exists() and read_journal(night.target.journal).calibrations:
            return
        time.sleep(0.05)


def _drive(night: Night, hosts: Hosts, env: dict[str, str]) -> subprocess.Popen:
    """`run --cluster`; `env` reaches the hosts' benches as `--env` (the workers' own
    environment is the one they were started with)."""
    command = ["run", "--quiet", "--cluster", hosts.address]
    command += [f"--env={key}={value}" for key, value in env.items()]
    return subprocess.Popen(
        [sys.executable, "-m", "autoresearch.cli", *command],
        cwd=night.root,
        env=night.env(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _reap(driver: subprocess.Popen) -> tuple[int, str]:
    try:
        _, err = driver.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        driver.kill()
        _, err = driver.communicate()
    return driver.returncode, err


def _lost_results(night: Night) -> int:
    """A lost result is a lost record: every true win kept, no null."""
    kept = {
        r.title.split("-", 1)[1]
        for r in read_journal(night.target.journal).experiments
        if r.status == "keep"
    }
    return len(kept ^ {n for n, f in WINS_AND_NULLS.items() if f < 1})


def _hosts_said_lost(night: Night) -> list[str]:
    """The hosts the journal's records say were lost while they measured (an experiment's
    or a calibration's)."""
    journal = read_journal(night.target.journal)
    said = [lost.get("host") or "?" for c in journal.calibrations for lost in c.lost]
    return said + [
        lost.host or "?"
        for r in journal.experiments
        if r.cluster is not None
        for lost in r.cluster.lost
    ]


def _explained(note: str, problems: dict[str, int], night: Night) -> str:
    """A trial's note; when it lost a result, with what each hypothesis came to (status, and
    the reason of a non-keep, in journal order)."""
    if not problems["records_lost"]:
        return note
    records = read_journal(night.target.journal).experiments
    return (
        note
        + "; "
        + ", ".join(
            f"{r.title.split('-', 1)[1]}:{r.status}"
            + ("" if r.status == "keep" else f" ({r.asi.result})")
            for r in records
        )
    )


def _overlaps(spans: Path) -> int:
    """Completed bench runs of one clone that overlapped in time."""
    by_clone: dict[str, list[tuple[float, float]]] = {}
    if spans.exists():
        for line in spans.read_text().splitlines():
            clone, start, end = line.rsplit(" ", 2)
            by_clone.setdefault(clone, []).append((float(start), float(end)))
    count = 0
    for runs in by_clone.values():
        runs.sort()
        count += sum(1 for a, b in itertools.pairwise(runs) if b[0] < a[1])
    return count


def _processes_named(name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if name.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def _ancestor_under(pid: int, parents: set[int]) -> int | None:
    """The ancestor of `pid` whose parent is one of `parents` (a worker under its nanny)."""
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid in parents:
            return pid
        pid = ppid
    return None


def _machine() -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


HOST_CATEGORIES = {
    "hosts": ("bench hosts' processes (real dask workers)", killed_processes, 6, 3),
    "scheduler": ("a lost Dask scheduler", lost_schedulers, 4, 2),
}
