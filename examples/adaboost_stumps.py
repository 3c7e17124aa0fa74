"""AdaBoost with 2, 10 and 50 stumps on the diagonal: a staircase that sharpens.

The lectures' data: X uniform in the unit square, y = 1[x2 > x1]. One stump (a tree of
depth one) can only cut the square along an axis, so no single stump fits the diagonal;
AdaBoost (Freund & Schapire 1997) reweights the samples that the earlier stumps got
wrong and adds up the stumps' weighted votes, and the sum is a staircase that follows the
diagonal more closely as stumps are added.

The fourth panel shows the training error after each round beside Freund & Schapire's
bound prod_m 2 sqrt(err_m (1 - err_m)) (``training_error_bound_``), which the error never
exceeds, and the stumps' weighted errors err_m, which stay below 1/2 but creep towards it
as the weights concentrate on the hard samples near the diagonal.

Run ``python examples/adaboost_stumps.py [OUT_DIR]``; the figure is written to
``OUT_DIR/adaboost_stumps.png`` (default ``figures/``).
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from silva import AdaBoostClassifier, DecisionTreeClassifier, plot  # noqa: E402

DEFAULT_OUT_DIR = "figures"
N_STUMPS = (2, 10, 50)


def make_diagonal(n_samples, seed=0):
    """X uniform in [0, 1]^2 and y = 1[x2 > x1]."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(0.0, 1.0, size=(n_samples, 2))
    y = (X[:, 1] > X[:, 0]).astype(int)
    return X, y


def main(out_dir=DEFAULT_OUT_DIR, n_samples=300, grid_resolution=200):
    """Draw the figure into ``out_dir``; return a dict with ``path``, the fitted
    ``models`` and their training ``accuracy`` (both keyed by the number of stumps), the
    per-round ``training_error`` and ``bound`` of the largest model, and the data."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    X, y = make_diagonal(n_samples)
    models, accuracy = {}, {}
    figure, axes = plt.subplots(1, 4, figsize=(21, 5))
    for ax, n_stumps in zip(axes, N_STUMPS, strict=False):
        model = AdaBoostClassifier(DecisionTreeClassifier(max_depth=1),
                                   n_estimators=n_stumps, algorithm="discrete",
                                   random_state=0).fit(X, y)
        models[n_stumps] = model
        accuracy[n_stumps] = float(model.score(X, y))
        plot.decision_boundary(model, X, y, ax=ax, grid_resolution=grid_resolution,
                               feature_names=["x1", "x2"])
        ax.plot([0, 1], [0, 1], color="black", linewidth=1.0, linestyle="--")
        ax.set_title(f"{len(model.estimators_)} stumps: training accuracy "
                     f"{accuracy[n_stumps]:.3f}")

    largest = models[N_STUMPS[-1]]
    training_error = np.array([1.0 - s for s in largest.staged_score(X, y)])
    bound = largest.training_error_bound_
    rounds = np.arange(1, len(training_error) + 1)
    ax = axes[-1]
    ax.plot(rounds, training_error, label="training error")
    ax.plot(rounds, bound, linestyle="--", label="bound prod 2 sqrt(err (1 - err))")
    ax.plot(rounds, largest.estimator_errors_, linestyle=":",
            label="stump's weighted error err_m")
    ax.set_xlabel("boosting round")
    ax.set_ylabel("error")
    ax.set_ylim(0.0, 1.0)
    ax.set_title("training error and its bound")
    ax.legend(loc="upper right", fontsize="small")
    figure.suptitle(f"AdaBoost (discrete) with stumps on y = 1[x2 > x1], "
                    f"{n_samples} samples")
    figure.tight_layout()
    path = out_dir / "adaboost_stumps.png"
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return {"path": path, "models": models, "accuracy": accuracy,
            "training_error": training_error, "bound": bound, "X": X, "y": y}


if __name__ == "__main__":
    result = main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT_DIR)
    scores = ", ".join(f"{n} stumps {a:.3f}" for n, a in result["accuracy"].items())
    print(f"wrote {result['path']}: training accuracy {scores}")
