"""The fault suite's category for the classes a hostile probe found last (see faults.py): the
user's own log in the checkout, a best whose bench fails once as it is calibrated again, a
change the keep could not commit, odd config values, a try's pid file naming another process.

Each class is a night of its own, judged on the night's invariants (fault_night.py) and on its
own promise: the real win is kept, the poison is a record of its own and never a stop, every
answer is a record or one `error:` line.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from fault_night import Night, Tally
from synthetic import git

from autoresearch.journal.store import read_journal
from autoresearch.loop.session import session_paths

__all__ = ["CLASS_CATEGORIES"]


def _statuses(night: Night) -> list[str]:
    return [r.status for r in read_journal(night.target.journal).experiments]


def _own_log(night: Night, tmp: Path) -> bool:
    """`autoresearch run > night.log 2>&1` from the checkout's top, the log not ignored."""
    night.queue("01-win", {"src/value.txt": "80\n"})
    command = f"{shlex.quote(sys.executable)} -m autoresearch.cli run --quiet > night.log 2>&1"
    done = subprocess.run(["bash", "-c", command], cwd=night.root, env=night.env(), timeout=300)
    night.stderr.append((night.root / "night.log").read_text(errors="replace"))
    return done.returncode == 0 and _statuses(night) == ["keep"]


def _flaky_recalibration(night: Night, tmp: Path) -> bool:
    """The new best's bench fails once as it is calibrated after a keep."""
    night.queue("01-win", {"src/value.txt": "80\n"})
    night.queue("02-win", {"src/speedup-b.txt": "0.8\n"})
    env = {"BENCH_FAIL_VALUE": "80", "BENCH_FAIL_TIMES": "1"}
    env["BENCH_FAIL_COUNTER"] = str(tmp / "fail-count")
    code = night.cli("run", "--quiet", env=env)
    return code == 0 and _statuses(night) == ["keep", "keep"]


def _gitlink(night: Night, tmp: Path) -> bool:
    """A gitlink beside a real win, then another win: refused unmeasured, the night goes on."""
    tip = git(night.root, "rev-parse", "HEAD").strip()
    link = (
        "Title: a gitlink\n\ndiff --git a/src/sub b/src/sub\nnew file mode 160000\n"
        f"index 0000000..{tip}\n--- /dev/null\n+++ b/src/sub\n@@ -0,0 +1 @@\n"
        f"+Subproject commit {tip}\n"
    )
    night.queue_raw("01-gitlink", link.encode())
    night.queue("02-win", {"src/value.txt": "80\n"})
    first = night.cli("run", "--quiet")
    again = night.cli("run", "--quiet")
    return (first, again) == (0, 0) and _statuses(night) == ["scope_violation", "keep"]


def _uncommittable(night: Night, tmp: Path) -> bool:
    """The candidate's build makes a repository of the directory its patch adds a file to
    (what its bench runs leave is undone after each run; its build's output stays)."""
    config = night.target.config_path
    config.write_text(config.read_text().replace('build = ""', 'build = "./build.py"', 1))
    night.commit("a build")
    night.queue(
        "01-nest",
        {"src/nested/a.txt": "x\n", "src/value.txt": "80\n", "src/mode.txt": "tamper-nest@build\n"},
    )
    night.queue("02-win", {"src/speedup-b.txt": "0.8\n"})
    first = night.cli("run", "--quiet")
    again = night.cli("run", "--quiet")
    return (first, again) == (0, 0) and _statuses(night) == ["apply_failed", "keep"]


ODD_VALUES = [
    '[target]\nbase = "main\\u0000"\n',
    '[bench]\ncommand = "./bench.py\\u0000"\n',
    '[bench]\nenv = { "A=B" = "1" }\n',
    "[decision]\ntarget_effect_pct = 1e308\n",
    "[decision]\nbudget_s = 1e308\n",
    "[decision]\nlooks = 4611686018427387904\n",
]


def _odd_config(night: Night, tmp: Path) -> bool:
    """Each odd value: one `error:` line naming its key, from `check` and `run` alike."""
    config = night.target.config_path
    original = config.read_text()
    held = True
    for text in ODD_VALUES:
        key = text.split("\n")[1].split(" = ")[0].strip()
        config.write_text(_merge(original, text))
        for command in (["check"], ["run", "--quiet"]):
            done = _captured(night, *command)
            lines = done.stderr.strip().splitlines()
            held &= done.returncode == 1 and len(lines) == 1 and key in lines[0]
    config.write_text(original)
    return held and not night.target.journal.exists()


def _captured(night: Night, *args: str) -> subprocess.CompletedProcess:
    """The CLI's answer, its stderr judged with the night's (no traceback)."""
    done = night.captured(*args, timeout=120)
    night.stderr.append(done.stderr)
    return done


def _merge(config: str, table: str) -> str:
    """`config` with the key of `table` ([section] then key = value) set there."""
    section, line = table.strip().split("\n")
    key = line.split(" = ")[0]
    lines = config.splitlines()
    if section not in lines:
        return config + "\n" + table
    start = lines.index(section) + 1
    kept = [x for x in lines[start:] if not x.startswith(f"{key} = ")]
    return "\n".join([*lines[:start], line, *kept]) + "\n"


def _reused_pid(night: Night, tmp: Path) -> bool:
    """A try's pid file naming init (pid 1, no start time): the try ended, not running."""
    night.cli("status")
    tries = session_paths(night.target.load()).root / "tries"
    tries.mkdir(parents=True, exist_ok=True)
    (tries / "try-20260101T000000.log").write_text("try: the last line it printed\n")
    (tries / "try-20260101T000000.pid").write_text("1")
    done = _captured(night, "result", "try-20260101T000000")
    return json.loads(done.stdout or "{}").get("status") == "error"


CLASSES: list[tuple[str, Callable[[Night, Path], bool]]] = [
    ("the loop's own log in the checkout", _own_log),
    ("a best that fails once in its recalibration", _flaky_recalibration),
    ("a gitlink beside a win", _gitlink),
    ("a change its run made uncommittable", _uncommittable),
    ("odd config values", _odd_config),
    ("a try's pid reused by init", _reused_pid),
]


def last_classes(tally: Tally, trials: int) -> None:
    """Each class in a night of its own, `trials` classes in all (cycling)."""
    for i in range(trials):
        label, run = CLASSES[i % len(CLASSES)]
        with tempfile.TemporaryDirectory() as tmp:
            night = Night(Path(tmp), {"min_runs": 3, "max_runs": 3, "looks": 1})
            held = run(night, Path(tmp))
            problems = night.check(finished=False)
            problems["records_lost"] += 0 if held else 1
            tally.add(problems, label)


CLASS_CATEGORIES: dict[str, tuple[str, Callable[[Tally, int], None], int, int]] = {
    "classes": (
        "the last fault classes (log, recalibration, gitlink, config, pid)",
        last_classes,
        12,
        6,
    ),
}
