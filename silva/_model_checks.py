"""Structural checks of loaded models: a model file's trees are checked before compiled
code walks them.

A model file's checksums detect accidents, not edits: someone who changes an array and
recomputes them has a file that decodes. The prediction kernels trust their trees (no
bounds checks in compiled code), so :mod:`silva.persistence` runs these checks on every
loaded model, and a file that fails one is refused with a :class:`ValueError` naming the
attribute path, the array's member and the node. What is checked:

- every tree's arrays have the dtype, dimensions and length the kernels are compiled
  for (:class:`silva.engine.tree.Tree`, :class:`silva.engine.multiway.MultiwayTree`,
  :class:`silva.engine.ensemble.PackedTrees` and its tree views);
- the children form one tree: a child id is -1 (a leaf) or the id of a later node of
  the same tree, and every node but the root is the child of exactly one node. Since
  children come after their parents, this rules out cycles, shared subtrees and
  unreachable nodes, and every walk from the root ends at a leaf. (silva's growers, the
  cost-complexity pruning and the ID3/C4.5 builders all number children after their
  parent; the engine's depth computations and the packed walk rely on it too.)
- split features lie in ``[0, n_features)``; thresholds of numeric splits are not NaN
  (infinite ones are legitimate: ``x <= inf`` separates the missing values); the node
  values, impurities, weights, branch fractions and interval edges are finite;
  category bitsets are wide enough for the categories of their feature;
- each tree agrees with the estimator that uses it: as many features as the
  estimator's ``n_features_in_``, and as many values per node as its ``n_classes_``
  (classifiers) or one (regressors, gradient boosting), and a packing's output columns
  fit the output the estimator allocates;
- the arrays a quantile regression forest reads at prediction (leaf samples and their
  ranges per node) are within bounds.

Derived arrays that a model file also stores (a tree's cached node depths, a multiway
tree's parents and depths) are rebuilt from the checked arrays instead of trusted.

Not checked: whether the model is a good one. A file that passes can still encode any
tree the format can express (other thresholds, other leaf values).
"""

from __future__ import annotations

import functools
import numbers
import types

import numpy as np

from silva.engine import multiway as mw
from silva.engine.ensemble import (
    CATEGORICAL_BIT,
    FEATURE_MASK,
    MAX_WALK_FEATURES,
    PackedTrees,
    PackedTreeView,
)
from silva.engine.multiway import MultiwayTree
from silva.engine.tree import Tree

INTP = np.dtype(np.intp)
INT64 = np.dtype(np.int64)
INT32 = np.dtype(np.int32)
UINT32 = np.dtype(np.uint32)
UINT64 = np.dtype(np.uint64)
UINT8 = np.dtype(np.uint8)
FLOAT64 = np.dtype(np.float64)
BOOL = np.dtype(np.bool_)

_TREE_KEYS = {"n_features", "n_categories", "n_classes", "n_outputs", "children_left",
              "children_right", "feature", "threshold", "missing_go_to_left",
              "is_categorical", "category_bitsets", "value", "impurity", "n_node_samples",
              "weighted_n_node_samples"}
_TREE_OPTIONAL = {"_node_depth"}  # a cache of Tree.node_depth: dropped, recomputed on use
_MULTIWAY_KEYS = {"n_features", "n_classes", "n_outputs", "kind", "feature", "threshold",
                  "first_branch", "n_branches", "branch_child", "branch_fraction",
                  "missing_child", "value", "impurity", "n_node_samples",
                  "weighted_n_node_samples", "blend_missing", "bin_edges", "n_bin_edges",
                  "value_names", "parent", "parent_branch", "node_depth"}
_PACKED_KEYS = {"n_categories", "_n_nodes", "n_features", "n_classes", "n_values",
                "category_bitsets", "value", "impurity", "n_node_samples",
                "weighted_n_node_samples", "n_trees", "node_offset", "tree_weight",
                "output_column", "walk_fields"}
_WALK_FIELDS = {"threshold": FLOAT64, "left": INT32, "feature_flags": UINT32}
_VIEW_KEYS = {"packed", "t"}


class ModelFileError(ValueError):
    """A model file that decodes but must not be used; the message says where and why."""


class CheckContext:
    """What the checks of one loaded model share.

    ``describe(array)`` names the file member an array came from (e.g.
    ``" (arrays/7.npy)"``), for messages; ``walk_into(obj)`` says whether the graph walk
    looks inside an object (the loader's own, not unpickled foreign objects);
    ``checked_packings`` holds the ids of the packings whose state passed
    :func:`check_packed_state` (the loader keeps those objects alive).
    """

    def __init__(self, describe=None, walk_into=None):
        self.describe = describe or (lambda array: "")
        self.walk_into = walk_into or (lambda obj: True)
        self.checked_packings: set[int] = set()


# ------------------------------------------------------------------ small helpers


def _fail(where, message):
    raise ModelFileError(f"{where}: {message}")


def _int(value, where, low=None, high=None):
    """``value`` as an int (bools refused), within ``[low, high]`` when given."""
    if type(value) is not int and (isinstance(value, bool | np.bool_)
                                   or not isinstance(value, numbers.Integral)):
        _fail(where, f"expected an integer, got {type(value).__name__}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"[{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"
        _fail(where, f"{value} is outside {bounds}")
    return value


def _array(value, where, dtype, ndim, context, length=None):
    """``value`` if it is a C-contiguous ``ndim``-d array of ``dtype`` (first dimension
    ``length`` when given): the types the compiled kernels are built for."""
    if not isinstance(value, np.ndarray):
        _fail(where, f"expected a numpy array, got {type(value).__name__}")
    if value.dtype != dtype or value.ndim != ndim:
        _fail(where + context.describe(value), f"expected a {ndim}-d array of {dtype}, got "
              f"a {value.ndim}-d array of {value.dtype}")
    if not value.flags.c_contiguous:
        _fail(where + context.describe(value), "expected a C-contiguous array")
    if length is not None and value.shape[0] != length:
        _fail(where + context.describe(value), f"has {value.shape[0]} entries, expected "
              f"{length}")
    return value


def _first(mask):
    return int(np.flatnonzero(mask)[0])


def _expect_keys(state, keys, where, optional=frozenset()):
    missing = keys - state.keys()
    if missing:
        _fail(where, f"missing attributes {sorted(missing)}")
    unexpected = state.keys() - keys - optional
    if unexpected:
        _fail(where, f"unexpected attributes {sorted(unexpected)}")


def _check_not_nan(array, where, what, mask):
    """Thresholds may be infinite (``x <= inf`` splits missing values from the rest) but
    not NaN, which no value is below."""
    bad = np.isnan(array) & mask
    if bad.any():
        _fail(where, f"node {_first(bad)}: {what} is NaN")


def _check_finite(array, where, what, mask=None):
    """Every entry of ``array`` (of the nodes in ``mask``, 1-d arrays only) is finite."""
    finite = np.isfinite(array)
    if mask is not None:
        finite |= ~mask
    if not finite.all():
        node = int(np.argwhere(~finite)[0][0])
        _fail(where, f"node {node}: {what} is not finite")


def _tree_structure(left, right, where):
    """Refuse children that do not form one tree rooted at node 0 (see the module
    docstring)."""
    n = left.shape[0]
    ids = np.arange(n)
    leaf = left == -1
    if np.any(leaf & (right != -1)):
        node = _first(leaf & (right != -1))
        _fail(where, f"node {node}: a leaf (left child -1) with right child {right[node]}")
    internal = ~leaf
    bad = internal & ((left <= ids) | (left >= n) | (right <= ids) | (right >= n))
    if bad.any():
        node = _first(bad)
        _fail(where, f"node {node}: children ({left[node]}, {right[node]}) must be -1 (a "
              f"leaf) or ids of later nodes of the tree (at most {n - 1})")
    _single_parents(np.concatenate([left[internal], right[internal]]), n, where)


def _single_parents(children, n, where):
    """Every node but the root is the child of exactly one node (children being later
    than their parents, the root is nobody's child)."""
    count = np.bincount(children, minlength=n)
    bad = count[1:] != 1
    if bad.any():
        node = _first(bad) + 1
        if count[node] == 0:
            _fail(where, f"node {node} is not reached from the root")
        _fail(where, f"node {node} is the child of {count[node]} nodes")


def _check_bitsets(bitsets, categorical, feature, n_categories, where):
    """Categorical splits have a bitset wide enough for their feature's categories
    (``n_categories`` per split node). Bits past them are legitimate: they send
    categories unseen at fit the way of the missing values."""
    width = bitsets.shape[1]
    if not categorical.any():
        return
    nodes = np.flatnonzero(categorical)
    needed = n_categories
    if width == 0:
        _fail(where, f"node {nodes[0]}: a categorical split, but the category bitsets "
              "have no columns")
    too_wide = needed > 64 * width
    if too_wide.any():
        k = _first(too_wide)
        _fail(where, f"node {nodes[k]}: feature {feature[nodes[k]]} has {needed[k]} "
              f"categories, more than the {64 * width} bits of its bitset")


def _check_node_stats(arrays, where):
    """Impurities and weights: not read by prediction, but by feature importances and
    reports, which must not turn into NaN."""
    impurity, n_node_samples, weighted = arrays
    _check_finite(impurity, where, "impurity")
    _check_finite(weighted, where, "weighted_n_node_samples")
    if np.any(weighted < 0):
        _fail(where, f"node {_first(weighted < 0)}: negative weighted_n_node_samples")
    if np.any(n_node_samples < 0):
        _fail(where, f"node {_first(n_node_samples < 0)}: negative n_node_samples")


# ------------------------------------------------------------------ binary trees


def check_tree(tree, where, context):
    """Refuse a :class:`~silva.engine.tree.Tree` the kernels cannot walk safely."""
    state = vars(tree)
    _expect_keys(state, _TREE_KEYS, where, _TREE_OPTIONAL)
    n_features = _int(state["n_features"], f"{where}.n_features", 1)
    n_outputs = _int(state["n_outputs"], f"{where}.n_outputs", 1)

    def array(name, dtype, ndim, length=None):
        return _array(state[name], f"{where}.{name}", dtype, ndim, context, length)

    left = array("children_left", INTP, 1)
    n = left.shape[0]
    if n == 0:
        _fail(where, "the tree has no nodes")
    right = array("children_right", INTP, 1, n)
    feature = array("feature", INTP, 1, n)
    threshold = array("threshold", FLOAT64, 1, n)
    missing_left = array("missing_go_to_left", UINT8, 1, n)
    categorical = array("is_categorical", BOOL, 1, n)
    bitsets = array("category_bitsets", UINT64, 2, n)
    value = array("value", FLOAT64, 3, n)
    if value.shape[1] != n_outputs or value.shape[2] < 1:
        _fail(f"{where}.value{context.describe(value)}",
              f"shape {value.shape}, expected ({n}, n_outputs = {n_outputs}, n_values >= 1)")
    stats = (array("impurity", FLOAT64, 1, n), array("n_node_samples", INTP, 1, n),
             array("weighted_n_node_samples", FLOAT64, 1, n))
    n_categories = array("n_categories", INTP, 1, n_features)
    array("n_classes", INTP, 1)
    if state["n_classes"].shape[0] < 1:
        _fail(f"{where}.n_classes", "is empty")
    if np.any(n_categories < 0):
        _fail(f"{where}.n_categories", "negative category count")

    _tree_structure(left, right, where)
    internal = left != -1
    bad = internal & ((feature < 0) | (feature >= n_features))
    if bad.any():
        node = _first(bad)
        _fail(where, f"node {node}: split feature {feature[node]} is outside [0, "
              f"{n_features})")
    if np.any(missing_left > 1):
        _fail(where, f"node {_first(missing_left > 1)}: missing_go_to_left must be 0 or 1")
    numeric_split = internal & ~categorical
    _check_not_nan(threshold, where, "the split threshold", numeric_split)
    categorical_split = internal & categorical
    _check_bitsets(bitsets, categorical_split, feature,
                   n_categories[feature[categorical_split]], where)
    _check_finite(value, where, "the node value")
    _check_node_stats(stats, where)
    # A cached copy of node_depth would be trusted by decision_path: recompute it instead.
    state.pop("_node_depth", None)
    return n_features, value.shape[1] * value.shape[2]


# ------------------------------------------------------------------ multiway trees


def _depths(parent):
    """Depth of every node from its parent (-1 at the root), by pointer jumping:
    ``log2(depth)`` vectorised rounds instead of one Python step per node."""
    depth = (parent >= 0).astype(np.int64)
    ancestor = parent.copy()
    while np.any(ancestor >= 0):
        has = ancestor >= 0
        up = np.where(has, ancestor, 0)
        depth = np.where(has, depth + depth[up], depth)
        ancestor = np.where(has, ancestor[up], -1)
    return depth


def check_multiway_tree(tree, where, context):
    """Refuse an ID3/C4.5 :class:`~silva.engine.multiway.MultiwayTree` whose walk could
    leave its arrays; rebuild its parents and depths from the checked children."""
    state = vars(tree)
    _expect_keys(state, _MULTIWAY_KEYS, where)
    n_features = _int(state["n_features"], f"{where}.n_features", 1)
    _int(state["n_outputs"], f"{where}.n_outputs", 1, 1)
    if not isinstance(state["blend_missing"], bool):
        _fail(f"{where}.blend_missing", "expected a bool")

    def array(name, dtype, ndim, length=None):
        return _array(state[name], f"{where}.{name}", dtype, ndim, context, length)

    kind = array("kind", INT64, 1)
    n = kind.shape[0]
    if n == 0:
        _fail(where, "the tree has no nodes")
    feature = array("feature", INT64, 1, n)
    threshold = array("threshold", FLOAT64, 1, n)
    first = array("first_branch", INT64, 1, n)
    n_branches = array("n_branches", INT64, 1, n)
    child = array("branch_child", INT64, 1)
    fraction = array("branch_fraction", FLOAT64, 1, child.shape[0])
    missing = array("missing_child", INT64, 1, n)
    value = array("value", FLOAT64, 3, n)
    if value.shape[1] != 1 or value.shape[2] < 1:
        _fail(f"{where}.value{context.describe(value)}",
              f"shape {value.shape}, expected ({n}, 1, n_classes >= 1)")
    stats = (array("impurity", FLOAT64, 1, n), array("n_node_samples", INTP, 1, n),
             array("weighted_n_node_samples", FLOAT64, 1, n))
    edges = array("bin_edges", FLOAT64, 2)
    n_edges = array("n_bin_edges", INT64, 1, edges.shape[0])
    array("n_classes", INTP, 1)
    names = state["value_names"]
    if not isinstance(names, list) or len(names) != n_features or not all(
            item is None or isinstance(item, list | tuple) for item in names):
        _fail(f"{where}.value_names", f"expected a list of {n_features} entries, each None "
              "or a list of names")

    known = (kind == mw.LEAF) | (kind == mw.CATEGORICAL) | (kind == mw.INTERVALS) | (
        kind == mw.THRESHOLD)
    if not known.all():
        _fail(where, f"node {_first(~known)}: unknown node kind {kind[_first(~known)]}")
    internal = np.flatnonzero(kind != mw.LEAF)
    f = feature[internal]
    bad = (f < 0) | (f >= n_features)
    if bad.any():
        node = internal[_first(bad)]
        _fail(where, f"node {node}: split feature {feature[node]} is outside [0, "
              f"{n_features})")
    start, count = first[internal], n_branches[internal]
    bad = (count < 1) | (start < 0) | (start > child.shape[0] - count)
    if bad.any():
        node = internal[_first(bad)]
        _fail(where, f"node {node}: branches {first[node]}.."
              f"{int(first[node]) + int(n_branches[node])}"
              f" are outside the {child.shape[0]} branch entries")
    # Each inner node's branches are its own entries: their ranges follow node order
    # without overlapping, which also bounds the total by the number of entries.
    if np.any(start[1:] < start[:-1] + count[:-1]):
        node = internal[_first(start[1:] < start[:-1] + count[:-1]) + 1]
        _fail(where, f"node {node}: its branch entries overlap another node's")
    node_kind = kind[internal]
    threshold_split = node_kind == mw.THRESHOLD
    if np.any(threshold_split & (count != 2)):
        node = internal[_first(threshold_split & (count != 2))]
        _fail(where, f"node {node}: a threshold split needs 2 branches, has "
              f"{n_branches[node]}")
    mask = np.zeros(n, dtype=bool)
    mask[internal[threshold_split]] = True
    _check_not_nan(threshold, where, "the split threshold", mask)
    interval_split = node_kind == mw.INTERVALS
    if interval_split.any():
        fi = f[interval_split]
        if np.any(fi >= edges.shape[0]):
            node = internal[interval_split][_first(fi >= edges.shape[0])]
            _fail(f"{where}.bin_edges", f"node {node}: no bin edges for feature "
                  f"{feature[node]}")
        used = n_edges[fi]
        # One branch per interval: the walk takes branch "number of edges below x".
        bad = (used < 0) | (used > edges.shape[1])
        bad |= ~bad & (count[interval_split] != used + 1)
        if bad.any():
            node = internal[interval_split][_first(bad)]
            _fail(where, f"node {node}: feature {feature[node]} has {n_edges[feature[node]]}"
                  f" bin edges, which make {int(n_edges[feature[node]]) + 1} branches (has "
                  f"{n_branches[node]}) and at most {edges.shape[1]} edges")
        for j in np.unique(fi):
            row = edges[j, :n_edges[j]]
            if not np.isfinite(row).all() or np.any(row[1:] < row[:-1]):
                _fail(f"{where}.bin_edges{context.describe(edges)}",
                      f"the edges of feature {j} are not finite and increasing")

    # Children: branch entries >= 0 and missing-value children of inner nodes.
    owner = np.repeat(internal, count)
    slots = np.repeat(start - np.cumsum(count) + count, count) + np.arange(count.sum())
    branch_child = child[slots]
    has_child = branch_child >= 0
    ids = np.concatenate([owner[has_child], internal[missing[internal] >= 0]])
    children = np.concatenate([branch_child[has_child], missing[internal][
        missing[internal] >= 0]])
    bad = (children <= ids) | (children >= n)
    if bad.any():
        k = _first(bad)
        _fail(where, f"node {ids[k]}: child {children[k]} must be a later node of the tree "
              f"(at most {n - 1})")
    _single_parents(children, n, where)
    fractions = fraction[slots]
    if not np.isfinite(fractions).all() or np.any(fractions < 0):
        node = owner[_first(~np.isfinite(fractions) | (fractions < 0))]
        _fail(where, f"node {node}: a branch fraction is negative or not finite")
    _check_finite(value, where, "the node value")
    _check_node_stats(stats, where)

    # Parents, the branch leading to each node, depths: derived, so rebuilt.
    parent = np.full(n, -1, dtype=np.int64)
    parent_branch = np.full(n, -1, dtype=np.int64)
    branch_index = slots - np.repeat(start, count)
    parent[branch_child[has_child]] = owner[has_child]
    parent_branch[branch_child[has_child]] = branch_index[has_child]
    with_missing = internal[missing[internal] >= 0]
    parent[missing[with_missing]] = with_missing
    state["parent"], state["parent_branch"] = parent, parent_branch
    state["node_depth"] = _depths(parent)
    return n_features, value.shape[2]


# ------------------------------------------------------------------ packed trees


def check_packed_state(state, where, context):
    """Refuse the state of a :class:`~silva.engine.ensemble.PackedTrees` before its
    ``__setstate__`` builds the walk records from it."""
    if not isinstance(state, dict):
        _fail(where, "expected a dict of attributes")
    # tree_outputs: multi-output trees (absent from files written before them).
    _expect_keys(state, _PACKED_KEYS, where, {"tree_outputs"})
    n_features = _int(state["n_features"], f"{where}.n_features", 1, MAX_WALK_FEATURES)
    n_values = _int(state["n_values"], f"{where}.n_values", 1)
    tree_outputs = _int(state.get("tree_outputs", 1), f"{where}.tree_outputs", 1, n_values)
    if n_values % tree_outputs:
        _fail(f"{where}.n_values", f"{n_values} values per node do not split into "
              f"tree_outputs = {tree_outputs} outputs")
    n_trees = _int(state["n_trees"], f"{where}.n_trees", 1)

    def array(name, dtype, ndim, length=None, value=None):
        return _array(state[name] if value is None else value, f"{where}.{name}", dtype,
                      ndim, context, length)

    offset = array("node_offset", INT64, 1, n_trees + 1)
    sizes = np.diff(offset)
    if offset[0] != 0 or np.any(sizes < 1):
        _fail(f"{where}.node_offset{context.describe(offset)}",
              "must start at 0 and grow by at least one node per tree")
    fields = state["walk_fields"]
    if not isinstance(fields, dict) or set(fields) != set(_WALK_FIELDS):
        _fail(f"{where}.walk_fields", f"expected a dict of {sorted(_WALK_FIELDS)}")
    left = array("walk_fields['left']", INT32, 1, value=fields["left"])
    n = left.shape[0]
    if offset[-1] != n:
        _fail(f"{where}.node_offset{context.describe(offset)}",
              f"ends at {offset[-1]}, but the trees have {n} nodes")
    _int(state["_n_nodes"], f"{where}._n_nodes", n, n)
    threshold = array("walk_fields['threshold']", FLOAT64, 1, n, fields["threshold"])
    flags = array("walk_fields['feature_flags']", UINT32, 1, n, fields["feature_flags"])
    value = array("value", FLOAT64, 2, n)
    if value.shape[1] != n_values:
        _fail(f"{where}.value{context.describe(value)}",
              f"has {value.shape[1]} columns, expected n_values = {n_values}")
    bitsets = array("category_bitsets", UINT64, 2, n)
    stats = (array("impurity", FLOAT64, 1, n), array("n_node_samples", INTP, 1, n),
             array("weighted_n_node_samples", FLOAT64, 1, n))
    weight = array("tree_weight", FLOAT64, 1, n_trees)
    if not np.isfinite(weight).all():
        _fail(f"{where}.tree_weight", f"tree {_first(~np.isfinite(weight))}: not finite")
    column = array("output_column", INT64, 1, n_trees)
    if np.any(column < 0):
        _fail(f"{where}.output_column", f"tree {_first(column < 0)}: negative column")
    array("n_classes", INTP, 1)
    categories = state["n_categories"]
    if not isinstance(categories, list) or len(categories) != n_trees:
        _fail(f"{where}.n_categories", f"expected a list of {n_trees} arrays")
    for t, item in enumerate(categories):
        item = _array(item, f"{where}.n_categories[{t}]", INTP, 1, context, n_features)
        if np.any(item < 0):
            _fail(f"{where}.n_categories[{t}]", "negative category count")

    # Structure, tree by tree at once: local ids, children left and left + 1.
    tree_of = np.repeat(np.arange(n_trees), sizes)
    local = np.arange(n) - offset[tree_of]
    leaf = left == -1
    internal = ~leaf
    size = sizes[tree_of]
    bad = internal & ((left <= local) | (left.astype(np.int64) + 1 >= size))
    if bad.any():
        k = _first(bad)
        _fail(where, f"tree {tree_of[k]}, node {local[k]}: children ({left[k]}, "
              f"{int(left[k]) + 1}) must be -1 (a leaf) or ids of later nodes of the tree (at "
              f"most {size[k] - 1})")
    global_left = offset[tree_of[internal]] + left[internal]
    count = np.bincount(np.concatenate([global_left, global_left + 1]), minlength=n)
    count[offset[:-1]] += 1  # each root: nobody's child, counted as reached
    if np.any(count != 1):
        k = _first(count != 1)
        what = ("is not reached from the root" if count[k] == 0
                else f"is the child of {count[k]} nodes")
        _fail(where, f"tree {tree_of[k]}, node {local[k]} {what}")
    feature = (flags & FEATURE_MASK).astype(np.int64)
    bad = internal & (feature >= n_features)
    if bad.any():
        k = _first(bad)
        _fail(where, f"tree {tree_of[k]}, node {local[k]}: split feature {feature[k]} is "
              f"outside [0, {n_features})")
    categorical = internal & (((flags >> CATEGORICAL_BIT) & 1) != 0)
    _check_not_nan(threshold, where, "the split threshold (packed row)",
                   internal & ~categorical)
    if categorical.any():
        per_tree = np.stack(categories)
        _check_bitsets(bitsets, categorical, feature,
                       per_tree[tree_of[categorical], feature[categorical]], where)
    _check_finite(value, where, "the node value (packed row)")
    _check_node_stats(stats, where)


def check_view_state(state, where):
    """A :class:`~silva.engine.ensemble.PackedTreeView` is stored as its packing and its
    tree number only; its ``__setstate__`` slices the packing."""
    if not isinstance(state, dict):
        _fail(where, "expected a dict of attributes")
    _expect_keys(state, _VIEW_KEYS, where)


def check_view(view, where, context):
    """A :class:`~silva.engine.ensemble.PackedTreeView`: tree ``t`` of a checked packing."""
    state = vars(view)
    packed, t = state.get("_packed"), state.get("_t")
    if not isinstance(packed, PackedTrees) or id(packed) not in context.checked_packings:
        _fail(where, "a tree view whose packing was not loaded before it")
    _int(t, f"{where}.t", 0, packed.n_trees - 1)
    return packed.n_features, packed.n_values


# ------------------------------------------------------------------ estimators


@functools.cache
def _kind_of(cls):
    """Which of the estimator families with special checks ``cls`` belongs to."""
    from silva.adaboost import AdaBoostClassifier, _BaseAdaBoost
    from silva.bagging import BaggingClassifier, BaseBagging
    from silva.boosting import BaseGradientBoosting
    from silva.forest import BaseForest
    from silva.stacking import StackingClassifier, _BaseStacking
    from silva.voting import VotingClassifier, _BaseVoting

    return {
        "adaboost": issubclass(cls, _BaseAdaBoost),
        "boosting": issubclass(cls, BaseGradientBoosting),
        "forest": issubclass(cls, BaseForest),
        # ensembles of whole estimators, and those whose members learn class codes
        "meta": issubclass(cls, _BaseAdaBoost | BaseBagging | _BaseStacking | _BaseVoting),
        "class_codes": issubclass(cls, AdaBoostClassifier | BaggingClassifier
                                  | StackingClassifier | VotingClassifier),
    }


def _is_boosting(owner):
    return _kind_of(type(owner))["boosting"]


def _is_forest(owner):
    return _kind_of(type(owner))["forest"]


def _is_meta_ensemble(owner):
    return _kind_of(type(owner))["meta"]


def _check_bagging_draws(state, n_members, where):
    """``_fit_signature`` (rows, columns at fit), ``_draw_sizes`` (rows and columns per
    member) and one seed per member; returns the columns per member."""
    signature, sizes, seeds = (state.get("_fit_signature"), state.get("_draw_sizes"),
                               state.get("_seeds"))
    if not (isinstance(signature, tuple) and len(signature) == 2
            and isinstance(sizes, tuple) and len(sizes) == 2):
        _fail(where, "expected _fit_signature and _draw_sizes as pairs of integers")
    _int(signature[0], f"{where}._fit_signature[0]", 1)
    _int(signature[1], f"{where}._fit_signature[1]", state["n_features_in_"],
         state["n_features_in_"])
    _int(sizes[0], f"{where}._draw_sizes[0]", 1)
    columns = _int(sizes[1], f"{where}._draw_sizes[1]", 1)
    if not state.get("bootstrap_features") and columns > state["n_features_in_"]:
        _fail(f"{where}._draw_sizes[1]", f"draws {columns} of {state['n_features_in_']} "
              "columns without replacement")
    if not isinstance(seeds, list) or len(seeds) != n_members:
        _fail(f"{where}._seeds", f"expected one seed for each of the {n_members} members")
    for i, seed in enumerate(seeds):
        _int(seed, f"{where}._seeds[{i}]", 0, 2 ** 32 - 1)
    return columns


def _members_learn_class_codes(owner):
    """Classifier ensembles whose members are fitted on class codes ``0..K-1``."""
    return _kind_of(type(owner))["class_codes"]


def _expected_values(owner):
    """Values per node of the trees ``owner`` predicts with: one per class for a
    classifier's trees, one for regressors and for gradient boosting's trees; a
    multi-output tree's per output (a classifier's padded to its largest class count)."""
    if _is_boosting(owner):
        return 1
    n_outputs = vars(owner).get("n_outputs_", 1)
    if isinstance(n_outputs, int) and n_outputs > 1:
        if "n_classes_" not in vars(owner):
            return n_outputs
        return n_outputs * int(np.max(vars(owner)["n_classes_"]))
    if "n_classes_" not in vars(owner):
        return 1
    return vars(owner)["n_classes_"]


def check_estimator(owner, where, context):
    """The fitted attributes of ``owner`` that prediction indexes with: the number of
    features and classes, the classes, feature names and the category encoder."""
    state = vars(owner)
    n_features = _int(state["n_features_in_"], f"{where}.n_features_in_", 1)
    n_outputs = state.get("n_outputs_", 1)
    if not isinstance(n_outputs, int) or n_outputs < 1:
        _fail(f"{where}.n_outputs_", f"expected an int >= 1, got {n_outputs!r}")
    if n_outputs > 1 and ("classes_" in state or "n_classes_" in state):
        # A multi-output classifier: one array of classes per output.
        classes = state.get("classes_")
        counts = state.get("n_classes_")
        if (not isinstance(classes, list) or len(classes) != n_outputs or not all(
                isinstance(c, np.ndarray) and c.ndim == 1 and c.size for c in classes)):
            _fail(f"{where}.classes_", f"expected a list of {n_outputs} non-empty 1-d "
                  "arrays of classes")
        if counts is None or np.shape(counts) != (n_outputs,) or list(
                np.asarray(counts)) != [c.shape[0] for c in classes]:
            _fail(f"{where}.n_classes_", "expected the number of classes of each output")
    elif "classes_" in state or "n_classes_" in state:
        classes = state.get("classes_")
        if not isinstance(classes, np.ndarray) or classes.ndim != 1 or classes.size == 0:
            _fail(f"{where}.classes_", "expected a non-empty 1-d array of classes")
        if "n_classes_" in state:
            _int(state["n_classes_"], f"{where}.n_classes_", classes.shape[0],
                 classes.shape[0])
    names = state.get("feature_names_in_")
    if names is not None and (not isinstance(names, np.ndarray)
                              or names.shape != (n_features,)):
        _fail(f"{where}.feature_names_in_", f"expected an array of {n_features} names")
    mask = state.get("is_categorical_")
    if mask is not None:
        _array(mask, f"{where}.is_categorical_", BOOL, 1, context, n_features)
    encoder = state.get("_encoder")
    if encoder is not None:
        categories = getattr(encoder, "categories_", None)
        if not isinstance(categories, dict) or not all(
                isinstance(j, int) and 0 <= j < n_features and isinstance(c, np.ndarray)
                and c.ndim == 1 for j, c in categories.items()):
            _fail(f"{where}._encoder.categories_", "expected a dict of column positions "
                  f"in [0, {n_features}) to arrays of categories")
    if _members_learn_class_codes(owner):
        _check_member_classes(owner, where)
    if _is_meta_ensemble(owner):
        _check_member_features(owner, where, context)
    if _kind_of(type(owner))["adaboost"]:
        _check_adaboost_weights(owner, where, context)
    if _is_boosting(owner) and "_packed" in state:
        _check_boosting(owner, where, context)
    if _is_forest(owner) and "_packed" in state:
        _check_forest(owner, where, context)


def _check_adaboost_weights(owner, where, context):
    """AdaBoost combines its members with one weight each (its prediction pairs them
    up): ``estimator_weights_`` and ``estimator_errors_`` hold one finite number per
    member."""
    state = vars(owner)
    members = state.get("estimators_")
    if not isinstance(members, list | tuple):
        return
    for name in ("estimator_weights_", "estimator_errors_"):
        if name in state:
            values = _array(state[name], f"{where}.{name}", FLOAT64, 1, context,
                            len(members))
            if not np.isfinite(values).all():
                _fail(f"{where}.{name}", f"member {_first(~np.isfinite(values))}'s entry "
                      "is not finite")


def _check_member_features(owner, where, context):
    """Members see the ensemble's columns, or for bagging the columns it drew for them
    (``estimators_features_``, which must lie within the ensemble's)."""
    state = vars(owner)
    n_features = state["n_features_in_"]
    members = state.get("estimators_")
    if not isinstance(members, list | tuple):
        return
    subsets = state.get("estimators_features_")
    if subsets is not None and (not isinstance(subsets, list | tuple)
                                or len(subsets) != len(members)):
        _fail(f"{where}.estimators_features_", f"expected one column subset for each of the "
              f"{len(members)} members")
    drawn = n_features
    if "_draw_sizes" in state:
        # silva's bagging redraws each member's columns from its seed and these sizes.
        drawn = _check_bagging_draws(state, len(members), where)
    for i, member in enumerate(members):
        expected = drawn
        if subsets is not None:
            columns = subsets[i]
            if not isinstance(columns, np.ndarray) or columns.ndim != 1 or \
                    columns.dtype.kind not in "iu" or np.any(
                    (columns < 0) | (columns >= n_features)):
                _fail(f"{where}.estimators_features_[{i}]", f"expected column indices in "
                      f"[0, {n_features})")
            expected = columns.shape[0]
        member_features = vars(member).get("n_features_in_") if hasattr(
            member, "__dict__") else None
        if member_features is not None and member_features != expected:
            _fail(f"{where}.estimators_[{i}]", f"n_features_in_ = {member_features}, but "
                  f"it is given {expected} columns")


def _check_member_classes(owner, where):
    """The ensemble indexes its class columns with its members' classes: they must be
    codes of its own classes."""
    state = vars(owner)
    n_classes = len(state.get("classes_", ()))
    members = state.get("estimators_")
    members = list(members) if isinstance(members, list | tuple) else []
    members.append(state.get("final_estimator_"))
    for i, member in enumerate(members):
        classes = getattr(member, "classes_", None) if hasattr(member, "__dict__") else None
        if classes is None:
            continue
        name = f"{where}.estimators_[{i}]" if i < len(members) - 1 else \
            f"{where}.final_estimator_"
        classes = np.asarray(classes)
        if classes.dtype.kind not in "iu" or classes.ndim != 1 or np.any(
                (classes < 0) | (classes >= n_classes)):
            _fail(f"{name}.classes_", f"expected class codes in [0, {n_classes}) of the "
                  "ensemble's classes")


def _packing(owner, where):
    packed = vars(owner)["_packed"]
    if not isinstance(packed, PackedTrees):
        _fail(f"{where}._packed", f"expected packed trees, got {type(packed).__name__}")
    return packed


def _check_boosting(owner, where, context):
    """Raw predictions start from ``init_raw_`` (one column per output) and each tree of
    iteration ``i`` adds to column ``t % K``: the packing must match."""
    state = vars(owner)
    packed = _packing(owner, where)
    init = _array(state.get("init_raw_"), f"{where}.init_raw_", FLOAT64, 1, context)
    if not np.isfinite(init).all() or init.shape[0] < 1:
        _fail(f"{where}.init_raw_", "expected finite initial predictions")
    per_iteration = _int(state.get("_n_trees_per_iteration"),
                         f"{where}._n_trees_per_iteration", init.shape[0], init.shape[0])
    n_iter = _int(state.get("n_iter_"), f"{where}.n_iter_", 1)
    if packed.n_trees != n_iter * per_iteration:
        _fail(f"{where}._packed", f"holds {packed.n_trees} trees, expected n_iter_ x "
              f"trees per iteration = {n_iter * per_iteration}")
    if packed.n_values != 1 or not np.array_equal(
            packed.output_column, np.tile(np.arange(per_iteration), n_iter)):
        _fail(f"{where}._packed", "its output columns do not match the trees per iteration")


def _check_forest(owner, where, context):
    state = vars(owner)
    packed = _packing(owner, where)
    if not np.all(packed.output_column == 0) or packed.n_values != _expected_values(owner):
        _fail(f"{where}._packed", f"expected {_expected_values(owner)} values per node in "
              "output column 0")
    if "_leaf_offset" in state:
        _check_quantile_arrays(state, packed, where, context)


def _check_quantile_arrays(state, packed, where, context):
    """What ``predict_quantiles`` reads: per tree a block of leaf samples, per packed
    node its range in the block (non-empty at leaves), and the training targets."""
    n_trees, n = packed.n_trees, packed.node_offset[-1]
    y = _array(state.get("_y_train"), f"{where}._y_train", FLOAT64,
               2 if state.get("n_outputs_", 1) > 1 else 1, context)
    samples = _array(state.get("_leaf_samples"), f"{where}._leaf_samples", INT32, 1, context)
    weights = _array(state.get("_leaf_weights"), f"{where}._leaf_weights", FLOAT64, 1,
                     context, samples.shape[0])
    offset = _array(state.get("_leaf_offset"), f"{where}._leaf_offset", INT64, 1, context,
                    n_trees + 1)
    start = _array(state.get("_node_start"), f"{where}._node_start", INT32, 1, context, n)
    end = _array(state.get("_node_end"), f"{where}._node_end", INT32, 1, context, n)
    if not np.isfinite(y).all():
        _fail(f"{where}._y_train", "not finite")
    if np.any((samples < 0) | (samples >= y.shape[0])):
        _fail(f"{where}._leaf_samples", f"a sample id outside [0, {y.shape[0]})")
    if not np.isfinite(weights).all() or np.any(weights <= 0):
        _fail(f"{where}._leaf_weights", "expected positive finite weights")
    block = np.diff(offset)
    if offset[0] != 0 or np.any(block < 0) or offset[-1] != samples.shape[0]:
        _fail(f"{where}._leaf_offset", f"must rise from 0 to {samples.shape[0]}")
    sizes = np.diff(packed.node_offset)
    size = np.repeat(block, sizes)
    # A leaf's walk record leads back to itself (see silva.engine.ensemble.WALK_DTYPE).
    leaf = packed.walk["left"] < np.arange(n) - np.repeat(packed.node_offset[:-1], sizes)
    bad = (start < 0) | (end < start) | (end > size) | (leaf & (end == start))
    if bad.any():
        _fail(f"{where}._node_start/_node_end", f"packed node {_first(bad)}: leaf-sample "
              "range out of bounds or empty at a leaf")


def _check_owner(tree_shape, owner, where, owner_where):
    """A tree agrees with the estimator that predicts with it."""
    if owner is None:
        return
    n_features, n_values = tree_shape
    expected = vars(owner)["n_features_in_"]
    if n_features != expected:
        _fail(where, f"the tree has {n_features} features, but {owner_where} has "
              f"n_features_in_ = {expected}")
    values = _expected_values(owner)
    if n_values != values:
        _fail(where, f"the tree has {n_values} values per node, but {owner_where} needs "
              f"{values}")


# ------------------------------------------------------------------ the object graph


@functools.cache
def _methods_and_properties(cls):
    """Names under which ``cls`` (through its MRO) defines a function or property."""
    names, seen = set(), set()
    for klass in cls.__mro__:
        for name, attribute in vars(klass).items():
            if name in seen:
                continue
            seen.add(name)
            if isinstance(attribute, types.FunctionType | staticmethod | classmethod
                          | property):
                names.add(name)
    return frozenset(names)


def check_state_keys(cls, state, where):
    """Refuse instance attributes that would hide a method or property of ``cls``
    (``predict = 3`` in a file would turn a call into a TypeError)."""
    for key in state:
        if not isinstance(key, str) or not key.isidentifier() or key.startswith("__"):
            _fail(where, f"attribute name {key!r} is not allowed")
        if key in _methods_and_properties(cls):
            _fail(where, f"attribute {key!r} would hide {cls.__name__}.{key}")


def check_model(model, context):
    """Walk everything reachable from ``model`` and check each tree, packing and
    estimator once, and each tree against every estimator it is reachable from (a
    shared tree must suit all of them)."""
    shapes: dict[int, tuple] = {}
    checked_owners: set[int] = set()
    seen: set[tuple[int, int]] = set()
    keep_alive = []
    stack = [(model, "model", None, "")]
    while stack:
        value, where, owner, owner_where = stack.pop()
        key = (id(value), id(owner))
        if key in seen or value is None or isinstance(value, str | bytes | int | float):
            continue
        seen.add(key)
        keep_alive.append(value)
        tree_shape = None
        if isinstance(value, PackedTreeView):
            tree_shape = check_view(value, where, context)
        elif isinstance(value, Tree):
            if id(value) not in shapes:
                shapes[id(value)] = check_tree(value, where, context)
            tree_shape = shapes[id(value)]
        elif isinstance(value, MultiwayTree):
            if id(value) not in shapes:
                shapes[id(value)] = check_multiway_tree(value, where, context)
            tree_shape = shapes[id(value)]
        elif isinstance(value, PackedTrees):
            if id(value) not in context.checked_packings:
                _fail(where, "packed trees that were not checked")
            if owner is not None and value.n_features != vars(owner)["n_features_in_"]:
                _fail(where, f"the packed trees have {value.n_features} features, but "
                      f"{owner_where} has n_features_in_ = {vars(owner)['n_features_in_']}")
            continue
        if tree_shape is not None:
            _check_owner(tree_shape, owner, where, owner_where)
            continue
        if isinstance(value, list | tuple | set | frozenset):
            for i, item in enumerate(value):
                stack.append((item, f"{where}[{i}]", owner, owner_where))
        elif isinstance(value, dict):
            for name, item in value.items():
                stack.append((item, f"{where}[{name!r}]", owner, owner_where))
        elif isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                for i, item in enumerate(value.ravel()):
                    stack.append((item, f"{where}[{i}]", owner, owner_where))
        elif hasattr(value, "__dict__") and not isinstance(value, type) and \
                context.walk_into(value):
            state = vars(value)
            if "n_features_in_" in state:
                if id(value) not in checked_owners:
                    check_estimator(value, where, context)
                    checked_owners.add(id(value))
                owner, owner_where = value, where
            for name, item in state.items():
                stack.append((item, f"{where}.{name}", owner, owner_where))
