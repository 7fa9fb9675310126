"""What the best's checks tested: the reference a candidate's test count is held to.

Measured by the pre-flight's checks on the base, then by the checks that admitted each keep;
kept in the session's state beside the commit it counts, so that a resumed night holds the
next candidate to the same count (bench/testcount.py)."""

from __future__ import annotations

import json

from ..atomic import write_json_atomic
from ..journal.checks_run import TestCount
from .session import Session

__all__ = ["best_tests", "remember_tests"]

FILE = "tests.json"


def best_tests(session: Session) -> TestCount | None:
    """The test count of the current best, when one was measured at this commit."""
    try:
        data = json.loads((session.paths.root / FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("commit") != session.ws.tip():
        return None
    return TestCount.from_dict(data.get("tests"))


def remember_tests(session: Session, commit: str, tests: TestCount | None) -> None:
    """`tests` counted the checks of `commit`, the best from now on (nothing when pytest left
    no report: no reference to hold a candidate to)."""
    if tests is None:
        (session.paths.root / FILE).unlink(missing_ok=True)
        return
    write_json_atomic(session.paths.root / FILE, {"commit": commit, "tests": tests.to_dict()})
