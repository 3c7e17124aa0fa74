"""Stacking (stacked generalisation, Wolpert 1992; Breiman 1996, "Stacked regressions").

Base models' predictions become the features of a final model. The final model is trained
only on *out-of-fold* predictions: the training set is split into ``cv`` folds and each
sample's meta-features come from copies of the base models that did not see it, so a base
model that memorises its training set (a 1-nearest-neighbour, a fully grown tree) cannot
pass its perfect training-set answers on to the final model. For prediction, each base
model is refitted on the whole training set.

- ``passthrough=True`` appends the original features to the meta-features (cascade
  stacking: the final model sees both).
- Multi-level stacking is nesting: a stacking estimator can be a base model, or the
  ``final_estimator``, of another.
- ``final_estimator``: any estimator; by default logistic regression (classification) or
  ridge regression with built-in cross-validation of its penalty (regression). A
  gradient-boosting model works as well as any other.

The stacked columns per model (:attr:`StackingClassifier.stack_method_`) are: class
probabilities (with two classes only the second class's, since the two sum to one),
decision-function values, or predicted class codes.

A multilabel y (a 0/1 indicator matrix, one column per label) is stacked per label, as
scikit-learn's stacking does: a model's probabilities given as one array per label
contribute each label's positive-class column; an output that is already one column per
label (a neural network's ``predict_proba``, a ridge classifier's ``decision_function``,
any ``predict``) is stacked as it is. The final model must then take a multilabel y.
"""

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    RegressorMixin,
    TransformerMixin,
    clone,
    is_classifier,
)
from sklearn.linear_model import LogisticRegression, RidgeCV
from sklearn.model_selection import check_cv, cross_val_predict
from sklearn.utils import Bunch
from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping, process_routing
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import (
    _check_feature_names_in,
    check_array,
    check_is_fitted,
    column_or_1d,
)

from silva import _input
from silva._mixins import HeterogeneousEnsembleMixin, ParamNamesMixin
from silva.persistence import PersistenceMixin
from silva.voting import (
    _named_models,
    _routing_enabled,
    check_estimator_list,
    check_model_input,
    check_takes_sample_weight,
    fit_params,
    reject_unrouted_params,
    routed_fit_params,
)

__all__ = ["StackingClassifier", "StackingRegressor"]

STACK_METHODS = ("auto", "predict_proba", "decision_function", "predict")
DEFAULT_FOLDS = 5


def _num_samples(X):
    return X.shape[0] if hasattr(X, "shape") else len(X)


def _final_has(method):
    def check(self):
        final = getattr(self, "final_estimator_", None)
        if final is None:
            final = self._final_estimator_template()
        # getattr, not hasattr: the final model's own AttributeError becomes the cause
        # of the one available_if raises, as in scikit-learn's stacking.
        getattr(final, method)
        return True

    return check


class _FeatureCount:
    """``n_features_in_`` of a stacking ensemble, as scikit-learn's: once fitted, that of
    its first model (a model may lack it: reading it then raises that model's
    AttributeError); before fit an AttributeError whose first sentence is
    scikit-learn's. What ``fit`` records stays in the instance's ``__dict__`` under
    the attribute's own name, so pickles and model files see an ordinary attribute.
    """

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        models = instance.__dict__.get("estimators_")
        if models:
            return models[0].n_features_in_
        try:
            return instance.__dict__[self.name]
        except KeyError:
            raise AttributeError(f"{type(instance).__name__} object has no attribute "
                                 f"{self.name}: it is set by fit.") from None

    def __set__(self, instance, value):
        instance.__dict__[self.name] = value

    def __delete__(self, instance):
        try:
            del instance.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None


class _BaseStacking(PersistenceMixin, HeterogeneousEnsembleMixin, TransformerMixin,
                    ParamNamesMixin, BaseEstimator):
    n_features_in_ = _FeatureCount()

    def __init__(self, estimators, final_estimator=None, *, cv=None, passthrough=False):
        self.estimators = estimators
        self.final_estimator = final_estimator
        self.cv = cv
        self.passthrough = passthrough

    def _final_estimator_template(self):
        if self.final_estimator is None:
            return self._default_final_estimator()
        return self.final_estimator

    def _resolve_methods(self, estimators):
        return ["predict"] * len(estimators)

    def _fit_stack(self, X, y, sample_weight, kind, extra_params):
        estimators = check_estimator_list(self.estimators, kind)
        if not isinstance(self.passthrough, bool | np.bool_):
            raise TypeError(f"passthrough must be True or False; got {self.passthrough!r}.")
        final = self._final_estimator_template()
        if not hasattr(final, "fit"):
            raise ValueError(f"final_estimator must be an estimator with fit; got {final!r}.")
        X = check_model_input(self, X, reset=True)
        n_samples = _num_samples(X)
        if y.shape[0] != n_samples:
            raise ValueError(f"X has {n_samples} samples but y has {y.shape[0]}.")
        if sample_weight is not None:
            sample_weight = _input.check_sample_weight(sample_weight, n_samples)
        kept = [(name, model) for name, model in estimators if not isinstance(model, str)]
        if not _routing_enabled():
            check_takes_sample_weight([*kept, ("final_estimator", final)], sample_weight,
                                      type(self).__name__)
        routed = routed_fit_params(self, [name for name, _ in kept], sample_weight,
                                   extra_params)
        # The final model gets every fit parameter, as in scikit-learn's stacking.
        params = {**fit_params(sample_weight), **extra_params}
        methods = self._resolve_methods(kept)
        if isinstance(self.cv, str) and self.cv == "prefit":
            return self._fit_prefit(X, y, estimators, kept, methods, final, params)
        self._prefit = False
        cv = check_cv(DEFAULT_FOLDS if self.cv is None else self.cv, y,
                      classifier=is_classifier(self))
        # One list of folds for every model, so that all meta-features of a sample come
        # from models that were trained without that sample.
        try:
            folds = list(cv.split(X, y))
        except ValueError as error:
            # scikit-learn's splitters name n_splits, not the parameter the user set.
            shown = f"{self.cv!r}" if self.cv is not None else f"None ({DEFAULT_FOLDS} folds)"
            raise ValueError(f"cv={shown} cannot split these {n_samples} samples into "
                             f"folds: {error} Use fewer folds (cv) or more samples.") from None
        self.estimators_ = []
        self.named_estimators_ = Bunch()
        self.stack_method_ = []
        columns = []
        for (name, model), method in zip(kept, methods, strict=True):
            # The model itself, not what its fit returns (which need not be self).
            fitted = clone(model)
            fitted.fit(X, y, **routed[name])
            out_of_fold = cross_val_predict(clone(model), X, y, cv=folds, method=method,
                                            params=routed[name])
            self.estimators_.append(fitted)
            self.named_estimators_[name] = fitted
            self.stack_method_.append(method)
            columns.append(self._stack_columns(out_of_fold, method))
        for name, model in estimators:
            if isinstance(model, str):
                self.named_estimators_[name] = model
        self._n_feature_outs = [column.shape[1] for column in columns]
        meta = self._with_passthrough(np.hstack(columns), X)
        self.final_estimator_ = clone(final)
        self.final_estimator_.fit(meta, y, **params)
        return self

    def _fit_prefit(self, X, y, estimators, kept, methods, final, params):
        """``cv="prefit"``: the base models are already fitted (on other data than X,
        or the final model learns from their training-set answers); they are kept as
        they are, not cloned nor refitted, and only the final model is fitted, on their
        outputs for X (scikit-learn's meaning of ``cv="prefit"``)."""
        for name, model in kept:
            check_is_fitted(model, msg=f"cv='prefit' needs fitted base models; estimator "
                                       f"{name!r} is not fitted.")
        self._prefit = True
        self.estimators_ = [model for _, model in kept]
        self.named_estimators_ = Bunch(**dict(estimators))
        self.stack_method_ = list(methods)
        columns = self._model_columns(X)
        self._n_feature_outs = [column.shape[1] for column in columns]
        meta = self._with_passthrough(np.hstack(columns), X)
        self.final_estimator_ = clone(final)
        self.final_estimator_.fit(meta, y, **params)
        return self

    def _model_columns(self, X):
        return [self._stack_columns(self._model_output(model, method, X), method)
                for model, method in zip(self.estimators_, self.stack_method_, strict=True)]

    def _model_output(self, model, method, X):
        return getattr(model, method)(X)

    def get_metadata_routing(self):
        """scikit-learn's metadata routing: ``fit`` routes to each base model's ``fit``,
        ``predict`` to the final model's ``predict`` (used only with
        ``sklearn.set_config(enable_metadata_routing=True)``)."""
        router = MetadataRouter(owner=self)
        for name, model in _named_models(self.estimators):
            router.add(**{name: model},
                       method_mapping=MethodMapping().add(caller="fit", callee="fit"))
        final = getattr(self, "final_estimator_", None)
        router.add(final_estimator_=final if final is not None
                   else self._final_estimator_template(),
                   method_mapping=MethodMapping().add(caller="predict", callee="predict"))
        return router

    def _final_predict_params(self, predict_params):
        """The keyword arguments of the final model's ``predict``: routed when metadata
        routing is on, all of ``predict_params`` otherwise."""
        if not _routing_enabled():
            return predict_params
        return dict(process_routing(self, "predict", **predict_params).final_estimator_
                    .predict)

    def get_feature_names_out(self, input_features=None):
        """Names of :meth:`transform`'s columns: ``<ensemble>_<model>`` for a model
        stacked as one column, ``<ensemble>_<model><k>`` for its k-th of several, then,
        with ``passthrough=True``, the input feature names (scikit-learn's naming)."""
        check_is_fitted(self, "final_estimator_")
        input_features = _check_feature_names_in(self, input_features,
                                                 generate_names=self.passthrough)
        prefix = type(self).__name__.lower()
        kept = [name for name, model in self.estimators if not isinstance(model, str)]
        names = []
        for name, n_columns in zip(kept, self._n_feature_outs, strict=True):
            names.extend([f"{prefix}_{name}"] if n_columns == 1 else
                         [f"{prefix}_{name}{k}" for k in range(n_columns)])
        if self.passthrough:
            names.extend(input_features)
        return np.asarray(names, dtype=object)

    def _stack_columns(self, predictions, method):
        if isinstance(predictions, list):
            # One probability array per output of a multi-output model: each output's
            # columns, less the first of a two-class output (the two sum to one).
            outputs = [np.asarray(output, dtype=np.float64) for output in predictions]
            return np.hstack([output[:, 1:] if output.shape[1] == 2 else output
                              for output in outputs])
        predictions = np.asarray(predictions, dtype=np.float64)
        if predictions.ndim == 1:
            return predictions[:, None]
        if getattr(self, "_multilabel", False):
            # Already one column per label (e.g. an MLP's probabilities): nothing is
            # collinear, and dropping a column would drop a label.
            return predictions
        if method == "predict_proba" and predictions.shape[1] == 2:
            # The two probabilities sum to one: keep one to avoid collinear features.
            return predictions[:, 1:]
        return predictions

    def _with_passthrough(self, meta, X):
        if not self.passthrough:
            return meta
        if _input.is_sparse(X):
            import scipy.sparse

            # As scikit-learn's stacking: a sparse X stays sparse next to the meta-features.
            return scipy.sparse.hstack([meta, X.astype(np.float64)], format="csr")
        X = check_array(X, dtype=np.float64, ensure_all_finite=False)
        return np.hstack([meta, X])

    def transform(self, X):
        """Meta-features of X: each base model's stacked output (models refitted on the
        whole training set), followed by the features of X when ``passthrough=True``."""
        check_is_fitted(self, "final_estimator_")
        X = check_model_input(self, X, reset=False)
        return self._with_passthrough(np.hstack(self._model_columns(X)), X)


class StackingClassifier(ClassifierMixin, _BaseStacking):
    """Stacked generalisation for classification, trained on out-of-fold predictions.

    Parameters
    ----------
    estimators : list of (str, classifier or "drop")
        The base models.
    final_estimator : classifier or None, default=None
        Trained on the meta-features; None means ``LogisticRegression()``.
    cv : int, cross-validation splitter, iterable of (train, test) splits or "prefit", \
            default=None
        Folds for the out-of-fold predictions; None means 5 folds (stratified). The
        splits must partition the samples (each sample in exactly one test fold).
        "prefit": the base models are already fitted and are used as they are; only the
        final model is fitted, on their outputs for X.
    stack_method : {"auto", "predict_proba", "decision_function", "predict"} or list, \
            default="auto"
        Output of each base model that is stacked ("auto": the first of
        predict_proba, decision_function, predict that the model has); one string for
        all models or one per model (the "drop" ones included).
    passthrough : bool, default=False
        Append the original features to the meta-features (cascade stacking).

    Attributes
    ----------
    estimators_ : list of base models fitted on the whole training set
    named_estimators_ : Bunch of the fitted models by name
    final_estimator_ : the fitted final model
    stack_method_ : list of str, the method stacked for each model of ``estimators_``
    classes_ : ndarray of shape (n_classes,), or a list of one such array per label
        when y is multilabel
    n_features_in_ : int

    Notes
    -----
    Base and final models are trained on class codes 0..K-1 (indices into ``classes_``),
    so that predicted classes can be stacked as numbers whatever the labels are.

    A multilabel y (a 2-D 0/1 indicator matrix) stacks each model's per-label outputs
    (see the module's docstring); ``predict`` then returns one column per label.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> from silva import DecisionTreeClassifier
    >>> from silva.stacking import StackingClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> stack = StackingClassifier([
    ...     ("tree", DecisionTreeClassifier(max_depth=3, random_state=0)),
    ...     ("knn", KNeighborsClassifier()),
    ... ]).fit(X, y)
    >>> stack.transform(X).shape
    (569, 2)
    """

    def __init__(self, estimators, final_estimator=None, *, cv=None, stack_method="auto",
                 passthrough=False):
        super().__init__(estimators, final_estimator, cv=cv, passthrough=passthrough)
        self.stack_method = stack_method

    def _default_final_estimator(self):
        return LogisticRegression()

    def _model_output(self, model, method, X):
        output = getattr(model, method)(X)
        if getattr(self, "_prefit", False) and method == "predict":
            # A prefit model predicts labels, not the class codes the others learn.
            if self._multilabel:
                output = np.column_stack([
                    np.searchsorted(classes, column)
                    for classes, column in zip(self.classes_, np.asarray(output).T,
                                               strict=True)])
            else:
                output = np.searchsorted(self.classes_, np.asarray(output))
        return output

    def _resolve_methods(self, kept):
        methods = self.stack_method
        n_all = len(self.estimators)
        if isinstance(methods, str):
            methods = [methods] * n_all
        elif not isinstance(methods, list | tuple) or len(methods) != n_all:
            raise ValueError(f"stack_method must be one of {list(STACK_METHODS)} or a list "
                             f"with one of them per estimator ({n_all}); got "
                             f"{self.stack_method!r}.")
        by_name = dict(zip([name for name, _ in self.estimators], methods, strict=True))
        resolved = []
        for name, model in kept:
            method = _input.check_option(by_name[name], "stack_method", set(STACK_METHODS))
            if method == "auto":
                method = next(m for m in ("predict_proba", "decision_function", "predict")
                              if hasattr(model, m))
            elif not hasattr(model, method):
                raise ValueError(f"Underlying estimator {name!r} does not implement the "
                                 f"method {method}: stack_method={method!r} is not available "
                                 f"for it ({type(model).__name__}).")
            resolved.append(method)
        return resolved

    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit the base models, their out-of-fold predictions and the final model.

        ``fit_params`` beyond ``sample_weight`` need scikit-learn's metadata routing,
        which sends them to the base models that request them; the final model gets
        them all, as in scikit-learn."""
        reject_unrouted_params(self, fit_params)
        if y is None:
            raise ValueError("StackingClassifier requires y to be passed, but the target y "
                             "is None.")
        # Only a 2-D y can be multilabel; asked of a 1-D y, type_of_target sorts its labels,
        # which fails on missing ones before classification_target can name them.
        if np.asarray(y).ndim == 2 and type_of_target(y) == "multilabel-indicator":
            # Each label its own classes and codes, as a multi-output tree keeps them.
            self._multilabel = True
            y = np.asarray(y)
            encoded = [_input.classification_target(column) for column in y.T]
            self.classes_ = [classes for classes, _ in encoded]
            y_code = np.column_stack([codes for _, codes in encoded])
            return self._fit_stack(X, y_code, sample_weight, "classifier", fit_params)
        self._multilabel = False
        y = column_or_1d(y, warn=True)
        self.classes_, y_code = _input.classification_target(y)
        if len(self.classes_) < 2:
            raise ValueError(f"StackingClassifier needs samples of at least 2 classes in y; "
                             f"got {len(self.classes_)} class: {self.classes_.tolist()}.")
        return self._fit_stack(X, y_code, sample_weight, "classifier", fit_params)

    def predict(self, X, **predict_params):
        """Class predicted by the final model from the meta-features of X;
        ``predict_params`` go to the final model's ``predict``."""
        meta = self.transform(X)
        codes = self.final_estimator_.predict(meta,
                                              **self._final_predict_params(predict_params))
        codes = np.asarray(codes).astype(np.intp)
        if getattr(self, "_multilabel", False):
            return np.column_stack([classes[column] for classes, column
                                    in zip(self.classes_, codes.T, strict=True)])
        return self.classes_[codes]

    @available_if(_final_has("predict_proba"))
    def predict_proba(self, X):
        """The final model's class probabilities (columns in the order of ``classes_``)."""
        meta = self.transform(X)
        return self.final_estimator_.predict_proba(meta)

    @available_if(_final_has("decision_function"))
    def decision_function(self, X):
        """The final model's decision function."""
        meta = self.transform(X)
        return self.final_estimator_.decision_function(meta)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # As scikit-learn's: a multilabel y works only with a final model that takes one
        # (the default logistic regression does not).
        tags.classifier_tags.multi_label = False
        return tags


class StackingRegressor(RegressorMixin, _BaseStacking):
    """Stacked generalisation for regression, trained on out-of-fold predictions.

    Parameters
    ----------
    estimators : list of (str, regressor or "drop")
    final_estimator : regressor or None, default=None
        None means ``RidgeCV()`` (ridge regression, penalty chosen by cross-validation).
    cv : int, cross-validation splitter, iterable of (train, test) splits or "prefit", \
            default=None
        None means 5 folds (not shuffled); "prefit" as for :class:`StackingClassifier`.
    passthrough : bool, default=False
        Append the original features to the base models' predictions.

    Attributes
    ----------
    estimators_ : list of base models fitted on the whole training set
    named_estimators_ : Bunch of the fitted models by name
    final_estimator_ : the fitted final model
    stack_method_ : list of str (all "predict")
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.linear_model import Ridge
    >>> from silva import DecisionTreeRegressor
    >>> from silva.stacking import StackingRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> stack = StackingRegressor([("tree", DecisionTreeRegressor(max_depth=3)),
    ...                            ("ridge", Ridge())]).fit(X, y)
    >>> stack.transform(X).shape
    (442, 2)
    """

    def _default_final_estimator(self):
        return RidgeCV()

    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit the base models, their out-of-fold predictions and the final model.

        ``fit_params`` beyond ``sample_weight`` need scikit-learn's metadata routing,
        which sends them to the base models that request them; the final model gets
        them all, as in scikit-learn."""
        reject_unrouted_params(self, fit_params)
        if y is None:
            raise ValueError("StackingRegressor requires y to be passed, but the target y "
                             "is None.")
        y = column_or_1d(y, warn=True)
        return self._fit_stack(X, y, sample_weight, "regressor", fit_params)

    def predict(self, X, **predict_params):
        """The final model's prediction from the meta-features of X; ``predict_params``
        go to the final model's ``predict`` (e.g. ``return_std=True`` of a Gaussian
        process or Bayesian ridge, which then returns (mean, std))."""
        meta = self.transform(X)
        return self.final_estimator_.predict(meta,
                                             **self._final_predict_params(predict_params))
