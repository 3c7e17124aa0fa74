"""Binning: raw values to bin codes, against numpy references."""

import numpy as np

from silva.engine.binning import Binner


def test_exact_binning_one_bin_per_value():
    X = np.array([[3.0], [1.0], [2.0], [2.0], [5.0], [1.0]])
    binner = Binner(10, np.array([False]))
    codes = binner.fit_transform(X)
    assert binner.n_value_bins_[0] == 4
    np.testing.assert_array_equal(binner.bin_thresholds_[0, :3], [1.5, 2.5, 4.0])
    np.testing.assert_array_equal(binner.bin_lower_[0, :4], [1, 2, 3, 5])
    np.testing.assert_array_equal(binner.bin_upper_[0, :4], [1, 2, 3, 5])
    assert codes.shape == (1, 6)  # feature-major
    np.testing.assert_array_equal(codes[0], [2, 0, 1, 1, 3, 0])
    # a value lies in the first bin whose threshold is >= it
    probe = np.array([[0.0], [1.5], [1.6], [2.5], [4.0], [4.1], [99.0]])
    np.testing.assert_array_equal(binner.transform(probe)[0], [0, 0, 1, 1, 2, 3, 3])


def test_exact_binning_at_the_limit():
    values = np.arange(255.0)
    binner = Binner(255, np.array([False])).fit(values[:, None])
    assert binner.n_value_bins_[0] == 255
    np.testing.assert_array_equal(binner.bin_thresholds_[0, :254], values[:-1] + 0.5)
    one_more = Binner(255, np.array([False])).fit(np.arange(256.0)[:, None])
    assert one_more.n_value_bins_[0] <= 255


def test_exact_binning_of_adjacent_floats():
    low = 1.0
    high = np.nextafter(low, 2.0)
    binner = Binner(4, np.array([False]))
    codes = binner.fit_transform(np.array([[low], [high]]))
    np.testing.assert_array_equal(codes[0], [0, 1])
    assert low <= binner.bin_thresholds_[0, 0] < high


def test_quantile_binning():
    rng = np.random.RandomState(0)
    x = rng.randn(10_000)
    binner = Binner(16, np.array([False]))
    codes = binner.fit_transform(x[:, None])[0]
    n_bins = binner.n_value_bins_[0]
    assert 2 <= n_bins <= 16
    counts = np.bincount(codes, minlength=n_bins)
    assert counts.sum() == 10_000 and (counts > 0).all()
    # roughly equal counts: every bin within 25% of 10_000 / n_bins
    np.testing.assert_allclose(counts, 10_000 / n_bins, rtol=0.25)
    # bins are ordered, and thresholds separate the values of neighbouring bins
    thresholds = binner.bin_thresholds_[0, :n_bins - 1]
    assert np.all(np.diff(thresholds) > 0)
    for b in range(n_bins):
        in_bin = x[codes == b]
        assert in_bin.min() == binner.bin_lower_[0, b]
        assert in_bin.max() == binner.bin_upper_[0, b]
        if b < n_bins - 1:
            assert in_bin.max() <= thresholds[b] < x[codes == b + 1].min()


def test_quantile_binning_never_splits_a_heavy_value():
    # half the samples share one value: it must stay in one bin
    x = np.r_[np.zeros(5000), np.arange(1.0, 5001.0)]
    binner = Binner(32, np.array([False]))
    codes = binner.fit_transform(x[:, None])[0]
    assert np.unique(codes[:5000]).size == 1
    assert binner.n_value_bins_[0] <= 32
    assert np.all(np.diff(codes[5000:].astype(int)) >= 0)  # monotone in the value


def test_missing_bin():
    X = np.array([[1.0, np.nan], [np.nan, np.nan], [2.0, np.nan], [3.0, np.nan]])
    binner = Binner(8, np.array([False, False]))
    codes = binner.fit_transform(X)
    assert binner.n_value_bins_.tolist() == [3, 1]
    assert binner.missing_bin_ == 3  # the largest code in use, shared by all features
    np.testing.assert_array_equal(codes[0], [0, 3, 1, 2])
    np.testing.assert_array_equal(codes[1], [3, 3, 3, 3])
    assert codes.dtype == np.uint8


def test_categorical_binning_uses_the_codes():
    X = np.array([[4.0, 0.5], [0.0, 0.1], [2.0, np.nan], [np.nan, 0.3]])
    binner = Binner(255, np.array([True, False]))
    codes = binner.fit_transform(X)
    assert binner.n_value_bins_[0] == 5  # codes 0..4
    missing = binner.missing_bin_
    np.testing.assert_array_equal(codes[0], [4, 0, 2, missing])
    assert codes[1, 2] == missing


def test_wide_codes_switch_to_uint16():
    X = np.arange(1000.0)[:, None]
    binner = Binner(2000, np.array([False]))
    codes = binner.fit_transform(X)
    assert codes.dtype == np.uint16
    np.testing.assert_array_equal(codes[0], np.arange(1000))


