"""What an agent left behind, and the checks it must pass before any bench time is spent.

The scratch worktree is a detached checkout of the current best, reset for every proposal. The
patch is its binary-safe diff against the best (gitrepo.tree_patch: new files and the agent's
commits included, the hand-off directory and the CLI's own droppings left out). A proposal is
refused, with its reason, when the diff is empty, leaves the scope or touches a protected path,
is over the size limit, comes without a well-formed hypothesis file, repeats a patch already
tried, or retries a closed axis (its title and family match an experiment rejected for a
reason more runs will not change).
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...bench.proc import RunResult, read_log
from ...config import Config
from ...errors import UserError, WorkspaceError
from ...files import read_bounded
from ...journal.agent_run import AgentRun, Usage
from ...process.capture import capture
from ...repo.gitrepo import Repo
from ...repo.patchcheck import check_paths, patch_paths
from ...repo.workspace import BaselineTree
from ...statuses import Status
from ..base import Hypothesis, ProposalContext, patch_sha256
from .prompt import closed_axes
from .settings import AgentSettings

__all__ = [
    "REQUIRED",
    "Proposal",
    "applies_at",
    "fresh_scratch",
    "guard",
    "read_hypothesis_file",
    "same_idea",
]

MAX_HYPOTHESIS_BYTES = 1024 * 1024  # reasoning, not a novel: its fields are cut shorter still
REQUIRED = ("title", "hypothesis", "family")
OPTIONAL = ("mechanism", "expected_effect")
NOT_FOUND = 127  # the shell's exit code for a command it could not find
SIMILAR = 0.85  # normalized titles at least this alike (difflib ratio), same family: one idea


@dataclass(frozen=True)
class Proposal:
    """One agent run, unjudged."""

    patch: bytes
    hypothesis: dict[str, Any] | None
    hypothesis_problem: str | None
    result: RunResult
    usage: Usage
    agent: AgentRun
    tip: str  # the best it was made at
    branch_moved: bool = False
    stale: str | None = None  # made ahead at an older best, and why it cannot be used now
    reached: str | None = None  # what it changed outside its scratch tree (put back)
    broken: str | None = None  # how it broke its scratch tree, so that no change could be read


def fresh_scratch(source: Repo, path: Path, tip: str) -> Repo:
    """The scratch worktree at `tip`, with nothing left of the last proposal (ignored files
    included: a build the agent ran is not part of the next one's start)."""
    tree = BaselineTree(source, path)
    try:
        moved = tree.ensure(tip)  # checks out, and cleans, whenever anything differs from `tip`
        scratch = Repo.worktree(source, tree.path)
    except WorkspaceError:
        # The agent broke it (deleted or corrupted its `.git`): the tree is the loop's own
        # scratch space, so it is made again rather than ending the proposer.
        shutil.rmtree(path, ignore_errors=True)
        source.run("worktree", "prune")
        moved = tree.ensure(tip)
        scratch = Repo.worktree(source, tree.path)
    if not moved:
        scratch.must("clean", "-ffdxq")
    return scratch


def applies_at(tree: Repo, patch: bytes) -> str | None:
    """Why `patch` does not apply to `tree` as it is, or None when it does."""
    done = capture(["git", "apply", "--check", "-"], cwd=tree.path, env=tree.env(), stdin=patch)
    return None if done.ok else done.why()


def read_hypothesis_file(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The agent's hypothesis (what it holds, even when malformed) and what is wrong with it."""
    if not path.exists() and not path.is_symlink():
        return None, "the agent wrote no hypothesis file ($AUTORESEARCH_HYPOTHESIS)"
    try:
        # A FIFO, a link to /dev/zero, a huge file: refused without reading.
        text = read_bounded(path, MAX_HYPOTHESIS_BYTES, "hypothesis file").decode("utf-8")
    except UserError as exc:
        return None, f"the hypothesis file cannot be read: {exc}"
    except UnicodeDecodeError as exc:
        return None, f"the hypothesis file is not UTF-8: {exc}"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, f"the hypothesis file is not JSON: {exc}"
    if not isinstance(data, dict):
        return None, "the hypothesis file must hold a JSON object"
    for key in REQUIRED:
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            return data, f"the hypothesis file has no '{key}' (a non-empty string)"
    for key in OPTIONAL:
        if key in data and data[key] is not None and not isinstance(data[key], str):
            return data, f"the hypothesis file's '{key}' must be a string"
    return data, None


def guard(
    proposal: Proposal,
    context: ProposalContext,
    config: Config,
    settings: AgentSettings,
    agent: AgentRun,
) -> Hypothesis:
    """The proposal as a hypothesis: ready to measure, or carrying why it may not be."""
    data = proposal.hypothesis or {}
    text = {k: _text(data.get(k)) for k in (*REQUIRED, *OPTIONAL)}
    made: dict[str, Any] = {
        "title": text["title"] or "agent proposal without a title",
        "patch": proposal.patch,
        "hypothesis": text["hypothesis"],
        "mechanism": text["mechanism"],
        "expected_effect": text["expected_effect"],
        "family": text["family"],
        "source": f"agent:{settings.preset}",
    }

    failed = _failure(proposal)
    if failed is not None:
        kind, why = failed
        return Hypothesis(
            **made,
            problem=why,
            problem_status=Status.AGENT_FAILED,
            agent=agent.refused(kind),
        )
    refused = _refusal(proposal, context, config, settings, made)
    if refused is not None:
        kind, why = refused
        return Hypothesis(
            **made, problem=why, problem_status=Status.REFUSED, agent=agent.refused(kind)
        )
    return Hypothesis(**made, agent=agent)


def _failure(proposal: Proposal) -> tuple[str, str] | None:
    """How the agent failed before proposing anything: (kind, why), or None."""
    result = proposal.result
    if result.interrupted:
        return "interrupted", "the agent was stopped: the night was asked to stop"
    if result.timed_out:
        return "timeout", f"the agent {result.describe()}"
    if result.exit_code != 0:  # what the CLI said of it, parsed, before its last words
        said = proposal.usage.error or _error_line(read_log(result.log_path) or result.tail)
        said += _not_found_hint(proposal.agent) if result.exit_code == NOT_FOUND else ""
        why = f"the agent failed ({result.describe()})" + (f": {said}" if said else "")
        return "crash", f"{why} (its log: {result.log_path})"
    if proposal.usage.error:
        return "error", f"the agent reported an error: {proposal.usage.error}"
    if proposal.broken:
        return "scratch", (
            f"the agent broke its scratch tree, so that its change could not be read "
            f"({proposal.broken}); the tree is made afresh for the next proposal"
        )
    return None


def _not_found_hint(agent: AgentRun) -> str:
    """Where a command the shell could not find (exit 127) was looked for: inside the agent's
    sandbox, /tmp is a private one, so a program there is not the one the user sees."""
    try:
        program = shlex.split(agent.command)[0]
    except (ValueError, IndexError):
        return ""
    confined = agent.confined
    where = "inside the agent's sandbox" if confined else "on this machine"
    if not program.startswith("/"):
        return f" ({program} was looked for on PATH {where})"
    hint = f" ({program} was looked for {where}"
    if confined and Path(program).is_relative_to("/tmp"):
        hint += (
            ", where /tmp is private to the sandbox and empty: put the agent's command "
            "outside /tmp, or on PATH"
        )
    return hint + ")"


def _refusal(
    proposal: Proposal,
    context: ProposalContext,
    config: Config,
    settings: AgentSettings,
    made: dict[str, Any],
) -> tuple[str, str] | None:
    """The first rule the proposal breaks before any bench time is spent: (kind, why)."""
    if proposal.branch_moved:
        return "branch", "the agent moved the session branch (put back): it may only edit files"
    if proposal.reached:
        return "reach", f"the agent changed the repository, not only its files: {proposal.reached}"
    if not proposal.patch.strip():
        denied = proposal.usage.denied
        if denied:  # said, so that the next prompt (and the user) knows why
            shown = "; ".join(denied[:5]) + (
                f" and {len(denied) - 5} more" if len(denied) > 5 else ""
            )
            return "empty", f"the agent changed no file; its CLI refused: {shown}"
        return "empty", "the agent changed no file"
    patch_text = proposal.patch.decode("utf-8", errors="surrogateescape")
    problem = check_paths(
        patch_text,
        patch_paths(patch_text),
        worktree=context.worktree,
        include=config.scope.include,
        protect=config.protected_globs(),
        allow_binary=config.scope.allow_binary,
    )
    if problem is not None:
        return "scope", problem.message
    if len(proposal.patch) > settings.max_patch_kib * 1024:
        size = len(proposal.patch) / 1024
        return "size", f"the diff is {size:.0f} KiB (max_patch_kib = {settings.max_patch_kib})"
    if proposal.stale:
        return "stale", proposal.stale
    if proposal.hypothesis_problem:
        return "hypothesis_file", proposal.hypothesis_problem
    return _repeat(proposal, context, made)


def _repeat(
    proposal: Proposal, context: ProposalContext, made: dict[str, Any]
) -> tuple[str, str] | None:
    """A patch tried before, or the same idea as a closed axis."""
    sha = patch_sha256(proposal.patch)
    earlier = next((r for r in context.records if r.patch_sha256 == sha), None)
    if earlier is not None or sha in context.tried:
        what = (
            f"#{earlier.n} {earlier.title!r} ({earlier.status})" if earlier else "an earlier patch"
        )
        return "duplicate", f"the diff is identical to {what}"
    for record in closed_axes(context.records):
        if same_idea(made["title"], made["family"], record.title, record.family):
            return "closed_axis", (
                f"the same idea as #{record.n} {record.title!r} [{record.family}], a closed axis "
                f"({record.status}): propose something structurally different"
            )
    return None


def same_idea(title: str, family: str | None, other_title: str, other_family: str | None) -> bool:
    """Same family and the same title, once case, punctuation and spacing are set aside."""
    if not family or not other_family or _norm(family) != _norm(other_family):
        return False
    a, b = _norm(title), _norm(other_title)
    return a == b or difflib.SequenceMatcher(None, a, b).ratio() >= SIMILAR


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


# Terminal escapes (colours, cursor moves, titles) a CLI prints even when not on a terminal.
# A line of a backtrace or traceback: it says where, not what.
_FRAME = re.compile(r"^(\d+:\s|at\s|File \"|Traceback \(|stack backtrace:|note: run with)")
_ERRORISH = re.compile(r"\b(error|failed|fatal|panicked|exception)\b", re.IGNORECASE)
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def _error_line(text: str) -> str:
    """What the agent said of its failure, plain: among its last lines, the first that names
    an error (a backtrace's frames and a traceback's lines passed over: `11: <unknown>` says
    nothing), else the last one; escapes dropped, a JSON line as its message."""
    lines = [_ESCAPES.sub("", line).strip() for line in (text or "").splitlines()[-200:]]
    said = [(line, _json_message(line)) for line in lines if line and not _FRAME.match(line)]
    if not said:
        return ""
    errors = [
        message or line
        for line, message in said
        if message is not None or (not line.startswith("{") and _ERRORISH.search(line))
    ]
    last, message = said[-1]
    return (errors[0] if errors else message or last)[:300]


def _json_message(line: str) -> str | None:
    """The error message of a JSON line that reports one (`{"error": {"message": ...}}`,
    `{"type": "error", ...}`); None for any other line."""
    if not line.startswith("{"):
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or ("error" not in data and data.get("type") != "error"):
        return None
    detail = data.get("error", data)
    if isinstance(detail, dict):
        detail = detail.get("message") or detail.get("result") or detail.get("type")
    return str(detail or line)
