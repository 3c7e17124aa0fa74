"""Bad input fails early with a message that names the problem; odd but valid input works.

No input may crash the compiled engine or yield NaN predictions.
"""

import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.exceptions import DataConversionWarning, NotFittedError

import silva
from silva import DecisionTreeClassifier, DecisionTreeRegressor

RNG = np.random.RandomState(0)
X = RNG.rand(40, 3)
Y_CLASS = np.arange(40) % 2
Y_REG = RNG.rand(40) * 10
BOTH = [DecisionTreeClassifier, DecisionTreeRegressor]


def _y(model_class):
    return Y_CLASS if model_class is DecisionTreeClassifier else Y_REG


# ------------------------------------------------------------------------- targets


@pytest.mark.parametrize("model_class", BOTH)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_in_y(model_class, bad):
    y = _y(model_class).astype(float)
    y[7] = bad
    with pytest.raises(ValueError, match="y contains NaN or infinity"):
        model_class().fit(X, y)


@pytest.mark.parametrize("model_class", BOTH)
def test_y_of_more_than_two_dimensions_is_refused(model_class):
    # A 2-D y is multi-output (tests/test_multi_output.py); a 3-D one has no meaning.
    y = np.c_[_y(model_class), _y(model_class)][:, :, None]
    with pytest.raises(ValueError, match=r"two-dimensional.*\(40, 2, 1\)"):
        model_class().fit(X, y)


@pytest.mark.parametrize("model_class", BOTH)
def test_column_vector_y_is_accepted(model_class):
    y = _y(model_class)
    flat = model_class(random_state=0).fit(X, y)
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        column = model_class(random_state=0).fit(X, y[:, None])
    np.testing.assert_array_equal(flat.predict(X), column.predict(X))


@pytest.mark.parametrize("model_class", BOTH)
def test_y_of_wrong_length(model_class):
    with pytest.raises(ValueError, match="X has 40 samples but y has 39"):
        model_class().fit(X, _y(model_class)[:39])


def test_continuous_y_for_a_classifier():
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        DecisionTreeClassifier().fit(X, Y_REG)


@pytest.mark.parametrize("y", [
    np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.0]), np.array([1e20, 0.0]),
    np.array([2.0**62, 3.0]), np.array([-0.0, 0.0, 3.0]), np.array([-3.0, 7.0]),
    np.array([1, 2], dtype=np.uint8), np.array([True, False]), np.array([-5, 9]),
    np.array(["a", "b"]), np.array([1, 2.5], dtype=object), np.array([1, 2], dtype=object),
], ids=repr)
def test_labels_accepted_exactly_as_scikit_learn_accepts_them(y):
    """classification_target skips scikit-learn's type_of_target for integer labels (a
    third of a tree's fit on wine): what it accepts and refuses must stay the same."""
    from sklearn.utils.multiclass import check_classification_targets

    from silva import _input

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # its cast of 1e20
            check_classification_targets(y)
    except ValueError as error:
        with pytest.raises(ValueError, match=re.escape(str(error))):
            _input.classification_target(y)
    else:
        classes, codes = _input.classification_target(y)
        np.testing.assert_array_equal(classes[codes], y)


def test_non_numeric_y_for_a_regressor():
    with pytest.raises(ValueError, match="y must be numeric"):
        DecisionTreeRegressor().fit(X, np.array(["a", "b"] * 20))


@pytest.mark.parametrize("y", [-Y_REG, np.r_[Y_REG[:-1], -0.5]])
def test_poisson_refuses_negative_y(y):
    with pytest.raises(ValueError, match="poisson.*y >= 0"):
        DecisionTreeRegressor(criterion="poisson").fit(X, y)


def test_poisson_refuses_all_zero_y():
    with pytest.raises(ValueError, match="Poisson.*needs a positive one"):
        DecisionTreeRegressor(criterion="poisson").fit(X, np.zeros(40))


def test_poisson_accepts_some_zeros():
    y = np.where(X[:, 0] > 0.5, 3.0, 0.0)
    model = DecisionTreeRegressor(criterion="poisson").fit(X, y)
    assert np.all(np.isfinite(model.predict(X)))
    assert model.predict([[0.9, 0.5, 0.5]])[0] == pytest.approx(3.0)


def test_string_class_labels():
    y = np.where(Y_CLASS == 1, "yes", "no")
    model = DecisionTreeClassifier().fit(X, y)
    assert model.classes_.tolist() == ["no", "yes"]
    np.testing.assert_array_equal(model.predict(X), y)


# ------------------------------------------------------------------------------ X


@pytest.mark.parametrize("model_class", BOTH)
@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_infinity_in_X(model_class, bad):
    X_bad = X.copy()
    X_bad[3, 1] = bad
    with pytest.raises(ValueError, match="Input X contains infinity"):
        model_class().fit(X_bad, _y(model_class))
    model = model_class().fit(X, _y(model_class))
    with pytest.raises(ValueError, match="Input X contains infinity"):
        model.predict(X_bad)


@pytest.mark.parametrize("model_class", BOTH)
def test_wrong_number_of_features_at_predict(model_class):
    model = model_class().fit(X, _y(model_class))
    with pytest.raises(ValueError, match="X has 2 features, but .* is expecting 3 features"):
        model.predict(X[:, :2])
    with pytest.raises(ValueError, match="X has 4 features"):
        model.predict(np.c_[X, X[:, :1]])
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array"):
        model.predict(X[0])


def test_ready_array_skips_validation_and_anything_else_does_not():
    """Predict takes a C-contiguous float64 array of the fit's width as it is, and sends
    every other input through scikit-learn's validation: same predictions, same errors,
    same warnings."""
    import warnings

    import pandas as pd

    from silva import AdaBoostClassifier, BaggingClassifier
    from silva._input import ready_to_predict

    model = DecisionTreeClassifier(random_state=0).fit(X, Y_CLASS)
    assert ready_to_predict(model, X)
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    assert ready_to_predict(model, X_nan)
    assert not ready_to_predict(model, X_nan, allow_nan=False)
    X_inf = X.copy()
    X_inf[1, 2] = np.inf
    huge = np.full((2, 3), 1e308)  # a sum that overflows, without an infinite value
    assert ready_to_predict(model, huge)
    expected = model.predict(X)
    strided = np.c_[X, X][:, :3]  # a view with the fit's width, not contiguous
    for other in (X.astype(np.float32), np.asfortranarray(X), X.tolist(), strided):
        assert not ready_to_predict(model, other)
        np.testing.assert_array_equal(model.predict(other), expected)
    assert not ready_to_predict(model, X_inf)
    assert not ready_to_predict(model, X[:0])
    assert not ready_to_predict(model, X[:, :2])
    with pytest.raises(ValueError, match="X has 2 features"):
        model.predict(X[:, :2])
    with pytest.raises(ValueError, match="Input X contains infinity"):
        model.predict(X_inf)
    # Fitted with column names: a bare array still gets scikit-learn's warning.
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    named = DecisionTreeClassifier(random_state=0).fit(frame, Y_CLASS)
    assert not ready_to_predict(named, X)
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        named.predict(X)
    # An ensemble whose members refuse NaN refuses it at predict too.
    from sklearn.linear_model import LogisticRegression
    ada = AdaBoostClassifier(LogisticRegression(), n_estimators=2).fit(X, Y_CLASS)
    with pytest.raises(ValueError, match="Input X contains NaN"):
        ada.predict(X_nan)
    bag = BaggingClassifier(n_estimators=3, random_state=0).fit(X, Y_CLASS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(bag.predict(X), bag.predict(X.astype(np.float32)))


@pytest.mark.parametrize("model_class", BOTH)
def test_empty_X(model_class):
    with pytest.raises(ValueError, match=r"Found array with 0 sample\(s\)"):
        model_class().fit(np.empty((0, 3)), np.empty(0))
    with pytest.raises(ValueError, match=r"Found array with 0 feature\(s\)"):
        model_class().fit(np.empty((5, 0)), _y(model_class)[:5])
    model = model_class().fit(X, _y(model_class))
    with pytest.raises(ValueError, match=r"Found array with 0 sample\(s\)"):
        model.predict(np.empty((0, 3)))


def test_non_numeric_X():
    with pytest.raises(ValueError, match="could not convert string to float"):
        DecisionTreeClassifier().fit([["a", "b", "c"]] * 4, [0, 1, 0, 1])


# ---------------------------------------------------------------- degenerate data


def test_one_sample():
    classifier = DecisionTreeClassifier().fit(X[:1], [7])
    assert classifier.tree_.node_count == 1
    np.testing.assert_array_equal(classifier.predict(X), np.full(40, 7))
    regressor = DecisionTreeRegressor().fit(X[:1], [2.5])
    np.testing.assert_array_equal(regressor.predict(X), np.full(40, 2.5))
    assert regressor.get_depth() == 0 and regressor.get_n_leaves() == 1
    np.testing.assert_array_equal(regressor.feature_importances_, np.zeros(3))


def test_one_class():
    model = DecisionTreeClassifier().fit(X, np.full(40, "only"))
    assert model.classes_.tolist() == ["only"]
    assert model.n_classes_ == 1
    assert model.tree_.node_count == 1
    proba = model.predict_proba(X)
    assert proba.shape == (40, 1)
    np.testing.assert_array_equal(proba, 1.0)
    assert (model.predict(X) == "only").all()


def test_constant_features_and_duplicate_rows():
    X_constant = np.ones((30, 2))
    y = np.arange(30) % 3
    model = DecisionTreeClassifier().fit(X_constant, y)
    assert model.tree_.node_count == 1
    np.testing.assert_allclose(model.predict_proba(X_constant[:2]), [[1 / 3] * 3] * 2)
    regressor = DecisionTreeRegressor().fit(X_constant, y.astype(float))
    np.testing.assert_allclose(regressor.predict(X_constant[:1]), [1.0])


def test_huge_and_tiny_values():
    X_big = np.c_[np.linspace(-1e300, 1e300, 50), np.linspace(1e-300, 2e-300, 50)]
    y = (np.arange(50) >= 25).astype(float) * 1e10
    model = DecisionTreeRegressor().fit(X_big, y)
    assert model.score(X_big, y) == 1.0
    classifier = DecisionTreeClassifier().fit(X_big[:, 1:], y > 0)
    assert classifier.score(X_big[:, 1:], y > 0) == 1.0
    # a threshold between adjacent floats still separates them
    X_adjacent = np.array([[1.0], [np.nextafter(1.0, 2.0)]] * 5)
    pair = DecisionTreeClassifier().fit(X_adjacent, [0, 1] * 5)
    np.testing.assert_array_equal(pair.predict(X_adjacent), [0, 1] * 5)


# ------------------------------------------------------------------ sample weights


@pytest.mark.parametrize("model_class", BOTH)
def test_negative_sample_weight(model_class):
    weights = np.ones(40)
    weights[4] = -1.0
    with pytest.raises(ValueError, match="sample_weight must be non-negative; sample 4"):
        model_class().fit(X, _y(model_class), sample_weight=weights)


@pytest.mark.parametrize("model_class", BOTH)
def test_all_zero_sample_weight(model_class):
    with pytest.raises(ValueError, match="sample_weight sums to zero"):
        model_class().fit(X, _y(model_class), sample_weight=np.zeros(40))


@pytest.mark.parametrize("model_class", BOTH)
@pytest.mark.parametrize("shape", [(39,), (41,), (40, 1)])
def test_sample_weight_of_wrong_shape(model_class, shape):
    with pytest.raises(ValueError, match=r"sample_weight must have shape \(40,\)"):
        model_class().fit(X, _y(model_class), sample_weight=np.ones(shape))


@pytest.mark.parametrize("model_class", BOTH)
def test_nan_sample_weight(model_class):
    weights = np.ones(40)
    weights[0] = np.nan
    with pytest.raises(ValueError, match="sample_weight contains NaN"):
        model_class().fit(X, _y(model_class), sample_weight=weights)


def test_scalar_sample_weight_is_uniform():
    # (a shallow tree: deep nodes of two samples tie on every feature, and rounding of
    # the weighted sums may break such ties either way)
    a = DecisionTreeRegressor(max_depth=3).fit(X, Y_REG, sample_weight=3.0)
    b = DecisionTreeRegressor(max_depth=3).fit(X, Y_REG)
    np.testing.assert_array_equal(a.tree_.feature, b.tree_.feature)
    np.testing.assert_allclose(a.predict(X), b.predict(X))
    np.testing.assert_allclose(a.tree_.weighted_n_node_samples, 3 * b.tree_.weighted_n_node_samples)


# ------------------------------------------------------------------- parameters

BAD_PARAMS = [
    ({"max_depth": 0}, ValueError, "max_depth must be >= 1; got 0"),
    ({"max_depth": 2.5}, TypeError, "max_depth must be an int"),
    ({"min_samples_split": 1}, ValueError, "min_samples_split must be an int >= 2"),
    ({"min_samples_split": 1.5}, ValueError, r"min_samples_split as a fraction must be in"),
    ({"min_samples_leaf": 0}, ValueError, "min_samples_leaf must be an int >= 1"),
    ({"min_samples_leaf": 0.0}, ValueError, r"min_samples_leaf as a fraction must be in"),
    ({"max_features": 0}, ValueError, r"max_features must be in \[1, n_features=3\].*got 0"),
    ({"max_features": 4}, ValueError, r"max_features must be in \[1, n_features=3\].*got 4"),
    ({"max_features": 1.5}, ValueError, r"max_features as a fraction must be in \(0, 1\]"),
    ({"max_features": "bad"}, ValueError, "max_features must be one of.*'bad'"),
    ({"max_features": True}, TypeError, "max_features must be None, 'sqrt', 'log2'"),
    ({"criterion": "bad"}, ValueError, "criterion must be one of.*got 'bad'"),
    ({"splitter": "bad"}, ValueError, "splitter must be one of.*got 'bad'"),
    ({"max_bins": 1}, ValueError, "max_bins must be >= 2; got 1"),
    ({"max_bins": 70000}, ValueError, "max_bins must be <= 65535; got 70000"),
    ({"max_bins": 2.5}, TypeError, "max_bins must be an int"),
    ({"ccp_alpha": -1}, ValueError, r"ccp_alpha must be in \[0.0, inf\]; got -1.0"),
    ({"min_weight_fraction_leaf": 0.6}, ValueError,
     r"min_weight_fraction_leaf must be in \[0.0, 0.5\]; got 0.6"),
    ({"min_weight_fraction_leaf": -0.1}, ValueError, "min_weight_fraction_leaf must be in"),
    ({"max_leaf_nodes": 1}, ValueError, "max_leaf_nodes must be >= 2; got 1"),
    ({"min_impurity_decrease": -1.0}, ValueError, "min_impurity_decrease must be in"),
    ({"categorical_features": "everything"}, ValueError, "categorical_features must be"),
]


@pytest.mark.parametrize("model_class", BOTH)
@pytest.mark.parametrize(("params", "error", "message"), BAD_PARAMS,
                         ids=[str(p) for p, _, _ in BAD_PARAMS])
def test_invalid_parameter(model_class, params, error, message):
    with pytest.raises(error, match=message):
        model_class(**params).fit(X, _y(model_class))


def test_regression_criterion_on_a_classifier():
    with pytest.raises(ValueError, match="criterion must be one of.*'squared_error'"):
        DecisionTreeClassifier(criterion="squared_error").fit(X, Y_CLASS)
    with pytest.raises(ValueError, match="criterion must be one of.*'gini'"):
        DecisionTreeRegressor(criterion="gini").fit(X, Y_REG)


def test_invalid_class_weight():
    with pytest.raises(ValueError, match="class_weight"):
        DecisionTreeClassifier(class_weight="bad").fit(X, Y_CLASS)


@pytest.mark.parametrize("model_class", BOTH)
@pytest.mark.parametrize("params", [
    {"max_depth": 1}, {"min_samples_split": 2}, {"min_samples_split": 1.0},
    {"min_samples_leaf": 0.5}, {"max_features": 1}, {"max_features": 1.0},
    {"max_features": 3}, {"max_features": "log2"}, {"max_bins": 2}, {"max_bins": 65535},
    {"min_weight_fraction_leaf": 0.5}, {"max_leaf_nodes": 2}, {"ccp_alpha": 1e9},
], ids=str)
def test_boundary_parameter_values_are_accepted(model_class, params):
    model = model_class(**params).fit(X, _y(model_class))
    prediction = model.predict(X)
    assert prediction.shape == (40,)
    if model_class is DecisionTreeRegressor:
        assert np.all(np.isfinite(prediction))


# ------------------------------------------------------------------ not fitted

METHODS = ["predict", "apply", "decision_path"]


@pytest.mark.parametrize("model_class", BOTH)
@pytest.mark.parametrize("method", METHODS)
def test_not_fitted(model_class, method):
    with pytest.raises(NotFittedError):
        getattr(model_class(), method)(X)


@pytest.mark.parametrize("method", ["predict_proba", "predict_log_proba"])
def test_not_fitted_probabilities(method):
    with pytest.raises(NotFittedError):
        getattr(DecisionTreeClassifier(), method)(X)


@pytest.mark.parametrize("model_class", BOTH)
def test_not_fitted_attributes(model_class):
    model = model_class()
    with pytest.raises(NotFittedError):
        _ = model.feature_importances_
    with pytest.raises(NotFittedError):
        model.get_depth()
    with pytest.raises(NotFittedError):
        model.get_n_leaves()


# ------------------------------------------------------------------ fuzzing


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    data=arrays(np.float64, st.tuples(st.integers(1, 30), st.integers(1, 4)),
                elements=st.one_of(st.just(np.nan), st.sampled_from([0.0, 1.0, -1.0]),
                                   st.floats(-1e6, 1e6, allow_nan=False))),
    seed=st.integers(0, 2**16),
    max_bins=st.sampled_from([2, 3, 255]),
)
def test_fuzz_never_crashes_never_nan(data, seed, max_bins):
    rng = np.random.RandomState(seed)
    y_class = rng.randint(0, 3, size=data.shape[0])
    y_reg = rng.randn(data.shape[0])
    weights = rng.randint(0, 3, size=data.shape[0]).astype(float)
    weights[0] = 1.0  # never all zero
    probe = np.where(rng.rand(*data.shape) < 0.3, np.nan, rng.randn(*data.shape) * 1e3)
    for params in ({}, {"splitter": "random", "random_state": seed}, {"max_leaf_nodes": 3}):
        classifier = DecisionTreeClassifier(max_bins=max_bins, **params).fit(
            data, y_class, sample_weight=weights)
        proba = classifier.predict_proba(np.r_[data, probe])
        assert np.all(np.isfinite(proba))
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        regressor = DecisionTreeRegressor(max_bins=max_bins, **params).fit(
            data, y_reg, sample_weight=weights)
        prediction = regressor.predict(np.r_[data, probe])
        assert np.all(np.isfinite(prediction))
        # each leaf predicts a weighted mean of training targets: inside their range
        assert prediction.min() >= y_reg.min() - 1e-9
        assert prediction.max() <= y_reg.max() + 1e-9


# ------------------------------------------------- issue 22: defects and their fixes
#
# Each test names the defect it guards (silva issue 22, items 3, 6, 8 and 9).

from silva import (  # noqa: E402 - the estimators of the regression tests below
    AdaBoostClassifier,
    AdaBoostRegressor,
    BaggingClassifier,
    BaggingRegressor,
    C45Classifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    ID3Classifier,
    RandomForestClassifier,
    RandomForestRegressor,
    StackingClassifier,
    VotingClassifier,
)

ALL_CLASSIFIERS = [
    DecisionTreeClassifier(random_state=0),
    RandomForestClassifier(n_estimators=3, random_state=0),
    GradientBoostingClassifier(n_estimators=2, min_samples_leaf=1),
    AdaBoostClassifier(n_estimators=2, random_state=0),
    BaggingClassifier(n_estimators=2, random_state=0),
    ID3Classifier(),
    C45Classifier(),
    VotingClassifier([("tree", DecisionTreeClassifier(random_state=0))]),
    StackingClassifier([("tree", DecisionTreeClassifier(random_state=0))], cv=2),
]


def test_id3_takes_more_categories_than_n_bins():
    """Item 3: 11 categories with n_bins=10 crashed with a broadcast error."""
    import pandas as pd

    levels = [f"v{i}" for i in range(11)]
    frame = pd.DataFrame({"c": levels * 4, "x": np.arange(44.0)})
    y = np.array([i % 11 < 5 for i in range(44)])  # a function of the category alone
    model = ID3Classifier().fit(frame, y)
    np.testing.assert_array_equal(model.predict(frame), y)
    root_branches = model.tree_.n_branches[0]
    assert model.tree_.feature[0] == 0 and root_branches == 11  # one branch per level
    # The same from integer codes, and with n_bins much smaller than the categories.
    codes = np.c_[np.arange(44) % 11, np.arange(44.0)]
    coded = ID3Classifier(n_bins=2, categorical_features=[0]).fit(codes, y)
    np.testing.assert_array_equal(coded.predict(codes), y)
    assert coded.tree_.n_branches[0] == 11


def test_id3_numeric_bins_unchanged_by_many_categories():
    """Widening the per-bin arrays for categories leaves numeric binning alone."""
    rng = np.random.RandomState(3)
    x = rng.rand(200)
    y = (x > 0.4).astype(int)
    numeric = ID3Classifier(n_bins=4).fit(x[:, None], y)
    both = ID3Classifier(n_bins=4, categorical_features=[1]).fit(
        np.c_[x, np.arange(200) % 30], y)
    np.testing.assert_array_equal(numeric.tree_.bin_edges[0], both.tree_.bin_edges[0])


@pytest.mark.parametrize("class_weight, message", [
    ({0: np.inf, 1: 1}, r"class_weight\[0\] must be a finite number >= 0; got inf"),
    ({0: np.nan, 1: 1}, r"class_weight\[0\] must be a finite number >= 0; got nan"),
    ({0: 1, 1: -2}, r"class_weight\[1\] must be a finite number >= 0; got -2"),
    ({0: 0, 1: 0.0}, "class_weight gives every class of y weight zero"),
    ({0: 1, 7: 2}, r"class_weight has the labels \[7\], which are not classes of y, and "
                   r"no weight for the classes \[1\]"),
    ("balance", "class_weight must be None, a dict or one of"),
], ids=str)
@pytest.mark.parametrize("model_class", [DecisionTreeClassifier, RandomForestClassifier])
def test_bad_class_weight(model_class, class_weight, message):
    """Item 6: inf, NaN, negative or all-zero class weights gave NaN or all-zero
    probabilities; an unknown label was ignored."""
    with pytest.raises(ValueError, match=message):
        model_class(class_weight=class_weight).fit(X, Y_CLASS)


def test_class_weight_type_and_subsample_option():
    with pytest.raises(TypeError, match="class_weight must be None, a dict"):
        DecisionTreeClassifier(class_weight=[1, 2]).fit(X, Y_CLASS)
    with pytest.raises(TypeError, match=r"class_weight\[0\] must be a number"):
        DecisionTreeClassifier(class_weight={0: "2", 1: 1}).fit(X, Y_CLASS)
    # balanced_subsample is for forests only.
    with pytest.raises(ValueError, match="class_weight must be None, a dict or one of "
                                         r"\['balanced'\]"):
        DecisionTreeClassifier(class_weight="balanced_subsample").fit(X, Y_CLASS)
    for bootstrap in (True, False):
        forest = RandomForestClassifier(n_estimators=3, bootstrap=bootstrap,
                                        class_weight="balanced_subsample", random_state=0)
        proba = forest.fit(X, Y_CLASS).predict_proba(X)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_class_weight_as_scikit_learn_matches_keys():
    """Extra keys are ignored when every class has a weight (scikit-learn does so); a
    class left out weighs 1; string labels are matched as strings."""
    extra = DecisionTreeClassifier(class_weight={0: 1, 1: 3, 9: 5}, random_state=0)
    plain = DecisionTreeClassifier(class_weight={0: 1, 1: 3}, random_state=0)
    np.testing.assert_array_equal(extra.fit(X, Y_CLASS).tree_.value,
                                  plain.fit(X, Y_CLASS).tree_.value)
    left_out = DecisionTreeClassifier(class_weight={1: 3}, random_state=0).fit(X, Y_CLASS)
    np.testing.assert_array_equal(left_out.tree_.value, plain.tree_.value)
    labels = np.array(["no", "yes"])[Y_CLASS]
    named = DecisionTreeClassifier(class_weight={"yes": 3}, random_state=0).fit(X, labels)
    np.testing.assert_array_equal(named.tree_.value, plain.tree_.value)
    with pytest.raises(ValueError, match=r"labels \['maybe'\].*classes \['yes'\]"):
        DecisionTreeClassifier(class_weight={"no": 1, "maybe": 2}).fit(X, labels)


def test_class_weight_that_zeroes_every_weighted_sample():
    weights = np.where(Y_CLASS == 0, 1.0, 0.0)
    with pytest.raises(ValueError, match="sample_weight times class_weight is zero"):
        DecisionTreeClassifier(class_weight={0: 0, 1: 1}).fit(X, Y_CLASS,
                                                              sample_weight=weights)


@pytest.mark.parametrize("model", ALL_CLASSIFIERS, ids=lambda m: type(m).__name__)
@pytest.mark.parametrize("missing", [None, np.nan])
def test_missing_label_among_strings(model, missing):
    """Item 8: a NaN or None label among strings gave "'<' not supported between
    'float' and 'str'"."""
    y = np.array(["a", "b"] * 20, dtype=object)
    y[[5, 17]] = missing
    with pytest.raises(ValueError, match=r"y has missing values: 2 of 40 labels are NaN "
                                         r"or None, the first at index 5"):
        model.fit(X, y)


def test_missing_label_in_pandas_series():
    import pandas as pd

    y = pd.Series(["a", "b"] * 20, dtype="string")
    y[9] = pd.NA
    with pytest.raises(ValueError, match="y has missing values: 1 of 40.*index 9"):
        DecisionTreeClassifier().fit(X, y)
    with pytest.raises(ValueError, match=r"y contains NaN or infinity: 1 of 40.*index 3"):
        DecisionTreeClassifier().fit(X, np.r_[Y_CLASS[:3], np.nan, Y_CLASS[4:]])


def test_labels_of_mixed_types():
    y = np.array([1, "a"] * 20, dtype=object)
    with pytest.raises(ValueError, match=r"y mixes labels of types.*\(int, str\)"):
        DecisionTreeClassifier().fit(X, y)


@pytest.mark.parametrize("model_class", [GradientBoostingClassifier, GradientBoostingRegressor,
                                         AdaBoostClassifier, AdaBoostRegressor])
@pytest.mark.parametrize("rate", [np.inf, -np.inf, np.nan])
def test_learning_rate_must_be_finite(model_class, rate):
    """Item 9: learning_rate=inf was accepted by boosting and predicted NaN."""
    y = Y_CLASS if "Classifier" in model_class.__name__ else Y_REG
    with pytest.raises(ValueError, match="learning_rate"):
        model_class(learning_rate=rate).fit(X, y)


@pytest.mark.parametrize("params", [
    {"min_impurity_decrease": np.inf}, {"ccp_alpha": np.nan},
    {"min_weight_fraction_leaf": np.nan},
], ids=str)
def test_float_parameters_must_be_finite(params):
    name = next(iter(params))
    with pytest.raises(ValueError, match=f"{name} must be a finite number"):
        DecisionTreeRegressor(**params).fit(X, Y_REG)


def test_ccp_alpha_inf_prunes_to_the_root():
    # ccp_alpha="cv" reports inf as the alpha of the root-only subtree, so ccp_alpha_
    # must be usable as ccp_alpha again: inf is the one infinite parameter accepted.
    model = DecisionTreeRegressor(ccp_alpha=np.inf).fit(X, Y_REG)
    assert model.get_n_leaves() == 1


@pytest.mark.parametrize("params", [
    {"l2_regularization": np.inf}, {"min_child_weight": np.inf}, {"subsample": np.nan},
    {"max_delta_step": np.inf}, {"min_split_gain": np.inf},
], ids=str)
def test_boosting_float_parameters_must_be_finite(params):
    name = next(iter(params))
    with pytest.raises(ValueError, match=name):
        GradientBoostingRegressor(n_estimators=2, **params).fit(X, Y_REG)


@pytest.mark.parametrize("model", [
    DecisionTreeRegressor(), RandomForestRegressor(n_estimators=2),
    GradientBoostingRegressor(n_estimators=2), AdaBoostRegressor(n_estimators=2),
    DecisionTreeClassifier(), GradientBoostingClassifier(n_estimators=2),
    AdaBoostClassifier(n_estimators=2), C45Classifier(), ID3Classifier(),
], ids=lambda m: type(m).__name__)
def test_weights_whose_sum_overflows(model):
    """Item 9: weights of 1e307 each (finite, but their sum is not) gave a constant
    model, NaN predictions or an internal error in AdaBoost."""
    y = Y_REG if "Regressor" in type(model).__name__ else Y_CLASS
    with pytest.raises(ValueError, match="sample_weight sums to more than the largest "
                                         r"float64 \(overflow\).*Rescale"):
        model.fit(X, y, sample_weight=np.full(40, 1e307))
    with pytest.raises(ValueError, match=r"sample_weight sums to 4e\+60.*at most 1e\+50"):
        model.fit(X, y, sample_weight=np.full(40, 1e59))


def test_largest_accepted_total_weight_fits_finite_models():
    """Just under the limit every criterion still scores its splits (no inf or NaN)."""
    weights = np.full(40, 1e50 / 40)
    for criterion in ("gini", "entropy", "twoing", "gain_ratio", "misclassification"):
        tree = DecisionTreeClassifier(criterion=criterion, random_state=0)
        tree.fit(X, Y_CLASS, sample_weight=weights)
        reference = DecisionTreeClassifier(criterion=criterion, random_state=0).fit(X, Y_CLASS)
        np.testing.assert_array_equal(tree.predict(X), reference.predict(X))
    boosted = GradientBoostingRegressor(n_estimators=3, min_samples_leaf=1)
    prediction = boosted.fit(X, Y_REG, sample_weight=weights).predict(X)
    assert np.all(np.isfinite(prediction)) and np.ptp(prediction) > 0


@pytest.mark.parametrize("model", [
    DecisionTreeRegressor(), DecisionTreeRegressor(criterion="friedman_mse"),
    RandomForestRegressor(n_estimators=2), GradientBoostingRegressor(n_estimators=2),
    GradientBoostingRegressor(n_estimators=2, loss="huber"),
], ids=lambda m: type(m).__name__)
def test_target_too_large(model):
    """Item 9: targets around 1e154 gave a constant model (their squares overflow)."""
    with pytest.raises(ValueError, match=r"y is too large for float64.*9\.\d+e\+153.*Rescale y"):
        model.fit(X, Y_REG * 1e153)


def test_large_target_that_fits_is_not_refused():
    """Targets up to about 1e150 (for 40 samples) still fit: a fully grown tree
    reproduces them; absolute error, which squares nothing, takes any finite y."""
    large = DecisionTreeRegressor(random_state=0).fit(X, Y_REG * 1e148)
    np.testing.assert_allclose(large.predict(X), Y_REG * 1e148)
    absolute = DecisionTreeRegressor(criterion="absolute_error").fit(X, Y_REG * 1e200)
    np.testing.assert_allclose(absolute.predict(X) / 1e200,
                               DecisionTreeRegressor(criterion="absolute_error")
                               .fit(X, Y_REG).predict(X))


@pytest.mark.parametrize("model_class", [GradientBoostingRegressor, GradientBoostingClassifier])
def test_boosting_warm_start_with_other_features(model_class):
    """Item 9: warm_start with another number of features gave an internal broadcast
    error; the model must also stay usable after the refusal."""
    y = Y_REG if model_class is GradientBoostingRegressor else Y_CLASS
    model = model_class(n_estimators=2, warm_start=True, min_samples_leaf=1).fit(X, y)
    before = model.predict(X)
    model.set_params(n_estimators=4)
    with pytest.raises(ValueError, match="warm_start=True.*X has 5 features.*expecting 3"):
        model.fit(np.c_[X, X[:, :2]], y)
    np.testing.assert_array_equal(model.predict(X), before)
    assert model.fit(X, y).n_iter_ == 4


def test_y_shape_messages_are_shared():
    """The y checks live once in silva._input: every estimator gives the same message."""
    for model in (DecisionTreeClassifier(), ID3Classifier(),
                  GradientBoostingClassifier(n_estimators=2), BaggingClassifier(n_estimators=2),
                  AdaBoostClassifier(n_estimators=2)):
        with pytest.raises(ValueError, match=r"y must have shape \(40,\), one label per row "
                                             "of X: X has 40 samples but y has 39"):
            model.fit(X, Y_CLASS[:39])
        if not model.__sklearn_tags__().target_tags.multi_output:
            with pytest.raises(ValueError,
                               match=r"y must have shape \(40,\), one-dimensional"):
                model.fit(X, np.c_[Y_CLASS, Y_CLASS])
        with pytest.raises(ValueError, match="requires y to be passed"):
            model.fit(X, None)


# ------------------------------------------- found by tests/test_fuzz_api.py (item 2)


@pytest.mark.parametrize("model", [
    DecisionTreeClassifier(criterion="twoing"), ID3Classifier(min_significance=0.05),
    RandomForestClassifier(n_estimators=3, criterion="twoing"),
], ids=lambda m: type(m).__name__)
def test_tiny_total_weight(model):
    """Weights of 1e-300 made twoing and the chi-square test divide by a product of
    weight sums that underflowed to zero: a ZeroDivisionError from compiled code."""
    with pytest.raises(ValueError, match=r"sample_weight sums to 4e-299.*at least 1e-50"):
        model.fit(X, Y_CLASS, sample_weight=np.full(40, 1e-300))
    with pytest.raises(ValueError, match=r"class_weight sums to .*outside \[1e-50, 1e\+50\]"):
        DecisionTreeClassifier(class_weight={0: 1e-60, 1: 1e-60}).fit(X, Y_CLASS)


@pytest.mark.parametrize("model", [
    RandomForestClassifier(n_estimators=3, random_state=0),
    ExtraTreesRegressor(n_estimators=3, bootstrap=True, random_state=0),
    BaggingClassifier(n_estimators=3, random_state=0),
    BaggingRegressor(n_estimators=3, random_state=0),
], ids=lambda m: type(m).__name__)
def test_bootstrap_of_zero_weight_samples_only(model):
    """A bootstrap that drew only zero-weight samples gave a forest's tree probabilities
    summing to zero (the forest's to less than one) and crashed a bagging member."""
    two = np.array([[0.0], [1.0]])
    y = np.array([0, 1])
    with pytest.raises(ValueError, match="drew 2 samples, all of zero sample_weight"):
        model.fit(two, y, sample_weight=np.array([1.0, 0.0]))


def test_stacking_folds_name_cv():
    """StackingClassifier on too few samples per class gave scikit-learn's splitter
    error, which names n_splits, not the cv parameter."""
    stack = StackingClassifier([("tree", DecisionTreeClassifier())], cv=2)
    with pytest.raises(ValueError, match=r"cv=2 cannot split these 2 samples into folds"):
        stack.fit(np.array([[0.0], [1.0]]), np.array([0, 1]))


def test_bagging_checks_categorical_codes_on_every_row():
    """A bad categorical code passed unnoticed when no member drew its row."""
    codes = np.zeros((9, 1))
    codes[5, 0] = -1.0
    bag = BaggingClassifier(n_estimators=2, random_state=0, categorical_features=[0])
    with pytest.raises(ValueError, match=r"categorical column 'feature 0' holds the value "
                                         r"-1\.0"):
        bag.fit(codes, np.arange(9) % 2)


# ------------------------------------------------- checks shared by trees and forests

@pytest.mark.parametrize("model_class", [DecisionTreeClassifier, RandomForestClassifier])
@pytest.mark.parametrize("level", [0.0, 1.5, -0.1])
def test_min_significance_outside_zero_one_is_refused(model_class, level):
    with pytest.raises(ValueError, match=r"min_significance must be in \(0.0, 1.0\]"):
        model_class(min_significance=level).fit(X, Y_CLASS)


def test_min_significance_none_is_no_test():
    # None and 1.0 both mean "no significance test": the same tree.
    none = DecisionTreeClassifier(min_significance=None, random_state=0).fit(X, Y_CLASS)
    one = DecisionTreeClassifier(min_significance=1.0, random_state=0).fit(X, Y_CLASS)
    np.testing.assert_array_equal(none.tree_.children_left, one.tree_.children_left)
    assert none.get_n_leaves() > 1


@pytest.mark.parametrize("model_class", [RandomForestClassifier, BaggingClassifier])
def test_warm_start_with_other_classes_is_refused(model_class):
    model = model_class(n_estimators=2, warm_start=True, random_state=0).fit(X, Y_CLASS)
    with pytest.raises(ValueError, match="warm_start=True needs the same classes"):
        model.set_params(n_estimators=4).fit(X, Y_CLASS + 1)


@pytest.mark.parametrize("make_fit, pattern", [
    # scikit-learn's own wording (from its test suites), which silva's messages contain
    # so that code matching scikit-learn's errors keeps working.
    (lambda X, y: silva.DecisionTreeClassifier(min_samples_split=1).fit(X, y > 0),
     r"'min_samples_split' .* must be an int in the range \[2, inf\) "
     r"or a float in the range \(0.0, 1.0\]"),
    (lambda X, y: silva.RandomForestRegressor(criterion="poisson", n_estimators=2).fit(
        X, -np.abs(y) - 1), r"Some value\(s\) of y are negative which is not allowed for "
                            r"Poisson regression."),
    (lambda X, y: silva.DecisionTreeRegressor(criterion="poisson").fit(X, 0 * y),
     r"Sum of y is not strictly positive which is necessary for Poisson regression."),
    # A y no Poisson model fits is named so before its length is checked.
    (lambda X, y: silva.DecisionTreeRegressor(criterion="poisson").fit(X[:1], [0, 0, 0]),
     r"y is not positive.*Poisson"),
    (lambda X, y: silva.AdaBoostClassifier().fit(X, y > 0, sample_weight=[-1.0]),
     re.escape("sample_weight.shape == (1,), expected (20,)")),
    (lambda X, y: silva.AdaBoostRegressor().fit(X, y, sample_weight=np.r_[-1.0, [1] * 19]),
     "Negative values in data passed to `sample_weight`"),
])
def test_messages_contain_scikit_learns_wording(make_fit, pattern):
    rng = np.random.RandomState(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    with pytest.raises(ValueError, match=pattern):
        make_fit(X, y)


def test_zero_dimensional_sample_weight_is_a_type_error_but_a_number_is_broadcast():
    X, y = np.random.RandomState(0).normal(size=(20, 3)), np.arange(20) % 2
    with pytest.raises(TypeError, match=re.escape(
            "Input should have at least 1 dimension i.e. satisfy `len(x.shape) > 0`, got "
            "scalar `array(0.)` instead.")):
        silva.DecisionTreeClassifier().fit(X, y, sample_weight=np.array(0))
    broadcast = silva.DecisionTreeClassifier(random_state=0).fit(X, y, sample_weight=2.0)
    unweighted = silva.DecisionTreeClassifier(random_state=0).fit(X, y)
    np.testing.assert_array_equal(broadcast.tree_.threshold, unweighted.tree_.threshold)
