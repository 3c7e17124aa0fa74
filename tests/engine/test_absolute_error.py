"""The absolute_error criterion's weighted median and deviation against numpy; its split
search (order statistics) is checked against a brute force in test_splitting.py."""

import numpy as np
import pytest

from silva.engine.absolute_error import node_median_and_impurity, weighted_median_and_deviation


@pytest.mark.parametrize("seed", range(8))
def test_weighted_median_is_the_median_of_the_repeated_targets(seed):
    # Integer weights count as copies: np.median of the repeated targets (the mean of
    # the two middle ones when the total weight is even), as scikit-learn's rule says.
    rng = np.random.default_rng(seed)
    n = 1 + seed * 3
    y = np.sort(np.round(rng.normal(size=n), 1))
    w = rng.integers(0 if seed % 2 else 1, 4, n).astype(np.float64)
    w[rng.integers(n)] += 1.0  # some weight
    median, deviation = weighted_median_and_deviation(y, w)
    repeated = np.repeat(y, w.astype(int))
    assert median == np.median(repeated)
    np.testing.assert_allclose(deviation, np.sum(np.abs(repeated - median)), rtol=1e-12)


def test_node_median_and_impurity_reads_the_nodes_samples():
    rng = np.random.default_rng(1)
    y = rng.normal(size=30)
    w = rng.integers(1, 4, 30).astype(np.float64)
    sample_indices = rng.permutation(30).astype(np.int32)
    node = sample_indices[5:17]
    median, impurity = node_median_and_impurity(y, w, sample_indices, 5, 17)
    repeated = np.repeat(y[node], w[node].astype(int))
    assert median == np.median(repeated)
    np.testing.assert_allclose(impurity, np.mean(np.abs(repeated - median)), rtol=1e-12)
