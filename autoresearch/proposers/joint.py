"""Joint knob search: Optuna chooses the next point, the loop's decision rule decides the keep.

The coordinate search (sweep.py) moves one knob at a time; when knobs interact strongly, a
joint search samples all of them at once. Optuna's ask/tell interface proposes each point from
what was measured so far (TPE by default; GP, or plain random). The journal is the study's
storage: before each proposal the study is rebuilt from the session's records, so a resumed
night continues the same search and nothing lives only in memory.

What Optuna is told about a point is its measured metric relative to where the joint search
started, chained through the paired comparisons: every experiment is measured against the best
of its moment, and a keep moves that best by the change it measured. The machine's drift over
the night cancels in each pair instead of leaking into the model. A point that crashed, timed
out or failed the checks is a failed trial (never sampled near on purpose).

The model restarts when something else is kept (a queue patch, another proposer): the code under
the knobs changed, so earlier measurements describe another program.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..journal.records import ExperimentRecord
from ..statuses import Direction, Status
from .base import Hypothesis, ProposalContext
from .knobs import Knob, moved

__all__ = ["SAMPLERS", "JointSearch", "change_of"]

SAMPLERS = ("tpe", "gp", "random")
DEFAULT_TRIALS = 24
ASK_ATTEMPTS = 30  # re-asks when the sampler proposes a point already measured; then converged
FAILED = ("crash", "timeout", "checks_failed", "apply_failed")


def change_of(record: ExperimentRecord) -> float | None:
    """The primary metric's measured change in percent, or None when nothing was measured."""
    return record.evidence().change_pct


@dataclass
class _Trial:
    point: tuple[float, ...]  # one value per knob, in the knobs' order
    value: float | None  # relative to the start, chained; None: failed


class JointSearch:
    def __init__(self, knobs: list[Knob], sampler: str, trials: int, seed: int):
        self.knobs = knobs
        self.sampler = sampler
        self.trials = trials
        self.seed = seed

    @staticmethod
    def check(options: dict[str, Any], where: str) -> tuple[str, int, int]:
        """The joint options (sampler, trials, seed), or a ConfigError naming what is wrong."""
        sampler = options.get("sampler", "tpe")
        if sampler not in SAMPLERS:
            raise ConfigError(f"{where}: 'sampler' must be one of {', '.join(SAMPLERS)}")
        trials = options.get("trials", DEFAULT_TRIALS)
        seed = options.get("seed", 0)
        for key, value in (("trials", trials), ("seed", seed)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"{where}: '{key}' must be a whole number >= 0")
        try:
            import optuna  # noqa: F401  (checked before the night, not at its first proposal)
        except ImportError:
            raise ConfigError(
                f"{where}: search = \"joint\" needs Optuna: pip install 'autoresearch[search]'"
            ) from None
        if sampler == "gp":
            try:
                import torch  # noqa: F401  (Optuna's GP sampler fits its model with torch)
            except ImportError:
                raise ConfigError(
                    f'{where}: sampler = "gp" needs torch (pip install torch); '
                    '"tpe" needs nothing more'
                ) from None
        return sampler, trials, seed

    # -- proposing ----------------------------------------------------------------------------

    def next(self, context: ProposalContext) -> Hypothesis | None:
        current = tuple(knob.read(context.read(knob.file))[0] for knob in self.knobs)
        history, level = self._history(context.records)
        if not history:
            history = [_Trial(current, 1.0)]  # the starting point: where every change is from
        if len(history) - 1 >= self.trials:  # the starting point is not a trial
            return None
        study, distributions = self._study(context.direction, history)
        known = {t.point: t for t in history}
        known[current] = _Trial(current, level)  # the best itself
        for _ in range(ASK_ATTEMPTS):
            asked = study.ask(distributions)
            point = self._point(asked.params)
            if point not in known:
                return self._hypothesis(context, current, point, len(history), history)
            # Measured already: tell the sampler what it gave, and ask again.
            self._tell(study, asked, known[point])
        return None  # the sampler keeps returning to measured points: converged

    def pending(self) -> int:
        return 0  # unknown: the search may converge early

    def _hypothesis(self, context, current, point, trial, history) -> Hypothesis:
        changes = _moves(self, current, point)
        moves = [(k, v) for k, _, v in changes]
        shown = ", ".join(f"{k.name} {k.show(c)} -> {k.show(v)}" for k, c, v in changes)
        best = min((t for t in history if t.value is not None), key=lambda t: t.value, default=None)
        learned = (
            f"{len(history) - 1} points measured since the search started, the best "
            f"{_relative(best.value)} at {self._describe(best.point)}"
            if best is not None and len(history) > 1
            else "no point measured yet"
        )
        return Hypothesis(
            title=f"joint {self.sampler} #{trial}: {shown}",
            patch=moved(moves, context.read),
            hypothesis=(
                f"move {shown} together (joint {self.sampler.upper()} search, trial {trial} of "
                f"{self.trials}: the knobs interact, so the sampler chooses all of them from "
                f"what was measured); so far: {learned}"
            ),
            mechanism="; ".join(
                k.mechanism or f"the value of {k.name} in {k.file}" for k, _ in moves
            ),
            expected_effect=f"{context.metric}: the sampler's guess; the decision rule measures it",
            source=", ".join(sorted({k.file for k, _ in moves})),
            proposal={
                "search": "joint",
                "sampler": self.sampler,
                "trial": trial,
                "knobs": {
                    k.name: {"from": c, "value": v}
                    for k, c, v in zip(self.knobs, current, point, strict=True)
                },
            },
        )

    # -- the study, rebuilt from the journal --------------------------------------------------

    def _history(self, records: Sequence[ExperimentRecord]) -> tuple[list[_Trial], float]:
        """The starting point and every joint trial since the model last restarted, each with
        its chained relative value; and the current best's value on that chain."""
        names = [k.name for k in self.knobs]
        start = 0
        for i, record in enumerate(records):
            if record.status == Status.KEEP and not _joint(record):
                start = i + 1  # something else changed the code under the knobs
        trials: list[_Trial] = []
        level = 1.0
        for record in records[start:]:
            if record.proposal is None or not _joint(record):
                continue
            knobs = record.proposal["knobs"]
            if set(knobs) != set(names):
                continue  # a search over other knobs (the config changed): not this model
            if not trials:
                trials.append(_Trial(tuple(knobs[n]["from"] for n in names), level))
            point = tuple(knobs[n]["value"] for n in names)
            change = change_of(record)
            if record.status in FAILED or change is None:
                trials.append(_Trial(point, None))
                continue
            value = level * (1 + change / 100)
            trials.append(_Trial(point, value))
            if record.status == Status.KEEP:
                level = value
        return trials, level

    def _study(self, direction: Direction, history: list[_Trial]):
        import optuna

        optuna.logging.set_verbosity(logging.WARNING)
        distributions = {k.name: _distribution(k) for k in self.knobs}
        with warnings.catch_warnings():
            # multivariate TPE and the GP sampler are marked experimental; both are what a
            # joint search of interacting knobs wants.
            warnings.simplefilter("ignore")
            study = optuna.create_study(
                direction="minimize" if direction == Direction.LOWER else "maximize",
                sampler=self._sampler(len(history)),
            )
            for trial in history:
                params = {
                    k.name: _param(k, v) for k, v in zip(self.knobs, trial.point, strict=True)
                }
                study.add_trial(
                    optuna.trial.create_trial(
                        params=params,
                        distributions=distributions,
                        value=trial.value,
                        state=(
                            optuna.trial.TrialState.COMPLETE
                            if trial.value is not None
                            else optuna.trial.TrialState.FAIL
                        ),
                    )
                )
        return study, distributions

    def _sampler(self, measured: int):
        import optuna

        # A fresh sampler per proposal, seeded by how far the search is: reproducible, and
        # each proposal draws differently.
        seed = self.seed + measured
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if self.sampler == "random":
                return optuna.samplers.RandomSampler(seed=seed)
            if self.sampler == "gp":
                return optuna.samplers.GPSampler(seed=seed, n_startup_trials=4)
            return optuna.samplers.TPESampler(
                seed=seed, n_startup_trials=max(4, len(self.knobs) + 1), multivariate=True
            )

    def _tell(self, study, asked, trial: _Trial) -> None:
        import optuna

        if trial.value is None:
            study.tell(asked, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(asked, trial.value)

    def _point(self, params: dict[str, Any]) -> tuple[float, ...]:
        return tuple(_value(k, params[k.name]) for k in self.knobs)

    def _describe(self, point: tuple[float, ...]) -> str:
        return ", ".join(f"{k.name} {k.show(v)}" for k, v in zip(self.knobs, point, strict=True))


def _moves(search: JointSearch, current, point):
    return [(k, c, v) for k, c, v in zip(search.knobs, current, point, strict=True) if v != c]


def _joint(record: ExperimentRecord) -> bool:
    return (record.proposal or {}).get("search") == "joint"


def _relative(value: float) -> str:
    return f"{(value - 1) * 100:+.1f}% from the start"


# A listed knob is searched over its values' positions (ordered, so the sampler can still learn
# "larger is better"); a range knob over the range itself, on its scale.


def _distribution(knob: Knob):
    import optuna

    if knob.listed:
        return optuna.distributions.IntDistribution(0, len(knob.grid) - 1)
    low, high = knob.grid[0], knob.grid[-1]
    if knob.integer:
        return optuna.distributions.IntDistribution(int(low), int(high), log=knob.log)
    return optuna.distributions.FloatDistribution(low, high, log=knob.log)


def _param(knob: Knob, value: float):
    """A measured value as the distribution holds it (a position for a listed knob)."""
    if knob.listed:
        return min(range(len(knob.grid)), key=lambda i: abs(knob.grid[i] - value))
    if knob.integer:
        low, high = int(knob.grid[0]), int(knob.grid[-1])
        return min(max(round(value), low), high)
    return min(max(float(value), knob.grid[0]), knob.grid[-1])


def _value(knob: Knob, param) -> float:
    return float(knob.grid[param]) if knob.listed else float(param)
