"""Bagging (Breiman 1996): many copies of one estimator, each fitted on a random sample.

:class:`BaggingClassifier` and :class:`BaggingRegressor` take any scikit-learn estimator
(default: silva's decision tree) and fit ``n_estimators`` clones of it, each on

- a random sample of the rows: drawn with replacement (``bootstrap=True``, the bootstrap
  of Breiman 1996) or a random fraction ``max_samples`` without replacement
  (``bootstrap=False``, the lectures' "bagging with p"), and
- optionally a random subset of the columns (``max_features``; drawn with replacement when
  ``bootstrap_features=True``): the random subspace method (Ho 1998).

The ensemble averages the members' probabilities (``voting="soft"``) or counts their
votes (``voting="hard"``); regressors average the members' predictions. The out-of-bag
estimate (``oob_score=True``) predicts each training sample with the members that did not
see it.

Each member's draw comes from its own seed, drawn from ``random_state`` in order, so the
ensemble does not depend on ``n_jobs``, and ``warm_start`` adds members that are the same
as those a one-shot fit would have made. Members are fitted in joblib's worker processes
when ``n_jobs`` asks for more than one, because a foreign estimator may not release the
GIL and silva's trees already run their own compiled kernels in parallel.

For silva trees a member's bootstrap counts are passed as sample weights (the same tree
as fitting on the repeated rows, without copying them); other estimators whose ``fit``
takes ``sample_weight`` are given every row with its count as its weight (zero for the
rows not drawn, as in scikit-learn's bagging), and the rest get the drawn rows repeated.

Fast path for silva's own trees (:class:`_EngineMembers`): when the estimator is
exactly silva's DecisionTreeClassifier or DecisionTreeRegressor (whatever its
parameters, but for ``prune`` and ``ccp_alpha="cv"``, which split a member's rows, and
categorical columns given to the tree rather than the ensemble) and X dense, the
ensemble bins X once and grows each member's tree in the engine on its drawn rows and
columns, in ``n_jobs`` threads, as random forests grow theirs
(:func:`silva.engine.forest.iter_grown_jobs`); members are then wrapped as fitted trees.
A member is the tree its estimator would grow on its rows and columns given the bins of
the whole X (a tree fitted alone bins its own rows: thresholds move slightly, as for a
forest's trees); every other step of the tree's fit is kept.
"""

import numbers
import warnings
from functools import partial

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import check_random_state
from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping, process_routing
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, has_fit_parameter

from silva import _input, _multi_output
from silva._mixins import (
    BaseEstimatorNanMixin,
    ExplainMixin,
    FittedInputMixin,
    MemberSequenceMixin,
    ParamNamesMixin,
    PredictLogProbaMixin,
    remembered,
)
from silva._nothing_learned import cart_root_reason, warn_nothing_learned
from silva._progress import progress
from silva._weighted_bootstrap import weighted_bootstrap_counts, weighted_draw_plan
from silva.decision_tree import (
    BaseDecisionTree,
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    _check_poisson_target,
    _leaf_groups,
    exact_pure_leaf_values,
    histogram_min_samples_for,
    regression_offset,
)
from silva.engine import criteria
from silva.engine.binning import MAX_BINS_LIMIT
from silva.engine.cart import BinnedData, TreeTask
from silva.engine.forest import binned_columns, iter_grown_jobs
from silva.engine.pruning import prune_tree
from silva.engine.random import seeded_random_state
from silva.engine.sparse import is_sparse
from silva.intervals import JackknifeIntervalMixin
from silva.persistence import PersistenceMixin
from silva.voting import _routing_enabled

_MAX_SEED = np.iinfo(np.int32).max


def _draw_count(value, total, name):
    """``max_samples`` / ``max_features`` as a count in [1, total]."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_):
        if not 1 <= value <= total:
            raise ValueError(f"{name} as a count must be in [1, {total}]; got {value}.")
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
        if not 0.0 < value <= 1.0:
            raise ValueError(f"{name} as a fraction must be in (0, 1]; got {value}.")
        return max(1, int(value * total))
    raise TypeError(f"{name} must be an int or a float; got {value!r}.")


def _member_features(random_state, n_features, n_features_drawn, bootstrap_features):
    """Column ids of a member: the first draw from its ``random_state``."""
    if bootstrap_features:
        return random_state.randint(0, n_features, n_features_drawn)
    return np.sort(random_state.permutation(n_features)[:n_features_drawn])


def _member_draw(seed, n_samples, n_drawn, bootstrap, n_features, n_features_drawn,
                 bootstrap_features, plan=None):
    """Row counts (n_samples,) and column ids of the member seeded with ``seed``;
    ``plan``: the :func:`~silva._weighted_bootstrap.weighted_draw_plan` of
    ``bootstrap="weighted"``."""
    # The draws of np.random.RandomState(seed), without building one (80 us a member).
    random_state = seeded_random_state(seed)
    features = _member_features(random_state, n_features, n_features_drawn,
                                bootstrap_features)
    if plan is not None:
        return weighted_bootstrap_counts(random_state, *plan, n_samples,
                                         n_drawn).astype(np.int64), features
    if bootstrap:
        rows = random_state.randint(0, n_samples, n_drawn)
    else:
        rows = random_state.permutation(n_samples)[:n_drawn]
    return np.bincount(rows, minlength=n_samples), features


def _check_member_weight(has_weight, counts):
    """A member whose draw holds only samples of zero weight has nothing to learn from:
    a clear error, not its estimator's complaint about an empty or weightless sample."""
    if not has_weight:
        raise ValueError(f"a bagging member drew {int(counts.sum())} samples, all of zero "
                         "sample_weight, and has nothing to fit; give more samples a "
                         "positive sample_weight, or draw more of them (max_samples).")


def _seed_nested_random_states(member, seed):
    """Give every nested ``random_state`` (``step__random_state`` of a pipeline, say) that
    is not an int a seed of its own, drawn from the member's ``seed``: so that the member
    is reproducible from its seed (refitting it on ``estimators_samples_`` gives it back),
    as scikit-learn's bagging does. The member's own ``random_state`` is set by the caller.
    """
    nested = sorted(name for name, value in member.get_params(deep=True).items()
                    if name.endswith("__random_state")
                    and not isinstance(value, numbers.Integral))
    if nested:
        seeds = np.random.RandomState(seed).randint(_MAX_SEED, size=len(nested))
        member.set_params(**{name: int(s) for name, s in zip(nested, seeds, strict=True)})


def _fit_members(base, seeds, X, y, sample_weight, draw, is_categorical, plan_rows=None):
    """Fit one clone of ``base`` per seed (run in a joblib worker); returns the clones.

    ``plan_rows`` (``bootstrap="weighted"``): the draw already used the sample weights,
    so members get the counts alone, their rows in the plan's content order.
    """
    members = []
    order = np.arange(X.shape[0]) if plan_rows is None else plan_rows
    if plan_rows is not None:
        sample_weight = None
    for seed in seeds:
        counts, features = draw(seed)
        member = clone(base)
        params = member.get_params(deep=False)
        if "random_state" in params:
            member.set_params(random_state=int(seed))
        _seed_nested_random_states(member, seed)
        if "categorical_features" in params and is_categorical is not None:
            member.set_params(categorical_features=is_categorical[features])
        X_member = X[:, features]
        if isinstance(member, BaseDecisionTree) and has_fit_parameter(member, "sample_weight"):
            # Counts as weights: the same tree as on repeated rows, without copying them.
            weights = counts * (sample_weight if sample_weight is not None else 1.0)
            rows = order[weights[order] > 0]
            _check_member_weight(rows.size > 0, counts)
            member.fit(X_member[rows], y[rows], sample_weight=weights[rows])
        elif has_fit_parameter(member, "sample_weight"):
            # Every row, those not drawn with weight 0, as scikit-learn's bagging does: the
            # member sees every class even when its draw misses one (a logistic
            # regression refuses a sample of one class). The weighted draw's members get
            # the drawn rows alone, in the plan's content order.
            rows = order if plan_rows is None else order[counts[order] > 0]
            weights = counts[rows].astype(np.float64)
            if sample_weight is not None:
                weights = weights * sample_weight[rows]
            _check_member_weight(np.any(weights > 0), counts)
            member.fit(X_member[rows], y[rows], sample_weight=weights)
        else:
            if sample_weight is not None:
                raise ValueError(f"{type(member).__name__}.fit takes no sample_weight, so "
                                 "the bagging ensemble cannot use sample_weight.")
            rows = np.repeat(order, counts[order])
            member.fit(X_member[rows], y[rows])
        members.append(member)
    return members


def _grows_in_engine(base, X):
    """Whether the members are grown straight in the engine (:class:`_EngineMembers`):
    ``base`` is exactly silva's DecisionTreeClassifier or DecisionTreeRegressor (a
    subclass may change ``fit``), X is dense, and the tree prunes by
    nothing that needs its own rows (``prune`` and ``ccp_alpha="cv"`` split them); a
    tree that has categorical columns of its own takes the general path, which hands it
    those columns as it always has. A 2-D y (BaggingRegressor) grows multi-output
    trees."""
    if type(base) not in (DecisionTreeClassifier, DecisionTreeRegressor):
        return False
    return (not is_sparse(X) and base.prune is None
            and not isinstance(base.ccp_alpha, str)
            and base.categorical_features is None)


class _EngineMembers:
    """Bagging's members when they are silva trees: X binned once for the ensemble and
    each member's tree grown in the engine on its drawn rows and columns, as a random
    forest grows its trees (:func:`silva.engine.forest.iter_grown_jobs`), then wrapped in
    a fitted tree estimator.

    A member is the tree that ``base`` with ``random_state=seed`` grows from its drawn
    rows (bootstrap counts times sample weights as weights, rows of weight zero left
    out), its drawn columns, and the bins of the whole training X restricted to those
    columns: the same tree as ``DecisionTree*.fit`` on those rows would grow, except that
    a tree fitted alone places its thresholds from its own rows' values (as a forest's
    trees, which also bin once). Each step of the tree's own fit is kept: its parameter
    checks and rules (:meth:`~silva.decision_tree.BaseDecisionTree._check_params`,
    ``_growth_rules``), its classes and class weights computed on the member's rows, a
    regressor's centring and exact pure leaves, ``ccp_alpha`` pruning, and its warning
    when nothing is learned.
    """

    def __init__(self, base, X, y, is_categorical):
        self.base = base
        self.is_classifier = isinstance(base, DecisionTreeClassifier)
        self.X, self.y = X, y
        n_samples, n_features = X.shape
        self.is_categorical = (np.zeros(n_features, dtype=bool) if is_categorical is None
                               else is_categorical)
        self.params = base.get_params(deep=False)
        # The tree's own checks, once, before anything is binned: the same errors as a
        # member's fit would raise.
        base._check_params(n_samples, 1.0)
        self.criterion_code = _input.criterion_code(
            base.criterion, criteria.CLASSIFICATION_CRITERIA if self.is_classifier
            else criteria.REGRESSION_CRITERIA)
        self.min_significance = (_input.check_significance_level(base.min_significance)
                                 if self.is_classifier else 1.0)
        self.data = BinnedData.from_X(X, self.is_categorical, base.max_bins,
                                      sparse_growth=False)
        self.missing = np.isnan(X) if _input.has_missing(X) else None
        self._columns = {}
        self._jobs = {}

    def _member(self, seed, features):
        params = dict(self.params, random_state=int(seed))
        if self.is_categorical.any():
            params["categorical_features"] = self.is_categorical[features]
        member = type(self.base)(**params)
        # What the tree's input validation sets on a fit to a plain array.
        member._encoder = None
        member.is_categorical_ = self.is_categorical[features]
        member.n_features_in_ = len(features)
        return member

    def _columns_of(self, features):
        key = features.tobytes()
        if key not in self._columns:
            self._columns[key] = binned_columns(self.data, features)
        return self._columns[key]

    def job(self, t, seed, counts, features, weights, order):
        """``(data, rules, task)`` of member ``t`` (see :func:`iter_grown_jobs`); what
        its wrapping needs is kept until :meth:`finish` takes it."""
        rows = order[weights[order] > 0]
        _check_member_weight(rows.size > 0, counts)
        member = self._member(seed, features)
        y_rows = self.y[rows]
        row_weight = _input.check_sample_weight(weights[rows], rows.size)
        code = self.criterion_code
        n_samples, total = rows.size, None
        offset = 0.0
        if self.is_classifier:
            # y holds the ensemble's class indices, already checked: the member's classes
            # are those its rows hold, as classification_target would find them (without
            # its checks of raw labels, a third of a small member's time).
            member.classes_ = np.unique(y_rows)
            target = np.searchsorted(member.classes_, y_rows).astype(np.int64)
            member.n_classes_ = n_classes = len(member.classes_)
            row_weight = _input.apply_class_weight(row_weight, _input.class_weight_per_sample(
                member.class_weight, y_rows, member.classes_))
        elif y_rows.ndim == 2:
            # A multi-output regressor's tree (silva._multi_output), as its fit makes it.
            n_outputs = y_rows.shape[1]
            if code == criteria.POISSON:
                _check_poisson_target(y_rows, None)
            code = _multi_output.check_options(member, code, n_outputs)
            y_rows, offset = _multi_output.regression_targets(y_rows, row_weight)
            n_classes = np.ones(n_outputs, dtype=np.intp)
            target = y_rows - offset
        else:
            n_classes = 1
            offset = regression_offset(code, y_rows, row_weight)
            target = y_rows - offset
        member.n_outputs_ = n_outputs = 1 if y_rows.ndim == 1 else y_rows.shape[1]
        total = row_weight.sum()
        member._check_params(n_samples, total)
        positive = row_weight > 0
        if not positive.all():  # a class weight of zero: the tree leaves those rows out
            rows, target, row_weight = rows[positive], target[positive], row_weight[positive]
        member.max_features_ = _input.resolve_max_features(member.max_features,
                                                           len(features))
        member._has_missing_at_fit = bool(
            self.missing is not None and self.missing[np.ix_(rows, features)].any())
        params = member._check_params(rows.size, row_weight.sum())
        data = self._columns_of(features)
        histogram_min_samples = (rows.size + 1 if code == criteria.ABSOLUTE_ERROR
                                 else histogram_min_samples_for(code, data))
        rules = member._growth_rules(params, code, n_classes, histogram_min_samples,
                                     self.min_significance, n_outputs)
        # The engine reads targets and weights by row id: the member's rows in place, the
        # others of weight zero (never read).
        n_all = self.X.shape[0]
        target_all = np.zeros((n_all,) + target.shape[1:])
        target_all[rows] = target
        weight_all = np.zeros(n_all)
        weight_all[rows] = row_weight
        stats = _multi_output.statistics(code, target_all, weight_all, n_classes)
        # The grower reads y only under absolute_error, which is single-output: a
        # multi-output tree gets the 1-D placeholder its own fit passes.
        engine_y = target_all if n_outputs == 1 else np.zeros(n_all)
        task = TreeTask(
            stats=stats, y=engine_y, weight=weight_all, sample_indices=rows.astype(np.int32),
            min_weight_leaf=params["min_weight_leaf"],
            seed=_input.seed_from_param(int(seed)))
        self._jobs[t] = (member, rows, features, target, row_weight, params, offset)
        return data, rules, task

    def finish(self, t, grown):
        """Member ``t``'s fitted estimator around its ``grown`` tree."""
        member, rows, features, target, row_weight, params, offset = self._jobs.pop(t)
        tree = grown.tree
        grown_nodes = tree.node_count
        member.ccp_alpha_ = float(member.ccp_alpha)
        if member.ccp_alpha_ > 0.0:
            tree = prune_tree(tree, member.ccp_alpha_)
            grown = None
        # A multi-output tree's offsets are one per output: (n_outputs, 1) against the
        # values' (n_nodes, n_outputs, 1).
        tree.value += np.reshape(offset, (-1, 1)) if np.ndim(offset) else offset
        if np.any(offset) and member.monotonic_cst is None:
            # The grower's leaf samples are row ids of the whole X.
            if grown is not None:
                exact_pure_leaf_values(tree, self.y, _leaf_groups(tree, None, grown))
            else:
                exact_pure_leaf_values(tree, self.y[rows], _leaf_groups(
                    tree, self.X[np.ix_(rows, features)]))
        member.tree_ = tree
        if tree.node_count == 1:
            warn_nothing_learned(
                f"{type(member).__name__} stopped at its root",
                cart_root_reason(member, self.X[np.ix_(rows, features)], target,
                                 row_weight, params, grown_nodes),
                stacklevel=6)
        return member

    def fit(self, seeds, draw, sample_weight, plan_rows, n_threads, progress_bar):
        """The members of ``seeds`` (see :func:`_fit_members` for ``draw``,
        ``sample_weight`` and ``plan_rows``), grown on ``n_threads`` threads."""
        order = np.arange(self.X.shape[0]) if plan_rows is None else plan_rows
        if plan_rows is not None:
            sample_weight = None

        def make_job(t):
            counts, features = draw(seeds[t])
            weights = counts * (sample_weight if sample_weight is not None else 1.0)
            return self.job(t, seeds[t], counts, features, weights, order)

        grown_trees = iter_grown_jobs(make_job, len(seeds), n_threads, len(order))
        return [self.finish(t, grown) for t, grown in enumerate(progress_bar(grown_trees))]


class BaseBagging(MemberSequenceMixin, ExplainMixin, FittedInputMixin, BaseEstimatorNanMixin,
                  PersistenceMixin, ParamNamesMixin, BaseEstimator):
    """Shared fit logic of :class:`BaggingClassifier` and :class:`BaggingRegressor`."""

    def __init__(self, estimator=None, n_estimators=10, *, max_samples=1.0, max_features=1.0,
                 bootstrap=True, bootstrap_features=False, oob_score=False, warm_start=False,
                 n_jobs=None, random_state=None, verbose=0, categorical_features=None):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self.max_features = max_features
        self.bootstrap = bootstrap
        self.bootstrap_features = bootstrap_features
        self.oob_score = oob_score
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.categorical_features = categorical_features

    def _check_params(self, n_samples, n_features):
        _input.check_int(self.n_estimators, "n_estimators", 1)
        if not (isinstance(self.bootstrap, bool | np.bool_) or (
                isinstance(self.bootstrap, str) and self.bootstrap == "weighted")):
            raise ValueError(f"{type(self).__name__}: bootstrap must be True, False or "
                             f"'weighted'; got {self.bootstrap!r}.")
        for name in ("bootstrap_features", "oob_score", "warm_start"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise ValueError(f"{name} must be True or False; got {getattr(self, name)!r}.")
        if self.oob_score and not self.bootstrap:
            raise ValueError("oob_score=True needs bootstrap=True: out-of-bag estimates come "
                             "from the samples a bootstrap leaves out.")
        if self.n_jobs is not None and (not isinstance(self.n_jobs, numbers.Integral)
                                        or self.n_jobs == 0):
            raise ValueError(f"n_jobs must be None or a nonzero int; got {self.n_jobs!r}.")
        n_drawn = _draw_count(self.max_samples, n_samples, "max_samples")
        n_features_drawn = _draw_count(self.max_features, n_features, "max_features")
        return n_drawn, n_features_drawn

    def _checked_estimator(self):
        """The estimator to bag; a TypeError when ``estimator`` is not one (a count, say)."""
        base = self._base_estimator()
        if not (hasattr(base, "fit") and hasattr(base, "predict")
                and hasattr(base, "get_params")):
            raise TypeError("estimator must be a scikit-learn estimator (with fit, predict and "
                            f"get_params) or None; got {base!r}. The number of members is "
                            "n_estimators.")
        return base

    def _prepare_X(self, X, reset):
        base = self._base_estimator()
        # hasattr, not get_params (which inspects the signature, 0.1 ms a prediction):
        # scikit-learn estimators keep each constructor parameter as an attribute.
        categorical = (self.categorical_features
                       if hasattr(base, "categorical_features") else None)
        # Infinity is left for a foreign estimator to judge (a pipeline may start with an
        # imputer that replaces it), as scikit-learn's bagging does; silva's trees refuse
        # it, so it is refused here, with the ensemble's name.
        return _input.prepare_X(self, X, reset=reset, categorical_features=categorical,
                                allow_infinite=not isinstance(base, BaseDecisionTree))

    def _fit(self, X, y, sample_weight):
        n_samples, n_features = X.shape
        self._draw_plan = None
        if isinstance(self.bootstrap, str) and self.bootstrap == "weighted":
            # sample_weight as frequencies: max_samples counts (or is a fraction of) the
            # total weight, the size of the data set a row of weight k stands in for k
            # rows of.
            sample_weight = _input.check_sample_weight(sample_weight, n_samples)
            self._draw_plan = weighted_draw_plan(X, y, sample_weight)
            n_drawn, n_features_drawn = self._check_params(
                max(1, round(self._draw_plan[1][-1])), n_features)
        else:
            n_drawn, n_features_drawn = self._check_params(n_samples, n_features)
        if sample_weight is not None:
            sample_weight = _input.check_sample_weight(sample_weight, n_samples)
        base = self._base_estimator()
        if not self.warm_start or not hasattr(self, "estimators_"):
            self.estimators_ = []
            self._seeds = []
        elif self._fit_signature != (n_samples, n_features):
            raise ValueError("warm_start=True needs the same data as the previous fit.")
        n_existing = len(self.estimators_)
        if self.n_estimators < n_existing:
            raise ValueError(f"n_estimators={self.n_estimators} must be at least the "
                             f"{n_existing} members already fitted when warm_start=True.")
        if n_existing and self.n_estimators == n_existing:
            warnings.warn("Warm-start fitting without increasing n_estimators does not fit "
                          f"new estimators: {type(self).__name__} already has {n_existing}.",
                          UserWarning, stacklevel=3)
        self._fit_signature = (n_samples, n_features)
        self._draw_sizes = (n_drawn, n_features_drawn)
        seeds = check_random_state(self.random_state).randint(_MAX_SEED, size=self.n_estimators)
        new_seeds = [int(seed) for seed in seeds[n_existing:]]
        is_categorical = getattr(self, "is_categorical_", None)
        is_categorical = is_categorical if is_categorical is not None and is_categorical.any() \
            else None
        if is_categorical is not None:
            # Checked here on every row: a member checks only the rows it drew, so a bad
            # code could pass unnoticed or fail one member in a worker.
            max_bins = base.get_params(deep=False).get("max_bins", MAX_BINS_LIMIT)
            _input.check_categorical_codes(X, is_categorical, max_bins,
                                           getattr(self, "feature_names_in_", None))

        n_jobs = min(max(1, effective_n_jobs(self.n_jobs)), max(1, len(new_seeds)))
        # One chunk of members per worker; one member per chunk when showing progress, so
        # that the bar moves as members finish.
        n_chunks = len(new_seeds) if self.verbose else n_jobs
        chunks = [chunk for chunk in np.array_split(np.asarray(new_seeds, dtype=np.int64),
                                                   max(1, n_chunks)) if chunk.size]
        # A plain function, not the bound method: workers need not receive the ensemble.
        draw = partial(_member_draw, n_samples=n_samples, n_drawn=n_drawn,
                       bootstrap=self.bootstrap, n_features=n_features,
                       n_features_drawn=n_features_drawn,
                       bootstrap_features=self.bootstrap_features, plan=self._draw_plan)
        plan_rows = None if self._draw_plan is None else self._draw_plan[0]
        if _grows_in_engine(base, X):
            # silva's own trees: one binning, members grown in threads (the grower
            # releases the GIL), as a forest's trees.
            members = _EngineMembers(base, X, y, is_categorical).fit(
                new_seeds, draw, sample_weight, plan_rows, n_jobs,
                partial(progress, total=len(new_seeds), enabled=self.verbose,
                        desc=type(self).__name__))
            self.estimators_.extend(members)
        else:
            results = Parallel(n_jobs=n_jobs, return_as="generator")(
                delayed(_fit_members)(base, chunk, X, y, sample_weight, draw,
                                      is_categorical, plan_rows)
                for chunk in chunks)
            for members in progress(results, total=len(chunks), enabled=self.verbose,
                                    desc=type(self).__name__):
                self.estimators_.extend(members)
        self._seeds.extend(new_seeds)
        self.n_estimators_ = len(self.estimators_)
        if self.oob_score:
            self._compute_oob(X, y)
        else:
            for name in ("oob_score_", "oob_decision_function_", "oob_prediction_",
                         "_oob_abs_residuals"):
                self.__dict__.pop(name, None)
        return self

    # ------------------------------------------------------------ metadata routing
    def _member_callees(self):
        """{ensemble method: the member method it calls}, for metadata routing."""
        return {"predict": "predict"}

    def get_metadata_routing(self):
        """Where the keyword arguments of ``fit`` and the prediction methods go: to the
        member method each one calls (see scikit-learn's metadata routing)."""
        mapping = MethodMapping().add(caller="fit", callee="fit")
        for caller, callee in self._member_callees().items():
            mapping.add(caller=caller, callee=callee)
        return MetadataRouter(owner=self).add(estimator=self._base_estimator(),
                                              method_mapping=mapping)

    def _routed_params(self, caller, params):
        """The keyword arguments ``caller`` hands its members' method (scikit-learn's
        metadata routing, which must be on to pass any)."""
        if not params:
            return {}
        if not _routing_enabled():
            raise ValueError(f"{type(self).__name__}.{caller} got {sorted(params)}, which "
                             "are passed on only with metadata routing enabled: "
                             "sklearn.set_config(enable_metadata_routing=True) and a "
                             "set_<method>_request on the estimator.")
        callee = self._member_callees()[caller]
        return dict(getattr(process_routing(self, caller, **params).estimator, callee))

    # ------------------------------------------------- scikit-learn's ensemble face
    # (len, indexing and iteration: MemberSequenceMixin)
    @property
    def estimator_(self):
        """The (unfitted) estimator the members are clones of: ``estimator``, or the
        default silva tree when it is None."""
        check_is_fitted(self, "estimators_")
        return self._base_estimator()

    def _draw(self, seed):
        n_samples, n_features = self._fit_signature
        n_drawn, n_features_drawn = self._draw_sizes
        return _member_draw(seed, n_samples, n_drawn, self.bootstrap, n_features,
                            n_features_drawn, self.bootstrap_features,
                            getattr(self, "_draw_plan", None))

    @property
    def estimators_features_(self):
        """The column ids each member was fitted on.

        Drawn again from each member's seed, without its rows: prediction reads this,
        and never allocates the draw of rows (whose size a loaded file states).
        """
        check_is_fitted(self, "estimators_")
        _, n_features = self._fit_signature
        _, n_features_drawn = self._draw_sizes

        def draw_features():
            return [_member_features(np.random.RandomState(seed), n_features,
                                     n_features_drawn, self.bootstrap_features)
                    for seed in self._seeds]

        # Remembered between predictions: drawing them again cost 37 us per member.
        key = (tuple(self._seeds), n_features, n_features_drawn, self.bootstrap_features)
        features = remembered(self, "estimators_features_", key, draw_features)
        return [member_features.copy() for member_features in features]

    @property
    def estimators_samples_(self):
        """The row ids each member drew, sorted, a row repeated as often as it was drawn
        (as a forest's and scikit-learn's bagging's: the in-bag sample with its repeats);
        ``X[estimators_samples_[i]]`` is what a member whose fit takes no
        ``sample_weight`` was fitted on."""
        check_is_fitted(self, "estimators_")
        rows = np.arange(self._fit_signature[0])
        return [np.repeat(rows, self._draw(seed)[0]) for seed in self._seeds]

    def _out_of_bag_members(self, n_samples):
        """(member, its column ids, its out-of-bag row ids) for every member."""
        for member, seed in zip(self.estimators_, self._seeds, strict=True):
            counts, features = self._draw(seed)
            yield member, features, np.flatnonzero(counts == 0)

    def _oob_members(self, X):
        """Validated training X and (predict, features, out-of-bag rows) per member.

        For :func:`silva.permutation_importance` with ``oob=True``.
        """
        X = self._validated_X(X)
        n_fit = self._fit_signature[0]
        if X.shape[0] != n_fit:
            raise ValueError(f"oob=True needs the training data: the ensemble was fitted on "
                             f"{n_fit} samples, X has {X.shape[0]}.")
        members = [(member.predict, features, rows)
                   for member, features, rows in self._out_of_bag_members(n_fit)]
        return X, members


class BaggingClassifier(PredictLogProbaMixin, ClassifierMixin, BaseBagging):
    """A bagging classifier (Breiman 1996) around any scikit-learn classifier.

    Parameters
    ----------
    estimator : classifier or None, default=None
        The estimator to bag; None means :class:`~silva.DecisionTreeClassifier` grown fully.
    n_estimators : int, default=10
        Number of members.
    max_samples : int or float, default=1.0
        Rows drawn per member: a count, or a fraction of the training set.
    max_features : int or float, default=1.0
        Columns drawn per member: a count, or a fraction of the features.
    bootstrap : bool or "weighted", default=True
        Draw rows with replacement (the bootstrap); False draws ``max_samples`` distinct
        rows (bagging "with p" = ``max_samples``). ``"weighted"`` draws with replacement
        with probability proportional to ``sample_weight``, read as frequencies: a
        member draws ``max_samples`` of ``round(sum(sample_weight))`` rows and is fitted
        on the counts alone (so estimators without ``sample_weight`` can be bagged with
        weights), and a row of weight k is the same as k copies of it whatever the order
        of the rows (see :mod:`silva._weighted_bootstrap`; scikit-learn's
        sample-weight equivalence check passes). True stays the default, scikit-learn's
        behaviour (uniform draws, counts times weights), whose sample size does not
        depend on the weights' scale.
    bootstrap_features : bool, default=False
        Draw the columns with replacement.
    oob_score : bool, default=False
        Estimate accuracy on the out-of-bag samples (``oob_score_``,
        ``oob_decision_function_``); needs ``bootstrap=True``.
    voting : {"soft", "hard"}, default="soft"
        Soft: the class of highest mean probability (members without
        ``predict_proba`` vote instead, as in scikit-learn). Hard: the majority class
        of the members' predictions (ties: the first class); ``predict_proba`` is then
        the members' vote shares.
    warm_start : bool, default=False
        Keep the fitted members and add new ones up to ``n_estimators``.
    n_jobs : int or None, default=None
        Workers fitting members (-1: all cores): threads for silva's trees (grown in the
        engine, which releases the GIL), processes for other estimators; the result does
        not depend on it.
    random_state : int, RandomState or None, default=None
        Seeds every member's draw and the member itself (its ``random_state``).
    verbose : int, default=0
        Show a progress bar over the members (tqdm when installed).
    categorical_features : "auto", array-like or None, default=None
        Categorical columns, passed on (restricted to each member's columns) when the
        estimator is a silva tree; "auto" detects pandas category columns.

    Attributes
    ----------
    estimators_ : list of fitted members
    estimators_features_, estimators_samples_ : list of ndarray
    classes_, n_classes_, n_features_in_, feature_names_in_
    oob_score_ : float
    oob_decision_function_ : ndarray of shape (n_samples, n_classes)

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> from silva import BaggingClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> bag = BaggingClassifier(KNeighborsClassifier(), n_estimators=20, max_samples=0.5,
    ...                         bootstrap=False, random_state=0).fit(X, y)
    >>> bag.score(X, y) > 0.9
    True
    """

    def __init__(self, estimator=None, n_estimators=10, *, max_samples=1.0, max_features=1.0,
                 bootstrap=True, bootstrap_features=False, oob_score=False, voting="soft",
                 warm_start=False, n_jobs=None, random_state=None, verbose=0,
                 categorical_features=None):
        super().__init__(
            estimator=estimator, n_estimators=n_estimators, max_samples=max_samples,
            max_features=max_features, bootstrap=bootstrap,
            bootstrap_features=bootstrap_features, oob_score=oob_score,
            warm_start=warm_start, n_jobs=n_jobs, random_state=random_state, verbose=verbose,
            categorical_features=categorical_features)
        self.voting = voting

    def _base_estimator(self):
        return DecisionTreeClassifier() if self.estimator is None else self.estimator

    def fit(self, X, y, sample_weight=None):
        """Fit the members on random samples of (X, y)."""
        _input.check_option(self.voting, "voting", {"soft", "hard"})
        self._checked_estimator()
        X = self._prepare_X(X, reset=True)
        y = _input.target_1d(self, y, X.shape[0])
        classes, y_encoded = _input.classification_target(y)
        _input.check_same_classes(self, classes)
        self.classes_ = classes
        self.n_classes_ = len(classes)
        # Members learn class indices, so every member's columns map onto classes_.
        return self._fit(X, y_encoded.astype(np.intp), sample_weight)

    def _members_give_proba(self):
        # A member without predict_proba votes even under soft voting, as in
        # scikit-learn's bagging (an SVC, a perceptron).
        return self.voting == "soft" and hasattr(self._base_estimator(), "predict_proba")

    def _member_callees(self):
        # Probabilities (and their logarithms, and the class of the largest) come from
        # the members' predict_proba, or from their votes.
        proba = "predict_proba" if self._members_give_proba() else "predict"
        return {"predict": proba, "predict_proba": proba, "predict_log_proba": proba,
                "decision_function": "decision_function"}

    def _member_proba(self, member, X_member, params=None):
        """The member's (n, n_classes_) probabilities (soft) or one-hot vote (hard);
        ``params``: routed to the member method called."""
        params = params or {}
        out = np.zeros((X_member.shape[0], self.n_classes_))
        if self.voting == "soft" and hasattr(member, "predict_proba"):
            proba = member.predict_proba(X_member, **params)
            out[:, np.asarray(member.classes_, dtype=np.intp)] = proba
        else:
            votes = np.asarray(member.predict(X_member, **params), dtype=np.intp)
            out[np.arange(votes.shape[0]), votes] = 1.0
        return out

    def predict_proba(self, X, **params):
        """Mean of the members' probabilities (soft) or their vote shares (hard).

        ``params`` go to the members' ``predict_proba`` (or ``predict``) through
        scikit-learn's metadata routing."""
        return self._mean_proba(X, self._routed_params("predict_proba", params))

    def predict_log_proba(self, X, **params):
        """Logarithm of :meth:`predict_proba` (-inf for a zero probability)."""
        proba = self._mean_proba(X, self._routed_params("predict_log_proba", params))
        with np.errstate(divide="ignore"):
            return np.log(proba)

    def _mean_proba(self, X, member_params):
        X = self._validated_X(X)
        total = np.zeros((X.shape[0], self.n_classes_))
        for member, features in zip(self.estimators_, self.estimators_features_, strict=True):
            total += self._member_proba(member, X[:, features], member_params)
        return total / len(self.estimators_)

    @available_if(lambda self: hasattr(self._base_estimator(), "decision_function"))
    def decision_function(self, X, **params):
        """Mean of the members' decision functions, when the estimator has one (as in
        scikit-learn's bagging): (n_samples,) with two classes, else (n_samples,
        n_classes). The members learn class indices, so the columns follow
        ``classes_`` for every member that saw all the classes."""
        check_is_fitted(self, "estimators_")
        member_params = self._routed_params("decision_function", params)
        X = self._validated_X(X)
        total = sum(member.decision_function(X[:, features], **member_params)
                    for member, features
                    in zip(self.estimators_, self.estimators_features_, strict=True))
        return total / len(self.estimators_)

    def predict(self, X, pred_contrib=False, pred_interactions=False, **params):
        """The class of highest mean probability or most votes (the first of equals).

        ``pred_contrib=True`` returns SHAP values instead and ``pred_interactions=True``
        SHAP interaction values (see :mod:`silva.explain` for what they explain and
        their layout). ``params`` go to the members' ``predict_proba`` (or ``predict``)
        through scikit-learn's metadata routing.
        """
        if pred_contrib or pred_interactions:
            return self._explain(X, pred_interactions)
        # The probabilities first: they raise NotFittedError before classes_ is read.
        proba = self._mean_proba(X, self._routed_params("predict", params))
        return self.classes_[np.argmax(proba, axis=1)]

    def _compute_oob(self, X, y):
        total = np.zeros((X.shape[0], self.n_classes_))
        counts = np.zeros(X.shape[0])
        for member, features, rows in self._out_of_bag_members(X.shape[0]):
            if rows.size:
                total[rows] += self._member_proba(member, X[np.ix_(rows, features)])
                counts[rows] += 1
        covered = oob_covered(counts, minimum=1)
        decision = np.full(total.shape, np.nan)
        decision[covered] = total[covered] / counts[covered, None]
        self.oob_decision_function_ = decision
        self.oob_score_ = accuracy_score(y[covered], np.argmax(decision[covered], axis=1))


class BaggingRegressor(JackknifeIntervalMixin, RegressorMixin, BaseBagging):
    """A bagging regressor (Breiman 1996) around any scikit-learn regressor.

    Parameters are those of :class:`BaggingClassifier` without ``voting``; the default
    estimator is :class:`~silva.DecisionTreeRegressor`. The prediction is the members'
    mean; ``oob_score_`` is the out-of-bag R² and ``oob_prediction_`` the out-of-bag
    predictions.

    A 2-D ``y`` of shape (n_samples, n_outputs) is passed to every member as it is (the
    default tree is then a multi-output tree, :mod:`silva._multi_output`); predictions,
    like ``oob_prediction_``, have one column per output, and ``oob_score_`` is the R²
    averaged over outputs, as in scikit-learn. ``n_outputs_`` is the number of outputs.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from silva import BaggingRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> bag = BaggingRegressor(n_estimators=30, oob_score=True, random_state=0).fit(X, y)
    >>> 0.3 < bag.oob_score_ < 0.6
    True
    """

    def _base_estimator(self):
        return DecisionTreeRegressor() if self.estimator is None else self.estimator

    def fit(self, X, y, sample_weight=None):
        """Fit the members on random samples of (X, y)."""
        self._checked_estimator()
        X = self._prepare_X(X, reset=True)
        y = _multi_output.target(self, y, X.shape[0], stacklevel=3)
        y = _input.regression_target(y)
        self.n_outputs_ = 1 if y.ndim == 1 else y.shape[1]
        return self._fit(X, y, sample_weight)

    def _prediction_shape(self, n_rows):
        """(n_rows,) for one output, (n_rows, n_outputs) for several."""
        n_outputs = getattr(self, "n_outputs_", 1)
        return (n_rows,) if n_outputs == 1 else (n_rows, n_outputs)

    def predict(self, X, pred_contrib=False, pred_interactions=False, **params):
        """Mean of the members' predictions.

        ``pred_contrib=True`` returns SHAP values instead and ``pred_interactions=True``
        SHAP interaction values (see :mod:`silva.explain` for what they explain and
        their layout). ``params`` go to the members' ``predict`` through
        scikit-learn's metadata routing.
        """
        if pred_contrib or pred_interactions:
            return self._explain(X, pred_interactions)
        member_params = self._routed_params("predict", params)
        X = self._validated_X(X)
        shape = self._prediction_shape(X.shape[0])
        total = np.zeros(shape)
        for member, features in zip(self.estimators_, self.estimators_features_, strict=True):
            total += np.asarray(member.predict(X[:, features], **member_params),
                                dtype=np.float64).reshape(shape)
        return total / len(self.estimators_)

    def _compute_oob(self, X, y):
        total = np.zeros(y.shape)
        counts = np.zeros(X.shape[0])
        for member, features, rows in self._out_of_bag_members(X.shape[0]):
            if rows.size:
                total[rows] += np.asarray(member.predict(X[np.ix_(rows, features)]),
                                          dtype=np.float64).reshape(total[rows].shape)
                counts[rows] += 1
        covered = oob_covered(counts, minimum=2)
        prediction = np.full(y.shape, np.nan)
        # counts broadcast over the outputs' columns of a 2-D y.
        prediction[covered] = total[covered] / counts[covered].reshape(
            (-1,) + (1,) * (y.ndim - 1))
        self.oob_prediction_ = prediction
        self.oob_score_ = r2_score(y[covered], prediction[covered])
        if y.ndim == 1:
            # For predict_interval's jackknife+ (NaN where no member left the row out).
            self._oob_abs_residuals = np.abs(y - prediction)
        else:
            self.__dict__.pop("_oob_abs_residuals", None)

    # What predict_interval's jackknife+ reads (see silva.intervals).
    def _member_predictions(self, X):
        _multi_output.refuse(self, "predict_interval")
        return np.column_stack([
            np.asarray(member.predict(X[:, features]), dtype=np.float64).ravel()
            for member, features in zip(self.estimators_, self.estimators_features_,
                                        strict=True)])

    def _out_of_bag_indicator(self):
        return np.array([self._draw(seed)[0] == 0 for seed in self._seeds])

    def _oob_residuals(self):
        _multi_output.refuse(self, "predict_interval")
        return self._oob_abs_residuals


def oob_covered(counts, minimum):
    """Samples with an out-of-bag prediction (``counts`` > 0), for bagging and forests.

    A ValueError when fewer than ``minimum`` have one (too few samples or members for an
    estimate); a warning naming how many lack one otherwise.
    """
    covered = counts > 0
    if covered.sum() < minimum:
        raise ValueError(
            f"oob_score=True: only {int(covered.sum())} of {counts.shape[0]} samples are out "
            f"of bag of some member or tree; at least {minimum} are needed to estimate the score. "
            "Use more samples, more members, or a smaller max_samples.")
    if not covered.all():
        # The first sentence is scikit-learn's, so that code matching it keeps working.
        warnings.warn("Some inputs do not have OOB scores. This probably means too few "
                      "estimators were used to compute any reliable oob estimates: "
                      f"{int(np.sum(~covered))} samples were drawn by every member and have "
                      "no out-of-bag prediction; they are left out of oob_score_ (NaN in the "
                      "out-of-bag predictions). Use more members or trees.", UserWarning,
                      stacklevel=4)
    return covered
