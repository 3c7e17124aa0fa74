"""The one place where the engine tests call the growers' and split searches' kernels.

The growers, split searches and node tables are being reshaped (issue 19); each wrapper
here takes named arguments and hides one kernel's positional signature, so that a
signature change is fixed in this file alone. Tests never index a node table or call
these kernels themselves.
"""

import numpy as np

import silva.decision_tree
from silva.engine import criteria, gradient_children, gradient_histogram, grower, nodes
from silva.engine import leaf_values as leaf_updates
from silva.engine import partition as partition_module
from silva.engine.cart import BinnedData
from silva.engine.gradient_splitting import N_PARAMS, SCAN_SCRATCH_ROWS, find_best_split
from silva.engine.gradient_splitting import scan_numeric as _gradient_scan_numeric
from silva.engine.histogram import build_histogram, subtract_histogram
from silva.engine.random import seed_from_random_state
from silva.engine.tree import Tree

# The gradient grower's modules, for tests that read or switch one of their knobs with
# monkeypatch (SIXTEEN_LANE_SPLIT; padded_bins, pool_slots_for, BLOCK_ROWS).
PARTITION = partition_module
GRADIENT_HISTOGRAM = gradient_histogram

# ------------------------------------------------------------------ CART grower

# The node-table fields the CART grower fills for every node.
CART_FIELDS = ("left", "right", "feature", "threshold", "missing_left", "is_categorical",
               "impurity", "n_samples", "weighted_n", "depth", "start", "end")
LEAF = nodes.LEAF
UNDEFINED = nodes.UNDEFINED


def grow_cart_tree(X, y, *, criterion="gini", weights=None, categorical=None, max_bins=255,
                   histogram_min_samples, parallel_min_work, max_features=None,
                   splitter="best", random_state=0, max_depth=2**31 - 1, max_leaf_nodes=0,
                   min_samples_leaf=1, center=False, min_significance=1.0):
    """Grow one CART tree as ``DecisionTreeClassifier/Regressor`` does, with the node-size
    thresholds of the split search (``histogram_min_samples``, ``parallel_min_work``)
    chosen by the caller. Returns the grower's ``(table, values, bitsets)``.

    ``center`` subtracts the mean of y as the regressor does for squared errors (off by
    default: integer targets then keep every sum exact).
    """
    n_samples, n_features = X.shape
    is_categorical = np.zeros(n_features, bool) if categorical is None else categorical
    weights = np.ones(n_samples) if weights is None else weights
    code = {**criteria.CLASSIFICATION_CRITERIA, **criteria.REGRESSION_CRITERIA}[criterion]
    if criteria.is_classification(code):
        classes, y_model = np.unique(y, return_inverse=True)
        n_classes = classes.size
        n_values = n_classes
    else:
        y_model = y - np.average(y, weights=weights) if center else y
        n_classes, n_values = 1, 1
    data = BinnedData.from_X(X, is_categorical, max_bins).compiled()
    rules = grower.cart_rules(
        code, n_classes, n_values, max_depth, 2, min_samples_leaf, 0.0, max_leaf_nodes, 0.0,
        n_features if max_features is None else max_features, splitter == "random",
        histogram_min_samples, parallel_min_work, min_significance)
    samples = grower.CartSamples(
        criteria.build_statistics(code, y_model, weights, n_classes),
        np.asarray(y_model, dtype=np.float64), weights,
        np.arange(n_samples, dtype=np.int32),
        seed_from_random_state(np.random.RandomState(random_state)))
    unconstrained = np.zeros(data.bin_codes.shape[0], dtype=np.int8)
    return grower.run_grower(grower.compiled_grower(code), data, rules, samples,
                             unconstrained)


def buffers_reused():
    """A context in which each tree :func:`grow_cart_tree` grows takes the buffers of
    the one before (as a forest's threads do)."""
    return grower.buffers_reused_in_this_thread()


def set_tree_size_thresholds(monkeypatch, *, histogram_min_samples=None,
                             parallel_min_work=None):
    """Make the decision trees fitted in this test switch from summing a node's rows to
    reading a histogram at ``histogram_min_samples`` samples, and to parallel regions at
    ``parallel_min_work`` (samples x features); None keeps a threshold as it is."""
    if histogram_min_samples is not None:
        # Both: classification trees on features of few bins take histograms from
        # FEW_BINS_HISTOGRAM_MIN_SAMPLES samples (silva.decision_tree.histogram_min_samples_for).
        for name in ("HISTOGRAM_MIN_SAMPLES", "FEW_BINS_HISTOGRAM_MIN_SAMPLES"):
            monkeypatch.setattr(silva.decision_tree, name, histogram_min_samples)
    if parallel_min_work is not None:
        monkeypatch.setattr(silva.decision_tree, "PARALLEL_MIN_WORK", parallel_min_work)


def cart_field(table, name):
    """Field ``name`` (one of :data:`CART_FIELDS`) of a CART node table, every node."""
    return table[name]


def cart_tree(growth, n_features, n_classes):
    """The :class:`Tree` made of :func:`grow_cart_tree`'s output."""
    return Tree.from_grower(*growth, n_features, n_classes)


# ------------------------------------------------------------------ CART histograms

def cart_histogram(*, bin_codes, stats, sample_indices, start, end, n_bins, parallel):
    """A new histogram (n_features, n_bins, n_channels) of ``sample_indices[start:end]``."""
    hist = np.full((bin_codes.shape[0], n_bins, stats.shape[1]), np.nan)
    # The grower keeps the channels in the order of sample_indices (its ordered stats).
    build_histogram(hist, bin_codes, stats[sample_indices], sample_indices, start, end,
                    parallel)
    return hist


def subtract_cart_histogram(*, parent, child, parallel):
    """``parent -= child`` in place."""
    subtract_histogram(parent, child, parallel)


# ------------------------------------------------------------------ gradient splitting

def gradient_params(*, l1=0.0, l2=0.0, min_split_gain=0.0, min_child_weight=0.0,
                    min_samples_leaf=0.0, max_delta_step=0.0):
    """The split rules of the second-order search as the kernels read them."""
    from silva.engine import gradient_splitting as gs

    params = np.zeros(N_PARAMS)
    params[gs.L1] = l1
    params[gs.L2] = l2
    params[gs.MIN_SPLIT_GAIN] = min_split_gain
    params[gs.MIN_CHILD_WEIGHT] = min_child_weight
    params[gs.MIN_SAMPLES_LEAF] = min_samples_leaf
    params[gs.MAX_DELTA_STEP] = max_delta_step
    return params


def gradient_scan_numeric(*, hist_f, n_bins, missing_bin, node_sums, params):
    """Best threshold of one numeric feature's (n_bins..., 4) histogram, unconstrained:
    ``(children_score, last_left_bin, missing_go_left, left_sums)``."""
    left = np.zeros(3)
    score, split_bin, missing_left = _gradient_scan_numeric(
        hist_f, n_bins, missing_bin, node_sums, params, -np.inf, np.inf, 0, False, left,
        np.empty((SCAN_SCRATCH_ROWS, hist_f.shape[0])))
    return score, split_bin, missing_left, left


def find_gradient_split(*, hist, n_value_bins, is_categorical, missing_bin, node_sums,
                        params):
    """Best split of a node over all its features, unconstrained: ``(gain, feature,
    last_left_bin, missing_go_left, left_sums)``; ``feature`` is -1 when none passes."""
    n_features, n_bins = hist.shape[:2]
    candidates = np.arange(n_features, dtype=np.int64)
    feature_left = np.zeros((n_features, 3))
    gain, feature, split_bin, missing_left = find_best_split(
        hist, candidates, n_features, np.asarray(n_value_bins, dtype=np.int64),
        np.asarray(is_categorical, dtype=np.uint8), np.zeros(n_features, dtype=np.int8),
        missing_bin, node_sums, params, -np.inf, np.inf, False,
        np.empty(n_features), np.empty(n_features, dtype=np.int64),
        np.empty(n_features, dtype=np.uint8), feature_left,
        np.zeros((n_features, max(1, (n_bins + 63) // 64)), dtype=np.uint64),
        np.empty((SCAN_SCRATCH_ROWS, n_bins)))
    left = feature_left[feature] if feature >= 0 else None
    return gain, feature, split_bin, missing_left, left


# ------------------------------------------------------------------ gradient grower

def make_gradient_workspace(*, bin_codes, n_bins):
    """The gradient grower's buffers, as a dict of named parts."""
    workspace = gradient_histogram.make_workspace(bin_codes, n_bins)
    return dict(codes=workspace.codes, stats=workspace.stats, work_index=workspace.index,
                histograms=workspace.histograms)


def gradient_node_histogram(*, workspace, hist, parent, index, start, end, n_features,
                            subtract, threads, two_lanes, statistics, fill, wide=None):
    """The gradient grower's histogram pass over ``index[start:end]`` (see
    ``node_histogram``); ``statistics``: ``(gradient, hessian, column, weight,
    use_hessian)``; ``wide``: None for the default pass, else the tiled pass of wide data
    (``wide_node_histogram``), compiled with (``"parallel"``) or without (``"serial"``)
    its parallel regions."""
    gradient, hessian, column, weight, use_hessian = statistics
    kernel = (gradient_histogram.node_histogram if wide is None
              else gradient_histogram.wide_node_histogram(wide == "parallel"))
    kernel(
        hist, parent, workspace["histograms"][5:], workspace["codes"], index,
        workspace["stats"], start, end, n_features, subtract, np.int64(threads), two_lanes,
        gradient_histogram.GradientStatistics(gradient, hessian, column, weight,
                                              use_hessian, two_lanes), fill)


def _feature_scan_buffers(n_nodes, n_features, n_bins):
    return (np.full((n_nodes, n_features), np.nan), np.full((n_nodes, n_features), -9),
            np.zeros((n_nodes, n_features), dtype=np.uint8), np.zeros((n_nodes, n_features, 3)),
            np.zeros((n_nodes, n_features, max(1, (n_bins + 63) // 64)), dtype=np.uint64))


def gradient_children_pass(*, workspace, pool, index, start, end, two_lanes, statistics,
                           build, subtract, node_candidates, node_sums, n_value_bins,
                           missing_bin, params, n_parts):
    """``children_pass`` on the two histograms ``pool`` (2, n_features, n_bins, 4): with
    ``build``, ``pool[0]`` := the histogram of ``index[start:end]`` (records already
    filled) and, with ``subtract``, ``pool[1] -= pool[0]``; then node ``p`` scanned on
    ``pool[p]`` over ``node_candidates[p]`` (None: not searched). Returns, per node,
    ``(feature_score, feature_bin, feature_missing_left, feature_left)`` over all
    features (the unscanned ones as initialised: nan, -9, 0, 0)."""
    gradient, hessian, column, weight, use_hessian = statistics
    n_features, n_bins = pool.shape[1:3]
    candidates = np.zeros((2, n_features), dtype=np.int64)
    n_candidates = np.full(2, -1, dtype=np.int64)
    for p, chosen in enumerate(node_candidates):
        if chosen is not None:
            candidates[p, :len(chosen)] = chosen
            n_candidates[p] = len(chosen)
    buffers = _feature_scan_buffers(2, n_features, n_bins)
    gradient_children.children_pass(
        pool[0], pool[1], np.bool_(build), np.bool_(subtract), workspace["codes"], index,
        workspace["stats"], np.int64(start), np.int64(end), np.bool_(two_lanes),
        gradient_histogram.GradientStatistics(gradient, hessian, column, weight,
                                              use_hessian, np.bool_(two_lanes)),
        pool, np.arange(2, dtype=np.int64), candidates, n_candidates,
        np.empty((2, n_features), dtype=np.uint8), np.asarray(n_value_bins, dtype=np.int64),
        np.zeros(n_features, dtype=np.uint8), np.zeros(n_features, dtype=np.int8),
        np.int64(missing_bin), node_sums, params,
        np.array([[-np.inf, np.inf], [-np.inf, np.inf]]), False, *buffers,
        np.int64(n_parts))
    return [tuple(buffer[p] for buffer in buffers[:4]) for p in range(2)]


def gradient_feature_scans(*, hist, candidates, node_sums, n_value_bins, missing_bin,
                           params):
    """``find_best_split``'s scans of ``candidates`` on one node's histogram: ``(
    feature_score, feature_bin, feature_missing_left, feature_left)`` over all features,
    as :func:`gradient_children_pass` returns them."""
    n_features, n_bins = hist.shape[:2]
    buffers = _feature_scan_buffers(1, n_features, n_bins)
    find_best_split(
        hist, np.asarray(candidates, dtype=np.int64), len(candidates),
        np.asarray(n_value_bins, dtype=np.int64), np.zeros(n_features, dtype=np.uint8),
        np.zeros(n_features, dtype=np.int8), missing_bin, node_sums, params, -np.inf,
        np.inf, False, *(buffer[0] for buffer in buffers),
        np.empty((SCAN_SCRATCH_ROWS, n_bins)))
    return tuple(buffer[0] for buffer in buffers[:4])


def partition(*, column, work_index, half, start, end, missing_bin, split_bin, missing_left,
              categorical, bitset, blocks=None):
    """Stable partition of ``work_index[half, start:end]`` into the other half; returns
    how many samples go left. ``blocks``: split by that many threads' blocks
    (``partition_in_blocks``), through the staging row ``work_index[2]``."""
    if blocks is None:
        return partition_module.partition(column, work_index, half, start, end,
                                          missing_bin, split_bin, missing_left, categorical,
                                          bitset)
    return partition_module.partition_in_blocks(column, work_index, half, start, end,
                                                missing_bin, split_bin, missing_left,
                                                categorical, bitset, np.int64(blocks))


def split_block(*, column, index_from, index_to, first, last, missing_bin, split_bin,
                missing_left, compiled=True):
    """One numeric block split (``compiled=False``: its pure-Python form)."""
    block = partition_module._split_block
    kernel = block if compiled else block.py_func
    return kernel(column, index_from, index_to, first, last, np.int64(missing_bin),
                  np.int64(split_bin), np.int64(missing_left), False,
                  np.zeros(1, dtype=np.uint64))


def gradient_leaf_table(*, n_rows, leaf_rows, starts, ends):
    """A gradient node table whose ``leaf_rows`` are leaves holding the sample ranges
    ``[starts, ends)``; every other row is an internal node."""
    table = np.zeros(n_rows, dtype=nodes.GRADIENT_NODE)
    table["left"] = 1
    table["left"][leaf_rows] = nodes.LEAF
    table["start"][leaf_rows] = starts
    table["end"][leaf_rows] = ends
    return table


def add_leaf_values(*, raw, column, sample_indices, table, leaf_values):
    """``raw[s, column] += leaf_values[leaf]`` for every leaf's samples."""
    leaf_updates.add_leaf_values(raw, column, sample_indices, table, leaf_values)
