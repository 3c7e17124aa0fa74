"""Splitting: the best split of one node, read off its per-feature bin sums.

For every candidate feature the node's samples are summarised as a *compact histogram*:
the bins that hold samples of the node, in increasing order, with their channel sums, and
the sums of the missing bin apart. Large nodes get it by compacting their dense histogram
(:mod:`silva.engine.histogram`); small nodes by sorting their few bin codes, which is
cheaper than touching every bin of a dense histogram. Both feed the same scans:

- numeric features: every threshold between two present bins, with missing values sent
  left and then right, plus the split "missing versus the rest"; when the node saw no
  missing value, missing values follow the child with more samples (scikit-learn's rule);
- categorical features: categories (and the missing pseudo-category) are ordered by a
  per-category score and scanned like a numeric feature (Breiman et al. 1984, thm. 4.5:
  optimal for binary classification and regression); with more than two classes, one
  ordering per class is scanned, one-vs-rest, and the best kept. The left category set is
  stored as a bitset; categories the node never saw follow the missing values;
- the random splitter (extra trees, Geurts et al. 2006) scores a single threshold drawn
  uniformly between the node's smallest and largest value, or a random category subset.

With ``max_features`` below the number of features, features are visited in a random
order until ``max_features`` of them that are not constant in the node have been scanned
(scikit-learn's rule, which never leaves a node unsplit for having drawn only constant
features). Each feature's random numbers come from its own seed, drawn on the calling
thread, so the result does not depend on how features are spread over threads.
"""

import numba as nb
import numpy as np

from silva.engine.criteria import SQUARED_ERROR, improvement, node_weight
from silva.engine.random import next_uint64, randint, uniform

_NO_SPLIT = -np.inf
# ``last_left_bin`` of the split "missing values versus all the rest": every value bin
# goes left, so the real threshold is +inf.
ALL_VALUE_BINS = 1 << 30


@nb.njit(cache=True)
def _passes_leaf_constraints(criterion_weight_left, criterion_weight_right, left, right,
                             min_samples_leaf, min_weight_leaf):
    return (
        left[0] >= min_samples_leaf
        and right[0] >= min_samples_leaf
        and criterion_weight_left >= min_weight_leaf
        and criterion_weight_right >= min_weight_leaf
    )


@nb.njit(cache=True)
def _score_candidate(criterion, left, node_sums, right, parent_impurity, root_weight,
                     min_samples_leaf, min_weight_leaf):
    for c in range(node_sums.shape[0]):
        right[c] = node_sums[c] - left[c]
    left_weight = node_weight(criterion, left)
    right_weight = node_weight(criterion, right)
    if not _passes_leaf_constraints(left_weight, right_weight, left, right,
                                    min_samples_leaf, min_weight_leaf):
        return _NO_SPLIT
    if left_weight <= 0.0 or right_weight <= 0.0:
        return _NO_SPLIT
    gain, _, _ = improvement(criterion, node_sums, left, right, parent_impurity, root_weight)
    return gain


@nb.njit(cache=True)
def scan_numeric(criterion, bins, sums, n_present, missing, node_sums, parent_impurity,
                 root_weight, min_samples_leaf, min_weight_leaf, random_position, left, right):
    """Best threshold of a numeric feature from its compact histogram.

    Returns ``(gain, last_left_bin, missing_go_left)``: bins ``<= last_left_bin`` go
    left. ``random_position >= 0`` restricts the scan to that one threshold (extra trees).
    A ``last_left_bin`` equal to ``bins[n_present - 1]`` is the split "missing versus the
    rest".
    """
    n_channels = node_sums.shape[0]
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
            gain = _score_candidate(criterion, left, node_sums, right, parent_impurity,
                                    root_weight, min_samples_leaf, min_weight_leaf)
            if gain > best_gain:
                best_gain = gain
                best_bin = bins[i] if i < n_present - 1 else ALL_VALUE_BINS
                best_missing_left = missing_left
                # Without missing values in the node, missing values at prediction time
                # follow the child with more samples.
                if not has_missing:
                    best_missing_left = left[0] > node_sums[0] - left[0]
    return best_gain, best_bin, best_missing_left


@nb.njit(cache=True)
def _category_order(criterion, bins, sums, n_entries, target_class, scores):
    for e in range(n_entries):
        weight = node_weight(criterion, sums[e])
        if weight <= 0.0:
            scores[e] = 0.0
        elif criterion < SQUARED_ERROR:
            scores[e] = sums[e, 1 + target_class] / weight
        else:
            scores[e] = sums[e, 2] / weight
    return np.argsort(scores[:n_entries], kind="mergesort")


@nb.njit(cache=True)
def scan_categorical(criterion, bins, sums, n_present, missing, node_sums, parent_impurity,
                     root_weight, min_samples_leaf, min_weight_leaf, random_state_seed,
                     use_random, n_classes, left, right, scores, bitset):
    """Best category partition of a categorical feature from its compact histogram.

    The missing bin joins the scan as one more category when the node has missing values.
    Writes the left set into ``bitset`` and returns ``(gain, missing_go_left)``.
    """
    n_channels = node_sums.shape[0]
    has_missing = missing[0] > 0
    n_entries = n_present + (1 if has_missing else 0)
    if has_missing:
        for c in range(n_channels):
            sums[n_present, c] = missing[c]
    best_gain = _NO_SPLIT
    in_left = np.zeros(n_entries, dtype=np.bool_)
    if n_entries < 2:
        return best_gain, False
    if use_random:
        # A random non-trivial subset of the node's categories goes left.
        rng = np.empty(1, dtype=np.uint64)
        rng[0] = random_state_seed
        n_left = 0
        for e in range(n_entries):
            in_left[e] = uniform(rng) < 0.5
            n_left += in_left[e]
        if n_left == 0 or n_left == n_entries:
            flip = randint(rng, n_entries)
            in_left[flip] = not in_left[flip]
        for c in range(n_channels):
            left[c] = 0.0
        for e in range(n_entries):
            if in_left[e]:
                for c in range(n_channels):
                    left[c] += sums[e, c]
        best_gain = _score_candidate(criterion, left, node_sums, right, parent_impurity,
                                     root_weight, min_samples_leaf, min_weight_leaf)
    else:
        n_orders = n_classes if (criterion < SQUARED_ERROR and n_classes > 2) else 1
        best_order = -1
        best_position = -1
        for target_class in range(n_orders):
            order = _category_order(criterion, bins, sums, n_entries, target_class, scores)
            for c in range(n_channels):
                left[c] = 0.0
            for p in range(n_entries - 1):
                e = order[p]
                for c in range(n_channels):
                    left[c] += sums[e, c]
                gain = _score_candidate(criterion, left, node_sums, right, parent_impurity,
                                        root_weight, min_samples_leaf, min_weight_leaf)
                if gain > best_gain:
                    best_gain = gain
                    best_order = target_class
                    best_position = p
        if best_order < 0:
            return best_gain, False
        order = _category_order(criterion, bins, sums, n_entries, best_order, scores)
        for p in range(best_position + 1):
            in_left[order[p]] = True
    if best_gain == _NO_SPLIT:
        return best_gain, False
    if has_missing:
        missing_left = in_left[n_present]
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


@nb.njit(cache=True)
def compact_from_histogram(hist_f, n_value_bins, missing_bin, bins, sums, missing):
    """Compact histogram of one feature from its dense histogram; returns n_present."""
    n_channels = hist_f.shape[1]
    n_present = 0
    for b in range(n_value_bins):
        if hist_f[b, 0] > 0:
            bins[n_present] = b
            for c in range(n_channels):
                sums[n_present, c] = hist_f[b, c]
            n_present += 1
    for c in range(n_channels):
        missing[c] = hist_f[missing_bin, c]
    return n_present


@nb.njit(cache=True)
def compact_from_samples(codes_f, node_stats, sample_indices, start, end, missing_bin,
                         node_codes, bins, sums, missing):
    """Compact histogram of one feature by sorting the node's bin codes; returns n_present.

    For a node of n samples this costs O(n log n) instead of O(n_bins), the better deal
    for the many small nodes near the leaves of a deep tree.
    """
    n_channels = node_stats.shape[1]
    n = end - start
    for i in range(n):
        node_codes[i] = codes_f[sample_indices[start + i]]
    order = np.argsort(node_codes[:n], kind="mergesort")
    for c in range(n_channels):
        missing[c] = 0.0
    n_present = 0
    for j in range(n):
        i = order[j]
        code = node_codes[i]
        if code == missing_bin:
            for c in range(n_channels):
                missing[c] += node_stats[i, c]
            continue
        if n_present == 0 or bins[n_present - 1] != code:
            bins[n_present] = code
            for c in range(n_channels):
                sums[n_present, c] = 0.0
            n_present += 1
        for c in range(n_channels):
            sums[n_present - 1, c] += node_stats[i, c]
    return n_present


@nb.njit(cache=True)
def _random_numeric_position(bins, n_present, lower_f, upper_f, seed):
    """Extra trees: index of the last bin left of a threshold drawn uniformly in the
    node's value range; -1 when the feature is constant in the node."""
    if n_present < 2:
        return -1
    low = lower_f[bins[0]]
    high = upper_f[bins[n_present - 1]]
    rng = np.empty(1, dtype=np.uint64)
    rng[0] = seed
    threshold = low + uniform(rng) * (high - low)
    position = 0
    for i in range(n_present - 1):
        if upper_f[bins[i]] <= threshold:
            position = i
    return position


@nb.njit(cache=True)
def evaluate_feature(criterion, f, is_categorical_f, bins, sums, n_present, missing,
                     node_sums, parent_impurity, root_weight, min_samples_leaf,
                     min_weight_leaf, use_random, seed, n_classes, lower, upper,
                     left, right, scores, bitset):
    """Best split of feature ``f`` from its compact histogram.

    Returns ``(gain, last_left_bin, missing_go_left, is_constant)``; ``bitset`` receives
    the left category set of a categorical split.
    """
    is_constant = n_present + (1 if missing[0] > 0 else 0) < 2
    if is_constant:
        return _NO_SPLIT, -1, False, True
    if is_categorical_f:
        gain, missing_left = scan_categorical(
            criterion, bins, sums, n_present, missing, node_sums, parent_impurity,
            root_weight, min_samples_leaf, min_weight_leaf, seed, use_random, n_classes,
            left, right, scores, bitset,
        )
        return gain, -1, missing_left, False
    random_position = -1
    if use_random:
        random_position = _random_numeric_position(bins, n_present, lower[f], upper[f], seed)
        if random_position < 0:
            random_position = n_present - 1  # only "missing versus the rest" is left
    gain, last_left_bin, missing_left = scan_numeric(
        criterion, bins, sums, n_present, missing, node_sums, parent_impurity, root_weight,
        min_samples_leaf, min_weight_leaf, random_position, left, right,
    )
    return gain, last_left_bin, missing_left, False


@nb.njit(cache=True, parallel=True)
def _evaluate_dense_parallel(criterion, features, hist, n_value_bins, is_categorical,
                             missing_bin, node_sums, parent_impurity, root_weight,
                             min_samples_leaf, min_weight_leaf, use_random, seeds, n_classes,
                             lower, upper, out_gain, out_bin, out_missing_left, out_constant,
                             out_bitsets):
    n_channels = node_sums.shape[0]
    n_bins = hist.shape[1]
    for j in nb.prange(features.shape[0]):
        f = features[j]
        bins = np.empty(n_bins, dtype=np.int64)
        sums = np.empty((n_bins + 1, n_channels))
        missing = np.empty(n_channels)
        left = np.empty(n_channels)
        right = np.empty(n_channels)
        scores = np.empty(n_bins + 1)
        n_present = compact_from_histogram(hist[f], n_value_bins[f], missing_bin, bins, sums,
                                           missing)
        gain, last_left_bin, missing_left, constant = evaluate_feature(
            criterion, f, is_categorical[f], bins, sums, n_present, missing, node_sums,
            parent_impurity, root_weight, min_samples_leaf, min_weight_leaf, use_random,
            seeds[j], n_classes, lower, upper, left, right, scores, out_bitsets[j],
        )
        out_gain[j] = gain
        out_bin[j] = last_left_bin
        out_missing_left[j] = missing_left
        out_constant[j] = constant


@nb.njit(cache=True)
def find_node_split(criterion, hist, use_histogram, parallel, bin_codes, stats,
                    sample_indices, start, end, node_sums, parent_impurity, root_weight,
                    n_value_bins, is_categorical, missing_bin, lower, upper,
                    min_samples_leaf, min_weight_leaf, max_features, use_random, rng_state,
                    n_classes, feature_order, scratch_bins, scratch_sums, scratch_codes,
                    scratch_scores, out_bitset):
    """Best split of the node holding ``sample_indices[start:end]``.

    ``hist`` is the node's dense histogram when ``use_histogram`` is true; otherwise the
    compact histograms are made by sorting. Returns ``(gain, feature, last_left_bin,
    missing_go_left)``; gain is ``-inf`` when no split satisfies the leaf constraints.
    ``out_bitset`` receives the left category set of a categorical split.
    """
    n_features = bin_codes.shape[0]
    n_channels = node_sums.shape[0]
    n_words = out_bitset.shape[0]
    for f in range(n_features):
        feature_order[f] = f
    if max_features < n_features:
        # Fisher-Yates shuffle: features are visited in a random order.
        for i in range(n_features - 1, 0, -1):
            j = randint(rng_state, i + 1)
            feature_order[i], feature_order[j] = feature_order[j], feature_order[i]

    node_stats = np.empty((0, n_channels))
    if not use_histogram:
        node_stats = np.empty((end - start, n_channels))
        for i in range(start, end):
            s = sample_indices[i]
            for c in range(n_channels):
                node_stats[i - start, c] = stats[s, c]

    best_gain = _NO_SPLIT
    best_feature = -1
    best_bin = -1
    best_missing_left = False
    missing = np.empty(n_channels)
    left = np.empty(n_channels)
    right = np.empty(n_channels)
    bitset = np.empty(n_words, dtype=np.uint64)

    n_visited = 0
    n_non_constant = 0
    while n_visited < n_features and n_non_constant < max_features:
        # Visit the next batch: as many features as are still owed.
        batch = min(max_features - n_non_constant, n_features - n_visited)
        features = feature_order[n_visited:n_visited + batch]
        seeds = np.empty(batch, dtype=np.uint64)
        if use_random:
            for j in range(batch):
                seeds[j] = next_uint64(rng_state)
        else:
            seeds[:] = 0
        if use_histogram and parallel:
            gains = np.empty(batch)
            last_bins = np.empty(batch, dtype=np.int64)
            missing_lefts = np.empty(batch, dtype=np.bool_)
            constants = np.empty(batch, dtype=np.bool_)
            bitsets = np.empty((batch, n_words), dtype=np.uint64)
            _evaluate_dense_parallel(
                criterion, features, hist, n_value_bins, is_categorical, missing_bin,
                node_sums, parent_impurity, root_weight, min_samples_leaf, min_weight_leaf,
                use_random, seeds, n_classes, lower, upper, gains, last_bins, missing_lefts,
                constants, bitsets,
            )
            for j in range(batch):
                n_non_constant += not constants[j]
                if gains[j] > best_gain:
                    best_gain = gains[j]
                    best_feature = features[j]
                    best_bin = last_bins[j]
                    best_missing_left = missing_lefts[j]
                    out_bitset[:] = bitsets[j]
        else:
            for j in range(batch):
                f = features[j]
                if use_histogram:
                    n_present = compact_from_histogram(hist[f], n_value_bins[f], missing_bin,
                                                       scratch_bins, scratch_sums, missing)
                else:
                    n_present = compact_from_samples(
                        bin_codes[f], node_stats, sample_indices, start, end, missing_bin,
                        scratch_codes, scratch_bins, scratch_sums, missing,
                    )
                gain, last_left_bin, missing_left, constant = evaluate_feature(
                    criterion, f, is_categorical[f], scratch_bins, scratch_sums, n_present,
                    missing, node_sums, parent_impurity, root_weight, min_samples_leaf,
                    min_weight_leaf, use_random, seeds[j], n_classes, lower, upper, left,
                    right, scratch_scores, bitset,
                )
                n_non_constant += not constant
                if gain > best_gain:
                    best_gain = gain
                    best_feature = f
                    best_bin = last_left_bin
                    best_missing_left = missing_left
                    if is_categorical[f]:
                        out_bitset[:] = bitset
        n_visited += batch
    return best_gain, best_feature, best_bin, best_missing_left
