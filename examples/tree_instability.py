"""Decision trees are unstable: flipping one training label can redraw the whole tree.

A tree chooses its splits greedily from the top, so a small change of the data that
changes one split high in the tree changes everything grown below it (Breiman 1996,
"Bagging predictors", and Hastie, Tibshirani & Friedman 2009, sec. 9.2.4, call trees
*unstable* learners for this reason; it is what bagging and random forests average away).

This script fits a depth-limited tree on two overlapping Gaussian classes in the plane,
then flips the label of one training sample (the one whose flip changes the predicted
plane most) and fits the tree again. It draws the two decision boundaries side by side
(the flipped sample ringed) and the two trees below them.

Run ``python examples/tree_instability.py [OUT_DIR]``; the figure is written to
``OUT_DIR/tree_instability.png`` (default ``figures/``).
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from silva import DecisionTreeClassifier, plot  # noqa: E402

DEFAULT_OUT_DIR = "figures"
MAX_DEPTH = 3


def make_data(n_samples, seed=0):
    """Two Gaussian classes in the plane whose clouds overlap, so the splits are close
    calls that one sample can tip."""
    rng = np.random.RandomState(seed)
    n_first = n_samples // 2
    centres = np.where(np.arange(n_samples)[:, None] < n_first, [0.0, 0.0], [1.2, 1.0])
    X = centres + rng.normal(scale=0.8, size=(n_samples, 2))
    y = (np.arange(n_samples) >= n_first).astype(int)
    return X, y


def tree_signature(model):
    """The splits of a fitted tree in node order: (feature, threshold) of each inner node.

    Two trees with different signatures test different things somewhere.
    """
    tree = model.tree_
    inner = np.flatnonzero(tree.children_left != -1)
    return [(int(tree.feature[node]), float(tree.threshold[node])) for node in inner]


def plane_grid(X, resolution=100):
    """A grid over the bounding box of X, to compare what two models predict."""
    low, high = X.min(axis=0), X.max(axis=0)
    g0, g1 = np.meshgrid(np.linspace(low[0], high[0], resolution),
                         np.linspace(low[1], high[1], resolution))
    return np.c_[g0.ravel(), g1.ravel()]


def most_disruptive_flip(X, y, grid, random_state=0):
    """The sample whose label flip changes the prediction on the largest share of
    ``grid``, that share, and the refitted tree."""
    base = DecisionTreeClassifier(max_depth=MAX_DEPTH, random_state=random_state).fit(X, y)
    reference = base.predict(grid)
    best = (-1, -1.0, None)
    for i in range(X.shape[0]):
        flipped = y.copy()
        flipped[i] = 1 - flipped[i]
        model = DecisionTreeClassifier(max_depth=MAX_DEPTH,
                                       random_state=random_state).fit(X, flipped)
        changed = float(np.mean(model.predict(grid) != reference))
        if changed > best[1]:
            best = (i, changed, model)
    return base, best


def main(out_dir=DEFAULT_OUT_DIR, n_samples=120, grid_resolution=200):
    """Draw the figure into ``out_dir``; return a dict with ``path``, the two fitted trees
    (``original``, ``flipped``), the data (``X``, ``y``, ``y_flipped``), the flipped
    sample ``index`` and the share of the plane whose prediction changed
    (``changed_fraction``)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    X, y = make_data(n_samples)
    grid = plane_grid(X)
    original, (index, changed, flipped_model) = most_disruptive_flip(X, y, grid)
    y_flipped = y.copy()
    y_flipped[index] = 1 - y_flipped[index]

    figure, axes = plt.subplots(2, 2, figsize=(15, 12))
    for column, (model, labels, name) in enumerate(
            [(original, y, "original labels"),
             (flipped_model, y_flipped, f"label of sample {index} flipped")]):
        ax = plot.decision_boundary(model, X, labels, ax=axes[0, column],
                                    grid_resolution=grid_resolution)
        ax.scatter(X[index, 0], X[index, 1], s=260, facecolors="none", edgecolors="black",
                   linewidths=2.0, label=f"sample {index}")
        ax.legend(loc="best", fontsize="small")
        ax.set_title(f"{name}: {model.get_n_leaves()} leaves")
        plot.tree(model, ax=axes[1, column], fontsize=7)
    figure.suptitle(f"Depth-{MAX_DEPTH} tree before and after flipping one of {n_samples} "
                    f"labels: {changed:.0%} of the plane changes class")
    figure.tight_layout()
    path = out_dir / "tree_instability.png"
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return {"path": path, "original": original, "flipped": flipped_model, "X": X, "y": y,
            "y_flipped": y_flipped, "index": index, "changed_fraction": changed}


if __name__ == "__main__":
    result = main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT_DIR)
    print(f"wrote {result['path']}: flipping sample {result['index']} changes "
          f"{result['changed_fraction']:.1%} of the plane")
