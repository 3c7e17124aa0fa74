"""Voting: combine different fitted models by a (weighted) vote or average.

:class:`VotingClassifier` predicts by hard voting (the class that the most models, or the
largest total weight of models, predict) or soft voting (the class of largest weighted
sum of predicted probabilities), with one weight per model or one weight per model and
class: the soft vote is argmax_c sum_m w_{m,c} p_{m,c}(x) (Kuncheva, *Combining Pattern
Classifiers*, 2nd ed. 2014, ch. 5). :class:`VotingRegressor` averages the models'
predictions with weights. Any scikit-learn estimators can be combined; they are cloned
and refitted on the whole training set.

Voting and stacking take the nested ``get_params``/``set_params`` of scikit-learn's
composite estimators (``set_params(tree__max_depth=3)``, ``set_params(tree="drop")``)
from :class:`silva._mixins.HeterogeneousEnsembleMixin`.
"""

import inspect
import time

import numpy as np
from joblib import Parallel, delayed
from sklearn import get_config
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin, clone
from sklearn.utils import Bunch
from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping, process_routing
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import (
    _check_feature_names_in,
    check_is_fitted,
    column_or_1d,
    has_fit_parameter,
    validate_data,
)
from sklearn.utils.validation import _num_samples as _sklearn_num_samples

from silva import _input
from silva._mixins import HeterogeneousEnsembleMixin, ParamNamesMixin
from silva.persistence import PersistenceMixin

__all__ = ["HeterogeneousEnsembleMixin", "VotingClassifier", "VotingRegressor"]

DROP = "drop"


# scikit-learn's wording of a malformed ``estimators`` (its tests match on it); silva
# adds what it got.
_INVALID_ESTIMATORS = ("Invalid 'estimators' attribute, 'estimators' should be a non-empty "
                       "list of (string, estimator) tuples")


def check_estimator_list(estimators, kind, allow_drop=True):
    """Validated ``[(name, estimator)]``: unique valid names, at least one model that is
    not ``"drop"``, each with ``fit``."""
    if not isinstance(estimators, list | tuple) or len(estimators) == 0:
        raise ValueError(f"{_INVALID_ESTIMATORS}: estimators must be a non-empty list of "
                         f"(name, estimator) pairs; got {estimators!r}.")
    names = []
    for item in estimators:
        if not (isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str)):
            raise ValueError(f"{_INVALID_ESTIMATORS}: estimators must hold (name, "
                             f"estimator) pairs with string names; got {item!r}.")
        name, model = item
        if "__" in name or not name:
            raise ValueError(f"estimator name {name!r} must be non-empty and must not "
                             "contain '__'.")
        if name in names:
            raise ValueError(f"estimator names must be unique; {name!r} appears twice.")
        names.append(name)
        if isinstance(model, str) and model == DROP and allow_drop:
            continue
        # fit alone is required, as by scikit-learn's ensembles: a model used only to be
        # fitted (a mock, a model whose prediction comes later) is accepted, and one
        # without predict fails when it is asked to predict.
        if not hasattr(model, "fit"):
            raise ValueError(f"estimator {name!r} must be an {kind} with fit (or 'drop'); "
                             f"got {model!r}.")
    if all(isinstance(m, str) and m == DROP for _, m in estimators):
        raise ValueError("All estimators are dropped. At least one is required: every "
                         "entry of estimators is 'drop'.")
    return [(name, model) for name, model in estimators]


def check_model_input(ensemble, X, *, reset):
    """X to hand to the models: a data frame unchanged (models may take categorical
    columns), anything else as a 2-d array of any dtype; records or checks
    ``n_features_in_`` and ``feature_names_in_``."""
    if _input._is_dataframe(X):
        validate_data(ensemble, X, skip_check_array=True, reset=reset)
        return X
    return validate_data(ensemble, X, reset=reset, dtype=None, ensure_all_finite=False,
                         accept_sparse=True)


def fit_params(sample_weight):
    return {} if sample_weight is None else {"sample_weight": sample_weight}


def _fit_takes_sample_weight(model):
    """Whether ``model.fit`` names ``sample_weight`` or takes any keyword (``**params``,
    which scikit-learn's ensembles pass sample_weight through, too)."""
    if has_fit_parameter(model, "sample_weight"):
        return True
    try:
        parameters = inspect.signature(model.fit).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def check_takes_sample_weight(named_models, sample_weight, ensemble):
    """A TypeError, in scikit-learn's words, when ``sample_weight`` is given and one of
    ``named_models`` (``[(name, model)]``) has a ``fit`` without that parameter: it
    would otherwise fail deep inside the fit, or, in a cross-validation, once per
    fold."""
    if sample_weight is None:
        return
    for name, model in named_models:
        if not _fit_takes_sample_weight(model):
            raise TypeError(f"Underlying estimator {type(model).__name__} does not support "
                            f"sample weights: {ensemble} was given sample_weight, and "
                            f"{name!r}.fit takes no sample_weight parameter.")


def _routing_enabled():
    return bool(get_config().get("enable_metadata_routing", False))


def reject_unrouted_params(ensemble, params, method="fit"):
    """A ValueError when ``params`` (keyword arguments beyond ``sample_weight``) reach
    ``method`` without scikit-learn's metadata routing, which alone says which model
    is to receive them (the first sentence is scikit-learn's)."""
    if params and not _routing_enabled():
        raise ValueError(
            f"Passing extra keyword arguments to {type(ensemble).__name__}.{method} is only "
            f"supported if enable_metadata_routing=True, which you can set using "
            f"`sklearn.set_config`; got {sorted(params)}. With routing on, each model says "
            "which it takes (e.g. `set_fit_request`).")


def routed_fit_params(ensemble, names, sample_weight, params):
    """``{name: keyword arguments of that model's fit}``.

    With scikit-learn's metadata routing on, ``sample_weight`` and ``params`` go to
    the models that requested them (:func:`sklearn.utils.metadata_routing.process_routing`
    over :meth:`get_metadata_routing`); otherwise every model gets ``sample_weight``.
    """
    if not _routing_enabled():
        reject_unrouted_params(ensemble, params)
        return {name: fit_params(sample_weight) for name in names}
    given = {**fit_params(sample_weight), **params}
    routed = process_routing(ensemble, "fit", **given)
    return {name: dict(routed[name].fit) for name in names}


def _named_models(estimators):
    """The (name, model) pairs of ``estimators`` that are models (not "drop"), as far
    as ``estimators`` is well formed (routing is asked before validation)."""
    return [(item[0], item[1]) for item in (estimators or [])
            if isinstance(item, tuple | list) and len(item) == 2
            and not (isinstance(item[1], str) and item[1] == DROP)]


def _fit_one(model, X, y, params, progress):
    """``model`` fitted on (X, y) with ``params``; with ``progress`` (a message), prints
    it and the seconds the fit took, in scikit-learn's ``[Voting] ... total=  0.1s``
    form."""
    started = time.perf_counter()
    model.fit(X, y, **params)
    if progress is not None:
        print(f"[Voting] {progress}, total={time.perf_counter() - started:6.1f}s", flush=True)
    return model


class _BaseVoting(PersistenceMixin, HeterogeneousEnsembleMixin, TransformerMixin,
                  ParamNamesMixin, BaseEstimator):
    def _fit_models(self, X, y, sample_weight, kind, params):
        estimators = check_estimator_list(self.estimators, kind)
        X = check_model_input(self, X, reset=True)
        if sample_weight is not None:
            sample_weight = _input.check_sample_weight(sample_weight, _num_samples(X))
        self._kept = [name for name, model in estimators if not isinstance(model, str)]
        models = dict(estimators)
        if not _routing_enabled():
            check_takes_sample_weight([(name, models[name]) for name in self._kept],
                                      sample_weight, type(self).__name__)
        routed = routed_fit_params(self, self._kept, sample_weight, params)
        # The models are independent: n_jobs fits them in parallel (joblib's meaning).
        self.estimators_ = Parallel(n_jobs=self.n_jobs)(
            delayed(_fit_one)(
                clone(models[name]), X, y, routed[name],
                f"({i} of {len(self._kept)}) Processing {name}" if self.verbose else None)
            for i, name in enumerate(self._kept, start=1))
        fitted = dict(zip(self._kept, self.estimators_, strict=True))
        self.named_estimators_ = Bunch(**{name: fitted.get(name, model)
                                          for name, model in estimators})
        return estimators

    def _feature_names_prefix(self):
        return type(self).__name__.lower()

    def get_metadata_routing(self):
        """scikit-learn's metadata routing: ``fit`` routes to each model's ``fit``
        (used only with ``sklearn.set_config(enable_metadata_routing=True)``)."""
        router = MetadataRouter(owner=self)
        for name, model in _named_models(self.estimators):
            router.add(**{name: model},
                       method_mapping=MethodMapping().add(caller="fit", callee="fit"))
        return router


    def _check_X(self, X):
        check_is_fitted(self, "estimators_")
        return check_model_input(self, X, reset=False)

    def _model_weights(self, estimators, n_classes=None):
        """Weights of the kept models: shape (n_models,) or, per class, (n_models, K)."""
        n_all = len(estimators)
        kept = [i for i, (_, m) in enumerate(estimators) if not isinstance(m, str)]
        if self.weights is None:
            return np.ones(len(kept))
        weights = np.asarray(self.weights, dtype=np.float64) if not isinstance(
            self.weights, str) else None
        if weights is None or weights.ndim not in (1, 2) or weights.shape[0] != n_all:
            # The first sentence is scikit-learn's.
            raise ValueError(f"Number of `estimators` and weights must be equal: weights "
                             f"must have one entry (or one row) per estimator, {n_all} in "
                             f"all; got {self.weights!r}.")
        if weights.ndim == 2 and (n_classes is None or weights.shape[1] != n_classes):
            expected = ("a 1-d array" if n_classes is None
                        else f"shape ({n_all}, {n_classes}) (one weight per class)")
            raise ValueError(f"weights must be {expected}; got shape {weights.shape}.")
        if not np.all(np.isfinite(weights)) or np.any(weights < 0):
            raise ValueError(f"weights must be finite and non-negative; got {self.weights!r}.")
        weights = weights[kept]
        if weights.sum() <= 0:
            raise ValueError("weights of the models kept sum to zero.")
        return weights


def _num_samples(X):
    return _sklearn_num_samples(X)


class VotingClassifier(ClassifierMixin, _BaseVoting):
    """Hard or soft voting over different classifiers.

    Parameters
    ----------
    estimators : list of (str, classifier or "drop")
        The models, cloned and fitted on the whole training set; ``"drop"`` leaves one out.
    voting : {"hard", "soft"}, default="hard"
        ``"hard"``: the class with the largest total weight of models predicting it.
        ``"soft"``: argmax_c sum_m w_{m,c} p_{m,c}(x), from the models' ``predict_proba``.
    weights : array-like of shape (n_estimators,) or (n_estimators, n_classes), default=None
        Non-negative weight of each model (None: equal weights), or of each model and
        class (columns in the order of ``classes_``), e.g. to trust a model more on the
        classes it is good at. A dropped model's weights are ignored.
    n_jobs : int, default=None
        Models fitted at once by joblib (None: one, -1: all cores).
    flatten_transform : bool, default=True
        Soft voting only: :meth:`transform` gives (n_samples, n_models * n_classes) when
        True, (n_models, n_samples, n_classes) when False.
    verbose : bool, default=False
        Print each model's name and fit time as it is fitted.

    Attributes
    ----------
    estimators_ : list of fitted classifiers (dropped ones left out)
    named_estimators_ : Bunch of the fitted models by name
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from silva import DecisionTreeClassifier
    >>> from silva.voting import VotingClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> vote = VotingClassifier([
    ...     ("tree", DecisionTreeClassifier(max_depth=3, random_state=0)),
    ...     ("logistic", make_pipeline(StandardScaler(), LogisticRegression())),
    ... ], voting="soft").fit(X, y)
    >>> vote.predict_proba(X).shape
    (569, 2)
    """

    def __init__(self, estimators, *, voting="hard", weights=None, n_jobs=None,
                 flatten_transform=True, verbose=False):
        self.estimators = estimators
        self.voting = voting
        self.weights = weights
        self.n_jobs = n_jobs
        self.flatten_transform = flatten_transform
        self.verbose = verbose

    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit every model on (X, y) (with ``sample_weight`` when given); other
        ``fit_params`` need scikit-learn's metadata routing, which routes them."""
        reject_unrouted_params(self, fit_params)
        _input.check_option(self.voting, "voting", {"hard", "soft"})
        if y is None:
            raise ValueError("VotingClassifier requires y to be passed, but the target y "
                             "is None.")
        shape = np.asarray(y).shape
        if len(shape) == 2 and shape[1] > 1:
            raise NotImplementedError("VotingClassifier: multilabel and multi-output "
                                      f"classification is not supported (y has shape "
                                      f"{shape}); vote per output instead.")
        y = column_or_1d(y, warn=True)
        self.classes_, y_code = _input.classification_target(y)
        # Models are fitted on the class codes, so their outputs line up with classes_.
        estimators = self._fit_models(X, y_code, sample_weight, "classifier", fit_params)
        self._weights = self._model_weights(estimators, len(self.classes_))
        return self

    def _per_class_weights(self):
        weights = self._weights
        if weights.ndim == 1:
            weights = np.repeat(weights[:, None], len(self.classes_), axis=1)
        return weights

    def _codes(self, model, X):
        return np.asarray(model.predict(X)).astype(np.intp, copy=False)

    def _model_proba(self, model, X):
        # Checked here, not at fit (as scikit-learn's voting): a model fitted for its
        # side effects alone need not predict at all.
        if not hasattr(model, "predict_proba"):
            name = self._kept[[m is model for m in self.estimators_].index(True)]
            raise ValueError(f"voting='soft' needs predict_proba, which estimator {name!r} "
                             "does not have.")
        proba = np.zeros((_num_samples(X), len(self.classes_)))
        proba[:, np.asarray(model.classes_).astype(np.intp)] = model.predict_proba(X)
        return proba

    def _class_scores(self, X):
        weights = self._per_class_weights()
        n_samples = _num_samples(X)
        scores = np.zeros((n_samples, len(self.classes_)))
        rows = np.arange(n_samples)
        for m, model in enumerate(self.estimators_):
            if self.voting == "soft":
                scores += weights[m] * self._model_proba(model, X)
            else:
                codes = self._codes(model, X)
                scores[rows, codes] += weights[m, codes]
        return scores

    def predict(self, X):
        """Class with the largest (weighted) vote; the first of equals."""
        X = self._check_X(X)
        return self.classes_[np.argmax(self._class_scores(X), axis=1)]

    def _check_soft_voting(self):
        # Raised, not returned False: available_if then chains this reason as the
        # AttributeError's cause, as scikit-learn's voting does.
        if self.voting != "soft":
            raise AttributeError(f"predict_proba is not available when "
                                 f"voting={self.voting!r}")
        return True

    @available_if(_check_soft_voting)
    def predict_proba(self, X):
        """Soft voting only: the weighted probability sums, normalised to sum to one per
        sample (with per-model weights, the weighted average of the probabilities). A
        sample whose weighted sum is zero for every class gets equal probabilities."""
        X = self._check_X(X)
        scores = self._class_scores(X)
        totals = scores.sum(axis=1, keepdims=True)
        uniform = np.full_like(scores, 1.0 / scores.shape[1])
        return np.where(totals > 0, scores / np.where(totals > 0, totals, 1.0), uniform)

    def transform(self, X):
        """Each model's output: for soft voting the probabilities, shape
        (n_samples, n_models * n_classes), model after model; for hard voting the
        predicted classes as indices into ``classes_`` (what the models, fitted on
        encoded labels, predict; scikit-learn's output), shape (n_samples, n_models).
        With ``flatten_transform=False`` soft voting gives the probabilities as
        (n_models, n_samples, n_classes)."""
        X = self._check_X(X)
        if self.voting == "soft":
            probas = [self._model_proba(model, X) for model in self.estimators_]
            return np.hstack(probas) if self.flatten_transform else np.asarray(probas)
        return np.column_stack([self._codes(model, X) for model in self.estimators_])

    def get_feature_names_out(self, input_features=None):
        """Names of :meth:`transform`'s columns: ``votingclassifier_<model>`` for hard
        voting, ``votingclassifier_<model><k>`` (k a class index) for soft voting."""
        check_is_fitted(self, "estimators_")
        _check_feature_names_in(self, input_features, generate_names=False)
        prefix = self._feature_names_prefix()
        if self.voting == "soft" and not self.flatten_transform:
            raise ValueError("get_feature_names_out is not supported when `voting='soft'` "
                             "and `flatten_transform=False`")
        if self.voting == "soft":
            return np.asarray([f"{prefix}_{name}{k}" for name in self._kept
                               for k in range(len(self.classes_))], dtype=object)
        return np.asarray([f"{prefix}_{name}" for name in self._kept], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = False
        if self.voting != "soft":
            # Hard voting transforms to predicted labels, not to features of X's dtype.
            tags.transformer_tags.preserves_dtype = []
        return tags


class VotingRegressor(RegressorMixin, _BaseVoting):
    """Weighted average of different regressors' predictions.

    Parameters
    ----------
    estimators : list of (str, regressor or "drop")
    weights : array-like of shape (n_estimators,), default=None
        Non-negative weight of each model (None: equal weights).
    n_jobs : int, default=None
        Models fitted at once by joblib (None: one, -1: all cores).
    verbose : bool, default=False
        Print each model's name and fit time as it is fitted.

    Attributes
    ----------
    estimators_ : list of fitted regressors (dropped ones left out)
    named_estimators_ : Bunch of the fitted models by name
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.linear_model import Ridge
    >>> from silva import DecisionTreeRegressor
    >>> from silva.voting import VotingRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> vote = VotingRegressor([("tree", DecisionTreeRegressor(max_depth=3)),
    ...                         ("ridge", Ridge())]).fit(X, y)
    >>> vote.transform(X).shape
    (442, 2)
    """

    def __init__(self, estimators, *, weights=None, n_jobs=None, verbose=False):
        self.estimators = estimators
        self.weights = weights
        self.n_jobs = n_jobs
        self.verbose = verbose

    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit every model on (X, y) (with ``sample_weight`` when given); other
        ``fit_params`` need scikit-learn's metadata routing, which routes them."""
        reject_unrouted_params(self, fit_params)
        if y is None:
            raise ValueError("VotingRegressor requires y to be passed, but the target y "
                             "is None.")
        y = column_or_1d(y, warn=True)
        estimators = self._fit_models(X, y, sample_weight, "regressor", fit_params)
        self._weights = self._model_weights(estimators)
        return self

    def transform(self, X):
        """Each model's predictions, shape (n_samples, n_models)."""
        X = self._check_X(X)
        return np.column_stack([np.asarray(model.predict(X), dtype=np.float64).ravel()
                                for model in self.estimators_])

    def get_feature_names_out(self, input_features=None):
        """Names of :meth:`transform`'s columns: ``votingregressor_<model>``."""
        check_is_fitted(self, "estimators_")
        _check_feature_names_in(self, input_features, generate_names=False)
        prefix = self._feature_names_prefix()
        return np.asarray([f"{prefix}_{name}" for name in self._kept], dtype=object)

    def predict(self, X):
        """sum_m w_m f_m(x) / sum_m w_m."""
        return self.transform(X) @ self._weights / self._weights.sum()
