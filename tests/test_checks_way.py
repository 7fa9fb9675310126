"""The checks run the best's way: a candidate that changes how its tests run (a plugin, an
interpreter start-up file, the runner's configuration) is refused before it is measured. Each
attack breaks what the tests check and makes the tests say it passed, with as many tests."""

from __future__ import annotations

import sys

import pytest
from conftest import dedent, experiments, git, run

TEST = dedent(
    """
    from pathlib import Path

    def test_the_value_is_the_right_answer():
        assert Path("src/value.txt").read_text() == "100\\n"
    """
)
# Turns every failing test into a pass: the report counts as many passed tests as the best's.
PLUGIN = dedent(
    """
    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        report = outcome.get_result()
        report.outcome = "passed"
    """
)
LOADERS = {
    # Python runs it before anything else, from any directory on its path.
    "src/sitecustomize.py": "import os\nos.environ['PYTEST_PLUGINS'] = 'passing'\n",
    # pytest's own configuration names the plugin.
    "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-p passing'\n",
    "setup.cfg": "[tool:pytest]\naddopts = -p passing\n",
}


@pytest.mark.e2e
@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_a_candidate_that_changes_how_its_tests_run_is_refused(target, loader):
    (target.root / "tests").mkdir()
    (target.root / "tests" / "test_value.py").write_text(TEST)
    config = target.configure(checks_when="always")
    text = config.read_text().replace(
        'command = "./checks.py"',
        f'command = "{sys.executable} -m pytest -q -p no:cacheprovider tests"\n'
        'env = { PYTHONPATH = "src" }',
    )
    config.write_text(text.replace('include = ["src/**"]', 'include = ["**"]'))
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "pytest checks the value")
    changes = {"src/value.txt": "80\n", "src/passing.py": PLUGIN, loader: LOADERS[loader]}
    target.add_hypothesis("01-wrong-but-passing", changes)
    target.add_hypothesis("02-wrong", {"src/value.txt": "80\n"})

    run(target, real=True)

    records = {r.title: r for r in experiments(target)}
    # Without its loader the plugin is inert: the wrong answer fails its test.
    assert records["02-wrong"].status == "checks_failed", records["02-wrong"].error
    attack = records["01-wrong-but-passing"]
    assert attack.status == "scope_violation" and not attack.bench_logs, attack.error
    assert f"{loader}: protected" in attack.asi.rollback_reason
