"""The rest of CART and its classic relatives in DecisionTreeClassifier/Regressor.

- criteria ``twoing`` (Breiman et al. 1984, sec. 4.3) and ``gain_ratio`` (Quinlan);
- ``ccp_alpha="cv"``: cross-validated cost-complexity pruning with the 1-SE rule;
- ``prune="reduced_error"`` (Quinlan 1987);
- ``min_significance``: CHAID-style chi-square stopping, split by split as scipy's test
  decides (the compiled test itself: tests/engine/test_significance.py).

Expected values are computed in the tests from the textbook formulas, by brute force
over every candidate split, or by redoing the procedure by hand with scikit-learn's
fold splitters.
"""

import numpy as np
import pytest
import scipy.special
import scipy.stats
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris, make_classification
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.utils.estimator_checks import parametrize_with_checks

from silva.decision_tree import DecisionTreeClassifier, DecisionTreeRegressor
from silva.engine import criteria

# ---------------------------------------------------------------- formulas, by hand


def entropy_bits(counts):
    p = np.asarray(counts, float) / np.sum(counts)
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def twoing_value(left_counts, right_counts):
    """(p_L p_R / 4) (sum_k |p(k|L) - p(k|R)|)^2 (Breiman et al. 1984, sec. 4.3)."""
    left = np.asarray(left_counts, float)
    right = np.asarray(right_counts, float)
    n = left.sum() + right.sum()
    p_left, p_right = left.sum() / n, right.sum() / n
    return p_left * p_right / 4 * np.abs(left / left.sum() - right / right.sum()).sum() ** 2


def gain_ratio_value(left_counts, right_counts):
    """Information gain / split information of a binary split (Quinlan 1986)."""
    left = np.asarray(left_counts, float)
    right = np.asarray(right_counts, float)
    n = left.sum() + right.sum()
    gain = (entropy_bits(left + right) - left.sum() / n * entropy_bits(left)
            - right.sum() / n * entropy_bits(right))
    return gain / entropy_bits([left.sum(), right.sum()])


def gini_decrease(left_counts, right_counts):
    left = np.asarray(left_counts, float)
    right = np.asarray(right_counts, float)

    def gini(c):
        p = c / c.sum()
        return 1 - (p * p).sum()

    n = left.sum() + right.sum()
    return gini(left + right) - left.sum() / n * gini(left) - right.sum() / n * gini(right)


def sums(counts):
    """Classification channel sums: sample count, then the class counts."""
    counts = np.asarray(counts, float)
    return np.concatenate([[counts.sum()], counts])


# ------------------------------------------------------------------ twoing, gain ratio

# Quinlan's play-tennis days (9 yes, 5 no), split by humidity and by wind:
#   humidity: high (3 yes, 4 no) | normal (6 yes, 1 no)
#     twoing = (7/14)(7/14)/4 (|3/7 - 6/7| + |4/7 - 1/7|)^2 = (1/16)(6/7)^2 = 36/784
#     gain = 0.940286 - (0.985228 + 0.591673)/2 = 0.151836; split info = 1 -> 0.151836
#   wind: weak (6 yes, 2 no) | strong (3 yes, 3 no)
#     twoing = (8/14)(6/14)/4 (|6/8 - 3/6| + |2/8 - 3/6|)^2 = (48/784)(1/4) = 12/784
#     gain = 0.940286 - (8/14)(0.811278) - (6/14)(1) = 0.048127
#     split info = H(8/14) = 0.985228 -> gain ratio 0.048849
TENNIS_SPLITS = [
    ([3, 4], [6, 1], 36 / 784, 0.151836),
    ([6, 2], [3, 3], 12 / 784, 0.048849),
]


@pytest.mark.parametrize(("left", "right", "twoing", "ratio"), TENNIS_SPLITS)
def test_tennis_twoing_and_gain_ratio_by_hand(left, right, twoing, ratio):
    assert twoing_value(left, right) == pytest.approx(twoing, rel=1e-12)
    assert gain_ratio_value(left, right) == pytest.approx(ratio, abs=1e-6)
    # The engine's proxies: twoing up to the node constant 4 w^2, gain ratio exactly.
    parent, left_sums = sums(np.add(left, right)), sums(left)
    w = parent[0]
    assert criteria.twoing_proxy(left_sums, parent, 0.0) / (4 * w * w) == pytest.approx(
        twoing_value(left, right), rel=1e-12)
    assert criteria.gain_ratio_proxy(left_sums, parent, 0.0) == pytest.approx(
        gain_ratio_value(left, right), rel=1e-10)


@pytest.mark.parametrize("seed", range(5))
def test_proxies_match_formulas_on_random_tables(seed):
    rng = np.random.RandomState(seed)
    left = rng.randint(0, 20, size=4).astype(float) + rng.rand(4)
    right = rng.randint(0, 20, size=4).astype(float) + rng.rand(4)
    parent, left_sums = sums(left + right), sums(left)
    w = parent[1:].sum()
    assert criteria.twoing_proxy(left_sums, parent, 0.0) / (4 * w * w) == pytest.approx(
        twoing_value(left, right), rel=1e-12)
    assert criteria.gain_ratio_proxy(left_sums, parent, 0.0) == pytest.approx(
        gain_ratio_value(left, right), rel=1e-9)
    # a child lighter than the minimum weight rules the split out
    assert criteria.twoing_proxy(left_sums, parent, w) == -np.inf
    assert criteria.gain_ratio_proxy(left_sums, parent, w) == -np.inf


def _best_root_split_by_formula(X, y, score):
    """Brute force over every threshold of every feature: (score, feature, threshold)."""
    classes = np.unique(y)
    best = (-np.inf, -1, np.nan)
    for f in range(X.shape[1]):
        values = np.unique(X[:, f])
        for low, high in zip(values[:-1], values[1:], strict=True):
            go_left = X[:, f] <= low
            left = [(y[go_left] == c).sum() for c in classes]
            right = [(y[~go_left] == c).sum() for c in classes]
            value = score(left, right)
            if value > best[0]:
                best = (value, f, (low + high) / 2)
    return best


@pytest.mark.parametrize(("criterion", "score"), [("twoing", twoing_value),
                                                  ("gain_ratio", gain_ratio_value)])
@pytest.mark.parametrize("seed", range(4))
def test_root_split_is_the_formulas_best(criterion, score, seed):
    # Four classes, a few distinct values per feature: both criteria choose splits of
    # their own here, different from gini's or entropy's in some of these cases.
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 12, size=(120, 3)).astype(float)
    y = (X[:, 0] // 3 + rng.randint(0, 2, size=120)) % 4
    best_score, feature, threshold = _best_root_split_by_formula(X, y, score)
    tree = DecisionTreeClassifier(criterion=criterion, max_depth=1).fit(X, y).tree_
    assert tree.feature[0] == feature
    assert tree.threshold[0] == threshold
    # and the reported impurity is gini (twoing) or entropy (gain ratio)
    counts = np.bincount(y.astype(int), minlength=4)
    expected = (1 - ((counts / 120) ** 2).sum() if criterion == "twoing"
                else entropy_bits(counts))
    assert tree.impurity[0] == pytest.approx(expected, rel=1e-12)


def test_gain_ratio_and_twoing_choose_differently_from_entropy_and_gini():
    # The brute-force test above must be able to tell the criteria apart: on these
    # tables the best gain ratio is not the best gain, and twoing is not gini.
    differs_ratio = differs_twoing = 0
    for seed in range(4):
        rng = np.random.RandomState(seed)
        X = rng.randint(0, 12, size=(120, 3)).astype(float)
        y = (X[:, 0] // 3 + rng.randint(0, 2, size=120)) % 4

        def gain(left, right):
            n = np.sum(left) + np.sum(right)
            return (entropy_bits(np.add(left, right)) - np.sum(left) / n * entropy_bits(left)
                    - np.sum(right) / n * entropy_bits(right))

        differs_ratio += (_best_root_split_by_formula(X, y, gain_ratio_value)[1:]
                          != _best_root_split_by_formula(X, y, gain)[1:])
        differs_twoing += (_best_root_split_by_formula(X, y, twoing_value)[1:]
                           != _best_root_split_by_formula(X, y, gini_decrease)[1:])
    assert differs_ratio > 0 and differs_twoing > 0


def _same_tree(a, b):
    for name in ("children_left", "children_right", "feature", "threshold",
                 "missing_go_to_left", "category_bitsets", "value"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_twoing_grows_the_gini_tree_on_two_classes():
    # For two classes twoing = p_L p_R (p(1|L) - p(1|R))^2 = gini decrease / 2 (Breiman
    # et al. 1984, sec. 4.3): the same split at every node, so the same tree.
    X, y = load_breast_cancer(return_X_y=True)
    gini = DecisionTreeClassifier(criterion="gini").fit(X, y).tree_
    twoing = DecisionTreeClassifier(criterion="twoing").fit(X, y).tree_
    _same_tree(gini, twoing)
    np.testing.assert_allclose(twoing.impurity, gini.impurity, rtol=1e-12)


def test_twoing_equals_gini_with_missing_values_and_categories():
    X, y = make_classification(n_samples=1500, n_features=6, n_informative=4,
                               random_state=3)
    rng = np.random.RandomState(3)
    X[:, 2] = rng.randint(0, 9, size=1500)
    X[:, 2] += (y == 1) * rng.randint(0, 3, size=1500)  # a categorical feature with signal
    X[rng.rand(1500) < 0.15, 0] = np.nan
    X[rng.rand(1500) < 0.1, 2] = np.nan
    options = dict(categorical_features=[2], min_samples_leaf=3)
    gini = DecisionTreeClassifier(criterion="gini", **options).fit(X, y).tree_
    twoing = DecisionTreeClassifier(criterion="twoing", **options).fit(X, y).tree_
    assert gini.is_categorical.any() and gini.node_count > 50
    _same_tree(gini, twoing)


@pytest.mark.parametrize("criterion", ["twoing", "gain_ratio"])
def test_new_criteria_with_missing_values_and_categories(criterion):
    # A categorical feature decides the class (categories {0, 3, 5} are class 1) and a
    # numeric one has missing values that all belong to class 1.
    rng = np.random.RandomState(0)
    n = 600
    categories = rng.randint(0, 8, size=n).astype(float)
    numeric = rng.rand(n)
    y = np.isin(categories, [0, 3, 5]).astype(int)
    numeric[y == 1] = np.where(rng.rand((y == 1).sum()) < 0.5, np.nan, numeric[y == 1])
    noise = rng.rand(n)
    X = np.column_stack([noise, categories, numeric])
    model = DecisionTreeClassifier(criterion=criterion, categorical_features=[1],
                                   max_depth=1).fit(X, y)
    tree = model.tree_
    assert tree.feature[0] == 1 and tree.is_categorical[0]
    assert set(tree.categories_left(0)) in ({0, 3, 5}, {1, 2, 4, 6, 7})
    assert model.score(X, y) == 1.0
    # Without the categorical feature the missing values carry the signal: they are
    # sent to the child that is mostly class 1, which they make pure or nearly so.
    numeric_only = DecisionTreeClassifier(criterion=criterion, max_depth=1).fit(X[:, [2]], y)
    tree = numeric_only.tree_
    child = tree.children_left[0] if tree.missing_go_to_left[0] else tree.children_right[0]
    assert tree.value[child, 0, 1] > 0.95
    assert numeric_only.predict([[np.nan]])[0] == 1
    # With noisy labels, every node's impurity is that of its training samples
    # (gini / entropy).
    y_noisy = y ^ (rng.rand(n) < 0.15)
    full = DecisionTreeClassifier(criterion=criterion, categorical_features=[1],
                                  max_depth=4).fit(X, y_noisy)
    assert full.tree_.node_count > 15
    paths = full.decision_path(X).toarray().astype(bool)
    for node in range(full.tree_.node_count):
        counts = np.bincount(y_noisy[paths[:, node]], minlength=2)
        expected = (1 - ((counts / counts.sum()) ** 2).sum() if criterion == "twoing"
                    else entropy_bits(counts))
        assert full.tree_.impurity[node] == pytest.approx(expected, abs=1e-12)


# ---------------------------------------------------------- chi-square significance


def _node_p_value(tree, node):
    """scipy's p-value of the split at ``node`` from the children's class counts."""
    counts = tree.value[:, 0, :] * tree.weighted_n_node_samples[:, None]
    table = np.rint(counts[[tree.children_left[node], tree.children_right[node]]])
    table = table[:, table.sum(axis=0) > 0]
    return scipy.stats.chi2_contingency(table, correction=False)[1]


def _check_significance_stops(full, stopped, level):
    """``stopped`` is ``full`` cut where scipy's p-value of the split exceeds ``level``."""
    n_cut = 0
    stack = [(0, 0)]
    while stack:
        a, b = stack.pop()
        assert full.feature[a] == stopped.feature[b] or stopped.children_left[b] == -1
        if full.children_left[a] == -1:
            assert stopped.children_left[b] == -1
            continue
        p_value = _node_p_value(full, a)
        if stopped.children_left[b] == -1:
            assert p_value > level * (1 - 1e-9)
            n_cut += 1
            continue
        assert p_value <= level * (1 + 1e-9)
        assert full.threshold[a] == stopped.threshold[b]
        stack.append((full.children_left[a], stopped.children_left[b]))
        stack.append((full.children_right[a], stopped.children_right[b]))
    return n_cut


@pytest.mark.parametrize("level", [0.05, 0.001])
def test_min_significance_stops_exactly_where_scipy_says(level):
    X, y = load_breast_cancer(return_X_y=True)
    full = DecisionTreeClassifier(random_state=0).fit(X, y).tree_
    stopped = DecisionTreeClassifier(random_state=0, min_significance=level).fit(X, y).tree_
    assert _check_significance_stops(full, stopped, level) > 0
    assert stopped.node_count < full.node_count


def test_min_significance_on_three_classes():
    X, y = load_iris(return_X_y=True)
    full = DecisionTreeClassifier(criterion="entropy").fit(X, y).tree_
    stopped = DecisionTreeClassifier(criterion="entropy", min_significance=0.01).fit(X, y)
    assert _check_significance_stops(full, stopped.tree_, 0.01) > 0


def test_min_significance_splits_signal_not_noise():
    # Feature 0 decides the class (10 % of labels flipped); features 1-4 are coin flips.
    rng = np.random.RandomState(0)
    n = 400
    X = rng.randint(0, 2, size=(n, 5)).astype(float)
    y = (X[:, 0].astype(int) ^ (rng.rand(n) < 0.1)).astype(int)
    full = DecisionTreeClassifier(random_state=0).fit(X, y)
    assert set(full.tree_.feature[full.tree_.feature >= 0]) > {0}  # noise is split
    stopped = DecisionTreeClassifier(random_state=0, min_significance=0.01).fit(X, y)
    tree = stopped.tree_
    assert tree.feature[0] == 0 and _node_p_value(tree, 0) < 1e-30
    assert set(tree.feature[tree.feature >= 0]) == {0}
    # Pure noise: the root is not split at all.
    noise = DecisionTreeClassifier(min_significance=0.01).fit(X[:, 1:], y)
    assert noise.tree_.node_count == 1
    assert _node_p_value(DecisionTreeClassifier(max_depth=1).fit(X[:, 1:], y).tree_, 0) > 0.01


def test_min_significance_one_is_the_unpruned_tree():
    X, y = load_breast_cancer(return_X_y=True)
    weights = np.random.RandomState(0).randint(1, 4, size=y.shape[0]).astype(float)
    for criterion in ("gini", "twoing", "gain_ratio"):
        plain = DecisionTreeClassifier(criterion=criterion, random_state=0).fit(
            X, y, sample_weight=weights)
        off = DecisionTreeClassifier(criterion=criterion, random_state=0,
                                     min_significance=1.0).fit(X, y, sample_weight=weights)
        _same_tree(plain.tree_, off.tree_)


def test_min_significance_does_not_depend_on_the_weight_scale():
    X, y = load_breast_cancer(return_X_y=True)
    model = DecisionTreeClassifier(min_significance=0.001, random_state=0)
    unit = clone(model).fit(X, y).tree_
    scaled = clone(model).fit(X, y, sample_weight=np.full(y.shape[0], 7.0)).tree_
    np.testing.assert_array_equal(unit.feature, scaled.feature)
    np.testing.assert_array_equal(unit.threshold, scaled.threshold)


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, np.nan])
def test_min_significance_out_of_range(bad):
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="min_significance"):
        DecisionTreeClassifier(min_significance=bad).fit(X, y)
    with pytest.raises(TypeError, match="min_significance"):
        DecisionTreeClassifier(min_significance="0.05").fit(X, y)


def test_regressor_has_no_min_significance():
    with pytest.raises(TypeError, match="min_significance"):
        DecisionTreeRegressor(min_significance=0.05)
    with pytest.raises(ValueError, match="min_significance"):
        DecisionTreeRegressor().set_params(min_significance=0.05)


# ------------------------------------------------------------------- ccp_alpha="cv"


def _manual_cv(model, X, y, folds, classification):
    """The 1-SE choice over the path, redone with public fits and given folds."""
    path = clone(model).set_params(ccp_alpha=0.0).cost_complexity_pruning_path(X, y)
    distinct = np.unique(np.maximum(path.ccp_alphas, 0.0))
    candidates = np.append(np.sqrt(distinct[:-1] * distinct[1:]), np.inf)
    losses = np.empty((y.shape[0], candidates.size))
    for train, test in folds:
        for j, alpha in enumerate(candidates):
            fitted = clone(model).set_params(ccp_alpha=alpha).fit(X[train], y[train])
            prediction = fitted.predict(X[test])
            losses[test, j] = (prediction != y[test] if classification
                               else (prediction - y[test]) ** 2)
    mean = losses.mean(axis=0)
    se = losses.std(axis=0) / np.sqrt(y.shape[0])
    best = np.argmin(mean)
    chosen = np.flatnonzero(mean <= mean[best] + se[best])[-1]
    return candidates, mean, se, chosen


def test_ccp_cv_reproduces_manual_cross_validation_classifier():
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:300], y[:300]
    splitter = KFold(n_splits=5, shuffle=True, random_state=0)
    model = DecisionTreeClassifier(random_state=0, ccp_alpha="cv", ccp_cv=splitter)
    model.fit(X, y)
    candidates, mean, se, chosen = _manual_cv(model, X, y, list(splitter.split(X, y)), True)
    results = model.ccp_cv_results_
    np.testing.assert_allclose(results.ccp_alphas, candidates, rtol=1e-12)
    np.testing.assert_allclose(results.mean_error, mean, rtol=1e-12)
    np.testing.assert_allclose(results.std_error, se, rtol=1e-9)
    assert results.chosen_index == chosen and model.ccp_alpha_ == candidates[chosen]
    assert results.best_index == np.argmin(mean)
    # The tree kept is the full-data tree pruned at the chosen alpha.
    refit = DecisionTreeClassifier(random_state=0, ccp_alpha=model.ccp_alpha_).fit(X, y)
    _same_tree(model.tree_, refit.tree_)
    assert results.n_leaves[chosen] == model.get_n_leaves()
    assert np.all(np.diff(results.n_leaves) <= 0) and results.n_leaves[-1] == 1


def test_ccp_cv_reproduces_manual_cross_validation_regressor():
    X, y = load_diabetes(return_X_y=True)
    X, y = X[:200], y[:200]
    splitter = KFold(n_splits=4, shuffle=True, random_state=1)
    model = DecisionTreeRegressor(random_state=0, ccp_alpha="cv", ccp_cv=splitter,
                                  min_samples_leaf=8)
    model.fit(X, y)
    candidates, mean, se, chosen = _manual_cv(model, X, y, list(splitter.split(X, y)), False)
    results = model.ccp_cv_results_
    np.testing.assert_allclose(results.ccp_alphas, candidates, rtol=1e-9)
    np.testing.assert_allclose(results.mean_error, mean, rtol=1e-9)
    np.testing.assert_allclose(results.std_error, se, rtol=1e-7)
    assert results.chosen_index == chosen
    refit = DecisionTreeRegressor(random_state=0, min_samples_leaf=8,
                                  ccp_alpha=model.ccp_alpha_).fit(X, y)
    np.testing.assert_array_equal(model.tree_.feature, refit.tree_.feature)
    np.testing.assert_allclose(model.predict(X), refit.predict(X), rtol=1e-12)


def test_ccp_cv_with_an_int_uses_shuffled_stratified_folds():
    X, y = load_breast_cancer(return_X_y=True)
    model = DecisionTreeClassifier(random_state=3, ccp_alpha="cv", ccp_cv=3).fit(X, y)
    seed = np.random.RandomState(3).randint(np.iinfo(np.int32).max)
    folds = list(StratifiedKFold(3, shuffle=True, random_state=seed).split(X, y))
    candidates, mean, _, chosen = _manual_cv(model.set_params(ccp_cv=3), X, y, folds, True)
    np.testing.assert_allclose(model.ccp_cv_results_.mean_error, mean, rtol=1e-12)
    assert model.ccp_alpha_ == candidates[chosen]
    # The 1-SE rule keeps a smaller tree than the unpruned one on this data.
    assert model.get_n_leaves() < DecisionTreeClassifier(random_state=3).fit(
        X, y).get_n_leaves()


# ------------------------------------------------------------ reduced-error pruning


def _noisy_classification(seed=0, n=600):
    X, y = make_classification(n_samples=n, n_features=8, n_informative=3, flip_y=0.3,
                               random_state=seed)
    return X, y


def _held_out_errors_by_node(tree, X, y, classification):
    """Per node: held-out error if it were a leaf, and the samples reaching it."""
    paths = tree.decision_path(X).toarray().astype(bool)
    values = tree.value[:, 0, :]
    if classification:
        wrong = np.argmax(values, axis=1)[None, :] != y[:, None]
    else:
        wrong = (values[:, 0][None, :] - y[:, None]) ** 2
    return (paths * wrong).sum(axis=0)


@pytest.mark.parametrize("classification", [True, False])
def test_reduced_error_pruning_never_increases_held_out_error(classification):
    if classification:
        X, y = _noisy_classification()
        model = DecisionTreeClassifier(prune="reduced_error", random_state=0).fit(X, y)
        unpruned_model = DecisionTreeClassifier(random_state=0)
    else:
        X, y = load_diabetes(return_X_y=True)
        y = y - y.mean()
        model = DecisionTreeRegressor(prune="reduced_error", random_state=0).fit(X, y)
        unpruned_model = DecisionTreeRegressor(random_state=0)
    held_out = model.validation_indices_
    growing = np.setdiff1d(np.arange(y.shape[0]), held_out)
    assert held_out.size == round(0.2 * y.shape[0])
    unpruned = unpruned_model.fit(X[growing], y[growing])

    def error(fitted):
        prediction = fitted.predict(X[held_out])
        if classification:
            return np.mean(prediction != y[held_out])
        return np.mean((prediction - y[held_out]) ** 2)

    assert model.prune_validation_.error_pruned == pytest.approx(error(model), rel=1e-9)
    assert (model.prune_validation_.error_pruned
            <= model.prune_validation_.error_unpruned)
    if classification:
        # The public fit on the growing samples is the tree that was pruned.
        assert error(model) <= error(unpruned)
        assert model.prune_validation_.error_unpruned == error(unpruned)
    # (A regressor centres y by the mean of what it is given, so the public fit on the
    # growing samples rounds its sums differently and may break tied splits otherwise.)
    # The pruned tree shrinks a lot on noisy data ...
    assert model.get_n_leaves() < 0.5 * unpruned.get_n_leaves()
    # ... and is the unpruned tree cut at some nodes: same root split, fewer nodes.
    assert model.tree_.feature[0] == unpruned.tree_.feature[0]
    # Quinlan's rule leaves no internal node whose collapse would not hurt.
    y_held = y[held_out].astype(int) if classification else y[held_out]
    tree = model.tree_
    as_leaf = _held_out_errors_by_node(tree, X[held_out], y_held, classification)
    is_leaf = tree.children_left == -1
    paths = tree.decision_path(X[held_out]).toarray().astype(bool)
    for node in np.flatnonzero(~is_leaf):
        below = as_leaf[is_leaf & paths[paths[:, node]].any(axis=0)].sum()
        assert as_leaf[node] > below


def test_reduced_error_holdout_is_stratified_and_grows_on_the_rest():
    X, y = _noisy_classification(seed=2, n=500)
    model = DecisionTreeClassifier(prune="reduced_error", validation_fraction=0.3,
                                   random_state=5).fit(X, y)
    held_out = model.validation_indices_
    for c in (0, 1):
        assert (y[held_out] == c).sum() == round(0.3 * (y == c).sum())
    assert model.tree_.n_node_samples[0] == y.shape[0] - held_out.size
    assert model.prune_validation_.n_validation == held_out.size
    # same random_state, same hold-out
    again = clone(model).fit(X, y)
    np.testing.assert_array_equal(again.validation_indices_, held_out)
    _same_tree(model.tree_, again.tree_)


def test_reduced_error_pruning_keeps_accuracy_on_held_out_data():
    X, y = _noisy_classification(seed=1, n=1200)
    X_train, y_train, X_test, y_test = X[:800], y[:800], X[800:], y[800:]
    pruned = DecisionTreeClassifier(prune="reduced_error", random_state=0).fit(X_train,
                                                                               y_train)
    full = DecisionTreeClassifier(random_state=0).fit(X_train, y_train)
    assert pruned.get_n_leaves() < full.get_n_leaves() / 3
    assert pruned.score(X_test, y_test) >= full.score(X_test, y_test) - 0.02


# ----------------------------------------------------------------------- parameters


@pytest.mark.parametrize(("params", "error", "match"), [
    ({"ccp_alpha": "auto"}, ValueError, "ccp_alpha must be a float >= 0 or 'cv'"),
    ({"ccp_alpha": "cv", "ccp_cv": 1}, ValueError, "ccp_cv must be >= 2"),
    ({"ccp_alpha": "cv", "ccp_cv": 2.5}, TypeError, "ccp_cv"),
    ({"prune": "pessimistic"}, ValueError, "prune must be one of"),
    ({"prune": "reduced_error", "validation_fraction": 1.0}, ValueError,
     "validation_fraction"),
    ({"prune": "reduced_error", "validation_fraction": 0.0}, ValueError,
     "validation_fraction"),
    ({"prune": "reduced_error", "ccp_alpha": 0.01}, ValueError, "two pruning methods"),
    ({"prune": "reduced_error", "ccp_alpha": "cv"}, ValueError, "two pruning methods"),
])
@pytest.mark.parametrize("model_class", [DecisionTreeClassifier, DecisionTreeRegressor])
def test_bad_pruning_parameters(model_class, params, error, match):
    X, y = load_iris(return_X_y=True)
    with pytest.raises(error, match=match):
        model_class(**params).fit(X, y)


def test_too_few_samples_for_the_holdout_or_the_folds():
    X, y = np.arange(4.0)[:, None], np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="validation_fraction=0.1 of 4 samples"):
        DecisionTreeClassifier(prune="reduced_error", validation_fraction=0.1).fit(X, y)
    with pytest.raises(ValueError, match="ccp_cv=5 folds.*n_samples=4"):
        DecisionTreeRegressor(ccp_alpha="cv").fit(X, y.astype(float))


def test_ccp_alpha_attribute_for_plain_alphas():
    X, y = load_iris(return_X_y=True)
    assert DecisionTreeClassifier(ccp_alpha=0.02).fit(X, y).ccp_alpha_ == 0.02
    assert DecisionTreeClassifier().fit(X, y).ccp_alpha_ == 0.0
    assert not hasattr(DecisionTreeClassifier().fit(X, y), "ccp_cv_results_")


# --------------------------------------------------------- scikit-learn's contract

# (ccp_alpha="cv" and prune="reduced_error" split the samples by rows, so integer sample
# weights cannot equal repeated rows there: see the report on issue 3.)
@parametrize_with_checks([
    DecisionTreeClassifier(criterion="twoing"),
    DecisionTreeClassifier(criterion="gain_ratio", min_significance=0.05),
])
def test_sklearn_compatible_with_the_new_criteria(estimator, check):
    check(estimator)
