"""AdaBoost, voting and stacking: silva against scikit-learn, side by side, in one process.

For each dataset shipped with scikit-learn (breast_cancer, digits: classification;
diabetes: regression), split 75/25 with ``random_state=0``, every model is fitted on the
training part and scored on the test part (accuracy or R^2). Fit time is the best of
``--repeat`` fits; every model is fitted once untimed first, so numba's compilation (and
the loading of its cache) is not counted.

The pairs compared:

* AdaBoost: silva's ``AdaBoostClassifier`` (SAMME, silva trees) against scikit-learn's
  (SAMME, scikit-learn trees) with the same depth and number of rounds; silva's Real
  AdaBoost (``algorithm="real"``, which scikit-learn no longer has) is listed alone.
  Regression: AdaBoost.R2 on both sides. scikit-learn's AdaBoostRegressor trains each
  round on a weighted bootstrap; silva's default passes weights instead, so silva is
  also run with ``resample=True`` (Drucker's original form).
* Voting and stacking: the same member models on both sides (a standardised logistic or
  ridge regression and k-nearest neighbours), plus each library's own decision tree, so
  the comparison is of the meta-estimators and of the trees.

Times are also given as the ratio scikit-learn / silva (above 1: silva faster), because
absolute times depend on the machine and its load.

Usage::

    .venv/bin/python benchmarks/bench_ensembles.py
    .venv/bin/python benchmarks/bench_ensembles.py --repeat 5 --datasets digits
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn import ensemble as sk_ensemble
from sklearn import tree as sk_tree
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from silva.adaboost import AdaBoostClassifier, AdaBoostRegressor
from silva.decision_tree import DecisionTreeClassifier, DecisionTreeRegressor
from silva.stacking import StackingClassifier, StackingRegressor
from silva.voting import VotingClassifier, VotingRegressor

DATASETS = {"breast_cancer": load_breast_cancer, "digits": load_digits,
            "diabetes": load_diabetes}
# Rounds and tree depth of AdaBoost per dataset: stumps on the binary problem, small
# trees on the 10-class one (a stump separates one digit at best).
ADABOOST = {"breast_cancer": (100, 1), "digits": (100, 3), "diabetes": (50, 3)}


def classification_pairs(dataset):
    n_rounds, depth = ADABOOST[dataset]

    def members(tree):
        return [("tree", tree),
                ("logistic", make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))),
                ("knn", make_pipeline(StandardScaler(), KNeighborsClassifier()))]

    silva_tree = DecisionTreeClassifier(max_depth=5, random_state=0)
    sk_tree_5 = sk_tree.DecisionTreeClassifier(max_depth=5, random_state=0)
    final = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    return [
        (f"AdaBoost SAMME, {n_rounds} x depth {depth}",
         lambda: AdaBoostClassifier(DecisionTreeClassifier(max_depth=depth),
                                    n_estimators=n_rounds, random_state=0),
         lambda: sk_ensemble.AdaBoostClassifier(
             sk_tree.DecisionTreeClassifier(max_depth=depth, random_state=0),
             n_estimators=n_rounds, random_state=0)),
        (f"AdaBoost real (SAMME.R), {n_rounds} x depth {depth}",
         lambda: AdaBoostClassifier(DecisionTreeClassifier(max_depth=depth),
                                    n_estimators=n_rounds, algorithm="real", random_state=0),
         None),
        ("Voting soft (tree5, logistic, knn)",
         lambda: VotingClassifier(members(silva_tree), voting="soft"),
         lambda: sk_ensemble.VotingClassifier(members(sk_tree_5), voting="soft")),
        ("Voting hard (tree5, logistic, knn)",
         lambda: VotingClassifier(members(silva_tree)),
         lambda: sk_ensemble.VotingClassifier(members(sk_tree_5))),
        ("Stacking 5-fold (tree5, logistic, knn)",
         lambda: StackingClassifier(members(silva_tree), final),
         lambda: sk_ensemble.StackingClassifier(members(sk_tree_5), final)),
    ]


def regression_pairs(dataset):
    n_rounds, depth = ADABOOST[dataset]

    def members(tree):
        return [("tree", tree), ("ridge", make_pipeline(StandardScaler(), Ridge())),
                ("knn", make_pipeline(StandardScaler(), KNeighborsRegressor()))]

    silva_tree = DecisionTreeRegressor(max_depth=4, random_state=0)
    sk_tree_4 = sk_tree.DecisionTreeRegressor(max_depth=4, random_state=0)
    def sk_adaboost():
        return sk_ensemble.AdaBoostRegressor(
            sk_tree.DecisionTreeRegressor(max_depth=depth, random_state=0),
            n_estimators=n_rounds, random_state=0)

    return [
        (f"AdaBoost.R2 linear, {n_rounds} x depth {depth}",
         lambda: AdaBoostRegressor(DecisionTreeRegressor(max_depth=depth),
                                   n_estimators=n_rounds, random_state=0),
         sk_adaboost),
        (f"AdaBoost.R2 linear resample, {n_rounds} x depth {depth}",
         lambda: AdaBoostRegressor(DecisionTreeRegressor(max_depth=depth),
                                   n_estimators=n_rounds, resample=True, random_state=0),
         sk_adaboost),
        ("Voting (tree4, ridge, knn)",
         lambda: VotingRegressor(members(silva_tree)),
         lambda: sk_ensemble.VotingRegressor(members(sk_tree_4))),
        ("Stacking 5-fold (tree4, ridge, knn)",
         lambda: StackingRegressor(members(silva_tree)),
         lambda: sk_ensemble.StackingRegressor(members(sk_tree_4))),
    ]


def measure(factory, X_train, y_train, X_test, y_test, repeat, classification):
    factory().fit(X_train, y_train)  # warm-up: JIT compilation / cache load
    best = np.inf
    for _ in range(repeat):
        model = factory()
        start = time.perf_counter()
        model.fit(X_train, y_train)
        best = min(best, time.perf_counter() - start)
    predicted = model.predict(X_test)
    score = accuracy_score(y_test, predicted) if classification else r2_score(y_test, predicted)
    return score, best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed fits per model")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS),
                        choices=list(DATASETS))
    args = parser.parse_args(argv)

    header = ("| dataset | model | metric | silva | sklearn | silva fit s | sklearn fit s "
              "| sklearn/silva time |")
    print(header)
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for dataset in args.datasets:
        X, y = DATASETS[dataset](return_X_y=True)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25,
                                                            random_state=0)
        classification = dataset != "diabetes"
        metric = "accuracy" if classification else "R2"
        pairs = classification_pairs(dataset) if classification else regression_pairs(dataset)
        for name, silva_factory, sklearn_factory in pairs:
            ours, our_time = measure(silva_factory, X_train, y_train, X_test, y_test,
                                     args.repeat, classification)
            if sklearn_factory is None:
                theirs_text, their_time_text, ratio = "n/a", "n/a", "n/a"
            else:
                theirs, their_time = measure(sklearn_factory, X_train, y_train, X_test,
                                             y_test, args.repeat, classification)
                theirs_text, their_time_text = f"{theirs:.4f}", f"{their_time:.3f}"
                ratio = f"{their_time / our_time:.2f}"
            print(f"| {dataset} | {name} | {metric} | {ours:.4f} | {theirs_text} | "
                  f"{our_time:.3f} | {their_time_text} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
