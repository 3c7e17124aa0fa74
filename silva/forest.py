"""Random forests (Breiman 2001) and extremely randomized trees (Geurts et al. 2006).

Both are averages of many CART trees (:mod:`silva.decision_tree`), grown on one binned
copy of the training data (:mod:`silva.engine.forest`), in parallel threads, and predicted
in one compiled call over all trees (:mod:`silva.engine.ensemble`):

- a **random forest** grows each tree on a bootstrap sample (``bootstrap=True``, sample
  counts become weights, as in scikit-learn) and draws ``max_features`` candidate
  features at every node;
- **extra trees** draw one random threshold per candidate feature (``splitter="random"``
  of the trees) and, by default, use the whole training set for every tree.

Beyond scikit-learn's interface the forests offer the out-of-bag error as a function of
the number of trees (``oob_curve_``), the between-tree standard deviation of regressions
(``predict(X, return_std=True)``), quantile regression forests (Meinshausen 2006,
:meth:`RandomForestRegressor.predict_quantiles`), and Breiman's margin, strength and
correlation (:meth:`RandomForestClassifier.margin`,
:meth:`RandomForestClassifier.strength_correlation`).
"""

import numbers
import warnings

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import Bunch, check_random_state
from sklearn.utils.validation import check_is_fitted

from silva import _input, _multi_output
from silva._mixins import (
    ExplainMixin,
    FittedInputMixin,
    MemberSequenceMixin,
    ParamNamesMixin,
    PredictLogProbaMixin,
)
from silva._nothing_learned import cart_root_reason, warn_nothing_learned
from silva._progress import progress
from silva._weighted_bootstrap import weighted_bootstrap_counts, weighted_draw_plan
from silva.bagging import oob_covered
from silva.callbacks import CallbackEnv, EarlyStopException
from silva.decision_tree import (
    BaseDecisionTree,
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    histogram_min_samples_for,
    regression_inputs,
)
from silva.engine import criteria
from silva.engine.cart import BinnedData, GrownTree, TreeTask
from silva.engine.ensemble import PackedTrees
from silva.engine.forest import iter_grown_trees
from silva.engine.levelwise import RowShard, poisson_counts, reproducible_offset
from silva.engine.levelwise_grower import LevelwiseRules, grow_levelwise_trees
from silva.engine.pruning import prune_tree
from silva.engine.random import seed_from_random_state, seeded_random_state
from silva.inspection import encoded_target
from silva.intervals import JackknifeIntervalMixin
from silva.persistence import PersistenceMixin

_MAX_SEED = np.iinfo(np.int32).max
#: ``bootstrap="poisson"``: the partition-independent forest of
#: :mod:`silva.engine.levelwise` (Poisson counts keyed by row, level-wise growth).
POISSON = "poisson"
#: ``bootstrap="weighted"``: rows drawn in proportion to sample_weight
#: (:mod:`silva._weighted_bootstrap`).
WEIGHTED = "weighted"
#: Trees the level-wise forest grows together (one pass over the rows per level for all).
LEVELWISE_BATCH = 8


def _bootstrap_counts(seed, n_samples, n_drawn):
    """How often each sample is drawn in tree ``seed``'s bootstrap (with replacement).

    The draw is scikit-learn's (``randint`` from a ``RandomState(seed)``), so that the
    in-bag samples can be regenerated from the seed alone.
    """
    drawn = seeded_random_state(seed).randint(0, n_samples, n_drawn)
    return np.bincount(drawn, minlength=n_samples).astype(np.float64)


class BaseForest(MemberSequenceMixin, ExplainMixin, FittedInputMixin, PersistenceMixin,
                 ParamNamesMixin, BaseEstimator):
    """Shared fit logic of the forests; use the four public classes."""

    _splitter = "best"  # "random" for extra trees
    _keeps_leaf_samples = False  # regressors keep them for predict_quantiles
    _tree_class = None
    # Input handling is the trees' own: the same categorical and data-frame support.
    _prepare_X = BaseDecisionTree._prepare_X
    _prepare_X_y = BaseDecisionTree._prepare_X_y

    def __init__(self, *, n_estimators, criterion, max_depth, min_samples_split,
                 min_samples_leaf, min_weight_fraction_leaf, max_features, max_leaf_nodes,
                 min_impurity_decrease, bootstrap, oob_score, n_jobs, random_state, verbose,
                 warm_start, ccp_alpha, max_samples, max_bins, categorical_features,
                 monotonic_cst=None):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.ccp_alpha = ccp_alpha
        self.max_samples = max_samples
        self.max_bins = max_bins
        self.categorical_features = categorical_features
        self.monotonic_cst = monotonic_cst

    _TREE_PARAMS = ("criterion", "max_depth", "min_samples_split", "min_samples_leaf",
                    "min_weight_fraction_leaf", "max_features", "max_leaf_nodes",
                    "min_impurity_decrease", "ccp_alpha", "max_bins", "categorical_features",
                    "monotonic_cst")

    def _make_tree(self, random_state=None):
        params = {name: getattr(self, name) for name in self._TREE_PARAMS}
        return self._tree_class(splitter=self._splitter, random_state=random_state, **params)

    # ------------------------------------------------------------ validation
    def _check_forest_params(self, n_samples):
        _input.check_int(self.n_estimators, "n_estimators", 1)
        if isinstance(self.ccp_alpha, str):
            # "cv" cross-validates one tree; a forest's trees are averaged, not pruned alone.
            raise ValueError(f"ccp_alpha of a forest must be a float >= 0; got "
                             f"{self.ccp_alpha!r} ('cv' is for single trees).")
        bootstrap = self.bootstrap
        if not (isinstance(bootstrap, bool | np.bool_)
                or (isinstance(bootstrap, str) and bootstrap in (POISSON, WEIGHTED))):
            raise ValueError(f"{type(self).__name__}: bootstrap must be True, False, "
                             f"'poisson' or 'weighted'; got {bootstrap!r}.")
        if not isinstance(self.warm_start, bool | np.bool_):
            raise ValueError(f"warm_start must be True or False; got {self.warm_start!r}.")
        if not (isinstance(self.oob_score, bool | np.bool_) or callable(self.oob_score)):
            raise ValueError(f"oob_score must be True, False or a metric "
                             f"score_func(y_true, y_pred); got {self.oob_score!r}.")
        if self.oob_score is not False and not self.bootstrap:
            # The first sentence is scikit-learn's, so that code matching it keeps working.
            raise ValueError("Out of bag estimation only available if bootstrap=True: "
                             f"{type(self).__name__}(oob_score={self.oob_score!r}) needs "
                             "bootstrap=True, since without bootstrap every tree sees every "
                             "sample and no sample is out of bag.")
        if self.max_samples is None:
            return n_samples
        if not self.bootstrap:
            raise ValueError("`max_sample` cannot be set if `bootstrap=False`. Either switch "
                             "to `bootstrap=True` or set `max_sample=None` "
                             f"({type(self).__name__} got max_samples={self.max_samples!r}).")
        # A bootstrap draws with replacement, so it may draw more rows than there are
        # (an int above n_samples, a fraction above 1), as in scikit-learn's forests.
        if isinstance(self.max_samples, numbers.Integral) and not isinstance(
                self.max_samples, bool | np.bool_):
            if self.max_samples < 1:
                raise ValueError(f"max_samples must be >= 1 as an int; got "
                                 f"{self.max_samples}.")
            return int(self.max_samples)
        if (isinstance(self.max_samples, numbers.Real)
                and not isinstance(self.max_samples, bool | np.bool_)
                and 0.0 < self.max_samples < np.inf):
            return max(1, round(n_samples * self.max_samples))
        raise ValueError("max_samples must be None, an int >= 1 or a positive float (a "
                         f"fraction of n_samples); got {self.max_samples!r}.")

    def _n_threads(self):
        if self.n_jobs is not None and (not isinstance(self.n_jobs, numbers.Integral)
                                        or self.n_jobs == 0):
            raise ValueError(f"n_jobs must be None or a nonzero int; got {self.n_jobs!r}.")
        return max(1, effective_n_jobs(self.n_jobs))

    # ------------------------------------------------------------------- fit
    def _fit_forest(self, X, y, sample_weight, criterion_code, n_classes, value_offset=0.0,
                    callbacks=None):
        """Grow the trees (y encoded, weights final) and compute the out-of-bag results."""
        n_samples, n_features = X.shape
        self._draw_rows = self._draw_cumulative = None
        if isinstance(self.bootstrap, str) and self.bootstrap == WEIGHTED:
            self._draw_rows, self._draw_cumulative = weighted_draw_plan(X, y, sample_weight)
            # sample_weight as frequencies: a bootstrap sample as large as the data set
            # whose row of weight k stands for k rows.
            n_drawn = self._check_forest_params(max(1, round(self._draw_cumulative[-1])))
        else:
            n_drawn = self._check_forest_params(n_samples)
        n_threads = self._n_threads()
        # The trees' own parameter checks and rules, read off a tree like the forest's.
        template = self._make_tree()
        template.is_categorical_ = self.is_categorical_
        template._owner_name = type(self).__name__
        params = template._check_params(n_samples, sample_weight.sum())
        self.max_features_ = _input.resolve_max_features(self.max_features, n_features)
        template.max_features_ = self.max_features_
        names = getattr(self, "feature_names_in_", None)
        _input.check_categorical_codes(X, self.is_categorical_, self.max_bins, names)

        random_state = check_random_state(self.random_state)
        seeds = random_state.randint(_MAX_SEED, size=self.n_estimators)
        if not self.warm_start or not hasattr(self, "estimators_"):
            self._clear_fit()
        n_existing = len(self._grown_trees)
        if self.n_estimators < n_existing:
            raise ValueError(f"n_estimators={self.n_estimators} must be at least the "
                             f"{n_existing} trees already fitted when warm_start=True.")
        # A multi-output fit has one class count per output: compared as a tuple.
        signature_classes = n_classes if np.ndim(n_classes) == 0 else tuple(
            int(k) for k in n_classes)
        if n_existing and self._fit_signature != (n_samples, n_features, signature_classes):
            raise ValueError("warm_start=True needs the same data as the previous fit.")
        if n_existing and self.n_estimators == n_existing:
            warnings.warn("Warm-start fitting without increasing n_estimators does not fit "
                          f"new trees: {type(self).__name__} already has {n_existing}.",
                          UserWarning, stacklevel=3)
        self._fit_signature = (n_samples, n_features, signature_classes)
        new_seeds = seeds[n_existing:]

        # absolute_error (order statistics) and level-wise growth read the dense codes.
        data = BinnedData.from_X(
            X, self.is_categorical_, self.max_bins,
            sparse_growth=(criterion_code != criteria.ABSOLUTE_ERROR
                           and self.bootstrap != POISSON))
        self._has_missing_at_fit = _input.has_missing(X)
        y_float = np.asarray(y, dtype=np.float64)
        n_outputs = y.shape[1] if y.ndim == 2 else 1
        rules = template._growth_rules(
            params, criterion_code, n_classes,
            self._histogram_min_samples(criterion_code, n_samples, n_features, data),
            _input.check_significance_level(getattr(self, "min_significance", None)),
            n_outputs)
        # The grower reads y only under absolute_error, which is single-output: a
        # multi-output fit passes a 1-D placeholder, keeping the grower's argument types.
        engine_y = y_float if n_outputs == 1 else np.zeros(n_samples)
        fraction = float(self.min_weight_fraction_leaf)
        self._poisson_rate = n_drawn / n_samples if self.bootstrap == POISSON else None

        def tree_inputs(weight):
            """A tree's weights, statistic channels, in-bag rows and leaf weight bound,
            from its weights before "balanced_subsample"."""
            if getattr(self, "class_weight", None) == "balanced_subsample":
                weight = weight * self._subsample_class_weights(y, weight, n_classes)
            stats = _multi_output.statistics(criterion_code, y_float, weight, n_classes)
            if self._draw_rows is not None:
                # In the plan's content order, so that the tree sums its samples in an
                # order that does not depend on the order of the rows.
                inbag = self._draw_rows[weight[self._draw_rows] > 0]
            else:
                inbag = np.flatnonzero(weight > 0)
            return weight, stats, inbag.astype(np.int32), fraction * weight.sum()

        # Without a bootstrap every tree grows on the same weights: their inputs are
        # made once and shared (the grower reads them and copies the in-bag rows), where
        # making them per tree was a tenth of an extra-trees regressor's Python work per
        # tree on diabetes' 353 rows.
        shared_inputs = tree_inputs(sample_weight) if not self.bootstrap else None

        def make_task(t):
            seed = int(new_seeds[t])
            inputs = shared_inputs
            if inputs is None:
                weight = self._tree_weight(seed, sample_weight, n_drawn)
                if not np.any(weight > 0):
                    # The tree would have no class distribution and no mean to predict
                    # (its probabilities summed to zero).
                    raise ValueError(
                        f"the bootstrap sample of tree {n_existing + t} drew "
                        f"{n_drawn} samples, all of zero sample_weight, and has "
                        "nothing to fit; give more samples a positive sample_weight, "
                        "draw more (max_samples) or set bootstrap=False.")
                inputs = tree_inputs(weight)
            weight, stats, inbag, min_weight_leaf = inputs
            return TreeTask(
                stats=stats, y=engine_y, weight=weight, sample_indices=inbag,
                min_weight_leaf=min_weight_leaf,
                seed=seed_from_random_state(seeded_random_state(seed)),
            )

        if self.bootstrap == POISSON:
            self._check_levelwise(criterion_code)
            shard = RowShard(data.bin_codes, y_float, sample_weight,
                             np.arange(n_samples, dtype=np.int64), data.missing_bin + 1,
                             criteria.n_channels(criterion_code, n_classes),
                             criteria.is_classification(criterion_code))
            grown_trees = self._iter_levelwise_trees(
                lambda method, *args: [getattr(shard, method)(*args)],
                self._levelwise_rules(rules, data), new_seeds, self._poisson_rate)
        else:
            grown_trees = iter_grown_trees(data, rules, make_task, len(new_seeds),
                                           n_threads)
        n_kept = [len(new_seeds)]

        def fitted_trees():
            # The trees of an earlier fit (warm start), then each new tree as soon as it
            # is grown: the packing copies it and this generator lets it go, so the fit
            # never holds the grower's trees and the packed copy together.
            for grown in self._grown_trees[:n_existing]:
                yield grown.tree
            for t, grown_tree in enumerate(progress(grown_trees, total=len(new_seeds),
                                                    enabled=self.verbose,
                                                    desc=type(self).__name__)):
                tree, grown_tree.tree = grown_tree.tree, None
                # Multi-output regression: one offset per output, (n_outputs, 1) against
                # the values' (n_nodes, n_outputs, 1).
                tree.value += np.reshape(value_offset, (-1, 1)) if np.ndim(value_offset) \
                    else value_offset
                if self.ccp_alpha > 0.0:
                    tree = prune_tree(tree, self.ccp_alpha)
                if not self._keeps_leaf_samples:
                    # Only quantile regression forests read the leaf samples.
                    grown_tree.leaf_samples = grown_tree.node_start = None
                    grown_tree.node_end = None
                self._grown_trees.append(grown_tree)
                yield tree
                if callbacks and self._stop_requested(callbacks, n_existing, t):
                    grown_trees.close()
                    n_kept[0] = t + 1
                    return

        expected = self._expected_nodes(n_samples, n_drawn, rules, len(new_seeds))
        if n_existing:
            expected += int(self._packed.node_offset[-1])
        self._packed = PackedTrees(fitted_trees(), expected_nodes=expected)
        new_seeds = new_seeds[:n_kept[0]]
        self._tree_seeds.extend(int(s) for s in new_seeds)
        self._n_drawn = n_drawn
        self.estimators_ = []
        for t in range(self._packed.n_trees):
            view = self._packed.tree(t)  # the fitted trees view the one packed copy
            self._grown_trees[t].tree = view
            self.estimators_.append(self._wrap_tree(view, self._tree_seeds[t]))
        if self._packed.node_offset[-1] == self._packed.n_trees:  # every tree one leaf
            # One warning for the forest, not one per tree; the reason is read on the
            # whole training set (a bootstrap sample holds fewer distinct rows).
            reason = (f"ccp_alpha={self.ccp_alpha} pruned every tree to its root"
                      if self.ccp_alpha > 0 else
                      cart_root_reason(template, X, y_float, sample_weight, params))
            warn_nothing_learned(f"every tree of {type(self).__name__} stopped at its "
                                 "root", reason, stacklevel=3)
        if self.oob_score and n_outputs > 1:
            self._compute_multi_output_oob(X, y)
        elif self.oob_score:
            self._compute_oob(X, y, sample_weight)
        else:
            for name in ("oob_score_", "oob_curve_", "oob_decision_function_",
                         "oob_prediction_"):
                self.__dict__.pop(name, None)
        return self

    # ------------------------------------------------------ bootstrap="poisson"
    def _check_levelwise(self, criterion_code):
        """Refuse what the level-wise forest (``bootstrap="poisson"``) does not grow."""
        owner = type(self).__name__
        problems = []
        if criterion_code in (criteria.ABSOLUTE_ERROR, criteria.POISSON):
            problems.append(f"criterion={self.criterion!r}")
        if self.max_leaf_nodes is not None:
            problems.append(f"max_leaf_nodes={self.max_leaf_nodes!r} (best-first growth; "
                            "the trees grow level by level)")
        if getattr(self, "min_significance", None) is not None:
            problems.append(f"min_significance={self.min_significance!r}")
        if getattr(self, "class_weight", None) == "balanced_subsample":
            problems.append("class_weight='balanced_subsample'")
        if problems:
            raise ValueError(f"{owner}: bootstrap='poisson' does not support "
                             f"{', '.join(problems)}; use bootstrap=True for them.")

    @staticmethod
    def _levelwise_rules(rules, data):
        """The :class:`~silva.engine.levelwise_grower.LevelwiseRules` of trees grown
        under the forest's growth ``rules`` on the binning tables of ``data`` (a
        :class:`~silva.engine.cart.BinnedData`, or anything with its table fields)."""
        return LevelwiseRules(
            criterion=rules.criterion, n_classes=rules.n_classes,
            max_depth=rules.max_depth, min_samples_split=rules.min_samples_split,
            min_samples_leaf=rules.min_samples_leaf, min_weight_fraction=0.0,
            min_impurity_decrease=rules.min_impurity_decrease,
            max_features=rules.max_features, use_random=rules.use_random,
            n_value_bins=data.n_value_bins,
            is_categorical=np.asarray(data.is_categorical, dtype=np.uint8),
            missing_bin=int(data.missing_bin), bin_lower=data.bin_lower,
            bin_upper=data.bin_upper, n_words=int(data.n_words),
            n_categories=data.n_categories)

    def _iter_levelwise_trees(self, call, rules, seeds, rate, counter=None):
        """The level-wise trees of ``seeds``, grown :data:`LEVELWISE_BATCH` at a time
        over the shards ``call`` reaches (:func:`~silva.engine.levelwise_grower.
        grow_levelwise_trees`), as :class:`~silva.engine.cart.GrownTree` objects
        without leaf samples (quantile forests find them from the tree)."""
        rules.min_weight_fraction = float(self.min_weight_fraction_leaf)
        for start in range(0, len(seeds), LEVELWISE_BATCH):
            batch = seeds[start:start + LEVELWISE_BATCH]
            for tree in grow_levelwise_trees(call, rules, batch, rate, counter):
                yield GrownTree(tree, None, None, None)

    def _histogram_min_samples(self, criterion_code, n_samples, n_features, data):
        """Node size from which the trees build full histograms (see the grower).

        A full histogram costs every feature on the smaller child's samples (the larger
        child's comes by subtraction); a per-node compact histogram of only the
        ``max_features`` drawn features costs those on all the node's samples. With at
        most half the features drawn (``"sqrt"``, extra trees' default), compact
        histograms win at every size: measured 3x faster for a random forest and 3.8x
        for extra trees on 100,000 x 28 rows. absolute_error needs the samples anyway.

        Extra trees never build one, whatever ``max_features``: their node search sums
        every visited feature's left side in one pass over the node's rows
        (:func:`silva.engine.splitting.search_random_node`), which costs less than the
        smaller child's full histogram and the compact scans of every feature (an
        extra-trees regressor's default ``max_features=1.0``: about a tenth of its fit
        off on 1,000 and 5,000 x 28 rows, measured). Its left sums then add the rows in
        node order rather than by histogram subtraction, which rounds a regressor's sums
        otherwise (the same accuracy; the trees can differ in the last bits).
        """
        if (criterion_code == criteria.ABSOLUTE_ERROR or self._splitter == "random"
                or 2 * self.max_features_ <= n_features):
            return n_samples + 1
        return histogram_min_samples_for(criterion_code, data)

    def _keeps_trees_for_another_target(self, X, same_target):
        """Whether this fit is a warm start that adds no tree and is given the previous
        fit's X shape but another target (other classes, another number of outputs); it
        then warns and the forest keeps its trees and fitted attributes, as scikit-learn's
        forests do (there is nothing to grow, so nothing to refuse). A warm start that
        adds trees still needs the previous fit's target, and one given the same target
        goes on to recompute the out-of-bag results (oob_score set after the fit)."""
        grown = getattr(self, "_grown_trees", None)
        if not (self.warm_start and grown and self.n_estimators == len(grown)
                and not same_target and self._fit_signature[:2] == X.shape):
            return False
        warnings.warn("Warm-start fitting without increasing n_estimators does not fit new "
                      f"trees: {type(self).__name__} already has {len(grown)}, fitted on "
                      "another y (other classes or outputs) than this one, which is not "
                      "used; the forest is unchanged.", UserWarning, stacklevel=3)
        return True

    def _clear_fit(self):
        self._grown_trees = []
        self._tree_seeds = []
        self._fit_signature = None

    def _multi_output_oob_sums(self, X):
        """Per row, the sum of the leaf values (n_rows, n_outputs, width) of the trees it
        is out of bag for, and how many those are (a multi-output forest's out-of-bag
        estimate, tree by tree in Python: the compiled one reads a 1-D y)."""
        inbag = self._inbag_mask(X.shape[0])
        sums = None
        for t, estimator in enumerate(self.estimators_):
            out = np.flatnonzero(inbag[t] == 0)
            values = estimator.tree_.predict(X[out])
            if sums is None:
                sums = np.zeros((X.shape[0],) + values.shape[1:])
            sums[out] += values
        return sums, np.sum(inbag == 0, axis=0)

    @staticmethod
    def _subsample_class_weights(y, weight, n_classes):
        """"balanced" class weights computed on one tree's (bootstrap-weighted) sample;
        for a multi-output y, the product over the outputs of each one's weights."""
        if y.ndim == 2:
            factors = np.ones(y.shape[0])
            for o in range(y.shape[1]):
                factors *= BaseForest._subsample_class_weights(y[:, o], weight, n_classes[o])
            return factors
        class_totals = np.bincount(y, weights=weight, minlength=n_classes)
        present = class_totals > 0
        per_class = np.zeros(n_classes)
        per_class[present] = weight.sum() / (present.sum() * class_totals[present])
        return per_class[y]

    def _stop_requested(self, callbacks, n_existing, t):
        """Call the callbacks after tree ``t`` of this fit; True when one asks to stop.

        A callback raising :class:`~silva.callbacks.EarlyStopException` stops the forest
        after the current tree (a forest has no per-tree validation score to roll back
        to, so ``best_iteration`` is not used to drop trees).
        """
        env = CallbackEnv(model=self, iteration=n_existing + t, begin_iteration=n_existing,
                          end_iteration=self.n_estimators)
        try:
            for callback in callbacks:
                callback(env)
        except EarlyStopException:
            return True
        return False

    def _expected_nodes(self, n_samples, n_drawn, rules, n_trees):
        """An upper bound on the nodes of ``n_trees`` new trees, reserved by the packing.

        A leaf holds at least ``min_samples_leaf`` of the tree's (at most ``n_drawn``
        distinct) samples, so a tree has at most ``2 * leaves - 1`` nodes.
        """
        # A Poisson bootstrap may hold more distinct samples than its expected size.
        in_bag = n_drawn if self.bootstrap and self.bootstrap != POISSON else n_samples
        leaves = in_bag // max(1, rules.min_samples_leaf)
        if rules.max_leaf_nodes > 0:
            leaves = min(leaves, rules.max_leaf_nodes)
        leaves = min(leaves, 2 ** min(rules.max_depth, 62))
        return n_trees * (2 * max(1, leaves) - 1)

    def _wrap_tree(self, tree, seed):
        """A fitted tree estimator around ``tree`` (so that ``estimators_[i]`` predicts)."""
        estimator = self._make_tree(random_state=seed)
        state = {name: getattr(self, name) for name in (
            "n_features_in_", "feature_names_in_", "is_categorical_", "_encoder",
            "max_features_", "_has_missing_at_fit", "classes_", "n_classes_", "n_outputs_")
            if hasattr(self, name)}
        estimator.__dict__.update(state)
        estimator.tree_ = tree
        return estimator

    # ------------------------------------------------- scikit-learn's ensemble face
    # (len, indexing and iteration: MemberSequenceMixin)
    @property
    def estimator(self):
        """The unfitted tree the forest grows copies of, with the forest's tree
        parameters (scikit-learn's ``estimator`` of a forest)."""
        return self._make_tree()

    @property
    def _n_samples_bootstrap(self):
        """Rows each tree's bootstrap draws (scikit-learn's forests' name for it)."""
        check_is_fitted(self, "estimators_")
        return self._n_drawn

    @property
    def estimators_samples_(self):
        """Indices of the training rows each tree was grown on, int32, one array per
        tree: the bootstrap draw with its repeats, or every row without bootstrap."""
        check_is_fitted(self, "estimators_")
        n_samples = self._fit_signature[0]
        if not self.bootstrap:
            return [np.arange(n_samples, dtype=np.int32) for _ in self._tree_seeds]
        rows = np.arange(n_samples, dtype=np.int32)
        ones = np.ones(n_samples)
        # From the counts the trees were weighted by, so that the two cannot disagree.
        return [np.repeat(rows, np.rint(self._tree_weight(seed, ones, self._n_drawn))
                          .astype(np.intp)) for seed in self._tree_seeds]

    def _oob_scorer(self, default):
        """The metric of ``oob_score_``: ``oob_score`` when it is a callable
        score_func(y_true, y_pred), else ``default``."""
        return self.oob_score if callable(self.oob_score) else default

    def _tree_weight(self, seed, sample_weight, n_drawn):
        """The weights tree ``seed`` grows on (before "balanced_subsample"): the sample
        weights times the bootstrap counts (Poisson counts keyed by row under
        ``bootstrap="poisson"``); with ``bootstrap="weighted"`` the counts alone (the
        draw already took the weights into account)."""
        if self.bootstrap == POISSON:
            return sample_weight * poisson_counts(
                np.uint64(seed), np.arange(sample_weight.shape[0], dtype=np.int64),
                self._poisson_rate)
        if getattr(self, "_draw_rows", None) is not None:
            return weighted_bootstrap_counts(seeded_random_state(seed), self._draw_rows,
                                             self._draw_cumulative, sample_weight.shape[0],
                                             n_drawn)
        if self.bootstrap:
            return sample_weight * _bootstrap_counts(seed, sample_weight.shape[0], n_drawn)
        return sample_weight

    def _inbag_mask(self, n_samples):
        """(n_trees, n_samples) uint8: 1 where the sample trained the tree."""
        mask = np.ones((len(self._tree_seeds), n_samples), dtype=np.uint8)
        if self.bootstrap:
            ones = np.ones(n_samples)
            for t, seed in enumerate(self._tree_seeds):
                mask[t] = self._tree_weight(seed, ones, self._n_drawn) > 0
        return mask

    def _oob_members(self, X):
        """Validated training X and (predict, features, out-of-bag rows) per tree.

        For :func:`silva.permutation_importance` with ``oob=True``; ``predict`` returns
        class indices (classifiers) or values.
        """
        _multi_output.refuse(self, "permutation importance with oob=True")
        X = self._validated_X(X)
        n_fit = self._fit_signature[0]
        if X.shape[0] != n_fit:
            raise ValueError(f"oob=True needs the training data: the forest was fitted on "
                             f"{n_fit} samples, X has {X.shape[0]}.")
        inbag = self._inbag_mask(n_fit)
        features = np.arange(X.shape[1])
        is_classifier = isinstance(self, ClassifierMixin)
        members = []
        for t, estimator in enumerate(self.estimators_):
            tree = estimator.tree_

            def predict(X_rows, tree=tree):
                values = tree.predict(X_rows)[:, 0, :]
                return np.argmax(values, axis=1) if is_classifier else values[:, 0]
            members.append((predict, features, np.flatnonzero(inbag[t] == 0)))
        return X, members

    # --------------------------------------------------------------- results
    @property
    def feature_importances_(self):
        """Mean over the trees of their normalised impurity decreases (MDI)."""
        check_is_fitted(self, "estimators_")
        split = np.diff(self._packed.node_offset) > 1  # trees with at least one split
        importances = (self._packed.feature_importances()[split].mean(axis=0) if split.any()
                       else np.zeros(self.n_features_in_))
        total = importances.sum()
        return importances / total if total > 0 else importances

    def apply(self, X):
        """Leaf index of each sample in each tree, shape (n_samples, n_estimators)."""
        X = self._validated_X(X)
        return self._packed.apply(X)

    def decision_path(self, X):
        """The nodes each sample visits in every tree, as scikit-learn's forests give
        them: a sparse (n_samples, total nodes) indicator, the trees' node columns side
        by side, and ``n_nodes_ptr`` (n_estimators + 1,), where tree t's columns are
        ``indicator[:, n_nodes_ptr[t]:n_nodes_ptr[t + 1]]``."""
        from scipy import sparse

        X = self._validated_X(X)
        paths = [estimator.tree_.decision_path(X) for estimator in self.estimators_]
        n_nodes_ptr = np.cumsum([0] + [path.shape[1] for path in paths])
        return sparse.hstack(paths).tocsr(), n_nodes_ptr

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.target_tags.multi_output = _multi_output.supported(self)
        if tags.classifier_tags is not None:
            tags.classifier_tags.multi_label = tags.target_tags.multi_output
        tags.input_tags.sparse = True
        return tags


class ForestClassifier(PredictLogProbaMixin, ClassifierMixin, BaseForest):
    """Fit and prediction of the classification forests."""

    _tree_class = DecisionTreeClassifier
    _TREE_PARAMS = (*BaseForest._TREE_PARAMS, "min_significance")

    def fit(self, X, y, sample_weight=None, callbacks=None):
        """Grow the forest on (X, y); NaN in X means missing.

        ``callbacks`` are called after each tree with a
        :class:`~silva.callbacks.CallbackEnv`; one raising
        :class:`~silva.callbacks.EarlyStopException` stops growing more trees.
        """
        code = _input.criterion_code(self.criterion, criteria.CLASSIFICATION_CRITERIA)
        X, y = self._prepare_X_y(X, y)
        if y.ndim == 2:
            return self._fit_multi_output(X, y, sample_weight, code, callbacks)
        classes, y_encoded = _input.classification_target(y)
        if self._keeps_trees_for_another_target(X, _same_classes(self, classes)):
            return self
        _input.check_same_classes(self, classes)
        self.classes_ = classes
        self.n_classes_ = len(classes)
        self.n_outputs_ = 1
        sample_weight = _input.check_sample_weight(sample_weight, X.shape[0])
        # "balanced_subsample" weighs each tree's bootstrap sample (see _fit_forest);
        # without bootstrap every tree's sample is the whole set, so it is "balanced".
        class_weight = self.class_weight
        if isinstance(class_weight, str) and class_weight == "balanced_subsample":
            class_weight = None if self.bootstrap else "balanced"
        factors = _input.class_weight_per_sample(class_weight, y, classes,
                                                 options=("balanced", "balanced_subsample"))
        sample_weight = _input.apply_class_weight(sample_weight, factors)
        return self._fit_forest(X, y_encoded.astype(np.intp), sample_weight, code,
                                self.n_classes_, callbacks=callbacks)

    def _fit_multi_output(self, X, y, sample_weight, code, callbacks):
        """Grow the forest on a 2-D y: each tree a multi-output tree (see
        :mod:`silva._multi_output`)."""
        code = _multi_output.check_options(self, code, y.shape[1])
        classes, y_encoded = _multi_output.classification_targets(y)
        if self._keeps_trees_for_another_target(X, _same_classes(self, classes)):
            return self
        if self.oob_score and any(len(c) > 2 for c in classes):
            # scikit-learn's rule and first sentence: the out-of-bag score is computed on
            # the joint argmax of every output, defined for multilabel targets only.
            raise ValueError("The type of target cannot be used to compute OOB estimates: "
                             f"{type(self).__name__} computes out-of-bag estimates for "
                             "multi-output y only when every output has at most 2 classes "
                             "(multilabel-indicator); this y is multiclass-multioutput.")
        if self.warm_start and hasattr(self, "classes_") and not (
                isinstance(self.classes_, list) and len(self.classes_) == len(classes)
                and all(np.array_equal(a, b) for a, b in zip(self.classes_, classes,
                                                              strict=True))):
            raise ValueError("warm_start=True needs the same classes as the previous fit.")
        self.classes_ = classes
        self.n_classes_ = [len(c) for c in classes]
        self.n_outputs_ = y.shape[1]
        sample_weight = _input.check_sample_weight(sample_weight, X.shape[0])
        class_weight = self.class_weight
        if isinstance(class_weight, str) and class_weight == "balanced_subsample":
            class_weight = None if self.bootstrap else "balanced"
        factors = _multi_output.class_weight_factors(
            self, class_weight, y, classes, options=("balanced", "balanced_subsample"))
        sample_weight = _input.apply_class_weight(sample_weight, factors)
        return self._fit_forest(X, y_encoded.astype(np.intp), sample_weight, code,
                                np.asarray(self.n_classes_, dtype=np.intp),
                                callbacks=callbacks)

    def _compute_multi_output_oob(self, X, y):
        """scikit-learn's multi-output out-of-bag results: ``oob_decision_function_``
        (n_samples, max n_classes, n_outputs) and ``oob_score_`` scored on the (n_samples,
        n_outputs) class indices of highest out-of-bag probability (the accuracy of whole
        rows by default, as ``score`` gives it)."""
        sums, counts = self._multi_output_oob_sums(X)
        covered = oob_covered(counts, minimum=1)
        decision = np.full(sums.shape, np.nan)
        decision[covered] = sums[covered] / counts[covered, None, None]
        self.oob_decision_function_ = decision.transpose(0, 2, 1)
        self.oob_score_ = self._oob_scorer(accuracy_score)(
            y[covered], np.argmax(decision[covered], axis=2))
        self.__dict__.pop("oob_curve_", None)

    def _compute_oob(self, X, y, sample_weight):
        sums, counts, curve = self._packed.out_of_bag(X, y, self._inbag_mask(X.shape[0]),
                                                      True)
        covered = oob_covered(counts, minimum=1)
        decision = np.full(sums.shape, np.nan)
        decision[covered] = sums[covered] / counts[covered, None]
        self.oob_decision_function_ = decision
        # Scored on the class indices, as scikit-learn does (its y is encoded too).
        self.oob_score_ = self._oob_scorer(accuracy_score)(
            y[covered], np.argmax(decision[covered], axis=1))
        self.oob_curve_ = curve

    def predict_proba(self, X):
        """Mean of the trees' class probabilities (the soft vote); for a multi-output
        forest, a list of one (n_samples, n_classes_[o]) array per output."""
        X = self._validated_X(X)
        if self.n_outputs_ > 1:
            values = self._packed.predict(X) / self._packed.n_trees
            values = values.reshape(X.shape[0], self.n_outputs_, -1)
            return _multi_output.probabilities_per_output(values, self.n_classes_)
        return self._packed.predict(X, n_outputs=self.n_classes_) / self._packed.n_trees

    def predict(self, X, pred_contrib=False, pred_interactions=False):
        """Class of highest mean probability (the first of equals).

        ``pred_contrib=True`` returns SHAP values instead and ``pred_interactions=True``
        SHAP interaction values (see :mod:`silva.explain` for what they explain and
        their layout).
        """
        if pred_contrib or pred_interactions:
            return self._explain(X, pred_interactions)
        # predict_proba first: it raises NotFittedError before classes_ is looked up.
        proba = self.predict_proba(X)
        if self.n_outputs_ > 1:
            return _multi_output.predict_classes(proba, self.classes_)
        return self.classes_[np.argmax(proba, axis=1)]

    def _tree_votes(self, X, y):
        """Each tree's predicted class index (n_samples, n_trees) and y's class indices."""
        _multi_output.refuse(self, "margin and strength_correlation")
        X = self._validated_X(X)
        votes = np.argmax(self._packed.tree_values(X), axis=2)
        return votes, encoded_target(self, y, X.shape[0])

    def margin(self, X, y):
        """Breiman's margin of each sample (Breiman 2001, sec. 2.1).

        mr(x, y) = P(h(x) = y) − max_{j ≠ y} P(h(x) = j), with P the fraction of trees
        voting for a class (hard votes). Positive when the forest's vote is right; its
        size is the confidence of that vote.
        """
        votes, y_index = self._tree_votes(X, y)
        shares = self._vote_shares(votes)
        return self._margins_from_shares(shares, y_index)

    def _vote_shares(self, votes):
        n_trees = votes.shape[1]
        shares = np.zeros((votes.shape[0], self.n_classes_))
        for k in range(self.n_classes_):
            shares[:, k] = np.sum(votes == k, axis=1) / n_trees
        return shares

    @staticmethod
    def _margins_from_shares(shares, y_index):
        rows = np.arange(shares.shape[0])
        right = shares[rows, y_index]
        others = shares.copy()
        others[rows, y_index] = -np.inf
        return right - others.max(axis=1)

    def strength_correlation(self, X, y):
        """Breiman's strength, mean correlation and generalisation bound (2001, sec. 2.2).

        Returns a ``Bunch`` with ``strength`` s = mean margin, ``correlation`` ρ̄ =
        var(margin) / (mean over trees of sd(θ))², where sd(θ) = sqrt(p1 + p2 − (p1 −
        p2)²), p1 the tree's accuracy and p2 the rate at which it votes for each sample's
        strongest wrong class ĵ(x, y); and ``bound`` = ρ̄(1 − s²)/s², Breiman's upper bound on
        the generalisation error (infinite when s <= 0). Computed on the given (X, y),
        e.g. held-out data.
        """
        votes, y_index = self._tree_votes(X, y)
        shares = self._vote_shares(votes)
        margins = self._margins_from_shares(shares, y_index)
        rows = np.arange(shares.shape[0])
        others = shares.copy()
        others[rows, y_index] = -np.inf
        strongest_wrong = np.argmax(others, axis=1)
        p1 = np.mean(votes == y_index[:, None], axis=0)
        p2 = np.mean(votes == strongest_wrong[:, None], axis=0)
        sd = np.sqrt(np.maximum(p1 + p2 - (p1 - p2) ** 2, 0.0))
        strength = float(margins.mean())
        mean_sd = sd.mean()
        correlation = float(margins.var() / mean_sd**2) if mean_sd > 0 else np.nan
        bound = (correlation * (1 - strength**2) / strength**2 if strength > 0 else np.inf)
        return Bunch(strength=strength, correlation=correlation, bound=float(bound),
                     margins=margins)


def _same_classes(forest, classes):
    """Whether ``classes`` (an array, or a list of one per output) are the classes of
    ``forest``'s previous fit (False when it has none)."""
    previous = getattr(forest, "classes_", None)
    if previous is None or isinstance(previous, list) != isinstance(classes, list):
        return False
    if isinstance(classes, list):
        return len(previous) == len(classes) and all(
            np.array_equal(a, b) for a, b in zip(previous, classes, strict=True))
    return np.array_equal(previous, classes)


class ForestRegressor(JackknifeIntervalMixin, RegressorMixin, BaseForest):
    """Fit and prediction of the regression forests."""

    _tree_class = DecisionTreeRegressor
    _keeps_leaf_samples = True
    _interval_methods = ("jackknife+", "jackknife+-minmax", "quantile")

    def fit(self, X, y, sample_weight=None, callbacks=None):
        """Grow the forest on (X, y); NaN in X means missing (``callbacks``: as the
        classifier's)."""
        code, X, y, sample_weight, offset = regression_inputs(self, X, y, sample_weight)
        if self.bootstrap == POISSON:
            offset = reproducible_offset(offset)  # what every Dask worker gets too
        n_outputs = y.shape[1] if y.ndim == 2 else 1
        if self._keeps_trees_for_another_target(
                X, getattr(self, "n_outputs_", None) == n_outputs):
            return self
        self.n_outputs_ = n_outputs
        self._y_train = y
        n_classes = np.ones(self.n_outputs_, dtype=np.intp) if y.ndim == 2 else 1
        self._fit_forest(X, y - offset, sample_weight, code, n_classes, value_offset=offset,
                         callbacks=callbacks)
        self._store_leaf_samples(X, sample_weight)
        return self

    def _store_leaf_samples(self, X, sample_weight):
        """Each tree's in-bag samples by leaf, with their weights, for quantiles."""
        blocks, weights, starts, ends = [], [], [], []
        for t, grown in enumerate(self._grown_trees):
            tree_weight = self._tree_weight(self._tree_seeds[t], sample_weight, self._n_drawn)
            if (grown.node_start is None
                    or grown.tree.node_count != grown.node_start.shape[0]):
                # Pruned tree (or a level-wise one, which keeps no samples): group the
                # in-bag samples by their leaf in the tree.
                inbag = np.flatnonzero(tree_weight > 0)
                leaves = grown.tree.apply(X[inbag])
                order = np.argsort(leaves, kind="stable")
                grown.leaf_samples = inbag[order].astype(np.int32)
                bounds = np.searchsorted(leaves[order], np.arange(grown.tree.node_count + 1))
                grown.node_start, grown.node_end = bounds[:-1], bounds[1:]
            blocks.append(grown.leaf_samples)
            weights.append(tree_weight[grown.leaf_samples])
            starts.append(grown.node_start)
            ends.append(grown.node_end)
        self._leaf_offset = np.zeros(len(blocks) + 1, dtype=np.int64)
        np.cumsum([b.shape[0] for b in blocks], out=self._leaf_offset[1:])
        self._leaf_samples = np.concatenate(blocks).astype(np.int32, copy=False)
        self._leaf_weights = np.concatenate(weights)
        self._node_start = np.concatenate(starts).astype(np.int32, copy=False)
        self._node_end = np.concatenate(ends).astype(np.int32, copy=False)
        del blocks, starts, ends
        # Each tree keeps views of the concatenation (for warm starts), not its own copy.
        node_offset = self._packed.node_offset
        for t, grown in enumerate(self._grown_trees):
            nodes = slice(node_offset[t], node_offset[t + 1])
            grown.leaf_samples = self._leaf_samples[self._leaf_offset[t]:
                                                    self._leaf_offset[t + 1]]
            grown.node_start, grown.node_end = self._node_start[nodes], self._node_end[nodes]

    def _compute_multi_output_oob(self, X, y):
        """scikit-learn's multi-output out-of-bag results: ``oob_prediction_``
        (n_samples, n_outputs) and ``oob_score_`` its R² averaged over the outputs."""
        y = self._y_train  # the trees' values include the centring offset again
        sums, counts = self._multi_output_oob_sums(X)
        covered = oob_covered(counts, minimum=2)
        prediction = np.full(y.shape, np.nan)
        prediction[covered] = sums[covered, :, 0] / counts[covered, None]
        self.oob_prediction_ = prediction
        self.oob_score_ = self._oob_scorer(r2_score)(y[covered], prediction[covered])
        self.__dict__.pop("oob_curve_", None)

    def _compute_oob(self, X, y, sample_weight):
        y = self._y_train  # the trees' values include the centring offset again
        sums, counts, curve = self._packed.out_of_bag(X, y, self._inbag_mask(X.shape[0]),
                                                      False)
        covered = oob_covered(counts, minimum=2)
        prediction = np.full(X.shape[0], np.nan)
        prediction[covered] = sums[covered, 0] / counts[covered]
        self.oob_prediction_ = prediction
        self.oob_score_ = self._oob_scorer(r2_score)(y[covered], prediction[covered])
        self.oob_curve_ = curve

    # What predict_interval's jackknife+ reads (see silva.intervals): nothing is stored
    # for it beyond the out-of-bag predictions, the targets and the trees' seeds.
    def _member_predictions(self, X):
        return self._packed.tree_values(X)[:, :, 0]

    def _out_of_bag_indicator(self):
        return self._inbag_mask(self._fit_signature[0]) == 0

    def _oob_residuals(self):
        # The first thing predict_interval's jackknife+ reads: intervals of one output.
        _multi_output.refuse(self, "predict_interval")
        return np.abs(self._y_train - self.oob_prediction_)

    def predict(self, X, return_std=False, pred_contrib=False, pred_interactions=False):
        """Mean of the trees' predictions; with ``return_std``, also their standard deviation.

        ``pred_contrib=True`` returns SHAP values instead and ``pred_interactions=True``
        SHAP interaction values (see :mod:`silva.explain` for what they explain and
        their layout).

        The standard deviation is between trees (``np.std`` over the trees'
        predictions, ddof=0): a measure of the forest's disagreement, not a predictive
        interval (see :meth:`predict_quantiles` for those).
        """
        if pred_contrib or pred_interactions:
            return self._explain(X, pred_interactions)
        X = self._validated_X(X)
        if self.n_outputs_ > 1:
            if return_std:
                raise ValueError(f"{type(self).__name__}: return_std=True is for "
                                 "single-output forests; this one has "
                                 f"{self.n_outputs_} outputs.")
            return self._packed.predict(X) / self._packed.n_trees
        if not return_std:
            return self._packed.predict(X, n_outputs=1)[:, 0] / self._packed.n_trees
        per_tree = self._packed.tree_values(X)[:, :, 0]
        return per_tree.mean(axis=1), per_tree.std(axis=1)

    def predict_quantiles(self, X, quantiles=(0.1, 0.5, 0.9)):
        """Conditional quantiles of y given X: quantile regression forests (Meinshausen 2006).

        Each training sample gets, at x, the weight it has in x's leaf of each tree (its
        bootstrap count times its sample weight, over the leaf's total), averaged over the
        trees; the quantile of level q is the smallest training target whose cumulative
        weight reaches q. Any quantiles can be asked for from one fitted forest.

        Returns an array of shape (n_samples, n_quantiles).
        """
        quantiles = np.atleast_1d(np.asarray(quantiles, dtype=np.float64))
        if quantiles.ndim != 1 or np.any(~np.isfinite(quantiles)) or np.any(
                (quantiles < 0) | (quantiles > 1)):
            raise ValueError(f"quantiles must be numbers in [0, 1]; got {quantiles.tolist()}.")
        X = self._validated_X(X)
        if self.n_outputs_ > 1:
            raise ValueError(f"{type(self).__name__}: predict_quantiles is for "
                             f"single-output forests; this one has {self.n_outputs_} "
                             "outputs.")
        if getattr(self, "_leaf_offset", None) is None:
            raise ValueError(f"{type(self).__name__}: predict_quantiles needs the training "
                             "rows in each leaf, which a forest grown on Dask does not "
                             "keep (they stay on the workers).")
        return self._packed.weighted_quantiles(
            X, self._leaf_offset, self._node_start, self._node_end, self._leaf_samples,
            self._leaf_weights, self._y_train, quantiles)


_FOREST_PARAMETERS = """
    n_estimators : int, default=100
        Number of trees.
    criterion : str
        The trees' split criterion (see :class:`~silva.DecisionTreeClassifier` and
        :class:`~silva.DecisionTreeRegressor`).
    max_depth, min_samples_split, min_samples_leaf, min_weight_fraction_leaf, \
            max_leaf_nodes, min_impurity_decrease, ccp_alpha, max_bins, categorical_features, \
            monotonic_cst
        The trees' parameters, with the same meaning (``monotonic_cst``: each tree is
        monotone along the constrained features, and so is their mean);
        ``min_weight_fraction_leaf`` is a fraction of each tree's (bootstrap-weighted)
        total weight, and ``min_samples_split`` and ``min_samples_leaf`` count a tree's
        distinct samples,
        whatever their weights or bootstrap counts (as scikit-learn's forests).
    max_features : int, float, "sqrt", "log2" or None
        Features drawn at random as candidates at every node of every tree.
    bootstrap : bool, "weighted" or "poisson"
        Grow each tree on a bootstrap sample (drawn with replacement; the counts are
        sample weights, so ``n_node_samples`` counts distinct samples) instead of on the
        whole training set. True draws rows uniformly and multiplies their counts by
        their ``sample_weight`` (scikit-learn's forests). ``"weighted"`` reads
        ``sample_weight`` as frequencies (class weights multiplied in): each tree draws
        ``round(sum(sample_weight))`` rows (or ``max_samples`` of them) with probability
        proportional to their weight and grows on the counts alone, so that a row of
        weight k is the same as k copies of it, whatever the order of the rows (the
        draw is made over distinct rows in an order fixed by their content; see
        :mod:`silva._weighted_bootstrap`): scikit-learn's sample-weight equivalence
        check passes. True stays the default: it is scikit-learn's behaviour, which users
        switching from it expect, and it leaves the number of rows drawn independent
        of the weights' scale (``"weighted"`` draws ten times as many rows when every
        weight is multiplied by ten; give ``max_samples`` as an int to fix it).
        ``"poisson"``: each row's count is Poisson(rate) keyed by its index and the
        tree's seed, and the trees grow level by level (:mod:`silva.engine.levelwise`),
        a forest that does not depend on how the rows are partitioned: what
        :mod:`silva.dask`'s forests grow, here on one machine (much slower than True).
    oob_score : bool or callable, default=False
        Estimate the generalisation score from the out-of-bag samples of each tree:
        ``oob_score_`` (accuracy or R², or the callable ``score_func(y_true, y_pred)``,
        e.g. ``sklearn.metrics.f1_score``; classifiers pass class indices),
        ``oob_decision_function_`` or ``oob_prediction_``, and ``oob_curve_``.
    n_jobs : int or None, default=None
        Threads growing trees (-1: all cores). The result does not depend on it.
    random_state : int, RandomState or None, default=None
        Seeds the bootstrap samples and the trees' draws.
    verbose : int, default=0
        Report each finished tree on stderr.
    warm_start : bool, default=False
        Keep the fitted trees and add ``n_estimators - len(estimators_)`` new ones; the
        forest is then the same as one fitted with all the trees at once.
    max_samples : int, float or None, default=None
        Size of each bootstrap sample (a float is a fraction of the training set, or of
        the total weight with ``bootstrap="weighted"``); it may exceed the training set
        (the draw is with replacement).
"""

_FOREST_ATTRIBUTES = """
    estimators_ : list of fitted trees
        Their ``tree_`` arrays are views of one packed copy of all the nodes.
    feature_importances_ : ndarray of shape (n_features,)
        Mean of the trees' normalised impurity decreases.
    oob_score_ : float
    oob_curve_ : ndarray of shape (n_estimators,)
        Out-of-bag error (classification: error rate; regression: mean squared error) of
        the forest of the first ``t + 1`` trees, over the samples out of bag of at least
        one of them: Breiman's plot of the error against the number of trees.
    max_features_, n_features_in_, feature_names_in_
"""


class RandomForestClassifier(ForestClassifier):
    __doc__ = f"""A random forest classifier (Breiman 2001) on silva's compiled engine.

    Each tree is grown fully (by default) on a bootstrap sample with ``max_features``
    candidate features drawn at every node; the forest predicts the mean of the trees'
    class probabilities (soft vote).

    Parameters
    ----------
    {_FOREST_PARAMETERS.strip()}
    class_weight : dict, "balanced", "balanced_subsample" or None, default=None
        Class weights; "balanced_subsample" computes the balanced weights on each tree's
        bootstrap sample.
    min_significance : float in (0, 1] or None, default=None
        The trees' CHAID-style significance stopping (see
        :class:`~silva.DecisionTreeClassifier`); None: off.

    Attributes
    ----------
    classes_, n_classes_
    {_FOREST_ATTRIBUTES.strip()}
    oob_decision_function_ : ndarray of shape (n_samples, n_classes)

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from silva import RandomForestClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> forest = RandomForestClassifier(n_estimators=50, oob_score=True, random_state=0)
    >>> forest.fit(X, y).oob_score_ > 0.9
    True
    """

    def __init__(self, n_estimators=100, *, criterion="gini", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features="sqrt", max_leaf_nodes=None, min_impurity_decrease=0.0,
                 bootstrap=True, oob_score=False, n_jobs=None, random_state=None, verbose=0,
                 warm_start=False, class_weight=None, ccp_alpha=0.0, max_samples=None,
                 max_bins=255, categorical_features=None, min_significance=None,
                 monotonic_cst=None):
        super().__init__(
            n_estimators=n_estimators, criterion=criterion, max_depth=max_depth,
            min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf, max_features=max_features,
            max_leaf_nodes=max_leaf_nodes, min_impurity_decrease=min_impurity_decrease,
            bootstrap=bootstrap, oob_score=oob_score, n_jobs=n_jobs,
            random_state=random_state, verbose=verbose, warm_start=warm_start,
            ccp_alpha=ccp_alpha, max_samples=max_samples, max_bins=max_bins,
            categorical_features=categorical_features, monotonic_cst=monotonic_cst)
        self.class_weight = class_weight
        self.min_significance = min_significance


class ExtraTreesClassifier(ForestClassifier):
    __doc__ = f"""Extremely randomized trees (Geurts, Ernst & Wehenkel 2006) for classification.

    Like :class:`RandomForestClassifier`, but each candidate feature gets one threshold
    drawn uniformly between the node's smallest and largest value, and by default every
    tree sees the whole training set (``bootstrap=False``).

    Parameters
    ----------
    {_FOREST_PARAMETERS.strip()}
    class_weight : dict, "balanced", "balanced_subsample" or None, default=None
    min_significance : float in (0, 1] or None, default=None
        The trees' significance stopping, as in :class:`RandomForestClassifier`.

    Attributes
    ----------
    classes_, n_classes_
    {_FOREST_ATTRIBUTES.strip()}
    """

    _splitter = "random"

    def __init__(self, n_estimators=100, *, criterion="gini", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features="sqrt", max_leaf_nodes=None, min_impurity_decrease=0.0,
                 bootstrap=False, oob_score=False, n_jobs=None, random_state=None, verbose=0,
                 warm_start=False, class_weight=None, ccp_alpha=0.0, max_samples=None,
                 max_bins=255, categorical_features=None, min_significance=None,
                 monotonic_cst=None):
        super().__init__(
            n_estimators=n_estimators, criterion=criterion, max_depth=max_depth,
            min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf, max_features=max_features,
            max_leaf_nodes=max_leaf_nodes, min_impurity_decrease=min_impurity_decrease,
            bootstrap=bootstrap, oob_score=oob_score, n_jobs=n_jobs,
            random_state=random_state, verbose=verbose, warm_start=warm_start,
            ccp_alpha=ccp_alpha, max_samples=max_samples, max_bins=max_bins,
            categorical_features=categorical_features, monotonic_cst=monotonic_cst)
        self.class_weight = class_weight
        self.min_significance = min_significance


class RandomForestRegressor(ForestRegressor):
    __doc__ = f"""A random forest regressor (Breiman 2001) on silva's compiled engine.

    Predicts the mean of the trees; ``predict(X, return_std=True)`` adds the trees'
    standard deviation and :meth:`predict_quantiles` gives conditional quantiles
    (quantile regression forests, Meinshausen 2006).

    Parameters
    ----------
    {_FOREST_PARAMETERS.strip()}

    Attributes
    ----------
    {_FOREST_ATTRIBUTES.strip()}
    oob_prediction_ : ndarray of shape (n_samples,)

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from silva import RandomForestRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> forest = RandomForestRegressor(n_estimators=50, random_state=0).fit(X, y)
    >>> forest.predict_quantiles(X[:3], [0.1, 0.5, 0.9]).shape
    (3, 3)
    """

    def __init__(self, n_estimators=100, *, criterion="squared_error", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features=1.0, max_leaf_nodes=None, min_impurity_decrease=0.0,
                 bootstrap=True, oob_score=False, n_jobs=None, random_state=None, verbose=0,
                 warm_start=False, ccp_alpha=0.0, max_samples=None, max_bins=255,
                 categorical_features=None, monotonic_cst=None):
        super().__init__(
            n_estimators=n_estimators, criterion=criterion, max_depth=max_depth,
            min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf, max_features=max_features,
            max_leaf_nodes=max_leaf_nodes, min_impurity_decrease=min_impurity_decrease,
            bootstrap=bootstrap, oob_score=oob_score, n_jobs=n_jobs,
            random_state=random_state, verbose=verbose, warm_start=warm_start,
            ccp_alpha=ccp_alpha, max_samples=max_samples, max_bins=max_bins,
            categorical_features=categorical_features, monotonic_cst=monotonic_cst)


class ExtraTreesRegressor(ForestRegressor):
    __doc__ = f"""Extremely randomized trees (Geurts, Ernst & Wehenkel 2006) for regression.

    Random thresholds, no bootstrap by default; ``return_std`` and
    :meth:`predict_quantiles` as for :class:`RandomForestRegressor`.

    Parameters
    ----------
    {_FOREST_PARAMETERS.strip()}

    Attributes
    ----------
    {_FOREST_ATTRIBUTES.strip()}
    oob_prediction_ : ndarray of shape (n_samples,)
    """

    _splitter = "random"

    def __init__(self, n_estimators=100, *, criterion="squared_error", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features=1.0, max_leaf_nodes=None, min_impurity_decrease=0.0,
                 bootstrap=False, oob_score=False, n_jobs=None, random_state=None, verbose=0,
                 warm_start=False, ccp_alpha=0.0, max_samples=None, max_bins=255,
                 categorical_features=None, monotonic_cst=None):
        super().__init__(
            n_estimators=n_estimators, criterion=criterion, max_depth=max_depth,
            min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf, max_features=max_features,
            max_leaf_nodes=max_leaf_nodes, min_impurity_decrease=min_impurity_decrease,
            bootstrap=bootstrap, oob_score=oob_score, n_jobs=n_jobs,
            random_state=random_state, verbose=verbose, warm_start=warm_start,
            ccp_alpha=ccp_alpha, max_samples=max_samples, max_bins=max_bins,
            categorical_features=categorical_features, monotonic_cst=monotonic_cst)
