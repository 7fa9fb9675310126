"""A confined run sees of your home only what it needs, by an allow-list: the tools on its PATH
(their programs and libraries, not the data and credentials beside them), the stores of what
their toolchains fetched, and what `[sandbox] read` names. Not even the names of the rest.

The attack is the whole home: a run of the target's code, and an agent, walk every entry they
can list under it and read every file they find. Whatever the home holds (keys, a tool's
credentials beside its `bin/`, other programs' data, names drawn at random), what they find
must be the ways to what is allowed, nothing more."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from conftest import make_target
from test_sandbox import _run, confine

from autoresearch.bench.agent_sandbox import agent_sandbox
from autoresearch.bench.bwrap import bwrap_problem
from autoresearch.bench.covers import hidden_homes
from autoresearch.bench.sandbox import Sandbox, sandbox_for
from autoresearch.bench.tool_ways import STORES

pytestmark = pytest.mark.skipif(bwrap_problem() is not None, reason="needs bubblewrap")

# Walks the home as the run sees it: every name it can list, and whether it can read it.
WALK = """
import json, os, sys
out, homes = sys.argv[1], sys.argv[2:]
seen = {}
for home in homes:
  seen[home] = found = {}
  for root, dirs, files in os.walk(home):
    for name in dirs + files:
        path = os.path.join(root, name)
        rel = os.path.relpath(path, home)
        if os.path.islink(path):
            found[rel] = "link"
        elif os.path.isdir(path):
            found[rel] = "dir"
        else:
            try:
                with open(path, errors="replace") as f:
                    found[rel] = f.read(100)
            except OSError as exc:
                found[rel] = exc.strerror
    dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
with open(out, "w") as f:
    json.dump(seen, f)
"""

ALLOWED = {
    # On PATH: a tool prefix at the home's top shows its programs and libraries.
    ".cargo/bin/cargo-x": "a tool",
    ".local/bin/tool": "a tool",
    ".local/lib/python3.11/site-packages/m.py": "its library",
    # The home's own bin/ on PATH: that directory alone.
    "bin/mine": "a script of yours on PATH",
    # A tool's own install deeper in the home: the whole of it.
    ".nvm/versions/node/v22.1.0/bin/node": "node",
    ".nvm/versions/node/v22.1.0/lib/node_modules/npm/index.js": "npm",
    # Behind a link on PATH (~/tools -> ~/.opt/tools-1.0).
    ".opt/tools-1.0/bin/tl": "a linked tool",
    ".opt/tools-1.0/share/tl/data": "its data",
    # Toolchains' stores, at their default places.
    ".cargo/registry/index/crate.toml": "the registry",
    "go/pkg/mod/example.com/m@v1.0.0/m.go": "a module",
    ".rustup/toolchains/stable/bin/rustc": "rustc",
    # Named by [sandbox] read.
    "data/corpus.txt": "what the bench reads",
}

HIDDEN = {
    ".ssh/id_ed25519": "your key",
    ".cargo/credentials.toml": "a registry token",
    ".local/share/keyrings/login.keyring": "a keyring",
    ".local/share/opencode/auth.json": "an agent's login",
    "go/src/mine/secret.go": "your code",
    ".nvm/.cache/token": "a cache",
    ".opt/other/secret": "another install's secret",
    ".rustup/downloads/partial": "a download",
    "notes.txt": "your notes",
    ".claude/settings.json": "an agent's settings",
    ".gitconfig": "your git identity",
}

TOOL_DIRS = ("bin", ".cargo/bin", ".local/bin", ".nvm/versions/node/v22.1.0/bin", "tools/bin")


def _home(root: Path) -> Path:
    """A home with what is allowed, what is not, and names nobody listed."""
    home = root / "home"
    drawn = {
        f"{uuid.uuid4().hex[:6]}/{uuid.uuid4().hex[:6]}/{uuid.uuid4().hex[:4]}": "drawn"
        for _ in range(4)
    }
    for rel, text in {**ALLOWED, **HIDDEN, **drawn}.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    (home / "tools").symlink_to(home / ".opt" / "tools-1.0")
    return home


def _ways(files: set[str]) -> set[str]:
    """The directories on the way to `files`, relative to the home."""
    return {str(p) for rel in files for p in Path(rel).parents if str(p) != "."}


@pytest.fixture
def home(monkeypatch):
    # Outside /tmp (a confined run has a private one), where a home is.
    root = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="autoresearch-home-"))
    home = _home(root)
    for store in STORES:
        monkeypatch.delenv(store.variable, raising=False) if store.variable else None
    monkeypatch.setenv("HOME", str(home))
    tools = os.pathsep.join(str(home / d) for d in TOOL_DIRS)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    yield home
    import shutil

    shutil.rmtree(root, ignore_errors=True)


def _walk(sandbox, home: Path, tree: Path, homes: bool = True) -> dict[str, str]:
    """What a run in `tree` finds in `home`; and, in every user's home (/home), nothing but
    the ways to the tools on its PATH there."""
    out = tree / "found.json"
    script = tree / "walk.py"
    script.write_text(WALK)
    roots = f"{home} /home" if homes and Path("/home").is_dir() else str(home)
    command = f"{sys.executable} walk.py found.json {roots}"
    result = _run(sandbox, command, tree, tree.parent / "walk.log")
    assert result.ok, result.tail
    seen = json.loads(out.read_text())
    entries = [Path(e) for e in os.environ["PATH"].split(os.pathsep) if e]
    tools = [e.parent for e in entries if Path("/home") in e.parents]
    for rel, what in seen.get("/home", {}).items():
        path = Path("/home", rel)
        on_the_way = any(t in path.parents or t == path or path in t.parents for t in tools)
        assert on_the_way, (path, what)
    return seen[str(home)]


def _config(home_root: Path):
    target = make_target(home_root / "repo")
    confine(target, read='["~/data/corpus.txt"]')
    return target.load()


def test_a_run_of_the_target_sees_of_the_home_only_its_tools_their_stores_and_what_is_named(
    home, tmp_path
):
    config = _config(tmp_path)
    sandbox, why = sandbox_for(config)
    assert sandbox is not None, why
    tree = tmp_path / "state" / "arm"
    tree.mkdir(parents=True)

    found = _walk(sandbox, home, tree)

    links = {"tools": "link"}
    assert found == {**ALLOWED, **dict.fromkeys(_ways(set(ALLOWED)), "dir"), **links}


def test_an_agent_cannot_list_the_home_but_its_tools(home, tmp_path):
    config = _config(tmp_path)
    scratch = tmp_path / "state" / "scratch"
    scratch.mkdir(parents=True)
    sandbox = agent_sandbox(config, scratch, home=[".claude"])
    assert sandbox is not None

    found = _walk(sandbox, home, scratch)

    links = {"tools": "link"}
    assert found == {**ALLOWED, **dict.fromkeys(_ways(set(ALLOWED)), "dir"), **links}


def test_an_agent_in_a_scratch_tree_in_the_home_sees_where_its_tmp_is(home, tmp_path):
    """The directory its /tmp is, by the name the mount table gives it, is in sight: Codex's
    own sandbox binds /tmp again from there, and fails every edit when it is not. The scratch
    tree where a state directory in the home puts it (a checkout there)."""
    config = _config(tmp_path)
    scratch = home / ".cache" / "autoresearch" / "scratch" / "agent-scratch"
    scratch.mkdir(parents=True)
    sandbox = agent_sandbox(config, scratch, home=[])
    assert sandbox is not None
    where = "awk '$5 == \"/tmp\" {print $4}' /proc/self/mountinfo > tmp-root"

    done = _run(sandbox, f"{where} && test -d $(cat tmp-root)", scratch, tmp_path / "tmp.log")

    assert done.ok, (scratch / "tmp-root").read_text()


def test_a_home_inside_a_hidden_directory_is_never_shown_whole(home, tmp_path, monkeypatch):
    """The usual layout: your home inside /home, both hidden. A script named in the home's
    top (`~/bench.py`, a program), and the home itself on PATH, show that file alone, never
    the home whole; a file of data named there (`cat ~/notes.txt`) is not shown; the directory
    around the home shows nothing but the way to it."""
    (home / "bench.py").write_text("a script of yours")
    (home / "bench.py").chmod(0o755)
    (home / "notes.txt").write_text("what you keep")
    monkeypatch.setenv("PATH", f"{home}{os.pathsep}{os.environ['PATH']}")
    outer = home.parent
    (outer / "someone-else" / ".ssh").mkdir(parents=True)
    (outer / "someone-else" / ".ssh" / "id_rsa").write_text("their key")
    sandbox = Sandbox(
        one_path=True, hide=(outer, home), reveal=(home / "bench.py", home / "notes.txt")
    )
    tree = tmp_path / "state" / "arm"
    tree.mkdir(parents=True)

    found = _walk(sandbox, outer, tree, homes=False)

    allowed = {f"home/{rel}": text for rel, text in ALLOWED.items() if not rel.startswith("data/")}
    allowed["home/bench.py"] = "a script of yours"
    ways = _ways(set(allowed))
    assert found == {**allowed, **dict.fromkeys(ways, "dir"), "home/tools": "link"}


def test_a_home_that_is_the_root_hides_no_file_system_and_the_other_homes_still(monkeypatch):
    """A container's HOME=/ is no directory to show only the ways through (it would be the
    whole file system); every user's home, their runtime directories and the checkout are."""
    monkeypatch.setenv("HOME", "/")
    checkout = Path("/var/tmp/a-checkout")

    hidden = hidden_homes(checkout)

    assert Path("/") not in hidden and hidden[-1] == checkout
    assert (Path("/home") in hidden) == Path("/home").is_dir()
