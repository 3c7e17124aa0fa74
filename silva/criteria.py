"""The textbook quantities of decision-tree learning, as plain functions.

So that a lecture exercise takes one line: for the 14 days of Quinlan's (1986) play-tennis
table, ``entropy(play)`` is 0.940 bits and ``information_gain(play, outlook)`` is 0.247.

- impurities of a label vector: :func:`entropy` (Shannon 1948; bits by default),
  :func:`gini` and :func:`misclassification` (Breiman et al. 1984, sec. 4.3);
- scores of a split: :func:`information_gain` and :func:`gain_ratio` with
  :func:`split_information` (Quinlan 1986; 1993, sec. 2.2), where the split is a
  categorical column (one group per value) or a boolean mask (two groups);
  :func:`twoing` (Breiman et al. 1984, sec. 4.3.3) and :func:`variance_reduction`
  (regression, Breiman et al. 1984, ch. 8) of a binary split given as a boolean mask;
- :func:`tree_generalization_bound`: the Occam bound on a tree's true risk.

Every function takes ``sample_weight`` (a weight per sample; weights act as repetition
counts). Labels and categorical values may be of any hashable type (strings, numbers,
booleans). Missing values (NaN or None) are refused with a ``ValueError``: the textbook
quantities are defined on known values (C4.5's treatment of unknown values lives in
:class:`silva.classic.C45Classifier`).

:class:`TreeReportMixin` adds ``split_report`` and ``generalization_bound`` to fitted
classification trees (silva's CART, ID3 and C4.5).
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

from silva import _input

__all__ = [
    "entropy",
    "gini",
    "misclassification",
    "information_gain",
    "split_information",
    "gain_ratio",
    "twoing",
    "variance_reduction",
    "tree_generalization_bound",
    "GeneralizationBound",
    "TreeReportMixin",
]


# --------------------------------------------------------------------------------------
# Input helpers
# --------------------------------------------------------------------------------------


def _is_missing(value):
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN, pd.NA-like floats
    except (TypeError, ValueError):
        return False


def _codes(values, name):
    """Integer codes of a one-dimensional array of hashable values, and their number."""
    array = np.asarray(values)
    if array.ndim != 1:
        array = array.ravel() if array.ndim == 2 and 1 in array.shape else array
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {np.shape(values)}.")
    if array.dtype.kind in "fc":
        if np.isnan(array).any():
            raise ValueError(f"{name} contains missing values (NaN); the textbook "
                             "quantities are defined on known values only.")
    if array.dtype.kind == "O":
        index = {}
        codes = np.empty(array.shape[0], dtype=np.intp)
        for i, value in enumerate(array):
            if _is_missing(value):
                raise ValueError(f"{name} contains a missing value ({value!r}) at position "
                                 f"{i}; the textbook quantities are defined on known values.")
            codes[i] = index.setdefault(value, len(index))
        return codes, len(index)
    _, codes = np.unique(array, return_inverse=True)
    codes = codes.ravel()
    return codes, int(codes.max()) + 1 if codes.size else 0


def _weights(sample_weight, n):
    if n == 0:
        raise ValueError("y is empty: the quantities need at least one sample.")
    return _input.check_sample_weight(sample_weight, n)


def _mask(mask, n):
    mask = np.asarray(mask)
    if mask.dtype.kind != "b":
        raise ValueError(f"mask must be a boolean array (True: left child); got dtype "
                         f"{mask.dtype}.")
    if mask.shape != (n,):
        raise ValueError(f"mask must have shape ({n},), one entry per sample; got "
                         f"{mask.shape}.")
    return mask


def _check_base(base):
    if (isinstance(base, bool) or not isinstance(base, numbers.Real) or not base > 0
            or base == 1 or not np.isfinite(base)):
        raise ValueError(f"base must be a positive number other than 1; got {base!r}.")
    return float(base)


def _entropy_of_counts(counts, base):
    total = counts.sum()
    if total <= 0:
        return 0.0
    p = counts[counts > 0] / total
    return float(-(p * np.log(p)).sum() / math.log(base))


def _group_counts(y_codes, n_classes, group_codes, n_groups, w):
    """(n_groups, n_classes) weighted counts."""
    table = np.zeros((n_groups, n_classes))
    np.add.at(table, (group_codes, y_codes), w)
    return table


# --------------------------------------------------------------------------------------
# Impurities
# --------------------------------------------------------------------------------------


def entropy(y, base=2, sample_weight=None):
    """Shannon entropy ``-sum_k p_k log_base p_k`` of the labels ``y``.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (any hashable values).
    base : float, default=2
        Base of the logarithm: 2 gives bits (as in ID3 and C4.5), ``e`` nats.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights; ``p_k`` is the weight of class ``k`` over the total weight.

    Returns
    -------
    float
        0 for a pure sample, ``log_base(K)`` for ``K`` equally frequent classes.

    Examples
    --------
    >>> round(entropy(["yes"] * 9 + ["no"] * 5), 3)
    0.94
    """
    base = _check_base(base)
    codes, n_classes = _codes(y, "y")
    w = _weights(sample_weight, codes.shape[0])
    return _entropy_of_counts(np.bincount(codes, weights=w, minlength=n_classes), base)


def gini(y, sample_weight=None):
    """Gini index ``1 - sum_k p_k**2`` of the labels ``y`` (Breiman et al. 1984).

    Examples
    --------
    >>> round(gini(["yes"] * 9 + ["no"] * 5), 4)
    0.4592
    """
    codes, n_classes = _codes(y, "y")
    w = _weights(sample_weight, codes.shape[0])
    p = np.bincount(codes, weights=w, minlength=n_classes) / w.sum()
    return float(1.0 - np.sum(p * p))


def misclassification(y, sample_weight=None):
    """Misclassification rate ``1 - max_k p_k``: the error of predicting the majority.

    Examples
    --------
    >>> round(misclassification(["yes"] * 9 + ["no"] * 5), 4)
    0.3571
    """
    codes, n_classes = _codes(y, "y")
    w = _weights(sample_weight, codes.shape[0])
    p = np.bincount(codes, weights=w, minlength=n_classes) / w.sum()
    return float(1.0 - p.max())


# --------------------------------------------------------------------------------------
# Split scores
# --------------------------------------------------------------------------------------


def information_gain(y, x, base=2, sample_weight=None):
    """Information gain ``H(y) - sum_v (w_v / w) H(y | x = v)`` of splitting by ``x``.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels.
    x : array-like of shape (n_samples,)
        The split: a categorical column (one group per distinct value, ID3's multiway
        split) or a boolean mask (two groups, a binary split).
    base : float, default=2
        Base of the logarithm (2: bits).
    sample_weight : array-like of shape (n_samples,), default=None

    Examples
    --------
    >>> y = ["no", "no", "yes", "yes"]
    >>> information_gain(y, [True, True, False, False])
    1.0
    """
    base = _check_base(base)
    y_codes, n_classes = _codes(y, "y")
    x_codes, n_groups = _codes(x, "x")
    if x_codes.shape[0] != y_codes.shape[0]:
        raise ValueError(f"x has {x_codes.shape[0]} entries but y has {y_codes.shape[0]}.")
    w = _weights(sample_weight, y_codes.shape[0])
    table = _group_counts(y_codes, n_classes, x_codes, n_groups, w)
    total = w.sum()
    conditional = sum(row.sum() / total * _entropy_of_counts(row, base) for row in table)
    return float(max(_entropy_of_counts(table.sum(axis=0), base) - conditional, 0.0))


def split_information(x, base=2, sample_weight=None):
    """Split information ``-sum_v (w_v / w) log_base(w_v / w)`` of the split ``x``:
    the entropy of the partition itself (Quinlan 1993, sec. 2.2).

    Examples
    --------
    >>> split_information(["a", "b", "c", "d"])
    2.0
    """
    return entropy(x, base=base, sample_weight=sample_weight)


def gain_ratio(y, x, base=2, sample_weight=None):
    """Gain ratio ``information_gain(y, x) / split_information(x)`` (Quinlan 1993).

    A split into a single group (``x`` constant) has neither gain nor split
    information; its gain ratio is defined here as 0. The base cancels out in the
    ratio; it is accepted for symmetry with :func:`information_gain`.

    Examples
    --------
    >>> round(gain_ratio(["no", "no", "yes", "yes"], ["a", "a", "b", "c"]), 4)
    0.6667
    """
    info = split_information(x, base=base, sample_weight=sample_weight)
    if info <= 0.0:
        return 0.0
    return information_gain(y, x, base=base, sample_weight=sample_weight) / info


def twoing(y, mask, sample_weight=None):
    """Twoing value ``p_L p_R / 4 * (sum_k |p(k|L) - p(k|R)|)**2`` of a binary split
    (Breiman et al. 1984, sec. 4.3.3); ``mask`` is True for the samples going left.

    0 when a side is empty. Larger is better.

    Examples
    --------
    >>> twoing(["a", "a", "b", "b"], [True, True, False, False])
    0.25
    """
    y_codes, n_classes = _codes(y, "y")
    mask = _mask(mask, y_codes.shape[0])
    w = _weights(sample_weight, y_codes.shape[0])
    left = np.bincount(y_codes[mask], weights=w[mask], minlength=n_classes)
    right = np.bincount(y_codes[~mask], weights=w[~mask], minlength=n_classes)
    w_left, w_right = left.sum(), right.sum()
    if w_left <= 0 or w_right <= 0:
        return 0.0
    total = w_left + w_right
    spread = np.abs(left / w_left - right / w_right).sum()
    return float(w_left / total * w_right / total / 4.0 * spread * spread)


def variance_reduction(y, mask, sample_weight=None):
    """Decrease of the weighted variance of a numeric target by a binary split:
    ``Var(y) - (w_L / w) Var(y_L) - (w_R / w) Var(y_R)``; ``mask`` is True for left.

    Examples
    --------
    >>> variance_reduction([1.0, 1.0, 3.0, 3.0], [True, True, False, False])
    1.0
    """
    y = np.asarray(y, dtype=np.float64).ravel()
    if np.isnan(y).any():
        raise ValueError("y contains missing values (NaN).")
    mask = _mask(mask, y.shape[0])
    w = _weights(sample_weight, y.shape[0])

    def weighted_variance(values, weights):
        total = weights.sum()
        if total <= 0:
            return 0.0, 0.0
        mean = np.dot(weights, values) / total
        return float(np.dot(weights, (values - mean) ** 2) / total), total

    parent, total = weighted_variance(y, w)
    left, w_left = weighted_variance(y[mask], w[mask])
    right, w_right = weighted_variance(y[~mask], w[~mask])
    return float(parent - w_left / total * left - w_right / total * right)


# --------------------------------------------------------------------------------------
# Generalisation
# --------------------------------------------------------------------------------------


def tree_generalization_bound(n_nodes, n_features, n_samples, delta=0.05):
    """Occam bound term for a binary tree: ``sqrt(((n+1) log2(d+3) + log2(2/δ)) / (2m))``.

    A binary tree with ``n`` nodes over ``d`` features is described in
    ``(n + 1) log2(d + 3)`` bits (each node names a feature, a leaf label or the end of
    the description). With probability at least ``1 - δ`` over ``m`` i.i.d. training
    samples, every such tree ``h`` has true 0-1 risk
    ``R(h) <= R_emp(h) + tree_generalization_bound(n, d, m, δ)`` (Occam's razor with
    Hoeffding's inequality and a union bound weighted by description length; see
    Shalev-Shwartz & Ben-David 2014, sec. 7.3 and 18.2).

    Parameters
    ----------
    n_nodes : int >= 1
    n_features : int >= 1
    n_samples : int >= 1
    delta : float in (0, 1)

    Returns
    -------
    float
    """
    for name, value in (("n_nodes", n_nodes), ("n_features", n_features),
                        ("n_samples", n_samples)):
        _input.check_int(value, name, 1)
    delta = _input.check_float(delta, "delta", 0.0, 1.0, low_inclusive=False)
    if delta >= 1.0:
        raise ValueError(f"delta must be in (0, 1); got {delta}.")
    bits = (n_nodes + 1) * math.log2(n_features + 3) + math.log2(2.0 / delta)
    return math.sqrt(bits / (2.0 * n_samples))


class GeneralizationBound(NamedTuple):
    """``R_emp`` of a tree on the data, and the bound ``R <= R_emp + complexity``."""

    empirical_risk: float
    bound: float


# --------------------------------------------------------------------------------------
# Reports on fitted trees
# --------------------------------------------------------------------------------------


def _impurity_rows(criterion, counts):
    """Impurity of each row of a (..., K) array of weighted class counts."""
    total = counts.sum(axis=-1)
    safe = np.where(total > 0, total, 1.0)
    p = counts / safe[..., None]
    if criterion == "gini":
        return 1.0 - (p * p).sum(axis=-1)
    if criterion == "misclassification":
        return np.where(total > 0, 1.0 - p.max(axis=-1), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(p > 0, np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return -(p * logs).sum(axis=-1)


def _binary_scores(criterion, left, right):
    """Score of binary splits with (n_cuts, K) left and right class counts; larger is
    better; -inf where a side is empty."""
    w_left = left.sum(axis=1)
    w_right = right.sum(axis=1)
    total = w_left + w_right
    valid = (w_left > 0) & (w_right > 0)
    safe = np.where(total > 0, total, 1.0)
    if criterion == "twoing":
        p_left = left / np.where(w_left > 0, w_left, 1.0)[:, None]
        p_right = right / np.where(w_right > 0, w_right, 1.0)[:, None]
        spread = np.abs(p_left - p_right).sum(axis=1)
        scores = w_left / safe * w_right / safe / 4.0 * spread ** 2
        return np.where(valid, scores, -np.inf)
    impurity_name = "entropy" if criterion in ("entropy", "log_loss", "gain_ratio") \
        else criterion
    parent = _impurity_rows(impurity_name, left + right)
    decrease = (parent - w_left / safe * _impurity_rows(impurity_name, left)
                - w_right / safe * _impurity_rows(impurity_name, right))
    if criterion == "gain_ratio":
        q = np.stack([w_left / safe, w_right / safe], axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            info = -(np.where(q > 0, q * np.log2(np.where(q > 0, q, 1.0)), 0.0)).sum(axis=1)
            decrease = np.where(info > 0, decrease / np.where(info > 0, info, 1.0), 0.0)
    return np.where(valid, decrease, -np.inf)


def _best_threshold_split(criterion, x, y, w, n_classes):
    """Best binary split of one numeric feature (CART's midpoints), trying missing
    values on each side. Returns ``(score, threshold, missing_left)`` or None."""
    missing = np.isnan(x)
    missing_counts = np.bincount(y[missing], weights=w[missing], minlength=n_classes)
    order = np.argsort(x[~missing], kind="stable")
    xs, ys, ws = x[~missing][order], y[~missing][order], w[~missing][order]
    if xs.shape[0] == 0:
        return None
    onehot = np.zeros((xs.shape[0], n_classes))
    onehot[np.arange(xs.shape[0]), ys] = ws
    cumulative = np.cumsum(onehot, axis=0)
    known = cumulative[-1]
    cuts = np.flatnonzero(xs[:-1] < xs[1:])
    candidates = []
    if cuts.size:
        left = cumulative[cuts]
        right = known - left
        for missing_left in (False, True):
            if missing_left:
                scores = _binary_scores(criterion, left + missing_counts, right)
            else:
                scores = _binary_scores(criterion, left, right + missing_counts)
            best = int(np.argmax(scores))
            threshold = xs[cuts[best]] / 2.0 + xs[cuts[best] + 1] / 2.0
            candidates.append((float(scores[best]), float(threshold), missing_left))
    if missing_counts.sum() > 0:  # missing values versus the rest
        score = _binary_scores(criterion, missing_counts[None, :], known[None, :])[0]
        candidates.append((float(score), np.inf, True))
    candidates = [c for c in candidates if np.isfinite(c[0])]
    if not candidates:
        return None
    return max(candidates, key=lambda c: c[0])


def _best_category_split(criterion, x, y, w, n_classes):
    """Best category-set split of one categorical feature: categories ordered by the
    proportion of each class in turn (one-vs-rest, as silva's CART does), prefixes
    scanned; missing values tried on each side. Returns ``(score, codes_left,
    missing_left)`` or None."""
    missing = np.isnan(x)
    missing_counts = np.bincount(y[missing], weights=w[missing], minlength=n_classes)
    codes = x[~missing].astype(np.int64)
    if codes.size == 0:
        return None
    n_codes = int(codes.max()) + 1
    table = np.zeros((n_codes, n_classes))
    np.add.at(table, (codes, y[~missing]), w[~missing])
    present = np.flatnonzero(table.sum(axis=1) > 0)
    if present.size < 2:
        return None
    sub = table[present]
    best = None
    for k in range(n_classes if n_classes > 2 else 1):
        proportion = sub[:, k] / sub.sum(axis=1)
        order = np.argsort(proportion, kind="stable")
        cumulative = np.cumsum(sub[order], axis=0)[:-1]
        right_total = sub.sum(axis=0)
        for missing_left in (False, True):
            left = cumulative + (missing_counts if missing_left else 0.0)
            right = right_total - cumulative + (0.0 if missing_left else missing_counts)
            scores = _binary_scores(criterion, left, right)
            i = int(np.argmax(scores))
            if np.isfinite(scores[i]) and (best is None or scores[i] > best[0]):
                best = (float(scores[i]), present[order[:i + 1]], missing_left)
    return best


class TreeReportMixin:
    """``split_report`` and ``generalization_bound`` for fitted classification trees.

    Works for silva's binary CART trees (``DecisionTreeClassifier``: ``tree_`` with
    ``decision_path``, criterion in ``self.criterion``) and for the multiway trees of
    :class:`silva.classic.ID3Classifier` and :class:`silva.classic.C45Classifier`. The
    estimator must provide ``_validated_X(X)`` (X as the fitted tree reads it),
    ``classes_``, ``is_categorical_`` and ``tree_``.
    """

    def _report_y(self, y, n_samples):
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != n_samples:
            raise ValueError(f"y must be one-dimensional with {n_samples} entries (one per "
                             f"row of X); got shape {y.shape}.")
        classes = np.asarray(self.classes_)
        position = np.searchsorted(classes, y)
        position = np.clip(position, 0, classes.shape[0] - 1)
        unknown = classes[position] != y
        if unknown.any():
            raise ValueError(f"y holds the label {y[unknown][0]!r}, which is not among the "
                             f"classes seen at fit {list(classes)}.")
        return position.astype(np.int64)

    def _feature_names_for_report(self):
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            return [f"feature_{j}" for j in range(self.n_features_in_)]
        return [str(name) for name in names]

    def split_report(self, X, y, node=0, sample_weight=None):
        """For every feature, its best split and score at ``node``.

        Trees do not keep their training data, so pass it: the report is computed from
        the samples of ``X, y`` that reach ``node`` (with the fractional weights with
        which they reach it, for C4.5 trees and missing values). Given the training
        data, the row marked ``chosen`` is the split the tree made.

        The score is the tree's own criterion: for CART trees the decrease of the node
        impurity ``i(t) - p_L i(t_L) - p_R i(t_R)`` (gini, entropy in bits or
        misclassification; the twoing value for ``criterion="twoing"``, the gain ratio
        of the binary split for ``"gain_ratio"``) at the best threshold (midpoint
        between consecutive values) or category set, trying missing values on both
        sides; for ID3 the information gain in bits of the multiway split; for C4.5 the
        gain ratio, with gain and split information computed as C4.5 does (unknown
        values, MINOBJS) and ``eligible`` saying whether the gain reaches the average
        gain of the possible tests. The tree's size limits (``max_depth``,
        ``min_samples_leaf`` of CART) are not applied.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Labels among ``classes_``.
        node : int, default=0
            Node id in ``tree_`` (0 is the root).
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        pandas.DataFrame, or list of dict when pandas is not installed
            One row per feature with ``feature``, ``split`` (readable test, empty when
            the feature has no possible split), ``score``, ``criterion``, ``chosen``,
            ``weight`` (node weight the score was computed on), and per tree family:
            ``threshold``/``categories``/``missing_left`` (CART), ``gain``/``split_info``
            /``gain_ratio``/``eligible`` (C4.5), ``gain`` (ID3).
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "tree_")
        tree = self.tree_
        _input.check_int(node, "node", 0)
        if node >= tree.node_count:
            raise ValueError(f"node must be < node_count={tree.node_count}; got {node}.")
        Xv = self._validated_X(X)
        y_codes = self._report_y(y, Xv.shape[0])
        w = _input.check_sample_weight(sample_weight, Xv.shape[0])
        if hasattr(tree, "node_weights"):
            reach = tree.node_weights(Xv, node)
        else:
            reach = np.asarray(tree.decision_path(Xv)[:, node].todense()).ravel()
        w = w * reach
        keep = w > 0
        Xn, yn, wn = Xv[keep], y_codes[keep], w[keep]
        rows = self._split_rows(tree, node, Xn, yn, wn)
        is_leaf = tree.kind[node] < 0 if hasattr(tree, "kind") else \
            tree.children_left[node] == -1
        tested = None if is_leaf else int(tree.feature[node])
        for row in rows:
            row["chosen"] = row.pop("_feature") == tested
            row["weight"] = float(wn.sum())
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - pandas is in the dev extras
            return rows
        return pd.DataFrame(rows)

    def _split_rows(self, tree, node, X, y, w):
        names = self._feature_names_for_report()
        n_classes = len(self.classes_)
        rows = []
        if not hasattr(tree, "kind"):
            criterion = str(self.criterion)
            for j, name in enumerate(names):
                row = {"_feature": j, "feature": name, "split": "", "score": np.nan,
                       "criterion": criterion, "threshold": np.nan, "categories": None,
                       "missing_left": None}
                if X.shape[0]:
                    # One feature of the node's rows at a time, so a sparse X is never
                    # densified whole.
                    column = (X[:, [j]].toarray().ravel() if _input.is_sparse(X)
                              else X[:, j])
                    if self.is_categorical_[j]:
                        found = _best_category_split(criterion, column, y, w, n_classes)
                        if found is not None:
                            row["score"], codes, row["missing_left"] = found
                            row["categories"] = [int(c) for c in codes]
                            row["split"] = f"{name} in {{{', '.join(map(str, codes))}}}"
                    else:
                        found = _best_threshold_split(criterion, column, y, w, n_classes)
                        if found is not None:
                            row["score"], row["threshold"], row["missing_left"] = found
                            row["split"] = f"{name} <= {row['threshold']:.6g}"
                rows.append(row)
            return rows
        return self._multiway_split_rows(tree, node, X, y, w, names)

    def generalization_bound(self, X, y, delta=0.05):
        """Empirical 0-1 risk on ``(X, y)`` and the Occam bound on the true risk.

        ``bound = R_emp + tree_generalization_bound(n, d, m, delta)`` with ``n`` the
        number of nodes of the tree (for a multiway tree, of the equivalent binary tree:
        a test with ``k`` branches counts as ``k - 1`` binary splits), ``d`` the number
        of features and ``m`` the number of samples. The bound holds with probability
        ``1 - delta`` when ``(X, y)`` is the i.i.d. training sample.

        Returns
        -------
        GeneralizationBound
            Named tuple ``(empirical_risk, bound)``.
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "tree_")
        y = np.asarray(y)
        risk = 1.0 - float(np.mean(self.predict(X) == y))
        tree = self.tree_
        if hasattr(tree, "n_binary_splits"):
            n_nodes = 2 * tree.n_binary_splits() + 1
        else:
            n_nodes = int(tree.node_count)
        term = tree_generalization_bound(n_nodes, int(self.n_features_in_), int(y.shape[0]),
                                         delta)
        return GeneralizationBound(risk, risk + term)
