"""Criteria: per-sample statistic channels, and the scores computed from their sums.

A tree never looks at a sample's target directly while it searches for splits: it sums
*statistic channels* per (feature, bin) and scores candidate children from those sums.
Channel 0 always counts samples (so ``min_samples_leaf`` is counted in samples, as in
CART); the others depend on the task:

=======================  ====================================================
criterion                channels after the count
=======================  ====================================================
gini, entropy,           ``w * [y == k]`` for each class k (weighted class
misclassification,       counts; their sum is the node weight)
twoing, gain_ratio
squared_error,           ``w``, ``w * y``, ``w * y**2``
friedman_mse,
absolute_error
poisson                  ``w``, ``w * y``, ``w * y * log(y)``
=======================  ====================================================

Impurities follow Breiman et al. (1984, ch. 4) and scikit-learn's definitions, so that
impurities, improvements and feature importances can be compared number for number:

- gini ``1 - sum_k p_k**2``; entropy ``-sum_k p_k log2 p_k``; misclassification
  ``1 - max_k p_k`` (the 0-1 loss of the lectures);
- twoing and gain_ratio are *split* scores, not node impurities. A twoing tree picks
  the split of largest twoing value ``p_L p_R / 4 * (sum_k |p(k|L) - p(k|R)|)**2``
  (Breiman et al. 1984, sec. 4.3) and reports the gini index as each node's impurity;
  a gain-ratio tree picks the largest information gain divided by the split
  information ``-p_L log2 p_L - p_R log2 p_R`` of the binary split (Quinlan 1986, 1993)
  and reports the entropy. Improvements (``min_impurity_decrease``, best-first order,
  feature importances) are then the weighted gini or entropy decrease of the chosen
  split;
- squared_error: the weighted variance; friedman_mse: the same impurity, but a split's
  improvement is Friedman's (2001, eq. 35) ``w_l w_r (mean_l - mean_r)**2 / w`` over the
  root weight ``W`` (equal to squared_error's improvement in exact arithmetic);
- poisson: half the mean Poisson deviance ``sum w (y log(y / mean) - y + mean) / sum w``;
- absolute_error: the mean absolute deviation from the weighted median. It cannot be read
  off channel sums; :mod:`silva.engine.splitting` computes it from order statistics and
  uses the channels only for totals.

A split's *improvement* is scikit-learn's weighted impurity decrease
``w / W * (i - w_l / w * i_l - w_r / w * i_r)`` (``W`` the root weight), the quantity
that ``min_impurity_decrease`` bounds. Split search ranks candidates by a cheaper
*proxy* of it (below). Adding a criterion means adding a code, its branches in
:func:`impurity` and :func:`leaf_value`, and its proxy, around which
:mod:`silva.engine.splitting` compiles its scans; the grower does not change.
"""

import numba as nb
import numpy as np

GINI = 0
ENTROPY = 1
MISCLASSIFICATION = 2
TWOING = 3
GAIN_RATIO = 4
SQUARED_ERROR = 10
FRIEDMAN_MSE = 11
ABSOLUTE_ERROR = 12
POISSON = 13

CLASSIFICATION_CRITERIA = {
    "gini": GINI,
    "entropy": ENTROPY,
    "log_loss": ENTROPY,
    "misclassification": MISCLASSIFICATION,
    "twoing": TWOING,
    "gain_ratio": GAIN_RATIO,
}
REGRESSION_CRITERIA = {
    "squared_error": SQUARED_ERROR,
    "friedman_mse": FRIEDMAN_MSE,
    "absolute_error": ABSOLUTE_ERROR,
    "poisson": POISSON,
}

# Below this, a node is pure, and a Poisson child's mean counts as zero (scikit-learn's
# EPSILON, so that the two libraries stop at the same nodes).
EPSILON = np.finfo(np.float64).eps
# Rounding of a sum of n terms found as a difference of two accumulated sums, in ulps of
# the larger: a bound generous enough for the sums a node accumulates over its bins.
_SUBTRACTION_ULPS = 16.0
_LOG_2 = np.log(2.0)


@nb.njit(cache=True, inline="always")
def _zero_poisson_sum(sums, parent_sum=0.0):
    """Whether a Poisson node's target sum counts as zero: ``sum w y <= EPSILON`` as in
    scikit-learn, with EPSILON taken in the node's mean sample weight ``sum w / n`` (1
    without weights, so the same test), so that rescaling every weight by one constant
    does not change which nodes it flags. A child's sum found as its parent's minus its
    sibling's (``parent_sum`` > 0) is zero up to that subtraction's rounding, a few ulps
    of ``parent_sum``: a child of zero targets must never predict zero
    (scikit-learn's test_poisson_zero_nodes)."""
    return sums[2] <= (EPSILON * (sums[1] / max(sums[0], 1.0))
                       + _SUBTRACTION_ULPS * EPSILON * parent_sum)


def is_classification(criterion):
    return criterion < SQUARED_ERROR


def n_channels(criterion, n_classes):
    """Number of statistic channels, the count channel included."""
    return 1 + n_classes if is_classification(criterion) else 4


def build_statistics(criterion, y, sample_weight, n_classes):
    """The (n_samples, n_channels) statistic matrix of the table above.

    ``y`` holds class indices 0..n_classes-1 for classification, real targets otherwise;
    ``sample_weight`` is already multiplied by any class weight.
    """
    n_samples = y.shape[0]
    stats = np.zeros((n_samples, n_channels(criterion, n_classes)))
    stats[:, 0] = 1.0
    if is_classification(criterion):
        stats[np.arange(n_samples), 1 + y.astype(np.intp)] = sample_weight
        return stats
    stats[:, 1] = sample_weight
    stats[:, 2] = sample_weight * y
    if criterion == POISSON:
        positive = y > 0
        stats[positive, 3] = sample_weight[positive] * y[positive] * np.log(y[positive])
    else:
        stats[:, 3] = sample_weight * y * y
    return stats


@nb.njit(cache=True, inline="always")
def node_weight(criterion, sums):
    """Total sample weight of a node from its channel sums."""
    if criterion < SQUARED_ERROR:
        total = 0.0
        for k in range(1, sums.shape[0]):
            total += sums[k]
        return total
    return sums[1]


@nb.njit(cache=True)
def impurity(criterion, sums):
    """Impurity of a node from its channel sums (absolute_error: see module docstring)."""
    weight = node_weight(criterion, sums)
    if weight <= 0.0:
        return 0.0
    if criterion == GINI or criterion == TWOING:
        squares = 0.0
        for k in range(1, sums.shape[0]):
            p = sums[k] / weight
            squares += p * p
        return 1.0 - squares
    if criterion == ENTROPY or criterion == GAIN_RATIO:
        entropy = 0.0
        for k in range(1, sums.shape[0]):
            if sums[k] > 0.0:
                p = sums[k] / weight
                entropy -= p * np.log(p)
        return entropy / _LOG_2
    if criterion == MISCLASSIFICATION:
        largest = 0.0
        for k in range(1, sums.shape[0]):
            largest = max(largest, sums[k])
        return 1.0 - largest / weight
    if criterion == POISSON:
        if _zero_poisson_sum(sums):
            return 0.0
        return (sums[3] - sums[2] * np.log(sums[2] / weight)) / weight
    # squared_error, friedman_mse (and absolute_error's fallback): weighted variance.
    mean = sums[2] / weight
    return max(sums[3] / weight - mean * mean, 0.0)


@nb.njit(cache=True)
def improvement(criterion, parent, left, right, parent_impurity, root_weight):
    """Weighted impurity decrease of splitting ``parent`` into ``left`` and ``right``.

    Returns ``(improvement, left_impurity, right_impurity)``; ``-inf`` marks a split the
    criterion forbids (a Poisson child whose mean is zero).
    """
    weight = node_weight(criterion, parent)
    left_weight = node_weight(criterion, left)
    right_weight = node_weight(criterion, right)
    if criterion == POISSON and (_zero_poisson_sum(left, parent[2])
                                 or _zero_poisson_sum(right, parent[2])):
        return -np.inf, 0.0, 0.0
    left_impurity = impurity(criterion, left)
    right_impurity = impurity(criterion, right)
    if criterion == FRIEDMAN_MSE:
        # Friedman's improvement over the root weight W: algebraically the squared-error
        # decrease w / W * (i - w_l / w i_l - w_r / w i_r), in the units that
        # min_impurity_decrease bounds (as in scikit-learn, where friedman_mse is now
        # squared_error), computed from the children's means without cancellation.
        diff = right_weight * left[2] - left_weight * right[2]
        return (diff * diff / (left_weight * right_weight * weight) / root_weight,
                left_impurity, right_impurity)
    decrease = (
        parent_impurity
        - left_weight / weight * left_impurity
        - right_weight / weight * right_impurity
    )
    return weight / root_weight * decrease, left_impurity, right_impurity


# Proxy improvements ``proxy(left, parent, min_weight)``: one small function per criterion.
# ``left`` holds the left child's channel sums (the right child's are ``parent - left``).
# For a fixed parent, ``w_l i_l + w_r i_r`` is a decreasing affine function of the proxy
# (scikit-learn's "proxy impurity improvement"), so split search ranks candidates by it
# and computes the true improvement once, for the winner: gini
# ``sum_k l_k**2 / w_l + sum_k r_k**2 / w_r``, entropy ``sum_k l_k ln(l_k / w_l) + ...``,
# variance ``(sum w y)_l**2 / w_l + ...``, Poisson ``(sum w y)_l ln(mean_l) + ...``,
# misclassification ``max_k l_k + max_k r_k``. Twoing and gain ratio rank by themselves
# (up to a constant factor): twoing ``(sum_k |l_k w_r - r_k w_l|)**2 / (w_l w_r)``, which
# is ``4 w**2`` times the twoing value, and gain ratio exactly. Each returns -inf when a
# child weighs less than ``min_weight`` or nothing (or, for Poisson, has a zero mean).


@nb.njit(cache=True, inline="always")
def gini_proxy(left, parent, min_weight):
    left_weight = 0.0
    right_weight = 0.0
    left_squares = 0.0
    right_squares = 0.0
    for k in range(1, left.shape[0]):
        l_k = left[k]
        r_k = parent[k] - l_k
        left_weight += l_k
        right_weight += r_k
        left_squares += l_k * l_k
        right_squares += r_k * r_k
    if min(left_weight, right_weight) < min_weight or min(left_weight, right_weight) <= 0.0:
        return -np.inf
    return left_squares / left_weight + right_squares / right_weight


@nb.njit(cache=True, inline="always")
def entropy_proxy(left, parent, min_weight):
    # sum_k l_k ln(l_k / w_l) = sum_k l_k ln l_k - w_l ln w_l
    left_weight = 0.0
    right_weight = 0.0
    score = 0.0
    for k in range(1, left.shape[0]):
        l_k = left[k]
        r_k = parent[k] - l_k
        left_weight += l_k
        right_weight += r_k
        if l_k > 0.0:
            score += l_k * np.log(l_k)
        if r_k > 0.0:
            score += r_k * np.log(r_k)
    if min(left_weight, right_weight) < min_weight or min(left_weight, right_weight) <= 0.0:
        return -np.inf
    return score - left_weight * np.log(left_weight) - right_weight * np.log(right_weight)


@nb.njit(cache=True, inline="always")
def misclassification_proxy(left, parent, min_weight):
    left_weight = 0.0
    right_weight = 0.0
    largest_left = 0.0
    largest_right = 0.0
    for k in range(1, left.shape[0]):
        l_k = left[k]
        r_k = parent[k] - l_k
        left_weight += l_k
        right_weight += r_k
        largest_left = max(largest_left, l_k)
        largest_right = max(largest_right, r_k)
    if min(left_weight, right_weight) < min_weight or min(left_weight, right_weight) <= 0.0:
        return -np.inf
    return largest_left + largest_right


@nb.njit(cache=True, inline="always")
def twoing_proxy(left, parent, min_weight):
    # p_L p_R / 4 (sum_k |l_k / w_l - r_k / w_r|)^2
    #   = (sum_k |l_k w_r - r_k w_l|)^2 / (4 w^2 w_l w_r); 4 w^2 is the same for every
    # candidate of the node. Weights are needed before the differences: two passes.
    left_weight = 0.0
    right_weight = 0.0
    for k in range(1, left.shape[0]):
        left_weight += left[k]
        right_weight += parent[k] - left[k]
    if min(left_weight, right_weight) < min_weight or min(left_weight, right_weight) <= 0.0:
        return -np.inf
    total = 0.0
    for k in range(1, left.shape[0]):
        l_k = left[k]
        total += abs(l_k * right_weight - (parent[k] - l_k) * left_weight)
    return total * total / (left_weight * right_weight)


@nb.njit(cache=True, inline="always")
def gain_ratio_proxy(left, parent, min_weight):
    # In nats and multiplied by w (the ratio is unchanged):
    #   w gain = w ln w - sum_k p_k ln p_k + sum_k (l_k ln l_k + r_k ln r_k)
    #            - w_l ln w_l - w_r ln w_r
    #   w split_information = w ln w - w_l ln w_l - w_r ln w_r
    # The parent's terms are recomputed per candidate: the proxy only sees the sums.
    left_weight = 0.0
    right_weight = 0.0
    children = 0.0
    parent_terms = 0.0
    for k in range(1, left.shape[0]):
        l_k = left[k]
        p_k = parent[k]
        r_k = p_k - l_k
        left_weight += l_k
        right_weight += r_k
        if l_k > 0.0:
            children += l_k * np.log(l_k)
        if r_k > 0.0:
            children += r_k * np.log(r_k)
        if p_k > 0.0:
            parent_terms += p_k * np.log(p_k)
    if min(left_weight, right_weight) < min_weight or min(left_weight, right_weight) <= 0.0:
        return -np.inf
    weight = left_weight + right_weight
    sizes = (weight * np.log(weight) - left_weight * np.log(left_weight)
             - right_weight * np.log(right_weight))
    if sizes <= 0.0:
        return -np.inf
    return (sizes - parent_terms + children) / sizes


@nb.njit(cache=True, inline="always")
def variance_proxy(left, parent, min_weight):
    left_weight = left[1]
    right_weight = parent[1] - left_weight
    if min(left_weight, right_weight) < min_weight or min(left_weight, right_weight) <= 0.0:
        return -np.inf
    left_sum = left[2]
    right_sum = parent[2] - left_sum
    return left_sum * left_sum / left_weight + right_sum * right_sum / right_weight


@nb.njit(cache=True, inline="always")
def poisson_proxy(left, parent, min_weight):
    left_weight = left[1]
    right_weight = parent[1] - left_weight
    if min(left_weight, right_weight) < min_weight or min(left_weight, right_weight) <= 0.0:
        return -np.inf
    left_sum = left[2]
    right_sum = parent[2] - left_sum
    # _zero_poisson_sum of each child, whose count is parent[0] - left[0].
    rounding = _SUBTRACTION_ULPS * EPSILON * parent[2]
    if (left_sum <= EPSILON * (left_weight / max(left[0], 1.0)) + rounding
            or right_sum <= EPSILON * (right_weight / max(parent[0] - left[0], 1.0))
            + rounding):
        return -np.inf
    return (left_sum * np.log(left_sum / left_weight)
            + right_sum * np.log(right_sum / right_weight))


@nb.njit(cache=True)
def leaf_value(criterion, sums, out):
    """Write a leaf's prediction: class fractions, or the weighted mean of y."""
    weight = node_weight(criterion, sums)
    if criterion < SQUARED_ERROR:
        for k in range(out.shape[0]):
            out[k] = sums[k + 1] / weight if weight > 0.0 else 0.0
    else:
        out[0] = sums[2] / weight if weight > 0.0 else 0.0


@nb.njit(cache=True)
def category_score(criterion, sums, target_class):
    """Score that orders categories before a categorical split is scanned.

    Sorting categories by the proportion of one class (binary classification) or by the
    mean target (regression) and scanning the sorted order finds the optimal partition
    (Breiman et al. 1984, thm. 4.5; Fisher 1958). For more than two classes silva scans
    one ordering per class (``target_class``), one-vs-rest, and keeps the best.
    """
    weight = node_weight(criterion, sums)
    if weight <= 0.0:
        return 0.0
    if criterion < SQUARED_ERROR:
        return sums[1 + target_class] / weight
    return sums[2] / weight
