"""Gradient boosting for squared error, step by step: each tree fits the residuals.

With the squared error L = (y - F)^2 / 2 the negative gradient at the current model
F_{m-1} is the residual y - F_{m-1}, so Friedman's (2001) gradient boosting grows its
m-th tree h_m on the residuals (least squares), and each leaf's line search gives the
mean residual of the leaf. The model moves by F_m = F_{m-1} + nu h_m, nu being the
learning rate. F_0 is the mean of y.

Each row of the figure is one step: on the left the data, the current fit F_{m-1} and
the next fit F_m; on the right the residuals y - F_{m-1} and the tree h_m fitted to them.
The residual sum of squares in the titles decreases at every step.

Run ``python examples/boosting_residuals.py [OUT_DIR]``; the figure is written to
``OUT_DIR/boosting_residuals.png`` (default ``figures/``).
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from silva import GradientBoostingRegressor  # noqa: E402

DEFAULT_OUT_DIR = "figures"


def make_data(n_samples, seed=0):
    """x uniform in [0, 1] (sorted, for drawing), y = sin(2 pi x) + noise."""
    rng = np.random.RandomState(seed)
    x = np.sort(rng.uniform(0.0, 1.0, n_samples))
    y = np.sin(2.0 * np.pi * x) + rng.normal(scale=0.2, size=n_samples)
    return x[:, None], y


def make_model(n_steps, learning_rate=1.0, max_depth=2, min_samples_leaf=3):
    """Friedman's gradient boosting (``boosting="gradient"``) with shallow trees, each
    binned exactly (``min_samples_bin=1``: one bin per value of the few rows drawn), so
    that each tree is the CART tree of its residuals."""
    return GradientBoostingRegressor(boosting="gradient", learning_rate=learning_rate,
                                     n_estimators=n_steps, max_depth=max_depth,
                                     max_leaf_nodes=None, min_samples_leaf=min_samples_leaf,
                                     min_samples_bin=1)


def main(out_dir=DEFAULT_OUT_DIR, n_samples=100, n_steps=4, learning_rate=1.0,
         max_depth=2):
    """Draw the figure into ``out_dir``; return a dict with ``path``, the fitted
    ``model``, the data ``X``, ``y``, the fits ``fits`` (F_0, ..., F_n_steps at X),
    ``residuals`` (y - F_{m-1} for each step), ``tree_fits`` (h_m at X) and ``rss``
    (the residual sum of squares of F_0, ..., F_n_steps)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    X, y = make_data(n_samples)
    model = make_model(n_steps, learning_rate, max_depth).fit(X, y)
    fits = [np.full(n_samples, model.init_raw_[0])]
    fits.extend(model.staged_predict(X))
    residuals = [y - fits[m] for m in range(n_steps)]
    # What tree m added, before shrinkage: h_m = (F_m - F_{m-1}) / nu.
    tree_fits = [(fits[m + 1] - fits[m]) / learning_rate for m in range(n_steps)]
    rss = [float(np.sum((y - fit) ** 2)) for fit in fits]

    x = X[:, 0]
    figure, axes = plt.subplots(n_steps, 2, figsize=(11, 2.6 * n_steps), sharex=True,
                                squeeze=False)
    for m in range(n_steps):
        left, right = axes[m]
        left.scatter(x, y, s=10, color="0.55", label="data")
        left.plot(x, fits[m], color="tab:blue", drawstyle="steps-mid",
                  label=f"F_{m} (RSS {rss[m]:.2f})")
        left.plot(x, fits[m + 1], color="tab:red", drawstyle="steps-mid", linestyle="--",
                  label=f"F_{m + 1} (RSS {rss[m + 1]:.2f})")
        left.set_title(f"step {m + 1}: F_{m + 1} = F_{m} + {learning_rate:g} h_{m + 1}")
        left.legend(loc="upper right", fontsize="small")
        right.axhline(0.0, color="0.7", linewidth=0.8)
        right.scatter(x, residuals[m], s=10, color="tab:green", label=f"y - F_{m}")
        right.plot(x, tree_fits[m], color="black", drawstyle="steps-mid",
                   label=f"tree h_{m + 1}")
        right.set_title(f"residuals y - F_{m} and the depth-{max_depth} tree fitted to them")
        right.legend(loc="upper right", fontsize="small")
    for ax in axes[-1]:
        ax.set_xlabel("x")
    figure.suptitle(f"Gradient boosting (squared error, learning rate {learning_rate:g}) on "
                    f"{n_samples} samples of sin(2 pi x) + noise")
    figure.tight_layout()
    path = out_dir / "boosting_residuals.png"
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return {"path": path, "model": model, "X": X, "y": y, "fits": fits,
            "residuals": residuals, "tree_fits": tree_fits, "rss": rss}


if __name__ == "__main__":
    result = main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT_DIR)
    steps = " -> ".join(f"{value:.2f}" for value in result["rss"])
    print(f"wrote {result['path']}: residual sum of squares {steps}")
