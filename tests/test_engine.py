"""Engine-level tests: binning, the two split-search paths, threads, and the fitted Tree."""

import inspect

import numba
import numpy as np
import pytest
import scipy.sparse
from _compare import compare_trees
from sklearn.datasets import load_breast_cancer, load_diabetes, make_classification

import silva.decision_tree as dt
from silva import DecisionTreeClassifier, DecisionTreeRegressor
from silva.engine import criteria
from silva.engine import grower as g
from silva.engine.binning import Binner
from silva.engine.random import seed_from_random_state
from silva.engine.tree import Tree

# ----------------------------------------------------------------------- binning


def test_exact_binning_one_bin_per_value():
    X = np.array([[3.0], [1.0], [2.0], [2.0], [5.0], [1.0]])
    binner = Binner(10, np.array([False]))
    codes = binner.fit_transform(X)
    assert binner.n_value_bins_[0] == 4
    np.testing.assert_array_equal(binner.bin_thresholds_[0, :3], [1.5, 2.5, 4.0])
    np.testing.assert_array_equal(binner.bin_lower_[0, :4], [1, 2, 3, 5])
    np.testing.assert_array_equal(binner.bin_upper_[0, :4], [1, 2, 3, 5])
    assert codes.shape == (1, 6)  # feature-major
    np.testing.assert_array_equal(codes[0], [2, 0, 1, 1, 3, 0])
    # a value lies in the first bin whose threshold is >= it
    probe = np.array([[0.0], [1.5], [1.6], [2.5], [4.0], [4.1], [99.0]])
    np.testing.assert_array_equal(binner.transform(probe)[0], [0, 0, 1, 1, 2, 3, 3])


def test_exact_binning_at_the_limit():
    values = np.arange(255.0)
    binner = Binner(255, np.array([False])).fit(values[:, None])
    assert binner.n_value_bins_[0] == 255
    np.testing.assert_array_equal(binner.bin_thresholds_[0, :254], values[:-1] + 0.5)
    one_more = Binner(255, np.array([False])).fit(np.arange(256.0)[:, None])
    assert one_more.n_value_bins_[0] <= 255


def test_exact_binning_of_adjacent_floats():
    low = 1.0
    high = np.nextafter(low, 2.0)
    binner = Binner(4, np.array([False]))
    codes = binner.fit_transform(np.array([[low], [high]]))
    np.testing.assert_array_equal(codes[0], [0, 1])
    assert low <= binner.bin_thresholds_[0, 0] < high


def test_quantile_binning():
    rng = np.random.RandomState(0)
    x = rng.randn(10_000)
    binner = Binner(16, np.array([False]))
    codes = binner.fit_transform(x[:, None])[0]
    n_bins = binner.n_value_bins_[0]
    assert 2 <= n_bins <= 16
    counts = np.bincount(codes, minlength=n_bins)
    assert counts.sum() == 10_000 and (counts > 0).all()
    # roughly equal counts: every bin within 25% of 10_000 / n_bins
    np.testing.assert_allclose(counts, 10_000 / n_bins, rtol=0.25)
    # bins are ordered, and thresholds separate the values of neighbouring bins
    thresholds = binner.bin_thresholds_[0, :n_bins - 1]
    assert np.all(np.diff(thresholds) > 0)
    for b in range(n_bins):
        in_bin = x[codes == b]
        assert in_bin.min() == binner.bin_lower_[0, b]
        assert in_bin.max() == binner.bin_upper_[0, b]
        if b < n_bins - 1:
            assert in_bin.max() <= thresholds[b] < x[codes == b + 1].min()


def test_quantile_binning_never_splits_a_heavy_value():
    # half the samples share one value: it must stay in one bin
    x = np.r_[np.zeros(5000), np.arange(1.0, 5001.0)]
    binner = Binner(32, np.array([False]))
    codes = binner.fit_transform(x[:, None])[0]
    assert np.unique(codes[:5000]).size == 1
    assert binner.n_value_bins_[0] <= 32
    assert np.all(np.diff(codes[5000:].astype(int)) >= 0)  # monotone in the value


def test_missing_bin():
    X = np.array([[1.0, np.nan], [np.nan, np.nan], [2.0, np.nan], [3.0, np.nan]])
    binner = Binner(8, np.array([False, False]))
    codes = binner.fit_transform(X)
    assert binner.n_value_bins_.tolist() == [3, 1]
    assert binner.missing_bin_ == 3  # the largest code in use, shared by all features
    np.testing.assert_array_equal(codes[0], [0, 3, 1, 2])
    np.testing.assert_array_equal(codes[1], [3, 3, 3, 3])
    assert codes.dtype == np.uint8


def test_categorical_binning_uses_the_codes():
    X = np.array([[4.0, 0.5], [0.0, 0.1], [2.0, np.nan], [np.nan, 0.3]])
    binner = Binner(255, np.array([True, False]))
    codes = binner.fit_transform(X)
    assert binner.n_value_bins_[0] == 5  # codes 0..4
    missing = binner.missing_bin_
    np.testing.assert_array_equal(codes[0], [4, 0, 2, missing])
    assert codes[1, 2] == missing


def test_wide_codes_switch_to_uint16():
    X = np.arange(1000.0)[:, None]
    binner = Binner(2000, np.array([False]))
    codes = binner.fit_transform(X)
    assert codes.dtype == np.uint16
    np.testing.assert_array_equal(codes[0], np.arange(1000))


# ------------------------------------------------------------- grow_tree directly

_COMPARED_COLUMNS = ["LEFT", "RIGHT", "FEATURE", "THRESHOLD", "MISSING_LEFT", "IS_CATEGORICAL",
                     "IMPURITY", "N_SAMPLES", "WEIGHTED_N", "DEPTH", "START", "END"]


def grow(X, y, *, criterion="gini", weights=None, categorical=None, max_bins=255,
         histogram_min_samples, parallel_min_work, max_features=None, splitter="best",
         random_state=0, max_depth=2**31 - 1, max_leaf_nodes=0, min_samples_leaf=1,
         center=False, min_significance=1.0):
    """Call ``grow_tree`` as ``DecisionTreeClassifier/Regressor._fit_tree`` does.

    Arguments are passed by name so that reordering grow_tree's parameters does not
    silently scramble them. ``center`` subtracts the mean of y as the regressor does for
    squared errors (off by default: integer targets then keep every sum exact).
    """
    n_samples, n_features = X.shape
    is_categorical = np.zeros(n_features, bool) if categorical is None else categorical
    weights = np.ones(n_samples) if weights is None else weights
    code = {**criteria.CLASSIFICATION_CRITERIA, **criteria.REGRESSION_CRITERIA}[criterion]
    if criteria.is_classification(code):
        classes, y_model = np.unique(y, return_inverse=True)
        n_classes = classes.size
        n_values = n_classes
    else:
        y_model = y - np.average(y, weights=weights) if center else y
        n_classes, n_values = 1, 1
    binner = Binner(max_bins, is_categorical)
    bin_codes = binner.fit_transform(X)
    n_categories = binner.n_value_bins_[is_categorical].max(initial=1)
    available = dict(
        bin_codes=bin_codes,
        codes_by_sample=np.ascontiguousarray(bin_codes.T),
        stats=criteria.build_statistics(code, y_model, weights, n_classes),
        y=np.asarray(y_model, dtype=np.float64), weight=weights,
        sample_indices=np.arange(n_samples, dtype=np.int32),
        n_value_bins=binner.n_value_bins_, is_categorical=is_categorical.astype(np.uint8),
        missing_bin=binner.missing_bin_, bin_thresholds=binner.bin_thresholds_,
        bin_lower=binner.bin_lower_, bin_upper=binner.bin_upper_, criterion=code,
        n_classes=n_classes, n_values=n_values, max_depth=max_depth, min_samples_split=2,
        min_samples_leaf=min_samples_leaf, min_weight_leaf=0.0,
        max_leaf_nodes=max_leaf_nodes, min_impurity_decrease=0.0,
        max_features=n_features if max_features is None else max_features,
        use_random=splitter == "random",
        seed=seed_from_random_state(np.random.RandomState(random_state)),
        histogram_min_samples=histogram_min_samples, parallel_min_work=parallel_min_work,
        n_words=max(1, (int(n_categories) + 63) // 64), min_significance=min_significance,
    )
    names = list(inspect.signature(g.grow_tree.py_func).parameters)
    unknown = [name for name in names if name not in available]
    assert not unknown, f"grow_tree has new parameters {unknown}: update this helper"
    return g.compiled_grower(code)(*[available[name] for name in names])


def _same_growth(a, b):
    table_a, values_a, bitsets_a = a
    table_b, values_b, bitsets_b = b
    assert table_a.shape == table_b.shape
    columns = [getattr(g, name) for name in _COMPARED_COLUMNS]
    np.testing.assert_array_equal(table_a[:, columns], table_b[:, columns])
    np.testing.assert_array_equal(values_a, values_b)
    np.testing.assert_array_equal(bitsets_a, bitsets_b)


def _classification_data():
    X, y = make_classification(n_samples=3000, n_features=10, n_informative=6, n_classes=3,
                               random_state=0)
    rng = np.random.RandomState(0)
    X[:, 3] = rng.randint(0, 12, size=3000)  # categorical codes
    X[rng.rand(3000) < 0.1, 1] = np.nan
    X[:, 5] = np.round(X[:, 5], 1)  # many ties
    categorical = np.zeros(10, bool)
    categorical[3] = True
    weights = rng.randint(1, 4, size=3000).astype(float)
    return X, y, categorical, weights


# Integer weights and small integer targets keep every channel sum exact, so the two
# paths must agree bit for bit; continuous targets are checked as well.
SEARCH_CASES = [
    ("gini", {}), ("entropy", {"max_leaf_nodes": 40}), ("misclassification", {}),
    ("gini", {"max_features": 3, "random_state": 4}),
    ("gini", {"splitter": "random", "random_state": 7}),
    ("squared_error", {"splitter": "random", "max_features": 4, "random_state": 3}),
    ("squared_error", {}), ("poisson", {"min_samples_leaf": 3}),
    ("friedman_mse", {"max_leaf_nodes": 30}),
    ("twoing", {}), ("gain_ratio", {"max_leaf_nodes": 40}),
    ("gini", {"min_significance": 0.01}),
]


def _data_for(criterion):
    X, y, categorical, weights = _classification_data()
    if criterion in ("squared_error", "poisson", "friedman_mse"):
        rng = np.random.RandomState(1)
        y = (np.nan_to_num(X[:, 0]) > 0) * 3.0 + rng.randint(0, 4, size=y.shape[0])
    return X, y, categorical, weights


@pytest.mark.parametrize(("criterion", "options"), SEARCH_CASES, ids=str)
def test_histogram_and_sorting_paths_grow_the_same_tree(criterion, options):
    X, y, categorical, weights = _data_for(criterion)
    common = dict(criterion=criterion, weights=weights, categorical=categorical, **options)
    always_histogram = grow(X, y, histogram_min_samples=0, parallel_min_work=10**12, **common)
    always_sorting = grow(X, y, histogram_min_samples=10**9, parallel_min_work=10**12,
                          **common)
    assert always_histogram[0].shape[0] > 20
    _same_growth(always_histogram, always_sorting)


@pytest.mark.parametrize(("criterion", "options"), SEARCH_CASES, ids=str)
def test_parallel_and_serial_paths_grow_the_same_tree(criterion, options):
    X, y, categorical, weights = _data_for(criterion)
    common = dict(criterion=criterion, weights=weights, categorical=categorical, **options)
    for histogram_min_samples in (0, 256):
        parallel = grow(X, y, histogram_min_samples=histogram_min_samples,
                        parallel_min_work=0, **common)
        serial = grow(X, y, histogram_min_samples=histogram_min_samples,
                      parallel_min_work=10**12, **common)
        _same_growth(parallel, serial)


def test_paths_agree_on_continuous_targets():
    X, y = load_diabetes(return_X_y=True)
    histogram = grow(X, y, criterion="squared_error", histogram_min_samples=0,
                     parallel_min_work=10**12, max_depth=6, center=True)
    sorting = grow(X, y, criterion="squared_error", histogram_min_samples=10**9,
                   parallel_min_work=10**12, max_depth=6, center=True)
    _same_growth(histogram, sorting)


def test_paths_differ_only_by_ties_when_sums_round():
    # The regressor centres y, so channel sums are rounded, and in a different order on
    # each path: two splits of equal gain may then compare either way. The trees may
    # differ, but only where splits tie (see _compare.py).
    X, y, categorical, weights = _data_for("squared_error")
    common = dict(criterion="squared_error", weights=weights, categorical=categorical,
                  parallel_min_work=10**12, center=True)
    histogram = Tree.from_grower(*grow(X, y, histogram_min_samples=0, **common), 10, 1)
    sorting = Tree.from_grower(*grow(X, y, histogram_min_samples=10**9, **common), 10, 1)
    comparison = compare_trees(histogram, sorting, X)
    assert comparison.mismatches == [] and comparison.leaf_value_diffs == []
    assert comparison.n_same > 0.9 * (histogram.node_count - histogram.n_leaves)


def test_grow_tree_output_is_consistent():
    X, y, categorical, weights = _classification_data()
    table, values, bitsets = grow(X, y, weights=weights, categorical=categorical,
                                  histogram_min_samples=64, parallel_min_work=200_000)
    left = table[:, g.LEFT].astype(int)
    right = table[:, g.RIGHT].astype(int)
    internal = left != -1
    # children come after their parent, partition its samples and are one level deeper
    nodes = np.flatnonzero(internal)
    assert np.all(left[nodes] > nodes) and np.all(right[nodes] > nodes)
    np.testing.assert_array_equal(table[left[nodes], g.N_SAMPLES] + table[right[nodes],
                                  g.N_SAMPLES], table[nodes, g.N_SAMPLES])
    np.testing.assert_allclose(table[left[nodes], g.WEIGHTED_N] + table[right[nodes],
                               g.WEIGHTED_N], table[nodes, g.WEIGHTED_N])
    np.testing.assert_array_equal(table[left[nodes], g.DEPTH], table[nodes, g.DEPTH] + 1)
    np.testing.assert_array_equal(table[left[nodes], g.START], table[nodes, g.START])
    np.testing.assert_array_equal(table[right[nodes], g.END], table[nodes, g.END])
    assert table[0, g.N_SAMPLES] == 3000 and table[0, g.WEIGHTED_N] == weights.sum()
    np.testing.assert_allclose(values.sum(axis=1), 1.0)  # class fractions
    assert np.all(table[~internal, g.FEATURE] == g.UNDEFINED)
    assert np.all(bitsets[~table[:, g.IS_CATEGORICAL].astype(bool)] == 0)


# ----------------------------------------------------------------------- threads


@pytest.fixture
def thread_count():
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


@pytest.mark.parametrize("params", [
    {"splitter": "random", "max_features": "sqrt"},
    {"max_features": "sqrt"},
    {"splitter": "random"},
    {},
], ids=str)
@pytest.mark.parametrize("model_class", [DecisionTreeClassifier, DecisionTreeRegressor])
def test_same_tree_for_any_number_of_threads(model_class, params, thread_count, monkeypatch):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has a single thread")
    X, y, categorical, weights = _classification_data()
    if model_class is DecisionTreeRegressor:
        y = np.nan_to_num(X[:, 0]) + 0.1 * np.random.RandomState(0).randn(y.shape[0])
    # parallel regions everywhere, whatever the node size
    monkeypatch.setattr(dt, "PARALLEL_MIN_WORK", 0)
    trees = []
    for n_threads in (1, 2, 1):
        numba.set_num_threads(n_threads)
        model = model_class(random_state=11, categorical_features=categorical, **params)
        trees.append(model.fit(X, y, sample_weight=weights).tree_)
    for other in trees[1:]:
        for name in ("children_left", "feature", "threshold", "missing_go_to_left",
                     "category_bitsets", "value", "impurity", "weighted_n_node_samples"):
            np.testing.assert_array_equal(getattr(trees[0], name), getattr(other, name),
                                          err_msg=name)


def test_monkeypatched_thresholds_change_nothing(monkeypatch):
    X, y = load_breast_cancer(return_X_y=True)
    reference = DecisionTreeClassifier(random_state=0, max_features=10).fit(X, y).tree_
    monkeypatch.setattr(dt, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(dt, "HISTOGRAM_MIN_SAMPLES", 0)
    patched = DecisionTreeClassifier(random_state=0, max_features=10).fit(X, y).tree_
    np.testing.assert_array_equal(reference.feature, patched.feature)
    np.testing.assert_array_equal(reference.threshold, patched.threshold)
    np.testing.assert_array_equal(reference.value, patched.value)


# ------------------------------------------------------------- the fitted tree


@pytest.fixture(scope="module")
def fitted():
    X, y, categorical, weights = _classification_data()
    model = DecisionTreeClassifier(categorical_features=categorical, min_samples_leaf=3,
                                   random_state=0).fit(X, y, sample_weight=weights)
    return model, X


def test_apply_reaches_leaves(fitted):
    model, X = fitted
    leaves = model.apply(X)
    assert leaves.shape == (X.shape[0],)
    assert np.all(model.tree_.children_left[leaves] == -1)
    # every leaf holds training samples, and as many as the tree says
    counts = np.bincount(leaves, minlength=model.tree_.node_count)
    is_leaf = model.tree_.children_left == -1
    np.testing.assert_array_equal(counts[is_leaf], model.tree_.n_node_samples[is_leaf])


def test_decision_path(fitted):
    model, X = fitted
    tree = model.tree_
    path = model.decision_path(X)
    assert scipy.sparse.issparse(path) and path.format == "csr"
    assert path.shape == (X.shape[0], tree.node_count)
    leaves = model.apply(X)
    row_lengths = np.asarray(path.sum(axis=1)).ravel()
    np.testing.assert_array_equal(row_lengths, tree.node_depth[leaves] + 1)
    dense = path.toarray().astype(bool)
    assert dense[:, 0].all()  # every path starts at the root
    parent = np.full(tree.node_count, -1)
    internal = np.flatnonzero(tree.children_left != -1)
    parent[tree.children_left[internal]] = internal
    parent[tree.children_right[internal]] = internal
    for i in range(0, X.shape[0], 97):
        nodes = np.flatnonzero(dense[i])
        assert nodes[-1] == leaves[i]  # ids increase down the tree
        # consecutive nodes are parent and child
        np.testing.assert_array_equal(parent[nodes[1:]], nodes[:-1])
    # node sample counts are the column sums of the training paths
    np.testing.assert_array_equal(np.asarray(path.sum(axis=0)).ravel(), tree.n_node_samples)


def test_predict_proba(fitted):
    model, X = fitted
    proba = model.predict_proba(X)
    assert proba.shape == (X.shape[0], 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_array_equal(model.predict(X), model.classes_[proba.argmax(axis=1)])
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(model.predict_log_proba(X), np.log(proba))
    np.testing.assert_array_equal(proba, model.tree_.value[model.apply(X), 0])


def test_node_depth_and_max_depth(fitted):
    model, _ = fitted
    tree = model.tree_
    assert model.get_depth() == tree.node_depth.max() == tree.max_depth
    assert model.get_n_leaves() == np.sum(tree.children_left == -1) == tree.n_leaves
    limited = DecisionTreeClassifier(max_depth=3).fit(*load_breast_cancer(return_X_y=True))
    assert limited.get_depth() == 3


def test_feature_importances_from_the_tree(fitted):
    model, _ = fitted
    tree = model.tree_
    importances = np.zeros(tree.n_features)
    for node in np.flatnonzero(tree.children_left != -1):
        left, right = tree.children_left[node], tree.children_right[node]
        w, imp = tree.weighted_n_node_samples, tree.impurity
        importances[tree.feature[node]] += (w[node] * imp[node] - w[left] * imp[left]
                                            - w[right] * imp[right])
    np.testing.assert_allclose(model.feature_importances_, importances / importances.sum())
    assert model.feature_importances_[3] > 0  # the categorical feature is used
