"""scikit-learn's estimator checks (API compliance) on silva's two trees."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from silva import DecisionTreeClassifier, DecisionTreeRegressor


@parametrize_with_checks([DecisionTreeClassifier(), DecisionTreeRegressor()])
def test_sklearn_compatible(estimator, check):
    check(estimator)
