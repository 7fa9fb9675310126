"""Nothing a bench starts outlives it: escaped groups, daemons, orphans, signals, a dead loop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest
from conftest import (
    alive,
    eventually,
    experiments,
    git,
    gone,
    run,
    spawn_loop,
    wait_for,
    wait_for_candidate,
)

from autoresearch.bench import proc
from autoresearch.bench.proc import StopFlag, become_subreaper, find_processes, process_token
from autoresearch.bench.proc import run as run_command
from autoresearch.process.capture import capture
from autoresearch.repo.state_dir import session_paths

# Each starts `sleep 300` out of the bench's process group in its own way and notes its pid.
ESCAPES = {
    "timeout": "timeout 1000 sleep 300 & echo $! > {pid}",
    "set -m job": "set -m; sleep 300 & echo $! > {pid}",
    "setsid": "setsid sleep 300 & echo $! > {pid}",
    "daemon in /": "(cd / && setsid sleep 300 & echo $! > {pid}) ",
    "scrubbed env + setsid": "env -i setsid /bin/sleep 300 & echo $! > {pid}",
}


def _pid(path) -> int:
    wait_for(path)
    return int(eventually(lambda: path.read_text().strip(), what=f"a pid in {path}"))


@pytest.mark.parametrize("how", list(ESCAPES))
@pytest.mark.parametrize("ending", ["exits", "times out"])
def test_escaped_children_die_with_the_command(tmp_path, how, ending):
    become_subreaper()
    # The test's own token: the clean-up after a command kills every process carrying its
    # token, which another test's command running beside it must not.
    token = f"test-token-{tmp_path.name}-{os.getpid()}"
    pid_file = tmp_path / "pid"
    command = ESCAPES[how].format(pid=pid_file) + ("; sleep 300" if ending == "times out" else "")
    # A loaded machine can take longer than the timeout to start bash and its escape: then
    # nothing escaped, and the command runs again with four times the time.
    for timeout_s in (1.5, 6.0, 24.0):
        result = run_command(
            command, cwd=tmp_path, log_path=tmp_path / "x.log", timeout_s=timeout_s, token=token
        )
        if pid_file.exists() or not result.timed_out:
            break
    assert result.timed_out == (ending == "times out")
    escaped = _pid(pid_file)
    assert gone(escaped), f"{how}: {escaped} survived"
    assert find_processes(token) == []


# Starts a child and ends the moment it is told to: `setsid` does this when it forks away from
# its group, and under load a sweep's look fell between the two (the fault suite's night left
# the child running). The test tells it to in that gap (see below), every time.
FORKER = """import os, sys, time
go, ready, child = sys.argv[1:4]
with open(ready, "w") as handle:
    handle.write(str(os.getpid()))
while not os.path.exists(go):
    time.sleep(0.001)
pid = os.fork()
if pid == 0:
    os.execvp("sleep", ["sleep", "300"])
with open(child, "w") as handle:
    handle.write(str(pid))
os._exit(0)
"""


@pytest.mark.parametrize("sweep", ["a run's clean-up", "a sweep by token"])
def test_a_process_that_forks_and_ends_while_a_sweep_reads_proc_leaves_nothing(
    tmp_path, monkeypatch, sweep
):
    """A sweep lists /proc, then reads each process listed. One that starts a child and ends
    in between is a zombie when read, and its child is in no list: a sweep that stopped at that
    empty look left the child running."""
    become_subreaper()
    token = f"test-token-{tmp_path.name}-{os.getpid()}"
    go, ready, child = tmp_path / "go", tmp_path / "ready", tmp_path / "child"
    (tmp_path / "forker.py").write_text(FORKER)
    forker = f"{sys.executable} {tmp_path / 'forker.py'} {go} {ready} {child}"
    listing = proc.pids

    def listed_then_forked() -> list[int]:
        listed = listing()
        if ready.exists() and not go.exists():  # the first look of the sweep: now, in the gap
            go.touch()
            wait_for(child)
            eventually(lambda: not alive(int(ready.read_text())), what="the forker to end")
        return listed

    monkeypatch.setattr(proc, "pids", listed_then_forked)
    if sweep == "a run's clean-up":  # out of the run's group and session, as setsid leaves it
        command = f"setsid {forker} & while [ ! -e {ready} ]; do sleep 0.01; done"
        result = run_command(
            command, cwd=tmp_path, log_path=tmp_path / "x.log", timeout_s=60, token=token
        )
        assert result.exit_code == 0
    else:  # what the next run's recovery does after a dead loop, and a bench host's watchdog
        started = subprocess.Popen(
            forker.split(), env={**os.environ, proc.TOKEN_ENV: token}, start_new_session=True
        )
        wait_for(ready)
        proc.kill_processes(token)
        started.wait(timeout=60)
    assert go.exists(), "the sweep never looked"
    assert gone(int(child.read_text()))
    assert find_processes(token) == []


def test_urgent_stop_kills_a_term_ignoring_command_at_once(tmp_path, monkeypatch):
    # A grace period of an hour: a stop that waited for it would end this test by timeout.
    monkeypatch.setattr(proc, "TERM_GRACE_S", 3600.0)
    stop = StopFlag()
    stop.set()
    stop.urgent = True
    result = run_command(
        "trap '' TERM; sleep 300",
        cwd=tmp_path,
        log_path=tmp_path / "x.log",
        timeout_s=3600,
        stop=stop,
    )
    assert result.interrupted
    assert result.duration_s < proc.TERM_GRACE_S / 10  # killed, not waited for


@pytest.mark.parametrize("started_by", ["a git call", "an agent's run"])
def test_a_child_another_thread_starts_during_a_run_outlives_its_clean_up(tmp_path, started_by):
    """A run's clean-up kills the children this process gained during it (its orphans,
    reparented here); a git call or an agent another thread started meanwhile (a proposal
    prepared while the bench runs) is a child gained then too, and is not the bench's."""
    become_subreaper()
    ready, done, lived = tmp_path / "ready", tmp_path / "done", tmp_path / "lived"
    # Alive until the run has ended and been cleaned up after: through the whole clean-up.
    script = f"touch {ready}; while [ ! -e {done} ]; do sleep 0.01; done; touch {lived}"
    ended = []

    def beside() -> None:
        if started_by == "a git call":
            ended.append(capture(["sh", "-c", script], cwd=tmp_path, timeout_s=120).code)
        else:
            log = tmp_path / "beside.log"
            beside_run = run_command(
                script, cwd=tmp_path, log_path=log, timeout_s=120, concurrent=True
            )
            ended.append(beside_run.exit_code)

    thread = threading.Thread(target=beside)
    token = f"test-token-{tmp_path.name}-{os.getpid()}"
    # The run itself leaves an orphan that must still die: the clean-up still cleans.
    escape = f"setsid sleep 300 & echo $! > {tmp_path / 'pid'}; "
    wait_ready = f"while [ ! -e {ready} ]; do sleep 0.01; done"
    result = run_command(
        escape + wait_ready,
        cwd=tmp_path,
        log_path=tmp_path / "x.log",
        timeout_s=120,
        token=token,
        on_start=lambda _pid: thread.start(),
    )
    done.touch()
    thread.join(timeout=60)
    assert result.exit_code == 0 and not result.timed_out
    # Its exit status too: a clean-up that reaped it would leave its caller a made-up 0.
    assert lived.exists() and ended == [0], f"{started_by} beside the run was killed"
    assert gone(_pid(tmp_path / "pid"))


def _slow_candidate(target, tmp_path, env: dict[str, str] | None = None):
    target.add_hypothesis("01-slow", {"src/mode.txt": "slow\n", "src/value.txt": "80\n"})
    started = tmp_path / "started"
    env = {"BENCH_SLOW_S": "60", "BENCH_STARTED": str(started), **(env or {})}
    proc = spawn_loop(target, env)
    wait_for_candidate(target, started)
    return proc, int(started.read_text())


@pytest.mark.e2e
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sighup_stops_like_sigterm(target, tmp_path, sig):
    proc, bench = _slow_candidate(target, tmp_path)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 3, err
    assert [r.status for r in experiments(target)] == ["interrupted"]
    assert not alive(bench)


@pytest.mark.e2e
def test_second_ctrl_c_kills_a_term_ignoring_bench_and_still_records(target, tmp_path):
    # The candidate's bench ignores SIGTERM (noting it came): only SIGKILL ends it.
    bench = target.root / "bench.py"
    ignore = "lambda *_: open(os.environ['BENCH_TERMED'], 'w').close()"
    bench.write_text(
        bench.read_text().replace(
            '    if mode == "slow":',
            '    if mode == "slow":\n        import signal\n'
            f"        signal.signal(signal.SIGTERM, {ignore})",
        )
    )
    git(target.root, "commit", "-qam", "bench ignores TERM when slow")
    termed = tmp_path / "termed"
    proc, pid = _slow_candidate(target, tmp_path, {"BENCH_TERMED": str(termed)})
    proc.send_signal(signal.SIGINT)
    # The second Ctrl-C once the first was acted on (the bench was asked to end): two
    # signals before the handler runs would be one.
    eventually(termed.exists, what="the first Ctrl-C's SIGTERM to the bench")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 3, err
    assert "Traceback" not in err
    assert not alive(pid)
    assert [r.status for r in experiments(target)] == ["interrupted"]
    assert not session_paths(target.load()).inflight.exists()


@pytest.mark.e2e
def test_kill9_leaves_a_daemon_that_left_the_tree_and_the_next_run_stops_it(target, tmp_path):
    """The bench starts a daemon in another directory and exits; the loop is then killed."""
    daemon_pid = tmp_path / "daemon.pid"
    bench = target.root / "bench.py"
    bench.write_text(
        bench.read_text().replace(
            '    if mode == "slow":',
            '    if mode == "slow":\n'
            "        import subprocess\n"
            '        subprocess.Popen(["setsid", "sleep", "300"], cwd="/",'
            " start_new_session=True)\n"
            f'        write("{daemon_pid}", "started")',
        )
    )
    git(target.root, "commit", "-qam", "bench leaves a daemon when slow")
    loop, _ = _slow_candidate(target, tmp_path)
    wait_for(daemon_pid)
    token_holders = eventually(
        lambda: [p for p in find_processes(_token(target)) if alive(p)],
        what="the daemon to be running",
    )
    loop.send_signal(signal.SIGKILL)
    loop.communicate(timeout=30)

    run(target, max_experiments=1)  # recovery only

    assert [p for p in token_holders if alive(p)] == []
    assert [r.status for r in experiments(target)][:1] == ["interrupted"]


def _token(target) -> str:
    return process_token(session_paths(target.load()).root)


@pytest.mark.e2e
def test_a_signal_during_the_build_of_the_best_is_a_clean_stop(target, tmp_path):
    target.configure(build="./build.py")
    git(target.root, "commit", "-qam", "a build step")
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    build_log = tmp_path / "builds"
    loop = spawn_loop(target, {"BUILD_SLEEP_S": "30", "BUILD_LOG": str(build_log)})
    wait_for(build_log)
    loop.send_signal(signal.SIGTERM)
    _, err = loop.communicate(timeout=30)
    assert loop.returncode == 3, err
    assert "error:" not in err and "Traceback" not in err
    assert experiments(target) == []
    run(target)  # and the next run goes on as if nothing happened
    assert [r.status for r in experiments(target)] == ["keep"]
