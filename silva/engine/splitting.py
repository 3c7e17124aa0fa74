"""Splitting: the best split of one node, read off its per-feature bin sums.

For every candidate feature the node's samples are summarised as a *compact histogram*:
the bins that hold samples of the node, in increasing order, with their channel sums, and
the sums of the missing bin apart. Large nodes get it by compacting their dense histogram
(:mod:`silva.engine.histogram`); small nodes by summing their few samples straight into
the bins they touch, which is cheaper than reading every bin of a dense histogram. Both
feed the same scans:

- numeric features: every threshold between two present bins, with missing values sent
  left and then right, plus the split "missing versus the rest"; when the node saw no
  missing value, missing values follow the child with more samples (scikit-learn's rule);
- categorical features: categories (and the missing pseudo-category) are ordered by a
  per-category score and scanned like a numeric feature (Breiman et al. 1984, thm. 4.5:
  optimal for binary classification and regression); with more than two classes, one
  ordering per class is scanned, one-vs-rest, and the best kept. The left category set is
  stored as a bitset; categories the node never saw follow the missing values. The
  twoing and gain-ratio criteria scan the same orderings (by class proportion). With two
  classes twoing ranks splits as gini does, so the ordering is optimal for it too, and
  it is optimal for the information gain (thm. 4.5 holds for any concave impurity) but
  not always for the gain *ratio*, whose split information also depends on the
  children's sizes: there, as for every criterion with more than two classes, the scan
  is a heuristic;
- the random splitter (extra trees, Geurts et al. 2006) scores a single threshold drawn
  uniformly between the node's smallest and largest value, or a random category subset.

With ``max_features`` below the number of features, features are visited in a random
order until ``max_features`` of them that are not constant in the node have been scanned
(scikit-learn's rule, which never leaves a node unsplit for having drawn only constant
features). Each feature's random numbers come from its own seed, drawn on the calling
thread, so the result does not depend on how features are spread over threads.
"""

from collections import namedtuple

import numba as nb
import numpy as np

from silva.engine.absolute_error import evaluate_feature_absolute_error
from silva.engine.array_copy import copy_vector
from silva.engine.binning import ALL_VALUE_BINS
from silva.engine.criteria import (
    ABSOLUTE_ERROR,
    ENTROPY,
    FRIEDMAN_MSE,
    GAIN_RATIO,
    GINI,
    IMPURITY_OF_CRITERION,
    MISCLASSIFICATION,
    MULTI_ENTROPY,
    MULTI_FRIEDMAN_MSE,
    MULTI_GINI,
    MULTI_SQUARED_ERROR,
    POISSON,
    REGRESSION_CHANNELS,
    SQUARED_ERROR,
    TWOING,
    category_score,
    entropy_proxy,
    gain_ratio_proxy,
    gini_proxy,
    improvement,
    misclassification_proxy,
    multi_entropy_proxy,
    multi_gini_proxy,
    multi_output_improvement,
    multi_variance_proxy,
    node_weight,
    poisson_proxy,
    twoing_proxy,
    variance_proxy,
)
from silva.engine.jit import kernel
from silva.engine.monotone import split_respects_constraint
from silva.engine.random import (
    GOLDEN_GAMMA,
    first_uniform,
    mix_state,
    next_uint64,
    randint,
    shuffle_in_place,
    uniform,
)
from silva.engine.specialize import specialize, specialize_options

_NO_SPLIT = -np.inf


@kernel(inline="always")
def _children_large_enough(left, node_sums, min_samples_leaf):
    """Both children of the candidate hold at least ``min_samples_leaf`` samples."""
    return left[0] >= min_samples_leaf and node_sums[0] - left[0] >= min_samples_leaf


# The proxy is called directly in each scan loop, never through a wrapper function:
# numba then inlines it, and a wrapper made the loop four times slower (28 ns per
# candidate against 6, measured).


@kernel()
def _category_order(criterion, sums, n_entries, target_class, scores, order, buffer):
    """Write into ``order[:n_entries]`` the entries (categories) sorted by their score
    (see criteria.category_score), stably: equal scores keep their entry order.

    A bottom-up merge sort through ``buffer`` (as long as ``order``), so that it
    allocates nothing: the split search that calls it runs without numba's reference
    counts (see :func:`search_numeric_features`), which rules out allocation. Any
    stable sort gives the one order numpy's stable ``argsort`` gave.
    """
    for e in range(n_entries):
        scores[e] = category_score(criterion, sums[e], target_class)
        order[e] = e
    source = order
    target = buffer
    in_buffer = False
    width = 1
    while width < n_entries:
        for low in range(0, n_entries, 2 * width):
            middle = min(low + width, n_entries)
            high = min(low + 2 * width, n_entries)
            i = low
            j = middle
            for k in range(low, high):
                # The right run's entry goes first only when strictly smaller: stable.
                if j < high and (i >= middle or scores[source[j]] < scores[source[i]]):
                    target[k] = source[j]
                    j += 1
                else:
                    target[k] = source[i]
                    i += 1
        source, target = target, source
        in_buffer = not in_buffer
        width *= 2
    if in_buffer:
        for e in range(n_entries):
            order[e] = buffer[e]


def _make_scans(proxy, criterion_name, classification, fixed_channels=0):
    """Compile the threshold scan and the category scan around one criterion's proxy.

    ``proxy(left, node_sums, min_weight_leaf)`` is the criterion's proxy improvement
    (:mod:`silva.engine.criteria`). numba inlines it into the scan loops only when it is
    a compile-time constant, so each criterion gets its own compiled copy of the scans,
    which :func:`split_finder` binds into that criterion's copy of the split search.
    Measured alternatives: a branch on the criterion per candidate made the loop four
    times slower (28 ns per candidate against 7), and a function passed as an argument
    defeated numba's on-disk cache. ``classification`` says which value a monotonic
    constraint orders (:mod:`silva.engine.monotone`). ``fixed_channels``: the number of
    statistic channels when the criterion fixes it (the single-output regression
    criteria's four), a compile-time constant with which LLVM unrolls the per-channel
    loops into vector operations; 0 reads it from the arrays.
    """

    def scan_numeric(bins, sums, n_present, missing, node_sums, min_samples_leaf,
                     min_weight_leaf, random_position, left, best_left, constraint,
                     min_value, max_value):
        """Best threshold of a numeric feature from its compact histogram.

        Returns ``(score, last_left_bin, missing_go_left)``: bins ``<= last_left_bin`` go
        left, and ``best_left`` receives the left child's channel sums; the score is the
        criterion's proxy improvement. ``random_position >= 0`` restricts the scan to that one
        threshold (extra trees). ``last_left_bin == ALL_VALUE_BINS`` is the split "missing
        versus the rest". With ``MONOTONE`` bound (the monotone copy), a
        ``constraint`` of +1 or -1 rejects the thresholds whose children break it or
        leave the node's value bounds ``[min_value, max_value]``.
        """
        n_channels = fixed_channels if fixed_channels > 0 else node_sums.shape[0]
        has_missing = missing[0] > 0
        best_gain = _NO_SPLIT
        best_bin = -1
        best_missing_left = False
        n_directions = 2 if has_missing else 1
        for direction in range(n_directions):
            missing_left = direction == 1
            for c in range(n_channels):
                left[c] = missing[c] if missing_left else 0.0
            for i in range(n_present):
                for c in range(n_channels):
                    left[c] += sums[i, c]
                if i == n_present - 1 and (missing_left or not has_missing):
                    break  # everything would go left
                if random_position >= 0 and i != random_position:
                    continue
                gain = _NO_SPLIT
                if _children_large_enough(left, node_sums, min_samples_leaf):
                    if (MONOTONE and constraint != 0
                            and not split_respects_constraint(
                                classification, left, node_sums, constraint, min_value,
                                max_value)):
                        pass
                    else:
                        gain = proxy(left, node_sums, min_weight_leaf)
                if gain > best_gain:
                    best_gain = gain
                    best_bin = bins[i] if i < n_present - 1 else ALL_VALUE_BINS
                    best_missing_left = missing_left
                    for c in range(n_channels):
                        best_left[c] = left[c]
                    # Without missing values in the node, missing values at prediction time
                    # follow the child with more samples.
                    if not has_missing:
                        best_missing_left = left[0] > node_sums[0] - left[0]
        return best_gain, best_bin, best_missing_left

    def scan_categorical(criterion, bins, sums, n_present, missing, node_sums,
                         min_samples_leaf, min_weight_leaf, random_state_seed, use_random,
                         n_classes, left, scores, bitset, best_left, work):
        """Best category partition of a categorical feature from its compact histogram.

        The missing bin joins the scan as one more category when the node has missing values.
        Writes the left set into ``bitset`` and its channel sums into ``best_left``, and
        returns ``(score, missing_go_left)``. ``work`` (``3 * sums.shape[0] + 1``
        words) is scratch: the entries going left, their order by score and the merge
        sort's other half, and the random subsets' generator state, so that the scan
        allocates nothing (see :func:`_category_order`).
        """
        n_rows = sums.shape[0]
        order = work[:n_rows]
        order_buffer = work[n_rows:2 * n_rows]
        in_left = work[2 * n_rows:3 * n_rows]  # 1: the entry goes left
        rng = work[3 * n_rows:3 * n_rows + 1].view(np.uint64)
        n_channels = node_sums.shape[0]
        has_missing = missing[0] > 0
        n_entries = n_present + (1 if has_missing else 0)
        if has_missing:
            for c in range(n_channels):
                sums[n_present, c] = missing[c]
        best_gain = _NO_SPLIT
        for e in range(n_entries):
            in_left[e] = 0
        if n_entries < 2:
            return best_gain, False
        if use_random:
            # A random non-trivial subset of the node's categories goes left.
            rng[0] = random_state_seed
            n_left = 0
            for e in range(n_entries):
                in_left[e] = uniform(rng) < 0.5
                n_left += in_left[e]
            if n_left == 0 or n_left == n_entries:
                flip = randint(rng, n_entries)
                in_left[flip] = 1 - in_left[flip]
            for c in range(n_channels):
                left[c] = 0.0
            for e in range(n_entries):
                if in_left[e]:
                    for c in range(n_channels):
                        left[c] += sums[e, c]
            best_gain = _NO_SPLIT
            if _children_large_enough(left, node_sums, min_samples_leaf):
                best_gain = proxy(left, node_sums, min_weight_leaf)
        else:
            n_orders = n_classes if (criterion < SQUARED_ERROR and n_classes > 2) else 1
            # Typed int64 from the start: a literal -1 reaching _category_order would
            # compile it a second time.
            best_order = np.int64(-1)
            best_position = -1
            for target_class in range(n_orders):
                _category_order(criterion, sums, n_entries, target_class, scores, order,
                                order_buffer)
                for c in range(n_channels):
                    left[c] = 0.0
                for p in range(n_entries - 1):
                    e = order[p]
                    for c in range(n_channels):
                        left[c] += sums[e, c]
                    gain = _NO_SPLIT
                    if _children_large_enough(left, node_sums, min_samples_leaf):
                        gain = proxy(left, node_sums, min_weight_leaf)
                    if gain > best_gain:
                        best_gain = gain
                        best_order = target_class
                        best_position = p
            if best_order < 0:
                return best_gain, False
            _category_order(criterion, sums, n_entries, best_order, scores, order,
                            order_buffer)
            for p in range(best_position + 1):
                in_left[order[p]] = 1
        if best_gain == _NO_SPLIT:
            return best_gain, False
        best_left[:] = 0.0
        for e in range(n_entries):
            if in_left[e]:
                for c in range(n_channels):
                    best_left[c] += sums[e, c]
        if has_missing:
            missing_left = in_left[n_present] != 0
        else:
            n_left_samples = 0.0
            for e in range(n_entries):
                if in_left[e]:
                    n_left_samples += sums[e, 0]
            missing_left = n_left_samples > node_sums[0] - n_left_samples
        # Categories absent from the node go where missing values go.
        fill = np.uint64(0xFFFFFFFFFFFFFFFF) if missing_left else np.uint64(0)
        for w in range(bitset.shape[0]):
            bitset[w] = fill
        for e in range(n_present):
            code = bins[e]
            word = code >> 6
            bit = np.uint64(1) << np.uint64(code & 63)
            if in_left[e]:
                bitset[word] |= bit
            else:
                bitset[word] &= ~bit
        return best_gain, missing_left

    scans = []
    for scan in (scan_numeric, scan_categorical):
        # A name of its own per criterion, so that numba caches each copy apart.
        scan.__name__ = scan.__qualname__ = f"{scan.__name__}_{criterion_name}"
        # Called from compiled code alone: no CPython wrapper to compile.
        scans.append(kernel(no_cpython_wrapper=True)(scan))
    return scans


# Each criterion's scans, by the name of its proxy. The regression criteria share the
# variance proxy: friedman_mse differs only in the improvement reported for the winner,
# and absolute_error searches by order statistics instead.
_SCANS = {
    name: _make_scans(proxy, name, name not in ("variance", "poisson"),
                      REGRESSION_CHANNELS if name in ("variance", "poisson") else 0)
    for name, proxy in (("gini", gini_proxy), ("entropy", entropy_proxy),
                        ("misclassification", misclassification_proxy),
                        ("twoing", twoing_proxy), ("gain_ratio", gain_ratio_proxy),
                        ("variance", variance_proxy), ("poisson", poisson_proxy))
}
# The multi-output criteria's scans (silva.engine.criteria, "multi-output"): made on
# first use, so that single-output fits never even create them.
_MULTI_OUTPUT_PROXIES = {"multi_gini": multi_gini_proxy,
                         "multi_entropy": multi_entropy_proxy,
                         "multi_variance": multi_variance_proxy}
_PROXY_OF_CRITERION = {
    GINI: "gini", ENTROPY: "entropy", MISCLASSIFICATION: "misclassification",
    TWOING: "twoing", GAIN_RATIO: "gain_ratio", SQUARED_ERROR: "variance",
    FRIEDMAN_MSE: "variance", ABSOLUTE_ERROR: "variance", POISSON: "poisson",
    MULTI_GINI: "multi_gini", MULTI_ENTROPY: "multi_entropy",
    MULTI_SQUARED_ERROR: "multi_variance", MULTI_FRIEDMAN_MSE: "multi_variance",
}


def _scans_of(proxy_name):
    """The (numeric, categorical) scans compiled around the proxy named ``proxy_name``."""
    if proxy_name not in _SCANS:
        _SCANS[proxy_name] = _make_scans(_MULTI_OUTPUT_PROXIES[proxy_name], proxy_name, True)
    return _SCANS[proxy_name]

# The names that split_finder() binds for one criterion (silva.engine.specialize). The
# kernels below read them as globals: they are templates, compiled only as the copies
# split_finder() makes, so that a fit compiles the scans of its own criterion alone.
scan_numeric = None  # the criterion's threshold scan
scan_categorical = None  # the criterion's category scan
ORDER_STATISTICS = False  # absolute_error: splits from order statistics, not histograms
# Bound to False by split_finder() for fits that never take these paths, which are then
# not compiled: CATEGORICAL, a fit without categorical features (no category scan);
# PARALLEL, a fit whose root node is below the parallel threshold (no parallel search);
# RANDOM, a fit without random splits (extra trees' thresholds and subsets).
CATEGORICAL = True
PARALLEL = True
RANDOM = True
# Bound to True by split_finder(monotone=True) alone: numeric scans check monotonic
# constraints (silva.engine.monotone); other fits compile no check.
MONOTONE = False
# The number of statistic channels, bound by split_finder() for the criteria that fix
# it (REGRESSION_CHANNELS for the single-output regression criteria): a compile-time
# constant lets LLVM unroll the per-channel loops of the per-row sums. 0: read from
# the arrays.
STAT_CHANNELS = 0
# Bound to True by split_finder() for the dense copies with random splits (extra
# trees), the only ones that compile search_random_node.
RANDOM_FROM_ROWS = False
# Bound to True by split_finder(rows_only=True): every node searched by
# search_random_node (no histogram, every feature's codes in node order); the
# per-feature search is not compiled.
ROWS_ONLY = False


@kernel(inline="always")
def compact_from_histogram(hist_f, n_value_bins, missing_bin, bins, sums, missing):
    """Compact histogram of one feature from its dense histogram; returns n_present."""
    n_channels = hist_f.shape[1]
    # int64 from the start: inside a parallel loop numba types a literal 0 here as
    # Literal[int](0) and compiles the scans a second time for it.
    n_present = np.int64(0)
    for b in range(n_value_bins):
        if hist_f[b, 0] > 0:
            bins[n_present] = b
            for c in range(n_channels):
                sums[n_present, c] = hist_f[b, c]
            n_present += 1
    for c in range(n_channels):
        missing[c] = hist_f[missing_bin, c]
    return n_present


# De Bruijn sequence for the index of the lowest set bit of a 64-bit word
# (Leiserson, Prokop & Randall 1998): ``(w & -w) * DE_BRUIJN_64 >> 58`` is a distinct
# 6-bit key for each of the 64 single-bit words.
DE_BRUIJN_64 = np.uint64(0x03F79D71B4CB0A89)
DE_BRUIJN_POSITION = np.zeros(64, dtype=np.int64)
for _bit in range(64):
    DE_BRUIJN_POSITION[((0x03F79D71B4CB0A89 << _bit) & 0xFFFFFFFFFFFFFFFF) >> 58] = _bit


@kernel(inline="always")
def compact_from_samples(node_codes, f, node_stats, missing_bin,
                         accumulator, present_bitmap, bins, sums, missing, n_channels):
    """Compact histogram of one feature straight from the node's samples; returns n_present.

    Channels are summed into ``accumulator`` rows that are zeroed on first touch, and a
    bitmap marks the touched bins, which are then read back in increasing order one set
    bit at a time. The cost is O(n + n_bins / 64 + n_present), not O(n_bins): the better
    deal for the many small nodes near the leaves of a deep tree. ``node_codes`` and
    ``node_stats`` are the node's own contiguous rows of the grower's ordered copies
    (sample-major, so that one row of codes serves every feature drawn).
    ``present_bitmap`` must be all zeros on entry and is left so. ``n_channels``:
    ``node_stats``' columns (a constant where the caller's criterion fixes it, see
    :data:`STAT_CHANNELS`).
    """
    for c in range(n_channels):
        missing[c] = 0.0
    for i in range(node_codes.shape[0]):
        code = np.int64(node_codes[i, f])
        if code == missing_bin:
            for c in range(n_channels):
                missing[c] += node_stats[i, c]
            continue
        word = code >> 6
        bit = np.uint64(1) << np.uint64(code & 63)
        if present_bitmap[word] & bit == 0:
            present_bitmap[word] |= bit
            for c in range(n_channels):
                accumulator[code, c] = node_stats[i, c]
        else:
            for c in range(n_channels):
                accumulator[code, c] += node_stats[i, c]
    n_present = 0
    for word in range(present_bitmap.shape[0]):
        bits = present_bitmap[word]
        while bits != 0:
            lowest = bits & (~bits + np.uint64(1))
            code = (word << 6) + DE_BRUIJN_POSITION[(lowest * DE_BRUIJN_64) >> np.uint64(58)]
            bins[n_present] = code
            for c in range(n_channels):
                sums[n_present, c] = accumulator[code, c]
            n_present += 1
            bits ^= lowest
        present_bitmap[word] = 0
    return n_present


@kernel(inline="always")
def _random_threshold(lower_f, upper_f, low_bin, high_bin, seed):
    """Extra trees' threshold, drawn uniformly between the smallest value of bin
    ``low_bin`` and the largest of bin ``high_bin`` (the node's value range)."""
    low = lower_f[low_bin]
    return low + first_uniform(seed) * (upper_f[high_bin] - low)


@kernel(inline="always")
def _random_numeric_position(bins, n_present, lower_f, upper_f, seed):
    """Extra trees: index of the last bin left of a threshold drawn uniformly in the
    node's value range; -1 when the feature is constant in the node."""
    if n_present < 2:
        return -1
    threshold = _random_threshold(lower_f, upper_f, bins[0], bins[n_present - 1], seed)
    position = 0
    for i in range(n_present - 1):
        if upper_f[bins[i]] <= threshold:
            position = i
    return position


@kernel(inline="always")
def _random_limit(lower_f, upper_f, low_bin, high_bin, seed):
    """Extra trees on a numeric feature whose values in the node lie in bins
    ``low_bin..high_bin``: the last bin left of a threshold drawn uniformly in that range
    (:func:`_random_threshold`), so that bins up to it go left.

    That is the largest bin below ``high_bin`` whose values lie at or below the threshold
    (bins' largest values increase with the bin); ``low_bin`` when none does, and
    ``high_bin`` when the feature holds a single bin (every value goes left).
    """
    if low_bin >= high_bin:
        return high_bin
    threshold = _random_threshold(lower_f, upper_f, low_bin, high_bin, seed)
    # Bins' largest values increase, so the bins at or below the threshold are the first
    # ones: counted, not bisected. The bisection's branch on each comparison
    # mispredicted about every other step (a fifth of the node search's time at 1,000
    # rows, perf), and LLVM turned a conditional move back into that branch; the count
    # has no data-dependent branch and vectorises.
    n_at_or_below = 0
    for b in range(low_bin, high_bin):
        n_at_or_below += np.int64(upper_f[b] <= threshold)
    return max(low_bin + n_at_or_below - 1, low_bin)


@kernel(inline="always")
def _bisect_lanes(upper_flat, thresholds, bisection, n_lanes, widest):
    """:func:`_random_limit`'s search for many columns at once, by bisection rather than a
    count. Lane ``j`` searches the bins ``[b, b + w)`` of one column, ``b`` and ``w`` its
    ``bisection`` entries (``b`` a flat index into ``upper_flat``, the bins' largest
    values, one column after the other), for the first bin whose largest value lies
    above ``thresholds[j]``; ``b`` is left there (``b + w`` when there is none: the
    count of ``_random_limit``, added to ``b``). Lanes of width 0 are left as they are.
    ``widest``: the largest width.

    Each step halves every lane's interval without a branch on the comparison
    (Khuong & Morin 2017, "Array layouts for comparison-based searching": the branch
    mispredicts every other step), and the lanes' steps are independent, so that the
    core overlaps their loads. ``_random_limit`` counted the bins instead, which reads
    every bin of the node's range, most of a column's 255 at any depth (a column is
    split on a few times along a path at most): per column of a node the count took
    about 100 ns on 100-255 bins, 28 lanes' bisections about 12 ns each (AMD EPYC
    Zen 4, measured apart from the grower). The result is the count's, bin for bin.
    """
    base = bisection[BISECT_BASE]
    width = bisection[BISECT_WIDTH]
    # Invariant: lane j's first bin above its threshold lies in base[j] .. base[j] +
    # width[j]. Every width shrinks as the widest does (to the ceiling of its half).
    while widest > 1:
        for j in range(n_lanes):
            half = width[j] >> 1
            position = base[j]
            base[j] = position + (half & -np.int64(upper_flat[position + half]
                                                    <= thresholds[j]))
            width[j] -= half
        widest -= widest >> 1
    for j in range(n_lanes):
        base[j] += np.int64((upper_flat[base[j]] <= thresholds[j]) & (width[j] > 0))


@kernel(inline="always")
def random_split_from_samples(node_codes, f, node_stats, missing_bin, lower_f, upper_f, seed,
                              bins, sums, missing):
    """Extra trees on a numeric feature: the compact histogram that the random scan needs,
    summed straight from the node's rows; returns its n_present (0, 1 or 2).

    The random scan reads only the node's smallest and largest bins (the threshold is
    drawn between them, as :func:`_random_numeric_position` does) and the sums on each
    side of the threshold. So instead of a per-bin histogram this builds one of at most
    two entries, ``[last bin left of the threshold, largest bin]``, in two light passes
    over the rows (the range, then the left side's sums). Scanned at position 0
    (:func:`evaluate_numeric`) it gives the split a full histogram gives; that scan never
    reads the second entry's sums, which are left zero.
    """
    n_channels = node_stats.shape[1]
    n_rows = node_codes.shape[0]
    for c in range(n_channels):
        missing[c] = 0.0
        sums[0, c] = 0.0
        sums[1, c] = 0.0
    low_bin = missing_bin
    high_bin = -1
    for i in range(n_rows):
        code = np.int64(node_codes[i, f])
        if code == missing_bin:
            for c in range(n_channels):
                missing[c] += node_stats[i, c]
        else:
            low_bin = min(low_bin, code)
            high_bin = max(high_bin, code)
    if high_bin < 0:
        return 0
    limit = _random_limit(lower_f, upper_f, low_bin, high_bin, seed)
    # Only the left side is summed: the scan at position 0 reads the first entry's sums
    # and the node's totals, never the second entry's, which stay zero (summing them
    # too cost a third of an extra-trees regressor's fit). Without a branch on the side
    # (a data-dependent branch mispredicts about every other row of a large node): each
    # row adds its channels times 0 or 1. ``missing_bin`` is above every value bin, so
    # ``code <= limit`` leaves missing rows out.
    last_left_bin = low_bin
    for i in range(n_rows):
        code = np.int64(node_codes[i, f])
        goes_left = code <= limit
        last_left_bin = max(last_left_bin, code if goes_left else low_bin)
        for c in range(n_channels):
            sums[0, c] += np.float64(goes_left) * node_stats[i, c]
    bins[0] = last_left_bin
    if low_bin == high_bin:
        return 1
    bins[1] = high_bin
    return 2


@kernel(inline="always")
def evaluate_feature(criterion, f, is_categorical_f, bins, sums, n_present, missing,
                     node_sums, min_samples_leaf, min_weight_leaf, use_random, seed, n_classes,
                     lower, upper, left, scores, bitset, best_left, constraint, min_value,
                     max_value, category_work):
    """Best split of feature ``f`` from its compact histogram (``constraint``,
    ``min_value`` and ``max_value``: its monotonic constraint and the node's value
    bounds, read by the monotone copy alone; ``category_work``: the category scan's
    scratch).

    Returns ``(score, last_left_bin, missing_go_left, is_constant)``; ``bitset`` receives
    the left category set of a categorical split and ``best_left`` the left sums.
    """
    if CATEGORICAL and is_categorical_f:
        if _is_constant(n_present, missing):
            return _NO_SPLIT, -1, False, True
        gain, missing_left = scan_categorical(
            criterion, bins, sums, n_present, missing, node_sums, min_samples_leaf,
            min_weight_leaf, seed, use_random, n_classes, left, scores, bitset, best_left,
            category_work)
        return gain, -1, missing_left, False
    return evaluate_numeric_feature(
        criterion, bins, sums, n_present, missing, node_sums, min_samples_leaf,
        min_weight_leaf, _scan_position(use_random, bins, n_present, lower[f], upper[f], seed),
        left, best_left, constraint, min_value, max_value)


@kernel(inline="always")
def _is_constant(n_present, missing):
    """A feature with fewer than two distinct states in the node (value bins, and the
    missing bin if it holds samples) cannot split it."""
    return n_present + (1 if missing[0] > 0 else 0) < 2


@kernel(inline="always")
def _scan_position(use_random, bins, n_present, lower_f, upper_f, seed):
    """The one position extra trees scan (see :func:`_random_numeric_position`), or -1
    (every position) for the best splitter."""
    if not (RANDOM and use_random):
        return np.int64(-1)
    position = _random_numeric_position(bins, n_present, lower_f, upper_f, seed)
    if position < 0:
        position = n_present - 1  # only "missing versus the rest" is left
    return position


@kernel(inline="always")
def evaluate_numeric_feature(criterion, bins, sums, n_present, missing, node_sums,
                             min_samples_leaf, min_weight_leaf, random_position, left,
                             best_left, constraint, min_value, max_value):
    """:func:`evaluate_numeric` for a feature that may be constant in the node:
    ``(score, last_left_bin, missing_go_left, is_constant)``."""
    if _is_constant(n_present, missing):
        return _NO_SPLIT, -1, False, True
    return evaluate_numeric(criterion, bins, sums, n_present, missing, node_sums,
                            min_samples_leaf, min_weight_leaf, random_position, left,
                            best_left, constraint, min_value, max_value)


@kernel(inline="always")
def evaluate_numeric(criterion, bins, sums, n_present, missing, node_sums, min_samples_leaf,
                     min_weight_leaf, random_position, left, best_left, constraint, min_value,
                     max_value):
    """Best threshold of a numeric feature's compact histogram (at ``random_position``
    only, when it is not negative): ``(score, last_left_bin, missing_go_left, False)``."""
    gain, last_left_bin, missing_left = scan_numeric(
        bins, sums, n_present, missing, node_sums, min_samples_leaf, min_weight_leaf,
        random_position, left, best_left, constraint, min_value, max_value)
    return gain, last_left_bin, missing_left, False


@kernel(parallel=True)
def _evaluate_dense_parallel(criterion, features, hist, n_value_bins, is_categorical,
                             missing_bin, node_sums, min_samples_leaf, min_weight_leaf,
                             use_random, seeds, n_classes,
                             lower, upper, out_gain, out_bin, out_missing_left, out_constant,
                             out_bitsets, out_lefts, monotonic_cst, min_value, max_value):
    n_channels = node_sums.shape[0]
    n_bins = hist.shape[1]
    for j in nb.prange(features.shape[0]):
        f = features[j]
        bins = np.empty(n_bins, dtype=np.int64)
        sums = np.empty((n_bins + 1, n_channels))
        missing = np.empty(n_channels)
        left = np.empty(n_channels)
        scores = np.empty(n_bins + 1)
        category_work = np.empty(3 * (n_bins + 1) + 1, dtype=np.int64)
        n_present = compact_from_histogram(hist[f], n_value_bins[f], missing_bin, bins, sums,
                                           missing)
        gain, last_left_bin, missing_left, constant = evaluate_feature(
            criterion, f, is_categorical[f], bins, sums, n_present, missing, node_sums,
            min_samples_leaf, min_weight_leaf, use_random, seeds[j], n_classes, lower, upper,
            left, scores, out_bitsets[j], out_lefts[j], monotonic_cst[f], min_value,
            max_value, category_work,
        )
        out_gain[j] = gain
        out_bin[j] = last_left_bin
        out_missing_left[j] = missing_left
        out_constant[j] = constant


#: Buffers one tree's split searches reuse, so that small nodes allocate nothing
#: (:func:`make_split_scratch`).
SplitScratch = namedtuple("SplitScratch", [
    "feature_order",  # (n_features,) the order features are visited in
    "bins",  # (n_bins,) compact histogram: the bins present in the node
    "sums",  # (n_bins + 1, n_channels) compact histogram: their channel sums
    "accumulator",  # (n_bins, n_channels) per-bin sums of a node's samples
    "present",  # bitmap of the bins the accumulator touched
    "scores",  # (n_bins + 1,) category scores
    "side_sums",  # (5, n_channels): missing, left, right, best left of a feature, of the node
    "bitset",  # (n_words,) candidate category bitset
    "seeds",  # (n_features,) per-feature random seeds
    "category_work",  # (3 * (n_bins + 1) + 1,) the category scan's (scan_categorical)
    # Extra trees' fused search of a node's rows (search_random_node), per column of
    # the grower's ordered codes (n_features, padded to whole words: n_features + 8):
    "column_ranges",  # (3, n_features + 8) uint16: RANGE_LOW, RANGE_HIGH, RANGE_MISSING
    "column_splits",  # (4, n_features + 8): COLUMN_LIMIT ... LANE_LIMIT (int32)
    "lane_codes",  # (_CHUNK, n_features + 8) uint16: a chunk of rows' visited codes
    "column_sums",  # (2, n_channels, n_features + 8): left and missing sums, channel-major
    # and, per lane of its visited numeric columns, the bisection for their limit bins:
    "lane_thresholds",  # (n_features + 8,) the lane's random threshold
    "lane_bisection",  # (2, n_features + 8) int64: BISECT_BASE, BISECT_WIDTH
])
# Rows of SplitScratch.side_sums.
SIDE_MISSING, SIDE_LEFT, SIDE_RIGHT, SIDE_FEATURE_LEFT, SIDE_NODE_LEFT = range(5)
# Rows of SplitScratch.column_ranges: per column of a node's codes, its smallest code,
# its largest code that is not missing, whether a code is missing (see _column_ranges).
RANGE_LOW, RANGE_HIGH, RANGE_MISSING = range(3)
# Rows of SplitScratch.column_splits: per column, the last bin going left of its random
# split (-1: the column is not summed), then its largest bin going left in the node
# (the lanes' instead, when search_random_node gathers the visited columns); per lane of
# gathered codes, its column and its limit.
COLUMN_LIMIT, COLUMN_LAST_LEFT, LANE_COLUMN, LANE_LIMIT = range(4)
# Rows of SplitScratch.lane_bisection (see _bisect_lanes): per lane, the flat index into
# the bins' upper values where its interval starts, and the interval's width.
BISECT_BASE, BISECT_WIDTH = range(2)
# search_random_node gathers the visited columns' codes, _CHUNK rows at a time, when
# they are at most a quarter of a row's columns (a random forest's or extra trees'
# "sqrt" of the features), and sums them in lanes padded to a multiple of _LANES.
_CHUNK = 64
_LANES = 8
# From this many statistic channels up (a classifier of four classes or more), a
# single-output classifier's ordered codes carry each row's class in their first padding
# column (see class_code_column), and search_random_node adds each row's weight to its
# own class's channel alone. Below it, every channel is summed: with two or three
# classes the per-class additions would outnumber the channels they skip. Ten classes,
# 28 features, five visited: the search of a node of 4,000 rows 9% faster, of 300 rows
# 7% (the same node searched both ways, alternated in one process, best of 30).
CLASS_CODE_MIN_CHANNELS = 5


@kernel(inline="always")
def class_code_column(criterion, n_classes, n_channels, n_features, width, code_bytes):
    """The column of the grower's ordered codes (``width`` columns, codes of
    ``code_bytes`` bytes) that holds each row's class, or -1 when it holds none: a
    single-output classifier's (``n_channels``: the count and one weight per class) of
    at least :data:`CLASS_CODE_MIN_CHANNELS` channels whose codes have a padding column
    (``n_features`` below ``width``) wide enough for its class indices. The grower writes
    the classes (:func:`silva.engine.grower._order_root_samples`), the partitions move them
    with the codes, and :func:`search_random_node` reads them."""
    if (criterion < SQUARED_ERROR and n_channels == n_classes + 1
            and n_channels >= CLASS_CODE_MIN_CHANNELS and width > n_features
            and n_classes <= (np.int64(1) << (8 * code_bytes))):
        return n_features
    return np.int64(-1)


def make_split_scratch(n_features, n_bins, n_channels, n_words):
    """A :class:`SplitScratch` for nodes of ``n_features`` features and ``n_bins`` bins.
    Plain numpy, called once per tree from Python: compiled, its array constructors
    were a quarter of a second of a cold first fit."""
    return SplitScratch(
        np.empty(n_features, dtype=np.int64),
        np.empty(n_bins, dtype=np.int64),
        np.empty((n_bins + 1, n_channels)),
        np.empty((n_bins, n_channels)),
        np.zeros((n_bins + 63) // 64, dtype=np.uint64),
        np.empty(n_bins + 1),
        np.empty((5, n_channels)),
        np.empty(n_words, dtype=np.uint64),
        np.empty(n_features, dtype=np.uint64),
        np.empty(3 * (n_bins + 1) + 1, dtype=np.int64),
        np.empty((3, n_features + 8), dtype=np.uint16),
        np.empty((4, n_features + 8), dtype=np.int32),
        np.empty((_CHUNK, n_features + 8), dtype=np.uint16),
        np.empty((2, n_channels, n_features + 8)),
        np.empty(n_features + 8),
        np.empty((2, n_features + 8), dtype=np.int64),
    )


@kernel(inline="always")
def node_feature_codes(f, node_codes, bin_codes, sample_indices, start):
    """The column of the node's rows ``node_codes`` (the grower's ordered codes of
    ``sample_indices[start:]``) that holds feature ``f``'s codes.

    The grower keeps each sample's codes in node order, moving them along at every
    split, so that one contiguous row serves every feature drawn. On wide data with few
    features drawn per node (a random forest's ``"sqrt"`` of thousands of columns) that
    move copies every column's code of every sample at every level for the few columns
    read: there the grower keeps one word per sample instead (fewer columns than
    features), and the drawn feature's codes are gathered here into its column 0 from
    the feature's row of the feature-major ``bin_codes``, as scikit-learn's splitter
    reads ``X[samples[i], f]``. The codes, and so the splits, are the same either way.
    """
    if node_codes.shape[1] >= bin_codes.shape[0]:
        return f
    codes_f = bin_codes[f]
    for i in range(node_codes.shape[0]):
        node_codes[i, 0] = codes_f[sample_indices[start + i]]
    return np.int64(0)


@kernel(inline="always")
def winning_left_sums(scratch):
    """Channel sums of the left child of the split :func:`find_node_split` last returned.

    Valid until the next call with the same ``scratch``; not set under absolute_error.
    """
    return scratch.side_sums[SIDE_NODE_LEFT]


@kernel(inline="always")
def scan_buffers(scratch):
    """The buffers a feature's scan fills, from ``scratch``: the compact histogram's
    ``bins`` and ``sums``, and the side-sum rows ``missing``, ``left``,
    ``feature_left`` (the feature's best left sums) and ``node_left`` (the node's).

    Inlined into numba's IR, so that the searches compiled without reference counting
    (``_nrt=False``) take these views as they would their own lines."""
    side_sums = scratch.side_sums
    return (scratch.bins, scratch.sums, side_sums[SIDE_MISSING], side_sums[SIDE_LEFT],
            side_sums[SIDE_FEATURE_LEFT], side_sums[SIDE_NODE_LEFT])


@kernel(inline="always")
def _any_categorical(is_categorical, features):
    for f in features:
        if is_categorical[f]:
            return True
    return False


# Called from compiled code alone: no CPython wrapper to compile (see
# grower.compiled_grower).
@kernel(_nrt=False, no_cpython_wrapper=True)
def search_numeric_features(criterion, features, seeds, first, last, use_random,
                            use_histogram, hist, n_value_bins, ordered_codes, ordered_stats,
                            bin_codes, sample_indices, start, end, missing_bin, lower,
                            upper, node_sums, min_samples_leaf, min_weight_leaf,
                            monotonic_cst, min_value, max_value, scratch, best_gain,
                            best_feature, best_bin, best_missing_left):
    """The serial search of :func:`find_node_split` over the numeric features
    ``features[first:last]`` (with their random ``seeds``), in order, continuing from the
    best split so far
    (``best_gain``, ``best_feature``, ``best_bin``, ``best_missing_left``; its left sums
    in ``scratch``'s node-left row). Returns the best split after them and how many of
    them are not constant in the node.

    Each feature's compact histogram comes from the node's dense histogram
    (``use_histogram``) or straight from its rows (extra trees' two-entry one, or every
    present bin; the rows' codes from :func:`node_feature_codes`), and is scanned at
    every position, or at the random one.

    Why a function of its own, compiled without numba's reference counting
    (``_nrt=False``): numba counts references to every array a step is given or a view
    it makes, with an atomic add and subtract, and drops the pairs only in simple
    functions. In :func:`find_node_split` they stayed, about twenty pairs per feature of
    every node, and an extra-trees regressor spent about half its fit on them (profiled
    with ``perf``). This function allocates nothing and returns no array, so the counts
    guard nothing here; numba refuses to compile it if it ever calls a function that
    allocates. ``error_model="numpy"`` (all the engine's kernels) drops Python's
    zero-division checks, whose raising paths also kept the counts.
    """
    node_codes = ordered_codes[start:end]
    node_stats = ordered_stats[start:end]
    n_channels = STAT_CHANNELS if STAT_CHANNELS > 0 else node_stats.shape[1]
    bins, sums, missing, left, feature_left, node_left = scan_buffers(scratch)
    n_non_constant = 0
    for j in range(first, last):
        f = features[j]
        column = f if use_histogram else node_feature_codes(f, node_codes, bin_codes,
                                                            sample_indices, start)
        if RANDOM and use_random and not use_histogram:
            # Extra trees straight from the rows: no per-bin histogram.
            n_present = random_split_from_samples(
                node_codes, column, node_stats, missing_bin, lower[f], upper[f], seeds[j],
                bins, sums, missing)
            position = np.int64(0)
        else:
            if use_histogram:
                n_present = compact_from_histogram(hist[f], n_value_bins[f], missing_bin,
                                                   bins, sums, missing)
            else:
                n_present = compact_from_samples(node_codes, column, node_stats, missing_bin,
                                                 scratch.accumulator, scratch.present, bins,
                                                 sums, missing, n_channels)
            position = _scan_position(use_random, bins, n_present, lower[f], upper[f],
                                      seeds[j])
        gain, last_left_bin, missing_left, constant = evaluate_numeric_feature(
            criterion, bins, sums, n_present, missing, node_sums, min_samples_leaf,
            min_weight_leaf, position, left, feature_left, monotonic_cst[f], min_value,
            max_value)
        n_non_constant += not constant
        if gain > best_gain:
            best_gain = gain
            best_feature = f
            best_bin = last_left_bin
            best_missing_left = missing_left
            copy_vector(node_left, feature_left)
    return best_gain, best_feature, best_bin, best_missing_left, n_non_constant


@kernel(inline="always")
def _column_ranges(node_codes, missing_bin, ranges):
    """Per column of the node's codes (``node_codes``, one row per sample, in node
    order), in ``ranges``' rows: its smallest code (``missing_bin`` when every code is
    missing: the missing bin is above every value bin), its largest code that is not
    missing (0 when none) and whether a code is missing (0 or 1).

    One pass over the node's rows for every feature at once, where the per-feature
    search read each feature's column apart: the inner loop runs along a row's
    contiguous codes, which LLVM vectorises (minima and maxima of 32 codes per
    instruction).

    That pass takes each column's plain largest code: the missing bin is the largest
    code, so a column has a missing code exactly when its largest is ``missing_bin``,
    and only such columns need their largest value code, from a second pass over the
    rows that runs only when the node holds a missing code. Taking the largest value
    code in the first pass instead (a missing code counting as 0) compiled to a masked
    store per row that the next row's load waited on: the pass was a fifth of the
    search's time on 5,000 x 28 rows (perf), and this one about a third of that.
    """
    n_rows, width = node_codes.shape
    low = ranges[RANGE_LOW]
    high = ranges[RANGE_HIGH]
    has_missing = ranges[RANGE_MISSING]
    missing_code = np.uint16(missing_bin)
    zero = np.uint16(0)
    for f in range(width):
        low[f] = missing_code
        high[f] = zero
    # Four rows at a time: each column's running minimum and maximum go through memory
    # (one vector per 32 columns), and a row's update waits on the previous row's store;
    # four rows combined first make one such wait where there were four. The last group
    # repeats the node's last row where it runs past it (a minimum or maximum is
    # unchanged by a repeat), so that one loop body serves every row (one copy to
    # compile).
    last = n_rows - 1
    for i in range(0, n_rows, 4):
        row0 = node_codes[i]
        row1 = node_codes[min(i + 1, last)]
        row2 = node_codes[min(i + 2, last)]
        row3 = node_codes[min(i + 3, last)]
        for f in range(width):
            code0 = np.uint16(row0[f])
            code1 = np.uint16(row1[f])
            code2 = np.uint16(row2[f])
            code3 = np.uint16(row3[f])
            low[f] = min(low[f], min(min(code0, code1), min(code2, code3)))
            high[f] = max(high[f], max(max(code0, code1), max(code2, code3)))
    any_missing = False
    for f in range(width):
        column_missing = high[f] == missing_code
        has_missing[f] = np.uint16(column_missing)
        any_missing |= column_missing
    if not any_missing:
        return
    # The largest code that is not missing, in the columns with a missing code.
    for f in range(width):
        high[f] = zero
    for i in range(n_rows):
        row = node_codes[i]
        for f in range(width):
            code = np.uint16(row[f])
            high[f] = max(high[f], code if code != missing_code else zero)


@kernel(inline="always")
def _add_row_left(codes, limits, n_columns, stats_row, n_channels, left_sums, last_lefts):
    """One row's part of :func:`search_random_node`'s left sums: for each of the first
    ``n_columns`` columns of ``codes`` (a row's codes, or its gathered lanes) whose code
    is at most the column's ``limits`` entry, the row's channels added to the column's
    ``left_sums[c]`` and its code to the column's largest left bin ``last_lefts``. The
    inner loops run along the columns, which LLVM vectorises; a column that does not go
    left adds ``+0.0``.

    Codes, limits and largest bins are compared as int32, the sums' terms chosen by a
    select: with int64 and ``value * (code <= limit)``, a 256-bit vector held half the
    lanes, and AVX2 has neither an int64 maximum nor an int64-to-double conversion.
    Measured on AMD EPYC Zen 3 (AVX2, no AVX-512), extra trees with one thread: about
    12% off a regressor's fit on 4,000 x 28 rows, 5% off a classifier's on 16,000."""
    zero = np.int32(0)
    for k in range(n_columns):
        code = np.int32(codes[k])
        last_lefts[k] = max(last_lefts[k], code if code <= limits[k] else zero)
    for c in range(n_channels):
        value = stats_row[c]
        sums_c = left_sums[c]
        for k in range(n_columns):
            sums_c[k] += value if np.int32(codes[k]) <= limits[k] else 0.0


@kernel(inline="always")
def _add_four_rows_left(codes, first, limits, n_columns, stats, first_stats, n_channels,
                        left_sums, last_lefts, class_lane):
    """:func:`_add_row_left` for the four rows ``codes[first:first + 4]`` (their
    channels ``stats[first_stats:first_stats + 4]``), the same terms added in the same
    (row) order, so the same sums to the bit. A column's running sum goes through
    memory, and each row's addition waited on the previous row's store; here one load
    and one store serve four rows. ``class_lane`` (-1 for none): the lane of ``codes``
    holding each row's class (see :func:`class_code_column`)."""
    codes0 = codes[first]
    codes1 = codes[first + 1]
    codes2 = codes[first + 2]
    codes3 = codes[first + 3]
    zero = np.int32(0)
    for k in range(n_columns):
        limit = limits[k]
        code0 = np.int32(codes0[k])
        code1 = np.int32(codes1[k])
        code2 = np.int32(codes2[k])
        code3 = np.int32(codes3[k])
        last_lefts[k] = max(max(max(last_lefts[k], code0 if code0 <= limit else zero),
                                max(code1 if code1 <= limit else zero,
                                    code2 if code2 <= limit else zero)),
                            code3 if code3 <= limit else zero)
    # With the rows' classes in lane ``class_lane`` of ``codes``, the count channel
    # alone is summed here and each row's weight goes to its class's channel below: the
    # other class channels hold +0.0 for that row, whose addition changes no sum.
    for c in range(n_channels if class_lane < 0 else 1):
        value0 = stats[first_stats, c]
        value1 = stats[first_stats + 1, c]
        value2 = stats[first_stats + 2, c]
        value3 = stats[first_stats + 3, c]
        sums_c = left_sums[c]
        for k in range(n_columns):
            limit = limits[k]
            total = sums_c[k]
            total += value0 if np.int32(codes0[k]) <= limit else 0.0
            total += value1 if np.int32(codes1[k]) <= limit else 0.0
            total += value2 if np.int32(codes2[k]) <= limit else 0.0
            total += value3 if np.int32(codes3[k]) <= limit else 0.0
            sums_c[k] = total
    if class_lane >= 0:
        for q in range(4):
            row_codes = codes[first + q]
            c = 1 + np.int64(row_codes[class_lane])
            value = stats[first_stats + q, c]
            sums_c = left_sums[c]
            for k in range(n_columns):
                sums_c[k] += value if np.int32(row_codes[k]) <= limits[k] else 0.0


# Called from compiled code alone: no CPython wrapper; without reference counts, as
# search_numeric_features (it allocates nothing).
@kernel(_nrt=False, no_cpython_wrapper=True)
def search_random_node(criterion, feature_order, max_features, use_random, rng_state,
                       ordered_codes, ordered_stats, start, end, is_categorical, missing_bin,
                       lower, upper, node_sums, min_samples_leaf, min_weight_leaf, n_classes,
                       monotonic_cst, min_value, max_value, scratch, out_bitset):
    """Extra trees' split of the node holding rows ``start:end`` of the grower's ordered
    codes and channels (every feature's codes kept in node order), without histograms:
    the split :func:`find_node_split`'s per-feature search finds there (Geurts et al.
    2006, algorithm 2: a threshold drawn uniformly in each visited feature's range in
    the node, the best of them by the criterion), the same bits, in fewer passes.

    Returns ``(score, feature, last_left_bin, missing_go_left)`` as that search does, the
    winner's left sums in ``scratch``'s node-left row and a categorical winner's left set
    in ``out_bitset``.

    The per-feature search read the node's rows twice per visited feature (its range,
    then its left sums), each time one code in every row of ``n_features``, and each
    row's addition to a feature's sums waited on the previous row's. Here:

    1. one pass gives every feature's range in the node and whether it has missing
       codes (:func:`_column_ranges`), so the constant features are known before any
       sum, and with them the visited features: the shortest prefix of
       ``feature_order`` holding ``max_features`` features that are not constant (the
       set the batches visit) and their seeds, one draw each in visiting order, as the
       batches draw them;
    2. one pass sums the left side of every column at once: per row and channel, the
       inner loop runs along the row's contiguous codes, compares each with its
       column's limit bin (-1 for the columns not visited, which add nothing) and adds
       the row's value, or 0 where the code lies above the limit, to the column's
       channel-major sum, which LLVM vectorises across columns; with each column's
       largest bin going left. The
       missing codes' sums take a pass of their own, only when a visited feature has
       missing codes in the node.

    When the visited numeric columns are at most a quarter of a row's (``"sqrt"``),
    their codes are first gathered, ``_CHUNK`` rows at a time, into lanes padded to
    ``_LANES``, which the same loops then sum (about a tenth off an extra-trees
    classifier's fit on 16,000 x 28 rows, measured); otherwise every column is summed,
    the others adding nothing, which costs little more than the visited ones alone.
    Each sum adds the same terms in the same (row) order as
    :func:`random_split_from_samples` does, so the splits are the same to the bit; a
    term ``+0.0`` leaves a sum unchanged (a sum started at ``+0`` is never ``-0``).
    Categorical features are searched one by one as the per-feature search does. The
    features are then scored in visiting order, the first of equal scores kept.
    """
    node_codes = ordered_codes[start:end]
    node_stats = ordered_stats[start:end]
    n_features = feature_order.shape[0]
    n_channels = STAT_CHANNELS if STAT_CHANNELS > 0 else node_stats.shape[1]
    n_rows, width = node_codes.shape
    ranges = scratch.column_ranges
    _column_ranges(node_codes, missing_bin, ranges)
    low = ranges[RANGE_LOW]
    high = ranges[RANGE_HIGH]
    has_missing = ranges[RANGE_MISSING]
    seeds = scratch.seeds
    limits = scratch.column_splits[COLUMN_LIMIT]
    last_lefts = scratch.column_splits[COLUMN_LAST_LEFT]
    lane_columns = scratch.column_splits[LANE_COLUMN]
    lane_limits = scratch.column_splits[LANE_LIMIT]
    left_sums = scratch.column_sums[0]
    missing_sums = scratch.column_sums[1]

    # The visited features, their seeds, and the numeric ones' limits.
    for k in range(width):
        limits[k] = -1
        last_lefts[k] = 0
    n_bins = upper.shape[1]
    thresholds = scratch.lane_thresholds
    bisect_base = scratch.lane_bisection[BISECT_BASE]
    bisect_width = scratch.lane_bisection[BISECT_WIDTH]
    widest = np.int64(0)
    n_visited = 0
    n_non_constant = 0
    n_numeric = 0
    any_missing = False
    # The generator's state in a register until the visited features are known (see
    # shuffle_in_place): the draws of next_uint64, without a store between them.
    state = rng_state[0]
    while n_visited < n_features and n_non_constant < max_features:
        f = feature_order[n_visited]
        # Written as find_node_split's batches write their seeds, to draw the very same
        # (numba types this conditional as float64: the seed keeps its top 53 bits).
        if use_random:
            state += GOLDEN_GAMMA
        seeds[n_visited] = mix_state(state) if use_random else 0
        n_visited += 1
        n_values = 0 if low[f] == missing_bin else (1 if low[f] == high[f] else 2)
        if n_values + has_missing[f] < 2:
            continue
        n_non_constant += 1
        if CATEGORICAL and is_categorical[f]:
            continue
        # Rows going left have codes from low[f] up: their largest starts there.
        last_lefts[f] = low[f]
        # The column's random threshold, whose limit bin the lanes' bisection finds
        # below (a single bin, width 0: every value goes left).
        low_f = np.int64(low[f])
        high_f = np.int64(high[f])
        span = max(high_f - low_f, 0)
        thresholds[n_numeric] = (_random_threshold(lower[f], upper[f], low_f, high_f,
                                                   seeds[n_visited - 1])
                                 if span > 0 else 0.0)
        bisect_base[n_numeric] = f * n_bins + low_f
        bisect_width[n_numeric] = span
        widest = max(widest, span)
        lane_columns[n_numeric] = f
        n_numeric += 1
        any_missing |= has_missing[f] != 0
    rng_state[0] = state
    # Each numeric column's limit: the last bin left of its threshold (_random_limit).
    _bisect_lanes(upper.reshape(upper.size), thresholds, scratch.lane_bisection, n_numeric,
                  widest)
    for j in range(n_numeric):
        f = lane_columns[j]
        low_f = np.int64(low[f])
        high_f = np.int64(high[f])
        limit = (max(bisect_base[j] - f * n_bins - 1, low_f) if low_f < high_f
                 else high_f)
        limits[f] = limit
        lane_limits[j] = limit
    for c in range(n_channels):
        for k in range(width):
            left_sums[c, k] = 0.0
            missing_sums[c, k] = 0.0

    # The inner loops run along a row's codes, recomputing the comparison per channel:
    # kept in a 0/1 array instead, the loads and stores made the pass twice as slow.
    gather = 4 * n_numeric <= width
    if gather:
        # Few columns visited: their codes gathered, a chunk of rows at a time, into
        # lanes (padding lanes never go left), whose sums are then as cheap as a
        # vector or two per channel. Sums and largest bins are then per lane.
        n_lanes = (n_numeric + _LANES - 1) // _LANES * _LANES
        for j in range(n_numeric, n_lanes):
            lane_columns[j] = 0
            lane_limits[j] = -1
        for j in range(n_lanes):
            last_lefts[j] = low[lane_columns[j]] if j < n_numeric else 0
        lane_codes = scratch.lane_codes
        # Each row's class, where the codes carry it, in the last lane (never summed:
        # n_lanes stops below it).
        class_column = class_code_column(criterion, n_classes, n_channels, n_features,
                                         width, node_codes.itemsize)
        class_lane = (lane_codes.shape[1] - 1
                      if class_column >= 0 and n_lanes < lane_codes.shape[1] else -1)
        for chunk in range(0, n_rows, _CHUNK):
            n_chunk = min(_CHUNK, n_rows - chunk)
            for r in range(n_chunk):
                row = node_codes[chunk + r]
                # The visited lanes alone: a padding lane's code, whatever it is (left
                # from an earlier node, or never written), lies above its limit of -1.
                # Unsigned indices: numba checks a signed one for a negative value.
                for j in range(n_numeric):
                    lane_codes[r, j] = row[np.uint32(lane_columns[j])]
                if class_lane >= 0:
                    lane_codes[r, class_lane] = row[class_column]
            n_quads = n_chunk - n_chunk % 4
            for r in range(0, n_quads, 4):
                _add_four_rows_left(lane_codes, r, lane_limits, n_lanes, node_stats,
                                    chunk + r, n_channels, left_sums, last_lefts,
                                    class_lane)
            for r in range(n_quads, n_chunk):
                _add_row_left(lane_codes[r], lane_limits, n_lanes, node_stats[chunk + r],
                              n_channels, left_sums, last_lefts)
    else:
        # Row by row: four rows at a time measured no faster here (an extra-trees
        # regressor's default fit, 4,000 x 28 rows) and compiled a second copy.
        for i in range(n_rows):
            _add_row_left(node_codes[i], limits, width, node_stats[i], n_channels, left_sums,
                          last_lefts)
    if any_missing:
        for i in range(n_rows):
            row = node_codes[i]
            for c in range(n_channels):
                value = node_stats[i, c]
                sums_c = missing_sums[c]
                for k in range(width):
                    sums_c[k] += np.float64(np.int64(row[k]) == missing_bin) * value

    # Score the visited features in order.
    bins, sums, missing, left, feature_left, node_left = scan_buffers(scratch)
    best_gain = _NO_SPLIT
    best_feature = np.int64(-1)
    best_bin = np.int64(-1)
    best_missing_left = np.bool_(False)
    lane = 0
    for v in range(n_visited):
        f = feature_order[v]
        n_values = 0 if low[f] == missing_bin else (1 if low[f] == high[f] else 2)
        if n_values + has_missing[f] < 2:
            continue  # constant: no split
        if CATEGORICAL and is_categorical[f]:
            n_present = compact_from_samples(
                node_codes, f, node_stats, missing_bin, scratch.accumulator,
                scratch.present, bins, sums, missing, n_channels)
            gain, last_left_bin, missing_left, _ = evaluate_feature(
                criterion, f, True, bins, sums, n_present, missing, node_sums,
                min_samples_leaf, min_weight_leaf, use_random, seeds[v], n_classes, lower,
                upper,
                left, scratch.scores, scratch.bitset, feature_left, monotonic_cst[f],
                min_value, max_value, scratch.category_work)
            if gain > best_gain:
                copy_vector(out_bitset, scratch.bitset)
        else:
            # The two-entry compact histogram of random_split_from_samples.
            slot = lane if gather else f
            lane += 1
            bins[0] = last_lefts[slot]
            bins[1] = high[f]
            for c in range(n_channels):
                sums[0, c] = left_sums[c, slot]
                sums[1, c] = 0.0
                missing[c] = missing_sums[c, f]
            gain, last_left_bin, missing_left, _ = evaluate_numeric_feature(
                criterion, bins, sums, np.int64(n_values), missing, node_sums,
                min_samples_leaf, min_weight_leaf, np.int64(0), left, feature_left,
                monotonic_cst[f], min_value, max_value)
        if gain > best_gain:
            best_gain = gain
            best_feature = f
            best_bin = last_left_bin
            best_missing_left = missing_left
            copy_vector(node_left, feature_left)
    return best_gain, best_feature, best_bin, best_missing_left


@kernel()
def find_node_split(criterion, hist, use_histogram, parallel, bin_codes, ordered_codes,
                    ordered_stats, stats, y, weight, sample_indices, start, end, node_sums,
                    parent_impurity,
                    root_weight, n_value_bins, is_categorical, missing_bin, lower, upper,
                    min_samples_leaf, min_weight_leaf, max_features, use_random, rng_state,
                    n_classes, scratch, out_bitset, monotonic_cst, min_value, max_value):
    """Best split of the node holding ``sample_indices[start:end]``.

    ``bin_codes`` is feature-major and indexed by sample id; ``ordered_codes`` and
    ``ordered_stats`` hold each sample's codes and statistic channels in the order of
    ``sample_indices`` (the node's are rows ``start:end``). ``hist`` is the node's dense
    histogram when ``use_histogram`` is true; otherwise the compact histograms are summed
    from the node's rows. Under absolute_error (which
    histograms cannot serve) each feature is searched from order statistics of ``y`` and
    ``weight`` by :mod:`silva.engine.absolute_error`. ``scratch`` comes from
    :func:`make_split_scratch`. ``monotonic_cst`` (int8 per feature) and the node's
    value bounds ``[min_value, max_value]`` constrain numeric splits in the copy that
    :func:`split_finder` makes with ``monotone=True`` (:mod:`silva.engine.monotone`);
    other copies never read them.

    Returns ``(improvement, feature, last_left_bin, missing_go_left)``; feature is -1 when
    no split satisfies the leaf constraints. ``out_bitset`` receives the left category
    set of a categorical split, and :func:`winning_left_sums` reads the left child's
    channel sums of the returned split (not under absolute_error) from ``scratch``.
    """
    feature_order = scratch.feature_order
    scratch_bins = scratch.bins
    scratch_sums = scratch.sums
    accumulator = scratch.accumulator
    present_bitmap = scratch.present
    scratch_scores = scratch.scores
    bitset = scratch.bitset
    all_seeds = scratch.seeds
    n_features = feature_order.shape[0]
    n_channels = node_sums.shape[0]
    n_words = out_bitset.shape[0]
    for f in range(n_features):
        feature_order[f] = f
    if max_features < n_features:
        # Features are visited in a random order.
        # all_seeds as the scratch of its draws: the seeds are drawn after it.
        shuffle_in_place(feature_order, rng_state, all_seeds)

    if ORDER_STATISTICS:
        use_histogram = False
        parallel = False
    node_codes = ordered_codes[start:end]
    node_stats = ordered_stats[start:end]

    best_gain = _NO_SPLIT
    # Typed, not literal: numba would compile search_numeric_features once more for
    # the literal -1 and False of its first call.
    best_feature = np.int64(-1)
    best_bin = np.int64(-1)
    best_missing_left = np.bool_(False)
    missing = scratch.side_sums[SIDE_MISSING]
    left = scratch.side_sums[SIDE_LEFT]
    right = scratch.side_sums[SIDE_RIGHT]
    feature_left = scratch.side_sums[SIDE_FEATURE_LEFT]
    node_left = scratch.side_sums[SIDE_NODE_LEFT]

    n_visited = 0
    n_non_constant = 0
    if ROWS_ONLY or (RANDOM_FROM_ROWS and use_random and not use_histogram
                     and node_codes.shape[1] >= bin_codes.shape[0]):
        # Extra trees from the node's rows, every feature's codes at hand: all features
        # in one fused search (the same split, see search_random_node).
        best_gain, best_feature, best_bin, best_missing_left = search_random_node(
            criterion, feature_order, max_features, use_random, rng_state, ordered_codes,
            ordered_stats, start, end, is_categorical, missing_bin, lower, upper,
            node_sums, min_samples_leaf, min_weight_leaf, n_classes, monotonic_cst,
            min_value, max_value, scratch, out_bitset)
        n_visited = n_features
        if ROWS_ONLY:
            # The copy for fits whose every node takes the fused search: it returns here,
            # and the per-feature search below is pruned, not compiled.
            return _winner(criterion, best_gain, best_feature, best_bin, best_missing_left,
                           node_sums, node_left, right, parent_impurity, root_weight)
    while n_visited < n_features and n_non_constant < max_features:
        # Visit the next batch: as many features as are still owed.
        batch = min(max_features - n_non_constant, n_features - n_visited)
        features = feature_order[n_visited:n_visited + batch]
        seeds = all_seeds[:batch]
        for j in range(batch):
            seeds[j] = next_uint64(rng_state) if use_random else 0
        if PARALLEL and use_histogram and parallel:
            gains = np.empty(batch)
            last_bins = np.empty(batch, dtype=np.int64)
            missing_lefts = np.empty(batch, dtype=np.bool_)
            constants = np.empty(batch, dtype=np.bool_)
            bitsets = np.empty((batch, n_words), dtype=np.uint64)
            lefts = np.empty((batch, n_channels))
            _evaluate_dense_parallel(
                criterion, features, hist, n_value_bins, is_categorical, missing_bin,
                node_sums, min_samples_leaf, min_weight_leaf, use_random, seeds, n_classes,
                lower, upper, gains, last_bins, missing_lefts,
                constants, bitsets, lefts, monotonic_cst, min_value, max_value,
            )
            for j in range(batch):
                n_non_constant += not constants[j]
                if gains[j] > best_gain:
                    best_gain = gains[j]
                    best_feature = features[j]
                    best_bin = last_bins[j]
                    best_missing_left = missing_lefts[j]
                    copy_vector(out_bitset, bitsets[j])
                    copy_vector(node_left, lefts[j])
        elif ORDER_STATISTICS:
            for j in range(batch):
                f = features[j]
                gain, last_left_bin, missing_left, constant = \
                    evaluate_feature_absolute_error(
                        bin_codes[f], is_categorical[f], sample_indices, start, end, y,
                        weight, stats[:, 0], missing_bin,
                        parent_impurity * node_weight(criterion, node_sums), root_weight,
                        min_samples_leaf, min_weight_leaf, use_random, seeds[j],
                        lower[f], upper[f], bitset, monotonic_cst[f], min_value,
                        max_value)
                n_non_constant += not constant
                if gain > best_gain:
                    best_gain = gain
                    best_feature = f
                    best_bin = last_left_bin
                    best_missing_left = missing_left
                    if is_categorical[f]:
                        copy_vector(out_bitset, bitset)
        elif CATEGORICAL and _any_categorical(is_categorical, features):
            # A batch with categorical features: one feature at a time, in order.
            for j in range(batch):
                f = features[j]
                if not is_categorical[f]:
                    best_gain, best_feature, best_bin, best_missing_left, non_constant = \
                        search_numeric_features(
                            criterion, features, seeds, j, j + 1, use_random,
                            use_histogram, hist, n_value_bins, ordered_codes,
                            ordered_stats, bin_codes, sample_indices, start, end,
                            missing_bin, lower, upper,
                            node_sums, min_samples_leaf, min_weight_leaf, monotonic_cst,
                            min_value, max_value, scratch, best_gain, best_feature,
                            best_bin, best_missing_left)
                    n_non_constant += non_constant
                    continue
                if use_histogram:
                    n_present = compact_from_histogram(
                        hist[f], n_value_bins[f], missing_bin, scratch_bins, scratch_sums,
                        missing)
                else:
                    column = node_feature_codes(f, node_codes, bin_codes, sample_indices,
                                                start)
                    n_present = compact_from_samples(
                        node_codes, column, node_stats, missing_bin,
                        accumulator, present_bitmap, scratch_bins, scratch_sums, missing,
                        n_channels)
                gain, last_left_bin, missing_left, constant = evaluate_feature(
                    criterion, f, True, scratch_bins, scratch_sums, n_present, missing,
                    node_sums, min_samples_leaf, min_weight_leaf, use_random, seeds[j],
                    n_classes, lower, upper, left, scratch_scores, bitset, feature_left,
                    monotonic_cst[f], min_value, max_value, scratch.category_work,
                )
                n_non_constant += not constant
                if gain > best_gain:
                    best_gain = gain
                    best_feature = f
                    best_bin = last_left_bin
                    best_missing_left = missing_left
                    copy_vector(node_left, feature_left)
                    copy_vector(out_bitset, bitset)
        else:
            best_gain, best_feature, best_bin, best_missing_left, batch_non_constant = \
                search_numeric_features(
                    criterion, features, seeds, np.int64(0), batch, use_random,
                    use_histogram, hist,
                    n_value_bins, ordered_codes, ordered_stats, bin_codes, sample_indices,
                    start, end, missing_bin,
                    lower, upper, node_sums, min_samples_leaf, min_weight_leaf,
                    monotonic_cst, min_value, max_value, scratch, best_gain, best_feature,
                    best_bin, best_missing_left)
            n_non_constant += batch_non_constant
        n_visited += batch
    if ORDER_STATISTICS:
        return best_gain, best_feature, best_bin, best_missing_left
    return _winner(criterion, best_gain, best_feature, best_bin, best_missing_left,
                   node_sums, node_left, right, parent_impurity, root_weight)


@kernel(inline="always")
def _winner(criterion, best_gain, best_feature, best_bin, best_missing_left, node_sums,
            node_left, right, parent_impurity, root_weight):
    """:func:`find_node_split`'s result: candidates were ranked by the proxy, so the
    winner (whose left sums are ``node_left``) is reported with its true improvement;
    ``right`` is scratch for its right sums."""
    if best_feature < 0:
        return best_gain, best_feature, best_bin, best_missing_left
    for c in range(node_sums.shape[0]):
        right[c] = node_sums[c] - node_left[c]
    gain, _, _ = improvement(criterion, node_sums, node_left, right, parent_impurity,
                             root_weight)
    return gain, best_feature, best_bin, best_missing_left


def split_finder(criterion, parallel=True, categorical=True, random=True, monotone=False,
                 sparse=False, rows_only=False):
    """:func:`find_node_split` compiled for one criterion code alone.

    The copy calls that criterion's scans (and, for absolute_error, the order-statistics
    search) and nothing else, so a first fit compiles one criterion rather than all of
    them (see :mod:`silva.engine.specialize`, which also keeps each copy, so that
    criteria binding the same kernels share one). ``parallel=False`` leaves out the
    parallel search (the copy searches serially whatever its ``parallel`` argument),
    ``categorical=False`` the category scan (the copy treats every feature as numeric),
    ``random=False`` extra trees' random thresholds (the copy searches the best ones).
    ``monotone=True`` makes the numeric scans (and absolute_error's order-statistics
    search) check monotonic constraints. A multi-output criterion code gets its own
    copy, which scores candidates with the multi-output proxies and improvement.
    ``sparse=True`` is the copy of :mod:`silva.engine.cart_sparse`'s grower: it reads a
    node's codes from the features' stored entries (its ``bin_codes`` argument a
    :class:`~silva.engine.cart_sparse.SparseColumns`), serially, without histograms.
    ``rows_only=True`` (serial, dense, random, not absolute_error) is the copy for fits
    whose nodes hold no histogram and keep every feature's codes in node order: every
    node takes :func:`search_random_node`, and the per-feature search is not compiled.
    """
    suffix = kernel_suffix(criterion)
    numeric_scan, categorical_scan = _scans_of(_PROXY_OF_CRITERION[criterion])
    if criterion >= MULTI_GINI:
        # Multi-output: the winner's improvement is the mean over the outputs.
        winner_improvement = multi_output_improvement
    else:
        # The winner's improvement with this criterion's impurity kernel alone.
        winner_improvement = specialize(improvement, suffix,
                                        impurity=IMPURITY_OF_CRITERION[criterion])
    bindings = {"_winner": specialize(_winner, suffix, improvement=winner_improvement)}
    if monotone:
        numeric_scan = specialize(numeric_scan, "monotone", MONOTONE=True)
        if criterion == ABSOLUTE_ERROR:
            bindings["evaluate_feature_absolute_error"] = specialize(
                evaluate_feature_absolute_error, "monotone", MONOTONE=True)
        suffix += "_monotone"
    numeric = specialize(evaluate_numeric, suffix, scan_numeric=numeric_scan)
    numeric_feature = specialize(evaluate_numeric_feature, suffix, evaluate_numeric=numeric)
    feature_suffix = variant_suffix(suffix, categorical=categorical, random=random)
    position = specialize(_scan_position, feature_suffix, RANDOM=random)
    feature = specialize(evaluate_feature, feature_suffix, scan_categorical=categorical_scan,
                         evaluate_numeric_feature=numeric_feature, _scan_position=position,
                         CATEGORICAL=categorical)
    if sparse:
        # Imported here: the sparse kernels import this module's.
        from silva.engine import cart_sparse

        parallel = False
        numeric_search = specialize(cart_sparse.search_sparse_features, feature_suffix,
                                    evaluate_numeric_feature=numeric_feature,
                                    _scan_position=position, RANDOM=random)
        bindings["node_feature_codes"] = cart_sparse.gather_sparse_codes
        suffix += "_sparse"
    else:
        # The single-output regression criteria have four channels: a constant in their
        # copies (see STAT_CHANNELS).
        fixed = ({"STAT_CHANNELS": REGRESSION_CHANNELS}
                 if criterion in (SQUARED_ERROR, FRIEDMAN_MSE, POISSON) else {})
        numeric_search = specialize(search_numeric_features, feature_suffix,
                                    evaluate_numeric_feature=numeric_feature,
                                    _scan_position=position, RANDOM=random, **fixed)
    if random and not sparse and criterion != ABSOLUTE_ERROR:
        # The fused search scores each visited feature's two-entry histogram with the
        # scan inlined: called apart, the scan was a sixth of an extra-trees regressor's
        # fit (perf), most of it the call. A copy of its own, so that the other searches
        # keep calling the shared scan.
        inlined_scan = specialize_options(numeric_scan, "inline", {"inline": "always"})
        random_numeric_feature = specialize(
            evaluate_numeric_feature, suffix + "_inline_scan",
            evaluate_numeric=specialize(evaluate_numeric, suffix + "_inline_scan",
                                        scan_numeric=inlined_scan))
        bindings["RANDOM_FROM_ROWS"] = True
        bindings["search_random_node"] = specialize(
            search_random_node, feature_suffix,
            evaluate_numeric_feature=random_numeric_feature, evaluate_feature=feature,
            CATEGORICAL=categorical, **fixed)
    bindings.update({"evaluate_feature": feature, "search_numeric_features": numeric_search,
                     "ORDER_STATISTICS": criterion == ABSOLUTE_ERROR, "PARALLEL": parallel,
                     "CATEGORICAL": categorical})
    if parallel:
        bindings["_evaluate_dense_parallel"] = specialize(
            _evaluate_dense_parallel, feature_suffix, evaluate_feature=feature)
    variant = variant_suffix(suffix, parallel=parallel, categorical=categorical,
                             random=random)
    if rows_only:
        if parallel or sparse or not random or criterion == ABSOLUTE_ERROR:
            raise ValueError("rows_only is for the serial dense copies with random splits "
                             "that search from rows (not absolute_error)")
        bindings["ROWS_ONLY"] = True
        variant += "_rows"
    if parallel or sparse or criterion == ABSOLUTE_ERROR:
        return specialize(find_node_split, variant, **bindings)
    # The serial dense search allocates nothing (the parallel search's per-batch arrays,
    # the sparse gathers and absolute_error's order statistics do): compiled without
    # reference counts, which were about a tenth of a deep tree's grow time and add
    # code to compile (see search_numeric_features).
    return specialize_options(find_node_split, variant, {"_nrt": False}, **bindings)


def variant_suffix(suffix, **paths):
    """``suffix`` extended with the paths (keyword flags) a specialised copy leaves out,
    ``parallel=False`` as ``_serial`` and so on: each variant its own name."""
    names = {"parallel": "serial", "categorical": "numeric", "random": "best",
             "extras": "plain"}
    return suffix + "".join(f"_{names[path]}" for path, kept in paths.items() if not kept)


def kernel_suffix(criterion):
    """The name given to the kernels compiled for ``criterion`` (criteria that bind the
    same kernels share one)."""
    if criterion == ABSOLUTE_ERROR:
        return "absolute_error"
    return _PROXY_OF_CRITERION[criterion]
