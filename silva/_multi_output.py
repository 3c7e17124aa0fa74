"""Multi-output targets of the CART trees and forests: a 2-D ``y`` of several columns.

scikit-learn's trees and forests accept ``y`` of shape (n_samples, n_outputs) and grow
one tree for all outputs, whose splits minimise the mean of the per-output impurities
(:mod:`silva.engine.criteria`, "multi-output"); the leaves hold one value per output
(class fractions per output for classifiers). This module holds what the estimators
share around it: reading the target, encoding each output's classes, class weights per
output, the options a multi-output fit refuses, and splitting a classifier's leaf
values into one probability array per output. A ``y`` of shape (n_samples, 1) is a
single-output target, as in scikit-learn.
"""

import numpy as np

from silva import _input
from silva.engine import criteria


def target(estimator, y, n_samples, *, stacklevel=4):
    """``y`` as a one-dimensional array, or as a 2-D array of at least two columns.

    One-dimensional targets (and column vectors, raveled with scikit-learn's
    ``DataConversionWarning``) go through :func:`silva._input.target_1d`; a 2-D ``y``
    must have one row per sample of X.
    """
    _input.refuse_sparse_target(estimator, y)
    if y is not None:
        array = np.asarray(y)
        if array.ndim > 2:
            raise ValueError(f"{type(estimator).__name__}: y must be one-dimensional "
                             f"(n_samples,) or, for several outputs, two-dimensional "
                             f"(n_samples, n_outputs); got shape {array.shape}.")
        if array.ndim == 2 and array.shape[1] > 1:
            if array.shape[0] != n_samples:
                raise ValueError(f"{type(estimator).__name__}: y has {array.shape[0]} rows "
                                 f"but X has {n_samples} samples; a multi-output y needs "
                                 "one row per sample.")
            return array
    return _input.target_1d(estimator, y, n_samples, stacklevel=stacklevel + 1)


def check_options(estimator, criterion_code, n_outputs):
    """The multi-output criterion code of ``criterion_code``, after refusing the
    options that multi-output trees do not support (each error names the estimator
    and the option)."""
    name = getattr(estimator, "_owner_name", type(estimator).__name__)
    code = criteria.multi_output_code(criterion_code, estimator.criterion, name)
    refusals = (
        (getattr(estimator, "monotonic_cst", None) is not None,
         "monotonic_cst (as in scikit-learn, monotonic constraints are for single-output "
         "trees)"),
        (bool(np.any(estimator.is_categorical_)),
         "categorical_features (category orderings are per output; encode them, e.g. "
         "one-hot)"),
        (getattr(estimator, "min_significance", None) not in (None, 1.0),
         "min_significance (its chi-square test is of one output's classes)"),
        (getattr(estimator, "prune", None) is not None,
         "prune='reduced_error'"),
        (isinstance(getattr(estimator, "ccp_alpha", 0.0), str),
         "ccp_alpha='cv' (a float ccp_alpha works)"),
        (getattr(estimator, "bootstrap", None) == "poisson",
         "bootstrap='poisson'"),
    )
    for refused, option in refusals:
        if refused:
            raise ValueError(f"{name}: multi-output y ({n_outputs} outputs) does not "
                             f"support {option}.")
    return code


#: The criteria whose multi-output form silva has (silva.engine.criteria).
SUPPORTED_CRITERIA = frozenset({"gini", "entropy", "log_loss", "squared_error",
                                "friedman_mse"})


def supported(estimator):
    """Whether ``estimator``'s parameters allow a multi-output fit (for its
    ``target_tags.multi_output``): a criterion that has a multi-output form and none of
    the options :func:`check_options` refuses."""
    params = estimator.get_params(deep=False)
    return (params.get("criterion") in SUPPORTED_CRITERIA
            and params.get("monotonic_cst") is None
            and params.get("categorical_features") is None
            and params.get("min_significance") in (None, 1.0)
            and params.get("prune") is None
            and not isinstance(params.get("ccp_alpha"), str)
            and params.get("bootstrap") != "poisson")


def classification_targets(Y):
    """``(classes, codes)``: each output's sorted labels (a list of arrays) and the
    (n_samples, n_outputs) int64 class indices."""
    classes = []
    codes = np.empty(Y.shape, dtype=np.int64)
    for o in range(Y.shape[1]):
        output_classes, codes[:, o] = _input.classification_target(Y[:, o])
        classes.append(output_classes)
    return classes, codes


def class_weight_factors(estimator, class_weight, Y, classes, options=("balanced",)):
    """Per-sample factors of ``class_weight`` for a multi-output Y: the product over the
    outputs of each output's factors (scikit-learn's rule). ``class_weight`` is None, a
    string of ``options`` applied to every output, or a list of one dict per output."""
    if class_weight is None:
        return None
    n_outputs = Y.shape[1]
    if isinstance(class_weight, str):
        per_output = [class_weight] * n_outputs
    elif isinstance(class_weight, dict):
        raise ValueError(f"{type(estimator).__name__}: with multi-output y, class_weight "
                         f"must be a list of {n_outputs} dicts (one per output) or one of "
                         f"{sorted(options)}; got one dict.")
    else:
        per_output = list(class_weight)
        if len(per_output) != n_outputs:
            raise ValueError(f"{type(estimator).__name__}: the number of elements in "
                             f"class_weight should match number of outputs: got "
                             f"{len(per_output)} for {n_outputs} outputs.")
    factors = np.ones(Y.shape[0])
    for o, weights in enumerate(per_output):
        output_factors = _input.class_weight_per_sample(weights, Y[:, o], classes[o],
                                                        options=options)
        if output_factors is not None:
            factors *= output_factors
    return factors


def regression_targets(Y, sample_weight):
    """Finite float64 Y (n_samples, n_outputs), each column checked for overflowing
    moments, and each column's weighted mean (the offsets the trees subtract)."""
    Y = _input.regression_target(Y)
    for o in range(Y.shape[1]):
        _input.check_target_scale(Y[:, o], sample_weight)
    return Y, np.average(Y, axis=0, weights=sample_weight)


def statistics(criterion_code, Y, weight, n_classes):
    """Statistic channels of a 1-D or multi-output target (see
    :mod:`silva.engine.criteria`)."""
    if criteria.is_multi_output(criterion_code):
        return criteria.multi_output_statistics(criterion_code, Y, weight, n_classes)
    return criteria.build_statistics(criterion_code, Y, weight, n_classes)


def value_width(criterion_code, n_classes, n_outputs):
    """Leaf values per node: ``n_outputs`` blocks of the largest class count
    (classifiers) or of one mean (regressors)."""
    if criteria.is_classification(criterion_code) or criterion_code in (
            criteria.MULTI_GINI, criteria.MULTI_ENTROPY):
        return n_outputs * int(np.max(n_classes))
    return n_outputs


def probabilities_per_output(values, n_classes):
    """One (n_rows, n_classes[o]) array per output from (n_rows, n_outputs, width)."""
    return [np.ascontiguousarray(values[:, o, :k]) for o, k in enumerate(n_classes)]


def predict_classes(probabilities, classes):
    """(n_rows, n_outputs) labels of highest probability per output (the first of
    equals), in a dtype that holds every output's labels."""
    columns = [output_classes[np.argmax(p, axis=1)]
               for p, output_classes in zip(probabilities, classes, strict=True)]
    return np.stack(columns, axis=1) if len({c.dtype for c in columns}) == 1 else \
        np.array(columns, dtype=object).T


def refuse(model, what):
    """A ValueError naming ``what`` (an export, SHAP values, ...) when ``model`` (an
    estimator or a tree) is multi-output: those readers know one output per tree."""
    n_outputs = getattr(model, "n_outputs_", getattr(model, "n_outputs", 1))
    if isinstance(n_outputs, int | np.integer) and n_outputs > 1:
        raise ValueError(f"{what} does not support multi-output models: this "
                         f"{type(model).__name__} has {n_outputs} outputs.")
