"""Say when a fit learned nothing (issue 24, item 3): which parameter held at the root.

After a fit whose tree (or every tree) is a single leaf, the conditions under which the
grower refuses to split the root are checked again here, in Python, on the training
rows, in the grower's order: a node splits only if it has ``min_samples_split`` samples,
room for two children of ``min_samples_leaf`` samples (and of ``min_child_weight``
hessian or ``min_weight_fraction_leaf`` weight), a feature with two distinct values, and
a split whose gain passes ``min_impurity_decrease`` / ``min_split_gain`` (or the
significance test). The first that fails is named in a :class:`NothingLearnedWarning`;
no engine change is needed. A constant target gives no warning: there was nothing to
learn, and the constant model is the right answer.
"""

import warnings

import numpy as np

from silva.engine.sparse import block_rows, is_sparse
from silva.exceptions import NothingLearnedWarning

__all__ = ["boosting_root_reason", "cart_root_reason", "warn_nothing_learned"]


def _is_constant(y, sample_weight):
    values = y[sample_weight > 0]
    return values.size == 0 or np.all(values == values[0])


def _no_feature_varies(X):
    """True when every column holds one value (NaN counting as one more value)."""
    if is_sparse(X):
        # A column whose implicit zeros and stored values are all one value; in blocks
        # of columns, so that a sparse X is never densified whole.
        X = X.tocsc()
        step = block_rows(X.shape[0])
        return all(_no_feature_varies(X[:, start:start + step].toarray())
                   for start in range(0, X.shape[1], step))
    for column in X.T:
        present = column[~np.isnan(column)]
        if present.size < column.size and present.size:
            return False  # missing and present values can be split apart
        if present.size and np.any(present != present[0]):
            return False
    return True


def cart_root_reason(estimator, X, y, sample_weight, params, pruned_from=1):
    """Why a CART tree (or every tree of a forest) is only its root; None when the
    target is constant. ``params`` is the tree's ``_check_params`` result;
    ``pruned_from`` the node count before pruning."""
    if _is_constant(y, sample_weight):
        return None
    n = int(np.count_nonzero(sample_weight > 0))
    if pruned_from > 1:
        if getattr(estimator, "prune", None) == "reduced_error":
            return (f"prune='reduced_error' pruned the tree ({pruned_from} nodes) to its "
                    "root: no split lowered the error on the held-out rows "
                    f"(validation_fraction={estimator.validation_fraction})")
        alpha = getattr(estimator, "ccp_alpha_", estimator.ccp_alpha)
        chosen = (f"ccp_alpha='cv' chose {alpha:.4g}, which" if estimator.ccp_alpha == "cv"
                  else f"ccp_alpha={alpha}")
        return (f"{chosen} pruned the tree ({pruned_from} nodes) to its root; lower "
                "ccp_alpha")
    leaf = params["min_samples_leaf"]
    if n < 2 * leaf:
        return (f"min_samples_leaf={estimator.min_samples_leaf} leaves no room for two "
                f"children among the {n} training rows (a split needs {2 * leaf}); "
                "lower min_samples_leaf")
    if n < params["min_samples_split"]:
        return (f"min_samples_split={estimator.min_samples_split} is more than the {n} "
                "training rows; lower min_samples_split")
    if params["min_weight_leaf"] > 0 and sample_weight.sum() < 2 * params["min_weight_leaf"]:
        return (f"min_weight_fraction_leaf={estimator.min_weight_fraction_leaf} leaves no "
                "room for two children; lower min_weight_fraction_leaf")
    if _no_feature_varies(X):
        return "no feature takes two different values on the training rows"
    significance = getattr(estimator, "min_significance", None)
    if significance is not None and significance < 1.0:
        return (f"min_significance={significance}: no split of the root passed the "
                "significance test; raise min_significance")
    if estimator.min_impurity_decrease > 0:
        return (f"min_impurity_decrease={estimator.min_impurity_decrease}: no split of the "
                "root decreases the impurity by that much; lower min_impurity_decrease")
    return ("no split of the root improves the criterion (max_features="
            f"{estimator.max_features!r} candidate features)")


def boosting_root_reason(estimator, X, y, sample_weight, loss, init_raw):
    """Why boosting grew no split in any tree; None when the target is constant."""
    if _is_constant(y, sample_weight):
        return None
    n = X.shape[0]
    sampled = " (per iteration: fewer with subsample or goss)" if (
        estimator.subsample < 1.0 or estimator.sampling == "goss") else ""
    if n < 2 * estimator.min_samples_leaf:
        return (f"min_samples_leaf={estimator.min_samples_leaf} leaves no room for two "
                f"children among the {n} training rows{sampled} (a split needs "
                f"{2 * estimator.min_samples_leaf:g}); lower min_samples_leaf")
    # Friedman's gradient boosting puts the sample weight in the hessian channel.
    hessian = (float(sample_weight.sum()) if estimator.boosting == "gradient"
               else _root_hessian(y, sample_weight, loss, init_raw))
    if hessian is not None and hessian < 2 * estimator.min_child_weight:
        return (f"min_child_weight={estimator.min_child_weight} leaves no room for two "
                f"children: the root's hessian sum is {hessian:.4g}; lower "
                "min_child_weight")
    if _no_feature_varies(X):
        return "no feature takes two different values on the training rows"
    if estimator.min_split_gain > 0:
        return (f"min_split_gain={estimator.min_split_gain}: no split of the root gains "
                "that much; lower min_split_gain")
    return ("no split of the root has a positive gain (l1_regularization="
            f"{estimator.l1_regularization}, l2_regularization="
            f"{estimator.l2_regularization}, min_child_weight={estimator.min_child_weight})")


def _root_hessian(y, sample_weight, loss, init_raw):
    """The weighted hessian sum at the initial prediction (smallest over the outputs),
    or None for a loss that cannot say (a user's callable objective)."""
    n_outputs = init_raw.shape[0]
    raw = np.asfortranarray(np.tile(init_raw, (y.shape[0], 1)))
    grad = np.empty_like(raw)
    hess = np.empty_like(raw)
    try:
        loss.gradient_hessian(y, raw, grad, hess)
    except Exception:  # noqa: BLE001 - a diagnosis must never break a fit
        return None
    return float(min((hess[:, k] * sample_weight).sum() for k in range(n_outputs)))


def warn_nothing_learned(what, reason, stacklevel):
    """One :class:`NothingLearnedWarning`: ``what`` happened because of ``reason``."""
    if reason is not None:
        warnings.warn(f"{what}, so the model predicts one constant: {reason}.",
                      NothingLearnedWarning, stacklevel=stacklevel + 1)
