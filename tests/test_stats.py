"""The statistics: noise, the rank test, the shift interval."""

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoresearch.decide.percent import ratio_pct
from autoresearch.decide.ranks import mann_whitney
from autoresearch.decide.stats import compare, robust_cv_pct


def test_robust_cv_ignores_an_outlier():
    samples = [100, 101, 99, 100, 102, 98, 500]
    assert robust_cv_pct(samples) == pytest.approx(100 * 1.4826 * 1 / 100)
    assert robust_cv_pct([5]) is None
    assert robust_cv_pct([0, 0, 0]) is None


def test_ratio_pct():
    assert ratio_pct(math.log(0.9)) == pytest.approx(-10)
    assert ratio_pct(0) == 0


def test_clear_shift_is_estimated_with_an_interval_around_it():
    rng = random.Random(1)
    base = [100 * (1 + rng.gauss(0, 0.02)) for _ in range(12)]
    cand = [90 * (1 + rng.gauss(0, 0.02)) for _ in range(12)]
    c = compare(base, cand, 0.95)
    assert c.ci_low_pct < -10 < c.ci_high_pct
    assert c.ci_low_pct < c.change_pct < c.ci_high_pct
    assert abs(c.change_pct + 10) < 2
    assert c.p_lower < 1e-4 and c.p_higher > 0.99
    assert (c.n_baseline, c.n_candidate) == (12, 12)


def test_identical_arms_are_not_significant():
    c = compare([100.0] * 6, [100.0] * 6, 0.95)
    assert c.change_pct == 0 and c.p_lower >= 0.5 and c.p_higher >= 0.5


@pytest.mark.parametrize(
    ("base", "cand"), [([], [1, 2]), ([1], [1, 2]), ([1, 2], [0, 1]), ([1, -2], [1, 2])]
)
def test_unknown_comparisons_are_none(base, cand):
    assert compare(base, cand, 0.95) is None


@given(
    st.lists(st.floats(1, 1e6), min_size=2, max_size=15),
    st.lists(st.floats(1, 1e6), min_size=2, max_size=15),
    st.floats(0.5, 0.99),
)
def test_interval_contains_the_estimate(base, cand, confidence):
    c = compare(base, cand, confidence)
    assert c.ci_low_pct <= c.change_pct + 1e-9
    assert c.change_pct <= c.ci_high_pct + 1e-9
    assert 0 <= c.p_lower <= 1 and 0 <= c.p_higher <= 1


values = st.one_of(st.floats(1, 1e6), st.sampled_from([1.0, 2.0, 3.0]))


@pytest.fixture(scope="module")
def mannwhitneyu():
    """SciPy's, imported by the worker that runs the test that asks for it (a second's import
    every worker's collection would otherwise pay)."""
    from scipy.stats import mannwhitneyu

    return mannwhitneyu


@given(
    st.lists(values, min_size=1, max_size=14),
    st.lists(values, min_size=1, max_size=14),
)
def test_the_rank_test_gives_scipy_s_p_values(mannwhitneyu, x, y):
    """Exact for small arms without ties, normal with tie and continuity corrections else:
    the p values SciPy's `mannwhitneyu` gives, without its second-long import."""
    lower, higher = mann_whitney(x, y)
    assert lower == pytest.approx(mannwhitneyu(x, y, alternative="less").pvalue, rel=1e-9)
    assert higher == pytest.approx(mannwhitneyu(x, y, alternative="greater").pvalue, rel=1e-9)


def test_the_rank_test_s_exact_tail():
    # All five of x below all five of y: one ordering of C(10, 5) = 252.
    assert mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == (pytest.approx(1 / 252), 1.0)
