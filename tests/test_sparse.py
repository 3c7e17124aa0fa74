"""Sparse X (scipy.sparse CSR/CSC/COO matrices and arrays), see silva/engine/sparse.py.

The contract: a sparse X means what ``X.toarray()`` means (an implicit zero is 0.0, a
stored NaN is missing), so every estimator fitted on it is the estimator fitted on the
dense array -- the same bin edges and codes, the same node tables, the same predictions
-- and X is never densified whole.
"""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.metrics import roc_auc_score

import silva
from silva.engine import sparse as sparse_module
from silva.engine.binning import Binner
from silva.export_json import dump_json


def _sparse_data(n=240, p=7, density=0.3, seed=0):
    """A sparse matrix with NaN, explicit zeros, a column of zeros only, a column with
    one distinct nonzero, and many distinct values elsewhere (so quantile bins)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)).round(2)
    X[rng.random((n, p)) > density] = 0.0
    X[rng.random((n, p)) < 0.03] = np.nan
    X[:, 2] = 0.0
    X[:, 3] = np.where(rng.random(n) < 0.1, 5.0, 0.0)
    S = sp.csr_matrix(X)
    # Explicit zeros and a stored -0.0 are zeros like the implicit ones.
    S.data[::11] = 0.0
    S.data[5::13] = -0.0
    dense = S.toarray()
    signal = np.nan_to_num(dense[:, 0]) + np.nan_to_num(dense[:, 1]) - dense[:, 3] / 5
    return S, dense, (signal > 0).astype(int), signal * 3 + rng.normal(size=n) * 0.1


# ---------------------------------------------------------------------------- binning
@pytest.mark.parametrize("max_bins", [3, 16, 255])
@pytest.mark.parametrize("subsample", [False, True])
def test_sparse_bins_equal_dense_bit_for_bit(max_bins, subsample):
    S, dense, _, _ = _sparse_data()
    edge_rows = np.sort(np.random.default_rng(1).choice(S.shape[0], 100, replace=False)) \
        if subsample else None
    is_categorical = np.zeros(S.shape[1], dtype=bool)
    from_dense = Binner(max_bins, is_categorical).fit(dense, edge_rows)
    for container in (sp.csr_matrix, sp.csc_array):
        from_sparse = Binner(max_bins, is_categorical).fit(container(S), edge_rows)
        for name in ("bin_thresholds_", "bin_lower_", "bin_upper_", "n_value_bins_"):
            assert getattr(from_sparse, name).tobytes() == getattr(from_dense, name).tobytes()
        assert from_sparse.missing_bin_ == from_dense.missing_bin_
        np.testing.assert_array_equal(from_sparse.transform(container(S)),
                                      from_dense.transform(dense))


def test_sparse_column_distinct_counts_implicit_zeros():
    """Hand-computed: stored [3, -1, 0 (explicit), NaN] with 4 implicit zeros is the
    sorted column -1, 0 x5, 3: distinct (-1, 0, 3) first at ranks (0, 1, 6)."""
    from silva.engine.binning import _sparse_column_distinct

    distinct, first_ranks, n_present = _sparse_column_distinct(
        np.array([3.0, -1.0, 0.0, np.nan]), 4)
    np.testing.assert_array_equal(distinct, [-1.0, 0.0, 3.0])
    np.testing.assert_array_equal(first_ranks, [0, 1, 6])
    assert n_present == 7
    distinct, first_ranks, n_present = _sparse_column_distinct(np.array([2.0]), 0)
    np.testing.assert_array_equal(distinct, [2.0])
    assert n_present == 1


def test_sparse_categorical_codes_equal_dense():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, size=(120, 3)).astype(float)
    X[rng.random((120, 3)) < 0.05] = np.nan
    S = sp.csc_matrix(X)
    mask = np.array([True, False, True])
    dense = Binner(255, mask).fit(X)
    sparse = Binner(255, mask).fit(S)
    np.testing.assert_array_equal(sparse.n_value_bins_, dense.n_value_bins_)
    np.testing.assert_array_equal(sparse.transform(S), dense.transform(X))


def test_binning_never_densifies_x():
    """20,000 x 2,000 at 0.1% non-zeros: dense float64 would be 320 MB; the fit and the
    codes (uint8, 40 MB) must stay far below it."""
    n, p = 20_000, 2_000
    S = sp.random(n, p, density=0.001, format="csr", random_state=0,
                  data_rvs=lambda k: np.random.default_rng(0).normal(size=k))
    tracemalloc.start()
    try:
        codes = Binner(255, np.zeros(p, dtype=bool)).fit_transform(S)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert codes.shape == (p, n) and codes.dtype == np.uint8
    assert peak < 2.5 * codes.nbytes  # the codes plus small per-column work arrays


# --------------------------------------------------------------------- every estimator
def _pair(model):
    return [("a", clone(model)), ("b", silva.DecisionTreeClassifier(max_depth=2,
                                                                    random_state=0))]


ESTIMATORS = {
    "tree_classifier": (silva.DecisionTreeClassifier(random_state=0), "c"),
    "tree_regressor": (silva.DecisionTreeRegressor(random_state=0), "r"),
    "random_tree": (silva.DecisionTreeClassifier(splitter="random", max_features=3,
                                                 random_state=0), "c"),
    "forest_classifier": (silva.RandomForestClassifier(n_estimators=4, oob_score=True,
                                                       random_state=0), "c"),
    "forest_regressor": (silva.RandomForestRegressor(n_estimators=4, random_state=0), "r"),
    "forest_without_bootstrap": (silva.RandomForestRegressor(n_estimators=3, bootstrap=False,
                                                             random_state=0), "r"),
    "extra_classifier": (silva.ExtraTreesClassifier(n_estimators=4, random_state=0), "c"),
    "extra_regressor": (silva.ExtraTreesRegressor(n_estimators=4, random_state=0), "r"),
    "bagging_classifier": (silva.BaggingClassifier(n_estimators=3, max_features=0.6,
                                                   oob_score=True, random_state=0), "c"),
    "bagging_regressor": (silva.BaggingRegressor(n_estimators=3, random_state=0), "r"),
    "adaboost_classifier": (silva.AdaBoostClassifier(n_estimators=3, random_state=0), "c"),
    "adaboost_regressor": (silva.AdaBoostRegressor(n_estimators=3, random_state=0), "r"),
    # min_split_gain: see ROUNDED below.
    "boosting_classifier": (silva.GradientBoostingClassifier(n_estimators=4,
                                                             min_split_gain=1e-9), "c"),
    "boosting_regressor": (silva.GradientBoostingRegressor(n_estimators=4,
                                                           min_split_gain=1e-9), "r"),
    "id3": (silva.ID3Classifier(n_bins=4), "c"),
    "voting": (silva.VotingClassifier(_pair(silva.GradientBoostingClassifier(
        n_estimators=2, min_split_gain=1e-9)), voting="soft"), "c"),
    "stacking": (silva.StackingRegressor(
        [("a", silva.DecisionTreeRegressor(max_depth=3, random_state=0)),
         ("b", silva.RandomForestRegressor(n_estimators=2, random_state=0))],
        final_estimator=silva.DecisionTreeRegressor(max_depth=3, random_state=0),
        passthrough=True, cv=3), "r"),
}
METHODS = ("predict", "predict_proba", "decision_function", "apply", "decision_path",
           "staged_predict", "staged_predict_proba", "staged_decision_function",
           "transform")


def _outputs(model, X):
    out = {}
    for method in METHODS:
        if not hasattr(model, method):
            continue
        result = getattr(model, method)(X)
        if method.startswith("staged"):
            result = list(result)
        if isinstance(result, tuple):  # a forest's decision_path: (indicator, offsets)
            result = result[0]
        if sp.issparse(result):
            result = result.toarray()
        out[method] = np.asarray(result)
    return out


# Gradient boosting grows a sparse X with at most a quarter of its values stored on its
# entries (engine/gradient_sparse.py; _sparse_data stores 24-25%, on either side of that
# line with the seed; tests/test_gradient_sparse.py tests that path on its own): the
# same trees, with leaf values and predictions equal up to floating-point rounding (a
# feature's default bin is the node's totals minus its other bins). A split of a pure
# node gains 0 in exact arithmetic and a few 1e-15 either way after rounding, so the
# boosting models compared here take min_split_gain=1e-9: no split gains only rounding.
ROUNDED = {"boosting_classifier", "boosting_regressor", "voting"}


def assert_same_up_to_rounding(got, expected, err_msg=""):
    """Equal arrays, or, for floats, equal within a few units of rounding."""
    if np.asarray(expected).dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12, err_msg=err_msg)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=err_msg)


def boosting_structure(model):
    """Each tree's split features, thresholds and missing-value sides: what a sparse
    fit must share with the dense fit exactly."""
    return [(t.feature.tobytes(), t.threshold.tobytes(), t.missing_go_to_left.tobytes())
            for trees in model.estimators_ for t in trees]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_sparse_fit_equals_dense_fit(name):
    model, kind = ESTIMATORS[name]
    S, dense, y_class, y_value = _sparse_data()
    y = y_class if kind == "c" else y_value
    from_dense = clone(model).fit(dense, y)
    from_sparse = clone(model).fit(sp.csc_matrix(S), y)
    expected = _outputs(from_dense, dense)
    assert expected
    compare = assert_same_up_to_rounding if name in ROUNDED else np.testing.assert_array_equal
    for X in (S, sp.csr_array(S), sp.coo_matrix(S)):
        np.testing.assert_equal(_outputs(from_dense, X), expected)
        got = _outputs(from_sparse, X)
        assert got.keys() == expected.keys()
        for method in expected:
            compare(got[method], expected[method], err_msg=f"{name}.{method}")
    if name in ROUNDED:
        if hasattr(from_dense, "estimators_") and name != "voting":
            assert boosting_structure(from_sparse) == boosting_structure(from_dense)
        return
    try:
        tables = dump_json(from_dense)
    except (TypeError, ValueError, NotImplementedError, AttributeError):
        tables = None  # voting, stacking, bagging, ID3: compared by their outputs
    if tables is not None:
        assert dump_json(from_sparse) == tables
    if hasattr(from_dense, "oob_score_"):
        assert from_sparse.oob_score_ == from_dense.oob_score_


def test_tree_node_tables_equal():
    S, dense, _, y = _sparse_data(seed=4)
    a = silva.DecisionTreeRegressor(max_leaf_nodes=12, random_state=0).fit(dense, y).tree_
    b = silva.DecisionTreeRegressor(max_leaf_nodes=12, random_state=0).fit(S, y).tree_
    for name in ("children_left", "children_right", "feature", "threshold",
                 "missing_go_to_left", "value", "n_node_samples", "impurity"):
        assert getattr(a, name).tobytes() == getattr(b, name).tobytes(), name


def test_ranker_takes_sparse_x():
    S, dense, y, _ = _sparse_data()
    group = [40] * 6
    # One tree: LambdaMART's gradients jump where two documents' scores tie, and leaves
    # whose values are equal in exact arithmetic are equal in one fit and a rounding
    # apart in the other, so later trees may differ (see ROUNDED).
    model = silva.GradientBoostingRanker(n_estimators=1, min_samples_leaf=2,
                                         min_split_gain=1e-9)
    a = clone(model).fit(dense, y, group=group)
    b = clone(model).fit(S, y, group=group)
    assert_same_up_to_rounding(b.predict(S), a.predict(dense))
    assert boosting_structure(b) == boosting_structure(a)


def test_prediction_in_many_blocks(monkeypatch):
    """Dense blocks of 64 rows (for the methods that still read them; predictions,
    leaves and the out-of-bag score walk the CSR rows, tests/test_sparse_predict.py):
    the results equal the dense ones."""
    monkeypatch.setattr(sparse_module, "BLOCK_VALUES", 1)
    S, dense, y, _ = _sparse_data(n=2_300, p=5, seed=2)
    dense_model = silva.RandomForestClassifier(n_estimators=3, oob_score=True,
                                               random_state=0).fit(dense, y)
    sparse_model = silva.RandomForestClassifier(n_estimators=3, oob_score=True,
                                                random_state=0).fit(S, y)
    assert sparse_model.oob_score_ == dense_model.oob_score_
    np.testing.assert_array_equal(sparse_model.oob_decision_function_,
                                  dense_model.oob_decision_function_)
    np.testing.assert_array_equal(dense_model.predict_proba(S),
                                  dense_model.predict_proba(dense))
    np.testing.assert_array_equal(dense_model.apply(S), dense_model.apply(dense))
    assert sparse_module.block_rows(5) == sparse_module.MIN_BLOCK_ROWS


@pytest.mark.parametrize("block_values", [None, 50])
@pytest.mark.parametrize("params", [{}, {"subtree_raising": False},
                                    {"confidence": 1.0, "min_samples_leaf": 1}])
def test_c45_sparse_fit_equals_dense_fit(monkeypatch, block_values, params):
    # C4.5 reads a node's cases of a sparse X in dense blocks (silva.classic's
    # _TrainingCases); 50 values a block splits every node's features into many blocks.
    import silva.classic

    searched_shapes = []
    if block_values is not None:
        monkeypatch.setattr(silva.classic, "BLOCK_VALUES", block_values)
        evaluate = silva.classic.mw.c45_evaluate

        def recording(X, *args):
            searched_shapes.append(X.shape)
            return evaluate(X, *args)

        monkeypatch.setattr(silva.classic.mw, "c45_evaluate", recording)
    S, dense, y, _ = _sparse_data()
    weight = np.random.default_rng(1).uniform(0.5, 2.0, size=y.size)
    for fmt in ("csr", "csc"):
        sparse_model = silva.C45Classifier(**params).fit(S.asformat(fmt), y, weight)
        dense_model = silva.C45Classifier(**params).fit(dense, y, weight)
        mine, theirs = sparse_model.tree_, dense_model.tree_
        assert mine.node_count == theirs.node_count > 3
        for field in ("feature", "threshold", "kind", "value", "n_node_samples",
                      "branch_fraction"):
            np.testing.assert_array_equal(getattr(mine, field), getattr(theirs, field))
        np.testing.assert_array_equal(sparse_model.predict_proba(S),
                                      dense_model.predict_proba(dense))
    if block_values is not None:
        # The sparse fits searched blocks of at most 50 values (one column when a node
        # has more cases); only the dense fits saw the whole matrix.
        assert sum(shape[1] == 1 for shape in searched_shapes) > 2 * S.shape[1]
        assert all(shape == dense.shape or shape[0] * shape[1] <= max(50, shape[0])
                   for shape in searched_shapes)


def test_c45_sparse_fit_with_a_categorical_column_equals_dense_fit():
    S, dense, y, _ = _sparse_data()
    dense[:, 4] = np.random.default_rng(2).integers(0, 4, size=y.size)
    dense[::7, 4] = np.nan
    S = sp.csc_matrix(dense)
    sparse_model = silva.C45Classifier(categorical_features=[4]).fit(S, y)
    dense_model = silva.C45Classifier(categorical_features=[4]).fit(dense, y)
    np.testing.assert_array_equal(sparse_model.tree_.feature, dense_model.tree_.feature)
    np.testing.assert_array_equal(sparse_model.predict_proba(S),
                                  dense_model.predict_proba(dense))


# -------------------------------------------------------------------------- bad input
def test_sparse_infinity_is_refused():
    S, _, y, _ = _sparse_data()
    S = S.copy()
    S.data[3] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        silva.DecisionTreeClassifier().fit(S, y)


def test_malformed_sparse_indices_are_refused():
    S, _, y, _ = _sparse_data()
    bad = S.copy()
    indices = S.indices.astype(np.int64)
    indices[0] = 2**40  # far beyond the 7 columns (an index that overflowed)
    bad.indices, bad.indptr = indices, S.indptr.astype(np.int64)
    with pytest.raises(ValueError, match="DecisionTreeClassifier: sparse X is malformed"):
        silva.DecisionTreeClassifier().fit(bad, y)


def test_unsupported_sparse_inputs_are_refused():
    S, _, y, _ = _sparse_data()
    with pytest.raises(TypeError, match="two-dimensional scipy.sparse"):
        silva.RandomForestClassifier().fit(sp.coo_array(np.ones((2, 3, 4))), y)
    with pytest.raises(TypeError, match="numeric sparse X"):
        silva.GradientBoostingClassifier().fit(S.astype(np.complex128), y)
    with pytest.raises(TypeError, match="sparse multilabel-indicator for y"):
        silva.DecisionTreeClassifier().fit(S, sp.csr_matrix(y[:, None]))


def test_sparse_predict_checks_shape():
    S, _, y, _ = _sparse_data()
    model = silva.GradientBoostingClassifier(n_estimators=2).fit(S, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(S[:, :4])


def test_other_sparse_formats_are_converted():
    S, dense, y, _ = _sparse_data()
    expected = silva.DecisionTreeClassifier(random_state=0).fit(dense, y).predict(dense)
    for X in (S.tolil(), S.todok(), sp.bsr_matrix(S)):
        got = silva.DecisionTreeClassifier(random_state=0).fit(X, y).predict(X)
        np.testing.assert_array_equal(got, expected)


def test_shap_values_and_early_stopping_from_sparse_x():
    S, dense, y, _ = _sparse_data(seed=5)
    model = silva.GradientBoostingClassifier(n_estimators=30, early_stopping_rounds=2,
                                             validation_fraction=0.2, random_state=0,
                                             min_split_gain=1e-9)  # see ROUNDED
    from_sparse = clone(model).fit(S, y)
    from_dense = clone(model).fit(dense, y)
    # Two candidate splits here part the fitted rows alike (features 0 and 6), a tie
    # that rounding decides (see ROUNDED); they part the validation rows differently,
    # by a few of the 1e-4 learned at that depth.
    assert from_sparse.best_iteration_ == from_dense.best_iteration_
    got, expected = from_sparse.predict_proba(S)[:, 1], from_dense.predict_proba(dense)[:, 1]
    np.testing.assert_allclose(got, expected, atol=1e-4)
    assert roc_auc_score(y, got) == roc_auc_score(y, expected)
    for options in ({"pred_contrib": True}, {"pred_interactions": True}):
        np.testing.assert_array_equal(from_dense.predict(S, **options),
                                      from_dense.predict(dense, **options))
    target = np.nan_to_num(dense[:, 0])
    forest = silva.RandomForestRegressor(n_estimators=3, random_state=0).fit(S, target)
    np.testing.assert_array_equal(forest.predict_quantiles(S, [0.1, 0.9]),
                                  forest.predict_quantiles(dense, [0.1, 0.9]))


@pytest.mark.parametrize("model", [silva.C45Classifier(), silva.ID3Classifier(),
                                   silva.DecisionTreeClassifier(max_depth=3)],
                         ids=lambda m: type(m).__name__)
def test_split_report_from_sparse_x_equals_dense(model):
    # The report reads the node's rows one feature (C4.5: one block) at a time.
    import pandas as pd

    S, dense, y, _ = _sparse_data()
    model = model.fit(S, y)
    for node in (0, 1):
        pd.testing.assert_frame_equal(model.split_report(S, y, node=node),
                                      model.split_report(dense, y, node=node))
