"""`autoresearch init`: a documented config, bench and checks templates, an ideas file."""

from __future__ import annotations

import json
import os
import shutil
from importlib import resources
from pathlib import Path

import jinja2

from ..errors import UserError
from ..statuses import Direction
from .ecosystems import Ecosystem

__all__ = ["scaffold"]

# template name -> path written, relative to the target directory
FILES = {
    "autoresearch.toml": "autoresearch.toml",
    "autoresearch.sh": "autoresearch.sh",
    "autoresearch.checks.sh": "autoresearch.checks.sh",
    "ideas.md": "ideas.md",
    "hypothesis.patch.example": "hypotheses/0001-example.patch.example",
}
EXECUTABLE = ("autoresearch.sh", "autoresearch.checks.sh")
# What its readers derive from the journal lives in the git directory (journal/index.py).
GITIGNORE_LINES = ("experiments.jsonl",)
# Nanoseconds per unit, for the bench template's timer: it prints the metric in the unit given.
TIME_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def scaffold(
    directory: Path,
    *,
    session: str,
    metric: str,
    direction: str,
    unit: str,
    scope: list[str],
    force: bool = False,
    bench: str = "./autoresearch.sh",
    checks: str = "./autoresearch.checks.sh",
    checks_when: str = "keep",
    protect: tuple[str, ...] = ("autoresearch.sh", "autoresearch.checks.sh"),
    only: tuple[str, ...] | None = None,
    ideas: str = "",
    ecosystem: Ecosystem | None = None,
    fallback: str = "",
) -> list[Path]:
    """Write the session files into `directory`; refuses to overwrite unless `force`.
    `only` names the templates to write (all by default); `ideas` is appended to the open
    ideas of ideas.md; `ecosystem` (ecosystems.py) writes the bench, checks and build it
    runs, and how its output is read; `fallback` the [metric] fallback it writes, if any."""
    if not directory.is_dir():
        raise UserError(f"{directory}: not a directory")
    choices = [d.value for d in Direction]  # a pi session's bestDirection may name anything
    if direction not in choices:
        raise UserError(f"--direction must be one of {', '.join(choices)}, got '{direction}'")
    targets = {name: directory / rel for name, rel in FILES.items() if only is None or name in only}
    extra = ecosystem.files if ecosystem is not None and only is None else ()
    targets.update({name: directory / name for name in extra})
    # What the bench runs is the bench's: no candidate edits it.
    protect = (*protect, *extra, *(ecosystem.protect if ecosystem is not None else ()))
    existing = [p for p in targets.values() if p.exists()]
    if existing and not force:
        names = ", ".join(str(p.relative_to(directory)) for p in existing)
        raise UserError(f"{directory}: already has {names}; pass --force to overwrite")
    env = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    values = {
        "session": session,
        "metric": metric,
        "direction": direction,
        "unit": unit,
        "fallback": fallback,
        "ns_per_unit": TIME_UNITS.get(unit),
        "scope": _strings(scope),
        "bench": bench,
        "checks": checks,
        "checks_when": checks_when,
        # The tests are protected by default ([scope] allow_tests, config.TESTS_PROTECTED).
        "protect": _strings(list(protect)),
        **_ecosystem_values(ecosystem),
        **_profile_values(ecosystem, bench),
        "name": session,
        "holdout_example": "$AUTORESEARCH_HOLDOUT/run.sh",
    }
    written = [_write(env, name, path, values, ideas) for name, path in targets.items()]
    return written + _ignore_journal(directory)


def _write(env: jinja2.Environment, name: str, path: Path, values: dict, ideas: str) -> Path:
    """One template rendered into `path` (ideas.md with `ideas` appended), made executable
    when it is a script."""
    templates = resources.files("autoresearch") / "templates"
    text = (templates / name).read_text(encoding="utf-8")
    if name in FILES:  # the rest are written as they are
        text = env.from_string(text).render(values)
    if name == "ideas.md" and ideas:
        text = text.rstrip("\n").removesuffix("- ").rstrip("\n") + "\n\n" + ideas
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if name in EXECUTABLE:
        os.chmod(path, 0o755)
    return path


def _basic_string(text: str) -> str:
    """`text` inside a TOML basic string ("..."): its backslashes and quotes escaped."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _ecosystem_values(ecosystem: Ecosystem | None) -> dict:
    """What the templates say of the benchmarks `init` found (none: the plain templates)."""
    found = ecosystem
    return {
        "ecosystem": found,
        "reads": _reads(found) if found else "",
        "build": _basic_string(found.build) if found else "",
        "fetch": _basic_string(found.fetch) if found else "",
        "go_bench": found.go_bench if found else False,
        "format": found.format if found else "",
        "output": found.output if found else "",
        "keep": _strings(found.keep) if found else "",
        "rows": found.rows if found else 0,
        "equivalence_example": EQUIVALENCE.get(found.name if found else "", EQUIVALENCE[""]),
        "equivalence_hint": "a digest of what a run of your program produces from a corpus",
    }


def _profile_values(ecosystem: Ecosystem | None, bench: str) -> dict:
    """The profile `init` writes: Go's own CPU profile of the one benchmark the bench runs
    (init --metric) or of every package's, perf around the bench for other native code (Rust,
    C++), and py-spy's folded stacks for Python, whose frames perf does not name (py-spy's carry
    each file and line); on where the profiler is installed, written but left commented
    otherwise."""
    if ecosystem is not None and ecosystem.profile:  # the harness's own (Go's -cpuprofile)
        command = _basic_string(ecosystem.profile)
        return {"profile_on": True, "profile_command": command, "profile_format": "pprof"}
    if ecosystem is not None and ecosystem.name == "pytest-benchmark":
        command = (
            'py-spy record --full-filenames --format raw -o \\"$AUTORESEARCH_PROFILE_OUT\\" -- '
            + _basic_string(ecosystem.bench)
        )
        on = shutil.which("py-spy") is not None
        return {"profile_on": on, "profile_command": command, "profile_format": "folded"}
    perf = f'perf record -q -e cpu-clock -g -o \\"$AUTORESEARCH_PROFILE_OUT\\" -- {bench}'
    # perf names no JavaScript frame (node's map of them lives in the run's private /tmp).
    on = shutil.which("perf") is not None and (ecosystem is None or ecosystem.name not in NODE)
    return {"profile_on": on, "profile_command": perf, "profile_format": "perf"}


NODE = ("vitest", "tinybench", "mitata")  # the ecosystems whose bench runs node
# What an output equivalence check looks like for each ecosystem: the program run on a corpus
# the tests do not time, its output digested.
EQUIVALENCE = {
    "": "./your-program < testdata/corpus | sha256sum",
    "go": "go run ./cmd/NAME < testdata/corpus | sha256sum",
    "cargo-criterion": "cargo run --release --quiet -- testdata/corpus | sha256sum",
    "cargo-libtest": "cargo run --release --quiet -- testdata/corpus | sha256sum",
    "pytest-benchmark": "python3 -m yourpackage testdata/corpus | sha256sum",
    "cmake-google-benchmark": "./build/NAME testdata/corpus | sha256sum",
    **dict.fromkeys(NODE, "node ./bin/NAME.js testdata/corpus | sha256sum"),
}


def _reads(ecosystem: Ecosystem) -> str:
    if ecosystem.output:
        return f"the {ecosystem.format} results it writes to {ecosystem.output}"
    if ecosystem.format:
        return f"its output as {ecosystem.format} prints it"
    return "its `go test -bench` rows"


def _strings(items) -> str:
    """A TOML array's items: each a basic string, escaped as TOML needs."""
    return ", ".join(json.dumps(item, ensure_ascii=False) for item in items)


def _ignore_journal(directory: Path) -> list[Path]:
    gitignore = directory / ".gitignore"
    current = gitignore.read_text(encoding="utf-8").splitlines() if gitignore.exists() else []
    missing = [line for line in GITIGNORE_LINES if line not in current]
    if not missing:
        return []
    with open(gitignore, "a", encoding="utf-8") as handle:
        if current and current[-1] != "":
            handle.write("\n")
        handle.write("\n".join(missing) + "\n")
    return [gitignore]
