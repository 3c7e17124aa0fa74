"""One tree, bagged trees and a random forest on the two moons.

A fully grown tree fits every training point, noise included, so its boundary is a
staircase of small boxes. Bagging (Breiman 1996) averages trees grown on bootstrap
samples, which smooths the boundary and lowers the variance; a random forest (Breiman
2001) also draws the candidate features at random at every node (here one of the two),
which makes its trees less alike, so that their average smooths further. The titles give
the accuracy on a held-out test set of the same distribution.

Run ``python examples/forest_vs_bagging.py [OUT_DIR]``; the figure is written to
``OUT_DIR/forest_vs_bagging.png`` (default ``figures/``).
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.datasets import make_moons  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from silva import (  # noqa: E402
    BaggingClassifier,
    DecisionTreeClassifier,
    RandomForestClassifier,
    plot,
)

DEFAULT_OUT_DIR = "figures"


def make_models(n_estimators=100, random_state=0):
    """The three models, by title: a fully grown tree, bagged fully grown trees, and a
    random forest (bagged trees that draw one of the two features at every node)."""
    return {
        "one tree": DecisionTreeClassifier(random_state=random_state),
        "bagging": BaggingClassifier(DecisionTreeClassifier(), n_estimators=n_estimators,
                                     random_state=random_state),
        "random forest": RandomForestClassifier(n_estimators=n_estimators,
                                                max_features="sqrt",
                                                random_state=random_state),
    }


def main(out_dir=DEFAULT_OUT_DIR, n_samples=500, n_estimators=100, grid_resolution=200):
    """Draw the figure into ``out_dir``; return a dict with ``path``, the fitted
    ``models`` (by title), their test ``accuracy`` (by title) and the data
    (``X_train``, ``y_train``, ``X_test``, ``y_test``)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    X, y = make_moons(n_samples=2 * n_samples, noise=0.3, random_state=0)
    X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=n_samples,
                                                        random_state=0)
    models = make_models(n_estimators)
    accuracy = {}
    figure, axes = plt.subplots(1, 3, figsize=(16, 5))
    for ax, (title, model) in zip(axes, models.items(), strict=True):
        model.fit(X_train, y_train)
        accuracy[title] = float(model.score(X_test, y_test))
        plot.decision_boundary(model, X_train, y_train, ax=ax,
                               grid_resolution=grid_resolution)
        ax.set_title(f"{title}: test accuracy {accuracy[title]:.3f}")
    figure.suptitle(f"make_moons, {n_samples} training samples (noise 0.3); "
                    f"{n_estimators} trees in each ensemble")
    figure.tight_layout()
    path = out_dir / "forest_vs_bagging.png"
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return {"path": path, "models": models, "accuracy": accuracy, "X_train": X_train,
            "y_train": y_train, "X_test": X_test, "y_test": y_test}


if __name__ == "__main__":
    result = main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT_DIR)
    scores = ", ".join(f"{name} {value:.3f}" for name, value in result["accuracy"].items())
    print(f"wrote {result['path']}: test accuracy {scores}")
