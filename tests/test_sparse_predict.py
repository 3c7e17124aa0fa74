"""Predicting from a sparse X by walking its CSR rows (silva/engine/sparse.py; the
walks in engine/ensemble.py, "Scattered rows", and engine/tree.py).

The contract: every predict method gives, bit for bit, what it gives on ``X.toarray()``
(an unstored entry is 0.0, a stored NaN missing, duplicates summed), whichever walk
reads the rows: scattered into a dense scratch, or searched (each split's feature found
by binary search among the row's columns, for very wide rows: forced here through
``MAX_SCATTER_COLUMNS``).
"""

import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from test_sparse import ESTIMATORS, METHODS, _sparse_data

import silva
from silva.engine import ensemble
from silva.engine import sparse as sparse_module
from silva.engine import tree as tree_module


@pytest.fixture(params=["scattered", "searched"])
def row_walk(request, monkeypatch):
    """Each test once with the rows scattered (the default) and once searched."""
    if request.param == "searched":
        monkeypatch.setattr(sparse_module, "MAX_SCATTER_COLUMNS", 0)
    return request.param


def _refuse_dense_blocks(*args, **kwargs):
    raise AssertionError("a sparse X was densified in blocks")


def _leaves(fitted, X):
    """Each row's leaf in each tree (boosting has no public ``apply``)."""
    if hasattr(fitted, "apply"):
        return fitted.apply(X)
    return fitted._packed.apply(X)


# ----------------------------------------------------------------- the lookup itself
def test_stored_value_against_a_dense_row():
    """Every column of rows of 0 to 9 stored entries (sorted, distinct), NaN among them,
    and every column past them, read as the dense row reads it."""
    rng = np.random.default_rng(0)
    for n_stored in range(10):
        columns = np.sort(rng.choice(40, n_stored, replace=False)).astype(np.int32)
        values = rng.normal(size=n_stored)
        values[::3] = np.nan
        # The row sits between two others, so that a search reading past its ends
        # would find their entries.
        indices = np.concatenate([[0, 39], columns, [0, 39]]).astype(np.int32)
        data = np.concatenate([[7.0, 7.0], values, [7.0, 7.0]])
        dense = np.zeros(41)
        dense[columns] = values
        for feature in range(41):
            got = sparse_module.stored_value(indices, data, 2, 2 + n_stored, feature)
            np.testing.assert_equal(got, dense[feature])


def test_csr_rows_canonicalises_and_never_gives_empty_arrays():
    # Row 0 stores column 3 twice (summed: 5.0) and its columns out of order.
    X = sp.csr_matrix((np.array([2.0, 1.0, 3.0, 4.0]), np.array([3, 1, 3, 0]),
                       np.array([0, 3, 4, 4])), shape=(3, 5))
    rows = sparse_module.csr_rows(X)
    np.testing.assert_array_equal(rows.indptr, [0, 2, 3, 3])
    np.testing.assert_array_equal(rows.indices, [1, 3, 0])
    np.testing.assert_array_equal(rows.data, [1.0, 5.0, 4.0])
    assert X.indices.tolist() == [3, 1, 3, 0]  # the caller's matrix is left alone
    assert (rows.indptr.dtype, rows.indices.dtype, rows.data.dtype) == (
        np.int64, np.int32, np.float64)
    empty = sparse_module.csr_rows(sp.csc_matrix((4, 6)))
    assert empty.n_rows == 4 and empty.indices.shape == (1,)
    np.testing.assert_array_equal(empty.indptr, np.zeros(5))


# ------------------------------------------------------------------- every estimator
# Estimators whose every predict method walks rows.
WALKING = ("tree_", "random_tree", "forest_", "extra_", "boosting_")


def _outputs_of(model, X, methods):
    """Each of ``methods`` of ``model`` on X, as arrays (see test_sparse._outputs)."""
    out = {}
    for method in methods:
        result = getattr(model, method)(X)
        if method.startswith("staged"):
            result = list(result)
        if isinstance(result, tuple):  # a forest's decision_path: (indicator, offsets)
            result = result[0]
        if sp.issparse(result):
            result = result.toarray()
        out[method] = np.asarray(result)
    return out


@pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores")
@pytest.mark.parametrize("name", ESTIMATORS)
def test_row_walk_equals_dense_predict(name, row_walk, monkeypatch):
    """Every predict method of a model fitted on dense X gives on its sparse forms
    (CSR, CSC, COO, a sparse array) exactly what it gives on the dense X (NaN stored,
    explicit zeros and -0.0 among the entries); the estimators whose kernels walk rows
    never densify a block."""
    model, kind = ESTIMATORS[name]
    S, dense, y_class, y_value = _sparse_data()
    fitted = clone(model).fit(dense, y_class if kind == "c" else y_value)
    methods = [method for method in METHODS if hasattr(fitted, method)]
    if name.startswith(WALKING):
        monkeypatch.setattr(sparse_module, "dense_row_blocks", _refuse_dense_blocks)
    expected = _outputs_of(fitted, dense, methods)
    assert expected
    for X in (S, sp.csc_matrix(S), sp.coo_matrix(S), sp.csr_array(S)):
        got = _outputs_of(fitted, X, methods)
        for method in methods:
            np.testing.assert_array_equal(got[method], expected[method],
                                          err_msg=f"{name}.{method}")


def test_unsorted_indices_and_duplicates(row_walk):
    """A CSR whose rows list columns out of order and repeat some (summed, as
    ``toarray`` sums them), given to the engine directly and to the estimators."""
    rng = np.random.default_rng(5)
    S, dense, y, _ = _sparse_data(n=300, seed=5)
    coo = S.tocoo()
    # Every stored value split in two entries, shuffled within its row.
    rows = np.concatenate([coo.row, coo.row])
    cols = np.concatenate([coo.col, coo.col])
    half = coo.data / 2
    values = np.concatenate([half, np.where(np.isnan(coo.data), 0.0, coo.data - half)])
    order = np.lexsort((rng.random(rows.shape[0]), rows))
    indptr = np.searchsorted(rows[order], np.arange(S.shape[0] + 1))
    messy = sp.csr_matrix((values[order], cols[order], indptr), shape=S.shape)
    assert not messy.has_canonical_format
    messy_dense = messy.toarray()
    for model in (silva.GradientBoostingClassifier(n_estimators=5),
                  silva.RandomForestClassifier(n_estimators=3, random_state=0),
                  silva.DecisionTreeClassifier(random_state=0)):
        fitted = model.fit(dense, y)
        np.testing.assert_array_equal(fitted.predict_proba(messy),
                                      fitted.predict_proba(messy_dense))
        np.testing.assert_array_equal(_leaves(fitted, messy), _leaves(fitted, messy_dense))
    packed = silva.GradientBoostingRegressor(n_estimators=5).fit(dense, y)._packed
    np.testing.assert_array_equal(packed.predict(messy), packed.predict(messy_dense))


def test_categorical_splits_and_odd_codes(row_walk):
    """Categorical features (the bitset walk, not the branch-free one): stored codes,
    implicit zeros (code 0), NaN, and codes the dense walk sends with the missing values
    (negative, fractional, beyond the bitset)."""
    rng = np.random.default_rng(2)
    n = 600
    X = np.column_stack([rng.integers(0, 6, n), rng.integers(0, 70, n),
                         rng.normal(size=n).round(1)]).astype(float)
    X[rng.random((n, 3)) < 0.3] = 0.0
    X[rng.random((n, 3)) < 0.05] = np.nan
    y = ((X[:, 0] % 2 == 1) ^ (np.nan_to_num(X[:, 1]) > 30)).astype(int)
    test = X.copy()
    test[:40, 0] = [-1.0, 2.5, 100.0, 1e9] * 10
    test[40:80, 1] = [-3.0, 64.0, 70.5, 1e6] * 10
    S = sp.csr_matrix(test)
    for model in (silva.GradientBoostingClassifier(n_estimators=5,
                                                   categorical_features=[0, 1]),
                  silva.DecisionTreeClassifier(categorical_features=[0, 1], random_state=0),
                  silva.RandomForestClassifier(n_estimators=3, categorical_features=[0, 1],
                                               random_state=0)):
        fitted = model.fit(X, y)
        np.testing.assert_array_equal(fitted.predict_proba(S), fitted.predict_proba(test))
        np.testing.assert_array_equal(_leaves(fitted, S), _leaves(fitted, test))


def test_many_rows_empty_rows_and_nothing_stored(row_walk):
    """More rows than one parallel block of either walk (Tree: 4,096), rows storing
    nothing, a matrix storing nothing at all, and a single row."""
    S, dense, _, y = _sparse_data(n=9_000, p=6, density=0.2, seed=7)
    dense[100:200] = 0.0
    dense[-50:] = 0.0
    S = sp.csr_matrix(dense)
    for model in (silva.DecisionTreeRegressor(max_depth=8, random_state=0),
                  silva.GradientBoostingRegressor(n_estimators=3),
                  silva.ExtraTreesRegressor(n_estimators=2, random_state=0)):
        fitted = model.fit(dense[:2000], y[:2000])
        np.testing.assert_array_equal(fitted.predict(S), fitted.predict(dense))
        np.testing.assert_array_equal(_leaves(fitted, S), _leaves(fitted, dense))
        nothing = sp.csr_matrix(S.shape)
        np.testing.assert_array_equal(fitted.predict(nothing),
                                      fitted.predict(np.zeros(S.shape)))
        np.testing.assert_array_equal(fitted.predict(S[:1]), fitted.predict(dense[:1]))


def test_multi_output_tree_and_forest(row_walk):
    S, dense, y, value = _sparse_data(seed=3)
    Y = np.column_stack([y, (value > 1).astype(int)])
    for model in (silva.DecisionTreeClassifier(random_state=0),
                  silva.RandomForestClassifier(n_estimators=3, random_state=0)):
        fitted = model.fit(dense, Y)
        for got, expected in zip(fitted.predict_proba(S), fitted.predict_proba(dense),
                                 strict=True):
            np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(fitted.predict(S), fitted.predict(dense))


# --------------------------------------------------------------------- no densifying
def test_wide_sparse_predict_allocates_no_dense_block():
    """20,000 columns at 0.06% stored: predicting 5,000 rows allocates far less than one
    dense block (2**21 values, 16 MiB): the scratch of each parallel block is 2 MiB."""
    rng = np.random.default_rng(0)
    signal = sp.random(5_000, 20, density=0.1, format="csr", random_state=1,
                       data_rvs=lambda k: rng.normal(size=k))
    noise = sp.random(5_000, 19_980, density=0.0005, format="csr", random_state=0,
                      data_rvs=lambda k: rng.normal(size=k))
    X = sp.hstack([signal, noise], format="csr")
    y = np.asarray(signal.sum(axis=1)).ravel() > 0
    model = silva.GradientBoostingClassifier(n_estimators=3).fit(X[:1000], y[:1000])
    forest = silva.RandomForestClassifier(n_estimators=2, max_depth=6,
                                          random_state=0).fit(X[:1000], y[:1000])
    for fitted in (model, forest, forest.estimators_[0]):
        fitted.predict_proba(X[:10])  # compiled beforehand
        tracemalloc.start()
        try:
            fitted.predict_proba(X)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 6 * 2**20, type(fitted).__name__


def test_dense_fit_and_predict_compile_no_row_walk():
    """The row walks are kernels of their own: a dense fit and predict never compile
    them (numba compiles a function on its first call)."""
    code = (
        "import numpy as np, silva\n"
        "from silva.engine import ensemble as e, tree as t\n"
        "X = np.random.default_rng(0).normal(size=(300, 4))\n"
        "for m in (silva.GradientBoostingClassifier(n_estimators=2),\n"
        "          silva.RandomForestClassifier(n_estimators=2),\n"
        "          silva.DecisionTreeClassifier()):\n"
        "    m.fit(X, X[:, 0] > 0).predict_proba(X)\n"
        "    if hasattr(m, 'decision_path'):\n"
        "        m.decision_path(X)\n"
        "    (m.apply if hasattr(m, 'apply') else m._packed.apply)(X)\n"
        "print(*(len(f.signatures) for f in (\n"
        "    e._predict_packed_rows, e._apply_packed_rows, e._predict_packed_scattered,\n"
        "    e._apply_packed_scattered, e._out_of_bag_scattered, t.apply_tree_rows,\n"
        "    t.apply_tree_scattered, t._decision_paths_scattered)))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["0"] * 8


def test_row_walk_kernels_are_the_ones_taken(row_walk):
    """Each walk really reaches its kernels (so the equalities above test them): each
    has compiled after a sparse predict."""
    S, dense, y, _ = _sparse_data(n=5_000, p=5)
    silva.GradientBoostingClassifier(n_estimators=2).fit(dense, y).predict_proba(S)
    forest = silva.RandomForestClassifier(n_estimators=2, random_state=0).fit(dense, y)
    forest.apply(S)
    forest.estimators_[0].apply(S)
    forest.estimators_[0].apply(S[:10])
    kernels = {"scattered": (ensemble._predict_packed_scattered,
                             ensemble._apply_packed_scattered,
                             tree_module.apply_tree_scattered, tree_module.apply_tree_rows),
               "searched": (ensemble._predict_packed_rows, ensemble._apply_packed_rows,
                            tree_module.apply_tree_rows)}
    for kernel in kernels[row_walk]:
        assert kernel.signatures, kernel.py_func.__name__


@pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores")
def test_out_of_bag_from_sparse_rows(monkeypatch):
    """A forest fitted on sparse X scores its out-of-bag rows scattered: the OOB
    predictions and score are the dense fit's exactly (more rows than one OOB block of
    1,024, and, with a scratch of 100 rows, blocks walked in several parts)."""
    monkeypatch.setattr(ensemble, "SCATTER_VALUES", 500)
    S, dense, y_class, y_value = _sparse_data(n=2_300, p=5, seed=2)
    for model, y, attribute in (
            (silva.RandomForestClassifier(n_estimators=4, oob_score=True, random_state=0),
             y_class, "oob_decision_function_"),
            (silva.ExtraTreesRegressor(n_estimators=4, bootstrap=True, oob_score=True,
                                       random_state=0), y_value, "oob_prediction_")):
        from_dense = clone(model).fit(dense, y)
        from_sparse = clone(model).fit(S, y)
        assert from_sparse.oob_score_ == from_dense.oob_score_
        np.testing.assert_array_equal(getattr(from_sparse, attribute),
                                      getattr(from_dense, attribute))
    assert ensemble._out_of_bag_scattered.signatures
