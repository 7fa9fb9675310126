"""How many tests the checks ran, passed and skipped: read from a report the test runner writes
outside the tree, not from what the tests print.

A candidate's checks can be made to pass without testing anything: a `conftest.py` that skips
every test, code that calls `os._exit(0)` inside the test process before any assert. The tests
and their configuration are protected (config.TESTS_PROTECTED), and the count closes what is
left: every checks run asks pytest for a JUnit XML report (`PYTEST_ADDOPTS`) in a place of the
loop's choosing, and names that place to the checks script (`AUTORESEARCH_TEST_REPORT`) for a
test runner whose report the script writes itself (`go test -json ./... | tee "$REPORT"`:
test2json escapes whatever a test prints, so a test cannot print a pass of its own; `cargo
test 2>&1 | tee "$REPORT"`: libtest's own `test result:` summaries, one per test binary, with
the output of passing tests captured, so a binary that exits before its summary counts none).
A candidate whose checks passed fewer tests than the best's, or skipped more, or left no report
where the best's left one, fails its checks. Code that runs inside the
test process can still lie about itself (it could write a report of its own): the count narrows
what such code must forge, it does not make the test process trustworthy.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
from pathlib import Path
from xml.etree import ElementTree

from ..errors import UserError
from ..files import read_bounded
from ..journal.checks_run import TestCount

__all__ = ["TEST_REPORT_ENV", "TestCount", "count_problem", "read_report", "report_env"]

MAX_REPORT_BYTES = 64 * 1024 * 1024
TEST_REPORT_ENV = "AUTORESEARCH_TEST_REPORT"
_GO_DONE = ("pass", "fail", "skip")
# libtest's summary of one test binary (cargo test), a whole line of its own.
_LIBTEST = re.compile(
    rb"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored;", re.MULTILINE
)


def report_env(env: dict[str, str], report: str) -> dict[str, str]:
    """The report's place (as the run sees the path) named to the checks, and `PYTEST_ADDOPTS`
    asking pytest for its JUnit XML there, after whatever the user's own setting holds."""
    current = env.get("PYTEST_ADDOPTS", os.environ.get("PYTEST_ADDOPTS", ""))
    return {
        TEST_REPORT_ENV: report,
        "PYTEST_ADDOPTS": f"{current} --junitxml={shlex.quote(report)}".strip(),
    }


def read_report(path: Path) -> TestCount | None:
    """The totals of the report at `path` (JUnit XML, `go test -json` lines, or cargo test's
    output with libtest's summaries); None when there is none, or it is none of these (the
    report is read once and removed: the next run writes its own)."""
    try:  # the run's: read as the one reader reads what a run left (files.py)
        data = read_bounded(path, MAX_REPORT_BYTES, "test report", follow=False)
    except UserError:
        return None
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
    if data.lstrip().startswith(b"<"):
        return _junit(data)
    return _go_json(data) or _libtest(data)


def _junit(data: bytes) -> TestCount | None:
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError:
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    if not suites:
        return None
    try:
        tests = sum(int(s.get("tests", 0)) for s in suites)
        failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
        skipped = sum(int(s.get("skipped", 0)) for s in suites)
    except ValueError:
        return None
    return TestCount(tests, failed, skipped)


def _go_json(data: bytes) -> TestCount | None:
    """`go test -json` events: each test's (and subtest's) last pass, fail or skip; a package
    that failed without a test failing (it did not build) counts as one failure."""
    outcome: dict[tuple[str, str], str] = {}
    for line in data.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or event.get("Action") not in _GO_DONE:
            continue
        key = (str(event.get("Package", "")), str(event.get("Test", "")))
        outcome[key] = event["Action"]
    if not outcome:
        return None
    tests = {key: action for key, action in outcome.items() if key[1]}
    failing = {pkg for (pkg, test), action in tests.items() if action == "fail"}
    broken = [
        pkg for (pkg, test), action in outcome.items()
        if not test and action == "fail" and pkg not in failing
    ]  # fmt: skip
    failed = sum(1 for action in tests.values() if action == "fail") + len(broken)
    skipped = sum(1 for action in tests.values() if action == "skip")
    return TestCount(len(tests) + len(broken), failed, skipped)


def _libtest(data: bytes) -> TestCount | None:
    """cargo test's output: the sum of its binaries' `test result:` lines (doc tests are a
    binary of their own); an ignored test counts as skipped."""
    found = _LIBTEST.findall(data)
    if not found:
        return None
    passed, failed, ignored = (sum(int(row[i]) for row in found) for i in range(3))
    return TestCount(passed + failed + ignored, failed, ignored)


def count_problem(candidate: TestCount | None, best: TestCount | None) -> str | None:
    """Why the candidate's checks did not test what the best's did, or None."""
    if best is None:
        return None
    if candidate is None:
        return (
            f"the checks left no test report (pytest's JUnit XML, `go test -json` or `cargo "
            f"test`'s output in ${TEST_REPORT_ENV}), where the best's reported "
            f"{best.passed} passed: the test process ended before its end, or did not run"
        )
    if candidate.passed < best.passed or candidate.skipped > best.skipped:
        return (
            f"the checks passed {candidate.passed} tests and skipped {candidate.skipped}, where "
            f"the best's passed {best.passed} and skipped {best.skipped}: fewer tests judged it"
        )
    return None
