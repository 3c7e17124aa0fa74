"""Histograms against a naive numpy kernel: CART's build_histogram and subtraction, and
the gradient grower's histogram pass (one pass and row blocks in parallel)."""

import numpy as np
import pytest

from ._kernels import (
    GRADIENT_HISTOGRAM,
    cart_histogram,
    gradient_node_histogram,
    make_gradient_workspace,
    subtract_cart_histogram,
)


def _build_histogram_naive(bin_codes, stats, rows, n_bins):
    """``hist[f, b, c]``: the sum of ``stats[s, c]`` over ``rows`` with code ``b`` on ``f``,
    added in the order of ``rows`` (np.add.at is unbuffered: one addition per row)."""
    n_features = bin_codes.shape[0]
    hist = np.zeros((n_features, n_bins, stats.shape[1]))
    for f in range(n_features):
        for c in range(stats.shape[1]):
            np.add.at(hist[f, :, c], bin_codes[f, rows], stats[rows, c])
    return hist


def _random_node(n_samples, node_size, seed):
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_samples, node_size, replace=False)).astype(np.int32)


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("code_dtype", [np.uint8, np.uint16])
def test_build_histogram_equals_the_naive_sums_bit_for_bit(parallel, code_dtype):
    rng = np.random.default_rng(0)
    n_features, n_samples, n_bins = 4, 500, 300 if code_dtype == np.uint16 else 17
    bin_codes = rng.integers(0, n_bins, size=(n_features, n_samples)).astype(code_dtype)
    stats = rng.normal(size=(n_samples, 3))
    # A node in the middle of a shuffled index: only its rows are summed.
    sample_indices = rng.permutation(n_samples).astype(np.int32)
    start, end = 50, 420
    hist = cart_histogram(bin_codes=bin_codes, stats=stats, sample_indices=sample_indices,
                          start=start, end=end, n_bins=n_bins, parallel=parallel)
    expected = _build_histogram_naive(bin_codes, stats, sample_indices[start:end], n_bins)
    np.testing.assert_array_equal(hist, expected)


@pytest.mark.parametrize("parallel", [False, True])
def test_subtraction_gives_the_sibling_histogram(parallel):
    rng = np.random.default_rng(1)
    n_features, n_samples, n_bins = 3, 400, 9
    bin_codes = rng.integers(0, n_bins, size=(n_features, n_samples)).astype(np.uint8)
    # Integer channels: parent minus child is then exactly the sibling's sums.
    stats = rng.integers(0, 5, size=(n_samples, 2)).astype(np.float64)
    sample_indices = np.arange(n_samples, dtype=np.int32)
    parent = cart_histogram(bin_codes=bin_codes, stats=stats, sample_indices=sample_indices,
                            start=0, end=n_samples, n_bins=n_bins, parallel=False)
    child = cart_histogram(bin_codes=bin_codes, stats=stats, sample_indices=sample_indices,
                           start=0, end=150, n_bins=n_bins, parallel=False)
    subtract_cart_histogram(parent=parent, child=child, parallel=parallel)
    np.testing.assert_array_equal(
        parent, _build_histogram_naive(bin_codes, stats, sample_indices[150:], n_bins))


def _gradient_statistics(n_samples, seed):
    """Gradients, hessians and weights on coarse binary grids, so that every sum of them is
    exact whatever the order of the additions: the row blocks must then give the naive
    sums bit for bit."""
    rng = np.random.default_rng(seed)
    gradient = rng.integers(-64, 64, size=(n_samples, 1)) / 8.0
    hessian = rng.integers(1, 16, size=(n_samples, 1)) / 4.0
    weight = rng.integers(1, 4, size=n_samples).astype(np.float64)
    return gradient, hessian, weight


# One serial pass below 2 * BLOCK_ROWS samples; above it, row blocks in parallel or not.
@pytest.mark.parametrize("node_size,serial", [(3000, False), (20_000, False),
                                              (20_000, True)])
def test_gradient_histogram_pass_equals_the_naive_sums(node_size, serial):
    assert node_size < 2 * GRADIENT_HISTOGRAM.BLOCK_ROWS or node_size > 4 * \
        GRADIENT_HISTOGRAM.BLOCK_ROWS  # each case takes the path it is named for
    n_features, n_samples, n_bins = 3, 24_000, 32
    rng = np.random.default_rng(node_size)
    bin_codes = rng.integers(0, n_bins, size=(n_features, n_samples)).astype(np.uint8)
    workspace = make_gradient_workspace(bin_codes=bin_codes, n_bins=n_bins)
    gradient, hessian, weight = _gradient_statistics(n_samples, seed=node_size + 1)
    node = _random_node(n_samples, node_size, seed=node_size + 2)
    index = workspace["work_index"][0]
    index[:node_size] = node
    hist = workspace["histograms"][0]
    gradient_node_histogram(
        workspace=workspace, hist=hist, parent=workspace["histograms"][1], index=index,
        start=0, end=node_size, n_features=n_features, subtract=False,
        threads=1 if serial else 2,
        two_lanes=False, statistics=(gradient, hessian, 0, weight, True), fill=True)
    # The four channels: count, weighted gradient, weighted hessian, weight.
    channels = np.column_stack([np.ones(n_samples), weight * gradient[:, 0],
                                weight * hessian[:, 0], weight])
    expected = _build_histogram_naive(bin_codes, channels, node, n_bins)
    np.testing.assert_array_equal(hist[:, :n_bins], expected)
    assert not hist[:, n_bins:].any()  # the padding stays zero


def test_gradient_row_blocks_give_the_same_bits_in_parallel_and_serially():
    # Continuous statistics: the blocks' sums round, but in the same order on one thread
    # or many, so the two passes agree bit for bit.
    n_features, n_samples, n_bins = 3, 24_000, 32
    rng = np.random.default_rng(7)
    bin_codes = rng.integers(0, n_bins, size=(n_features, n_samples)).astype(np.uint8)
    statistics = (rng.normal(size=(n_samples, 1)), rng.random((n_samples, 1)), 0,
                  rng.random(n_samples) + 0.5, True)
    node = _random_node(n_samples, 20_000, seed=8)
    histograms = []
    for threads in (2, 1):
        workspace = make_gradient_workspace(bin_codes=bin_codes, n_bins=n_bins)
        index = workspace["work_index"][0]
        index[:node.size] = node
        hist = workspace["histograms"][0]
        gradient_node_histogram(
            workspace=workspace, hist=hist, parent=workspace["histograms"][1], index=index,
            start=0, end=node.size, n_features=n_features, subtract=False, threads=threads,
            two_lanes=False, statistics=statistics, fill=True)
        histograms.append(hist.copy())
    np.testing.assert_array_equal(histograms[0], histograms[1])
