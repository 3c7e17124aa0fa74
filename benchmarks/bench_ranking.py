"""Learning-to-rank benchmark: silva's GradientBoostingRanker against LGBMRanker (and
XGBRanker), side by side on one synthetic ranking set.

The data (fixed seed, :func:`make_ranking`): queries of 10-200 documents (800 of them,
about 86,000 rows), ``--features`` features (default 30), a hidden relevance score that
mixes linear, threshold and interaction terms of six of them, plus Gaussian noise; the
score is cut into graded relevance 0-4 at fixed quantiles (most documents 0, few 4).
Half the queries train, half are held out, because the two libraries' trees part ways
after a few iterations and each held-out query's NDCG then differs between them at
random: with 250 held-out queries of this data, the gap over five data seeds averaged
+0.0006 with a standard deviation of 0.003.

Every library fits ``lambdarank`` with the same settings: 100 iterations, 31 leaves,
learning rate 0.1, at least 20 documents per leaf, 255 bins, truncation level 30,
normalised lambdas (XGBoost: ``rank:ndcg`` with its own pair defaults and 31 leaves,
best-first). Reported: NDCG@10 on the held-out queries and fit time (best of
``--repeat`` fits, the libraries taking turns, each fit in a process of its own so that
one library's idle threads do not slow another; silva's compilation is done by an
untimed warm-up fit in its process), the ratios to LightGBM, and silva's time per stage.
On a busy machine LightGBM's fit times swing most (its threads wait for cores): compare
only runs on a quiet machine.

Targets (issue 24): NDCG@10 within 0.005 of LightGBM's, fit time <= 0.75x LightGBM's.

Usage::

    .venv/bin/python benchmarks/bench_ranking.py                    # ~86,000 rows
    .venv/bin/python benchmarks/bench_ranking.py --queries 500 --repeat 5
    .venv/bin/python benchmarks/bench_ranking.py --models silva lightgbm
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from _machine import command_line, machine_line

N_ITER = 100
LEAVES = 31
LR = 0.1
MIN_LEAF = 20
BINS = 255
TRUNCATION = 30
K = 10


def make_ranking(n_queries=800, n_features=30, seed=0):
    """``(X, y, group)``: ``n_queries`` queries of 10-200 documents, relevance 0-4 cut
    from a hidden score plus noise (the cuts at the 60/80/92/98th percentiles)."""
    rng = np.random.RandomState(seed)
    sizes = rng.randint(10, 201, n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, n_features))
    # Per query a shift of the features: documents compete within their query.
    X += np.repeat(rng.normal(scale=0.5, size=(n_queries, n_features)), sizes, axis=0)
    hidden = (1.0 * X[:, 0] + 0.8 * X[:, 1] - 0.6 * X[:, 2]
              + 0.7 * (X[:, 3] > 0.5) + 0.5 * X[:, 4] * X[:, 5] + 0.3 * np.sin(2 * X[:, 1]))
    noisy = hidden + rng.normal(scale=0.8, size=n)
    y = np.digitize(noisy, np.percentile(noisy, [60, 80, 92, 98])).astype(np.float64)
    return X, y, sizes


def split(X, y, sizes, test_fraction=0.2, seed=1):
    """Whole queries: the first ``1 - test_fraction`` (after a seeded shuffle) train."""
    rng = np.random.RandomState(seed)
    order = rng.permutation(len(sizes))
    n_test = int(round(test_fraction * len(sizes)))
    offsets = np.concatenate([[0], np.cumsum(sizes)])

    def take(queries):
        queries = np.sort(queries)
        rows = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in queries])
        return X[rows], y[rows], sizes[queries]

    return take(order[n_test:]), take(order[:n_test])


def _ndcg(y, scores, sizes):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from silva.metrics import ndcg_score

    return ndcg_score(y, scores, group=sizes, k=K)


def _fit_silva(train, test, threads, warm_up):
    import numba

    import silva

    numba.set_num_threads(threads)
    model = silva.GradientBoostingRanker(
        n_estimators=N_ITER, max_leaf_nodes=LEAVES, learning_rate=LR,
        min_samples_leaf=MIN_LEAF, max_bins=BINS,
        lambdarank_truncation_level=TRUNCATION, random_state=0)
    if warm_up:  # compile on the same data: large data takes the parallel copies
        model.set_params(n_estimators=2).fit(*train[:2], group=train[2])
        model.set_params(n_estimators=N_ITER)
    start = time.perf_counter()
    model.fit(*train[:2], group=train[2])
    seconds = time.perf_counter() - start
    print("silva's stages (s): " + ", ".join(f"{k} {v:.2f}" for k, v in model._timings.items()))
    return seconds, model.predict(test[0])


def _fit_lightgbm(train, test, threads, warm_up):
    import lightgbm

    model = lightgbm.LGBMRanker(
        n_estimators=N_ITER, num_leaves=LEAVES, learning_rate=LR, min_child_samples=MIN_LEAF,
        max_bin=BINS, lambdarank_truncation_level=TRUNCATION, n_jobs=threads, verbose=-1,
        random_state=0)
    start = time.perf_counter()
    model.fit(*train[:2], group=train[2])
    return time.perf_counter() - start, model.predict(test[0])


def _fit_xgboost(train, test, threads, warm_up):
    import xgboost

    model = xgboost.XGBRanker(
        n_estimators=N_ITER, max_leaves=LEAVES, max_depth=0, grow_policy="lossguide",
        learning_rate=LR, max_bin=BINS, tree_method="hist", objective="rank:ndcg",
        lambdarank_num_pair_per_sample=TRUNCATION, n_jobs=threads, random_state=0)
    qid = np.repeat(np.arange(len(train[2])), train[2])
    start = time.perf_counter()
    model.fit(train[0], train[1], qid=qid)
    return time.perf_counter() - start, model.predict(test[0])


FITTERS = {"silva": _fit_silva, "lightgbm": _fit_lightgbm, "xgboost": _fit_xgboost}


def _worker(args):
    data = np.load(args.data)
    train = (data["X_train"], data["y_train"], data["g_train"])
    test = (data["X_test"], data["y_test"], data["g_test"])
    seconds, scores = FITTERS[args.worker](train, test, args.threads, warm_up=True)
    print(json.dumps({"seconds": seconds, "ndcg": _ndcg(test[1], scores, test[2])}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=800)
    parser.add_argument("--test-fraction", type=float, default=0.5)
    parser.add_argument("--features", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--models", nargs="+", default=["silva", "lightgbm", "xgboost"],
                        choices=sorted(FITTERS))
    parser.add_argument("--worker", choices=sorted(FITTERS), help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args)
        return
    X, y, sizes = make_ranking(args.queries, args.features)
    train, test = split(X, y, sizes, args.test_fraction)
    print(command_line(os.path.basename(__file__)))
    print(machine_line())
    print(f"{X.shape[0]} rows, {args.features} features, {len(sizes)} queries "
          f"({len(train[2])} train, {len(test[2])} held out), relevance counts "
          f"{np.bincount(y.astype(int)).tolist()}; {args.threads} threads; "
          f"load average {os.getloadavg()[0]:.2f}")
    results = {m: {"seconds": [], "ndcg": None} for m in args.models}
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        np.savez(path, X_train=train[0], y_train=train[1], g_train=train[2],
                 X_test=test[0], y_test=test[1], g_test=test[2])
        for _ in range(args.repeat):
            for model in args.models:
                out = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), "--worker", model, "--data",
                     path, "--threads", str(args.threads)],
                    capture_output=True, text=True, env=env, check=True)
                lines = out.stdout.strip().splitlines()
                result = json.loads(lines[-1])
                for line in lines[:-1]:
                    print(f"  {model}: {line}")
                results[model]["seconds"].append(result["seconds"])
                results[model]["ndcg"] = result["ndcg"]
    reference = results.get("lightgbm")
    print(f"\n{'library':10s} {'NDCG@10':>8s} {'vs LGBM':>8s} {'fit s (best)':>13s} "
          f"{'ratio':>6s}  all fits")
    for model, r in results.items():
        best = min(r["seconds"])
        if reference:
            gap = f"{r['ndcg'] - reference['ndcg']:+.4f}"
            ratio = f"{best / min(reference['seconds']):.2f}x"
        else:
            gap = ratio = "-"
        fits = " ".join(f"{s:.2f}" for s in r["seconds"])
        print(f"{model:10s} {r['ndcg']:8.4f} {gap:>8s} {best:13.3f} {ratio:>6s}  {fits}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
