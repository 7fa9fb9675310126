"""A night on a small real project, as a new user runs one after `init`: the steps the
ecosystems' end-to-end tests (Rust, Python, C++) share."""

from __future__ import annotations

from pathlib import Path

from conftest import edit_file, git, run_cli
from synthetic import unified_patch

from autoresearch.journal.store import JournalContents, read_journal
from autoresearch.profiles import load_profile, top_frames

# A shorter decision than a night's: the test's time.
SHORT_DECISION = {
    "calibration_runs = 16": "calibration_runs = 10",
    "min_runs = 2": "min_runs = 4",
    "max_runs = 28": "max_runs = 8",
    "looks = 10": "looks = 2",
    "target_effect_pct = 5.0": "target_effect_pct = 25.0",
    "confirm_runs = 15": "confirm_runs = 6",
}


def project(parent: Path, name: str, files: dict[str, str | bytes]) -> Path:
    """A git repository of `files` (text, or bytes where binary), committed."""
    repo = parent / name
    git(parent, "init", "-q", "-b", "main", str(repo))
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            (repo / rel).write_bytes(text)
        else:
            (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", name)
    return repo


def queue_win_and_null(repo: Path, path: str, slow: str, win: tuple, null: tuple) -> None:
    """The two hypotheses of the night, each (title, mechanism, new text of `path`), with the
    shorter decision; committed with what init wrote."""
    edit_file(repo / "autoresearch.toml", SHORT_DECISION)
    for number, (title, mechanism, text) in enumerate((win, null), start=1):
        patch = f"Title: {title}\nMechanism: {mechanism}\n\n" + unified_patch(path, slow, text)
        (repo / "hypotheses" / f"0{number}-{title.split()[0].lower()}.patch").write_text(patch)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "autoresearch session")


def night(repo: Path, metric: str, win: str, null: str, timeout: float = 600) -> JournalContents:
    """`run`, then: the win kept (over half the time gone), the null not."""
    done = run_cli("run", "--accept-noise", cwd=repo, timeout=timeout)
    assert done.returncode == 0, done.stderr
    journal = read_journal(repo / "experiments.jsonl")
    outcomes = {r.title: r.status for r in journal.experiments}
    assert outcomes[win] == "keep", journal.experiments[0].decision
    assert outcomes[null] != "keep"
    kept = next(r for r in journal.experiments if r.status == "keep")
    assert kept.decision.metrics[metric].change_pct < -50
    return journal


def base_frames(repo: Path, journal: JournalContents, commit: str | None = None) -> list[dict]:
    """The top frames of the profile `init`'s command took of the session's base (or of
    `commit`), at its calibration."""
    commit = commit or journal.sessions[0].base_commit
    profiles = repo / ".git" / "autoresearch" / "main" / "profiles"
    folded = load_profile(profiles / f"{commit}.folded")
    assert folded, "no profile of the base: is the profiler installed (linux-perf, py-spy)?"
    return top_frames(folded, 10**6)


def base_profile_share(repo: Path, journal: JournalContents, part: str) -> float:
    """The share of the samples (with what it calls) of the frame naming `part` in the base's
    profile."""
    frames = base_frames(repo, journal)
    return max((t["total_pct"] for t in frames if part in t["frame"]), default=0.0)


def measured_with(repo: Path, metric: str) -> str:
    """The PR, titled by `metric`'s gain: its line naming the toolchains that measured."""
    pr = run_cli("pr", cwd=repo)
    assert pr.returncode == 0, pr.stderr
    assert pr.stdout.startswith(f"# perf: {metric} -")
    return next(x for x in pr.stdout.splitlines() if x.startswith("- Measured with: "))
