"""The decision machinery on synthetic targets with known truth, beside two simple rules.

For each kind of noise it draws bench runs from a baseline and a candidate whose true change is
known (null patches, true wins of 1, 2, 5 and 10%, true regressions of 5 and 10%), and decides
with:
- sequential: autoresearch's rule (calibration -> threshold -> interleaved runs judged at each
  look by the real `Judge`), with the default [decision] settings;
- single-shot: one run each, keep if the candidate's is lower (what single-shot loops do);
- fixed 10v10: ten baseline runs then ten candidate runs, one-sided Mann-Whitney at 0.05
  (what benchstat users do).
It prints the false-keep rate on null patches, the power at each true win, how often a true
regression is kept, and the mean number of bench runs per decision.

    python benchmarks/decision_calibration.py [--nulls 2000] [--trials 300] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import mannwhitneyu

from autoresearch.config import load_config
from autoresearch.decide import Judge, threshold_pct
from autoresearch.stats import robust_cv_pct

WINS = (0.01, 0.02, 0.05, 0.10)
REGRESSIONS = (0.05, 0.10)
GOAL_FALSE_KEEPS = 0.01
GOAL_POWER = 0.90
CONFIG = '[metric]\nname = "t_ms"\n'


class Noise:
    """A bench whose run i of an experiment measures `center` with this kind of noise."""

    def __init__(self, name: str, cv: float, tail: str = "gauss", drift: float = 0.0):
        self.name, self.cv, self.tail, self.drift = name, cv, tail, drift

    def draw(self, rng, center: float, index: int, drift_sign: float) -> float:
        if self.tail == "gauss":
            e = rng.normal(0, self.cv)
        elif self.tail == "heavy":  # Student t with 2 degrees of freedom: outliers galore
            e = self.cv * rng.standard_t(2)
        else:  # bimodal: three runs in ten land in a slow mode 12% up
            e = rng.normal(0, self.cv) + (0.12 if rng.random() < 0.3 else 0.0)
        value = center * (1 + e) * (1 + drift_sign * self.drift * index)
        return max(value, center * 0.05)


NOISES = [
    Noise("gaussian 2%", 0.02),
    Noise("gaussian 8%", 0.08),
    Noise("heavy-tailed (t2, 2%)", 0.02, tail="heavy"),
    Noise("drift (2% + 0.4%/run)", 0.02, drift=0.004),
    Noise("bimodal (2%, 30% at +12%)", 0.02, tail="bimodal"),
]


def sequential(config, noise: Noise, rng, factor: float) -> tuple[bool, int]:
    """autoresearch's rule: calibrate, then alternate B C C B ... until the judge decides."""
    sign = rng.choice((-1.0, 1.0))
    calibration = [noise.draw(rng, 100.0, i, sign) for i in range(config.bench.calibration_runs)]
    judge = Judge(config, threshold_pct(config, robust_cv_pct(calibration)))
    base: list[float] = []
    cand: list[float] = []
    index = 0
    for pair in range(1, judge.schedule[-1] + 1):
        order = ("b", "c") if pair % 2 else ("c", "b")
        for arm in order:
            center = 100.0 if arm == "b" else 100.0 * factor
            (base if arm == "b" else cand).append(noise.draw(rng, center, index, sign))
            index += 1
        if pair in judge.schedule:
            decision = judge.look({"t_ms": base}, {"t_ms": cand}, final=pair == judge.schedule[-1])
            if decision is not None:
                # Calibration is per session and per keep, not per decision: counted apart.
                return decision.status == "keep", len(base) + len(cand)
    raise AssertionError("the judge must decide at the last look")


def single_shot(noise: Noise, rng, factor: float) -> tuple[bool, int]:
    sign = rng.choice((-1.0, 1.0))
    b = noise.draw(rng, 100.0, 0, sign)
    c = noise.draw(rng, 100.0 * factor, 1, sign)
    return c < b, 2


def fixed_10v10(noise: Noise, rng, factor: float) -> tuple[bool, int]:
    sign = rng.choice((-1.0, 1.0))
    b = [noise.draw(rng, 100.0, i, sign) for i in range(10)]
    c = [noise.draw(rng, 100.0 * factor, 10 + i, sign) for i in range(10)]
    return mannwhitneyu(c, b, alternative="less").pvalue < 0.05, 20


RULES = {"sequential": None, "single-shot": single_shot, "fixed 10v10": fixed_10v10}


def rate(rule, config, noise, rng, factor, trials) -> tuple[float, float]:
    keeps = runs = 0
    for _ in range(trials):
        if rule is None:
            kept, n = sequential(config, noise, rng, factor)
        else:
            kept, n = rule(noise, rng, factor)
        keeps += kept
        runs += n
    return keeps / trials, runs / trials


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nulls", type=int, default=2000, help="null patches per noise kind")
    parser.add_argument("--trials", type=int, default=300, help="patches per true effect")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "autoresearch.toml"
        path.write_text(CONFIG)
        config = load_config(path)
    rng = np.random.default_rng(args.seed)
    started = time.monotonic()
    ok = True
    d = config.decision
    print(
        f"Defaults: alpha {d.alpha}, looks at {d.schedule()} runs per arm, "
        f"{config.bench.calibration_runs} calibration runs, threshold = max({d.min_effect_pct}%, "
        f"{d.noise_multiplier} x noise). {args.nulls} null patches and {args.trials} patches "
        "per true effect for each noise kind.\n"
    )
    header = ["noise", "rule", "false keeps"]
    header += [f"power {w:.0%}" for w in WINS]
    header += [f"keeps +{r:.0%}" for r in REGRESSIONS]
    header += ["runs/decision"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * 2 + "---:|" * (len(header) - 2))
    for noise in NOISES:
        robust = robust_cv_pct([noise.draw(rng, 100.0, 0, 1.0) for _ in range(20_000)]) / 100
        print(f"measuring {noise.name} (robust CV {robust:.1%})", file=sys.stderr)
        for name, rule in RULES.items():
            null_keep, null_runs = rate(rule, config, noise, rng, 1.0, args.nulls)
            cells = [f"{noise.name}, CV {robust:.1%}", name, f"{null_keep:.2%}"]
            run_counts = [null_runs * args.nulls]
            for win in WINS:
                power, runs = rate(rule, config, noise, rng, 1 - win, args.trials)
                run_counts.append(runs * args.trials)
                cells.append(f"{power:.1%}")
                if rule is None and win >= 3 * robust and power < GOAL_POWER:
                    ok = False
            for loss in REGRESSIONS:
                kept, runs = rate(rule, config, noise, rng, 1 + loss, args.trials)
                run_counts.append(runs * args.trials)
                cells.append(f"{kept:.1%}")
            total = args.nulls + args.trials * (len(WINS) + len(REGRESSIONS))
            cells.append(f"{sum(run_counts) / total:.1f}")
            if rule is None and null_keep > GOAL_FALSE_KEEPS:
                ok = False
            if rule is None and sum(run_counts) / total >= 20:
                ok = False
            print("| " + " | ".join(cells) + " |")
    print(
        f"\ngoals for the sequential rule: false keeps <= {GOAL_FALSE_KEEPS:.0%} of null patches, "
        f"power >= {GOAL_POWER:.0%} for wins of 3x the noise CV or more, fewer runs per decision "
        f"than fixed 10v10 (20): {'met' if ok else 'MISSED'} "
        f"({time.monotonic() - started:.0f} s)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
