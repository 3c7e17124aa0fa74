"""Single decision tree benchmark: silva against its peers, side by side, in one process.

What it measures, for every model on the same synthetic data (``make_classification`` or
``make_regression``, 80/20 train/test split):

* fit time on the training set: the best (minimum) of ``--repeat`` fits.  silva gets one
  untimed warm-up fit first, so that the numba JIT compilation is not counted here; the
  compilation cost is measured separately as the cold start (below);
* predict time on the test set: the best of ``--repeat`` calls;
* test accuracy (classification) or R² (regression), and its difference from silva in points
  (hundredths: 0.01 of accuracy = 1 point);
* the number of leaves and the depth of the fitted tree, to check that the models compared
  grew trees of a similar size.

Why ratios: absolute seconds depend on the machine (CPU, cores, memory, load), so numbers
from different machines or days cannot be compared.  Ratios of times measured in the SAME
process, on the same data, right after each other, cancel most of that: ``fit/silva`` is a
peer's time divided by silva's (above 1 means the peer is slower), and "silva speedup vs
sklearn" is ``sklearn fit / silva fit``.

Cold start: a user's first fit in a new Python process pays for importing silva and for
loading (or compiling) the numba machine code.  The runner starts a fresh interpreter with
``subprocess``, times ``import silva`` and then the first fit on the same training data, all
measured inside that process.  It does so twice and reports the second run, where numba's
on-disk cache is warm (the first run may have had to compile and is shown for information).
"cold-start overhead" is that first fit minus the warm in-process fit.

``lightgbm (1 tree)`` is LightGBM restricted to a single boosting round with learning rate 1
and no bagging, regularisation or minimum leaf size.  It grows a histogram tree (255 bins)
leaf-wise on gradients, so it is NOT the same model as a CART decision tree; it is listed as
a reference point for the speed of a histogram tree learner.

Usage::

    .venv/bin/python benchmarks/bench_tree.py                      # silva vs sklearn
    .venv/bin/python benchmarks/bench_tree.py --models silva sklearn lightgbm
    .venv/bin/python benchmarks/bench_tree.py --task regression --max-depth 12
    .venv/bin/python benchmarks/bench_tree.py --write-results      # append to RESULTS.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _machine import machine_info
from sklearn.datasets import make_classification, make_regression
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import train_test_split

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_PATH = BENCH_DIR / "RESULTS.md"
MODELS = ("silva", "sklearn", "lightgbm")
LABELS = {"silva": "silva", "sklearn": "sklearn", "lightgbm": "lightgbm (1 tree)"}
LGBM_MAX_LEAVES = 131072  # LightGBM's upper limit for num_leaves
# LightGBM allocates per-leaf buffers for num_leaves up front and, by default, caches one
# histogram per leaf without limit: with num_leaves near n_train a single tree takes >10 GiB and
# most of its fit time in allocation.  A bounded histogram cache (MB) and num_leaves = n_train / 4
# (a fully grown CART tree on this data has about n_train / 20 leaves) avoid that; the runner
# warns if the tree reaches the num_leaves cap.
LGBM_HISTOGRAM_POOL_MB = 512


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time fit/predict and score a single decision tree: silva vs peers.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--task", choices=("classification", "regression"),
                        default="classification")
    parser.add_argument("--n-samples", type=int, default=200_000,
                        help="rows generated in total (80%% train, 20%% test)")
    parser.add_argument("--n-features", type=int, default=28)
    parser.add_argument("--n-informative", type=int, default=18)
    parser.add_argument("--n-classes", type=int, default=2, help="classification only")
    parser.add_argument("--max-depth", type=int, default=None,
                        help="tree depth limit; default: fully grown trees")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed runs per measurement; the best (min) is reported")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", choices=MODELS, default=["silva", "sklearn"],
                        help="models to compare; the first is the reference if silva is absent")
    parser.add_argument("--no-cold-start", action="store_true",
                        help="skip the fresh-subprocess cold-start measurement of silva")
    parser.add_argument("--write-results", action="store_true",
                        help="append the results as a section to --results-file")
    parser.add_argument("--results-file", type=Path, default=RESULTS_PATH,
                        help="markdown file that --write-results appends to")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.n_informative > args.n_features:
        parser.error("--n-informative cannot exceed --n-features")
    args.models = list(dict.fromkeys(args.models))  # drop duplicates, keep order
    return args


# --------------------------------------------------------------------------------------
# Data and models
# --------------------------------------------------------------------------------------


def make_data(args: argparse.Namespace):
    """Synthetic data of the requested size, split 80/20 into train and test."""
    if args.task == "classification":
        X, y = make_classification(
            n_samples=args.n_samples, n_features=args.n_features,
            n_informative=args.n_informative, n_classes=args.n_classes,
            random_state=args.seed,
        )
    else:
        X, y = make_regression(
            n_samples=args.n_samples, n_features=args.n_features,
            n_informative=args.n_informative, random_state=args.seed,
        )
    return train_test_split(X, y, test_size=0.2, random_state=args.seed)


def check_available(models: list[str]) -> None:
    """Exit with a clear message when a requested model's library cannot be used."""
    if "silva" in models:
        try:
            import silva

            silva.DecisionTreeClassifier, silva.DecisionTreeRegressor  # noqa: B018
        except (ImportError, AttributeError) as exc:
            sys.exit(
                f"error: silva is not usable here ({type(exc).__name__}: {exc}).\n"
                "Install it with `.venv/bin/python -m pip install -e .` from the repository "
                "root, or benchmark the peers only: --models sklearn lightgbm"
            )
    if "lightgbm" in models:
        try:
            import lightgbm  # noqa: F401
        except ImportError:
            sys.exit("error: lightgbm is not installed (`pip install lightgbm`); "
                     "or leave it out of --models")


def tree_params(args: argparse.Namespace) -> dict:
    """Constructor parameters shared by silva and scikit-learn."""
    return {"max_depth": args.max_depth, "random_state": args.seed}


def make_model(name: str, args: argparse.Namespace, n_train: int):
    classification = args.task == "classification"
    if name == "silva":
        import silva

        cls = silva.DecisionTreeClassifier if classification else silva.DecisionTreeRegressor
        return cls(**tree_params(args))
    if name == "sklearn":
        from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

        cls = DecisionTreeClassifier if classification else DecisionTreeRegressor
        return cls(**tree_params(args))
    if name == "lightgbm":
        import lightgbm

        max_depth = -1 if args.max_depth is None else args.max_depth
        num_leaves = lgbm_num_leaves(args.max_depth, n_train)
        cls = lightgbm.LGBMClassifier if classification else lightgbm.LGBMRegressor
        return cls(
            n_estimators=1, learning_rate=1.0, num_leaves=num_leaves,
            max_depth=max_depth, min_child_samples=1, min_child_weight=0.0,
            min_split_gain=0.0, reg_alpha=0.0, reg_lambda=0.0,
            subsample=1.0, subsample_freq=0, colsample_bytree=1.0,
            max_bin=255, histogram_pool_size=LGBM_HISTOGRAM_POOL_MB,
            random_state=args.seed, n_jobs=2, verbose=-1,
        )
    raise ValueError(f"unknown model {name!r}")


def lgbm_num_leaves(max_depth: int | None, n_train: int) -> int:
    """num_leaves for the single LightGBM tree: large enough not to bind (see LGBM_*)."""
    cap = max(n_train // 4, 2) if max_depth is None else 2 ** max_depth
    return max(min(cap, LGBM_MAX_LEAVES), 2)


def tree_size(name: str, model) -> tuple[int, int]:
    """(number of leaves, depth) of the fitted tree; summed/maxed over LightGBM's class trees."""
    if name != "lightgbm":
        return int(model.get_n_leaves()), int(model.get_depth())

    def depth(node: dict) -> int:
        if "split_index" not in node:  # a leaf
            return 0
        return 1 + max(depth(node["left_child"]), depth(node["right_child"]))

    trees = model.booster_.dump_model()["tree_info"]
    return (sum(t["num_leaves"] for t in trees),
            max(depth(t["tree_structure"]) for t in trees))


# --------------------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    fit_s: float
    predict_s: float
    score: float
    n_leaves: int
    depth: int

    @property
    def label(self) -> str:
        return LABELS[self.name]


def best_time(fn, repeat: int):
    """Minimum wall time of ``repeat`` calls of ``fn``, and the value of the last call."""
    best, value = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def bench_model(name: str, args: argparse.Namespace, data) -> Result:
    X_train, X_test, y_train, y_test = data
    if name == "silva":  # untimed warm-up: the JIT compilation is measured as cold start
        make_model(name, args, len(X_train)).fit(X_train, y_train)
    fit_s, model = best_time(
        lambda: make_model(name, args, len(X_train)).fit(X_train, y_train), args.repeat
    )
    predict_s, pred = best_time(lambda: model.predict(X_test), args.repeat)
    metric = accuracy_score if args.task == "classification" else r2_score
    n_leaves, depth = tree_size(name, model)
    capped = name == "lightgbm" and args.max_depth is None
    trees = model.booster_.dump_model()["tree_info"] if capped else []
    if any(t["num_leaves"] >= model.num_leaves for t in trees):
        print(f"warning: lightgbm reached its num_leaves cap ({model.num_leaves}); "
              "its tree is smaller than a fully grown one", file=sys.stderr)
    return Result(name, fit_s, predict_s, float(metric(y_test, pred)), n_leaves, depth)


COLD_START_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
import silva
import_s = time.perf_counter() - t0
import numpy as np
params = json.loads(sys.argv[2])
data = np.load(sys.argv[1])
X, y = data["X"], data["y"]
cls = silva.DecisionTreeClassifier if params.pop("task") == "classification" \\
    else silva.DecisionTreeRegressor
model = cls(**params)
t0 = time.perf_counter()
model.fit(X, y)
fit_s = time.perf_counter() - t0
print(json.dumps({"import_s": import_s, "first_fit_s": fit_s}))
"""


def cold_start(args: argparse.Namespace, X_train, y_train, runs: int = 2) -> list[dict]:
    """Import time and first-fit time of silva in ``runs`` fresh interpreters, in order."""
    params = json.dumps({"task": args.task, **tree_params(args)})
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.npz")
        np.savez(path, X=X_train, y=y_train)
        for _ in range(runs):
            proc = subprocess.run(
                [sys.executable, "-c", COLD_START_SCRIPT, path, params],
                capture_output=True, text=True, cwd=tmp,  # silva as installed, not ./silva
            )
            if proc.returncode != 0:
                raise RuntimeError(f"cold-start subprocess failed:\n{proc.stderr}")
            out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


# --------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------


def describe_data(args: argparse.Namespace) -> str:
    n_train = args.n_samples - int(np.ceil(0.2 * args.n_samples))
    kind = f" ({args.n_classes} classes)" if args.task == "classification" else ""
    depth = "fully grown" if args.max_depth is None else f"max_depth={args.max_depth}"
    return (f"{args.task}{kind}, {args.n_samples:,} rows ({n_train:,} train), "
            f"{args.n_features} features ({args.n_informative} informative), {depth}, "
            f"seed {args.seed}, best of {args.repeat}")


def table_rows(results: list[Result], task: str) -> tuple[list[str], list[list[str]]]:
    ref = next((r for r in results if r.name == "silva"), results[0])
    metric = "accuracy" if task == "classification" else "R²"
    header = ["model", "fit s", f"fit/{ref.name}", "predict s", f"pred/{ref.name}",
              metric, "Δ pts", "leaves", "depth"]
    rows = [[r.label, f"{r.fit_s:.3f}", f"{r.fit_s / ref.fit_s:.2f}x",
             f"{r.predict_s:.4f}", f"{r.predict_s / ref.predict_s:.2f}x",
             f"{r.score:.4f}", f"{100 * (r.score - ref.score):+.2f}",
             f"{r.n_leaves:,}", str(r.depth)] for r in results]
    return header, rows


def text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(x) for x in col) for col in zip(header, *rows, strict=True)]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        return "  ".join([first] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:],
                                                                  strict=True)])

    return "\n".join([line(header), "  ".join("-" * w for w in widths)]
                     + [line(r) for r in rows])


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    align = ["---"] + ["---:"] * (len(header) - 1)
    return "\n".join("| " + " | ".join(r) + " |" for r in [header, align, *rows])


def summary_lines(results: list[Result], cold: list[dict] | None, n_classes: int) -> list[str]:
    by_name = {r.name: r for r in results}
    lines = []
    if "silva" in by_name and "sklearn" in by_name:
        s, k = by_name["silva"], by_name["sklearn"]
        lines.append(f"silva speedup vs sklearn: fit {k.fit_s / s.fit_s:.2f}x, "
                     f"predict {k.predict_s / s.predict_s:.2f}x, "
                     f"accuracy {100 * (s.score - k.score):+.2f} pts")
    if cold and "silva" in by_name:
        warm = by_name["silva"].fit_s
        c = cold[-1]
        lines.append(f"silva cold start (fresh process, numba cache warm): import "
                     f"{c['import_s']:.2f} s, first fit {c['first_fit_s']:.3f} s vs warm fit "
                     f"{warm:.3f} s -> cold-start overhead {c['first_fit_s'] - warm:.3f} s")
        if len(cold) > 1:
            c0 = cold[0]
            lines.append(f"silva cold start, first fresh process (may compile): import "
                         f"{c0['import_s']:.2f} s, first fit {c0['first_fit_s']:.3f} s")
    if "lightgbm" in by_name:
        lines.append("lightgbm (1 tree): one leaf-wise histogram boosting round with "
                     "learning_rate=1, not the same model as a CART tree.")
        if n_classes > 2:
            lines.append(f"  (it grows one tree per class: its leaves are summed over "
                         f"{n_classes} trees, its depth is the deepest)")
    return lines


def write_results(args, info, header, rows, summary) -> None:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{info['cpu']}, {info['cores']} cores, {info['ram']} RAM"
    versions = ", ".join(f"{k} {v}" for k, v in info.items() if k not in {"cpu", "cores", "ram"})
    command = "python benchmarks/bench_tree.py " + shlex.join(sys.argv[1:])
    section = "\n".join([
        f"## {now} — {machine}", "",
        f"- versions: {versions}",
        f"- data: {describe_data(args)}",
        f"- command: `{command.strip()}`", "",
        markdown_table(header, rows), "",
        *[f"- {line.strip()}" for line in summary], "", "",
    ])
    path = args.results_file
    if not path.exists():
        path.write_text(
            "# Benchmark results\n\nAppended by `benchmarks/bench_tree.py --write-results`; "
            "see benchmarks/README.md for what is measured.\n\n"
        )
    with path.open("a") as fh:
        fh.write(section)
    print(f"\nappended to {path}")


# --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    check_available(args.models)
    info = machine_info()

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    log(f"machine: {info['cpu']}, {info['cores']} cores, {info['ram']} RAM")
    log(f"data: {describe_data(args)}")
    data = make_data(args)

    results = []
    for name in args.models:
        log(f"timing {LABELS[name]} ...")
        results.append(bench_model(name, args, data))

    cold = None
    if "silva" in args.models and not args.no_cold_start:
        log("timing silva cold start in fresh subprocesses ...")
        cold = cold_start(args, data[0], data[2])

    header, rows = table_rows(results, args.task)
    n_classes = args.n_classes if args.task == "classification" else 0
    summary = summary_lines(results, cold, n_classes)
    print()
    print(describe_data(args))
    print(text_table(header, rows))
    print()
    print("\n".join(summary))
    if args.write_results:
        write_results(args, info, header, rows, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
