"""Prediction intervals (silva.intervals): jackknife+-after-bootstrap for bagged
regressors, split conformal and CQR for boosting.

Coverage tolerance. On ``n_test`` test rows the empirical coverage of an interval with
true coverage ``c`` has binomial standard error ``sqrt(c (1 - c) / n_test)``; the true
coverage of a conformal interval itself varies with the ``n`` rows it was calibrated
on, with standard deviation about ``sqrt(c (1 - c) / (n + 2))`` (it is Beta(k, n + 1 -
k) distributed for split conformal; Angelopoulos & Bates 2021, Section 3.2). The tests
allow three of the combined standard errors:
``3 sqrt(c (1 - c) (1 / n_test + 1 / (n + 2)))`` = 0.032 for c = 0.9, n = 1000 and
n_test = 4000 (seeds are fixed, so the tests are deterministic).
"""

import math

import numpy as np
import pytest

from silva import (
    BaggingRegressor,
    ExtraTreesRegressor,
    GradientBoostingRegressor,
    RandomForestRegressor,
    load,
)
from silva.intervals import conformal_rank, split_conformal_quantile

CONFIDENCE = 0.9
N_TRAIN, N_CAL, N_TEST = 1000, 1000, 4000
TOLERANCE = 3 * math.sqrt(CONFIDENCE * (1 - CONFIDENCE) * (1 / N_TEST + 1 / (N_CAL + 2)))


def heteroscedastic(n, seed):
    """y = a smooth signal plus noise whose scale grows tenfold along x0."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(0, 4, size=(n, 3))
    noise = rng.normal(size=n) * (0.2 + 0.5 * X[:, 0])
    return X, np.sin(2 * X[:, 0]) + X[:, 1] + noise


def coverage(intervals, y):
    return np.mean((y >= intervals[:, 0]) & (y <= intervals[:, 1]))


@pytest.fixture(scope="module")
def data():
    return heteroscedastic(N_TRAIN, 0), heteroscedastic(N_CAL, 1), heteroscedastic(N_TEST, 2)


# ------------------------------------------------------------------ the formulas by hand
def test_conformal_rank_is_exact_at_round_levels():
    # 0.9 * 100 is 90 in exact arithmetic; 1 - 0.1 in floating point is not 0.9.
    assert conformal_rank(99, 0.9) == 90
    assert conformal_rank(99, 1 - 0.1) == 90
    assert conformal_rank(100, 0.9) == 91  # ceil(90.9)
    assert conformal_rank(5, 0.5) == 3


def test_split_conformal_quantile_by_hand():
    scores = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert split_conformal_quantile(scores, 0.5) == 3.0  # ceil(6 * 0.5) = 3rd smallest
    assert split_conformal_quantile(scores, 0.8) == 5.0  # ceil(4.8) = 5th
    assert split_conformal_quantile(scores, 0.9) == np.inf  # ceil(5.4) = 6 > 5


def test_split_conformal_interval_uses_the_hand_computed_residual(data):
    (X, y), (X_cal, _), (X_test, _) = data
    model = GradientBoostingRegressor(n_estimators=10, random_state=0).fit(X, y)
    residuals = np.arange(1.0, 10.0)  # n = 9 calibration rows, residuals 1..9
    signs = np.where(np.arange(9) % 2, 1.0, -1.0)
    model.calibrate_intervals(X_cal[:9], model.predict(X_cal[:9]) + signs * residuals)
    center = model.predict(X_test[:5])
    # confidence 0.7: rank ceil(10 * 0.7) = 7, the 7th smallest residual is 7.
    np.testing.assert_allclose(model.predict_interval(X_test[:5], 0.7),
                               np.column_stack([center - 7, center + 7]))
    # confidence 0.95: rank ceil(9.5) = 10 > 9 rows: an infinite interval.
    assert np.all(np.isinf(model.predict_interval(X_test[:5], 0.95)))


def test_cqr_interval_by_hand(data):
    (X, y), (X_cal, y_cal), (X_test, _) = data
    model = GradientBoostingRegressor(n_estimators=10, random_state=0).fit(X, y)
    model.calibrate_intervals(X_cal[:50], y_cal[:50], method="cqr", confidence=0.8,
                              X_train=X, y_train=y)
    quantile = {level: GradientBoostingRegressor(n_estimators=10, random_state=0,
                                                 loss="quantile", alpha=level).fit(X, y)
                for level in (0.1, 0.9)}
    lower, upper = quantile[0.1].predict(X_cal[:50]), quantile[0.9].predict(X_cal[:50])
    scores = np.sort(np.maximum(lower - y_cal[:50], y_cal[:50] - upper))
    q = scores[math.ceil(51 * 0.8) - 1]  # the 41st smallest of 50
    expected = np.column_stack([quantile[0.1].predict(X_test) - q,
                                quantile[0.9].predict(X_test) + q])
    np.testing.assert_allclose(model.predict_interval(X_test, 0.8, method="cqr"), expected)


def _brute_force_jackknife(per_tree_train, per_tree_test, inbag_counts, y, confidence):
    """Kim et al. (2020) Algorithm 1 written plainly: loops over rows and test points."""
    n_trees, n = inbag_counts.shape
    left_out = [np.flatnonzero(inbag_counts[:, i] == 0) for i in range(n)]
    kept = [i for i in range(n) if left_out[i].size]
    residual = {i: abs(y[i] - per_tree_train[i, left_out[i]].mean()) for i in kept}
    m = len(kept)
    alpha = 1 - confidence
    low_rank, high_rank = math.floor(alpha * (m + 1) + 1e-9), math.ceil(
        confidence * (m + 1) - 1e-9)
    plus, minmax = [], []
    for x_pred in per_tree_test:
        mu = {i: x_pred[left_out[i]].mean() for i in kept}
        lows = sorted(mu[i] - residual[i] for i in kept)
        highs = sorted(mu[i] + residual[i] for i in kept)
        plus.append((lows[low_rank - 1], highs[high_rank - 1]))
        width = sorted(residual.values())[high_rank - 1]
        minmax.append((min(mu.values()) - width, max(mu.values()) + width))
    return np.array(plus), np.array(minmax)


@pytest.mark.parametrize("confidence", [0.6, 0.8])
def test_forest_jackknife_plus_matches_brute_force(confidence):
    X, y = heteroscedastic(40, 3)
    X_test, _ = heteroscedastic(7, 4)
    forest = RandomForestRegressor(n_estimators=5, max_depth=3, oob_score=True,
                                   random_state=0).fit(X, y)
    # The in-bag counts as scikit-learn draws them, from each tree's own seed.
    counts = np.array([np.bincount(np.random.RandomState(tree.random_state).randint(
        0, len(y), len(y)), minlength=len(y)) for tree in forest.estimators_])
    assert np.any(counts.min(axis=0) > 0)  # some row is in every bag: left out
    per_train = np.column_stack([tree.predict(X) for tree in forest.estimators_])
    per_test = np.column_stack([tree.predict(X_test) for tree in forest.estimators_])
    plus, minmax = _brute_force_jackknife(per_train, per_test, counts, y, confidence)
    np.testing.assert_allclose(forest.predict_interval(X_test, confidence), plus)
    np.testing.assert_allclose(
        forest.predict_interval(X_test, confidence, method="jackknife+-minmax"), minmax)


def test_bagging_jackknife_plus_matches_brute_force():
    X, y = heteroscedastic(40, 5)
    X_test, _ = heteroscedastic(6, 6)
    bag = BaggingRegressor(n_estimators=15, oob_score=True, random_state=0).fit(X, y)
    samples = bag.estimators_samples_
    counts = np.zeros((len(samples), len(y)))
    for t, rows in enumerate(samples):
        counts[t, rows] = 1
    per_train = np.column_stack([m.predict(X[:, f]) for m, f in
                                 zip(bag.estimators_, bag.estimators_features_, strict=True)])
    per_test = np.column_stack([m.predict(X_test[:, f]) for m, f in
                                zip(bag.estimators_, bag.estimators_features_, strict=True)])
    plus, _ = _brute_force_jackknife(per_train, per_test, counts, y, 0.75)
    np.testing.assert_allclose(bag.predict_interval(X_test, 0.75), plus)


# ---------------------------------------------------------------------------- coverage
@pytest.mark.parametrize("make", [
    lambda: RandomForestRegressor(n_estimators=40, min_samples_leaf=5, oob_score=True,
                                  random_state=0),
    lambda: ExtraTreesRegressor(n_estimators=40, min_samples_leaf=5, bootstrap=True,
                                oob_score=True, random_state=0),
], ids=["random_forest", "extra_trees"])
def test_jackknife_plus_covers_on_heteroscedastic_data(data, make):
    (X, y), _, (X_test, y_test) = data
    forest = make().fit(X, y)
    intervals = forest.predict_interval(X_test, CONFIDENCE)
    assert intervals.shape == (N_TEST, 2) and np.all(intervals[:, 0] <= intervals[:, 1])
    assert abs(coverage(intervals, y_test) - CONFIDENCE) <= TOLERANCE
    minmax = forest.predict_interval(X_test, CONFIDENCE, method="jackknife+-minmax")
    assert coverage(minmax, y_test) >= CONFIDENCE - TOLERANCE
    assert np.all(minmax[:, 1] - minmax[:, 0] >= intervals[:, 1] - intervals[:, 0] - 1e-12)
    quantile = forest.predict_interval(X_test, CONFIDENCE, method="quantile")
    np.testing.assert_allclose(quantile, forest.predict_quantiles(X_test, (0.05, 0.95)))


@pytest.mark.parametrize("method", ["split", "cqr"])
def test_boosting_conformal_covers_on_heteroscedastic_data(data, method):
    (X, y), (X_cal, y_cal), (X_test, y_test) = data
    model = GradientBoostingRegressor(n_estimators=40, random_state=0).fit(X, y)
    model.calibrate_intervals(X_cal, y_cal, method=method, confidence=CONFIDENCE,
                              X_train=X, y_train=y)
    intervals = model.predict_interval(X_test, CONFIDENCE, method=method)
    assert abs(coverage(intervals, y_test) - CONFIDENCE) <= TOLERANCE
    width = intervals[:, 1] - intervals[:, 0]
    if method == "cqr":  # adapts to the noise: wider where x0 (the noise scale) is large
        assert width[X_test[:, 0] > 3].mean() > 2 * width[X_test[:, 0] < 1].mean()
    else:
        np.testing.assert_allclose(width, width[0])


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("confidence", [0, 1, 1.5, -0.1, np.nan, "0.9", True])
def test_confidence_outside_the_open_unit_interval_is_refused(data, confidence):
    (X, y), _, (X_test, _) = data
    forest = RandomForestRegressor(n_estimators=3, oob_score=True, random_state=0)
    forest.fit(X[:100], y[:100])
    with pytest.raises(ValueError, match=r"RandomForestRegressor.predict_interval: "
                                         r"confidence must be a number in \(0, 1\)"):
        forest.predict_interval(X_test[:3], confidence)


def test_what_each_method_needs_is_named(data):
    (X, y), (X_cal, y_cal), (X_test, _) = data
    X, y = X[:100], y[:100]
    with pytest.raises(ValueError, match="fit with oob_score=True"):
        RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y).predict_interval(X)
    with pytest.raises(ValueError, match="needs bootstrap=True"):
        ExtraTreesRegressor(n_estimators=3, random_state=0).fit(X, y).predict_interval(X)
    with pytest.raises(ValueError, match="method must be one of"):
        BaggingRegressor(n_estimators=3, oob_score=True, random_state=0).fit(
            X, y).predict_interval(X, method="quantile")
    model = GradientBoostingRegressor(n_estimators=3).fit(X, y)
    with pytest.raises(ValueError, match=r"call calibrate_intervals\(X_cal, y_cal, "
                                         r"method='split'\)"):
        model.predict_interval(X_test)
    with pytest.raises(ValueError, match="pass the training rows as X_train and y_train"):
        model.calibrate_intervals(X_cal, y_cal, method="cqr")
    with pytest.raises(ValueError, match="method must be 'split' or 'cqr'"):
        model.calibrate_intervals(X_cal, y_cal, method="jackknife+")
    model.calibrate_intervals(X_cal, y_cal, method="cqr", confidence=0.8, X_train=X,
                              y_train=y)
    with pytest.raises(ValueError, match="calibrated for confidence=0.8; got "
                                         "confidence=0.9"):
        model.predict_interval(X_test, 0.9, method="cqr")
    model.fit(X, y)  # a new fit forgets the calibration
    with pytest.raises(ValueError, match="needs calibration scores"):
        model.predict_interval(X_test, 0.8, method="cqr")


def test_a_default_fit_is_unchanged_by_calibration(data):
    (X, y), (X_cal, y_cal), (X_test, _) = data
    plain = GradientBoostingRegressor(n_estimators=5, random_state=0).fit(X, y)
    calibrated = GradientBoostingRegressor(n_estimators=5, random_state=0).fit(X, y)
    calibrated.calibrate_intervals(X_cal, y_cal)
    np.testing.assert_array_equal(plain.predict(X_test), calibrated.predict(X_test))


# ------------------------------------------------------------------------- persistence
def test_intervals_survive_a_model_file(tmp_path, data):
    (X, y), (X_cal, y_cal), (X_test, _) = data
    X, y, X_test = X[:200], y[:200], X_test[:50]
    boosting = GradientBoostingRegressor(n_estimators=5, random_state=0).fit(X, y)
    boosting.calibrate_intervals(X_cal, y_cal)
    boosting.calibrate_intervals(X_cal, y_cal, method="cqr", X_train=X, y_train=y)
    models = {
        "forest": (RandomForestRegressor(n_estimators=5, oob_score=True, random_state=0)
                   .fit(X, y), ["jackknife+", "jackknife+-minmax", "quantile"]),
        "bagging": (BaggingRegressor(n_estimators=5, oob_score=True, random_state=0)
                    .fit(X, y), ["jackknife+"]),
        "boosting": (boosting, ["split", "cqr"]),
    }
    for name, (model, methods) in models.items():
        model.save(tmp_path / f"{name}.silva")
        loaded = load(tmp_path / f"{name}.silva")
        for method in methods:
            np.testing.assert_array_equal(loaded.predict_interval(X_test, method=method),
                                          model.predict_interval(X_test, method=method))
