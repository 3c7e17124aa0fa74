"""Cost of ``ccp_alpha="cv"``: time and peak memory against plain fits of the same tree.

For each row count, a fresh interpreter (so that peak memory is the fit's own) fits a
fully grown tree twice on the same synthetic data: once with ``ccp_alpha=0.0`` (one tree)
and once with ``ccp_alpha="cv"`` (the full tree, ``ccp_cv`` fold trees, the pruning path
and the held-out evaluation of every subtree of it). The runner prints, per row count,
both times, their ratio (``cv / fit``: 1 + ccp_cv folds is the floor, since every fold
grows a tree) and the process's peak resident memory after each (``ru_maxrss``), as well
as the peak Python-level allocation of the cv fit (tracemalloc; numba's and numpy's
buffers are counted, compiled code's stack is not).

Each child warms numba up on a small slice first, so the times exclude compilation.

Data: Friedman #1 (10 features, noise 1.0) for regression, ``make_classification`` (20
features, 3 classes, 30% of the labels drawn at random) for classification;
both are noisy, so the full tree has about as many leaves as rows and the pruning path
about as many steps, which is what made the former rows x subtrees matrix quadratic.

On 2 shared cores (nice 10, load about 6), before (the dense rows x subtrees matrix)
and after (difference arrays) for regression: 20,000 rows 225 s and 2.1 GiB peak RSS ->
1.4 s and 0.35 GiB; 50,000 rows 938 s and 7.6 GiB -> 3.6 s and 0.39 GiB; 200,000 rows
(formerly out of reach: 62 GB for the matrix alone) 16 s and 0.6 GiB, 6.0 plain fits.

Usage::

    .venv/bin/python benchmarks/bench_ccp_cv.py                      # 20k, 50k, 200k, both tasks
    .venv/bin/python benchmarks/bench_ccp_cv.py --rows 20000 --task regression
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
from sklearn.datasets import make_classification, make_friedman1
from silva import DecisionTreeClassifier, DecisionTreeRegressor

n, task, folds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
if task == "regression":
    X, y = make_friedman1(n_samples=n, n_features=10, noise=1.0, random_state=0)
    model = DecisionTreeRegressor
else:
    X, y = make_classification(n_samples=n, n_features=20, n_informative=8, n_classes=3,
                               flip_y=0.3, random_state=0)
    model = DecisionTreeClassifier
model(ccp_alpha="cv", ccp_cv=folds, random_state=0).fit(X[:300], y[:300])  # compile

def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

start = time.perf_counter()
plain = model(random_state=0).fit(X, y)
fit_s = time.perf_counter() - start
fit_rss = peak_mib()
tracemalloc.start()
start = time.perf_counter()
cv = model(ccp_alpha="cv", ccp_cv=folds, random_state=0).fit(X, y)
cv_s = time.perf_counter() - start
_, traced = tracemalloc.get_traced_memory()
tracemalloc.stop()
print(json.dumps(dict(fit_s=fit_s, cv_s=cv_s, fit_rss_mib=fit_rss, cv_rss_mib=peak_mib(),
                      cv_traced_mib=traced / 2**20, leaves_full=int(plain.get_n_leaves()),
                      candidates=int(cv.ccp_cv_results_.ccp_alphas.size),
                      leaves_cv=int(cv.get_n_leaves()), alpha=float(cv.ccp_alpha_))))
"""


def run(n, task, folds, timeout):
    completed = subprocess.run([sys.executable, "-c", CHILD, str(n), task, str(folds)],
                               capture_output=True, text=True, timeout=timeout)
    if completed.returncode != 0:
        raise RuntimeError(completed.stderr.strip().splitlines()[-1])
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[20_000, 50_000, 200_000])
    parser.add_argument("--task", choices=["regression", "classification", "both"],
                        default="both")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds per child process (default: 3600)")
    args = parser.parse_args(argv)
    tasks = ["regression", "classification"] if args.task == "both" else [args.task]
    header = (f"{'task':<15}{'rows':>8}{'fit s':>9}{'cv s':>9}{'cv/fit':>8}"
              f"{'fit MiB':>9}{'cv MiB':>9}{'traced':>9}{'leaves':>8}{'cands':>8}{'kept':>6}")
    print(header)
    print("-" * len(header))
    for task in tasks:
        for n in args.rows:
            r = run(n, task, args.folds, args.timeout)
            print(f"{task:<15}{n:>8}{r['fit_s']:>9.2f}{r['cv_s']:>9.2f}"
                  f"{r['cv_s'] / r['fit_s']:>8.1f}{r['fit_rss_mib']:>9.0f}"
                  f"{r['cv_rss_mib']:>9.0f}{r['cv_traced_mib']:>9.0f}{r['leaves_full']:>8}"
                  f"{r['candidates']:>8}{r['leaves_cv']:>6}", flush=True)


if __name__ == "__main__":
    main()
