"""Whether numba's worker threads get a core when a parallel region asks for them.

A parallel region ends when its slowest thread does. On a machine whose cores other
processes keep busy, a worker that the OS has set aside runs only at the next
scheduler tick, and every region then waits for it: measured on a 2-core virtual
machine with one other busy process, an empty two-thread region took 8-11 ms instead of
microseconds, and a boosting iteration of about ninety regions 280 ms instead of the
1.8 ms it took on one thread. :func:`parallel_region_seconds` times an empty region, as
a cheap test of that state before work that would open many.
"""

import time

import numba as nb
import numpy as np

#: An empty region slower than this, plus ``WAKE_SECONDS_PER_THREAD`` per thread, says
#: that a worker waited for a core. Quiet, one took 2 us (median; 10 us at most in 300,
#: 2 threads, Zen 5 virtual machine); a scheduler tick, the wait when a core is busy, is
#: 1-10 ms. Waking many threads takes longer: the allowance per thread keeps a quiet
#: 128-thread machine below the limit.
CONTENDED_REGION_SECONDS = 5e-4
WAKE_SECONDS_PER_THREAD = 1e-5


@nb.njit(cache=True, parallel=True)
def _touch_each_thread(marks):
    # One entry per thread: numba's static schedule gives each thread one iteration.
    for i in nb.prange(marks.shape[0]):
        marks[i] += 1.0


def parallel_region_seconds():
    """Seconds an empty parallel region took on numba's current thread count.

    The shortest of two regions, so that one late wake-up on a quiet machine does not
    read as a busy one; on a busy machine both wait."""
    marks = np.zeros(nb.get_num_threads())
    best = np.inf
    for _ in range(2):
        start = time.perf_counter()
        _touch_each_thread(marks)
        best = min(best, time.perf_counter() - start)
        if best <= _limit(marks.shape[0]):
            break
    return best


def _limit(n_threads):
    return CONTENDED_REGION_SECONDS + WAKE_SECONDS_PER_THREAD * n_threads


def cores_contended():
    """Whether a parallel region now waits for a worker thread to get a core (see the
    module's docstring)."""
    return parallel_region_seconds() > _limit(nb.get_num_threads())
