"""Estimator methods that several silva estimators share, written once.

- :class:`PredictLogProbaMixin`: ``predict_log_proba`` from ``predict_proba``;
- :class:`FittedInputMixin`: ``_validated_X``, the check that a model is fitted followed
  by the estimator's own ``_prepare_X``;
- :class:`FittedTreeMixin`: the single-tree methods (``apply``, ``get_depth``,
  ``get_n_leaves``, ``feature_importances_``) of estimators whose model is one ``tree_``;
- :class:`BaseEstimatorNanMixin`: ensembles of any base estimator accept NaN in X when
  their base estimator does;
- :class:`HeterogeneousEnsembleMixin`: nested ``get_params``/``set_params`` for
  ensembles of named models (voting, stacking);
- :class:`MemberSequenceMixin`: ``len``, indexing and iteration over ``estimators_``, as
  scikit-learn's ensembles offer;
- :class:`ExplainMixin`: ``predict(X, pred_contrib=True)`` and
  ``predict(X, pred_interactions=True)`` of tree models (SHAP values, see
  :mod:`silva.explain`);
- :class:`ParamNamesMixin`: the constructor's parameter names read once per class, not
  at every ``get_params``.

and :func:`remembered`, state derived from a fitted model that predictions reuse.
"""

import weakref

import numpy as np
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted

__all__ = [
    "BaseEstimatorNanMixin",
    "ExplainMixin",
    "FittedInputMixin",
    "FittedTreeMixin",
    "HeterogeneousEnsembleMixin",
    "ParamNamesMixin",
    "PredictLogProbaMixin",
]


# The constructor parameter names of each estimator class, as scikit-learn's
# BaseEstimator._get_param_names reads them; see ParamNamesMixin.
_PARAM_NAMES = {}


class ParamNamesMixin:
    """``_get_param_names`` read from the constructor's signature once per class.

    scikit-learn's ``BaseEstimator._get_param_names`` calls ``inspect.signature`` on
    ``__init__`` at every ``get_params``, about 0.1 ms, and ``clone``, ``set_params`` and
    the estimator tags each call ``get_params``. An AdaBoost fit of 100 stumps on a small
    table spent 40% of its time there (cProfile, diabetes: six calls a round). A class's
    constructor does not change, so its names are kept per class (each subclass has its
    own). Put this mixin before ``BaseEstimator`` in a class's bases.
    """

    @classmethod
    def _get_param_names(cls):
        names = _PARAM_NAMES.get(cls)
        if names is None:
            names = _PARAM_NAMES[cls] = tuple(super()._get_param_names())
        return list(names)


# Derived prediction state, per estimator: kept out of the estimator's __dict__ so that it
# never reaches a model file, a clone or a pickle, and dropped with the estimator.
_REMEMBERED = weakref.WeakKeyDictionary()


def remembered(estimator, name, key, compute):
    """``compute()``, recomputed only when ``key`` differs from the last call's.

    For what a fitted model implies but does not store and every prediction needs (a
    bagging ensemble's feature draws, say): ``key`` must capture everything ``compute``
    reads, so that a refit, a warm start or a loaded model recomputes it.
    """
    memos = _REMEMBERED.setdefault(estimator, {})
    entry = memos.get(name)
    if entry is None or entry[0] != key:
        entry = memos[name] = (key, compute())
    return entry[1]

class PredictLogProbaMixin:
    """``predict_log_proba`` for a classifier with ``predict_proba``."""

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba` (-inf for a zero probability); a list of
        one array per output for a multi-output classifier."""
        probabilities = self.predict_proba(X)
        with np.errstate(divide="ignore"):
            if isinstance(probabilities, list):
                return [np.log(p) for p in probabilities]
            return np.log(probabilities)


class FittedInputMixin:
    """``_validated_X``: X to predict from, once ``_fitted_attribute`` is set.

    The estimator provides ``_prepare_X(X, reset)``.
    """

    _fitted_attribute = "estimators_"

    def _validated_X(self, X):
        check_is_fitted(self, self._fitted_attribute)
        return self._prepare_X(X, reset=False)



class MemberSequenceMixin:
    """scikit-learn's ensemble face: ``len(ensemble)``, ``ensemble[i]`` and iteration
    over the fitted members, ``estimators_``."""

    def __len__(self):
        """Number of fitted members."""
        return len(self.estimators_)

    def __getitem__(self, index):
        """The ``index``-th fitted member (an estimator that predicts)."""
        return self.estimators_[index]

    def __iter__(self):
        return iter(self.estimators_)

class FittedTreeMixin(FittedInputMixin):
    """Methods of an estimator whose fitted model is one tree, ``tree_``."""

    _fitted_attribute = "tree_"

    def apply(self, X):
        """Index of the node where each sample's path ends: its leaf (for ID3 and C4.5,
        the inner node whose test the sample cannot take, if any; see their notes)."""
        X = self._validated_X(X)  # first: it raises NotFittedError before tree_ is read
        return self.tree_.apply(X)

    def get_depth(self):
        """Depth of the tree: the largest number of edges from the root to a leaf."""
        check_is_fitted(self, "tree_")
        return self.tree_.max_depth

    def get_n_leaves(self):
        """Number of leaves of the tree (ID3 and C4.5 do not count branches without
        training cases)."""
        check_is_fitted(self, "tree_")
        return self.tree_.n_leaves

    @property
    def feature_importances_(self):
        """Normalised total impurity decrease per feature (mean decrease in impurity;
        for ID3 and C4.5 the impurity is the entropy, so this is the information gain)."""
        check_is_fitted(self, "tree_")
        return self.tree_.compute_feature_importances()


class BaseEstimatorNanMixin:
    """Tags of an ensemble around ``self._base_estimator()``: NaN in X is accepted when
    the base estimator accepts it."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        base_tags = get_tags(self._base_estimator()).input_tags
        tags.input_tags.allow_nan = base_tags.allow_nan
        tags.input_tags.sparse = base_tags.sparse
        return tags


def _named_items(estimators):
    """The well-formed (name, model) pairs of an ``estimators`` parameter (any value)."""
    if not isinstance(estimators, list | tuple):
        return []
    return [tuple(item) for item in estimators
            if isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str)]


class HeterogeneousEnsembleMixin:
    """Nested parameters for an ensemble whose ``estimators`` is a list of (name, model).

    ``get_params(deep=True)`` lists each model under its name and its parameters as
    ``name__param``; ``set_params`` replaces a model by name (or drops it with ``"drop"``)
    and forwards ``name__param`` to it. The ensemble takes sparse X when every model does
    (X passes to them as it is).
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        models = [model for _, model in _named_items(getattr(self, "estimators", None))
                  if not isinstance(model, str)]
        tags.input_tags.sparse = bool(models) and all(
            get_tags(model).input_tags.sparse for model in models)
        return tags

    def get_params(self, deep=True):
        params = super().get_params(deep=False)
        if not deep:
            return params
        for name, model in _named_items(getattr(self, "estimators", None)):
            params[name] = model
            if hasattr(model, "get_params") and not isinstance(model, type):
                for key, value in model.get_params(deep=True).items():
                    params[f"{name}__{key}"] = value
        for key, value in super().get_params(deep=True).items():
            params.setdefault(key, value)
        return params

    def set_params(self, **params):
        if "estimators" in params:
            self.estimators = params.pop("estimators")
        names = [item[0] for item in _named_items(getattr(self, "estimators", None))]
        for name in [key for key in params if key in names]:
            replacement = params.pop(name)
            self.estimators = [(n, replacement if n == name else model)
                               for n, model in _named_items(self.estimators)]
        nested = {}
        for key in list(params):
            head, sep, rest = key.partition("__")
            if sep and head in names:
                nested.setdefault(head, {})[rest] = params.pop(key)
        for name, values in nested.items():
            dict(_named_items(self.estimators))[name].set_params(**values)
        super().set_params(**params)
        return self


class ExplainMixin:
    """The SHAP branch of a tree model's ``predict``: ``pred_contrib=True`` returns SHAP
    values, ``(n_samples, (n_features + 1) * n_outputs)`` with each block's expected
    value last, and ``pred_interactions=True`` SHAP interaction values (binary trees
    only), as laid out in :mod:`silva.explain`."""

    def _explain(self, X, pred_interactions, iteration_range=None):
        from silva import explain  # only models that are explained load it

        if iteration_range is not None:
            raise ValueError(f"{type(self).__name__}.predict: pred_contrib and "
                             "pred_interactions explain all iterations; leave "
                             "iteration_range=None.")

        if pred_interactions:
            return explain.interactions(self, X)
        return explain.contributions(self, X)
