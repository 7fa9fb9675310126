"""The observer bench: a run that records everything it can observe of its world, so that a test
can diff that world across every phase and arm of a night (tests/test_same_world.py).

It prints one `OBSERVED <json>` line on its standard error, which the loop keeps in the run's
log, and its METRIC lines where a bench writes them: the environment, its arguments and
directory, every descriptor it holds and what it names, the kind of its standard streams, the
mount table, its cgroup, limits, capabilities and namespaces, its ancestors as far as it can
see them (their command lines, descriptors, environments, directories), what lies around it
(its tree, the tree's parent, /tmp, its home, /) and its tree's `.git`. `differences` masks
only what is random per run (numbers: pids, inodes, mount ids, times) and what the holdout's
runs need of their own (its files' mounts), and names every key on which two runs differ.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SCRIPT = r"""#!/usr/bin/env python3
import json, os, stat, sys

def fds(pid):
    try:
        names = sorted(os.listdir(f"/proc/{pid}/fd"), key=int)
    except OSError as e:
        return "!" + e.strerror
    out = {}
    for fd in names:
        try:
            out[fd] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError as e:
            out[fd] = "!" + e.strerror
    return out

def read(path):
    try:
        with open(path, "rb") as h:
            return h.read(65536).decode("utf-8", "replace")
    except OSError as e:
        return "!" + e.strerror

def kind(fd):
    try:
        return stat.filemode(os.fstat(fd).st_mode)[0]
    except OSError as e:
        return "!" + e.strerror

def listing(d):
    try:
        return sorted(os.listdir(d))
    except OSError as e:
        return "!" + e.strerror

def link(path):
    try:
        return os.readlink(path)
    except OSError as e:
        return "!" + e.strerror

def ancestors():
    chain, pid = [], os.getppid()
    while pid >= 1 and len(chain) < 12:  # up to the first process it can see, pid 1
        chain.append({
            "cmdline": read(f"/proc/{pid}/cmdline").replace("\0", " "),
            "fds": fds(pid),
            "environ": sorted(read(f"/proc/{pid}/environ").split("\0")),
            "cwd": link(f"/proc/{pid}/cwd"),
        })
        status = read(f"/proc/{pid}/status").splitlines()
        ppid = [line for line in status if line.startswith("PPid:")]
        pid = int(ppid[0].split()[1]) if ppid else 0
    return chain

KEEP = ("Seccomp", "NoNewPrivs", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
        "Cpus_allowed_list", "Mems_allowed_list")
status = [line.split(":", 1) for line in read("/proc/self/status").splitlines() if ":" in line]
observed = {
    "argv": sys.argv,
    "cwd": os.getcwd(),
    "env": dict(os.environ),
    "ids": [os.getuid(), os.geteuid(), os.getgid(), sorted(os.getgroups())],
    "fds": fds("self"),
    "streams": [kind(0), kind(1), kind(2)],
    "mountinfo": read("/proc/self/mountinfo").splitlines(),
    "cgroup": read("/proc/self/cgroup"),
    "limits": read("/proc/self/limits"),
    "status": {k: v.strip() for k, v in status if k in KEEP},
    "ns": {n: link(f"/proc/self/ns/{n}") for n in sorted(os.listdir("/proc/self/ns"))},
    "ancestors": ancestors(),
    "around": {d: listing(d) for d in (".", "..", "/tmp", os.path.expanduser("~"), "/")},
    "dotgit": read(".git"),
    "hostname": os.uname().nodename,
}
print("OBSERVED " + json.dumps(observed, sort_keys=True), file=sys.stderr, flush=True)
# A run of the candidate's arm is faster (a file only the patch adds); what it prints on its
# standard output is the same in both arms (the equivalence run compares it).
value = 90 if os.path.exists("src/faster") else 100
line = f"METRIC time_ms={value}\nMETRIC sentinel_ms=50\n"
channel = os.environ.get("AUTORESEARCH_METRIC_FD")
if channel:
    os.write(int(channel), line.encode())
print("the same output in both arms")
"""

OBSERVED = "OBSERVED "


def observations(logs: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every observation in a session's logs, each labelled by its run's log (what phase and
    arm it was, which the run itself must not be able to tell)."""
    found = []
    for path in sorted(logs.rglob("*")):
        if not path.is_file():
            continue
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith(OBSERVED):
                label = f"{path.parent.name}/{path.name}"
                found.append((label, json.loads(line[len(OBSERVED) :])))
    return found


def _flat(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for name, inner in value.items():
            yield from _flat(inner, f"{key}/{name}")
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _flat(inner, f"{key}[{i}]")
    else:
        yield key, str(value)


def _masked(observed: dict[str, Any], own: list[str]) -> dict[str, str]:
    """The observation flat, with what is random per run masked (every run of digits: pids,
    inodes, mount ids, device numbers, times) and the holdout's own mounts left out (`own`:
    its files' paths, shown to its runs alone). Mounts are keyed by where they are mounted."""
    mounts: dict[str, list[str]] = {}
    for line in observed.get("mountinfo", []):
        fields = line.split(" ")
        if not any(fields[4].startswith(path) for path in own):
            mounts.setdefault(fields[4], []).append(" ".join([fields[3], *fields[5:]]))
    observed = {**observed, "mountinfo": mounts}
    return {key: re.sub(r"\d+", "#", value) for key, value in _flat(observed)}


def differences(found: list[tuple[str, dict[str, Any]]], own: list[str]) -> list[str]:
    """Each key on which two runs' worlds differ, with the runs on each side: none when no
    run can tell what it is from what it can observe."""
    masked = [(label, _masked(observed, own)) for label, observed in found]
    keys = sorted({key for _, flat in masked for key in flat})
    said = []
    for key in keys:
        sides: dict[str, list[str]] = {}
        for label, flat in masked:
            sides.setdefault(flat.get(key, "<absent>"), []).append(label)
        if len(sides) > 1:
            shown = "; ".join(
                f"{value[:120]!r} in {', '.join(labels[:4])}" for value, labels in sides.items()
            )
            said.append(f"{key}: {shown}")
    return said
