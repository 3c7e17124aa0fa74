"""silva.to_treelite: Treelite's GTIL predictions against silva's own, to 1e-6.

The models and held-out rows (missing values, a categorical column with an unseen code)
are those of the ONNX tests (tests/_export_cases.py).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from _export_cases import case_ids, export_data, fitted
from sklearn.exceptions import NotFittedError

import silva
from silva.export_treelite import to_treelite

treelite = pytest.importorskip("treelite")


def gtil_outputs(model, X):
    """GTIL's predictions in silva's layout: class probabilities (both columns for a
    two-class sigmoid model) or the regression predictions."""
    predicted = treelite.gtil.predict(to_treelite(model), X)
    assert predicted.shape[:2] == (X.shape[0], 1)
    predicted = predicted[:, 0, :]
    if not hasattr(model, "classes_"):
        return predicted[:, 0]
    if predicted.shape[1] == 1:
        return np.column_stack([1.0 - predicted[:, 0], predicted[:, 0]])
    return predicted


@pytest.mark.parametrize("case_id", case_ids())
def test_gtil_matches_silva(case_id):
    model, X_test, _ = fitted(case_id)
    if hasattr(model, "classes_"):
        proba = model.predict_proba(X_test)
        got = gtil_outputs(model, X_test)
        np.testing.assert_allclose(got, proba, rtol=0, atol=1e-6)
        # Labels by silva's rule, the first of the most probable classes.
        assert model.classes_[np.argmax(got, axis=1)].tolist() == model.predict(X_test).tolist()
    else:
        np.testing.assert_allclose(gtil_outputs(model, X_test), model.predict(X_test),
                                   rtol=1e-6, atol=1e-6)


def test_float64_decisions_on_any_input():
    """Thresholds stay float64: inputs that are not float32 numbers decide as in silva."""
    model, X_test, _ = fitted("boosting-regression")
    X = X_test + 1e-9
    X[:, 3] = X_test[:, 3]  # category codes stay integers (see the module notes)
    np.testing.assert_allclose(gtil_outputs(model, X), model.predict(X), rtol=1e-9)


def test_model_structure():
    model, _, _ = fitted("boosting-multiclass")
    exported = to_treelite(model)
    assert exported.num_tree == len(model._packed.node_offset) - 1
    assert exported.num_feature == model.n_features_in_
    forest, _, _ = fitted("forest-multiclass")
    assert to_treelite(forest).num_tree == 4


def test_a_tree_that_is_one_leaf():
    X_train, X_test, targets = export_data()
    model = silva.DecisionTreeClassifier(min_samples_split=10**6)
    model.fit(X_train, targets["multiclass"][0])
    assert model.tree_.node_count == 1
    np.testing.assert_allclose(gtil_outputs(model, X_test), model.predict_proba(X_test),
                               atol=1e-12)


def test_errors_name_the_problem(monkeypatch):
    X_train, _, targets = export_data()
    with pytest.raises(NotFittedError, match="GradientBoostingRegressor"):
        to_treelite(silva.GradientBoostingRegressor())
    with pytest.raises(NotImplementedError, match="AdaBoostRegressor.*weighted median"):
        to_treelite(silva.AdaBoostRegressor(n_estimators=2).fit(X_train,
                                                                targets["regression"][0]))
    with pytest.raises(NotImplementedError, match="C45Classifier"):
        to_treelite(silva.C45Classifier(max_depth=2).fit(X_train, targets["binary"][0]))
    model, _, _ = fitted("tree-binary")
    monkeypatch.setitem(sys.modules, "treelite", None)
    with pytest.raises(ImportError, match=r"silva\[treelite\]"):
        to_treelite(model)


def test_public_name():
    assert silva.to_treelite is to_treelite
