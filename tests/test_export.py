"""Tests for silva.export: export_text and export_graphviz."""

from __future__ import annotations

import io
import re
import shutil
import subprocess

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.exceptions import NotFittedError

from silva import DecisionTreeClassifier, DecisionTreeRegressor
from silva.engine.tree import Tree
from silva.export import export_graphviz, export_text

# --------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def iris_clf():
    X, y = load_iris(return_X_y=True)
    return DecisionTreeClassifier(random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def cancer_frame_clf():
    pd = pytest.importorskip("pandas")
    data = load_breast_cancer()
    X = pd.DataFrame(data.data, columns=data.feature_names)
    return DecisionTreeClassifier(random_state=0).fit(X, data.target)


@pytest.fixture(scope="module")
def diabetes_reg():
    X, y = load_diabetes(return_X_y=True)
    return DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)


def hand_built_tree(left, right, feature, threshold, value, n, missing_left, cat_left):
    """A silva Tree from hand-written arrays; ``cat_left`` maps a categorical split's node
    to the category codes (of 4) that it sends left."""
    n_nodes = len(left)
    bitsets = np.zeros((n_nodes, 1), dtype=np.uint64)
    for node, codes in cat_left.items():
        bitsets[node, 0] = sum(1 << code for code in codes)
    n = np.asarray(n, dtype=np.intp)
    return Tree(
        n_features=2, n_classes=2, children_left=left, children_right=right, feature=feature,
        threshold=threshold, missing_go_to_left=missing_left,
        is_categorical=[node in cat_left for node in range(n_nodes)],
        category_bitsets=bitsets, value=value, impurity=np.full(n_nodes, 0.25),
        n_node_samples=n, weighted_n_node_samples=n.astype(np.float64),
        n_categories=[0, 4] if cat_left else None,
    )


class FakeClassifier:
    def __init__(self, tree, has_missing):
        self.tree_ = tree
        self.classes_ = np.array(["A", "B"])
        self.n_features_in_ = 2
        self.feature_names_in_ = np.array(["size", "color"], dtype=object)
        self.criterion = "gini"
        self._has_missing_at_fit = has_missing


def fake_classifier(has_missing=True):
    # 0: color in {2, 0} (missing -> left)
    #   1: leaf A
    #   2: size <= 1.5 (missing -> right)
    #     3: leaf B
    #     4: leaf A
    tree = hand_built_tree(
        left=[1, -1, 3, -1, -1],
        right=[2, -1, 4, -1, -1],
        feature=[1, -2, 0, -2, -2],
        threshold=[-2.0, -2.0, 1.5, -2.0, -2.0],
        value=[[[0.5, 0.5]], [[0.8, 0.2]], [[0.3, 0.7]], [[0.1, 0.9]], [[1.0, 0.0]]],
        n=[20, 10, 10, 8, 2],
        missing_left=[1, 0, 0, 0, 0],
        cat_left={0: [2, 0]},
    )
    return FakeClassifier(tree, has_missing)


def chain_classifier(depth):
    """A fake tree of the given depth where every split sends one leaf to the left."""
    n_nodes = 2 * depth + 1
    left = np.full(n_nodes, -1)
    right = np.full(n_nodes, -1)
    feature = np.full(n_nodes, -2)
    threshold = np.full(n_nodes, -2.0)
    for d in range(depth):
        node = 2 * d
        left[node], right[node] = node + 1, node + 2
        feature[node], threshold[node] = 0, float(d)
    value = np.tile([[0.5, 0.5]], (n_nodes, 1, 1))
    value[1::2] = [[1.0, 0.0]]
    value[-1] = [[0.0, 1.0]]
    tree = hand_built_tree(left, right, feature, threshold, value, np.ones(n_nodes),
                           np.zeros(n_nodes), {})
    model = FakeClassifier(tree, has_missing=False)
    del model.feature_names_in_  # fall back to feature_0, feature_1, ...
    return model


# --------------------------------------------------------------------------------------
# export_text
# --------------------------------------------------------------------------------------


def test_text_first_line_is_root_split_with_frame_feature_name(cancer_frame_clf):
    tree = cancer_frame_clf.tree_
    name = cancer_frame_clf.feature_names_in_[tree.feature[0]]
    thr = tree.threshold[0]
    lines = export_text(cancer_frame_clf).splitlines()
    assert lines[0] == f"|--- {name} <= {thr:.2f}"
    # The right branch of the root is the only other line at indentation level zero.
    top_level = [line for line in lines if line.startswith("|---")]
    assert top_level == [f"|--- {name} <= {thr:.2f}", f"|--- {name} >  {thr:.2f}"]


def test_text_default_names_and_decimals(iris_clf):
    tree = iris_clf.tree_
    text = export_text(iris_clf, decimals=4)
    assert text.splitlines()[0] == f"|--- feature_{tree.feature[0]} <= {tree.threshold[0]:.4f}"
    assert text.endswith("\n")


def test_text_custom_feature_names_and_spacing(iris_clf):
    names = ["sepal length", "sepal width", "petal length", "petal width"]
    text = export_text(iris_clf, feature_names=names, spacing=5)
    root = iris_clf.tree_.feature[0]
    assert text.splitlines()[0] == f"|----- {names[root]} <= {iris_clf.tree_.threshold[0]:.2f}"
    assert "feature_" not in text
    # Second-level lines are indented by "|" + 5 spaces.
    assert any(line.startswith("|     |----- ") for line in text.splitlines())


def test_text_one_line_per_branch_and_leaf(iris_clf):
    tree = iris_clf.tree_
    lines = export_text(iris_clf, max_depth=100).splitlines()
    n_internal = int(np.sum(tree.children_left != -1))
    leaf_lines = [line for line in lines if "class: " in line]
    split_lines = [line for line in lines if "<=" in line or ">  " in line]
    assert len(leaf_lines) == iris_clf.get_n_leaves() == tree.n_leaves
    assert len(split_lines) == 2 * n_internal
    assert len(lines) == len(leaf_lines) + len(split_lines)
    assert {line.rsplit("class: ", 1)[1] for line in leaf_lines} == {"0", "1", "2"}
    # The deepest leaf line sits at indentation = tree depth.
    depths = [line.count("|") - 1 for line in leaf_lines]
    assert max(depths) == iris_clf.get_depth()


def test_text_class_names_and_weights(iris_clf):
    text = export_text(iris_clf, class_names=["setosa", "versicolor", "virginica"])
    leaves = [line.split("class: ")[1] for line in text.splitlines() if "class: " in line]
    assert set(leaves) == {"setosa", "versicolor", "virginica"}

    weighted = export_text(iris_clf, show_weights=True)
    tree = iris_clf.tree_
    leaf_ids = np.flatnonzero(tree.children_left == -1)
    counts = tree.value[:, 0, :] * tree.weighted_n_node_samples[:, np.newaxis]
    expected = ["[" + ", ".join(f"{w:.2f}" for w in counts[i]) + "]" for i in leaf_ids]
    found = re.findall(r"weights: (\[[^\]]*\]) class: ", weighted)
    assert sorted(found) == sorted(expected)
    # Weights at the leaves add up to the training set size.
    totals = [sum(map(float, w.strip("[]").split(", "))) for w in found]
    assert sum(totals) == pytest.approx(tree.weighted_n_node_samples[0], abs=0.01 * len(found))


def test_text_regressor_leaf_values(diabetes_reg):
    tree = diabetes_reg.tree_
    text = export_text(diabetes_reg, decimals=3)
    leaf_ids = np.flatnonzero(tree.children_left == -1)
    printed = re.findall(r"\|--- value: \[(.*)\]$", text, flags=re.M)
    assert len(printed) == len(leaf_ids)
    assert sorted(printed) == sorted(f"{tree.value[i, 0, 0]:.3f}" for i in leaf_ids)
    assert "class" not in text


def test_text_truncation(iris_clf):
    text = export_text(iris_clf, max_depth=1)
    lines = text.splitlines()
    truncated = [line for line in lines if "truncated branch of depth" in line]
    assert truncated
    for line in lines:
        # Nothing deeper than max_depth + 1 levels of indentation is printed.
        assert line.count("|") <= 3
    for line in truncated:
        assert line.startswith("|   |   |--- truncated branch of depth ")
    # max_depth=0 keeps only the root split and its children.
    shallow = export_text(iris_clf, max_depth=0).splitlines()
    assert sum(line.startswith("|---") for line in shallow) == 2
    assert all(line.count("|") <= 2 for line in shallow)


def test_text_truncation_depth_counts_hidden_levels():
    model = chain_classifier(depth=4)
    lines = export_text(model, max_depth=1).splitlines()
    assert lines == [
        "|--- feature_0 <= 0.00",
        "|   |--- class: A",
        "|--- feature_0 >  0.00",
        "|   |--- feature_0 <= 1.00",
        "|   |   |--- class: A",
        "|   |--- feature_0 >  1.00",
        "|   |   |--- truncated branch of depth 3",
    ]


def test_text_deep_tree_needs_no_recursion():
    model = chain_classifier(depth=3000)
    lines = export_text(model, max_depth=5000).splitlines()
    assert len(lines) == 3 * 3000 + 1
    assert lines[-1] == "|   " * 3000 + "|--- class: B"
    assert lines[-2] == "|   " * 2999 + "|--- feature_0 >  2999.00"


def test_text_single_leaf_tree():
    X = np.zeros((6, 2))
    y = np.array([1, 1, 1, 1, 1, 1])
    clf = DecisionTreeClassifier().fit(X, y)
    assert export_text(clf) == "|--- class: 1\n"


def test_text_categorical_and_missing_markers():
    text = export_text(fake_classifier(has_missing=True))
    assert text.splitlines() == [
        "|--- color in {0, 2} (or missing)",
        "|   |--- class: A",
        "|--- color not in {0, 2}",
        "|   |--- size <= 1.50",
        "|   |   |--- class: B",
        "|   |--- size >  1.50 (or missing)",
        "|   |   |--- class: A",
    ]


def test_text_no_missing_markers_without_missing_at_fit(iris_clf):
    text = export_text(fake_classifier(has_missing=False))
    assert "missing" not in text
    assert text.splitlines()[0] == "|--- color in {0, 2}"
    # Real trees fitted without NaN never get the marker, whatever missing_go_to_left says.
    assert "missing" not in export_text(iris_clf)


def categorical_data(with_nan):
    """Feature 0 numeric (NaN in 20% of rows when asked), feature 1 a category code 0..3."""
    rng = np.random.default_rng(0)
    n = 400
    color = rng.integers(0, 4, n).astype(float)
    size = rng.normal(size=n)
    y = ((color == 1) | (color == 3)).astype(int)
    y = np.where(rng.random(n) < 0.1, 1 - y, y)
    if with_nan:
        size[rng.random(n) < 0.2] = np.nan
    return np.column_stack([size, color]), y


def code_set(codes):
    return "{" + ", ".join(str(int(c)) for c in sorted(codes)) + "}"


def test_text_silva_categorical_split_and_missing_routing():
    X, y = categorical_data(with_nan=True)
    clf = DecisionTreeClassifier(categorical_features=[1], max_depth=2, random_state=0)
    clf.fit(X, y)
    tree = clf.tree_
    assert tree.is_categorical[0] and tree.feature[0] == 1
    lines = export_text(clf, feature_names=["size", "color"]).splitlines()
    cats = code_set(tree.categories_left(0))
    top = [line for line in lines if line.startswith("|---")]
    goes_left = bool(tree.missing_go_to_left[0])
    assert top == [
        f"|--- color in {cats}" + (" (or missing)" if goes_left else ""),
        f"|--- color not in {cats}" + ("" if goes_left else " (or missing)"),
    ]
    # Every split line pair marks exactly one side, and the marked side is where NaN goes.
    internal = np.flatnonzero(tree.children_left != -1)
    assert sum("(or missing)" in line for line in lines) == len(internal)
    for node in internal:
        row = np.zeros((1, 2))
        row[0, tree.feature[node]] = np.nan
        path = clf.decision_path(row).indices
        if node in path:
            went_left = tree.children_left[node] in path
            assert went_left == bool(tree.missing_go_to_left[node])


def test_text_silva_no_missing_markers_without_nan():
    X, y = categorical_data(with_nan=False)
    clf = DecisionTreeClassifier(categorical_features=[1], max_depth=2, random_state=0)
    text = export_text(clf.fit(X, y))
    assert "missing" not in text
    assert text.splitlines()[0].startswith("|--- feature_1 in {")
    assert "|--- feature_1 not in {" in text


def test_text_silva_categorical_shows_only_seen_codes():
    X, y = categorical_data(with_nan=True)
    clf = DecisionTreeClassifier(categorical_features=[1], max_depth=1, random_state=0)
    clf.fit(X, y)
    assert set(clf.tree_.categories_left(0)) <= {0, 1, 2, 3}
    first = export_text(clf).splitlines()[0]
    shown = {int(c) for c in first.split("{")[1].split("}")[0].split(", ")}
    assert shown <= {0, 1, 2, 3}


def test_graphviz_silva_categorical():
    X, y = categorical_data(with_nan=True)
    clf = DecisionTreeClassifier(categorical_features=[1], max_depth=2, random_state=0)
    clf.fit(X, y)
    nodes, edges = parse_dot(export_graphviz(clf, feature_names=["size", "color"]))
    side = "left" if clf.tree_.missing_go_to_left[0] else "right"
    cats = code_set(clf.tree_.categories_left(0))
    assert nodes[0][0].startswith(f"color in {cats}\\nmissing -> {side}\\n")
    assert len(nodes) == clf.tree_.node_count and len(edges) == clf.tree_.node_count - 1


def test_text_show_weights_fake_tree():
    text = export_text(fake_classifier(), show_weights=True, decimals=1)
    assert "|   |--- weights: [8.0, 2.0] class: A" in text.splitlines()
    assert "|   |   |--- weights: [0.8, 7.2] class: B" in text.splitlines()


@pytest.mark.parametrize("exporter", [export_text, export_graphviz])
def test_wrong_feature_names_length(iris_clf, exporter):
    with pytest.raises(ValueError, match="feature_names must contain 4 elements, got 3"):
        exporter(iris_clf, feature_names=["a", "b", "c"])
    with pytest.raises(ValueError, match="feature_names"):
        exporter(iris_clf, feature_names="abcd")


@pytest.mark.parametrize("exporter", [export_text, export_graphviz])
def test_wrong_class_names_length(iris_clf, exporter):
    with pytest.raises(ValueError, match="class_names must contain 3 elements, got 2"):
        exporter(iris_clf, class_names=["x", "y"])


@pytest.mark.parametrize("exporter", [export_text, export_graphviz])
@pytest.mark.parametrize("estimator", [DecisionTreeClassifier, DecisionTreeRegressor])
def test_not_fitted(exporter, estimator):
    with pytest.raises(NotFittedError, match="not fitted"):
        exporter(estimator())


@pytest.mark.parametrize(
    "kwargs", [{"max_depth": -1}, {"spacing": 0}, {"decimals": -2}, {"max_depth": 1.5}]
)
def test_text_bad_options(iris_clf, kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        export_text(iris_clf, **kwargs)


# --------------------------------------------------------------------------------------
# export_graphviz
# --------------------------------------------------------------------------------------

NODE_RE = re.compile(r'^(\d+) \[label="((?:[^"\\]|\\.)*)"(?:, fillcolor="(#[0-9a-f]{6})")?\] ;$')
EDGE_RE = re.compile(r"^(\d+) -> (\d+)(?: \[.*\])? ;$")


def parse_dot(dot):
    """Check DOT structure line by line; return ({id: (label, colour)}, [(src, dst)])."""
    assert dot.startswith("digraph Tree {\n")
    assert dot.rstrip().endswith("}")
    # Braces balance outside quoted strings (labels may hold "{0, 2}" category sets).
    unquoted = re.sub(r'"(?:[^"\\]|\\.)*"', '""', dot)
    assert unquoted.count("{") == unquoted.count("}") == 1
    assert dot.count('"') % 2 == 0
    nodes, edges = {}, []
    for line in dot.strip().splitlines()[1:-1]:
        if line.startswith(("node [", "edge [")):
            continue
        m = NODE_RE.match(line)
        if m:
            node_id = int(m.group(1))
            assert node_id not in nodes, f"node {node_id} declared twice"
            nodes[node_id] = (m.group(2), m.group(3))
            continue
        m = EDGE_RE.match(line)
        assert m, f"unparsable DOT line: {line!r}"
        edges.append((int(m.group(1)), int(m.group(2))))
    for src, dst in edges:
        assert src in nodes and dst in nodes
    return nodes, edges


def test_graphviz_structure_classifier(iris_clf):
    tree = iris_clf.tree_
    dot = export_graphviz(iris_clf)
    nodes, edges = parse_dot(dot)
    assert sorted(nodes) == list(range(tree.node_count))
    assert len(edges) == tree.node_count - 1
    expected_edges = {
        (p, int(c))
        for p in range(tree.node_count)
        for c in (tree.children_left[p], tree.children_right[p])
        if c != -1
    }
    assert set(edges) == expected_edges
    root_label = nodes[0][0].split("\\n")
    assert root_label[0] == f"feature_{tree.feature[0]} <= {round(tree.threshold[0], 3):g}"
    assert root_label[1].startswith("gini = ")
    assert root_label[2] == f"samples = {tree.n_node_samples[0]}"
    assert root_label[3] == "value = [50, 50, 50]"
    assert all(label.split("\\n")[-1].startswith("class = ") for label, _ in nodes.values())
    assert 'headlabel="True"' in dot and 'headlabel="False"' in dot


def test_graphviz_filled_regressor(diabetes_reg):
    tree = diabetes_reg.tree_
    dot = export_graphviz(diabetes_reg, filled=True, rounded=True, node_ids=True, precision=2)
    nodes, edges = parse_dot(dot)
    assert len(nodes) == tree.node_count and len(edges) == tree.node_count - 1
    colours = {node: colour for node, (_, colour) in nodes.items()}
    assert all(colours.values())
    # The node with the largest prediction gets the strongest colour, the smallest white.
    preds = tree.value[:, 0, 0]
    assert colours[int(np.argmin(preds))] == "#ffffff"
    assert colours[int(np.argmax(preds))] != "#ffffff"
    assert 'style="filled, rounded"' in dot and "helvetica" in dot
    for node, (label, _) in nodes.items():
        assert label.startswith(f"node #{node}\\n")
        assert f"{diabetes_reg.criterion} = " in label
        assert label.endswith(f"value = {round(float(preds[node]), 2):g}")


def test_graphviz_filled_classifier_colours(iris_clf):
    nodes, _ = parse_dot(export_graphviz(iris_clf, filled=True, class_names=["s", "ve", "vi"]))
    tree = iris_clf.tree_
    pure_leaves = [i for i in range(tree.node_count) if tree.value[i, 0].max() == 1.0]
    by_class = {}
    for i in pure_leaves:
        by_class.setdefault(int(np.argmax(tree.value[i, 0])), set()).add(nodes[i][1])
    # Pure leaves of one class share a colour; different classes get different colours.
    assert all(len(c) == 1 for c in by_class.values())
    assert len({next(iter(c)) for c in by_class.values()}) == len(by_class) == 3
    assert nodes[0][1] == "#ffffff"  # the root is a perfectly balanced mix
    assert {label.split("class = ")[1] for label, _ in nodes.values()} == {"s", "ve", "vi"}


def test_graphviz_options(iris_clf):
    dot = export_graphviz(iris_clf, impurity=False, proportion=True, max_depth=1)
    nodes, edges = parse_dot(dot)
    assert "gini" not in dot
    assert nodes[0][0].split("\\n")[1] == "samples = 100%"
    assert "value = [0.333, 0.333, 0.333]" in nodes[0][0]
    truncated = [n for n, (label, _) in nodes.items() if label == "(...)"]
    assert truncated
    # Truncated nodes are drawn but never expanded.
    assert not {src for src, _ in edges} & set(truncated)


def test_graphviz_categorical_and_missing_and_escaping():
    model = fake_classifier()
    model.feature_names_in_ = np.array(['size "cm"', "color"], dtype=object)
    nodes, edges = parse_dot(export_graphviz(model, filled=True))
    assert nodes[0][0].startswith("color in {0, 2}\\nmissing -> left\\n")
    assert nodes[2][0].startswith('size \\"cm\\" <= 1.5\\nmissing -> right\\n')
    assert nodes[1][0] == "gini = 0.25\\nsamples = 10\\nvalue = [8, 2]\\nclass = A"
    assert edges == [(0, 1), (0, 2), (2, 3), (2, 4)]


def test_graphviz_out_file(iris_clf, tmp_path):
    expected = export_graphviz(iris_clf, filled=True)
    path = tmp_path / "tree.dot"
    assert export_graphviz(iris_clf, path, filled=True) is None
    assert path.read_text(encoding="utf-8") == expected
    assert export_graphviz(iris_clf, str(path)) is None
    assert path.read_text(encoding="utf-8") == export_graphviz(iris_clf)
    buf = io.StringIO()
    assert export_graphviz(iris_clf, buf, filled=True) is None
    assert buf.getvalue() == expected


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
def test_graphviz_renders_with_dot(iris_clf):
    dot = export_graphviz(iris_clf, filled=True, rounded=True, node_ids=True)
    result = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "<svg" in result.stdout


# --------------------------------------------------------------------------------------
# A tree instead of an estimator
# --------------------------------------------------------------------------------------


def test_text_of_a_tree_matches_its_estimator(iris_clf):
    names = ["sl", "sw", "pl", "pw"]
    expected = export_text(iris_clf, feature_names=names, class_names=["a", "b", "c"])
    assert export_text(iris_clf.tree_, feature_names=names,
                       class_names=["a", "b", "c"]) == expected
    # Without class names a tree's leaves print their values (class fractions here).
    text = export_text(iris_clf.tree_, feature_names=names, max_depth=1)
    assert text.splitlines()[1] == "|   |--- value: [1.00, 0.00, 0.00]"
    with pytest.raises(ValueError, match="feature_names must contain 4 elements, got 2"):
        export_text(iris_clf.tree_, feature_names=["a", "b"])


def test_text_of_a_tree_marks_missing_values_only_when_asked():
    tree = fake_classifier().tree_
    assert "missing" not in export_text(tree, feature_names=["size", "color"])
    text = export_text(tree, feature_names=["size", "color"], class_names=["A", "B"],
                       show_missing=True)
    assert text == export_text(fake_classifier(has_missing=True))


def test_graphviz_of_a_forest_member():
    from silva import RandomForestRegressor

    X, y = load_diabetes(return_X_y=True)
    forest = RandomForestRegressor(n_estimators=2, max_depth=2, random_state=0).fit(X, y)
    tree = forest.estimators_[0].tree_
    dot = export_graphviz(tree, impurity=False)
    assert f"0 [label=\"feature_{tree.feature[0]} <= " in dot
    assert dot.count(" -> ") == tree.node_count - 1
    assert "missing" not in dot
    assert export_graphviz(tree, show_missing=True).count("missing -> ") == \
        tree.node_count - tree.n_leaves


def test_a_tree_that_is_not_silvas_is_refused():
    model = fake_classifier()
    model.tree_ = object()
    with pytest.raises(TypeError, match="not a silva tree"):
        export_text(model)


def test_graphviz_prints_an_infinite_threshold():
    # A split that only separates missing values from the rest may have threshold inf.
    model = fake_classifier()
    tree = model.tree_
    tree.threshold[2] = np.inf
    assert "size <= inf" in export_graphviz(model)
    assert "size <= inf" in export_text(model)
