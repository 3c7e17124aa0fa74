"""SHAP values benchmark: silva's ``predict(X, pred_contrib=True)`` against
``shap.TreeExplainer`` on the same trees and LightGBM's ``pred_contrib`` on an equivalent
LightGBM model.

Two models, trained on rows of ``make_classification`` (28 features, 18 informative;
20,000 rows for boosting, 2,000 for the forest), explained on 10,000 held-out rows:

* boosting: 100 iterations of 31-leaf trees, binary log loss (silva
  ``GradientBoostingClassifier(max_leaf_nodes=31)``, LightGBM ``LGBMClassifier(num_leaves=31)``);
* forest: 100 trees of depth at most 12 on the 0/1 target as a regression (one output;
  silva ``RandomForestRegressor(max_depth=12)``, LightGBM ``boosting_type="rf"`` with
  ``max_depth=12``, ``num_leaves=4096``, bagging 0.632 per tree and a third of the
  features per tree).

``shap.TreeExplainer`` explains silva's own trees, handed over as a custom model (a dict
of arrays, thresholds moved to the next float since shap sends ``x < t`` left), with
``feature_perturbation="tree_path_dependent"``: the same algorithm on the same trees. Each
library runs in its own process (idle threads of one slow another), on the same data
(written once to ``.npy`` files); each time is the best of 3 calls after a warm-up
call on 50 rows (numba compiles silva's kernel there). All libraries use every core.

Usage::

    .venv/bin/python benchmarks/bench_shap.py
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# The forest trains on fewer rows: TreeSHAP visits every node of every tree for every
# row, and 100 trees of depth 12 on 20,000 rows (about 3,000 leaves each) take minutes
# per call in every library.
N_TRAIN, N_TRAIN_FOREST, N_EXPLAIN, N_FEATURES = 20_000, 2_000, 10_000, 28
REPEATS = 3


def _data(directory):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=N_TRAIN + N_EXPLAIN, n_features=N_FEATURES,
                               n_informative=18, random_state=0)
    np.save(directory / "X_train.npy", X[:N_TRAIN])
    np.save(directory / "y_train.npy", y[:N_TRAIN].astype(np.float64))
    np.save(directory / "X_explain.npy", X[N_TRAIN:])


def _best_of(function, warm_up):
    warm_up()  # compilation, on a few rows
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def _silva_model(model_name, X, y):
    from silva import GradientBoostingClassifier, RandomForestRegressor

    if model_name == "boosting":
        return GradientBoostingClassifier(n_estimators=100, max_leaf_nodes=31).fit(X, y)
    return RandomForestRegressor(n_estimators=100, max_depth=12, random_state=0).fit(X, y)


def _shap_dict(model_name, model):
    if model_name == "boosting":
        trees, scale, offset = ([it[0] for it in model.estimators_], 1.0,
                                float(model.init_raw_[0]))
    else:
        trees = [estimator.tree_ for estimator in model.estimators_]
        scale, offset = 1.0 / len(trees), 0.0
    dicts = []
    for tree in trees:
        left = tree.children_left
        default = np.where(tree.missing_go_to_left != 0, left, tree.children_right)
        dicts.append(dict(children_left=left, children_right=tree.children_right,
                          children_default=np.where(left == -1, -1, default),
                          features=np.where(left == -1, -2, tree.feature),
                          thresholds=np.nextafter(tree.threshold, np.inf),
                          values=tree.value[:, 0, :] * scale,
                          node_sample_weight=tree.weighted_n_node_samples))
    return dict(trees=dicts, base_offset=offset)


def _worker(library, model_name, directory):
    X = np.load(directory / "X_train.npy")
    y = np.load(directory / "y_train.npy")
    if model_name == "forest":
        X, y = X[:N_TRAIN_FOREST], y[:N_TRAIN_FOREST]
    X_explain = np.load(directory / "X_explain.npy")
    result = {}
    if library in ("silva", "shap"):
        model = _silva_model(model_name, X, y)
        if library == "silva":
            result["seconds"] = _best_of(
                lambda: model.predict(X_explain, pred_contrib=True),
                lambda: model.predict(X_explain[:50], pred_contrib=True))
        else:
            import shap

            explainer = shap.TreeExplainer(_shap_dict(model_name, model),
                                           feature_perturbation="tree_path_dependent")
            result["seconds"] = _best_of(lambda: explainer.shap_values(X_explain),
                                         lambda: explainer.shap_values(X_explain[:50]))
        result["n_nodes"] = int(sum(tree.node_count for tree in (
            [it[0] for it in model.estimators_] if model_name == "boosting"
            else [e.tree_ for e in model.estimators_])))
    else:
        import lightgbm as lgb

        if model_name == "boosting":
            model = lgb.LGBMClassifier(n_estimators=100, num_leaves=31, verbose=-1).fit(X, y)
        else:
            model = lgb.LGBMRegressor(
                boosting_type="rf", n_estimators=100, max_depth=12, num_leaves=4096,
                min_child_samples=1, bagging_fraction=0.632, bagging_freq=1,
                feature_fraction=1 / 3, verbose=-1).fit(X, y)
        result["seconds"] = _best_of(
            lambda: model.predict(X_explain, pred_contrib=True),
            lambda: model.predict(X_explain[:50], pred_contrib=True))
        frame = model.booster_.trees_to_dataframe()
        result["n_nodes"] = int(len(frame))
    print(json.dumps(result))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=3, metavar=("LIBRARY", "MODEL", "DIR"))
    args = parser.parse_args()
    if args.worker:
        library, model_name, directory = args.worker
        _worker(library, model_name, Path(directory))
        return
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        _data(directory)
        print(f"{N_EXPLAIN:,} rows explained, {N_FEATURES} features; best of {REPEATS}")
        print("| model | silva s | shap s | LightGBM s | silva/shap | silva/LightGBM | "
              "nodes silva / LightGBM |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for model_name in ("boosting", "forest"):
            times = {}
            for library in ("silva", "shap", "lightgbm"):
                out = subprocess.run(
                    [sys.executable, __file__, "--worker", library, model_name, tmp],
                    capture_output=True, text=True, check=True).stdout
                times[library] = json.loads(out.strip().splitlines()[-1])
            silva, shap_s, lgb_s = (times[k]["seconds"] for k in ("silva", "shap",
                                                                   "lightgbm"))
            print(f"| {model_name} | {silva:.3f} | {shap_s:.3f} | {lgb_s:.3f} | "
                  f"{silva / shap_s:.2f}x | {silva / lgb_s:.2f}x | "
                  f"{times['silva']['n_nodes']:,} / {times['lightgbm']['n_nodes']:,} |",
                  flush=True)


if __name__ == "__main__":
    main()
