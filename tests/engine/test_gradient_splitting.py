"""The second-order split scan against a brute-force enumeration in plain Python."""

import numpy as np
import pytest

from silva.engine.binning import ALL_VALUE_BINS

from ._kernels import find_gradient_split, gradient_params, gradient_scan_numeric


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
    params = gradient_params(l1=l1, l2=l2, min_child_weight=min_child_weight,
                             min_samples_leaf=min_samples_leaf)
    score, split_bin, _, left = gradient_scan_numeric(
        hist_f=hist, n_bins=n_bins, missing_bin=missing_bin, node_sums=sums, params=params)
    expected, expected_bin, expected_left = _brute_force(
        hist, n_bins, missing_bin, sums, l1, l2, min_samples_leaf, min_child_weight)
    if expected_left is None:
        assert score == -np.inf
        return
    np.testing.assert_allclose(score, expected, rtol=1e-10)
    assert split_bin == expected_bin
    np.testing.assert_allclose(left, expected_left, rtol=1e-10, atol=1e-12)


def _full_scan(hist, n_bins, missing_bin, sums, l2, min_samples_leaf, min_child_weight):
    """scan_numeric's full scan in plain Python floats, without L1: every bin's running
    sums, every bin scored as _children_scores scores it (the same IEEE operations in
    the same order, so the same bits), the first best among the bins that hold samples
    and the last."""
    has_missing = hist[missing_bin, 0] > 0.0
    best, best_bin, best_missing_left, best_left = -np.inf, -1, False, None
    for missing_left in ([False, True] if has_missing else [False]):
        lc, lg, lh = (hist[missing_bin, :3] if missing_left else np.zeros(3)).tolist()
        for b in range(n_bins if has_missing and not missing_left else n_bins - 1):
            lc, lg, lh = lc + hist[b, 0], lg + hist[b, 1], lh + hist[b, 2]
            rc, rg, rh = sums[0] - lc, sums[1] - lg, sums[2] - lh
            dl, dr = lh + l2, rh + l2
            score = (lg * lg / dl if dl > 0.0 else 0.0) + (rg * rg / dr if dr > 0.0 else 0.0)
            valid = (min(lc, rc) >= min_samples_leaf and lc > 0.0 and rc > 0.0
                     and min(lh, rh) >= min_child_weight)
            if valid and score > best and (hist[b, 0] > 0.0 or b == n_bins - 1):
                best, best_left, best_missing_left = score, np.array([lc, lg, lh]), missing_left
                best_bin = b if b < n_bins - 1 else ALL_VALUE_BINS
                if not has_missing:
                    best_missing_left = lc > sums[0] - lc
    return best, best_bin, best_missing_left, best_left


@pytest.mark.parametrize("seed", range(24))
def test_small_node_scan_matches_the_full_scan_bit_for_bit(seed):
    """A node of fewer samples than bins (scan_numeric then scores its non-empty bins
    alone) against the full scan, on 255 bins mostly empty, some of the empty ones
    holding a subtraction's tiny gradient residue, with missing values or not: the same
    score, bin, side and left sums, bit for bit."""
    rng = np.random.default_rng(seed)
    n_bins = 255
    missing_bin = n_bins
    hist = np.zeros((missing_bin + 1, 4))
    present = rng.choice(n_bins, size=int(rng.integers(2, 40)), replace=False)
    hist[present, 0] = rng.integers(1, 6, present.size)
    if seed % 2:
        hist[missing_bin, 0] = rng.integers(1, 6)
    hist[:, 1] = rng.normal(size=missing_bin + 1) * hist[:, 0]
    hist[:, 2] = rng.random(missing_bin + 1) * hist[:, 0]
    empty = np.flatnonzero(hist[:n_bins, 0] == 0)
    residue = rng.choice(empty, size=10, replace=False)
    hist[residue, 1] = 1e-15 * rng.normal(size=10)
    if seed % 3 == 0:
        hist[n_bins - 1] = 0.0  # the last bin empty: still the "values left" candidate
    sums = hist[:, :3].sum(axis=0)
    assert sums[0] < n_bins
    l2, min_samples_leaf = [(0.0, 0.0), (1.0, 2.0)][seed % 2]
    params = gradient_params(l2=l2, min_samples_leaf=min_samples_leaf, min_child_weight=1e-3)
    score, split_bin, missing_left, left = gradient_scan_numeric(
        hist_f=hist, n_bins=n_bins, missing_bin=missing_bin, node_sums=sums, params=params)
    expected = _full_scan(hist, n_bins, missing_bin, sums, l2, min_samples_leaf, 1e-3)
    assert expected[0] > -np.inf
    assert (score, split_bin, missing_left) == expected[:3]
    assert np.array_equal(left, expected[3])


def _scan(hist, n_bins, params):
    score, split_bin, _, left = gradient_scan_numeric(
        hist_f=hist, n_bins=n_bins, missing_bin=hist.shape[0] - 1,
        node_sums=hist[:, :3].sum(axis=0), params=params)
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
    _, split_bin, left = _scan(hist, 3, gradient_params(min_samples_leaf=2.0))
    assert split_bin == 0 and left[0] == 2
    # now bin 0 alone is too small
    _, split_bin, left = _scan(hist, 3, gradient_params(min_samples_leaf=3.0))
    assert split_bin == 1


def test_numeric_scan_breaks_ties_by_the_first_candidate():
    # Splitting after bin 0 or after bin 2 gives children of the same scores.
    hist = _histogram([1, 1, 1, 1], [1.0, -1.0, -1.0, 1.0])
    score, split_bin, left = _scan(hist, 4, gradient_params())
    assert split_bin == 0 and left[0] == 1
    assert score == 1.0 + 1.0 / 3.0  # G^2/H: 1/1 left, (-1)^2/3 right


def _random_node_histogram(rng, n_features, n_bins):
    """A histogram (n_features, n_bins + 1, 4) with the missing bin last, its count channel
    integer, its hessians positive, the same node on every feature."""
    n_samples = 40
    codes = rng.integers(0, n_bins + 1, size=(n_features, n_samples))
    gradient = rng.normal(size=n_samples)
    hessian = rng.random(n_samples) + 0.1
    hist = np.zeros((n_features, n_bins + 1, 4))
    for f in range(n_features):
        np.add.at(hist[f, :, 0], codes[f], 1.0)
        np.add.at(hist[f, :, 1], codes[f], gradient)
        np.add.at(hist[f, :, 2], codes[f], hessian)
        np.add.at(hist[f, :, 3], codes[f], 1.0)
    node_sums = np.array([n_samples, gradient.sum(), hessian.sum()])
    return hist, node_sums


@pytest.mark.parametrize("seed", range(6))
def test_node_gain_is_half_the_newton_gain_minus_min_split_gain(seed):
    # gain = 1/2 [G_L^2/(H_L+l) + G_R^2/(H_R+l) - G^2/(H+l)] - min_split_gain (Chen &
    # Guestrin 2016, eq. 7), maximised over every feature's every threshold by brute force.
    rng = np.random.default_rng(seed)
    n_features, n_bins = 3, 6
    hist, node_sums = _random_node_histogram(rng, n_features, n_bins)
    l2, min_split_gain = [(0.0, 0.0), (1.0, 0.0), (0.5, 0.1)][seed % 3]
    params = gradient_params(l2=l2, min_split_gain=min_split_gain)

    def newton(g, h):
        return g * g / (h + l2)

    best = -np.inf
    for f in range(n_features):
        expected, _, _ = _brute_force(hist[f], n_bins, n_bins, node_sums, 0.0, l2, 0.0, 0.0)
        best = max(best, expected)
    expected_gain = 0.5 * (best - newton(node_sums[1], node_sums[2])) - min_split_gain
    gain, feature, _, _, left = find_gradient_split(
        hist=hist, n_value_bins=np.full(n_features, n_bins),
        is_categorical=np.zeros(n_features, bool), missing_bin=n_bins,
        node_sums=node_sums, params=params)
    np.testing.assert_allclose(gain, expected_gain, rtol=1e-10)
    right = node_sums - left
    recomputed = 0.5 * (newton(left[1], left[2]) + newton(right[1], right[2])
                        - newton(node_sums[1], node_sums[2])) - min_split_gain
    np.testing.assert_allclose(recomputed, gain, rtol=1e-10)
    assert 0 <= feature < n_features


@pytest.mark.parametrize("seed", range(4))
def test_categorical_scan_finds_the_best_category_subset(seed):
    # Without regularisation, categories ordered by G/H give the best partition of all
    # (Fisher 1958): the scan must match a brute force over every subset, missing
    # values being one more category.
    rng = np.random.default_rng(seed + 100)
    n_bins = 5
    hist, node_sums = _random_node_histogram(rng, 1, n_bins)
    entries = np.flatnonzero(hist[0, :, 0] > 0)
    best = -np.inf
    for mask in range(1, 2 ** entries.size - 1):
        chosen = entries[[(mask >> k) & 1 == 1 for k in range(entries.size)]]
        left = hist[0, chosen, :3].sum(axis=0)
        right = node_sums - left
        best = max(best, left[1] ** 2 / left[2] + right[1] ** 2 / right[2])
    gain, feature, _, _, _ = find_gradient_split(
        hist=hist, n_value_bins=[n_bins], is_categorical=[True], missing_bin=n_bins,
        node_sums=node_sums, params=gradient_params())
    assert feature == 0
    np.testing.assert_allclose(gain, 0.5 * (best - node_sums[1] ** 2 / node_sums[2]),
                               rtol=1e-10)
