"""The documentation: a short README that starts a newcomer, a site that builds clean, and
reference pages generated from the code that cannot drift from it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from autoresearch.cli import build_parser
from autoresearch.reference import PAGES, config_keys, main

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_the_readme_is_short_and_starts_with_the_first_hour():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200
    recipe = lines.index("## The first hour on your own repository")
    assert recipe < 60
    assert "autoresearch init --metric" in "\n".join(lines[recipe : recipe + 6])


def test_every_link_of_the_readme_and_the_docs_leads_to_a_page():
    for page in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", page.read_text()):
            if not target.startswith("http"):
                assert (page.parent / target).resolve().is_file(), (page, target)


def test_the_reference_pages_are_what_the_code_writes():
    assert main([str(DOCS / "reference"), "--check"]) == 0
    assert set(PAGES) == {p.name for p in (DOCS / "reference").glob("*.md")}


def test_every_command_option_and_config_key_is_in_the_reference():
    commands = (DOCS / "reference" / "commands.md").read_text()
    parser = build_parser()
    sub = next(a for a in parser._actions if getattr(a, "choices", None) and a.dest == "command")
    for name, command in sub.choices.items():
        section = commands.split(f"## `autoresearch {name}`\n", 1)[1].split("\n## ", 1)[0]
        for action in command._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}`" in section, (name, flag)
    config = (DOCS / "reference" / "config.md").read_text()
    for key in config_keys():
        assert f"| `{key}` |" in config, key


def test_ci_runs_the_readme_s_tests_and_every_tier_the_fast_suite_leaves_out():
    """A marker the fast suite deselects (pyproject's addopts) is a tier CI must run by name,
    or its tests would run nowhere."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    options = pyproject["ini_options"]
    tiers = [line.split(":")[0].split("(")[0] for line in options["markers"]]
    assert sorted(tiers) == ["e2e", "slow"]
    for tier in tiers:
        assert f"not {tier}" in options["addopts"], tier
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    readme = (ROOT / "README.md").read_text().split("```sh\n", 1)[1].splitlines()[1]
    assert readme.endswith("&& python -m pytest") and "python3 -m pytest" in ci
    for tier in tiers:
        assert any(line.startswith(f"python3 -m pytest -m {tier}") for line in ci), tier


@pytest.mark.e2e
def test_the_site_builds_with_warnings_as_errors(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "reference" / "config" / "index.html").is_file()
