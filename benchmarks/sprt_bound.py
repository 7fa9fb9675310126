"""How few runs per decision any rule on independent pairs could spend on the calibration suite.

Wald's sequential probability ratio test is the fewest-runs test of one effect against none:
here with everything in its favour that the real rule does not have (the noise known exactly,
a look after every pair, no cap), on the calibration suite's patches (1000 nulls, 200 each of
2, 5 and 10% wins and losses) under gaussian noise. For each beta it prints the power on the
win the goal names, the false keeps and the mean bench runs per decision (both arms); the
fewest runs among the betas that keep 90% power is the floor under the real rule's figure.

    python benchmarks/sprt_bound.py [--noise 8] [--win 10] [--alpha 0.005] [--trials 20000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noise", type=float, default=8.0, help="one run's noise, percent")
    parser.add_argument("--win", type=float, default=10.0, help="the win to keep 90%% of")
    parser.add_argument("--alpha", type=float, default=0.005)
    parser.add_argument("--trials", type=int, default=20000, help="tests per patch kind")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    pair_sd = math.sqrt(2) * args.noise / 100
    sought = -math.log1p(-args.win / 100) / pair_sd
    print(f"gaussian {args.noise:g}% a run, a {args.win:g}% win sought, alpha {args.alpha}")
    print("| beta | power | false keeps | runs/decision |\n|---:|---:|---:|---:|")
    best = None
    for beta in BETAS:
        runs = power = false = 0.0
        for effect, count in PATCHES.items():
            drift = -math.log1p(-effect) / pair_sd
            kept, pairs = sprt(rng, drift, sought, args.alpha, beta, args.trials)
            runs += 2 * pairs * count
            if effect == 0.0:
                false = kept
            if math.isclose(effect * 100, args.win):
                power = kept
        per_decision = runs / sum(PATCHES.values())
        print(f"| {beta:.2f} | {power:.1%} | {false:.2%} | {per_decision:.1f} |")
        if power >= 0.9 and (best is None or per_decision < best):
            best = per_decision
    if best is not None:
        print(f"\nfewest runs per decision with 90% power: {best:.1f}")


if __name__ == "__main__":
    main()
