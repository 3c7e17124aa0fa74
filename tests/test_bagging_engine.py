"""Bagging's engine path (silva/bagging.py, ``_EngineMembers``): silva's own trees grown
in the engine on one binning of X.

The reference: each member refitted alone as a silva tree, on the member's rows
(``estimators_samples_`` counts as weights) and columns (``estimators_features_``), with
the member's seed, given the ensemble's bins of those columns through the trees' bin
cache (the hook AdaBoost uses); the two trees must be the same node for node.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, make_classification
from sklearn.linear_model import LogisticRegression

from silva import (
    BaggingClassifier,
    BaggingRegressor,
    DecisionTreeClassifier,
    DecisionTreeRegressor,
)
from silva import bagging as bagging_module
from silva.engine.cart import BinnedData
from silva.engine.forest import binned_columns

_cancer = load_breast_cancer(return_X_y=True)
_diabetes = load_diabetes(return_X_y=True)


def _refit_member(bag, index, X, y, sample_weight=None):
    """Member ``index`` of ``bag`` grown again as a lone tree on its rows and columns,
    with the ensemble's bins of those columns."""
    base = bag.estimator_
    seed = bag._seeds[index]
    counts, features = bag._draw(seed)
    weights = counts * (1.0 if sample_weight is None else sample_weight)
    rows = np.flatnonzero(weights > 0)
    mask = bag.is_categorical_ if bag.is_categorical_.any() else np.zeros(X.shape[1], bool)
    ensemble_bins = BinnedData.from_X(X, mask, base.max_bins, sparse_growth=False)
    columns = binned_columns(ensemble_bins, features)
    member_bins = BinnedData(**{
        **columns.__dict__,
        "bin_codes": np.ascontiguousarray(columns.bin_codes[:, rows]),
        "codes_by_sample": np.ascontiguousarray(columns.codes_by_sample[rows]),
        "n_samples": rows.size})
    X_member = np.ascontiguousarray(X[np.ix_(rows, features)])
    params = dict(base.get_params(), random_state=seed)
    if bag.is_categorical_.any():
        params["categorical_features"] = mask[features]
    tree = type(base)(**params)
    sparse_growth = tree.criterion != "absolute_error"
    tree._bin_cache = {"X": X_member, "binned": member_bins,
                       "key": (base.max_bins, mask[features].tobytes(), sparse_growth)}
    target = y if isinstance(bag, BaggingRegressor) else np.searchsorted(bag.classes_, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree.fit(X_member, target[rows], sample_weight=weights[rows])
    return tree, features


def _assert_same_tree(member, reference):
    a, b = member.tree_, reference.tree_
    assert a.node_count == b.node_count
    for name in ("children_left", "children_right", "feature", "threshold", "value"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    # The same fitted state as the lone tree's fit gives (what predict, SHAP and
    # persistence read).
    assert sorted(member.__dict__) == sorted(k for k in reference.__dict__
                                             if k != "_bin_cache")
    for name in ("classes_", "n_classes_", "n_features_in_", "max_features_",
                 "_has_missing_at_fit", "is_categorical_", "random_state"):
        if hasattr(reference, name):
            np.testing.assert_array_equal(getattr(member, name), getattr(reference, name))


_CLASSIFIERS = [
    dict(),
    dict(max_depth=4, criterion="entropy", min_samples_leaf=3),
    dict(max_features="sqrt", splitter="random", class_weight="balanced"),
    dict(min_samples_leaf=0.02, ccp_alpha=0.01, max_leaf_nodes=12),
    dict(monotonic_cst=[1] + [0] * 29, max_depth=5),
]


@pytest.mark.parametrize("tree_params", _CLASSIFIERS)
@pytest.mark.parametrize("bag_params", [
    dict(), dict(max_features=0.5, bootstrap_features=True),
    dict(bootstrap=False, max_samples=0.7)])
def test_classifier_members_are_lone_trees_on_the_ensembles_bins(tree_params, bag_params):
    X, y = _cancer
    if "monotonic_cst" in tree_params and "max_features" in bag_params:
        pytest.skip("monotonic_cst covers every column, so every member takes them all")
    bag = BaggingClassifier(DecisionTreeClassifier(**tree_params), n_estimators=4,
                            random_state=1, **bag_params).fit(X, y)
    for i, member in enumerate(bag.estimators_):
        reference, features = _refit_member(bag, i, X, y)
        np.testing.assert_array_equal(features, bag.estimators_features_[i])
        _assert_same_tree(member, reference)


@pytest.mark.parametrize("tree_params", [
    dict(), dict(criterion="absolute_error", max_depth=5), dict(criterion="poisson"),
    dict(criterion="friedman_mse", ccp_alpha=50.0), dict(min_samples_leaf=5)])
def test_regressor_members_are_lone_trees_on_the_ensembles_bins(tree_params):
    X, y = _diabetes
    weights = np.random.RandomState(0).uniform(0.5, 2.0, size=y.shape[0])
    bag = BaggingRegressor(DecisionTreeRegressor(**tree_params), n_estimators=3,
                           max_features=0.7, random_state=2).fit(X, y, sample_weight=weights)
    for i, member in enumerate(bag.estimators_):
        reference, _ = _refit_member(bag, i, X, y, weights)
        _assert_same_tree(member, reference)
        np.testing.assert_array_equal(member.predict(X[:, bag.estimators_features_[i]]),
                                      reference.predict(X[:, bag.estimators_features_[i]]))


@pytest.mark.parametrize("criterion", ["squared_error", "friedman_mse"])
def test_multi_output_regressor_members_are_lone_trees(criterion):
    X, y = _diabetes
    Y = np.column_stack([y, np.round(X[:, 2] * 100)])
    bag = BaggingRegressor(DecisionTreeRegressor(criterion=criterion, max_depth=6),
                           n_estimators=3, max_features=0.8, random_state=4).fit(X, Y)
    assert bag.predict(X).shape == Y.shape
    for i, member in enumerate(bag.estimators_):
        reference, features = _refit_member(bag, i, X, Y)
        assert member.n_outputs_ == 2
        _assert_same_tree(member, reference)
        np.testing.assert_array_equal(member.predict(X[:, features]),
                                      reference.predict(X[:, features]))
    # What a lone tree refuses, the members refuse, in the tree's words.
    with pytest.raises(ValueError, match="DecisionTreeRegressor: criterion='absolute_error'"):
        BaggingRegressor(DecisionTreeRegressor(criterion="absolute_error"),
                         n_estimators=2).fit(X, Y)


def test_categorical_and_missing_members_are_lone_trees():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 5))
    X[:, 0] = rng.randint(0, 6, size=300)
    X[rng.rand(300, 5) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) % 2 + (np.nan_to_num(X[:, 1]) > 0) > 1).astype(int)
    bag = BaggingClassifier(n_estimators=4, max_features=0.8, categorical_features=[0],
                            random_state=3).fit(X, y)
    assert any(bag.is_categorical_[f].any() for f in bag.estimators_features_)
    for i, member in enumerate(bag.estimators_):
        reference, _ = _refit_member(bag, i, X, y)
        _assert_same_tree(member, reference)


def test_silva_trees_take_the_engine_path_and_others_the_general_one(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a silva tree member was fitted as an estimator")

    X, y = _cancer
    with monkeypatch.context() as patch:
        patch.setattr(bagging_module, "_fit_members", refuse)
        BaggingClassifier(n_estimators=2, random_state=0).fit(X, y)
        BaggingClassifier(DecisionTreeClassifier(max_depth=3), n_estimators=2,
                          random_state=0).fit(X, y)
        BaggingRegressor(n_estimators=2, random_state=0).fit(*_diabetes)

    class MyTree(DecisionTreeClassifier):
        pass

    for estimator in (LogisticRegression(max_iter=50), MyTree(max_depth=2),
                      DecisionTreeClassifier(prune="reduced_error")):
        with monkeypatch.context() as patch:
            patch.setattr(bagging_module, "_fit_members", refuse)
            with pytest.raises(AssertionError, match="fitted as an estimator"):
                BaggingClassifier(estimator, n_estimators=2, random_state=0).fit(X, y)


@pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores")
def test_same_members_whatever_n_jobs_and_warm_start():
    X, y = make_classification(n_samples=600, n_features=12, n_informative=6,
                               random_state=0)
    one = BaggingClassifier(n_estimators=6, max_features=0.6, oob_score=True,
                            random_state=5, n_jobs=1).fit(X, y)
    two = BaggingClassifier(n_estimators=6, max_features=0.6, oob_score=True,
                            random_state=5, n_jobs=2).fit(X, y)
    warm = BaggingClassifier(n_estimators=3, max_features=0.6, oob_score=True,
                             warm_start=True, random_state=5).fit(X, y)
    warm.set_params(n_estimators=6).fit(X, y)
    for other in (two, warm):
        for a, b in zip(one.estimators_, other.estimators_, strict=True):
            _assert_same_tree(a, b)
        np.testing.assert_array_equal(one.predict_proba(X), other.predict_proba(X))
        assert one.oob_score_ == other.oob_score_


def test_zero_class_weight_rows_and_an_empty_draw_are_handled_as_by_the_tree():
    X, y = _cancer
    bag = BaggingClassifier(DecisionTreeClassifier(class_weight={0: 0.0, 1: 1.0}),
                            n_estimators=2, random_state=0)
    bag.fit(X, y)
    # Rows of class weight zero are left out, as the tree leaves them out: what is left
    # is one class, a root predicting it (no warning, the target being constant).
    assert all(m.tree_.node_count == 1 for m in bag.estimators_)
    np.testing.assert_array_equal(bag.predict(X), np.ones(y.shape[0]))
    weights = np.zeros(y.shape[0])
    weights[0] = 1.0
    with pytest.raises(ValueError, match="all of zero sample_weight"):
        BaggingClassifier(n_estimators=3, max_samples=5, random_state=0).fit(
            X, y, sample_weight=weights)


def test_engine_members_score_like_the_general_path(monkeypatch):
    # Bins of the whole X instead of each member's rows move thresholds a little: the
    # held-out accuracy stays within noise of the one-member-at-a-time fit.
    X, y = make_classification(n_samples=1500, n_features=10, n_informative=5,
                               random_state=4)
    X_train, X_test, y_train, y_test = X[:1000], X[1000:], y[:1000], y[1000:]
    engine = BaggingClassifier(n_estimators=10, random_state=0).fit(X_train, y_train)
    monkeypatch.setattr(bagging_module, "_grows_in_engine", lambda *args: False)
    general = BaggingClassifier(n_estimators=10, random_state=0).fit(X_train, y_train)
    assert abs(engine.score(X_test, y_test) - general.score(X_test, y_test)) < 0.03
