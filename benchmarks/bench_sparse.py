"""Sparse input: silva against LightGBM and XGBoost on a wide sparse binary problem.

The data (reproducible from ``--seed``): ``--rows`` x ``--cols`` CSR with about
``--density`` of its values non-zero, counts 1-4 like a bag of words; the first
``--signal`` columns are denser (10%) and carry the signal, the label is a noisy
threshold of a weighted sum of them. The last 20% of rows are held out for the AUC.

Each library fits in its own process (idle threads of one slow another, and each
process's peak memory is its own): the child's peak resident memory (``VmHWM``, see
``_maxrss_mib``; ``resource.getrusage`` where /proc is missing), after loading the data
and before the fit (``rss_loaded``) and at the end (``peak``, the largest of the warm-up
and the timed fit), so that ``peak - rss_loaded`` is roughly what a fit adds. Every
model: 100 iterations, 31 leaves (leaf-wise), learning rate 0.1, 255 bins,
``--threads`` threads; the fit time is one fit after an untimed warm-up fit of 2
iterations on the same data (numba compiles, caches load), so compilation is not
counted; the predict time is the best of 3 ``predict_proba`` calls on the held-out rows
(the sparse CSR as it is), after an untimed predict of 64 of them.

silva bins the sparse matrix column by column from its stored values (implicit zeros
counted, not written), and its gradient boosting grows on the entries that differ from
each feature's bin of 0.0 (``silva/engine/gradient_sparse.py``: ragged histograms, each
feature's default bin by subtraction), as LightGBM's and XGBoost's sparse-aware
histograms do. ``--forest`` adds silva's RandomForestClassifier, which grows on the same
entries (``silva/engine/cart_sparse.py``), against scikit-learn's (which splits sparse
columns natively).

Usage::

    .venv/bin/python benchmarks/bench_sparse.py --rows 20000 --cols 5000
    .venv/bin/python benchmarks/bench_sparse.py --rows 100000 --cols 20000 --density 0.001
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

LIBRARIES = ("silva", "lightgbm", "xgboost")
# predict_proba on the held-out rows is timed this many times; the best is reported.
PREDICT_REPEATS = 3
FORESTS = ("silva_forest", "sklearn_forest")


def make_data(rows, cols, density, signal, seed):
    """The sparse problem (see the module docstring): ``(X_csr, y)``."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    noise_cols = cols - signal
    n_noise = int(rows * noise_cols * density)
    noise = sp.csr_matrix(
        (rng.integers(1, 5, n_noise).astype(np.float64),
         (rng.integers(0, rows, n_noise), signal + rng.integers(0, noise_cols, n_noise))),
        shape=(rows, cols))
    mask = rng.random((rows, signal)) < 0.10
    informative = np.where(mask, rng.integers(1, 5, (rows, signal)), 0).astype(np.float64)
    X = (noise + sp.csr_matrix(informative, shape=(rows, cols))).tocsr()
    X.sum_duplicates()
    weights = rng.normal(size=signal)
    score = informative @ weights + rng.normal(scale=1.0, size=rows)
    y = (score > np.median(score)).astype(np.int64)
    return X, y


def build(library, threads):
    if library == "silva":
        from silva import GradientBoostingClassifier

        return GradientBoostingClassifier(n_estimators=100, max_leaf_nodes=31,
                                          learning_rate=0.1, max_bins=255,
                                          min_samples_leaf=20)
    if library == "lightgbm":
        from lightgbm import LGBMClassifier

        return LGBMClassifier(n_estimators=100, num_leaves=31, learning_rate=0.1,
                              max_bin=255, min_child_samples=20, n_jobs=threads,
                              verbose=-1)
    if library == "xgboost":
        from xgboost import XGBClassifier

        return XGBClassifier(n_estimators=100, max_leaves=31, max_depth=0,
                             grow_policy="lossguide", learning_rate=0.1, max_bin=255,
                             tree_method="hist", n_jobs=threads)
    if library == "silva_forest":
        from silva import RandomForestClassifier

        return RandomForestClassifier(n_estimators=50, max_depth=12, random_state=0)
    if library == "sklearn_forest":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=50, max_depth=12, random_state=0,
                                      n_jobs=threads)
    raise ValueError(library)


def _maxrss_mib():
    """This process's peak resident memory, in MiB: Linux's VmHWM, the high-water mark of
    this process's own memory since its exec. ``getrusage``'s ``ru_maxrss`` (the fallback
    elsewhere) keeps the parent's peak across fork and exec, which would floor every
    child at the parent's peak (it built the data)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def child(library, data_path, threads):
    """Fit one library in this process and print its numbers as JSON."""
    import scipy.sparse as sp
    from sklearn.metrics import roc_auc_score

    X = sp.load_npz(data_path).tocsr()
    y = np.load(str(data_path).replace(".npz", "_y.npy"))
    split = int(0.8 * X.shape[0])
    X_train, X_test, y_train, y_test = X[:split], X[split:], y[:split], y[split:]
    rss_loaded = _maxrss_mib()
    # Untimed: the same fit with 2 iterations (trees), on the same data, so that every
    # kernel the timed fit takes is compiled (silva, numba) or loaded beforehand.
    warm = build(library, threads).set_params(n_estimators=2).fit(X_train, y_train)
    # ... and its predict on a few test rows (the same kind of sparse input, so the
    # same path), so that the predict timed below compiles nothing either.
    warm.predict_proba(X_test[:64])
    model = build(library, threads)
    start = time.perf_counter()
    model.fit(X_train, y_train)
    fit_s = time.perf_counter() - start
    predict_times = []
    for _ in range(PREDICT_REPEATS):
        start = time.perf_counter()
        proba = model.predict_proba(X_test)[:, 1]
        predict_times.append(time.perf_counter() - start)
    predict_s = min(predict_times)
    print(json.dumps({"library": library, "fit_s": fit_s, "predict_s": predict_s,
                      "auc": float(roc_auc_score(y_test, proba)),
                      "rss_loaded_mib": rss_loaded, "peak_mib": _maxrss_mib()}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--cols", type=int, default=5_000)
    parser.add_argument("--density", type=float, default=0.001)
    parser.add_argument("--signal", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    parser.add_argument("--forest", action="store_true",
                        help="also silva's RandomForestClassifier against scikit-learn's")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.data, args.threads)
        return
    import scipy.sparse as sp
    from _machine import command_line, machine_line, utc_now

    X, y = make_data(args.rows, args.cols, args.density, args.signal, args.seed)
    libraries = args.libraries.split(",") + (list(FORESTS) if args.forest else [])
    dense_mib = X.shape[0] * X.shape[1] * 8 / 2**20
    sparse_mib = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20
    print(f"## {utc_now()} — sparse input (bench_sparse.py)\n")
    print(f"{machine_line()}\n\n`{command_line('bench_sparse.py')}`\n")
    print(f"X: {X.shape[0]:,} x {X.shape[1]:,} CSR, {X.nnz:,} non-zeros "
          f"({X.nnz / (X.shape[0] * X.shape[1]):.4%}), {sparse_mib:.0f} MiB stored "
          f"({dense_mib:,.0f} MiB as dense float64; silva's codes "
          f"{X.shape[0] * X.shape[1] / 2**20:,.0f} MiB as uint8); held out: last 20%.\n")
    print("| library | fit (s) | predict (s) | AUC | RSS after load (MiB) | peak RSS (MiB) |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        data_path = os.path.join(folder, "X.npz")
        sp.save_npz(data_path, X)
        np.save(data_path.replace(".npz", "_y.npy"), y)
        env = {**os.environ, "NUMBA_NUM_THREADS": str(args.threads),
               "OMP_NUM_THREADS": str(args.threads)}
        for library in libraries:
            done = subprocess.run(
                [sys.executable, __file__, "--child", library, "--data", data_path,
                 "--threads", str(args.threads)],
                capture_output=True, text=True, env=env, check=False)
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            if done.returncode or not lines:
                print(f"| {library} | failed: {done.stderr.strip().splitlines()[-1:]} |")
                continue
            r = json.loads(lines[-1])
            print(f"| {library} | {r['fit_s']:.2f} | {r['predict_s']:.3f} | {r['auc']:.4f} | "
                  f"{r['rss_loaded_mib']:.0f} | {r['peak_mib']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
