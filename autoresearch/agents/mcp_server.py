"""`autoresearch mcp`: the session served to an agent over the Model Context Protocol (stdio).

The tools are the commands an agent driving its own session uses (tries.py): where the session
stands, its history, the ideas backlog, trying a change (long-running: `try_start` returns an id,
`try_result` polls it) and the report. No tool takes a shell command; the two that change the
repository (`try_start` can commit on the session branch, `ideas_add` edits ideas.md) say so in
their annotations. Needs the `mcp` SDK (`pip install 'autoresearch[mcp]'`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import Config
from ..errors import UserError

__all__ = ["build_server", "serve"]

INSTRUCTIONS = """\
autoresearch judges your performance experiments: you edit, it measures (interleaved runs
against the current best, in its own worktrees), decides with its statistics, runs the checks,
and keeps (a commit on the session branch) or reverts. Read `state` and `history` before each
idea; `try_start` your change (a patch, or your worktree as it is now) and poll `try_result`;
`ideas_add` what you want to try later; `report` for the whole session."""


def build_server(config: Config):
    """The MCP server for one session."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.types import ToolAnnotations
    except ImportError as exc:  # the SDK is an extra
        raise UserError(
            f"the MCP server needs the mcp SDK: pip install 'autoresearch[mcp]' ({exc})"
        ) from None

    server = _Answering(MCPServer(name="autoresearch", instructions=INSTRUCTIONS))
    reads = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    _session_tools(server, config, reads, writes)
    _try_tools(server, config, reads, writes)
    return server


class _Answering:
    """The server, whose every tool answers an odd argument (a NUL byte, a path in an id,
    "NaN", both of two exclusive ones) with a one-line error result, never a traceback: the
    SDK logs and hides anything but its own ToolError."""

    def __init__(self, server):
        self.server = server

    def tool(self, **options):
        from mcp.server.mcpserver.exceptions import ToolError

        register = self.server.tool(**options)

        def decorate(fn: Callable) -> Callable:
            @functools.wraps(fn)
            def answering(*args, **kwargs):
                for value in (*args, *kwargs.values()):
                    if isinstance(value, str) and "\0" in value:
                        raise ToolError("an argument holds a NUL byte")
                    if isinstance(value, float) and not math.isfinite(value):
                        raise ToolError(f"{value} is not a number this tool takes")
                try:
                    return fn(*args, **kwargs)
                except (UserError, OSError, ValueError) as exc:
                    raise ToolError(str(exc).splitlines()[0] if str(exc) else repr(exc)) from None

            return register(answering)

        return decorate

    def run(self, transport: str) -> None:
        self.server.run(transport)


def _session_tools(server, config: Config, reads, writes) -> None:
    """The session as it stands: state, history, the ideas backlog, the review. What a tool
    needs is imported when it is first called (the statistics bring scipy, a second's import):
    a client waits for its servers to start before its first turn."""

    @server.tool(annotations=writes)
    def profile(fresh: bool = False) -> dict[str, Any]:
        """Where the best's time goes: its profile's top frames by total and self time, as
        taken after its calibration; fresh=true takes one now (its build and one untimed
        run), without running the bench yourself."""
        from .outcome import best_profile_now

        return best_profile_now(config, fresh, {})

    @server.tool(annotations=reads)
    def state() -> dict[str, Any]:
        """Where the session stands: baseline, best, noise, the smallest change the loop
        claims (threshold_pct), experiments by status, budget left, the one in flight."""
        from ..morning.status import session_status

        return session_status(config)

    @server.tool(annotations=reads)
    def history(last: int = 10) -> list[dict[str, Any]]:
        """The last experiments (0: all), compact: status, change and 95% interval, the rule
        and reason, hypothesis, mechanism, family and the next-action hint."""
        from .outcome import history_rows

        return history_rows(config, last)

    @server.tool(annotations=reads)
    def ideas_list() -> list[str]:
        """The ideas backlog (ideas.md, outside the journal's own section)."""
        from ..report.ideas import backlog

        return backlog(config.ideas_path)

    @server.tool(annotations=writes)
    def ideas_add(text: str) -> list[str]:
        """Add one idea to the backlog in ideas.md (changes that file); the backlog after it."""
        from ..report.ideas import add_idea, backlog

        add_idea(config.ideas_path, text)
        return backlog(config.ideas_path)

    @server.tool(annotations=reads)
    def report() -> str:
        """The session's review: counts, baseline to best, wins, what did not work and why."""
        from ..report import load_history, render_text, summarize
        from ..report.render import NOT_KEPT_LISTED
        from .outcome import without_holdout_figures

        reviewed = load_history(config.journal_path, config.session.name)
        report = config.report
        summary = summarize(
            reviewed, report.comparison or None, report.comparison_label or None, NOT_KEPT_LISTED
        )
        return render_text(without_holdout_figures(summary))


def _try_tools(server, config: Config, reads, writes) -> None:
    """A change judged as one experiment, in the background, and its outcome."""

    @server.tool(annotations=writes)
    def try_start(
        title: str,
        patch: str | None = None,
        worktree: str | None = None,
        hypothesis: str | None = None,
        mechanism: str | None = None,
        expected_effect: str | None = None,
        family: str | None = None,
    ) -> dict[str, Any]:
        """Judge a change as one experiment: `patch` (a unified diff) or `worktree` (a directory
        whose files are the change; default: the session's repository checkout), read now.
        Runs in the background and may commit a win on the session branch; returns an `id`
        for try_result."""
        if patch and worktree:
            raise UserError("give patch or worktree, not both")
        if worktree and not Path(worktree).is_dir():
            raise UserError(f"worktree {worktree!r} is not a directory")
        args = ["--quiet", "--title", title]
        if not patch:
            args += ["--worktree", str(Path(worktree or config.repo_path).resolve())]
        for flag, value in (
            ("--hypothesis", hypothesis),
            ("--mechanism", mechanism),
            ("--expected-effect", expected_effect),
            ("--family", family),
        ):
            if value:
                args += [flag, value]
        if patch and not patch.endswith("\n"):
            patch += "\n"  # how a diff often arrives in a JSON argument: git needs its last newline
        from .tries import start_detached

        return start_detached(
            config, args, config.base_dir, patch.encode("utf-8") if patch else None
        )

    @server.tool(annotations=reads)
    def try_result(id: str, wait_s: float = 0.0) -> dict[str, Any]:
        """A started try's outcome (status, change, interval, rule, reason, what was refused
        and why, next-action hint), or status `running`; waits up to `wait_s` seconds."""
        from .tries import read_result

        return read_result(config, id, min(max(wait_s, 0.0), 600.0))


def serve(config: Config) -> None:
    """Serve over stdio until the client closes the connection."""
    build_server(config).run("stdio")
