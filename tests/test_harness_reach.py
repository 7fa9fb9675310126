"""The candidate's processes cannot reach their harness. The workload runs as a child of the
bench script, as the same user in the same namespaces: it can find the script's descriptors
and memory through /proc, attach to it, or copy its descriptors. Each attack is the workload
of a candidate that is no faster, against the bench script `init` writes (its METRIC lines to
the loop's channel, closed for the program it times); none may be kept."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import dedent, experiments, run
from test_metric_channel import CHANNEL_BENCH

from autoresearch.bench.bwrap import bwrap_problem

# A bench script that reports, then still has work to do (a clean-up, a second scale): the
# window in which a process the workload left behind acts.
SLOW_TO_END = CHANNEL_BENCH + "sleep 0.5\n"

# The workload finds its parent (the bench script) and, through /proc, the descriptors it
# holds beyond its streams: the loop's channel among them.
FIND = dedent(
    """
    import ctypes, os, sys, time
    harness = os.getppid()
    def held():
        found = []
        for name in os.listdir(f"/proc/{harness}/fd"):
            if int(name) > 2 and int(name) != 255:
                found.append(int(name))
        return found
    """
)

ATTACKS = {
    # Left behind: once the script wrote its real lines, reopen its channel (a new open file
    # description: at the start, truncated) and write a forged result in their place.
    "rewrite the channel after the script": FIND
    + dedent(
        """
        if os.fork() == 0:
            time.sleep(0.25)
            for fd in held():
                try:
                    out = os.open(f"/proc/{harness}/fd/{fd}", os.O_WRONLY | os.O_TRUNC)
                    os.write(out, b"METRIC time_ms=1\\nMETRIC sentinel_ms=50\\n")
                except OSError as exc:
                    print("reopen refused:", exc, file=sys.stderr)
            os._exit(0)
        """
    ),
    # Attach to the script and stop it before it writes its line; write a forged one first.
    "attach to the script": FIND
    + dedent(
        """
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.ptrace(16, harness, None, None) == 0:  # PTRACE_ATTACH
            for fd in held():
                os.write(os.open(f"/proc/{harness}/fd/{fd}", os.O_WRONLY),
                         b"METRIC time_ms=1\\nMETRIC sentinel_ms=50\\n")
            os.kill(harness, 9)
        print("ptrace refused:", ctypes.get_errno(), file=sys.stderr)
        """
    ),
    # Copy the script's channel descriptor itself (pidfd_getfd), write, and end the script.
    "copy the script's descriptor": FIND
    + dedent(
        """
        libc = ctypes.CDLL(None, use_errno=True)
        pidfd = libc.syscall(434, harness, 0)  # pidfd_open
        for fd in held():
            got = libc.syscall(438, pidfd, fd, 0)  # pidfd_getfd
            if got >= 0:
                os.write(got, b"METRIC time_ms=1\\nMETRIC sentinel_ms=50\\n")
        print("pidfd_getfd:", ctypes.get_errno(), file=sys.stderr)
        """
    ),
    # Write into the script's memory: its next `echo` says what the workload wants.
    "write the script's memory": FIND
    + dedent(
        """
        try:
            mem = os.open(f"/proc/{harness}/mem", os.O_RDWR)
            print("opened the script's memory", file=sys.stderr)
        except OSError as exc:
            print("mem refused:", exc, file=sys.stderr)
        """
    ),
}


@pytest.mark.e2e
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_workload_cannot_reach_its_bench_script(target, attack):
    assert bwrap_problem() is None, bwrap_problem()
    target.configure(sandbox="bwrap")
    target.use_bench("ch.sh", SLOW_TO_END.replace(sys.executable, sys.executable), "the harness")
    target.add_hypothesis("01-attack", {"src/work.py": ATTACKS[attack]})

    run(target)

    (record,) = experiments(target)
    assert record.status != "keep", record.decision
    logs = [Path(log).read_text() for log in record.bench_logs]
    assert not any("opened the script's memory" in text for text in logs)
