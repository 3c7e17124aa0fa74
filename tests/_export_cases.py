"""Data and small fitted models shared by the ONNX and Treelite export tests.

The data have missing values (NaN) in every column, held out rows included, and one
categorical column of integer codes (column 3) whose held-out rows also hold a code no
training row has (it follows each split's missing-value direction in silva). Values are
float32 numbers, so that a float32 ONNX graph sees exactly silva's inputs.
"""

from __future__ import annotations

import numpy as np

import silva

CATEGORICAL = [3]
N_TRAIN = 240


def export_data():
    """``(X_train, X_test, targets)``; targets: ``binary``, ``multiclass`` (3 classes,
    string labels), ``regression`` and ``counts`` (non-negative)."""
    rng = np.random.default_rng(0)
    n = N_TRAIN + 120
    X = rng.normal(size=(n, 5))
    X[:, 3] = rng.integers(0, 6, n)
    X[N_TRAIN::7, 3] = 6  # a category code only held-out rows have
    X[rng.random(X.shape) < 0.12] = np.nan
    X = X.astype(np.float32).astype(np.float64)
    x0, x1, code = np.nan_to_num(X[:, 0]), np.nan_to_num(X[:, 1]), np.nan_to_num(X[:, 3])
    odd = (code % 2 == 1).astype(float)
    binary = (x0 + odd + 0.3 * rng.normal(size=n) > 0.6).astype(int)
    multiclass = np.array(["low", "mid", "high"])[
        np.digitize(x1 + odd * 0.8 + 0.3 * rng.normal(size=n), [-0.2, 0.8])]
    regression = 2.0 * x0 + code + np.isnan(X[:, 2]) + 0.1 * rng.normal(size=n)
    counts = rng.poisson(np.exp(0.5 * x0 + 0.2 * code)).astype(float)
    targets = {"binary": binary, "multiclass": multiclass, "regression": regression,
               "counts": counts}
    return X[:N_TRAIN], X[N_TRAIN:], {k: (v[:N_TRAIN], v[N_TRAIN:])
                                      for k, v in targets.items()}


# (id, estimator factory, target): every estimator the exporters support, small.
CASES = [
    ("tree-binary", lambda: silva.DecisionTreeClassifier(
        max_depth=5, categorical_features=CATEGORICAL), "binary"),
    ("tree-multiclass", lambda: silva.DecisionTreeClassifier(
        max_depth=5, categorical_features=CATEGORICAL), "multiclass"),
    ("tree-regression", lambda: silva.DecisionTreeRegressor(
        max_depth=5, categorical_features=CATEGORICAL), "regression"),
    ("forest-multiclass", lambda: silva.RandomForestClassifier(
        n_estimators=4, max_depth=5, categorical_features=CATEGORICAL, random_state=0),
     "multiclass"),
    ("forest-regression", lambda: silva.RandomForestRegressor(
        n_estimators=4, max_depth=5, categorical_features=CATEGORICAL, random_state=0),
     "regression"),
    ("extra-trees-binary", lambda: silva.ExtraTreesClassifier(
        n_estimators=4, max_depth=5, random_state=0), "binary"),
    ("extra-trees-regression", lambda: silva.ExtraTreesRegressor(
        n_estimators=4, max_depth=5, random_state=0), "regression"),
    ("bagging-soft", lambda: silva.BaggingClassifier(
        n_estimators=4, max_features=0.8, categorical_features=CATEGORICAL,
        random_state=0), "multiclass"),
    ("bagging-hard", lambda: silva.BaggingClassifier(
        silva.DecisionTreeClassifier(max_depth=3), n_estimators=5, voting="hard",
        random_state=0), "multiclass"),
    ("bagging-regression", lambda: silva.BaggingRegressor(
        n_estimators=4, max_features=0.8, random_state=0), "regression"),
    ("bagging-id3", lambda: silva.BaggingClassifier(
        silva.ID3Classifier(max_depth=3), n_estimators=3, random_state=0), "binary"),
    ("boosting-binary", lambda: silva.GradientBoostingClassifier(
        n_estimators=6, max_depth=3, categorical_features=CATEGORICAL), "binary"),
    ("boosting-exponential", lambda: silva.GradientBoostingClassifier(
        loss="exponential", n_estimators=6, max_depth=3), "binary"),
    ("boosting-multiclass", lambda: silva.GradientBoostingClassifier(
        n_estimators=4, max_depth=3, categorical_features=CATEGORICAL), "multiclass"),
    ("boosting-regression", lambda: silva.GradientBoostingRegressor(
        n_estimators=6, max_depth=3, categorical_features=CATEGORICAL), "regression"),
    ("boosting-poisson", lambda: silva.GradientBoostingRegressor(
        loss="poisson", n_estimators=6, max_depth=3), "counts"),
    ("adaboost-samme", lambda: silva.AdaBoostClassifier(n_estimators=5), "multiclass"),
    ("adaboost-real", lambda: silva.AdaBoostClassifier(
        silva.DecisionTreeClassifier(max_depth=2, categorical_features=CATEGORICAL),
        n_estimators=5, algorithm="real"), "multiclass"),
    ("adaboost-discrete", lambda: silva.AdaBoostClassifier(
        n_estimators=5, algorithm="discrete"), "binary"),
    ("id3", lambda: silva.ID3Classifier(max_depth=4, categorical_features=CATEGORICAL),
     "multiclass"),
]

_FITTED = {}


def fitted(case_id):
    """The model of case ``case_id`` fitted on the training rows, and the held-out rows
    (``X_test``, ``y_test``); fitted once per process."""
    if case_id not in _FITTED:
        X_train, X_test, targets = export_data()
        _, factory, target = next(case for case in CASES if case[0] == case_id)
        y_train, y_test = targets[target]
        _FITTED[case_id] = (factory().fit(X_train, y_train), X_test, y_test)
    return _FITTED[case_id]


def case_ids():
    return [case[0] for case in CASES]
