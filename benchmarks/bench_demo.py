"""Every row of ``silva demo`` timed beside its peers' counterpart.

``silva demo`` (what ``make run`` shows a newcomer) fits silva's estimators on the three
scikit-learn datasets it ships with. This fits each row's estimator and its peers'
closest counterpart, with the same parameters where they have them, on the demo's own
split, and reports the fit times and their ratio:

* CART trees, forests, bagging, AdaBoost, voting and stacking: scikit-learn's estimator
  of the same name (voting and stacking with scikit-learn's members: a tree, a forest
  and HistGradientBoosting in place of silva's boosting);
* gradient boosting: LightGBM and XGBoost (silva's defaults are LightGBM's: 100
  iterations, 31 leaves, learning rate 0.1, 20 samples a leaf; XGBoost grows the same
  leaf-wise trees, ``grow_policy="lossguide"``), the faster of the two;
* ID3, C4.5 and the twoing criterion with ``ccp_alpha="cv"``: no peer has them.

Every library runs with its defaults' threads (scikit-learn's forests, bagging and
AdaBoost and silva's on one thread, the boosting libraries on every core), each library
in its own process. A fit's time is the fastest of repeated fits within a 0.3 s budget
(3 to 50), after a warm-up fit.

    python benchmarks/bench_demo.py [--write-results]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from _machine import command_line, machine_line, publish, utc_now

BUDGET_S = 0.3


def _silva_rows():
    from silva.cli.demo import DEMO_ENTRIES

    return [(entry.dataset, entry.name, entry.factory) for entry in DEMO_ENTRIES]


def _boosting_peers(factory):
    """LightGBM's and XGBoost's counterparts of a silva boosting row."""
    import lightgbm
    import xgboost
    from sklearn.base import clone

    estimator = factory()
    params = estimator.get_params()
    classifier = "Classifier" in type(estimator).__name__
    depth = params["max_depth"] or -1
    lgbm = (lightgbm.LGBMClassifier if classifier else lightgbm.LGBMRegressor)(
        n_estimators=params["n_estimators"], learning_rate=params["learning_rate"],
        num_leaves=params["max_leaf_nodes"], max_depth=depth,
        min_child_samples=params["min_samples_leaf"], verbose=-1, random_state=0)
    xgb = (xgboost.XGBClassifier if classifier else xgboost.XGBRegressor)(
        n_estimators=params["n_estimators"], learning_rate=params["learning_rate"],
        max_leaves=params["max_leaf_nodes"], max_depth=max(depth, 0),
        grow_policy="lossguide", tree_method="hist", random_state=0)
    return {"lightgbm": lambda: clone(lgbm), "xgboost": lambda: clone(xgb)}


def _sklearn_peer(name, factory):
    """scikit-learn's estimator of the same name with the same parameters, or None."""
    from sklearn import ensemble, tree

    estimator = factory()
    params = estimator.get_params(deep=False)
    if name.startswith("DecisionTree"):
        if params["criterion"] not in ("gini", "entropy", "squared_error") \
                or isinstance(params["ccp_alpha"], str):
            return None
        keep = ("criterion", "max_depth", "min_samples_leaf", "random_state")
        peer = getattr(tree, name)
        return lambda: peer(**{key: params[key] for key in keep})
    if name in ("RandomForestClassifier", "RandomForestRegressor", "ExtraTreesClassifier",
                "ExtraTreesRegressor"):
        keep = ("n_estimators", "min_samples_leaf", "oob_score", "random_state")
        peer = getattr(ensemble, name)
        return lambda: peer(**{key: params[key] for key in keep})
    if name.startswith("Bagging"):
        peer = getattr(ensemble, name)
        return lambda: peer(n_estimators=params["n_estimators"], random_state=0)
    if name.startswith("AdaBoost"):
        peer = getattr(ensemble, name)
        learner = params.get("estimator")
        depth = None if learner is None else learner.get_params()["max_depth"]
        base = (tree.DecisionTreeClassifier if "Classifier" in name
                else tree.DecisionTreeRegressor)
        default_depth = 1 if "Classifier" in name else 3
        return lambda: peer(base(max_depth=depth or default_depth),
                            n_estimators=params["n_estimators"], random_state=0)
    if name.startswith(("Voting", "Stacking")):
        classifier = "Classifier" in name
        peer = getattr(ensemble, name)
        extra = {"voting": params["voting"]} if name.startswith("Voting") else {}

        def members():
            return [("tree", (tree.DecisionTreeClassifier if classifier
                              else tree.DecisionTreeRegressor)(max_depth=5, random_state=0)),
                    ("rf", (ensemble.RandomForestClassifier if classifier
                            else ensemble.RandomForestRegressor)(n_estimators=50,
                                                                  random_state=0)),
                    ("gbm", (ensemble.HistGradientBoostingClassifier if classifier
                             else ensemble.HistGradientBoostingRegressor)(random_state=0))]
        return lambda: peer(members(), **extra)
    return None


def _fastest_fit_ms(make, X, y):
    make().fit(X, y)  # warm-up: numba's cache, thread pools
    seconds = []
    deadline = time.perf_counter() + BUDGET_S
    while len(seconds) < 3 or (time.perf_counter() < deadline and len(seconds) < 50):
        start = time.perf_counter()
        make().fit(X, y)
        seconds.append(time.perf_counter() - start)
    return 1e3 * min(seconds)


def run_child(library):
    """Print one JSON dict: row index -> fit ms of ``library``'s counterpart."""
    from silva.cli.demo import load_dataset

    datasets = {}
    times = {}
    for index, (dataset, name, factory) in enumerate(_silva_rows()):
        if library == "silva":
            makers = {"silva": factory}
        elif name.startswith("GradientBoosting"):
            makers = _boosting_peers(factory) if library == "boosting" else {}
        else:
            peer = _sklearn_peer(name, factory) if library == "sklearn" else None
            makers = {} if peer is None else {"sklearn": peer}
        if not makers:
            continue
        data = datasets.setdefault(dataset, load_dataset(dataset))
        times[index] = {key: _fastest_fit_ms(make, data.X_train, data.y_train)
                        for key, make in makers.items()}
        print(f"{library}: {dataset} {name} {times[index]}", file=sys.stderr, flush=True)
    print(json.dumps(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write-results", action="store_true",
                        help="append the table to benchmarks/RESULTS.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        run_child(args.child)
        return
    measured = {}
    for library in ("silva", "sklearn", "boosting"):
        child = subprocess.run([sys.executable, __file__, "--child", library],
                               capture_output=True, text=True, check=True)
        measured[library] = {int(k): v for k, v in
                             json.loads(child.stdout.strip().splitlines()[-1]).items()}
    from silva.cli.describe import describe_params

    lines = [f"## {utc_now()} — `silva demo`'s rows beside their peers (bench_demo.py)", "",
             f"- machine: {machine_line()}",
             f"- command: `{command_line('bench_demo.py', argv)}`",
             "- fastest of repeated fits (3-50 within 0.3 s) after a warm-up; each library in "
             "its own process with its default threads; peers: scikit-learn's estimator of "
             "the same name, for boosting the faster of LightGBM and XGBoost", "",
             "| dataset | model | params | silva ms | peer | peer ms | silva / peer |",
             "|---|---|---|---:|---|---:|---:|"]
    for index, (dataset, name, factory) in enumerate(_silva_rows()):
        silva_ms = measured["silva"][index]["silva"]
        peers = {**measured["sklearn"].get(index, {}), **measured["boosting"].get(index, {})}
        params = describe_params(factory()) or "defaults"
        if peers:
            peer, peer_ms = min(peers.items(), key=lambda item: item[1])
            cells = f"{peer} | {peer_ms:.2f} | {silva_ms / peer_ms:.2f}x"
        else:
            cells = "– | – | –"
        lines.append(f"| {dataset} | {name} | {params} | {silva_ms:.2f} | {cells} |")
    publish(lines, args.write_results)


if __name__ == "__main__":
    main()
