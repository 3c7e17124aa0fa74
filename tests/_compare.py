"""Node-by-node comparison of a silva tree with a scikit-learn tree, ties aside.

Both libraries pick the split of largest impurity decrease, but when several splits tie
they choose differently: scikit-learn visits features in an order drawn from
``random_state`` and keeps the first best, silva keeps the lowest feature index, and the
two compute the decrease with different rounding. :func:`compare_trees` walks both trees
from the root routing the *training* samples, pairs nodes that hold the same samples, and
sorts every difference into

- ``feature_ties``: same partition of the node's samples, another feature (the subtrees
  are still compared: they hold the same samples; only unseen data may route differently);
- ``gain_ties``: other partitions with equal decrease (rtol 1e-6: regression impurities
  are differences of sums of squares, which lose digits in small nodes); the subtrees are
  not compared;
- ``stop_ties``: one tree splits and the other does not, the split having a decrease of
  zero up to rounding (scikit-learn sometimes splits a pure node whose computed impurity
  is a few ulps above its EPSILON);
- ``threshold_diffs``: same feature and same partition of the training samples, another
  threshold (this only changes unseen data);
- ``mismatches``: other partitions with *different* decreases, or a split of non-zero
  decrease that the other tree does not make; these are real differences;
- ``leaf_value_diffs``: paired leaves with other predicted values;
- ``missing_direction_diffs``: paired splits that send missing values (NaN) to other
  children; for a node that saw missing values the partition already fixes the
  direction, so this concerns nodes that saw none (both libraries promise the child with
  more samples).
"""

from dataclasses import dataclass, field

import numpy as np

TIE_RTOL = 1e-6


def goes_left(tree, node, x):
    """Boolean mask: which of the feature values ``x`` go to the left child of ``node``
    (silva's categorical splits included: a code goes left when its bit is set)."""
    missing = np.isnan(x)
    if getattr(tree, "is_categorical", None) is not None and tree.is_categorical[node]:
        bitset = tree.category_bitsets[node]
        valid = ~missing & (x >= 0) & (x < 64 * bitset.shape[0]) & (x == np.floor(x))
        codes = np.where(valid, x, 0).astype(np.int64)
        bits = (bitset[codes >> 6] >> (codes & 63).astype(np.uint64)) & np.uint64(1)
        return np.where(valid, bits == 1, bool(tree.missing_go_to_left[node]))
    with np.errstate(invalid="ignore"):
        left = x <= tree.threshold[node]
    return np.where(missing, bool(tree.missing_go_to_left[node]), left)


def weighted_decrease(tree, node):
    """``w_t i_t - w_l i_l - w_r i_r`` of an internal node, over the root weight."""
    left, right = tree.children_left[node], tree.children_right[node]
    w, imp = tree.weighted_n_node_samples, tree.impurity
    return (w[node] * imp[node] - w[left] * imp[left] - w[right] * imp[right]) / w[0]


@dataclass
class TreeComparison:
    n_same: int = 0
    feature_ties: list = field(default_factory=list)  # (silva node, sklearn node)
    gain_ties: list = field(default_factory=list)
    stop_ties: list = field(default_factory=list)
    threshold_diffs: list = field(default_factory=list)  # (s node, k node, s thr, k thr)
    mismatches: list = field(default_factory=list)  # (s node, k node, s dec, k dec)
    leaf_value_diffs: list = field(default_factory=list)
    missing_direction_diffs: list = field(default_factory=list)  # (s node, k node)

    @property
    def structure_comparable(self):
        """True when both trees hold the same nodes (n_leaves, depth comparable)."""
        return not (self.gain_ties or self.stop_ties or self.mismatches)

    def unreliable_nodes(self, *, include_feature_ties):
        """(silva nodes, sklearn nodes) below which predictions may differ by ties."""
        pairs = self.gain_ties + self.stop_ties
        if include_feature_ties:
            pairs = pairs + self.feature_ties
        return [p[0] for p in pairs], [p[1] for p in pairs]


def compare_trees(silva_tree, sklearn_tree, X, *, value_rtol=1e-7, value_atol=1e-9):
    """Compare the trees node by node on their training data ``X``."""
    st, kt = silva_tree, sklearn_tree
    scale = max(abs(st.impurity[0]), 1e-300)
    result = TreeComparison()
    stack = [(0, 0, np.arange(X.shape[0]))]
    while stack:
        s, k, rows = stack.pop()
        s_leaf = st.children_left[s] == -1
        k_leaf = kt.children_left[k] == -1
        if s_leaf and k_leaf:
            if not np.allclose(st.value[s], kt.value[k], rtol=value_rtol, atol=value_atol):
                result.leaf_value_diffs.append((s, k, st.value[s], kt.value[k]))
            continue
        if s_leaf or k_leaf:
            decrease = weighted_decrease(kt, k) if s_leaf else weighted_decrease(st, s)
            target = result.stop_ties if abs(decrease) <= 1e-12 * scale else result.mismatches
            target.append((s, k, None if s_leaf else decrease, decrease if s_leaf else None))
            continue
        s_left = goes_left(st, s, X[rows, st.feature[s]])
        k_left = goes_left(kt, k, X[rows, kt.feature[k]])
        if np.array_equal(s_left, k_left):
            if st.missing_go_to_left[s] != kt.missing_go_to_left[k]:
                result.missing_direction_diffs.append((s, k))
            if st.feature[s] != kt.feature[k]:
                result.feature_ties.append((s, k))
            elif st.threshold[s] != kt.threshold[k] or (
                    getattr(st, "is_categorical", None) is not None and st.is_categorical[s]
                    and not np.array_equal(st.category_bitsets[s], kt.category_bitsets[k])):
                result.threshold_diffs.append((s, k, st.threshold[s], kt.threshold[k]))
            else:
                result.n_same += 1
            stack.append((st.children_left[s], kt.children_left[k], rows[s_left]))
            stack.append((st.children_right[s], kt.children_right[k], rows[~s_left]))
            continue
        s_dec, k_dec = weighted_decrease(st, s), weighted_decrease(kt, k)
        if np.isclose(s_dec, k_dec, rtol=TIE_RTOL, atol=1e-12 * scale):
            result.gain_ties.append((s, k))
        else:
            result.mismatches.append((s, k, s_dec, k_dec))
    return result


def rows_through(decision_path, nodes):
    """Mask of the rows whose decision path visits any of ``nodes``."""
    if len(nodes) == 0:
        return np.zeros(decision_path.shape[0], dtype=bool)
    return np.asarray(decision_path[:, list(nodes)].sum(axis=1)).ravel() > 0


def closest_sklearn_tree(silva_model, make_sklearn, X, y, sample_weight=None, n_seeds=8):
    """Fit ``make_sklearn(seed)`` for a few seeds; return (model, comparison) of the one
    whose tie-breaking is closest to silva's.

    With ``max_features=None`` scikit-learn's ``random_state`` only decides ties, so every
    seed gives a valid CART tree; keeping the closest one lets most of the two trees be
    compared. Trees with real mismatches are never preferred.
    """
    best = None
    for seed in range(n_seeds):
        model = make_sklearn(seed).fit(X, y, sample_weight=sample_weight)
        comparison = compare_trees(silva_model.tree_, model.tree_, X)
        n_tie_nodes = len(comparison.unreliable_nodes(include_feature_ties=True)[0])
        key = (len(comparison.mismatches), not comparison.structure_comparable, n_tie_nodes)
        if best is None or key < best[0]:
            best = (key, model, comparison)
    return best[1], best[2]
