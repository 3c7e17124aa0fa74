"""Model inspection: permutation importance, on held-out data or out of bag.

:func:`permutation_importance` measures how much a model's score drops when one
feature's values are shuffled, breaking its link to the target (Breiman 2001, sec. 10).
On held-out data it is scikit-learn's :func:`sklearn.inspection.permutation_importance`.
With ``oob=True`` it is Breiman's original out-of-bag version for bagged ensembles
(silva's forests and bagging): each member is scored on the training samples it did not
see, before and after shuffling a feature among those samples, and the drops are
averaged over the members, so no held-out data is needed.
"""

import numpy as np
from sklearn.base import is_classifier
from sklearn.inspection import permutation_importance as _sklearn_permutation_importance
from sklearn.utils import Bunch, check_random_state
from sklearn.utils.validation import check_is_fitted

from silva import _input

__all__ = ["permutation_importance", "encoded_target"]


def permutation_importance(model, X, y, *, n_repeats=5, oob=False, scoring=None,
                           random_state=None, n_jobs=None, sample_weight=None):
    """Permutation importance of each feature of a fitted model.

    Parameters
    ----------
    model : fitted estimator
    X, y : the data to score on: held-out data, or with ``oob=True`` the training data
        the ensemble was fitted on.
    n_repeats : int, default=5
        Shuffles per feature.
    oob : bool, default=False
        Use each member's out-of-bag samples (forests and bagging fitted with
        ``bootstrap=True``). The importance of feature j is then the mean over members of
        (score on the member's out-of-bag samples − the same after shuffling feature j
        among them); a member that was not given feature j (bagging's ``max_features``)
        contributes 0.
    scoring : str, callable or None, default=None
        Without ``oob``: scikit-learn's scoring. With ``oob``: None (accuracy for
        classifiers, R² for regressors) or a metric ``scoring(y_true, y_pred)`` where
        higher is better.
    random_state : int, RandomState or None, default=None
        Seeds the shuffles.
    n_jobs : int or None, default=None
        Without ``oob``: processes used by scikit-learn (one per feature).
    sample_weight : array-like or None, default=None
        Without ``oob`` only.

    Returns
    -------
    Bunch
        ``importances_mean``, ``importances_std`` (n_features,) and ``importances``
        (n_features, n_repeats), as scikit-learn returns.
    """
    n_repeats = _input.check_int(n_repeats, "n_repeats", 1)
    if not oob:
        return _sklearn_permutation_importance(
            model, X, y, scoring=scoring, n_repeats=n_repeats, n_jobs=n_jobs,
            random_state=random_state, sample_weight=sample_weight)
    if sample_weight is not None:
        raise ValueError("sample_weight is not supported with oob=True: the out-of-bag "
                         "scores use the members' own samples.")
    if not hasattr(model, "_oob_members"):
        raise ValueError(f"oob=True needs a silva forest or bagging ensemble; got "
                         f"{type(model).__name__}.")
    check_is_fitted(model, "estimators_")
    if not getattr(model, "bootstrap", False):
        raise ValueError("oob=True needs a model fitted with bootstrap=True: without it no "
                         "sample is out of bag.")
    if scoring is not None and not callable(scoring):
        raise ValueError("with oob=True, scoring must be None or a metric "
                         f"scoring(y_true, y_pred); got {scoring!r}.")
    X, members = model._oob_members(X)
    target = encoded_target(model, y, X.shape[0])
    metric = scoring or (_accuracy if is_classifier(model) else _r2)
    random_state = check_random_state(random_state)

    n_features = X.shape[1]
    drops = np.zeros((n_features, n_repeats))
    n_scored = 0
    for predict, features, rows in members:
        if rows.size < 2:
            continue
        n_scored += 1
        X_member = X[np.ix_(rows, features)]
        y_member = target[rows]
        baseline = metric(y_member, predict(X_member))
        for position, feature in enumerate(features):
            original = X_member[:, position].copy()
            for repeat in range(n_repeats):
                X_member[:, position] = original[random_state.permutation(rows.size)]
                drops[feature, repeat] += baseline - metric(y_member, predict(X_member))
            X_member[:, position] = original
    if n_scored == 0:
        raise ValueError("oob=True: no member has two or more out-of-bag samples; fit on "
                         "more data.")
    importances = drops / n_scored
    return Bunch(importances_mean=importances.mean(axis=1),
                 importances_std=importances.std(axis=1), importances=importances)


def _accuracy(y_true, y_pred):
    # scikit-learn's accuracy_score validates its input on every call, which dominated
    # the many small out-of-bag scorings; the targets here are already encoded arrays.
    return float(np.mean(y_true == y_pred))


def _r2(y_true, y_pred):
    total = np.sum((y_true - y_true.mean()) ** 2)
    residual = np.sum((y_true - y_pred) ** 2)
    return 1.0 - residual / total if total > 0 else 0.0


def encoded_target(model, y, n_samples):
    """y as the members predict it: class indices for classifiers, floats otherwise."""
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n_samples:
        raise ValueError(f"y must have shape ({n_samples},) like X; got {y.shape}.")
    if not is_classifier(model):
        return y.astype(np.float64)
    index = {label: k for k, label in enumerate(model.classes_.tolist())}
    try:
        return np.array([index[label] for label in y.tolist()], dtype=np.intp)
    except KeyError as error:
        raise ValueError(f"y holds a label not seen at fit: {error.args[0]!r}.") from None
