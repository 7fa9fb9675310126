"""Output equivalence: the best and the candidate must say the same thing, byte for byte.

A change can be fast because it does less than it should, on exactly the inputs the tests do
not cover. `[equivalence] command` (a digest of what a storage engine stored after a workload,
the parse of a corpus) runs in both arms after the candidate's build and before its bench; its
standard output, or the files it names, must be identical. A difference is `checks_failed`,
with the first lines that differ. Each run starts from the arm's state like a bench run does
(measure.py), and its files are read without following a link (a candidate's output file
linked to the best's would otherwise compare equal to it).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError
from ..files import read_bounded
from ..inert import inert
from ..statuses import Status

if TYPE_CHECKING:
    from .measure import Harness

__all__ = ["equivalence_failure"]

MAX_OUTPUT = 64 * 1024 * 1024
SHOWN_LINES = 6  # of the first difference, in the record


def equivalence_failure(
    harness: Harness, arms: tuple[Path, Path], logs: Callable[[str], Path]
) -> tuple[Status, str] | None:
    """Run the equivalence command in the best's arm and the candidate's; None when their
    outputs are the same, else the status and why (a failed run of the best's is its own)."""
    outputs = []
    files = harness.config.equivalence.files
    for arm, cwd in zip(("baseline", "candidate"), arms, strict=True):
        log = logs(f"equivalence-{arm}")
        stdout = log.with_name(log.name + ".stdout")
        stdout.unlink(missing_ok=True)
        try:
            run = harness.equivalence_run(cwd, log, stdout)
            output = read_outputs(cwd, files, stdout) if run.ok else run.describe()
        finally:
            harness.put_back(cwd)
        if run.interrupted:
            return Status.INTERRUPTED, "interrupted during the equivalence check"
        if isinstance(output, str):
            status = Status.BASELINE_FAILED if arm == "baseline" else Status.CHECKS_FAILED
            return status, f"equivalence ({arm} arm): {output}; log: {log}"
        outputs.append(output)
    best, candidate = outputs
    if best == candidate:
        return None
    return Status.CHECKS_FAILED, f"equivalence: {_first_difference(best, candidate)}"


def read_outputs(cwd: Path, files: list[str], stdout: Path) -> dict[str, bytes] | str:
    """What one run said: its standard output (the file it was written to), or the files the
    config names in its tree; a string saying why when one cannot be read."""
    try:
        if not files:
            return {"stdout": read_bounded(stdout, MAX_OUTPUT, "output")}
        found = {}
        for rel in files:
            path = cwd / rel
            if not path.resolve().is_relative_to(cwd.resolve()):
                return f"{rel}: outside the tree"
            found[rel] = read_bounded(path, MAX_OUTPUT, "output", follow=False)
        return found
    except UserError as exc:
        return str(exc)


def _first_difference(best: dict[str, bytes], candidate: dict[str, bytes]) -> str:
    """Where two outputs first part: the file, the line, and a few lines of each."""
    for name, ours in best.items():
        theirs = candidate.get(name, b"")
        if ours == theirs:
            continue
        a = ours.decode("utf-8", "replace").splitlines()
        b = theirs.decode("utf-8", "replace").splitlines()
        pairs = enumerate(zip(a, b, strict=False))
        line = next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))
        diff = difflib.unified_diff(a[line:], b[line:], "best", "candidate", n=0, lineterm="")
        shown = [inert(d) for d in list(diff)[2 : 2 + SHOWN_LINES]]
        where = "the output" if name == "stdout" else name
        return (
            f"{where} differs from the best's from line {line + 1} "
            f"({len(ours):,} against {len(theirs):,} bytes): " + " | ".join(shown)
        )
    return "the outputs differ"
