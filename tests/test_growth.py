import math

import pytest

from harness.base.growth import growth_class, growth_exponent, late_early_ratio

COUNTS = [25, 50, 100, 200]


def test_linear_cost_fits_exponent_one():
    totals = [0.02 * n for n in COUNTS]
    assert growth_exponent(COUNTS, totals) == pytest.approx(1.0)
    assert growth_class(growth_exponent(COUNTS, totals)) == "linear"


def test_quadratic_cost_fits_exponent_two():
    totals = [0.001 * n * n for n in COUNTS]
    assert growth_exponent(COUNTS, totals) == pytest.approx(2.0)
    assert growth_class(2.0) == "quadratic"


def test_per_call_cost_growing_with_history_comes_out_quadratic():
    # Each call replays everything staged before it: call i costs a + b*i.
    totals = [sum(0.05 + 0.002 * i for i in range(n)) for n in COUNTS]
    exponent = growth_exponent(COUNTS, totals)
    assert 1.5 <= exponent < 2.0
    assert growth_class(exponent) == "quadratic"


def test_growth_needs_two_distinct_points():
    with pytest.raises(ValueError):
        growth_exponent([10, 10], [1.0, 2.0])
    with pytest.raises(ValueError):
        growth_exponent([10, 20], [0.0, 1.0])


def test_late_early_ratio_flat_and_growing():
    assert late_early_ratio([1.0] * 50) == pytest.approx(1.0)
    growing = [1.0 + i / 10 for i in range(100)]
    expected = (sum(growing[-10:]) / 10) / (sum(growing[:10]) / 10)
    assert late_early_ratio(growing) == pytest.approx(expected)
    assert late_early_ratio([2.0]) is None
    assert math.isclose(late_early_ratio([1.0, 3.0]), 3.0)
