"""Multi-output trees and forests: a 2-D y, one tree for all outputs.

The trees are compared node for node with scikit-learn's on the same data (ties aside,
as in test_vs_sklearn.py: :mod:`tests._compare`), for two and three outputs and for
classifiers whose outputs have different class counts; the joint criteria are also
checked against a brute-force search written here from their definition (the mean over
the outputs of each output's impurity decrease). Forests: a forest's prediction is the
mean of its trees', equals scikit-learn's exactly when every tree sees every sample and
feature (bootstrap=False, max_features=None, exact bins), and is as accurate as
scikit-learn's otherwise. Then persistence, options refused with a clear error, and the
single-output behaviour of a column-vector y.
"""

import warnings

import numpy as np
import pytest
from _compare import closest_sklearn_tree, compare_trees
from sklearn import ensemble as skensemble
from sklearn import tree as sktree
from sklearn.exceptions import DataConversionWarning

from silva import (
    AdaBoostClassifier,
    BaggingClassifier,
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from silva.persistence import load

EXACT_BINS = 255  # features below have at most 40 distinct values: binned exactly


def _features(n_samples, n_features, seed, n_values=40):
    rng = np.random.RandomState(seed)
    return rng.randint(0, n_values, size=(n_samples, n_features)).astype(np.float64), rng


def classification_data(n_outputs, seed=0, n_samples=240):
    """Outputs with 2, 3 and 4 classes, each depending on other features."""
    X, rng = _features(n_samples, 5, seed)
    columns = [
        (X[:, 0] + X[:, 1] + rng.randint(0, 15, n_samples) > 45).astype(int),
        ((X[:, 2] + rng.randint(0, 12, n_samples)) // 17).astype(int) % 3,
        np.digitize(X[:, 3] - X[:, 0] + rng.randint(0, 10, n_samples), [-10, 5, 20]),
    ]
    return X, np.column_stack(columns[:n_outputs])


def regression_data(n_outputs, seed=0, n_samples=240):
    X, rng = _features(n_samples, 5, seed)
    columns = [
        X[:, 0] * 2.0 + rng.normal(0, 5, n_samples),
        np.where(X[:, 1] > 20, 30.0, 0.0) + X[:, 2] + rng.normal(0, 3, n_samples),
        np.sin(X[:, 3] / 6.0) * 10 + rng.normal(0, 1, n_samples),
    ]
    return X, np.column_stack(columns[:n_outputs])


# --------------------------------------------------- node for node with scikit-learn

TREE_CASES = [
    ("classifier", "gini", 2), ("classifier", "gini", 3), ("classifier", "entropy", 2),
    ("classifier", "log_loss", 3), ("regressor", "squared_error", 2),
    ("regressor", "squared_error", 3),
]


def _fitted_pair(kind, criterion, n_outputs, sample_weight=None, **params):
    if kind == "classifier":
        X, Y = classification_data(n_outputs)
        ours, theirs = DecisionTreeClassifier, sktree.DecisionTreeClassifier
    else:
        X, Y = regression_data(n_outputs)
        ours, theirs = DecisionTreeRegressor, sktree.DecisionTreeRegressor
    model = ours(criterion=criterion, max_bins=EXACT_BINS, **params).fit(
        X, Y, sample_weight=sample_weight)
    reference, comparison = closest_sklearn_tree(
        model, lambda seed: theirs(criterion=criterion, random_state=seed, **params),
        X, Y, sample_weight)
    return X, Y, model, reference, comparison


@pytest.mark.parametrize(("kind", "criterion", "n_outputs"), TREE_CASES,
                         ids=[f"{k}-{c}-{n}" for k, c, n in TREE_CASES])
def test_same_tree_as_sklearn(kind, criterion, n_outputs):
    X, Y, model, reference, comparison = _fitted_pair(kind, criterion, n_outputs,
                                                      max_depth=6)
    st, kt = model.tree_, reference.tree_
    assert comparison.mismatches == []
    assert comparison.leaf_value_diffs == []  # every output's values, not only the first
    assert st.value.shape[1:] == kt.value.shape[1:]
    assert st.n_outputs == kt.n_outputs == n_outputs
    assert st.impurity[0] == pytest.approx(kt.impurity[0], rel=1e-10)
    # Most of the tree is compared split for split (ties are rare on this data).
    assert comparison.n_same + len(comparison.threshold_diffs) >= 0.8 * (
        st.node_count - model.get_n_leaves())
    if comparison.structure_comparable:
        assert model.get_n_leaves() == reference.get_n_leaves()
        if not comparison.feature_ties:
            np.testing.assert_allclose(model.feature_importances_,
                                       reference.feature_importances_, atol=1e-6)
    if kind == "classifier":
        assert [list(c) for c in model.classes_] == [list(c) for c in reference.classes_]
        np.testing.assert_array_equal(model.n_classes_, reference.n_classes_)


def test_fully_grown_trees_and_weights_match_sklearn():
    """Deep trees, sample weights: every split that differs is a tie."""
    rng = np.random.RandomState(3)
    weight = rng.uniform(0.5, 2.0, 240)
    for kind, criterion in (("classifier", "gini"), ("regressor", "squared_error")):
        _, _, model, _, comparison = _fitted_pair(kind, criterion, 3, sample_weight=weight)
        assert comparison.mismatches == []
        assert comparison.leaf_value_diffs == []
        assert model.tree_.node_count > 40


@pytest.mark.parametrize(("kind", "criterion", "params"), [
    ("classifier", "gini", {"max_leaf_nodes": 12}),
    ("regressor", "squared_error", {"max_leaf_nodes": 12}),
    ("classifier", "gini", {"min_impurity_decrease": 0.002}),
    ("regressor", "squared_error", {"min_impurity_decrease": 2.0, "min_samples_leaf": 5}),
], ids=["clf-leaves", "reg-leaves", "clf-decrease", "reg-decrease"])
def test_stopping_rules_match_sklearn(kind, criterion, params):
    """Best-first growth keeps the leaves of the largest mean improvements, and
    min_impurity_decrease bounds the mean weighted decrease, as in scikit-learn."""
    _, _, model, reference, comparison = _fitted_pair(kind, criterion, 3, **params)
    assert comparison.mismatches == comparison.leaf_value_diffs == []
    assert model.get_n_leaves() == reference.get_n_leaves()


def test_first_split_minimises_the_mean_of_the_output_impurities():
    """The root split against a brute-force search over every feature and threshold of
    the mean over outputs of the weighted gini decrease."""
    X, Y = classification_data(3, seed=5, n_samples=120)

    def gini(labels):
        if labels.size == 0:
            return 0.0
        return 1.0 - sum((np.bincount(labels) / labels.size) ** 2)

    def decrease(mask):
        n, n_left = mask.size, mask.sum()
        return np.mean([gini(Y[:, o]) - n_left / n * gini(Y[mask, o])
                        - (n - n_left) / n * gini(Y[~mask, o]) for o in range(Y.shape[1])])

    candidates = [(decrease(X[:, f] <= t), f, t) for f in range(X.shape[1])
                  for t in np.unique(X[:, f])[:-1]]
    best = max(c[0] for c in candidates)
    model = DecisionTreeClassifier(max_depth=1, max_bins=EXACT_BINS).fit(X, Y)
    feature, threshold = model.tree_.feature[0], model.tree_.threshold[0]
    assert decrease(X[:, feature] <= threshold) == pytest.approx(best, rel=1e-12)
    # The mean of the per-output gini impurities at the root.
    assert model.tree_.impurity[0] == pytest.approx(
        np.mean([gini(Y[:, o]) for o in range(3)]), rel=1e-12)


def test_leaf_values_are_per_output_class_fractions_and_means():
    X, Y = classification_data(2)
    model = DecisionTreeClassifier(max_depth=3).fit(X, Y)
    leaves = model.apply(X)
    probabilities = model.predict_proba(X)
    assert [p.shape for p in probabilities] == [(240, 2), (240, 3)]
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        for o, k in enumerate(model.n_classes_):
            expected = np.bincount(Y[rows, o], minlength=k) / rows.sum()
            np.testing.assert_allclose(probabilities[o][rows][0], expected)
    X, Y = regression_data(3)
    model = DecisionTreeRegressor(max_depth=3).fit(X, Y)
    leaves = model.apply(X)
    prediction = model.predict(X)
    assert prediction.shape == (240, 3)
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        np.testing.assert_allclose(prediction[rows][0], Y[rows].mean(axis=0))


def test_string_labels_and_class_weight_per_output():
    X, Y = classification_data(2)
    labels = np.column_stack([np.where(Y[:, 0] == 1, "yes", "no"),
                              np.array(["a", "b", "c"])[Y[:, 1]]])
    model = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, labels)
    assert set(model.predict(X)[:, 0]) <= {"yes", "no"}
    assert set(model.predict(X)[:, 1]) <= {"a", "b", "c"}
    # class_weight per output is the product of the outputs' factors, as sample_weight.
    class_weight = [{0: 1.0, 1: 3.0}, {0: 2.0, 1: 1.0, 2: 0.5}]
    weighted = DecisionTreeClassifier(class_weight=class_weight, max_depth=4).fit(X, Y)
    factors = (np.array([1.0, 3.0])[Y[:, 0]] * np.array([2.0, 1.0, 0.5])[Y[:, 1]])
    by_weight = DecisionTreeClassifier(max_depth=4).fit(X, Y, sample_weight=factors)
    np.testing.assert_array_equal(weighted.tree_.feature, by_weight.tree_.feature)
    for a, b in zip(weighted.predict_proba(X), by_weight.predict_proba(X), strict=True):
        np.testing.assert_allclose(a, b)
    with pytest.raises(ValueError, match="number of elements in class_weight"):
        DecisionTreeClassifier(class_weight=[{0: 1.0}]).fit(X, Y)


def test_missing_values_follow_the_learned_direction():
    X, Y = regression_data(2)
    X = X.copy()
    X[::7, 0] = np.nan
    model = DecisionTreeRegressor(max_depth=5).fit(X, Y)
    leaves = model.apply(X)
    prediction = model.predict(X)
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        np.testing.assert_allclose(prediction[rows][0], Y[rows].mean(axis=0))
    assert np.isfinite(model.predict(np.full((1, 5), np.nan))).all()


def test_cost_complexity_pruning_keeps_the_outputs():
    X, Y = classification_data(2)
    full = DecisionTreeClassifier(random_state=0).fit(X, Y)
    alphas = full.cost_complexity_pruning_path(X, Y).ccp_alphas
    pruned = DecisionTreeClassifier(ccp_alpha=alphas[-3]).fit(X, Y)
    assert 1 < pruned.tree_.node_count < full.tree_.node_count
    assert pruned.tree_.value.shape[1:] == full.tree_.value.shape[1:]
    assert pruned.predict(X).shape == (240, 2)


# ------------------------------------------------------------------------ forests

FOREST_CLASSES = [RandomForestClassifier, ExtraTreesClassifier, RandomForestRegressor,
                  ExtraTreesRegressor]


@pytest.mark.parametrize("forest_class", FOREST_CLASSES, ids=lambda c: c.__name__)
def test_forest_predicts_the_mean_of_its_trees(forest_class):
    classifier = "Classifier" in forest_class.__name__
    X, Y = classification_data(3) if classifier else regression_data(3)
    forest = forest_class(n_estimators=5, max_depth=6, random_state=0).fit(X, Y)
    if classifier:
        probabilities = forest.predict_proba(X)
        per_tree = [tree.predict_proba(X) for tree in forest.estimators_]
        for o in range(3):
            np.testing.assert_allclose(probabilities[o],
                                       np.mean([p[o] for p in per_tree], axis=0))
            assert probabilities[o].shape == (240, forest.n_classes_[o])
        expected = np.column_stack([forest.classes_[o][np.argmax(probabilities[o], axis=1)]
                                    for o in range(3)])
        np.testing.assert_array_equal(forest.predict(X), expected)
    else:
        np.testing.assert_allclose(
            forest.predict(X), np.mean([t.predict(X) for t in forest.estimators_], axis=0))
        assert forest.predict(X).shape == (240, 3)


def test_forests_without_randomness_equal_sklearn():
    """Every tree sees every sample and feature: each is the one CART tree, as in
    scikit-learn, split for split (ties aside) and with the same predictions."""
    X, Y = regression_data(2, seed=4)
    labels = classification_data(2, seed=4)[1]
    params = dict(n_estimators=3, bootstrap=False, max_features=None, max_depth=4)
    for ours, theirs, target in (
            (RandomForestRegressor, skensemble.RandomForestRegressor, Y),
            (RandomForestClassifier, skensemble.RandomForestClassifier, labels)):
        forest = ours(max_bins=EXACT_BINS, **params).fit(X, target)
        reference = theirs(random_state=0, **params).fit(X, target)
        tied = False
        for a, b in zip(forest.estimators_, reference.estimators_, strict=True):
            comparison = compare_trees(a.tree_, b.tree_, X)
            assert comparison.mismatches == comparison.leaf_value_diffs == []
            tied |= not comparison.structure_comparable
        assert not tied  # this data has no tie at these depths
        ours_prediction = forest.predict_proba(X) if ours is RandomForestClassifier \
            else [forest.predict(X)]
        theirs_prediction = reference.predict_proba(X) if ours is RandomForestClassifier \
            else [reference.predict(X)]
        for a, b in zip(ours_prediction, theirs_prediction, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("ours", "theirs"), [
    (RandomForestClassifier, skensemble.RandomForestClassifier),
    (ExtraTreesRegressor, skensemble.ExtraTreesRegressor)], ids=["rf-clf", "et-reg"])
def test_randomised_forests_are_as_accurate_as_sklearn(ours, theirs):
    classifier = "Classifier" in ours.__name__
    make = classification_data if classifier else regression_data
    X, Y = make(2, seed=1, n_samples=400)
    X_test, Y_test = make(2, seed=2, n_samples=400)

    def score(model):
        prediction = model.predict(X_test)
        if classifier:
            return np.mean(prediction == Y_test)
        return -np.mean((prediction - Y_test) ** 2)

    ours_scores = [score(ours(n_estimators=20, random_state=s).fit(X, Y)) for s in range(3)]
    theirs_scores = [score(theirs(n_estimators=20, random_state=s).fit(X, Y))
                     for s in range(3)]
    margin = 0.03 if classifier else 0.1 * abs(np.mean(theirs_scores))
    assert np.mean(ours_scores) >= np.mean(theirs_scores) - margin


def test_forest_out_of_bag_shapes_and_scores():
    X, Y = regression_data(2)
    forest = RandomForestRegressor(n_estimators=40, oob_score=True, random_state=0)
    forest.fit(X, Y)
    assert forest.oob_prediction_.shape == (240, 2)
    assert 0.3 < forest.oob_score_ < 1.0
    X, Y = classification_data(1)
    labels = np.column_stack([Y[:, 0], 1 - Y[:, 0], (X[:, 4] > 20).astype(int)])
    forest = RandomForestClassifier(n_estimators=40, oob_score=True, random_state=0)
    forest.fit(X, labels)
    assert forest.oob_decision_function_.shape == (240, 2, 3)
    covered = ~np.isnan(forest.oob_decision_function_[:, 0, 0])
    votes = np.argmax(forest.oob_decision_function_[covered], axis=1)
    assert forest.oob_score_ == pytest.approx(np.mean(np.all(votes == labels[covered],
                                                             axis=1)))
    with pytest.raises(ValueError, match="multiclass-multioutput"):
        RandomForestClassifier(oob_score=True).fit(*classification_data(2))


# -------------------------------------------------------------------- persistence


@pytest.mark.parametrize("model", [
    DecisionTreeClassifier(max_depth=4), DecisionTreeRegressor(max_depth=4),
    RandomForestClassifier(n_estimators=3, max_depth=4, random_state=0),
    ExtraTreesRegressor(n_estimators=3, max_depth=4, random_state=0)],
    ids=lambda m: type(m).__name__)
def test_save_and_load_round_trip(model, tmp_path):
    classifier = "Classifier" in type(model).__name__
    X, Y = classification_data(3) if classifier else regression_data(3)
    model.fit(X, Y)
    path = tmp_path / "model.silva"
    model.save(path)
    loaded = load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    if classifier:
        for a, b in zip(loaded.predict_proba(X), model.predict_proba(X), strict=True):
            np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------- refusals and one column


@pytest.mark.parametrize(("model", "match"), [
    (DecisionTreeRegressor(criterion="absolute_error"), "criterion='absolute_error'"),
    (RandomForestRegressor(criterion="poisson"), "criterion='poisson'"),
    (DecisionTreeClassifier(criterion="misclassification"),
     "criterion='misclassification'"),
    (DecisionTreeRegressor(monotonic_cst=[1, 0, 0, 0, 0]), "monotonic_cst"),
    (DecisionTreeRegressor(categorical_features=[0]), "categorical_features"),
    (DecisionTreeRegressor(ccp_alpha="cv"), "ccp_alpha='cv'"),
    (RandomForestRegressor(bootstrap="poisson"), "bootstrap='poisson'"),
])
def test_unsupported_options_are_refused_by_name(model, match):
    X, Y = regression_data(2)
    with pytest.raises(ValueError, match=match) as error:
        model.fit(X, np.abs(Y))
    assert type(model).__name__ in str(error.value)


@pytest.mark.parametrize("model", [AdaBoostClassifier(n_estimators=2),
                                   BaggingClassifier(n_estimators=2)],
                         ids=lambda m: type(m).__name__)
def test_other_ensembles_still_refuse_2d_y(model):
    X, Y = classification_data(2)
    with pytest.raises(ValueError, match="shape"):
        model.fit(X, Y)


def test_column_vector_y_is_single_output():
    X, Y = regression_data(1)
    with pytest.warns(DataConversionWarning):
        model = DecisionTreeRegressor(max_depth=3).fit(X, Y)
    assert model.n_outputs_ == 1
    assert model.predict(X).shape == (240,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flat = DecisionTreeRegressor(max_depth=3).fit(X, Y[:, 0])
    np.testing.assert_array_equal(flat.predict(X), model.predict(X))


def test_tags_say_multi_output():
    for estimator in (DecisionTreeClassifier(), DecisionTreeRegressor(),
                      RandomForestClassifier(), ExtraTreesRegressor()):
        assert estimator.__sklearn_tags__().target_tags.multi_output
    for estimator in (DecisionTreeRegressor(criterion="poisson"),
                      DecisionTreeClassifier(min_significance=0.05),
                      RandomForestRegressor(monotonic_cst=[1, 0])):
        assert not estimator.__sklearn_tags__().target_tags.multi_output


@pytest.mark.filterwarnings("ignore:.*no out-of-bag prediction:UserWarning")
def test_readers_of_one_output_refuse_multi_output_models():
    from silva import export_text
    from silva.additive_trees import additive_model
    from silva.tree_walk import iter_trees

    X, Y = regression_data(2)
    model = DecisionTreeRegressor(max_depth=2).fit(X, Y)
    with pytest.raises(ValueError, match="export_text.*multi-output.*2 outputs"):
        export_text(model)
    with pytest.raises(ValueError, match="SHAP values.*multi-output"):
        model.predict(X, pred_contrib=True)
    with pytest.raises(ValueError, match="ONNX or Treelite.*multi-output"):
        additive_model(model)
    forest = RandomForestRegressor(n_estimators=2, oob_score=True).fit(X, Y)
    with pytest.raises(ValueError, match="reading the trees.*multi-output"):
        list(iter_trees(forest))
    with pytest.raises(ValueError, match="predict_interval.*multi-output"):
        forest.predict_interval(X, method="jackknife+")
    with pytest.raises(ValueError, match="return_std=True is for single-output"):
        forest.predict(X, return_std=True)
    X, Y = classification_data(2)
    forest = RandomForestClassifier(n_estimators=2).fit(X, Y)
    with pytest.raises(ValueError, match="margin.*multi-output"):
        forest.margin(X, Y)
