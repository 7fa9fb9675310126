"""The checks judge by what they tested: a candidate that makes pytest pass by testing nothing
(ending the test process before any assert, skipping every test from the code it imports) is
`checks_failed`, by the count pytest reports outside the tree against the best's."""

from __future__ import annotations

import sys

import pytest
from conftest import experiments, git, run
from synthetic import PYTEST_INI

LIB = "def value():\n    return 100\n"
TESTS = (
    "import sys, pathlib\n"
    "sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / 'src'))\n"
    "import lib\n\n"
    "def test_value():\n    assert lib.value() == 100\n\n"
    "def test_again():\n    assert lib.value() > 0\n"
)


def with_pytest_checks(target) -> None:
    """The synthetic target's checks as pytest over tests/ (protected by default), its code
    in src/lib.py (in scope), counted from the pre-flight on."""
    (target.root / "src" / "lib.py").write_text(LIB)
    (target.root / "tests").mkdir()
    (target.root / "tests" / "test_lib.py").write_text(TESTS)
    (target.root / "pytest.ini").write_text(PYTEST_INI)
    text = target.config_path.read_text()
    text = text.replace(
        'command = "./checks.py"', f'command = "{sys.executable} -m pytest -q tests"'
    )
    text = text.replace("preflight = false", "preflight = true")
    target.config_path.write_text(text)
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "pytest checks")


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # The test process ends, successfully, before any assert.
        ("import os\nos._exit(0)\n" + LIB, "left no test report"),
        # Every test that calls the code is skipped: pytest exits 0, "2 skipped".
        (
            "def value():\n    import pytest\n    pytest.skip('not today')\n",
            "passed 0 tests and skipped 2, where the best's passed 2 and skipped 0",
        ),
    ],
)
def test_checks_that_test_less_than_the_best_s_fail(target, code, expected):
    with_pytest_checks(target)
    target.add_hypothesis("01-cheat", {"src/value.txt": "80\n", "src/lib.py": code})
    target.add_hypothesis("02-win", {"src/value.txt": "70\n"})

    run(target)

    the_cheat_fails_the_win_is_kept(target, expected)


def the_cheat_fails_the_win_is_kept(target, expected: str) -> None:
    """The first record checks_failed for `expected`, the second (two tests passed) kept."""
    first, second = experiments(target)
    why = first.asi.rollback_reason
    assert first.status == "checks_failed", (first.status, why)
    assert expected in why, why
    assert second.status == "keep", second.error
    assert second.checks.tests.to_dict() == {"tests": 2, "passed": 2, "failed": 0, "skipped": 0}


GO_TESTS = (
    'package calc\n\nimport "testing"\n\n'
    'func TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal("wrong")\n\t}\n}\n\n'
    'func TestPrinted(t *testing.T) {\n\tt.Log(`{"Action":"pass","Test":"TestForged"}`)\n}\n'
)


@pytest.mark.e2e
def test_go_checks_that_end_before_any_test_are_counted_from_their_json_report(target):
    """Go's checks write `go test -json` to the report the loop names: a candidate whose
    package exits in its init (go test says ok, having run nothing) is `checks_failed`; a
    test that prints an event of its own is escaped by test2json, never counted."""
    module = target.root / "src" / "calc"
    module.mkdir()
    (module / "go.mod").write_text("module example.com/calc\n\ngo 1.21\n")
    (module / "calc.go").write_text("package calc\n\nfunc Add(a, b int) int { return a + b }\n")
    (module / "calc_test.go").write_text(GO_TESTS)
    text = target.config_path.read_text().replace(
        'command = "./checks.py"',
        'command = "cd src/calc && go test -count=1 -json ./... > \\"$AUTORESEARCH_TEST_REPORT\\""',
    )
    target.config_path.write_text(text.replace("preflight = false", "preflight = true"))
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "go checks")
    exits = 'package calc\n\nimport "os"\n\nfunc init() { os.Exit(0) }\n'
    target.add_hypothesis("01-exit", {"src/value.txt": "80\n", "src/calc/exit.go": exits})
    target.add_hypothesis("02-win", {"src/value.txt": "70\n"})

    run(target)

    the_cheat_fails_the_win_is_kept(
        target, "passed 0 tests and skipped 0, where the best's passed 2"
    )


RUST_TESTS = """pub fn add(a: u64, b: u64) -> u64 {
    a + b
}

#[cfg(test)]
mod tests {
    #[test]
    fn adds() {
        assert_eq!(super::add(1, 2), 3);
    }

    #[test]
    fn prints_a_summary_of_its_own() {
        println!("test result: ok. 40 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out");
    }
}
"""


@pytest.mark.e2e
def test_cargo_checks_that_exit_before_their_summary_are_counted_from_libtest_s(target):
    """Cargo's checks tee `cargo test`'s output to the report the loop names: a candidate
    whose test exits the test binary, successfully, before libtest's summary is
    `checks_failed`; a summary a passing test prints is captured by libtest, never counted."""
    crate = target.root / "src" / "calc"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text(
        '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n'
    )
    (crate / "src" / "lib.rs").write_text(RUST_TESTS)
    (target.root / ".gitignore").write_text("target/\nCargo.lock\n")
    report = '\\"$AUTORESEARCH_TEST_REPORT\\"'
    checks = f"set -o pipefail; cd src/calc && cargo test --quiet 2>&1 | tee {report}"
    text = target.config_path.read_text()
    text = text.replace('command = "./checks.py"', f'command = "{checks}"')
    target.config_path.write_text(text.replace("preflight = false", "preflight = true"))
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "cargo checks")
    exits = RUST_TESTS.replace("assert_eq!(super::add(1, 2), 3);", "std::process::exit(0);")
    target.add_hypothesis("01-exit", {"src/value.txt": "80\n", "src/calc/src/lib.rs": exits})
    target.add_hypothesis("02-win", {"src/value.txt": "70\n"})

    run(target)

    the_cheat_fails_the_win_is_kept(
        target, "passed 0 tests and skipped 0, where the best's passed 2"
    )
