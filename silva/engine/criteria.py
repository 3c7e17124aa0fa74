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


import numpy as np

from silva.engine.jit import kernel

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


@kernel(inline="always")
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


#: The statistic channels of a single-output regression criterion: count, weight,
#: weighted target and weighted square (or Poisson's y log y).
REGRESSION_CHANNELS = 4


def n_channels(criterion, n_classes):
    """Number of statistic channels, the count channel included."""
    return 1 + n_classes if is_classification(criterion) else REGRESSION_CHANNELS


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


@kernel(inline="always")
def node_weight(criterion, sums):
    """Total sample weight of a node from its channel sums."""
    if criterion < SQUARED_ERROR:
        total = 0.0
        for k in range(1, sums.shape[0]):
            total += sums[k]
        return total
    return sums[1]


# A node's impurity from its channel sums, one kernel per criterion family, each with
# the signature of the dispatching impurity(criterion, sums) below: the grower's and the
# split search's compiled copies bind their criterion's kernel (IMPURITY_OF_CRITERION),
# so that a gini tree does not compile entropy's or Poisson's logarithms (a cold first
# fit compiled all five in impurity, about half a second).


@kernel(_nrt=False)
def gini_impurity(criterion, sums):
    """Gini impurity ``1 - sum_k p_k^2`` (also twoing's node impurity)."""
    weight = node_weight(criterion, sums)
    if weight <= 0.0:
        return 0.0
    squares = 0.0
    for k in range(1, sums.shape[0]):
        p = sums[k] / weight
        squares += p * p
    return 1.0 - squares


@kernel(_nrt=False)
def entropy_impurity(criterion, sums):
    """Entropy in bits, ``-sum_k p_k log2 p_k`` (also gain ratio's)."""
    weight = node_weight(criterion, sums)
    if weight <= 0.0:
        return 0.0
    entropy = 0.0
    for k in range(1, sums.shape[0]):
        if sums[k] > 0.0:
            p = sums[k] / weight
            entropy -= p * np.log(p)
    return entropy / _LOG_2


@kernel(_nrt=False)
def misclassification_impurity(criterion, sums):
    """Misclassification rate ``1 - max_k p_k``."""
    weight = node_weight(criterion, sums)
    if weight <= 0.0:
        return 0.0
    largest = 0.0
    for k in range(1, sums.shape[0]):
        largest = max(largest, sums[k])
    return 1.0 - largest / weight


@kernel(_nrt=False)
def poisson_impurity(criterion, sums):
    """Half Poisson deviance per unit weight, ``(sum w y log y - sum w y log mean) / w``."""
    weight = node_weight(criterion, sums)
    if weight <= 0.0 or _zero_poisson_sum(sums):
        return 0.0
    return (sums[3] - sums[2] * np.log(sums[2] / weight)) / weight


@kernel(_nrt=False)
def variance_impurity(criterion, sums):
    """Weighted variance (squared_error, friedman_mse, and absolute_error's fallback)."""
    weight = node_weight(criterion, sums)
    if weight <= 0.0:
        return 0.0
    mean = sums[2] / weight
    return max(sums[3] / weight - mean * mean, 0.0)


@kernel(_nrt=False)
def impurity(criterion, sums):
    """Impurity of a node from its channel sums (absolute_error: see module docstring),
    the criterion chosen at run time (for callers that serve every criterion)."""
    if criterion == GINI or criterion == TWOING:
        return gini_impurity(criterion, sums)
    if criterion == ENTROPY or criterion == GAIN_RATIO:
        return entropy_impurity(criterion, sums)
    if criterion == MISCLASSIFICATION:
        return misclassification_impurity(criterion, sums)
    if criterion == POISSON:
        return poisson_impurity(criterion, sums)
    return variance_impurity(criterion, sums)


#: Each single-output criterion's impurity kernel (see gini_impurity).
IMPURITY_OF_CRITERION = {
    GINI: gini_impurity, TWOING: gini_impurity,
    ENTROPY: entropy_impurity, GAIN_RATIO: entropy_impurity,
    MISCLASSIFICATION: misclassification_impurity,
    POISSON: poisson_impurity,
    SQUARED_ERROR: variance_impurity, FRIEDMAN_MSE: variance_impurity,
    ABSOLUTE_ERROR: variance_impurity,
}


@kernel(_nrt=False)
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


@kernel(inline="always")
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


@kernel(inline="always")
def entropy_proxy(left, parent, min_weight):
    # sum_k l_k ln(l_k / w_l) = sum_k l_k ln l_k - w_l ln w_l. Each child's term is
    # finished on its own and the two added last, so that a split and its mirror image
    # (children swapped, e.g. missing values sent the other way) score exactly alike and
    # the first scanned wins the tie, as in scikit-learn.
    left_weight = 0.0
    right_weight = 0.0
    left_score = 0.0
    right_score = 0.0
    for k in range(1, left.shape[0]):
        l_k = left[k]
        r_k = parent[k] - l_k
        left_weight += l_k
        right_weight += r_k
        if l_k > 0.0:
            left_score += l_k * np.log(l_k)
        if r_k > 0.0:
            right_score += r_k * np.log(r_k)
    if min(left_weight, right_weight) < min_weight or min(left_weight, right_weight) <= 0.0:
        return -np.inf
    return ((left_score - left_weight * np.log(left_weight))
            + (right_score - right_weight * np.log(right_weight)))


@kernel(inline="always")
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


@kernel(inline="always")
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


@kernel(inline="always")
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


@kernel(inline="always")
def variance_proxy(left, parent, min_weight):
    left_weight = left[1]
    right_weight = parent[1] - left_weight
    if min(left_weight, right_weight) < min_weight or min(left_weight, right_weight) <= 0.0:
        return -np.inf
    left_sum = left[2]
    right_sum = parent[2] - left_sum
    return left_sum * left_sum / left_weight + right_sum * right_sum / right_weight


@kernel(inline="always")
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


@kernel(_nrt=False)
def leaf_value(criterion, sums, out):
    """Write a leaf's prediction: class fractions, or the weighted mean of y."""
    weight = node_weight(criterion, sums)
    if criterion < SQUARED_ERROR:
        for k in range(out.shape[0]):
            out[k] = sums[k + 1] / weight if weight > 0.0 else 0.0
    else:
        out[0] = sums[2] / weight if weight > 0.0 else 0.0


@kernel()
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


# --------------------------------------------------------------------- multi-output
#
# A multi-output tree (scikit-learn's 2-D y) grows one tree for all outputs: a node's
# impurity is the mean of its per-output impurities and a split's improvement the mean
# of its per-output improvements (scikit-learn's definition; Breiman et al. 1984 grow
# one tree per response, Segal 1992 and De'ath 2002 score the responses jointly).
# The multi-output criteria have codes of their own, above every single-output code,
# so that the single-output kernels never see them: the grower and split search compile
# a copy of their own around the functions below (see grower.compiled_grower), and a
# single-output fit compiles none of this code. Their channel layouts start with the
# count and the weight, then concatenate the outputs:
#
# =====================  =============================================================
# criterion              channels
# =====================  =============================================================
# multi-output gini,     count, ``w``, then per output o, ``max_n_classes`` channels
# entropy                ``w * [y_o == k]`` (classes past output o's own count stay 0,
#                        as in scikit-learn's padded value array)
# multi-output           count, ``w``, ``w * y_o`` for each output, then ``w * y_o**2``
# squared_error,         for each output
# friedman_mse
# =====================  =============================================================
#
# Leaf values are the channels after the weight divided by it: class fractions
# (n_outputs x max_n_classes, flattened) or the per-output means (n_outputs).
MULTI_GINI = 20
MULTI_ENTROPY = 21
MULTI_SQUARED_ERROR = 22
MULTI_FRIEDMAN_MSE = 23
#: The single-output criterion each multi-output code averages over the outputs.
MULTI_OUTPUT_CODES = {GINI: MULTI_GINI, ENTROPY: MULTI_ENTROPY,
                      SQUARED_ERROR: MULTI_SQUARED_ERROR, FRIEDMAN_MSE: MULTI_FRIEDMAN_MSE}


def is_multi_output(criterion):
    return criterion >= MULTI_GINI


def multi_output_code(criterion, criterion_name, estimator_name):
    """The multi-output code of single-output ``criterion``; a ValueError naming the
    estimator and criterion for those that have none."""
    code = MULTI_OUTPUT_CODES.get(criterion)
    if code is None:
        supported = ("'gini', 'entropy', 'log_loss'" if criterion < SQUARED_ERROR
                     else "'squared_error', 'friedman_mse'")
        raise ValueError(f"{estimator_name}: criterion={criterion_name!r} does not support "
                         f"multi-output y (2-D y with several columns); use one of "
                         f"{supported}.")
    return code


def multi_output_statistics(criterion, Y, sample_weight, n_classes):
    """The (n_samples, n_channels) statistic matrix of a multi-output criterion.

    ``Y`` is (n_samples, n_outputs): class indices per output (``n_classes`` per output)
    for classification, real targets otherwise; layouts in the table above.
    """
    n_samples, n_outputs = Y.shape
    if criterion in (MULTI_GINI, MULTI_ENTROPY):
        width = int(max(n_classes))
        stats = np.zeros((n_samples, 2 + n_outputs * width))
        stats[:, 0] = 1.0
        stats[:, 1] = sample_weight
        rows = np.arange(n_samples)
        for o in range(n_outputs):
            stats[rows, 2 + o * width + Y[:, o].astype(np.intp)] = sample_weight
        return stats
    stats = np.empty((n_samples, 2 + 2 * n_outputs))
    stats[:, 0] = 1.0
    stats[:, 1] = sample_weight
    stats[:, 2:2 + n_outputs] = sample_weight[:, None] * Y
    stats[:, 2 + n_outputs:] = sample_weight[:, None] * Y * Y
    return stats


@kernel(inline="always")
def _n_class_outputs(class_total, weight):
    """Outputs of a multi-output classification node: its class channels hold each
    sample's weight once per output, so they sum to ``n_outputs * weight`` (up to
    rounding, which the nearest integer removes)."""
    return max(1.0, np.floor(class_total / weight + 0.5))


@kernel()
def multi_output_impurity(criterion, sums):
    """Mean over the outputs of the per-output impurity (gini, entropy in bits, or
    variance), from the channel sums of the layouts above."""
    weight = sums[1]
    if weight <= 0.0:
        return 0.0
    if criterion == MULTI_GINI or criterion == MULTI_ENTROPY:
        class_total = 0.0
        total = 0.0
        for c in range(2, sums.shape[0]):
            class_total += sums[c]
            if criterion == MULTI_GINI:
                p = sums[c] / weight
                total += p * p
            elif sums[c] > 0.0:
                p = sums[c] / weight
                total -= p * np.log(p)
        n_outputs = _n_class_outputs(class_total, weight)
        if criterion == MULTI_GINI:
            return 1.0 - total / n_outputs
        return total / _LOG_2 / n_outputs
    n_outputs = (sums.shape[0] - 2) // 2
    total = 0.0
    for o in range(n_outputs):
        mean = sums[2 + o] / weight
        total += max(sums[2 + n_outputs + o] / weight - mean * mean, 0.0)
    return total / n_outputs


@kernel()
def multi_output_improvement(criterion, parent, left, right, parent_impurity, root_weight):
    """:func:`improvement` for the multi-output codes: the mean over the outputs of the
    weighted impurity decrease, or for friedman_mse the mean over the outputs of
    Friedman's (2001, eq. 35) score ``w_l w_r (mean_l - mean_r)**2 / w``. (friedman_mse
    ranks candidates by the variance proxy, as the single-output criterion does and as
    scikit-learn, which maps it to squared_error since 1.9, does.)"""
    weight = parent[1]
    left_weight = left[1]
    right_weight = right[1]
    left_impurity = multi_output_impurity(criterion, left)
    right_impurity = multi_output_impurity(criterion, right)
    if criterion == MULTI_FRIEDMAN_MSE:
        n_outputs = (parent.shape[0] - 2) // 2
        total = 0.0
        for o in range(n_outputs):
            diff = right_weight * left[2 + o] - left_weight * right[2 + o]
            total += diff * diff
        return (total / (left_weight * right_weight * weight) / n_outputs, left_impurity,
                right_impurity)
    decrease = (
        parent_impurity
        - left_weight / weight * left_impurity
        - right_weight / weight * right_impurity
    )
    return weight / root_weight * decrease, left_impurity, right_impurity


@kernel()
def multi_output_leaf_value(criterion, sums, out):
    """A multi-output leaf's values: the channels after the weight divided by it, that
    is the class fractions of every output or each output's weighted mean."""
    weight = sums[1]
    for k in range(out.shape[0]):
        out[k] = sums[2 + k] / weight if weight > 0.0 else 0.0


# Multi-output proxies, ``proxy(left, parent, min_weight)`` as above: the sum over the
# outputs of each output's proxy, which ranks candidates as the mean over the outputs of
# the weighted impurity decrease does (scikit-learn's multi-output proxies).


@kernel(inline="always")
def multi_gini_proxy(left, parent, min_weight):
    left_weight = left[1]
    right_weight = parent[1] - left_weight
    if min(left_weight, right_weight) < min_weight or min(left_weight, right_weight) <= 0.0:
        return -np.inf
    left_squares = 0.0
    right_squares = 0.0
    for c in range(2, left.shape[0]):
        l_c = left[c]
        r_c = parent[c] - l_c
        left_squares += l_c * l_c
        right_squares += r_c * r_c
    return left_squares / left_weight + right_squares / right_weight


@kernel(inline="always")
def multi_entropy_proxy(left, parent, min_weight):
    # sum_o sum_k l_ok ln(l_ok / w_l) = sum_c l_c ln l_c - n_outputs w_l ln w_l
    left_weight = left[1]
    right_weight = parent[1] - left_weight
    if min(left_weight, right_weight) < min_weight or min(left_weight, right_weight) <= 0.0:
        return -np.inf
    score = 0.0
    class_total = 0.0
    for c in range(2, left.shape[0]):
        l_c = left[c]
        r_c = parent[c] - l_c
        class_total += parent[c]
        if l_c > 0.0:
            score += l_c * np.log(l_c)
        if r_c > 0.0:
            score += r_c * np.log(r_c)
    n_outputs = _n_class_outputs(class_total, parent[1])
    return score - n_outputs * (left_weight * np.log(left_weight)
                                + right_weight * np.log(right_weight))


@kernel(inline="always")
def multi_variance_proxy(left, parent, min_weight):
    left_weight = left[1]
    right_weight = parent[1] - left_weight
    if min(left_weight, right_weight) < min_weight or min(left_weight, right_weight) <= 0.0:
        return -np.inf
    n_outputs = (left.shape[0] - 2) // 2
    score = 0.0
    for o in range(2, 2 + n_outputs):
        left_sum = left[o]
        right_sum = parent[o] - left_sum
        score += left_sum * left_sum / left_weight + right_sum * right_sum / right_weight
    return score
