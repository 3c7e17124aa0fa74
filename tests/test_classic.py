"""ID3 and C4.5 (silva.classic): textbook trees, C4.5's unknown values, pruning, edge cases.

The golf data and the worked numbers for unknown values are Quinlan's (1993, ch. 1-3);
the categorical play-tennis tree is Quinlan's (1986) / Mitchell's (1997, fig. 3.1).
"""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta, chi2_contingency
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier as SkTree
from sklearn.utils.estimator_checks import (
    check_sample_weight_equivalence_on_dense_data,
    parametrize_with_checks,
)

from silva import classic
from silva.classic import C45Classifier, ID3Classifier
from silva.criteria import gain_ratio, information_gain, tree_generalization_bound
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
        sizes = [tree.weighted_n_node_samples[c] for c in tree.children(node)]
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
    # distinct values the bins are exact and weights act as repetitions. C4.5 rescales
    # weights to average 1 (relative weights), so its counts are in cases only up to
    # that factor: weights act as repetitions where no count limit binds (no pruning,
    # a MINOBJS below any case's weight).
    params = (dict(n_bins=16) if Model is ID3Classifier
              else dict(confidence=1.0, min_samples_leaf=0.1))
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


def _expected_failed_checks(estimator):
    if isinstance(estimator, C45Classifier):
        # C4.5 rescales sample weights to average 1 (relative weights, so that scaling
        # them changes nothing): its MINOBJS and pruning counts are then in average
        # cases, and integer weights are repetitions only where no count limit binds
        # (test_c45_sample_weight_equivalence_without_count_limits).
        reason = "weights are relative: rescaled to average 1 before MINOBJS and pruning"
        return {"check_sample_weight_equivalence_on_dense_data": reason,
                "check_sample_weight_equivalence_on_sparse_data": reason}
    return {}


@parametrize_with_checks([ID3Classifier(), C45Classifier()],
                         expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_c45_sample_weight_equivalence_without_count_limits():
    check_sample_weight_equivalence_on_dense_data(
        "C45Classifier", C45Classifier(confidence=1.0, min_samples_leaf=1e-3))


# --------------------------------------------------------------------------------------
# Significance stopping (min_significance, Kass 1980)
# --------------------------------------------------------------------------------------


def scipy_p_value(table):
    """Reference: scipy's Pearson test on the table without its empty rows and columns."""
    table = np.asarray(table, dtype=float)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    if min(table.shape) < 2:
        return 1.0
    return chi2_contingency(table, correction=False).pvalue


def test_id3_tests_its_chosen_split_with_scipys_p_value():
    # The root test (outlook) of the play-tennis tree: sunny 3 no / 2 yes, overcast 0 / 4,
    # rain 2 / 3; chi-square 3.547 on 2 degrees of freedom.
    table = pd.crosstab(pd.Series(OUTLOOK), pd.Series(PLAY)).to_numpy()
    p_value = chi2_contingency(table, correction=False).pvalue
    assert round(p_value, 3) == 0.170
    report = ID3Classifier().fit(TENNIS, PLAY).split_report(TENNIS, PLAY).set_index("feature")
    assert report.loc["outlook", "p_value"] == pytest.approx(p_value, rel=1e-9)
    assert report.loc["wind", "p_value"] == pytest.approx(
        scipy_p_value(pd.crosstab(pd.Series(WIND), pd.Series(PLAY))), rel=1e-9)
    # The node splits exactly when that p-value is at most min_significance.
    above = ID3Classifier(min_significance=p_value * (1 + 1e-6)).fit(TENNIS, PLAY)
    below = ID3Classifier(min_significance=p_value * (1 - 1e-6)).fit(TENNIS, PLAY)
    assert above.tree_.feature[0] == 0 and above.get_n_leaves() > 1
    assert below.tree_.node_count == 1
    assert below.predict_proba(TENNIS) == pytest.approx(np.tile([5 / 14, 9 / 14], (14, 1)))


def test_c45_tests_only_the_known_cases_with_their_weights():
    X, y = golf(unknown_outlook=True)
    model = C45Classifier(confidence=1.0).fit(X, y)
    known = X["outlook"].notna().to_numpy()
    table = pd.crosstab(X["outlook"][known], y[known]).to_numpy()
    report = model.split_report(X, y).set_index("feature")
    assert report.loc["outlook", "p_value"] == pytest.approx(scipy_p_value(table), rel=1e-9)
    # At the sunny node the unknown case (Play, humidity 90) weighs 5/13: humidity <= 75
    # has 2 Play; humidity > 75 has 5/13 Play and 3 Don't Play.
    sunny = int(model.tree_.branch_child[model.tree_.first_branch[0] + 2])
    report = model.split_report(X, y, node=sunny).set_index("feature")
    p_sunny = scipy_p_value([[0, 2], [3, 5 / 13]])
    assert report.loc["humidity", "p_value"] == pytest.approx(p_sunny, rel=1e-9)
    # The root's p-value (0.239) is the largest of the tree's three tests: just above
    # it the whole tree grows, just below it the root stays a leaf.
    p_root = scipy_p_value(table)
    assert round(p_root, 3) == 0.239
    whole = C45Classifier(confidence=1.0, min_significance=p_root * (1 + 1e-6)).fit(X, y)
    assert whole.rules() == model.rules()
    cut = C45Classifier(confidence=1.0, min_significance=p_root * (1 - 1e-6)).fit(X, y)
    assert cut.rules() == ["if true then class = Play (14.0/5.0)"]


def expected_cut(tree, X, y, level):
    """Node features, in the tree's (depth-first) order, of ``tree`` with every node whose
    test has a scipy p-value above ``level`` turned into a leaf: what growing with
    ``min_significance=level`` must give when node decisions do not depend on each other
    (ID3; C4.5 without pruning or unknown values)."""
    features = []
    stack = [0]
    while stack:
        node = stack.pop()
        if tree.kind[node] < 0:
            features.append(-2)
            continue
        reach = tree.node_weights(X, node) > 0
        branch = tree.branch_of(node, X[reach, tree.feature[node]])
        branch = np.where(branch == -1, tree.n_branches[node], branch)  # ID3's missing
        table = np.zeros((tree.n_branches[node] + 1, int(y.max()) + 1))
        np.add.at(table, (branch, y[reach]), 1.0)
        if scipy_p_value(table) > level:
            features.append(-2)
            continue
        features.append(int(tree.feature[node]))
        stack.extend(reversed(tree.children(node)))
    return features


@pytest.mark.parametrize("Model", [ID3Classifier, C45Classifier])
def test_significance_cuts_the_full_tree_where_scipy_says(Model):
    X, y = make_classification(n_samples=300, n_features=5, n_informative=3, n_classes=3,
                               n_clusters_per_class=1, flip_y=0.15, random_state=2)
    X[:, 4] = np.digitize(X[:, 4], [-0.5, 0.5])  # one categorical feature, codes 0..2
    params = dict(n_bins=4) if Model is ID3Classifier else dict(confidence=1.0)
    full = Model(categorical_features=[4], **params).fit(X, y)
    for level in (0.2, 0.01, 1e-4):
        model = Model(categorical_features=[4], min_significance=level, **params).fit(X, y)
        expected = expected_cut(full.tree_, X, y, level)
        assert model.tree_.feature.tolist() == expected
        assert 1 < model.get_n_leaves() < full.get_n_leaves()


@pytest.mark.parametrize("Model", [ID3Classifier, C45Classifier])
def test_significance_stops_on_noise_but_not_on_signal(Model):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    if Model is ID3Classifier:
        noise = rng.integers(0, 3, size=(300, 6)).astype(float)
        params = dict(categorical_features=list(range(6)))
    else:
        noise = rng.random((300, 6))
        params = dict(confidence=1.0)
    grown = Model(**params).fit(noise, y)
    stopped = Model(min_significance=0.01, **params).fit(noise, y)
    assert grown.get_n_leaves() > 50
    assert stopped.get_n_leaves() <= grown.get_n_leaves() / 20
    # Informative features (three of six) still give a deep, more accurate tree.
    X, y = make_classification(n_samples=400, n_features=6, n_informative=3, flip_y=0.1,
                               random_state=0)
    if Model is ID3Classifier:
        X = np.digitize(X, [-1.0, 0.0, 1.0]).astype(float)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    grown = Model(**params).fit(X_train, y_train)
    stopped = Model(min_significance=0.01, **params).fit(X_train, y_train)
    assert stopped.get_depth() >= 3
    assert stopped.get_n_leaves() < grown.get_n_leaves()
    assert stopped.score(X_test, y_test) > grown.score(X_test, y_test)
    assert stopped.score(X_test, y_test) > 0.8


def test_c45_still_prunes_after_significance_stopping():
    X, y = make_classification(n_samples=400, n_features=6, n_informative=3, flip_y=0.1,
                               random_state=0)
    stopped = C45Classifier(confidence=1.0, min_significance=0.01).fit(X, y)
    pruned = C45Classifier(min_significance=0.01).fit(X, y)
    assert pruned.get_n_leaves() < stopped.get_n_leaves()
    assert pruned.get_depth() <= stopped.get_depth()
    # Pruning only turns inner nodes of the stopped tree into leaves: the tested features
    # of the pruned tree, depth first, are those of the stopped tree with subtrees left out.
    kept = iter(stopped.tree_.feature.tolist())
    assert all(f == -2 or f in kept for f in pruned.tree_.feature.tolist())


def tree_arrays(model):
    tree = model.tree_
    return [tree.kind, tree.feature, tree.threshold, tree.n_branches, tree.branch_child,
            tree.branch_fraction, tree.missing_child, tree.value, tree.n_node_samples]


@pytest.mark.parametrize("Model", [ID3Classifier, C45Classifier])
def test_min_significance_one_is_the_unchanged_tree(Model, monkeypatch):
    X, y = golf(unknown_outlook=True)
    rng = np.random.default_rng(3)
    noise_X, noise_y = rng.random((200, 4)), rng.integers(0, 3, 200)
    for data in [(X, y), (noise_X, noise_y)]:
        default = Model().fit(*data)
        # At 1.0 no test is even made, so no split can differ from the plain algorithm.
        monkeypatch.setattr(classic.mw, "contingency_chi2", None)
        explicit = Model(min_significance=1.0).fit(*data)
        monkeypatch.undo()
        for a, b in zip(tree_arrays(default), tree_arrays(explicit), strict=True):
            assert np.array_equal(a, b)
        assert default.get_params()["min_significance"] == 1.0


@pytest.mark.parametrize("Model", [ID3Classifier, C45Classifier])
def test_significance_counts_weights_as_cases(Model):
    X, y = golf(unknown_outlook=True)
    w = np.array([1, 2, 1, 3, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1])
    params = dict(n_bins=16, min_significance=0.1) if Model is ID3Classifier else dict(
        confidence=1.0, min_significance=0.1)
    weighted = Model(**params).fit(X, y, sample_weight=w)
    repeated = Model(**params).fit(X.loc[X.index.repeat(w)], np.repeat(y, w))
    assert weighted.rules() == repeated.rules()
    assert weighted.get_n_leaves() < Model(**{**params, "min_significance": 1.0}).fit(
        X, y, sample_weight=w).get_n_leaves()


@pytest.mark.parametrize("Model", [ID3Classifier, C45Classifier])
@pytest.mark.parametrize("value, error", [
    (0, ValueError), (0.0, ValueError), (1.5, ValueError), (-0.1, ValueError),
    (float("nan"), ValueError), ("x", TypeError), (None, TypeError), (True, TypeError),
])
def test_min_significance_is_validated(Model, value, error):
    with pytest.raises(error, match="min_significance"):
        Model(min_significance=value).fit(TENNIS, PLAY)


# --------------------------------------------------------------------------------------
# C4.5 subtree raising
# --------------------------------------------------------------------------------------


def noisy_three_classes(seed):
    X, y = make_classification(n_samples=500, n_features=6, n_informative=3, n_classes=3,
                               n_clusters_per_class=1, flip_y=0.2, random_state=seed)
    if seed % 2:
        X[np.random.default_rng(seed).random(X.shape) < 0.1] = np.nan
    X[:, 5] = np.digitize(X[:, 5], [-0.5, 0.5])  # categorical, codes 0..2 (NaN stays NaN)
    return X, y


def pessimistic_errors(model, confidence=0.25):
    """The tree's predicted errors, sum over leaves of ``N U_CF(E, N)``, with U_CF from
    scipy's beta quantile (Quinlan 1993, sec. 4.2)."""
    tree = model.tree_
    leaf = tree.kind < 0
    n = tree.weighted_n_node_samples[leaf]
    errors = n * (1.0 - tree.value[leaf, 0].max(axis=1))
    full = n - errors <= 1e-9
    rate = np.ones_like(n)
    rate[~full] = beta.ppf(1.0 - confidence, errors[~full] + 1.0, n[~full] - errors[~full])
    return float(np.sum(n * rate))


def test_subtree_raising_lowers_the_predicted_errors_and_can_shrink_the_tree():
    shrunk = lowered = 0
    for seed in range(6):
        X, y = noisy_three_classes(seed)
        replaced = C45Classifier(subtree_raising=False, categorical_features=[5]).fit(X, y)
        raised = C45Classifier(categorical_features=[5]).fit(X, y)
        # Raising is one more option at each node, taken when its predicted errors are no
        # more than the subtree's plus C4.5's 0.1 margin: it may cost that margin at most.
        assert pessimistic_errors(raised) <= pessimistic_errors(replaced) + 0.1
        lowered += pessimistic_errors(raised) < pessimistic_errors(replaced) - 0.1
        shrunk += raised.get_n_leaves() < replaced.get_n_leaves()
    assert lowered >= 2 and shrunk >= 2


def test_subtree_raising_redistributes_the_cases():
    # After raising, each node's class counts are those of the training cases that reach
    # it in the final tree (unknown values split by the stored branch fractions).
    X, y = noisy_three_classes(5)
    model = C45Classifier(categorical_features=[5]).fit(X, y)
    assert model.get_n_leaves() < C45Classifier(
        subtree_raising=False, categorical_features=[5]).fit(X, y).get_n_leaves()
    tree = model.tree_
    for node in range(tree.node_count):
        reach = tree.node_weights(X, node)
        counts = np.bincount(y, weights=reach, minlength=3)
        assert counts == pytest.approx(tree.value[node, 0] * tree.weighted_n_node_samples[node])
    assert tree.weighted_n_node_samples[tree.kind < 0].sum() == pytest.approx(500.0)


def test_pruning_without_raising_is_the_compiled_replacement(monkeypatch):
    # The Python pruner with raising switched off is C4.5's subtree replacement, as the
    # compiled kernel that subtree_raising=False uses.
    X, y = noisy_three_classes(1)
    replaced = C45Classifier(subtree_raising=False, categorical_features=[5]).fit(X, y)
    pruner = classic._SubtreeRaisingPruner
    monkeypatch.setattr(classic, "_SubtreeRaisingPruner",
                        lambda *args: pruner(*args, raising=False))
    python = C45Classifier(categorical_features=[5]).fit(X, y)
    for a, b in zip(tree_arrays(replaced), tree_arrays(python), strict=True):
        assert a == pytest.approx(b)


def test_subtree_raising_is_validated():
    with pytest.raises(TypeError, match="subtree_raising"):
        C45Classifier(subtree_raising="yes").fit(TENNIS, PLAY)
