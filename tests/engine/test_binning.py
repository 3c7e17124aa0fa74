"""Binning: raw values to bin codes, against numpy references.

Every test runs twice: on the numpy path that small data takes and on the compiled
kernels of large data (``NUMPY_BINNING_MAX_VALUES`` moved so that each path bins
everything), which must give the same edges and codes.
"""

import numpy as np
import pytest

from silva.engine import binning
from silva.engine.binning import Binner


@pytest.fixture(autouse=True, params=["numpy", "compiled"])
def binning_path(request, monkeypatch):
    limit = np.iinfo(np.int64).max if request.param == "numpy" else -1
    monkeypatch.setattr(binning, "NUMPY_BINNING_MAX_VALUES", limit)
    return request.param


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


def _adversarial_columns(rng, n_samples):
    """Columns that stress the edge rules: signed zeros, infinities, heavy values,
    adjacent floats, all missing, one value, few and many distinct values."""
    tiny = np.nextafter(0.0, 1.0)
    return [
        rng.choice([-0.0, 0.0, 1.0, -1.0], n_samples),
        rng.choice([0.0, 2.0, np.inf, -np.inf, np.nan], n_samples),
        np.where(rng.random(n_samples) < 0.7, 3.0, rng.normal(size=n_samples)),
        rng.choice([1.0, np.nextafter(1.0, 2.0), np.nextafter(1.0, 0.0)], n_samples),
        np.full(n_samples, np.nan),
        np.full(n_samples, -0.0),
        rng.choice([-tiny, tiny, 0.0, -0.0], n_samples),
        rng.integers(0, 300, n_samples) * 0.5,
        rng.standard_cauchy(n_samples),
        np.where(rng.random(n_samples) < 0.3, np.nan, rng.normal(size=n_samples)),
    ]


@pytest.mark.parametrize("n_samples", [1, 7, 200, 600, 5000])
@pytest.mark.parametrize("max_bins", [2, 5, 255, 1000])
def test_numpy_and_compiled_paths_agree(n_samples, max_bins):
    """With 1, 7 and 200 rows and 255 bins every column has a bin per distinct value
    (numpy's one-bin-per-value shortcut); with more rows or fewer bins some walk. 1,000
    bins: two-byte codes, and ten halving steps in the compiled search (row counts that
    are not whole groups of its lanes, nor of its blocks)."""
    rng = np.random.default_rng(n_samples * 1000 + max_bins)
    X = np.column_stack(_adversarial_columns(rng, n_samples))
    is_categorical = np.zeros(X.shape[1], dtype=bool)
    binned = {}
    for path, limit in (("numpy", np.iinfo(np.int64).max), ("compiled", -1)):
        binning.NUMPY_BINNING_MAX_VALUES = limit
        binner = Binner(max_bins, is_categorical)
        binned[path] = binner, binner.fit_transform(X)
    (numpy_binner, numpy_codes), (compiled_binner, compiled_codes) = binned.values()
    np.testing.assert_array_equal(numpy_binner.n_value_bins_, compiled_binner.n_value_bins_)
    for name in ("bin_thresholds_", "bin_lower_", "bin_upper_"):
        # Compared bit for bit: -0.0 against 0.0 counts as a difference.
        np.testing.assert_array_equal(getattr(numpy_binner, name).view(np.int64),
                                      getattr(compiled_binner, name).view(np.int64),
                                      err_msg=name)
    np.testing.assert_array_equal(numpy_codes, compiled_codes)


# ----------------------------------------------------------- against a numpy reference

def _midpoint(low, high):
    """The threshold between two neighbouring values, as the binner rounds it."""
    mid = low / 2.0 + high / 2.0
    return low if mid >= high or np.isinf(mid) else mid


def _bin_thresholds_naive(x, max_bins):
    """The thresholds of one numeric column, from its sorted values: one bin per distinct
    value when there are at most ``max_bins``; otherwise quantile bins, each closed at the
    distinct value of rank ``ceil((b + 1) n / max_bins) - 1`` (or the next distinct value,
    when the copies of the previous bin's last value reach past that rank), so that no
    value is split between bins."""
    values = np.sort(x[~np.isnan(x)])
    distinct = np.unique(values)
    if distinct.size <= max_bins:
        return [_midpoint(a, b) for a, b in zip(distinct[:-1], distinct[1:], strict=True)]
    n = values.size
    thresholds = []
    end = 0
    for b in range(max_bins - 1):
        rank = max(int(np.ceil((b + 1) * n / max_bins)) - 1, end)
        value = values[rank]
        end = np.searchsorted(values, value, side="right")
        if end >= n:
            break
        thresholds.append(_midpoint(value, values[end]))
    return thresholds


def _column(kind, n_samples, rng):
    if kind == "continuous":
        x = rng.normal(size=n_samples)
    elif kind == "ties":
        x = np.round(rng.normal(size=n_samples), 1)
    elif kind == "heavy":
        x = np.where(rng.random(n_samples) < 0.4, 0.25, rng.exponential(size=n_samples))
    else:  # few distinct values: exact bins
        x = rng.integers(-3, 9, size=n_samples) * 1.5
    x[rng.random(n_samples) < 0.05] = np.nan
    return x


# 100_000 rows: longer than a column the binner sorts whole, so its bucketed quantile
# search is checked too.
@pytest.mark.parametrize("n_samples", [3000, 100_000])
@pytest.mark.parametrize("max_bins", [7, 255])
def test_numeric_bins_match_the_naive_quantile_walk(n_samples, max_bins):
    rng = np.random.default_rng(n_samples + max_bins)
    kinds = ["continuous", "ties", "heavy", "few"]
    X = np.column_stack([_column(kind, n_samples, rng) for kind in kinds])
    binner = Binner(max_bins, np.zeros(len(kinds), bool))
    codes = binner.fit_transform(X)
    for f, kind in enumerate(kinds):
        expected = _bin_thresholds_naive(X[:, f], max_bins)
        n_bins = binner.n_value_bins_[f]
        assert n_bins == len(expected) + 1, kind
        np.testing.assert_array_equal(binner.bin_thresholds_[f, :n_bins - 1], expected,
                                      err_msg=kind)
        # A value's code is the first bin whose threshold is >= it; NaN the missing bin.
        present = ~np.isnan(X[:, f])
        np.testing.assert_array_equal(
            codes[f, present], np.searchsorted(expected, X[present, f], side="left"),
            err_msg=kind)
        assert np.all(codes[f, ~present] == binner.missing_bin_)
        # bin_lower/bin_upper: the smallest and largest training value of each bin
        values = X[present, f]
        lowest = np.full(n_bins, np.inf)
        highest = np.full(n_bins, -np.inf)
        np.minimum.at(lowest, codes[f, present], values)
        np.maximum.at(highest, codes[f, present], values)
        np.testing.assert_array_equal(binner.bin_lower_[f, :n_bins], lowest, err_msg=kind)
        np.testing.assert_array_equal(binner.bin_upper_[f, :n_bins], highest, err_msg=kind)
    assert binner.missing_bin_ >= binner.n_value_bins_.max()
    # transform on new rows codes them as fit_transform did
    np.testing.assert_array_equal(binner.transform(X[:500]), codes[:, :500])


def test_categorical_codes_are_the_bins():
    rng = np.random.default_rng(3)
    codes_in = rng.integers(0, 40, size=2000).astype(np.float64)
    codes_in[rng.random(2000) < 0.1] = np.nan
    X = np.column_stack([codes_in, rng.normal(size=2000)])
    binner = Binner(16, np.array([True, False]))
    codes = binner.fit_transform(X)
    present = ~np.isnan(codes_in)
    assert binner.n_value_bins_[0] == np.nanmax(codes_in) + 1  # not limited by max_bins
    np.testing.assert_array_equal(codes[0, present], codes_in[present].astype(int))
    assert np.all(codes[0, ~present] == binner.missing_bin_)
    assert binner.n_value_bins_[1] <= 16


def _random_table(rng, kind, n, n_features):
    """Small tables of the kinds ``Binner.restricted`` meets: few distinct integers,
    rounded floats, continuous values (a quantile walk at small ``max_bins``), halves
    with negative zeros; some with missing values or an all-missing column."""
    if kind == 0:
        X = rng.integers(0, rng.integers(1, 20), size=(n, n_features)).astype(float)
    elif kind == 1:
        X = np.round(rng.normal(size=(n, n_features)), 1)
    elif kind == 2:
        X = rng.normal(size=(n, n_features))
    else:
        X = rng.integers(-3, 4, size=(n, n_features)).astype(float) * 0.5
        X[X == 0] = -0.0 if rng.random() < 0.5 else 0.0
    if rng.random() < 0.4:
        X[rng.random(X.shape) < 0.2] = np.nan
    if rng.random() < 0.15:
        X[:, 0] = np.nan
    return X


def test_restricted_binning_equals_binning_the_rows_afresh():
    """``Binner.restricted`` (AdaBoost's rounds without their zero-weight rows) gives,
    where it answers at all, what a new binner fitted on the rows gives, attribute by
    attribute and code by code; it declines quantile walks, categories and negative
    zeros, which a fit on fewer rows may place otherwise."""
    rng = np.random.default_rng(0)
    derived = declined = 0
    for trial in range(240):
        n, n_features = int(rng.integers(1, 300)), int(rng.integers(1, 8))
        X = _random_table(rng, trial % 4, n, n_features)
        max_bins = int(rng.choice([2, 5, 16, 255]))
        is_categorical = np.zeros(n_features, dtype=bool)
        if trial % 10 == 9:
            X[:, -1] = np.where(np.isnan(X[:, -1]), np.nan, np.abs(np.round(X[:, -1])))
            is_categorical[-1] = True
        full = Binner(max_bins, is_categorical)
        codes = full.fit_transform(X)
        rows = np.flatnonzero(rng.random(n) < rng.random())
        if rows.size == 0:
            rows = np.array([0])
        fresh = Binner(max_bins, is_categorical)
        expected_codes = fresh.fit_transform(X[rows])
        got = full.restricted(codes, rows)
        if got is None:
            declined += 1
            continue
        assert not is_categorical.any()
        derived += 1
        binner, got_codes = got
        assert binner.__dict__.keys() == fresh.__dict__.keys()
        for name, expected in fresh.__dict__.items():
            value = binner.__dict__[name]
            if isinstance(expected, np.ndarray):
                assert value.dtype == expected.dtype and value.shape == expected.shape
                assert value.tobytes() == expected.tobytes(), (trial, name)
            else:
                assert value == expected, (trial, name)
        assert got_codes.dtype == expected_codes.dtype
        np.testing.assert_array_equal(got_codes, expected_codes)
    # Both answers occur, each often.
    assert derived > 60 and declined > 60


def test_restricted_binning_declines_what_a_fit_may_place_otherwise():
    """Declined: a quantile walk (more distinct values than bins), a categorical
    feature, and a column whose zero is -0.0 (its rows may lose the sign)."""
    X = np.arange(20.0).reshape(10, 2)
    codes = (binner := Binner(4, np.zeros(2, dtype=bool))).fit_transform(X)
    assert binner.restricted(codes, np.arange(5)) is None
    codes = (binner := Binner(255, np.array([False, True]))).fit_transform(X % 3)
    assert binner.restricted(codes, np.arange(5)) is None
    signed = np.array([[-0.0], [0.0], [1.0]])
    codes = (binner := Binner(255, np.zeros(1, dtype=bool))).fit_transform(signed)
    assert binner.restricted(codes, np.array([1, 2])) is None
    codes = (binner := Binner(255, np.zeros(2, dtype=bool))).fit_transform(X % 3)
    assert binner.restricted(codes, np.arange(5)) is not None


@pytest.mark.parametrize("order", ["C", "F"])
def test_fit_and_fit_transform_agree_on_negative_zero_and_leave_X_alone(order):
    """numpy's sort may turn a -0.0 into 0.0 (one -0.0 among 40 zeros comes out as 0.0),
    so which columns hold a -0.0 is read before sorting, in ``fit`` as in
    ``fit_transform`` (which sorts a copy of X in place: X itself stays as it was)."""
    rng = np.random.default_rng(5)
    lone = np.r_[-0.0, np.zeros(40), rng.normal(size=20)]
    X = np.column_stack([lone, np.abs(lone), rng.permutation(lone),
                         rng.choice([-0.0, 0.0, 2.0, np.nan], lone.size)])
    X = np.asarray(X, order=order)
    before = X.copy()
    fitted = Binner(255, np.zeros(4, bool)).fit(X)
    both = Binner(255, np.zeros(4, bool))
    codes = both.fit_transform(X)
    np.testing.assert_array_equal(X.view(np.int64), before.view(np.int64))
    np.testing.assert_array_equal(fitted.n_value_bins_, both.n_value_bins_)
    for name in ("bin_thresholds_", "bin_lower_", "bin_upper_"):
        # Bit for bit: -0.0 against 0.0 counts as a difference.
        np.testing.assert_array_equal(getattr(fitted, name).view(np.int64),
                                      getattr(both, name).view(np.int64), err_msg=name)
    np.testing.assert_array_equal(fitted.transform(X), codes)
    # The zero's bin reports -0.0 exactly for the columns that hold one.
    zero_bin = codes[:, 1]  # row 1 is a 0.0 in every column but the last
    reported = fitted.bin_lower_[np.arange(3), zero_bin[:3]]
    np.testing.assert_array_equal(np.signbit(reported), [True, False, True])


@pytest.mark.parametrize("n_samples", [1, 7, 600, 5000])
@pytest.mark.parametrize("max_bins", [5, 255])
def test_fit_transform_is_fit_then_transform(n_samples, max_bins):
    """Boosting takes its codes from ``fit_transform`` (the codes of the fit's sort)
    wherever it bins every row: they must be ``transform``'s codes of a binner fitted
    on the same rows, on the adversarial columns and on categorical ones beside them,
    with C and Fortran layouts."""
    rng = np.random.default_rng(n_samples + max_bins)
    numeric = _adversarial_columns(rng, n_samples)
    categories = [rng.integers(0, 4, n_samples) * 1.0,
                  np.where(rng.random(n_samples) < 0.2, np.nan,
                           rng.integers(0, 3, n_samples) * 1.0)]
    X = np.column_stack(numeric[:5] + categories[:1] + numeric[5:] + categories[1:])
    is_categorical = np.zeros(X.shape[1], dtype=bool)
    is_categorical[[5, X.shape[1] - 1]] = True
    for layout in ("C", "F"):
        X = np.asarray(X, order=layout)
        fitted = Binner(max_bins, is_categorical).fit(X)
        both = Binner(max_bins, is_categorical)
        np.testing.assert_array_equal(both.fit_transform(X), fitted.transform(X))
        np.testing.assert_array_equal(both.bin_thresholds_.view(np.int64),
                                      fitted.bin_thresholds_.view(np.int64))


def _exact_rows(rng, n_samples):
    """Rows whose values have no bit set below 2**-40 of their magnitude: signed
    integers, signed zeros, infinities, both NaNs, float32 values."""
    return [
        rng.integers(-50, 50, n_samples) * 1.0,
        rng.choice([-0.0, 0.0, 3.0, -2.0, np.nan, -np.nan, np.inf, -np.inf], n_samples),
        rng.normal(size=n_samples).astype(np.float32).astype(np.float64),
        rng.integers(-2**40, 2**40, n_samples) * 1.0,
    ]


@pytest.mark.parametrize("n_samples", [1, 2, 7, 200, 5000])
@pytest.mark.parametrize("kind", ["exact", "any"])
@pytest.mark.parametrize("layout", ["rows", "transposed"])
def test_sorted_with_order_is_numpys_sort_and_argsort(n_samples, kind, layout):
    """``_sorted_with_order`` sorts integer keys that carry each value's position in
    their low bits. Where no value has a bit set there ("exact"), the sorted values come
    back from the keys. Otherwise values that differ only in those bits (adjacent floats)
    would sort by position: such rows must come out sorted all the same (numpy's
    argsort then). The values are read back through the order either from the transpose
    of a C-contiguous X (the binner's columns, ``"transposed"``) or from any other
    layout (``"rows"``)."""
    rng = np.random.default_rng(n_samples)
    rows = _exact_rows(rng, n_samples)
    if kind == "any":
        rows += _adversarial_columns(rng, n_samples)
        # The larger of two adjacent floats first: sorted by position, they would stay so.
        rows.append(np.resize([np.nextafter(1.0, 2.0), 1.0], n_samples))
    columns = np.array(rows)
    if layout == "transposed":
        columns = np.ascontiguousarray(columns.T).T
    before = columns.copy()
    sorted_columns, order = binning._sorted_with_order(columns)
    np.testing.assert_array_equal(columns.view(np.int64), before.view(np.int64))
    # NaNs compare equal in the same places, -0.0 equal to 0.0: as numpy's own sort.
    np.testing.assert_array_equal(sorted_columns, np.sort(columns, axis=1))
    np.testing.assert_array_equal(np.take_along_axis(columns, order, axis=1), sorted_columns)
    assert order.dtype == np.int64
