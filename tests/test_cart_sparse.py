"""CART trees and forests on a sparse X grown from its stored entries (engine/cart_sparse.py).

The contract: the dense fit's trees on ``X.toarray()``. Where the statistic channels are
integer-valued (classification, integer weights) the sums are exact and the trees equal
node for node, predictions bit for bit. Regression channels (centred targets) and
fractional weights are not: a feature's default bin is the node's sums minus its other
bins, so its sums may differ from the dense fit's in the last bit, and two candidate
splits that tie exactly (two features isolating the same rows of a small node) may then
be ranked the other way. The regression comparisons therefore keep nodes large
(``min_samples_leaf``, ``max_depth``), where no such tie occurs on these data, and check
predictions within rounding.

The data: count-like sparse columns, denser signal columns with negative values (so
that the default bin, 0.0, lies inside the value bins), so that full trees reach both of
the grower's ways of reading a feature: its entries in the node (few entries, large
node) and its codes gathered by bisection (more entries than the node has rows).
"""

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

import silva
from silva import _boosting_loop
from silva.engine import cart, cart_sparse


def _data(n=400, p=40, seed=0, nan=False):
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random((n, p)) < 0.06, rng.integers(1, 5, (n, p)), 0.0)
    dense[:, :4] = np.where(rng.random((n, 4)) < 0.4, rng.integers(-2, 5, (n, 4)), 0.0)
    if nan:
        stored = np.flatnonzero(dense.reshape(-1))
        dense.reshape(-1)[stored[::7]] = np.nan
    score = np.nan_to_num(dense[:, :4]) @ np.array([1.0, -1.0, 0.5, 2.0])
    return dense, score + rng.normal(scale=0.5, size=n)


def _trees(model):
    estimators = getattr(model, "estimators_", [model])
    return [est.tree_ for est in estimators]


def _structure(model):
    return [(t.feature.tobytes(), t.threshold.tobytes(), t.missing_go_to_left.tobytes(),
             t.children_left.tobytes()) for t in _trees(model)]


def _fit_both(model, dense, y, **fit):
    from_dense = clone(model).fit(dense, y, **fit)
    from_sparse = clone(model).fit(sp.csr_matrix(dense), y, **fit)
    return from_sparse, from_dense


def _counting_sparse_growth(monkeypatch):
    """A list that gets one entry per tree grown on sparse entries."""
    grown = []
    make = cart.sparse_columns
    monkeypatch.setattr(cart, "sparse_columns",
                        lambda *args: grown.append(1) or make(*args))
    return grown


CLASSIFIERS = {
    "tree": silva.DecisionTreeClassifier(random_state=0),
    "forest": silva.RandomForestClassifier(n_estimators=4, random_state=0),
    "extra": silva.ExtraTreesClassifier(n_estimators=4, random_state=0),
    "leaves": silva.RandomForestClassifier(n_estimators=3, max_leaf_nodes=12,
                                           random_state=1),
    "entropy": silva.ExtraTreesClassifier(n_estimators=3, criterion="entropy",
                                          max_features=0.5, random_state=2),
}


@pytest.mark.parametrize("name", list(CLASSIFIERS))
@pytest.mark.parametrize("nan", [False, True])
def test_classifiers_equal_dense_fit(monkeypatch, name, nan):
    grown = _counting_sparse_growth(monkeypatch)
    dense, score = _data(nan=nan, seed=len(name))
    y = np.digitize(score, [-1.0, 1.5])  # three classes
    weight = np.random.default_rng(3).integers(1, 4, y.shape[0]).astype(float)
    from_sparse, from_dense = _fit_both(CLASSIFIERS[name], dense, y, sample_weight=weight)
    assert len(grown) == len(_trees(from_sparse))
    assert _structure(from_sparse) == _structure(from_dense)
    assert min(t.node_count for t in _trees(from_sparse)) >= 21
    np.testing.assert_array_equal(from_sparse.predict_proba(dense),
                                  from_dense.predict_proba(dense))


REGRESSORS = {
    "tree": silva.DecisionTreeRegressor(max_depth=5, min_samples_leaf=12, random_state=0),
    "forest": silva.RandomForestRegressor(n_estimators=4, max_depth=5, min_samples_leaf=12,
                                          random_state=0),
    "extra": silva.ExtraTreesRegressor(n_estimators=4, max_depth=5, min_samples_leaf=12,
                                       random_state=0),
}


@pytest.mark.parametrize("name", list(REGRESSORS))
def test_regressors_equal_dense_fit_within_rounding(monkeypatch, name):
    grown = _counting_sparse_growth(monkeypatch)
    dense, score = _data(nan=True, seed=7)
    weight = np.random.default_rng(4).uniform(0.5, 2.0, score.shape[0])
    from_sparse, from_dense = _fit_both(REGRESSORS[name], dense, score,
                                        sample_weight=weight)
    assert len(grown) == len(_trees(from_sparse))
    assert _structure(from_sparse) == _structure(from_dense)
    np.testing.assert_allclose(from_sparse.predict(dense), from_dense.predict(dense),
                               rtol=1e-12, atol=1e-12)


def test_fully_grown_regression_tree_fits_the_same_partition():
    """Fully grown, exact ties may go the other way (see the module docstring), but
    every leaf still holds the same training rows' targets: the training predictions are
    the dense fit's within rounding."""
    dense, score = _data(seed=8)
    from_sparse, from_dense = _fit_both(silva.DecisionTreeRegressor(random_state=0),
                                        dense, score)
    np.testing.assert_allclose(from_sparse.predict(dense), from_dense.predict(dense),
                               rtol=0, atol=1e-9)


def test_categorical_column_equals_dense_fit(monkeypatch):
    """A categorical column is searched on its gathered codes."""
    grown = _counting_sparse_growth(monkeypatch)
    dense, score = _data(seed=9)
    dense[:, 5] = np.where(np.random.default_rng(5).random(dense.shape[0]) < 0.3,
                           np.random.default_rng(6).integers(1, 6, dense.shape[0]), 0)
    y = (score + (dense[:, 5] == 3) * 2 > 1).astype(int)
    for model in (silva.DecisionTreeClassifier(categorical_features=[5], random_state=0),
                  silva.RandomForestClassifier(n_estimators=3, categorical_features=[5],
                                               max_features=0.5, random_state=0)):
        from_sparse, from_dense = _fit_both(model, dense, y)
        assert _structure(from_sparse) == _structure(from_dense)
        assert any((t.feature == 5).any() for t in _trees(from_sparse))
    assert len(grown) == 4


def test_dense_path_above_the_density_threshold(monkeypatch):
    """More than SPARSE_GROWTH_MAX_DENSITY stored: the dense code matrix, as for dense X;
    absolute_error and Poisson bootstrap always take it."""
    grown = _counting_sparse_growth(monkeypatch)
    rng = np.random.default_rng(10)
    X = rng.normal(size=(120, 6))
    y = X[:, 0] + rng.normal(size=120)
    silva.RandomForestRegressor(n_estimators=2, random_state=0).fit(sp.csr_matrix(X), y)
    dense, score = _data(seed=11)
    silva.RandomForestRegressor(n_estimators=2, criterion="absolute_error",
                                max_depth=3).fit(sp.csr_matrix(dense), score)
    silva.RandomForestRegressor(n_estimators=2, bootstrap="poisson",
                                max_depth=3).fit(sp.csr_matrix(dense), score)
    assert grown == []
    assert cart.SPARSE_GROWTH_MAX_DENSITY == _boosting_loop.SPARSE_GROWTH_MAX_DENSITY


def test_binned_data_keeps_no_code_matrix():
    dense, _ = _data(seed=12)
    binned = cart.BinnedData.from_X(sp.csr_matrix(dense), np.zeros(dense.shape[1], bool), 255)
    assert binned.bin_codes is None and binned.codes_by_sample is None
    column_start, column_rows, column_codes, default_code = binned.sparse_entries
    assert column_start[-1] <= np.count_nonzero(dense)


def test_sparse_columns_positions():
    entries = (np.array([0, 2, 3]), np.array([1, 4, 2], dtype=np.int32),
               np.array([5, 6, 7], dtype=np.uint8), np.array([0, 0], dtype=np.uint8))
    columns = cart_sparse.sparse_columns(entries, cart_sparse.entries_by_row(entries, 6),
                                         np.array([4, 1, 3], dtype=np.int32), 6)
    np.testing.assert_array_equal(columns.sample_position, [-1, 1, -1, 2, 0, -1])
    assert columns.split_column.shape == (1, 6)
    # By row: row 1 has feature 0, row 2 feature 1, row 4 feature 0.
    np.testing.assert_array_equal(columns.row_start, [0, 0, 1, 2, 2, 3, 3])
    np.testing.assert_array_equal(columns.row_features, [0, 1, 0])


def test_dense_fit_compiles_no_sparse_grower():
    code = ("import numpy as np, silva\n"
            "from silva.engine.specialize import _COPIES\n"
            "X = np.random.default_rng(0).normal(size=(300, 40))\n"
            "y = X[:, 0] > 0\n"
            "silva.RandomForestClassifier(n_estimators=2).fit(X, y)\n"
            "silva.ExtraTreesRegressor(n_estimators=2).fit(X, X[:, 1])\n"
            "print(sum('sparse' in c.py_func.__name__ for c in _COPIES.values()))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split()[-1] == "0"


def test_forest_fit_never_builds_a_dense_code_matrix():
    """20,000 x 4,000 at 0.1%: the code matrix alone would be 80 MB (and CART keeps a
    transposed copy); a sparse forest fit allocates less than half of one (numpy's
    allocations, which tracemalloc sees: the binner's tables, the entries, per tree a
    few arrays of n_samples)."""
    import tracemalloc

    X = sp.random(20_000, 4_000, density=0.001, format="csr", random_state=0,
                  data_rvs=lambda k: np.random.default_rng(0).integers(1, 5, k))
    y = (np.asarray(X[:, :400].sum(axis=1)).ravel() > 0).astype(int)
    model = silva.ExtraTreesClassifier(n_estimators=2, max_depth=6, random_state=0)
    model.fit(X, y)  # compiled (and its caches loaded) before measuring
    tracemalloc.start()
    try:
        model.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000 * 4_000 / 2
    assert model.estimators_[0].tree_.node_count > 1


def test_monotonic_constraint_equals_dense_fit(monkeypatch):
    """The monotone copy of the sparse grower: the same constrained trees."""
    grown = _counting_sparse_growth(monkeypatch)
    dense, score = _data(seed=13)
    y = (score > 0.5).astype(int)
    constraints = np.zeros(dense.shape[1], dtype=int)
    constraints[[0, 3]] = 1
    constraints[1] = -1
    model = silva.RandomForestClassifier(n_estimators=3, monotonic_cst=constraints,
                                         random_state=0)
    from_sparse, from_dense = _fit_both(model, dense, y)
    assert len(grown) == 3
    assert _structure(from_sparse) == _structure(from_dense)
    np.testing.assert_array_equal(from_sparse.predict_proba(dense),
                                  from_dense.predict_proba(dense))
