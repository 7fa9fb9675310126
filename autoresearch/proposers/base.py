"""What every proposer hands the loop, and what the loop shows every proposer.

A proposer is found by name in the `autoresearch.proposers` entry-point group (the built-ins
register the same way, see registry.py); it is made from its own `[[proposer]]` table and asked,
before each experiment, for the next hypothesis given the session so far.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import UserError
from ..files import read_bounded
from ..inert import inert
from ..statuses import Direction, Status

if TYPE_CHECKING:  # at run time records would import config, which imports the proposers
    from ..journal.agent_run import AgentRun
    from ..journal.records import ExperimentRecord

__all__ = [
    "Hypothesis",
    "ProposalContext",
    "Proposer",
    "ProposerError",
    "bounded_title",
    "patch_sha256",
]


MAX_TITLE_CHARS = 200
MAX_REASONING_CHARS = 4000


def bounded_title(title: object) -> str:
    """A title as records and commits carry it: its first line, at most MAX_TITLE_CHARS."""
    lines = str(title).strip().splitlines()
    return _bounded(lines[0].strip() if lines else "", MAX_TITLE_CHARS) or "(untitled)"


def _bounded(text: str, limit: int) -> str:
    # Shown in terminals, logs and commit messages: its control characters written out.
    text = inert(text.replace("\0", ""))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def patch_sha256(patch: bytes) -> str:
    """A patch's identity: its diff bytes, so that editing the reasoning does not make it new."""
    return hashlib.sha256(patch).hexdigest()


class ProposerError(Exception):
    """A proposer cannot propose right now (a file it reads is gone, a pattern stopped
    matching): the loop warns, skips it for this experiment and asks the next one."""


@dataclass(frozen=True)
class Hypothesis:
    """A patch and its reasoning. The patch is bytes, applied as it is: a CRLF line or a lone
    carriage return is content, and so is a file in another encoding.

    `problem` says why a hypothesis cannot be tried at all (an unreadable file, a broken
    sidecar): the loop records it as such, costs no bench run, and goes on with the night.
    `proposal` is what a proposer wants to find again in the record (a knob and its value).
    """

    title: str
    patch: bytes
    hypothesis: str | None = None
    mechanism: str | None = None
    expected_effect: str | None = None
    source: str | None = None
    problem: str | None = None
    proposer: str | None = None
    proposal: dict[str, Any] | None = None
    family: str | None = None  # the axis it explores ("compaction", a knob's name)
    # The status a hypothesis with a `problem` is recorded with: the proposer may have refused
    # it ("refused") or failed to make it ("agent_failed") rather than the patch not applying.
    problem_status: Status = Status.APPLY_FAILED
    agent: AgentRun | None = None  # an agent's run: preset, usage, log, prompt

    def __post_init__(self) -> None:
        # Whoever wrote them (a queue file, an agent), the title and the reasoning go into
        # commit messages, prompts and reports: one line of a bounded length, and bounded prose.
        object.__setattr__(self, "title", bounded_title(self.title))
        for name in ("hypothesis", "mechanism", "expected_effect"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _bounded(str(value), MAX_REASONING_CHARS))

    @property
    def sha256(self) -> str:
        if self.problem is not None:  # what it failed on identifies it: fixed, it is new
            return patch_sha256(b"invalid\0" + self.problem.encode() + b"\0" + self.patch)
        return patch_sha256(self.patch)

    @property
    def text(self) -> str:
        """The patch as text for reading its headers; undecodable bytes kept as escapes."""
        return self.patch.decode("utf-8", errors="surrogateescape")


@dataclass
class ProposalContext:
    """The session as a proposer sees it before an experiment."""

    tried: set[str]  # patch hashes not to propose again
    # The session's experiments so far, oldest first: read from the journal only when looked
    # at (loop/proposing.py), so a sequence, not a list.
    records: Sequence[ExperimentRecord]
    tip: str  # the current best commit
    worktree: Path  # checked out at `tip`, clean: read files here
    metric: str  # the primary metric's name
    direction: Direction  # which way the primary metric gets better
    notes: list[str] = field(default_factory=list)  # warnings for the progress output
    # What a proposer that explains the session to someone (an agent's prompt) needs besides.
    base: str | None = None  # the session's base commit
    baseline: float | None = None  # the base's calibrated median of the metric
    best: float | None = None  # the current best's
    noise_pct: float | None = None  # one run's noise at the last calibration
    threshold_pct: float | None = None  # the smallest change the loop claims now
    state_dir: Path | None = None  # the session's state directory: scratch space lives here
    branch: str | None = None  # the session branch
    stop: Any = None  # set when the night is asked to stop: long proposals end early
    token: str | None = None  # the session's process token (proc.py)
    say: Any = None  # a progress line, for proposals that take a while (an agent's)
    runner: Any = None  # where a proposer's own commands run (bench/runners.py): an agent's
    # The trees the loop measures in, which a proposer's own runs must not write, and how to
    # put them back when one did (scrubbed, the best rebuilt before it is measured again).
    measured: tuple[Path, ...] = ()
    scrub_measured: Any = None
    # Experiments since the session's last keep, as the journal's one fold counts them (the
    # night's standing, journal/digest.py), not counted again from `records`.
    no_keep_streak: int = 0

    def read(self, rel: str) -> str:
        """A file of the current best, as text."""
        path = self.worktree / rel
        try:  # the best's file: a kept change's, read as what a run left is (files.py)
            return read_bounded(path, what="file of the best", follow=False).decode("utf-8")
        except (UserError, UnicodeDecodeError) as exc:
            raise ProposerError(f"{rel}: cannot read it at {self.tip[:10]}: {exc}") from None


class Proposer(Protocol):
    """A source of hypotheses."""

    name: str

    def next(self, context: ProposalContext) -> Hypothesis | None:
        """The next hypothesis to try, or None when this proposer has nothing (more)."""
        ...

    def pending(self, context: ProposalContext) -> int | None:
        """How many hypotheses are left, when it knows (for progress)."""
        ...
