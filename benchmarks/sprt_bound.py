"""How few runs per decision any rule on independent pairs could spend on the calibration suite.

Wald's sequential probability ratio test is the fewest-runs test of one effect against none:
here with everything in its favour that the real rule does not have (the noise known exactly,
a look after every pair, no cap), on the calibration suite's patches (1000 nulls, 200 each of
2, 5 and 10% wins and losses) under gaussian noise. For each beta it prints the power on the
win the goal names, the false keeps and the mean bench runs per decision (both arms); the
fewest runs among the betas that keep 90% power is the floor under the real rule's figure.

    python benchmarks/sprt_bound.py [--noise 8] [--win 10] [--alpha 0.005] [--trials 20000]

With no setting given it runs the three the docs quote (8% noise and a 10% win at alpha 0.005
and 0.01, 3% noise and a 5% win); each run's rows are written as data (results.py).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from results import record

PATCHES = {0.0: 1000, 0.02: 200, 0.05: 200, 0.10: 200, -0.02: 200, -0.05: 200, -0.10: 200}
BETAS = (0.05, 0.10, 0.15, 0.20, 0.25)


def sprt(rng, drift: float, sought: float, alpha: float, beta: float, trials: int):
    """(share kept, mean pairs) of `trials` tests whose pairs' standardised log ratios have
    mean `drift`, testing no effect against `sought` (both in pair standard deviations)."""
    upper, lower = math.log((1 - beta) / alpha), math.log(beta / (1 - alpha))
    llr = np.zeros(trials)
    pairs = np.zeros(trials)
    open_ = np.ones(trials, bool)
    kept = np.zeros(trials, bool)
    while open_.any():
        step = sought * rng.normal(drift, 1, trials) - sought * sought / 2
        llr = np.where(open_, llr + step, llr)
        pairs += open_
        kept |= open_ & (llr >= upper)
        open_ &= (llr > lower) & (llr < upper)
    return kept.mean(), pairs.mean()


# What the docs quote (no setting given): the goal's noise and win at two alphas, and a quieter
# bench.
DOCUMENTED = ((8.0, 10.0, 0.005), (8.0, 10.0, 0.01), (3.0, 5.0, 0.005))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noise", type=float, help="one run's noise, percent")
    parser.add_argument("--win", type=float, help="the win to keep 90%% of")
    parser.add_argument("--alpha", type=float)
    parser.add_argument("--trials", type=int, default=20000, help="tests per patch kind")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    given = (args.noise, args.win, args.alpha)
    settings = DOCUMENTED if given == (None, None, None) else (_or(given, DOCUMENTED[0]),)
    rows = [row for s in settings for row in _bound(rng, *s, args.trials)]
    record("sprt_bound", rows, notes=f"{args.trials} tests per patch kind")


def _or(given: tuple, default: tuple) -> tuple:
    return tuple(d if g is None else g for g, d in zip(given, default, strict=True))


def _bound(rng, noise: float, win: float, alpha: float, trials: int) -> list[dict]:
    """Each beta's power, false keeps and runs per decision, printed and as rows."""
    pair_sd = math.sqrt(2) * noise / 100
    sought = -math.log1p(-win / 100) / pair_sd
    condition = f"gaussian {noise:g}%, a {win:g}% win, alpha {alpha}"
    print(f"{condition}\n| beta | power | false keeps | runs/decision |\n|---:|---:|---:|---:|")
    best, rows = None, []
    for beta in BETAS:
        runs = power = false = 0.0
        for effect, count in PATCHES.items():
            drift = -math.log1p(-effect) / pair_sd
            kept, pairs = sprt(rng, drift, sought, alpha, beta, trials)
            runs += 2 * pairs * count
            if effect == 0.0:
                false = kept
            if math.isclose(effect * 100, win):
                power = kept
        per_decision = runs / sum(PATCHES.values())
        print(f"| {beta:.2f} | {power:.1%} | {false:.2%} | {per_decision:.1f} |")
        rows.append(
            {
                "condition": condition,
                "beta": f"{beta:.2f}",
                "power": f"{power:.1%}",
                "false keeps": f"{false:.2%}",
                "runs per decision": f"{per_decision:.1f}",
            }
        )
        if power >= 0.9 and (best is None or per_decision < best):
            best = per_decision
    if best is not None:
        print(f"fewest runs per decision with 90% power: {best:.1f}\n")
    return rows


if __name__ == "__main__":
    main()
