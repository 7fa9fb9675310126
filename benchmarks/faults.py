#!/usr/bin/env python3
"""Fault injection: break a night every way we can think of, then check the loop's promises.

Each category injects its faults into real nights on the synthetic target (tests/synthetic.py:
a real git repository, real bench and checks processes), lets the loop resume as a user would,
and then checks the invariants:

- no record lost (every queued hypothesis has a record) or duplicated (ids unique);
- every commit on the session branch that carries an Experiment-Id has its keep record;
- both worktrees clean, the user's checkout as it was;
- no process the bench started is alive;
- no traceback: every failure is a status in a record or a one-line `error:`.

    python benchmarks/faults.py            # every category, full counts (a few minutes)
    python benchmarks/faults.py --quick    # fewer trials per category (what the tests run)
    python benchmarks/faults.py --only kill9 signals

Prints one row per category and exits 1 when any invariant failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from fault_classes import CLASS_CATEGORIES  # noqa: E402
from fault_hosts import HOST_CATEGORIES  # noqa: E402
from fault_night import Night, Tally, standard_queue  # noqa: E402
from fault_trust import TRUST_CATEGORIES  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from results import record  # noqa: E402
from synthetic import git, unified_patch  # noqa: E402

from autoresearch.bench.proc import TERM_GRACE_S  # noqa: E402
from autoresearch.journal.store import read_journal  # noqa: E402

# -- categories --------------------------------------------------------------------------------


def kill_at_random(tally: Tally, trials: int, sig: int, twice: bool = False) -> None:
    """Start a night, send `sig` at a random moment, resume; repeat until the night ends."""
    rng = random.Random(sig * 1000 + trials)
    phases: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        night = Night(Path(tmp), {"build": "./build.py"})
        standard_queue(night)
        env = {"BENCH_SLEEP_S": "0.03", "BUILD_SLEEP_S": "0.1"}
        for trial in range(trials):
            # Always more work queued, so that a fault lands in a night, not after its end.
            value = 90 - trial if trial % 2 else 110 + trial
            night.queue(f"{10 + trial:02d}-more", {"src/value.txt": f"{value}\n"})
            proc = night.spawn(env)
            time.sleep(rng.uniform(0.3, 4.0))
            phase = night.phase() or "between experiments"
            if proc.poll() is None:
                proc.send_signal(sig)
                if twice:
                    time.sleep(0.2)
                    proc.send_signal(sig)
            night.reap(proc, sent=sig)
            night.recover()
            phases[phase] = phases.get(phase, 0) + 1
            tally.add(night.check(finished=False), f"{signal.Signals(sig).name} in {phase}")
        night.finish(env)
        tally.add(night.check(), "the night finished after the faults")
    tally.notes.append("phases hit: " + ", ".join(f"{k} {v}" for k, v in sorted(phases.items())))


def disk_full(tally: Tally, trials: int) -> None:
    """The journal and the state directory on a small tmpfs that fills up during the night."""
    for i in range(trials):
        with tempfile.TemporaryDirectory() as tmp:
            mount = Path(tmp) / "small"
            mount.mkdir()
            size = 2048 * 1024
            done = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                capture_output=True,
            )
            if done.returncode != 0:
                tally.notes.append("disk full: no tmpfs can be mounted here; category not run")
                return
            try:
                night = Night(Path(tmp), {})
                text = night.target.config_path.read_text().replace(
                    'name = "t"',
                    f'name = "t"\njournal = "{mount}/experiments.jsonl"\n'
                    f'state_dir = "{mount}/state"',
                )
                night.target.config_path.write_text(text)
                night.commit("state on the small disk")
                night.target.journal = mount / "experiments.jsonl"
                standard_queue(night)
                # Leave a different amount free each time, so the disk fills at another step.
                free = 200 * 1024 + i * 173 * 1024
                (mount / "filler").write_bytes(b"\0" * (size - free))
                code = night.cli("run", "--quiet")
                full = code == 1
                (mount / "filler").unlink()
                night.finish()
                tally.add(night.check(), f"{free // 1024} KiB free (ran out: {full})")
            finally:
                subprocess.run(["umount", "-l", str(mount)], check=False)


def runaway_benches(tally: Tally, trials: int) -> None:
    """Benches that hang past the timeout or leave daemons that escape their process group."""
    with tempfile.TemporaryDirectory() as tmp:
        night = Night(Path(tmp), {"bench_timeout": 2})
        modes = ["hang", "daemon-setsid", "daemon-timeout", "daemon-envi", "daemon-setm"]
        for i in range(trials):
            mode = modes[i % len(modes)]
            night.queue(f"{i:02d}-{mode}", {"src/mode.txt": f"{mode}\n", "src/value.txt": "90\n"})
        night.finish({"BENCH_CHILD_PID": str(Path(tmp) / "child.pid")})
        problems = night.check()
        held = night.held_runs(longest_s=2 + TERM_GRACE_S + 2)
        problems["processes_left"] += held
        left = f" (left: {'; '.join(night.left)})" if night.left else ""
        left += f" ({held} run(s) waited for a process that outlived the run)" if held else ""
        for i in range(trials):
            note = modes[i % len(modes)] + (left if i == 0 else "")
            tally.add(problems if i == 0 else dict.fromkeys(problems, 0), note)


def fuzzed_bench_output(tally: Tally, trials: int) -> None:
    """Whatever a bench may print: METRIC lines with odd values, control bytes, long lines."""
    names = st.sampled_from(["time_ms", "sentinel_ms", "x", "time_ms ", "METRIC", "a=b", ""])
    values = st.one_of(
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.sampled_from(["1.7e308", "-1e309", "0", "-5", "fast", "1_000", "0x10", "", "1e-320"]),
        st.integers().map(str),
    )
    line = st.one_of(
        st.builds(lambda n, v: f"METRIC {n}={v}", names, values),
        st.text(max_size=200),
        st.just("METRIC time_ms=80\nMETRIC time_ms=81"),
        st.just("x" * 20000),
    )
    outputs = st.lists(line, max_size=6).map("\n".join)
    drawn: list[str] = []

    @settings(
        max_examples=trials,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(outputs)
    def collect(text):
        drawn.append(text)

    collect()
    with tempfile.TemporaryDirectory() as tmp:
        night = Night(Path(tmp), {})
        for i, text in enumerate(drawn[:trials]):
            base = "METRIC time_ms=80\nMETRIC sentinel_ms=50\n" if i % 3 == 0 else ""
            output = (base + text).replace("\0", "")
            night.queue(f"{i:03d}-output", {"src/mode.txt": "echo\n", "src/output.txt": output})
        night.finish()
        problems = night.check()
        for i in range(len(drawn[:trials])):
            tally.add(problems if i == 0 else dict.fromkeys(problems, 0), "fuzzed output")


def hostile_patches(tally: Tally, trials: int) -> None:
    """Patches that try to write outside their scope, escape the repository, or are not diffs."""
    rng = random.Random(7)
    parts = ["..", ".git", "src", "hooks", "bench.py", "autoresearch.toml", "link", "é x", '"q"']
    contents = ["ok", "\0binary\0", "a\r\nb", "x" * 5000, "METRIC time_ms=1"]
    with tempfile.TemporaryDirectory() as tmp:
        night = Night(Path(tmp), {})
        os.symlink(Path(tmp), night.root / "src" / "link")
        git(night.root, "add", "-A")
        night.commit("a symlink in scope")
        outside = _tree_digest(Path(tmp), skip=night.root)
        valid = unified_patch("src/value.txt", "100\n", "80\n").encode()
        for i in range(trials):
            kind = i % 3
            if kind == 0:
                depth = rng.randint(1, 4)
                path = "/".join(rng.choice(parts) for _ in range(depth))
                if rng.random() < 0.2:
                    path = "/" + path
                body = rng.choice(contents)
                data = (
                    f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n"
                    f"+++ b/{path}\n@@ -0,0 +1 @@\n+{body}\n"
                ).encode()
            elif kind == 1:
                data = bytearray(valid)
                for _ in range(rng.randint(1, 8)):
                    data[rng.randrange(len(data))] = rng.randrange(256)
                data = bytes(data)
            else:
                data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 400)))
            night.queue_raw(f"{i:03d}-hostile", b"Title: hostile\n\n" + data)
        night.finish()
        problems = night.check()
        if _tree_digest(Path(tmp), skip=night.root) != outside:
            problems["dirty_trees"] += 1
        for record in read_journal(night.target.journal).experiments:
            if record.status == "keep" and any(
                not f.startswith("src/") or "link" in f for f in record.touched_files
            ):
                problems["dirty_trees"] += 1  # a keep outside the scope
        for i in range(trials):
            tally.add(problems if i == 0 else dict.fromkeys(problems, 0), "hostile patch")


def tampering(tally: Tally, trials: int) -> None:
    """Candidates that write into the baseline, edit the harness, commit, touch the checkout."""
    whats = ["baseline", "bench", "readme", "commit", "checkout"]
    with tempfile.TemporaryDirectory() as tmp:
        night = Night(Path(tmp), {})
        for i in range(trials):
            what = whats[i % len(whats)]
            # A different win each time: the same patch twice would be one hypothesis.
            changes = {"src/mode.txt": f"tamper-{what}\n", "src/value.txt": f"{70 - i}\n"}
            night.queue(f"{i:02d}-tamper-{what}", changes)
        night.finish()
        records = read_journal(night.target.journal).experiments
        # The checkout case writes into the user's checkout: the loop reports it (tampered)
        # but never touches that checkout, so its state is not an invariant here.
        night.checkout = night._checkout_state()
        problems = night.check()
        for record in records:
            ok = record.status == "tampered" and record.kept_commit is None
            problems_one = dict(problems) if record is records[0] else dict.fromkeys(problems, 0)
            problems_one["commits_unrecorded"] += 0 if ok else 1
            tally.add(problems_one, f"{record.title}: {record.status}")


def damaged_journals(tally: Tally, trials: int) -> None:
    """A night with keeps, then its journal damaged in every way we know, then resumed."""
    damages: list[tuple[str, Callable[[bytes, random.Random], bytes]]] = [
        ("emptied", lambda d, r: b""),
        ("deleted", lambda d, r: None),
        ("BOM", lambda d, r: b"\xef\xbb\xbf" + d),
        ("torn last line", lambda d, r: d[: len(d) - 40]),
        ("keep line damaged", lambda d, r: _damage_line(d, b'"status": "keep"')),
        (
            "wrong types",
            lambda d, r: d + b'{"schema_version": 1, "type": "experiment", "decision": 5}\n',
        ),
        ("duplicated", lambda d, r: d + d),
        ("binary garbage", lambda d, r: bytes(r.randrange(256) for _ in range(2000))),
        ("byte flips", _flip_bytes),
    ]
    rng = random.Random(11)
    for i in range(trials):
        name, damage = damages[i % len(damages)]
        with tempfile.TemporaryDirectory() as tmp:
            night = Night(Path(tmp), {})
            night.queue("01-win", {"src/value.txt": "80\n"})
            night.queue("02-win", {"src/sentinel.txt": "40\n", "src/value.txt": "100\n\n"})
            night.finish()
            base = read_journal(night.target.journal).sessions[0].base_commit
            data = night.target.journal.read_bytes()
            damaged = damage(data, rng)
            if damaged is None:
                night.target.journal.unlink()
            else:
                night.target.journal.write_bytes(damaged)
            night.queue("03-next", {"src/sentinel.txt": "49\n"})
            night.finish()
            for command in (["status"], ["report"], ["pr"], ["ideas"], ["plot", "--out", tmp]):
                night.cli(*command)
            problems = night.check(finished=False)
            sessions = read_journal(night.target.journal).sessions
            if name != "binary garbage" and sessions and sessions[0].base_commit != base:
                problems["records_lost"] += 1  # the session's baseline moved
            tally.add(problems, name)


WRONG_TYPES = b'{"schema_version": 1, "type": "experiment", "decision": 5}\n'


def _damage_line(data: bytes, needle: bytes) -> bytes:
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        if needle in line:
            lines[i] = line[: len(line) // 2]
            break
    return b"\n".join(lines)


def _flip_bytes(data: bytes, rng: random.Random) -> bytes:
    flipped = bytearray(data)
    for _ in range(20):
        flipped[rng.randrange(len(flipped))] = rng.randrange(256)
    return bytes(flipped)


def _tree_digest(root: Path, skip: Path) -> list[tuple[str, int]]:
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_relative_to(skip) or path.is_symlink():
            continue
        found.append((str(path.relative_to(root)), path.stat().st_size if path.is_file() else -1))
    return found


CATEGORIES: dict[str, tuple[str, Callable[[Tally, int], None], int, int]] = {
    # name: (label, run, full trials, quick trials)
    "kill9": (
        "kill -9 at random moments",
        lambda t, n: kill_at_random(t, n, signal.SIGKILL),
        24,
        5,
    ),
    "signals": (
        "SIGINT / SIGTERM / SIGHUP, once or twice",
        lambda t, n: [
            kill_at_random(t, max(1, n // 4), sig, twice)
            for sig, twice in (
                (signal.SIGINT, False),
                (signal.SIGTERM, False),
                (signal.SIGHUP, False),
                (signal.SIGINT, True),
            )
        ],
        24,
        4,
    ),
    "diskfull": ("disk full (a small tmpfs)", disk_full, 6, 2),
    "runaway": ("hung and daemonizing benches", runaway_benches, 10, 5),
    "output": ("fuzzed bench output", fuzzed_bench_output, 40, 8),
    "patches": ("hostile and fuzzed patches", hostile_patches, 60, 12),
    "tamper": ("tampering candidates", tampering, 10, 5),
    "journal": ("damaged journals", damaged_journals, 18, 9),
    **TRUST_CATEGORIES,
    **CLASS_CATEGORIES,
    **HOST_CATEGORIES,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer trials per category")
    parser.add_argument("--only", nargs="+", choices=list(CATEGORIES), help="these categories")
    parser.add_argument("--json", metavar="PATH", help="also write the tallies as JSON")
    args = parser.parse_args(argv)
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    tallies = []
    for name in args.only or list(CATEGORIES):
        label, run, full, quick = CATEGORIES[name]
        tally = Tally(label)
        started = time.monotonic()
        try:
            run(tally, quick if args.quick else full)
        except Exception:  # the suite's own failure: said, and the other categories still run
            tally.harness_error = traceback.format_exc(limit=8)
            print(f"{label}: the suite itself failed:\n{tally.harness_error}", file=sys.stderr)
        tally.notes.append(f"{time.monotonic() - started:.0f} s")
        tallies.append(tally)
        print(f"{label}: {tally.survived}/{tally.faults} survived", file=sys.stderr, flush=True)
    _print_table(tallies)
    if not args.quick and not args.only:  # what the docs show: every category, full counts
        record("faults", [_as_row(t) for t in tallies], notes="every category, full counts")
    if args.json:
        Path(args.json).write_text(json.dumps([vars(t) for t in tallies], indent=2))
    failed = any(t.survived != t.faults or t.faults == 0 or t.harness_error for t in tallies)
    return 1 if failed else 0


def _as_row(t: Tally) -> dict:
    name = f"{t.name} (incomplete: the suite itself failed)" if t.harness_error else t.name
    return {
        "condition": name,
        "faults": t.faults,
        "survived": t.survived,
        "records lost": t.records_lost,
        "duplicated": t.records_duplicated,
        "commits unrecorded": t.commits_unrecorded,
        "dirty trees": t.dirty_trees,
        "processes left": t.processes_left,
        "tracebacks": t.tracebacks,
    }


def _print_table(tallies: list[Tally]) -> None:
    print(
        "| category | faults | survived | records lost | duplicated | commits unrecorded "
        "| dirty trees | processes left | tracebacks |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t in tallies:
        name = f"{t.name} (incomplete: the suite itself failed)" if t.harness_error else t.name
        print(
            f"| {name} | {t.faults} | {t.survived} | {t.records_lost} | "
            f"{t.records_duplicated} | {t.commits_unrecorded} | {t.dirty_trees} | "
            f"{t.processes_left} | {t.tracebacks} |"
        )
    total = sum(t.faults for t in tallies)
    print(f"\n{sum(t.survived for t in tallies)} of {total} faults survived")
    for t in tallies:
        for note in t.notes:
            print(f"- {t.name}: {note}")


if __name__ == "__main__":
    sys.exit(main())
