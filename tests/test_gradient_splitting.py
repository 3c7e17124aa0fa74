"""The second-order split scan against a brute-force enumeration in plain Python."""

import numpy as np
import pytest

from silva.engine.binning import ALL_VALUE_BINS
from silva.engine.gradient_splitting import scan_numeric


def _leaf_score(g, h, l1, l2):
    t = np.sign(g) * max(abs(g) - l1, 0.0)
    return t * t / (h + l2) if h + l2 > 0 else 0.0


def _brute_force(hist, n_bins, missing_bin, sums, l1, l2, min_samples_leaf, min_child_weight):
    """Every candidate (each bin boundary with the missing values right, then left, then
    "values left, missing right"), scored from scratch; the first best wins."""
    has_missing = hist[missing_bin, 0] > 1e-9 * sums[0]
    best, best_bin, best_left = -np.inf, -1, None
    for missing_left in ([False, True] if has_missing else [False]):
        last = n_bins if has_missing and not missing_left else n_bins - 1
        for b in range(last):
            if hist[b, 0] <= 0 and b < n_bins - 1:
                continue
            left = hist[:b + 1, :3].sum(axis=0) + (hist[missing_bin, :3] if missing_left else 0)
            right = sums - left
            if min(left[0], right[0]) < max(min_samples_leaf, 1e-300):
                continue
            if min(left[2], right[2]) < min_child_weight:
                continue
            score = _leaf_score(left[1], left[2], l1, l2) + _leaf_score(right[1], right[2], l1, l2)
            if score > best * (1 + 1e-12) + 1e-12:
                best, best_left = score, left
                best_bin = b if b < n_bins - 1 else ALL_VALUE_BINS
    return best, best_bin, best_left


@pytest.mark.parametrize("seed", range(40))
def test_numeric_scan_finds_the_brute_force_best(seed):
    rng = np.random.default_rng(seed)
    n_bins = int(rng.integers(2, 30))
    missing_bin = n_bins + int(rng.integers(0, 2))
    hist = np.zeros((missing_bin + 1, 4))
    hist[:n_bins, 0] = rng.integers(0, 5, n_bins) * (rng.random(n_bins) < 0.8)
    if seed % 2:
        hist[missing_bin, 0] = rng.integers(1, 5)
    hist[:, 1] = rng.normal(size=missing_bin + 1) * hist[:, 0]
    hist[:, 2] = rng.random(missing_bin + 1) * hist[:, 0]
    sums = hist[:, :3].sum(axis=0)
    l1, l2 = [(0.0, 0.0), (0.0, 1.0), (0.3, 0.5)][seed % 3]
    min_samples_leaf, min_child_weight = [(0.0, 0.0), (2.0, 1e-3), (1.0, 0.5)][seed % 3]
    params = np.array([l1, l2, 0.0, min_child_weight, min_samples_leaf, 0.0])
    left = np.zeros(3)
    score, split_bin, _ = scan_numeric(hist, n_bins, missing_bin, sums, params, -np.inf,
                                       np.inf, 0, False, left, np.empty((4, missing_bin + 1)))
    expected, expected_bin, expected_left = _brute_force(
        hist, n_bins, missing_bin, sums, l1, l2, min_samples_leaf, min_child_weight)
    if expected_left is None:
        assert score == -np.inf
        return
    np.testing.assert_allclose(score, expected, rtol=1e-10)
    assert split_bin == expected_bin
    np.testing.assert_allclose(left, expected_left, rtol=1e-10, atol=1e-12)


def _scan(hist, n_bins, params):
    sums = hist[:, :3].sum(axis=0)
    left = np.zeros(3)
    score, split_bin, missing_left = scan_numeric(
        hist, n_bins, hist.shape[0] - 1, sums, params, -np.inf, np.inf, 0, False, left,
        np.empty((4, hist.shape[0])))
    return score, split_bin, left


def _histogram(counts, gradients):
    """Bins with the given counts, gradient sums, hessian = count; an empty missing bin."""
    hist = np.zeros((len(counts) + 1, 4))
    hist[:-1, 0] = counts
    hist[:-1, 1] = gradients
    hist[:-1, 2] = counts
    return hist


def test_numeric_scan_allows_a_child_of_exactly_min_samples_leaf():
    hist = _histogram([2, 5, 5], [-20.0, 5.0, 5.0])
    params = np.array([0.0, 0.0, 0.0, 0.0, 2.0, 0.0])  # min_samples_leaf = 2
    _, split_bin, left = _scan(hist, 3, params)
    assert split_bin == 0 and left[0] == 2
    params[4] = 3.0  # now bin 0 alone is too small
    _, split_bin, left = _scan(hist, 3, params)
    assert split_bin == 1


def test_numeric_scan_breaks_ties_by_the_first_candidate():
    # Splitting after bin 0 or after bin 2 gives children of the same scores.
    hist = _histogram([1, 1, 1, 1], [1.0, -1.0, -1.0, 1.0])
    params = np.zeros(6)
    score, split_bin, left = _scan(hist, 4, params)
    assert split_bin == 0 and left[0] == 1
    assert score == 1.0 + 1.0 / 3.0  # G^2/H: 1/1 left, (-1)^2/3 right
