"""The example scripts (examples/*.py): each draws its figure on small data, and the
figure shows what its docstring says it shows."""

import importlib.util
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from silva import DecisionTreeClassifier, DecisionTreeRegressor  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load_example(name):
    """Import ``examples/<name>.py`` as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"silva_example_{name}",
                                                  EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_png_drawn(path, expected_name):
    """The PNG exists under the expected name and is not a blank canvas."""
    path = Path(path)
    assert path.name == expected_name
    assert path.is_file()
    image = mpimg.imread(path)[..., :3]
    assert image.var() > 0
    background = image[0, 0]
    drawn = np.abs(image - background).sum(axis=2) > 0.05
    assert drawn.mean() > 0.02, f"only {drawn.mean():.4f} of the pixels are drawn"


def test_every_example_has_main_and_is_tested():
    tested = {"tree_instability", "forest_vs_bagging", "adaboost_stumps",
              "boosting_residuals", "quantile_forest"}
    assert {path.stem for path in EXAMPLES.glob("*.py")} == tested


def test_tree_instability(tmp_path):
    example = load_example("tree_instability")
    result = example.main(tmp_path / "out", n_samples=40, grid_resolution=40)
    assert_png_drawn(result["path"], "tree_instability.png")
    assert result["path"].parent == tmp_path / "out"
    X, y, y_flipped = result["X"], result["y"], result["y_flipped"]
    # Exactly one label differs, the one reported.
    assert np.flatnonzero(y != y_flipped).tolist() == [result["index"]]
    # The two trees test different things, and predict differently on part of the plane.
    original, flipped = result["original"], result["flipped"]
    assert example.tree_signature(original) != example.tree_signature(flipped)
    grid = example.plane_grid(X)
    changed = np.mean(original.predict(grid) != flipped.predict(grid))
    assert changed == pytest.approx(result["changed_fraction"])
    assert changed > 0.05
    # Both are ordinary depth-limited trees of their data, refitted identically.
    for model, labels in ((original, y), (flipped, y_flipped)):
        refit = DecisionTreeClassifier(max_depth=example.MAX_DEPTH, random_state=0)
        refit.fit(X, labels)
        np.testing.assert_array_equal(refit.predict(grid), model.predict(grid))


def test_forest_vs_bagging(tmp_path):
    example = load_example("forest_vs_bagging")
    result = example.main(tmp_path, n_samples=150, n_estimators=30, grid_resolution=40)
    assert_png_drawn(result["path"], "forest_vs_bagging.png")
    models, accuracy = result["models"], result["accuracy"]
    # Averaging trees helps on held-out data.
    assert accuracy["bagging"] > accuracy["one tree"]
    assert accuracy["random forest"] > accuracy["one tree"]
    # A fully grown tree is sure everywhere; the ensembles' averages are not.
    grid = np.random.RandomState(0).uniform(-1.5, 2.5, size=(500, 2))
    tree_proba = models["one tree"].predict_proba(grid)[:, 1]
    assert set(np.unique(tree_proba)) <= {0.0, 1.0}
    for name in ("bagging", "random forest"):
        proba = models[name].predict_proba(grid)[:, 1]
        assert np.mean((proba > 0) & (proba < 1)) > 0.05, name
    # The forest's trees draw one of the two features per node; bagging's see both.
    assert {tree.max_features_ for tree in models["random forest"].estimators_} == {1}
    assert {tree.max_features_ for tree in models["bagging"].estimators_} == {2}


def test_adaboost_stumps(tmp_path):
    example = load_example("adaboost_stumps")
    result = example.main(tmp_path, n_samples=100, grid_resolution=40)
    assert_png_drawn(result["path"], "adaboost_stumps.png")
    X, y = result["X"], result["y"]
    np.testing.assert_array_equal(y, (X[:, 1] > X[:, 0]).astype(int))
    accuracy = result["accuracy"]
    assert accuracy[2] < accuracy[10] <= accuracy[50]
    assert accuracy[50] > 0.95
    largest = result["models"][50]
    error, bound = result["training_error"], result["bound"]
    # The bound is Freund & Schapire's product, computed here from the stumps' errors...
    errors = largest.estimator_errors_
    np.testing.assert_allclose(bound, np.cumprod(2.0 * np.sqrt(errors * (1.0 - errors))))
    # ...and the training error never exceeds it.
    assert np.all(error <= bound + 1e-12)
    # The smaller ensembles are the first rounds of the largest one.
    assert error[1] == pytest.approx(1.0 - accuracy[2])
    assert error[9] == pytest.approx(1.0 - accuracy[10])


@pytest.mark.parametrize("learning_rate", [1.0, 0.5])
def test_boosting_residuals(tmp_path, learning_rate):
    example = load_example("boosting_residuals")
    result = example.main(tmp_path, n_samples=40, n_steps=4, learning_rate=learning_rate)
    assert_png_drawn(result["path"], "boosting_residuals.png")
    X, y, fits = result["X"], result["y"], result["fits"]
    assert len(fits) == 5
    np.testing.assert_allclose(fits[0], np.mean(y))
    # The residual sum of squares falls at every step.
    rss = np.array(result["rss"])
    np.testing.assert_allclose(rss, [np.sum((y - fit) ** 2) for fit in fits])
    assert np.all(np.diff(rss) < 0)
    # Each tree is the least-squares (CART) tree of the residuals it was given.
    for residual, tree_fit in zip(result["residuals"], result["tree_fits"], strict=True):
        cart = DecisionTreeRegressor(max_depth=2, min_samples_leaf=3).fit(X, residual)
        np.testing.assert_allclose(tree_fit, cart.predict(X), atol=1e-10)


def test_quantile_forest(tmp_path):
    example = load_example("quantile_forest")
    result = example.main(tmp_path, n_samples=300, n_estimators=30)
    assert_png_drawn(result["path"], "quantile_forest.png")
    grid, quantiles = result["grid"][:, 0], result["quantiles"]
    assert quantiles.shape == (grid.size, len(example.QUANTILES))
    assert np.all(np.diff(quantiles, axis=1) >= 0)
    # The noise grows with x, and so does the band.
    width = quantiles[:, -1] - quantiles[:, 0]
    assert width[grid > 7].mean() > 2 * width[grid < 3].mean()
    assert 0.7 < result["coverage"] <= 1.0
