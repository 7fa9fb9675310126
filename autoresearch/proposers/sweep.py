"""Knob sweeps: move a numeric constant and search for its best value, as an engineer would.

Each knob is a value in a file, found by a regular expression with one capture group. From the
value at the current best, the sweep steps along the knob's grid in both directions (bracketing),
follows a direction while it keeps winning (each win is kept, so the best moves with it), looks
one step past a neighbour that measured within the floor (a plateau may hide a better value
beyond it: an L0 threshold of 16 no faster than 8, 32 faster than both), then bisects between
the best value and its nearest slower neighbour on each side (not one that measured alike)
until no untried value lies between them (integers) or the gap is below the knob's resolution.
A value is never measured twice at the same best commit. When a later keep of something else
moves the best, the knob's nearest neighbours are measured again once: knobs interact.

Several knobs are searched one at a time (coordinate search), in the order the config lists
them; `search = "joint"` searches them together instead, Optuna choosing each point (joint.py).
Every hypothesis is a real patch; the loop's decision rule decides every keep.

    [[proposer]]
    kind = "sweep"

    [[proposer.knob]]
    name = "l0_threshold"
    file = "grantstore/pebble_engine.go"
    pattern = 'L0CompactionThreshold:\\s*(\\d+)'
    values = [2, 4, 6, 8, 12, 16]          # or: min = 2, max = 64, scale = "log2" | "linear"

Knobs themselves (grids, reading and moving a value) are in knobs.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

from ..config import Config
from ..errors import ConfigError
from ..journal.records import ExperimentRecord
from ..statuses import Rule, Status
from .base import Hypothesis, ProposalContext, ProposerError
from .joint import JointSearch
from .knobs import Knob, knob_from_table, patch_of

__all__ = ["SweepProposer", "knob_history"]

OPTIONS = ("knob", "search", "sampler", "trials", "seed")
SEARCHES = ("coordinate", "joint")


def knob_history(records: Sequence[ExperimentRecord], name: str) -> list[ExperimentRecord]:
    """The session's experiments that moved knob `name`, oldest first."""
    return [r for r in records if (r.proposal or {}).get("knob") == name]


def _move(record: ExperimentRecord) -> dict[str, Any]:
    """The move a record of `knob_history` made (knob, from, value): it keeps none without."""
    return cast("dict[str, Any]", record.proposal)


class SweepProposer:
    """Options: `knob`, a list of tables (see the module's doc); `search = "joint"` with
    `sampler`, `trials` and `seed` for a joint search (joint.py)."""

    name = "sweep"

    @classmethod
    def check_options(cls, options: dict, config: Config, where: str) -> None:
        cls._options(options, config, where)

    @classmethod
    def from_options(cls, options: dict, config: Config) -> SweepProposer:
        knobs, joint = cls._options(options, config, f"{config.path}: sweep")
        return cls(knobs, joint)

    def __init__(self, knobs: list[Knob], joint: JointSearch | None = None):
        self.knobs = knobs
        self.joint = joint
        self.broken: dict[str, str] = {}  # knobs whose pattern failed at some best, and why

    def next(self, context: ProposalContext) -> Hypothesis | None:
        if self.joint is not None:
            try:
                return self.joint.next(context)
            except ProposerError as exc:
                context.notes.append(f"{exc}; no joint point at {context.tip[:10]}")
                return None
        for knob in self.knobs:
            try:
                found = self._next_for(knob, context)
            except ProposerError as exc:
                if self.broken.get(knob.name) != context.tip:
                    context.notes.append(f"{exc}; skipping it at {context.tip[:10]}")
                self.broken[knob.name] = context.tip
                continue
            if found is not None:
                return found
        return None

    def pending(self, context: ProposalContext) -> int | None:
        return None  # a search does not know how long it will take

    # -- the search ---------------------------------------------------------------------------

    def _next_for(self, knob: Knob, context: ProposalContext) -> Hypothesis | None:
        text = context.read(knob.file)
        current, _ = knob.read(text)
        history = knob_history(context.records, knob.name)
        older = {r.parent_commit for r in history} - {context.tip}
        made_here = next((r for r in history if r.kept_commit == context.tip), None)
        if made_here is None and any(_closed(knob, history, tip) for tip in older):
            # The best moved under a knob already searched: its nearest neighbours, once.
            return self._recheck(knob, context, text, current, history)
        here = {_move(r)["value"]: r for r in history if r.parent_commit == context.tip}
        step = _step(knob, current, here, made_here)
        if step is None:
            return None
        value, why = step
        return self._hypothesis(knob, context, text, current, value, why, here)

    def _recheck(self, knob, context, text, current, history) -> Hypothesis | None:
        tried = sorted({_move(r)[k] for r in history for k in ("value", "from")})
        measured = {_move(r)["value"] for r in history if r.parent_commit == context.tip}
        above = [v for v in tried if v > current]
        below = [v for v in tried if v < current]
        for value in (min(above) if above else None, max(below) if below else None):
            if value is not None and value not in measured:
                why = (
                    "re-checking a neighbour: the code around the knob changed since it was "
                    "swept, and knobs interact"
                )
                here: dict[float, ExperimentRecord] = {}
                return self._hypothesis(knob, context, text, current, value, why, here)
        return None

    # -- the hypothesis -----------------------------------------------------------------------

    def _hypothesis(self, knob, context, text, current, value, why, here) -> Hypothesis:
        _, match = knob.read(text)
        new_text = text[: match.start(1)] + knob.show(value) + text[match.end(1) :]
        learned = _learned(knob, here)
        return Hypothesis(
            title=f"{knob.name}: {knob.show(current)} -> {knob.show(value)}",
            patch=patch_of(knob.file, text, new_text),
            hypothesis=(
                f"move {knob.name} from {knob.show(current)} to {knob.show(value)} ({why})"
                + (f"; so far at this best: {learned}" if learned else "")
            ),
            mechanism=knob.mechanism or f"the value of {knob.name} in {knob.file}",
            expected_effect=f"{context.metric}: unknown; the sweep measures it",
            source=knob.file,
            proposal={
                "knob": knob.name,
                "from": current,
                "value": value,
                "why": why,
                "file": knob.file,
                # The range searched: a best at its edge says the optimum may lie beyond.
                "range": [min(knob.grid), max(knob.grid)],
            },
        )

    # -- options ------------------------------------------------------------------------------

    @classmethod
    def _options(
        cls, options: dict, config: Config, where: str
    ) -> tuple[list[Knob], JointSearch | None]:
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise ConfigError(
                f"{where}: the sweep proposer has no option '{unknown[0]}' ({', '.join(OPTIONS)})"
            )
        search = options.get("search", "coordinate")
        if search not in SEARCHES:
            raise ConfigError(f"{where}: 'search' must be one of {', '.join(SEARCHES)}")
        if search != "joint" and set(options) & set(OPTIONS[2:]):
            raise ConfigError(f'{where}: sampler, trials and seed only apply to search = "joint"')
        tables = options.get("knob")
        if not isinstance(tables, list) or not tables:
            raise ConfigError(f"{where}: a sweep needs at least one [[proposer.knob]] table")
        knobs = [knob_from_table(t, config, f"{where}: knob[{i}]") for i, t in enumerate(tables)]
        names = [k.name for k in knobs]
        if len(set(names)) != len(names):
            raise ConfigError(f"{where}: knob names must be unique, got {names}")
        if search == "joint":
            sampler, trials, seed = JointSearch.check(options, where)
            return knobs, JointSearch(knobs, sampler, trials, seed)
        return knobs, None


def _step(knob: Knob, current: float, here: dict, made_here) -> tuple[float, str] | None:
    """The full search at one best: bracket (or follow a gain), then bisect."""
    worse = _worse(here, made_here)
    measured = set(worse) | {current}
    grid = sorted(set(knob.grid) | {current})
    up = next((v for v in grid if v > current), None)
    down = next((v for v in reversed(grid) if v < current), None)
    bracketing = "bracketing: the next value on its grid"
    steps = [(up, bracketing), (down, bracketing)]
    if made_here is not None:
        following = (
            f"following the gain from {knob.show(_move(made_here)['from'])} to "
            f"{knob.show(current)}: one more step the same way"
        )
        ahead, behind = (up, down) if current > _move(made_here)["from"] else (down, up)
        steps = [(ahead, following), (behind, bracketing)]
    for value, why in steps:
        if value is not None and value not in measured:
            return value, why
    # A neighbour within the floor may be a plateau with a better value beyond it (an L0
    # threshold of 16 no faster than 8, 32 faster than both): one more step past it, once.
    for neighbour, beyond in ((up, _next(grid, up, 1)), (down, _next(grid, down, -1))):
        flat = _flat(here.get(neighbour))
        if neighbour is None or flat is None or beyond is None or beyond in measured:
            continue
        return beyond, (
            f"looking past a plateau: {knob.show(neighbour)} measured {flat:+.1f}%, within "
            "the floor, so one step further the same way"
        )
    # Bracketed: bisect towards the nearest slower value on each side, the closer loss first;
    # not where the nearest measured alike (a plateau: what lies between is no better).
    sides = []
    for side in (1, -1):
        losses = [v for v in worse if (v - current) * side > 0]
        if losses:
            nearest = min(losses, key=lambda v: abs(v - current))
            if _flat(here.get(nearest)) is None:
                sides.append((_loss(here.get(nearest)), nearest))
    for _, nearest in sorted(sides, key=lambda s: s[0]):
        value = knob.between(current, nearest, measured)
        if value is not None:
            return value, (
                f"bisecting between {knob.show(current)} (the best) and "
                f"{knob.show(nearest)} (slower)"
            )
    return None


def _next(grid: list[float], value: float | None, side: int) -> float | None:
    """The grid value after `value` on `side` (1 up, -1 down), or None past the edge."""
    if value is None:
        return None
    beyond = [v for v in grid if (v - value) * side > 0]
    return (min(beyond) if side > 0 else max(beyond)) if beyond else None


def _flat(record: ExperimentRecord | None) -> float | None:
    """The change a value measured when it was neither kept nor worse by the floor (a plateau,
    or too little evidence either way); None otherwise. A loss the t-test shows but smaller
    than the floor is a plateau too: a tenth of a percent slower is no reason to stop looking
    past it, and flat runs show one by chance in one experiment of twenty."""
    change = _change(record)
    if record is None or change is None:
        return None
    if record.status == Status.KEEP or record.rule == Rule.SENTINEL_BUDGET:
        return None
    design = record.decision.design if record.decision is not None else None
    floor = (design.threshold_pct if design is not None else None) or 0.0
    return change if abs(change) < floor else None


def _loss(record: ExperimentRecord | None) -> float:
    """How much slower a value measured: a smaller loss is bisected first."""
    change = _change(record)
    return abs(change) if change is not None else math.inf


def _worse(here: dict[float, ExperimentRecord], made_here: ExperimentRecord | None) -> set[float]:
    """Values known slower than the current one at this best: measured here, and the value the
    keep that made this best replaced."""
    worse = set(here)
    if made_here is not None:
        worse.add(_move(made_here)["from"])
    return worse


def _closed(knob: Knob, history: list[ExperimentRecord], tip: str) -> bool:
    """Whether the knob's full search ended at `tip` (rather than moving on with a keep)."""
    at = [r for r in history if r.parent_commit == tip]
    if not at or any(r.status == Status.KEEP for r in at):
        return False
    current = _move(at[0])["from"]
    made = next((r for r in history if r.kept_commit == tip), None)
    here = {_move(r)["value"]: r for r in at}
    return _step(knob, current, here, made) is None


def _change(record: ExperimentRecord | None) -> float | None:
    return None if record is None else record.evidence().change_pct


def _learned(knob: Knob, here: dict[float, ExperimentRecord]) -> str:
    parts = []
    for value, record in sorted(here.items()):
        change = _change(record)
        shown = f"{change:+.1f}%" if change is not None else "not measured"
        parts.append(f"{knob.show(value)} {record.status} ({shown})")
    return ", ".join(parts)
