"""A synthetic target: a real git repository whose bench the tests steer through its own files.

src/value.txt    the primary metric (time_ms); a patch that lowers it is a true win
src/sentinel.txt the sentinel metric (sentinel_ms)
src/mode.txt     ok | crash | hang | garbage | nometric | slow | writes | tamper-<what>[@stage] |
                 memo | cachememo (in MEMO_CACHE or XDG_CACHE_HOME) | peek | daemon-<how> |
                 echo (prints src/output.txt) | loud (BENCH_LOUD_MB of output)
BENCH_SLEEP_S and BUILD_SLEEP_S make every bench run or build take that long.
BENCH_STARTED names a file a run writes its pid to (with BENCH_STARTED_VALUE, only a run at that
src/value.txt: a candidate's, not the calibration's).
BENCH_SPANS names a file each run appends "<the directory holding its tree> <start> <end>" to.
BENCH_SENTINEL_NOISE_PCT sets the sentinel's own noise (default: BENCH_NOISE_PCT).
BENCH_COST (a Python expression over the `name = value` lines of src/knobs.txt and `value`,
src/value.txt's number) gives time_ms.
BENCH_FAIL_TREE=baseline makes the baseline worktree's runs fail after BENCH_FAIL_AFTER of them.
BENCH_FAIL_VALUE=80 makes the baseline worktree's runs at that src/value.txt fail, the first
BENCH_FAIL_TIMES of them (counted in BENCH_FAIL_COUNTER), or all: a best that is flaky once kept.
The bench adds gaussian noise of BENCH_NOISE_PCT percent (default 0), or multiplies by the
factors in BENCH_FACTORS in turn (counted in the file BENCH_COUNTER); BENCH_SENTINEL_SPREAD
swings the sentinel alone up and down by up to that fraction, the same way for the same run
number (counted in BENCH_SENTINEL_COUNTER): too noisy to be shown inside its budget.
BENCH_FASTEST=1 also prints time_min_ms, src/value.txt's number untouched by BENCH_FACTORS: the
fastest round of a harness that reports one beside the median.
`bench.py --sentinels` prints the sentinel alone, without the sleep or the spread: the
bench.sentinel_command of a target whose sentinel the rest of the bench disturbs.
The checks fail when src/broken.txt exists, and sleep when src/checks_sleep.txt exists.
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

# Which arm a tree is, for the scripts below (each reads files with read_file).
ROLE = r"""def role(root):
    # Which arm this tree is: its name says nothing (autoresearch/repo/arms.py); unconfined,
    # the state directory's arms.json does (confined, a run cannot read it).
    import json
    try:
        names = json.loads(read_file(os.path.join(os.path.dirname(root), "arms.json")))
    except (OSError, ValueError):
        return os.path.basename(root)
    found = [r for r, name in names.items() if name == os.path.basename(root)]
    return found[0] if found else os.path.basename(root)
"""

BENCH = r"""#!/usr/bin/env python3
# os alone, no pathlib, subprocess, json or random (imported where a mode needs them): they
# were most of a run's start-up, and the suite starts this script thousands of times.
import os, sys, time


# Run as a script, or called in-process (tests/inprocess.py): its inputs and outputs are
# the arguments, never the process's own.
def main(argv, environ, out, err):
    root = os.path.dirname(os.path.realpath(__file__))
    src = os.path.join(root, "src")
    def read_file(path):
        with open(path) as handle:
            return handle.read()
    #ROLE
    tree = lambda: role(root)  # read where a mode asks: arms.json wants json
    def read(name, default):
        path = os.path.join(src, name)
        return read_file(path).strip() if os.path.exists(path) else default
    def write(path, text):
        with open(path, "w") as handle:
            handle.write(text)
    def count_run(counter):  # how many runs before this one, counted in a file
        count = int(read_file(counter)) if os.path.exists(counter) else 0
        write(counter, str(count + 1))
        return count

    mode = read("mode.txt", "ok")
    sentinels_only = argv == ["--sentinels"]
    value = float(read("value.txt", "100"))
    built = os.path.join(root, "out", "value.txt")
    if os.path.exists(built):  # what a build made of src/value.txt (tests/test_run_state.py)
        value = float(read_file(built))
    factors = {
        name[: -len(".txt")]: read(name, "").split()
        for name in os.listdir(src)
        if name.startswith("speedup-") and name.endswith(".txt")
    }
    # "0.7 !speedup-c": does what speedup-c did, and more: beside it, speedup-c's factor is moot.
    moot = {n[1:] for _, *needs in factors.values() for n in needs if n.startswith("!")}
    for stem, (factor, *needs) in sorted(factors.items()):  # wins that live file by file
        if stem in moot:
            continue
        # "0.8 speedup-a": a win only on top of speedup-a's; alone it slows the bench down.
        needs = [n for n in needs if not n.startswith("!")]
        alone = needs and float(factors.get(needs[0], ["1"])[0]) >= 1
        value *= 1.3 if alone else float(factor)
    # A defeat device: slow as the best's tree while a changed tree runs beside.
    if mode == "device":
        import subprocess
        head = subprocess.run(
            ["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout.strip()  # the best's tree is detached, the candidate's on the session branch
        try:
            mounts = read_file("/proc/self/mountinfo").splitlines()
        except OSError:
            mounts = []
        bound = [line.split()[3] for line in mounts if line.split()[4:5] == [root]]
        best = tree() == "baseline" or head == "HEAD" or any(b.endswith("/baseline") for b in bound)
        def sources(directory):
            folder = os.path.join(directory, "src")
            return {n: read_file(os.path.join(folder, n)) for n in sorted(os.listdir(folder))}
        beside = os.path.dirname(root)
        others = [
            os.path.join(beside, n) for n in os.listdir(beside) if n != os.path.basename(root)
        ]
        others = [o for o in others if os.path.isdir(os.path.join(o, "src"))]
        if best and any(sources(o) != sources(root) for o in others):
            value *= 1.5
    sentinel = float(read("sentinel.txt", "50"))
    noise = float(environ.get("BENCH_NOISE_PCT", "0")) / 100
    marker = environ.get("BENCH_STARTED")
    if marker and environ.get("BENCH_STARTED_VALUE", str(value)) in (str(value), f"{value:g}"):
        write(marker, str(os.getpid()))
    trace = environ.get("BENCH_TRACE")
    if trace:  # which tree ran: the baseline worktree or the candidate's
        with open(trace, "a") as handle:
            handle.write(tree() + "\n")
    if mode == "crash":
        print("bench: segmentation fault (simulated)", file=err)
        return 3
    fail_tree = environ.get("BENCH_FAIL_TREE")
    # "baseline": the best's own runs fail after BENCH_FAIL_AFTER runs
    if fail_tree and fail_tree == tree():
        if count_run(environ["BENCH_FAIL_COUNTER"]) >= int(environ.get("BENCH_FAIL_AFTER", "0")):
            print("bench: the machine hiccuped (simulated)", file=err)
            return 7
    fail_value = environ.get("BENCH_FAIL_VALUE")
    if fail_value and float(fail_value) == value and tree() == "baseline":
        times = environ.get("BENCH_FAIL_TIMES")
        if times is None or count_run(environ["BENCH_FAIL_COUNTER"]) < int(times):
            print("bench: the machine hiccuped (simulated)", file=err)
            return 7
    sleep = 0.0 if sentinels_only else float(environ.get("BENCH_SLEEP_S", "0"))
    started = time.time()
    if sleep:  # every run takes a while: phases long enough to be hit by a fault
        time.sleep(sleep)
    spans = environ.get("BENCH_SPANS")
    if spans:  # when this tree's host ran it: runs of one host must never overlap
        with open(spans, "a") as handle:
            handle.write(f"{os.path.dirname(root)} {started} {time.time()}\n")
    if mode.startswith("daemon-"):  # leave a process behind that escapes the group, noting its pid
        import subprocess
        how = mode.removeprefix("daemon-")
        argv = {
            "setsid": ["setsid", "sleep", "300"],
            "timeout": ["timeout", "1000", "sleep", "300"],
            "envi": ["env", "-i", "setsid", "/bin/sleep", "300"],
        }.get(how, ["sleep", "300"])
        child = subprocess.Popen(argv, cwd="/", start_new_session=how != "plain")
        pids = environ.get("BENCH_DAEMON_DIR")
        if pids:
            write(os.path.join(pids, str(child.pid)), how)
    if mode == "echo":  # print whatever src/output.txt holds: fuzzed bench output
        with open(os.path.join(src, "output.txt"), "rb") as handle:
            out.buffer.write(handle.read())
        return 0
    if mode == "hang":
        import subprocess
        child = subprocess.Popen(["sleep", "600"])
        write(environ.get("BENCH_CHILD_PID", os.path.join(root, "child.pid")), str(child.pid))
        time.sleep(600)
    if mode == "slow":
        time.sleep(float(environ.get("BENCH_SLOW_S", "30")))
    if mode == "loud":  # megabytes of output before its numbers
        line = "x" * 1023 + "\n"
        out.write(line * (1024 * int(environ.get("BENCH_LOUD_MB", "3"))))
    if mode == "garbage":
        print("METRIC time_ms=fast", file=out)
        return 0
    if mode == "nometric":
        print("all good, no numbers today", file=out)
        return 0
    if mode == "writes":  # untracked output: not a change, and never committed
        write(os.path.join(src, "cache.bin"), "build output")
        os.makedirs(os.path.join(root, "out"), exist_ok=True)
        write(os.path.join(root, "out", "result.txt"), "more output")
    if mode.startswith("tamper-"):  # a candidate that reaches outside its own patch (reach.py)
        from pathlib import Path
        sys.path.insert(0, root)
        sys.dont_write_bytecode = True  # no __pycache__ in the tree
        import reach
        reach.from_stage("bench", Path(root), mode)
    if mode in ("memo", "cachememo"):  # slow the first time, fast once it finds what it left
        memo = os.path.join(src, "memo.txt")
        if mode == "cachememo":  # in its arm's cache instead, or one a toolchain writes as it runs
            cache = environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
            memo = os.path.join(environ.get("MEMO_CACHE", cache), "memo.txt")
        if os.path.exists(memo):
            value *= 0.2
        else:
            write(memo, "seen")
    # Overfitting (tests/test_holdout.py): fast only for the inputs the bench uses (BENCH_SEED,
    # "bench" unless a holdout sets another), or for any input once it read the holdout's file.
    if read("fast_for.txt", None) == environ.get("BENCH_SEED", "bench"):
        value *= 0.5
    if mode == "peek":
        try:
            value *= 0.2 if "secret" in read_file(environ["BENCH_PEEK"]) else 1
        except OSError:
            pass
    override = read("override.txt", None)  # untracked: what a tampering candidate writes
    if override is not None:
        value = float(override)
    def gauss(sigma):  # no noise asked, no random imported
        if not sigma:
            return 0.0
        import random
        return random.gauss(0, sigma)
    factor = 1 + gauss(noise)
    factors = environ.get("BENCH_FACTORS")
    if factors:  # a fixed sequence of noise factors, one per run, for exact expectations
        count = count_run(environ["BENCH_COUNTER"])
        factor = [float(f) for f in factors.split(",")][count % len(factors.split(","))]
    cost = environ.get("BENCH_COST")
    knobs_file = os.path.join(src, "knobs.txt")
    # time_ms as a function of the knobs: `name = value` lines.
    if cost and os.path.exists(knobs_file):
        knobs = {}
        for line in read("knobs.txt", "").splitlines():
            name, _, number = line.partition("=")
            knobs[name.strip()] = float(number)
        value = eval(cost, {}, {"value": value, **knobs})
    print("bench: running workload", file=out)
    if not sentinels_only:
        print(f"METRIC time_ms={value * factor:.6f}", file=out)
        if environ.get("BENCH_FASTEST"):  # the fastest round, out of the factors' reach
            print(f"METRIC time_min_ms={value:.6f}", file=out)
    sentinel_noise = float(environ.get("BENCH_SENTINEL_NOISE_PCT", noise * 100)) / 100
    sentinel_factor = 1 + gauss(sentinel_noise)
    spread = environ.get("BENCH_SENTINEL_SPREAD")
    if spread and not sentinels_only:  # the sentinel alone swings by up to +-spread, run by run
        count = count_run(environ["BENCH_SENTINEL_COUNTER"])
        import random
        sentinel_factor = 1 + random.Random(count).uniform(-float(spread), float(spread))
    print(f"METRIC sentinel_ms={sentinel * sentinel_factor:.6f}", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], os.environ, sys.stdout, sys.stderr))
"""

REACH = r"""#!/usr/bin/env python3
# What a tampering candidate does (src/mode.txt "tamper-<what>", or "tamper-<what>@<stage>" to
# reach from the build or the checks instead of the bench); an agent calls reach() itself.
import subprocess
from pathlib import Path


def from_stage(stage, root, mode):
    what, _, where = mode.removeprefix("tamper-").partition("@")
    if (where or "bench") == stage:
        found = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
            cwd=root, capture_output=True, text=True,
        )
        common = Path(found.stdout.strip()) if found.stdout.strip() else None
        if common is None and what in NEEDS_REPOSITORY:  # confined: out of sight
            raise SystemExit(f"reach: no repository in sight ({found.stderr.strip()})")
        reach(what, root, common, arm(root, "baseline"))


# The reaches that go through the repository or your checkout: a run that does not see the
# repository has nothing to reach with them.
NEEDS_REPOSITORY = {
    "gitdir", "checkout", "hook", "fsmonitor", "hookspath", "email", "exclude", "branch",
    "untracked", "stash", "replace", "journal-forge", "journal-edit", "journal-wipe",
    "other-session",
}


def arm(root, role):
    # The tree of the arm `role` beside `root` (its name in arms.json, when there is one).
    import json
    try:
        return root.parent / json.loads((root.parent / "arms.json").read_text())[role]
    except (OSError, ValueError, KeyError):
        return root.parent / role


def reach(what, root, common, baseline):
    # root: the tree it runs in; common: the repository's git directory; baseline: the tree
    # the best is measured in.
    git = lambda *a: subprocess.run(["git", *a], cwd=root, capture_output=True, text=True)
    checkout = common.parent if common is not None else None
    mine = lambda *a: subprocess.run(["git", "-C", str(checkout), *a], capture_output=True)
    if what == "baseline":  # make the baseline slow: the candidate would "win"
        (baseline / "src" / "value.txt").write_text("1000\n")
    elif what == "bench-restored":  # rewrite its bench script, then put its bytes back
        script = root / "bench.py"
        was = script.read_bytes()
        script.write_bytes(was + b"# rewritten while it ran\n")
        script.write_bytes(was)
    elif what == "environ":  # print what it was given: the log and the journal's tail keep it
        import os
        print("".join(f"{k}={v}\n" for k, v in sorted(os.environ.items())))
    elif what == "attributes":  # select a filter and a diff driver your git config defines
        (root / ".gitattributes").write_text("* filter=evil diff=evil\n")
    elif what == "bench":  # edit its own bench script at run time
        with open(root / "bench.py", "a") as handle:
            handle.write("# edited at run time\n")
    elif what == "readme":  # a tracked file of its own tree, outside the patch
        (root / "README").write_text("clobbered by the bench")
    elif what == "commit":
        git("-c", "user.name=x", "-c", "user.email=x@y", "commit", "-qam", "sneaky")
    elif what == "gitdir":  # its tree's .git pointed at your repository: the loop's git follows
        (root / ".git").write_text(f"gitdir: {common}\n")
    elif what == "fifo":  # its patched file made a FIFO: a plain read of it waits forever
        import os
        (root / "src" / "value.txt").unlink()
        os.mkfifo(root / "src" / "value.txt")
    elif what == "nest":  # its own tree's src/nested made a repository: git add skips it
        subprocess.run(["git", "init", "-q", str(root / "src" / "nested")], check=True)
    elif what == "checkout":
        (checkout / "README").write_text("written into your checkout")
    elif what == "stage":  # stage a change to another file, the working tree untouched
        blob = subprocess.run(
            ["git", "hash-object", "-w", "--stdin"], cwd=root, input="smuggled\n",
            capture_output=True, text=True,
        ).stdout.strip()
        git("update-index", "--cacheinfo", f"100644,{blob},README")
    elif what == "baseline-late":  # into a directory the best gained after the night began
        (baseline / "src" / "late" / "deeper" / "planted.txt").write_text("x\n")
    elif what == "baseline-untracked":  # a file the baseline's bench reads: the best slows
        (baseline / "src" / "override.txt").write_text("200\n")
    elif what == "hook":
        (common / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    elif what == "fsmonitor":
        mine("config", "core.fsmonitor", f"touch {checkout / 'fsmonitor-ran'}")
    elif what == "hookspath":
        mine("config", "core.hooksPath", "/tmp/elsewhere")
    elif what == "email":
        mine("config", "user.email", "someone@else")
    elif what == "exclude":
        with open(common / "info" / "exclude", "a") as handle:
            handle.write("*.secret\n")
    elif what == "branch":
        mine("checkout", "-q", "-b", "elsewhere")
    elif what == "untracked":
        (checkout / "dropped.txt").write_text("left in your checkout")
    elif what == "stash":
        mine("stash", "-q")
    elif what == "replace":
        mine("replace", "-f", "HEAD", "HEAD")
    elif what == "journal-forge":
        with open(checkout / "experiments.jsonl", "a") as handle:
            handle.write('{"kind": "experiment", "status": "keep", "kept_commit": "f00d"}\n')
    elif what == "journal-edit":  # an earlier record's verdict, the same length, far back
        journal = checkout / "experiments.jsonl"
        data = journal.read_bytes()
        # '"status": "discard"' -> '"status":    "keep"': valid JSON, the same length.
        forged = data.replace(b'"status": "discard"', b'"status":    "keep"', 1)
        assert len(forged) == len(data) and forged != data
        journal.write_bytes(forged)
    elif what == "journal-wipe":
        (checkout / "experiments.jsonl").write_text("")
    elif what == "other-session":  # not a reach: what another session running beside does
        import json
        journal = checkout / "experiments.jsonl"
        first = json.loads(journal.read_text().splitlines()[0])
        with open(journal, "a") as handle:
            handle.write(json.dumps({**first, "session": "other"}) + "\n")
        mine("branch", "-f", "autoresearch/other", "HEAD")
"""

CHECKS = r"""#!/usr/bin/env python3
import os, sys, time
from pathlib import Path


def main(argv, environ, out, err):  # as the bench's
    root = Path(__file__).resolve().parent
    #REACH checks
    marker = environ.get("CHECKS_STARTED")
    if marker:
        Path(marker).write_text(str(os.getpid()))
    sleep = root / "src" / "checks_sleep.txt"
    if sleep.exists():
        time.sleep(float(sleep.read_text()))
    if (root / "src" / "broken.txt").exists():
        print("checks: the code is broken (src/broken.txt)", file=err)
        return 1
    print("checks: ok", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], os.environ, sys.stdout, sys.stderr))
"""

BUILD = r"""#!/usr/bin/env python3
import os, sys, time
from pathlib import Path


def main(argv, environ, out, err):  # as the bench's
    root = Path(__file__).resolve().parent
    #REACH build
    log = environ.get("BUILD_LOG")
    if log:
        def read_file(path):
            return Path(path).read_text()
        #ROLE
        with open(log, "a") as handle:
            handle.write(role(str(root)) + "\n")
    time.sleep(float(environ.get("BUILD_SLEEP_S", "0")))
    if mode == "nobuild":
        print("build: compile error (simulated)", file=err)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], os.environ, sys.stdout, sys.stderr))
"""


def _indent(code: str, by: str = "    ") -> str:
    return "".join(by + line if line.strip() else line for line in code.splitlines(True))


# How the build and the checks reach, when src/mode.txt asks them to (reach.py).
REACH_HOOK = """\
mode_file = root / "src" / "mode.txt"
mode = mode_file.read_text().strip() if mode_file.exists() else "ok"
if mode.startswith("tamper-"):  # a candidate that reaches from its {stage} (reach.py)
    sys.path.insert(0, str(root))
    sys.dont_write_bytecode = True  # no __pycache__ in the tree
    import reach
    reach.from_stage("{stage}", root, mode)
"""
BENCH = BENCH.replace("    #ROLE\n", _indent(ROLE))
BUILD = BUILD.replace("        #ROLE\n", _indent(ROLE, "        "))
CHECKS = CHECKS.replace("    #REACH checks\n", _indent(REACH_HOOK.format(stage="checks")))
BUILD = BUILD.replace("    #REACH build\n", _indent(REACH_HOOK.format(stage="build")))

# The pytest config of the Python projects the tests make: the plugins installed for
# autoresearch's own tests, which those projects never use, off. Hypothesis's alone imports for
# a second and a half of CPU in every pytest their checks and listings start (2.4 s a run,
# 0.7 s without them).
PYTEST_INI = "[pytest]\naddopts = -p no:hypothesispytest -p no:anyio -p no:xdist\n"


CONFIG = """\
[session]
name = "t"
# Most tests count bench and checks runs from the first calibration on; tests/test_preflight.py
# turns the pre-flight on.
preflight = false

[bench]
command = "./bench.py"
build = "{build}"
timeout_s = {bench_timeout}
calibration_runs = {calibration_runs}
# The knobs the tests give the synthetic scripts through the environment.
pass_env = ["BENCH_*", "BUILD_*", "CHECKS_*"]

[checks]
command = "./checks.py"
timeout_s = 60
when = "{checks_when}"

[metric]
name = "time_ms"
direction = "lower"
unit = "ms"
fallback = "{fallback}"

[[sentinel]]
name = "sentinel_ms"
budget_pct = 5.0

[scope]
include = ["src/**"]
protect = ["src/protected.txt"]

[budget]
max_experiments = {max_experiments}
max_hours = 1.0
stop_after_no_keep = {stop_after_no_keep}

[decision]
min_effect_pct = 1.0
noise_multiplier = {noise_multiplier}
min_runs = {min_runs}
max_runs = {max_runs}
looks = {looks}
confirm = {confirm}
confirm_runs = 4

# The synthetic benches talk to their tests through files beside the repository (pids, spans,
# counters), and many of them misbehave on purpose to test the guard and process control:
# they run unconfined here; tests/test_sandbox.py turns confinement on.
[sandbox]
mode = "{sandbox}"

[proposer]
dir = "hypotheses"
"""


def git(cwd: Path, *args: str) -> str:
    # In a session of its own, as the loop's own git calls run.
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env=_git_env(),
        start_new_session=True,
    )
    return done.stdout


def _git_env() -> dict[str, str]:
    return {
        **os.environ,
        "GIT_AUTHOR_NAME": "test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
    }


def unified_patch(path: str, old: str, new: str) -> str:
    """A git-style unified diff turning `old` into `new` at `path`."""
    diff = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path}" if old else "/dev/null",
        tofile=f"b/{path}",
    )
    header = f"diff --git a/{path} b/{path}\n"
    if not old:
        header += "new file mode 100644\n"
    # A last line without its newline (a file that ends without one) is marked as git marks it.
    marked = (x if x.endswith("\n") else f"{x}\n\\ No newline at end of file\n" for x in diff)
    return header + "".join(marked)


class Target:
    """The synthetic target repository, its config, and its queue of hypotheses."""

    def __init__(self, root: Path):
        self.root = root
        self.queue = root / "hypotheses"
        self.config_path = root / "autoresearch.toml"
        self.journal = root / "experiments.jsonl"

    def file(self, rel: str) -> str:
        return (self.root / rel).read_text()

    def configure(self, **overrides) -> Path:
        values = {
            "bench_timeout": 30,
            "build": "",
            "calibration_runs": 4,
            "noise_multiplier": 3.0,
            "min_runs": 5,
            "max_runs": 8,
            "looks": 2,
            "confirm": "false",
            "checks_when": "keep",
            "max_experiments": 50,
            "stop_after_no_keep": 0,
            "sandbox": "off",
            "fallback": "",
            **overrides,
        }
        self.config_path.write_text(CONFIG.format(**values))
        return self.config_path

    def add_hypothesis(
        self, name: str, changes: dict[str, str], title: str | None = None, **asi: str
    ) -> Path:
        """Queue a patch that sets each file in `changes` to the given content."""
        patch = "".join(
            unified_patch(rel, self.file(rel) if (self.root / rel).exists() else "", new)
            for rel, new in changes.items()
        )
        header = [f"Title: {title or name}"]
        header += [f"{key.replace('_', '-').title()}: {value}" for key, value in asi.items()]
        path = self.queue / f"{name}.patch"
        path.write_text("\n".join(header) + "\n\n" + patch)
        return path

    def use_bench(self, name: str, script: str, message: str) -> None:
        """Measure with the committed script `name` instead of bench.py: a bench that times
        src/work.py, the candidate's workload (nothing at first)."""
        config = self.config_path.read_text()
        self.config_path.write_text(
            config.replace('command = "./bench.py"', f'command = "./{name}"')
        )
        (self.root / name).write_text(script)
        (self.root / name).chmod(0o755)
        (self.root / "src" / "work.py").write_text("pass\n")
        git(self.root, "add", "-A")
        git(self.root, "commit", "-qm", message)

    def load(self):
        from autoresearch.config import load_config

        return load_config(self.config_path)

    def branch_log(self, branch: str = "autoresearch/t") -> list[str]:
        return git(self.root, "log", "--format=%s", branch).splitlines()


def make_target(root: Path) -> Target:
    """A fresh synthetic target repository at `root`, committed on `main`."""
    (root / "src").mkdir(parents=True)
    (root / "hypotheses").mkdir()
    # The interpreter itself, not a version-manager shim: it starts three times faster, and
    # the suite starts these scripts hundreds of times.
    shebang = f"#!{sys.executable} -S"
    scripts = {"bench.py": BENCH, "checks.py": CHECKS, "build.py": BUILD, "reach.py": REACH}
    for name, text in scripts.items():
        (root / name).write_text(text.replace("#!/usr/bin/env python3", shebang, 1))
    for script in ("bench.py", "checks.py", "build.py"):
        os.chmod(root / script, 0o755)
    (root / "src" / "value.txt").write_text("100\n")
    (root / "src" / "sentinel.txt").write_text("50\n")
    (root / "src" / "mode.txt").write_text("ok\n")
    (root / "src" / "protected.txt").write_text("do not touch\n")
    (root / "README").write_text("synthetic target\n")
    (root / ".gitignore").write_text("experiments.jsonl\nhypotheses/\n")
    t = Target(root)
    t.configure()
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "synthetic target")
    return t
