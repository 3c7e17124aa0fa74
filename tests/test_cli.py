"""Tests for the ``silva`` command line (silva.cli)."""

from __future__ import annotations

import io
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.datasets import load_breast_cancer

from silva import DecisionTreeClassifier, DecisionTreeRegressor, cli

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def demo_output():
    """stdout of ``silva demo`` (run once: it fits every demo model)."""
    buf = io.StringIO()
    old = sys.stdout
    sys.stdout = buf
    try:
        code = cli.main(["demo"])
    finally:
        sys.stdout = old
    return code, buf.getvalue()


def table_rows(output):
    """The data rows of the results table, split into cells."""
    lines = output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("dataset"))
    assert set(lines[header + 1].replace(" ", "")) == {"-"}
    rows = []
    for line in lines[header + 2 :]:
        if not line.strip():
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return lines[header], rows


def test_entries_use_silva_estimators():
    assert cli.DEMO_ENTRIES
    datasets = {entry.dataset for entry in cli.DEMO_ENTRIES}
    assert datasets == {"breast_cancer", "digits", "diabetes"}
    assert datasets <= set(cli.DATASETS)
    for entry in cli.DEMO_ENTRIES:
        est = entry.factory()
        expected = DecisionTreeRegressor if entry.dataset == "diabetes" else DecisionTreeClassifier
        assert type(est) is expected
        assert est.get_params()["random_state"] == 0
        assert entry.name == type(est).__name__
    # Factories build fresh estimators each call.
    first = cli.DEMO_ENTRIES[0]
    assert first.factory() is not first.factory()


def test_demo_exit_code_and_table(demo_output):
    code, out = demo_output
    assert code == 0
    header, rows = table_rows(out)
    assert header.split() == [
        "dataset", "model", "params", "metric", "test", "score", "fit", "ms", "leaves", "depth",
    ]  # fmt: skip
    assert len(rows) == len(cli.DEMO_ENTRIES)
    for row, entry in zip(rows, cli.DEMO_ENTRIES, strict=True):
        dataset, model, params, metric, score, fit_ms, leaves, depth = row
        assert dataset == entry.dataset
        assert model == entry.name
        assert params == cli.describe_params(entry.factory())
        score, fit_ms, leaves, depth = float(score), float(fit_ms), int(leaves), int(depth)
        assert fit_ms >= 0
        if dataset == "diabetes":
            assert metric == "R2"
            assert -1.0 < score <= 1.0
        else:
            assert metric == "accuracy"
            # Single trees do far better than chance on both datasets.
            assert score > (0.8 if dataset == "breast_cancer" else 0.6)
        assert leaves >= 2 and depth >= 1
        if "max_depth=4" in params:
            assert depth <= 4 and leaves <= 16
    # A limited-depth setting really is in the list, next to an unlimited one.
    assert any(r[2] == "defaults" for r in rows)
    assert any("max_depth=4" in r[2] for r in rows)
    assert any("criterion='entropy'" in r[2] for r in rows)


def test_demo_prints_the_top_of_a_tree(demo_output):
    _, out = demo_output
    names = list(load_breast_cancer().feature_names)
    tree_lines = [line for line in out.splitlines() if line.startswith("|")]
    assert tree_lines, "no export_text printout"
    # The printout starts with the root split, named by the dataset's feature names.
    first = tree_lines[0]
    match = re.fullmatch(r"\|--- (.+) <= (-?\d+\.\d\d)", first)
    assert match and match.group(1) in names
    # It stops at depth 3: at most four split levels plus leaves or truncation markers.
    assert max(line.count("|") for line in tree_lines) <= 5
    assert any("truncated branch of depth" in line for line in tree_lines)
    # Leaves are labelled with the dataset's class names, not the integer targets.
    leaves = {line.split("class: ")[1] for line in tree_lines if "class: " in line}
    assert leaves and leaves <= {"malignant", "benign"}
    assert "Tree for breast_cancer" in out


def test_demo_tree_matches_export_text():
    # Small custom entry list: the printout is exactly export_text of the fitted tree.
    entries = [cli.DemoEntry("breast_cancer", "DecisionTreeClassifier", cli._clf(max_depth=3))]
    buf = io.StringIO()
    results = cli.run_demo(entries, max_depth_shown=1, warm_up=False, out=buf)
    assert len(results) == 1 and results[0]["depth"] <= 3
    data = cli.load_dataset("breast_cancer")
    est = entries[0].factory().fit(data.X_train, data.y_train)
    assert cli._class_names(est, data) == ["malignant", "benign"]
    expected = cli.export_text(
        est, feature_names=data.feature_names, class_names=["malignant", "benign"], max_depth=1
    )
    assert buf.getvalue().endswith(expected)
    assert "(fit times exclude" not in buf.getvalue()


def test_max_depth_shown_option(capsys, monkeypatch):
    entry = cli.DemoEntry("diabetes", "DecisionTreeRegressor", cli._reg())
    monkeypatch.setattr(cli, "DEMO_ENTRIES", [entry])
    assert cli.main(["demo", "--max-depth-shown", "0", "--no-warm-up"]) == 0
    out = capsys.readouterr().out
    tree_lines = [line for line in out.splitlines() if line.startswith("|")]
    assert len(tree_lines) == 4
    assert tree_lines[0].startswith("|--- ") and " <= " in tree_lines[0]
    assert all(line.count("|") <= 2 for line in tree_lines)
    assert "Tree for diabetes" in out


def test_load_dataset_split_is_fixed():
    a = cli.load_dataset("diabetes")
    b = cli.load_dataset("diabetes")
    assert (a.X_train == b.X_train).all() and (a.y_test == b.y_test).all()
    assert len(a.y_test) == math.ceil(0.25 * (len(a.y_train) + len(a.y_test)))
    with pytest.raises(ValueError, match="unknown dataset"):
        cli.load_dataset("nope")


def test_help_exits_zero(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    assert "demo" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        cli.main(["demo", "--help"])
    assert exc.value.code == 0
    assert "--max-depth-shown" in capsys.readouterr().out


def test_bad_arguments_exit_two(capsys):
    for argv in ([], ["demo", "--max-depth-shown", "-1"], ["frobnicate"]):
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        assert exc.value.code == 2
    capsys.readouterr()


def test_module_help_subprocess():
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run(
        [sys.executable, "-m", "silva.cli", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "usage: silva" in result.stdout and "demo" in result.stdout
