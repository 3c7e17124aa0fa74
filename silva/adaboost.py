"""AdaBoost: boosting by reweighting samples, for classification and regression.

:class:`AdaBoostClassifier` fits a sequence of weak learners, each on the training set
reweighted so that the samples its predecessors got wrong weigh more, and combines them
by a weighted vote (Freund & Schapire 1997; Hastie, Tibshirani & Friedman, *The Elements
of Statistical Learning*, 2nd ed. 2009, Algorithm 10.1). Three variants:

- ``"discrete"``: binary AdaBoost.M1 with y in {-1, +1}. In round m the weak learner G_m
  has weighted error err_m; its weight is beta_m = learning_rate * log((1 - err_m) / err_m),
  misclassified samples have their weight multiplied by exp(beta_m), the weights are
  normalised, and the ensemble predicts sign(sum_m beta_m G_m(x)).
- ``"samme"``: the multiclass extension SAMME of Zhu, Zou, Rosset & Hastie (2009,
  "Multi-class AdaBoost"), beta_m = learning_rate * (log((1 - err_m) / err_m) + log(K - 1));
  the prediction is the class with the largest total weight of votes. With two classes it
  is exactly ``"discrete"``.
- ``"real"``: Real AdaBoost / SAMME.R (Friedman, Hastie & Tibshirani 2000; Zhu et al.
  2009, Algorithm 4): each learner contributes the symmetric log-probabilities
  h_m(x)_c = (K - 1) * (log p_c(x) - mean_k log p_k(x)) and the weights are multiplied by
  exp(-learning_rate * h_m(x_i)_{y_i} / (K - 1)).

:class:`AdaBoostRegressor` is AdaBoost.R2 (Drucker 1997, "Improving regressors using
boosting techniques"), which predicts the weighted median of its learners.

The base learner is any scikit-learn estimator; by default a silva stump
(``DecisionTreeClassifier(max_depth=1)``) or a depth-3 silva regression tree. A learner
whose ``fit`` takes no ``sample_weight``, or any learner when ``resample=True``, is
trained in each round on a bootstrap sample drawn with probabilities w_i / sum(w) (the
"resampling" form of boosting, Freund & Schapire 1996); its error is still measured on the
whole weighted training set.

Edge cases, where the textbook formulas would give an infinite or undefined weight, are
handled explicitly (never an infinite or NaN weight):

- **perfect learner** (weighted error 0, so log((1 - err) / err) is infinite): the error
  is replaced by eps0 = half the smallest positive current sample weight (as if the
  learner had missed half of the lightest sample), the weight is raised if needed to exceed the sum
  of all earlier weights, so that the ensemble reproduces the perfect learner exactly,
  and boosting stops (further rounds would see the same weights). For ``"real"`` a
  perfect learner needs nothing special (its contribution is finite, probabilities being
  floored at machine epsilon) and boosting continues;
- **learner no better than chance** (err >= 1 - 1/K, so beta <= 0; for AdaBoost.R2 an
  average loss >= 0.5): the learner is discarded and boosting stops; if it is the first
  learner, the ensemble keeps it alone, with weight ``learning_rate``, so that a model is
  still fitted (it predicts what that learner predicts).
"""

import copy

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import check_random_state, get_tags
from sklearn.utils.validation import check_is_fitted, has_fit_parameter, validate_data

from silva import _input
from silva._mixins import (
    BaseEstimatorNanMixin,
    ExplainMixin,
    ParamNamesMixin,
    PredictLogProbaMixin,
)
from silva._progress import progress
from silva.decision_tree import BaseDecisionTree, DecisionTreeClassifier, DecisionTreeRegressor
from silva.persistence import PersistenceMixin

__all__ = ["AdaBoostClassifier", "AdaBoostRegressor"]

ALGORITHMS = ("discrete", "samme", "real")
REGRESSION_LOSSES = ("linear", "square", "exponential")
# Probabilities are floored here before taking logarithms (SAMME.R), so that a pure leaf
# contributes a large but finite log-probability.
PROBABILITY_FLOOR = np.finfo(np.float64).eps
_SEED_HIGH = np.iinfo(np.int32).max
WEIGHT_GRID_BITS = 40


class BoostingWeights:
    """The sample weights of boosting: user weights times a per-sample boosting factor.

    A sample's weight is ``sample_weight_i * exp(log_factor_i)`` (normalised to sum to
    one), where ``log_factor`` accumulates the rounds' updates from zero. Keeping the
    factor apart from the user's weights, and in logarithms, lets weights span any range
    without overflow, and gives the learner weights that are exact multiples of the
    user's (see :meth:`for_learner`).
    """

    def __init__(self, sample_weight):
        self.sample_weight = sample_weight
        self.positive = sample_weight > 0
        self.log_factor = np.zeros_like(sample_weight)
        self._refresh()

    def _refresh(self):
        top = np.max(self.log_factor[self.positive])
        self.factor = np.where(self.positive, np.exp(self.log_factor - top), 0.0)
        weights = self.sample_weight * self.factor
        self.normalised = weights / weights.sum()

    def update(self, log_multiplier):
        """Multiply every weight by exp(log_multiplier) (then renormalise)."""
        self.log_factor = self.log_factor + log_multiplier
        self._refresh()

    def for_learner(self):
        """``sample_weight_i * factor_i``, the factor (largest 1) rounded to a multiple of
        2**-WEIGHT_GRID_BITS.

        With integer user weights, every sum of these weights that a learner forms is then
        exact in whatever order it is taken, and a sample of weight k gives the same sums
        as k copies of it. Splits that tie in exact arithmetic (two features cutting off
        the same samples) then tie in floating point too and are broken by the learner's
        own rule, not by rounding, so that weighting and repeating samples fit the same
        learners. Factors below half a grid step (~5e-13 of the largest) become zero: the
        learner leaves those samples out.
        """
        grid = np.ldexp(np.round(np.ldexp(self.factor, WEIGHT_GRID_BITS)), -WEIGHT_GRID_BITS)
        return self.sample_weight * grid


class _RoundLearners:
    """Each round's unfitted learner: a clone of the base learner with a round's seed.

    The base learner is cloned once per fit, and its seeded parameters found once: for
    silva's trees each round's learner is then a shallow copy of that clone with its
    ``random_state`` set, about 60 us less per round than scikit-learn's ``clone`` and
    ``set_params`` (a tenth of a round on diabetes' 353 rows). The copies share their
    parameters' values (a ``class_weight`` dict, say), which fitting never changes.
    Other learners are cloned every round, as scikit-learn's AdaBoost does.
    """

    def __init__(self, base):
        self.template = clone(base)
        self.silva_tree = isinstance(self.template, BaseDecisionTree)
        # Every random_state in the learner (nested ones included, e.g. in a pipeline)
        # gets the round's seed, so that the ensemble is deterministic.
        self.seed_keys = [key for key in self.template.get_params(deep=True)
                          if key == "random_state" or key.endswith("__random_state")]

    def new(self, seed):
        if self.silva_tree:
            learner = copy.copy(self.template)
            learner.random_state = seed
            return learner
        learner = clone(self.template)
        if self.seed_keys:
            learner.set_params(**{key: seed for key in self.seed_keys})
        return learner


def _softmax(scores):
    shifted = scores - scores.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=1, keepdims=True)


class _BaseAdaBoost(ExplainMixin, BaseEstimatorNanMixin, PersistenceMixin, ParamNamesMixin,
                    BaseEstimator):
    """Parameter checks, base-learner cloning and one boosting round's fit."""

    def __init__(self, estimator=None, *, n_estimators=50, learning_rate=1.0, resample=False,
                 random_state=None, verbose=0):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.verbose = verbose
        self.learning_rate = learning_rate
        self.resample = resample
        self.random_state = random_state

    def _check_common_params(self):
        _input.check_int(self.n_estimators, "n_estimators", 1)
        learning_rate = _input.check_float(self.learning_rate, "learning_rate", 0.0,
                                           low_inclusive=False)
        if not np.isfinite(learning_rate):
            raise ValueError(f"learning_rate must be finite; got {learning_rate}.")
        if not isinstance(self.resample, bool | np.bool_):
            raise TypeError(f"resample must be True or False; got {self.resample!r}.")
        return learning_rate

    def _base_estimator(self):
        return self._default_estimator() if self.estimator is None else self.estimator

    def _validate_X_y(self, X, y, sample_weight, y_numeric):
        """Validated X, y (class labels as given, or float64 targets when ``y_numeric``)
        and sample weights."""
        X = self._checked_X(X, reset=True)
        y = _input.target_1d(self, y, X.shape[0], stacklevel=4)
        if y_numeric:
            y = _input.regression_target(y)
        sample_weight = _input.check_sample_weight(sample_weight, X.shape[0])
        return X, y, sample_weight

    def _validated_X(self, X):
        check_is_fitted(self, "estimators_")
        allow_nan = get_tags(self._base_estimator()).input_tags.allow_nan
        if _input.ready_to_predict(self, X, allow_nan=allow_nan):
            return X
        return self._checked_X(X, reset=False)

    def _checked_X(self, X, *, reset):
        """float64 X; NaN only when the base estimator takes it. A sparse X stays sparse
        (CSR) and reaches the learners as it is, as in scikit-learn's AdaBoost; X of more
        than two dimensions reaches a foreign learner that may take it."""
        allow_nan = get_tags(self._base_estimator()).input_tags.allow_nan
        if _input.is_sparse(X):
            X = _input.validate_sparse_X(self, X, reset=reset)
            if not allow_nan and _input.has_missing(X):
                raise ValueError(f"Input X contains NaN: {type(self).__name__}'s base "
                                 "estimator does not take missing values.")
            return X
        foreign = self._takes_nd_X()
        # C order for silva's trees, which need it: X given in another order (digits,
        # from scikit-learn, comes in Fortran order) was otherwise copied by every
        # round's tree, which then missed the codes binned in the first round.
        return validate_data(self, X, reset=reset, dtype=np.float64,
                             order=None if foreign else "C",
                             ensure_all_finite="allow-nan" if allow_nan else True,
                             allow_nd=foreign)

    def _takes_nd_X(self):
        """X of more than two dimensions (images, say) is handed to a foreign learner that
        may take it, as scikit-learn's AdaBoost does; silva's trees need a matrix."""
        return not isinstance(self._base_estimator(), BaseDecisionTree)

    def _fit_learner(self, X, y, weights, rng, learners, round_bins, takes_weight):
        """A new learner from ``learners`` (:class:`_RoundLearners`), seeded and fitted to
        the weighted sample.

        ``weights`` is a :class:`BoostingWeights`. Every round draws a seed, and resampling rounds a
        bootstrap, from ``rng`` in a fixed order, so a fit is reproducible from
        ``random_state``. ``round_bins`` is a dict kept for one ensemble fit, where silva
        trees keep the bin codes of X between rounds. ``takes_weight``: whether the base
        learner's ``fit`` takes ``sample_weight`` (:meth:`_learner_takes_weight`).
        """
        learner = learners.new(int(rng.randint(_SEED_HIGH)))
        if self.resample or not takes_weight:
            n_samples = X.shape[0]
            drawn = rng.choice(n_samples, size=n_samples, replace=True, p=weights.normalised)
            learner.fit(X[drawn], y[drawn])
        elif isinstance(learner, BaseDecisionTree):
            # Every round bins the same X: a silva tree reuses the first round's codes.
            learner._bin_cache = round_bins
            try:
                learner.fit(X, y, sample_weight=weights.for_learner())
            finally:
                del learner._bin_cache
        else:
            learner.fit(X, y, sample_weight=weights.for_learner())
        return learner

    @staticmethod
    def _training_leaf_values(learner, X, silva_tree):
        """A silva tree's leaf values (n_samples, n_classes or 1) on the training X, read
        straight from its nodes: X was validated once for the whole fit, and the tree's
        ``predict`` would check it again every round (about 30 us of a 0.3 ms round on
        diabetes). None for other learners and sparse X, which go through ``predict``."""
        if silva_tree and isinstance(X, np.ndarray):
            return learner.tree_.predict(X)[:, 0, :]
        return None

    def _leaf_values(self, learner, X):
        """``learner``'s predictions on the validated X read from its tree's leaves,
        ``(n_samples, n_values)``, when :meth:`_reads_leaf_values` allows it and X is a
        dense array; else None (the caller asks ``learner`` itself).

        As the fit does (:meth:`_training_leaf_values`): a learner's own predict
        validated X again, 20-35 us a learner (2.3 ms for one row of a 100-round
        diabetes model). Reading the learners one by one, rather than packing their
        trees for one compiled pass, compiles nothing new: the tree's kernels served the
        fit (packing took a cold first predict 3.1-3.4 s of compiling)."""
        return self._training_leaf_values(learner, X, self._reads_leaf_values(learner))

    def _reads_leaf_values(self, learner):
        """Whether ``learner``'s predictions are its tree's leaf values, so that
        :meth:`_leaf_values` may read them; each estimator says for which learners."""
        raise NotImplementedError

    def _learner_takes_weight(self):
        """Whether the base learner's ``fit`` takes ``sample_weight``; asked once a fit,
        since ``inspect.signature`` costs about 50 us, a tenth of a stump's round."""
        return has_fit_parameter(self._base_estimator(), "sample_weight")

    @property
    def feature_importances_(self):
        """Importances of the learners averaged with their weights (learners need
        ``feature_importances_``)."""
        check_is_fitted(self, "estimators_")
        try:
            importances = np.array([e.feature_importances_ for e in self.estimators_])
        except AttributeError:
            raise AttributeError("feature_importances_ needs base estimators that have "
                                 "feature_importances_.") from None
        weights = self.estimator_weights_
        total = weights.sum()
        return weights @ importances / total


class AdaBoostClassifier(PredictLogProbaMixin, ClassifierMixin, _BaseAdaBoost):
    """AdaBoost classifier: discrete AdaBoost.M1, SAMME or Real AdaBoost (SAMME.R).

    See the module docstring for the algorithms and for how a perfect learner
    (err = 0) and a learner no better than chance (err >= 1 - 1/K) are handled.

    Parameters
    ----------
    estimator : classifier or None, default=None
        The weak learner, cloned each round. None means a silva stump,
        ``DecisionTreeClassifier(max_depth=1)``. ``algorithm="real"`` needs
        ``predict_proba``. Its ``random_state`` parameters, if any, are set each round
        from a seed drawn from this ensemble's ``random_state``.
    n_estimators : int, default=50
        Largest number of boosting rounds (fewer when boosting stops early).
    learning_rate : float, default=1.0
        Shrinkage: multiplies every learner's weight (and, for ``"real"``, its
        contribution), and so the weight updates.
    algorithm : {"discrete", "samme", "real"}, default="samme"
        ``"discrete"`` needs exactly two classes; ``"samme"`` with two classes is the
        same algorithm.
    resample : bool, default=False
        Train every learner on a bootstrap sample drawn with probabilities proportional
        to the current weights instead of passing the weights as ``sample_weight``
        (always done when the learner's ``fit`` takes no ``sample_weight``).
    random_state : int, RandomState or None, default=None
        Seeds the learners and the bootstrap draws.
    verbose : int, default=0
        Show a progress bar over the rounds (tqdm when installed).

    Attributes
    ----------
    estimators_ : list of fitted classifiers
        The learners kept, one per completed round. They are trained on the class codes
        0..K-1 (indices into ``classes_``), not on the original labels.
    estimator_weights_ : ndarray of shape (n_rounds,)
        beta_m of each learner (``learning_rate`` for ``"real"``).
    estimator_errors_ : ndarray of shape (n_rounds,)
        Weighted training error err_m of each learner (of its most probable class for
        ``"real"``), measured on the weights it was trained with.
    training_error_bound_ : ndarray of shape (n_rounds,)
        Upper bound on the (sample-weighted) training error after each round:
        prod_{k<=m} Z_k with Z_k = (1 - err_k) exp(-beta_k / 2) + err_k exp(beta_k / 2).
        With ``learning_rate=1`` and two classes Z_k = 2 sqrt(err_k (1 - err_k)), and the
        bound is at most exp(-2 sum_k (1/2 - err_k)^2) (Freund & Schapire 1997). For
        ``"real"`` Z_k is the normaliser of the weight update (the bound on the
        exponential loss); it bounds the training error for two classes only, so for
        ``"real"`` with more classes this attribute is not set.
    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when X was a data frame with string column names

    Notes
    -----
    ``predict_proba`` turns the scores into probabilities as the population minimiser of
    the exponential loss suggests (Friedman, Hastie & Tibshirani 2000; Zhu et al. 2009):
    p = softmax(V) for the vote totals V_c = sum_m beta_m 1[G_m(x) = c], and
    p = softmax(f / (K - 1)) for ``"real"``. With two classes both are
    sigmoid(decision_function). scikit-learn instead divides the votes by sum(beta)
    first, which gives flatter probabilities; the predicted classes are the same.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from silva.adaboost import AdaBoostClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = AdaBoostClassifier(n_estimators=20, random_state=0).fit(X, y)
    >>> bool(model.score(X, y) > 0.95)
    True
    """

    def __init__(self, estimator=None, *, n_estimators=50, learning_rate=1.0,
                 algorithm="samme", resample=False, random_state=None, verbose=0):
        super().__init__(estimator, n_estimators=n_estimators, learning_rate=learning_rate,
                         resample=resample, random_state=random_state, verbose=verbose)
        self.algorithm = algorithm

    def _default_estimator(self):
        return DecisionTreeClassifier(max_depth=1)

    # ------------------------------------------------------------------- fit
    def fit(self, X, y, sample_weight=None):
        """Boost up to ``n_estimators`` learners on (X, y).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Initial sample weights (uniform when None).
        """
        learning_rate = self._check_common_params()
        algorithm = _input.check_option(self.algorithm, "algorithm", set(ALGORITHMS))
        X, y, sample_weight = self._validate_X_y(X, y, sample_weight, y_numeric=False)
        self.classes_, y_code = _input.classification_target(y)
        n_classes = self.n_classes_ = len(self.classes_)
        if n_classes < 2:
            raise ValueError(f"AdaBoostClassifier needs samples of at least 2 classes in y; "
                             f"got 1 class ({self.classes_[0]!r}).")
        if algorithm == "discrete" and n_classes != 2:
            raise ValueError(f"algorithm='discrete' is binary AdaBoost and needs exactly 2 "
                             f"classes; got {n_classes}. Use algorithm='samme' or 'real'.")
        if algorithm == "real" and not hasattr(self._base_estimator(), "predict_proba"):
            raise ValueError("algorithm='real' needs a base estimator with predict_proba; "
                             f"{type(self._base_estimator()).__name__} has none.")

        rng = check_random_state(self.random_state)
        round_bins = {}
        learners = _RoundLearners(self._base_estimator())
        takes_weight = self._learner_takes_weight()
        boosting = BoostingWeights(sample_weight)
        estimators, betas, errors, normalisers = [], [], [], []
        for _ in progress(range(self.n_estimators), enabled=self.verbose,
                          desc=type(self).__name__):
            learner = self._fit_learner(X, y_code, boosting, rng, learners, round_bins,
                                        takes_weight)
            weights = boosting.normalised
            if algorithm == "real":
                proba = self._learner_proba(learner, X)
                predicted = np.argmax(proba, axis=1)
            else:
                leaf_values = self._training_leaf_values(learner, X, learners.silva_tree)
                predicted = (self._learner_codes(learner, X) if leaf_values is None else
                             learner.classes_[np.argmax(leaf_values, axis=1)])
            missed = predicted != y_code
            error = float(np.sum(weights[missed]))
            if algorithm == "real":
                contribution = learning_rate * self._symmetric_log_proba(proba)
                exponent = -contribution[np.arange(len(y_code)), y_code] / (n_classes - 1)
                normaliser = float(np.sum(weights * np.exp(exponent)))
            else:
                normaliser = self._vote_normaliser(error, learning_rate)

            if error >= 1.0 - 1.0 / n_classes and error > 0.0:
                # No better than chance: beta would be <= 0. Keep a lone first learner so
                # that a model exists; otherwise discard it. Either way, stop.
                if not estimators:
                    estimators.append(learner)
                    betas.append(learning_rate)
                    errors.append(error)
                    normalisers.append(normaliser)
                break

            if algorithm == "real":
                estimators.append(learner)
                betas.append(learning_rate)
                errors.append(error)
                normalisers.append(normaliser)
                boosting.update(exponent)
                continue

            if error <= 0.0:
                # Perfect learner: log((1 - err) / err) is infinite. Use err = eps0, half
                # the lightest sample's current weight (the least error it could have
                # had), and outweigh all earlier learners so that the ensemble predicts
                # as this one does.
                eps0 = 0.5 * weights[weights > 0].min()
                beta = learning_rate * (np.log((1.0 - eps0) / eps0) + np.log(n_classes - 1))
                beta = max(beta, sum(betas) + learning_rate)
                estimators.append(learner)
                betas.append(beta)
                errors.append(0.0)
                normalisers.append(self._vote_normaliser(0.0, beta))
                break

            beta = learning_rate * (np.log((1.0 - error) / error) + np.log(n_classes - 1))
            estimators.append(learner)
            betas.append(beta)
            errors.append(error)
            normalisers.append(self._vote_normaliser(error, beta))
            boosting.update(beta * missed)

        self.estimators_ = estimators
        self.estimator_weights_ = np.array(betas, dtype=np.float64)
        self.estimator_errors_ = np.array(errors, dtype=np.float64)
        if algorithm != "real" or n_classes == 2:
            # A factor may be inf (a huge beta) and a later one 0 (a perfect learner):
            # the bound is then undefined (NaN), quietly; it is a diagnostic.
            with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                self.training_error_bound_ = np.cumprod(normalisers)
        elif hasattr(self, "training_error_bound_"):
            del self.training_error_bound_
        self._algorithm = algorithm
        return self

    @staticmethod
    def _vote_normaliser(error, beta):
        """Z = sum_i w_i exp(beta (1[missed_i] - 1/2)): one factor of the error bound.

        A huge beta (a large learning_rate) makes the bound infinite, which it is, without
        a RuntimeWarning; with no error the missed term is zero, not 0 * inf."""
        with np.errstate(over="ignore"):
            missed_term = error * np.exp(0.5 * beta) if error > 0.0 else 0.0
            return (1.0 - error) * np.exp(-0.5 * beta) + missed_term

    def _learner_codes(self, learner, X):
        return np.asarray(learner.predict(X)).astype(np.intp, copy=False)

    def _learner_proba(self, learner, X):
        """(n_samples, K) probabilities, floored; classes a learner never saw (possible
        after resampling) get the floor."""
        proba = np.zeros((X.shape[0], self.n_classes_))
        proba[:, np.asarray(learner.classes_).astype(np.intp)] = learner.predict_proba(X)
        return np.maximum(proba, PROBABILITY_FLOOR)

    def _symmetric_log_proba(self, proba):
        log_proba = np.log(proba)
        return (self.n_classes_ - 1) * (log_proba - log_proba.mean(axis=1, keepdims=True))

    # --------------------------------------------------------------- predict
    def _reads_leaf_values(self, learner):
        """Whether ``learner.predict_proba`` is its tree's leaf values, one column per
        class of the ensemble (in order), and ``learner.predict`` their first largest:
        a silva classification tree that saw every class (its ``classes_`` are sorted
        codes of the ensemble's classes, so as many as the ensemble's are all of them)."""
        return (isinstance(learner, DecisionTreeClassifier) and learner.n_outputs_ == 1
                and learner.classes_.shape[0] == self.n_classes_)

    def _round_scores(self, X):
        """Yield each learner's (n_samples, K) contribution to the class scores."""
        n_samples = X.shape[0]
        rows = np.arange(n_samples)
        for learner, beta in zip(self.estimators_, self.estimator_weights_, strict=True):
            leaf_values = self._leaf_values(learner, X)  # its predict_proba, or None
            if self._algorithm == "real":
                proba = (self._learner_proba(learner, X) if leaf_values is None
                         else np.maximum(leaf_values, PROBABILITY_FLOOR))
                yield beta * self._symmetric_log_proba(proba)
            else:
                codes = (self._learner_codes(learner, X) if leaf_values is None
                         else np.argmax(leaf_values, axis=1))
                votes = np.zeros((n_samples, self.n_classes_))
                votes[rows, codes] = beta
                yield votes

    def _staged_scores(self, X):
        scores = 0.0
        for contribution in self._round_scores(X):
            scores = scores + contribution
            yield scores

    def _decision_from_scores(self, scores, total_weight):
        """The decision function from the class scores of learners whose weights sum to
        ``total_weight``. Multiclass SAMME codes each learner's vote symmetrically (Zhu
        et al. 2009, sec. 2.1: 1 for the predicted class, -1/(K - 1) for the others) and
        divides by the total weight, as scikit-learn does, so that each row sums to zero
        and a single learner gives values in {1, -1/(K - 1)}; the order of the classes
        is that of the vote totals."""
        n_classes = self.n_classes_
        if n_classes == 2:
            return scores[:, 1] - scores[:, 0]
        if self._algorithm == "real":
            return scores
        # The weight against a class is that of the votes for the others.
        return (scores - (total_weight - scores) / (n_classes - 1)) / total_weight

    def _proba_from_scores(self, scores):
        if self._algorithm == "real":
            return _softmax(scores / (self.n_classes_ - 1))
        return _softmax(scores)

    def _scores(self, X):
        *_, scores = self._staged_scores(X)
        return scores

    def decision_function(self, X):
        """Ensemble scores: sum_m beta_m G_m(x) with G in {-1, +1} for two classes
        (positive means ``classes_[1]``); otherwise the (n_samples, K) class scores,
        each row summing to zero: the symmetric votes over the total weight (see
        ``_decision_from_scores``), or summed symmetric log-probabilities for
        ``"real"``."""
        return self._decision_from_scores(self._scores(self._validated_X(X)),
                                          float(np.sum(self.estimator_weights_)))

    def predict(self, X, pred_contrib=False, pred_interactions=False):
        """Class with the largest score (the first of equals).

        ``pred_contrib=True`` returns SHAP values of :meth:`decision_function` instead
        and ``pred_interactions=True`` SHAP interaction values (see :mod:`silva.explain`).
        """
        if pred_contrib or pred_interactions:
            return self._explain(X, pred_interactions)
        scores = self._scores(self._validated_X(X))
        return self.classes_[np.argmax(scores, axis=1)]

    def predict_proba(self, X):
        """Class probabilities from the scores (see Notes)."""
        return self._proba_from_scores(self._scores(self._validated_X(X)))

    def staged_decision_function(self, X):
        """:meth:`decision_function` after each round."""
        for scores, total_weight in zip(self._staged_scores(self._validated_X(X)),
                                        np.cumsum(self.estimator_weights_), strict=False):
            yield self._decision_from_scores(scores, float(total_weight))

    def staged_predict(self, X):
        """:meth:`predict` after each round."""
        for scores in self._staged_scores(self._validated_X(X)):
            yield self.classes_[np.argmax(scores, axis=1)]

    def staged_predict_proba(self, X):
        """:meth:`predict_proba` after each round."""
        for scores in self._staged_scores(self._validated_X(X)):
            yield self._proba_from_scores(scores)

    def staged_score(self, X, y, sample_weight=None):
        """Accuracy on (X, y) after each round."""
        for predicted in self.staged_predict(X):
            yield accuracy_score(y, predicted, sample_weight=sample_weight)

    def margins(self, X, y):
        """Normalised margins of (X, y): (F_y(x) - max_{c != y} F_c(x)) / sum_m s_m.

        F are the class scores, s_m the largest spread one learner can put between two
        classes: beta_m for the voting algorithms, so that with two classes the margin is
        y f(x) / sum_m |beta_m| with y in {-1, +1} (Schapire, Freund, Bartlett & Lee 1998);
        for ``"real"`` the largest spread max_c h_m - min_c h_m of learner m over the
        samples of X. Margins lie in [-1, 1] and are positive where the ensemble is right.
        """
        X = self._validated_X(X)
        y = np.asarray(y)
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},); got {y.shape}.")
        codes = np.searchsorted(self.classes_, y)
        codes = np.minimum(codes, self.n_classes_ - 1)
        unknown = self.classes_[codes] != y
        if unknown.any():
            raise ValueError(f"y holds the label {y[unknown][0]!r}, which is not among the "
                             f"classes seen at fit: {self.classes_.tolist()}.")
        scores = 0.0
        spread = 0.0
        for contribution in self._round_scores(X):
            scores = scores + contribution
            spread += float(np.max(contribution.max(axis=1) - contribution.min(axis=1)))
        rows = np.arange(X.shape[0])
        own = scores[rows, codes]
        others = scores.copy()
        others[rows, codes] = -np.inf
        return (own - others.max(axis=1)) / spread


class AdaBoostRegressor(RegressorMixin, _BaseAdaBoost):
    """AdaBoost.R2 (Drucker 1997): boosted regressors combined by a weighted median.

    In round m the learner's absolute errors are scaled by the largest one,
    L_i = |y_i - f_m(x_i)| / max_j |y_j - f_m(x_j)|, then passed through the loss
    (``"linear"`` L, ``"square"`` L^2, ``"exponential"`` 1 - exp(-L)); the average loss is
    Lbar_m = sum_i w_i L_i, beta_m = Lbar_m / (1 - Lbar_m), the learner's weight is
    learning_rate * log(1 / beta_m) and w_i <- w_i * beta_m^(learning_rate (1 - L_i)).
    The prediction is the weighted median of the learners' predictions: the smallest
    prediction whose learners' cumulative weight reaches half the total.

    Edge cases: a learner with Lbar = 0 (perfect) gets the sum of the earlier weights plus
    ``learning_rate``, which makes the weighted median its prediction, and boosting stops;
    a learner with Lbar >= 0.5 is discarded and boosting stops (a first learner is kept
    alone with weight ``learning_rate``).

    Parameters
    ----------
    estimator : regressor or None, default=None
        The learner, cloned each round; None means ``DecisionTreeRegressor(max_depth=3)``.
    n_estimators : int, default=50
    learning_rate : float, default=1.0
    loss : {"linear", "square", "exponential"}, default="linear"
    resample : bool, default=False
        Train each learner on a weighted bootstrap sample (Drucker's original form)
        instead of passing ``sample_weight``; always done for learners without it.
    random_state : int, RandomState or None, default=None
    verbose : int, default=0
        Show a progress bar over the rounds (tqdm when installed).

    Attributes
    ----------
    estimators_ : list of fitted regressors
    estimator_weights_ : ndarray of shape (n_rounds,)
    estimator_errors_ : ndarray of shape (n_rounds,)
        Average loss Lbar_m of each learner.
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when X was a data frame with string column names

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from silva.adaboost import AdaBoostRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = AdaBoostRegressor(n_estimators=10, random_state=0).fit(X, y)
    >>> bool(model.score(X, y) > 0.5)
    True
    """

    def __init__(self, estimator=None, *, n_estimators=50, learning_rate=1.0, loss="linear",
                 resample=False, random_state=None, verbose=0):
        super().__init__(estimator, n_estimators=n_estimators, learning_rate=learning_rate,
                         resample=resample, random_state=random_state, verbose=verbose)
        self.loss = loss

    def _default_estimator(self):
        return DecisionTreeRegressor(max_depth=3)

    def fit(self, X, y, sample_weight=None):
        """Boost up to ``n_estimators`` regressors on (X, y)."""
        learning_rate = self._check_common_params()
        loss = _input.check_option(self.loss, "loss", set(REGRESSION_LOSSES))
        X, y, sample_weight = self._validate_X_y(X, y, sample_weight, y_numeric=True)
        rng = check_random_state(self.random_state)
        round_bins = {}
        learners = _RoundLearners(self._base_estimator())
        takes_weight = self._learner_takes_weight()
        boosting = BoostingWeights(sample_weight)
        positive = boosting.positive
        estimators, betas, errors = [], [], []
        for _ in progress(range(self.n_estimators), enabled=self.verbose,
                          desc=type(self).__name__):
            learner = self._fit_learner(X, y, boosting, rng, learners, round_bins,
                                        takes_weight)
            weights = boosting.normalised
            leaf_values = self._training_leaf_values(learner, X, learners.silva_tree)
            predicted = (np.asarray(learner.predict(X), dtype=np.float64).ravel()
                         if leaf_values is None else leaf_values[:, 0])
            absolute = np.abs(predicted - y)
            largest = float(absolute[positive].max())
            if largest > 0.0:
                scaled = absolute / largest
                if loss == "square":
                    scaled = scaled**2
                elif loss == "exponential":
                    scaled = 1.0 - np.exp(-scaled)
                average = float(np.sum(weights * scaled))
            else:
                scaled = np.zeros_like(absolute)
                average = 0.0
            first = not estimators
            if average <= 0.0:
                # Perfect learner: log(1 / beta) is infinite; outweigh the others instead.
                estimators.append(learner)
                betas.append(sum(betas) + learning_rate)
                errors.append(0.0)
                break
            if average >= 0.5:
                if first:
                    estimators.append(learner)
                    betas.append(learning_rate)
                    errors.append(average)
                break
            beta = average / (1.0 - average)
            estimators.append(learner)
            betas.append(learning_rate * np.log(1.0 / beta))
            errors.append(average)
            boosting.update(learning_rate * (1.0 - scaled) * np.log(beta))

        self.estimators_ = estimators
        self.estimator_weights_ = np.array(betas, dtype=np.float64)
        self.estimator_errors_ = np.array(errors, dtype=np.float64)
        return self

    @staticmethod
    def _reads_leaf_values(learner):
        """Whether ``learner.predict`` is its tree's leaf value: silva's trees."""
        return isinstance(learner, BaseDecisionTree)

    @staticmethod
    def _weighted_median(predictions, weights):
        """Row-wise weighted median of (n_samples, n_learners) predictions."""
        order = np.argsort(predictions, axis=1, kind="stable")
        cumulative = np.cumsum(weights[order], axis=1)
        reached = cumulative >= 0.5 * cumulative[:, -1:]
        chosen = np.argmax(reached, axis=1)
        rows = np.arange(predictions.shape[0])
        return predictions[rows, order[rows, chosen]]

    def _predictions(self, X):
        """(n_samples, n_learners) predictions of the learners on a validated X."""
        columns = []
        for learner in self.estimators_:
            leaf_values = self._leaf_values(learner, X)
            columns.append(np.asarray(learner.predict(X), dtype=np.float64).ravel()
                           if leaf_values is None else leaf_values[:, 0])
        return np.column_stack(columns)

    def predict(self, X, pred_contrib=False, pred_interactions=False):
        """Weighted median of the learners' predictions.

        ``pred_contrib=True`` raises a ValueError: a weighted median is not a sum over
        trees, so TreeSHAP cannot explain it (see :mod:`silva.explain`).
        """
        if pred_contrib or pred_interactions:
            return self._explain(X, pred_interactions)
        X = self._validated_X(X)
        return self._weighted_median(self._predictions(X), self.estimator_weights_)

    def staged_predict(self, X):
        """:meth:`predict` using the first 1, 2, ... learners."""
        X = self._validated_X(X)
        predictions = self._predictions(X)
        for m in range(1, len(self.estimators_) + 1):
            yield self._weighted_median(predictions[:, :m], self.estimator_weights_[:m])

    def staged_score(self, X, y, sample_weight=None):
        """R^2 on (X, y) after each round."""
        for predicted in self.staged_predict(X):
            yield r2_score(y, predicted, sample_weight=sample_weight)
