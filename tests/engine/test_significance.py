"""Significance tests of splits against scipy: the chi-square survival function, the
split p-value of CART's ``min_significance`` and the multiway contingency test."""

import numpy as np
import pytest

scipy_stats = pytest.importorskip("scipy.stats")

from silva.engine.multiway import contingency_chi2  # noqa: E402
from silva.engine.significance import chi2_sf, split_p_value  # noqa: E402


@pytest.mark.parametrize("df", [1.0, 2.0, 3.0, 7.0, 30.0])
def test_chi2_sf_matches_scipy(df):
    # Both branches of the incomplete gamma (series below a + 1, continued fraction above).
    for statistic in [0.0, 1e-6, 0.3, 1.0, df, df + 1.5, 3 * df, 40.0, 200.0]:
        expected = scipy_stats.chi2.sf(statistic, df)
        np.testing.assert_allclose(chi2_sf(statistic, df), expected, rtol=1e-9,
                                   atol=1e-300, err_msg=f"chi2 {statistic} df {df}")


def _sums(class_counts):
    """Classification channel sums: the sample count, then one count per class."""
    counts = np.asarray(class_counts, dtype=np.float64)
    return np.r_[counts.sum(), counts]


@pytest.mark.parametrize("seed", range(8))
def test_split_p_value_is_pearsons_test_of_the_two_children(seed):
    rng = np.random.default_rng(seed)
    n_classes = 2 + seed % 3
    left = rng.integers(1, 30, n_classes).astype(float)
    right = rng.integers(1, 30, n_classes).astype(float)
    expected = scipy_stats.chi2_contingency(np.vstack([left, right]), correction=False)
    p_value = split_p_value(_sums(left + right), _sums(left))
    np.testing.assert_allclose(p_value, expected.pvalue, rtol=1e-9)


def test_split_p_value_rescales_weights_to_the_sample_count():
    # Weighted counts are rescaled so that the table sums to the node's sample count: a
    # node of 20 samples weighing 200 tests like the unweighted table of 20.
    left, right = np.array([8.0, 2.0]), np.array([3.0, 7.0])
    weighted_node = np.r_[20.0, 10 * (left + right)]
    weighted_left = np.r_[10.0, 10 * left]
    expected = scipy_stats.chi2_contingency(np.vstack([left, right]), correction=False)
    np.testing.assert_allclose(split_p_value(weighted_node, weighted_left),
                               expected.pvalue, rtol=1e-9)


def test_split_p_value_has_nothing_to_test():
    assert split_p_value(_sums([10, 0]), _sums([4, 0])) == 1.0  # one class
    assert split_p_value(_sums([10, 5]), _sums([0, 0])) == 1.0  # an empty child
    assert split_p_value(_sums([10, 5]), _sums([10, 5])) == 1.0


@pytest.mark.parametrize("seed", range(6))
def test_contingency_chi2_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 15, size=(2 + seed % 3, 2 + seed % 2)).astype(float)
    table[:, 0] += 1.0
    table[0] += 1.0
    if seed % 2:
        table = np.vstack([table, np.zeros(table.shape[1])])  # an empty branch
    statistic, df, p_value = contingency_chi2(table)
    full = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    expected = scipy_stats.chi2_contingency(full, correction=False)
    np.testing.assert_allclose(statistic, expected.statistic, rtol=1e-10)
    assert df == expected.dof
    np.testing.assert_allclose(p_value, expected.pvalue, rtol=1e-9)


def test_contingency_chi2_of_one_branch_is_not_a_test():
    assert contingency_chi2(np.array([[3.0, 4.0], [0.0, 0.0]])) == (0.0, 0, 1.0)
