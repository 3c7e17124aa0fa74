"""silva.to_onnx: onnxruntime's outputs against silva's own predictions.

Every supported estimator is exported and run by onnxruntime on held-out rows with
missing values and a categorical column (see tests/_export_cases.py): labels equal
``predict``, probabilities equal ``predict_proba`` to 1e-5, regression outputs equal
``predict`` to float32 rounding.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from _export_cases import CATEGORICAL, case_ids, export_data, fitted
from sklearn.exceptions import NotFittedError

import silva
from silva import export_onnx
from silva.additive_trees import EQUAL, MEMBER, additive_model
from silva.export_onnx import float32_thresholds, onnx_input, to_onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def run_onnx(onnx_model, X):
    session = ort.InferenceSession(onnx_model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(None, {"X": X}), strict=True))


@pytest.mark.parametrize("case_id", case_ids())
def test_onnxruntime_matches_silva(case_id):
    model, X_test, _ = fitted(case_id)
    assert np.isnan(X_test).any(axis=0).all()  # missing values in every column
    outputs = run_onnx(to_onnx(model), onnx_input(model, X_test))
    if hasattr(model, "classes_"):
        assert outputs["label"].tolist() == model.predict(X_test).tolist()
        proba = model.predict_proba(X_test)
        assert outputs["probabilities"].shape == proba.shape
        np.testing.assert_allclose(outputs["probabilities"], proba, rtol=0, atol=1e-5)
    else:
        assert outputs["variable"].shape == (X_test.shape[0], 1)
        np.testing.assert_allclose(outputs["variable"][:, 0], model.predict(X_test),
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case_id", ["tree-multiclass", "forest-regression",
                                     "boosting-multiclass", "adaboost-real"])
def test_categorical_splits_are_set_membership(case_id):
    """The cases with a categorical column do split on it, as one BRANCH_MEMBER node
    (mode 6) per split; so the comparison above covers set membership."""
    model, _, _ = fitted(case_id)
    tests = np.concatenate([tree.tree.test for tree in additive_model(model).trees])
    assert np.any(tests == MEMBER)
    ensemble = next(node for node in to_onnx(model).graph.node if node.op_type == "TreeEnsemble")
    attributes = {attribute.name: attribute for attribute in ensemble.attribute}
    modes = onnx.numpy_helper.to_array(attributes["nodes_modes"].t)
    assert np.sum(modes == 6) > 0
    members = onnx.numpy_helper.to_array(attributes["membership_values"].t)
    assert np.sum(np.isnan(members)) == np.sum(modes == 6)  # one NaN-ended set per node


def test_id3_becomes_chains_of_equal_and_less_equal_tests():
    model, X_test, _ = fitted("id3")
    tests = np.concatenate([tree.tree.test for tree in additive_model(model).trees])
    assert np.any(tests == EQUAL)
    # Every expanded tree, walked in Python, gives silva's class distributions too.
    tree = additive_model(model).trees[0].tree
    np.testing.assert_allclose(_walk(tree, X_test), model.predict_proba(X_test), atol=1e-12)


def _walk(tree, X):
    """Leaf values of a BinaryTree for each row, by the module's stated rules."""
    out = np.empty((X.shape[0], tree.value.shape[1]))
    for i, row in enumerate(X):
        node = 0
        while tree.true_child[node] != -1:
            x = row[tree.feature[node]]
            if np.isnan(x):
                holds = bool(tree.missing_true[node])
            elif tree.test[node] == MEMBER:
                holds = x in tree.members[node]
            elif tree.test[node] == EQUAL:
                holds = x == tree.threshold[node]
            else:
                holds = x <= tree.threshold[node]
            node = tree.true_child[node] if holds else tree.false_child[node]
        out[i] = tree.value[node]
    return out


def test_unseen_and_out_of_range_codes_follow_the_missing_values():
    """Codes beyond the bitset (64), negative and fractional codes go where NaN goes in
    silva; the exported test sends them the same way."""
    model, X_test, _ = fitted("tree-multiclass")
    X = np.repeat(X_test[:40], 4, axis=0)
    X[0::4, 3], X[1::4, 3], X[2::4, 3], X[3::4, 3] = 100.0, -1.0, 2.5, np.nan
    outputs = run_onnx(to_onnx(model), X.astype(np.float32))
    np.testing.assert_allclose(outputs["probabilities"], model.predict_proba(X), atol=1e-6)


def test_a_midpoint_of_adjacent_float32_values_rounds_down():
    """A midpoint between two adjacent float32 numbers rounds up to the larger one when
    cast to nearest (ties to even), which would send that training value left; the
    exporter takes the lower one."""
    low = np.float32(1.0) + np.float32(2.0 ** -23)  # odd mantissa: the tie rounds up
    high = np.nextafter(low, np.float32(2.0))
    midpoint = (np.float64(low) + np.float64(high)) / 2
    assert np.float32(midpoint) == high and float32_thresholds([midpoint])[0] == low
    X = np.array([[low], [high]] * 4, dtype=np.float64)
    y = np.array([0, 1] * 4)
    tree = silva.DecisionTreeClassifier(max_depth=1).fit(X, y)
    assert tree.tree_.threshold[0] == midpoint
    outputs = run_onnx(to_onnx(tree), X.astype(np.float32))
    assert outputs["label"].tolist() == y.tolist()


def test_float32_thresholds_decide_as_float64_but_just_above_them():
    """The stated rule: x (rounded to float32) and t decide as x <= t does, except when
    x > t and x rounds to the stored threshold, or x equals a threshold stored below it
    (halfway between two float32 numbers) and rounds up."""
    rng = np.random.default_rng(1)
    thresholds = np.concatenate([rng.normal(size=3000) * 10.0 ** rng.integers(-5, 5, 3000),
                                 [0.0, np.inf, -np.inf, 1e39, -1e39, 1 + 2.0 ** -24]])
    stored = float32_thresholds(thresholds)
    with np.errstate(over="ignore"):  # 1e39 is beyond float32
        nearest = np.float32(thresholds)
    # Inputs around each threshold, float64 and float32, where a wrong rounding shows.
    step = np.where(np.isfinite(thresholds), np.abs(thresholds) * 2.0 ** -24, 0.0)
    inputs = np.stack([thresholds, thresholds + step * 0.3, thresholds - step * 0.3,
                       thresholds + step * 3, nearest, np.nextafter(nearest, np.inf),
                       np.nextafter(nearest, -np.inf)]).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = inputs.astype(np.float32)
        exception = ((inputs > thresholds) & (rounded == stored)) | (
            (inputs == thresholds) & (stored < thresholds) & (rounded > stored))
        agree = (rounded <= stored) == (inputs <= thresholds)
    finite = np.isfinite(rounded)  # inputs beyond float32's range become infinite
    assert np.all(agree | exception | ~finite)
    assert exception[finite].mean() < 0.2  # the exception is the narrow band above t
    # Inputs equal to a threshold go left (but for halfway thresholds and those beyond
    # float32's range).
    usual = (stored == nearest) & np.isfinite(nearest)
    assert usual.mean() > 0.99
    assert np.all(nearest[usual] <= stored[usual])


def test_float64_inputs_equal_to_thresholds_go_left(monkeypatch):
    """Boosting's thresholds are often training values; held-out rows equal to one must
    go left in the float32 graph as in silva. Breast cancer's values are not float32
    numbers: thresholds rounded down instead of to nearest send such rows right."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, _ = train_test_split(X, y, random_state=0)
    # min_samples_bin=1: 255 bins, as when this case was chosen. With the default 142
    # bins of these 426 rows, one held-out value (20.19) lies within half a float32 step
    # above a threshold (20.189999999999998) and rounds onto it: the exception that
    # docs/deploying.md states, not the case tested here.
    model = silva.GradientBoostingClassifier(n_estimators=30, min_samples_bin=1).fit(
        X_train, y_train)
    thresholds = model._packed.walk["threshold"]
    assert np.isin(thresholds[np.isfinite(thresholds)], X_test).sum() > 20
    outputs = run_onnx(to_onnx(model), onnx_input(model, X_test))
    assert outputs["label"].tolist() == model.predict(X_test).tolist()
    np.testing.assert_allclose(outputs["probabilities"], model.predict_proba(X_test),
                               atol=1e-5)

    def rounded_down(values):
        values = np.asarray(values, dtype=np.float64)
        down = values.astype(np.float32)
        above = down.astype(np.float64) > values
        down[above] = np.nextafter(down[above], np.float32(-np.inf))
        return down

    monkeypatch.setattr(export_onnx, "float32_thresholds", rounded_down)
    outputs = run_onnx(to_onnx(model), onnx_input(model, X_test))
    assert np.abs(outputs["probabilities"] - model.predict_proba(X_test)).max() > 1e-3


def test_float64_graph_keeps_decisions_for_any_input():
    model, X_test, _ = fitted("forest-regression")
    X = X_test + 1e-9  # no longer float32 numbers
    outputs = run_onnx(to_onnx(model, dtype=np.float64), X)
    np.testing.assert_allclose(outputs["variable"][:, 0], model.predict(X), rtol=1e-12)


def test_pandas_categorical_columns_enter_as_the_encoders_codes():
    pd = pytest.importorskip("pandas")
    X_train, X_test, targets = export_data()

    def frame(X, n_categories):
        colors = np.array(["red", "green", "blue", "teal", "plum", "gold", "navy"])
        codes = np.nan_to_num(X[:, 3], nan=0).astype(int)
        # navy, code 6, is only in held-out rows: a category unseen at fit.
        color = pd.Categorical(np.where(np.isnan(X[:, 3]), None, colors[codes]),
                               categories=colors[:n_categories])
        return pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "color": color,
                             "e": X[:, 4]})

    y_train, _ = targets["multiclass"]
    model = silva.RandomForestClassifier(n_estimators=3, max_depth=5, random_state=0,
                                         categorical_features="auto")
    model.fit(frame(X_train, 6), y_train)
    held_out = frame(X_test, 7)
    held_out.loc[held_out.index[:5], "color"] = np.nan
    encoded = onnx_input(model, held_out)
    assert encoded.dtype == np.float32
    # The codes are the positions in the fitted column's categories; navy (unseen) is NaN.
    assert np.array_equal(encoded[5:, 3], np.where(np.isnan(X_test[5:, 3]) | (X_test[5:, 3] == 6),
                                                   np.nan, X_test[5:, 3]), equal_nan=True)
    outputs = run_onnx(to_onnx(model), encoded)
    assert outputs["label"].tolist() == model.predict(held_out).tolist()
    np.testing.assert_allclose(outputs["probabilities"], model.predict_proba(held_out),
                               atol=1e-5)


def test_graph_outputs_opsets_and_labels():
    model, _, _ = fitted("tree-multiclass")
    exported = to_onnx(model, name="my_tree")
    onnx.checker.check_model(exported, full_check=True)
    assert exported.graph.name == "my_tree"
    assert {o.domain: o.version for o in exported.opset_import} == {"": 21, "ai.onnx.ml": 5}
    assert [o.name for o in exported.graph.output] == ["label", "probabilities"]
    assert [i.name for i in exported.graph.input] == ["X"]
    regressor, X_test, _ = fitted("tree-regression")
    assert [o.name for o in to_onnx(regressor).graph.output] == ["variable"]
    assert {o.domain: o.version for o in to_onnx(regressor, target_opset=17).opset_import} \
        == {"": 17, "ai.onnx.ml": 5}


@pytest.mark.parametrize("loss", ["linear", "square"])
def test_adaboost_regressor_weighted_median(loss):
    """AdaBoost.R2's weighted median, computed by standard operators after the trees."""
    X_train, X_test, targets = export_data()
    learner = silva.DecisionTreeRegressor(max_depth=3, categorical_features=CATEGORICAL)
    model = silva.AdaBoostRegressor(learner, n_estimators=7, loss=loss, random_state=0)
    model.fit(X_train, targets["regression"][0])
    assert len(model.estimators_) == 7 and np.ptp(model.estimator_weights_) > 0
    outputs = run_onnx(to_onnx(model), X_test.astype(np.float32))
    np.testing.assert_allclose(outputs["variable"][:, 0], model.predict(X_test), rtol=1e-5,
                               atol=1e-5)
    # Not any one learner's prediction, nor their weighted mean.
    predictions = np.column_stack([e.predict(X_test) for e in model.estimators_])
    mean = predictions @ model.estimator_weights_ / model.estimator_weights_.sum()
    assert np.abs(outputs["variable"][:, 0] - mean).max() > 1e-3


@pytest.mark.parametrize("labels", ["bool", "float", "int"])
def test_labels_keep_their_type(labels):
    X_train, X_test, targets = export_data()
    y = targets["binary"][0]
    y = {"bool": y.astype(bool), "float": y * 2.0 + 1.0, "int": y * 7 - 3}[labels]
    model = silva.DecisionTreeClassifier(max_depth=3).fit(X_train, y)
    label = run_onnx(to_onnx(model), X_test.astype(np.float32))["label"]
    assert label.dtype.kind == np.asarray(model.classes_).dtype.kind
    assert label.tolist() == model.predict(X_test).tolist()


def test_a_tree_that_is_one_leaf():
    """A single-leaf tree is one TreeEnsemble node whose two branches reach its leaf."""
    X_train, X_test, targets = export_data()
    model = silva.DecisionTreeRegressor(min_samples_split=10**6)
    model.fit(X_train, targets["regression"][0])
    assert model.tree_.node_count == 1
    outputs = run_onnx(to_onnx(model), X_test.astype(np.float32))
    np.testing.assert_allclose(outputs["variable"][:, 0], model.predict(X_test), rtol=1e-6)


def test_errors_name_the_problem(monkeypatch):
    X_train, _, targets = export_data()
    y_binary, y_regression = targets["binary"][0], targets["regression"][0]
    with pytest.raises(NotFittedError, match="RandomForestClassifier"):
        to_onnx(silva.RandomForestClassifier())
    with pytest.raises(NotImplementedError, match="C45Classifier.*fractional"):
        to_onnx(silva.C45Classifier(max_depth=2).fit(X_train, y_binary))
    voting = silva.VotingClassifier([("a", silva.DecisionTreeClassifier(max_depth=2)),
                                     ("b", silva.DecisionTreeClassifier(max_depth=3))])
    with pytest.raises(TypeError, match="VotingClassifier.*voting and stacking"):
        to_onnx(voting.fit(X_train, y_binary))
    from sklearn.linear_model import LinearRegression

    bagging = silva.BaggingRegressor(LinearRegression(), n_estimators=2, random_state=0)
    with pytest.raises(TypeError, match="BaggingRegressor.*LinearRegression"):
        to_onnx(bagging.fit(np.nan_to_num(X_train), y_regression))
    model, _, _ = fitted("tree-binary")
    with pytest.raises(ValueError, match="dtype"):
        to_onnx(model, dtype=np.int32)
    with pytest.raises(ValueError, match="target_opset"):
        to_onnx(model, target_opset=9)
    with pytest.raises(ValueError, match="ai.onnx.ml"):
        to_onnx(model, target_opset={"": 21, "ai.onnx.ml": 3})
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"silva\[onnx\]"):
        to_onnx(model)


def test_public_name():
    assert silva.to_onnx is to_onnx
