"""Distributed boosting benchmark: silva.dask on a LocalCluster, next to single-machine
silva on the same data, and (``--sides``) LightGBM's and XGBoost's Dask estimators; also
(sides ``silva-dask-forest``, ``silva-local-forest``) the Poisson-bootstrap random forest
distributed and on one machine.

The data are generated on the workers (``dask.array`` random, never on the client): X
``--rows`` x ``--features`` standard normal (float32), a binary label from a linear score with two
interactions plus logistic noise, in row chunks of ``--chunk-rows``; a test set of
200,000 rows from another seed gives the AUC. Single-machine silva computes the same
arrays in its own process (dask's local scheduler: the same numbers). Each side runs in
its own process (idle threads of one slow another) and after an untimed warm-up fit on
a small sample (numba's compilation is not counted; on the cluster, the workers' too).

Reported per side: fit seconds (everything after the data are in the workers' memory:
loading, binning, boosting), that divided by the number of trees, the test AUC, the
workers' peak resident memory, and for silva.dask the boosting seconds per tree (loading
and binning excluded), the round trips, the bytes of histograms (or, with
``silva-dask-workers``, ``histogram_reduction="workers"``, of the owners' split
candidates) that came back to the client and the bytes moved between the workers, per
tree, and the shard's bytes per row. A side that fails (memory) or runs past
``--side-timeout`` is recorded as failed, with the reason.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_dask.py                   # 2M x 28
    PYTHONPATH=. .venv/bin/python benchmarks/bench_dask.py --rows 500000 --trees 10
    PYTHONPATH=. .venv/bin/python benchmarks/bench_dask.py --sides silva-dask silva-local \\
        lightgbm-dask xgboost-dask --write-results
    # the issue's scale: 40M x 28 on 4 workers of 2 GiB, X generated lazily for silva
    PYTHONPATH=. .venv/bin/python benchmarks/bench_dask.py --rows 40000000 \\
        --chunk-rows 1000000 --trees 20 --workers 4 --memory-limit 2GiB --lazy \\
        --local-rows 4000000 --side-timeout 1500 --sides silva-dask-workers silva-dask \\
        silva-local lightgbm-dask xgboost-dask
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

SIDES = ("silva-dask", "silva-dask-workers", "silva-local", "lightgbm-dask", "xgboost-dask",
         "silva-dask-forest", "silva-dask-forest-workers", "silva-local-forest")
#: The forest sides: random forests of ``--trees`` trees of this depth, sqrt(features)
#: candidates per node, the Poisson bootstrap (``bootstrap="poisson"``) on both sides.
FOREST_DEPTH = 10
RESULTS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
TEST_ROWS = 200_000
LEAVES = 31
LEARNING_RATE = 0.1


def make_data(n_rows, n_features, chunk_rows, seed):
    """Lazy ``(X, y)``: dask arrays, computed wherever they are computed (each block from
    its own seeded generator); X float32 (4 bytes a value, for every side)."""
    import dask.array as da
    rs = da.random.RandomState(seed)
    X = rs.normal(size=(n_rows, n_features),
                  chunks=(chunk_rows, n_features)).astype(np.float32)
    weights = np.linspace(-1.0, 1.0, n_features)
    score = X @ weights + 0.8 * X[:, 0] * X[:, 1] - 0.5 * X[:, 2] * X[:, 3]
    y = (score + rs.logistic(size=n_rows, chunks=chunk_rows) > 0).astype(np.int8)
    return X, y


def _rss():
    import psutil
    return psutil.Process().memory_info().rss


def _peak_rss():
    """The process's largest resident size so far (bytes; Linux reports KiB)."""
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _auc(y, p):
    from sklearn.metrics import roc_auc_score
    return float(roc_auc_score(y, p))


def _cluster(args):
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           dashboard_address=":0", memory_limit=args.memory_limit)
    return cluster, Client(cluster)


def run_side(args):
    """One side, in this process; prints one JSON line."""
    side = args.side
    X_test, y_test = (a.compute(scheduler="threads") for a in make_data(
        TEST_ROWS, args.features, TEST_ROWS, seed=args.seed + 1))
    out = {"side": side, "rows": args.rows, "features": args.features,
           "trees": args.trees}
    if side == "silva-local-forest":
        import silva
        X, y = (a.compute(scheduler="threads") for a in make_data(
            args.rows, args.features, args.chunk_rows, args.seed))
        params = dict(n_estimators=args.trees, max_depth=FOREST_DEPTH,
                      bootstrap="poisson", random_state=0)
        silva.RandomForestClassifier(**{**params, "n_estimators": 2}).fit(X[:20000],
                                                                          y[:20000])
        t0 = time.perf_counter()
        model = silva.RandomForestClassifier(**params).fit(X, y)
        out["fit_s"] = time.perf_counter() - t0
        out["per_tree_s"] = out["fit_s"] / args.trees
        out["auc"] = _auc(y_test, model.predict_proba(X_test)[:, 1])
        print(json.dumps(out))
        return
    if side == "silva-local":
        import silva
        out["rows"] = args.local_rows or args.rows
        X, y = (a.compute(scheduler="threads") for a in make_data(
            out["rows"], args.features, args.chunk_rows, args.seed))
        params = dict(n_estimators=args.trees, max_leaf_nodes=LEAVES,
                      learning_rate=LEARNING_RATE, bin_subsample=200_000, random_state=0)
        silva.GradientBoostingClassifier(**{**params, "n_estimators": 2}).fit(X[:20000],
                                                                                y[:20000])
        t0 = time.perf_counter()
        model = silva.GradientBoostingClassifier(**params).fit(X, y)
        out["fit_s"] = time.perf_counter() - t0
        out["per_tree_s"] = out["fit_s"] / args.trees
        out["auc"] = _auc(y_test, model.predict_proba(X_test)[:, 1])
        print(json.dumps(out))
        return
    from distributed import wait
    cluster, client = _cluster(args)
    with cluster, client:
        X, y = make_data(args.rows, args.features, args.chunk_rows, args.seed)
        if not (args.lazy and side.startswith("silva-dask")):
            X, y = client.persist([X, y])
            wait([X, y])
        small = [a[:20000].rechunk(10000) for a in (X, y)]
        memory = {}

        def worker_memory(env):
            # Resident memory of every worker near the end of the fit (shards alive).
            if env.iteration == env.end_iteration - 1 and not memory:
                memory.update(client.run(_rss))
        if side in ("silva-dask", "silva-dask-workers"):
            from silva.dask import DaskGradientBoostingClassifier
            params = dict(n_estimators=args.trees, max_leaf_nodes=LEAVES,
                          learning_rate=LEARNING_RATE, random_state=0, client=client,
                          histogram_reduction=("workers" if side.endswith("workers")
                                               else "client"))
            DaskGradientBoostingClassifier(**{**params, "n_estimators": 2}).fit(*small)
            t0 = time.perf_counter()
            model = DaskGradientBoostingClassifier(**params).fit(X, y,
                                                                 callbacks=[worker_memory])
            out["fit_s"] = time.perf_counter() - t0
            out["worker_rss_gib"] = sorted(round(v / 2**30, 2) for v in memory.values())
            info = model.dask_fit_
            out["load_and_bin_s"] = info["seconds_loading"]
            out["boost_s"] = info["seconds_boosting"]
            out["per_tree_s"] = out["fit_s"] / args.trees
            out["boost_per_tree_s"] = info["seconds_boosting"] / args.trees
            out["round_trips_per_tree"] = info["round_trips"] / args.trees
            out["histogram_bytes_per_tree"] = info["histogram_bytes"] / args.trees
            out["worker_bytes_per_tree"] = info["bytes_between_workers"] / args.trees
            out["shard_bytes_per_row"] = info["shard_bytes_per_row"]
            out["wait_s"] = info["seconds_boosting_waiting_on_workers"]
            proba = model.to_local().predict_proba(X_test)[:, 1]
        elif side in ("silva-dask-forest", "silva-dask-forest-workers"):
            from silva.dask import DaskRandomForestClassifier
            params = dict(n_estimators=args.trees, max_depth=FOREST_DEPTH, random_state=0,
                          client=client, histogram_reduction=(
                              "workers" if side.endswith("workers") else "client"))
            DaskRandomForestClassifier(**{**params, "n_estimators": 2}).fit(*small)
            t0 = time.perf_counter()
            model = DaskRandomForestClassifier(**params).fit(
                X, y, callbacks=[worker_memory])
            out["fit_s"] = time.perf_counter() - t0
            out["worker_rss_gib"] = sorted(round(v / 2**30, 2) for v in memory.values())
            info = model.dask_fit_
            out["load_and_bin_s"] = info["seconds_loading"]
            out["boost_s"] = info["seconds_growing"]
            out["per_tree_s"] = out["fit_s"] / args.trees
            out["boost_per_tree_s"] = info["seconds_growing"] / args.trees
            out["round_trips_per_tree"] = info["round_trips"] / args.trees
            out["histogram_bytes_per_tree"] = info["histogram_bytes"] / args.trees
            out["shard_bytes_per_row"] = info["shard_bytes_per_row"]
            out["shard_peak_bytes_per_row"] = info["shard_peak_bytes_per_row"]
            out["worker_bytes_per_tree"] = (info["histogram_bytes_between_workers"]
                                            / args.trees)
            proba = model.to_local().predict_proba(X_test)[:, 1]
        elif side == "lightgbm-dask":
            import lightgbm
            params = dict(n_estimators=args.trees, num_leaves=LEAVES,
                          learning_rate=LEARNING_RATE, max_bin=255, min_child_samples=20,
                          reg_lambda=0.0, verbose=-1, client=client)
            lightgbm.DaskLGBMClassifier(**{**params, "n_estimators": 2}).fit(*small)
            t0 = time.perf_counter()
            model = lightgbm.DaskLGBMClassifier(**params).fit(X, y)
            out["fit_s"] = time.perf_counter() - t0
            out["per_tree_s"] = out["fit_s"] / args.trees
            proba = model.to_local().predict_proba(X_test)[:, 1]
        elif side == "xgboost-dask":
            import xgboost.dask
            params = dict(n_estimators=args.trees, max_leaves=LEAVES, max_depth=0,
                          grow_policy="lossguide", tree_method="hist",
                          learning_rate=LEARNING_RATE, max_bin=256, nthread=1)
            xgboost.dask.DaskXGBClassifier(**{**params, "n_estimators": 2}).fit(*small)
            t0 = time.perf_counter()
            model = xgboost.dask.DaskXGBClassifier(**params).fit(X, y)
            out["fit_s"] = time.perf_counter() - t0
            out["per_tree_s"] = out["fit_s"] / args.trees
            proba = model.get_booster().inplace_predict(X_test)
        else:
            raise SystemExit(f"unknown side {side!r}")
        out["worker_peak_rss_gib"] = sorted(round(v / 2**30, 2)
                                            for v in client.run(_peak_rss).values())
        out["auc"] = _auc(y_test, proba)
    print(json.dumps(out))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--local-rows", type=int, default=None,
                        help="rows for single-machine silva (default: --rows): the "
                             "largest data that fit one process")
    parser.add_argument("--side-timeout", type=float, default=None,
                        help="seconds a side may run before it is stopped (recorded as "
                             "failed)")
    parser.add_argument("--features", type=int, default=28)
    parser.add_argument("--chunk-rows", type=int, default=250_000)
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="4GiB")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lazy", action="store_true",
                        help="silva.dask reads X as generated, never persisted (its three "
                             "loading passes generate it three times): for data larger "
                             "than the workers' memory")
    parser.add_argument("--sides", nargs="+", default=["silva-dask", "silva-local"],
                        choices=SIDES)
    parser.add_argument("--side", help=argparse.SUPPRESS)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args(argv)
    if args.side:
        run_side(args)
        return
    rows = []
    for side in args.sides:
        command = [sys.executable, os.path.abspath(__file__), "--side", side,
                   "--rows", str(args.rows), "--features", str(args.features),
                   "--local-rows", str(args.local_rows or args.rows),
                   "--chunk-rows", str(args.chunk_rows), "--trees", str(args.trees),
                   "--workers", str(args.workers), "--memory-limit", args.memory_limit,
                   "--seed", str(args.seed)] + (["--lazy"] if args.lazy else [])
        started = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False,
                                  timeout=args.side_timeout)
        except subprocess.TimeoutExpired as expired:
            stderr = expired.stderr or b""
            stderr = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
            print(f"{side} stopped after {args.side_timeout:.0f} s:\n{stderr[-3000:]}",
                  file=sys.stderr)
            rows.append({"side": side, "failed": f"stopped after {args.side_timeout:.0f} s"})
            continue
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
        if done.returncode or not lines:
            print(f"{side} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
            reason = _failure(done.stderr)
            rows.append({"side": side, "failed": f"{reason} (after "
                                                 f"{time.perf_counter() - started:.0f} s)"})
            continue
        rows.append(json.loads(lines[-1]))
        print(lines[-1], flush=True)
    table = _table(rows, args)
    print(table)
    if args.write_results:
        with open(RESULTS_PATH, "a") as results:
            results.write(table)


def _failure(stderr):
    """The last error line of a failed side's output."""
    for line in reversed(stderr.splitlines()):
        if ("Error" in line or "exceeded" in line) and not line.startswith(" "):
            return line.strip()[:200]
    return "failed"


def _table(rows, args):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _machine import command_line, cpu_model, machine_line, utc_now
    failed = [r for r in rows if "failed" in r]
    rows = [r for r in rows if "failed" not in r]
    local = next((r for r in rows if r["side"] == "silva-local"), None)
    lines = [
        f"\n## Dask: distributed boosting on a LocalCluster ({utc_now()})\n",
        f"- machine: {machine_line()}; CPU: {cpu_model()}",
        f"- command: `{command_line('bench_dask.py', sys.argv[1:])}`",
        f"- data: {args.rows:,} x {args.features} float32 generated on the workers "
        f"(chunks of {args.chunk_rows:,} rows), binary label; {args.trees} trees, "
        f"{LEAVES} leaves, learning rate {LEARNING_RATE}; cluster: {args.workers} worker "
        f"processes x 1 thread, memory limit {args.memory_limit}"
        + ("; silva.dask reads X lazily (generated in each of its loading passes, never "
           "persisted), the peers from persisted data" if args.lazy else
           "; every side reads X persisted in the workers' memory"),
        "",
        "| side | rows | fit s | fit s per tree | fit vs silva local | test AUC "
        "| boosting s per tree | round trips / tree | histogram MB into the client / tree "
        "| MB between workers / tree | shard B/row | peak worker RSS GiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ratio = (f"{r['fit_s'] / local['fit_s']:.2f}" if local else "")
        boost = f"{r['boost_per_tree_s']:.3f}" if "boost_per_tree_s" in r else ""
        trips = f"{r['round_trips_per_tree']:.1f}" if "round_trips_per_tree" in r else ""
        volume = (f"{r['histogram_bytes_per_tree'] / 1e6:.3f}"
                  if "histogram_bytes_per_tree" in r else "")
        between = (f"{r['worker_bytes_per_tree'] / 1e6:.2f}"
                   if "worker_bytes_per_tree" in r else "")
        per_row = (f"{r['shard_bytes_per_row']:.0f}" if "shard_bytes_per_row" in r else "")
        lines.append(f"| {r['side']} | {r['rows']:,} | {r['fit_s']:.2f} | "
                     f"{r['per_tree_s']:.3f} | {ratio} "
                     f"| {r['auc']:.5f} | {boost} | {trips} | {volume} | {between} "
                     f"| {per_row} | {r.get('worker_peak_rss_gib', '')} |")
    for r in failed:
        lines.append(f"| {r['side']} | failed: {r['failed']} | | | | | | | | | | |")
    for r in rows:
        if "worker_bytes_per_tree" in r and r["side"].endswith("forest-workers"):
            lines.append(f"- {r['side']}: histogram MB per tree moved between workers "
                         f"{r['worker_bytes_per_tree'] / 1e6:.2f}")
    forest = next((r for r in rows if r["side"] == "silva-dask-forest"), None)
    if forest:
        local_forest = next((r for r in rows if r["side"] == "silva-local-forest"), None)
        lines.append(f"\n- forests: depth {FOREST_DEPTH}, sqrt(features) candidates, "
                     "Poisson bootstrap; trees grown 8 at a time (round trips are per "
                     f"batch of 8, shown per tree); silva.dask forest "
                     f"{forest['load_and_bin_s']:.2f} s loading + {forest['boost_s']:.2f} s "
                     f"growing; shard memory {forest['shard_bytes_per_row']:.0f} bytes/row "
                     "(codes, y, weight, global row), "
                     f"{forest['shard_peak_bytes_per_row']:.0f} at its peak (8 trees "
                     "growing: bootstrap counts, nodes, open rows)"
                     + (f"; the Dask forest's fit took "
                        f"{forest['fit_s'] / local_forest['fit_s']:.2f}x the "
                        "single-machine forest's" if local_forest else "") + ".")
    for dask_row in (r for r in rows if r["side"] in ("silva-dask", "silva-dask-workers")):
        lines.append(f"\n- {dask_row['side']} fit = {dask_row['load_and_bin_s']:.2f} s loading, "
                     f"sampling the bin edges and binning + {dask_row['boost_s']:.2f} s "
                     f"boosting, of which {dask_row['wait_s']:.2f} s waiting on workers; "
                     f"workers' resident memory at the last tree (GiB): "
                     f"{dask_row.get('worker_rss_gib')}.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
