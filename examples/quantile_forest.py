"""Quantile regression forests: prediction intervals that widen where the noise does.

A random forest's prediction is a weighted mean of training targets (each training
sample weighted by how often it shares a leaf with x). Meinshausen (2006) keeps those
weights and reads off weighted *quantiles* instead: an estimate of the whole conditional
distribution of y given x, so one fitted forest gives any prediction interval
(:meth:`silva.RandomForestRegressor.predict_quantiles`).

The data are heteroscedastic: y = sin(x) + noise whose spread grows with x. The figure
shows the training data, the conditional median, and the 5%-95% band, which is narrow
on the left and wide on the right; the title gives the share of fresh test points that
fall in the band, to compare with the nominal 90% (the leaves adapt to the training
samples, so the band tends to be a little narrow: here about 85%).

Run ``python examples/quantile_forest.py [OUT_DIR]``; the figure is written to
``OUT_DIR/quantile_forest.png`` (default ``figures/``).
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from silva import RandomForestRegressor  # noqa: E402

DEFAULT_OUT_DIR = "figures"
QUANTILES = (0.05, 0.5, 0.95)


def make_data(n_samples, seed=0):
    """x uniform in [0, 10]; y = sin(x) + normal noise of standard deviation 0.05 + 0.1 x."""
    rng = np.random.RandomState(seed)
    x = rng.uniform(0.0, 10.0, n_samples)
    y = np.sin(x) + rng.normal(size=n_samples) * (0.05 + 0.1 * x)
    return x[:, None], y


def main(out_dir=DEFAULT_OUT_DIR, n_samples=1000, n_estimators=100):
    """Draw the figure into ``out_dir``; return a dict with ``path``, the fitted
    ``model``, the ``grid`` and its predicted ``quantiles`` (one column per level of
    ``QUANTILES``), the test data and the test ``coverage`` of the 5%-95% band."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    X, y = make_data(n_samples, seed=0)
    X_test, y_test = make_data(n_samples, seed=1)
    # Leaves of at least 10 samples: a quantile needs several targets per leaf to be read off.
    model = RandomForestRegressor(n_estimators=n_estimators, min_samples_leaf=10,
                                  random_state=0).fit(X, y)
    grid = np.linspace(0.0, 10.0, 400)[:, None]
    quantiles = model.predict_quantiles(grid, QUANTILES)
    low, high = model.predict_quantiles(X_test, [QUANTILES[0], QUANTILES[-1]]).T
    coverage = float(np.mean((y_test >= low) & (y_test <= high)))

    figure, ax = plt.subplots(figsize=(10, 5))
    ax.scatter(X[:, 0], y, s=6, color="0.6", label="training data")
    ax.fill_between(grid[:, 0], quantiles[:, 0], quantiles[:, -1], color="tab:blue",
                    alpha=0.25, label=f"{QUANTILES[0]:.0%} - {QUANTILES[-1]:.0%} quantiles")
    ax.plot(grid[:, 0], quantiles[:, 1], color="tab:blue", label="median")
    ax.plot(grid[:, 0], np.sin(grid[:, 0]), color="black", linestyle="--",
            linewidth=1.0, label="sin(x), the true median")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(f"Quantile regression forest ({n_estimators} trees, {n_samples} samples): "
                 f"{coverage:.1%} of test points inside the band")
    ax.legend(loc="lower left", fontsize="small")
    figure.tight_layout()
    path = out_dir / "quantile_forest.png"
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return {"path": path, "model": model, "grid": grid, "quantiles": quantiles,
            "X_test": X_test, "y_test": y_test, "coverage": coverage}


if __name__ == "__main__":
    result = main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT_DIR)
    print(f"wrote {result['path']}: {result['coverage']:.1%} of test points inside the "
          f"{QUANTILES[0]:.0%}-{QUANTILES[-1]:.0%} band")
