"""Thread scaling: silva's gradient boosting fit against LightGBM and XGBoost at each
thread count, side by side.

Why: on a 2-core machine every library runs on 2 threads, and a fit's serial parts cost
little. A user's machine may have 16 cores or more, where whatever runs on one thread
(silva's partition of a node's samples, for one) is what the fit waits on. This benchmark
times the same fit at each thread count of ``--threads`` (say ``1 2 4 8 16``) so that the
ratios to the peers, and each library's speed-up over its own first count, can be read
per thread count.

Each (library, thread count) runs in a fresh process of its own: the data of
:mod:`bench_boosting` (``--shape``, ``--task``, ``--n-samples`` rows, 80% train), the
same models (100 iterations, 255 bins, learning rate 0.1, the shape's leaves), an untimed
two-iteration warm-up fit at that thread count (silva compiles separate kernels for one
thread and for several; a warm-up at another count left the compile inside the timed
fit), then ``--repeat`` timed fits, the best kept. The table gives the CPU model and
whether it has AVX-512; ``--write-results`` appends it to RESULTS.md.

Usage::

    .venv/bin/python benchmarks/bench_threads.py --threads 1 2 --n-samples 200000
    .venv/bin/python benchmarks/bench_threads.py --threads 1 2 4 8 16 --write-results
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from _machine import command_line, machine_line, publish, utc_now
from bench_boosting import BINS, N_ITER, SHAPES

# Run in a child process: the arguments are library, thread count, task, shape, rows and
# repeats; prints one line of JSON.
_CHILD = """
import json, sys, time
sys.path.insert(0, {benchmarks!r})
name, threads, task, shape, n_samples, repeat = (sys.argv[1], int(sys.argv[2]), sys.argv[3],
                                                 sys.argv[4], int(sys.argv[5]),
                                                 int(sys.argv[6]))
import numba
from threadpoolctl import threadpool_limits
from bench_boosting import SHAPES, _data, _models
numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
threadpool_limits(threads)
shape = SHAPES[shape]
X_train, _, y_train, _ = _data(task, n_samples, shape)
make = _models(task, [name], threads, shape.leaves)[name]
warm_up = make()
warm_up.set_params(n_estimators=2)
warm_up.fit(X_train, y_train)
fits = []
for _ in range(repeat):
    model = make()
    start = time.perf_counter()
    model.fit(X_train, y_train)
    fits.append(time.perf_counter() - start)
print(json.dumps({{"fit_s": min(fits)}}))
"""


def run_child(name, threads, task, shape, n_samples, repeat):
    """Best fit time in seconds of one library at one thread count, in a fresh process
    (NaN, with the error on stderr, if the child failed)."""
    script = _CHILD.format(benchmarks=os.path.dirname(os.path.abspath(__file__)))
    # The thread pools' sizes are fixed when a process starts.
    env = dict(os.environ, NUMBA_NUM_THREADS=str(max(threads, 1)),
               OMP_NUM_THREADS=str(threads), SILVA_COMPILE_NOTICE="0")
    result = subprocess.run([sys.executable, "-c", script, name, str(threads), task, shape,
                             str(n_samples), str(repeat)],
                            env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        print(f"{name} at {threads} threads failed:\n{result.stderr}", file=sys.stderr)
        return float("nan")
    return json.loads(result.stdout.strip().splitlines()[-1])["fit_s"]


def scaling_table(times, names, thread_counts):
    """Markdown: one row per thread count, each library's fit time and speed-up over its
    time at the first count, and silva over the faster of the other libraries."""
    first = thread_counts[0]
    lines = ["| threads | " + " | ".join(f"{name} fit s (speed-up)" for name in names)
             + " | silva / faster peer |",
             "|---:|" + "---:|" * len(names) + "---:|"]
    for threads in thread_counts:
        cells = []
        for name in names:
            fit = times[name][threads]
            cells.append(f"{fit:.2f} ({times[name][first] / fit:.2f}x)")
        peers = [times[name][threads] for name in names if name != "silva"]
        ratio = (f"{times['silva'][threads] / min(peers):.2f}x"
                 if "silva" in times and peers else "–")
        lines.append(f"| {threads} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2, os.cpu_count()])
    parser.add_argument("--models", nargs="+", default=["silva", "lightgbm", "xgboost"],
                        choices=["silva", "lightgbm", "xgboost"])
    parser.add_argument("--task", default="binary",
                        choices=["binary", "multiclass", "regression"])
    parser.add_argument("--shape", default="base", choices=list(SHAPES),
                        help="the data shape (bench_boosting.py's --shapes)")
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1,
                        help="timed fits per (library, thread count); the best is kept")
    parser.add_argument("--write-results", action="store_true",
                        help="append the table to benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    thread_counts = sorted(set(args.threads))
    load = tuple(round(v, 2) for v in os.getloadavg())
    started = time.perf_counter()
    times = {name: {} for name in args.models}
    for threads in thread_counts:
        # Libraries take turns at each count, so that a burst of load hits them alike.
        for name in args.models:
            times[name][threads] = run_child(name, threads, args.task, args.shape,
                                             args.n_samples, args.repeat)
            print(f"  {name}, {threads} threads: fit {times[name][threads]:.2f} s",
                  flush=True)
    after = tuple(round(v, 2) for v in os.getloadavg())
    lines = [
        f"## {utc_now()} — thread scaling of gradient boosting (bench_threads.py)", "",
        f"- machine: {machine_line()}",
        f"- command: `{command_line('bench_threads.py', argv)}`",
        f"- {args.task}, shape {args.shape}, {args.n_samples:,} rows (80% train), {N_ITER} "
        f"iterations, {SHAPES[args.shape].leaves} leaves, {BINS} bins; each (library, thread "
        f"count) in its own process "
        f"after an untimed warm-up fit at that count, best of {args.repeat}; speed-up over "
        f"the library's own time at {thread_counts[0]} thread(s); load average before "
        f"{load}, after {after}; {time.perf_counter() - started:.0f} s in all",
        "", scaling_table(times, args.models, thread_counts), ""]
    publish(lines, args.write_results)


if __name__ == "__main__":
    main()
