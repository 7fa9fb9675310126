"""Keep, discard or inconclusive: a sequential rule on paired runs, with the evidence it used.

Baseline (the current best) and candidate run in interleaved pairs (B C, C B, ...). What a
decision reads is each pair's log ratio log(c/b): whatever moves both runs of a pair alike
(load that changes slower than one pair, a step when another process starts) cancels there.
Their mean is the change, with a t interval (the calibration's A/A pairs pooled in: more
degrees of freedom); the runs per arm a decision may take grow from `min_runs` to the
design's cap, with looks in between (`schedule`), each with group-sequential boundaries
(design.py, boundaries.py).

- keep: better with a one-sided p under the look's efficacy boundary (the boundaries spend
  alpha over the looks as they are, correlated: false keeps are alpha however the looks
  fall), a gain of at least the floor `min_effect_pct` (the smallest change worth claiming),
  every sentinel shown within its budget, and small wins agreeing with `agree_with`;
- discard: worse with p < 0.05 over the looks; or the gain is shown below the floor (its
  one-sided 90% bound); or, before the last look, its t under the look's futility boundary
  (spending the design's beta under the win it is built for): not worth more runs;
- otherwise run more; past the last look, inconclusive.

A win decided while a sentinel is still unresolved keeps running, both arms, up to twice the
cap, until the sentinel is shown within its budget or over it (`sentinel_extension`). With a
`bench.sentinel_command` (only the sentinels, cheaper than the whole bench) those extra pairs
run it instead: the same seconds buy more pairs where the uncertainty is.

The noise decides how many runs a decision takes, not what is worth claiming: the futility
stops are built for a win of `target_effect_pct` (or, on a bench too noisy for it, the
smallest win the cap can see), the cap is `max_runs` or what `budget_s` pays for at the
calibrated run time. An
unknown comparison (no samples, non-positive values) is never significant. `paired = false`
judges the two arms as two samples (Mann-Whitney and Hodges-Lehmann) instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..config import Config, MetricSpec, SentinelSpec
from ..journal.decision import Decision, Design, SentinelExtension
from ..journal.evidence import Evidence, Interval, SentinelEvidence
from ..statuses import Direction, Rule, Status
from .design import budget_runs, look_alphas, sequential_design
from .stats import Comparison, compare, compare_paired

__all__ = ["CONFIDENCE", "WORSE_ALPHA", "Decision", "Judge", "improvement"]

CONFIDENCE = 0.95  # of the reported intervals
WORSE_ALPHA = 0.05  # a false discard only costs a win, so a loss needs less evidence
# "No gain worth claiming" needs the gain's one-sided 90% upper bound below the floor.
FUTILITY_CONFIDENCE = 0.80
SMALL_WIN_FACTOR = 2.0  # a win under this many floors must agree with `agree_with`
SENTINEL_EXTENSION = 2.0  # a win with an unresolved sentinel may run to this many caps

Samples = dict[str, list[float]]  # an arm's runs so far: metric -> one value per run
Spec = MetricSpec | SentinelSpec


def improvement(
    spec: MetricSpec | SentinelSpec, comparison: Comparison
) -> tuple[float, float, float, float]:
    """(estimate, interval low, interval high, p) with positive meaning better."""
    c = comparison
    if spec.direction == Direction.LOWER:
        return -c.change_pct, -c.ci_high_pct, -c.ci_low_pct, c.p_lower
    return c.change_pct, c.ci_low_pct, c.ci_high_pct, c.p_higher


@dataclass
class _Look:
    """One look of the rule: how many pairs, its share of alpha, the evidence it reads."""

    n: int  # pairs so far
    number: int  # 1-based, among the judge's looks
    alpha: float  # this look's share of alpha
    out_of_runs: bool  # no more pairs will run
    final: bool  # the primary metric's last look (the cap, or out of runs)
    metrics: dict[str, Evidence]
    sentinels: dict[str, SentinelEvidence]
    design: Design


class Judge:
    """The sequential rule for one experiment; `look` after each pair, it decides at the
    scheduled ones. `noise_pct` (one run's, from calibration) and `run_s` (one run's duration)
    and `prior` (the calibration's A/A pairs: sum of squares, degrees of freedom) set the
    design (sequential_design); without them it is `max_runs` with no futility stops."""

    def __init__(
        self,
        config: Config,
        threshold: float,
        noise_pct: float | None = None,
        run_s: float | None = None,
        sentinel_run_s: float | None = None,
        prior: tuple[float, int] | None = None,
    ):
        self.config = config
        self.threshold = threshold
        self.prior = prior if prior and prior[0] > 0 and prior[1] > 0 else None
        if self.prior is not None:
            pair_sd: float | None = math.sqrt(self.prior[0] / self.prior[1])
        else:  # one run's noise, as a pair's when the runs are independent
            pair_sd = math.sqrt(2) * noise_pct / 100 if noise_pct else None
        self.design = sequential_design(config, pair_sd, self.prior[1] if self.prior else 0, run_s)
        self.cap = self.design.cap
        self.schedule = list(self.design.looks)
        self.alphas = [self.design.bounds.nominal_alpha(k) for k in range(len(self.schedule))]
        d = config.decision
        self.alpha_worse = WORSE_ALPHA / len(self.schedule)
        # A win waiting for its sentinels: more looks, each with its own share of the
        # sentinels' error, up to SENTINEL_EXTENSION caps (and budget_s).
        extra = self._extension_pairs(run_s, sentinel_run_s) if config.sentinel else 0
        steps = {self.cap + round(extra * f) for f in (0.5, 1.0)}
        self.extension = sorted(n for n in steps if n > self.cap)
        self.limit = self.extension[-1] if self.extension else self.cap
        self.looks = [*self.schedule, *self.extension]
        # The sentinels' error, shared over all their looks as the primary's alpha is over its
        # own: in proportion to n, so the early looks (which a sentinel noisier than its budget
        # could never pass) spend little and the looks with the most runs spend the most.
        self.sentinel_errors = look_alphas(1 - d.sentinel_confidence, self.looks)
        self._win: tuple[int, dict[str, Evidence], str] | None = None  # look, evidence, reason

    def _extension_pairs(self, run_s: float | None, sentinel_run_s: float | None) -> int:
        """Pairs a win may add for its sentinels: up to SENTINEL_EXTENSION caps of the whole
        bench, within budget_s; with a sentinel command, as many of its cheaper pairs as the
        same seconds pay for (its duration from calibration; unknown: as many as the bench)."""
        limit = math.ceil(SENTINEL_EXTENSION * self.cap)
        budget = budget_runs(self.config.decision, run_s)
        if budget is not None:
            limit = min(limit, max(self.cap, budget))
        extra = limit - self.cap
        if self.config.bench.sentinel_command and run_s and sentinel_run_s:
            extra = int(extra * run_s / max(sentinel_run_s, 1e-3))
        return extra

    @property
    def awaiting_sentinels(self) -> bool:
        """A win stands and only its sentinels run on: the harness may run just them."""
        return self._win is not None

    def replay(
        self, baseline: dict[str, list[float]], candidate: dict[str, list[float]]
    ) -> Decision | None:
        """The decision on runs made elsewhere (a bench host), look by look as
        `measure_pair` takes them: at each scheduled look and at the limit."""
        n = _pairs(baseline)
        for i in range(1, n + 1):
            if i in self.looks or i == self.limit:
                cut = (
                    {k: v[:i] for k, v in baseline.items()},
                    {k: v[:i] for k, v in candidate.items()},
                )
                decision = self.look(*cut, i == self.limit)
                if decision is not None:
                    return decision
        return None

    def look(
        self, baseline: dict[str, list[float]], candidate: dict[str, list[float]], final: bool
    ) -> Decision | None:
        """The decision with these runs, or None to run more; `final`: no more runs will come."""
        n = _pairs(baseline)
        if n not in self.looks and not final:
            return None
        at = self._look_at(baseline, candidate, n, final)
        if self._win is not None:
            return self._sentinels_only(at)
        return self._primary(at, baseline, candidate)

    def _look_at(self, baseline: Samples, candidate: Samples, n: int, final: bool) -> _Look:
        """Everything this look reads and reports: the evidence of each metric and sentinel."""
        primary = self.config.metric
        look = next((i + 1 for i, point in enumerate(self.looks) if n <= point), len(self.looks))
        out_of_runs = final or n >= self.limit  # nothing more will run
        metrics = dict(
            self._win[1]
            if self._win is not None
            else {
                spec.name: self._evidence(spec, baseline, candidate)
                for spec in [primary, *self.config.secondary]
            }
        )
        metrics[primary.name] = replace(metrics[primary.name], threshold_pct=self.threshold)
        error = self.sentinel_errors[look - 1]
        sentinels = {
            s.name: self._sentinel(s, baseline, candidate, error) for s in self.config.sentinel
        }
        index = min(look, len(self.schedule)) - 1
        design = Design(
            threshold_pct=self.threshold,
            alpha_per_look=self.alphas[index],
            alphas=list(self.alphas),
            schedule=list(self.schedule),
            cap=self.cap,
            designed_for_pct=self.design.effect_pct,
            # How often the futility stops let a win of that size through: the review says
            # which design each decision had, not what the code would build today.
            designed_power=self.design.power,
            analysis="paired" if self.config.decision.paired else "two-sample",
            n_baseline=n,
            n_candidate=len(candidate.get(primary.name, [])),
        )
        return _Look(
            n=n,
            number=look,
            alpha=self.alphas[index],
            out_of_runs=out_of_runs,
            final=out_of_runs or n >= self.cap,  # the primary metric's last look
            metrics=metrics,
            sentinels=sentinels,
            design=design,
        )

    def _decided(self, at: _Look, status: Status, rule: str, reason: str) -> Decision:
        extension = None
        if self._win is not None:
            extension = SentinelExtension(
                primary_decided_at=self._win[0],
                pairs_added=at.n - self._win[0],
                ran="sentinel command" if self.config.bench.sentinel_command else "bench",
                outcome=(
                    "shown within budget"
                    if status == Status.KEEP
                    else "shown over budget"
                    if rule == Rule.SENTINEL_BUDGET
                    else "still unresolved"
                ),
                verdicts={k: v.verdict for k, v in at.sentinels.items()},
            )
        return Decision(
            Status(status),
            Rule(rule),
            reason,
            at.number,
            self.config.metric.name,
            at.metrics,
            at.sentinels,
            at.design,
            extension,
        )

    def _primary(self, at: _Look, baseline: Samples, candidate: Samples) -> Decision | None:
        """The rule on the primary metric: a win (if nothing blocks it), a loss, futility."""
        primary, n = self.config.metric, at.n
        ev = at.metrics[primary.name]
        if ev.improvement_pct is None or ev.p_better is None or ev.p_worse is None:
            why = f"{primary.name} not compared"
            return (
                self._decided(at, Status.INCONCLUSIVE, Rule.UNKNOWN_COMPARISON, why)
                if at.final
                else None
            )
        gain, p_better = ev.improvement_pct, ev.p_better
        said = (
            f"{primary.name} {ev.change_pct:+.2f}% [{ev.ci_low_pct:+.2f}%, {ev.ci_high_pct:+.2f}%]"
        )
        if p_better < at.alpha and gain >= self.threshold:
            reason = (
                f"{said}, p={p_better:.2g} < {at.alpha:.2g} at {n} runs per arm, "
                f"gain >= floor {self.threshold:.2f}%"
            )
            return self._win_at(at, gain, reason)
        if ev.p_worse < self.alpha_worse:
            why = f"{said}, worse with p={ev.p_worse:.2g}"
            return self._decided(at, Status.DISCARD, Rule.SIGNIFICANT_LOSS, why)
        if self._futile(primary, baseline, candidate):
            by_noise = self.threshold > self.config.decision.min_effect_pct
            return self._decided(
                at,
                Status.DISCARD,
                Rule.BELOW_NOISE_THRESHOLD if by_noise else Rule.BELOW_THRESHOLD,
                f"{said}: the gain is below the "
                f"{'threshold the noise set' if by_noise else 'floor'} {self.threshold:.2f}% "
                f"with {(1 + FUTILITY_CONFIDENCE) / 2:.0%} confidence",
            )
        if not at.final:
            bound = self._futility(ev, at.number - 1)
            if bound is not None:
                return self._decided(
                    at,
                    Status.DISCARD,
                    Rule.NOT_PROMISING,
                    f"{said} at {n} runs per arm: t {bound[0]:.2f} under the futility bound "
                    f"{bound[1]:.2f}: the design keeps a {self.design.effect_pct:.1f}% win "
                    f"{self.design.power:.0%} of the time by {self.cap} runs per arm; not "
                    "worth the runs",
                )
            return None
        why = f"{said}, p={p_better:.2g}: not decided after {n} runs per arm"
        return self._decided(at, Status.INCONCLUSIVE, Rule.MAX_RUNS, why)

    def _win_at(self, at: _Look, gain: float, reason: str) -> Decision | None:
        """A significant win: kept unless a secondary or sentinel blocks it; an unresolved
        sentinel at the cap lets the sentinels run on while the win stands."""
        blocked = self._keep_blockers(at.metrics, at.sentinels, gain)
        if blocked is None:
            return self._decided(at, Status.KEEP, Rule.SIGNIFICANT_WIN, reason)
        status, rule, why = blocked
        if status == Status.DISCARD:
            return self._decided(at, status, rule, why)
        if rule == Rule.SENTINEL_UNRESOLVED and at.final and not at.out_of_runs:
            self._win = (at.n, at.metrics, reason)  # the win stands; the sentinels run on
            return None
        return self._decided(at, Status.INCONCLUSIVE, rule, why) if at.final else None

    def _sentinels_only(self, at: _Look) -> Decision | None:
        """A win decided at the cap, its sentinels still unresolved: theirs is the decision."""
        assert self._win is not None
        over = [s for s in at.sentinels.values() if s.verdict == "over"]
        if over:
            why = "; ".join(s.reason for s in over)
            return self._decided(at, Status.DISCARD, Rule.SENTINEL_BUDGET, why)
        unresolved = [s for s in at.sentinels.values() if s.verdict == "unresolved"]
        if not unresolved:
            why = f"{self._win[2]}; sentinels shown within budget with more runs"
            return self._decided(at, Status.KEEP, Rule.SIGNIFICANT_WIN, why)
        if at.out_of_runs:
            why = "; ".join(s.reason for s in unresolved)
            return self._decided(at, Status.INCONCLUSIVE, Rule.SENTINEL_UNRESOLVED, why)
        return None

    def _keep_blockers(
        self,
        metrics: dict[str, Evidence],
        sentinels: dict[str, SentinelEvidence],
        gain: float,
    ) -> tuple[Status, Rule, str] | None:
        over = [s for s in sentinels.values() if s.verdict == "over"]
        if over:
            return Status.DISCARD, Rule.SENTINEL_BUDGET, "; ".join(s.reason for s in over)
        unresolved = [s for s in sentinels.values() if s.verdict == "unresolved"]
        if unresolved:
            return (
                Status.INCONCLUSIVE,
                Rule.SENTINEL_UNRESOLVED,
                "; ".join(s.reason for s in unresolved),
            )
        if gain < SMALL_WIN_FACTOR * self.threshold:
            disagree = [
                name
                for name in self.config.decision.agree_with
                if not _gain(metrics.get(name) or sentinels.get(name)) > 0
            ]
            if disagree:
                return (
                    Status.INCONCLUSIVE,
                    Rule.CROSS_SCALE_DISAGREEMENT,
                    f"a small win that {', '.join(disagree)} does not confirm in direction",
                )
        return None

    def _compare(
        self, spec: Spec, baseline: Samples, candidate: Samples, confidence: float
    ) -> Comparison | None:
        b, c = baseline.get(spec.name, []), candidate.get(spec.name, [])
        if self.config.decision.paired:
            # The calibration measured the primary metric's pairs: its spread joins the test.
            prior = self.prior if spec.name == self.config.metric.name else None
            paired = compare_paired(b, c, confidence, prior)
            if paired is not None or len(b) == len(c):
                return paired
        # A metric some runs did not print cannot be paired run by run.
        return compare(b, c, confidence)

    def _futile(self, spec: Spec, baseline: Samples, candidate: Samples) -> bool:
        comparison = self._compare(spec, baseline, candidate, FUTILITY_CONFIDENCE)
        return comparison is not None and improvement(spec, comparison)[2] < self.threshold

    def _futility(self, ev: Evidence, k: int) -> tuple[float, float] | None:
        """(t, bound) when look k's test is under the design's futility bound, else None."""
        se = ev.se_pct
        if se is None or ev.change_pct is None or self.design.effect_pct is None:
            return None
        if k >= len(self.schedule) - 1:
            return None
        # The gain as a log ratio, positive: better; its t statistic.
        m = math.log1p(ev.change_pct / 100) * (-1 if ev.direction == Direction.LOWER else 1)
        se = max(se / 100, 1e-12)
        t = m / se
        bound = self.design.futility(k, se * math.sqrt(ev.n_baseline))
        return (t, bound) if t < bound else None

    def _evidence(self, spec: Spec, baseline: Samples, candidate: Samples) -> Evidence:
        b, c = baseline.get(spec.name, []), candidate.get(spec.name, [])
        known = Evidence(
            direction=spec.direction,
            unit=spec.unit,
            baseline_samples=list(b),
            candidate_samples=list(c),
            confidence=CONFIDENCE,
        )
        comparison = self._compare(spec, baseline, candidate, CONFIDENCE)
        if comparison is None:
            return known
        gain, low, high, p_better = improvement(spec, comparison)
        # The same runs as two samples, beside: what the pairing bought.
        unpaired = compare(b, c, CONFIDENCE) if comparison.paired else None
        lower = spec.direction == Direction.LOWER
        return replace(
            known,
            **comparison.estimate(),
            paired=comparison.paired,
            se_pct=comparison.se_pct,
            df=comparison.df,
            pooled_with_calibration=comparison.pooled,
            compared=True,
            p_better=p_better,
            p_worse=comparison.p_higher if lower else comparison.p_lower,
            improvement_pct=gain,
            improvement_low_pct=low,
            improvement_high_pct=high,
            unpaired=Interval(unpaired.change_pct, unpaired.ci_low_pct, unpaired.ci_high_pct)
            if unpaired is not None
            else None,
        )

    def _sentinel(
        self, spec: SentinelSpec, baseline: Samples, candidate: Samples, error: float
    ) -> SentinelEvidence:
        """Non-inferiority: the interval's worse end must stay inside the budget. Each look
        spends its share (`error`) of the sentinel's error, so more looks do not make "within"
        easier."""
        evidence = self._evidence(spec, baseline, candidate)
        confidence = 1 - error
        comparison = self._compare(spec, baseline, candidate, 1 - 2 * error)
        fields = {f: getattr(evidence, f) for f in Evidence.__dataclass_fields__}
        fields |= {"confidence": confidence, "budget_pct": spec.budget_pct}
        if comparison is None:
            why = f"sentinel {spec.name} was not measured"
            return SentinelEvidence(**fields, verdict="unresolved", reason=why)
        _, low, high, _ = improvement(spec, comparison)
        worst, best = -low, -high  # worsening in percent, at the interval's two ends
        if worst <= spec.budget_pct:
            verdict = "within"
        elif best > spec.budget_pct:
            verdict = "over"
        else:
            verdict = "unresolved"
        return SentinelEvidence(
            **fields,
            verdict=verdict,
            worsening_upper_pct=worst,
            reason=(
                f"sentinel {spec.name}: worse by at most {worst:+.2f}% "
                f"({confidence:.1%} bound) against a {spec.budget_pct:g}% budget: {verdict}"
            ),
        )


def _pairs(samples: dict[str, list[float]]) -> int:
    """Pairs run so far: the longest metric's samples (the primary's, unless the sentinel
    command ran on after the primary was decided)."""
    return max((len(v) for v in samples.values()), default=0)


def _gain(evidence: Evidence | None) -> float:
    """A metric's estimated improvement; an unmeasured metric counts as no improvement."""
    return (evidence.improvement_pct if evidence is not None else None) or 0.0
