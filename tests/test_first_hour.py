"""The README's first hour on your own repository, followed to the letter on a real Go module.

A tiny hash package with `BenchmarkSum64/{4B,1KiB}` and a known faster variant offered as the
first hypothesis: the pre-flight lists the metrics and their families, the night keeps the win
and confirms it, the PR's title, table and raw output agree with the confirmation, `status`,
`report` and `pr` agree with each other, `sessions` and `clean` work, and the checkout is left
exactly as committed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import edit_file, git, run_cli
from ecosystem_night import base_frames
from synthetic import unified_patch

from autoresearch.journal.store import read_journal

pytestmark = pytest.mark.slow  # Go builds and benchmarks; the Go toolchain is required

SLOW = """package hashy

// Sum64 is 64-bit FNV-1a of b.
func Sum64(b []byte) uint64 {
	h := uint64(offset)
	for _, c := range b {
		h = step(h, c)
	}
	return h
}

const (
	offset = 14695981039346656037
	prime  = 1099511628211
)

// step is one byte of FNV-1a, kept out of line, with a leftover self-check that recomputes
// a running product the result never uses: the known faster variant drops both. The win is
// large on purpose, so that a busy machine's noise cannot hide it.
//
//go:noinline
func step(h uint64, c byte) uint64 {
	x := h
	for i := 0; i < 24; i++ {
		x = x*prime + uint64(i)
	}
	leftover = x
	return (h ^ uint64(c)) * prime
}

var leftover uint64
"""

FAST = SLOW.replace(
    """	for _, c := range b {
		h = step(h, c)
	}""",
    """	for _, c := range b {
		h = (h ^ uint64(c)) * prime
	}""",
)

TESTS = """package hashy

import (
	"fmt"
	"testing"
)

func TestSum64(t *testing.T) {
	for in, want := range map[string]uint64{"": 0xcbf29ce484222325, "a": 0xaf63dc4c8601ec8c} {
		if got := Sum64([]byte(in)); got != want {
			t.Fatalf("Sum64(%q) = %x, want %x", in, got, want)
		}
	}
}

var sink uint64

func BenchmarkSum64(b *testing.B) {
	for _, n := range []int{4, 1024} {
		name := fmt.Sprintf("%dB", n)
		if n == 1024 {
			name = "1KiB"
		}
		buf := make([]byte, n)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(n))
			for i := 0; i < b.N; i++ {
				sink = Sum64(buf)
			}
		})
	}
}
"""

BENCH = """#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")"
go test -run '^$' -bench . -benchtime 20000x -count 1 .
"""

CHECKS = """#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")"
go vet ./... && go test -count 1 ./...
"""


def _edit_config(path: Path) -> None:
    """What the user's $EDITOR does to the config: a shorter decision (init found the Go
    module and reads its `go test -bench` rows already)."""
    assert "go_bench = true" in path.read_text()
    edits = {
        "min_runs = 2": "min_runs = 4",
        "max_runs = 28": "max_runs = 10",
        "looks = 10": "looks = 2",
        "target_effect_pct = 5.0": "target_effect_pct = 25.0",
        "confirm_runs = 15": "confirm_runs = 6",
    }
    edit_file(path, edits)


@pytest.mark.slow(seconds=280)
def test_the_first_hour_on_a_go_module(tmp_path):
    repo = tmp_path / "hashy"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / "go.mod").write_text("module example.com/hashy\n\ngo 1.22\n")
    (repo / "hashy.go").write_text(SLOW)
    (repo / "hashy_test.go").write_text(TESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "hashy")

    # cd your-repo; autoresearch init ...
    init = run_cli(
        "init", "--metric", "sum64_1kib_ns_op", "--unit", "ns", "--scope", "hashy.go", cwd=repo
    )
    assert init.returncode == 0, init.stderr
    # $EDITOR autoresearch.sh autoresearch.checks.sh autoresearch.toml
    (repo / "autoresearch.sh").write_text(BENCH)
    (repo / "autoresearch.checks.sh").write_text(CHECKS)
    _edit_config(repo / "autoresearch.toml")
    # cp ~/my-ideas/*.patch hypotheses/
    header = (
        "Title: Inline the FNV step\n"
        "Hypothesis: the out-of-line call per byte costs more than the hashing itself.\n"
        "Mechanism: the loop body multiplies in registers instead of calling step().\n\n"
    )
    (repo / "hypotheses" / "01-inline-step.patch").write_text(
        header + unified_patch("hashy.go", SLOW, FAST)
    )
    # git add ... && git commit
    git(repo, "add", ".gitignore", "autoresearch.sh", "autoresearch.checks.sh")
    git(repo, "add", "autoresearch.toml", "ideas.md", "hypotheses")
    git(repo, "commit", "-qm", "autoresearch session")

    # autoresearch check
    check = run_cli("check", cwd=repo)
    assert check.returncode == 0, check.stdout + check.stderr
    lines = check.stdout.splitlines()
    row_4b = next(x for x in lines if x.split()[:1] == ["sum64_4b_ns_op"])
    row_1k = next(x for x in lines if x.split()[:1] == ["sum64_1kib_ns_op"])
    assert "family sum64_*_ns_op at 4b" in row_4b
    assert "primary" in row_1k and "family sum64_*_ns_op at 1kib" in row_1k
    assert any(x.split()[:1] == ["sum64_1kib_mb_s"] for x in lines)
    assert lines[-1].startswith("ready:")

    # autoresearch run (told to go on: beside other jobs, a 20 ms benchmark can measure too
    # noisy for 25% with these few runs, and the run would stop before the night, saying so)
    done = run_cli("run", "--accept-noise", cwd=repo)
    assert done.returncode == 0, done.stderr
    journal = read_journal(repo / "experiments.jsonl")
    # On a busy machine the first measurement can stay undecided: the second look then
    # measures it again, once (the retry points to the first attempt).
    *earlier, record = journal.experiments
    assert record.status == "keep", record.decision
    assert [r.status for r in earlier] in ([], ["inconclusive"]), [r.status for r in earlier]
    assert all(record.retry_of == r.id for r in earlier)
    # init's profile is Go's own CPU profile of the benchmark: the base's names the step the
    # win inlines, in its file (perf around go test named no frame of the deleted test binary).
    frames = {t["frame"] for t in base_frames(repo, journal)}
    assert "example.com/hashy.step (hashy.go)" in frames, sorted(frames)[:20]
    (confirmation,) = journal.confirmations
    primary = confirmation.metrics["sum64_1kib_ns_op"]
    base, tip = primary.baseline_median, primary.tip_median
    # The confirmation's estimate (the pairs' geometric-mean ratio, as the decisions read
    # theirs), not the ratio of the two medians beside it.
    change = confirmation.change_pct
    # Confirmed faster: the whole interval below zero (its size depends on the machine's load).
    assert change < 0 and confirmation.ci_high_pct is not None and confirmation.ci_high_pct < 0

    # One figure behind every headline.
    pr = run_cli("pr", "--out", str(tmp_path / "pr.md"), cwd=repo)
    assert pr.returncode == 0, pr.stderr
    text = (tmp_path / "pr.md").read_text()
    title = text.splitlines()[0]
    assert f"{change:+.1f}%" in title, title
    numbers = [float(x.replace(",", "")) for x in re.findall(r"([\d.,]+) ns", title)]
    assert numbers == [pytest.approx(base, rel=0.005), pytest.approx(tip, rel=0.005)]
    for log in (confirmation.bench_logs[0], confirmation.bench_logs[confirmation.runs_per_arm]):
        row = next(x for x in Path(log).read_text().splitlines() if "BenchmarkSum64/1KiB" in x)
        assert row in text  # the raw output is the confirmation's
    assert "4b" in text.lower() and "1kib" in text.lower()  # the headline across scales
    report = json.loads(run_cli("report", "--format", "json", cwd=repo).stdout)
    status = json.loads(run_cli("status", "--json", cwd=repo).stdout)
    assert report["baseline"]["value"] == pytest.approx(base) == status["baseline"]
    assert report["final"]["value"] == pytest.approx(tip) == status["best"]["value"]
    assert status["change_pct"] == pytest.approx(report["headline_change_pct"])
    assert report["headline_change_pct"] == pytest.approx(change)

    # Sessions are visible and removable; the branch with the win stays.
    listing = run_cli("sessions", cwd=repo).stdout
    assert "autoresearch/main (+1)" in listing and "1 (1 kept)" in listing
    clean = run_cli("clean", "main", cwd=repo)
    assert clean.returncode == 0 and "kept branch autoresearch/main" in clean.stdout
    assert git(repo, "show", "autoresearch/main:hashy.go").strip() == FAST.strip()

    # The checkout is exactly as committed: nothing modified, nothing untracked.
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
