"""The loop as a judge for an agent that drives its own session (`autoresearch try`, `state`,
`history`, and the same through the MCP server in mcp_server.py).

`try` takes the change an agent made (a patch file, or the state of a worktree the agent edits,
read once at the start: later edits do not change what is measured) and runs it as one
experiment of the session, exactly as `run` would: the patch checks, the bench interleaved
against the best in the loop's own worktrees, the decision rule, the checks, keep or revert,
one journal record. The session lock makes a `try` refuse while `run` or another `try` holds
the session.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..atomic import fresh_name
from ..bench.proc import process_started, running, spawn_detached
from ..config import Config
from ..errors import UserError
from ..files import read_bounded
from ..journal.fold import derived_paths
from ..journal.records import ExperimentRecord
from ..loop.driver import try_hypothesis
from ..loop.session import RunOptions
from ..process.procfs import environ_of
from ..progress import Progress
from ..proposers import Hypothesis, parse_patch_file
from ..repo.gitrepo import Repo, tree_patch
from ..repo.state_dir import session_paths

__all__ = [
    "read_result",
    "start_detached",
    "try_change",
    "worktree_patch",
]


def worktree_patch(path: Path, tip: str, exclude: list[Path] | None = None) -> bytes:
    """The worktree's files against `tip`, read through a scratch index: the worktree and its
    own index are untouched. `exclude`: files (or directories, whole) that are the loop's, not
    the change (the journal, what is derived from it, ideas.md, the config)."""
    root = path.resolve()
    skipped = set()
    for item in exclude or []:
        with contextlib.suppress(ValueError):
            skipped.add(item.resolve().relative_to(root).as_posix())

    def loops(rel: str) -> bool:
        return rel in skipped or any(rel.startswith(f"{s}/") for s in skipped)

    with tempfile.TemporaryDirectory(prefix="autoresearch-try-") as scratch:
        tree = Repo(path)  # your own tree: where its .git leads is yours to say
        return tree_patch(tree, tip, loops, index=Path(scratch) / "index")


def try_change(
    config: Config,
    *,
    patch_file: Path | None,
    worktree: Path | None,
    fields: dict[str, str | None],
    options: RunOptions,
    progress: Progress,
) -> ExperimentRecord:
    """One experiment of the session, for a change an agent made."""
    return try_hypothesis(
        config,
        lambda tip: _hypothesis(config, tip, patch_file, worktree, fields),
        options,
        progress,
    )


def _hypothesis(
    config: Config,
    tip: str,
    patch_file: Path | None,
    worktree: Path | None,
    fields: dict[str, str | None],
) -> Hypothesis:
    """The change as a hypothesis: a patch file (its header the reasoning), or the worktree's
    state against the session's `tip`, read once, with the fields given on the command line."""
    if patch_file is not None:
        found = parse_patch_file(patch_file)
        patch = found.patch
        given = {
            "title": found.title,
            "hypothesis": found.hypothesis,
            "mechanism": found.mechanism,
            "expected_effect": found.expected_effect,
        }
        source = str(patch_file)
    else:
        journal = config.journal_path
        own = [journal, *derived_paths(journal), config.ideas_path, config.path]
        patch = worktree_patch(worktree or Path.cwd(), tip, own)
        given, source = {}, f"worktree:{worktree or Path.cwd()}"
    given |= {k: v for k, v in fields.items() if v}
    if not patch.strip():
        raise UserError(
            "nothing to try: the change is empty (edit the worktree, or give --patch FILE)"
        )
    title = given.get("title")
    if not title:
        raise UserError("a try needs a title: --title TEXT (or a Title: line in the patch)")
    return Hypothesis(
        title=title,
        patch=patch,
        hypothesis=given.get("hypothesis"),
        mechanism=given.get("mechanism"),
        expected_effect=given.get("expected_effect"),
        family=given.get("family"),
        source=source,
        proposer="try",
    )


def start_detached(
    config: Config, try_args: list[str], cwd: Path, patch: bytes | None = None
) -> dict[str, Any]:
    """Start `autoresearch try` in the background; its id, to read the outcome by. `patch`,
    when given, is kept beside the try's log and tried."""
    tries = session_paths(config).root / "tries"
    tries.mkdir(parents=True, exist_ok=True)
    label = fresh_name(tries, "try", ".log")
    if patch is not None:  # not <label>.patch: its sidecar would be the outcome, <label>.json
        (tries / f"{label}-change.patch").write_bytes(patch)
        try_args = [*try_args, "--patch", str(tries / f"{label}-change.patch")]
    command = [
        sys.executable,
        "-m",
        "autoresearch.cli",
        "try",
        "--config",
        str(config.path),
        "--session",
        config.session.name,
        *try_args,
    ]
    pid = spawn_detached(
        command,
        cwd=cwd,
        stdout=tries / f"{label}.json",
        stderr=tries / f"{label}.log",
        env={TRY_ENV: label},
    )
    (tries / f"{label}.pid").write_text(f"{pid} {process_started(pid) or ''}".strip())
    return {"id": label, "status": "running", "log": str(tries / f"{label}.log")}


TRY_ID = re.compile(r"try-[A-Za-z0-9_-]{1,80}")
# What a detached try carries in its environment: its id, by which `result` tells its process
# from another one the system gave the same pid since.
TRY_ENV = "AUTORESEARCH_TRY_ID"


def read_result(config: Config, try_id: str, wait_s: float = 0.0) -> dict[str, Any]:
    """A detached try's outcome; `running` while it runs (waiting up to `wait_s` for it).
    Whatever is on disk (a pid file gone or garbled, an outcome that is not a JSON object, a
    pid the system gave to another process since) is an answer, never a traceback."""
    if not isinstance(try_id, str) or not TRY_ID.fullmatch(try_id):
        raise UserError(f"{try_id!r} is not a try id (they look like try-20260101T120000)")
    tries = session_paths(config).root / "tries"
    log = tries / f"{try_id}.log"
    if not log.exists():
        raise UserError(f"no try {try_id} in session '{config.session.name}' ({tries})")
    pid, started = _try_pid(tries / f"{try_id}.pid")
    deadline = time.monotonic() + wait_s
    while True:
        # Asked before reading: the outcome of a try that had ended is complete when read.
        ended = pid is None or not _is_try(pid, started, try_id)
        text = _read_text(tries / f"{try_id}.json")
        if text.strip():
            try:
                found = json.loads(text)
            except ValueError:
                found = None  # still being written, or garbled (said below once it ended)
            if isinstance(found, dict) and isinstance(found.get("status"), str):
                return found
            if ended:
                what = "not JSON" if found is None else "not a try's outcome"
                error = f"its outcome file is {what}"
                return {"id": try_id, "status": "error", "error": error, "log": str(log)}
        if ended:
            tail = _read_text(log).strip().splitlines()
            why = tail[-1] if tail else "it ended without an outcome"
            return {"id": try_id, "status": "error", "error": why, "log": str(log)}
        if time.monotonic() >= deadline:
            return {"id": try_id, "status": "running", "log": str(log)}
        time.sleep(0.2)


def _is_try(pid: int, started: int | None, try_id: str) -> bool:
    """Whether `pid` is the live process of try `try_id`: started when its pid file says, and
    carrying the try's id in its environment (a reused pid carries neither). An environment
    that reads as nothing is no answer: a new process reads so from the moment exec wakes its
    parent to the moment exec lays the environment out, a window a busy machine stretches past
    the time an agent takes to ask; the start time in its pid file names it then (with none,
    it is not the try)."""
    if not running(pid, started):
        return False
    environ = environ_of(pid)
    if not environ:
        return started is not None
    return f"{TRY_ENV}={try_id}".encode() in environ.split(b"\0")


def _try_pid(path: Path) -> tuple[int | None, int | None]:
    """The detached try's pid and start time, from its pid file; (None, None) when it has
    none that can be read (the try is then taken as ended)."""
    parts = _read_text(path).split()
    try:
        pid = int(parts[0]) if parts else None
        started = int(parts[1]) if len(parts) > 1 else None
    except ValueError:
        return None, None
    return (pid if pid and pid > 0 else None), started


def _read_text(path: Path) -> str:
    try:
        return read_bounded(path, what="try file").decode("utf-8", errors="replace")
    except UserError:
        return ""
