"""silva.engine.vector_exp.exp against numpy's exp (the C library's), value by value."""

import numba as nb
import numpy as np
import pytest

from silva.engine.vector_exp import exp


@nb.njit(cache=True)
def _exp_all(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = exp(x[i])
    return out


def _ulps(actual, expected):
    return np.abs(actual - expected) / np.spacing(np.abs(expected))


def test_within_one_ulp_over_the_whole_range():
    rng = np.random.default_rng(0)
    x = np.concatenate([
        rng.uniform(-708.0, 709.7, 400_000),  # normal results
        rng.normal(scale=4.0, size=200_000),  # the raw scores boosting sees
        rng.uniform(-1e-6, 1e-6, 20_000),
        # Around the reduction's switch points k ln 2 +- ln(2)/2, where r is largest.
        (np.arange(-1000, 1000) + 0.5) * np.log(2.0),
        np.arange(-1000, 1000) * np.log(2.0),
    ])
    x = x[(x > -708.0) & (x < 709.78)]
    ulps = _ulps(_exp_all(x), np.exp(x))
    assert ulps.max() <= 1.0
    assert ulps.mean() < 0.2


def test_subnormal_results_within_one_unit():
    x = np.linspace(-745.1, -708.5, 50_001)
    smallest = np.nextafter(0.0, 1.0)
    assert np.abs(_exp_all(x) - np.exp(x)).max() <= smallest


@pytest.mark.parametrize("x,expected", [
    (0.0, 1.0), (-0.0, 1.0), (1.0, np.e), (1e-300, 1.0),
    (709.78, np.exp(709.78)), (709.79, np.inf), (710.0, np.inf), (1e300, np.inf),
    (np.inf, np.inf), (-745.2, 0.0), (-746.0, 0.0), (-1e300, 0.0), (-np.inf, 0.0),
])
def test_special_values(x, expected):
    actual = _exp_all(np.array([x]))[0]
    if np.isfinite(expected) and expected != 0.0:
        assert _ulps(actual, expected) <= 1.0
    else:
        assert actual == expected


def test_nan_gives_nan():
    assert np.isnan(_exp_all(np.array([np.nan]))[0])
