"""Cold start: what a new user waits for, estimator by estimator.

For each public estimator, two fresh Python processes share one numba cache directory
that starts empty:

1. *cold*: times ``import silva``, the first use of the estimator's class (which imports
   its module, scikit-learn and numba: ``import silva`` itself is lazy), the first
   ``fit`` (compiling every kernel it reaches; its CPU time too: compiling is
   single-threaded, so on a shared machine the CPU time is the steadier figure) and the
   first ``predict``;
2. *warm*: the same in a new process, the cache now filled, plus a second ``fit`` of the
   same model (the *refit*, nothing left to load), so that "warm first fit - refit" is the
   cost of loading the cache.

Classifiers fit breast cancer, regressors diabetes (both shipped with scikit-learn).
Each estimator gets its own empty cache, so no estimator profits from another's
compiles. Run it on a quiet machine: compile time is CPU time.

    python benchmarks/bench_cold_start.py                 # every estimator
    python benchmarks/bench_cold_start.py --estimators DecisionTreeClassifier
    python benchmarks/bench_cold_start.py --json cold.json

Targets (the cold-start issue): import <= 1 s; cold first fit <= 20 s per estimator and
<= 10 s for the single trees; warm first fit <= 0.5 s over the refit.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

from _machine import cpu_model

ESTIMATORS = [
    "DecisionTreeClassifier", "DecisionTreeRegressor",
    "RandomForestClassifier", "RandomForestRegressor",
    "ExtraTreesClassifier", "ExtraTreesRegressor",
    "BaggingClassifier", "BaggingRegressor",
    "AdaBoostClassifier", "AdaBoostRegressor",
    "GradientBoostingClassifier", "GradientBoostingRegressor",
    "ID3Classifier", "C45Classifier",
    "VotingClassifier", "VotingRegressor", "StackingClassifier", "StackingRegressor",
]

# Runs in the child process: prints one JSON line of timings.
_CHILD = r"""
import json, sys, time
start = time.perf_counter()
import silva
import_s = time.perf_counter() - start
name = sys.argv[1]
start = time.perf_counter()
cls = getattr(silva, name)  # imports the estimator's module (scikit-learn, numba)
module_s = time.perf_counter() - start
from sklearn.datasets import load_breast_cancer, load_diabetes
classifier = name.endswith("Classifier")
X, y = (load_breast_cancer if classifier else load_diabetes)(return_X_y=True)
if name.startswith(("Voting", "Stacking")):
    tree = silva.DecisionTreeClassifier if classifier else silva.DecisionTreeRegressor
    forest = silva.RandomForestClassifier if classifier else silva.RandomForestRegressor
    model = cls([("tree", tree(max_depth=4)), ("forest", forest(n_estimators=10))])
else:
    model = cls()
import resource
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
start, cpu_start = time.perf_counter(), cpu()
model.fit(X, y)
fit_s, fit_cpu_s = time.perf_counter() - start, cpu() - cpu_start
start = time.perf_counter(); model.predict(X); predict_s = time.perf_counter() - start
start = time.perf_counter(); model.fit(X, y); refit_s = time.perf_counter() - start
print(json.dumps(dict(import_s=import_s, module_s=module_s, fit_s=fit_s, fit_cpu_s=fit_cpu_s,
                      predict_s=predict_s, refit_s=refit_s)))
"""


def run_child(name, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, SILVA_COMPILE_NOTICE="0")
    result = subprocess.run([sys.executable, "-c", _CHILD, name], env=env,
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--estimators", nargs="+", default=ESTIMATORS)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)

    print(f"CPU: {cpu_model()}; {os.cpu_count()} CPUs; Python {platform.python_version()}")
    header = (f"{'estimator':28s} {'import':>6s} {'module':>6s} {'cold fit':>8s} {'(cpu)':>6s} "
              f"{'cold pred':>9s} {'warm fit':>8s} {'refit':>6s} {'load':>5s}")
    print(header)
    print("-" * len(header))
    rows = {}
    for name in args.estimators:
        with tempfile.TemporaryDirectory(prefix="silva-cold-") as cache_dir:
            cold = run_child(name, cache_dir)
            warm = run_child(name, cache_dir)
        rows[name] = dict(cold=cold, warm=warm)
        print(f"{name:28s} {cold['import_s']:6.2f} {cold['module_s']:6.2f} "
              f"{cold['fit_s']:8.2f} {cold['fit_cpu_s']:6.1f} {cold['predict_s']:9.2f} "
              f"{warm['fit_s']:8.2f} {warm['refit_s']:6.3f} "
              f"{warm['fit_s'] - warm['refit_s']:5.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as file:
            json.dump(dict(cpu=cpu_model(), rows=rows), file, indent=2)


if __name__ == "__main__":
    main()
