"""Bagging (silva/bagging.py) around silva's trees and around scikit-learn estimators.

References: members refitted by hand on the rows and columns the ensemble reports
(``estimators_samples_``, ``estimators_features_``), recording estimators that keep
what they were fitted on, scikit-learn's BaggingClassifier/Regressor (out-of-bag score),
and held-out scores.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn import ensemble
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.datasets import load_breast_cancer, make_classification, make_regression
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge
from sklearn.metrics import r2_score
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import (
    check_sample_weight_equivalence_on_dense_data,
    parametrize_with_checks,
)

import silva
from silva import BaggingClassifier, BaggingRegressor, DecisionTreeClassifier


# ------------------------------------------------------------------ scikit-learn checks
def _expected_failed_checks(estimator):
    if estimator.bootstrap is True:
        # Rows are drawn uniformly: a row of weight 2 is drawn as often as any other,
        # a repeated row twice as often (scikit-learn marks its own bagging the same way).
        return dict.fromkeys(["check_sample_weight_equivalence_on_dense_data",
                              "check_sample_weight_equivalence_on_sparse_data"],
                             "bootstrap draws rows uniformly, not in proportion to "
                             "sample_weight")
    return {}  # bootstrap="weighted" passes it


@parametrize_with_checks([BaggingClassifier(n_estimators=5, random_state=0),
                          BaggingRegressor(n_estimators=5, random_state=0),
                          BaggingRegressor(n_estimators=5, bootstrap="weighted",
                                           random_state=0)],
                         expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("cls", [BaggingClassifier, BaggingRegressor])
def test_sample_weight_equivalence_without_bootstrap(cls):
    # Every member sees every row: integer weights are then the same as repeated rows.
    check_sample_weight_equivalence_on_dense_data(
        cls.__name__, cls(n_estimators=5, bootstrap=False, random_state=0))


@pytest.mark.parametrize("estimator", [
    BaggingClassifier(n_estimators=5, bootstrap="weighted", random_state=0),
    BaggingRegressor(n_estimators=5, bootstrap="weighted", max_features=0.5,
                     oob_score=True, random_state=0),
    BaggingClassifier(KNeighborsClassifier(3), n_estimators=5, bootstrap="weighted",
                      random_state=0),
    BaggingRegressor(Ridge(), n_estimators=5, bootstrap="weighted", random_state=0),
], ids=["tree-classifier", "tree-regressor-subspaces-oob", "knn-no-sample-weight", "ridge"])
def test_sample_weight_equivalence_with_weighted_bootstrap(estimator):
    # Rows drawn in proportion to their weights, over distinct rows in content order: a
    # row of weight k is k repeated rows, although the check shuffles the weighted rows;
    # an estimator whose fit takes no sample_weight is bagged with weights too.
    check_sample_weight_equivalence_on_dense_data(type(estimator).__name__, estimator)


def test_weighted_bootstrap_members_see_the_counts_alone():
    X, y = make_regression(n_samples=50, n_features=3, random_state=0)
    weight = np.random.RandomState(0).randint(0, 4, size=50).astype(float)
    ensemble_ = BaggingRegressor(RecordingRegressor(), n_estimators=3, bootstrap="weighted",
                                 random_state=0).fit(X, y, sample_weight=weight)
    assert ensemble_._draw_sizes[0] == round(weight.sum())
    for member, rows in zip(ensemble_.estimators_, ensemble_.estimators_samples_,
                            strict=True):
        assert (weight[rows] > 0).all()  # zero-weight rows are never drawn
        # Fitted on the drawn rows with their counts (which sum to the draw's size).
        assert member.sample_weight_.sum() == round(weight.sum())
        assert sorted(map(tuple, member.X_)) == sorted(map(tuple, X[np.unique(rows)]))


# ------------------------------------------------------------- what members are fitted on
class RecordingRegressor(RegressorMixin, BaseEstimator):
    """Predicts the mean of y; keeps the rows and weights it was fitted with."""

    def fit(self, X, y, sample_weight=None):
        self.X_, self.sample_weight_ = np.array(X), sample_weight
        self.mean_ = np.average(y, weights=sample_weight)
        return self

    def predict(self, X):
        return np.full(np.shape(X)[0], self.mean_)


class RecordingRegressorWithoutWeights(RegressorMixin, BaseEstimator):
    """As :class:`RecordingRegressor`, with a ``fit`` that takes no sample_weight."""

    def fit(self, X, y):
        self.X_ = np.array(X)
        self.mean_ = np.mean(y)
        return self

    def predict(self, X):
        return np.full(np.shape(X)[0], self.mean_)


def _id_data(n=60, n_features=4, seed=0):
    # Column 0 is the row id, so that a member's rows can be read off what it saw.
    rng = np.random.RandomState(seed)
    X = np.c_[np.arange(n), rng.normal(size=(n, n_features - 1))]
    return X, rng.normal(size=n)


def test_bootstrap_counts_become_sample_weights():
    X, y = _id_data()
    bag = BaggingRegressor(RecordingRegressor(), n_estimators=6, random_state=0).fit(X, y)
    for member, samples in zip(bag.estimators_, bag.estimators_samples_, strict=True):
        rows = member.X_[:, 0].astype(int)
        # Every row, each once, with its count as its weight (0 when not drawn, as in
        # scikit-learn's bagging); estimators_samples_ has a row as often as drawn.
        np.testing.assert_array_equal(rows, np.arange(60))
        np.testing.assert_array_equal(np.bincount(samples, minlength=60),
                                      member.sample_weight_)
        assert np.any(member.sample_weight_ == 0)
        assert np.all(member.sample_weight_ == np.round(member.sample_weight_))
        assert member.sample_weight_.sum() == 60
    # The mean of y over the drawn rows with repeats: a bootstrap mean.
    assert len({member.mean_ for member in bag.estimators_}) == 6


def test_estimator_without_sample_weight_gets_repeated_rows():
    X, y = _id_data()
    weighted = BaggingRegressor(RecordingRegressor(), n_estimators=6, random_state=0)
    repeated = BaggingRegressor(RecordingRegressorWithoutWeights(), n_estimators=6,
                                random_state=0)
    weighted.fit(X, y)
    repeated.fit(X, y)
    for with_weights, without in zip(weighted.estimators_, repeated.estimators_,
                                     strict=True):
        rows = without.X_[:, 0].astype(int)
        assert rows.shape == (60,)  # n drawn rows, repeats included
        counts = np.bincount(rows, minlength=60)
        ids = with_weights.X_[:, 0].astype(int)
        np.testing.assert_array_equal(counts[ids], with_weights.sample_weight_)
        assert without.mean_ == pytest.approx(with_weights.mean_)
    np.testing.assert_allclose(repeated.predict(X), weighted.predict(X))
    with pytest.raises(ValueError, match="takes no sample_weight"):
        repeated.fit(X, y, sample_weight=np.ones(60))


def test_without_bootstrap_each_member_gets_exactly_half_of_the_rows():
    X, y = _id_data(n=60)
    bag = BaggingRegressor(RecordingRegressor(), n_estimators=5, max_samples=0.5,
                           bootstrap=False, random_state=0).fit(X, y)
    for member, samples in zip(bag.estimators_, bag.estimators_samples_, strict=True):
        assert samples.shape == (30,) and np.unique(samples).shape == (30,)
        # Every row reaches the member, the 30 drawn with weight 1, the others 0.
        np.testing.assert_array_equal(member.X_[:, 0].astype(int), np.arange(60))
        np.testing.assert_array_equal(np.flatnonzero(member.sample_weight_), samples)
        np.testing.assert_array_equal(member.sample_weight_[samples], np.ones(30))
    # Different members draw different halves.
    assert len({tuple(s) for s in bag.estimators_samples_}) == 5
    counted = BaggingRegressor(RecordingRegressor(), n_estimators=3, max_samples=17,
                               bootstrap=False, random_state=0).fit(X, y)
    assert all(s.shape == (17,) for s in counted.estimators_samples_)


@pytest.mark.parametrize("bootstrap_features", [False, True])
def test_feature_subsets(bootstrap_features):
    X, y = make_classification(200, 6, random_state=0)
    bag = BaggingClassifier(n_estimators=8, max_features=0.5,
                            bootstrap_features=bootstrap_features, random_state=0).fit(X, y)
    features = bag.estimators_features_
    assert all(f.shape == (3,) and f.min() >= 0 and f.max() < 6 for f in features)
    if bootstrap_features:
        assert any(len(np.unique(f)) < 3 for f in features)  # drawn with replacement
    else:
        assert all(len(np.unique(f)) == 3 for f in features)
    assert len({tuple(f) for f in features}) > 1
    # Each member predicts from its own columns.
    proba = np.mean([member.predict_proba(X[:, f])
                     for member, f in zip(bag.estimators_, features, strict=True)], axis=0)
    np.testing.assert_allclose(bag.predict_proba(X), proba)
    assert all(member.n_features_in_ == 3 for member in bag.estimators_)


# ----------------------------------------------------------------- foreign estimators
@pytest.mark.parametrize("estimator", [KNeighborsClassifier(5), LinearSVC()])
def test_classifier_around_foreign_estimator_equals_hand_refits(estimator):
    X, y = make_classification(200, 6, n_classes=3, n_informative=4, random_state=0)
    voting = "soft" if hasattr(estimator, "predict_proba") else "hard"
    bag = BaggingClassifier(estimator, n_estimators=6, max_samples=0.5, max_features=0.8,
                            bootstrap=False, voting=voting, random_state=0).fit(X, y)
    shares = np.zeros((200, 3))
    for samples, features in zip(bag.estimators_samples_, bag.estimators_features_,
                                 strict=True):
        member = clone(estimator).fit(X[np.ix_(samples, features)], y[samples])
        if voting == "soft":
            shares += member.predict_proba(X[:, features])
        else:
            shares[np.arange(200), member.predict(X[:, features])] += 1
    np.testing.assert_allclose(bag.predict_proba(X), shares / 6)
    # Where two classes tie up to rounding the first wins; compare the clear cases.
    top_two = np.sort(shares, axis=1)[:, -2:]
    clear = top_two[:, 1] - top_two[:, 0] > 1e-9
    np.testing.assert_array_equal(bag.predict(X)[clear], np.argmax(shares, axis=1)[clear])


@pytest.mark.parametrize("estimator", [Ridge(alpha=1.0), KNeighborsRegressor(5)])
def test_regressor_around_foreign_estimator_equals_hand_refits(estimator):
    X, y = make_regression(200, 5, noise=5.0, random_state=0)
    bag = BaggingRegressor(estimator, n_estimators=5, max_samples=0.5, max_features=0.6,
                           bootstrap=False, random_state=0).fit(X, y)
    expected = np.mean([
        clone(estimator).fit(X[np.ix_(samples, features)], y[samples]).predict(X[:, features])
        for samples, features in zip(bag.estimators_samples_, bag.estimators_features_,
                                     strict=True)], axis=0)
    np.testing.assert_allclose(bag.predict(X), expected)


def test_foreign_estimators_with_bootstrap_score_like_sklearn():
    X, y = make_classification(600, 8, random_state=0)
    X_test, y_test = X[400:], y[400:]
    for estimator in (KNeighborsClassifier(5), LinearSVC()):
        voting = "soft" if hasattr(estimator, "predict_proba") else "hard"
        ours = BaggingClassifier(estimator, n_estimators=10, voting=voting,
                                 random_state=0).fit(X[:400], y[:400])
        theirs = ensemble.BaggingClassifier(estimator, n_estimators=10,
                                            random_state=0).fit(X[:400], y[:400])
        # 200 test rows: a standard error of about 0.02 per score.
        assert abs(ours.score(X_test, y_test) - theirs.score(X_test, y_test)) <= 0.04


# ---------------------------------------------------------------------------- voting
def test_hard_and_soft_voting():
    X, y = make_classification(300, 6, n_classes=3, n_informative=4, random_state=0)
    # Shallow trees, whose leaf probabilities are not one-hot like their votes.
    tree = DecisionTreeClassifier(max_depth=3)
    soft = BaggingClassifier(tree, n_estimators=7, max_features=0.5, random_state=0).fit(X, y)
    hard = BaggingClassifier(tree, n_estimators=7, max_features=0.5, voting="hard",
                             random_state=0).fit(X, y)
    members = list(zip(soft.estimators_, soft.estimators_features_, strict=True))
    proba = np.mean([m.predict_proba(X[:, f]) for m, f in members], axis=0)
    votes = np.array([m.predict(X[:, f]) for m, f in members])
    shares = np.stack([(votes == k).mean(axis=0) for k in range(3)], axis=1)
    np.testing.assert_allclose(soft.predict_proba(X), proba)
    np.testing.assert_allclose(hard.predict_proba(X), shares)
    np.testing.assert_array_equal(hard.predict(X), np.argmax(shares, axis=1))
    # Same members, different combination.
    assert not np.allclose(soft.predict_proba(X), hard.predict_proba(X))


def test_soft_voting_without_predict_proba_votes():
    """Members without predict_proba vote under soft voting too, as in scikit-learn's
    bagging: the same predictions and vote shares as voting="hard"."""
    X, y = make_classification(60, 4, random_state=0)
    with pytest.raises(ValueError, match="voting"):
        BaggingClassifier(n_estimators=3, voting="majority").fit(X, y)
    hard = BaggingClassifier(LinearSVC(), n_estimators=3, voting="hard",
                             random_state=0).fit(X, y)
    soft = BaggingClassifier(LinearSVC(), n_estimators=3, random_state=0).fit(X, y)
    assert hard.score(X, y) > 0.8
    np.testing.assert_array_equal(soft.predict_proba(X), hard.predict_proba(X))
    np.testing.assert_array_equal(soft.predict(X), hard.predict(X))


def test_string_labels_and_unseen_classes_in_members():
    # A member's bootstrap may miss a class; its probabilities still land in the
    # ensemble's columns for the right classes.
    X, y = make_classification(40, 4, n_classes=4, n_informative=3, n_redundant=0,
                               n_clusters_per_class=1, random_state=0)
    labels = np.array(["w", "x", "y", "z"])[y]
    bag = BaggingClassifier(KNeighborsClassifier(3), n_estimators=6, max_samples=8,
                            random_state=0).fit(X, labels)
    np.testing.assert_array_equal(bag.classes_, ["w", "x", "y", "z"])
    assert any(len(m.classes_) < 4 for m in bag.estimators_)
    np.testing.assert_allclose(bag.predict_proba(X).sum(axis=1), 1.0)
    assert set(bag.predict(X)) <= set(bag.classes_)


# ------------------------------------------------------------------------ out of bag
def test_oob_decision_function_matches_direct_computation():
    X, y = make_classification(150, 5, n_classes=3, n_informative=3, random_state=0)
    bag = BaggingClassifier(n_estimators=20, max_features=0.8, oob_score=True,
                            random_state=0).fit(X, y)
    sums = np.zeros((150, 3))
    counts = np.zeros(150)
    for member, samples, features in zip(bag.estimators_, bag.estimators_samples_,
                                         bag.estimators_features_, strict=True):
        out = np.setdiff1d(np.arange(150), samples)
        sums[out] += member.predict_proba(X[np.ix_(out, features)])
        counts[out] += 1
    assert (counts > 0).all()
    np.testing.assert_allclose(bag.oob_decision_function_, sums / counts[:, None])
    np.testing.assert_allclose(bag.oob_decision_function_.sum(axis=1), 1.0)
    assert bag.oob_score_ == pytest.approx(np.mean(np.argmax(sums, axis=1) == y))


@pytest.mark.parametrize("cls", [BaggingClassifier, BaggingRegressor])
def test_oob_score_estimates_held_out_score_and_matches_sklearn(cls):
    # Test set twice the training set (see tests/test_forest.py for the tolerance).
    if cls is BaggingClassifier:
        X, y = make_classification(6000, 10, n_informative=5, random_state=0)
    else:
        X, y = make_regression(6000, 10, n_informative=5, noise=10.0, random_state=0)
    bag = cls(n_estimators=30, oob_score=True, random_state=0).fit(X[:2000], y[:2000])
    assert abs(bag.oob_score_ - bag.score(X[2000:], y[2000:])) <= 0.02
    reference = getattr(ensemble, cls.__name__)(
        n_estimators=30, oob_score=True, random_state=0).fit(X[:2000], y[:2000])
    assert abs(bag.oob_score_ - reference.oob_score_) <= 0.02


def test_oob_prediction_of_regressor():
    X, y = make_regression(150, 4, noise=5.0, random_state=0)
    bag = BaggingRegressor(Ridge(), n_estimators=20, oob_score=True, random_state=0).fit(X, y)
    sums = np.zeros(150)
    counts = np.zeros(150)
    for member, samples in zip(bag.estimators_, bag.estimators_samples_, strict=True):
        out = np.setdiff1d(np.arange(150), samples)
        sums[out] += member.predict(X[out])
        counts[out] += 1
    np.testing.assert_allclose(bag.oob_prediction_, sums / counts)
    assert bag.oob_score_ == pytest.approx(1 - np.sum((sums / counts - y) ** 2)
                                           / np.sum((y - y.mean()) ** 2))


# ------------------------------------------------------------- determinism, warm start
def _member_tree_arrays(bag):
    return [(m.tree_.feature, m.tree_.threshold, m.tree_.value) for m in bag.estimators_]


@pytest.mark.parametrize("cls", [BaggingClassifier, BaggingRegressor])
def test_same_ensemble_for_any_number_of_jobs(cls):
    X, y = make_classification(300, 6, random_state=0)
    fits = [cls(n_estimators=6, max_features=0.7, random_state=0, n_jobs=n_jobs).fit(X, y)
            for n_jobs in (1, 2, -1)]
    predict = "predict_proba" if cls is BaggingClassifier else "predict"
    for other in fits[1:]:
        np.testing.assert_array_equal(getattr(other, predict)(X), getattr(fits[0], predict)(X))
        for mine, theirs in zip(_member_tree_arrays(fits[0]), _member_tree_arrays(other),
                                strict=True):
            for a, b in zip(mine, theirs, strict=True):
                np.testing.assert_array_equal(a, b)
    other_seed = cls(n_estimators=6, max_features=0.7, random_state=1).fit(X, y)
    assert not np.array_equal(getattr(other_seed, predict)(X), getattr(fits[0], predict)(X))


@pytest.mark.filterwarnings("ignore:.*no out-of-bag prediction:UserWarning")
@pytest.mark.parametrize("cls", [BaggingClassifier, BaggingRegressor])
def test_warm_start_equals_one_fit(cls):
    X, y = make_classification(200, 6, random_state=0)
    bag = cls(n_estimators=5, max_features=0.7, warm_start=True, random_state=0).fit(X, y)
    first = list(bag.estimators_)
    bag.set_params(n_estimators=12, oob_score=True).fit(X, y)
    at_once = cls(n_estimators=12, max_features=0.7, oob_score=True, random_state=0).fit(X, y)
    assert bag.estimators_[:5] == first  # kept, not refitted
    for name in ("estimators_samples_", "estimators_features_"):
        for a, b in zip(getattr(bag, name), getattr(at_once, name), strict=True):
            np.testing.assert_array_equal(a, b)
    predict = "predict_proba" if cls is BaggingClassifier else "predict"
    np.testing.assert_array_equal(getattr(bag, predict)(X), getattr(at_once, predict)(X))
    assert bag.oob_score_ == at_once.oob_score_
    with pytest.raises(ValueError, match="n_estimators=4 must be at least the 12"):
        bag.set_params(n_estimators=4).fit(X, y)
    with pytest.raises(ValueError, match="same data"):
        bag.set_params(n_estimators=14).fit(X[:150], y[:150])


# ------------------------------------------------------ categorical and missing values
def _categorical_frame(n=500, seed=0):
    rng = np.random.RandomState(seed)
    category = rng.randint(0, 8, n)
    x = rng.normal(size=n)
    missing = rng.uniform(size=n) < 0.3
    x[missing] = np.nan
    y = (np.isin(category, [1, 4, 6]) ^ missing).astype(int)
    frame = pd.DataFrame({"c": pd.Categorical(np.array(list("pqrstuvw"))[category]),
                          "x": x, "noise": rng.normal(size=n)})
    return frame, y


def test_categorical_and_missing_values_with_silva_trees():
    frame, y = _categorical_frame()
    bag = BaggingClassifier(n_estimators=10, categorical_features="auto",
                            random_state=0).fit(frame[:350], y[:350])
    np.testing.assert_array_equal(bag.is_categorical_, [True, False, False])
    assert bag.score(frame[350:], y[350:]) >= 0.97
    # Members given a subset of the columns get the matching categorical mask.
    subset = BaggingClassifier(n_estimators=6, max_features=2, categorical_features="auto",
                               random_state=0).fit(frame, y)
    for member, features in zip(subset.estimators_, subset.estimators_features_,
                                strict=True):
        np.testing.assert_array_equal(member.is_categorical_, features == 0)
    regressor = BaggingRegressor(n_estimators=10, categorical_features="auto",
                                 random_state=0).fit(frame[:350], 2.0 * y[:350])
    assert regressor.score(frame[350:], 2.0 * y[350:]) > 0.9


# -------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("params, error, message", [
    ({"max_samples": 0}, ValueError, "max_samples"),
    ({"max_samples": 1.5}, ValueError, "max_samples"),
    ({"max_samples": -1}, ValueError, "max_samples"),
    ({"max_samples": 0.0}, ValueError, "max_samples"),
    ({"max_samples": 41}, ValueError, r"max_samples as a count must be in \[1, 40\]"),
    ({"max_samples": "all"}, TypeError, "max_samples"),
    ({"max_features": 0}, ValueError, "max_features"),
    ({"max_features": 1.5}, ValueError, "max_features"),
    ({"max_features": 5}, ValueError, r"max_features as a count must be in \[1, 4\]"),
    ({"max_features": None}, TypeError, "max_features"),
    ({"oob_score": True, "bootstrap": False}, ValueError, "oob_score=True needs bootstrap"),
    ({"n_estimators": 0}, ValueError, "n_estimators"),
    ({"bootstrap_features": 1}, ValueError, "bootstrap_features"),
    ({"n_jobs": 0}, ValueError, "n_jobs"),
])
@pytest.mark.parametrize("cls", [BaggingClassifier, BaggingRegressor])
def test_bad_parameters(cls, params, error, message):
    X, y = make_classification(40, 4, random_state=0)
    with pytest.raises(error, match=message):
        cls(**{"n_estimators": 3, **params}).fit(X, y)


@pytest.mark.parametrize("cls, n_samples", [
    (BaggingClassifier, 1), (BaggingRegressor, 1), (BaggingRegressor, 2)])
def test_too_few_samples_for_oob(cls, n_samples):
    # One sample is in every bootstrap; one member leaves at most one of two out, and an
    # out-of-bag R² needs two.
    X = np.arange(n_samples, dtype=float)[:, None]
    y = np.arange(n_samples)
    with pytest.raises(ValueError, match="oob_score=True: only [01] of"):
        cls(n_estimators=1, oob_score=True, random_state=0).fit(X, y)


def test_bad_targets_and_shapes():
    X, y = make_classification(40, 4, random_state=0)
    for bad in (np.nan, np.inf):
        y_bad = y.astype(float)
        y_bad[3] = bad
        with pytest.raises(ValueError, match="y contains NaN or infinity"):
            BaggingRegressor(n_estimators=3).fit(X, y_bad)
        with pytest.raises(ValueError, match="y contains (NaN|infinity)"), \
                np.errstate(invalid="ignore"):
            BaggingClassifier(n_estimators=3).fit(X, y_bad)
    with pytest.raises(ValueError, match=r"y must have shape \(40,\)"):
        BaggingClassifier(n_estimators=3).fit(X, y[:-1])
    with pytest.raises(ValueError, match=r"BaggingRegressor: y must be one-dimensional"):
        BaggingRegressor(n_estimators=3).fit(X, np.c_[y, y][:, :, None])
    with pytest.raises(ValueError, match=r"y must have shape \(40,\)"):
        BaggingClassifier(n_estimators=3).fit(X, np.c_[y, y])
    with pytest.raises(ValueError, match="requires y"):
        BaggingRegressor(n_estimators=3).fit(X, None)
    for cls in (BaggingClassifier, BaggingRegressor):
        with pytest.raises(TypeError, match="estimator must be a scikit-learn estimator.*30"):
            cls(30).fit(X, y)  # the count passed where the estimator goes
    bag = BaggingClassifier(n_estimators=3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        bag.predict(X[:, :3])
    with pytest.raises(NotFittedError):
        BaggingClassifier().predict(X)


# ------------------------------------------------------------------------ persistence
@pytest.mark.filterwarnings("ignore:.*no out-of-bag prediction:UserWarning")
def test_save_and_load_with_silva_trees(tmp_path):
    frame, y = _categorical_frame(200)
    for bag in (BaggingClassifier(n_estimators=5, max_features=2, oob_score=True,
                                  categorical_features="auto", random_state=0),
                BaggingRegressor(n_estimators=5, categorical_features="auto",
                                 random_state=0)):
        bag.fit(frame, y)
        path = tmp_path / f"{type(bag).__name__}.silva"
        bag.save(path)
        loaded = silva.load(path)
        assert type(loaded) is type(bag)
        predict = "predict_proba" if isinstance(bag, BaggingClassifier) else "predict"
        np.testing.assert_array_equal(getattr(loaded, predict)(frame),
                                      getattr(bag, predict)(frame))
        for a, b in zip(loaded.estimators_features_, bag.estimators_features_, strict=True):
            np.testing.assert_array_equal(a, b)


def test_save_and_load_with_foreign_estimator_needs_allow_pickle(tmp_path):
    X, y = make_classification(100, 4, random_state=0)
    bag = BaggingClassifier(KNeighborsClassifier(3), n_estimators=3, random_state=0).fit(X, y)
    path = tmp_path / "bag.silva"
    with pytest.raises(ValueError, match="allow_pickle=True"):
        bag.save(path)
    bag.save(path, allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle=True"):
        silva.load(path)
    loaded = silva.load(path, allow_pickle=True)
    np.testing.assert_array_equal(loaded.predict_proba(X), bag.predict_proba(X))


def test_default_estimator_is_a_fully_grown_silva_tree():
    X, y = make_classification(100, 4, random_state=0)
    bag = BaggingClassifier(n_estimators=2, random_state=0).fit(X, y)
    assert all(type(m) is DecisionTreeClassifier and m.max_depth is None
               for m in bag.estimators_)
    assert bag.estimators_[0].random_state != bag.estimators_[1].random_state


def test_prediction_never_draws_rows():
    # A model file states the row counts of the draws; prediction needs each member's
    # columns only, so an edited (huge) row count must not be allocated when predicting.
    X, y = load_breast_cancer(return_X_y=True)
    model = BaggingClassifier(n_estimators=4, max_features=0.5, random_state=0).fit(X, y)
    expected = model.predict_proba(X)
    model._fit_signature = (10**13, X.shape[1])
    model._draw_sizes = (10**13, model._draw_sizes[1])
    np.testing.assert_array_equal(model.predict_proba(X), expected)


def test_ensemble_face_of_scikit_learn():
    """len(), indexing, iteration, estimator_ and the warning of a warm start that adds
    nothing, as scikit-learn's ensembles have them."""
    X, y = make_classification(60, 4, random_state=0)
    bag = BaggingClassifier(n_estimators=4, warm_start=True, random_state=0).fit(X, y)
    assert len(bag) == 4
    assert bag[1] is bag.estimators_[1]
    assert list(bag) == bag.estimators_
    assert type(bag.estimator_).__name__ == "DecisionTreeClassifier"
    with pytest.warns(UserWarning, match="without increasing n_estimators"):
        bag.fit(X, y)
    assert len(bag) == 4


def test_decision_function_is_the_members_mean():
    """Available when the estimator has one: the mean of the members' decision
    functions on their columns, as scikit-learn's bagging gives it."""
    X, y = make_classification(80, 6, n_informative=4, n_classes=3, random_state=0)
    bag = BaggingClassifier(LinearSVC(), n_estimators=4, max_features=0.5,
                            random_state=0).fit(X, y)
    members = zip(bag.estimators_, bag.estimators_features_, strict=True)
    expected = np.mean([m.decision_function(X[:, f]) for m, f in members], axis=0)
    np.testing.assert_allclose(bag.decision_function(X), expected)
    assert bag.decision_function(X).shape == (80, 3)
    assert not hasattr(BaggingClassifier(n_estimators=2).fit(X, y), "decision_function")


# ------------------------------------------- scikit-learn's bagging tests (issue 23 item 1)
def _impute_infinity(X):
    X = np.array(X, dtype=np.float64)
    X[~np.isfinite(X)] = 0.0
    return X


def test_infinity_reaches_a_foreign_estimator_but_not_a_silva_tree():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    X, y = make_classification(40, 4, random_state=0)
    X[::7, 1] = np.inf
    X[1::7, 2] = -np.inf
    imputing = make_pipeline(FunctionTransformer(_impute_infinity), DecisionTreeClassifier())
    bag = BaggingClassifier(imputing, n_estimators=3, random_state=0).fit(X, y)
    expected = BaggingClassifier(imputing, n_estimators=3, random_state=0).fit(
        _impute_infinity(X), y)
    np.testing.assert_array_equal(bag.predict_proba(X), expected.predict_proba(X))
    with pytest.raises(ValueError, match="infinity"):
        BaggingClassifier(n_estimators=3).fit(X, y)


def test_nested_random_states_are_seeded_and_refit_reproduces_the_member():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.random_projection import GaussianRandomProjection

    X, y = make_classification(80, 6, random_state=0)
    pipeline = make_pipeline(GaussianRandomProjection(n_components=2), LogisticRegression())
    bag = BaggingClassifier(pipeline, n_estimators=3, max_samples=0.5,
                            random_state=0).fit(X, y)
    seeds = [m.steps[0][1].random_state for m in bag.estimators_]
    assert all(isinstance(seed, int) for seed in seeds) and len(set(seeds)) == 3
    # A pipeline has no sample_weight: it was fitted on the drawn rows with repeats,
    # which estimators_samples_ lists, so refitting it gives the same coefficients.
    member = bag.estimators_[0]
    rows, features = bag.estimators_samples_[0], bag.estimators_features_[0]
    assert rows.shape == (40,) and np.unique(rows).shape[0] < 40
    coef = member.steps[-1][1].coef_.copy()
    member.fit(X[rows][:, features], y[rows])
    np.testing.assert_array_equal(member.steps[-1][1].coef_, coef)


def test_tree_subclass_whose_fit_takes_no_sample_weight_gets_repeated_rows():
    class RowRecordingTree(silva.DecisionTreeRegressor):
        def fit(self, X, y):
            self.rows_ = np.asarray(y)
            return super().fit(X, y)

    X = np.random.RandomState(0).normal(size=(13, 4))
    bag = BaggingRegressor(RowRecordingTree(), n_estimators=2, random_state=0).fit(
        X, np.arange(13.0))
    for member, rows in zip(bag.estimators_, bag.estimators_samples_, strict=True):
        np.testing.assert_array_equal(member.rows_, rows)
        assert rows.shape == (13,)


def test_a_member_whose_draw_misses_a_class_still_sees_it_with_weight_zero():
    from sklearn.linear_model import LogisticRegression

    X, y = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1, 0])
    # One column, drawn rows that may all be of one class: each member gets both rows.
    bag = BaggingClassifier(LogisticRegression(), max_features=0.3, random_state=1).fit(X, y)
    assert all(list(member.classes_) == [0, 1] for member in bag.estimators_)
    assert bag.predict_proba(X).shape == (2, 2)


class _PredictRecorder(BaseEstimator):
    """A classifier without predict_proba whose predict keeps the metadata it got."""

    _estimator_type = "classifier"

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.majority_ = np.bincount(y).argmax()
        return self

    def predict(self, X, scale=None):
        self.scale_ = scale
        return np.full(np.shape(X)[0], self.majority_)


def test_prediction_metadata_is_routed_to_the_member_method_called():
    import sklearn

    X, y = make_classification(40, 4, random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        member = _PredictRecorder().set_predict_request(scale=True)
        bag = BaggingClassifier(member, n_estimators=3, random_state=0).fit(X, y)
        # Without predict_proba, predict and predict_log_proba call the members' predict.
        assert bag._member_callees()["predict_log_proba"] == "predict"
        bag.predict_log_proba(X, scale=2.0)
        assert all(m.scale_ == 2.0 for m in bag.estimators_)
        bag.predict(X, scale=3.0)
        assert all(m.scale_ == 3.0 for m in bag.estimators_)
    with pytest.raises(ValueError, match="metadata routing enabled"):
        bag.predict(X, scale=1.0)


def test_regressor_on_a_multi_output_y_averages_its_members():
    # scikit-learn's bagging passes a 2-D y to its members and averages their 2-D
    # predictions; silva's default tree is then a multi-output tree, and a foreign member
    # (k nearest neighbours, which takes a 2-D y) gets the y as it is.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 4))
    Y = np.column_stack([X[:, 0] + 0.1 * rng.normal(size=150), X[:, 1] ** 2])
    for estimator in (None, KNeighborsRegressor(3)):
        bag = BaggingRegressor(estimator, n_estimators=20, oob_score=True,
                               random_state=0).fit(X, Y)
        assert bag.n_outputs_ == 2
        members = [member.predict(X[:, features]) for member, features
                   in zip(bag.estimators_, bag.estimators_features_, strict=True)]
        assert members[0].shape == (150, 2)
        np.testing.assert_allclose(bag.predict(X), np.mean(members, axis=0), rtol=1e-12)
        # Out of bag: each row's mean over the members that did not draw it.
        total, count = np.zeros_like(Y), np.zeros(150)
        for member, features, rows in zip(bag.estimators_, bag.estimators_features_,
                                          bag.estimators_samples_, strict=True):
            out = np.setdiff1d(np.arange(150), rows)
            total[out] += member.predict(X[np.ix_(out, features)])
            count[out] += 1
        expected = total / count[:, None]
        np.testing.assert_allclose(bag.oob_prediction_, expected, rtol=1e-12)
        assert bag.oob_score_ == pytest.approx(r2_score(Y, expected))
    with pytest.raises(ValueError, match="predict_interval does not support multi-output"):
        bag.predict_interval(X)
    with pytest.raises(ValueError, match="does not support multi-output"):
        BaggingRegressor(n_estimators=2, random_state=0).fit(X, Y).predict(
            X, pred_contrib=True)
