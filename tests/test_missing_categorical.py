"""Missing values (NaN) and categorical features, end to end."""

import numpy as np
import pandas as pd
import pytest
from _compare import closest_sklearn_tree, rows_through
from sklearn import tree as sktree
from sklearn.datasets import load_breast_cancer, make_classification, make_regression

from silva import DecisionTreeClassifier, DecisionTreeRegressor

# ------------------------------------------------------------------ missing values


def _missing_child(tree, node):
    return tree.children_left[node] if tree.missing_go_to_left[node] else \
        tree.children_right[node]


@pytest.mark.parametrize("categorical", [False, True])
def test_informative_missingness_is_used(categorical):
    # y = 1 makes feature 1 missing 90% of the time, y = 0 only 5%; feature 0 is noise.
    rng = np.random.RandomState(0)
    n = 400
    y = rng.randint(0, 2, size=n)
    X = np.c_[rng.rand(n), rng.randint(0, 5, size=n).astype(float)]
    missing = np.where(y == 1, rng.rand(n) < 0.9, rng.rand(n) < 0.05)
    X[missing, 1] = np.nan
    model = DecisionTreeClassifier(max_depth=1, categorical_features=[1] if categorical
                                   else None).fit(X, y)
    tree = model.tree_
    assert tree.feature[0] == 1
    nan_child = _missing_child(tree, 0)
    other_child = tree.children_left[0] + tree.children_right[0] - nan_child
    # the NaN side holds the missing rows: mostly class 1
    assert tree.value[nan_child, 0, 1] > 0.85
    assert tree.value[other_child, 0, 0] > 0.85
    assert tree.n_node_samples[nan_child] == missing.sum()
    np.testing.assert_array_equal(model.predict([[0.3, np.nan], [0.7, np.nan]]), [1, 1])
    np.testing.assert_array_equal(model.predict([[0.3, 2.0]]), [0])


def test_predictions_are_never_nan():
    X, y = make_regression(n_samples=300, n_features=5, random_state=0)
    rng = np.random.RandomState(1)
    X[rng.rand(*X.shape) < 0.2] = np.nan
    regressor = DecisionTreeRegressor().fit(X, y)
    classifier = DecisionTreeClassifier().fit(X, y > 0)
    probes = [np.full((3, 5), np.nan), np.where(rng.rand(50, 5) < 0.5, np.nan, X[:50]),
              np.full((2, 5), 1e300), np.full((2, 5), -1e300)]
    for probe in probes:
        assert np.all(np.isfinite(regressor.predict(probe)))
        proba = classifier.predict_proba(probe)
        assert np.all(np.isfinite(proba))
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_nan_only_at_predict_goes_to_the_larger_child():
    X, y = load_breast_cancer(return_X_y=True)
    model = DecisionTreeClassifier(max_bins=1000, min_samples_leaf=3).fit(X, y)
    tree = model.tree_
    internal = np.flatnonzero(tree.children_left != -1)
    for node in internal:
        nan_child = _missing_child(tree, node)
        other = tree.children_left[node] + tree.children_right[node] - nan_child
        assert tree.n_node_samples[nan_child] >= tree.n_node_samples[other], node
    # An all-NaN row therefore follows the larger child at every node.
    node = 0
    while tree.children_left[node] != -1:
        left, right = tree.children_left[node], tree.children_right[node]
        if tree.n_node_samples[left] != tree.n_node_samples[right]:
            node = left if tree.n_node_samples[left] > tree.n_node_samples[right] else right
        else:
            node = _missing_child(tree, node)
    assert model.apply(np.full((1, X.shape[1]), np.nan))[0] == node


def test_nan_at_predict_goes_where_sklearn_sends_it():
    """Fitted without NaN, both libraries send NaN to the child with more samples."""
    X, y = load_breast_cancer(return_X_y=True)
    X = X.astype(np.float32).astype(np.float64)
    model = DecisionTreeClassifier(max_bins=1000).fit(X, y)
    sklearn_model, comparison = closest_sklearn_tree(
        model, lambda seed: sktree.DecisionTreeClassifier(random_state=seed), X, y)
    assert comparison.mismatches == []
    assert comparison.n_same + len(comparison.threshold_diffs) >= 5  # pairs compared
    assert comparison.missing_direction_diffs == []


@pytest.fixture(scope="module")
def data_with_nans():
    X, y = make_classification(n_samples=600, n_features=6, n_informative=4, random_state=0)
    X = X.astype(np.float32).astype(np.float64)
    X[np.random.RandomState(0).rand(*X.shape) < 0.15] = np.nan
    return X[:400], y[:400], X[400:], y[400:]


@pytest.mark.parametrize("params", [{}, {"max_depth": 3}, {"min_samples_leaf": 5}], ids=str)
def test_nan_at_fit_agrees_with_sklearn(data_with_nans, params):
    X_train, y_train, X_test, _ = data_with_nans
    model = DecisionTreeClassifier(max_bins=1000, **params).fit(X_train, y_train)
    sklearn_model, comparison = closest_sklearn_tree(
        model, lambda seed: sktree.DecisionTreeClassifier(random_state=seed, **params),
        X_train, y_train)
    # Same splits and same learned missing-value directions, ties aside.
    assert comparison.mismatches == []
    assert comparison.leaf_value_diffs == []
    assert comparison.missing_direction_diffs == []
    training_agree = model.predict(X_train) == sklearn_model.predict(X_train)
    silva_gain_ties, sklearn_gain_ties = comparison.unreliable_nodes(include_feature_ties=False)
    below_ties = (rows_through(model.decision_path(X_train), silva_gain_ties)
                  | rows_through(sklearn_model.decision_path(X_train), sklearn_gain_ties))
    assert training_agree[~below_ties].all()
    if not params:
        np.testing.assert_array_equal(model.predict(X_train), y_train)
    silva_nodes, sklearn_nodes = comparison.unreliable_nodes(include_feature_ties=True)
    excluded = (rows_through(model.decision_path(X_test), silva_nodes)
                | rows_through(sklearn_model.decision_path(X_test), sklearn_nodes))
    assert excluded.mean() < 0.5
    agree = model.predict(X_test) == sklearn_model.predict(X_test)
    assert agree[~excluded].mean() >= 0.99, (
        f"{len(comparison.threshold_diffs)} splits differ from scikit-learn's in threshold "
        "only (see test_vs_sklearn::test_thresholds_are_midpoints_between_the_node_values)")


def test_nan_regression_agrees_with_sklearn_on_training_rows():
    X, y = make_regression(n_samples=300, n_features=4, noise=1.0, random_state=2)
    X = X.astype(np.float32).astype(np.float64)
    X[np.random.RandomState(3).rand(*X.shape) < 0.2] = np.nan
    model = DecisionTreeRegressor(max_bins=1000, min_samples_leaf=4).fit(X, y)
    sklearn_model, comparison = closest_sklearn_tree(
        model, lambda seed: sktree.DecisionTreeRegressor(random_state=seed,
                                                         min_samples_leaf=4), X, y)
    assert comparison.mismatches == []
    assert comparison.leaf_value_diffs == []
    assert comparison.missing_direction_diffs == []
    silva_nodes, sklearn_nodes = comparison.unreliable_nodes(include_feature_ties=False)
    excluded = (rows_through(model.decision_path(X), silva_nodes)
                | rows_through(sklearn_model.decision_path(X), sklearn_nodes))
    np.testing.assert_allclose(model.predict(X)[~excluded], sklearn_model.predict(X)[~excluded])


# --------------------------------------------------------------- categorical codes


@pytest.mark.parametrize("larger_group", ["{1,3,4}", "{0,2,5}"])
def test_categorical_codes_one_split_separates_the_classes(larger_group):
    rng = np.random.RandomState(0)
    n = 300
    # Categories {1, 3, 4} are class 1 and {0, 2, 5} class 0; which group is larger
    # decides where missing (and unseen) codes go.
    p = [0.1, 0.1, 0.1, 0.3, 0.2, 0.2] if larger_group == "{1,3,4}" else \
        [0.3, 0.1, 0.2, 0.1, 0.1, 0.2]
    codes = rng.choice(6, size=n, p=p)
    y = np.isin(codes, [1, 3, 4]).astype(int)
    X = np.c_[rng.rand(n), codes]
    model = DecisionTreeClassifier(categorical_features=[1]).fit(X, y)
    tree = model.tree_
    assert tree.node_count == 3  # one split, two pure leaves
    assert tree.feature[0] == 1
    assert tree.is_categorical[0]
    assert tree.threshold[0] == -2  # thresholds are undefined at categorical splits
    # categories_left: "category codes that a categorical split sends left (codes the
    # node saw)"; codes 6..63 were never seen.
    assert set(tree.categories_left(0).tolist()) in ({0, 2, 5}, {1, 3, 4})
    assert model.score(X, y) == 1.0
    assert model.is_categorical_.tolist() == [False, True]
    # a numeric treatment of the same codes needs several thresholds
    numeric = DecisionTreeClassifier().fit(X[:, 1:], y)
    assert numeric.get_n_leaves() > 2


def _categorical_nodes(tree):
    return np.flatnonzero(tree.is_categorical & (tree.children_left != -1))


def test_codes_not_seen_by_a_node_follow_its_missing_direction():
    rng = np.random.RandomState(0)
    n = 500
    codes = rng.choice([0, 1, 2, 4, 5, 7], size=n)  # 3 and 6 never occur
    other = rng.rand(n)
    y = (np.isin(codes, [1, 4, 7]) ^ (other > 0.7)).astype(int)
    X = np.c_[codes, other]
    model = DecisionTreeClassifier(categorical_features=[0], max_depth=4).fit(X, y)
    tree = model.tree_
    nodes = _categorical_nodes(tree)
    assert nodes.size >= 1
    path = model.decision_path(X).toarray().astype(bool)
    for node in nodes:
        seen = set(np.unique(codes[path[:, node]]).tolist())
        left = set(tree.categories_left(node).tolist())
        assert left <= set(range(8))  # codes seen at fit: 0..7
        for code in set(range(8)) - seen:
            assert (code in left) == bool(tree.missing_go_to_left[node]), (node, code)
    # End to end: unseen, negative, non-integer and too-large codes route like NaN.
    base = np.array([[np.nan, 0.2], [np.nan, 0.9]])
    for odd in [3.0, 6.0, 8.0, 63.0, 64.0, 1000.0, -1.0, 2.5]:
        probe = base.copy()
        probe[:, 0] = odd
        np.testing.assert_array_equal(model.apply(probe), model.apply(base), err_msg=str(odd))
        assert np.all(np.isfinite(model.predict_proba(probe)))


def test_missing_values_in_a_categorical_feature():
    rng = np.random.RandomState(1)
    n = 400
    codes = rng.randint(0, 4, size=n).astype(float)
    y = (codes >= 2).astype(int)
    missing = rng.rand(n) < 0.2
    codes[missing] = np.nan
    y[missing] = 1 - (rng.rand(missing.sum()) < 0.05)  # missing mostly means class 1
    model = DecisionTreeClassifier(categorical_features=[0], max_depth=1).fit(codes[:, None], y)
    assert model.tree_.is_categorical[0]
    assert model.predict([[np.nan]])[0] == 1
    np.testing.assert_array_equal(model.predict([[0.0], [1.0], [2.0], [3.0]]), [0, 0, 1, 1])


# ---------------------------------------------------------------------- data frames


@pytest.fixture(scope="module")
def frame():
    rng = np.random.RandomState(0)
    n = 400
    df = pd.DataFrame({
        "color": pd.Categorical(rng.choice(["red", "green", "blue", "white"], n)),
        "size": rng.choice(["S", "M", "L"], n).astype(object),
        "flag": rng.rand(n) > 0.5,
        "value": rng.rand(n),
    })
    # class 1: (green or white) and flagged, or size L
    y = np.array((df["color"].isin(["green", "white"]) & df["flag"]).astype(int))
    y[np.asarray(df["size"]) == "L"] = 1
    return df, y


def test_dataframe_auto_categoricals(frame):
    df, y = frame
    model = DecisionTreeClassifier(categorical_features="auto").fit(df, y)
    assert model.is_categorical_.tolist() == [True, True, True, False]
    assert model.feature_names_in_.tolist() == ["color", "size", "flag", "value"]
    assert model.n_features_in_ == 4
    assert model.score(df, y) == 1.0
    used = set(model.tree_.feature[model.tree_.children_left != -1].tolist())
    assert used == {0, 1, 2}  # the noise column is never needed
    assert model.tree_.is_categorical[model.tree_.children_left != -1].all()
    # rows in another order predict the same
    shuffled = df.sample(frac=1.0, random_state=0)
    np.testing.assert_array_equal(model.predict(shuffled), y[shuffled.index.to_numpy()])
    # size L | else color {green, white} | else flag: four leaves
    assert model.get_n_leaves() == 4


def test_dataframe_categorical_by_name_mask_and_index_agree(frame):
    df, y = frame
    df = df.assign(color=df["color"].cat.codes.astype(float),
                   size=df["size"].map({"S": 0, "M": 1, "L": 2}).astype(float),
                   flag=df["flag"].astype(float))
    by_name = DecisionTreeClassifier(categorical_features=["color", "size"]).fit(df, y)
    by_mask = DecisionTreeClassifier(
        categorical_features=np.array([True, True, False, False])).fit(df, y)
    by_index = DecisionTreeClassifier(categorical_features=[0, 1]).fit(df, y)
    for other in (by_mask, by_index):
        np.testing.assert_array_equal(by_name.tree_.feature, other.tree_.feature)
        np.testing.assert_array_equal(by_name.tree_.category_bitsets,
                                      other.tree_.category_bitsets)
        np.testing.assert_array_equal(by_name.tree_.value, other.tree_.value)
    assert by_name.is_categorical_.tolist() == [True, True, False, False]
    assert by_name.tree_.is_categorical.any()
    assert by_name.feature_names_in_.tolist() == ["color", "size", "flag", "value"]


def test_unseen_category_in_a_frame_follows_missing(frame):
    df, y = frame
    model = DecisionTreeClassifier(categorical_features="auto").fit(df, y)
    probe = df.iloc[:20].copy()
    unseen = probe.assign(color=pd.Categorical(["purple"] * 20),
                          size=np.array(["XXL"] * 20, dtype=object))
    missing = probe.assign(color=pd.Categorical([np.nan] * 20, categories=["purple"]),
                           size=np.array([None] * 20, dtype=object))
    np.testing.assert_array_equal(model.apply(unseen), model.apply(missing))
    assert np.all(np.isfinite(model.predict_proba(unseen)))


def test_frame_category_order_is_by_categories_not_by_appearance(frame):
    df, y = frame
    model = DecisionTreeClassifier(categorical_features="auto").fit(df, y)
    # the same values with the category list in another order predict the same
    reordered = df.assign(color=df["color"].cat.reorder_categories(
        ["white", "red", "green", "blue"]))
    np.testing.assert_array_equal(model.predict(reordered), model.predict(df))


def test_bool_column_alone(frame):
    df, _ = frame
    y = df["flag"].to_numpy().astype(int)
    model = DecisionTreeClassifier(categorical_features="auto").fit(df[["flag"]], y)
    assert model.is_categorical_.tolist() == [True]
    assert model.tree_.node_count == 3 and model.tree_.is_categorical[0]
    assert model.score(df[["flag"]], y) == 1.0


# -------------------------------------------------------------------------- errors


@pytest.mark.parametrize("bad", [-1.0, 2.5, 255.0, 1000.0])
def test_bad_categorical_codes_name_the_column(bad):
    rng = np.random.RandomState(0)
    X = np.c_[rng.rand(30), rng.randint(0, 4, 30)].astype(float)
    X[5, 1] = bad
    y = np.arange(30) % 2
    with pytest.raises(ValueError, match=r"feature 1.*integer codes in \[0, max_bins=255\)"):
        DecisionTreeClassifier(categorical_features=[1]).fit(X, y)
    # a data frame's categorical columns are encoded by silva, so any values are fine
    df = pd.DataFrame({"noise": X[:, 0], "shop": X[:, 1]})
    model = DecisionTreeClassifier(categorical_features=["shop"]).fit(df, y)
    assert model.is_categorical_.tolist() == [False, True]


def test_too_many_categories_in_a_frame_name_the_column():
    n = 600
    df = pd.DataFrame({"x": np.arange(n) % 7 * 1.0,
                       "shop": pd.Categorical([f"s{i}" for i in range(300)] * 2)})
    y = np.arange(n) % 2
    with pytest.raises(ValueError, match="'shop'.*max_bins=255"):
        DecisionTreeClassifier(categorical_features="auto").fit(df, y)
    model = DecisionTreeClassifier(categorical_features="auto", max_bins=300).fit(df, y)
    assert model.is_categorical_.tolist() == [False, True]


def test_code_at_max_bins_is_rejected_and_below_is_accepted():
    X = np.array([[0.0], [1.0], [15.0]] * 5)
    y = np.array([0, 1, 1] * 5)
    DecisionTreeClassifier(categorical_features=[0], max_bins=16).fit(X, y)
    with pytest.raises(ValueError, match="max_bins=15"):
        DecisionTreeClassifier(categorical_features=[0], max_bins=15).fit(X, y)


def test_categorical_features_errors():
    df = pd.DataFrame({"a": [0.0, 1.0, 2.0, 1.0], "b": [1.0, 0.0, 1.0, 0.0]})
    y = [0, 1, 0, 1]
    with pytest.raises(ValueError, match="'c'.*which is not a column"):
        DecisionTreeClassifier(categorical_features=["c"]).fit(df, y)
    with pytest.raises(ValueError, match="index 2 is out of range for 2 features"):
        DecisionTreeClassifier(categorical_features=[2]).fit(df, y)
    with pytest.raises(ValueError, match="index -1 is out of range"):
        DecisionTreeClassifier(categorical_features=[-1]).fit(df, y)
    with pytest.raises(ValueError, match="no column names"):
        DecisionTreeClassifier(categorical_features=["a"]).fit(df.to_numpy(), y)
    with pytest.raises(ValueError, match="boolean mask must have 2 entries"):
        DecisionTreeClassifier(categorical_features=[True, False, True]).fit(df, y)
    with pytest.raises(ValueError, match="'yes'"):
        DecisionTreeClassifier(categorical_features="yes").fit(df, y)
