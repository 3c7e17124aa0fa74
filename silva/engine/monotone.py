"""Monotonic constraints of CART trees (scikit-learn's ``monotonic_cst`` semantics).

A constrained feature may only split a node into children whose values keep the
constraint's order and lie within the node's bounds ``[min_value, max_value]``; every
node's value is clipped to its bounds; and a split on a constrained feature hands its
children the bounds ``[min_value, middle]`` and ``[middle, max_value]`` (in the
constraint's order), where ``middle`` is the mean of the two children's unclipped values.
Splits on unconstrained features pass the node's bounds to both children. This is the
scheme of scikit-learn's trees (``sklearn/tree/_tree.pyx``, ``_criterion.pyx``, from
version 1.4), itself the one of gradient-boosting libraries (Chen & Guestrin 2016,
XGBoost; Ke et al. 2017, LightGBM): the tree's prediction is then monotone along each
constrained feature, since any two leaves separated by a constrained split have values
on either side of that split's ``middle``.

The *value* a constraint orders is a node's mean target for regression (its weighted
median under absolute_error, whose check lives in :mod:`silva.engine.absolute_error`
and whose middle value the grower takes from the children's medians) and, for binary
classification, the weighted fraction of class 0 (the negative class), as in
scikit-learn: callers flip the sign of a classifier's constraints (which users give on
the positive class's probability) before passing them to the engine.

The kernels are compiled only into the grower's monotone copy
(:func:`silva.engine.grower.compiled_grower` with ``monotone=True``).
"""


from silva.engine.jit import kernel


@kernel(inline="always")
def monotone_value(classification, sums):
    """The value a constraint orders, from a node's channel sums
    (:mod:`silva.engine.criteria`): the class-0 fraction, or the mean target."""
    if classification:
        weight = 0.0
        for k in range(1, sums.shape[0]):
            weight += sums[k]
        return sums[1] / weight
    return sums[2] / sums[1]


@kernel(inline="always")
def split_respects_constraint(classification, left, node_sums, constraint, min_value,
                              max_value):
    """Whether the split whose left child has channel sums ``left`` keeps both
    children's values in ``[min_value, max_value]`` and ordered as ``constraint``
    (+1: left <= right, -1: left >= right) asks."""
    if classification:
        left_weight = 0.0
        right_weight = 0.0
        for k in range(1, node_sums.shape[0]):
            left_weight += left[k]
            right_weight += node_sums[k] - left[k]
        left_value = left[1] / left_weight
        right_value = (node_sums[1] - left[1]) / right_weight
    else:
        left_value = left[2] / left[1]
        right_value = (node_sums[2] - left[2]) / (node_sums[1] - left[1])
    return (min_value <= left_value <= max_value and min_value <= right_value <= max_value
            and (left_value - right_value) * constraint <= 0.0)


@kernel(inline="always")
def middle_value(classification, left_sums, right_sums):
    """The bound a constrained split puts between its children: the mean of their
    unclipped values, summed as halves (scikit-learn's ``middle_value``)."""
    if classification:
        left_weight = 0.0
        right_weight = 0.0
        for k in range(1, left_sums.shape[0]):
            left_weight += left_sums[k]
            right_weight += right_sums[k]
        return left_sums[1] / (2 * left_weight) + right_sums[1] / (2 * right_weight)
    return left_sums[2] / (2 * left_sums[1]) + right_sums[2] / (2 * right_sums[1])


@kernel(inline="always")
def clip_node_value(classification, values, min_value, max_value):
    """Clip a node's value to its bounds; a binary classifier's second class fraction
    is then one minus the first, so that the two still sum to one."""
    if values[0] < min_value:
        values[0] = min_value
    elif values[0] > max_value:
        values[0] = max_value
    if classification and values.shape[0] == 2:
        values[1] = 1.0 - values[0]
