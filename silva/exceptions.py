"""Warnings and errors of silva's own, beyond Python's and scikit-learn's."""

__all__ = ["NothingLearnedWarning"]


class NothingLearnedWarning(UserWarning):
    """A fit learned nothing: a tree stopped at its root, or boosting grew no split in
    any tree, so the model predicts one constant.

    The message names the parameter that stopped the root (``min_samples_leaf``,
    ``min_samples_split``, ``min_child_weight``, ...), as LightGBM says "Stopped
    training because there are no more leaves that meet the split requirements". No
    warning is given when the target is constant: there was nothing to learn. Silence it
    with ``warnings.filterwarnings("ignore", category=silva.NothingLearnedWarning)``.
    """
