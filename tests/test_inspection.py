"""Permutation importance (silva/inspection.py), on held-out data and out of bag.

References: scikit-learn's permutation_importance (held-out data), and a direct
computation of Breiman's (2001, sec. 10) out-of-bag importance from the members'
out-of-bag rows: ``estimators_samples_`` for bagging, bootstrap samples regenerated from
each tree's seed for forests (as scikit-learn draws them; tests/test_forest.py checks
that this regeneration matches the trees).
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import NotFittedError
from sklearn.inspection import permutation_importance as sklearn_permutation_importance
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, mean_absolute_error, r2_score

from silva import (
    BaggingClassifier,
    BaggingRegressor,
    DecisionTreeClassifier,
    ExtraTreesClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
    permutation_importance,
)


def _informative_first(n=400, n_features=6, regression=False, seed=0):
    # shuffle=False: the first three columns are the informative ones, the rest noise.
    if regression:
        X, y = make_regression(n, n_features, n_informative=3, noise=5.0, shuffle=False,
                               random_state=seed)
    else:
        X, y = make_classification(n, n_features, n_informative=3, n_redundant=0,
                                   n_repeated=0, shuffle=False, random_state=seed)
    return X, y


# --------------------------------------------------------------------- held-out data
@pytest.mark.parametrize("model", [
    RandomForestClassifier(10, random_state=0),
    BaggingClassifier(n_estimators=5, random_state=0),
    LogisticRegression(),
])
def test_held_out_equals_sklearn(model):
    X, y = _informative_first()
    model.fit(X[:300], y[:300])
    ours = permutation_importance(model, X[300:], y[300:], n_repeats=4, random_state=3)
    theirs = sklearn_permutation_importance(model, X[300:], y[300:], n_repeats=4,
                                            random_state=3)
    for name in ("importances", "importances_mean", "importances_std"):
        np.testing.assert_array_equal(ours[name], theirs[name])
    assert ours.importances.shape == (6, 4)


def test_held_out_passes_scoring_and_sample_weight():
    X, y = _informative_first(regression=True)
    model = RandomForestRegressor(10, random_state=0).fit(X[:300], y[:300])
    weight = np.linspace(0.5, 2.0, 100)
    ours = permutation_importance(model, X[300:], y[300:], n_repeats=3, random_state=0,
                                  scoring="neg_mean_absolute_error", sample_weight=weight)
    theirs = sklearn_permutation_importance(model, X[300:], y[300:], n_repeats=3,
                                            random_state=0, scoring="neg_mean_absolute_error",
                                            sample_weight=weight)
    np.testing.assert_array_equal(ours.importances, theirs.importances)


# ----------------------------------------------------------------------- out of bag
def _members(model, n_samples):
    """(predict, features, out-of-bag rows) of each member, from public attributes."""
    if hasattr(model, "estimators_features_"):  # bagging (forests have no column draw)
        return [(member.predict, features, np.setdiff1d(np.arange(n_samples), samples))
                for member, features, samples in zip(
                    model.estimators_, model.estimators_features_,
                    model.estimators_samples_, strict=True)]
    members = []
    for tree in model.estimators_:
        drawn = np.random.RandomState(tree.random_state).randint(0, n_samples, n_samples)
        out = np.setdiff1d(np.arange(n_samples), drawn)
        members.append((tree.predict, np.arange(model.n_features_in_), out))
    return members


def _oob_importance(model, X, y, n_repeats, seed, metric):
    """Breiman's out-of-bag permutation importance, member by member.

    Shuffles are drawn in the order member, feature, repeat from one RandomState, the
    order silva documents for reproducibility with a given random_state.
    """
    random_state = np.random.RandomState(seed)
    drops = np.zeros((X.shape[1], n_repeats))
    n_members = 0
    for predict, features, rows in _members(model, X.shape[0]):
        if rows.size < 2:
            continue
        n_members += 1
        X_out = X[np.ix_(rows, features)]
        # Bagging members learn class indices, forests' trees predict labels.
        target = (np.searchsorted(model.classes_, y[rows])
                  if hasattr(model, "estimators_features_") and hasattr(model, "classes_")
                  else y[rows])
        baseline = metric(target, predict(X_out))
        for position, feature in enumerate(features):
            for repeat in range(n_repeats):
                shuffled = X_out.copy()
                shuffled[:, position] = X_out[random_state.permutation(rows.size), position]
                drops[feature, repeat] += baseline - metric(target, predict(shuffled))
    return drops / n_members


@pytest.mark.parametrize("make_model, regression", [
    (lambda: RandomForestClassifier(8, random_state=0), False),
    (lambda: RandomForestRegressor(8, random_state=0), True),
    (lambda: BaggingClassifier(n_estimators=8, max_features=0.75, random_state=0), False),
    (lambda: BaggingRegressor(n_estimators=8, max_features=0.75, bootstrap_features=True,
                              random_state=0), True),
])
def test_oob_matches_direct_computation(make_model, regression):
    X, y = _informative_first(n=200, n_features=4, regression=regression)
    if not regression:
        y = np.array(["no", "yes"])[y]  # labels are mapped to the members' classes
    model = make_model().fit(X, y)
    result = permutation_importance(model, X, y, n_repeats=2, oob=True, random_state=7)
    expected = _oob_importance(model, X, y, 2, 7, r2_score if regression else accuracy_score)
    np.testing.assert_allclose(result.importances, expected, atol=1e-12)
    np.testing.assert_allclose(result.importances_mean, expected.mean(axis=1), atol=1e-12)
    np.testing.assert_allclose(result.importances_std, expected.std(axis=1), atol=1e-12)


def test_oob_with_custom_metric():
    X, y = _informative_first(n=200, n_features=4, regression=True)
    model = RandomForestRegressor(6, random_state=0).fit(X, y)

    def neg_mae(y_true, y_pred):
        return -mean_absolute_error(y_true, y_pred)

    result = permutation_importance(model, X, y, n_repeats=2, oob=True, random_state=1,
                                    scoring=neg_mae)
    np.testing.assert_allclose(result.importances, _oob_importance(model, X, y, 2, 1, neg_mae),
                               atol=1e-12)


@pytest.mark.parametrize("make_model, regression", [
    (lambda: RandomForestClassifier(15, random_state=0), False),
    (lambda: RandomForestRegressor(15, random_state=0), True),
    (lambda: BaggingClassifier(n_estimators=15, random_state=0), False),
])
def test_oob_ranks_informative_features_first(make_model, regression):
    X, y = _informative_first(regression=regression)
    model = make_model().fit(X, y)
    result = permutation_importance(model, X, y, n_repeats=2, oob=True, random_state=0)
    assert result.importances.shape == (6, 2)
    assert result.importances_mean[:3].min() > result.importances_mean[3:].max()
    # Shuffling noise changes the out-of-bag score little; shuffling signal a lot.
    assert np.abs(result.importances_mean[3:]).max() < 0.05
    assert result.importances_mean[:3].max() > 0.1


def test_oob_is_deterministic_for_a_random_state():
    X, y = _informative_first(n=200, n_features=4)
    model = RandomForestClassifier(5, random_state=0).fit(X, y)
    first = permutation_importance(model, X, y, n_repeats=2, oob=True, random_state=5)
    again = permutation_importance(model, X, y, n_repeats=2, oob=True, random_state=5)
    assert first.importances.shape == (4, 2)
    np.testing.assert_array_equal(first.importances, again.importances)
    other = permutation_importance(model, X, y, n_repeats=2, oob=True, random_state=6)
    assert not np.array_equal(first.importances, other.importances)


def test_a_feature_a_member_lacks_contributes_zero():
    # Each member sees one of four columns: a column's importance is the mean over all
    # members of its drops, zero for the members without it.
    X, y = _informative_first(n=200, n_features=4)
    model = BaggingClassifier(n_estimators=6, max_features=1, random_state=0).fit(X, y)
    result = permutation_importance(model, X, y, n_repeats=2, oob=True, random_state=0)
    used = {int(f[0]) for f in model.estimators_features_}
    for feature in set(range(4)) - used:
        np.testing.assert_array_equal(result.importances[feature], 0.0)
    np.testing.assert_allclose(
        result.importances,
        _oob_importance(model, X, y, 2, 0, accuracy_score), atol=1e-12)


# -------------------------------------------------------------------------- errors
def test_oob_errors():
    X, y = _informative_first(n=100)
    forest = RandomForestClassifier(5, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="bootstrap=True"):
        permutation_importance(ExtraTreesClassifier(5, random_state=0).fit(X, y), X, y,
                               oob=True)
    with pytest.raises(ValueError, match="bootstrap=True"):
        permutation_importance(BaggingClassifier(n_estimators=3, bootstrap=False,
                                                 max_samples=0.5).fit(X, y), X, y, oob=True)
    for model in (DecisionTreeClassifier().fit(X, y), LogisticRegression().fit(X, y)):
        with pytest.raises(ValueError, match="silva forest or bagging"):
            permutation_importance(model, X, y, oob=True)
    with pytest.raises(ValueError, match="fitted on 100 samples, X has 60"):
        permutation_importance(forest, X[:60], y[:60], oob=True)
    bag = BaggingClassifier(n_estimators=3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="fitted on 100 samples, X has 60"):
        permutation_importance(bag, X[:60], y[:60], oob=True)
    with pytest.raises(ValueError, match=r"y must have shape \(100,\)"):
        permutation_importance(forest, X, y[:60], oob=True)
    with pytest.raises(ValueError, match="label not seen at fit: 7"):
        permutation_importance(forest, X, np.where(y == 1, 7, 0), oob=True)
    with pytest.raises(ValueError, match="sample_weight"):
        permutation_importance(forest, X, y, oob=True, sample_weight=np.ones(100))
    with pytest.raises(ValueError, match="scoring"):
        permutation_importance(forest, X, y, oob=True, scoring="accuracy")
    with pytest.raises(ValueError, match="n_repeats"):
        permutation_importance(forest, X, y, oob=True, n_repeats=0)
    with pytest.raises(NotFittedError):
        permutation_importance(RandomForestClassifier(), X, y, oob=True)
    with pytest.raises(ValueError, match="features"):
        permutation_importance(forest, X[:, :5], y, oob=True)
