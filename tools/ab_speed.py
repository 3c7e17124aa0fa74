"""One fit workload, timed in this process: for before/after comparisons of the engine.

    PYTHONPATH=<checkout> python tools/ab_speed.py CASE [REPEAT]

prints the best of REPEAT (default 3) fit times in seconds, after one untimed warm-up
fit on 3,000 rows (so that compilation is not counted). Run it alternately with the
old and the new checkout on PYTHONPATH, several processes each, and compare the
best; the cases are those of benchmarks/RESULTS.md's restructure table.
"""

import sys
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, make_classification, make_regression

import silva


def _classification(n_samples, n_classes=2):
    return make_classification(n_samples, 28, n_informative=14, n_classes=n_classes,
                               n_clusters_per_class=2, random_state=0)


def _regression(n_samples):
    return make_regression(n_samples, 28, n_informative=14, noise=10, random_state=0)


# case -> (data, estimator factory)
CASES = {
    "gb_bin": (lambda: _classification(200_000),
               lambda: silva.GradientBoostingClassifier(n_estimators=100, random_state=0)),
    "gb_multi": (lambda: _classification(50_000, 10),
                 lambda: silva.GradientBoostingClassifier(n_estimators=30, random_state=0)),
    "gb_reg_depth": (lambda: _regression(100_000),
                     lambda: silva.GradientBoostingRegressor(
                         n_estimators=100, growth="depthwise", max_depth=6,
                         max_leaf_nodes=None, random_state=0)),
    "gb_cancer": (lambda: load_breast_cancer(return_X_y=True),
                  lambda: silva.GradientBoostingClassifier(n_estimators=100, random_state=0)),
    "gb_digits": (lambda: load_digits(return_X_y=True),
                  lambda: silva.GradientBoostingClassifier(n_estimators=100, random_state=0)),
    "rf": (lambda: _classification(50_000),
           lambda: silva.RandomForestClassifier(n_estimators=100, random_state=0)),
    "et": (lambda: _classification(50_000),
           lambda: silva.ExtraTreesClassifier(n_estimators=50, random_state=0)),
    "dt": (lambda: _classification(200_000),
           lambda: silva.DecisionTreeClassifier(random_state=0)),
    "dtr_best": (lambda: _regression(200_000),
                 lambda: silva.DecisionTreeRegressor(max_leaf_nodes=1000, random_state=0)),
    # Small tables, where binning and per-call costs weigh most (issue 18).
    "dt_1k": (lambda: _classification(1000),
              lambda: silva.DecisionTreeClassifier(random_state=0)),
    "dt_5k": (lambda: _classification(5000),
              lambda: silva.DecisionTreeClassifier(random_state=0)),
    "rf_2k": (lambda: _classification(2000),
              lambda: silva.RandomForestClassifier(n_estimators=100, random_state=0)),
    "gb_2k": (lambda: _classification(2000),
              lambda: silva.GradientBoostingClassifier(n_estimators=100, random_state=0)),
}


def main(argv):
    case = argv[0]
    repeat = int(argv[1]) if len(argv) > 1 else 3
    make_data, make_estimator = CASES[case]
    X, y = make_data()
    make_estimator().fit(X[:3000], y[:3000])
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        make_estimator().fit(X, y)
        best = min(best, time.perf_counter() - start)
    print(f"{best:.4f}")


if __name__ == "__main__":
    main(sys.argv[1:])
