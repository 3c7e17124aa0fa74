"""The level-wise, Poisson-bootstrap forest (``bootstrap="poisson"``) on one machine:
partition-independent bootstrap counts, trees that fit their in-bag rows, splits that
are CART's best, and the default forests left alone."""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.utils.estimator_checks import parametrize_with_checks

import silva
from silva.engine.levelwise import (
    HistogramAccumulator,
    RowShard,
    node_histograms,
    poisson_counts,
    reproducible_offset,
    split_node_histograms,
    sum_node_histograms,
)


def test_poisson_counts_depend_on_the_row_and_seed_only():
    rows = np.arange(200_000, dtype=np.int64)
    counts = poisson_counts(np.uint64(7), rows, 1.0)
    # Any subset, in any order, draws the same counts for its rows.
    subset = np.random.RandomState(0).permutation(rows)[:1000]
    np.testing.assert_array_equal(poisson_counts(np.uint64(7), subset, 1.0),
                                  counts[subset])
    # Poisson(1): mean 1, variance 1, P(0) = 1/e (standard errors ~0.003, 0.001).
    assert abs(counts.mean() - 1.0) < 0.015 and abs(counts.var() - 1.0) < 0.02
    assert abs(np.mean(counts == 0) - np.exp(-1.0)) < 0.005
    assert not np.array_equal(poisson_counts(np.uint64(8), rows[:100], 1.0), counts[:100])
    assert abs(poisson_counts(np.uint64(7), rows, 0.3).mean() - 0.3) < 0.01


def test_histograms_do_not_depend_on_how_rows_are_split():
    """Double-double sums: two shards' histograms added equal one shard's bit for bit,
    with values whose plain float sums depend on the order."""
    rng = np.random.RandomState(0)
    n = 3000
    codes = rng.randint(0, 4, size=(2, n)).astype(np.uint8)
    y = rng.standard_cauchy(n) * 1e3
    weight = rng.rand(n)
    whole = RowShard(codes, y, weight, np.arange(n, dtype=np.int64), 5, 4, False)
    cut = 1234
    parts = [RowShard(np.ascontiguousarray(codes[:, s]), y[s], weight[s],
                      np.arange(n, dtype=np.int64)[s], 5, 4, False)
             for s in (slice(cut, None), slice(0, cut))]
    [(cells, reference)] = sum_node_histograms([whole.start_trees([11], 1.0)], 10, 4)
    [(summed_cells, summed)] = sum_node_histograms(
        [part.start_trees([11], 1.0) for part in parts], 10, 4)
    np.testing.assert_array_equal(summed_cells, cells)
    np.testing.assert_array_equal(summed[:, :4], reference[:, :4])
    # The rounded channel equals an exact (fsum) sum over the rows of each bin.
    import math
    counts = poisson_counts(np.uint64(11), np.arange(n, dtype=np.int64), 1.0)
    in_bin = codes[0] == 2
    exact = math.fsum(counts[in_bin] * weight[in_bin] * y[in_bin])
    assert reference[list(cells).index(2), 2] == exact


def test_node_histograms_round_trip():
    """Only the cells that hold rows travel; low words only when some is not zero."""
    node_a = (np.array([3, 7]), np.array([[2.0, 1.5, 0.25, 1e-17, 0, 0, 1e-20, 0],
                                          [1.0, 3.0, 0.0, 0.0, 0, 0, 0, 0]]))
    node_b = (np.array([1]), np.array([[4.0, 1.0, 2.0, 3.0, 0, 0, 0, 0]]))
    answer = node_histograms([node_a, node_b], 4)
    assert answer[2].shape == (3, 8)
    for (cells, values), (c, v) in zip(split_node_histograms(answer, 4),
                                       [node_a, node_b], strict=True):
        np.testing.assert_array_equal(cells, c)
        np.testing.assert_array_equal(values, v)
    integer = node_histograms([(np.array([0]), np.array([[1.0, 1, 0, 0, 0, 0, 0, 0]]))], 4)
    assert integer[2].shape == (1, 4)  # the low words, all zero, stay home
    np.testing.assert_array_equal(split_node_histograms(integer, 4)[0][1],
                                  [[1.0, 1, 0, 0, 0, 0, 0, 0]])
    # A parent minus a child keeps the cells that still hold rows.
    accumulator = HistogramAccumulator(10, 4)
    parent = (np.array([1, 3]), np.array([[3.0, 3, 0, 0, 0, 0, 0, 0],
                                          [1.0, 1, 0, 0, 0, 0, 0, 0]]))
    child = (np.array([3]), np.array([[1.0, 1, 0, 0, 0, 0, 0, 0]]))
    cells, values = accumulator.difference(parent, child)
    np.testing.assert_array_equal(cells, [1])
    np.testing.assert_array_equal(values, [[3.0, 3, 0, 0, 0, 0, 0, 0]])
    assert not accumulator.cells.any()


def test_reproducible_offset():
    assert reproducible_offset(0.0) == 0.0
    mean = 1234.5678
    assert abs(reproducible_offset(mean) - mean) < 1e-6 * mean
    assert reproducible_offset(mean) == reproducible_offset(mean * (1 + 2e-16))


@pytest.fixture(scope="module")
def classification():
    return make_classification(600, 6, n_informative=4, random_state=0)


def test_trees_fit_their_in_bag_rows(classification):
    """Fully grown trees: every in-bag row reaches a pure leaf, and every node's sample
    count is the number of in-bag rows that pass through it."""
    X, y = classification
    forest = silva.RandomForestClassifier(n_estimators=3, bootstrap="poisson",
                                          random_state=0).fit(X, y)
    for t, estimator in enumerate(forest.estimators_):
        tree = estimator.tree_
        inbag = forest._tree_weight(forest._tree_seeds[t], np.ones(X.shape[0]), forest._n_drawn) > 0
        assert np.all(estimator.predict(X[inbag]) == y[inbag])
        passing = np.asarray(tree.decision_path(X[inbag]).sum(axis=0)).ravel()
        np.testing.assert_array_equal(passing, tree.n_node_samples)


def test_root_split_is_the_best_weighted_gini_split():
    """With every feature a candidate, the root splits the in-bag rows as a depth-1
    CART tree on the same rows weighted by their Poisson counts does (fewer rows than
    bins: every value its own bin, whichever rows place the edges)."""
    X, y = make_classification(200, 6, n_informative=4, random_state=0)
    forest = silva.RandomForestClassifier(n_estimators=1, bootstrap="poisson",
                                          max_features=None, random_state=5).fit(X, y)
    counts = forest._tree_weight(forest._tree_seeds[0], np.ones(X.shape[0]), forest._n_drawn)
    stump = silva.DecisionTreeClassifier(max_depth=1).fit(X, y, sample_weight=counts)
    inbag = counts > 0
    ours = forest.estimators_[0].tree_
    assert ours.feature[0] == stump.tree_.feature[0]
    went_left = np.asarray(ours.decision_path(X[inbag])[:, ours.children_left[0]]
                           .todense()).ravel() > 0
    np.testing.assert_array_equal(went_left, stump.tree_.apply(X[inbag])
                                  == stump.tree_.children_left[0])
    np.testing.assert_allclose(ours.impurity[:3], stump.tree_.impurity[:3], rtol=1e-12)


def test_regression_oob_and_quantiles():
    X, y = make_regression(500, 5, noise=1.0, random_state=0)
    y = y + 1e4  # centring matters
    forest = silva.RandomForestRegressor(n_estimators=24, bootstrap="poisson",
                                         oob_score=True, random_state=0).fit(X, y)
    assert forest.oob_score_ > 0.6
    quantiles = forest.predict_quantiles(X[:20], [0.1, 0.9])
    assert np.all(quantiles[:, 0] <= quantiles[:, 1])
    # max_samples sets the Poisson rate: fewer distinct rows per tree.
    half = silva.RandomForestRegressor(n_estimators=2, bootstrap="poisson", max_samples=0.5,
                                       random_state=0).fit(X, y)
    assert half.estimators_[0].tree_.n_node_samples[0] < 0.45 * 500


def test_default_forest_is_unchanged_and_options_checked(classification):
    X, y = classification
    default = silva.RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    again = silva.RandomForestClassifier(n_estimators=3, random_state=0,
                                         bootstrap=True).fit(X, y)
    np.testing.assert_array_equal(default.predict_proba(X), again.predict_proba(X))
    poisson = silva.RandomForestClassifier(n_estimators=3, random_state=0,
                                           bootstrap="poisson").fit(X, y)
    assert not np.array_equal(default.predict_proba(X), poisson.predict_proba(X))
    with pytest.raises(ValueError, match="bootstrap must be True, False, 'poisson' or 'weighted'"):
        silva.RandomForestClassifier(bootstrap="yes").fit(X, y)
    with pytest.raises(ValueError, match="max_leaf_nodes"):
        silva.RandomForestClassifier(bootstrap="poisson", max_leaf_nodes=5).fit(X, y)
    with pytest.raises(ValueError, match="balanced_subsample"):
        silva.RandomForestClassifier(bootstrap="poisson",
                                     class_weight="balanced_subsample").fit(X, y)


def test_saved_and_loaded(tmp_path):
    X, y = make_regression(300, 4, noise=1.0, random_state=1)
    forest = silva.RandomForestRegressor(n_estimators=4, bootstrap="poisson", max_depth=5,
                                         random_state=0).fit(X, y)
    forest.save(tmp_path / "forest.silva")
    loaded = silva.load(tmp_path / "forest.silva")
    np.testing.assert_array_equal(loaded.predict(X), forest.predict(X))
    np.testing.assert_array_equal(loaded.predict_quantiles(X[:5]),
                                  forest.predict_quantiles(X[:5]))


@parametrize_with_checks(
    [silva.RandomForestClassifier(n_estimators=3, bootstrap="poisson", random_state=0),
     silva.ExtraTreesRegressor(n_estimators=3, bootstrap="poisson", random_state=0)],
    # Counts keyed by row index: a repeated row gets its own draw, a row of weight 2 one
    # draw doubled: two different forests (as for bootstrap=True), dense or sparse.
    expected_failed_checks=lambda estimator: dict.fromkeys(
        ["check_sample_weight_equivalence_on_dense_data",
         "check_sample_weight_equivalence_on_sparse_data"],
        "the bootstrap counts rows, not weights"))
def test_sklearn_compatible(estimator, check):
    check(estimator)
