"""export_text and export_graphviz on multiway trees (ID3, C4.5)."""

import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer

from silva.classic import C45Classifier, ID3Classifier
from silva.export import export_graphviz, export_text

GOLF = pd.DataFrame({
    "outlook": ["sunny"] * 5 + ["overcast"] * 4 + ["rain"] * 5,
    "humidity": [70.0, 90, 85, 95, 70, 90, 78, 65, 75, 80, 70, 80, 80, 96],
    "windy": ["true", "true", "false", "false", "false", "true", "false", "true", "false",
              "true", "true", "false", "false", "false"],
})
PLAY = ["yes", "no", "no", "no", "yes", "yes", "yes", "yes", "yes", "no", "no", "yes", "yes",
        "yes"]


@pytest.fixture(scope="module")
def c45():
    return C45Classifier(confidence=1.0).fit(GOLF, PLAY)


def test_text_has_one_line_per_branch_with_thresholds(c45):
    text = export_text(c45, show_weights=True, decimals=1)
    assert text.splitlines() == [
        "|--- outlook = overcast",
        "|   |--- weights: [0.0, 4.0] class: yes",
        "|--- outlook = rain",
        "|   |--- windy = false",
        "|   |   |--- weights: [0.0, 3.0] class: yes",
        "|   |--- windy = true",
        "|   |   |--- weights: [2.0, 0.0] class: no",
        "|--- outlook = sunny",
        "|   |--- humidity <= 75.0",
        "|   |   |--- weights: [0.0, 2.0] class: yes",
        "|   |--- humidity >  75.0",
        "|   |   |--- weights: [3.0, 0.0] class: no",
    ]


def test_text_truncates_and_renames(c45):
    text = export_text(c45, max_depth=0, feature_names=["o", "h", "w"],
                       class_names=["N", "Y"])
    assert "|--- o = rain\n|   |--- truncated branch of depth 2\n" in text
    assert "class: Y" in text
    with pytest.raises(ValueError, match="feature_names"):
        export_text(c45, feature_names=["only_one"])


def test_text_shows_intervals_and_missing_branches_of_id3():
    X = np.array([[0.0], [1.0], [2.0], [3.0], [np.nan], [np.nan]])
    model = ID3Classifier(n_bins=2).fit(X, [0, 0, 1, 1, 2, 2])
    lines = export_text(model).splitlines()
    assert lines[0] == "|--- feature_0 in (-inf, 1.50]"
    assert lines[2] == "|--- feature_0 in (1.50, inf]"
    assert lines[4] == "|--- feature_0 is missing"
    assert lines[5] == "|   |--- class: 2"


def test_graphviz_labels_edges_with_branch_tests(c45):
    dot = export_graphviz(c45, filled=True, node_ids=True)
    assert dot.startswith("digraph Tree {") and dot.rstrip().endswith("}")
    tree = c45.tree_
    edges = re.findall(r'(\d+) -> (\d+) \[label="([^"]*)"\]', dot)
    assert len(edges) == tree.node_count - 1
    assert {label for _, _, label in edges} == {
        "= overcast", "= rain", "= sunny", "= false", "= true", "<= 75", "> 75"}
    for parent, child, _ in edges:
        assert tree.parent[int(child)] == int(parent)
    assert "outlook?" in dot and "entropy = 0.94" in dot


def test_graphviz_renders(tmp_path):
    if shutil.which("dot") is None:
        pytest.skip("graphviz's dot is not installed")
    X, y = load_breast_cancer(return_X_y=True)
    dot = export_graphviz(C45Classifier().fit(X, y), filled=True, rounded=True)
    path = tmp_path / "tree.dot"
    path.write_text(dot)
    subprocess.run(["dot", "-Tsvg", str(path), "-o", str(tmp_path / "tree.svg")], check=True)
