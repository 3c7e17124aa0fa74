"""SHAP values (``predict(X, pred_contrib=True)``) and interaction values of silva's tree
models: local accuracy on every estimator, hand-computed values on tiny trees, and
agreement with ``shap.TreeExplainer`` and LightGBM's ``pred_contrib`` on the same trees."""

import numpy as np
import pandas as pd
import pytest

from silva import (
    AdaBoostClassifier,
    AdaBoostRegressor,
    BaggingClassifier,
    BaggingRegressor,
    C45Classifier,
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    ID3Classifier,
    RandomForestClassifier,
    RandomForestRegressor,
)
from silva.explain import contributions


def _frame(seed=0, n=240):
    """Two numeric columns with missing values and a pandas categorical column."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = rng.normal(size=n)
    colour = rng.choice(["red", "green", "blue", "grey"], size=n)
    signal = a + (colour == "red") * 1.5 - (colour == "blue") + 0.5 * b * (a > 0)
    a[rng.random(n) < 0.15] = np.nan
    b[rng.random(n) < 0.15] = np.nan
    X = pd.DataFrame({"a": a, "b": b, "colour": pd.Categorical(colour)})
    return X, signal + 0.3 * rng.normal(size=n)


def _numeric(seed=0, n=240):
    X, y = _frame(seed, n)
    X = X.assign(colour=X["colour"].cat.codes.astype(float))
    return X.to_numpy(), y


def _blocks(model, X):
    values = model.predict(X, pred_contrib=True)
    n_features = model.n_features_in_
    assert values.shape[1] % (n_features + 1) == 0
    return values.reshape(values.shape[0], -1, n_features + 1)


def _check_additive(model, X, explained):
    blocks = _blocks(model, X)
    explained = np.asarray(explained, dtype=np.float64).reshape(len(X), -1)
    assert blocks.shape[1] == explained.shape[1]
    np.testing.assert_allclose(blocks.sum(axis=2), explained, rtol=0, atol=1e-9)
    # Not all zero: the test could not pass by returning only the bias.
    assert np.abs(blocks[:, :, :-1]).max() > 1e-3


def _classes(y, k):
    return np.digitize(y, np.quantile(y, np.linspace(0, 1, k + 1)[1:-1]))


# ------------------------------------------------------------------- additivity
@pytest.mark.parametrize("make", [
    lambda: DecisionTreeRegressor(max_depth=5, categorical_features="auto"),
    lambda: RandomForestRegressor(n_estimators=8, max_depth=6, random_state=0,
                                  categorical_features="auto"),
    lambda: ExtraTreesRegressor(n_estimators=8, max_depth=6, random_state=0,
                                categorical_features="auto"),
    lambda: GradientBoostingRegressor(n_estimators=10, max_leaf_nodes=8, min_samples_leaf=5,
                                      categorical_features="auto"),
], ids=["tree", "forest", "extra", "boosting"])
def test_regressors_are_additive_with_missing_and_categories(make):
    X, y = _frame()
    model = make().fit(X, y)
    _check_additive(model, X, model.predict(X))


@pytest.mark.parametrize("make", [
    lambda: DecisionTreeClassifier(max_depth=5, categorical_features="auto"),
    lambda: RandomForestClassifier(n_estimators=8, max_depth=6, random_state=0,
                                   categorical_features="auto"),
    lambda: ExtraTreesClassifier(n_estimators=8, max_depth=6, random_state=0,
                                 categorical_features="auto"),
], ids=["tree", "forest", "extra"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifiers_explain_probabilities(make, n_classes):
    X, y = _frame()
    model = make().fit(X, _classes(y, n_classes))
    _check_additive(model, X, model.predict_proba(X))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_gradient_boosting_classifier_explains_the_raw_score(n_classes):
    X, y = _frame()
    model = GradientBoostingClassifier(n_estimators=6, max_leaf_nodes=6, min_samples_leaf=5,
                                       categorical_features="auto")
    model.fit(X, _classes(y, n_classes))
    blocks = _blocks(model, X)
    assert blocks.shape[1] == (1 if n_classes == 2 else n_classes)  # as LightGBM
    _check_additive(model, X, model.decision_function(X))


@pytest.mark.parametrize("make", [
    lambda: ID3Classifier(max_depth=4),
    lambda: C45Classifier(min_samples_leaf=5),
], ids=["id3", "c45"])
def test_multiway_trees_are_additive(make):
    X, y = _frame()
    model = make().fit(X, _classes(y, 3))
    X_test, _ = _frame(seed=1, n=120)  # unseen paths and missing values blended by C4.5
    _check_additive(model, X_test, model.predict_proba(X_test))


def test_c45_blends_missing_values_with_fractional_one_fractions():
    X, y = _numeric()
    model = C45Classifier(min_samples_leaf=5).fit(X, _classes(y, 2))
    X_missing = X.copy()
    X_missing[:, 0] = np.nan  # every row is sent down all branches of the a-splits
    _check_additive(model, X_missing, model.predict_proba(X_missing))


@pytest.mark.parametrize("voting", ["soft", "hard"])
def test_bagging_classifier_with_feature_subsets(voting):
    X, y = _numeric()
    model = BaggingClassifier(DecisionTreeClassifier(max_depth=4), n_estimators=6,
                              max_features=2, voting=voting, random_state=0)
    model.fit(X, _classes(y, 3))
    _check_additive(model, X, model.predict_proba(X))


def test_bagging_of_c45_and_bagging_regressor():
    X, y = _numeric()
    model = BaggingClassifier(C45Classifier(min_samples_leaf=5), n_estimators=4,
                              max_features=2, random_state=0).fit(X, _classes(y, 2))
    _check_additive(model, X, model.predict_proba(X))
    model = BaggingRegressor(DecisionTreeRegressor(max_depth=4), n_estimators=5,
                             max_features=2, random_state=0).fit(X, y)
    _check_additive(model, X, model.predict(X))


@pytest.mark.parametrize("algorithm,n_classes", [("samme", 2), ("samme", 3), ("real", 2),
                                                 ("real", 3)])
def test_adaboost_explains_its_decision_function(algorithm, n_classes):
    X, y = _numeric()
    model = AdaBoostClassifier(DecisionTreeClassifier(max_depth=2), n_estimators=8,
                               algorithm=algorithm, random_state=0)
    model.fit(X, _classes(y, n_classes))
    _check_additive(model, X, model.decision_function(X))


def test_models_that_cannot_be_explained_say_why():
    X, y = _numeric(n=80)
    regressor = AdaBoostRegressor(DecisionTreeRegressor(max_depth=2), n_estimators=3,
                                  random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="AdaBoostRegressor.*weighted median"):
        regressor.predict(X, pred_contrib=True)
    from sklearn.linear_model import LinearRegression
    bagging = BaggingRegressor(LinearRegression(), n_estimators=2, random_state=0)
    bagging.fit(np.nan_to_num(X), y)
    with pytest.raises(ValueError, match="BaggingRegressor.*LinearRegression"):
        bagging.predict(np.nan_to_num(X), pred_contrib=True)
    id3 = ID3Classifier(max_depth=2).fit(X, _classes(y, 2))
    with pytest.raises(ValueError, match="ID3Classifier.*CART"):
        id3.predict(X, pred_interactions=True)
    boosting = GradientBoostingRegressor(n_estimators=2, max_leaf_nodes=4).fit(X, y)
    with pytest.raises(ValueError, match="iteration_range"):
        boosting.predict(X, iteration_range=(0, 1), pred_contrib=True)


# --------------------------------------------------------------- hand-computed
def _two_feature_tree():
    """Depth-2 regression tree on x0 then x1, each of the 4 cells holding 25 samples:
    f(0,0)=0, f(0,1)=10, f(1,0)=20, f(1,1)=40."""
    cells = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=float)
    X = np.repeat(cells, 25, axis=0)
    y = np.repeat([0.0, 10.0, 20.0, 40.0], 25)
    model = DecisionTreeRegressor(max_depth=2).fit(X, y)
    assert model.tree_.feature[0] == 0  # x0 separates the cells best (5 | 30)
    return model


def test_depth_two_tree_by_hand():
    model = _two_feature_tree()
    # With cover as the background, f(S) is the mean of the cells that agree with x on
    # S. For x = (1, 1): f({}) = 17.5, f({0}) = 30, f({1}) = 25, f({0,1}) = 40, and
    #   phi_0 = (f({0}) - f({}) + f({0,1}) - f({1})) / 2 = (12.5 + 15) / 2 = 13.75
    #   phi_1 = (f({1}) - f({}) + f({0,1}) - f({0})) / 2 = (7.5 + 10) / 2 = 8.75
    # For x = (0, 1): f({0}) = 5, f({1}) = 25, f({0,1}) = 10:
    #   phi_0 = (5 - 17.5 + 10 - 25) / 2 = -13.75, phi_1 = (25 - 17.5 + 10 - 5) / 2 = 6.25
    values = model.predict(np.array([[1.0, 1.0], [0.0, 1.0]]), pred_contrib=True)
    np.testing.assert_allclose(values, [[13.75, 8.75, 17.5], [-13.75, 6.25, 17.5]],
                               atol=1e-12)


def test_interactions_of_depth_two_tree_by_hand():
    model = _two_feature_tree()
    # Two features: Phi_01 = (f({0,1}) - f({0}) - f({1}) + f({})) / 2
    #   x = (1, 1): (40 - 30 - 25 + 17.5) / 2 = 1.25; main effects phi_i - Phi_01:
    #   Phi_00 = 13.75 - 1.25 = 12.5 (= f({0}) - f({})), Phi_11 = 8.75 - 1.25 = 7.5.
    values = model.predict(np.array([[1.0, 1.0]]), pred_interactions=True)
    np.testing.assert_allclose(values[0], [[12.5, 1.25, 0.0], [1.25, 7.5, 0.0],
                                           [0.0, 0.0, 17.5]], atol=1e-12)


def test_interaction_rows_sum_to_contributions():
    X, y = _frame()
    boosting = GradientBoostingRegressor(n_estimators=5, max_leaf_nodes=8, min_samples_leaf=5,
                                         categorical_features="auto").fit(X, y)
    forest = RandomForestClassifier(n_estimators=4, max_depth=5, random_state=0,
                                    categorical_features="auto").fit(X, _classes(y, 3))
    for model, n_outputs in ((boosting, 1), (forest, 3)):
        phi = _blocks(model, X)
        interactions = model.predict(X, pred_interactions=True)
        if n_outputs == 1:
            interactions = interactions[:, np.newaxis]
        assert interactions.shape == (len(X), n_outputs, 4, 4)
        np.testing.assert_allclose(interactions.sum(axis=3), phi, atol=1e-9)
        np.testing.assert_allclose(interactions, np.swapaxes(interactions, 2, 3), atol=1e-9)


# --------------------------------------------------------------- against shap
def _shap_model(trees, scale, base_offset=0.0):
    """A custom model for ``shap.TreeExplainer``: shap sends ``x < threshold`` left and
    silva ``x <= threshold``, so each threshold is moved up to the next float (the two
    tests then agree on every float)."""
    dicts = []
    for tree in trees:
        left, right = tree.children_left, tree.children_right
        default = np.where(tree.missing_go_to_left != 0, left, right)
        dicts.append(dict(
            children_left=left, children_right=right,
            children_default=np.where(left == -1, -1, default),
            features=np.where(left == -1, -2, tree.feature),
            thresholds=np.nextafter(tree.threshold, np.inf),
            values=tree.value[:, 0, :] * scale,
            node_sample_weight=tree.weighted_n_node_samples))
    return dict(trees=dicts, base_offset=base_offset)


@pytest.mark.parametrize("kind", ["tree", "forest", "boosting"])
def test_equal_to_shap_tree_explainer(kind):
    shap = pytest.importorskip("shap")
    X, y = _numeric()
    if kind == "tree":
        model = DecisionTreeRegressor(max_depth=6).fit(X, y)
        trees, scale, offset = [model.tree_], 1.0, 0.0
    elif kind == "forest":
        model = RandomForestRegressor(n_estimators=6, max_depth=6, random_state=0).fit(X, y)
        trees = model.estimators_
        trees = [estimator.tree_ for estimator in trees]
        scale, offset = 1.0 / len(trees), 0.0
    else:
        model = GradientBoostingRegressor(n_estimators=8, max_leaf_nodes=8,
                                          min_samples_leaf=5).fit(X, y)
        trees = [iteration[0] for iteration in model.estimators_]
        scale, offset = 1.0, float(model.init_raw_[0])
    assert any(tree.missing_go_to_left[tree.children_left != -1].any() for tree in trees)
    explainer = shap.TreeExplainer(_shap_model(trees, scale, offset),
                                   feature_perturbation="tree_path_dependent")
    theirs = explainer.shap_values(X)
    ours = model.predict(X, pred_contrib=True)
    np.testing.assert_allclose(ours[:, :-1], theirs, rtol=0, atol=1e-6)
    np.testing.assert_allclose(ours[:, -1], np.ravel(explainer.expected_value)[0], rtol=0,
                               atol=1e-6)
    if kind == "tree":
        theirs = explainer.shap_interaction_values(X[:50])
        ours = model.predict(X[:50], pred_interactions=True)
        np.testing.assert_allclose(ours[:, :-1, :-1], theirs, rtol=0, atol=1e-6)


# ----------------------------------------------------------- against LightGBM
@pytest.mark.parametrize("classification", [False, True])
def test_equal_to_lightgbm_pred_contrib_on_the_same_trees(classification):
    """The setup of tests/test_boosting_vs_lightgbm.py, whose trees equal LightGBM's."""
    lgb = pytest.importorskip("lightgbm")
    from tests.test_boosting_vs_lightgbm import _data, _lgb_params, _silva_params

    X, y = _data(0, classification)
    silva_params, lgb_params = _silva_params(), _lgb_params()
    # Few trees: from the classifier's second tree on, a node may put its threshold at
    # the other end of a gap of values none of its own rows has (silva 19.5, LightGBM
    # 20.5 with no row of value 20 at that node). The training rows are split alike, so
    # predictions agree, but TreeSHAP also sends a row down branches its other values do
    # not take, where the two trees then differ.
    n_trees = 1 if classification else 3
    silva_params["n_estimators"] = lgb_params["n_estimators"] = n_trees
    if classification:
        ours = GradientBoostingClassifier(**silva_params).fit(X, y)
        theirs = lgb.LGBMClassifier(**lgb_params).fit(X, y)
    else:
        ours = GradientBoostingRegressor(**silva_params).fit(X, y)
        theirs = lgb.LGBMRegressor(**lgb_params).fit(X, y)
    expected = theirs.predict(X, pred_contrib=True)
    # LightGBM keeps gradients in float32 (see test_boosting_vs_lightgbm).
    np.testing.assert_allclose(ours.predict(X, pred_contrib=True), expected, rtol=1e-6,
                               atol=1e-6)


def test_explanation_for_shap_plots():
    pytest.importorskip("shap")
    from silva.explain import explanation

    X, y = _frame(n=120)
    model = GradientBoostingClassifier(n_estimators=3, max_leaf_nodes=4, min_samples_leaf=5,
                                       categorical_features="auto").fit(X, _classes(y, 3))
    result = explanation(model, X)
    assert result.values.shape == (120, 3, 3)  # rows, features, classes
    assert list(result.feature_names) == ["a", "b", "colour"]
    np.testing.assert_allclose(result.values.sum(axis=1) + result.base_values,
                               model.decision_function(X), atol=1e-9)
    np.testing.assert_array_equal(contributions(model, X),
                                  model.predict(X, pred_contrib=True))


def test_leaf_tables_equal_algorithm_two(monkeypatch):
    """The per-leaf tables (used when they are small) and Algorithm 2's walk (used for
    interactions, and when tables would be too large) give the same values."""
    from silva import explain
    from silva.engine import treeshap
    from silva.explain import _cart_arrays, _cart_blocks, _explained_model

    X, y = _frame()
    model = RandomForestClassifier(n_estimators=5, max_depth=8, random_state=0,
                                   categorical_features="auto").fit(X, _classes(y, 3))
    X_prepared = np.ascontiguousarray(model._validated_X(X))
    explained = _explained_model(model)
    (block,) = _cart_blocks(explained)
    assert explain._tree_groups(block) == [(0, 5)]
    tables = treeshap.cart_leaf_tables(block.node_offset, block.children_left,
                                       block.children_right, block.feature, block.cover)
    walked = np.zeros((len(X), 3, 4))
    treeshap.cart_shap(X_prepared, *_cart_arrays(block), walked)
    tabled = np.zeros((len(X), 3, 4))
    treeshap.cart_shap_tabled(
        X_prepared, block.node_offset, block.children_left, block.children_right,
        block.feature, block.threshold, block.missing_go_left, block.is_categorical,
        block.bitsets, block.leaf_value, block.output_column, *tables, tabled)
    assert np.abs(walked).max() > 1e-3
    np.testing.assert_allclose(tabled, walked, rtol=0, atol=1e-12)
    # Tables too large for one group: the trees are explained a group at a time.
    monkeypatch.setattr(explain, "MAX_TABLE_ENTRIES", int(
        treeshap.cart_leaf_table_size(block.node_offset, block.children_left,
                                      block.children_right, block.feature,
                                      block.cover)[0].max()))
    assert len(explain._tree_groups(block)) > 1
    grouped = model.predict(X, pred_contrib=True).reshape(len(X), 3, 4)
    np.testing.assert_allclose(grouped, walked + [0, 0, 0, 1] * grouped[:, :, -1:],
                               rtol=0, atol=1e-12)


def test_contributions_survive_a_model_file(tmp_path):
    """The cover TreeSHAP reads is stored in model files."""
    import silva

    X, y = _frame(n=120)
    for model in (GradientBoostingRegressor(n_estimators=3, max_leaf_nodes=4,
                                            min_samples_leaf=5,
                                            categorical_features="auto").fit(X, y),
                  C45Classifier(min_samples_leaf=5).fit(X, _classes(y, 2))):
        path = tmp_path / f"{type(model).__name__}.silva"
        model.save(path)
        loaded = silva.load(path)
        np.testing.assert_array_equal(loaded.predict(X, pred_contrib=True),
                                      model.predict(X, pred_contrib=True))
