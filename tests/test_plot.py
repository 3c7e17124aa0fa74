"""silva.plot: every plot renders headless (Agg) to a PNG that is not blank."""

import builtins
import sys

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.datasets import load_iris, make_regression  # noqa: E402

from silva import plot  # noqa: E402
from silva.decision_tree import DecisionTreeClassifier, DecisionTreeRegressor  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def assert_not_blank(ax, path):
    """Save the figure of ``ax`` and check the PNG shows something besides background."""
    assert isinstance(ax, matplotlib.axes.Axes)
    ax.figure.savefig(path, dpi=60)
    image = mpimg.imread(path)[..., :3]
    assert image.var() > 0
    background = image[0, 0]
    differs = np.abs(image - background).sum(axis=2) > 0.05
    assert differs.mean() > 0.01, f"only {differs.mean():.4f} of the pixels are drawn"
    return image


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True, as_frame=True)
    return X, y


def test_tree_plot(tmp_path, iris):
    X, y = iris
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    ax = plot.tree(model)
    texts = [t.get_text() for t in ax.texts]
    assert any(text.startswith("petal") and "<=" in text for text in texts)
    boxes = [t for t in texts if "samples" in t]
    assert len(boxes) == model.tree_.node_count
    assert any("class = 0" in t for t in texts)
    assert_not_blank(ax, tmp_path / "tree.png")


def test_tree_plot_truncates_and_shows_categories(tmp_path):
    rng = np.random.RandomState(0)
    df = pd.DataFrame({"shop": pd.Categorical(rng.choice(["north", "south", "east"], 200)),
                       "x": rng.rand(200)})
    y = (df["shop"].isin(["north"]) ^ (df["x"] > 0.5)).astype(int)
    model = DecisionTreeClassifier(categorical_features="auto").fit(df, y)
    assert model.get_depth() >= 2
    fig, ax = plt.subplots()
    assert plot.tree(model, ax=ax, max_depth=1) is ax
    texts = [t.get_text() for t in ax.texts if "samples" in t.get_text()]
    assert len(texts) == 3  # root and its two children
    assert any("..." in t for t in texts)
    assert any("shop in {" in t and "north" in t for t in texts)
    assert_not_blank(ax, tmp_path / "tree_cat.png")
    with pytest.raises(ValueError, match="max_depth"):
        plot.tree(model, max_depth=-1)
    with pytest.raises(ValueError, match="tree_index must be in"):
        plot.tree(model, tree_index=1)
    with pytest.raises(ValueError, match="no fitted silva tree"):
        plot.tree(DecisionTreeClassifier())


def test_tree_plot_regressor(tmp_path):
    X, y = make_regression(n_samples=100, n_features=3, random_state=0)
    model = DecisionTreeRegressor(max_depth=2).fit(X, y)
    ax = plot.tree(model, feature_names=["a", "b", "c"])
    assert any(t.get_text().startswith(("a <=", "b <=", "c <=")) for t in ax.texts)
    assert_not_blank(ax, tmp_path / "reg.png")


def test_decision_boundary_classifier(tmp_path, iris):
    X, y = iris
    X2 = X[["petal length (cm)", "petal width (cm)"]]
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X2, y)
    ax = plot.decision_boundary(model, X2, y, grid_resolution=50)
    assert ax.get_xlabel() == "petal length (cm)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["0", "1", "2"]
    image = assert_not_blank(ax, tmp_path / "boundary.png")
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 10  # regions and points
    with pytest.raises(ValueError, match="exactly 2 features"):
        plot.decision_boundary(model, X, y)


def test_decision_boundary_regressor(tmp_path):
    X, y = make_regression(n_samples=80, n_features=2, random_state=1)
    model = DecisionTreeRegressor(max_depth=3).fit(X, y)
    ax = plot.decision_boundary(model, X, y, grid_resolution=40)
    assert len(ax.figure.axes) == 2  # the plot and its colour bar
    assert_not_blank(ax, tmp_path / "boundary_reg.png")


def test_importance(tmp_path, iris):
    X, y = iris
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    ax = plot.importance(model, max_features=3)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    order = np.argsort(-model.feature_importances_, kind="stable")[:3]
    assert labels == [X.columns[j] for j in order][::-1]  # largest bar at the top
    widths = sorted(p.get_width() for p in ax.patches)
    np.testing.assert_allclose(widths, np.sort(model.feature_importances_[order]))
    assert_not_blank(ax, tmp_path / "importance.png")
    with pytest.raises(ValueError, match="importance_type must be None"):
        plot.importance(model, importance_type="gain")


class FakeBooster:
    """Exposes what gradient boosting records: per-iteration metrics per eval set."""

    def __init__(self, importances_by_type):
        rng = np.random.RandomState(0)
        steps = np.arange(1, 31)
        self.evals_result_ = {
            "training": {"log_loss": list(1.0 / steps)},
            "valid_0": {"log_loss": list(1.0 / steps + 0.01 * (steps - 15) ** 2 / 15
                                         + 0.01 * rng.rand(30))},
        }
        self.best_iteration_ = 14
        self.importance_type = "split"
        self._importances = importances_by_type

    def get_params(self):
        return {"importance_type": self.importance_type}

    @property
    def feature_importances_(self):
        return self._importances[self.importance_type]


def test_learning_curve_of_boosting(tmp_path):
    booster = FakeBooster({"split": np.array([3.0, 1.0]), "gain": np.array([0.2, 0.9])})
    ax = plot.learning_curve(booster)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["training log_loss", "valid_0 log_loss", "best iteration 15"]
    np.testing.assert_allclose(ax.lines[0].get_ydata(), booster.evals_result_["training"][
        "log_loss"])
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), np.arange(1, 31))
    assert_not_blank(ax, tmp_path / "boosting.png")
    # importance_type as a LightGBM-style parameter, restored afterwards
    ax = plot.importance(booster, importance_type="gain", feature_names=["a", "b"])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    assert booster.importance_type == "split"


class FakeForest:
    def __init__(self, stored):
        if stored:
            self.oob_curve_ = 0.3 / np.sqrt(np.arange(1, 51))

    def oob_curve(self, X, y):
        return 0.4 / np.sqrt(np.arange(1, 21))


def test_learning_curve_of_forests(tmp_path):
    ax = plot.learning_curve(FakeForest(stored=True))
    assert len(ax.lines[0].get_xdata()) == 50
    assert_not_blank(ax, tmp_path / "oob.png")
    plt.close("all")
    with pytest.raises(ValueError, match="oob_curve_ or oob_curve"):
        plot.learning_curve(FakeForest(stored=False))  # the method needs X and y
    ax = plot.learning_curve(FakeForest(stored=False), X=np.zeros((3, 2)), y=[0, 1, 0])
    np.testing.assert_allclose(ax.lines[0].get_ydata(), 0.4 / np.sqrt(np.arange(1, 21)))


class FakeAdaBoost:
    classes_ = np.array([0, 1])

    def __init__(self):
        errors = np.full(25, 0.3)
        self.estimator_errors_ = errors
        self.training_error_bound_ = np.cumprod(2 * np.sqrt(errors * (1 - errors)))

    def staged_score(self, X, y):
        for t in range(25):
            yield 1.0 - 0.5 * np.exp(-0.2 * t)


def test_learning_curve_of_adaboost(tmp_path):
    model = FakeAdaBoost()
    ax = plot.learning_curve(model, X=np.zeros((4, 2)), y=[0, 1, 1, 0])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["training error bound", "weak learner weighted error",
                      "error on the given data"]
    np.testing.assert_allclose(ax.lines[2].get_ydata(), 0.5 * np.exp(-0.2 * np.arange(25)))
    assert_not_blank(ax, tmp_path / "ada.png")


def test_learning_curve_refuses_a_plain_tree(iris):
    X, y = iris
    model = DecisionTreeClassifier(max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="evals_result_.*DecisionTreeClassifier has none"):
        plot.learning_curve(model, X=X, y=y)


class FakeVoter:
    def __init__(self, method):
        rng = np.random.RandomState(0)
        values = {5: np.clip(rng.normal(0.1, 0.3, 200), -1, 1),
                  100: np.clip(rng.normal(0.5, 0.2, 200), -1, 1)}
        if method == "margins":
            self.margins = lambda X, y: values
        else:
            self.margin = lambda X, y: values[100]


@pytest.mark.parametrize("method", ["margins", "margin"])
def test_margins(tmp_path, method):
    ax = plot.margins(FakeVoter(method), np.zeros((200, 2)), np.zeros(200))
    curves = [line for line in ax.lines if len(line.get_xdata()) > 2]
    assert len(curves) == (2 if method == "margins" else 1)
    for line in curves:
        fractions = np.asarray(line.get_ydata())
        assert fractions[0] == 0.0 and fractions[-1] == 1.0
        assert np.all(np.diff(fractions) >= 0)  # a cumulative distribution
    assert_not_blank(ax, tmp_path / f"{method}.png")
    with pytest.raises(ValueError, match="margins\\(X, y\\) or margin\\(X, y\\)"):
        plot.margins(DecisionTreeClassifier(), np.zeros((2, 2)), [0, 1])


def test_missing_matplotlib_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    for name in [m for m in sys.modules if m.startswith("matplotlib")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(ImportError, match=r"pip install silva\[plot\]"):
        plot.learning_curve(FakeForest(stored=True))
