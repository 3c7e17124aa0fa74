"""Data frames: pandas, polars and pyarrow input to every estimator (silva._input)."""

import importlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, clone

from silva import _input
from silva.decision_tree import DecisionTreeClassifier, DecisionTreeRegressor

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")

TREE_ARRAYS = ["children_left", "children_right", "feature", "threshold",
               "missing_go_to_left", "is_categorical", "category_bitsets", "value"]
COLUMNS = ["color", "size", "flag", "value", "count"]


def make_frames(n=300, seed=0):
    """The same table as pandas, polars and pyarrow: a category column, a text column
    with missing values, a bool column, a float column with NaN and an int column."""
    rng = np.random.RandomState(seed)
    color = rng.choice(["red", "green", "blue", "white"], n)
    size = rng.choice(["S", "M", "L"], n).astype(object)
    size[rng.rand(n) < 0.1] = None
    flag = rng.rand(n) > 0.5
    value = rng.rand(n)
    value[rng.rand(n) < 0.1] = np.nan
    count = rng.randint(0, 10, n)
    y = ((np.isin(color, ["green", "white"]) & flag) | (size == "L") | (value > 0.9))
    pandas_frame = pd.DataFrame({
        "color": pd.Categorical(color, categories=["blue", "green", "red", "white"]),
        "size": size, "flag": flag, "value": value, "count": count})
    polars_frame = pl.DataFrame({
        "color": pl.Series(color.tolist(), dtype=pl.Categorical),
        "size": pl.Series(size.tolist(), dtype=pl.String),
        "flag": pl.Series(flag.tolist(), dtype=pl.Boolean),
        "value": pl.Series([None if np.isnan(v) else v for v in value], dtype=pl.Float64),
        "count": pl.Series(count.tolist(), dtype=pl.Int64)})
    arrow_table = pa.table({
        "color": pa.array(color.tolist()).dictionary_encode(),
        "size": pa.array(size.tolist(), type=pa.string()),
        "flag": pa.array(flag.tolist()),
        "value": pa.array([None if np.isnan(v) else v for v in value], type=pa.float64()),
        "count": pa.array(count.tolist(), type=pa.int64())})
    return {"pandas": pandas_frame, "polars": polars_frame, "pyarrow": arrow_table}, \
        y.astype(int)


@pytest.fixture(scope="module")
def frames():
    return make_frames()


def assert_same_tree(a, b):
    for name in TREE_ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("model_class", [DecisionTreeClassifier, DecisionTreeRegressor])
def test_the_three_kinds_give_the_same_model(frames, model_class):
    tables, y = frames
    models = {kind: model_class(categorical_features="auto", random_state=0).fit(table, y)
              for kind, table in tables.items()}
    reference = models["pandas"]
    assert reference.is_categorical_.tolist() == [True, True, True, False, False]
    assert reference.tree_.is_categorical.any()
    for kind, model in models.items():
        assert model.feature_names_in_.tolist() == COLUMNS, kind
        assert model.n_features_in_ == 5
        np.testing.assert_array_equal(model.is_categorical_, reference.is_categorical_)
        assert_same_tree(model.tree_, reference.tree_)
        # any kind of frame predicts with any model
        for other, table in tables.items():
            np.testing.assert_array_equal(model.predict(table), reference.predict(
                tables["pandas"]), err_msg=f"{kind} model on {other} data")
    if model_class is DecisionTreeClassifier:
        assert reference.score(tables["polars"], y) == 1.0


def test_categories_are_encoded_the_same_way(frames):
    tables, y = frames
    encoders = {kind: DecisionTreeClassifier(categorical_features="auto").fit(t, y)._encoder
                for kind, t in tables.items()}
    for kind, encoder in encoders.items():
        assert list(encoder.categories_) == [0, 1, 2], kind
        assert encoder.categories_[0].tolist() == ["blue", "green", "red", "white"], kind
        assert encoder.categories_[1].tolist() == ["L", "M", "S"], kind
        assert encoder.categories_[2].tolist() == [False, True], kind
        assert encoder.columns_ == COLUMNS


def test_polars_enum_and_arrow_dictionary_keep_their_category_order():
    order = ["low", "mid", "high"]
    values = ["mid", "low", "high", "mid", None, "low"]
    polars_frame = pl.DataFrame({"level": pl.Series(values, dtype=pl.Enum(order))})
    arrow_table = pa.table({"level": pa.DictionaryArray.from_arrays(
        pa.array([1, 0, 2, 1, None, 0], type=pa.int32()), pa.array(order), ordered=True)})
    y = [1, 0, 1, 1, 0, 0]
    for table in (polars_frame, arrow_table):
        model = DecisionTreeClassifier(categorical_features="auto").fit(table, y)
        assert model._encoder.categories_[0].tolist() == order
        assert model.is_categorical_.tolist() == [True]
        np.testing.assert_array_equal(model.predict(table), [1, 0, 1, 1, 0, 0])


def test_unordered_arrow_dictionaries_are_sorted():
    # dictionary_encode orders the dictionary by first appearance: an accident of the data
    table = pa.table({"c": pa.array(["b", "c", "a", "b"]).dictionary_encode()})
    model = DecisionTreeClassifier(categorical_features="auto").fit(table, [0, 1, 0, 0])
    assert model._encoder.categories_[0].tolist() == ["a", "b", "c"]


def test_categorical_features_by_name_in_every_kind(frames):
    tables, y = frames
    masks = [DecisionTreeClassifier(categorical_features=["color", "count"]).fit(
        t.drop("size") if kind == "polars" else
        (t.drop_columns(["size"]) if kind == "pyarrow" else t.drop(columns="size")), y
    ).is_categorical_.tolist() for kind, t in tables.items()]
    assert masks == [[True, False, False, True]] * 3


def test_pandas_dtypes(frames):
    tables, y = frames
    df = tables["pandas"].copy()
    df["size"] = df["size"].astype("string")  # pandas' string dtype
    df["flag"] = df["flag"].astype("boolean")  # nullable boolean with a missing value
    df.loc[3, "flag"] = pd.NA
    df["count"] = df["count"].astype("Int64")  # nullable integer with a missing value
    df.loc[5, "count"] = pd.NA
    model = DecisionTreeClassifier(categorical_features="auto", random_state=0).fit(df, y)
    assert model.is_categorical_.tolist() == [True, True, True, False, False]
    assert model._has_missing_at_fit
    proba = model.predict_proba(df)
    assert np.all(np.isfinite(proba)) and model.score(df, y) > 0.95
    # object columns holding bools and None are categorical too
    df["flag"] = np.where(df["flag"].isna(), None, df["flag"].astype(object))
    assert DecisionTreeClassifier(categorical_features="auto").fit(
        df, y).is_categorical_.tolist()[2]


def test_polars_and_arrow_targets(frames):
    tables, y = frames
    as_numpy = DecisionTreeClassifier(random_state=0).fit(tables["pandas"][["value"]], y)
    for target in (pl.Series("y", y), pa.chunked_array([y])):
        model = DecisionTreeClassifier(random_state=0).fit(tables["polars"].select("value"),
                                                           target)
        assert_same_tree(model.tree_, as_numpy.tree_)


# ------------------------------------------------------------------ column mismatches


@pytest.mark.parametrize("kind", ["pandas", "polars", "pyarrow"])
@pytest.mark.parametrize("categorical", [True, False])
def test_reordered_missing_or_extra_columns_are_named(frames, kind, categorical):
    tables, y = frames
    numeric = ["value", "count", "flag"]
    table = tables[kind]

    def select(names):
        if kind == "pandas":
            return table[names]
        if kind == "polars":
            return table.select(names)
        return table.select(names)

    columns = COLUMNS if categorical else numeric
    model = DecisionTreeClassifier(categorical_features="auto").fit(select(columns), y)
    reordered = [columns[1], columns[0], *columns[2:]]
    with pytest.raises(ValueError, match=rf"another order.*{columns[1]!r}, {columns[0]!r}"):
        model.predict(select(reordered))
    with pytest.raises(ValueError, match=rf"missing columns seen at fit: \[{columns[-1]!r}\]"):
        model.predict(select(columns[:-1]))
    if kind == "pandas":
        extra = table[columns].assign(other=1.0)
    elif kind == "polars":
        extra = table.select(columns).with_columns(other=pl.lit(1.0))
    else:
        extra = table.select(columns).append_column("other", pa.array([1.0] * len(y)))
    with pytest.raises(ValueError, match=r"columns not seen at fit: \['other'\]"):
        model.predict(extra)
    # the right columns in the right order still work
    np.testing.assert_array_equal(model.predict(select(columns)), model.predict(
        tables["pandas"][columns]))


def test_frame_check_helper():
    _input.check_frame_columns(None, pd.DataFrame({"a": [1]}))  # nothing recorded
    _input.check_frame_columns(["a"], np.zeros((1, 1)))  # arrays are not checked
    with pytest.raises(ValueError, match=r"missing columns seen at fit: \['b'\]; columns "
                                         r"not seen at fit: \['c'\]"):
        _input.check_frame_columns(["a", "b"], pd.DataFrame({"a": [1], "c": [2]}))


# ------------------------------------------------------------------------ the helpers


def test_prepare_X_is_the_one_call_an_estimator_needs(frames):
    tables, _ = frames

    class Minimal(BaseEstimator):
        categorical_features = "auto"

    for kind, table in tables.items():
        estimator = Minimal()
        X = _input.prepare_X(estimator, table, reset=True,
                             categorical_features=estimator.categorical_features)
        assert X.dtype == np.float64 and X.shape == (300, 5), kind
        assert estimator.is_categorical_.tolist() == [True, True, True, False, False]
        assert estimator.feature_names_in_.tolist() == COLUMNS
        np.testing.assert_array_equal(_input.prepare_X(estimator, table, reset=False), X)
        # codes of the categorical columns, NaN where missing
        assert set(np.unique(X[:, 0])) == {0.0, 1.0, 2.0, 3.0}
        assert np.isnan(X[:, 1]).sum() == tables["pandas"]["size"].isna().sum()


def test_conversion_helpers(frames):
    tables, _ = frames
    for kind, table in tables.items():
        assert _input._is_dataframe(table), kind
        assert _input.frame_column_names(table) == COLUMNS
        converted = _input.as_pandas_or_array(table)
        assert isinstance(converted, pd.DataFrame) and list(converted.columns) == COLUMNS
    array = np.zeros((2, 2))
    assert _input.as_pandas_or_array(array) is array
    assert not _input._is_dataframe(array) and _input.frame_column_names(array) is None


def test_polars_is_not_imported_for_other_input():
    code = ("import sys, numpy as np, pandas as pd\n"
            "from silva.decision_tree import DecisionTreeClassifier\n"
            "df = pd.DataFrame({'a': pd.Categorical(['x', 'y'] * 5), 'b': np.arange(10.0)})\n"
            "DecisionTreeClassifier(categorical_features='auto').fit(df, [0, 1] * 5)\n"
            "print('polars' in sys.modules, 'pyarrow' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "False"


# -------------------------------------------------------------- every silva estimator

ESTIMATORS = [
    ("silva.decision_tree", "DecisionTreeClassifier", {}),
    ("silva.decision_tree", "DecisionTreeRegressor", {}),
    ("silva.classic", "ID3Classifier", {}),
    ("silva.classic", "C45Classifier", {}),
    ("silva.forest", "RandomForestClassifier", {"n_estimators": 3}),
    ("silva.forest", "RandomForestRegressor", {"n_estimators": 3}),
    ("silva.forest", "ExtraTreesClassifier", {"n_estimators": 3}),
    ("silva.forest", "ExtraTreesRegressor", {"n_estimators": 3}),
    ("silva.bagging", "BaggingClassifier", {"n_estimators": 3}),
    ("silva.bagging", "BaggingRegressor", {"n_estimators": 3}),
    ("silva.boosting", "GradientBoostingClassifier", {"n_estimators": 3}),
    ("silva.boosting", "GradientBoostingRegressor", {"n_estimators": 3}),
    ("silva.adaboost", "AdaBoostClassifier", {"n_estimators": 3}),
    ("silva.adaboost", "AdaBoostRegressor", {"n_estimators": 3}),
]


def _estimator(module, name, params):
    cls = getattr(importlib.import_module(module), name)
    return cls(**params)


@pytest.mark.parametrize(("module", "name", "params"), ESTIMATORS,
                         ids=[e[1] for e in ESTIMATORS])
def test_every_estimator_takes_every_kind_of_frame(frames, module, name, params):
    tables, y = frames
    estimator = _estimator(module, name, params)
    takes_categories = "categorical_features" in estimator.get_params()
    columns = COLUMNS if takes_categories else ["value", "count"]
    if takes_categories:
        estimator.set_params(categorical_features="auto")
    if "random_state" in estimator.get_params():
        estimator.set_params(random_state=0)
    predictions = {}
    for kind, table in tables.items():
        selected = table[columns] if kind == "pandas" else table.select(columns)
        fitted = clone(estimator).fit(selected, y)
        assert list(fitted.feature_names_in_) == columns, kind
        predictions[kind] = fitted.predict(selected)
        # estimators validating through silva._input name the moved columns; others
        # get scikit-learn's message
        with pytest.raises(ValueError, match="order"):
            fitted.predict(selected[columns[::-1]] if kind == "pandas"
                           else selected.select(columns[::-1]))
    np.testing.assert_array_equal(predictions["polars"], predictions["pandas"])
    np.testing.assert_array_equal(predictions["pyarrow"], predictions["pandas"])
