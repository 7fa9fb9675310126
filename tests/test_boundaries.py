"""Group-sequential boundaries, checked against simulated paths of the looks they are for."""

import numpy as np
import pytest

from autoresearch.decide.boundaries import boundaries, power

LOOKS = (2, 4, 6, 9, 13, 18)


def crossings(looks, efficacy, futility, drift, paths=200_000, seed=11):
    """The share of simulated paths kept (and kept ignoring futility), by numpy's generator."""
    rng = np.random.default_rng(seed)
    sums = np.cumsum(rng.normal(drift, 1.0, (paths, looks[-1])), axis=1)
    z = np.stack([sums[:, n - 1] / np.sqrt(n) for n in looks], axis=1)
    running = np.ones(paths, bool)
    unstopped = np.ones(paths, bool)
    kept = np.zeros(paths, bool)
    kept_nonbinding = np.zeros(paths, bool)
    for k in range(len(looks)):
        win = running & (z[:, k] >= efficacy[k])
        kept |= win
        running &= ~win & (z[:, k] >= futility[k])
        win = unstopped & (z[:, k] >= efficacy[k])
        kept_nonbinding |= win
        unstopped &= ~win
    return kept.mean(), kept_nonbinding.mean()


def test_efficacy_spends_exactly_alpha_over_correlated_looks():
    b = boundaries(LOOKS, 0.01, 0.1, 0.9)
    _, false_keeps = crossings(LOOKS, b.efficacy, b.futility, 0.0)
    assert false_keeps == pytest.approx(0.01, abs=0.0008)
    # The union bound would have tested each look at its own share: far stricter.
    assert b.nominal_alpha(len(LOOKS) - 1) > 0.01 * LOOKS[-1] / sum(LOOKS)


def test_futility_spends_beta_at_the_effect_it_was_built_for():
    b = boundaries(LOOKS, 0.01, 0.1, 0.9)
    kept, _ = crossings(LOOKS, b.efficacy, b.futility, 0.9)
    assert kept == pytest.approx(b.power, abs=0.004)
    assert b.power == pytest.approx(power(LOOKS, b.efficacy, b.futility, 0.9))
    # Beta is spent faster than the pairs: the first look gives up on a null more often than
    # the linear share would, and a win of the size sought rarely.
    assert b.futility[0] < b.futility[1] < b.efficacy[1]
    assert b.futility[-1] == b.efficacy[-1]


def test_without_an_effect_there_are_no_futility_stops():
    b = boundaries(LOOKS, 0.005, 0.1, None)
    assert all(f == -np.inf for f in b.futility[:-1])
    assert b.efficacy == boundaries(LOOKS, 0.005, 0.1, 0.5).efficacy
