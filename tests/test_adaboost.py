"""AdaBoost: a hand-worked example, the training-error bound, margins, resampling, edge
cases, AdaBoost.R2, and agreement with scikit-learn's SAMME on the same stumps."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, make_classification
from sklearn.ensemble import AdaBoostClassifier as SklearnAdaBoostClassifier
from sklearn.tree import DecisionTreeClassifier as SklearnTree

from silva.adaboost import AdaBoostClassifier, AdaBoostRegressor
from silva.decision_tree import DecisionTreeClassifier, DecisionTreeRegressor

# The hand example: ten points on a line in three runs, A = {1, 2, 3} (class 1),
# B = {4, ..., 8} (class 0), C = {9, 10} (class 1). No stump separates them.
HAND_X = np.arange(1, 11, dtype=float)[:, None]
HAND_Y = np.array([1, 1, 1, 0, 0, 0, 0, 0, 1, 1])


def diagonal(n, seed):
    """The lectures' 2-D data: uniform on the unit square, y = 1[x2 > x1]."""
    X = np.random.default_rng(seed).uniform(size=(n, 2))
    return X, (X[:, 1] > X[:, 0]).astype(int)


def test_hand_example_weights_and_betas():
    # Round 1, weights 1/10 each. The Gini-best stump cuts at 3.5 (weighted Gini of the
    # children 0.7 * 20/49 = 0.286 against 0.375 for the cut at 8.5, 0.48 at 5.5), and
    # predicts 1 on A and 0 on B u C: it misses C, err1 = 2/10.
    err1 = 2 / 10
    beta1 = np.log((1 - err1) / err1)  # log 4
    # C's weights are multiplied by e^beta1 = 4: A, B weigh 0.1 each, C 0.4 each; total
    # 1.6, so after normalising A = 3/16, B = 5/16, C = 8/16 (as class totals).
    # Round 2: the cut at 8.5 (children Gini 0.5 * 30/64 = 0.234; 3.5 gives 0.385)
    # predicts 0 on A u B and 1 on C: it misses A, err2 = 3/16.
    err2 = 3 / 16
    beta2 = np.log((1 - err2) / err2)  # log(13/3)
    # A's total weight 3/16 * 13/3 = 13/16; with B 5/16 and C 8/16 the total is 26/16:
    # A = 13/26, B = 5/26, C = 8/26.
    # Round 3: the cut at 3.5 again (right child Gini 0.5 * 80/169 = 0.237; 8.5 gives
    # 0.278), now predicting 1 on both sides since C outweighs B: it misses B.
    err3 = 5 / 26
    beta3 = np.log((1 - err3) / err3)  # log(21/5)

    model = AdaBoostClassifier(n_estimators=3, algorithm="discrete").fit(HAND_X, HAND_Y)
    np.testing.assert_allclose(model.estimator_errors_, [err1, err2, err3], rtol=1e-12)
    np.testing.assert_allclose(model.estimator_weights_, [beta1, beta2, beta3], rtol=1e-12)
    assert [e.tree_.threshold[0] for e in model.estimators_] == [3.5, 8.5, 3.5]

    # f(x) = sum_m beta_m G_m(x), G in {-1, +1}: on A +b1 -b2 +b3, on B -b1 -b2 +b3,
    # on C -b1 +b2 +b3. The signs are right everywhere: the training error is 0.
    expected_f = np.array([beta1 - beta2 + beta3] * 3 + [-beta1 - beta2 + beta3] * 5
                          + [-beta1 + beta2 + beta3] * 2)
    np.testing.assert_allclose(model.decision_function(HAND_X), expected_f, rtol=1e-12)
    np.testing.assert_array_equal(model.predict(HAND_X), HAND_Y)
    bound = np.cumprod([2 * np.sqrt(e * (1 - e)) for e in (err1, err2, err3)])
    np.testing.assert_allclose(model.training_error_bound_, bound, rtol=1e-12)
    total = beta1 + beta2 + beta3
    np.testing.assert_allclose(model.margins(HAND_X, HAND_Y),
                               np.where(HAND_Y == 1, 1, -1) * expected_f / total, rtol=1e-12)
    # SAMME with two classes adds log(K - 1) = 0: the same algorithm.
    samme = AdaBoostClassifier(n_estimators=3, algorithm="samme").fit(HAND_X, HAND_Y)
    np.testing.assert_allclose(samme.estimator_weights_, model.estimator_weights_)


def test_learning_rate_scales_beta():
    model = AdaBoostClassifier(n_estimators=1, learning_rate=0.5, algorithm="discrete")
    model.fit(HAND_X, HAND_Y)
    np.testing.assert_allclose(model.estimator_weights_, [0.5 * np.log(4)], rtol=1e-12)


@pytest.mark.parametrize("algorithm", ["discrete", "samme", "real"])
@pytest.mark.parametrize("learning_rate", [1.0, 0.5])
def test_bound_is_above_training_error_every_round(algorithm, learning_rate):
    X, y = make_classification(n_samples=300, n_features=6, n_informative=3,
                               flip_y=0.1, random_state=0)
    model = AdaBoostClassifier(n_estimators=40, learning_rate=learning_rate,
                               algorithm=algorithm, random_state=0).fit(X, y)
    errors = np.array([np.mean(p != y) for p in model.staged_predict(X)])
    bound = model.training_error_bound_
    assert len(bound) == len(errors) == len(model.estimators_) > 10
    assert np.all(errors <= bound + 1e-12)
    assert np.all(np.diff(bound) <= 1e-12)  # every factor is below 1 for two classes
    if algorithm != "real" and learning_rate == 1.0:
        eps = model.estimator_errors_
        np.testing.assert_allclose(bound, np.cumprod(2 * np.sqrt(eps * (1 - eps))))
        assert np.all(bound <= np.exp(-2 * np.cumsum((0.5 - eps) ** 2)) + 1e-12)


@pytest.mark.parametrize("algorithm", ["samme", "real"])
def test_multiclass_bound_and_margins(algorithm):
    X, y = load_digits(return_X_y=True)
    X, y = X[:400], y[:400]
    base = DecisionTreeClassifier(max_depth=3)
    model = AdaBoostClassifier(base, n_estimators=15, algorithm=algorithm,
                               random_state=0).fit(X, y)
    predicted = model.predict(X)
    margins = model.margins(X, y)
    assert np.all((margins >= -1 - 1e-12) & (margins <= 1 + 1e-12))
    # A positive margin means the true class has the strictly largest score.
    np.testing.assert_array_equal(margins > 0, predicted == y)
    if algorithm == "samme":
        errors = np.array([np.mean(p != y) for p in model.staged_predict(X)])
        assert np.all(errors <= model.training_error_bound_ + 1e-12)
    else:
        assert not hasattr(model, "training_error_bound_")


def test_diagonal_accuracy_rises_with_stumps():
    X, y = diagonal(1000, seed=1)
    X_test, y_test = diagonal(5000, seed=2)
    accuracy = [AdaBoostClassifier(n_estimators=m, random_state=0).fit(X, y)
                .score(X_test, y_test) for m in (2, 10, 50)]
    # A stump cuts one axis; the diagonal needs a staircase of many cuts.
    assert accuracy[0] < accuracy[1] < accuracy[2]
    assert accuracy[0] < 0.85 and accuracy[2] > 0.95


def test_same_weights_as_sklearn_samme():
    # Breast cancer has fewer than 1024 distinct values per feature, so with
    # max_bins=1024 silva's stumps are exact CART stumps, the same as scikit-learn's.
    X, y = load_breast_cancer(return_X_y=True)
    ours = AdaBoostClassifier(DecisionTreeClassifier(max_depth=1, max_bins=1024),
                              n_estimators=20, algorithm="samme").fit(X, y)
    theirs = SklearnAdaBoostClassifier(SklearnTree(max_depth=1), n_estimators=20,
                                       random_state=0).fit(X, y)
    np.testing.assert_allclose(ours.estimator_weights_, theirs.estimator_weights_,
                               rtol=1e-8)
    np.testing.assert_allclose(ours.estimator_errors_, theirs.estimator_errors_, rtol=1e-8)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    # scikit-learn codes a vote as +beta for the predicted class and -beta/(K-1) for the
    # others, and divides by the sum of the betas: with two classes its decision function
    # is 2 sum_m beta_m G_m(x) / sum_m beta_m.
    np.testing.assert_allclose(2 * ours.decision_function(X) / ours.estimator_weights_.sum(),
                               theirs.decision_function(X), atol=1e-10)


def test_multiclass_samme_agrees_with_sklearn():
    X, y = load_digits(return_X_y=True)
    X, y = X[:600], y[:600]
    ours = AdaBoostClassifier(DecisionTreeClassifier(max_depth=2), n_estimators=10,
                              algorithm="samme").fit(X, y)
    theirs = SklearnAdaBoostClassifier(SklearnTree(max_depth=2, random_state=0),
                                       n_estimators=10, random_state=0).fit(X, y)
    # Pixels tie often; trees that tie may differ, so compare the first round and the
    # overall accuracy.
    np.testing.assert_allclose(ours.estimator_weights_[0], theirs.estimator_weights_[0])
    assert abs(ours.score(X, y) - theirs.score(X, y)) < 0.05


class NoWeightStump(ClassifierMixin, BaseEstimator):
    """A stump whose fit takes no sample_weight (so AdaBoost must resample)."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, X, y):
        self.tree_ = DecisionTreeClassifier(max_depth=1, random_state=self.random_state)
        self.tree_.fit(X, y)
        self.classes_ = self.tree_.classes_
        self.n_fits_ = getattr(self, "n_fits_", 0) + 1
        return self

    def predict(self, X):
        return self.tree_.predict(X)

    def predict_proba(self, X):
        return self.tree_.predict_proba(X)


def test_resampling_with_a_learner_without_sample_weight():
    X, y = diagonal(600, seed=3)
    X_test, y_test = diagonal(3000, seed=4)
    model = AdaBoostClassifier(NoWeightStump(), n_estimators=40, random_state=0).fit(X, y)
    again = AdaBoostClassifier(NoWeightStump(), n_estimators=40, random_state=0).fit(X, y)
    other = AdaBoostClassifier(NoWeightStump(), n_estimators=40, random_state=1).fit(X, y)
    np.testing.assert_array_equal(model.estimator_weights_, again.estimator_weights_)
    assert not np.array_equal(model.estimator_weights_[:5], other.estimator_weights_[:5])
    # Each learner saw a different bootstrap, and boosting beats one stump clearly.
    thresholds = {e.tree_.tree_.threshold[0] for e in model.estimators_}
    assert len(thresholds) > 10
    stump = DecisionTreeClassifier(max_depth=1).fit(X, y).score(X_test, y_test)
    assert model.score(X_test, y_test) > stump + 0.1
    # The bound still holds: the errors are measured on the weighted training set.
    errors = np.array([np.mean(p != y) for p in model.staged_predict(X)])
    assert np.all(errors <= model.training_error_bound_ + 1e-12)


def test_resample_true_draws_bootstraps_for_weighted_learners():
    X, y = diagonal(400, seed=5)
    weighted = AdaBoostClassifier(n_estimators=10, random_state=0).fit(X, y)
    resampled = AdaBoostClassifier(n_estimators=10, resample=True, random_state=0).fit(X, y)
    assert not np.allclose(weighted.estimator_errors_, resampled.estimator_errors_)
    assert resampled.score(X, y) > 0.8


def test_perfect_learner_gets_a_finite_weight_and_stops():
    X, y = diagonal(200, seed=6)
    y = (X[:, 0] > 0.5).astype(int)  # separable by one stump
    model = AdaBoostClassifier(n_estimators=10, algorithm="discrete").fit(X, y)
    assert len(model.estimators_) == 1
    assert model.estimator_errors_[0] == 0.0
    # err is replaced by half the lightest sample's weight, 1 / (2 n).
    eps0 = 0.5 / 200
    np.testing.assert_allclose(model.estimator_weights_, [np.log((1 - eps0) / eps0)])
    assert np.all(np.isfinite(model.predict_proba(X)))
    np.testing.assert_array_equal(model.predict(X), y)
    # A fully grown tree is perfect on its training set at the first round too.
    deep = AdaBoostClassifier(DecisionTreeClassifier(), n_estimators=10).fit(*diagonal(200, 7))
    assert len(deep.estimators_) == 1 and np.isfinite(deep.estimator_weights_).all()


def test_learner_no_better_than_chance_is_not_given_a_weight():
    # XOR: no stump does better than chance, so no split is made and the single leaf
    # errs on half of the weight: err = 1/2 = 1 - 1/K.
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * 5, dtype=float)
    y = np.array([0, 1, 1, 0] * 5)
    for algorithm in ("discrete", "samme", "real"):
        model = AdaBoostClassifier(n_estimators=10, algorithm=algorithm).fit(X, y)
        assert len(model.estimators_) == 1  # kept alone, boosting stopped
        np.testing.assert_allclose(model.estimator_errors_, [0.5])
        assert np.all(np.isfinite(model.estimator_weights_))
        assert np.all(np.isfinite(model.predict_proba(X)))


def test_staged_methods_end_at_the_final_model():
    X, y = load_breast_cancer(return_X_y=True)
    for algorithm in ("samme", "real"):
        model = AdaBoostClassifier(n_estimators=8, algorithm=algorithm,
                                   random_state=0).fit(X, y)
        staged = list(model.staged_predict_proba(X))
        assert len(staged) == 8
        np.testing.assert_allclose(staged[-1], model.predict_proba(X))
        np.testing.assert_allclose(staged[0].sum(axis=1), 1.0)
        np.testing.assert_array_equal(list(model.staged_predict(X))[-1], model.predict(X))
        np.testing.assert_allclose(list(model.staged_decision_function(X))[-1],
                                   model.decision_function(X))
        scores = list(model.staged_score(X, y))
        assert scores[-1] == model.score(X, y)
        # Two classes: the probability of class 1 is sigmoid(decision_function).
        np.testing.assert_allclose(model.predict_proba(X)[:, 1],
                                   1 / (1 + np.exp(-model.decision_function(X))))


def test_feature_importances_are_the_weighted_mean_of_the_learners():
    X, y = load_breast_cancer(return_X_y=True)
    model = AdaBoostClassifier(n_estimators=5, random_state=0).fit(X, y)
    expected = sum(b * e.feature_importances_ for b, e in
                   zip(model.estimator_weights_, model.estimators_, strict=True))
    np.testing.assert_allclose(model.feature_importances_,
                               expected / model.estimator_weights_.sum())


def test_string_labels_and_sample_weight():
    X, y = load_breast_cancer(return_X_y=True)
    labels = np.array(["malignant", "benign"])[y]
    model = AdaBoostClassifier(n_estimators=5, random_state=0).fit(X, labels)
    np.testing.assert_array_equal(model.classes_, ["benign", "malignant"])
    assert set(model.predict(X)) <= set(labels)
    # Zero weight is the same as leaving the sample out.
    weights = np.ones(len(y))
    weights[::3] = 0
    keep = weights > 0
    a = AdaBoostClassifier(n_estimators=5).fit(X, y, sample_weight=weights)
    b = AdaBoostClassifier(n_estimators=5).fit(X[keep], y[keep])
    np.testing.assert_allclose(a.estimator_weights_, b.estimator_weights_)


@pytest.mark.parametrize("params, match", [
    ({"learning_rate": 0.0}, "learning_rate"),
    ({"learning_rate": np.inf}, "learning_rate"),
    ({"algorithm": "SAMME.R"}, "algorithm"),
    ({"n_estimators": 0}, "n_estimators"),
])
def test_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        AdaBoostClassifier(**params).fit(HAND_X, HAND_Y)


def test_discrete_needs_two_classes():
    X, y = load_digits(return_X_y=True)
    with pytest.raises(ValueError, match="discrete"):
        AdaBoostClassifier(algorithm="discrete").fit(X[:50], y[:50])
    with pytest.raises(ValueError, match="margins|label"):
        AdaBoostClassifier(n_estimators=2).fit(HAND_X, HAND_Y).margins(HAND_X, HAND_Y + 5)


# ----------------------------------------------------------------- AdaBoost.R2
def test_r2_first_round_by_hand():
    X, y = load_diabetes(return_X_y=True)
    model = AdaBoostRegressor(n_estimators=3, random_state=0).fit(X, y)
    # Round 1 fits the default learner with uniform weights (deterministic tree).
    first = DecisionTreeRegressor(max_depth=3).fit(X, y).predict(X)
    loss = np.abs(first - y) / np.abs(first - y).max()
    average = loss.mean()
    beta = average / (1 - average)
    np.testing.assert_allclose(model.estimator_errors_[0], average, rtol=1e-12)
    np.testing.assert_allclose(model.estimator_weights_[0], np.log(1 / beta), rtol=1e-12)
    np.testing.assert_allclose(model.estimators_[0].predict(X), first)


@pytest.mark.parametrize("loss", ["linear", "square", "exponential"])
def test_r2_losses_fit_and_stage(loss):
    X, y = load_diabetes(return_X_y=True)
    model = AdaBoostRegressor(n_estimators=15, loss=loss, random_state=0).fit(X, y)
    assert np.all((model.estimator_errors_ > 0) & (model.estimator_errors_ < 0.5))
    staged = list(model.staged_predict(X))
    np.testing.assert_allclose(staged[-1], model.predict(X))
    assert model.score(X, y) > DecisionTreeRegressor(max_depth=3).fit(X, y).score(X, y) - 0.05


def test_weighted_median():
    predictions = np.array([[3.0, 1.0, 2.0], [5.0, 4.0, 6.0]])
    # Sorted row 1: 1 (w .3), 2 (w .5), 3 (w .2); cumulative .3, .8 -> 2 reaches half.
    # Sorted row 2: 4 (w .3), 5 (w .2), 6 (w .5); cumulative .3, .5 -> 5 reaches half.
    weights = np.array([0.2, 0.3, 0.5])
    np.testing.assert_array_equal(AdaBoostRegressor._weighted_median(predictions, weights),
                                  [2.0, 5.0])


@pytest.mark.parametrize("case", ["plain", "missing", "categorical", "median leaves"])
def test_r2_reads_its_learners_leaves_as_each_learner_predicts(case):
    # predict reads the silva learners' leaf values from their trees, without each
    # learner's own predict (which validates X again); the weighted median of each
    # learner's predict must be the same bits, with missing values, categorical
    # splits and absolute-error leaves too, after pickling and after a refit.
    import pickle

    X, y = load_diabetes(return_X_y=True)
    rng = np.random.default_rng(0)
    base = None
    if case == "missing":
        X = np.where(rng.random(X.shape) < 0.1, np.nan, X)
    elif case == "categorical":
        X = X.copy()
        X[:, 1] = rng.integers(0, 5, X.shape[0])
        base = DecisionTreeRegressor(max_depth=3, categorical_features=[1])
    elif case == "median leaves":
        base = DecisionTreeRegressor(max_depth=4, criterion="absolute_error")
    model = AdaBoostRegressor(base, n_estimators=30, random_state=0).fit(X, y)
    assert all(model._leaf_values(learner, X) is not None for learner in model.estimators_)
    one_by_one = np.column_stack([learner.predict(X) for learner in model.estimators_])
    expected = AdaBoostRegressor._weighted_median(one_by_one, model.estimator_weights_)
    np.testing.assert_array_equal(model.predict(X), expected)
    np.testing.assert_array_equal(list(model.staged_predict(X))[-1], expected)
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict(X), expected)
    refitted = model.fit(X[::2], y[::2])
    one_by_one = np.column_stack([learner.predict(X) for learner in refitted.estimators_])
    np.testing.assert_array_equal(
        refitted.predict(X),
        AdaBoostRegressor._weighted_median(one_by_one, refitted.estimator_weights_))


@pytest.mark.parametrize(("algorithm", "n_classes"),
                         [("discrete", 2), ("samme", 2), ("samme", 3), ("real", 2), ("real", 3)])
def test_classifier_reads_its_learners_leaves_as_each_learner_predicts(algorithm, n_classes):
    # The class scores from the learners' leaf values must be the same bits as from
    # each learner's predict / predict_proba (with missing values); learners that did
    # not see every class (resampling) keep their own predict.
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4,
                               n_classes=n_classes, random_state=0)
    X = np.where(np.random.default_rng(1).random(X.shape) < 0.05, np.nan, X)
    model = AdaBoostClassifier(DecisionTreeClassifier(max_depth=2), n_estimators=25,
                               algorithm=algorithm, random_state=0).fit(X, y)
    assert all(model._leaf_values(learner, X) is not None for learner in model.estimators_)
    from_leaves = (model.decision_function(X), model.predict_proba(X),
                   [s.copy() for s in model.staged_decision_function(X)])
    model._leaf_values = lambda learner, X: None  # the learners' own predict
    one_by_one = (model.decision_function(X), model.predict_proba(X),
                  list(model.staged_decision_function(X)))
    np.testing.assert_array_equal(from_leaves[0], one_by_one[0])
    np.testing.assert_array_equal(from_leaves[1], one_by_one[1])
    for a, b in zip(from_leaves[2], one_by_one[2], strict=True):
        np.testing.assert_array_equal(a, b)
    # A learner that saw fewer classes than the ensemble is asked itself.
    assert model._reads_leaf_values(model.estimators_[0])
    partial = DecisionTreeClassifier(max_depth=2).fit(X[y != 0], y[y != 0])
    assert not model._reads_leaf_values(partial)


def test_r2_perfect_learner():
    X = np.arange(20, dtype=float)[:, None]
    y = (X[:, 0] > 9).astype(float) * 3.0  # one split fits exactly
    model = AdaBoostRegressor(n_estimators=10).fit(X, y)
    assert len(model.estimators_) == 1 and np.isfinite(model.estimator_weights_).all()
    np.testing.assert_array_equal(model.predict(X), y)


class WeakThenPerfect(ClassifierMixin, BaseEstimator):
    """Predicts the majority class under uniform weights, else memorises the data."""

    def fit(self, X, y, sample_weight):
        uniform = np.allclose(sample_weight, sample_weight[0])
        # A root that may not split is a single leaf: the weighted majority class.
        self.model_ = DecisionTreeClassifier(min_samples_split=len(y) + 1 if uniform else 2)
        self.model_.fit(X, y, sample_weight=sample_weight)
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)


def test_perfect_learner_after_others_outweighs_them():
    X, y = diagonal(100, seed=8)
    n, p = len(y), np.mean(y != np.bincount(y).argmax())
    model = AdaBoostClassifier(WeakThenPerfect(), n_estimators=10).fit(X, y)
    assert len(model.estimators_) == 2  # round 2 is perfect: boosting stops
    beta1 = np.log((1 - p) / p)
    # After round 1 the correctly classified samples weigh 1 / (2 n (1 - p)) each;
    # the perfect learner's error is taken as half of that.
    eps0 = 1 / (4 * n * (1 - p))
    beta2 = max(np.log((1 - eps0) / eps0), beta1 + 1.0)
    np.testing.assert_allclose(model.estimator_errors_, [p, 0.0])
    np.testing.assert_allclose(model.estimator_weights_, [beta1, beta2])
    np.testing.assert_array_equal(model.predict(X), y)  # the perfect learner decides


# ---------------------------------------------- scikit-learn's AdaBoost tests (issue 23)
def test_multiclass_decision_function_is_symmetric_votes_over_total_weight():
    X, y = make_classification(120, 5, n_classes=3, n_informative=3, n_clusters_per_class=1,
                               random_state=0)
    one = AdaBoostClassifier(n_estimators=1, random_state=0).fit(X, y)
    assert set(np.unique(one.decision_function(X))) == {1.0, -0.5}
    model = AdaBoostClassifier(n_estimators=6, random_state=0).fit(X, y)
    decision = model.decision_function(X)
    np.testing.assert_allclose(decision.sum(axis=1), 0.0, atol=1e-12)
    # By hand: each learner's vote coded 1 / -1/(K-1), weighted, over the total weight.
    coded = sum(beta * np.where(learner.predict(X)[:, None] == np.arange(3), 1.0, -0.5)
                for learner, beta in zip(model.estimators_, model.estimator_weights_,
                                         strict=True))
    np.testing.assert_allclose(decision, coded / model.estimator_weights_.sum())
    np.testing.assert_array_equal(model.predict(X), model.classes_[decision.argmax(axis=1)])
    for staged, n in zip(model.staged_decision_function(X), range(1, 7), strict=True):
        np.testing.assert_allclose(staged.sum(axis=1), 0.0, atol=1e-12)
        if n == len(model.estimators_):
            np.testing.assert_allclose(staged, decision)
    sklearn_model = SklearnAdaBoostClassifier(n_estimators=1, random_state=0).fit(X, y)
    np.testing.assert_array_equal(one.decision_function(X),
                                  sklearn_model.decision_function(X))


def test_a_foreign_learner_gets_x_of_any_dimension_and_huge_rates_warn_nothing():
    import warnings

    from sklearn.dummy import DummyClassifier, DummyRegressor

    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, 3, 3))
    y = rng.randint(0, 2, 40)
    model = AdaBoostClassifier(DummyClassifier(strategy="most_frequent")).fit(X, y)
    np.testing.assert_array_equal(model.predict(X), np.full(40, np.bincount(y).argmax()))
    regressor = AdaBoostRegressor(DummyRegressor()).fit(X, rng.normal(size=40))
    assert regressor.predict(X).shape == (40,)
    with pytest.raises(ValueError, match="dim 3"):
        AdaBoostClassifier().fit(X, y)  # silva's trees need a matrix
    X2, y2 = make_classification(150, 5, n_classes=3, n_informative=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        AdaBoostClassifier(n_estimators=30, learning_rate=23.0).fit(X2, y2)


@pytest.mark.parametrize("Model", [AdaBoostClassifier, AdaBoostRegressor])
def test_rounds_bin_x_once_whatever_its_memory_order(Model, monkeypatch):
    # scikit-learn's digits (and many a DataFrame's values) come in Fortran order. Each
    # round's tree must reuse the first round's codes: the ensemble hands its trees a
    # C-ordered X, which they take as it is, so the bin cache keyed on X's identity hits.
    from silva.engine import binning

    calls = []
    original = binning.Binner.fit_transform

    def counting(self, X):
        calls.append(X.shape)
        return original(self, X)

    monkeypatch.setattr(binning.Binner, "fit_transform", counting)
    X, y = load_digits(return_X_y=True)
    X = np.asfortranarray(X[:300])
    y = y[:300]
    model = Model(n_estimators=5, random_state=0).fit(X, y)
    assert len(model.estimators_) > 1
    assert len(calls) == 1
    np.testing.assert_array_equal(
        model.predict(X),
        Model(n_estimators=5, random_state=0).fit(np.ascontiguousarray(X), y).predict(X))


@pytest.mark.parametrize("base", [
    DecisionTreeClassifier(max_depth=2, class_weight={0: 1.0, 1: 2.0}),
    SklearnTree(max_depth=2, class_weight={0: 1.0, 1: 2.0})])
def test_each_round_has_its_own_seeded_learner(base):
    # silva's trees are shallow copies of one clone (sharing the class_weight dict),
    # other learners clones: either way one object per round, each with its round's
    # seed, and the base learner itself never fitted.
    X, y = make_classification(n_samples=300, random_state=0)
    model = AdaBoostClassifier(base, n_estimators=5, random_state=0).fit(X, y)
    learners = model.estimators_
    assert len({id(learner) for learner in learners}) == len(learners) > 1
    seeds = [learner.random_state for learner in learners]
    assert len(set(seeds)) == len(seeds) and all(isinstance(s, int) for s in seeds)
    assert all(learner.class_weight == {0: 1.0, 1: 2.0} for learner in learners)
    assert not hasattr(base, "tree_")
    # The same rounds again from the same random_state.
    again = AdaBoostClassifier(base, n_estimators=5, random_state=0).fit(X, y)
    assert [learner.random_state for learner in again.estimators_] == seeds
    np.testing.assert_array_equal(model.predict(X), again.predict(X))


def test_rounds_without_zero_weight_rows_bin_them_from_the_first_rounds_codes(
        monkeypatch):
    """On digits, weights fall to zero within 100 rounds of depth-3 trees: those rounds'
    trees take their rows' bins from the first round's codes (BinnedData.restricted)
    rather than binning the rows afresh, and the model is the same, bit for bit."""
    from silva.engine.cart import BinnedData

    X, y = load_digits(return_X_y=True)

    def fit():
        return AdaBoostClassifier(estimator=DecisionTreeClassifier(max_depth=3),
                                  n_estimators=100, random_state=0).fit(X, y)

    restricted = BinnedData.restricted
    derived = []

    def counted(self, rows):
        binned = restricted(self, rows)
        derived.append(binned is not None)
        return binned

    monkeypatch.setattr(BinnedData, "restricted", counted)
    model = fit()
    assert sum(derived) > 20  # rounds that left rows out and took their bins so
    monkeypatch.setattr(BinnedData, "restricted", lambda self, rows: None)
    afresh = fit()
    np.testing.assert_array_equal(model.estimator_weights_, afresh.estimator_weights_)
    for a, b in zip(model.estimators_, afresh.estimators_, strict=True):
        for name in ("children_left", "feature", "threshold", "value"):
            np.testing.assert_array_equal(getattr(a.tree_, name), getattr(b.tree_, name))
    np.testing.assert_array_equal(model.predict_proba(X), afresh.predict_proba(X))


def test_rounds_check_and_encode_the_labels_once(monkeypatch):
    """A silva tree in AdaBoost's rounds takes the labels' classes and codes from the
    round cache after the first round (their checks cost about 120 us a round); the
    model is the one whose every round checks them anew."""
    from silva import _input

    X, y = load_breast_cancer(return_X_y=True)
    calls = []
    checked = _input.classification_target

    def counted(labels):
        calls.append(1)
        return checked(labels)

    monkeypatch.setattr(_input, "classification_target", counted)
    model = AdaBoostClassifier(n_estimators=30, random_state=0).fit(X, y)
    # One for the ensemble's own labels, one for the rounds' encoded labels.
    assert len(calls) == 2 and len(model.estimators_) == 30
    calls.clear()
    monkeypatch.setattr(DecisionTreeClassifier, "_classification_target",
                        lambda self, y_given, labels: counted(labels))
    afresh = AdaBoostClassifier(n_estimators=30, random_state=0).fit(X, y)
    assert len(calls) == 31  # every round checked anew
    np.testing.assert_array_equal(model.estimator_weights_, afresh.estimator_weights_)
    np.testing.assert_array_equal(model.predict_proba(X), afresh.predict_proba(X))
    for a, b in zip(model.estimators_, afresh.estimators_, strict=True):
        np.testing.assert_array_equal(a.classes_, b.classes_)
        np.testing.assert_array_equal(a.tree_.threshold, b.tree_.threshold)
