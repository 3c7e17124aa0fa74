"""Voting and stacking: scikit-learn's estimator checks, weights, out-of-fold stacking."""

import pickle

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris, make_classification
from sklearn.ensemble import StackingClassifier as SklearnStackingClassifier
from sklearn.ensemble import StackingRegressor as SklearnStackingRegressor
from sklearn.ensemble import VotingClassifier as SklearnVotingClassifier
from sklearn.ensemble import VotingRegressor as SklearnVotingRegressor
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold, cross_val_predict, train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from silva.adaboost import AdaBoostClassifier, AdaBoostRegressor
from silva.decision_tree import DecisionTreeClassifier, DecisionTreeRegressor
from silva.stacking import StackingClassifier, StackingRegressor
from silva.voting import VotingClassifier, VotingRegressor


def _classifiers():
    return [("tree", DecisionTreeClassifier(max_depth=3, random_state=0)),
            ("bayes", GaussianNB())]


def _regressors():
    return [("tree", DecisionTreeRegressor(max_depth=3, random_state=0)), ("ridge", Ridge())]


@parametrize_with_checks([
    AdaBoostClassifier(n_estimators=5, random_state=0),
    AdaBoostClassifier(n_estimators=5, algorithm="real", random_state=0),
    AdaBoostRegressor(n_estimators=5, random_state=0),
    VotingClassifier(_classifiers()),
    VotingClassifier(_classifiers(), voting="soft"),
    VotingRegressor(_regressors()),
    StackingClassifier(_classifiers(), cv=3),
    StackingRegressor(_regressors(), cv=3),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)


# --------------------------------------------------------------------------- voting
def _blobs():
    X, y = load_iris(return_X_y=True)
    return X, y


def _three_models():
    return [("tree", DecisionTreeClassifier(max_depth=2, random_state=0)),
            ("knn", KNeighborsClassifier(n_neighbors=15)),
            ("logistic", LogisticRegression(max_iter=500))]


def test_hard_and_soft_voting_match_sklearn():
    X, y = _blobs()
    for voting, weights in [("hard", None), ("hard", [2, 1, 1]), ("soft", None),
                            ("soft", [1, 2, 3])]:
        ours = VotingClassifier(_three_models(), voting=voting, weights=weights).fit(X, y)
        theirs = SklearnVotingClassifier(_three_models(), voting=voting,
                                         weights=weights).fit(X, y)
        np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
        if voting == "soft":
            np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X))
            np.testing.assert_allclose(ours.transform(X), theirs.transform(X))


def test_hard_vote_by_hand():
    X, y = _blobs()
    vote = VotingClassifier(_three_models(), weights=[1, 1, 3]).fit(X, y)
    predictions = vote.transform(X)
    assert predictions.shape == (len(y), 3)
    # Weight 3 outvotes the other two together: the logistic model decides alone.
    np.testing.assert_array_equal(vote.predict(X), predictions[:, 2])
    equal = VotingClassifier(_three_models()).fit(X, y)
    votes = np.stack([(predictions == c).sum(axis=1) for c in range(3)], axis=1)
    np.testing.assert_array_equal(equal.predict(X), np.argmax(votes, axis=1))


def test_per_class_weights_soft_vote():
    X, y = _blobs()
    weights = np.array([[1.0, 0.0, 2.0], [0.5, 1.0, 0.5], [1.0, 3.0, 1.0]])
    vote = VotingClassifier(_three_models(), voting="soft", weights=weights).fit(X, y)
    probabilities = [m.predict_proba(X) for m in vote.estimators_]
    scores = sum(w * p for w, p in zip(weights, probabilities, strict=True))
    np.testing.assert_array_equal(vote.predict(X), np.argmax(scores, axis=1))
    np.testing.assert_allclose(vote.predict_proba(X),
                               scores / scores.sum(axis=1, keepdims=True))
    # A class weighted zero by every model is never predicted... unless nothing else is.
    zero_class = weights.copy()
    zero_class[:, 1] = 0
    vote.set_params(weights=zero_class).fit(X, y)
    assert not np.any(vote.predict(X) == 1)
    with pytest.raises(ValueError, match="weights"):
        vote.set_params(weights=np.ones((3, 2))).fit(X, y)
    with pytest.raises(ValueError, match="weights"):
        vote.set_params(weights=[1, -1, 1]).fit(X, y)


def test_voting_drop_and_nested_params():
    X, y = _blobs()
    vote = VotingClassifier(_three_models())
    vote.set_params(knn="drop", tree__max_depth=1)
    assert vote.get_params()["tree__max_depth"] == 1
    vote.fit(X, y)
    assert len(vote.estimators_) == 2 and vote.named_estimators_["knn"] == "drop"
    assert vote.named_estimators_["tree"].get_depth() == 1
    with pytest.raises(ValueError, match="predict_proba"):
        VotingClassifier([("svc", LinearSVC())], voting="soft").fit(X, y).predict_proba(X)
    assert not hasattr(VotingClassifier(_three_models()), "predict_proba")


def test_voting_regressor_matches_sklearn():
    X, y = load_diabetes(return_X_y=True)
    models = _regressors() + [("knn", KNeighborsRegressor())]
    ours = VotingRegressor(models, weights=[1, 2, 1]).fit(X, y)
    theirs = SklearnVotingRegressor(models, weights=[1, 2, 1]).fit(X, y)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X))
    np.testing.assert_allclose(ours.transform(X), theirs.transform(X))
    np.testing.assert_allclose(ours.predict(X), ours.transform(X) @ [0.25, 0.5, 0.25])


# ------------------------------------------------------------------------- stacking
class RecordingClassifier(ClassifierMixin, BaseEstimator):
    """Final estimator that keeps the meta-features it was trained on."""

    def fit(self, X, y):
        self.X_fit_ = np.array(X, copy=True)
        self.model_ = LogisticRegression().fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)


def test_stacking_uses_only_out_of_fold_predictions():
    X, y = make_classification(n_samples=200, n_features=5, flip_y=0.2, random_state=0)
    memoriser = KNeighborsClassifier(n_neighbors=1)
    cv = KFold(5, shuffle=True, random_state=0)
    stack = StackingClassifier([("1nn", memoriser)], RecordingClassifier(), cv=cv,
                               stack_method="predict").fit(X, y)
    seen = stack.final_estimator_.X_fit_[:, 0]
    # In-sample, 1-NN repeats every training label; the final model must not see that.
    np.testing.assert_array_equal(memoriser.fit(X, y).predict(X), y)
    assert np.mean(seen == y) < 0.9
    np.testing.assert_array_equal(seen, cross_val_predict(memoriser, X, y, cv=cv))
    # At prediction time the base model refitted on all data is used.
    np.testing.assert_array_equal(stack.transform(X)[:, 0], y)


def test_stacking_matches_sklearn():
    X, y = load_breast_cancer(return_X_y=True)
    models = [("tree", DecisionTreeClassifier(max_depth=3, random_state=0)),
              ("knn", KNeighborsClassifier())]
    for passthrough in (False, True):
        final = make_pipeline(StandardScaler(), LogisticRegression())
        ours = StackingClassifier(models, final, passthrough=passthrough).fit(X, y)
        theirs = SklearnStackingClassifier(models, final, passthrough=passthrough).fit(X, y)
        np.testing.assert_allclose(ours.transform(X), theirs.transform(X))
        np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-6)
    assert ours.transform(X).shape == (len(y), 2 + X.shape[1])
    np.testing.assert_array_equal(ours.transform(X)[:, 2:], X)  # passthrough columns


def test_stack_methods():
    X, y = load_iris(return_X_y=True)
    models = [("tree", DecisionTreeClassifier(max_depth=2, random_state=0)),
              ("svc", LinearSVC())]
    auto = StackingClassifier(models).fit(X, y)
    assert auto.stack_method_ == ["predict_proba", "decision_function"]
    assert auto.transform(X).shape == (150, 6)
    per_model = StackingClassifier(models, stack_method=["predict", "predict"]).fit(X, y)
    assert per_model.transform(X).shape == (150, 2)
    assert set(np.unique(per_model.transform(X))) <= {0.0, 1.0, 2.0}
    with pytest.raises(ValueError, match="stack_method"):
        StackingClassifier(models, stack_method="predict_proba").fit(X, y)
    with pytest.raises(ValueError, match="stack_method"):
        StackingClassifier(models, stack_method="vote").fit(X, y)


def test_multi_level_stacking_by_nesting():
    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    level_two = StackingClassifier(
        [("tree", DecisionTreeClassifier(max_depth=2, random_state=0)),
         ("knn", KNeighborsClassifier())], cv=3)
    model = StackingClassifier(
        [("tree", DecisionTreeClassifier(max_depth=4, random_state=0)),
         ("knn", KNeighborsClassifier()),
         ("boost", AdaBoostClassifier(n_estimators=5, random_state=0))],
        final_estimator=level_two, cv=3).fit(X_train, y_train)
    assert isinstance(model.final_estimator_, StackingClassifier)
    assert model.final_estimator_.transform(model.transform(X_test)).shape == (len(y_test), 2)
    assert model.score(X_test, y_test) > 0.9
    # ... and a stacking model as a base model of another.
    outer = StackingClassifier([("inner", level_two), ("knn", KNeighborsClassifier())], cv=3)
    assert outer.fit(X_train, y_train).score(X_test, y_test) > 0.9


def test_stacking_regressor_matches_sklearn():
    X, y = load_diabetes(return_X_y=True)
    models = _regressors()
    for passthrough in (False, True):
        ours = StackingRegressor(models, passthrough=passthrough).fit(X, y)
        theirs = SklearnStackingRegressor(models, passthrough=passthrough).fit(X, y)
        np.testing.assert_allclose(ours.predict(X), theirs.predict(X))


def test_stacking_string_labels_and_sample_weight():
    X, y = load_iris(return_X_y=True)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    stack = StackingClassifier(_classifiers()).fit(X, labels, sample_weight=np.ones(150))
    assert set(stack.predict(X)) <= set(labels)
    assert stack.predict_proba(X).shape == (150, 3)


def test_stacking_with_silva_gradient_boosting_as_final_estimator():
    # silva's gradient boosting is another issue's work; any estimator is accepted as the
    # final estimator, and this checks the combination once that module exists.
    boosting = pytest.importorskip("silva.boosting")
    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    final = boosting.GradientBoostingClassifier(n_estimators=20, random_state=0)
    stack = StackingClassifier(
        [("tree", DecisionTreeClassifier(max_depth=3, random_state=0)),
         ("knn", KNeighborsClassifier())], final, passthrough=True, cv=3)
    assert stack.fit(X_train, y_train).score(X_test, y_test) > 0.9
    assert stack.predict_proba(X_test).shape == (len(y_test), 2)


def test_voting_options_of_sklearn_match_sklearn(capsys):
    """n_jobs, verbose, flatten_transform and get_feature_names_out as scikit-learn has
    them: same transform and column names, one progress line per model."""
    X, y = load_iris(return_X_y=True)
    models = [("tree", DecisionTreeClassifier(max_depth=2, random_state=0)),
              ("nb", GaussianNB()), ("gone", "drop")]
    # Progress is printed by the process that fits: n_jobs=None keeps it in this one.
    VotingClassifier(models, verbose=True).fit(X, y)
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(", total=")[0] for line in printed] == [
        "[Voting] (1 of 2) Processing tree", "[Voting] (2 of 2) Processing nb"]
    ours = VotingClassifier(models, voting="soft", n_jobs=2, flatten_transform=False).fit(X, y)
    theirs = SklearnVotingClassifier(models, voting="soft", flatten_transform=False).fit(X, y)
    assert ours.transform(X).shape == (2, len(X), 3)
    np.testing.assert_allclose(ours.transform(X), theirs.transform(X))
    with pytest.raises(ValueError, match="flatten_transform=False"):
        ours.get_feature_names_out()
    for voting in ("soft", "hard"):
        ours.set_params(voting=voting, flatten_transform=True)
        theirs.set_params(voting=voting, flatten_transform=True)
        assert ours.get_feature_names_out().tolist() == \
            theirs.get_feature_names_out().tolist()
    Xr, yr = load_diabetes(return_X_y=True)
    regressors = [("tree", DecisionTreeRegressor(max_depth=2)), ("ridge", Ridge())]
    ours_r = VotingRegressor(regressors, n_jobs=2).fit(Xr, yr)
    theirs_r = SklearnVotingRegressor(regressors).fit(Xr, yr)
    assert ours_r.get_feature_names_out().tolist() == ["votingregressor_tree",
                                                       "votingregressor_ridge"]
    assert ours_r.get_feature_names_out().tolist() == \
        theirs_r.get_feature_names_out().tolist()


@pytest.mark.parametrize("passthrough", [False, True])
def test_stacking_feature_names_match_sklearn(passthrough):
    X, y = load_iris(return_X_y=True)
    models = [("tree", DecisionTreeClassifier(max_depth=2, random_state=0)),
              ("svc", LinearSVC()), ("gone", "drop")]
    names = [f"f{i}" for i in range(X.shape[1])]
    ours = StackingClassifier(models, passthrough=passthrough).fit(X, y)
    theirs = SklearnStackingClassifier(models, passthrough=passthrough).fit(X, y)
    assert ours.get_feature_names_out(names).tolist() == \
        theirs.get_feature_names_out(names).tolist()
    assert len(ours.get_feature_names_out()) == ours.transform(X).shape[1]
    Xb, yb = load_breast_cancer(return_X_y=True)
    binary = StackingClassifier(models[:1], passthrough=passthrough).fit(Xb, yb)
    assert binary.get_feature_names_out().tolist()[0] == "stackingclassifier_tree"


def test_stacking_regressor_passes_predict_params_to_final_model():
    from sklearn.linear_model import BayesianRidge

    X, y = load_diabetes(return_X_y=True)
    stack = StackingRegressor([("tree", DecisionTreeRegressor(max_depth=3)),
                               ("ridge", Ridge())], final_estimator=BayesianRidge()).fit(X, y)
    mean, std = stack.predict(X[:20], return_std=True)
    expected_mean, expected_std = stack.final_estimator_.predict(stack.transform(X[:20]),
                                                                 return_std=True)
    np.testing.assert_allclose(mean, expected_mean)
    np.testing.assert_allclose(std, expected_std)
    np.testing.assert_allclose(mean, stack.predict(X[:20]))


def test_stacking_prefit_keeps_fitted_models_and_matches_sklearn():
    from sklearn.exceptions import NotFittedError

    X, y = load_iris(return_X_y=True)
    labels = np.array(["a", "b", "c"])[y]
    X1, X2, y1, y2 = train_test_split(X, labels, test_size=0.5, random_state=0)
    models = [("tree", DecisionTreeClassifier(max_depth=2, random_state=0).fit(X1, y1)),
              ("nb", GaussianNB().fit(X1, y1))]
    ours = StackingClassifier(models, cv="prefit").fit(X2, y2)
    theirs = SklearnStackingClassifier(models, cv="prefit").fit(X2, y2)
    assert all(a is b for a, (_, b) in zip(ours.estimators_, models, strict=True))
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-6)
    # Stacked predictions of prefit models (labels) become class codes like the others'.
    by_vote = StackingClassifier(models, cv="prefit", stack_method="predict").fit(X2, y2)
    codes = np.column_stack([np.searchsorted(ours.classes_, m.predict(X)) for _, m in models])
    np.testing.assert_array_equal(by_vote.transform(X), codes)
    with pytest.raises(NotFittedError, match="'tree' is not fitted"):
        StackingClassifier([("tree", DecisionTreeClassifier())], cv="prefit").fit(X2, y2)


def test_sample_weight_for_a_model_without_it_is_a_type_error():
    """sample_weight given and a model whose fit has no such parameter: a TypeError in
    scikit-learn's words, naming the model, before anything is fitted."""
    X, y = load_iris(return_X_y=True)
    weight = np.ones(len(y))
    models = [("tree", DecisionTreeClassifier(max_depth=2)), ("knn", KNeighborsClassifier())]
    for ensemble in (VotingClassifier(models), StackingClassifier(models)):
        with pytest.raises(TypeError, match="KNeighborsClassifier does not support sample "
                                            "weights.*'knn'.fit takes no sample_weight"):
            ensemble.fit(X, y, sample_weight=weight)
        ensemble.fit(X, y)  # without weights the same models are fine
    with pytest.raises(TypeError, match="'final_estimator'.fit takes no sample_weight"):
        StackingClassifier(models[:1], final_estimator=KNeighborsClassifier()).fit(
            X, y, sample_weight=weight)
    with pytest.raises(ValueError, match="All estimators are dropped"):
        VotingClassifier([("a", "drop")]).fit(X, y)
    with pytest.raises(ValueError, match="'svc' does not implement the method predict_proba"):
        StackingClassifier([("svc", LinearSVC())], stack_method="predict_proba").fit(X, y)


def test_metadata_routing_sends_sample_weight_where_requested():
    """With scikit-learn's metadata routing on, sample_weight reaches only the models
    that request it (set_fit_request) and predict parameters reach the final model
    that requests them; with routing off, parameters other than sample_weight are
    refused in scikit-learn's words."""
    from sklearn import config_context
    from sklearn.linear_model import BayesianRidge

    X, y = make_classification(120, 5, random_state=0)
    weight = np.random.RandomState(0).uniform(0.1, 3.0, size=len(y))
    with pytest.raises(ValueError, match="only supported if enable_metadata_routing=True"):
        VotingClassifier([("a", DecisionTreeClassifier())]).fit(X, y, metadata="m")
    with pytest.raises(ValueError, match="only supported if enable_metadata_routing=True"):
        StackingClassifier([("a", DecisionTreeClassifier())]).fit(X, y, metadata="m")
    weighted = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y, weight)
    unweighted = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    assert not np.allclose(weighted.predict_proba(X), unweighted.predict_proba(X))
    with config_context(enable_metadata_routing=True):
        models = [
            ("asks", DecisionTreeClassifier(max_depth=3, random_state=0)
             .set_fit_request(sample_weight=True)),
            ("declines", DecisionTreeClassifier(max_depth=3, random_state=0)
             .set_fit_request(sample_weight=False)),
        ]
        vote = VotingClassifier(models).fit(X, y, sample_weight=weight)
        stack = StackingClassifier(
            models, final_estimator=LogisticRegression().set_fit_request(sample_weight=True)
        ).fit(X, y, sample_weight=weight)
        Xr, yr = load_diabetes(return_X_y=True)
        regression = StackingRegressor(
            [("tree", DecisionTreeRegressor(max_depth=2).set_fit_request(sample_weight=False))],
            final_estimator=BayesianRidge().set_predict_request(return_std=True)).fit(Xr, yr)
        mean, std = regression.predict(Xr[:5], return_std=True)
    for ensemble in (vote, stack):
        asks, declines = ensemble.estimators_
        np.testing.assert_allclose(asks.predict_proba(X), weighted.predict_proba(X))
        np.testing.assert_allclose(declines.predict_proba(X), unweighted.predict_proba(X))
    assert std.shape == mean.shape == (5,) and np.all(std > 0)


def test_missing_methods_say_why_in_the_cause():
    """A method a configuration lacks raises AttributeError whose cause says why, as
    scikit-learn's voting and stacking do."""
    X, y = load_iris(return_X_y=True)
    hard = VotingClassifier([("tree", DecisionTreeClassifier())]).fit(X, y)
    with pytest.raises(AttributeError, match="has no attribute 'predict_proba'") as error:
        hard.predict_proba(X)
    assert "predict_proba is not available when voting='hard'" in str(error.value.__cause__)
    assert not hasattr(hard, "predict_proba")
    stack = StackingClassifier([("tree", DecisionTreeClassifier())],
                               final_estimator=DecisionTreeClassifier()).fit(X, y)
    with pytest.raises(AttributeError, match="has no attribute 'decision_function'") as error:
        stack.decision_function(X)
    assert "decision_function" in str(error.value.__cause__)


# ------------------------------------------- scikit-learn's voting and stacking tests
def test_models_need_only_fit_and_hard_transform_gives_class_indices():

    class FitOnly(ClassifierMixin, BaseEstimator):
        def fit(self, X, y, **params):
            self.params_ = params
            return self

    X, y = load_iris(return_X_y=True)
    only_fit = VotingClassifier([("model", FitOnly())]).fit(X, y, sample_weight=np.ones(150))
    assert "sample_weight" in only_fit.estimators_[0].params_
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    models = [("tree", DecisionTreeClassifier(max_depth=2, random_state=0)),
              ("logistic", LogisticRegression(max_iter=500))]
    ours = VotingClassifier(models, voting="hard").fit(X, labels)
    theirs = SklearnVotingClassifier(models, voting="hard").fit(X, labels)
    np.testing.assert_array_equal(ours.transform(X), theirs.transform(X))
    assert set(np.unique(ours.transform(X))) <= {0, 1, 2}
    # A soft vote asks for predict_proba when it predicts, not when it fits.
    soft = VotingClassifier([("model", FitOnly())], voting="soft").fit(X, y)
    with pytest.raises(ValueError, match="needs predict_proba, which estimator 'model'"):
        soft.predict_proba(X)


def test_stacking_n_features_in_before_and_after_fit():
    X, y = load_iris(return_X_y=True)
    stack = StackingClassifier([("tree", DecisionTreeClassifier())])
    with pytest.raises(AttributeError,
                       match="StackingClassifier object has no attribute n_features_in_"):
        _ = stack.n_features_in_
    assert not hasattr(stack, "n_features_in_")
    stack.fit(X, y)
    assert stack.n_features_in_ == 4 and stack.__dict__["n_features_in_"] == 4
    assert pickle.loads(pickle.dumps(stack)).n_features_in_ == 4

    class WithoutFeatureCount(LogisticRegression):
        def fit(self, X, y):
            super().fit(X, y)
            del self.n_features_in_
            return self

    # Fitted, it is the first model's, as in scikit-learn's stacking.
    stack = StackingClassifier([("logistic", WithoutFeatureCount(max_iter=500))]).fit(X, y)
    with pytest.raises(AttributeError, match="'WithoutFeatureCount' object has no attribute"):
        _ = stack.n_features_in_
    assert stack.predict(X).shape == (150,)


def test_stacking_classifier_on_a_multilabel_y_matches_sklearn():
    # scikit-learn's stacking, given the same members and folds, is the reference: per
    # label, a multi-output model's positive-class probability (its list of arrays);
    # a decision function already one column per label, stacked as it is.
    from sklearn.datasets import make_multilabel_classification
    from sklearn.linear_model import RidgeClassifier

    X, Y = make_multilabel_classification(n_samples=120, n_classes=3, random_state=0)
    members = [("tree", DecisionTreeClassifier(max_depth=3, random_state=0)),
               ("ridge", RidgeClassifier())]
    final = KNeighborsClassifier()
    folds = KFold(4)
    mine = StackingClassifier(members, final, cv=folds).fit(X, Y)
    theirs = SklearnStackingClassifier(members, final, cv=folds).fit(X, Y)
    assert mine.stack_method_ == ["predict_proba", "decision_function"]
    assert mine.transform(X).shape == (120, 6)
    np.testing.assert_array_equal(mine.transform(X), theirs.transform(X))
    np.testing.assert_array_equal(mine.predict(X), theirs.predict(X))
    assert mine.predict(X).shape == Y.shape
    for classes in mine.classes_:
        np.testing.assert_array_equal(classes, [0, 1])
    # "predict" stacks each member's 0/1 labels, one column per label.
    by_predict = StackingClassifier(members, final, cv=folds, stack_method="predict")
    np.testing.assert_array_equal(
        by_predict.fit(X, Y).transform(X),
        SklearnStackingClassifier(members, final, cv=folds, stack_method="predict")
        .fit(X, Y).transform(X))
