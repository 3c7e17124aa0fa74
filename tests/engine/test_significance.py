"""Significance tests of splits against scipy: the regularised upper incomplete gamma
function, the chi-square survival function, and the split p-value of CART's
``min_significance`` (Pearson's test of the two children against the classes)."""

import numpy as np
import pytest

scipy_special = pytest.importorskip("scipy.special")
scipy_stats = pytest.importorskip("scipy.stats")

from silva.engine.significance import (  # noqa: E402
    chi2_sf,
    regularized_upper_gamma,
    split_p_value,
)


def sums(class_counts):
    """Classification channel sums: the sample count, then one count per class."""
    counts = np.asarray(class_counts, dtype=np.float64)
    return np.r_[counts.sum(), counts]


def test_regularized_upper_gamma_against_scipy():
    for a in [0.5, 1.0, 1.5, 2.0, 4.5, 10.0, 49.5, 200.0]:
        for x in [1e-8, 0.01, 0.3, 1.0, a, a + 1.0, 2 * a + 3, 5 * a + 40, 700.0]:
            expected = scipy_special.gammaincc(a, x)
            got = regularized_upper_gamma(a, x)
            if expected > 1e-300:
                assert got == pytest.approx(expected, rel=1e-10, abs=1e-300), (a, x)
            else:
                assert got < 1e-290
    assert regularized_upper_gamma(2.0, 0.0) == 1.0
    assert regularized_upper_gamma(2.0, np.inf) == 0.0
    assert np.isnan(regularized_upper_gamma(0.0, 1.0))


def test_chi2_sf_against_scipy():
    rng = np.random.RandomState(0)
    for df in range(1, 31):
        for x in np.concatenate([rng.rand(5) * 3 * df, [0.0, 0.5, df, 4 * df + 30]]):
            assert chi2_sf(x, float(df)) == pytest.approx(scipy_stats.chi2.sf(x, df),
                                                          rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("seed", range(6))
def test_split_p_value_is_the_contingency_test(seed):
    rng = np.random.RandomState(seed)
    n_classes = 2 + seed % 3
    left = rng.randint(1, 40, size=n_classes).astype(float)
    right = rng.randint(1, 40, size=n_classes).astype(float)
    expected = scipy_stats.chi2_contingency(np.array([left, right]), correction=False)[1]
    assert split_p_value(sums(left + right), sums(left)) == pytest.approx(expected,
                                                                          rel=1e-10)
    # Weighted counts are rescaled to the sample count: scaling the weights is a no-op.
    node = sums(left + right)
    node[1:] *= 2.5
    left_sums = sums(left)
    left_sums[1:] *= 2.5
    left_sums[0] = left.sum()
    assert split_p_value(node, left_sums) == pytest.approx(expected, rel=1e-10)


def test_split_p_value_ignores_absent_classes():
    # A class absent from the node is no column of the table (degrees of freedom 1).
    left, right = np.array([10.0, 0.0, 3.0]), np.array([4.0, 0.0, 12.0])
    expected = scipy_stats.chi2_contingency(np.array([[10, 3], [4, 12]]),
                                            correction=False)[1]
    assert split_p_value(sums(left + right), sums(left)) == pytest.approx(expected,
                                                                          rel=1e-10)
    assert split_p_value(sums([5.0, 0.0]), sums([2.0, 0.0])) == 1.0  # pure node


def test_split_p_value_has_nothing_to_test():
    assert split_p_value(sums([10, 5]), sums([0, 0])) == 1.0  # an empty child
    assert split_p_value(sums([10, 5]), sums([10, 5])) == 1.0
