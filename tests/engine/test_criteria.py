"""Impurity criteria against values worked out by hand.

The classification tables are Quinlan's 14-day "play tennis" data (9 yes, 5 no); every
number in the comments below was computed with pencil and paper from its counts.
"""

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_iris

from silva import DecisionTreeClassifier, DecisionTreeRegressor
from silva.engine import criteria

# outlook, temperature, humidity, wind, play
TENNIS = [
    ("sunny", "hot", "high", "weak", "no"),
    ("sunny", "hot", "high", "strong", "no"),
    ("overcast", "hot", "high", "weak", "yes"),
    ("rain", "mild", "high", "weak", "yes"),
    ("rain", "cool", "normal", "weak", "yes"),
    ("rain", "cool", "normal", "strong", "no"),
    ("overcast", "cool", "normal", "strong", "yes"),
    ("sunny", "mild", "high", "weak", "no"),
    ("sunny", "cool", "normal", "weak", "yes"),
    ("rain", "mild", "normal", "weak", "yes"),
    ("sunny", "mild", "normal", "strong", "yes"),
    ("overcast", "mild", "high", "strong", "yes"),
    ("overcast", "hot", "normal", "weak", "yes"),
    ("rain", "mild", "high", "strong", "no"),
]
CODES = [
    {"sunny": 0, "overcast": 1, "rain": 2},
    {"hot": 0, "mild": 1, "cool": 2},
    {"high": 0, "normal": 1},
    {"weak": 0, "strong": 1},
]


def tennis():
    X = np.array([[CODES[j][row[j]] for j in range(4)] for row in TENNIS], dtype=float)
    y = np.array([row[4] == "yes" for row in TENNIS], dtype=int)  # no = 0, yes = 1
    return X, y


# Root of the tennis table: p(yes) = 9/14, p(no) = 5/14.
#   gini        = 1 - (9/14)^2 - (5/14)^2 = 1 - (81 + 25)/196 = 90/196   = 0.459183673...
#   entropy     = -(9/14) log2(9/14) - (5/14) log2(5/14)               = 0.940285958...
#   misclass.   = 1 - 9/14 = 5/14                                      = 0.357142857...
TENNIS_ROOT = {
    "gini": 90 / 196,
    "entropy": 0.9402859586706311,
    "log_loss": 0.9402859586706311,
    "misclassification": 5 / 14,
    # split scores, not impurities: a twoing tree reports gini, a gain-ratio tree entropy
    "twoing": 90 / 196,
    "gain_ratio": 0.9402859586706311,
}


@pytest.mark.parametrize("criterion", sorted(TENNIS_ROOT))
def test_tennis_root_impurity(criterion):
    X, y = tennis()
    model = DecisionTreeClassifier(criterion=criterion).fit(X, y)
    assert model.tree_.impurity[0] == pytest.approx(TENNIS_ROOT[criterion], rel=1e-12)
    assert model.tree_.weighted_n_node_samples[0] == 14
    np.testing.assert_allclose(model.tree_.value[0, 0], [5 / 14, 9 / 14])

    code = criteria.CLASSIFICATION_CRITERIA[criterion]
    stats = criteria.build_statistics(code, y, np.ones(14), 2)
    # channel 0 counts samples; then one channel per class with its weighted count
    np.testing.assert_array_equal(stats.sum(axis=0), [14, 5, 9])
    assert criteria.impurity(code, stats.sum(axis=0)) == pytest.approx(
        TENNIS_ROOT[criterion], rel=1e-12)


def test_tennis_impurity_with_sample_weights():
    # Doubling the weight of the five "no" days: 10 no, 9 yes, total weight 19.
    #   gini = 1 - (10/19)^2 - (9/19)^2 = 1 - 181/361 = 180/361 = 0.498614958...
    X, y = tennis()
    weights = np.where(y == 0, 2.0, 1.0)
    model = DecisionTreeClassifier().fit(X, y, sample_weight=weights)
    assert model.tree_.impurity[0] == pytest.approx(180 / 361, rel=1e-12)
    assert model.tree_.weighted_n_node_samples[0] == 19
    assert model.tree_.n_node_samples[0] == 14
    stats = criteria.build_statistics(criteria.GINI, y, weights, 2)
    np.testing.assert_array_equal(stats.sum(axis=0), [14, 10, 9])
    assert criteria.impurity(criteria.GINI, stats.sum(axis=0)) == pytest.approx(180 / 361)


def test_tennis_best_first_split_numeric_codes():
    # With the attributes as ordinal codes only threshold splits exist. Gini decrease
    # (parent 90/196 = 0.459184, children weighted by n/14):
    #   humidity  high (3 yes, 4 no): 1 - (9 + 16)/49 = 24/49;  normal (6, 1): 12/49
    #             -> 0.459184 - (7/14)(24/49) - (7/14)(12/49) = 0.459184 - 0.367347 = 0.091837
    #   outlook   {sunny} (2, 3): 0.48 | {overcast, rain} (7, 2): 0.345679
    #             -> 0.459184 - 0.393651 = 0.065533 ({sunny, overcast} | {rain}: 0.002041)
    #   wind      weak (6, 2): 0.375 | strong (3, 3): 0.5 -> 0.459184 - 0.428571 = 0.030612
    #   temp.     best {hot} | {mild, cool}: 0.459184 - 0.442857 = 0.016327
    # so the root splits humidity (feature 2) at 0.5, midway between codes 0 and 1.
    X, y = tennis()
    tree = DecisionTreeClassifier(max_depth=1).fit(X, y).tree_
    assert tree.feature[0] == 2
    assert tree.threshold[0] == 0.5
    left, right = tree.children_left[0], tree.children_right[0]
    assert tree.impurity[left] == pytest.approx(24 / 49)
    assert tree.impurity[right] == pytest.approx(12 / 49)
    np.testing.assert_array_equal(tree.n_node_samples[[left, right]], [7, 7])
    decrease = (14 * tree.impurity[0] - 7 * tree.impurity[left] - 7 * tree.impurity[right]) / 14
    assert decrease == pytest.approx(0.459184 - 0.367347, abs=1e-6)


def test_tennis_best_first_split_categorical():
    # As categories, outlook can also split {overcast} (4 yes) | {sunny, rain} (5, 5):
    #   gini 0 and 0.5 -> 0.459184 - (10/14)(0.5) = 0.459184 - 0.357143 = 0.102041,
    # which beats humidity's 0.091837 (and temperature's best partition, 0.016327).
    X, y = tennis()
    model = DecisionTreeClassifier(max_depth=1, categorical_features=[0, 1, 2, 3]).fit(X, y)
    tree = model.tree_
    assert tree.feature[0] == 0
    assert tree.is_categorical[0]
    left_seen = set(tree.categories_left(0).tolist()) & {0, 1, 2}
    assert left_seen in ({1}, {0, 2})
    overcast_child = tree.children_left[0] if left_seen == {1} else tree.children_right[0]
    other_child = tree.children_right[0] if left_seen == {1} else tree.children_left[0]
    assert tree.impurity[overcast_child] == 0.0
    assert tree.impurity[other_child] == pytest.approx(0.5)
    assert tree.n_node_samples[overcast_child] == 4


def test_tennis_entropy_prefers_outlook_too():
    # Information gain (bits): outlook {overcast} | rest: 0.940286 - (10/14)(1) = 0.226001;
    # humidity: 0.940286 - (7/14)(0.985228) - (7/14)(0.591673) = 0.151836.
    X, y = tennis()
    model = DecisionTreeClassifier(criterion="entropy", max_depth=1,
                                   categorical_features=[0, 1, 2, 3]).fit(X, y)
    tree = model.tree_
    assert tree.feature[0] == 0
    children = [tree.children_left[0], tree.children_right[0]]
    weighted = tree.n_node_samples[children] @ tree.impurity[children] / 14
    assert tree.impurity[0] - weighted == pytest.approx(0.226001, abs=1e-6)


def test_misclassification_end_to_end():
    X, y = tennis()
    model = DecisionTreeClassifier(criterion="misclassification").fit(X, y)
    tree = model.tree_
    # Every node's impurity is one minus its largest class fraction.
    np.testing.assert_allclose(tree.impurity, 1 - tree.value[:, 0].max(axis=1), atol=1e-12)
    assert model.score(X, y) == 1.0  # the 14 rows are all distinct
    X_iris, y_iris = load_iris(return_X_y=True)
    iris = DecisionTreeClassifier(criterion="misclassification", max_depth=3).fit(X_iris, y_iris)
    assert iris.tree_.impurity[0] == pytest.approx(2 / 3)
    assert iris.score(X_iris, y_iris) > 0.9
    assert iris.predict_proba(X_iris).shape == (150, 3)


# Regression table: y = (1, 2, 3, 6), mean 3.
#   variance = ((1-3)^2 + (2-3)^2 + 0 + (6-3)^2) / 4 = (4 + 1 + 0 + 9)/4 = 3.5
#   Poisson half deviance = (1/n) sum y ln(y/mean) - y + mean; the last two terms cancel:
#       (1 ln(1/3) + 2 ln(2/3) + 3 ln 1 + 6 ln 2) / 4
#     = (-1.098612 - 0.810930 + 0 + 4.158883) / 4 = 2.249341 / 4 = 0.562335
# With weights (1, 1, 2, 1): total 5, weighted sum 15, still mean 3;
#   variance = (4 + 1 + 0 + 9)/5 = 2.8;  half deviance = 2.249341 / 5 = 0.449868
# With y = (0, 0, 3, 5), mean 2 (0 ln 0 = 0):
#   half deviance = (3 ln 1.5 + 5 ln 2.5) / 4 = (1.216395 + 4.581454)/4 = 1.449462
REGRESSION_TABLES = [
    ("squared_error", [1, 2, 3, 6], None, 3.5),
    ("friedman_mse", [1, 2, 3, 6], None, 3.5),
    ("poisson", [1, 2, 3, 6], None, 0.5623351446188082),
    ("squared_error", [1, 2, 3, 6], [1, 1, 2, 1], 2.8),
    ("poisson", [1, 2, 3, 6], [1, 1, 2, 1], 0.4498681156950465),
    ("poisson", [0, 0, 3, 5], None, 1.4494622),
]


@pytest.mark.parametrize(("criterion", "y", "weights", "expected"), REGRESSION_TABLES)
def test_regression_root_impurity(criterion, y, weights, expected):
    y = np.array(y, dtype=float)
    w = np.ones(4) if weights is None else np.array(weights, dtype=float)
    X = np.arange(4.0).reshape(-1, 1)
    model = DecisionTreeRegressor(criterion=criterion, max_depth=1).fit(X, y, sample_weight=w)
    assert model.tree_.impurity[0] == pytest.approx(expected, rel=1e-6)
    assert model.tree_.value[0, 0, 0] == pytest.approx(np.average(y, weights=w))
    code = criteria.REGRESSION_CRITERIA[criterion]
    sums = criteria.build_statistics(code, y, w, 1).sum(axis=0)
    assert sums[0] == 4 and sums[1] == pytest.approx(w.sum())
    assert sums[2] == pytest.approx(w @ y)
    assert criteria.impurity(code, sums) == pytest.approx(expected, rel=1e-6)


def test_regression_best_split_hand_worked():
    # x = 1..6, y = (1, 1, 1, 5, 5, 6). Cutting at 3.5 leaves {1, 1, 1} (variance 0) and
    # {5, 5, 6} (mean 16/3, variance ((1/3)^2 * 2 + (2/3)^2) / 3 = 2/9); any other cut
    # puts a 1 with a 5 or splits the equal 5s, e.g. 4.5: {1,1,1,5} variance 3 (weighted
    # 4/6 * 3 = 2) against 3.5's 3/6 * 2/9 = 1/9. Root: mean 19/6, variance
    # 89/6 - (19/6)^2 = 173/36, so the decrease is 173/36 - 1/9 = 169/36.
    X = np.arange(1.0, 7.0).reshape(-1, 1)
    y = np.array([1, 1, 1, 5, 5, 6], dtype=float)
    tree = DecisionTreeRegressor(max_depth=1).fit(X, y).tree_
    assert tree.threshold[0] == 3.5
    assert tree.impurity[0] == pytest.approx(173 / 36)
    left, right = tree.children_left[0], tree.children_right[0]
    assert tree.impurity[left] == pytest.approx(0.0, abs=1e-12)
    assert tree.impurity[right] == pytest.approx(2 / 9)
    assert tree.value[left, 0, 0] == pytest.approx(1.0)
    assert tree.value[right, 0, 0] == pytest.approx(16 / 3)


def test_regression_prefers_the_informative_feature():
    # Feature 1 is feature 0 shuffled: only feature 0 separates the low y from the high.
    X = np.array([[1, 4], [2, 1], [3, 6], [4, 2], [5, 5], [6, 3]], dtype=float)
    y = np.array([0, 0, 0, 10, 10, 10], dtype=float)
    model = DecisionTreeRegressor().fit(X, y)
    assert model.tree_.feature[0] == 0
    assert model.tree_.threshold[0] == 3.5
    assert model.get_n_leaves() == 2
    np.testing.assert_allclose(model.feature_importances_, [1.0, 0.0])


def _node_rows(model, X):
    return model.decision_path(X).toarray().astype(bool).T  # (node, row)


@pytest.mark.parametrize("criterion", ["gini", "entropy", "misclassification"])
def test_every_node_impurity_matches_its_samples_classification(criterion):
    X, y = load_iris(return_X_y=True)
    weights = np.random.RandomState(0).randint(1, 4, size=y.shape[0]).astype(float)
    model = DecisionTreeClassifier(criterion=criterion, max_depth=4).fit(
        X, y, sample_weight=weights)
    for node, rows in enumerate(_node_rows(model, X)):
        p = np.bincount(y[rows], weights=weights[rows], minlength=3) / weights[rows].sum()
        np.testing.assert_allclose(model.tree_.value[node, 0], p, atol=1e-12)
        if criterion == "gini":
            expected = 1 - np.sum(p**2)
        elif criterion == "entropy":
            expected = -np.sum(p[p > 0] * np.log2(p[p > 0]))
        else:
            expected = 1 - p.max()
        assert model.tree_.impurity[node] == pytest.approx(expected, abs=1e-12)
        assert model.tree_.n_node_samples[node] == rows.sum()
        assert model.tree_.weighted_n_node_samples[node] == pytest.approx(weights[rows].sum())


@pytest.mark.parametrize("criterion", ["squared_error", "friedman_mse", "poisson"])
def test_every_node_impurity_matches_its_samples_regression(criterion):
    X, y = load_diabetes(return_X_y=True)
    model = DecisionTreeRegressor(criterion=criterion, max_depth=4).fit(X, y)
    for node, rows in enumerate(_node_rows(model, X)):
        values = y[rows]
        mean = values.mean()
        if criterion == "poisson":
            expected = np.mean(values * np.log(values / mean) - values + mean)
        else:
            expected = values.var()
        assert model.tree_.value[node, 0, 0] == pytest.approx(mean, rel=1e-10)
        assert model.tree_.impurity[node] == pytest.approx(expected, rel=1e-8)


def test_friedman_mse_grows_a_sensible_tree():
    X, y = load_diabetes(return_X_y=True)
    friedman = DecisionTreeRegressor(criterion="friedman_mse", max_depth=3).fit(X, y)
    squared = DecisionTreeRegressor(criterion="squared_error", max_depth=3).fit(X, y)
    # The same impurity, and on this data the same first split.
    assert friedman.tree_.impurity[0] == pytest.approx(squared.tree_.impurity[0])
    assert friedman.tree_.feature[0] == squared.tree_.feature[0]
    assert friedman.score(X, y) > 0.45


# Absolute error: impurity = weighted mean absolute deviation from the weighted median.
#   y = (1, 2, 3, 7, 10): median 3, deviations 2, 1, 0, 4, 7 -> 14/5 = 2.8
#   y = (1, 2, 3, 10) with weights (1, 1, 3, 1): total 6, cumulative 1, 2, 5, 6; half (3)
#       is reached inside the weight of y = 3, so the median is 3;
#       deviations weighted: 1*2 + 1*1 + 3*0 + 1*7 = 10 -> 10/6 = 1.666667
ABSOLUTE_TABLES = [
    ([1, 2, 3, 7, 10], None, 3.0, 2.8),
    ([1, 2, 3, 10], [1, 1, 3, 1], 3.0, 10 / 6),
]


@pytest.mark.parametrize(("y", "weights", "median", "expected"), ABSOLUTE_TABLES)
def test_absolute_error_root(y, weights, median, expected):
    y = np.array(y, dtype=float)
    X = np.zeros((y.shape[0], 1))  # constant feature: the root stays a leaf
    model = DecisionTreeRegressor(criterion="absolute_error").fit(X, y, sample_weight=weights)
    assert model.tree_.node_count == 1
    assert model.tree_.value[0, 0, 0] == pytest.approx(median)
    assert model.tree_.impurity[0] == pytest.approx(expected)
    np.testing.assert_allclose(model.predict([[0.0], [5.0]]), median)


def test_absolute_error_split_hand_worked():
    # x = 1..6, y = (1, 2, 6, 50, 51, 58). The cut 3.5 leaves {1, 2, 6} (median 2,
    # deviations 1 + 0 + 4 = 5) and {50, 51, 58} (median 51, deviations 1 + 0 + 7 = 8):
    # 13 in all, against 54 for the cut 2.5 and 60 for 4.5. The leaves predict the
    # medians 2 and 51 (not the means 3 and 53) with impurities 5/3 and 8/3.
    X = np.arange(1.0, 7.0).reshape(-1, 1)
    y = np.array([1, 2, 6, 50, 51, 58], dtype=float)
    tree = DecisionTreeRegressor(criterion="absolute_error", max_depth=1).fit(X, y).tree_
    assert tree.threshold[0] == 3.5
    left, right = tree.children_left[0], tree.children_right[0]
    assert tree.value[left, 0, 0] == pytest.approx(2.0)
    assert tree.value[right, 0, 0] == pytest.approx(51.0)
    assert tree.impurity[left] == pytest.approx(5 / 3)
    assert tree.impurity[right] == pytest.approx(8 / 3)


# Each proxy, and the criterion whose improvement it ranks.
PROXIES = [("gini", "gini_proxy", 3), ("entropy", "entropy_proxy", 3),
           ("misclassification", "misclassification_proxy", 3),
           ("squared_error", "variance_proxy", 1), ("poisson", "poisson_proxy", 1)]


@pytest.mark.parametrize(("criterion", "proxy_name", "n_classes"), PROXIES)
def test_proxy_is_an_increasing_affine_function_of_the_improvement(criterion, proxy_name,
                                                                   n_classes):
    # For a fixed parent, w_L i_L + w_R i_R is affine in the proxy (scikit-learn's proxy
    # impurity improvement), so ranking candidates by the proxy ranks them by the
    # improvement the tree reports.
    rng = np.random.default_rng(0)
    n_samples = 60
    code = {**criteria.CLASSIFICATION_CRITERIA, **criteria.REGRESSION_CRITERIA}[criterion]
    y = (rng.integers(0, n_classes, n_samples) if n_classes > 1
         else rng.poisson(3.0, n_samples).astype(float) + 0.5)
    stats = criteria.build_statistics(code, y, rng.integers(1, 4, n_samples) * 1.0,
                                      n_classes)
    parent = stats.sum(axis=0)
    parent_impurity = criteria.impurity(code, parent)
    proxy = getattr(criteria, proxy_name)
    proxies, improvements = [], []
    for _ in range(40):
        left = stats[rng.random(n_samples) < rng.uniform(0.2, 0.8)].sum(axis=0)
        right = parent - left
        proxies.append(proxy(left, parent, 0.0))
        improvements.append(criteria.improvement(code, parent, left, right,
                                                 parent_impurity, parent[0])[0])
    proxies, improvements = np.array(proxies), np.array(improvements)
    slope, intercept = np.polyfit(improvements, proxies, 1)
    assert slope > 0
    np.testing.assert_allclose(slope * improvements + intercept, proxies, rtol=1e-9,
                               atol=1e-9 * np.abs(proxies).max())


@pytest.mark.parametrize("code", sorted(criteria.IMPURITY_OF_CRITERION))
def test_each_criterion_impurity_kernel_equals_the_dispatcher(code):
    # The compiled grower binds each criterion's kernel (IMPURITY_OF_CRITERION) where the
    # level-wise grower calls impurity(criterion, ...): both must give the same bits.
    rng = np.random.default_rng(code)
    y = rng.integers(0, 3, 40) if criteria.is_classification(code) else rng.gamma(2.0, 3.0, 40)
    y[:5] = 0  # zero targets: Poisson's y log y channel
    weights = rng.uniform(0.1, 3.0, 40)
    stats = criteria.build_statistics(code, y, weights, 3)
    kernel = criteria.IMPURITY_OF_CRITERION[code]
    for sums in (stats.sum(axis=0), stats[:7].sum(axis=0), stats[:1].sum(axis=0),
                 np.zeros(stats.shape[1])):
        assert kernel(code, sums) == criteria.impurity(code, sums)
        assert np.isfinite(kernel(code, sums))
