"""A coding agent proposes, the loop decides.

For each proposal a fresh agent process runs in a scratch worktree at the current best (never
one of the measurement worktrees), with a prompt built from the journal (prompt.py). Its
edit, taken as the scratch tree's binary-safe diff, is the patch; the hypothesis it writes to
`$AUTORESEARCH_HYPOTHESIS` is the reasoning. Before any bench time is spent the proposal is
checked (guard.py); a refused proposal, or an agent that crashed or timed out, is a
record with its reason, shown to the next prompt, and the night goes on.

    [[proposer]]
    kind = "agent"
    preset = "command"                       # or claude, codex, aider, gemini, opencode
    command = "python3 tools/my_agent.py"    # run with bash in the scratch worktree
    timeout_s = 600
    max_proposals = 30

Budgets: per proposal a timeout (and turns and dollars where the CLI takes them); per session
`max_proposals` and `max_cost_usd`, counted from the journal so that a resumed night goes on
from what it spent. A proposal whose CLI reports no cost is unknown cost, never zero. After
`pivot_after` experiments in a row without a keep the prompt asks for a structurally different
idea; after `max_pivots` such requests the proposer stops and says why.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ...atomic import fresh_dir
from ...bench.agent_sandbox import agent_sandbox
from ...bench.proc import RunResult, read_log
from ...bench.runners import LocalRunner
from ...bench.sandbox import Sandbox, keeps_out
from ...config import Config
from ...errors import UserError, WorkspaceError
from ...files import read_bounded
from ...journal.agent_run import AgentRun, Usage
from ...journal.draft import parse_trailers
from ...journal.records import ExperimentRecord
from ...repo.gitrepo import COMMIT_ENV, Repo, open_repo, tree_patch
from ...repo.globs import matches_any
from ...repo.seal import RepoSeal
from ...repo.state_dir import SessionPaths
from ...repo.watch import WriteWatch
from ..base import Hypothesis, ProposalContext, ProposerError
from .cli import PRESETS, preset_command, read_usage
from .prompt import render_prompt
from .reach import changed_beyond, joined, listing, unqueue
from .settings import AgentSettings, agent_settings
from .version import CliVersion, cli_version
from .vetting import (
    MAX_HYPOTHESIS_BYTES,
    Proposal,
    applies_at,
    fresh_scratch,
    guard,
    read_hypothesis_file,
)

__all__ = ["AgentProposer", "agent_spend"]

HANDOFF = ".autoresearch-agent"  # in the scratch tree, outside every patch: prompt, hypothesis
PIVOT = (
    "The last {streak} experiments kept nothing. Do not refine them: propose a structurally "
    "different idea (another part of the code path, another resource: allocation, I/O, "
    "batching, concurrency, data layout, an algorithm), not a variation of a closed axis."
)


def agent_spend(records: Sequence[ExperimentRecord], proposer: str = "agent") -> dict:
    """What a session's agent proposals cost: dollars where reported, how many unknown."""
    runs = [r.agent for r in records if r.proposer == proposer and r.agent is not None]
    known = [run.usage.cost_usd for run in runs]
    return {
        "proposals": len(runs),
        "cost_usd": round(sum(c for c in known if c is not None), 6),
        "unknown_cost": sum(1 for c in known if c is None),
    }


class AgentProposer:
    """Options: see settings.py and the docs' proposers guide (docs/guides/proposers.md)."""

    name = "agent"

    @classmethod
    def check_options(cls, options: dict, config: Config, where: str) -> None:
        agent_settings(options, config, where)

    @classmethod
    def from_options(cls, options: dict, config: Config) -> AgentProposer:
        return cls(agent_settings(options, config, f"{config.path}: agent"), config)

    def __init__(self, settings: AgentSettings, config: Config):
        self.settings = settings
        self.config = config
        self._said_stop: str | None = None
        self._ahead: _Ahead | None = None
        self._source: Repo | None = None
        # How its CLI runs: confined like the target's runs (agent_sandbox), False when not.
        self._sandbox: Sandbox | bool | None = None
        self._cli: CliVersion | bool | None = False  # asked at the first proposal

    # -- the proposer interface -----------------------------------------------------------------

    def next(self, context: ProposalContext) -> Hypothesis | None:
        if context.state_dir is None:
            raise ProposerError("the agent proposer needs a session (state directory)")
        mine = [r for r in context.records if r.proposer == self.name]
        why = self._stop_reason(context, mine)
        if why is not None:
            if self._said_stop != why:
                self._said_stop = why
                context.notes.append(f"agent proposer stopped: {why}")
            self.close()
            return None
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            proposal = ahead.result()
            # Guards that depend on the session are checked against it as it is now.
            hypothesis = self._decide(proposal, context, prepared_ahead=True)
        else:
            hypothesis = self._decide(self._propose(context, len(mine) + 1), context)
        if self.settings.prepare_ahead and len(mine) + 2 <= self.settings.max_proposals:
            self._ahead = _Ahead(self, context, len(mine) + 2, hypothesis)
        return hypothesis

    def pending(self, context: ProposalContext) -> int | None:
        mine = [r for r in context.records if r.proposer == self.name]
        if self._stop_reason(context, mine) is not None:
            return 0
        return self.settings.max_proposals - len(mine)

    def close(self) -> None:
        """Stop a proposal prepared ahead (the night is over)."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.cancel()

    # -- budgets and escalation -----------------------------------------------------------------

    def _stop_reason(self, context: ProposalContext, mine: list) -> str | None:
        s = self.settings
        if len(mine) >= s.max_proposals:
            return f"{len(mine)} proposals made (max_proposals = {s.max_proposals})"
        spend = agent_spend(context.records, self.name)
        if s.max_cost_usd is not None and spend["cost_usd"] >= s.max_cost_usd:
            unknown = (
                f", and {spend['unknown_cost']} of unknown cost" if spend["unknown_cost"] else ""
            )
            return f"${spend['cost_usd']:.2f} spent{unknown} (max_cost_usd = {s.max_cost_usd:g})"
        streak = context.no_keep_streak
        if streak >= s.pivot_after * (s.max_pivots + 1):
            return (
                f"{streak} experiments in a row without a keep, after {s.max_pivots} requests "
                "for a structurally different idea: the agent has run out of ideas here"
            )
        return None

    def _pivot(self, streak: int) -> str | None:
        return PIVOT.format(streak=streak) if streak >= self.settings.pivot_after else None

    # -- one proposal ---------------------------------------------------------------------------

    def _scratch(self, context: ProposalContext) -> Repo:
        """The scratch worktree, fresh at the current best."""
        assert context.state_dir is not None
        if self._source is None:
            self._source = open_repo(self.config.repo_path, self.config.target.git_hooks)
        path = SessionPaths(context.state_dir).agent_scratch
        return fresh_scratch(self._source, path, context.tip)

    def _propose(
        self, context: ProposalContext, k: int, measuring: Hypothesis | None = None
    ) -> Proposal:
        """Run the agent once at the current best; what it left behind, unjudged."""
        s = self.settings
        assert context.state_dir is not None
        scratch = self._scratch(context)
        source = self._source
        assert source is not None
        self._ask_version(context, scratch.path)
        handoff = scratch.path / HANDOFF
        handoff.mkdir(exist_ok=True)
        prompt_path, hypothesis_path = handoff / "prompt.md", handoff / "hypothesis.json"
        pivot = self._pivot(context.no_keep_streak)
        prompt = self._prompt(context, hypothesis_path, pivot, measuring)
        prompt_path.write_text(prompt, encoding="utf-8")
        for name, text in ({} if s.command else PRESETS[s.preset].get("files", {})).items():
            (handoff / name).write_text(text, encoding="utf-8")  # a preset's own (a policy)
        log_dir = fresh_dir(SessionPaths(context.state_dir).logs, f"agent-{k:04d}")
        (log_dir / "prompt.md").write_text(prompt, encoding="utf-8")
        branch_before = source.branch_tip(context.branch) if context.branch else None
        command = self._command(context, k, pivot, measuring)
        env = {
            "AUTORESEARCH_PROMPT": str(prompt_path),
            "AUTORESEARCH_HYPOTHESIS": str(hypothesis_path),
            "AUTORESEARCH_SESSION": self.config.session.name,
            "AUTORESEARCH_PROPOSAL": str(k),
        }
        # What an unconfined agent could change beyond its tree (hooks, config, refs, your
        # checkout, the journal): looked at after its run, and put back (repo/seal.py).
        seal = self._seal(source, context, confined=self._confined(scratch.path, command, context))
        # And the trees the loop measures in, unless it is measuring there meanwhile.
        trees = None if measuring is not None else WriteWatch(context.measured)
        if trees is not None:
            trees.arm()
        queued = listing(self._queues())
        result = self._run(command, context, scratch.path, log_dir / "agent.log", env)
        reached = joined(changed_beyond(seal, trees, context), unqueue(queued, self._queues()))
        hypothesis_data, hypothesis_problem = read_hypothesis_file(hypothesis_path)
        usage = read_usage(s.output, read_log(result.log_path), hypothesis_data)
        cost = f"${usage.cost_usd:.2f}" if usage.cost_usd is not None else "cost unknown"
        _say(context, f"agent #{k}: {result.describe()} after {result.duration_s:.0f} s, {cost}")
        try:
            patch, broken = self._patch(context, scratch, log_dir, hypothesis_path), None
        except WorkspaceError as exc:
            # Its tree is the loop's scratch space: made afresh for the next proposal.
            patch, broken = b"", str(exc)
        branch_moved = _put_branch_back(source, context.branch, branch_before)
        return Proposal(
            patch=patch,
            broken=broken,
            hypothesis=hypothesis_data,
            hypothesis_problem=hypothesis_problem,
            result=result,
            usage=usage,
            agent=self._agent_record(command, result, usage, log_dir, prompt, pivot),
            tip=context.tip,
            branch_moved=branch_moved,
            reached=reached,
        )

    def _command(
        self, context: ProposalContext, k: int, pivot: str | None, measuring: Hypothesis | None
    ) -> str:
        """The command of proposal `k`, said as it starts."""
        s = self.settings
        _say(
            context,
            f"agent ({s.preset}) proposing #{k} at {context.tip[:10]}"
            + (" (a structurally different idea asked)" if pivot else "")
            + (f", while {measuring.title!r} is measured" if measuring is not None else ""),
        )
        return preset_command(
            s.preset,
            command=s.command,
            model=s.model,
            max_turns=s.max_turns,
            max_usd=s.max_usd,
            files=s.files,
        )

    def _ask_version(self, context: ProposalContext, cwd: Path) -> None:
        """The CLI's version, once a run, said when the preset was not tested with it; not
        asked of a command of the user's own (what it runs is theirs to know)."""
        if self._cli is not False:
            return
        s = self.settings
        self._cli = None if s.command else cli_version(s.preset, cwd, s.env)
        if self._cli is not None and self._cli.note:
            context.notes.append(f"agent: {self._cli.note}")

    def _seal(self, source: Repo, context: ProposalContext, confined: bool) -> RepoSeal:
        """The seal of what an agent's run may not change (repo/seal.py). Confined, it can
        write its own tree and git files only: your checkout and the refs are yours then,
        unless you shared a path of them."""
        assert context.state_dir is not None
        confined = confined and keeps_out(self.config, source.path)
        return RepoSeal(
            source,
            self.config.journal_path,
            mirror=context.state_dir / "journal.copy",
            own=context.state_dir,
            # The loop journals and keeps beside a proposal prepared ahead; the session branch
            # is put back on its own (_put_branch_back).
            watch_journal=not self.settings.prepare_ahead,
            ignore_refs=(f"refs/heads/{context.branch}",),
            session=self.config.session.name,
            skip=(self.config.ideas_path,),
            confined=confined,
        )

    def _patch(
        self, context: ProposalContext, scratch: Repo, log_dir: Path, hypothesis_path: Path
    ) -> bytes:
        """What the agent changed, as one patch (kept beside its log with its hypothesis)."""
        # The hand-off files count even when an agent committed them: never part of the patch.
        leave_out = [HANDOFF, f"{HANDOFF}/**", *self.settings.ignore]
        patch = tree_patch(scratch, context.tip, lambda p: bool(matches_any(p, leave_out)))
        (log_dir / "proposal.patch").write_bytes(patch)
        with contextlib.suppress(UserError):  # not a file, or too big: said by the guard
            kept = read_bounded(hypothesis_path, MAX_HYPOTHESIS_BYTES, "hypothesis file")
            (log_dir / "hypothesis.json").write_bytes(kept)
        return patch

    def _prompt(
        self,
        context: ProposalContext,
        hypothesis_path: Path,
        pivot,
        measuring: Hypothesis | None,
    ) -> str:
        s = self.settings
        return render_prompt(
            context,
            self.config,
            recent=s.recent,
            budget_chars=s.prompt_chars,
            pivot=pivot,
            hypothesis_path=hypothesis_path,
            max_patch_kib=s.max_patch_kib,
            template=s.template,
            measuring=measuring,
        )

    def _run(
        self, command: str, context: ProposalContext, cwd: Path, log: Path, env: dict[str, str]
    ) -> RunResult:
        """The agent CLI, through the session's runner, beside the bench when it prepares
        ahead."""
        s = self.settings
        runner = context.runner or LocalRunner()
        if isinstance(self._sandbox, Sandbox):
            runner = LocalRunner(sandbox=self._sandbox)
        return runner.run(
            command,
            cwd=cwd,
            log_path=log,
            timeout_s=s.timeout_s,
            env={**s.env, **env},
            stop=context.stop,
            token=f"{context.token}-agent" if context.token else None,
            on_start=None,
            concurrent=s.prepare_ahead,
        )

    def _queues(self) -> list[Path]:
        """The queue proposers' directories: yours to fill, not the agent's."""
        return [
            self.config.resolve(str(table.get("dir", "hypotheses")))
            for table in self.config.proposer
            if table.get("kind", "queue") == "queue"
        ]

    def _confined(self, scratch: Path, command: str, context: ProposalContext) -> bool:
        """Whether the agent CLI runs confined (agent_sandbox, the session's logs out of its
        sight); decided once a run, when its home is copied from yours."""
        if self._sandbox is None:
            assert context.state_dir is not None
            logs = SessionPaths(context.state_dir).logs
            made = agent_sandbox(self.config, scratch, self.settings.home, command, logs)
            self._sandbox = made or False
        return bool(self._sandbox)

    def _agent_record(
        self, command: str, result: RunResult, usage: Usage, log_dir: Path, prompt: str, pivot
    ) -> AgentRun:
        return AgentRun(
            preset=self.settings.preset,
            command=command if len(command) < 500 else command[:497] + "...",
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            interrupted=result.interrupted,
            duration_s=round(result.duration_s, 3),
            usage=usage,
            log=str(log_dir / "agent.log"),
            confinement=(
                {"tool": "bwrap", "network": True, "home": "its own"}
                if self._sandbox
                else {"tool": "none"}
            ),
            cli=self._cli.to_dict() if isinstance(self._cli, CliVersion) else None,
            prompt=str(log_dir / "prompt.md"),
            prompt_chars=len(prompt),
            pivot=pivot is not None,
            tail=result.tail,
        )

    def _decide(
        self, proposal: Proposal, context: ProposalContext, prepared_ahead: bool = False
    ) -> Hypothesis:
        agent = replace(proposal.agent, prepared_ahead=prepared_ahead)
        if proposal.tip != context.tip and proposal.patch.strip():
            # Made ahead while the best moved: usable only if it still applies as it is.
            why = applies_at(self._scratch(context), proposal.patch)
            if why is not None:
                stale = (
                    f"prepared ahead at {proposal.tip[:10]}, and the best moved to "
                    f"{context.tip[:10]} meanwhile: it no longer applies ({why})"
                )
                proposal = replace(proposal, stale=stale)
        return guard(proposal, context, self.config, self.settings, agent)


class _Ahead:
    """The next proposal, prepared in a thread while the current one is measured."""

    def __init__(
        self, owner: AgentProposer, context: ProposalContext, k: int, measuring: Hypothesis
    ):
        self._cancel = threading.Event()
        self._stop = _EitherStop(context.stop, self._cancel)
        self._context = _snapshot(context, self._stop)
        self._proposal: Proposal | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._work, args=(owner, k, measuring), name="agent-ahead", daemon=True
        )
        self._thread.start()

    def _work(self, owner: AgentProposer, k: int, measuring: Hypothesis) -> None:
        try:
            self._proposal = owner._propose(self._context, k, measuring)
        except BaseException as exc:  # handed to the loop's thread in result()
            self._error = exc

    def result(self) -> Proposal:
        self._thread.join()
        if self._error is not None:
            raise ProposerError(f"the proposal prepared ahead failed: {self._error}")
        assert self._proposal is not None
        return self._proposal

    def cancel(self) -> None:
        self._cancel.set()
        self._thread.join(timeout=30)


class _EitherStop:
    """Set when the night stops or the prepared proposal is cancelled."""

    def __init__(self, *events):
        self.events = [e for e in events if e is not None]

    def is_set(self) -> bool:
        return any(e.is_set() for e in self.events)

    @property
    def urgent(self) -> bool:
        return any(getattr(e, "urgent", False) for e in self.events)


def _put_branch_back(source: Repo, branch: str | None, before: str | None) -> bool:
    """Whether the agent moved the session branch (the scratch tree shares refs); put back.
    The loop keeps beside a proposal prepared ahead: its own commits on top of `before` (a
    session's `Experiment-Id`, made as autoresearch) are not the agent's, and stay."""
    if branch is None or before is None:
        return False
    ref = f"refs/heads/{branch}"
    now = source.branch_tip(branch)  # None: the agent deleted it, and it is put back
    if now == before:
        return False
    keep_to = before
    log = ["log", "--reverse", "--first-parent", "--format=%H%x00%ae%x00%B%x1e"]
    # A failed read is an error, never an empty history that would move the branch back
    # under the loop's own keeps.
    made = source.must(*log, f"{before}..{now}") if now is not None else ""
    for entry in filter(str.strip, made.split("\x1e")):
        sha, email, message = entry.strip("\n").split("\0", 2)
        if email != COMMIT_ENV["GIT_AUTHOR_EMAIL"] or "Experiment-Id" not in parse_trailers(
            message
        ):
            break
        keep_to = sha
    if keep_to == now:
        return False
    source.must("update-ref", ref, keep_to)
    return True


def _snapshot(context: ProposalContext, stop) -> ProposalContext:
    return replace(context, records=list(context.records), tried=set(context.tried), stop=stop)


def _say(context: ProposalContext, line: str) -> None:
    if context.say is not None:
        context.say(line)
