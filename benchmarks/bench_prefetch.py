"""How far ahead a gradient histogram pass should prefetch, on this machine's CPU.

One histogram pass of the gradient grower (:mod:`silva.engine.gradient_histogram`) over a
node whose samples lie scattered over 800,000 records (a half, a tenth and a hundredth of
them, in sample order as the partition leaves them), one thread, each row's record asked
for ``d`` rows ahead, for several ``d``: nanoseconds per row, the fastest of
``--repeat`` passes, the distances alternated within each repeat so that the machine's
drift falls on all of them alike. ``prefetch_rows`` in that module sets the distance the
grower uses; this is the measurement behind it, to run again on another CPU.

Usage::

    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/bench_prefetch.py --features 4 8 16 28
"""

import argparse
import time

import numba as nb
import numpy as np

from silva.engine.gradient_histogram import (
    N_CHANNELS,
    _add_sample,
    _add_sample_two_lanes,
    _prefetch,
    make_workspace,
    prefetch_rows,
)


@nb.njit
def _pass(hist, codes, index, stats, n_features, rows_ahead, two_lanes):
    # The loop of gradient_histogram._add_rows_of_features, with the distance an argument.
    width = stats.shape[1]
    first = width - N_CHANNELS
    end = index.shape[0]
    for i in range(end):
        _prefetch(stats, np.int64(index[min(i + rows_ahead, end - 1)]) * width)
        s = np.int64(index[i])
        if two_lanes:
            _add_sample_two_lanes(hist, codes, s, stats, s * width + first + 1, 0,
                                  n_features)
        else:
            _add_sample(hist, codes, s, stats, s * width + first, 0, n_features)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--features", type=int, nargs="+", default=[4, 8, 16, 28])
    parser.add_argument("--distances", type=int, nargs="+", default=[16, 24, 32, 48, 64])
    parser.add_argument("--rows", type=int, default=800_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    for n_features in args.features:
        codes_by_feature = rng.integers(0, 255, size=(n_features, args.rows), dtype=np.uint8)
        workspace = make_workspace(codes_by_feature, 256)
        workspace.stats[:, -N_CHANNELS:] = rng.random((args.rows, N_CHANNELS))
        chosen = prefetch_rows(np.int64(n_features))
        for fraction in (0.5, 0.1, 0.01):
            index = np.sort(rng.choice(args.rows, int(args.rows * fraction),
                                       replace=False)).astype(np.int32)
            for two_lanes in (False, True):
                hist = np.zeros((n_features, 256, 2 if two_lanes else N_CHANNELS))
                best = dict.fromkeys(args.distances, np.inf)
                for _ in range(args.repeat):
                    for distance in args.distances:
                        start = time.perf_counter()
                        _pass(hist, workspace.codes, index, workspace.stats, n_features,
                              distance, two_lanes)
                        best[distance] = min(best[distance], time.perf_counter() - start)
                cells = "  ".join(f"{d}: {t / index.size * 1e9:.2f}" for d, t in best.items())
                print(f"{n_features} features, {fraction:.0%} of the rows, "
                      f"{'two' if two_lanes else 'four'} channels (grower: {chosen} ahead), "
                      f"ns per row at d ahead: {cells}", flush=True)


if __name__ == "__main__":
    main()
