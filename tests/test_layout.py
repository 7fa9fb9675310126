"""The shape of the package: what the docs' architecture section says, floors that import only
downwards, no import cycle, and processes started in one place."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "autoresearch"


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The autoresearch modules `path` imports when it runs (not those for type checking)."""
    tree = ast.parse(path.read_text())
    tree.body = [n for n in tree.body if not isinstance(n, ast.If)]  # `if TYPE_CHECKING:`
    here = _module(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            target = [*base, *(node.module.split(".") if node.module else [])]
            if node.module:  # `from . import x` imports x, not the package itself
                found.add(".".join(target))
            found.update(".".join([*target, a.name]) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autoresearch"):
            found.add(node.module)
    return found


def test_the_architecture_table_names_every_folder_of_the_package():
    page = (ROOT / "docs" / "development.md").read_text()
    section = page.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"^\| `(\w+)/` \|", section, re.M))
    folders = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert named == folders


# The package's floors, from the ground up: a folder (or a top-level module) imports only from
# the floors below its own, never across or up. The morning's commands (morning/) read the
# journal and git; the report renders them; the loop measures and judges; the faces (cli, the
# agents' commands, bench hosts, init) drive the loop.
FLOORS = [
    {"errors", "statuses", "inert", "filestate", "progress", "profiles", "process"},
    {"files", "atomic", "plugins", "tables", "readers"},
    {"config_checks"},
    {"config"},
    {"journal", "config_docs"},
    {"decide"},
    {"repo"},
    {"bench"},
    {"morning"},
    {"report"},
    {"proposers"},
    {"loop"},
    {"agents", "cluster", "init"},
    {"cli"},
    {"reference", "__main__"},
]


def _room(module: str) -> str:
    """autoresearch.<room>[.module...]: a folder of the package, or a top-level module."""
    return module.split(".")[1]


def test_every_room_has_a_floor():
    rooms = {_room(_module(p)) for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE}
    rooms |= {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert rooms == set().union(*FLOORS)


def test_imports_run_only_down_a_floor():
    floor = {room: n for n, rooms in enumerate(FLOORS) for room in rooms}
    up = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "__init__.py":
            continue
        here = _room(_module(path))
        for name in _imports(path):
            there = _room(name) if name.count(".") else None
            if there in floor and there != here and floor[there] >= floor[here]:
                up.append(f"{path.relative_to(ROOT)} imports {name}")
    assert up == []


def _names_from_loop(path: Path) -> set[str]:
    """The names `path` takes from modules of loop/ (type-only imports included)."""
    here = _module(path).split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = here[: len(here) - node.level + 1] if node.level else []
        module = ".".join([*base, *(node.module or "").split(".")]).strip(".")
        if module.startswith("autoresearch.loop"):
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_one_driver_and_the_faces_take_a_few_names_of_the_loop():
    """The night is driven in one place (loop/dispatch.py), whatever measures it: the command
    line, `try` and `confirm` start it through loop/driver.py; bench hosts are an executor of
    it (cluster/), not a second driver. cluster/ and agents/ each take at most four names from
    loop/, and none of them the dispatch itself."""
    dispatchers = {
        str(path.relative_to(ROOT))
        for path in PACKAGE.rglob("*.py")
        if "autoresearch.loop.dispatch" in _imports(path)
    }
    assert dispatchers == {"autoresearch/loop/driver.py"}
    for face in ("cluster", "agents"):
        names = set().union(*(_names_from_loop(p) for p in (PACKAGE / face).rglob("*.py")))
        assert len(names) <= 4, (face, sorted(names))
        assert not any(".dispatch." in name or ".landing." in name for name in names), names


def test_each_module_name_says_one_role():
    """A file name found once in the package: `finalize.py` is the command's plan, never also
    git's plumbing beside it in another folder."""
    names = [p.name for p in PACKAGE.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def test_no_import_cycle():
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: _imports(path) & set(modules) for name, path in modules.items()}

    def reaches(start: str) -> set[str]:
        seen, todo = set(), list(graph[start])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(graph[name])
        return seen

    cycles = sorted(name for name in graph if name in reaches(name))
    assert cycles == []


def test_processes_start_in_one_module():
    """Every process goes through bench/proc.py (the target's runs), process/capture.py (the
    helpers the loop asks things of) or GitPython: each gets a timeout and a process group."""
    starting = [
        str(p.relative_to(ROOT))
        for p in PACKAGE.rglob("*.py")
        if re.search(r"^\s*import subprocess|subprocess\.(run|Popen)", p.read_text(), re.M)
    ]
    assert sorted(starting) == ["autoresearch/bench/proc.py", "autoresearch/process/capture.py"]


# The modules that open files without files.read_bounded, each for files that are not a
# run's: the loop's own (its journal and the files derived from it, its state, the logs and
# markers it writes, the host's clone and calibrations, the configuration, the templates, a
# stored profile, the page it serves), the repository `init` reads before any run, and /proc.
# Everything a run leaves (its output file, its test report, its profile, the best's files,
# an agent's proposal, a queued patch) is read through files.read_bounded: no link followed,
# nothing but a regular file, bounded.
OWN_FILES = {
    "atomic", "tables", "reference", "filestate", "profiles",
    "journal/fold", "journal/index", "journal/store", "journal/tail",
    "repo/arms", "repo/gitrepo", "repo/mirror", "repo/seal", "repo/state_dir", "repo/workspace",
    "bench/logcap", "bench/proc", "bench/sandbox", "bench/staging",
    "loop/flights", "loop/second_look", "loop/testref",
    "cluster/host", "cluster/dask_executor",
    "init/ecosystems", "init/found", "init/listing", "init/pi_import", "init/scaffold",
    "proposers/agent/prompt", "report/history", "report/ideas", "report/page",
    "cli/__init__", "cli/review", "process/procfs",
}  # fmt: skip


def _raw_opens(path: Path) -> list[int]:
    """The lines of `path` that open a file themselves: open(), os.open(), Path.open(),
    read_text(), read_bytes()."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            named = isinstance(func, ast.Name) and func.id == "open"
            method = isinstance(func, ast.Attribute) and func.attr in (
                "open",
                "read_text",
                "read_bytes",
            )
            if named or method:
                lines.append(node.lineno)
    return lines


def test_what_a_run_leaves_is_read_by_one_reader():
    """A file a run controls (a FIFO hangs the night, a link to /dev/zero fills the loop's
    memory) is opened only through files.read_bounded; a module opens a file itself only for
    the loop's own files (OWN_FILES): a new reader of a run's output fails here."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        name = str(path.relative_to(PACKAGE).with_suffix(""))
        if name == "files" or name in OWN_FILES:
            continue
        found += [f"{name}.py:{line}" for line in _raw_opens(path)]
    assert found == []
    stale = [name for name in OWN_FILES if not _raw_opens(PACKAGE / f"{name}.py")]
    assert stale == [], "no longer opens a file itself: take it off OWN_FILES"


HEAVY = ("scipy.stats", "pandas", "matplotlib")


@pytest.mark.parametrize(
    ("modules", "heavy"),
    [
        # `run`: everything up to its first bench; the rule's distributions come at first use
        (
            ["autoresearch.cli.night", "autoresearch.loop.driver", "autoresearch.loop.stages"],
            HEAVY,
        ),
        # status, state and history, which read files: GitPython's import too is a tenth of
        # their second on a season's journal
        (
            [
                "autoresearch.cli.agents",
                "autoresearch.morning.status",
                "autoresearch.agents.outcome",
            ],
            (*HEAVY, "git"),
        ),
    ],
)
def test_the_loop_and_the_light_commands_import_nothing_heavy(modules, heavy):
    """scipy.stats, pandas and matplotlib each take a large part of a second to import: the
    loop's start and the agents' faces wait for none of them."""
    code = (
        f"import sys\nfor m in {modules!r}: __import__(m)\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_no_module_over_500_lines_and_no_function_over_60():
    """Small modules and functions that fit on a screen: the limits the layout was cut to."""
    long_modules, long_functions = [], []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        name = str(path.relative_to(ROOT))
        if len(text.splitlines()) > 500:
            long_modules.append(name)
        for node in ast.walk(ast.parse(text)):
            function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            if function and node.end_lineno - node.lineno + 1 > 60:
                long_functions.append(f"{name}:{node.name}")
    assert (long_modules, long_functions) == ([], [])
