"""The loop's vocabulary: how an experiment can end, and what each ending implies.

A status is a `StrEnum`: it is its own string in the journal and compares equal to it, so
records written before it existed read the same. What a status means for the loop (runs again,
counts as a failure, the exit code `try` gives) lives on the member, not in lists scattered
through the modules that ask. The config's choices (a metric's direction, `checks.when`,
`sandbox.mode` and the rest) are enums here too, read from the TOML by tables.build.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "EXIT_CODES",
    "FAILED_STATUSES",
    "STATUSES",
    "Aggregate",
    "ChecksWhen",
    "Direction",
    "RemeasureWhen",
    "Rule",
    "SandboxMode",
    "Status",
]


class Status(StrEnum):
    KEEP = "keep"
    DISCARD = "discard"
    INCONCLUSIVE = "inconclusive"
    CRASH = "crash"
    TIMEOUT = "timeout"
    CHECKS_FAILED = "checks_failed"
    APPLY_FAILED = "apply_failed"
    SCOPE_VIOLATION = "scope_violation"
    TAMPERED = "tampered"
    INTERRUPTED = "interrupted"
    BASELINE_FAILED = "baseline_failed"
    REFUSED = "refused"
    AGENT_FAILED = "agent_failed"

    @property
    def exit_code(self) -> int:
        """What `autoresearch try` exits with: an agent can branch on it without JSON."""
        return _EXIT[self]

    @property
    def undecided(self) -> bool:
        """Cut short before any verdict on the patch: it runs again at once (up to
        `[budget] retries`); an inconclusive one waits for the second look instead."""
        return self in (Status.INTERRUPTED, Status.BASELINE_FAILED)

    @property
    def failed(self) -> bool:
        """The candidate itself failed (it did not build, run, pass or stay in its lane)."""
        return self in _FAILED

    @property
    def measured(self) -> bool:
        """The rule reached a verdict on bench runs."""
        return self in (Status.KEEP, Status.DISCARD, Status.INCONCLUSIVE)


class Direction(StrEnum):
    """Which way a metric gets better: the config's and the record's `direction`."""

    LOWER = "lower"
    HIGHER = "higher"


class Aggregate(StrEnum):
    """How a run's repeated samples of a metric become its value: `bench.aggregate`."""

    BEST = "best"
    MEDIAN = "median"


class ChecksWhen(StrEnum):
    """Which candidates the correctness checks gate: `checks.when`."""

    KEEP = "keep"
    ALWAYS = "always"
    NEVER = "never"


class SandboxMode(StrEnum):
    """Whether runs of the target's code are confined: `sandbox.mode`."""

    AUTO = "auto"
    BWRAP = "bwrap"
    OFF = "off"


class RemeasureWhen(StrEnum):
    """When a win measured against a best that has moved on runs again: `cluster.remeasure_when`."""

    OVERLAP = "overlap"
    ALWAYS = "always"


class Rule(StrEnum):
    """Which part of the decision rule decided: the record's `decision.rule`."""

    SIGNIFICANT_WIN = "significant_win"
    SIGNIFICANT_LOSS = "significant_loss"
    BELOW_THRESHOLD = "below_threshold"
    BELOW_NOISE_THRESHOLD = "below_noise_threshold"
    NOT_PROMISING = "not_promising"
    MAX_RUNS = "max_runs"
    SENTINEL_BUDGET = "sentinel_budget"
    SENTINEL_UNRESOLVED = "sentinel_unresolved"
    CROSS_SCALE_DISAGREEMENT = "cross_scale_disagreement"
    HOLDOUT = "holdout"  # a win on the bench the hidden holdout did not bear out
    UNKNOWN_COMPARISON = "unknown_comparison"
    # A keep whose journal line was lost, read back from its commit's trailers (loop/recovery.py).
    RECOVERED = "recovered"

    @property
    def closes_axis(self) -> bool:
        """Not kept for a reason more runs will not change: not to be retried without a new
        idea (an agent's prompt lists these; ideas.md files them as closed)."""
        return self in (
            Rule.SIGNIFICANT_LOSS, Rule.BELOW_THRESHOLD, Rule.SENTINEL_BUDGET, Rule.HOLDOUT
        )  # fmt: skip

    @property
    def is_loss(self) -> bool:
        """Shown worse (the primary metric, or a sentinel over its budget)."""
        return self in (Rule.SIGNIFICANT_LOSS, Rule.SENTINEL_BUDGET)


_EXIT = {
    Status.KEEP: 0,
    Status.DISCARD: 10,
    Status.INCONCLUSIVE: 11,
    Status.CHECKS_FAILED: 12,
    Status.CRASH: 13,
    Status.TIMEOUT: 14,
    Status.APPLY_FAILED: 15,
    Status.SCOPE_VIOLATION: 16,
    Status.TAMPERED: 17,
    Status.INTERRUPTED: 18,
    Status.BASELINE_FAILED: 19,
    Status.REFUSED: 20,
    Status.AGENT_FAILED: 21,
}
_FAILED = frozenset(
    {
        Status.CRASH,
        Status.TIMEOUT,
        Status.CHECKS_FAILED,
        Status.APPLY_FAILED,
        Status.SCOPE_VIOLATION,
        Status.TAMPERED,
    }
)

STATUSES = tuple(s.value for s in Status)
EXIT_CODES = {s.value: s.exit_code for s in Status}
FAILED_STATUSES = tuple(s.value for s in Status if s.failed)
