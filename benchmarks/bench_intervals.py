"""Prediction intervals: silva's ``predict_interval`` against MAPIE on the same models.

Issue 24, item 2: over at least five regression datasets, the empirical coverage of a
90% interval (averaged over several random splits) should be within 1.5 points of 90%,
and the mean width no wider than MAPIE's equivalent method on the same model.

Datasets (all offline): ``make_friedman1`` (noise 1), ``make_friedman2`` (noise 125),
``make_friedman3`` (noise 0.1), a heteroscedastic synthetic set (noise scale growing
tenfold along x0) and scikit-learn's shipped ``diabetes`` (442 rows). Synthetic sets
draw 1,000 training, 500 calibration and 2,000 test rows per split; diabetes is split
50/25/25 at random. Each split has its own seed.

Methods, each compared with MAPIE 1.x's equivalent on the same model:

- ``jackknife+``: jackknife+-after-bootstrap (Kim et al. 2020) of a silva
  ``RandomForestRegressor`` (``max_features=1.0``: bagged fully grown trees, ``--trees``
  trees, ``oob_score=True``) fitted on training + calibration rows, against MAPIE's
  ``JackknifeAfterBootstrapRegressor`` (``method="plus"``, mean aggregation) bagging
  silva's ``DecisionTreeRegressor`` on the very bootstrap samples of the forest's trees
  (a MAPIE ``Subsample`` that yields them). MAPIE refits one tree per sample on the
  repeated rows (binning each sample anew); silva reads its forest's out-of-bag rows.
- ``split``: split conformal of a silva ``GradientBoostingRegressor`` fitted on the
  training rows, against MAPIE's ``SplitConformalRegressor(prefit=True)`` on that fitted
  model, both calibrated on the calibration rows.
- ``cqr``: conformalized quantile regression: silva's ``calibrate_intervals(method=
  "cqr")`` against MAPIE's ``ConformalizedQuantileRegressor(prefit=True)`` given silva's
  two quantile models (and a median model) and ``symmetric_correction=True`` (Romano et
  al.'s symmetric correction, which silva uses).
- ``quantile`` (silva only, no guarantee, for reference): the random forest's
  uncorrected 5% and 95% quantiles (quantile regression forest).

MAPIE is imported here only (``pip install mapie``); without it the silva rows are
printed alone. Timings are not the point of this benchmark and are not reported.

Usage::

    .venv/bin/python benchmarks/bench_intervals.py              # 20 splits per dataset
    .venv/bin/python benchmarks/bench_intervals.py --splits 3 --trees 50
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np
from _machine import machine_line
from sklearn.datasets import load_diabetes, make_friedman1, make_friedman2, make_friedman3

from silva import DecisionTreeRegressor, GradientBoostingRegressor, RandomForestRegressor

CONFIDENCE = 0.9
N_TRAIN, N_CAL, N_TEST = 1000, 500, 2000
COVERAGE_TOLERANCE = 0.015


def heteroscedastic(n, random_state):
    rng = np.random.RandomState(random_state)
    X = rng.uniform(0, 4, size=(n, 5))
    return X, np.sin(2 * X[:, 0]) + X[:, 1] + rng.normal(size=n) * (0.2 + 0.5 * X[:, 0])


SYNTHETIC = {
    "friedman1": lambda n, seed: make_friedman1(n, noise=1.0, random_state=seed),
    "friedman2": lambda n, seed: make_friedman2(n, noise=125.0, random_state=seed),
    "friedman3": lambda n, seed: make_friedman3(n, noise=0.1, random_state=seed),
    "heteroscedastic": heteroscedastic,
}


def split(name, seed):
    """(train, calibration, test) pairs of one split."""
    if name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
        order = np.random.RandomState(seed).permutation(len(y))
        a, b = len(y) // 2, 3 * len(y) // 4
        parts = order[:a], order[a:b], order[b:]
        return [(X[p], y[p]) for p in parts]
    X, y = SYNTHETIC[name](N_TRAIN + N_CAL + N_TEST, seed)
    bounds = [0, N_TRAIN, N_TRAIN + N_CAL, len(y)]
    return [(X[a:b], y[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]


def scores(intervals, y):
    intervals = np.asarray(intervals).reshape(len(y), 2)
    covered = (y >= intervals[:, 0]) & (y <= intervals[:, 1])
    return covered.mean(), (intervals[:, 1] - intervals[:, 0]).mean()


def _forest_bags(subsample_class, forest, n_samples):
    """A MAPIE resampling that draws the forest's own bootstrap samples: each tree's
    draw is scikit-learn's, ``randint(0, n, n)`` from a ``RandomState`` of its seed."""

    class ForestBags(subsample_class):
        def split(self, X, *args, **kwargs):
            indices = np.arange(n_samples)
            for tree in forest.estimators_:
                drawn = np.random.RandomState(tree.random_state).randint(0, n_samples,
                                                                         n_samples)
                yield drawn, np.setdiff1d(indices, drawn)

    return ForestBags(n_resamplings=len(forest.estimators_))


def run_split(name, seed, n_trees, mapie, mapie_subsample=None):
    """{method: {"silva": (coverage, width), "mapie": (coverage, width)}} of one split."""
    (X, y), (X_cal, y_cal), (X_test, y_test) = split(name, seed)
    results = {}
    X_all, y_all = np.vstack([X, X_cal]), np.concatenate([y, y_cal])

    forest = RandomForestRegressor(n_estimators=n_trees, max_features=1.0, oob_score=True,
                                   random_state=seed).fit(X_all, y_all)
    results["jackknife+"] = {"silva": scores(forest.predict_interval(X_test, CONFIDENCE),
                                             y_test)}
    results["quantile"] = {"silva": scores(
        forest.predict_interval(X_test, CONFIDENCE, method="quantile"), y_test)}

    boosting = GradientBoostingRegressor(n_estimators=100, learning_rate=0.05,
                                         min_samples_leaf=10, random_state=seed).fit(X, y)
    boosting.calibrate_intervals(X_cal, y_cal)
    boosting.calibrate_intervals(X_cal, y_cal, method="cqr", confidence=CONFIDENCE,
                                 X_train=X, y_train=y)
    results["split"] = {"silva": scores(boosting.predict_interval(X_test, CONFIDENCE),
                                        y_test)}
    results["cqr"] = {"silva": scores(
        boosting.predict_interval(X_test, CONFIDENCE, method="cqr"), y_test)}
    if mapie is None:
        return results

    jab = mapie.JackknifeAfterBootstrapRegressor(
        estimator=DecisionTreeRegressor(), confidence_level=CONFIDENCE, method="plus",
        resampling=_forest_bags(mapie_subsample, forest, len(y_all)),
        aggregation_method="mean")
    jab.fit_conformalize(X_all, y_all)
    results["jackknife+"]["mapie"] = scores(jab.predict_interval(X_test)[1], y_test)

    scr = mapie.SplitConformalRegressor(estimator=boosting, confidence_level=CONFIDENCE,
                                        prefit=True)
    scr.conformalize(X_cal, y_cal)
    results["split"]["mapie"] = scores(scr.predict_interval(X_test)[1], y_test)

    cqr = boosting._conformal["cqr"]
    median = GradientBoostingRegressor(**{**boosting.get_params(), "loss": "quantile",
                                          "alpha": 0.5}).fit(X, y)
    mcqr = mapie.ConformalizedQuantileRegressor(
        estimator=[cqr["lower_model"], cqr["upper_model"], median],
        confidence_level=CONFIDENCE, prefit=True)
    mcqr.conformalize(X_cal, y_cal)
    results["cqr"]["mapie"] = scores(
        mcqr.predict_interval(X_test, symmetric_correction=True)[1], y_test)
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--datasets", nargs="+",
                        default=[*SYNTHETIC, "diabetes"],
                        choices=[*SYNTHETIC, "diabetes"])
    args = parser.parse_args(argv)
    try:
        import mapie.regression as mapie
        from mapie.subsample import Subsample as mapie_subsample
    except ImportError:
        print("MAPIE is not installed (pip install mapie): silva's rows only.",
              file=sys.stderr)
        mapie = mapie_subsample = None
    print(f"# Prediction intervals at {CONFIDENCE:.0%}: mean over {args.splits} splits; "
          f"forests of {args.trees} trees")
    print(f"# {machine_line()}")
    print()
    print("| dataset | method | silva coverage | MAPIE coverage | silva width | "
          "MAPIE width | width silva/MAPIE | coverage target |")
    print("|---|---|---|---|---|---|---|---|")
    failures = []
    for name in args.datasets:
        per_method = {}
        for seed in range(args.splits):
            with warnings.catch_warnings():
                # MAPIE warns about its own deprecations and small calibration sets.
                warnings.simplefilter("ignore")
                for method, by_library in run_split(name, seed, args.trees, mapie,
                                                    mapie_subsample).items():
                    for library, values in by_library.items():
                        per_method.setdefault(method, {}).setdefault(library, []).append(
                            values)
        for method, by_library in per_method.items():
            silva_cov, silva_width = np.mean(by_library["silva"], axis=0)
            meets = abs(silva_cov - CONFIDENCE) <= COVERAGE_TOLERANCE
            if "mapie" in by_library:
                mapie_cov, mapie_width = np.mean(by_library["mapie"], axis=0)
                mapie_cells = (f"{mapie_cov:.3f} | ", f"{mapie_width:.4g} | ",
                               f"{silva_width / mapie_width:.4f} | ")
            else:
                mapie_cells = ("- | ", "- | ", "- | ")
            target = "met" if meets else "MISSED"
            if method == "quantile":
                target = "(no guarantee)"
            elif not meets:
                failures.append(f"{name} {method}")
            print(f"| {name} | {method} | {silva_cov:.3f} | {mapie_cells[0]}"
                  f"{silva_width:.4g} | {mapie_cells[1]}{mapie_cells[2]}{target} |")
    print()
    print(f"Coverage target: within {COVERAGE_TOLERANCE:.3f} of {CONFIDENCE}; missed: "
          f"{', '.join(failures) if failures else 'none'}.")


if __name__ == "__main__":
    main()
