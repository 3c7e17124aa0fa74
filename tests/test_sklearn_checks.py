"""scikit-learn's estimator checks (API compliance) on the two CART trees.

Every other estimator runs them in its own test module: test_cart_complete (the other
criteria), test_classic (ID3, C4.5), test_forest, test_bagging, test_boosting and
test_voting_stacking (AdaBoost, voting, stacking).
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from silva import DecisionTreeClassifier, DecisionTreeRegressor


@parametrize_with_checks([DecisionTreeClassifier(), DecisionTreeRegressor()])
def test_sklearn_compatible(estimator, check):
    check(estimator)
