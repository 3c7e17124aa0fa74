"""Boosting fit time on a machine whose cores other processes keep busy.

Users fit while other work runs: a second notebook, a build, a browser. A library that
opens many short parallel regions then waits, at each region, for a worker thread the OS
has set aside. This times the same boosting fit as ``bench_boosting.py`` (100
iterations, 31 leaves, 255 bins; its binary data) for silva, LightGBM and XGBoost, each
in its own process, with 0, 1 or more busy processes beside it (``--busy``: pure-Python
loops, one core each), all libraries on every core (``n_jobs`` = the core count).

Each measurement reports the median and the slowest of ``--repeat`` fits after one
warm-up fit: on a busy machine the slowest fit is what a user waits for now and then.

    python benchmarks/bench_contention.py --rows 20000 100000 --busy 0 1 2 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from _machine import command_line, machine_line, publish, utc_now

LIBRARIES = ("silva", "lightgbm", "xgboost")


def run_child(library, n_rows, repeat, threads):
    """Fit ``library``'s model ``repeat`` times after a warm-up; print the seconds as JSON."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_boosting import _data, _models

    X_train, _, y_train, _ = _data("binary", n_rows)
    make = _models("binary", [library], threads)[library]
    make().fit(X_train, y_train)
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        make().fit(X_train, y_train)
        seconds.append(time.perf_counter() - start)
    print(json.dumps(seconds))


def _busy_loops(n):
    """``n`` processes that each keep one core busy until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def measure(library, n_rows, busy, repeat, threads, timeout_s):
    """The seconds of each timed fit; None when the fits ran past ``timeout_s``."""
    loops = _busy_loops(busy)
    try:
        time.sleep(0.5)  # the loops reach their cores
        child = subprocess.run(
            [sys.executable, __file__, "--child", library, str(n_rows), str(repeat),
             str(threads)], capture_output=True, text=True, check=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    return json.loads(child.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[20000, 100000])
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 1, 2],
                        help="busy processes beside each fit")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds a library's fits may take; beyond, the cells show '–'")
    parser.add_argument("--libraries", nargs="+", default=list(LIBRARIES),
                        choices=LIBRARIES)
    parser.add_argument("--write-results", action="store_true",
                        help="append the table to benchmarks/RESULTS.md")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        library, n_rows, repeat, threads = args.child
        run_child(library, int(n_rows), int(repeat), int(threads))
        return
    threads = os.cpu_count() or 1
    lines = [f"## {utc_now()} — boosting on busy cores (bench_contention.py)", "",
             f"- machine: {machine_line()}",
             f"- command: `{command_line('bench_contention.py', argv)}`",
             f"- {threads} threads for every library; binary data of bench_boosting.py "
             "(28 features), 100 iterations, 31 leaves; median and slowest of "
             f"{args.repeat} fits after a warm-up, each library in its own process, with "
             "the busy processes (one pure-Python loop each) started before it", "",
             "| train rows | busy processes | " + " | ".join(
                 f"{name} median s | {name} slowest s" for name in args.libraries) + " |",
             "|---:|---:|" + "---:|---:|" * len(args.libraries)]
    for n_rows in args.rows:
        for busy in args.busy:
            cells = []
            for library in args.libraries:
                seconds = measure(library, n_rows, busy, args.repeat, threads, args.timeout)
                cells += (["–", "–"] if seconds is None else
                          [f"{statistics.median(seconds):.3f}", f"{max(seconds):.3f}"])
            lines.append(f"| {int(n_rows * 0.8):,} | {busy} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
    publish(lines, args.write_results)


if __name__ == "__main__":
    main()
