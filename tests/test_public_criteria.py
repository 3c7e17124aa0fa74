"""silva.criteria: textbook quantities checked against hand-worked examples.

The play-tennis table is Quinlan's (1986, table 1), as in Mitchell (1997, table 3.2);
every expected value is worked out in the test from class counts with math.log2.
"""

import math

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.tree import DecisionTreeClassifier as SkTree

from silva.criteria import (
    entropy,
    gain_ratio,
    gini,
    information_gain,
    misclassification,
    split_information,
    tree_generalization_bound,
    twoing,
    variance_reduction,
)
from silva.decision_tree import DecisionTreeClassifier

OUTLOOK = ("sunny sunny overcast rain rain rain overcast sunny sunny rain sunny overcast "
           "overcast rain").split()
TEMPERATURE = "hot hot hot mild cool cool cool mild cool mild mild mild hot mild".split()
HUMIDITY = ("high high high high normal normal normal high normal normal normal high normal "
            "high").split()
WIND = ("weak strong weak weak weak strong strong weak weak weak strong strong weak "
        "strong").split()
PLAY = "no no yes yes yes no yes no yes yes yes yes yes no".split()


def h(*counts):
    """Entropy in bits of class counts, worked by hand."""
    total = sum(counts)
    return -sum(c / total * math.log2(c / total) for c in counts if c)


def test_entropy_of_play_tennis():
    assert entropy(PLAY) == pytest.approx(h(9, 5))
    assert round(entropy(PLAY), 3) == 0.940
    assert entropy(PLAY, base=math.e) == pytest.approx(h(9, 5) * math.log(2))
    assert entropy(["a"] * 5) == 0.0
    assert entropy(["a", "b", "c", "d"]) == pytest.approx(2.0)


def test_information_gain_of_play_tennis():
    # Outlook: sunny 2+/3-, overcast 4+/0-, rain 3+/2-.
    expected = h(9, 5) - 5 / 14 * h(2, 3) - 4 / 14 * h(4, 0) - 5 / 14 * h(3, 2)
    assert information_gain(PLAY, OUTLOOK) == pytest.approx(expected)
    assert round(information_gain(PLAY, OUTLOOK), 4) == 0.2467
    # Humidity: high 3+/4-, normal 6+/1-; wind: weak 6+/2-, strong 3+/3-.
    assert information_gain(PLAY, HUMIDITY) == pytest.approx(
        h(9, 5) - 7 / 14 * h(3, 4) - 7 / 14 * h(6, 1))
    assert round(information_gain(PLAY, HUMIDITY), 3) == 0.152
    assert round(information_gain(PLAY, WIND), 3) == 0.048
    assert round(information_gain(PLAY, TEMPERATURE), 3) == 0.029
    # A boolean mask is a binary split: the same as the two-valued column.
    mask = np.array(HUMIDITY) == "high"
    assert information_gain(PLAY, mask) == pytest.approx(information_gain(PLAY, HUMIDITY))


def test_split_information_and_gain_ratio_of_outlook():
    info = h(5, 4, 5)
    assert split_information(OUTLOOK) == pytest.approx(info)
    assert round(split_information(OUTLOOK), 3) == 1.577
    assert gain_ratio(PLAY, OUTLOOK) == pytest.approx(information_gain(PLAY, OUTLOOK) / info)
    assert round(gain_ratio(PLAY, OUTLOOK), 3) == 0.156
    # Humidity splits 7/7: split information 1 bit, so the ratio is the gain.
    assert gain_ratio(PLAY, HUMIDITY) == pytest.approx(information_gain(PLAY, HUMIDITY))
    # A constant column: no gain and no split information; the ratio is 0, not NaN.
    assert gain_ratio(PLAY, ["x"] * 14) == 0.0


def test_gini_and_misclassification_of_play_tennis():
    assert gini(PLAY) == pytest.approx(1 - (9 / 14) ** 2 - (5 / 14) ** 2)
    assert misclassification(PLAY) == pytest.approx(5 / 14)
    assert gini([1, 1, 1]) == 0.0
    assert misclassification([0, 1, 2, 3]) == pytest.approx(0.75)


def test_sample_weight_acts_as_repetition():
    y = np.array(["a", "b", "b", "c"])
    x = np.array(["u", "u", "v", "v"])
    w = np.array([3.0, 1.0, 2.0, 1.0])
    y_rep, x_rep = np.repeat(y, w.astype(int)), np.repeat(x, w.astype(int))
    for function in (entropy, gini, misclassification, split_information):
        assert function(y, sample_weight=w) == pytest.approx(function(y_rep))
    assert information_gain(y, x, sample_weight=w) == pytest.approx(
        information_gain(y_rep, x_rep))
    assert gain_ratio(y, x, sample_weight=w) == pytest.approx(gain_ratio(y_rep, x_rep))
    mask = x == "u"
    assert twoing(y, mask, sample_weight=w) == pytest.approx(twoing(y_rep, x_rep == "u"))
    values = np.array([1.0, 2.0, 4.0, 8.0])
    assert variance_reduction(values, mask, sample_weight=w) == pytest.approx(
        variance_reduction(np.repeat(values, w.astype(int)), x_rep == "u"))


def test_twoing_by_hand():
    # Left: 3 a, 1 b; right: 1 a, 3 c.  p_L = p_R = 1/2.
    y = ["a", "a", "a", "b", "a", "c", "c", "c"]
    mask = np.array([True] * 4 + [False] * 4)
    spread = abs(3 / 4 - 1 / 4) + abs(1 / 4 - 0) + abs(0 - 3 / 4)
    assert twoing(y, mask) == pytest.approx(0.5 * 0.5 / 4 * spread ** 2)
    # For two classes twoing is p_L p_R (p(1|L) - p(1|R))**2 = half the Gini decrease.
    y2 = np.array([0, 0, 1, 1, 1, 0])
    m2 = np.array([True, True, True, False, False, False])
    gini_decrease = gini(y2) - 0.5 * gini(y2[m2]) - 0.5 * gini(y2[~m2])
    assert twoing(y2, m2) == pytest.approx(gini_decrease / 2)
    assert twoing(y2, np.ones(6, dtype=bool)) == 0.0


def test_variance_reduction_by_hand():
    y = np.array([1.0, 2.0, 3.0, 10.0])
    mask = np.array([True, True, True, False])
    expected = np.var(y) - 3 / 4 * np.var(y[:3]) - 1 / 4 * 0.0
    assert variance_reduction(y, mask) == pytest.approx(expected)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="base"):
        entropy(PLAY, base=1)
    with pytest.raises(ValueError, match="missing"):
        information_gain(PLAY, OUTLOOK[:13] + [None])
    with pytest.raises(ValueError, match="missing"):
        entropy([1.0, np.nan])
    with pytest.raises(ValueError, match="mask"):
        twoing(PLAY, OUTLOOK)
    with pytest.raises(ValueError, match="x has 3"):
        information_gain(PLAY, ["a", "b", "c"])
    with pytest.raises(ValueError, match="sample_weight"):
        gini(PLAY, sample_weight=-np.ones(14))
    with pytest.raises(ValueError, match="empty"):
        entropy([])


def test_tree_generalization_bound_formula():
    expected = math.sqrt((4 * math.log2(5) + math.log2(2 / 0.05)) / (2 * 100))
    assert tree_generalization_bound(3, 2, 100, 0.05) == pytest.approx(expected)
    # More data, a smaller term; more nodes, a larger one.
    assert tree_generalization_bound(3, 2, 1000, 0.05) < expected
    assert tree_generalization_bound(7, 2, 100, 0.05) > expected
    with pytest.raises(ValueError, match="delta"):
        tree_generalization_bound(3, 2, 100, 1.5)
    with pytest.raises(ValueError, match="n_samples"):
        tree_generalization_bound(3, 2, 0, 0.05)


def _impurity_decrease(tree, node):
    left, right = tree.children_left[node], tree.children_right[node]
    w = tree.weighted_n_node_samples
    return (tree.impurity[node] - w[left] / w[node] * tree.impurity[left]
            - w[right] / w[node] * tree.impurity[right])


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_split_report_on_cart_matches_the_tree(criterion):
    X, y = load_iris(return_X_y=True)
    model = DecisionTreeClassifier(criterion=criterion, max_depth=3, random_state=0).fit(X, y)
    tree = model.tree_
    for node in np.flatnonzero(tree.children_left != -1):
        report = model.split_report(X, y, node=int(node))
        assert len(report) == X.shape[1]
        chosen = report[report["chosen"]]
        assert len(chosen) == 1
        row = chosen.iloc[0]
        assert row["feature"] == f"feature_{tree.feature[node]}"
        assert row["threshold"] == pytest.approx(tree.threshold[node])
        assert row["score"] == pytest.approx(_impurity_decrease(tree, node))
        # The tree took the best split: no feature scores higher.
        assert report["score"].max() == pytest.approx(row["score"])
        assert row["weight"] == pytest.approx(tree.weighted_n_node_samples[node])


def test_split_report_on_cart_agrees_with_scikit_learn_root():
    X, y = load_breast_cancer(return_X_y=True)
    model = DecisionTreeClassifier(criterion="entropy", random_state=0).fit(X, y)
    reference = SkTree(criterion="entropy", random_state=0).fit(X, y).tree_
    report = model.split_report(X, y)
    row = report[report["chosen"]].iloc[0]
    assert row["feature"] == f"feature_{reference.feature[0]}"
    assert row["threshold"] == pytest.approx(reference.threshold[0], rel=1e-6)
    assert row["score"] == pytest.approx(_impurity_decrease(reference, 0))


def test_generalization_bound_on_cart():
    X, y = load_iris(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
    risk, bound = model.generalization_bound(X, y, delta=0.1)
    assert risk == pytest.approx(1 - model.score(X, y))
    assert bound - risk == pytest.approx(
        tree_generalization_bound(model.tree_.node_count, 4, 150, 0.1))


def test_split_report_checks_its_arguments():
    X, y = load_iris(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="node"):
        model.split_report(X, y, node=99)
    with pytest.raises(ValueError, match="label"):
        model.split_report(X, np.full(150, 7))


def test_split_report_on_cart_with_categories_and_missing_values():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    colour = rng.choice(["red", "green", "blue", "grey"], size=300)
    size = rng.random(300)
    size[rng.random(300) < 0.2] = np.nan
    y = np.isin(colour, ["red", "grey"]).astype(int) ^ (rng.random(300) < 0.1)
    X = pd.DataFrame({"colour": colour, "size": size})
    model = DecisionTreeClassifier(categorical_features="auto", max_depth=2, random_state=0)
    model.fit(X, y)
    report = model.split_report(X, y)
    row = report[report["chosen"]].iloc[0]
    assert row["feature"] == "colour"
    assert row["score"] == pytest.approx(_impurity_decrease(model.tree_, 0))
    codes = set(model.tree_.categories_left(0).tolist())
    assert set(row["categories"]) in (codes, {0, 1, 2, 3} - codes)
    assert np.isfinite(report.set_index("feature").loc["size", "score"])
