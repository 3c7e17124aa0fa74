"""NothingLearnedWarning (silva._nothing_learned): a fit that learned nothing says so
once, naming the parameter that held at the root."""

import warnings

import numpy as np
import pytest

from silva import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    NothingLearnedWarning,
    RandomForestRegressor,
)

# The six-row table of the gradient-boosting lecture: height (m), favourite colour
# (0 blue, 1 green, 2 red), gender (0 male, 1 female) -> weight (kg). Its first
# prediction is the mean weight, 71.2.
LECTURE_X = np.array([[1.6, 0, 0], [1.6, 1, 1], [1.5, 0, 1],
                      [1.8, 2, 0], [1.5, 1, 0], [1.4, 0, 1]])
LECTURE_Y = np.array([88.0, 76.0, 56.0, 73.0, 77.0, 57.0])


def nothing_learned_messages(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = fit()
    return model, [str(w.message) for w in caught
                   if issubclass(w.category, NothingLearnedWarning)]


def test_boosting_defaults_on_the_lecture_table_warn_naming_min_samples_leaf():
    model, messages = nothing_learned_messages(
        lambda: GradientBoostingRegressor(n_estimators=10).fit(LECTURE_X, LECTURE_Y))
    np.testing.assert_allclose(model.predict(LECTURE_X), LECTURE_Y.mean())  # constant
    assert len(messages) == 1  # once per fit, not once per tree
    assert "grew no split in any of its 10 iterations" in messages[0]
    assert "min_samples_leaf=20" in messages[0] and "6 training rows" in messages[0]
    assert "a split needs 40" in messages[0]


def test_boosting_that_learns_gives_no_warning():
    model, messages = nothing_learned_messages(
        lambda: GradientBoostingRegressor(n_estimators=10, min_samples_leaf=1).fit(
            LECTURE_X, LECTURE_Y))
    assert messages == []
    assert np.ptp(model.predict(LECTURE_X)) > 0


@pytest.mark.parametrize("params, named", [
    ({"min_samples_leaf": 1, "min_child_weight": 10.0},
     "min_child_weight=10.0 leaves no room for two children: the root's hessian sum is 6"),
    ({"min_samples_leaf": 1, "min_split_gain": 1e9}, "min_split_gain=1000000000.0"),
    ({"min_samples_leaf": 1, "boosting": "gradient", "min_child_weight": 3.5},
     "min_child_weight=3.5"),
])
def test_boosting_names_the_parameter(params, named):
    _, messages = nothing_learned_messages(
        lambda: GradientBoostingRegressor(n_estimators=3, **params).fit(LECTURE_X,
                                                                        LECTURE_Y))
    assert len(messages) == 1 and named in messages[0]


def test_boosting_classifier_warns_too():
    _, messages = nothing_learned_messages(
        lambda: GradientBoostingClassifier(n_estimators=3).fit(LECTURE_X, [0, 1, 1, 0, 0, 1]))
    assert len(messages) == 1 and "min_samples_leaf=20" in messages[0]


@pytest.mark.parametrize("params, named", [
    ({"min_samples_leaf": 4}, "min_samples_leaf=4 leaves no room for two children among "
                              "the 6 training rows"),
    ({"min_samples_split": 7}, "min_samples_split=7 is more than the 6 training rows"),
    ({"min_samples_split": 0.99, "min_samples_leaf": 1}, None),  # ceil(0.99 * 6) = 6: splits
    ({"min_impurity_decrease": 1e6}, "min_impurity_decrease=1000000.0"),
    ({"ccp_alpha": 1e6}, "ccp_alpha=1000000.0 pruned the tree"),
    ({"min_weight_fraction_leaf": 0.5, "min_samples_leaf": 1}, None),  # 3 + 3 rows fit
])
def test_tree_names_the_parameter(params, named):
    model, messages = nothing_learned_messages(
        lambda: DecisionTreeRegressor(**params).fit(LECTURE_X, LECTURE_Y))
    if named is None:
        assert messages == [] and model.tree_.node_count > 1
    else:
        assert model.tree_.node_count == 1
        assert len(messages) == 1 and "DecisionTreeRegressor stopped at its root" in \
            messages[0] and named in messages[0]


def test_classifier_significance_test_is_named():
    rng = np.random.RandomState(0)
    X, y = rng.rand(60, 2), rng.randint(0, 2, 60)  # noise: nothing is significant
    model, messages = nothing_learned_messages(
        lambda: DecisionTreeClassifier(min_significance=0.001).fit(X, y))
    assert model.tree_.node_count == 1
    assert len(messages) == 1 and "min_significance=0.001" in messages[0]


def test_no_warning_for_a_constant_target_or_features():
    _, messages = nothing_learned_messages(
        lambda: DecisionTreeRegressor().fit(LECTURE_X, np.full(6, 70.0)))
    assert messages == []  # nothing to learn: the constant is the right model
    _, messages = nothing_learned_messages(
        lambda: GradientBoostingRegressor(n_estimators=3, min_samples_leaf=1).fit(
            LECTURE_X, np.full(6, 70.0)))
    assert messages == []
    _, messages = nothing_learned_messages(
        lambda: DecisionTreeRegressor().fit(np.ones((6, 2)), LECTURE_Y))
    assert len(messages) == 1 and "no feature takes two different values" in messages[0]


def test_a_forest_warns_once_not_per_tree():
    _, messages = nothing_learned_messages(
        lambda: RandomForestRegressor(n_estimators=7, min_samples_leaf=4,
                                      random_state=0).fit(LECTURE_X, LECTURE_Y))
    assert len(messages) == 1
    assert "every tree of RandomForestRegressor stopped at its root" in messages[0]
    assert "min_samples_leaf=4" in messages[0]
    _, messages = nothing_learned_messages(
        lambda: RandomForestRegressor(n_estimators=7, random_state=0).fit(LECTURE_X,
                                                                         LECTURE_Y))
    assert messages == []


def test_the_warning_points_at_the_callers_fit():
    with pytest.warns(NothingLearnedWarning) as record:
        DecisionTreeRegressor(min_samples_leaf=4).fit(LECTURE_X, LECTURE_Y)
    assert record[0].filename == __file__
    with pytest.warns(NothingLearnedWarning) as record:
        GradientBoostingRegressor(n_estimators=2).fit(LECTURE_X, LECTURE_Y)
    assert record[0].filename == __file__
    with pytest.warns(NothingLearnedWarning) as record:
        RandomForestRegressor(n_estimators=2, min_samples_leaf=4).fit(LECTURE_X, LECTURE_Y)
    assert record[0].filename == __file__


def test_cross_validated_pruning_to_the_root_names_the_chosen_alpha():
    rng = np.random.RandomState(0)
    X, y = rng.rand(80, 3), rng.rand(80)  # noise: cross-validation prunes everything
    model, messages = nothing_learned_messages(
        lambda: DecisionTreeRegressor(ccp_alpha="cv", random_state=0).fit(X, y))
    assert model.tree_.node_count == 1
    assert len(messages) == 1 and "ccp_alpha='cv' chose inf, which pruned" in messages[0]
