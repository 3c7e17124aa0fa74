"""CART decision trees (Breiman, Friedman, Olshen & Stone 1984) with scikit-learn's API.

:class:`DecisionTreeClassifier` and :class:`DecisionTreeRegressor` are thin shells over
the engine: they validate input, bin it once and turn targets into statistic channels
(:mod:`silva.engine.criteria`), grow one tree in one compiled call from the same bundles
as a forest's trees (:mod:`silva.engine.cart`) and, with ``ccp_alpha > 0``, prune it
(:mod:`silva.engine.pruning`). Parameters have scikit-learn's names and meanings, plus

- ``max_bins``: bins per numeric feature (default 255). A feature with at most that many
  distinct values is binned exactly, and the tree then splits exactly where CART does;
- ``categorical_features``: features split as category sets, not thresholds;
- the rest of CART and its classic relatives: the twoing and gain-ratio criteria,
  ``ccp_alpha="cv"`` (alpha chosen by cross-validation with the one-standard-error
  rule, Breiman et al. 1984, ch. 3), reduced-error pruning on a held-out fraction
  (``prune="reduced_error"``, Quinlan 1987) and, for classifiers, CHAID-style
  significance stopping (``min_significance``, Kass 1980).

Missing values (NaN) are supported at fit and predict: each split learns where they go;
a split that saw none sends them to the child with more samples.
"""

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.utils import Bunch, check_random_state

from silva import _input, _multi_output
from silva._mixins import (
    ExplainMixin,
    FittedTreeMixin,
    ParamNamesMixin,
    PredictLogProbaMixin,
)
from silva._nothing_learned import cart_root_reason, warn_nothing_learned
from silva.criteria import TreeReportMixin
from silva.engine import criteria
from silva.engine.binning import MAX_BINS_LIMIT
from silva.engine.cart import BinnedData, GrowthRules, TreeTask, grow_cart_tree
from silva.engine.pruning import (
    cost_complexity_path,
    held_out_losses,
    prune_tree,
    pruning_path,
    reduced_error_prune,
)
from silva.persistence import PersistenceMixin

# Nodes below this many samples search splits by sorting instead of a dense histogram,
# and parallel regions start only above this many (samples x features) of work; both
# chosen with benchmarks/bench_tree.py on 2 cores.
HISTOGRAM_MIN_SAMPLES = 256
PARALLEL_MIN_WORK = 200_000
# The lowest node size for histograms on features of few bins (histogram_min_samples_for).
FEW_BINS_HISTOGRAM_MIN_SAMPLES = 32
_UNLIMITED_DEPTH = 2**31 - 1


def histogram_min_samples_for(criterion_code, data):
    """Node size from which a tree's nodes keep dense histograms (see
    :mod:`silva.engine.grower`): :data:`HISTOGRAM_MIN_SAMPLES`, or as few as twice the
    histograms' width (``data.missing_bin + 1`` bins a feature), and at least
    :data:`FEW_BINS_HISTOGRAM_MIN_SAMPLES`, for a classification tree.

    A node with a histogram pays, per feature, for its bins (the larger child's
    histogram by subtraction, then the scan of every bin); a node searched from its rows
    pays for its samples. With few bins a histogram pays off in smaller nodes: on digits
    (at most 17 bins a feature) a tree fit took 9.1 ms with 32 against 10.5 ms with 256
    (AMD Zen 4, alternated fits; 7.8 to 6.7 ms on Zen 5). Classification alone: class
    counts of whole weights are exact whether summed or subtracted, so its trees are
    the same either way; a regression's sums, subtracted, round otherwise than summed
    in node order, and its trees could change in the last bits. absolute_error reads
    no histogram: the caller keeps every node off them.
    """
    if not criteria.is_classification(criterion_code):
        return HISTOGRAM_MIN_SAMPLES
    width = int(data.missing_bin) + 1
    return min(HISTOGRAM_MIN_SAMPLES, max(FEW_BINS_HISTOGRAM_MIN_SAMPLES, 2 * width))


def regression_inputs(estimator, X, y, sample_weight):
    """Validated inputs of a regression fit (trees and forests alike).

    Returns ``(criterion_code, X, y, sample_weight, offset)``: y as finite float64, and
    ``offset`` the weighted mean of y that the trees subtract before growing (0 for
    poisson and absolute_error). A 2-D y of several columns gives the multi-output
    criterion code, y (n_samples, n_outputs) and one offset per output. Centring y
    keeps sum(w y^2) - (sum(w y))^2 / sum(w) accurate for large |y|.
    """
    code = _input.criterion_code(estimator.criterion, criteria.REGRESSION_CRITERIA)
    if code == criteria.POISSON:
        # The values first, as scikit-learn's trees: a y no Poisson model can fit is
        # named as such even when its length is wrong too.
        _check_poisson_target(_input.numeric_or_none(y), None)
    X, y = estimator._prepare_X_y(X, y)
    sample_weight = _input.check_sample_weight(sample_weight, X.shape[0])
    if y.ndim == 2:
        # Multi-output: y is (n_samples, n_outputs), the offset one mean per output.
        code = _multi_output.check_options(estimator, code, y.shape[1])
        y, offset = _multi_output.regression_targets(y, sample_weight)
        return code, X, y, sample_weight, offset
    y = _input.regression_target(y)
    return code, X, y, sample_weight, regression_offset(code, y, sample_weight)


def regression_offset(code, y, sample_weight):
    """The offset a single-output regression tree of criterion ``code`` subtracts from
    ``y`` before growing (the weighted mean; 0 for poisson and absolute_error), after the
    criterion's checks of ``y``: Poisson's sign and sum, and for the variance criteria a
    scale whose squares do not overflow (they score square sums of w (y - offset))."""
    if code == criteria.POISSON:
        _check_poisson_target(y, sample_weight)
        return 0.0
    if code == criteria.ABSOLUTE_ERROR:
        return 0.0
    _input.check_target_scale(y, sample_weight)
    return float(np.average(y, weights=sample_weight))


def exact_pure_leaf_values(tree, y, grouping):
    """Give each leaf whose training rows all share one target value that value exactly.

    A regression tree grows on ``y - offset`` (y centred by its mean) and adds ``offset``
    back to its leaf means; for a leaf of equal targets ``t`` that round trip (a weighted
    sum of ``t - offset``, divided, plus ``offset``) can miss ``t`` by an ulp: a leaf of
    class 0 fitted on iris' labels predicted -2.2e-16 where scikit-learn's tree, which
    does not centre, predicts 0. Such a leaf's mean is ``t`` in exact arithmetic, so it
    is set to ``t``. ``tree.value`` is changed in place; ``y`` (uncentred, 1-D or one
    column per output) holds the rows the tree was grown on (positive weight only), and
    ``grouping`` is ``(rows, starts, leaf_ids)``: row ids with each leaf's rows
    contiguous, where each leaf's run starts, and the leaf of each run
    (:func:`_leaf_groups`).
    """
    rows, starts, leaf_ids = grouping
    grouped = y.reshape(y.shape[0], -1)[rows]
    lowest = np.minimum.reduceat(grouped, starts, axis=0)
    highest = np.maximum.reduceat(grouped, starts, axis=0)
    for output in range(grouped.shape[1]):
        pure = lowest[:, output] == highest[:, output]
        tree.value[leaf_ids[pure], output, 0] = lowest[pure, output]


def _leaf_groups(tree, X, grown=None):
    """The training rows grouped by leaf, as :func:`exact_pure_leaf_values` reads them.

    From the grower's sample ranges when ``grown`` (a
    :class:`~silva.engine.cart.GrownTree` of this very tree) has them: each node's rows
    are contiguous there and children split their parent's range, so the leaves' ranges
    tile the root's, already grouped (no sort, no tree walk, so a fit compiles no
    prediction kernel). Otherwise (a pruned tree) by walking X down the tree.
    """
    if grown is not None and grown.node_start is not None \
            and grown.node_start.shape[0] == tree.node_count:
        leaf_nodes = np.flatnonzero(tree.children_left == -1)
        order = np.argsort(grown.node_start[leaf_nodes], kind="stable")
        leaf_nodes = leaf_nodes[order]
        root_start = grown.node_start[0]
        rows = grown.leaf_samples[root_start:grown.node_end[0]]
        return rows, grown.node_start[leaf_nodes] - root_start, leaf_nodes
    leaves = tree.apply(X)
    rows = np.argsort(leaves, kind="stable")
    sorted_leaves = leaves[rows]
    starts = np.flatnonzero(np.r_[True, sorted_leaves[1:] != sorted_leaves[:-1]])
    return rows, starts, sorted_leaves[starts]


def _check_poisson_target(y, sample_weight):
    """A ValueError unless ``y`` (None: not numeric, left to later checks) is
    non-negative with a positive (weighted) sum, which a Poisson deviance needs."""
    if y is None:
        return
    # Each message opens with scikit-learn's sentence, so code matching it works.
    if np.any(y < 0):
        raise ValueError("Some value(s) of y are negative which is not allowed for "
                         "Poisson regression: criterion='poisson' needs y >= 0; y has "
                         "negative values.")
    total = np.sum(y) if sample_weight is None else np.sum(y * sample_weight)
    if not total > 0:
        # scikit-learn's forests and trees word this differently; both are kept.
        raise ValueError("Sum of y is not strictly positive which is necessary for Poisson "
                         "regression: the (weighted) sum of y is not positive, and Poisson "
                         "regression (criterion='poisson') needs a positive one.")


class BaseDecisionTree(ExplainMixin, FittedTreeMixin, ParamNamesMixin, BaseEstimator):
    """Shared fit and prediction logic; use the classifier or the regressor."""

    def __init__(self, *, criterion, splitter, max_depth, min_samples_split,
                 min_samples_leaf, min_weight_fraction_leaf, max_features, random_state,
                 max_leaf_nodes, min_impurity_decrease, ccp_alpha, max_bins,
                 categorical_features, ccp_cv, prune, validation_fraction,
                 monotonic_cst=None):
        self.criterion = criterion
        self.splitter = splitter
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.ccp_alpha = ccp_alpha
        self.max_bins = max_bins
        self.categorical_features = categorical_features
        self.ccp_cv = ccp_cv
        self.prune = prune
        self.validation_fraction = validation_fraction
        self.monotonic_cst = monotonic_cst

    # ----------------------------------------------------------------- input
    def _prepare_X(self, X, *, reset):
        """Validated float64 X, with data-frame category columns encoded as codes."""
        return _input.prepare_X(self, X, reset=reset,
                                categorical_features=self.categorical_features)

    def _prepare_X_y(self, X, y):
        """Validated X (see :meth:`_prepare_X`) and a y of the same length: one-dimensional,
        or (n_samples, n_outputs) for a multi-output fit (see :mod:`silva._multi_output`)."""
        X = self._prepare_X(X, reset=True)
        y = _multi_output.target(self, y, X.shape[0], stacklevel=4)
        return X, y

    def _check_params(self, n_samples, total_weight):
        max_depth = _input.check_int(self.max_depth, "max_depth", 1, allow_none=True)
        min_samples_split = _input.check_count_or_fraction(
            self.min_samples_split, "min_samples_split", 2)
        if isinstance(min_samples_split, float):
            min_samples_split = max(2, int(np.ceil(min_samples_split * n_samples)))
        min_samples_leaf = _input.check_count_or_fraction(
            self.min_samples_leaf, "min_samples_leaf", 1)
        if isinstance(min_samples_leaf, float):
            min_samples_leaf = max(1, int(np.ceil(min_samples_leaf * n_samples)))
        fraction = _input.check_float(self.min_weight_fraction_leaf,
                                      "min_weight_fraction_leaf", 0.0, 0.5)
        max_leaf_nodes = _input.check_int(self.max_leaf_nodes, "max_leaf_nodes", 2,
                                          allow_none=True)
        _input.check_float(self.min_impurity_decrease, "min_impurity_decrease", 0.0)
        if not (isinstance(self.ccp_alpha, str) and self.ccp_alpha == "cv"):
            if isinstance(self.ccp_alpha, str):
                raise ValueError(f"ccp_alpha must be a float >= 0 or 'cv'; got "
                                 f"{self.ccp_alpha!r}.")
            _input.check_float(self.ccp_alpha, "ccp_alpha", 0.0, allow_inf=True)
        elif not hasattr(self.ccp_cv, "split"):
            _input.check_int(self.ccp_cv, "ccp_cv", 2)
        if self.prune is not None:
            _input.check_option(self.prune, "prune", {"reduced_error"})
            _input.check_float(self.validation_fraction, "validation_fraction", 0.0, 1.0,
                               low_inclusive=False)
            if self.validation_fraction >= 1.0:
                raise ValueError("validation_fraction must be in (0, 1); got "
                                 f"{self.validation_fraction}.")
            if isinstance(self.ccp_alpha, str) or self.ccp_alpha > 0.0:
                raise ValueError(f"prune='reduced_error' and ccp_alpha={self.ccp_alpha!r} "
                                 "are two pruning methods; use one (set ccp_alpha=0.0 or "
                                 "prune=None).")
        _input.check_int(self.max_bins, "max_bins", 2)
        if self.max_bins > MAX_BINS_LIMIT:
            raise ValueError(f"max_bins must be <= {MAX_BINS_LIMIT}; got {self.max_bins}.")
        _input.check_option(self.splitter, "splitter", {"best", "random"})
        return dict(
            max_depth=_UNLIMITED_DEPTH if max_depth is None else max_depth,
            min_samples_split=max(min_samples_split, 2 * min_samples_leaf),
            min_samples_leaf=min_samples_leaf,
            min_weight_leaf=fraction * total_weight,
            max_leaf_nodes=0 if max_leaf_nodes is None else max_leaf_nodes,
        )

    # ------------------------------------------------------------------- fit
    def _fit_tree(self, X, y, sample_weight, criterion_code, n_classes, value_offset=0.0,
                  min_significance=1.0, raw_y=None):
        """Grow, prune and store ``tree_``; y is encoded (class indices, or centred by
        ``value_offset``, the uncentred targets then given as ``raw_y``), weights final
        (class weights included). A centred regressor's leaves whose rows all have one
        target value predict that value exactly (see :func:`exact_pure_leaf_values`)."""
        n_samples, n_features = X.shape
        # Checked before any work on the data, so that a bad parameter fails first. The
        # growth below takes these values as they are when it grows on every row (a
        # second check cost about 2% of a small tree's fit).
        params = self._check_params(n_samples, sample_weight.sum())
        # Samples of zero weight take no part, not even in placing thresholds, so that a
        # zero weight is the same as leaving the sample out (as in scikit-learn).
        positive = sample_weight > 0
        kept = np.flatnonzero(positive)
        sparse_growth = criterion_code != criteria.ABSOLUTE_ERROR
        binned = None
        if not positive.all():
            params = None  # fractions of fewer rows: checked again by _grow
            if self.prune != "reduced_error":  # which grows on some of the rows alone
                binned = self._binned_rows(X, kept, sparse_growth)
            X, y, sample_weight = X[positive], y[positive], sample_weight[positive]
            raw_y = None if raw_y is None else raw_y[positive]
        self.max_features_ = _input.resolve_max_features(self.max_features, n_features)
        names = getattr(self, "feature_names_in_", None)
        _input.check_categorical_codes(X, self.is_categorical_, self.max_bins, names)
        self._has_missing_at_fit = _input.has_missing(X)
        classification = criteria.is_classification(criterion_code)
        grow = (criterion_code, n_classes, min_significance)
        # The grown tree's sample ranges serve exact_pure_leaf_values if it is kept whole.
        rows_grown, grown = slice(None), None

        if self.prune == "reduced_error":
            growing, held_out = self._held_out_split(y, classification)
            tree = self._grow(X[growing], y[growing], sample_weight[growing], *grow)
            rows_grown = growing
            grown_nodes = tree.node_count
            weight_held_out = sample_weight[held_out]
            tree, before, after = reduced_error_prune(
                tree, X[held_out], y[held_out], weight_held_out, classification)
            total = weight_held_out.sum()
            self.validation_indices_ = kept[held_out]
            self.prune_validation_ = Bunch(error_unpruned=before / total,
                                           error_pruned=after / total,
                                           n_validation=int(held_out.size))
            self.ccp_alpha_ = 0.0
        else:
            grown = self._grow(X, y, sample_weight, *grow, keep_samples=True,
                               binned=binned, params=params)
            tree = grown.tree
            grown_nodes = tree.node_count
            if isinstance(self.ccp_alpha, str):
                self.ccp_alpha_ = self._cross_validated_alpha(
                    tree, X, y, sample_weight, classification, grow)
            else:
                self.ccp_alpha_ = float(self.ccp_alpha)
            if self.ccp_alpha_ > 0.0:
                tree = prune_tree(tree, self.ccp_alpha_)
                grown = None
        # A multi-output regressor's offsets are one per output: (n_outputs, 1) against
        # the values' (n_nodes, n_outputs, 1).
        tree.value += np.reshape(value_offset, (-1, 1)) if np.ndim(value_offset) else \
            value_offset
        # Monotonic constraints may set a leaf off its rows' mean, on purpose.
        if raw_y is not None and np.any(value_offset) and self.monotonic_cst is None:
            exact_pure_leaf_values(tree, raw_y[rows_grown],
                                   _leaf_groups(tree, X[rows_grown], grown))
        self.tree_ = tree
        if tree.node_count == 1:
            warn_nothing_learned(
                f"{type(self).__name__} stopped at its root",
                cart_root_reason(self, X, y, sample_weight,
                                 self._check_params(X.shape[0], sample_weight.sum()),
                                 grown_nodes),
                stacklevel=3)
        return self

    def _growth_rules(self, params, criterion_code, n_classes, histogram_min_samples,
                      min_significance=1.0, n_outputs=1):
        """This tree's :class:`~silva.engine.cart.GrowthRules`: ``params`` as returned by
        :meth:`_check_params`, and ``max_features_`` as set by the fit. A multi-output
        fit's ``n_classes`` is one count per output."""
        if criteria.is_multi_output(criterion_code):
            n_values = _multi_output.value_width(criterion_code, n_classes, n_outputs)
        else:
            n_values = n_classes if criteria.is_classification(criterion_code) else 1
        return GrowthRules(
            criterion=criterion_code, n_classes=n_classes, n_values=n_values,
            n_outputs=n_outputs,
            max_depth=params["max_depth"],
            min_samples_split=params["min_samples_split"],
            min_samples_leaf=params["min_samples_leaf"],
            max_leaf_nodes=params["max_leaf_nodes"],
            min_impurity_decrease=float(self.min_impurity_decrease),
            max_features=self.max_features_, use_random=self.splitter == "random",
            histogram_min_samples=histogram_min_samples,
            parallel_min_work=PARALLEL_MIN_WORK,
            min_significance=float(min_significance),
            monotonic_cst=self._engine_monotonic_cst(criterion_code, n_classes),
        )

    def _engine_monotonic_cst(self, criterion_code, n_classes):
        """``monotonic_cst`` checked (scikit-learn's rules and messages) and as the engine
        reads it (:mod:`silva.engine.monotone`): int8 per feature, on the class-0
        fraction for classifiers, so with the user's signs (on the positive class's
        probability) flipped, as scikit-learn does. None when not set."""
        if self.monotonic_cst is None:
            return None
        # A forest's template tree reports errors under the forest's name.
        name = getattr(self, "_owner_name", type(self).__name__)
        n_features = len(self.is_categorical_)
        constraints = np.asarray(self.monotonic_cst)
        if constraints.ndim != 1 or constraints.shape[0] != n_features:
            shape = constraints.shape[0] if constraints.ndim else constraints.shape
            raise ValueError(f"{name}: monotonic_cst has shape {shape} but the input data "
                             f"X has {n_features} features.")
        if not np.all(np.isin(constraints, (-1, 0, 1))):
            raise ValueError(f"{name}: monotonic_cst must be None or an array-like of -1, "
                             f"0 or 1, but got {np.unique(constraints)}")
        constraints = constraints.astype(np.int8)
        categorical = np.flatnonzero(constraints.astype(bool) & self.is_categorical_)
        if categorical.size:
            raise ValueError(f"{name}: monotonic_cst constrains categorical feature(s) "
                             f"{categorical.tolist()}, whose categories have no order; "
                             "give them a constraint of 0.")
        if criteria.is_classification(criterion_code):
            if n_classes > 2:
                raise ValueError(f"{name}: Monotonicity constraints are not supported "
                                 "with multiclass classification")
            constraints = -constraints
        return constraints

    def _grow(self, X, y, sample_weight, criterion_code, n_classes, min_significance,
              keep_samples=False, binned=None, params=None):
        """Bin X (unless ``binned`` holds its codes) and grow the unpruned tree on all its
        samples in one compiled call; with ``keep_samples`` the
        :class:`~silva.engine.cart.GrownTree` (the tree and its nodes' sample ranges),
        else the tree. ``params``: :meth:`_check_params` of these very rows and weights,
        when the caller has it."""
        n_samples = X.shape[0]
        if params is None:
            params = self._check_params(n_samples, sample_weight.sum())
        if binned is None:
            binned = self._binned(X, sparse_growth=criterion_code != criteria.ABSOLUTE_ERROR)
        # absolute_error searches splits from order statistics: no histogram is read.
        histogram_min_samples = (n_samples + 1 if criterion_code == criteria.ABSOLUTE_ERROR
                                 else histogram_min_samples_for(criterion_code, binned))
        n_outputs = y.shape[1] if y.ndim == 2 else 1
        rules = self._growth_rules(params, criterion_code, n_classes, histogram_min_samples,
                                   min_significance, n_outputs)
        y = np.asarray(y, dtype=np.float64)
        stats = _multi_output.statistics(criterion_code, y, sample_weight, n_classes)
        if n_outputs > 1:
            # The grower reads y only under absolute_error, which is single-output: a
            # 1-D placeholder keeps its argument types (and its compiled copy) the same.
            y = np.zeros(n_samples)
        task = TreeTask(
            stats=stats, y=y, weight=sample_weight,
            sample_indices=np.arange(n_samples, dtype=np.int32),
            min_weight_leaf=params["min_weight_leaf"],
            seed=_input.seed_from_param(self.random_state),
        )
        grown = grow_cart_tree(binned, rules, task)
        return grown if keep_samples else grown.tree

    def _binned(self, X, sparse_growth=True):
        """X binned (a :class:`~silva.engine.cart.BinnedData`).

        An ensemble that fits many trees on the same X (AdaBoost's rounds) lends a dict
        as ``self._bin_cache`` for the length of one fit; binning depends on X alone (not
        on the weights), so the codes computed for the first tree serve the others.
        """
        cache = getattr(self, "_bin_cache", None)
        key = self._bin_key(sparse_growth)
        if cache is not None and cache.get("X") is X and cache.get("key") == key:
            return cache["binned"]
        binned = BinnedData.from_X(X, self.is_categorical_, self.max_bins,
                                   sparse_growth=sparse_growth)
        if cache is not None:
            cache.update(X=X, key=key, binned=binned)
        return binned

    def _binned_rows(self, X, rows, sparse_growth):
        """``self._binned(X[rows])`` derived from the codes of ``X`` that an ensemble's
        ``_bin_cache`` holds (:meth:`BinnedData.restricted`): AdaBoost's later rounds
        leave out the samples whose weights fell to zero, and would otherwise bin the
        remaining rows afresh each round. None when there are no such codes, or they
        cannot serve."""
        cache = getattr(self, "_bin_cache", None)
        if (cache is None or cache.get("X") is not X
                or cache.get("key") != self._bin_key(sparse_growth)):
            return None
        return cache["binned"].restricted(rows)

    def _bin_key(self, sparse_growth):
        """What, besides X, the binned data depend on (see :meth:`_binned`)."""
        return (self.max_bins, self.is_categorical_.tobytes(), sparse_growth)

    def _held_out_split(self, y, classification):
        """Indices ``(growing, held_out)``: a random ``validation_fraction`` of the
        samples held out, stratified by class for classifiers (of each class,
        ``round(fraction * count)`` samples)."""
        rng = check_random_state(self.random_state)
        n_samples = y.shape[0]
        order = rng.permutation(n_samples)
        if classification:
            groups = [order[y[order] == c] for c in np.unique(y)]
        else:
            groups = [order]
        held_out = np.concatenate(
            [group[:int(round(self.validation_fraction * group.size))] for group in groups])
        held_out = np.sort(held_out)
        growing = np.setdiff1d(np.arange(n_samples), held_out)
        if held_out.size == 0 or growing.size == 0:
            raise ValueError(
                f"validation_fraction={self.validation_fraction} of {n_samples} samples "
                f"leaves {held_out.size} to validate and {growing.size} to grow the tree; "
                "both need at least one.")
        return growing, held_out

    def _cross_validated_alpha(self, tree, X, y, sample_weight, classification, grow):
        """``ccp_alpha="cv"``: alpha by k-fold cross-validation and the 1-SE rule.

        The candidates are the geometric means ``sqrt(a_k a_{k+1})`` of consecutive
        distinct alphas of the full tree's pruning path, each of which keeps the path
        subtree ``T_k`` (Breiman et al. 1984, sec. 3.4.2); the last, for the root alone,
        is ``+inf`` (the mean of ``a_K`` and infinity), so that every fold's tree is cut
        to its root there too. (A finite last candidate such as ``a_K`` would leave a
        fold's tree whole wherever its own last alpha is larger, and score the "root
        alone" with a grown tree.) Each fold's tree is grown on the other folds, pruned at every
        candidate and scored on its fold; the chosen alpha is the largest whose mean
        error is within one standard error of the smallest mean error (sec. 3.4.3).
        """
        n_samples = y.shape[0]
        path = pruning_path(tree)
        distinct = np.unique(np.maximum(path.ccp_alphas, 0.0))
        candidates = np.append(np.sqrt(distinct[:-1] * distinct[1:]), np.inf)
        if hasattr(self.ccp_cv, "split"):
            splitter = self.ccp_cv
        else:
            if self.ccp_cv > n_samples:
                raise ValueError(f"ccp_cv={self.ccp_cv} folds need at least "
                                 f"{self.ccp_cv} samples; got n_samples={n_samples}.")
            fold_seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
            kind = StratifiedKFold if classification else KFold
            splitter = kind(n_splits=self.ccp_cv, shuffle=True, random_state=fold_seed)
        weighted_loss = np.zeros(candidates.size)
        weighted_square = np.zeros(candidates.size)
        total_weight = 0.0
        n_scored = 0
        with warnings.catch_warnings():
            # StratifiedKFold warns when a class has fewer members than folds.
            warnings.simplefilter("ignore", UserWarning)
            folds = list(splitter.split(X, y))
        for train, test in folds:
            fold_tree = self._grow(X[train], y[train], sample_weight[train], *grow)
            w = sample_weight[test]
            # Sums over the fold's samples for every candidate at once, in memory linear
            # in the samples and candidates (no samples x candidates matrix).
            loss_sums, square_sums = held_out_losses(fold_tree, X[test], y[test], w,
                                                     candidates, classification)
            weighted_loss += loss_sums
            weighted_square += square_sums
            total_weight += w.sum()
            n_scored += test.size
        mean_error = weighted_loss / total_weight
        # Standard error of a mean of n_scored losses: sqrt(R (1 - R) / N) for 0-1 losses.
        variance = np.maximum(weighted_square / total_weight - mean_error**2, 0.0)
        std_error = np.sqrt(variance / n_scored)
        best = int(np.argmin(mean_error))
        within = mean_error <= mean_error[best] + std_error[best]
        chosen = int(np.flatnonzero(within)[-1])
        self.ccp_cv_results_ = Bunch(
            ccp_alphas=candidates, mean_error=mean_error, std_error=std_error,
            n_leaves=path.n_leaves_at(candidates), best_index=best, chosen_index=chosen)
        return float(candidates[chosen])

    # -------------------------------------------------------------- predict
    def decision_path(self, X):
        """Sparse (n_samples, node_count) indicator of the nodes each sample visits."""
        X = self._validated_X(X)
        return self.tree_.decision_path(X)

    def cost_complexity_pruning_path(self, X, y, sample_weight=None):
        """Effective alphas of minimal cost-complexity pruning (Breiman et al. 1984, ch. 3).

        Fits the unpruned tree (``ccp_alpha`` ignored) and returns a ``Bunch`` with
        ``ccp_alphas`` (increasing) and ``impurities``: the total leaf impurity of the
        subtree kept for each alpha.
        """
        from sklearn.base import clone

        unpruned = clone(self).set_params(ccp_alpha=0.0, prune=None).fit(X, y, sample_weight)
        alphas, impurities = cost_complexity_path(unpruned.tree_)
        return Bunch(ccp_alphas=alphas, impurities=impurities)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        return tags


class DecisionTreeClassifier(PredictLogProbaMixin, PersistenceMixin, TreeReportMixin,
                             ClassifierMixin,
                             BaseDecisionTree):
    """A CART classification tree grown on silva's compiled engine.

    Parameters
    ----------
    criterion : {"gini", "entropy", "log_loss", "misclassification", "twoing", \
            "gain_ratio"}, default="gini"
        Split score. The first four are node impurities: Gini index, Shannon entropy in
        bits (``log_loss`` is an alias), or the misclassification rate. ``"twoing"``
        picks the split of largest ``p_L p_R / 4 (sum_k |p(k|L) - p(k|R)|)**2``
        (Breiman et al. 1984, sec. 4.3; with two classes it picks gini's split) and
        reports the Gini index as node impurity; ``"gain_ratio"`` picks the largest
        information gain divided by the split information of the binary split
        (Quinlan 1993, without C4.5's at-least-average-gain rule) and reports the
        entropy. For these two, ``min_impurity_decrease``, best-first growth and
        ``feature_importances_`` use the decrease of that reported impurity.
        Categorical features are split by scanning the categories ordered by class
        proportion, as for the other criteria (optimal for twoing with two classes, a
        heuristic otherwise).
    splitter : {"best", "random"}, default="best"
        "best" scans every threshold; "random" scores one random threshold per feature
        (extra trees, Geurts et al. 2006).
    max_depth : int or None, default=None
        Largest depth; None grows until the other rules stop.
    min_samples_split : int or float, default=2
        Fewest samples a node needs to be split (a float is a fraction of the samples).
        Samples are counted whatever their weights.
    min_samples_leaf : int or float, default=1
        Fewest samples in each child of a split (a float is a fraction), counted
        whatever their weights.
    min_weight_fraction_leaf : float, default=0.0
        Smallest fraction of the total sample weight in each child of a split. Like
        ``min_impurity_decrease`` (relative to the root weight) and ``ccp_alpha``, it
        does not depend on the weights' unit: multiplying every sample weight by one
        constant grows the same tree.
    max_features : int, float, "sqrt", "log2" or None, default=None
        Features drawn at random for each node; None means all.
    random_state : int, RandomState or None, default=None
        Seeds the feature order and random thresholds; results are the same for any
        number of threads.
    max_leaf_nodes : int or None, default=None
        Grow best-first to at most this many leaves.
    min_impurity_decrease : float, default=0.0
        Split only if the weighted impurity decrease is at least this.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplied into ``sample_weight``.
    ccp_alpha : float or "cv", default=0.0
        Complexity parameter of minimal cost-complexity pruning (Breiman et al. 1984,
        ch. 3). ``"cv"`` chooses it by ``ccp_cv``-fold cross-validation over the
        pruning path of the tree grown on all samples, with the one-standard-error
        rule: the candidates are the geometric means of consecutive path alphas
        (``inf`` for the root alone), and the largest one whose cross-validated error
        (misclassification rate for classifiers, mean squared error for regressors,
        weighted by the samples' weights, class weights included) is within one
        standard error of the smallest is kept. The standard error is
        ``sd(losses) / sqrt(n_samples)`` (Breiman's ``sqrt(R (1 - R) / N)`` for the
        0-1 loss). Refitting with ``ccp_alpha=ccp_alpha_`` grows the same tree.
    max_bins : int, default=255
        Bins per numeric feature; features with fewer distinct values are binned exactly.
    categorical_features : None, "auto", mask, indices or names, default=None
        Features split by category sets. In arrays, categorical values must be integer
        codes in ``[0, max_bins)``. In data frames, silva encodes the categorical columns
        itself (a category column's categories, or the sorted distinct values of any
        other column); "auto" picks the category, object, string and bool columns. A
        category that a split did not see in training (in particular one unseen at fit)
        follows that split's missing values.
    ccp_cv : int or cross-validation splitter, default=5
        Folds for ``ccp_alpha="cv"``: an int k means shuffled ``StratifiedKFold`` (for
        classifiers; ``KFold`` for regressors) seeded from ``random_state``; an object
        with a scikit-learn ``split(X, y)`` method is used as given.
    prune : None or "reduced_error", default=None
        ``"reduced_error"``: hold out ``validation_fraction`` of the samples (stratified
        by class for classifiers), grow the tree on the rest, then, bottom-up, replace by
        a leaf every node whose replacement does not increase the weighted held-out
        error, including nodes no held-out sample reaches (Quinlan 1987). Leaf values
        are not refitted: they stay those of the growing samples, and the held-out
        samples only decide what is pruned. Cannot be combined with ``ccp_alpha``.
    validation_fraction : float in (0, 1), default=0.2
        Fraction of the samples held out by ``prune="reduced_error"``.
    min_significance : float in (0, 1] or None, default=None
        CHAID-style pre-pruning (Kass 1980): a node is not split when the chi-square
        test of independence of its best split's 2 x n_classes table of class counts
        has a p-value above this level. Counts are the weighted class counts rescaled
        to sum to the node's number of samples (plain counts with unit weights); the
        test is of the single split chosen, without CHAID's Bonferroni correction for
        having chosen it. None (or 1.0) turns the test off.
    monotonic_cst : array-like of int of shape (n_features,) or None, default=None
        Monotonic constraint per feature on the probability of the positive class
        (``classes_[1]``): 1 increasing, -1 decreasing, 0 none; binary classification
        only, numeric features only. scikit-learn's semantics: a split on a constrained
        feature must order its children's values as asked and keep them within the
        node's bounds, node values are clipped to their bounds, and the children's
        bounds meet at the mean of their two values (see :mod:`silva.engine.monotone`).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    tree_ : silva.engine.tree.Tree
    feature_importances_ : ndarray of shape (n_features,)
    max_features_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when X was a data frame with string column names
    ccp_alpha_ : float
        The complexity parameter the tree was pruned with (the chosen one for
        ``ccp_alpha="cv"``, 0.0 under reduced-error pruning).
    ccp_cv_results_ : Bunch, with ``ccp_alpha="cv"`` only
        ``ccp_alphas`` (the candidates, increasing), ``mean_error`` and ``std_error``
        (cross-validated error and its standard error per candidate), ``n_leaves``
        (leaves of the full-data tree pruned at each candidate), ``best_index`` (the
        smallest error) and ``chosen_index`` (the one-standard-error choice).
    prune_validation_ : Bunch, with ``prune="reduced_error"`` only
        ``error_unpruned`` and ``error_pruned``: weighted mean held-out error before and
        after pruning; ``n_validation``: the number of held-out samples.
    validation_indices_ : ndarray, with ``prune="reduced_error"`` only
        Indices (into the training X) of the held-out samples.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from silva import DecisionTreeClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> model = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
    >>> model.get_depth(), model.get_n_leaves()
    (2, 3)
    """

    def __init__(self, *, criterion="gini", splitter="best", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features=None, random_state=None, max_leaf_nodes=None,
                 min_impurity_decrease=0.0, class_weight=None, ccp_alpha=0.0, max_bins=255,
                 categorical_features=None, ccp_cv=5, prune=None, validation_fraction=0.2,
                 min_significance=None, monotonic_cst=None):
        super().__init__(
            criterion=criterion, splitter=splitter, max_depth=max_depth,
            min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf, max_features=max_features,
            random_state=random_state, max_leaf_nodes=max_leaf_nodes,
            min_impurity_decrease=min_impurity_decrease, ccp_alpha=ccp_alpha,
            max_bins=max_bins, categorical_features=categorical_features, ccp_cv=ccp_cv,
            prune=prune, validation_fraction=validation_fraction,
            monotonic_cst=monotonic_cst,
        )
        self.class_weight = class_weight
        self.min_significance = min_significance

    def fit(self, X, y, sample_weight=None):
        """Grow the tree on (X, y); NaN in X means missing."""
        criterion_code = _input.criterion_code(self.criterion,
                                               criteria.CLASSIFICATION_CRITERIA)
        min_significance = _input.check_significance_level(self.min_significance)
        y_given = y
        X, y = self._prepare_X_y(X, y)
        if y.ndim == 2:
            return self._fit_multi_output(X, y, sample_weight, criterion_code)
        self.classes_, y_encoded = self._classification_target(y_given, y)
        self.n_classes_ = len(self.classes_)
        self.n_outputs_ = 1
        sample_weight = _input.check_sample_weight(sample_weight, X.shape[0])
        sample_weight = _input.apply_class_weight(
            sample_weight, _input.class_weight_per_sample(self.class_weight, y, self.classes_))
        return self._fit_tree(X, y_encoded, sample_weight, criterion_code, self.n_classes_,
                              min_significance=min_significance)

    def _classification_target(self, y_given, y):
        """:func:`silva._input.classification_target` of ``y`` (the validated
        ``y_given``), kept in the ``_bin_cache`` an ensemble lends for one fit (see
        :meth:`_binned`): AdaBoost's rounds fit the same labels each round, whose checks
        took about 120 us a round, a fifth of a stump's round on breast cancer (most of
        it scikit-learn's ``type_of_target``, which integer labels now skip; a sort of
        the labels remains)."""
        cache = getattr(self, "_bin_cache", None)
        if cache is not None and cache.get("y") is y_given:
            return cache["target"]
        target = _input.classification_target(y)
        if cache is not None:
            cache.update(y=y_given, target=target)
        return target

    def _fit_multi_output(self, X, y, sample_weight, criterion_code):
        """Grow one tree for the outputs of a 2-D y (see :mod:`silva._multi_output`)."""
        code = _multi_output.check_options(self, criterion_code, y.shape[1])
        self.classes_, y_encoded = _multi_output.classification_targets(y)
        self.n_classes_ = np.array([len(c) for c in self.classes_], dtype=np.intp)
        self.n_outputs_ = y.shape[1]
        sample_weight = _input.check_sample_weight(sample_weight, X.shape[0])
        sample_weight = _input.apply_class_weight(
            sample_weight, _multi_output.class_weight_factors(
                self, self.class_weight, y, self.classes_))
        return self._fit_tree(X, y_encoded, sample_weight, code, self.n_classes_)

    def predict_proba(self, X):
        """Class probabilities: the weighted class fractions of each sample's leaf; for
        a multi-output tree, a list of one (n_samples, n_classes_[o]) array per output."""
        X = self._validated_X(X)
        values = self.tree_.predict(X)
        if self.n_outputs_ > 1:
            return _multi_output.probabilities_per_output(values, self.n_classes_)
        return values[:, 0, :].copy()

    def predict(self, X, pred_contrib=False, pred_interactions=False):
        """Most probable class of each sample (the first of equals).

        ``pred_contrib=True`` returns SHAP values instead and ``pred_interactions=True``
        SHAP interaction values (see :mod:`silva.explain` for what they explain and
        their layout).
        """
        if pred_contrib or pred_interactions:
            return self._explain(X, pred_interactions)
        probabilities = self.predict_proba(X)
        if self.n_outputs_ > 1:
            return _multi_output.predict_classes(probabilities, self.classes_)
        return self.classes_[np.argmax(probabilities, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = tags.target_tags.multi_output = \
            _multi_output.supported(self)
        return tags


class DecisionTreeRegressor(PersistenceMixin, RegressorMixin, BaseDecisionTree):
    """A CART regression tree grown on silva's compiled engine.

    Parameters
    ----------
    criterion : {"squared_error", "friedman_mse", "absolute_error", "poisson"}, \
            default="squared_error"
        Node impurity: variance (mean prediction), variance with Friedman's improvement
        score, mean absolute deviation (median prediction), or half Poisson deviance
        (for counts, y >= 0).
    splitter, max_depth, min_samples_split, min_samples_leaf, min_weight_fraction_leaf, \
            max_features, random_state, max_leaf_nodes, min_impurity_decrease, ccp_alpha, \
            max_bins, categorical_features, ccp_cv, prune, validation_fraction, \
            monotonic_cst
        As for :class:`DecisionTreeClassifier` (``monotonic_cst`` on the prediction:
        the mean, or under absolute_error the median); the errors of ``ccp_alpha="cv"`` and of
        reduced-error pruning are squared errors, and ``ccp_cv=k`` means shuffled
        ``KFold``. There is no ``min_significance``: its chi-square test is of class
        counts.

    Attributes
    ----------
    tree_, feature_importances_, max_features_, n_features_in_, feature_names_in_, \
            ccp_alpha_, ccp_cv_results_, prune_validation_, validation_indices_
        As for :class:`DecisionTreeClassifier`.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from silva import DecisionTreeRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> DecisionTreeRegressor(max_depth=3).fit(X, y).get_n_leaves()
    8
    """

    def __init__(self, *, criterion="squared_error", splitter="best", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features=None, random_state=None, max_leaf_nodes=None,
                 min_impurity_decrease=0.0, ccp_alpha=0.0, max_bins=255,
                 categorical_features=None, ccp_cv=5, prune=None, validation_fraction=0.2,
                 monotonic_cst=None):
        super().__init__(
            criterion=criterion, splitter=splitter, max_depth=max_depth,
            min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf, max_features=max_features,
            random_state=random_state, max_leaf_nodes=max_leaf_nodes,
            min_impurity_decrease=min_impurity_decrease, ccp_alpha=ccp_alpha,
            max_bins=max_bins, categorical_features=categorical_features, ccp_cv=ccp_cv,
            prune=prune, validation_fraction=validation_fraction,
            monotonic_cst=monotonic_cst,
        )

    def fit(self, X, y, sample_weight=None):
        """Grow the tree on (X, y); NaN in X means missing."""
        criterion_code, X, y, sample_weight, offset = regression_inputs(
            self, X, y, sample_weight)
        self.n_outputs_ = y.shape[1] if y.ndim == 2 else 1
        n_classes = np.ones(self.n_outputs_, dtype=np.intp) if y.ndim == 2 else 1
        return self._fit_tree(X, y - offset, sample_weight, criterion_code, n_classes,
                              value_offset=offset, raw_y=y)

    def predict(self, X, pred_contrib=False, pred_interactions=False):
        """Mean (or median) target of each sample's leaf.

        ``pred_contrib=True`` returns SHAP values instead and ``pred_interactions=True``
        SHAP interaction values (see :mod:`silva.explain` for what they explain and
        their layout).
        """
        if pred_contrib or pred_interactions:
            return self._explain(X, pred_interactions)
        X = self._validated_X(X)
        if self.n_outputs_ > 1:
            return self.tree_.predict(X)[:, :, 0].copy()
        return self.tree_.predict(X)[:, 0, 0].copy()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = _multi_output.supported(self)
        return tags
