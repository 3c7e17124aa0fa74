"""Tests for the ``silva`` command line (silva.cli)."""

from __future__ import annotations

import argparse
import io
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator, is_classifier
from sklearn.datasets import load_breast_cancer

from silva import DecisionTreeClassifier, DecisionTreeRegressor, cli
from silva.cli import demo, tables
from silva.export import export_text

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
        assert type(est).__module__.startswith("silva.")
        assert is_classifier(est) == (entry.dataset != "diabetes")
        if "random_state" in est.get_params():
            assert est.get_params()["random_state"] == 0
        assert entry.name == type(est).__name__
    # The decision trees are there; factories build fresh estimators each call.
    assert {type(e.factory()) for e in cli.DEMO_ENTRIES} >= {DecisionTreeClassifier,
                                                             DecisionTreeRegressor}
    first = cli.DEMO_ENTRIES[0]
    assert first.factory() is not first.factory()


def test_demo_exit_code_and_table(demo_output):
    code, out = demo_output
    assert code == 0
    header, rows = table_rows(out)
    assert header.split() == [
        "dataset", "model", "params", "metric", "test", "score", "fit", "ms", "trees",
        "leaves", "depth",
    ]  # fmt: skip
    assert len(rows) == len(cli.DEMO_ENTRIES)
    for row, entry in zip(rows, cli.DEMO_ENTRIES, strict=True):
        dataset, model, params, metric, score, fit_ms, trees, leaves, depth = row
        assert dataset == entry.dataset
        assert model == entry.name
        assert params == cli.describe_params(entry.factory())
        score, fit_ms, leaves, depth = float(score), float(fit_ms), int(leaves), int(depth)
        assert fit_ms >= 0 and int(trees) >= 1
        if dataset == "diabetes":
            assert metric == "R2"
            assert -1.0 < score <= 1.0
        else:
            assert metric == "accuracy"
            # Single trees do far better than chance on both datasets.
            assert score > (0.8 if dataset == "breast_cancer" else 0.6)
        assert leaves >= 2 and depth >= 1
        if "max_depth=4" in params and int(trees) == 1:
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
    entries = [cli.DemoEntry("breast_cancer", "DecisionTreeClassifier", demo._clf(max_depth=3))]
    buf = io.StringIO()
    results = cli.run_demo(entries, max_depth_shown=1, warm_up=False, out=buf)
    assert len(results) == 1 and results[0]["depth"] <= 3
    data = cli.load_dataset("breast_cancer")
    est = entries[0].factory().fit(data.X_train, data.y_train)
    assert demo._class_names(est, data) == ["malignant", "benign"]
    expected = export_text(
        est, feature_names=data.feature_names, class_names=["malignant", "benign"], max_depth=1
    )
    assert buf.getvalue().endswith(expected)
    assert "(fit times exclude" not in buf.getvalue()


def test_max_depth_shown_option(capsys, monkeypatch):
    entry = cli.DemoEntry("diabetes", "DecisionTreeRegressor", demo._reg())
    monkeypatch.setattr(demo, "DEMO_ENTRIES", [entry])
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


# ------------------------------------------------------- fit / predict / evaluate / show


def run_cli(argv, capsys):
    """(exit code, stdout, stderr) of ``silva argv``."""
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A CSV and a Parquet file: text, bool and numeric columns, missing values, a text
    class target and a float regression target."""
    pd = pytest.importorskip("pandas")
    import numpy as np

    rng = np.random.RandomState(0)
    n = 240
    df = pd.DataFrame({
        "color": rng.choice(["red", "green", "blue"], n),
        "x": rng.rand(n).round(4),
        "k": rng.randint(0, 5, n),
        "flag": rng.rand(n) > 0.5,
    })
    df["label"] = np.where((df["color"] == "green") | (df["x"] > 0.7), "yes", "no")
    df["price"] = (df["x"] * 10 + df["k"] + rng.rand(n)).round(3)
    df.loc[::9, "x"] = np.nan
    folder = tmp_path_factory.mktemp("cli")
    df.to_csv(folder / "train.csv", index=False)
    df.to_parquet(folder / "train.parquet")
    df.drop(columns=["label"]).to_csv(folder / "features.csv", index=False)
    df[["k", "x", "price"]].to_csv(folder / "numeric.csv", index=False)
    return folder, df


def test_fit_predict_evaluate_show_classification(data_dir, capsys, tmp_path):
    import numpy as np

    folder, df = data_dir
    model_path = tmp_path / "model.silva"
    code, out, err = run_cli(["fit", folder / "train.csv", "--target", "label", "--param",
                              "max_depth=4", "--out", model_path], capsys)
    assert code == 0, err
    assert "DecisionTreeClassifier: classification of 'label' (non-numeric values" in out
    assert "2 categorical" in out and model_path.exists()
    from silva.persistence import load, read_metadata

    model = load(model_path)
    assert model.max_depth == 4 and model.random_state == 0
    assert model.categorical_features == "auto"
    assert model.is_categorical_.tolist() == [True, False, False, True, False]
    assert read_metadata(model_path)["user"]["target"] == "label"
    features = df.drop(columns=["label"])

    # predict: CSV on stdout, one row per input row, the model's own predictions; the
    # target column in the file is ignored, and a file without it works too
    for data in ("train.csv", "features.csv"):
        code, out, err = run_cli(["predict", model_path, folder / data], capsys)
        assert code == 0, err
        lines = out.splitlines()
        assert lines[0] == "prediction" and len(lines) == len(df) + 1
        assert lines[1:] == model.predict(features).tolist()
    code, out, _ = run_cli(["predict", model_path, folder / "train.csv", "--proba"], capsys)
    rows = [line.split(",") for line in out.splitlines()]
    assert rows[0] == ["proba_no", "proba_yes"]
    proba = np.array(rows[1:], dtype=float)
    np.testing.assert_allclose(proba, model.predict_proba(features))
    target = tmp_path / "predictions.csv"
    assert run_cli(["predict", model_path, folder / "train.csv", "--out", target],
                   capsys)[0] == 0
    assert target.read_text().splitlines()[1:] == model.predict(features).tolist()

    # evaluate: a metrics table whose accuracy is the model's
    code, out, err = run_cli(["evaluate", model_path, folder / "train.csv"], capsys)
    assert code == 0, err
    values = dict(re.findall(r"^(accuracy|log loss|ROC AUC)\s+(\S+)$", out, re.M))
    assert float(values["accuracy"]) == pytest.approx(
        model.score(features, df["label"]), abs=1e-4)
    assert set(values) == {"accuracy", "log loss", "ROC AUC"}

    # show: class, parameters, features, importances, the first levels of the tree
    code, out, err = run_cli(["show", model_path, "--depth", "1"], capsys)
    assert code == 0, err
    assert out.startswith("DecisionTreeClassifier (model file format 1")
    assert "parameters: categorical_features='auto', max_depth=4" in out
    assert "features: 5: color, x, k, flag, price" in out and "classes: no, yes" in out
    top = features.columns[np.argmax(model.feature_importances_)]
    assert re.search(rf"^{re.escape(top)}\s+0\.\d{{4}}$", out, re.M)
    tree_lines = [line for line in out.splitlines() if line.startswith("|")]
    assert tree_lines and all(line.count("|") <= 3 for line in tree_lines)


def test_fit_regression_from_parquet_and_task_override(data_dir, capsys, tmp_path):
    import numpy as np

    folder, df = data_dir
    path = tmp_path / "reg.silva"
    code, out, err = run_cli(["fit", folder / "train.parquet", "--target", "price",
                              "--param", "criterion='absolute_error'", "--param",
                              "min_samples_leaf=5", "--out", path], capsys)
    assert code == 0, err
    assert "DecisionTreeRegressor: regression of 'price'" in out
    from silva.persistence import load

    model = load(path)
    assert model.criterion == "absolute_error" and model.min_samples_leaf == 5
    code, out, _ = run_cli(["evaluate", path, folder / "train.csv", "--target", "price"],
                           capsys)
    assert code == 0
    r2 = float(re.search(r"^R2\s+(\S+)$", out, re.M).group(1))
    assert r2 == pytest.approx(model.score(df.drop(columns=["price"]), df["price"]), abs=1e-4)
    # k holds five integers: classification unless told otherwise
    code, out, _ = run_cli(["fit", folder / "numeric.csv", "--target", "k", "--out",
                            tmp_path / "k.silva"], capsys)
    assert code == 0 and "classification of 'k' (5 distinct integer values)" in out
    code, out, _ = run_cli(["fit", folder / "numeric.csv", "--target", "k", "--task",
                            "regression", "--out", tmp_path / "k.silva"], capsys)
    assert code == 0 and "regression of 'k' (--task)" in out
    code, out, _ = run_cli(["predict", tmp_path / "k.silva", folder / "numeric.csv"], capsys)
    predictions = np.array(out.splitlines()[1:], dtype=float)
    assert code == 0 and len(predictions) == len(df)
    assert type(load(tmp_path / "k.silva")) is DecisionTreeRegressor
    np.testing.assert_allclose(predictions, df["k"])  # a fully grown tree fits k exactly


def test_infer_task():
    import numpy as np

    assert cli.infer_task(np.array(["a", "b"]))[0] == "classification"
    assert cli.infer_task(np.array([True, False]))[0] == "classification"
    assert cli.infer_task(np.array([0, 1, 2, 1]))[0] == "classification"
    assert cli.infer_task(np.array([0.0, 1.0, np.nan]))[0] == "classification"
    assert cli.infer_task(np.arange(21))[0] == "regression"  # too many integers
    assert cli.infer_task(np.array([0.5, 1.0, 2.0])) == ("regression",
                                                          "3 distinct numeric values")


def test_parse_param():
    assert cli.parse_param("max_depth=3") == ("max_depth", 3)
    assert cli.parse_param("max_features=0.5") == ("max_features", 0.5)
    assert cli.parse_param("max_depth=None") == ("max_depth", None)
    assert cli.parse_param("categorical_features=[0, 2]") == ("categorical_features", [0, 2])
    assert cli.parse_param("criterion=entropy") == ("criterion", "entropy")
    assert cli.parse_param("criterion='entropy'") == ("criterion", "entropy")
    assert cli.parse_param("max_depth=abc") == ("max_depth", "abc")
    for bad in ("max_depth", "=3", "two words=1"):
        with pytest.raises(argparse.ArgumentTypeError, match="key=value"):
            cli.parse_param(bad)


@pytest.mark.parametrize(("argv", "message"), [
    (["fit", "{d}/train.csv", "--target", "nope", "--out", "{t}/m.silva"],
     r"column 'nope' not found in .*train.csv \(its columns: color, x, k, flag, label"),
    (["fit", "{d}/absent.csv", "--target", "label", "--out", "{t}/m.silva"],
     r"cannot read .*absent.csv: no such file"),
    (["fit", "{d}/garbage.csv", "--target", "label", "--out", "{t}/m.silva"],
     r"cannot read .*garbage.csv as CSV"),
    (["fit", "{d}/garbage.parquet", "--target", "label", "--out", "{t}/m.silva"],
     r"cannot read .*garbage.parquet as Parquet"),
    (["fit", "{d}/train.csv", "--target", "label", "--param", "max_depth=abc", "--out",
      "{t}/m.silva"], r"cannot fit DecisionTreeClassifier \(max_depth='abc'\): max_depth "
                      r"must be an int"),
    (["fit", "{d}/train.csv", "--target", "label", "--param", "max_depth=0", "--out",
      "{t}/m.silva"], r"max_depth must be >= 1; got 0"),
    (["fit", "{d}/train.csv", "--target", "label", "--param", "depth=3", "--out",
      "{t}/m.silva"], r"unknown parameter \['depth'\] for DecisionTreeClassifier; valid: "),
    (["fit", "{d}/train.csv", "--target", "label", "--task", "regression", "--out",
      "{t}/m.silva"], r"target 'label' is not numeric; use --task classification"),
    (["fit", "{d}/train.csv", "--target", "price", "--model", "id3", "--task",
      "regression", "--out", "{t}/m.silva"], r"model 'id3' does not do regression"),
    (["fit", "{d}/train.csv", "--target", "label", "--out", "{d}/no/such/dir/m.silva"],
     r"cannot write .*m.silva"),
    (["predict", "{d}/train.csv", "{d}/train.csv"], r"cannot load model .*train.csv: .*not a "
                                                    r"silva model file"),
    (["predict", "{d}/corrupt.silva", "{d}/train.csv"], r"cannot load model .*corrupt.silva"
                                                        r": .*(corrupted|truncated)"),
    (["predict", "{d}/absent.silva", "{d}/train.csv"], r"cannot read model .*: no such file"),
    (["predict", "{d}/model.silva", "{d}/numeric.csv"],
     r"feature columns 'color', 'flag' not found in .*numeric.csv"),
    (["evaluate", "{d}/model.silva", "{d}/features.csv"], r"column 'label' not found"),
    (["show", "{d}/garbage.csv"], r"cannot load model"),
])
def test_errors_exit_one_with_a_message(data_dir, capsys, tmp_path, argv, message):
    folder, _ = data_dir
    if not (folder / "model.silva").exists():
        (folder / "garbage.csv").write_bytes(b'a,b\n1,2,3\n"unclosed\n')
        (folder / "garbage.parquet").write_bytes(b"PAR1 not really")
        assert cli.main(["fit", str(folder / "train.csv"), "--target", "label", "--out",
                         str(folder / "model.silva")]) == 0
        data = (folder / "model.silva").read_bytes()
        (folder / "corrupt.silva").write_bytes(data[:100] + b"x" + data[101:])
        capsys.readouterr()
    argv = [a.format(d=folder, t=tmp_path) for a in argv]
    code, out, err = run_cli(argv, capsys)
    assert code == 1
    assert err.startswith(f"silva {argv[0]}: error: ") and err.count("\n") == 1
    assert re.search(message, err), err


def test_bad_param_syntax_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["fit", "x.csv", "--target", "y", "--param", "max_depth", "--out", "m"])
    assert exc.value.code == 2
    assert "expected key=value, got 'max_depth'" in capsys.readouterr().err


def test_models_missing_from_the_build_are_named(data_dir, capsys, tmp_path, monkeypatch):
    folder, _ = data_dir
    monkeypatch.setitem(cli.MODELS, "gbm", ("silva.not_written_yet:Booster", None))
    code, _, err = run_cli(["fit", folder / "train.csv", "--target", "label", "--model",
                            "gbm", "--out", tmp_path / "m.silva"], capsys)
    assert code == 1
    assert "model 'gbm' is not available in this build" in err
    monkeypatch.setitem(cli.MODELS, "gbm", ("silva.decision_tree:NoSuchClass", None))
    assert "model 'gbm' is not available in this build" in run_cli(
        ["fit", folder / "train.csv", "--target", "label", "--model", "gbm", "--out",
         tmp_path / "m.silva"], capsys)[2]


def test_registry_names_classes_lazily():
    assert set(cli.MODELS) >= {"tree", "id3", "c45", "rf", "et", "bagging", "gbm", "ada",
                               "stack"}
    for classification, regression in cli.MODELS.values():
        for target in (classification, regression):
            assert target is None or re.fullmatch(r"silva\.[\w.]+:\w+", target)
    assert cli.resolve_model("tree", "regression") is DecisionTreeRegressor


def test_plain_csv_without_pandas(data_dir, capsys, tmp_path, monkeypatch):
    import numpy as np

    folder, df = data_dir
    monkeypatch.setattr(tables, "_pandas", lambda: None)
    path = tmp_path / "plain.silva"
    code, out, err = run_cli(["fit", folder / "numeric.csv", "--target", "price", "--out",
                              path], capsys)
    assert code == 0, err
    assert "regression of 'price'" in out and "0 categorical" in out
    code, out, err = run_cli(["predict", path, folder / "numeric.csv"], capsys)
    assert code == 0, err
    predicted = np.array(out.splitlines()[1:], dtype=float)
    from silva.persistence import load

    expected = load(path).predict(df[["k", "x"]].to_numpy())
    np.testing.assert_allclose(predicted, expected)
    code, _, err = run_cli(["fit", folder / "train.csv", "--target", "label", "--out", path],
                           capsys)
    assert code == 1 and "columns ['color', 'flag'] of" in err and "pip install" in err


def test_demo_writes_plots(tmp_path, capsys, monkeypatch):
    entries = [cli.DemoEntry("breast_cancer", "DecisionTreeClassifier", demo._clf(max_depth=3)),
               cli.DemoEntry("diabetes", "DecisionTreeRegressor", demo._reg(max_depth=3))]
    monkeypatch.setattr(demo, "DEMO_ENTRIES", entries)
    plots = tmp_path / "plots"
    assert cli.main(["demo", "--no-warm-up", "--plots", str(plots)]) == 0
    out = capsys.readouterr().out
    written = sorted(p.name for p in plots.iterdir())
    assert written == ["00_breast_cancer_DecisionTreeClassifier_importance.png",
                       "00_breast_cancer_DecisionTreeClassifier_tree.png",
                       "01_diabetes_DecisionTreeRegressor_importance.png",
                       "01_diabetes_DecisionTreeRegressor_tree.png",
                       "boundary_breast_cancer_DecisionTreeClassifier.png"]
    assert f"5 plots written to {plots}" in out
    for path in plots.iterdir():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000


def test_exit_codes_in_a_subprocess(data_dir, tmp_path):
    folder, _ = data_dir
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run(
        [sys.executable, "-m", "silva.cli", "fit", str(folder / "train.csv"), "--target",
         "missing_column", "--out", str(tmp_path / "m.silva")],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert result.returncode == 1
    assert "column 'missing_column' not found" in result.stderr
    assert result.stdout == ""


class ForeignWrapper(BaseEstimator):
    """A model outside silva (so its file needs pickle), for --allow-pickle."""

    def fit(self, X, y):
        from sklearn.linear_model import LogisticRegression

        self.inner_ = LogisticRegression().fit(X.fillna(0.0), y)
        self.feature_names_in_ = self.inner_.feature_names_in_
        self.classes_ = self.inner_.classes_
        return self

    def predict(self, X):
        return self.inner_.predict(X.fillna(0.0))


def test_allow_pickle_is_needed_at_both_ends(data_dir, capsys, tmp_path, monkeypatch):
    folder, _ = data_dir
    monkeypatch.setitem(cli.MODELS, "stack", (f"{__name__}:ForeignWrapper", None))
    path = tmp_path / "foreign.silva"
    fit = ["fit", folder / "numeric.csv", "--target", "k", "--model", "stack", "--out", path]
    code, _, err = run_cli(fit, capsys)
    assert code == 1 and "non-silva class" in err and "add --allow-pickle" in err
    assert not path.exists()
    code, _, err = run_cli([*fit, "--allow-pickle"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["predict", path, folder / "numeric.csv"], capsys)
    assert code == 1 and "pass --allow-pickle for a file you trust" in err
    code, out, err = run_cli(["predict", path, folder / "numeric.csv", "--allow-pickle"],
                             capsys)
    assert code == 0, err
    assert len(out.splitlines()) == 241


def test_demo_covers_every_family():
    names = {entry.name for entry in cli.DEMO_ENTRIES}
    assert names >= {
        "DecisionTreeClassifier", "DecisionTreeRegressor", "ID3Classifier", "C45Classifier",
        "RandomForestClassifier", "RandomForestRegressor", "ExtraTreesClassifier",
        "ExtraTreesRegressor", "BaggingClassifier", "BaggingRegressor",
        "GradientBoostingClassifier", "GradientBoostingRegressor", "AdaBoostClassifier",
        "AdaBoostRegressor", "VotingClassifier", "StackingClassifier", "StackingRegressor",
    }  # fmt: skip


# ------------------------------------------------- what the CLI read (silva issue 22)


@pytest.fixture(scope="module")
def stray_cell(tmp_path_factory):
    """Train and test CSVs where one numeric column decides the label: a clean copy, one
    with a stray text cell in that column (data row 18), and the test file."""
    pd = pytest.importorskip("pandas")
    import numpy as np

    rng = np.random.RandomState(1)
    n = 800
    frame = pd.DataFrame({"size": rng.rand(n).round(2), "noise": rng.rand(n).round(3),
                          "shade": rng.choice(["dark", "light"], n)})
    frame["label"] = np.where(frame["size"] > 0.5, "big", "small")
    folder = tmp_path_factory.mktemp("stray")
    train, test = frame.iloc[:600], frame.iloc[600:]
    train.to_csv(folder / "clean.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    stray = train.astype({"size": object})
    stray.iloc[17, 0] = "oops"
    stray.to_csv(folder / "stray.csv", index=False)
    return folder


def _accuracy(out):
    return float(re.search(r"^accuracy\s+(\S+)$", out, re.M).group(1))


def test_a_stray_text_cell_is_an_error_not_a_categorical_column(stray_cell, capsys,
                                                                 tmp_path):
    """Issue 22, item 7: one stray cell used to turn 'size' categorical without a word."""
    from silva.persistence import load

    folder = stray_cell
    model = tmp_path / "m.silva"
    code, out, err = run_cli(["fit", folder / "stray.csv", "--target", "label", "--out",
                              model], capsys)
    assert code == 1 and not model.exists()
    assert err == (f"silva fit: error: column 'size' of {folder / 'stray.csv'} holds "
                   "numbers, but row 18 holds 'oops'; fix that cell, or pass "
                   "--bad-cells=missing to read such cells as missing values "
                   "(--bad-cells=text reads the column as text)\n")

    clean = tmp_path / "clean.silva"
    assert run_cli(["fit", folder / "clean.csv", "--target", "label", "--out", clean],
                   capsys)[0] == 0
    code, out, err = run_cli(["fit", folder / "stray.csv", "--target", "label",
                              "--bad-cells=missing", "--out", model], capsys)
    assert code == 0, err
    assert err == ("silva fit: note: column 'size': 1 cell that is not a number read as "
                   "missing: row 18 ('oops')\n")
    assert "3 features (1 categorical)" in out
    assert load(model).is_categorical_.tolist() == [False, False, True]
    scores = []
    for path in (clean, model):
        code, out, err = run_cli(["evaluate", path, folder / "test.csv"], capsys)
        assert code == 0, err
        scores.append(_accuracy(out))
    assert scores[0] >= 0.98 and abs(scores[1] - scores[0]) <= 0.01, scores

    # The former reading is there when asked for, and says so.
    code, out, err = run_cli(["fit", folder / "stray.csv", "--target", "label",
                              "--bad-cells=text", "--out", tmp_path / "text.silva"], capsys)
    assert code == 0, err
    assert "column 'size' read as text (--bad-cells=text), though all its cells but " \
           "row 18 ('oops') are numbers" in err
    assert load(tmp_path / "text.silva").is_categorical_.tolist() == [True, False, True]
    code, out, err = run_cli(["evaluate", tmp_path / "text.silva", folder / "test.csv",
                              "--bad-cells=text"], capsys)
    # ... and shows why it is not the default: 'size' as categories of text does not
    # carry over to the test file's numbers (the issue saw 0.99 drop to 0.42).
    assert code == 0 and _accuracy(out) < scores[0] - 0.2


def test_stray_cells_at_predict_and_in_unused_columns(stray_cell, capsys, tmp_path):
    pd = pytest.importorskip("pandas")
    folder = stray_cell
    model = tmp_path / "m.silva"
    assert run_cli(["fit", folder / "clean.csv", "--target", "label", "--param",
                    "max_depth=3", "--out", model], capsys)[0] == 0
    frame = pd.read_csv(folder / "test.csv").astype({"size": object, "noise": object})
    for row in (4, 9, 11):
        frame.iloc[row, 0] = "?"
    frame.to_csv(tmp_path / "bad.csv", index=False)
    code, out, err = run_cli(["predict", model, tmp_path / "bad.csv"], capsys)
    assert code == 1 and out == ""
    assert "column 'size' of" in err and "holds numbers, but 3 of its cells are not " \
        "numbers: rows 5 ('?'), 10 ('?'), 12 ('?'); fix those cells" in err
    code, out, err = run_cli(["predict", model, tmp_path / "bad.csv", "--bad-cells",
                              "missing"], capsys)
    assert code == 0 and len(out.splitlines()) == 201
    assert "3 cells that are not numbers read as missing: rows 5 ('?')" in err
    # A column the model does not use is not looked at.
    frame = pd.read_csv(folder / "test.csv").drop(columns=["label"])
    frame["comment"] = ["1"] * 199 + ["see notes"]
    frame.to_csv(tmp_path / "extra.csv", index=False)
    code, out, err = run_cli(["predict", model, tmp_path / "extra.csv"], capsys)
    assert code == 0 and err == ""


def test_mostly_numbers_rule():
    import numpy as np

    values, bad = cli.mostly_numbers(np.array(["1", " 2 ", "x", "", "NA", "1e3"],
                                              dtype=object))
    np.testing.assert_array_equal(values, [1, 2, np.nan, np.nan, np.nan, 1000])
    assert bad.tolist() == [False, False, True, False, False, False]
    # Words, or words with a few numbers among them, are a text column; a tie too.
    assert cli.mostly_numbers(np.array(["red", "blue", "7"], dtype=object))[0] is None
    assert cli.mostly_numbers(np.array(["S", "M", "10", "12"], dtype=object))[0] is None
    assert cli.mostly_numbers(np.array(["", "NA"], dtype=object))[0] is None


def test_a_genuine_text_column_stays_categorical(stray_cell, capsys, tmp_path):
    pd = pytest.importorskip("pandas")
    from silva.persistence import load

    frame = pd.read_csv(stray_cell / "clean.csv")
    # Mostly words, with a few numbers among them: a text column, read without a word.
    frame["shade"] = frame["shade"].where(frame.index % 10 != 0, "42")
    frame.to_csv(tmp_path / "words.csv", index=False)
    code, out, err = run_cli(["fit", tmp_path / "words.csv", "--target", "label", "--out",
                              tmp_path / "m.silva"], capsys)
    assert code == 0 and err == ""
    assert load(tmp_path / "m.silva").is_categorical_.tolist() == [False, False, True]
    assert "2 text ('shade', 'label')" in out


def test_fit_reports_the_column_types(data_dir, capsys, tmp_path):
    folder, df = data_dir
    code, out, err = run_cli(["fit", folder / "train.csv", "--target", "label", "--out",
                              tmp_path / "m.silva"], capsys)
    assert code == 0 and err == ""
    assert out.splitlines()[0] == (f"read {folder / 'train.csv'} (CSV): 240 rows, 6 columns: "
                                   "2 text ('color', 'label'), 2 float, 1 integer, "
                                   "1 bool ('flag')")
    code, out, err = run_cli(["fit", folder / "train.csv", "--target", "label", "--out",
                              tmp_path / "m.silva", "--verbose"], capsys)
    assert code == 0 and err == ""
    table = out.splitlines()[1:9]
    assert re.fullmatch(r"column\s+read as\s+missing\s+role", table[0])
    assert re.fullmatch(r"x\s+float\s+27\s+feature", table[3])
    assert re.fullmatch(r"label\s+text\s+0\s+target", table[6])
    assert re.fullmatch(r"price\s+float\s+0\s+feature", table[7])
    # Parquet columns keep their stored types, and say where they came from.
    code, out, _ = run_cli(["fit", folder / "train.parquet", "--target", "label", "--out",
                            tmp_path / "m.silva"], capsys)
    assert code == 0 and "train.parquet (Parquet): 240 rows" in out.splitlines()[0]


def test_predict_stdout_stays_csv_with_verbose(data_dir, capsys, tmp_path):
    folder, df = data_dir
    model = tmp_path / "m.silva"
    assert run_cli(["fit", folder / "train.csv", "--target", "label", "--out", model],
                   capsys)[0] == 0
    code, out, err = run_cli(["predict", model, folder / "train.csv", "-v"], capsys)
    assert code == 0
    assert out.splitlines()[0] == "prediction" and len(out.splitlines()) == len(df) + 1
    assert err.startswith(f"read {folder / 'train.csv'} (CSV)")
    assert re.search(r"^label\s+text\s+0\s+not used$", err, re.M)
    assert run_cli(["predict", model, folder / "train.csv"], capsys)[2] == ""


def test_missing_labels_are_a_clean_error(data_dir, capsys, tmp_path):
    """Issue 22, item 7: a missing label among string labels gave a traceback."""
    folder, df = data_dir
    model = tmp_path / "m.silva"
    assert run_cli(["fit", folder / "train.csv", "--target", "label", "--out", model],
                   capsys)[0] == 0
    holes = df.copy()
    holes.loc[[3, 7], "label"] = None
    holes.to_csv(tmp_path / "holes.csv", index=False)
    code, out, err = run_cli(["evaluate", model, tmp_path / "holes.csv"], capsys)
    assert code == 1 and out == ""
    assert err == (f"silva evaluate: error: target column 'label' of {tmp_path / 'holes.csv'}"
                   " is missing in 2 rows (rows 4, 8); every row needs a target to be "
                   "scored: fill or drop those rows\n")
    code, _, err = run_cli(["fit", tmp_path / "holes.csv", "--target", "label", "--out",
                            model], capsys)
    assert code == 1 and "is missing in 2 rows (rows 4, 8); every row needs a target to " \
        "fit" in err
    # And in a fresh process: one line, no traceback.
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run(
        [sys.executable, "-m", "silva.cli", "evaluate", str(model), str(tmp_path / "holes.csv")],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr and "is missing in 2 rows" in result.stderr


def test_value_and_type_errors_are_one_line(capsys, monkeypatch):
    """Bad input that silva or scikit-learn rejects reaches the user as one line."""
    def failing(args, out):
        raise TypeError("'<' not supported between instances of 'float' and 'str'\ndetail")

    monkeypatch.setitem(cli.COMMANDS, "show", failing)
    assert cli.main(["show", "m.silva"]) == 1
    assert capsys.readouterr().err == ("silva show: error: '<' not supported between "
                                       "instances of 'float' and 'str'\n")


def test_stray_cells_without_pandas(stray_cell, capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(tables, "_pandas", lambda: None)
    path = tmp_path / "plain.silva"
    # Text columns need pandas, so keep the two numeric columns of the file.
    lines = (stray_cell / "stray.csv").read_text().splitlines()
    numeric = [",".join(line.split(",")[:2]) for line in lines]
    (tmp_path / "numeric.csv").write_text("\n".join(numeric) + "\n")
    fit = ["fit", tmp_path / "numeric.csv", "--target", "noise"]
    code, _, err = run_cli([*fit, "--out", path], capsys)
    assert code == 1 and "column 'size' of" in err and "row 18 holds 'oops'" in err
    code, out, err = run_cli([*fit, "--bad-cells=missing", "--out", path], capsys)
    assert code == 0 and "read as missing: row 18 ('oops')" in err
    assert "(CSV): 600 rows, 2 columns: 2 float" in out


def test_tree_text_of_an_ensemble_is_export_text_of_its_first_tree():
    from sklearn.datasets import load_iris

    from silva import RandomForestClassifier
    from silva.cli.describe import tree_text

    X, y = load_iris(return_X_y=True)
    forest = RandomForestClassifier(n_estimators=2, max_depth=3, random_state=0).fit(X, y)
    names = ["sl", "sw", "pl", "pw"]
    text = tree_text(forest, names, ["a", "b", "c"], max_depth=1)
    header, _, body = text.partition("\n")
    assert header == "estimators_[0].tree_:"
    assert body == export_text(forest.estimators_[0].tree_, feature_names=names,
                               class_names=["a", "b", "c"], max_depth=1)
    assert "class: " in body and "missing" not in body


def test_export_to_onnx_and_treelite(data_dir, capsys, tmp_path):
    import numpy as np

    ort = pytest.importorskip("onnxruntime")
    treelite = pytest.importorskip("treelite")
    from silva.export_onnx import onnx_input
    from silva.persistence import load

    folder, df = data_dir
    model_path = tmp_path / "forest.silva"
    assert run_cli(["fit", folder / "train.csv", "--target", "label", "--model", "rf",
                    "--param", "n_estimators=3", "--param", "max_depth=4", "--out",
                    model_path], capsys)[0] == 0
    model = load(model_path)
    features = df.drop(columns=["label"])

    code, out, err = run_cli(["export", model_path, "--to", "onnx"], capsys)
    assert code == 0, err
    onnx_path = tmp_path / "forest.onnx"  # the default: the model's name, .onnx
    assert f"wrote {onnx_path} (onnx, RandomForestClassifier)" in out
    assert "input: X [N, 5] float32, columns in order: color, x, k, flag, price" in out
    assert "color as category codes (blue=0, green=1, red=2;" in out
    session = ort.InferenceSession(onnx_path.read_bytes(), providers=["CPUExecutionProvider"])
    label, proba = session.run(None, {"X": onnx_input(model, features)})
    assert label.tolist() == model.predict(features).tolist()
    np.testing.assert_allclose(proba, model.predict_proba(features), atol=1e-5)

    json_path = tmp_path / "out.json"
    code, out, err = run_cli(["export", model_path, "--to", "treelite", "-o", json_path],
                             capsys)
    assert code == 0, err
    import json

    dump = json.loads(json_path.read_text())
    assert dump["num_feature"] == 5 and len(dump["trees"]) == 3
    assert run_cli(["export", model_path, "--to", "treelite"], capsys)[0] == 0
    exported = treelite.Model.deserialize(str(tmp_path / "forest.treelite"))
    predicted = treelite.gtil.predict(exported, onnx_input(model, features, np.float64))
    np.testing.assert_allclose(predicted[:, 0, :], model.predict_proba(features), atol=1e-9)

    c45_path = tmp_path / "c45.silva"
    assert run_cli(["fit", folder / "train.csv", "--target", "label", "--model", "c45",
                    "--out", c45_path], capsys)[0] == 0
    code, out, err = run_cli(["export", c45_path, "--to", "onnx"], capsys)
    assert code == 1 and err.startswith("silva export: error: C45Classifier cannot be "
                                        "exported") and err.count("\n") == 1


def _demo_entries_of_three_variants():
    """Four entries, three compiled variants: two gini trees share one."""
    return [cli.DemoEntry("breast_cancer", "DecisionTreeClassifier", demo._clf()),
            cli.DemoEntry("breast_cancer", "DecisionTreeClassifier", demo._clf(max_depth=2)),
            cli.DemoEntry("breast_cancer", "DecisionTreeClassifier",
                          demo._clf(criterion="entropy")),
            cli.DemoEntry("diabetes", "DecisionTreeRegressor", demo._reg())]


@pytest.mark.parametrize("marker_cold, first_warm_up_compiles, sent_entries", [
    (True, False, [0, 2, 3]),  # a cold cache by its marker: every variant to the workers
    (False, True, [2, 3]),  # the marker found, but the first warm-up compiled
    (False, False, []),  # warm
])
def test_demo_compiles_in_workers_only_when_the_cache_is_cold(
        marker_cold, first_warm_up_compiles, sent_entries, monkeypatch, capsys):
    import silva._warmup

    monkeypatch.setattr(demo.os, "cpu_count", lambda: 2)
    events, sent = [], []
    real_warm_up = demo._warm_up

    def warm_up(factory, data):
        events.append(("warm-up", factory().get_params().get("criterion"), data.name))
        return real_warm_up(factory, data)

    def counting(function):
        function()
        return 3 if first_warm_up_compiles else 0

    def compile_in_workers(entries, datasets):
        events.append("workers")
        sent.extend(entries)

    monkeypatch.setattr(demo, "_warm_up", warm_up)
    monkeypatch.setattr(silva._warmup, "cache_seems_cold", lambda: marker_cold)
    monkeypatch.setattr(silva._warmup, "count_silva_compiles", counting)
    monkeypatch.setattr(demo, "_compile_in_workers", compile_in_workers)
    entries = _demo_entries_of_three_variants()
    results = cli.run_demo(entries, out=io.StringIO())
    assert len(results) == 4
    # One warm-up per variant; the first before the workers unless the marker was cold.
    warm_ups = [("warm-up", "gini", "breast_cancer"), ("warm-up", "entropy", "breast_cancer"),
                ("warm-up", "squared_error", "diabetes")]
    if marker_cold:
        assert events == ["workers", *warm_ups]
    elif first_warm_up_compiles:
        assert events == [warm_ups[0], "workers", *warm_ups[1:]]
    else:
        assert events == warm_ups
    assert sent == [entries[i] for i in sent_entries]
    err = capsys.readouterr().err
    if sent_entries:
        assert (f"compiling the kernels of {len(sent_entries)} models in 2 processes"
                in err)
    else:
        assert err == ""


def test_demo_without_warm_up_or_a_second_cpu_starts_no_workers(monkeypatch):
    import silva._warmup

    def fail(*args):
        raise AssertionError("no worker should start")

    monkeypatch.setattr(demo, "_compile_in_workers", fail)
    monkeypatch.setattr(silva._warmup, "cache_seems_cold", lambda: True)
    entries = _demo_entries_of_three_variants()
    assert len(cli.run_demo(entries, warm_up=False, out=io.StringIO())) == 4
    monkeypatch.setattr(demo.os, "cpu_count", lambda: 1)
    assert len(cli.run_demo(entries, out=io.StringIO())) == 4


def test_count_silva_compiles_counts_only_silva_kernels_that_compile():
    import numba

    from silva._warmup import count_silva_compiles

    def probe(x):
        return x + 1

    def outsider(x):
        return x + 2

    probe.__module__ = "silva.test_probe"  # a kernel of silva's, as numba sees it
    silva_kernel, other_kernel = numba.njit(probe), numba.njit(outsider)
    assert count_silva_compiles(lambda: silva_kernel(1)) == 1
    # Compiled now: a second call compiles nothing.
    assert count_silva_compiles(lambda: silva_kernel(2)) == 0
    assert count_silva_compiles(lambda: other_kernel(1)) == 0


def test_cache_seems_cold_until_marked(tmp_path):
    # Fresh processes on empty numba caches: the first check finds its cache cold (and
    # marks it), the next one warm; a compile worker's job marks a cache too.
    def run(code, cache):
        env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / cache),
                   SILVA_COMPILE_NOTICE="0")
        return subprocess.run([sys.executable, "-c", "from silva import _warmup; " + code],
                              env=env, capture_output=True, text=True,
                              check=True).stdout.strip()

    check = "print(_warmup.cache_seems_cold())"
    assert [run(check, "a"), run(check, "a")] == ["True", "False"]
    run("_warmup._fit_and_predict([])", "b")
    assert run(check, "b") == "False"


def test_compile_in_workers_fits_each_entry_on_the_warm_up_slice(monkeypatch):
    jobs_seen = []
    monkeypatch.setattr("silva._warmup.fit_in_workers",
                        lambda jobs, n_jobs=None: jobs_seen.extend(jobs))
    entries = _demo_entries_of_three_variants()[2:]
    datasets = {name: cli.load_dataset(name) for name in ("breast_cancer", "diabetes")}
    demo._compile_in_workers(entries, datasets)
    assert len(jobs_seen) == 2 and all(len(job) == 1 for job in jobs_seen)
    for (estimator, X, y), entry in zip((job[0] for job in jobs_seen), entries, strict=True):
        assert type(estimator) is type(entry.factory())
        assert estimator.get_params() == entry.factory().get_params()
        data = datasets[entry.dataset]
        assert X.shape == (demo.WARM_UP_ROWS, data.X_train.shape[1])
        assert (X == data.X_train[:demo.WARM_UP_ROWS]).all()
        assert (y == data.y_train[:demo.WARM_UP_ROWS]).all()
