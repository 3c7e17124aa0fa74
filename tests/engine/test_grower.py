"""The CART grower: its split-search paths agree, its trees are the same for any number
of threads, and a fitted tree's nodes hold exactly their samples (checked in numpy)."""

import numba
import numpy as np
import pytest
import scipy.sparse
from _compare import compare_trees
from sklearn.datasets import load_breast_cancer, load_diabetes, make_classification

from silva import DecisionTreeClassifier, DecisionTreeRegressor
from silva.engine import grower
from silva.engine.nodes import (
    DEPTH_FIRST,
    new_array_stack,
    new_pending,
    pending_nodes,
    pop_array_stack,
    push_array_stack,
)

from ._fitted import check_nodes_hold_their_samples, small_data
from ._kernels import (
    CART_FIELDS,
    LEAF,
    UNDEFINED,
    buffers_reused,
    cart_field,
    cart_tree,
    grow_cart_tree,
    set_tree_size_thresholds,
)

# ------------------------------------------------------------- grow_tree directly


def _same_growth(a, b):
    table_a, values_a, bitsets_a = a
    table_b, values_b, bitsets_b = b
    assert table_a.shape == table_b.shape
    for name in CART_FIELDS:
        np.testing.assert_array_equal(cart_field(table_a, name), cart_field(table_b, name),
                                      err_msg=name)
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
    always_histogram = grow_cart_tree(X, y, histogram_min_samples=0,
                                      parallel_min_work=10**12, **common)
    always_sorting = grow_cart_tree(X, y, histogram_min_samples=10**9,
                                    parallel_min_work=10**12, **common)
    assert always_histogram[0].shape[0] > 20
    _same_growth(always_histogram, always_sorting)


@pytest.mark.parametrize(("criterion", "options"), SEARCH_CASES, ids=str)
def test_parallel_and_serial_paths_grow_the_same_tree(criterion, options):
    X, y, categorical, weights = _data_for(criterion)
    common = dict(criterion=criterion, weights=weights, categorical=categorical, **options)
    for histogram_min_samples in (0, 256):
        parallel = grow_cart_tree(X, y, histogram_min_samples=histogram_min_samples,
                                  parallel_min_work=0, **common)
        serial = grow_cart_tree(X, y, histogram_min_samples=histogram_min_samples,
                                parallel_min_work=10**12, **common)
        _same_growth(parallel, serial)


def test_paths_agree_on_continuous_targets():
    X, y = load_diabetes(return_X_y=True)
    histogram = grow_cart_tree(X, y, criterion="squared_error", histogram_min_samples=0,
                               parallel_min_work=10**12, max_depth=6, center=True)
    sorting = grow_cart_tree(X, y, criterion="squared_error", histogram_min_samples=10**9,
                             parallel_min_work=10**12, max_depth=6, center=True)
    _same_growth(histogram, sorting)


def test_paths_differ_only_by_ties_when_sums_round():
    # The regressor centres y, so channel sums are rounded, and in a different order on
    # each path: two splits of equal gain may then compare either way. The trees may
    # differ, but only where splits tie (see _compare.py).
    X, y, categorical, weights = _data_for("squared_error")
    common = dict(criterion="squared_error", weights=weights, categorical=categorical,
                  parallel_min_work=10**12, center=True)
    histogram = cart_tree(grow_cart_tree(X, y, histogram_min_samples=0, **common), 10, 1)
    sorting = cart_tree(grow_cart_tree(X, y, histogram_min_samples=10**9, **common), 10, 1)
    comparison = compare_trees(histogram, sorting, X)
    assert comparison.mismatches == [] and comparison.leaf_value_diffs == []
    assert comparison.n_same > 0.9 * (histogram.node_count - histogram.n_leaves)


def test_grow_tree_output_is_consistent():
    X, y, categorical, weights = _classification_data()
    table, values, bitsets = grow_cart_tree(X, y, weights=weights, categorical=categorical,
                                            histogram_min_samples=64,
                                            parallel_min_work=200_000)
    left = cart_field(table, "left").astype(int)
    right = cart_field(table, "right").astype(int)
    n_samples = cart_field(table, "n_samples")
    weighted_n = cart_field(table, "weighted_n")
    depth = cart_field(table, "depth")
    internal = left != LEAF
    # children come after their parent, partition its samples and are one level deeper
    nodes = np.flatnonzero(internal)
    assert np.all(left[nodes] > nodes) and np.all(right[nodes] > nodes)
    np.testing.assert_array_equal(n_samples[left[nodes]] + n_samples[right[nodes]],
                                  n_samples[nodes])
    np.testing.assert_allclose(weighted_n[left[nodes]] + weighted_n[right[nodes]],
                               weighted_n[nodes])
    np.testing.assert_array_equal(depth[left[nodes]], depth[nodes] + 1)
    np.testing.assert_array_equal(cart_field(table, "start")[left[nodes]],
                                  cart_field(table, "start")[nodes])
    np.testing.assert_array_equal(cart_field(table, "end")[right[nodes]],
                                  cart_field(table, "end")[nodes])
    assert n_samples[0] == 3000 and weighted_n[0] == weights.sum()
    np.testing.assert_allclose(values.sum(axis=1), 1.0)  # class fractions
    assert np.all(cart_field(table, "feature")[~internal] == UNDEFINED)
    assert np.all(bitsets[~cart_field(table, "is_categorical").astype(bool)] == 0)
    # The node arrays start at INITIAL_NODE_CAPACITY rows (allocated in numpy) and
    # grow in the compiled grower: this tree outgrew them.
    assert table.shape[0] > grower.INITIAL_NODE_CAPACITY


def test_a_tree_grown_on_a_larger_trees_buffers_is_the_same():
    # A forest's thread hands each tree the node arrays of the one before, as large as
    # they grew, zeroed again: what the large tree wrote there (categorical bitsets,
    # deeper nodes) must not reach the small one.
    X, y, categorical, weights = _classification_data()
    grow = dict(categorical=categorical, histogram_min_samples=64,
                parallel_min_work=200_000)
    fresh = grow_cart_tree(X[:300], y[:300], weights=weights[:300], **grow)
    with buffers_reused():
        large = grow_cart_tree(X, y, weights=weights, **grow)
        assert np.any(large[2] != 0)  # it wrote category bitsets
        reused = grow_cart_tree(X[:300], y[:300], weights=weights[:300], **grow)
    # The small tree grew in the large one's node table (a view of it is returned).
    assert np.shares_memory(large[0], reused[0])
    _same_growth(fresh, reused)


@numba.njit
def _compiled_pending(n_channels):
    return new_pending(n_channels)


def test_pending_nodes_in_numpy_equal_the_compiled_ones():
    # The CART grower's buffers take them from numpy, the gradient grower compiles them.
    pending, sums = pending_nodes(3)
    compiled_pending, compiled_sums = _compiled_pending(3)
    assert pending.dtype == compiled_pending.dtype
    np.testing.assert_array_equal(pending, compiled_pending)
    np.testing.assert_array_equal(sums, compiled_sums)
    assert sums.shape == (2, 3) and pending["slot"].tolist() == [-1, -1]


@numba.njit
def _run_array_stack(operations, capacity):
    # operations[k] >= 0 pushes that node id, -1 pops; returns the popped ids in order.
    stack, depth = new_array_stack(np.empty(capacity, dtype=np.int64))
    popped = np.empty(operations.shape[0], dtype=np.int64)
    n_popped = 0
    for node in operations:
        if node >= 0:
            push_array_stack(stack, depth, DEPTH_FIRST, 0.0, node)
        else:
            popped[n_popped] = pop_array_stack(stack, depth, DEPTH_FIRST)
            n_popped += 1
    return popped[:n_popped]


def test_array_stack_frontier_pops_as_a_list_stack():
    # The depth-first growers' frontier against a Python list used as a stack: the node
    # pushed last pops first, and an empty stack pops -1.
    rng = np.random.RandomState(0)
    operations = np.where(rng.rand(400) < 0.55, rng.randint(0, 1000, size=400), -1)
    expected = []
    reference = []
    for node in operations.tolist():
        if node >= 0:
            reference.append(node)
        else:
            expected.append(reference.pop() if reference else -1)
    popped = _run_array_stack(operations, operations.shape[0])
    assert -1 in expected and len(expected) > 100
    np.testing.assert_array_equal(popped, expected)


# ------------------------------------------- grown trees against their samples, in numpy

def test_classifier_leaves_hold_their_class_frequencies():
    X, signal, weights = small_data()
    y = np.digitize(signal, [-0.5, 0.7])
    model = DecisionTreeClassifier(max_depth=4, categorical_features=[2], random_state=0)
    tree = model.fit(X, y, sample_weight=weights).tree_
    members = check_nodes_hold_their_samples(tree, X, weights)
    for node in range(tree.node_count):
        rows = members[:, node]
        frequencies = np.bincount(y[rows], weights=weights[rows], minlength=3)
        np.testing.assert_allclose(tree.value[node, 0], frequencies / frequencies.sum(),
                                   rtol=1e-12)


@pytest.mark.parametrize("splitter", ["best", "random"])
def test_many_class_nodes_hold_their_class_frequencies(splitter):
    # Seven classes and 12 features: the grower keeps each row's class in the codes'
    # padding, and extra trees' search and every partition add a row's weight to its
    # class's channel alone (splitting.class_code_column); the partitions move the
    # classes with the codes.
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(400, 12)), 1)
    X[rng.random(400) < 0.05, 4] = np.nan
    y = (np.digitize(X[:, 0] + X[:, 1], [-1.5, -0.8, -0.3, 0.3, 0.8, 1.5])
         + rng.integers(0, 2, 400)) % 7
    weights = rng.integers(1, 4, 400).astype(float)
    model = DecisionTreeClassifier(splitter=splitter, max_features=4, random_state=0)
    tree = model.fit(X, y, sample_weight=weights).tree_
    assert tree.node_count > 50
    members = check_nodes_hold_their_samples(tree, X, weights)
    for node in range(tree.node_count):
        rows = members[:, node]
        frequencies = np.bincount(y[rows], weights=weights[rows], minlength=7)
        np.testing.assert_allclose(tree.value[node, 0], frequencies / frequencies.sum(),
                                   rtol=1e-12)


def test_regressor_leaves_hold_their_means():
    X, y, weights = small_data(seed=1)
    model = DecisionTreeRegressor(max_leaf_nodes=9, categorical_features=[2],
                                  random_state=0)
    tree = model.fit(X, y, sample_weight=weights).tree_
    members = check_nodes_hold_their_samples(tree, X, weights)
    assert tree.n_leaves == 9
    for node in range(tree.node_count):
        rows = members[:, node]
        np.testing.assert_allclose(tree.value[node, 0, 0],
                                   np.average(y[rows], weights=weights[rows]), rtol=1e-9)


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
    set_tree_size_thresholds(monkeypatch, parallel_min_work=0)
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
    set_tree_size_thresholds(monkeypatch, histogram_min_samples=0, parallel_min_work=0)
    patched = DecisionTreeClassifier(random_state=0, max_features=10).fit(X, y).tree_
    np.testing.assert_array_equal(reference.feature, patched.feature)
    np.testing.assert_array_equal(reference.threshold, patched.threshold)
    np.testing.assert_array_equal(reference.value, patched.value)


def test_few_bins_take_histograms_in_smaller_nodes_and_grow_the_same_trees(monkeypatch):
    """A classification tree on features of few bins keeps histograms from twice their
    width (at least 32 samples); its trees, forests and bagging members are those of
    the threshold of many-bin data (class counts subtract exactly); regression and
    many-bin data keep HISTOGRAM_MIN_SAMPLES."""
    import silva
    from silva import decision_tree
    from silva.engine import criteria
    from silva.engine.cart import BinnedData

    rng = np.random.default_rng(3)
    X = rng.integers(0, 12, size=(1500, 8)).astype(float)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 8, 1500) > 14).astype(int) + (X[:, 2] > 9)
    few = BinnedData.from_X(X, np.zeros(8, dtype=bool), 255)
    many = BinnedData.from_X(rng.normal(size=(1500, 3)), np.zeros(3, dtype=bool), 255)
    rule = decision_tree.histogram_min_samples_for
    assert rule(criteria.GINI, few) == 32  # 12 values and the missing bin: 13 bins
    assert rule(criteria.SQUARED_ERROR, few) == decision_tree.HISTOGRAM_MIN_SAMPLES
    assert rule(criteria.GINI, many) == decision_tree.HISTOGRAM_MIN_SAMPLES
    models = [
        lambda: silva.DecisionTreeClassifier(random_state=0),
        lambda: silva.RandomForestClassifier(n_estimators=5, max_features=None,
                                             random_state=0),
        lambda: silva.BaggingClassifier(n_estimators=3, random_state=0),
    ]
    fitted = [make().fit(X, y).predict_proba(X) for make in models]
    # The many-bin threshold everywhere: the same models.
    monkeypatch.setattr(decision_tree, "FEW_BINS_HISTOGRAM_MIN_SAMPLES",
                        decision_tree.HISTOGRAM_MIN_SAMPLES)
    for make, probabilities in zip(models, fitted, strict=True):
        np.testing.assert_array_equal(make().fit(X, y).predict_proba(X), probabilities)


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
