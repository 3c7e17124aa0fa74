"""Fingerprints of every estimator's fitted model, to show that a refactor changed no model.

Fits each case below (every public estimator; every criterion, loss, growth and sampling
choice; missing values, categorical columns and sample weights) and hashes the bytes of
what the model outputs on held-out rows: ``predict``, ``predict_proba`` or
``decision_function``, ``apply`` where there is one, and the feature importances. Two
runs on the same machine agree bit for bit unless a model changed.

    python tools/fingerprint_models.py --out before.json      # on the old commit
    python tools/fingerprint_models.py --out after.json       # on the new one
    python tools/fingerprint_models.py --compare before.json after.json

``--compare`` lists each case whose fingerprint differs and exits with 1 if any does.
``--only SUBSTRING`` fits the cases whose name contains it.
"""

import argparse
import hashlib
import json
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, make_classification


def _datasets():
    """Named (X, y, X_test, sample_weight, categorical_features) tuples."""
    rng = np.random.default_rng(0)
    out = {}
    X, y = load_breast_cancer(return_X_y=True)
    out["cancer"] = (X[:400], y[:400], X[400:], None, None)
    X, y = load_diabetes(return_X_y=True)
    out["diabetes"] = (X[:330], y[:330], X[330:], None, None)
    X, y = load_digits(return_X_y=True)
    out["digits"] = (X[:1300], y[:1300], X[1300:], None, None)
    # Missing values, a categorical column and weights, on a 3-class problem.
    X, y = make_classification(n_samples=1500, n_features=10, n_informative=6, n_classes=3,
                               random_state=1)
    X[:, 3] = rng.integers(0, 7, size=len(X))
    y = np.where(X[:, 3] == 2, 0, y)
    X[rng.random(X.shape) < 0.1] = np.nan
    weight = rng.uniform(0.2, 3.0, size=len(X))
    out["messy3"] = (X[:1100], y[:1100], X[1100:], weight[:1100], [3])
    # The same rows as a regression target with weights.
    target = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 1]) ** 2 + rng.normal(size=len(X))
    out["messy_reg"] = (X[:1100], target[:1100], X[1100:], weight[:1100], [3])
    counts = rng.poisson(np.exp(0.3 * np.nan_to_num(X[:, 0])))
    out["counts"] = (X[:1100], counts[:1100].astype(float), X[1100:], None, [3])
    # The shape of the benchmarks' data (benchmarks/bench_boosting.py), at 30k rows.
    X, y = make_classification(n_samples=30000, n_features=28, n_informative=12,
                               flip_y=0.05, random_state=2)
    out["bench30k"] = (X[:24000], y[:24000], X[24000:], None, None)
    return out


def _cases():
    """(name, estimator factory, dataset name) for every case."""
    import silva

    cases = []

    def add(name, factory, data):
        cases.append((name, factory, data))

    for criterion in ("gini", "entropy", "misclassification", "twoing", "gain_ratio"):
        for data in ("cancer", "messy3"):
            add(f"dtc-{criterion}-{data}",
                lambda c=criterion, d=data: silva.DecisionTreeClassifier(
                    criterion=c, random_state=0,
                    categorical_features=[3] if d == "messy3" else None), data)
    add("dtc-random-depth", lambda: silva.DecisionTreeClassifier(
        splitter="random", max_depth=6, max_features=0.5, random_state=3), "digits")
    add("dtc-leaves-ccp", lambda: silva.DecisionTreeClassifier(
        max_leaf_nodes=12, ccp_alpha=0.002, class_weight="balanced", random_state=0), "digits")
    add("dtc-ccp-cv", lambda: silva.DecisionTreeClassifier(ccp_alpha="cv", random_state=0),
        "cancer")
    add("dtc-significance", lambda: silva.DecisionTreeClassifier(min_significance=0.05,
                                                                 random_state=0), "cancer")
    for criterion in ("squared_error", "friedman_mse", "absolute_error", "poisson"):
        data = "counts" if criterion == "poisson" else "messy_reg"
        add(f"dtr-{criterion}", lambda c=criterion: silva.DecisionTreeRegressor(
            criterion=c, min_samples_leaf=3, random_state=0, categorical_features=[3]), data)
        add(f"dtr-{criterion}-diabetes", lambda c=criterion: silva.DecisionTreeRegressor(
            criterion=c, max_depth=8, random_state=0), "diabetes")
    for name, cls in (("rfc", silva.RandomForestClassifier), ("etc", silva.ExtraTreesClassifier)):
        for data in ("cancer", "messy3", "digits"):
            add(f"{name}-{data}", lambda c=cls, d=data: c(
                n_estimators=12, oob_score=True, bootstrap=True, random_state=0,
                categorical_features=[3] if d == "messy3" else None), data)
    for name, cls in (("rfr", silva.RandomForestRegressor), ("etr", silva.ExtraTreesRegressor)):
        for data in ("diabetes", "messy_reg"):
            add(f"{name}-{data}", lambda c=cls, d=data: c(
                n_estimators=12, max_features=0.6, random_state=0,
                categorical_features=[3] if d == "messy_reg" else None), data)
    add("rfr-absolute", lambda: silva.RandomForestRegressor(
        n_estimators=5, criterion="absolute_error", random_state=0), "diabetes")
    for loss in ("squared_error", "absolute_error", "huber", "quantile", "poisson", "gamma",
                 "tweedie"):
        data = "counts" if loss in ("poisson", "tweedie") else "messy_reg"
        if loss == "gamma":
            data = "diabetes"
        add(f"gbr-{loss}", lambda loss=loss, d=data: silva.GradientBoostingRegressor(
            loss=loss, n_estimators=25, random_state=0,
            categorical_features=None if d == "diabetes" else [3]), data)
    for loss in ("log_loss", "exponential"):
        add(f"gbc-{loss}-cancer", lambda loss=loss: silva.GradientBoostingClassifier(
            loss=loss, n_estimators=25, random_state=0), "cancer")
    add("gbc-multiclass", lambda: silva.GradientBoostingClassifier(
        n_estimators=15, random_state=0), "digits")
    add("gbc-messy-depthwise", lambda: silva.GradientBoostingClassifier(
        n_estimators=20, growth="depthwise", max_depth=4, categorical_features=[3],
        random_state=0), "messy3")
    add("gbc-gradient-goss", lambda: silva.GradientBoostingClassifier(
        n_estimators=20, boosting="gradient", sampling="goss",
        colsample_bytree=0.7, colsample_bynode=0.8, random_state=0), "cancer")
    add("gbr-subsample-regularised", lambda: silva.GradientBoostingRegressor(
        n_estimators=20, subsample=0.6, l1_regularization=0.5, l2_regularization=1.0,
        max_delta_step=2.0, min_split_gain=0.01, bin_subsample=200, random_state=0),
        "diabetes")
    add("gbr-constraints-early", lambda: silva.GradientBoostingRegressor(
        n_estimators=60, monotonic_constraints=[1, -1] + [0] * 8,
        interaction_constraints=[[0, 1, 2], [3, 4, 5, 6, 7, 8, 9]],
        early_stopping_rounds=5, random_state=0), "messy_reg")
    add("gbc-bench30k", lambda: silva.GradientBoostingClassifier(
        n_estimators=40, random_state=0), "bench30k")
    add("gbc-bench30k-255leaves", lambda: silva.GradientBoostingClassifier(
        n_estimators=10, max_leaf_nodes=255, min_samples_leaf=5, random_state=0), "bench30k")
    add("rfc-bench30k", lambda: silva.RandomForestClassifier(
        n_estimators=10, random_state=0), "bench30k")
    add("etc-bench30k", lambda: silva.ExtraTreesClassifier(
        n_estimators=10, random_state=0), "bench30k")
    add("dtc-bench30k", lambda: silva.DecisionTreeClassifier(random_state=0), "bench30k")
    add("id3-bins", lambda: silva.ID3Classifier(), "cancer")
    add("id3-messy", lambda: silva.ID3Classifier(max_depth=4, categorical_features=[3]),
        "messy3")
    add("c45-cancer", lambda: silva.C45Classifier(), "cancer")
    add("c45-messy", lambda: silva.C45Classifier(categorical_features=[3]), "messy3")
    add("bagc", lambda: silva.BaggingClassifier(n_estimators=8, max_features=0.7,
                                                oob_score=True, random_state=0), "cancer")
    add("bagr", lambda: silva.BaggingRegressor(n_estimators=8, bootstrap_features=True,
                                               random_state=0), "diabetes")
    add("adac", lambda: silva.AdaBoostClassifier(n_estimators=30, random_state=0), "digits")
    add("adar", lambda: silva.AdaBoostRegressor(n_estimators=20, loss="square",
                                                random_state=0), "diabetes")
    add("votec", lambda: silva.VotingClassifier(
        [("t", silva.DecisionTreeClassifier(max_depth=4, random_state=0)),
         ("f", silva.RandomForestClassifier(n_estimators=5, random_state=0))],
        voting="soft"), "cancer")
    add("stackr", lambda: silva.StackingRegressor(
        [("t", silva.DecisionTreeRegressor(max_depth=4, random_state=0)),
         ("g", silva.GradientBoostingRegressor(n_estimators=10, random_state=0))]), "diabetes")
    return cases


def _fingerprint(model, X_test):
    digest = hashlib.sha256()
    for method in ("predict", "predict_proba", "decision_function", "apply"):
        if hasattr(model, method):
            try:
                out = getattr(model, method)(X_test)
            except (AttributeError, NotImplementedError):
                continue
            digest.update(method.encode())
            digest.update(np.ascontiguousarray(np.asarray(out, dtype=np.float64)).tobytes())
    for attribute in ("feature_importances_", "oob_score_"):
        try:
            value = getattr(model, attribute)
        except (AttributeError, ValueError):
            continue
        digest.update(attribute.encode())
        digest.update(np.ascontiguousarray(np.asarray(value, dtype=np.float64)).tobytes())
    return digest.hexdigest()


def fingerprint_all(only=None):
    warnings.simplefilter("ignore")  # the out-of-bag notes of small forests
    datasets = _datasets()
    result = {}
    for name, factory, data in _cases():
        if only and only not in name:
            continue
        X, y, X_test, weight, _ = datasets[data]
        model = factory()
        start = time.perf_counter()
        if weight is not None and "stack" not in name and "vote" not in name:
            model.fit(X, y, sample_weight=weight)
        else:
            model.fit(X, y)
        result[name] = _fingerprint(model, X_test)
        print(f"{name:32s} {time.perf_counter() - start:7.2f} s  {result[name][:16]}",
              file=sys.stderr)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the fingerprints to this JSON file")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--only", help="fit only the cases whose name contains this")
    args = parser.parse_args(argv)
    if args.compare:
        with open(args.compare[0]) as f:
            before = json.load(f)
        with open(args.compare[1]) as f:
            after = json.load(f)
        changed = sorted(k for k in before.keys() & after.keys() if before[k] != after[k])
        missing = sorted(before.keys() ^ after.keys())
        for key in changed:
            print(f"changed: {key}")
        for key in missing:
            print(f"in one file only: {key}")
        same = len(before.keys() & after.keys()) - len(changed)
        print(f"{same} identical, {len(changed)} changed, {len(missing)} in one file only")
        return 1 if changed else 0
    result = fingerprint_all(args.only)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
    else:
        json.dump(result, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
