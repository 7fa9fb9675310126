"""How many runs a decision may take: the floor, the design (its looks and boundaries), what a
bench can detect.

Pure functions of the config and the calibrated noise; the rule (rule.py) uses them for one
experiment, the calibration (bench/calibrate.py) to say before the night what it can detect.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ..config import Config, DecisionConfig
from .boundaries import Boundaries, boundaries, power
from .dist import special

__all__ = [
    "DESIGN_BETA",
    "NOISE_CALIBRATIONS",
    "POWER",
    "REFUSE_FACTOR",
    "SPENDING",
    "TARGET_BETA",
    "Design",
    "NoiseVerdict",
    "budget_runs",
    "detectable_effect_pct",
    "look_alphas",
    "noise_verdict",
    "paired_noise_pct",
    "runs_needed",
    "sequential_design",
    "threshold_pct",
]

POWER = 0.9  # of the cap: the chance to detect a change of the floor
SPENDING = 1.0  # a sentinel's look k gets its error in proportion to n_k ** SPENDING
# A night is refused only when the bench cannot see this many times the effect asked for: a
# bench that detects 7% against a 5% target still keeps the 10% and 20% wins a night is for.
REFUSE_FACTOR = 3.0
# A calibration that says a night would be refused is measured once more first: a busy minute at
# the night's start (a build finishing, a backup) must not cost the night. The second stands.
NOISE_CALIBRATIONS = 2
# A bench too noisy for the effect asked for (its most pairs cannot keep such a win this
# often) gets a design for the smallest win it can see, whose futility stops give up at most
# this many of those wins: they are the most a noisy night can find.
DESIGN_BETA = 0.05
# A bench that can see the effect asked for gets futility stops that give up at most this many
# wins of that size: with the cap's pairs to spare, its design still keeps 95% of them (the
# calibration suite), and a null is given up within a few pairs (fewer runs per decision).
TARGET_BETA = 0.10


def threshold_pct(config: Config, noise: float | None) -> float:
    """The smallest change of the primary metric worth claiming: the floor, raised to
    `noise_multiplier` times the noise only when that is set (0 by default: the noise decides
    how many runs a decision takes, not what is worth claiming)."""
    floor = config.decision.min_effect_pct
    multiplier = config.decision.noise_multiplier
    return floor if noise is None or not multiplier else max(floor, multiplier * noise)


def runs_needed(config: Config, noise_pct: float, effect_pct: float) -> int:
    """Runs per arm (pairs) whose design keeps a win of `effect_pct` with 90% power when one
    run's noise is `noise_pct` (a pair's log ratio has sqrt(2) times that noise when the runs
    are independent, less when load moves both alike), whatever max_runs says."""
    return _fewest_pairs(_shape(config), _pair_sd(noise_pct), _prior_df(config), effect_pct)


def detectable_effect_pct(config: Config, noise_pct: float, run_s: float | None = None) -> float:
    """The smallest win kept with 90% power at the most runs per arm a decision may take:
    `max_runs`, or fewer when `budget_s` at `run_s` a run pays for fewer. The same design the
    rule builds for a bench too noisy for its target."""
    most = _most_runs(config.decision, run_s)
    effect = _smallest_win(_shape(config), most, _pair_sd(noise_pct), _prior_df(config))
    return -math.expm1(-effect) * 100


def _pair_sd(noise_pct: float) -> float:
    """One run's noise in percent as a pair's log ratio's sd, on the 1% grid designs share."""
    return _on_grid(math.sqrt(2) * noise_pct / 100)


def _on_grid(pair_sd: float) -> float:
    # The noise in steps of 1%: calibrations that differ by less share one design. A bench
    # with no noise at all (identical runs) sees the smallest change.
    return math.exp(round(math.log(max(pair_sd, 1e-6)) * 100) / 100)


def _prior_df(config: Config) -> int:
    """The degrees of freedom a calibration's A/A pairs give each test."""
    return max(config.bench.calibration_runs // 2 - 1, 0)


Shape = tuple[float, int, int]  # alpha, min_runs, looks: what shapes a design, hashable


def _shape(config: Config) -> Shape:
    """What shapes a design, hashable: alpha, min_runs, looks."""
    d = config.decision
    return d.alpha, d.min_runs, d.looks


def _most_runs(d: DecisionConfig, run_s: float | None) -> int:
    budget = budget_runs(d, run_s)
    return d.max_runs if budget is None else max(min(d.max_runs, budget), d.min_runs)


@dataclass(frozen=True)
class NoiseVerdict:
    """What the calibrated noise means for the night: the change it can detect, and whether
    that is too far from the effect asked for to run (`refuse`) or only worth saying."""

    detectable_pct: float
    target_pct: float
    refuse: bool
    message: str
    noise_pct: float  # one run's noise as the rule's design sees it

    @property
    def again(self) -> str:
        """Said when a first calibration would refuse the night: it is measured once more."""
        return (
            f"the bench looks too noisy for the night (noise {self.noise_pct:.2f}% a run as the "
            f"rule sees it, "
            f"{self.detectable_pct:.1f}% detectable): calibrating once more before refusing it"
        )

    @property
    def refusal(self) -> str:
        """Why the night does not start (serially or on bench hosts)."""
        return (
            f"the bench is too noisy for the effect asked for: {self.message}; or run with "
            "--accept-noise to spend the night anyway"
        )

    @property
    def warning(self) -> str | None:
        """Said before the night when the bench cannot see the effect asked for."""
        return self.message if self.detectable_pct > self.target_pct else None


def paired_noise_pct(pair_ss: float | None, pair_df: int) -> float | None:
    """One run's noise as the paired rule sees it: the sd of the calibration's A/A pairs' log
    ratios (what rule.Judge designs its test with), as one run's (over sqrt 2). Load or a drift
    that both runs of a pair share cancels in their ratio; None without a spread to go on."""
    if not pair_ss or pair_df <= 0:
        return None
    return 100 * math.sqrt(pair_ss / pair_df / 2)


def noise_verdict(
    config: Config,
    noise_pct: float,
    run_s: float | None,
    pair_noise: float | None = None,
    quieter: tuple[str, float] | None = None,
) -> NoiseVerdict:
    """One verdict for `check`, the calibration's warning and the night's refusal: the
    detectable change at the noise the rule's design sees (`pair_noise`, paired_noise_pct,
    under the paired rule; the runs' own spread `noise_pct` otherwise, as the rule does) within
    `max_runs` and `budget_s`; refused only beyond REFUSE_FACTOR times `target_effect_pct`;
    the advice names every setting in the way, and `quieter` (the same benchmark's least
    disturbed value and its noise as the design sees it) when it would see more."""
    d = config.decision
    pair = pair_noise if d.paired else None
    seen_noise = pair or noise_pct
    detectable = detectable_effect_pct(config, seen_noise, run_s)
    target = d.target_effect_pct
    most = _most_runs(d, run_s)
    within = f", {pair:.2f}% within a pair" if pair else ""
    seen = (
        f"noise {noise_pct:.2f}% a run{within}: {most} runs per arm detect {detectable:.1f}% "
        "with 90% power"
    )
    if detectable <= target:
        return NoiseVerdict(
            detectable, target, False, f"{seen}, within {target:g}% asked for", seen_noise
        )
    needed = runs_needed(config, seen_noise, target)
    advice = [f"decision.max_runs to {needed}"] if needed > d.max_runs else []
    budget = budget_runs(d, run_s)
    if budget is not None and run_s and budget < needed:
        advice.append(f"decision.budget_s to {math.ceil(2 * needed * run_s)}")
    remedies = [f"to see {target:g}%, raise {' and '.join(advice)}"] if advice else []
    refuse = detectable > REFUSE_FACTOR * target
    if quieter is not None:
        remedies[:0] = _fastest_round(config, quieter, run_s, REFUSE_FACTOR if refuse else 1)
    remedies.append("make the bench quieter (longer runs, fewer other jobs)")
    # On a machine noisy at heart (a shared VM), a project whose wins are large can say so
    # instead of running the night with --accept-noise: smaller wins then end inconclusive.
    larger = math.ceil(detectable)
    remedies.append(f"look only for wins of {larger}% or more (target_effect_pct = {larger})")
    consequence = (
        f"over {REFUSE_FACTOR:g} times it, the night would keep little"
        if refuse
        else f"wins under {detectable:.1f}% will often end inconclusive"
    )
    message = (
        f"{seen}, more than decision.target_effect_pct = {target:g}%: {consequence}; "
        + ", or ".join(remedies)
    )
    return NoiseVerdict(detectable, target, refuse, message, seen_noise)


def _fastest_round(
    config: Config, quieter: tuple[str, float], run_s: float | None, factor: float
) -> list[str]:
    """Deciding on the primary's fastest round, when that alone lifts the refusal (or the
    warning): within `factor` times the target. The runs have measured it already, and the
    night keeps its target and its length."""
    name, noise = quieter
    sees = detectable_effect_pct(config, noise, run_s)
    if sees > factor * config.decision.target_effect_pct:
        return []
    most = _most_runs(config.decision, run_s)
    # Refused: the fallback decides only such nights; a warning is lifted by the name alone.
    how = (
        f'[metric] fallback = "{name}": the night decides on it when the medians are too noisy'
        if factor > 1
        else f'[metric] name = "{name}"'
    )
    return [
        f"decide on {name}, the fastest round of the same benchmark, whose noise here lets "
        f"{most} runs per arm detect {sees:.1f}% ({how}; it misses what only slower rounds "
        "show)"
    ]


def budget_runs(d: DecisionConfig, run_s: float | None) -> int | None:
    """The pairs `budget_s` pays for at `run_s` a run; None without a budget."""
    return int(d.budget_s / (2 * run_s)) if d.budget_s and run_s else None


def look_alphas(alpha: float, schedule: list[int]) -> list[float]:
    """Each look's share of alpha: in proportion to n ** SPENDING, adding up to alpha."""
    weights = [n**SPENDING for n in schedule]
    return [alpha * w / sum(weights) for w in weights]


@dataclass(frozen=True)
class Design:
    """One experiment's sequential design against the calibrated best: the looks, their
    boundaries, and the win (`effect_pct`) the futility stops are built to let through."""

    looks: tuple[int, ...]
    bounds: Boundaries
    effect_pct: float | None  # None: no noise known, no futility stops
    prior_df: int  # degrees of freedom the calibration's pairs add to each look's test
    power: float | None = None  # how often the design keeps a win of effect_pct
    # The target's win is a percent: its size in pair standard deviations is read again at
    # each look, from the spread the look measures (a bench noisier than its calibration
    # said would otherwise stop such wins too often). The smallest win a noisy bench can see
    # is a size in those deviations already (what the most pairs keep 90% of the time).
    remeasured: bool = False

    @property
    def cap(self) -> int:
        return self.looks[-1]

    def futility(self, k: int, pair_sd: float) -> float:
        """Look k's futility boundary (z scale) when the look measures this spread of a
        pair's log ratio."""
        if not self.remeasured or self.effect_pct is None or self.power is None:
            return self.bounds.futility[k]
        alpha = self.bounds.efficacy_alpha
        sought = -math.log1p(-self.effect_pct / 100) / max(pair_sd, 1e-9)
        drift = _as_read(self.looks, alpha, round(sought, 2), self.prior_df)
        return boundaries(self.looks, alpha, 1 - self.power, drift).futility[k]


def sequential_design(
    config: Config, pair_sd: float | None, prior_df: int, run_s: float | None
) -> Design:
    """Looks from min_runs to the most pairs allowed (max_runs, or what budget_s pays for at
    run_s), efficacy boundaries spending alpha over them, and futility stops that give up at
    most TARGET_BETA of the wins of `target_effect_pct` (its size read again at each look) or,
    when the most pairs cannot keep that win 95% of the time at this noise (`pair_sd`: one
    pair's log ratio's standard deviation), DESIGN_BETA of the smallest win they keep 90% of
    the time.
    Without a noise: efficacy boundaries alone."""
    d = config.decision
    most = _most_runs(d, run_s)
    if not pair_sd:
        looks = tuple(d.schedule(most))
        return Design(looks, boundaries(looks, d.alpha, DESIGN_BETA, None), None, prior_df, None)
    return _plan(_shape(config), d.target_effect_pct, most, _on_grid(pair_sd), prior_df)


@functools.lru_cache(maxsize=512)
def _plan(
    shape: tuple[float, int, int], target_pct: float, most: int, pair_sd: float, prior_df: int
) -> Design:
    """The design for one noise: the target's, or (too noisy) the smallest win's at `most`."""
    alpha = shape[0]
    target = -math.log1p(-target_pct / 100)  # as a log ratio
    looks = _looks(shape, most)
    if _keeps(shape, most, target, pair_sd, prior_df, DESIGN_BETA):
        return _design(looks, alpha, target, pair_sd, prior_df, TARGET_BETA, remeasured=True)
    effect = _smallest_win(shape, most, pair_sd, prior_df)
    return _design(looks, alpha, effect, pair_sd, prior_df, DESIGN_BETA)


def _looks(shape: tuple[float, int, int], n: int) -> tuple[int, ...]:
    alpha, min_runs, looks = shape
    return tuple(DecisionConfig(alpha=alpha, min_runs=min_runs, looks=looks).schedule(n))


def _keeps(shape: Shape, n: int, effect: float, pair_sd: float, prior_df: int, beta: float) -> bool:
    """Whether n pairs' design keeps a win of `effect` (a log ratio) 1 - beta of the time."""
    drift = effect / pair_sd
    return _t_power(_looks(shape, n), shape[0], drift, prior_df, beta) >= 1 - beta


@functools.lru_cache(maxsize=512)
def _fewest_pairs(shape: Shape, pair_sd: float, prior_df: int, effect_pct: float) -> int:
    """The fewest pairs whose design keeps a win of `effect_pct` 90% of the time."""
    effect = -math.log1p(-effect_pct / 100)
    low, high = shape[1] - 1, 100_000
    while high - low > 1:
        mid = (low + high) // 2
        keeps = _keeps(shape, mid, effect, pair_sd, prior_df, 1 - POWER)
        low, high = (low, mid) if keeps else (mid, high)
    return high


@functools.lru_cache(maxsize=512)
def _smallest_win(shape: Shape, most: int, pair_sd: float, prior_df: int) -> float:
    """The smallest win (a log ratio) that `most` pairs keep with 90% power."""
    low, high = 0.0, 3.0
    for _ in range(16):
        mid = (low + high) / 2
        low, high = (
            (low, mid) if _keeps(shape, most, mid, pair_sd, prior_df, 1 - POWER) else (mid, high)
        )
    return high


def _design(
    looks: tuple[int, ...],
    alpha: float,
    effect: float,
    pair_sd: float,
    prior_df: int,
    beta: float,
    remeasured: bool = False,
) -> Design:
    drift = _as_read(looks, alpha, effect / pair_sd, prior_df)
    bounds = boundaries(looks, alpha, beta, drift)
    return Design(looks, bounds, -math.expm1(-effect) * 100, prior_df, 1 - beta, remeasured)


def _t_efficacy(looks: tuple[int, ...], alpha: float, prior_df: int) -> tuple[float, ...]:
    """Each look's efficacy boundary as the test reads it: the t quantile of its nominal p at
    that look's degrees of freedom."""
    sp = special()
    return tuple(
        float(sp.stdtrit(prior_df + n - 1, sp.ndtr(c)))
        for c, n in zip(boundaries(looks, alpha, DESIGN_BETA, None).efficacy, looks, strict=True)
    )


def _as_read(looks: tuple[int, ...], alpha: float, drift: float, prior_df: int) -> float:
    """A win's drift as a t test with an estimated spread sees it: the statistic's spread
    about its mean grows by sqrt(1 + c^2 / 2 df) near the boundary c (the noncentral t's
    normal approximation), which reads as a smaller drift in the z-scale design."""
    last = _t_efficacy(looks, alpha, prior_df)[-1]
    return drift / math.sqrt(1 + last**2 / (2 * (prior_df + looks[-1] - 1)))


def _t_power(
    looks: tuple[int, ...], alpha: float, drift: float, prior_df: int, beta: float
) -> float:
    """The design's power for a win of `drift`, as the looks' t tests read it: the drift as
    they see it, the t scale's efficacy boundaries, futility built for that drift."""
    seen = _as_read(looks, alpha, drift, prior_df)
    efficacy = _t_efficacy(looks, alpha, prior_df)
    bounds = boundaries(looks, alpha, beta, seen)
    futility = tuple(min(f, e) for f, e in zip(bounds.futility, efficacy, strict=True))
    return power(looks, efficacy, futility, seen)
