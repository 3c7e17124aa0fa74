"""C4.5 and ID3 against CART (silva's and scikit-learn's) on the datasets shipped with
scikit-learn, with and without missing values, in one process.

For each dataset (breast_cancer, digits, iris, wine) and each setting ("complete", and
"20% missing": every value of X independently set to NaN with probability 0.2, a fixed
seed), every model is scored by stratified k-fold cross-validation (``--folds``, default
5, fixed seed; the same folds for every model):

* accuracy: mean (and standard deviation) of the held-out fold accuracies;
* leaves and nodes: mean over folds of the fitted tree's size (for the multiway trees of
  C4.5 and ID3, nodes are the tree's own nodes: a test with k branches is one node);
* fit ms: mean fit time over folds. Each model is fitted once, untimed, before the folds,
  so that numba's compilation (silva) is not counted; ``--cold`` also times the first fit
  of C4.5 in a fresh interpreter (numba's on-disk cache warm).

Models: ``C4.5`` (silva.classic.C45Classifier, defaults: CF 0.25, MINOBJS 2), ``C4.5
unpruned`` (confidence=1.0), ``ID3`` (silva.classic.ID3Classifier, 10 quantile bins),
``silva CART`` (silva.DecisionTreeClassifier, defaults: gini, fully grown) and ``sklearn
CART`` (sklearn.tree.DecisionTreeClassifier, defaults; scikit-learn >= 1.3 accepts NaN).

Usage::

    .venv/bin/python benchmarks/bench_classic.py
    .venv/bin/python benchmarks/bench_classic.py --folds 10 --datasets iris wine --cold
"""

from __future__ import annotations

import argparse
import datetime
import platform
import subprocess
import sys
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.model_selection import StratifiedKFold
from sklearn.tree import DecisionTreeClassifier as SkTree

from silva.classic import C45Classifier, ID3Classifier
from silva.decision_tree import DecisionTreeClassifier

DATASETS = {
    "breast_cancer": load_breast_cancer,
    "digits": load_digits,
    "iris": load_iris,
    "wine": load_wine,
}
MODELS = {
    "C4.5": lambda: C45Classifier(),
    "C4.5 unpruned": lambda: C45Classifier(confidence=1.0),
    "ID3": lambda: ID3Classifier(),
    "silva CART": lambda: DecisionTreeClassifier(random_state=0),
    "sklearn CART": lambda: SkTree(random_state=0),
}


def tree_size(model):
    tree = model.tree_
    n_leaves = model.get_n_leaves()
    return n_leaves, int(tree.node_count)


def with_missing(X, fraction, seed):
    rng = np.random.default_rng(seed)
    X = X.astype(np.float64, copy=True)
    X[rng.random(X.shape) < fraction] = np.nan
    return X


def evaluate(factory, X, y, folds):
    accuracies, leaves, nodes, times = [], [], [], []
    factory().fit(X[:50], y[:50])  # warm-up: compile (or load) the numba kernels
    for train, test in folds:
        model = factory()
        start = time.perf_counter()
        model.fit(X[train], y[train])
        times.append(time.perf_counter() - start)
        accuracies.append(float(np.mean(model.predict(X[test]) == y[test])))
        n_leaves, n_nodes = tree_size(model)
        leaves.append(n_leaves)
        nodes.append(n_nodes)
    return (np.mean(accuracies), np.std(accuracies), np.mean(leaves), np.mean(nodes),
            1000 * np.mean(times))


def cold_start(dataset):
    code = (
        "import time; t = time.perf_counter(); "
        "from silva.classic import C45Classifier; "
        f"from sklearn.datasets import load_{dataset} as load; "
        "X, y = load(return_X_y=True); t1 = time.perf_counter(); "
        "C45Classifier().fit(X, y); t2 = time.perf_counter(); "
        "print(f'{t1 - t:.2f} {t2 - t1:.2f}')"
    )
    outputs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True).stdout.split() for _ in range(2)]
    return outputs[-1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--missing", type=float, default=0.2)
    parser.add_argument("--cold", action="store_true", help="time C4.5's first fit in a "
                        "fresh interpreter")
    args = parser.parse_args(argv)

    print(f"# bench_classic.py, {datetime.date.today()}, {platform.machine()} "
          f"{platform.processor() or ''} python {platform.python_version()}, "
          f"{args.folds}-fold CV")
    header = ("| dataset | missing | model | accuracy | leaves | nodes | fit ms |\n"
              "|---|---|---|---|---|---|---|")
    print(header)
    for name in args.datasets:
        X, y = DATASETS[name](return_X_y=True)
        for missing in (0.0, args.missing):
            Xm = with_missing(X, missing, seed=0) if missing else X
            folds = list(StratifiedKFold(args.folds, shuffle=True, random_state=0).split(Xm, y))
            for model_name in args.models:
                acc, sd, leaves, nodes, ms = evaluate(MODELS[model_name], Xm, y, folds)
                print(f"| {name} | {missing:.0%} | {model_name} | {acc:.3f} ± {sd:.3f} | "
                      f"{leaves:.1f} | {nodes:.1f} | {ms:.1f} |", flush=True)
    if args.cold:
        for name in args.datasets:
            imports, fit = cold_start(name)
            print(f"cold start, {name}: import {imports} s, first C4.5 fit {fit} s")


if __name__ == "__main__":
    main()
