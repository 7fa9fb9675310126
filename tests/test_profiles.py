"""Where the time goes: profiles of the best read as folded stacks (Go's pprof, perf, folded),
taken after each calibration off the timed runs, shown to the agent and in `state`, and each
keep's differential profile in the review."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from conftest import experiments, git, run, run_cli

from autoresearch.bench.bwrap import bwrap_problem
from autoresearch.bench.measure import Harness
from autoresearch.bench.profiling import take_profile
from autoresearch.profiles import (
    fold,
    load_profile,
    profile_change,
    profile_lines,
    save_profile,
    short_frame,
    top_frames,
)

FIXTURES = Path(__file__).parent / "fixtures" / "profiles"


def test_go_s_pprof_traces_fold_into_stacks_that_name_the_read_before_the_write():
    """A real CPU profile of the bundled target's bench (go tool pprof -traces): the read
    before each write (`(*grantWriter).previous`, Pebble's `Get`) among its top frames, the
    root first, `(inline)` marks gone, every sample's time counted once."""
    text = (FIXTURES / "grantbench-pprof-traces.txt").read_text()
    folded = fold(text, "pprof")
    frames = {t["frame"]: t for t in top_frames(folded, 200)}
    previous = frames["grantstore/grantstore.(*grantWriter).previous"]
    assert previous["total_pct"] > 5 and previous["self_pct"] == 0
    assert "github.com/cockroachdb/pebble/v2.(*DB).Get" in frames
    assert all(stack.startswith("runtime.") or ";" in stack for stack in folded)
    assert not any("(inline)" in stack for stack in folded)
    weights = re.findall(r"^\s+(\d+)ms\s+\S", text, flags=re.M)  # labels before some
    assert sum(folded.values()) == sum(int(w) for w in weights) > 0  # in milliseconds


def test_go_s_pprof_lines_name_each_function_once_with_its_costliest_line():
    """`go tool pprof -traces -lines` (a real profile of the bundled target): a function's
    samples at several lines are one frame, its file relative to the tree that ran and the
    line that costs it the most beside it; files outside the tree by their last two parts."""
    text = (FIXTURES / "grantbench-pprof-traces-lines.txt").read_text()
    folded = fold(text, "pprof", ("/work/main/targets/pebble",))
    frames = {t["frame"]: t for t in top_frames(folded, 500)}
    previous = frames["grantstore/grantstore.(*grantWriter).previous (grantstore/grant_writer.go)"]
    assert previous["total_pct"] > 5
    assert re.fullmatch(r"grantstore/grant_writer\.go:\d+", previous["line"])
    assert not [f for f in frames if "previous" in f and f != previous["frame"]]
    assert not any("/work/main" in stack for stack in folded)
    assert "runtime.main (…/runtime/proc.go)" in frames  # outside the tree
    assert short_frame(previous["frame"]) == "grantstore.(*grantWriter).previous (grant_writer.go)"


def test_py_spy_s_raw_stacks_name_the_tree_s_files_and_lines():
    """py-spy's `--format raw --full-filenames`, a real profile: the tree's own functions by
    their path in it, with their costliest line; the interpreter's by their last two parts."""
    text = (FIXTURES / "pyspy-raw-full-filenames.folded").read_text()
    folded = fold(text, "folded", ("/tmp/pyproj",))
    frames = {t["frame"]: t for t in top_frames(folded, 100)}
    square = frames["square_sum (pkg/work.py)"]
    assert square["self_pct"] > 20 and square["line"] in {"pkg/work.py:10", "pkg/work.py:11"}
    assert frames["main (pkg/work.py)"]["total_pct"] > 90  # every line of main, one frame
    assert "dumps (…/json/__init__.py)" in frames  # outside the tree
    lines = profile_lines({"commit": "c" * 40, "samples": 1, "top": list(frames.values())})
    assert any(line.endswith("square_sum (work.py)  at " + square["line"]) for line in lines)


def test_a_long_name_is_cut_and_its_file_still_named_in_the_tree():
    name = "pkg.(*Engine).Put" + "[go.shape.struct{}]" * 12
    text = f"-----------+-----\n      10ms   {name} /repo/tree/pkg/engine.go:12\n"
    (stack,) = fold(text, "pprof", ("/repo/tree",))
    assert stack.endswith(" (pkg/engine.go:12)") and len(stack) < len(name)


def test_a_recursive_function_counts_each_sample_once():
    text = "main (m.py:1);fib (f.py:3);fib (f.py:4);fib (f.py:3) 10\nmain (m.py:1);fib (f.py:3) 5\n"
    (fib,) = [t for t in top_frames(fold(text, "folded")) if t["frame"] == "fib (f.py)"]
    assert (fib["total_pct"], fib["self_pct"], fib["line"]) == (100.0, 100.0, "f.py:3")


def test_perf_script_folds_with_the_command_as_the_root():
    folded = fold((FIXTURES / "python-perf-script.txt").read_text(), "perf")
    assert sum(folded.values()) == 80
    roots = {stack.split(";")[0] for stack in folded}
    assert "python3" in roots
    assert not any("+0x" in stack or "(/usr/lib" in stack for stack in folded)


def test_the_moves_between_two_profiles_come_largest_first(tmp_path):
    before = {"main;put;get": 40, "main;put;write": 60}
    after = {"main;put;write": 90, "main;put;encode": 10}
    save_profile(tmp_path / "a.folded", before)
    assert load_profile(tmp_path / "a.folded") == before
    moves = profile_change(before, after)
    assert moves[0] == {"frame": "get", "before_pct": 40.0, "after_pct": 0.0}
    assert {m["frame"] for m in moves} == {"get", "write", "encode"}  # main and put: 100 both
    # Located frames: the repository's own moves, not the harness's around them.
    harness = "pytest_main (…/_pytest/main.py)"
    located = [
        {f"{harness};run (src/a.py:3) 50": 1, f"{harness};scan (src/a.py:9) 50": 1},
        {f"{harness};run (src/a.py:3) 50": 1, "setup (…/_pytest/main.py:1) 50": 1},
    ]
    located = [fold("".join(f"{k}\n" for k in p), "folded") for p in located]
    assert {m["frame"] for m in profile_change(*located)} == {"scan (src/a.py)"}


def with_profile(target) -> None:
    """A profile the synthetic bench's code "writes": src/profile.txt's folded stacks."""
    config = target.configure(confirm="true")
    config.write_text(
        config.read_text()
        + '[profile]\ncommand = "cp src/profile.txt \\"$AUTORESEARCH_PROFILE_OUT\\""\n'
    )
    (target.root / "src" / "profile.txt").write_text("main;put;get 40\nmain;put;write 60\n")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "a profile")


def test_the_best_s_profile_reaches_state_the_prompt_and_each_keep_s_review(target, tmp_path):
    with_profile(target)
    target.add_hypothesis(
        "01-skip-the-read",
        {"src/value.txt": "60\n", "src/profile.txt": "main;put;write 100\n"},
    )

    run(target)

    (record,) = experiments(target)
    assert record.status == "keep"
    state = json.loads(run_cli("state", cwd=target.root).stdout)
    assert state["profile"]["commit"] == record.kept_commit
    assert {t["frame"] for t in state["profile"]["top"][:3]} == {"main", "put", "write"}
    shown = run_cli("profile", cwd=target.root)
    assert shown.returncode == 0, shown.stderr
    assert "100.0%   0.0%  put" in shown.stdout
    # The review: the keep moved the time out of `get`.
    report = run_cli("report", cwd=target.root).stdout
    assert "where the time moved: `get` 40.0% → 0.0%" in report
    pr = run_cli("pr", cwd=target.root).stdout
    assert "- #1 01-skip-the-read: `get` 40.0% → 0.0%" in pr
    page = tmp_path / "page.html"
    assert run_cli("report", "--html", str(page), cwd=target.root).returncode == 0
    html = page.read_text()
    assert "where the time moved:</b> `get` 40.0% → 0.0%" in html
    # The best's icicle, and the keep's against the best before it: `write` grew (red), `get`
    # is gone, `put` (100% both times) unchanged (grey).
    assert html.count('<svg class="icicle"') == 2
    keep = html.split('id="evidence-1"', 1)[1].split("</tr>", 1)[0]
    assert re.search(
        r"<title>write: 100.0% of the samples \(was 60.0%\)</title><rect [^>]*fill=\"hsl\(0,", keep
    )
    assert re.search(
        r"<title>put: 100.0% of the samples \(was 100.0%\)</title><rect [^>]*fill=\"hsl\(0, 0%",
        keep,
    )


def test_the_agent_s_prompt_says_where_the_time_goes(target, tmp_path):
    from test_agent import edit, prompts, use_agent

    with_profile(target)
    # A profiler that names lines: the function's costliest one is said beside it.
    (target.root / "src" / "profile.txt").write_text(
        "main;put;get 40\nmain;put;write (src/w.py:7) 45\nmain;put;write (src/w.py:9) 15\n"
    )
    git(target.root, "commit", "-qam", "a profile with lines")
    transcript = use_agent(target, tmp_path, [edit("90\n", "less work")])
    git(target.root, "commit", "-qam", "agent")
    run(target)

    prompt = prompts(transcript)[0]
    assert "## Where the time goes" in prompt
    assert "- 40.0% total, 40.0% self: `main;put;get`" not in prompt  # frames, not stacks
    assert "- 40.0% total, 40.0% self: `get`" in prompt
    assert "- 60.0% total, 60.0% self: `write (src/w.py)` at `src/w.py:7`" in prompt
    # Frames in the tree's own files are listed apart when the harness's outrank them.
    own = prompt.split("In the repository's own code", 1)[1].split("\n## ", 1)[0]
    assert own.split("\n- ")[1:] == [
        "60.0% total, 60.0% self: `write (src/w.py)` at `src/w.py:7`\n"
    ]


def test_a_fresh_profile_of_the_best_without_a_timed_run(target):
    with_profile(target)
    target.add_hypothesis("01-win", {"src/value.txt": "60\n"})
    run(target)
    (record,) = experiments(target)
    stored = (
        target.root / ".git" / "autoresearch" / "t" / "profiles" / f"{record.kept_commit}.folded"
    )
    stored.unlink()

    done = run_cli("profile", "--fresh", "--json", cwd=target.root)

    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)["profile"]
    assert found["commit"] == record.kept_commit and found["samples"] == 100
    assert stored.exists()
    assert len(experiments(target)) == 1  # nothing measured, nothing journaled


def test_perf_profiles_a_confined_run(target, tmp_path):
    """perf record (cpu-clock: no hardware counters here) of a confined run, read with perf
    script: the profile names the program that ran."""
    assert shutil.which("perf"), "the profile tests need perf: apt-get install linux-perf"
    assert bwrap_problem() is None
    config = target.configure(sandbox="bwrap")
    text = config.read_text() + (
        "[profile]\n"
        'command = "perf record -q -e cpu-clock -g -o \\"$AUTORESEARCH_PROFILE_OUT\\" -- '
        'python3 -c \\"sum(i * i for i in range(2_000_000))\\""\n'
        'format = "perf"\n'
    )
    config.write_text(text)
    harness = Harness(target.load(), env={}, stop=None)

    folded, why = take_profile(harness, target.root, tmp_path / "profile.log")

    assert folded is not None, why
    assert sum(folded.values()) > 50
    assert top_frames(folded, 1)[0]["frame"] == "python3"
    assert not (target.root / ".autoresearch-profile").exists()
