"""The classic lineage: ID3 (Quinlan 1986) and C4.5 (Quinlan 1993), scikit-learn's API.

Both grow *multiway* trees (:class:`silva.engine.multiway.MultiwayTree`): a test on a
categorical feature has one branch per value. Entropy is in bits throughout.

- :class:`ID3Classifier` chooses the test of largest information gain, never tests a
  feature twice on a path, and stops when a node is pure, no feature is left, or the
  best gain is zero. Numeric features are first discretised into ``n_bins`` quantile
  bins (:class:`silva.engine.binning.Binner`; exact bins when a feature has at most
  ``n_bins`` distinct values) and are then categorical; ``numeric="error"`` refuses them.
- :class:`C45Classifier` chooses, among the tests whose gain is at least the average
  gain, the one of largest gain ratio; binary thresholds on continuous features, one
  branch per value on categorical ones; unknown values as in C4.5 (gain on the known
  cases scaled by their fraction, fractional cases down every branch at fit, blended
  class distributions at predict); pessimistic error-based pruning, by subtree
  replacement and (by default) subtree raising.

Both can also stop early as CHAID does (Kass 1980): with ``min_significance < 1`` a node
whose chosen split does not pass Pearson's chi-square test of independence of branch and
class at that level becomes a leaf.

Both work on pandas data frames of string columns directly: with the default
``categorical_features="auto"``, object, string, category and bool columns are
categorical. Node split searches are compiled (:mod:`silva.engine.multiway`); the loop
over nodes is Python, which costs a few microseconds per node (the trees of ID3 and C4.5
have hundreds of nodes, not CART's tens of thousands: see ``benchmarks/bench_classic.py``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaincinv
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from silva import _input
from silva._mixins import (
    ExplainMixin,
    FittedTreeMixin,
    ParamNamesMixin,
    PredictLogProbaMixin,
)
from silva.criteria import TreeReportMixin
from silva.engine import multiway as mw
from silva.engine.binning import MAX_BINS_LIMIT, Binner
from silva.engine.sparse import BLOCK_VALUES, column_values
from silva.persistence import PersistenceMixin

__all__ = ["ID3Classifier", "C45Classifier"]

_UNLIMITED_DEPTH = 2**31 - 1
# C4.5 evaluates the features of a node in parallel from this many (samples x features);
# below it, starting threads costs more than it saves (2 cores, bench_classic.py).
PARALLEL_MIN_WORK = 200_000


class _TrainingCases:
    """C4.5's reads of the training X, dense or sparse, without densifying a sparse X
    whole.

    C4.5 reads raw values at every node: all features of the node's cases to choose the
    test (:func:`silva.engine.multiway.c45_evaluate`), then the chosen feature's column
    to send the cases down its branches. A sparse X (kept as CSR, for its rows, and CSC,
    for its columns) gives the node's cases as a dense block of at most
    :data:`~silva.engine.sparse.BLOCK_VALUES` values (cases x features) at a time, which
    the same compiled search reads as it reads a dense X. Each feature's search depends
    only on its own values of the node's cases, in the node's order, so the tree is the
    dense fit's bit for bit; the memory is one block, not the matrix. An implicit zero
    is the value 0 and a stored NaN is unknown, as everywhere in silva.
    """

    def __init__(self, X):
        self.shape = X.shape
        self.sparse = _input.is_sparse(X)
        if self.sparse:
            self.rows = X.tocsr()
            self.columns = X.tocsc()
            for matrix in (self.rows, self.columns):
                matrix.sum_duplicates()  # canonical: sorted indices, no repeats
        else:
            self.dense = X

    def known_values(self, j):
        """The known (not NaN) training values of feature j, unsorted, repeats kept but
        an implicit zero given once."""
        if not self.sparse:
            column = self.dense[:, j]
            return column[~np.isnan(column)]
        _, stored, n_zeros = column_values(self.columns, j)
        stored = stored[~np.isnan(stored)]
        return np.concatenate([stored, [0.0]]) if n_zeros else stored

    def column(self, samples, j):
        """Feature j of the cases ``samples`` (any order, repeats allowed)."""
        if not self.sparse:
            return self.dense[samples, j]
        rows, stored, _ = column_values(self.columns, j)
        values = np.zeros(samples.shape[0])
        # The column's row indices are sorted: a case's stored value, if any, is found
        # by bisection.
        position = np.minimum(np.searchsorted(rows, samples), max(rows.shape[0] - 1, 0))
        if rows.shape[0]:
            found = rows[position] == samples
            values[found] = stored[position[found]]
        return values

    def evaluate(self, samples, node_weights, y, n_classes, is_categorical, n_values,
                 allowed, min_objects, grid, n_grid):
        """:func:`silva.engine.multiway.c45_evaluate` at the node of cases ``samples``."""
        if not self.sparse:
            return mw.c45_evaluate(self.dense, samples, node_weights, y, n_classes,
                                   is_categorical, n_values, allowed, min_objects, grid,
                                   n_grid, PARALLEL_MIN_WORK)
        n_features = self.shape[1]
        gain = np.full(n_features, -np.inf)
        split_info = np.zeros(n_features)
        threshold = np.full(n_features, -2.0)
        node_rows = self.rows[samples].tocsc()
        node_y = y[samples]
        order = np.arange(samples.shape[0], dtype=np.int64)
        width = max(1, BLOCK_VALUES // max(1, samples.shape[0]))
        for start in range(0, n_features, width):
            block = slice(start, min(start + width, n_features))
            if not allowed[block].any():
                continue
            values = np.ascontiguousarray(node_rows[:, block].toarray())
            gain[block], split_info[block], threshold[block] = mw.c45_evaluate(
                values, order, node_weights, node_y, n_classes, is_categorical[block],
                n_values[block], allowed[block], min_objects, grid[block], n_grid[block],
                PARALLEL_MIN_WORK)
        return gain, split_info, threshold


class _TreeBuilder:
    """Collects nodes while a tree grows; :meth:`build` makes the MultiwayTree, leaving
    out the descendants of pruned nodes."""

    def __init__(self, n_classes):
        self.n_classes = n_classes
        self.kind, self.feature, self.threshold = [], [], []
        self.branches, self.fractions, self.missing = [], [], []
        self.counts, self.n_samples = [], []

    def add(self, counts, n_samples):
        self.kind.append(mw.LEAF)
        self.feature.append(-2)
        self.threshold.append(-2.0)
        self.branches.append([])
        self.fractions.append([])
        self.missing.append(-1)
        self.counts.append(np.asarray(counts, dtype=np.float64))
        self.n_samples.append(int(n_samples))
        return len(self.kind) - 1

    def set_split(self, node, kind, feature, threshold, branches, fractions, missing=-1):
        self.kind[node] = kind
        self.feature[node] = int(feature)
        self.threshold[node] = float(threshold)
        self.branches[node] = list(branches)
        self.fractions[node] = list(fractions)
        self.missing[node] = int(missing)

    def arrays(self):
        """The node arrays as grown (unpruned), for the pruning kernel."""
        n_branches = np.array([len(b) for b in self.branches], dtype=np.int64)
        first = np.concatenate([[0], np.cumsum(n_branches)[:-1]]).astype(np.int64)
        flat = np.array([c for b in self.branches for c in b], dtype=np.int64)
        return (np.array(self.kind, dtype=np.int64), first, n_branches, flat,
                np.array(self.missing, dtype=np.int64))

    def build(self, *, n_features, blend_missing, bin_edges, n_bin_edges, value_names,
              pruned=None):
        old_to_new = {}
        order = []
        stack = [0]
        while stack:  # depth first, first branch first: children after parents
            node = stack.pop()
            old_to_new[node] = len(order)
            order.append(node)
            if self.kind[node] != mw.LEAF and not (pruned is not None and pruned[node]):
                children = [c for c in self.branches[node] if c >= 0]
                if self.missing[node] >= 0:
                    children.append(self.missing[node])
                stack.extend(reversed(children))
        kind, feature, threshold, first, n_branches, child, fraction, missing = (
            [], [], [], [], [], [], [], [])
        for node in order:
            leaf = self.kind[node] == mw.LEAF or (pruned is not None and pruned[node])
            kind.append(mw.LEAF if leaf else self.kind[node])
            feature.append(-2 if leaf else self.feature[node])
            threshold.append(-2.0 if leaf else self.threshold[node])
            first.append(len(child))
            if leaf:
                n_branches.append(0)
                missing.append(-1)
                continue
            n_branches.append(len(self.branches[node]))
            child.extend(old_to_new[c] if c >= 0 else -1 for c in self.branches[node])
            fraction.extend(self.fractions[node])
            missing.append(old_to_new[self.missing[node]] if self.missing[node] >= 0 else -1)
        counts = np.array([self.counts[node] for node in order]).reshape(len(order), -1)
        weight = counts.sum(axis=1)
        value = counts / np.where(weight > 0, weight, 1.0)[:, None]
        impurity = np.array([mw.entropy_bits(c) for c in counts])
        return mw.MultiwayTree(
            n_features=n_features, n_classes=self.n_classes, kind=kind, feature=feature,
            threshold=threshold, first_branch=first, n_branches=n_branches,
            branch_child=child, branch_fraction=fraction, missing_child=missing,
            value=value, impurity=impurity,
            n_node_samples=[self.n_samples[node] for node in order],
            weighted_n_node_samples=weight, blend_missing=blend_missing,
            bin_edges=bin_edges, n_bin_edges=n_bin_edges, value_names=value_names)


class _SubtreeRaisingPruner:
    """C4.5's pessimistic pruning with subtree raising (Quinlan 1993, sec. 4.2), in place
    on a :class:`_TreeBuilder` and with the training cases.

    Bottom-up, each inner node compares three predicted error counts (``N U_CF(E, N)``
    summed over leaves): as a leaf, as its subtree, and as its largest branch (most
    training weight) raised into its place, which then classifies all the node's cases.
    It becomes a leaf if that is no more than either other plus 0.1; otherwise the
    largest branch replaces it if that is no more than the subtree plus 0.1, and the
    raised subtree is pruned again with the node's cases redistributed down it. The
    class counts, case counts and unknown-value fractions of every node are recomputed
    from the cases that reach it, so after raising they describe the final tree (a
    raised test may also send cases down a branch that had none: it gets a leaf).
    """

    def __init__(self, builder, cases, y, confidence, raising=True):
        """``cases``: the training X as :class:`_TrainingCases` (a dense X is wrapped)."""
        if not isinstance(cases, _TrainingCases):
            cases = _TrainingCases(cases)
        self.builder, self.cases, self.y, self.confidence = builder, cases, y, confidence
        # Without raising this is subtree replacement, as mw.pessimistic_prune; the
        # switch lets tests check the two agree.
        self.raising = raising

    def prune(self, weights):
        samples = np.arange(self.cases.shape[0], dtype=np.int64)
        return self._errors(0, samples, weights, update=True)

    def _counts(self, samples, weights):
        return np.bincount(self.y[samples], weights=weights, minlength=self.builder.n_classes)

    def _leaf_errors(self, counts):
        """``N U_CF(E, N)`` as :func:`silva.engine.multiway.binomial_upper_limit`, for one
        node (this is called once per node and per raising trial; the vectorised
        function's array handling would cost more than the quantile)."""
        n = float(counts.sum())
        if n <= mw.EPSILON:
            return 0.0
        errors = n - float(counts.max())
        if n - errors <= mw.EPSILON:
            return n
        return n * float(betaincinv(errors + 1.0, n - errors, 1.0 - self.confidence))

    def _distribute(self, node, samples, weights):
        """Cases of each branch, as at fit: a case with an unknown value goes down every
        branch with the share of the known weight that took the branch."""
        builder = self.builder
        column = self.cases.column(samples, builder.feature[node])
        missing = np.isnan(column)
        n_branches = len(builder.branches[node])
        if builder.kind[node] == mw.THRESHOLD:
            branch = (column > builder.threshold[node]).astype(np.int64)
        else:
            branch = np.where(missing, 0, column).astype(np.int64)
        known = np.bincount(branch[~missing], weights=weights[~missing],
                            minlength=n_branches)
        # The cases of a node are a superset of those it was grown on (raising only adds
        # cases), so some value is known; the old fractions are a guard for safety.
        fractions = (known / known.sum() if known.sum() > 0
                     else np.asarray(builder.fractions[node], dtype=np.float64))
        parts = []
        for b in np.flatnonzero(fractions > 0):
            chosen = ~missing & (branch == b)
            parts.append((int(b), np.concatenate([samples[chosen], samples[missing]]),
                          np.concatenate([weights[chosen], weights[missing] * fractions[b]])))
        return fractions, parts

    def _errors(self, node, samples, weights, update):
        """Predicted errors of the subtree at ``node`` on these cases; with ``update``,
        prune it (and record the cases' counts) on the way."""
        builder = self.builder
        counts = self._counts(samples, weights)
        as_leaf = self._leaf_errors(counts)
        if update:
            builder.counts[node] = counts
            builder.n_samples[node] = int(samples.shape[0])
        if builder.kind[node] == mw.LEAF:
            return as_leaf
        fractions, parts = self._distribute(node, samples, weights)
        if update:
            builder.fractions[node] = list(fractions)
        as_subtree = 0.0
        for b, branch_samples, branch_weights in parts:
            child = builder.branches[node][b]
            if child < 0:  # a branch without training cases receives some
                if not update:
                    as_subtree += self._leaf_errors(self._counts(branch_samples,
                                                                 branch_weights))
                    continue
                child = builder.add(np.zeros(builder.n_classes), 0)
                builder.branches[node][b] = child
            as_subtree += self._errors(child, branch_samples, branch_weights, update)
        if not update:
            return as_subtree
        largest = max(parts, key=lambda part: part[2].sum())[0]
        largest_child = builder.branches[node][largest]
        as_raised = (self._errors(largest_child, samples, weights, update=False)
                     if self.raising else np.inf)
        if as_leaf <= as_raised + 0.1 and as_leaf <= as_subtree + 0.1:
            builder.kind[node] = mw.LEAF
            return as_leaf
        if self.raising and as_raised <= as_subtree + 0.1:
            for field in ("kind", "feature", "threshold", "branches", "fractions",
                          "missing"):
                getattr(builder, field)[node] = getattr(builder, field)[largest_child]
            builder.branches[node] = list(builder.branches[node])
            return self._errors(node, samples, weights, update=True)
        return as_subtree


class _MultiwayTreeClassifier(ExplainMixin, FittedTreeMixin, PredictLogProbaMixin, PersistenceMixin,
                              TreeReportMixin, ClassifierMixin, ParamNamesMixin,
                              BaseEstimator):
    """Input handling, prediction and reports shared by ID3 and C4.5."""

    # ID3 grows on bin codes, which a sparse X gives without densifying; C4.5 reads raw
    # values at every node, a node's cases in dense blocks (see _TrainingCases).

    # ----------------------------------------------------------------- input
    def _prepare_X(self, X, *, reset):
        """Validated float64 X; data-frame categorical columns become category codes."""
        return _input.prepare_X(self, X, reset=reset,
                                categorical_features=self.categorical_features)

    def _value_names(self, n_features):
        names = [None] * n_features
        if self._encoder is not None:
            for j, categories in self._encoder.categories_.items():
                names[j] = [str(c) for c in categories]
        return names

    def fit(self, X, y, sample_weight=None):
        """Grow the tree on ``(X, y)``; NaN (or None in a data frame) means missing.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Relative case weights: a case of weight 2 counts twice as much as one of
            weight 1. They are rescaled to average 1 over the cases of positive weight,
            so that the weighted counts the tree compares with its limits (C4.5's
            ``min_samples_leaf``, the pessimistic error estimates of pruning, the
            significance tests) are in cases, and multiplying every weight by one
            constant fits the same tree. Without weights every case counts 1, as in
            Quinlan's programs.

        Returns
        -------
        self
        """
        X = self._prepare_X(X, reset=True)
        y = _input.target_1d(self, y, X.shape[0])
        self.classes_, y_encoded = _input.classification_target(y)
        self.n_classes_ = len(self.classes_)
        self.n_outputs_ = 1
        sample_weight = _input.check_sample_weight(sample_weight, X.shape[0])
        names = getattr(self, "feature_names_in_", None)
        _input.check_categorical_codes(X, self.is_categorical_, MAX_BINS_LIMIT, names)
        self._check_params()
        # A case of weight zero takes no part, not even in the thresholds or bins.
        positive = sample_weight > 0
        X, y_encoded, sample_weight = X[positive], y_encoded[positive], sample_weight[positive]
        self._has_missing_at_fit = _input.has_missing(X)
        # Weights are relative: rescaled to average 1, the counts that MINOBJS, pruning
        # and the significance tests read are in cases, whatever the weights' unit (see
        # the sample_weight doc). The tree reports weights in the caller's unit.
        self._mean_weight = float(np.mean(sample_weight))
        self.tree_ = self._grow(X, y_encoded.astype(np.int64), self._in_cases(sample_weight))
        self.tree_.weighted_n_node_samples *= self._mean_weight
        return self

    # ---------------------------------------------------------- significance
    def _in_cases(self, weights):
        """``weights`` in cases: rescaled as the training weights were at fit.

        Models saved before the rescaling have no ``_mean_weight`` and took weights as
        they were.
        """
        return weights / getattr(self, "_mean_weight", 1.0)

    def _check_min_significance(self):
        _input.check_float(self.min_significance, "min_significance", 0.0, 1.0,
                           low_inclusive=False)

    def _split_p_value(self, branch, y, weights, n_branches):
        """p-value of the chi-square test of a split (see the class notes): ``branch``,
        ``y`` and ``weights`` per case; cases with a branch outside ``0 .. n_branches-1``
        (C4.5's unknown values) are left out."""
        table = mw.branch_class_table(branch, y, weights, n_branches, self.n_classes_)
        return float(mw.contingency_chi2(table)[2])

    def _insignificant(self, branch, y, weights, n_branches):
        """Whether the chosen split fails the significance test, so the node stays a
        leaf. A split that does not separate anything (df = 0, p-value 1) fails any
        level below 1; at the default 1.0 no test is made, so growth is unchanged."""
        if self.min_significance >= 1.0:
            return False
        return self._split_p_value(branch, y, weights, n_branches) > self.min_significance

    # -------------------------------------------------------------- predict
    def predict_proba(self, X):
        """Class probabilities: the class distribution of the leaf each sample reaches (a
        blend of several leaves for C4.5 and missing values; see the class notes)."""
        X = self._validated_X(X)
        return self.tree_.predict(X)[:, 0, :]

    def predict(self, X, pred_contrib=False, pred_interactions=False):
        """Most probable class of each sample (the first of equals).

        ``pred_contrib=True`` returns SHAP values of ``predict_proba`` instead (see
        :mod:`silva.explain`); interaction values are computed for CART trees only.
        """
        if pred_contrib or pred_interactions:
            return self._explain(X, pred_interactions)
        probabilities = self.predict_proba(X)
        return self.classes_[np.argmax(probabilities, axis=1)]

    def rules(self, *, feature_names=None, decimals=2):
        """The tree as if-then rules, one per leaf, in the tree's order.

        Conditions on the same continuous feature along a path are merged into one
        interval. Each rule ends with ``(N/E)``: the training weight reaching the leaf
        and the weight of it that the leaf misclassifies, as in Quinlan's printouts.
        These are the tree's paths, not the generalised rule sets of C4.5rules.

        Returns
        -------
        list of str
        """
        check_is_fitted(self, "tree_")
        tree = self.tree_
        names = (list(feature_names) if feature_names is not None
                 else self._feature_names_for_report())
        if len(names) != tree.n_features:
            raise ValueError(f"feature_names must have {tree.n_features} entries; got "
                             f"{len(names)}.")
        rules = []
        stack = [(0, [])]
        while stack:
            node, path = stack.pop()
            if tree.is_leaf(node):
                rules.append(self._rule_text(node, path, names, decimals))
                continue
            for branch, child in reversed(tree.branches(node)):
                stack.append((child, path + [(node, branch)]))
        return rules

    def _rule_text(self, node, path, names, decimals):
        tree = self.tree_
        conditions = []
        bounds = {}  # continuous feature -> [lower (exclusive), upper (inclusive)]
        for ancestor, branch in path:
            f = int(tree.feature[ancestor])
            if tree.kind[ancestor] == mw.THRESHOLD and branch >= 0:
                low, high = bounds.setdefault(f, [-np.inf, np.inf])
                if f not in [c[0] for c in conditions if isinstance(c, tuple)]:
                    conditions.append((f,))
                if branch == 0:
                    bounds[f][1] = min(high, tree.threshold[ancestor])
                else:
                    bounds[f][0] = max(low, tree.threshold[ancestor])
            else:
                conditions.append(tree.branch_condition(ancestor, branch, names[f], decimals))
        parts = []
        for condition in conditions:
            if isinstance(condition, tuple):
                f = condition[0]
                low, high = bounds[f]
                if np.isfinite(low) and np.isfinite(high):
                    parts.append(f"{low:.{decimals}f} < {names[f]} <= {high:.{decimals}f}")
                elif np.isfinite(low):
                    parts.append(f"{names[f]} > {low:.{decimals}f}")
                else:
                    parts.append(f"{names[f]} <= {high:.{decimals}f}")
            else:
                parts.append(condition)
        weight = tree.weighted_n_node_samples[node]
        label = self.classes_[int(np.argmax(tree.value[node, 0]))]
        errors = weight * (1.0 - tree.value[node, 0].max())
        premise = " and ".join(parts) if parts else "true"
        return f"if {premise} then class = {label} ({weight:.1f}/{errors:.1f})"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_label = False
        return tags


class ID3Classifier(_MultiwayTreeClassifier):
    """ID3 decision tree (Quinlan 1986): multiway splits by information gain.

    At each node ID3 tests the feature of largest information gain (entropy in bits),
    with one branch per value of the feature present at the node, and never tests a
    feature twice on one path. A node becomes a leaf when it is pure, when no feature is
    left to test, when the best gain is zero, at ``max_depth``, when it has fewer
    than ``min_samples_split`` samples, or when the chosen split is not significant at
    level ``min_significance`` (see the notes).

    Parameters
    ----------
    max_depth : int or None, default=None
        Largest depth; None grows until the other rules stop.
    min_samples_split : int or float, default=2
        Fewest samples a node needs to be split (a float is a fraction of the samples).
    n_bins : int, default=10
        Numeric features are discretised into at most this many quantile bins before
        growing (:class:`silva.engine.binning.Binner`: a feature with at most ``n_bins``
        distinct values gets one bin per value; bin edges are midpoints between training
        values), and then split like categorical features, one branch per bin. The
        quantiles are of the training rows and ignore ``sample_weight``. Categorical
        features are not binned: one branch per category, however many categories.
    numeric : {"bins", "error"}, default="bins"
        "error" refuses numeric features, for ID3 on categorical data only.
    categorical_features : None, "auto", mask, indices or names, default="auto"
        Categorical features. "auto" picks a data frame's object, string, category and
        bool columns. In arrays, categorical values must be integer codes >= 0.
    min_significance : float in (0, 1], default=1.0
        CHAID-style stopping (Kass 1980): a node whose chosen split has a chi-square
        p-value above this stays a leaf. 1.0 makes no test (plain ID3); 0.05 or 0.01
        are usual levels.

    Attributes
    ----------
    classes_, n_classes_, n_features_in_, feature_names_in_, is_categorical_
    tree_ : silva.engine.multiway.MultiwayTree
        The tree; value branches are category codes or bin numbers.
    feature_importances_ : ndarray of shape (n_features,)

    Notes
    -----
    Missing values (NaN) are one more value of a feature: a test on a feature that has
    missing values at the node gets a branch for them. A value without a branch at a
    node (a category unseen there, or a missing value where there was none) is
    classified by the majority class of that node (its class distribution, for
    ``predict_proba``).

    Significance stopping follows CHAID (Kass 1980): once ID3 has chosen the test of
    a node, the table of the weighted counts of its training cases per branch (the
    missing-value branch included) and class gets Pearson's chi-square test of
    independence, with ``(R' - 1)(K' - 1)`` degrees of freedom for ``R'`` non-empty
    branches and ``K'`` classes present. If its p-value exceeds ``min_significance``
    the node becomes a leaf. The test is made once per node, on the chosen test
    only; unlike CHAID's, the p-value has no Bonferroni correction for the choice
    among features (so it is optimistic) and categories are not merged. Weights
    count as cases after ``sample_weight`` is rescaled to average 1 (a weight of 2 is
    two average cases), so the p-values do not depend on the weights' unit;
    :meth:`split_report` gives each feature's ``p_value``.

    References
    ----------
    Quinlan, J. R. (1986). Induction of decision trees. *Machine Learning* 1, 81-106.

    Kass, G. V. (1980). An exploratory technique for investigating large quantities of
    categorical data. *Applied Statistics* 29(2), 119-127.

    Examples
    --------
    >>> import pandas as pd
    >>> from silva.classic import ID3Classifier
    >>> X = pd.DataFrame({"outlook": ["sunny", "sunny", "rain", "overcast"],
    ...                   "windy": ["no", "yes", "yes", "no"]})
    >>> ID3Classifier().fit(X, ["no", "no", "no", "yes"]).get_n_leaves()
    3
    """

    def __init__(self, *, max_depth=None, min_samples_split=2, n_bins=10, numeric="bins",
                 categorical_features="auto", min_significance=1.0):
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.n_bins = n_bins
        self.numeric = numeric
        self.categorical_features = categorical_features
        self.min_significance = min_significance

    def _check_params(self):
        _input.check_int(self.max_depth, "max_depth", 1, allow_none=True)
        _input.check_count_or_fraction(self.min_samples_split, "min_samples_split", 2)
        _input.check_int(self.n_bins, "n_bins", 2)
        if self.n_bins > 255:
            raise ValueError(f"n_bins must be <= 255; got {self.n_bins}.")
        _input.check_option(self.numeric, "numeric", {"bins", "error"})
        self._check_min_significance()

    def _grow(self, X, y, weights):
        n_samples, n_features = X.shape
        is_categorical = self.is_categorical_
        if self.numeric == "error" and not is_categorical.all():
            names = self._feature_names_for_report()
            numeric = [names[j] for j in np.flatnonzero(~is_categorical)]
            raise ValueError(f"numeric='error' refuses numeric features, and X has {numeric}; "
                             "pass them as categorical (strings or a category dtype), or "
                             "use numeric='bins' to discretise them.")
        max_depth = _UNLIMITED_DEPTH if self.max_depth is None else self.max_depth
        min_split = self.min_samples_split
        if isinstance(min_split, float):
            min_split = max(2, int(np.ceil(min_split * n_samples)))
        binner = Binner(self.n_bins, is_categorical)
        codes = binner.fit_transform(X)
        self._binner = binner
        n_codes = binner.missing_bin_ + 1
        n_classes = self.n_classes_
        builder = _TreeBuilder(n_classes)
        all_samples = np.arange(n_samples, dtype=np.int64)
        root = builder.add(np.bincount(y, weights=weights, minlength=n_classes), n_samples)
        stack = [(root, all_samples, 0, np.ones(n_features, dtype=np.uint8))]
        while stack:
            node, samples, depth, allowed = stack.pop()
            counts = builder.counts[node]
            if (depth >= max_depth or samples.shape[0] < min_split or not allowed.any()
                    or np.count_nonzero(counts) <= 1):
                continue
            gains = mw.id3_gains(codes, samples, y, weights, n_classes, n_codes, allowed)
            f = int(np.argmax(gains))
            if not gains[f] > mw.EPSILON:
                continue
            column = codes[f, samples].astype(np.int64)
            if self._insignificant(column, y[samples], weights[samples], n_codes):
                continue
            n_value_branches = int(binner.n_value_bins_[f])
            branches = [-1] * n_value_branches
            branch_weight = np.bincount(column, weights=weights[samples],
                                        minlength=n_codes)
            child_allowed = allowed.copy()
            child_allowed[f] = 0
            missing_child = -1
            pending = []
            for code in np.flatnonzero(np.bincount(column, minlength=n_codes)):
                members = samples[column == code]
                child = builder.add(np.bincount(y[members], weights=weights[members],
                                                minlength=n_classes), members.shape[0])
                if code == binner.missing_bin_:
                    missing_child = child
                else:
                    branches[code] = child
                pending.append((child, members, depth + 1, child_allowed))
            known = branch_weight[:n_value_branches]
            fractions = known / known.sum() if known.sum() > 0 else np.zeros_like(known)
            kind = mw.CATEGORICAL if is_categorical[f] else mw.INTERVALS
            builder.set_split(node, kind, f, -2.0, branches, fractions, missing_child)
            stack.extend(reversed(pending))
        edges = np.where(is_categorical[:, None], np.inf, binner.bin_thresholds_)
        n_edges = np.where(is_categorical, 0, binner.n_value_bins_ - 1)
        return builder.build(n_features=n_features, blend_missing=False, bin_edges=edges,
                             n_bin_edges=n_edges, value_names=self._value_names(n_features))

    def _multiway_split_rows(self, tree, node, X, y, w, names):
        w = self._in_cases(w)
        codes = self._binner.transform(X) if X.shape[0] else None
        allowed = np.ones(tree.n_features, dtype=np.uint8)
        current = node
        while tree.parent[current] >= 0:
            current = tree.parent[current]
            allowed[tree.feature[current]] = 0
        gains = (mw.id3_gains(codes, np.arange(X.shape[0], dtype=np.int64), y, w,
                              self.n_classes_, self._binner.missing_bin_ + 1, allowed)
                 if codes is not None else np.full(tree.n_features, -np.inf))
        rows = []
        n_codes = self._binner.missing_bin_ + 1
        for j, name in enumerate(names):
            gain = float(gains[j]) if np.isfinite(gains[j]) else np.nan
            unit = "value" if self.is_categorical_[j] else "bin"
            split = f"one branch per {unit} of {name}" if allowed[j] else ""
            p_value = (self._split_p_value(codes[j], y, w, n_codes)
                       if allowed[j] and codes is not None else np.nan)
            rows.append({"_feature": j, "feature": name, "split": split, "score": gain,
                         "criterion": "information_gain", "gain": gain, "p_value": p_value})
        return rows


class C45Classifier(_MultiwayTreeClassifier):
    """C4.5 decision tree (Quinlan 1993): gain ratio, thresholds, unknown values, pruning.

    Growth (Quinlan 1993, ch. 2-3). At each node every feature proposes one test: a
    categorical feature one branch per category (every category seen at fit, so
    branches may be empty), a continuous feature the binary threshold of largest gain.
    Among the possible tests whose information gain is at least the average gain of all
    possible tests, C4.5 takes the one of largest gain ratio. A test is possible only if
    at least two of its branches get ``min_samples_leaf`` or more training weight (for a
    threshold: both sides). A categorical feature is not tested again below a test on
    it. A node becomes a leaf when it is pure, when it weighs less than
    ``2 * min_samples_leaf``, at ``max_depth``, when no test has positive gain, or when
    the chosen test is not significant at level ``min_significance`` (see the notes).

    Thresholds are real training values: the largest value of the feature in the whole
    training set that does not exceed the midpoint between the two node values the cut
    falls between (C4.5's rule), and a sample goes to the first branch when its value is
    ``<=`` the threshold. Every distinct value is a candidate cut (no binning).

    Unknown values (NaN) follow C4.5 (Quinlan 1993, sec. 3.1-3.3): a test's gain is
    computed on the cases whose value is known and multiplied by their share ``F`` of the
    node's weight; its split information counts the unknown cases as one more subset. At
    fit, a case with an unknown value goes down every branch, its weight multiplied by
    the fraction of the known weight that took the branch. At predict, a sample with an
    unknown value at a test gets the class distributions of all branches, weighted by
    those training fractions and summed.

    Pruning (Quinlan 1993, sec. 4.2): the tree is pruned bottom-up by subtree
    replacement: a node becomes a leaf when ``N U_CF(E, N)``, its predicted errors as a
    leaf (``E`` the training weight it misclassifies out of ``N``, ``U_CF`` the upper
    limit of the binomial confidence interval at level ``confidence``), is no more than
    its subtree's predicted errors plus 0.1. ``U_CF`` is computed exactly (beta quantile)
    where C4.5's program uses a normal approximation for ``E >= 1``. With
    ``subtree_raising`` (C4.5's and Weka J48's default), a node may also be replaced by
    its largest branch (most training weight), when that branch's predicted errors on
    all the node's cases are no more than the subtree's plus 0.1 and the leaf's are
    not lower still; the cases of the other branches are redistributed down the raised
    subtree, which is then pruned again.

    Parameters
    ----------
    confidence : float in (0, 1], default=0.25
        C4.5's CF; smaller prunes more. 1.0 turns pruning off.
    min_samples_leaf : int or float, default=2
        C4.5's MINOBJS (option ``-m``): the least training weight that two branches of
        a test must each get, in cases (weights rescaled to average 1; a case sent
        down several branches for an unknown value counts by its fraction in each).
    max_depth : int or None, default=None
        Largest depth (not in C4.5; None grows until C4.5's own rules stop).
    categorical_features : None, "auto", mask, indices or names, default="auto"
        Categorical features. "auto" picks a data frame's object, string, category and
        bool columns. In arrays, categorical values must be integer codes >= 0.
    min_significance : float in (0, 1], default=1.0
        CHAID-style stopping (Kass 1980; not in C4.5): a node whose chosen test has a
        chi-square p-value above this stays a leaf. 1.0 makes no test (plain C4.5).
    subtree_raising : bool, default=True
        Let pruning replace a node by its largest branch (Quinlan 1993, sec. 4.2), as
        C4.5 and Weka's J48 do by default (J48's ``-S`` turns it off). False prunes by
        subtree replacement only. Ignored when ``confidence=1.0``.

    Attributes
    ----------
    classes_, n_classes_, n_features_in_, feature_names_in_, is_categorical_
    tree_ : silva.engine.multiway.MultiwayTree
    feature_importances_ : ndarray of shape (n_features,)

    Notes
    -----
    A category with no branch at a node (a code never seen at fit, or a branch that had
    no training case) is classified by that node's class distribution; C4.5 likewise
    labels an empty branch with its parent's majority class.

    Case weights: Quinlan's C4.5 has none; every case counts 1, only the unknown-value
    rule makes counts fractional, and MINOBJS and the pessimistic estimate
    ``N U_CF(E, N)`` read those counts as numbers of cases (the binomial interval
    narrows as ``N`` grows). silva takes ``sample_weight`` as relative weights and
    rescales them to average 1, as C5.0 scales its case weights by their average, so
    ``N`` and ``E`` stay counts of (average) cases: an unweighted fit is Quinlan's, and
    multiplying every weight by one constant grows and prunes the same tree. Reading
    weights as absolute frequencies would let their unit decide the tree (weights
    summing to 1 would leave a single leaf under MINOBJS 2); counting cases regardless
    of weight would drop the weights from the error estimates and the fractional cases
    from MINOBJS.

    Significance stopping follows CHAID (Kass 1980): once C4.5 has chosen the test of
    a node (one branch per category, or the binary threshold), the table of the
    weights of the node's cases whose value of the tested feature is known, per branch
    and class, gets Pearson's chi-square test of independence with ``(R' - 1)(K' - 1)``
    degrees of freedom for ``R'`` non-empty branches and ``K'`` classes present; the
    weights are the cases' (possibly fractional) weights at the node, counted as cases
    (``sample_weight`` rescaled to average 1).
    If the p-value exceeds ``min_significance`` the node becomes a leaf. The test is
    made once per node, on the chosen test; it has no Bonferroni correction for the
    choice among features and thresholds (a best threshold's p-value is optimistic),
    and categories are not merged. Pruning still runs on the grown tree.
    :meth:`split_report` gives each feature's ``p_value``.

    References
    ----------
    Quinlan, J. R. (1993). *C4.5: Programs for Machine Learning*. Morgan Kaufmann.

    Kass, G. V. (1980). An exploratory technique for investigating large quantities of
    categorical data. *Applied Statistics* 29(2), 119-127.

    Examples
    --------
    >>> import pandas as pd
    >>> from silva.classic import C45Classifier
    >>> X = pd.DataFrame({"outlook": ["sunny"] * 4 + ["rain"] * 4,
    ...                   "humidity": [90.0, 85, 70, 65, 80, 75, 70, 95]})
    >>> y = ["no", "no", "yes", "yes", "yes", "yes", "yes", "no"]
    >>> C45Classifier(confidence=1.0).fit(X, y).predict(X.iloc[:2]).tolist()
    ['no', 'no']
    """


    def __init__(self, *, confidence=0.25, min_samples_leaf=2, max_depth=None,
                 categorical_features="auto", min_significance=1.0, subtree_raising=True):
        self.confidence = confidence
        self.min_samples_leaf = min_samples_leaf
        self.max_depth = max_depth
        self.categorical_features = categorical_features
        self.min_significance = min_significance
        self.subtree_raising = subtree_raising

    def _check_params(self):
        _input.check_float(self.confidence, "confidence", 0.0, 1.0, low_inclusive=False)
        _input.check_float(self.min_samples_leaf, "min_samples_leaf", 0.0,
                           low_inclusive=False)
        _input.check_int(self.max_depth, "max_depth", 1, allow_none=True)
        self._check_min_significance()
        if not isinstance(self.subtree_raising, bool | np.bool_):
            raise TypeError(f"subtree_raising must be True or False; got "
                            f"{self.subtree_raising!r}.")

    def _feature_grid(self, cases):
        """Sorted distinct training values of each continuous feature, +inf padded."""
        n_features = cases.shape[1]
        grids = [np.unique(cases.known_values(j)) if not self.is_categorical_[j]
                 else np.empty(0) for j in range(n_features)]
        n_grid = np.array([g.shape[0] for g in grids], dtype=np.int64)
        grid = np.full((n_features, max(1, int(n_grid.max(initial=0)))), np.inf)
        for j, g in enumerate(grids):
            grid[j, :g.shape[0]] = g
        return grid, n_grid

    def _n_values(self, cases):
        n_values = np.zeros(cases.shape[1], dtype=np.int64)
        for j in np.flatnonzero(self.is_categorical_):
            if self._encoder is not None and j in self._encoder.categories_:
                n_values[j] = len(self._encoder.categories_[j])
            else:
                present = cases.known_values(j)
                n_values[j] = int(present.max()) + 1 if present.size else 0
        return n_values

    def _choose(self, gain, info):
        """C4.5's choice: largest gain ratio among possible tests with gain >= average."""
        possible = np.isfinite(gain)
        if not possible.any():
            return -1
        average = gain[possible].mean()
        eligible = possible & (gain >= average - mw.EPSILON) & (info > mw.EPSILON)
        if not eligible.any():
            return -1
        ratio = np.where(eligible, gain / np.where(info > 0, info, 1.0), -np.inf)
        # The first feature within EPSILON of the best, as the threshold scan keeps its
        # first cut: features that part the cases alike tie, and fractional weights
        # (rescaled, or from unknown values) summed in each feature's own order round
        # such ties apart by an ulp or so, which must not decide between them.
        best = int(np.flatnonzero(ratio >= ratio.max() - mw.EPSILON)[0])
        return best if gain[best] > mw.EPSILON else -1

    def _grow(self, X, y, weights):
        n_samples, n_features = X.shape
        cases = _TrainingCases(X)
        min_objects = float(self.min_samples_leaf)
        max_depth = _UNLIMITED_DEPTH if self.max_depth is None else self.max_depth
        n_classes = self.n_classes_
        is_categorical = self.is_categorical_.astype(np.uint8)
        n_values = self._n_values(cases)
        self._n_values_ = n_values
        grid, n_grid = self._feature_grid(cases)
        self._grid = (grid, n_grid)
        builder = _TreeBuilder(n_classes)
        root = builder.add(np.bincount(y, weights=weights, minlength=n_classes), n_samples)
        stack = [(root, np.arange(n_samples, dtype=np.int64), weights.copy(), 0,
                  np.ones(n_features, dtype=np.uint8))]
        while stack:
            node, samples, node_weights, depth, allowed = stack.pop()
            counts = builder.counts[node]
            total = counts.sum()
            if (depth >= max_depth or total < 2.0 * min_objects - mw.EPSILON
                    or counts.max() >= total - mw.EPSILON):
                continue
            gain, info, thresholds = cases.evaluate(
                samples, node_weights, y, n_classes, is_categorical, n_values, allowed,
                min_objects, grid, n_grid)
            f = self._choose(gain, info)
            if f < 0:
                continue
            column = cases.column(samples, f)
            missing = np.isnan(column)
            if is_categorical[f]:
                n_branches = int(n_values[f])
                branch = np.where(missing, 0, column).astype(np.int64)
                kind, threshold = mw.CATEGORICAL, -2.0
            else:
                n_branches = 2
                branch = (column > thresholds[f]).astype(np.int64)
                kind, threshold = mw.THRESHOLD, thresholds[f]
            # Unknown values take no branch in the test, as in the gain (coded -1).
            if self._insignificant(np.where(missing, -1, branch), y[samples], node_weights,
                                   n_branches):
                continue
            known_weight = np.bincount(branch[~missing], weights=node_weights[~missing],
                                       minlength=n_branches)
            fractions = known_weight / known_weight.sum()
            child_allowed = allowed
            if is_categorical[f]:
                child_allowed = allowed.copy()
                child_allowed[f] = 0
            branches = [-1] * n_branches
            pending = []
            for b in np.flatnonzero(known_weight > 0):
                chosen = ~missing & (branch == b)
                members = np.concatenate([samples[chosen], samples[missing]])
                member_weights = np.concatenate([node_weights[chosen],
                                                 node_weights[missing] * fractions[b]])
                child = builder.add(np.bincount(y[members], weights=member_weights,
                                                minlength=n_classes), members.shape[0])
                branches[b] = child
                pending.append((child, members, member_weights, depth + 1, child_allowed))
            builder.set_split(node, kind, f, threshold, branches, fractions)
            stack.extend(reversed(pending))
        pruned = None
        if self.confidence < 1.0 and self.subtree_raising:
            _SubtreeRaisingPruner(builder, cases, y, self.confidence).prune(weights)
        elif self.confidence < 1.0:
            kind, first, n_branches, child, missing_child = builder.arrays()
            counts = np.array(builder.counts).reshape(len(builder.counts), -1)
            n = counts.sum(axis=1)
            errors = n - counts.max(axis=1)
            leaf_errors = n * mw.binomial_upper_limit(errors, n, self.confidence)
            pruned, _ = mw.pessimistic_prune(kind, first, n_branches, child, missing_child,
                                             leaf_errors)
        return builder.build(n_features=n_features, blend_missing=True,
                             bin_edges=np.full((n_features, 1), np.inf),
                             n_bin_edges=np.zeros(n_features, dtype=np.int64),
                             value_names=self._value_names(n_features), pruned=pruned)

    def _multiway_split_rows(self, tree, node, X, y, w, names):
        w = self._in_cases(w)
        allowed = np.ones(tree.n_features, dtype=np.uint8)
        current = node
        while tree.parent[current] >= 0:
            current = tree.parent[current]
            if self.is_categorical_[tree.feature[current]]:
                allowed[tree.feature[current]] = 0
        grid, n_grid = self._grid
        cases = _TrainingCases(X)
        everyone = np.arange(X.shape[0], dtype=np.int64)
        gain, info, thresholds = cases.evaluate(
            everyone, w, y, self.n_classes_, self.is_categorical_.astype(np.uint8),
            self._n_values_, allowed, float(self.min_samples_leaf), grid, n_grid)
        possible = np.isfinite(gain)
        average = gain[possible].mean() if possible.any() else np.inf
        rows = []
        for j, name in enumerate(names):
            row = {"_feature": j, "feature": name, "split": "", "score": np.nan,
                   "criterion": "gain_ratio", "gain": np.nan, "split_info": np.nan,
                   "gain_ratio": np.nan, "eligible": False, "p_value": np.nan}
            if possible[j]:
                ratio = gain[j] / info[j] if info[j] > mw.EPSILON else 0.0
                row.update(gain=float(gain[j]), split_info=float(info[j]),
                           gain_ratio=float(ratio), score=float(ratio),
                           eligible=bool(gain[j] >= average - mw.EPSILON
                                         and info[j] > mw.EPSILON))
                column = cases.column(everyone, j)
                if self.is_categorical_[j]:
                    branch, n_branches = column, int(self._n_values_[j])
                else:
                    branch, n_branches = (column > thresholds[j]).astype(np.float64), 2
                branch = np.where(np.isnan(column), -1, branch).astype(np.int64)
                row["p_value"] = self._split_p_value(branch, y, w, n_branches)
                row["split"] = (f"one branch per value of {name}"
                                if self.is_categorical_[j]
                                else f"{name} <= {thresholds[j]:.6g}")
            rows.append(row)
        return rows
