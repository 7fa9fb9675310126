"""A second look: when the proposers have nothing left, undecided hypotheses run again.

An `inconclusive` experiment decided nothing about its patch: the machine was noisy, a sentinel
was not resolved, the runs ran out. A `not_promising` discard decided little more: after a few
pairs the rule judged a keep unlikely within the cap, which one unlucky run on a busy machine
can make a real win look (a -9.7% Go win was dropped so and kept the next night). When the queue
is empty (and the budget allows) each such hypothesis is measured again against the current
best, in the order it first ran, at most `[budget] retries` times. Experiments the user named
with `autoresearch retry ID` come first, whatever their status. A retry starts afresh: pooling
its runs with the earlier attempt's would spend the error budget of the earlier looks twice.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..atomic import read_json, write_json_atomic
from ..journal.attempts import Attempt
from ..journal.records import ExperimentRecord
from ..proposers import Hypothesis, read_hypothesis
from ..repo.state_dir import SessionPaths
from ..statuses import Rule

__all__ = [
    "SECOND_LOOK",
    "forget_request",
    "request_retries",
    "requested_retries",
    "second_look",
    "second_look_count",
    "undecided",
]

SECOND_LOOK = ("inconclusive",)  # the statuses a second pass takes up again
# Discards that closed nothing: the rule stopped for want of promise, not for a shown loss.
SECOND_LOOK_RULES = (Rule.NOT_PROMISING,)
# Proposers that settle their own undecided hypotheses: a sweep measures a knob's neighbours
# again at each new best by itself, so its old values are not taken up here.
SELF_DECIDING = ("sweep",)
REQUESTS = "retry-requests.json"


def second_look(
    paths: SessionPaths,
    attempts: dict[str, list[Attempt]],
    retries: int,
    whole: Callable[[Attempt], ExperimentRecord | None],
) -> tuple[Hypothesis, Attempt] | None:
    """The next hypothesis to measure again, with the attempt it follows; None when none is
    left. Requested retries first, then undecided ones in the order they first ran. `whole`
    reads an attempt's record (its reasoning, its source)."""
    by_id = {r.id: r for records in attempts.values() for r in records}
    retried = {r.retry_of for records in attempts.values() for r in records if r.retry_of}
    for exp_id in requested_retries(paths):
        attempt = by_id.get(exp_id)
        if attempt is not None and exp_id not in retried:
            hypothesis = _hypothesis(paths, attempts[attempt.patch_sha256], whole(attempt))
            if hypothesis is not None:
                return hypothesis, attempt
    for records in sorted(attempts.values(), key=lambda rs: rs[0].n):
        last = records[-1]
        if last.proposer in SELF_DECIDING:
            continue
        if undecided(last) and len(records) <= retries:
            hypothesis = _hypothesis(paths, records, whole(last))
            if hypothesis is not None:
                return hypothesis, last
    return None


def undecided(attempt: Attempt) -> bool:
    """An experiment whose ending leaves its patch undecided: the second look takes it up."""
    return attempt.status in SECOND_LOOK or attempt.rule in SECOND_LOOK_RULES


def second_look_count(paths: SessionPaths, attempts: dict[str, list[Attempt]], retries: int) -> int:
    """How many hypotheses the second look would still take up (for progress)."""
    retried = {r.retry_of for records in attempts.values() for r in records if r.retry_of}
    requested = sum(1 for i in requested_retries(paths) if i not in retried)
    again = sum(
        1
        for records in attempts.values()
        if records[-1].proposer not in SELF_DECIDING
        and undecided(records[-1])
        and len(records) <= retries
    )
    return requested + again


def request_retries(paths: SessionPaths, ids: list[str]) -> list[str]:
    """Queue experiments to run again on the next `run`; returns the whole queue."""
    queued = list(dict.fromkeys([*requested_retries(paths), *ids]))
    write_json_atomic(paths.root / REQUESTS, {"ids": queued})
    return queued


def requested_retries(paths: SessionPaths) -> list[str]:
    data = read_json(paths.root / REQUESTS) or {}
    ids = data.get("ids")
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []


def forget_request(paths: SessionPaths, exp_id: str) -> None:
    """The retry of `exp_id` is recorded: its request is done."""
    queued = requested_retries(paths)
    if exp_id in queued:
        write_json_atomic(paths.root / REQUESTS, {"ids": [i for i in queued if i != exp_id]})


def _hypothesis(
    paths: SessionPaths, attempts: list[Attempt], record: ExperimentRecord | None
) -> Hypothesis | None:
    """The hypothesis as it was tried: the patch bytes the loop saved, the reasoning recorded."""
    if record is None:  # its line is gone from the journal: nothing to say what it was
        return None
    patch = _saved_patch(paths, attempts, record.source)
    if patch is None:
        return None
    asi = record.asi
    return Hypothesis(
        title=record.title,
        patch=patch,
        hypothesis=asi.hypothesis,
        mechanism=asi.mechanism,
        expected_effect=asi.expected_effect,
        source=record.source,
        proposer=record.proposer,
        proposal=record.proposal,
        family=record.family,
    )


def _saved_patch(paths: SessionPaths, attempts: list[Attempt], source: str | None) -> bytes | None:
    sha = attempts[0].patch_sha256
    for attempt in attempts:
        saved = paths.patches / f"{attempt.n:04d}-{sha[:12]}.patch"
        if saved.is_file():
            return saved.read_bytes()
    if source and Path(source).is_file():
        candidate = read_hypothesis(Path(source))
        if candidate.sha256 == sha:
            return candidate.patch
    return None
