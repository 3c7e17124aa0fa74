"""ID3 and C4.5 (silva.classic): textbook trees, C4.5's unknown values, pruning, edge cases.

The golf data and the worked numbers for unknown values are Quinlan's (1993, ch. 1-3);
the categorical play-tennis tree is Quinlan's (1986) / Mitchell's (1997, fig. 3.1).
"""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier as SkTree
from sklearn.utils.estimator_checks import parametrize_with_checks

from silva.classic import C45Classifier, ID3Classifier
from silva.criteria import gain_ratio, information_gain, tree_generalization_bound
from silva.engine.multiway import binomial_upper_limit
from silva.export import export_text

OUTLOOK = ("sunny sunny overcast rain rain rain overcast sunny sunny rain sunny overcast "
           "overcast rain").split()
TEMPERATURE = "hot hot hot mild cool cool cool mild cool mild mild mild hot mild".split()
HUMIDITY = ("high high high high normal normal normal high normal normal normal high normal "
            "high").split()
WIND = ("weak strong weak weak weak strong strong weak weak weak strong strong weak "
        "strong").split()
PLAY = "no no yes yes yes no yes no yes yes yes yes yes no".split()
TENNIS = pd.DataFrame({"outlook": OUTLOOK, "temperature": TEMPERATURE,
                       "humidity": HUMIDITY, "wind": WIND})

# Quinlan (1993, ch. 1): outlook, temperature, humidity, windy -> class.
GOLF_ROWS = [
    ("sunny", 75, 70, True, "Play"), ("sunny", 80, 90, True, "Don't Play"),
    ("sunny", 85, 85, False, "Don't Play"), ("sunny", 72, 95, False, "Don't Play"),
    ("sunny", 69, 70, False, "Play"), ("overcast", 72, 90, True, "Play"),
    ("overcast", 83, 78, False, "Play"), ("overcast", 64, 65, True, "Play"),
    ("overcast", 81, 75, False, "Play"), ("rain", 71, 80, True, "Don't Play"),
    ("rain", 65, 70, True, "Don't Play"), ("rain", 75, 80, False, "Play"),
    ("rain", 68, 80, False, "Play"), ("rain", 70, 96, False, "Play"),
]


def golf(unknown_outlook=False):
    X = pd.DataFrame([row[:4] for row in GOLF_ROWS],
                     columns=["outlook", "temperature", "humidity", "windy"])
    X["windy"] = X["windy"].map({True: "true", False: "false"})
    X[["temperature", "humidity"]] = X[["temperature", "humidity"]].astype(float)
    if unknown_outlook:  # Quinlan (1993, sec. 3.1): case 6's outlook becomes unknown
        X.loc[5, "outlook"] = None
    return X, np.array([row[4] for row in GOLF_ROWS])


# --------------------------------------------------------------------------------------
# ID3
# --------------------------------------------------------------------------------------


def test_id3_grows_the_textbook_play_tennis_tree():
    model = ID3Classifier().fit(TENNIS, PLAY)
    assert list(model.feature_names_in_) == ["outlook", "temperature", "humidity", "wind"]
    assert export_text(model) == (
        "|--- outlook = overcast\n"
        "|   |--- class: yes\n"
        "|--- outlook = rain\n"
        "|   |--- wind = strong\n"
        "|   |   |--- class: no\n"
        "|   |--- wind = weak\n"
        "|   |   |--- class: yes\n"
        "|--- outlook = sunny\n"
        "|   |--- humidity = high\n"
        "|   |   |--- class: no\n"
        "|   |--- humidity = normal\n"
        "|   |   |--- class: yes\n"
    )
    assert model.get_depth() == 2 and model.get_n_leaves() == 5
    assert model.score(TENNIS, PLAY) == 1.0
    assert model.rules()[0] == "if outlook = overcast then class = yes (4.0/0.0)"


def test_id3_split_report_gives_the_textbook_gains():
    model = ID3Classifier().fit(TENNIS, PLAY)
    report = model.split_report(TENNIS, PLAY).set_index("feature")
    for name, column in [("outlook", OUTLOOK), ("temperature", TEMPERATURE),
                         ("humidity", HUMIDITY), ("wind", WIND)]:
        assert report.loc[name, "gain"] == pytest.approx(information_gain(PLAY, column))
    assert report["chosen"].tolist() == [True, False, False, False]
    # At the sunny node (outlook is used up on the path), humidity separates perfectly.
    sunny = model.tree_.branch_child[model.tree_.first_branch[0] + 2]
    report = model.split_report(TENNIS, PLAY, node=int(sunny)).set_index("feature")
    assert np.isnan(report.loc["outlook", "gain"])
    assert report.loc["humidity", "gain"] == pytest.approx(0.970951, abs=1e-6)
    assert report.loc["humidity", "chosen"]


def test_id3_root_matches_scikit_learn_on_binary_features():
    # With two-valued features ID3's multiway split is CART's binary split, so the root
    # feature and its information gain equal scikit-learn's entropy tree's.
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(300, 6)).astype(float)
    y = (X[:, 1] + X[:, 3] + rng.random(300) > 1.5).astype(int)
    model = ID3Classifier().fit(X, y)
    reference = SkTree(criterion="entropy", random_state=0).fit(X, y).tree_
    assert model.tree_.feature[0] == reference.feature[0]
    left, right = reference.children_left[0], reference.children_right[0]
    w = reference.weighted_n_node_samples
    sk_gain = (reference.impurity[0] - w[left] / w[0] * reference.impurity[left]
               - w[right] / w[0] * reference.impurity[right])
    report = model.split_report(X, y)
    assert report["gain"].max() == pytest.approx(sk_gain)
    assert report["gain"].max() == pytest.approx(information_gain(y, X[:, reference.feature[0]]))


def test_id3_discretises_numeric_features_or_refuses_them():
    X, y = load_breast_cancer(return_X_y=True)
    model = ID3Classifier(n_bins=4).fit(X, y)
    tree = model.tree_
    inner = tree.kind >= 0
    assert inner.any() and (tree.n_branches[inner] <= 4).all()
    # No feature is tested twice on a path.
    for node in np.flatnonzero(tree.kind < 0):
        path, current = [], node
        while tree.parent[current] >= 0:
            current = tree.parent[current]
            path.append(tree.feature[current])
        assert len(path) == len(set(path))
    assert model.score(X, y) > 0.95
    with pytest.raises(ValueError, match="numeric='error'"):
        ID3Classifier(numeric="error").fit(X, y)
    ID3Classifier(numeric="error").fit(TENNIS, PLAY)  # all categorical: accepted


def test_id3_stopping_rules():
    assert ID3Classifier(max_depth=1).fit(TENNIS, PLAY).get_depth() == 1
    # The rain (5) and sunny (5) nodes are too small to split with min_samples_split=6.
    assert ID3Classifier(min_samples_split=6).fit(TENNIS, PLAY).get_n_leaves() == 3
    # Zero gain: labels independent of the only feature in the sample.
    X = pd.DataFrame({"a": ["u", "u", "v", "v"]})
    assert ID3Classifier().fit(X, [0, 1, 0, 1]).get_n_leaves() == 1


def test_id3_unseen_category_goes_to_the_node_majority():
    model = ID3Classifier().fit(TENNIS, PLAY)
    new = TENNIS.iloc[:2].copy()
    new["outlook"] = ["foggy", "sunny"]
    new["humidity"] = ["high", "dry"]
    proba = model.predict_proba(new)
    # Unseen outlook: the root's distribution (9 yes, 5 no); unseen humidity at the sunny
    # node: that node's (2 yes, 3 no).
    assert proba[0] == pytest.approx([5 / 14, 9 / 14])
    assert proba[1] == pytest.approx([3 / 5, 2 / 5])
    assert model.predict(new).tolist() == ["yes", "no"]


def test_id3_treats_missing_as_a_value():
    X = np.array([[0.0], [0.0], [1.0], [1.0], [np.nan], [np.nan]])
    model = ID3Classifier(categorical_features=[0]).fit(X, [0, 0, 1, 1, 2, 2])
    assert model.score(X, [0, 0, 1, 1, 2, 2]) == 1.0
    assert model.tree_.missing_child[0] > 0


# --------------------------------------------------------------------------------------
# C4.5
# --------------------------------------------------------------------------------------


def test_c45_grows_quinlans_golf_tree():
    X, y = golf()
    for confidence in (1.0, 0.25):
        model = C45Classifier(confidence=confidence).fit(X, y)
        assert model.rules() == [
            "if outlook = overcast then class = Play (4.0/0.0)",
            "if outlook = rain and windy = false then class = Play (3.0/0.0)",
            "if outlook = rain and windy = true then class = Don't Play (2.0/0.0)",
            "if outlook = sunny and humidity <= 75.00 then class = Play (2.0/0.0)",
            "if outlook = sunny and humidity > 75.00 then class = Don't Play (3.0/0.0)",
        ]


def test_c45_root_follows_the_average_gain_rule():
    X, y = golf()
    model = C45Classifier(confidence=1.0).fit(X, y)
    report = model.split_report(X, y).set_index("feature")
    outlook = X["outlook"].to_numpy()
    assert report.loc["outlook", "gain"] == pytest.approx(information_gain(y, outlook))
    assert report.loc["outlook", "gain_ratio"] == pytest.approx(gain_ratio(y, outlook))
    windy = X["windy"].to_numpy()
    assert report.loc["windy", "gain"] == pytest.approx(information_gain(y, windy))
    average = report["gain"].mean()
    assert report["eligible"].tolist() == (report["gain"] >= average - 1e-9).tolist()
    best = report[report["eligible"]]["gain_ratio"].idxmax()
    assert best == "outlook" and report.loc["outlook", "chosen"]
    # Thresholds are training values (humidity 70 < 75 < 78: C4.5 takes 75, not 76.5).
    grid = set(X["temperature"]) | set(X["humidity"])
    tree = model.tree_
    assert set(tree.threshold[tree.kind == 2]) <= grid


def test_c45_unknown_values_reproduce_quinlans_worked_example():
    X, y = golf(unknown_outlook=True)
    model = C45Classifier(confidence=1.0).fit(X, y)
    report = model.split_report(X, y).set_index("feature")
    # Quinlan (1993, sec. 3.1): gain = 13/14 (0.961 - 0.747) = 0.199; the split
    # information counts the unknown case as a fourth subset: 1.809.
    def h(*counts):
        return -sum(c / sum(counts) * math.log2(c / sum(counts)) for c in counts if c)

    known = 13 / 14 * (h(8, 5) - 5 / 13 * h(2, 3) - 3 / 13 * h(3) - 5 / 13 * h(3, 2))
    assert round(h(8, 5), 3) == 0.961
    assert report.loc["outlook", "gain"] == pytest.approx(known)
    assert round(report.loc["outlook", "gain"], 3) == 0.199
    info = -sum(p * math.log2(p) for p in (5 / 14, 3 / 14, 5 / 14, 1 / 14))
    assert report.loc["outlook", "split_info"] == pytest.approx(info)
    assert round(info, 3) == 1.809
    # Quinlan's tree for these data (1993, ch. 3): the unknown case goes down every
    # branch with weight 5/13, 3/13, 5/13.
    assert model.rules() == [
        "if outlook = overcast then class = Play (3.2/0.0)",
        "if outlook = rain and windy = false then class = Play (3.0/0.0)",
        "if outlook = rain and windy = true then class = Don't Play (2.4/0.4)",
        "if outlook = sunny and humidity <= 75.00 then class = Play (2.0/0.0)",
        "if outlook = sunny and humidity > 75.00 then class = Don't Play (3.4/0.4)",
    ]
    # split_report at the sunny node sees the unknown case with its weight 5/13 there.
    sunny = int(model.tree_.branch_child[model.tree_.first_branch[0] + 2])
    report = model.split_report(X, y, node=sunny)
    assert report["weight"].iloc[0] == pytest.approx(5 + 5 / 13)
    assert report.set_index("feature").loc["humidity", "chosen"]
    weights = model.tree_.weighted_n_node_samples
    assert sorted(weights[model.tree_.kind < 0]) == pytest.approx(
        sorted([2.0, 3 + 5 / 13, 3 + 3 / 13, 2 + 5 / 13, 3.0]))
    # Classifying a sunny case with unknown humidity blends the two humidity leaves:
    # Play with 2/5.4 * 1 + 3.4/5.4 * 0.4/3.4 = 0.44 (Quinlan 1993, sec. 3.3).
    case = pd.DataFrame([["sunny", 75.0, np.nan, "false"]], columns=X.columns)
    proba = model.predict_proba(case)[0]
    low, high = 2.0, 3 + 5 / 13
    play = low / (low + high) + high / (low + high) * (5 / 13) / high
    assert proba[list(model.classes_).index("Play")] == pytest.approx(play)
    assert round(play, 2) == 0.44
    assert proba.sum() == pytest.approx(1.0)


def test_c45_missing_values_keep_the_true_split():
    # y is decided by x0; a third of x0 is unknown. C4.5 still splits on x0, and a
    # case with unknown x0 gets the blend of the leaves by their training fractions.
    rng = np.random.default_rng(1)
    X = rng.random((600, 3))
    y = (X[:, 0] > 0.3).astype(int)
    X[rng.random(600) < 0.33, 0] = np.nan
    model = C45Classifier().fit(X, y)
    assert model.tree_.feature[0] == 0
    known = ~np.isnan(X[:, 0])
    assert model.score(X[known], y[known]) == 1.0
    proba = model.predict_proba(np.array([[np.nan, 0.5, 0.5]]))[0]
    share_high = np.mean(X[known, 0] > model.tree_.threshold[0])
    assert proba[1] == pytest.approx(share_high, abs=0.02)


def test_binomial_upper_limit_matches_quinlan():
    # Quinlan (1993, sec. 4.2): U_25%(0, 6) = 0.206, U_25%(0, 9) = 0.143, U_25%(0, 1) = 0.75.
    values = binomial_upper_limit([0, 0, 0], [6, 9, 1], 0.25)
    assert np.round(values, 3).tolist() == [0.206, 0.143, 0.75]
    # The limit is the rate p with P(X <= E | N, p) = CF, exactly.
    p = binomial_upper_limit([1, 3], [16, 20], 0.25)
    assert binom.cdf([1, 3], [16, 20], p) == pytest.approx([0.25, 0.25])
    # Quinlan's U_25%(1, 16) = 0.157 comes from his program's normal approximation.
    assert p[0] == pytest.approx(0.157, abs=0.003)


def test_pruning_shrinks_noisy_trees_without_hurting_accuracy():
    X, y = make_classification(n_samples=1200, n_features=8, n_informative=3,
                               flip_y=0.2, random_state=0)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    full = C45Classifier(confidence=1.0).fit(X_train, y_train)
    pruned = C45Classifier().fit(X_train, y_train)
    harder = C45Classifier(confidence=0.05).fit(X_train, y_train)
    assert pruned.get_n_leaves() < full.get_n_leaves() / 2
    assert harder.get_n_leaves() <= pruned.get_n_leaves()
    assert pruned.score(X_test, y_test) >= full.score(X_test, y_test) - 0.01
    # Pruning loses training fit (it had fitted the noise).
    assert pruned.score(X_train, y_train) < full.score(X_train, y_train)


def test_c45_min_samples_leaf_is_minobjs():
    X, y = make_classification(n_samples=300, random_state=0)
    model = C45Classifier(confidence=1.0, min_samples_leaf=10).fit(X, y)
    tree = model.tree_
    for node in np.flatnonzero(tree.kind >= 0):
        sizes = [tree.weighted_n_node_samples[c] for _, c in tree.children(node)]
        assert sum(s >= 10 for s in sizes) >= 2
    small = C45Classifier(confidence=1.0, min_samples_leaf=1).fit(X, y)
    assert small.get_n_leaves() > model.get_n_leaves()


# --------------------------------------------------------------------------------------
# Both: edge cases, API
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("Model", [ID3Classifier, C45Classifier])
def test_all_missing_and_constant_columns_are_never_tested(Model):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.random(200), np.full(200, np.nan), np.full(200, 3.0)])
    y = (X[:, 0] > 0.5).astype(int)
    model = Model().fit(X, y)
    tree = model.tree_
    assert set(tree.feature[tree.kind >= 0]) == {0}
    # ID3 sees x0 through 10 quantile bins, one of which straddles 0.5.
    assert model.score(X, y) >= (0.9 if Model is ID3Classifier else 1.0)
    assert model.feature_importances_ == pytest.approx([1.0, 0.0, 0.0])


@pytest.mark.parametrize("Model", [ID3Classifier, C45Classifier])
def test_one_row_and_one_class(Model):
    model = Model().fit(pd.DataFrame({"a": ["x"]}), ["only"])
    assert model.tree_.node_count == 1
    assert model.predict(pd.DataFrame({"a": ["y"]})).tolist() == ["only"]
    model = Model().fit(np.arange(10.0).reshape(5, 2), [1] * 5)
    assert model.get_n_leaves() == 1 and model.get_depth() == 0


def test_c45_unseen_category_uses_the_node_distribution():
    X, y = golf()
    model = C45Classifier(confidence=1.0).fit(X, y)
    case = pd.DataFrame([["snow", 70.0, 70.0, "true"]], columns=X.columns)
    assert model.predict_proba(case)[0] == pytest.approx([5 / 14, 9 / 14])
    assert model.apply(case).tolist() == [0]


@pytest.mark.parametrize("Model", [ID3Classifier, C45Classifier])
def test_generalization_bound_uses_the_equivalent_binary_tree(Model):
    model = Model().fit(TENNIS, PLAY)
    risk, bound = model.generalization_bound(TENNIS, PLAY, delta=0.05)
    assert risk == pytest.approx(1 - model.score(TENNIS, PLAY))
    n_nodes = 2 * model.tree_.n_binary_splits() + 1
    assert bound - risk == pytest.approx(tree_generalization_bound(n_nodes, 4, 14, 0.05))


@pytest.mark.parametrize("Model", [ID3Classifier, C45Classifier])
def test_sample_weight_equals_repetition(Model):
    X, y = golf(unknown_outlook=True)
    w = np.array([1, 2, 1, 3, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1])
    # ID3's quantile bins are of the rows, unweighted: with n_bins above the number of
    # distinct values the bins are exact and weights act as repetitions.
    params = dict(n_bins=16) if Model is ID3Classifier else {}
    weighted = Model(**params).fit(X, y, sample_weight=w)
    repeated = Model(**params).fit(X.loc[X.index.repeat(w)], np.repeat(y, w))
    assert weighted.rules() == repeated.rules()
    assert weighted.predict_proba(X) == pytest.approx(repeated.predict_proba(X))


@pytest.mark.parametrize("params, message", [
    (dict(confidence=0.0), "confidence"), (dict(confidence=1.5), "confidence"),
    (dict(min_samples_leaf=0), "min_samples_leaf"), (dict(max_depth=0), "max_depth"),
])
def test_c45_rejects_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        C45Classifier(**params).fit(TENNIS, PLAY)


@pytest.mark.parametrize("params, message", [
    (dict(n_bins=1), "n_bins"), (dict(numeric="round"), "numeric"),
    (dict(min_samples_split=1), "min_samples_split"),
])
def test_id3_rejects_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        ID3Classifier(**params).fit(TENNIS, PLAY)


def test_categorical_arrays_need_codes():
    with pytest.raises(ValueError, match="integer codes"):
        C45Classifier(categorical_features=[0]).fit(np.array([[0.5], [1.0]]), [0, 1])


@parametrize_with_checks([ID3Classifier(), C45Classifier()])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_c45_parallel_and_serial_feature_search_agree():
    from silva.engine.multiway import c45_evaluate

    X, y = make_classification(n_samples=400, n_features=12, random_state=3)
    X[::7, 2] = np.nan
    model = C45Classifier().fit(X, y)
    grid, n_grid = model._grid
    args = (X, np.arange(400, dtype=np.int64), np.ones(400), y.astype(np.int64), 2,
            np.zeros(12, dtype=np.uint8), np.zeros(12, dtype=np.int64),
            np.ones(12, dtype=np.uint8), 2.0, grid, n_grid)
    serial = c45_evaluate(*args, 10**9)
    parallel = c45_evaluate(*args, 0)
    for a, b in zip(serial, parallel, strict=True):
        assert np.array_equal(a, b)
    assert np.isfinite(serial[0]).all()
