"""Histograms: per node, the sums of the statistic channels per (feature, bin).

A node's histogram ``hist[f, b, c]`` is the sum of channel ``c`` over the node's samples
whose feature ``f`` falls in bin ``b`` (the missing bin included). Building one costs a
pass over the node's samples for every feature, so the grower builds only the smaller
child's histogram and obtains the larger child's as parent minus smaller, in place in the
parent's buffer (the subtraction trick of LightGBM, Ke et al. 2017).

Features are independent, so both kernels run parallel over features; each thread writes
only its own features' rows, which keeps the sums bit-for-bit identical for any number of
threads. Small nodes use the serial kernels: starting a parallel region costs more than
the work.
"""

import numba as nb

from silva.engine.jit import CALLED_FROM_COMPILED_CODE, kernel
from silva.engine.specialize import specialize_options

# Bound to False in the serial copies (:func:`serial_kernels`), which then compile no
# parallel region.
PARALLEL = True


@kernel(inline="always")
def _accumulate_feature(hist_f, codes_f, node_stats, sample_indices, start, end):
    n_channels = node_stats.shape[1]
    hist_f[:, :] = 0.0
    for i in range(start, end):
        b = codes_f[sample_indices[i]]
        for c in range(n_channels):
            hist_f[b, c] += node_stats[i - start, c]


# The private kernels below are called from compiled code alone: no CPython wrapper to
# compile. (Called from Python, such a kernel would crash: keep them private.)
@kernel(parallel=True, no_cpython_wrapper=True)
def _build_parallel(hist, bin_codes, node_stats, sample_indices, start, end):
    for f in nb.prange(bin_codes.shape[0]):
        _accumulate_feature(hist[f], bin_codes[f], node_stats, sample_indices, start, end)


@kernel(no_cpython_wrapper=True)
def _build_serial(hist, bin_codes, node_stats, sample_indices, start, end):
    for f in range(bin_codes.shape[0]):
        _accumulate_feature(hist[f], bin_codes[f], node_stats, sample_indices, start, end)


@kernel()
def build_histogram(hist, bin_codes, ordered_stats, sample_indices, start, end, parallel):
    """Fill ``hist`` (n_features, n_bins, n_channels) for samples ``[start, end)``.

    ``ordered_stats`` holds the statistic channels in the order of ``sample_indices``
    (the grower keeps them so: row ``i`` is sample ``sample_indices[i]``'s), so the
    node's are the contiguous rows ``[start, end)``."""
    node_stats = ordered_stats[start:end]
    if PARALLEL and parallel:
        _build_parallel(hist, bin_codes, node_stats, sample_indices, start, end)
    else:
        _build_serial(hist, bin_codes, node_stats, sample_indices, start, end)


@kernel(inline="always")
def _subtract_feature(parent_f, child_f):
    # Written out: an array expression compiles numba's shape check and the string
    # formatting of its message (see silva.engine.array_copy).
    for b in range(parent_f.shape[0]):
        for c in range(parent_f.shape[1]):
            parent_f[b, c] -= child_f[b, c]


@kernel(parallel=True, no_cpython_wrapper=True)
def _subtract_parallel(parent, child):
    for f in nb.prange(parent.shape[0]):
        _subtract_feature(parent[f], child[f])


@kernel()
def subtract_histogram(parent, child, parallel):
    """Turn ``parent`` into its other child's histogram: ``parent -= child``, in place."""
    if PARALLEL and parallel:
        _subtract_parallel(parent, child)
    else:
        for f in range(parent.shape[0]):
            _subtract_feature(parent[f], child[f])


def serial_kernels():
    """``(build_histogram, subtract_histogram)`` compiled without their parallel paths:
    for fits whose nodes never reach the parallel threshold, which then compile no
    parallel region (each of numba's costs about a second on a cold first fit). The
    growers call them from compiled code alone: they have no CPython wrapper."""
    # The serial pass inlined: one compiled unit where there were two.
    serial_pass = specialize_options(_build_serial, "inlined", {"inline": "always"})
    return (specialize_options(build_histogram, "serial", CALLED_FROM_COMPILED_CODE,
                               PARALLEL=False, _build_serial=serial_pass),
            specialize_options(subtract_histogram, "serial", CALLED_FROM_COMPILED_CODE,
                               PARALLEL=False))
