"""What a reviewer notices: honest A/A checks, resumes that change nothing, whole words."""

from __future__ import annotations

from conftest import run_cli

from autoresearch.bench.calibrate import _aa_check
from autoresearch.bench.fingerprint import toolchains
from autoresearch.report.render import _shorten


def test_the_aa_check_says_when_it_cannot_fail():
    same = [100.0, 101.0, 99.0, 100.5, 99.5]
    assert _aa_check(same[:3], same[:3]).can_fail is False  # 3 per arm: p >= 0.1 always
    assert _aa_check(same, same).can_fail is True  # 5 per arm: p can reach 0.008
    assert _aa_check([1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0]).ok is False


def test_a_resume_with_nothing_new_does_not_announce_a_new_best(target):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    first = run_cli("run", cwd=target.root)
    assert "new best time_ms" in first.stderr
    assert "the A/A check cannot fail with 2 runs per arm" in first.stderr

    again = run_cli("run", cwd=target.root)

    assert again.returncode == 0, again.stderr
    assert "new best" not in again.stderr
    assert "best (unchanged) time_ms" in again.stderr


def test_the_progress_line_of_a_checks_failure_names_the_checks(target):
    target.add_hypothesis("01-broken-win", {"src/value.txt": "80\n", "src/broken.txt": "x\n"})
    done = run_cli("run", cwd=target.root)
    line = next(x for x in done.stderr.splitlines() if "checks_failed" in x)
    assert "checks exit code 1" in line, line
    # The review says what ended it (the checks), not the bench's verdict before them.
    report = run_cli("report", cwd=target.root).stdout
    assert "Broke correctness (checks failed) (1):" in report
    assert "significant" not in report.split("not kept:")[1].split("\n")[1]
    run_cli("ideas", cwd=target.root)
    ideas = (target.root / "ideas.md").read_text()
    closed = ideas.split("### Closed axes")[1]
    assert "01-broken-win" in closed and "[broke correctness (checks failed)]" in closed


def test_long_report_lines_end_at_a_word():
    line = "    #12   -3.0%  " + "word " * 60
    short = _shorten(line)
    assert len(short) <= 160 and short.endswith("word…")
    assert _shorten("short line") == "short line"


GO = ("go test -run '^$' -bench .",)


def test_only_the_toolchains_the_bench_runs_are_said(tmp_path):
    """A Python bench on a machine with Go and Node too: "measured with" names Python alone;
    a script the command runs says what it uses."""
    bin_dir, tree = tmp_path / "bin", tmp_path / "tree"
    bin_dir.mkdir()
    tree.mkdir()
    for tool, says in (("go", "go version go1.90"), ("node", "v22"), ("python3", "Python 3.11")):
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "{says}"\n')
        (bin_dir / tool).chmod(0o755)
    env = {"PATH": str(bin_dir)}
    assert toolchains(tree, env, ("python3 -m pytest --benchmark-only",)) == {
        "python": "Python 3.11"
    }
    (tree / "bench.sh").write_text("#!/bin/sh\ncd sub && go build -o bin/x . && ./bin/x\n")
    assert toolchains(tree, env, ("./bench.sh --run",)) == {"go": "go version go1.90"}
    assert toolchains(tree, env, ("./bin/workload",)) == {}


def test_toolchain_versions_are_asked_again_only_when_what_picks_them_changes(tmp_path):
    """Every calibration records the bench's toolchains; they are asked once, and again when
    the binary or a pin file in the tree changes (a keep that bumps go.mod's toolchain)."""
    bin_dir, tree = tmp_path / "bin", tmp_path / "tree"
    bin_dir.mkdir()
    tree.mkdir()
    asked = tmp_path / "asked"
    go = bin_dir / "go"
    go.write_text(f'#!/bin/sh\necho x >> {asked}\nread v < go.mod; echo "go version $v"\n')
    go.chmod(0o755)
    (tree / "go.mod").write_text("go1.90\n")
    env = {"PATH": str(bin_dir)}

    assert toolchains(tree, env, GO) == {"go": "go version go1.90"}
    assert toolchains(tree, env, GO) == {"go": "go version go1.90"}
    assert asked.read_text().count("x") == 1
    (tree / "go.mod").write_text("go1.91\n")
    assert toolchains(tree, env, GO) == {"go": "go version go1.91"}
    go.write_text(go.read_text() + "# another build of it\n")
    assert toolchains(tree, env, GO) == {"go": "go version go1.91"}
    assert asked.read_text().count("x") == 3
