"""Extra trees' fused search of a node's rows (``splitting.search_random_node``) against
the per-feature search it replaces and against brute force.

The fused search must find the very split, score and left sums (to the bit) that the
per-feature search finds (``random_split_from_samples`` on each visited feature, one at
a time), and draw the same random numbers: checked on single nodes, with and without
missing codes, with categorical features, with constant features, and with few or all
features drawn. Its pieces are checked against numpy: every column's range in the node
(``_column_ranges``) and the winning split's left sums, summed here in row order.
"""

import numpy as np
import pytest

from silva.engine import criteria, splitting
from silva.engine.specialize import specialize

N_BINS = 32
MISSING_BIN = N_BINS - 1  # the missing bin is above every value bin


def _finders(criterion):
    """The serial split search of an extra tree (fused) and the same search with the
    fused path left out (per feature), for ``criterion``."""
    fused = splitting.split_finder(criterion, parallel=False, categorical=True, random=True)
    per_feature = specialize(fused, "per_feature_reference", RANDOM_FROM_ROWS=False)
    return fused, per_feature


def _node(seed, n_rows, n_features, criterion, missing_rate, categorical, constant,
          n_classes=3):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, MISSING_BIN, size=(n_rows, n_features)).astype(np.uint8)
    # A few features with few values: ties in the range, single-bin features.
    codes[:, 1] = rng.integers(3, 5, size=n_rows)
    for f in constant:
        codes[:, f] = 7
    if missing_rate:
        codes[rng.random((n_rows, n_features)) < missing_rate] = MISSING_BIN
        codes[:, 2] = MISSING_BIN  # all missing: constant
        codes[: n_rows // 2, 3] = 5  # one value bin and missing codes: not constant
        codes[n_rows // 2:, 3] = MISSING_BIN
    is_categorical = np.zeros(n_features, dtype=np.bool_)
    is_categorical[list(categorical)] = True
    if criterion < criteria.SQUARED_ERROR:
        y = rng.integers(0, n_classes, size=n_rows)
    else:
        y = rng.normal(size=n_rows) * 10
        n_classes = 1
    weight = rng.uniform(0.5, 2.0, size=n_rows)
    stats = criteria.build_statistics(criterion, y, weight, n_classes)
    # Sorted bin edges per feature: bin b holds values in [lower, upper].
    upper = np.sort(rng.normal(size=(n_features, N_BINS)), axis=1)
    lower = np.concatenate([np.full((n_features, 1), -np.inf), upper[:, :-1]], axis=1)
    lower = np.nextafter(lower, np.inf)
    lower[:, 0] = upper[:, 0] - 1.0
    return codes, stats, is_categorical, n_classes, lower, upper


def _search(finder, criterion, node, start, end, max_features, seed):
    codes, stats, is_categorical, n_classes, lower, upper = node
    n_rows, n_features = codes.shape
    width = (n_features + 7) // 8 * 8
    ordered_codes = np.zeros((n_rows, width), dtype=np.uint8)
    ordered_codes[:, :n_features] = codes
    n_channels = stats.shape[1]
    # As the grower writes them: each row's class in the first padding column, for a
    # classifier of many classes (the search then adds each row to its class alone).
    class_column = splitting.class_code_column(criterion, n_classes, n_channels,
                                               n_features, width, 1)
    if class_column >= 0:
        ordered_codes[:, class_column] = np.argmax(stats[:, 1:] != 0.0, axis=1)
    bin_codes = np.ascontiguousarray(codes.T)
    node_sums = stats[start:end].sum(axis=0)
    n_words = (N_BINS + 63) // 64
    scratch = splitting.make_split_scratch(n_features, N_BINS, n_channels, n_words)
    rng_state = np.array([seed], dtype=np.uint64)
    out_bitset = np.zeros(n_words, dtype=np.uint64)
    result = finder(
        np.int64(criterion), np.zeros((n_features, N_BINS, n_channels)), False, False,
        bin_codes, ordered_codes, stats, stats, np.zeros(n_rows), np.ones(n_rows),
        np.arange(n_rows, dtype=np.int64), np.int64(start), np.int64(end), node_sums,
        criteria.impurity(np.int64(criterion), node_sums), node_sums[1],
        np.full(n_features, MISSING_BIN, dtype=np.int64), is_categorical,
        np.int64(MISSING_BIN), lower, upper, np.int64(1), 0.0, np.int64(max_features),
        True, rng_state, np.int64(n_classes), scratch, out_bitset,
        np.zeros(n_features, dtype=np.int8), -np.inf, np.inf)
    left = splitting.winning_left_sums(scratch).copy()
    return result, left, rng_state[0], out_bitset


CASES = [
    # (n_rows, n_features, missing_rate, categorical, constant, max_features)
    (200, 28, 0.0, (), (), 28),
    (200, 28, 0.0, (), (0, 5, 6), 5),
    (333, 28, 0.1, (), (), 28),
    (333, 28, 0.1, (), (9,), 3),
    (150, 12, 0.05, (4, 7), (), 12),
    (150, 12, 0.05, (4, 7), (10,), 4),
    (97, 5, 0.2, (), (), 2),
    (64, 8, 0.0, (), (), 8),  # rows of 8 codes, no padding
    (40, 20, 0.1, (6,), (), 20),  # rows of 24 codes
    (3, 28, 0.0, (), (), 28),
    (400, 70, 0.1, (), (), 9),  # rows of 72 codes
    (300, 64, 0.0, (), (), 64),
]


# Seven classes: eight channels, from which the search adds each row's weight to its
# class's channel alone where the codes have room for the class (see
# splitting.class_code_column).
@pytest.mark.parametrize("criterion, n_classes", [(criteria.GINI, 3), (criteria.GINI, 7),
                                                  (criteria.SQUARED_ERROR, 1)])
@pytest.mark.parametrize("case", CASES)
def test_fused_search_finds_the_per_feature_split(criterion, n_classes, case):
    n_rows, n_features, missing_rate, categorical, constant, max_features = case
    fused, per_feature = _finders(criterion)
    node = _node(n_rows + n_features, n_rows, n_features, criterion, missing_rate,
                 categorical, constant, n_classes)
    codes, stats = node[0], node[1]
    for seed in range(6):
        # The whole node and a node inside it (rows start:end of the ordered arrays).
        for start, end in ((0, n_rows), (n_rows // 3, n_rows - n_rows // 4)):
            if end - start < 2:
                continue
            got = _search(fused, criterion, node, start, end, max_features, seed)
            want = _search(per_feature, criterion, node, start, end, max_features, seed)
            (gain, feature, last_left_bin, missing_left), left, rng_after, bitset = got
            assert (gain, feature, last_left_bin, missing_left) == want[0]
            assert rng_after == want[2]  # the same number of draws
            if feature < 0:
                continue
            assert np.array_equal(left, want[1])  # to the bit
            if node[2][feature]:
                assert np.array_equal(bitset, want[3])
                continue
            # The left sums, to the bit: the value bins going left summed in row order,
            # after the missing codes' sum when missing values go left (as the scan adds).
            column = codes[start:end, feature]
            is_missing = column == MISSING_BIN
            value_left = ~is_missing & ((column <= last_left_bin)
                                        | (last_left_bin == splitting.ALL_VALUE_BINS))
            expected = np.zeros(stats.shape[1])
            for i in np.flatnonzero(value_left):
                expected += stats[start + i]
            if missing_left:
                missing_sum = np.zeros(stats.shape[1])
                for i in np.flatnonzero(is_missing):
                    missing_sum += stats[start + i]
                expected = missing_sum + expected
            assert np.array_equal(left, expected)


@pytest.mark.parametrize("criterion", [criteria.GINI, criteria.ENTROPY,
                                       criteria.SQUARED_ERROR, criteria.POISSON])
@pytest.mark.parametrize("case", [case for case in CASES if not case[3]])
def test_rows_only_search_finds_the_fused_split(criterion, case):
    """The copy compiled without the per-feature search (``rows_only``, numeric features:
    the lean grower's) returns the fused search's split, left sums and draws."""
    n_rows, n_features, missing_rate, categorical, constant, max_features = case
    fused = splitting.split_finder(criterion, parallel=False, categorical=False,
                                   random=True)
    rows_only = splitting.split_finder(criterion, parallel=False, categorical=False,
                                       random=True, rows_only=True)
    assert rows_only.py_func.__name__.endswith("_rows")
    node = _node(n_rows * 7 + n_features, n_rows, n_features, criterion, missing_rate,
                 categorical, constant)
    if criterion == criteria.POISSON:
        # Poisson's channels need positive targets.
        weight = np.random.default_rng(n_rows).uniform(0.5, 2.0, size=n_rows)
        y = np.abs(np.random.default_rng(n_features).normal(size=n_rows)) * 3 + 0.1
        node = (node[0], criteria.build_statistics(criterion, y, weight, 1)) + node[2:]
    n_splits = 0
    for seed in range(6):
        for start, end in ((0, n_rows), (n_rows // 3, n_rows - n_rows // 4)):
            if end - start < 2:
                continue
            got = _search(rows_only, criterion, node, start, end, max_features, seed)
            want = _search(fused, criterion, node, start, end, max_features, seed)
            assert got[0] == want[0]
            assert got[2] == want[2]
            n_splits += got[0][1] >= 0
            if got[0][1] >= 0:
                assert np.array_equal(got[1], want[1])
    assert n_splits > 0


@pytest.mark.parametrize("arguments", [dict(parallel=True), dict(random=False),
                                       dict(sparse=True)])
def test_rows_only_search_is_refused_where_nodes_are_not_searched_from_rows(arguments):
    options = dict(parallel=False, categorical=False, random=True, rows_only=True)
    options.update(arguments)
    with pytest.raises(ValueError, match="rows_only"):
        splitting.split_finder(criteria.GINI, **options)
    with pytest.raises(ValueError, match="rows_only"):
        splitting.split_finder(criteria.ABSOLUTE_ERROR, parallel=False, categorical=False,
                               random=True, rows_only=True)


@pytest.mark.parametrize("n_rows, width", [(0, 32), (1, 32), (2, 32), (3, 32), (100, 32),
                                           (129, 8), (77, 16), (50, 24), (31, 64),
                                           (45, 128), (9, 40)])
@pytest.mark.parametrize("missing_rate", [0.2, 0.0])
def test_column_ranges_match_numpy(n_rows, width, missing_rate):
    rng = np.random.default_rng(n_rows * width)
    codes = rng.integers(3, 60, size=(n_rows, width)).astype(np.uint8)
    codes[rng.random((n_rows, width)) < missing_rate] = 255
    if n_rows:
        if missing_rate:
            codes[:, 0] = 255  # every code missing
        codes[:, 1] = 9  # one value, no missing code
    ranges = np.zeros((3, width), dtype=np.uint16)
    splitting._column_ranges(codes, np.int64(255), ranges)
    values = np.where(codes == 255, 255, codes).astype(np.int64)
    expected_low = values.min(axis=0, initial=255)
    expected_high = np.where(codes == 255, 0, codes).max(axis=0, initial=0)
    expected_missing = (codes == 255).any(axis=0)
    assert np.array_equal(ranges[splitting.RANGE_LOW, :width], expected_low)
    assert np.array_equal(ranges[splitting.RANGE_HIGH, :width], expected_high)
    assert np.array_equal(ranges[splitting.RANGE_MISSING, :width], expected_missing)



def _limit_by_scan(upper_f, low_bin, high_bin, threshold):
    """The last bin of ``low_bin..high_bin - 1`` whose largest value is at most
    ``threshold`` (``low_bin`` when none is), by a scan of every bin."""
    limit = low_bin
    for b in range(low_bin, high_bin):
        if upper_f[b] <= threshold:
            limit = b
    return limit


def test_random_limit_matches_a_scan():
    """``_random_limit`` (a count of the bins at or below the threshold) against a scan
    of every bin, for ranges of every width, ties between bins' largest values, and
    thresholds that fall on a bin's largest value."""
    rng = np.random.default_rng(3)
    n_checked = 0
    for trial in range(300):
        n_bins = int(rng.integers(1, 40))
        upper = np.sort(rng.integers(0, 12, size=n_bins).astype(np.float64)
                        + (0.0 if trial % 2 else rng.random(n_bins)))
        lower = np.concatenate([[upper[0] - 1.0], upper[:-1]])
        if trial % 5 == 0:
            # Every bin holds one value: the threshold is that value, every bin at it.
            upper[:] = 2.5
            lower[:] = 2.5
        low_bin = int(rng.integers(0, n_bins))
        high_bin = int(rng.integers(low_bin, n_bins))
        seed = np.uint64(rng.integers(0, 2**63))
        limit = splitting._random_limit(lower, upper, np.int64(low_bin), np.int64(high_bin),
                                        seed)
        if low_bin >= high_bin:
            assert limit == high_bin
            continue
        threshold = splitting._random_threshold(lower, upper, np.int64(low_bin),
                                                np.int64(high_bin), seed)
        assert limit == _limit_by_scan(upper, low_bin, high_bin, threshold)
        n_checked += 1
    assert n_checked > 100


def test_bisected_lanes_find_the_limits_the_count_finds():
    """``_bisect_lanes`` (every visited column's limit at once, by bisection, as
    ``search_random_node`` finds them) against ``_random_limit`` (a count per column):
    the same limit bin for lanes of every width, single-bin lanes (width 0, left as they
    are) among them, several lanes on one column, ties between bins' largest values and
    thresholds on a bin's largest value."""
    rng = np.random.default_rng(11)
    n_checked = 0
    for trial in range(200):
        n_columns = int(rng.integers(1, 6))
        n_bins = int(rng.integers(1, 300))
        upper = np.sort(rng.integers(0, 40, size=(n_columns, n_bins)).astype(np.float64)
                        + (0.0 if trial % 2 else rng.random((n_columns, n_bins))), axis=1)
        lower = np.concatenate([upper[:, :1] - 1.0, upper[:, :-1]], axis=1)
        if trial % 7 == 0:
            upper[0] = 2.5  # every bin of column 0 holds the one value
            lower[0] = 2.5
        n_lanes = int(rng.integers(1, 40))
        columns = rng.integers(0, n_columns, size=n_lanes)
        lows = rng.integers(0, n_bins, size=n_lanes)
        highs = np.array([int(rng.integers(low, n_bins)) for low in lows])
        seeds = rng.integers(0, 2**63, size=n_lanes).astype(np.uint64)
        thresholds = np.zeros(n_lanes + 3)  # lanes past n_lanes are never read
        bisection = np.full((2, n_lanes + 3), -7, dtype=np.int64)
        for j in range(n_lanes):
            f, low, high = int(columns[j]), np.int64(lows[j]), np.int64(highs[j])
            if low < high:
                thresholds[j] = splitting._random_threshold(lower[f], upper[f], low, high,
                                                            seeds[j])
            bisection[splitting.BISECT_BASE, j] = f * n_bins + low
            bisection[splitting.BISECT_WIDTH, j] = high - low
        widest = np.int64(bisection[splitting.BISECT_WIDTH, :n_lanes].max())
        splitting._bisect_lanes(upper.reshape(-1), thresholds, bisection, n_lanes, widest)
        for j in range(n_lanes):
            f, low, high = int(columns[j]), np.int64(lows[j]), np.int64(highs[j])
            expected = splitting._random_limit(lower[f], upper[f], low, high, seeds[j])
            found = bisection[splitting.BISECT_BASE, j] - f * n_bins
            if low < high:
                assert max(found - 1, low) == expected
                n_checked += 1
            else:
                assert found == low == expected  # width 0: left as it was
        assert np.all(bisection[:, n_lanes:] == -7)
    assert n_checked > 1000
