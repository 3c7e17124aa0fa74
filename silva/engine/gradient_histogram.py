"""Histograms of the gradient grower: the workspace's sample records and the passes over them.

A histogram ``hist[f, b]`` of a node holds, for each (feature, bin), the sums of four
statistic channels over the node's samples in that bin: a one that counts the sample,
its weighted gradient, its weighted hessian and its weight (``N_CHANNELS``; the entry is
32 bytes, which one vector operation adds a sample to).

Data layout (:func:`make_workspace`, built once per fit): each sample is one record of
64 bytes (for up to 32 one-byte bin codes) holding its codes and its statistic channels,
in sample order; records never move (the grower moves 4-byte sample indices, see
:mod:`silva.engine.partition`). A histogram pass reads each sample's record, one cache
line, prefetched a few samples ahead (:func:`_prefetch`), and adds its four channels to
each feature's bin with one 4-wide vector operation (:func:`_make_add_sample`), or only
the gradient and the hessian, 2-wide, when every hessian channel equals the count (unit
weights, unit hessians; see :func:`node_histogram`). Moving whole rows of codes instead,
so that a pass reads them in memory order, cost more in the partition than it saved in
the histograms: a split then copied 32 bytes per sample after a counting pass over them,
against 4 bytes now.

Parallelism: a pass over a node of at least ``2 * BLOCK_ROWS`` samples runs over row
blocks whose number depends only on the node's size; each block sums its own samples,
and the block sums are then added in block order, so results do not depend on the
number of threads; a smaller node is one serial pass whose sums are those of
:func:`silva.engine.histogram.build_histogram` (same samples, same order). With
``threads=1`` (trees grown at once in several threads) no parallel region starts: the
same blocks run one after the other and are added in the same order. The gradient
grower sums a node too small for row blocks on several threads, each over all its
samples for its own share of the features, in the region that also scans it
(:func:`feature_share_histogram`, :mod:`silva.engine.gradient_children`): the sums of
one serial pass.

Wide data (:func:`is_wide`: a node's histogram larger than about the core's L2 cache, 95
features of 255 bins on a 1 MiB L2): a pass adding each sample to every feature's
histogram missed L2 on most additions, and a parallel pass's block sums of every feature
cost as much as the additions. Such fits take copies of their own
(:func:`wide_node_histogram`) that add chunks of samples tile of features by tile, the
threads sharing out the features, with the same block structure: the same sums.
"""

import functools
import os
from collections import namedtuple

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from silva.engine.jit import kernel
from silva.engine.specialize import specialize

#: The grower's buffers for one fit (:func:`make_workspace`).
Workspace = namedtuple("Workspace", ["codes", "stats", "index", "histograms", "columns"])

#: Where a tree's statistic channels come from: column ``column`` of the (n_samples,
#: n_outputs) ``gradient`` and ``hessian``, the sample ``weight``; ``use_hessian`` False
#: puts the weight in the hessian channel (Friedman's least-squares fit of the negative
#: gradient); ``two_lanes``: every weight and hessian channel is 1 (see
#: :func:`node_histogram`).
GradientStatistics = namedtuple("GradientStatistics", [
    "gradient", "hessian", "column", "weight", "use_hessian", "two_lanes"])

# Histogram channels: count (a one per sample), weighted gradient, weighted hessian and
# weight, a (feature, bin) entry of 32 bytes, which one vector operation adds a sample to.
# The weight took the place of a zero pad: the count needed a channel of its own for
# weighted fits, and the entry had room for it at no cost.
N_CHANNELS = 4
COUNT_CHANNEL = 0
WEIGHT_CHANNEL = 3

# Histogram passes over a node of at least 2 * BLOCK_ROWS samples run in parallel over
# row blocks of at least BLOCK_ROWS samples, at most MAX_BLOCKS of them. Measured, one
# binary log-loss tree on 800,000 x 28 rows, 31 leaves, 2 threads, median of 5-6
# processes: 39.9 ms with 4096, 40.4 with 8192, 43.4 with 16384; 2048 varied from 40 to
# 52 ms. With 16384 the many children of 8,000-32,000 samples were serial passes.
BLOCK_ROWS = 4096
MAX_BLOCKS = 16
# A fit of fewer than 2 * BLOCK_ROWS rows has parallel passes (has_parallel_passes) when
# it has at least FEATURE_PARTS_MIN_ROWS rows (one tree an iteration; twice as many for
# several, see has_parallel_passes) and 2 * MIN_PART_FEATURES features: each
# split's children are summed and scanned by the threads for their shares of the
# features (gradient_children.children_pass, whatever the children's sizes; for wide
# data _sum_node_tiled, from FEATURE_PARTS_MIN_ROWS rows). Summed serially, a fit of
# 5,000-30,000 rows grew nearly all its nodes on one thread. From 1,024 rows, not 2,048
# as before the children's region: 1,600 x 28 rows, 100 trees of 31 leaves, 2 threads,
# AMD EPYC Zen 3, regression 0.126-0.132 s against 0.163-0.177 (best of 9 fits, four of
# five alternations), binary no change read (0.108-0.156 s against 0.148-0.184), and
# 200 features 0.86-1.03 s against 1.16-1.27; the same trees.
FEATURE_PARTS_MIN_ROWS = 1024
MIN_PART_FEATURES = 4
# A two-lane pass (see node_histogram) over fewer rows than this adds all four channels
# instead. The two-lane pass saves a little on each addition but then widens every bin
# of every feature (n_features x n_bins entries rewritten, about 1.4 ns each), which a
# small node's few additions never pay back. Measured on AMD EPYC Zen 3, one serial
# pass, 256 bins, random codes (us, two lanes against four): 10 features 7.3 / 4.6 at 16
# rows, 9.7 / 6.9 at 256, 17.9 / 16.3 at 1,024, 31.9 / 33.4 at 2,048; 28 features 15.4 /
# 6.6, 21.2 / 14.1, 42.2 / 36.5, 70.1 / 67.4, and 126.2 / 126.6 at 4,096. The sums are
# the same bit for bit: under two lanes every count, weight and hessian term is 1.0.
TWO_LANES_MIN_ROWS = 2048
# Bound to False in the copy serial_node_histogram() makes, which compiles no parallel
# region: for fits whose passes never start one (fewer than 2 * BLOCK_ROWS rows).
PARALLEL = True
# Wide data (is_wide: a node's histogram larger than WIDE_L2_FRACTION of the core's L2
# cache) is summed in chunks of CHUNK_ROWS samples, tile of TILE_FEATURES features by
# tile (see _histogram_feature_range). WIDE is bound to True only in the copies
# wide_node_histogram() makes: other fits compile no tiled pass. Measured on 160,000
# samples of random codes, one thread, Zen 5 (1 MiB L2), 4-channel passes, ms per pass
# (root / a quarter of the rows / a sixteenth), noisy shared machine: 200 features
# 31.3 / 10.1 / 1.9 row by row, 21.3 / 6.7 / 1.4 in 2048 x 25 tiles (25 x 50: 37 / 6.3;
# 1024 x 12: 27 / 11); 100 features 11.8 / 4.3 / 0.74 against 10.0 / 2.9 / 0.68; 64
# features 5.6 / 1.5 / 0.37 against 7.7 / 1.5 / 0.36 (no gain while the histogram fits).
WIDE = False
WIDE_L2_FRACTION = 0.75
DEFAULT_L2_BYTES = 2**20
TILE_FEATURES = 25
CHUNK_ROWS = 2048
# At most this much memory for a fit's pool of node histograms (see pool_slots_for).
POOL_BYTES = 64 * 2**20
# How far ahead a histogram pass prefetches a sample's record (see prefetch_rows): about
# PREFETCH_FEATURE_ROWS / n rows for a pass adding n features, within [PREFETCH_MIN_ROWS,
# PREFETCH_MAX_ROWS].
PREFETCH_FEATURE_ROWS = 512
PREFETCH_MIN_ROWS = 16
PREFETCH_MAX_ROWS = 48


def _aligned_zeros(shape, dtype):
    """Zeros on a 64-byte boundary (a cache line), so that rows and vectors of 32 or 64
    bytes do not straddle two lines."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape))
    buffer = np.zeros(size * dtype.itemsize + 64, dtype=np.uint8)
    offset = -buffer.ctypes.data % 64
    return buffer[offset:offset + size * dtype.itemsize].view(dtype).reshape(shape)


def padded_bins(n_bins):
    """Bins per feature in a histogram: at least ``n_bins``, odd, and between 5 and 123
    modulo 128, so that one feature's histogram does not start a multiple of 4 KiB
    (nor nearly so) after another's, for 32-byte entries and for 16-byte ones
    (:func:`_two_lane_view`).

    A CPU compares the low 12 bits of a load's address with those of pending stores
    (4K aliasing): with 256 bins of 32 bytes, bin ``c`` of every feature shares those
    bits, and a sample whose features fall in alike bins (binary or low-cardinality
    features, correlated ones, deep nodes) stalls each addition on the stores of the
    others. Measured on 160,000 x 28 codes, 4-wide entries: binary features 7.6 ns per
    addition with 256 bins, 0.76 with 261; uniformly random codes 0.95 either way.
    The padding bins are never added to, so they stay zero."""
    padded = n_bins | 1
    while not 5 <= padded % 128 <= 123:
        padded += 2
    return padded


def pool_slots_for(max_leaf_nodes, n_features, n_bins):
    """Node histograms a workspace should keep for a tree: one per leaf waiting to be
    split, plus the new child's (``max_leaf_nodes + 1``; 64 without a leaf limit), within
    ``POOL_BYTES``. A tree that needs more grows its pool (allocating and copying twice
    the slots each time); with 4 slots, a 31-leaf tree on 800,000 x 28 rows grew it
    three times per tree, copying about 6.5 MB, about 1 ms of its 40."""
    wanted = 64 if max_leaf_nodes <= 0 else max_leaf_nodes + 1
    slot_bytes = n_features * padded_bins(n_bins) * N_CHANNELS * 8
    return int(max(4, min(wanted, POOL_BYTES // slot_bytes)))


def make_workspace(bin_codes, n_bins, pool_slots=4):
    """The grower's buffers for a fit on the feature-major ``bin_codes`` (n_features,
    n_samples), allocated once and reused by every tree; ``pool_slots``: histograms kept
    for a tree's nodes before the pool has to grow (see :func:`grow_gradient_tree`).

    A sample is one *record*: its bin codes, then its four statistic channels (float64,
    see :func:`_fill_sample`;
    written by the root's histogram pass of each tree), padded so that the channels
    start on a 32-byte boundary. For up to 32 one-byte codes a record is 64 bytes, one
    cache line, so that a histogram pass fetches one line per sample, wherever the
    sample lies. Records stay in sample order and never move: a split moves only the
    node's 4-byte sample indices, and decides each sample's side from ``bin_codes``
    itself (one feature's column, a byte per sample, which stays in cache).

    Returns a :class:`Workspace`: ``codes`` (n_samples,
    record_bytes / itemsize) and ``stats`` (n_samples, record_bytes / 8) float64, two
    views of the records (a sample's channels are the last four ``stats`` columns);
    ``index`` (3, n_samples) int32: the two halves between which the partition moves a
    tree's sample indices, and a staging row for the partition of large nodes
    (:func:`~silva.engine.partition.partition_in_blocks`); ``histograms`` (pool_slots +
    MAX_BLOCKS, n_features, ``padded_bins(n_bins)``, 4): the ``pool_slots`` slots of a
    tree's node histograms, a scratch one and the ``MAX_BLOCKS - 1`` block sums of
    parallel passes; ``columns``, ``bin_codes`` itself.
    """
    n_features, n_samples = bin_codes.shape
    code_words = -(-(n_features * bin_codes.itemsize) // 8)
    stats_word = -(-code_words // N_CHANNELS) * N_CHANNELS
    records = _aligned_zeros((n_samples, stats_word + N_CHANNELS), np.uint64)
    codes = records.view(bin_codes.dtype)
    codes[:, :n_features] = bin_codes.T
    index = _aligned_zeros((3, n_samples), np.int32)
    histograms = _aligned_zeros(
        (pool_slots + MAX_BLOCKS, n_features, padded_bins(n_bins), N_CHANNELS), np.float64)
    return Workspace(codes, records.view(np.float64), index, histograms, bin_codes)


@kernel(inline="always")
def _fill_sample(s, statistics, stats):
    """The channels ``(1, w_s g_s, w_s h_s, w_s)`` of sample ``s`` into its record (the
    last four columns of the workspace's ``stats``), from ``statistics`` (a
    :class:`GradientStatistics`)."""
    w = statistics.weight[s]
    _store_four(stats, s * stats.shape[1] + stats.shape[1] - N_CHANNELS, 1.0,
                w * statistics.gradient[s, statistics.column],
                w * statistics.hessian[s, statistics.column]
                if statistics.use_hessian else w, w)


@intrinsic
def _store_four(typingctx, array, index, a, b, c, d):
    """``array.flat[index:index + 4] = a, b, c, d`` (float64) with one 32-byte vector
    store. The histogram pass that fills a record then loads the four channels back as
    one vector: a CPU forwards a load from a pending store of the same address and size,
    but not from four 8-byte stores, and such a load waited for all four to reach the
    cache. Measured on the root's pass over 800,000 samples of 8 features, one thread,
    Zen 5, noisy shared machine: 7.14 ms with four stores, 6.82-6.97 with one (5.2-5.4
    without the fill)."""
    signature = types.void(array, index, a, b, c, d)

    def codegen(context, builder, sig, args):
        array_value, i = args[:2]
        data = context.make_array(sig.args[0])(context, builder, array_value).data
        vector = ir.Constant(ir.VectorType(ir.DoubleType(), N_CHANNELS), ir.Undefined)
        for lane, value in enumerate(args[2:]):
            vector = builder.insert_element(vector, value, ir.IntType(32)(lane))
        pointer = builder.bitcast(builder.gep(data, [i]), vector.type.as_pointer())
        builder.store(vector, pointer, align=8)
        return context.get_dummy_value()

    return signature, codegen


def clone_workspace(workspace):
    """A workspace of its own for a tree grown at the same time in another thread: the
    records copied (their codes never change), fresh index halves and histograms, the
    same read-only ``columns``."""
    records = _aligned_zeros(workspace.stats.shape, np.float64)
    records[:] = workspace.stats
    return Workspace(records.view(workspace.codes.dtype), records,
                     _aligned_zeros(workspace.index.shape, workspace.index.dtype),
                     _aligned_zeros(workspace.histograms.shape, workspace.histograms.dtype),
                     workspace.columns)


def _make_add_sample(lanes):
    """An intrinsic ``add(hist, codes, sample, stats, source, first_feature,
    last_feature)``: ``hist[f, codes[sample, f]] += stats.flat[source:source + lanes]``
    for every feature ``first_feature <= f < last_feature``, one sample's channels added
    to its bin of each feature with one
    ``lanes``-wide vector operation each (C-contiguous ``hist`` (n_features, n_bins,
    lanes) float64, ``codes`` (n_samples, width) and ``stats`` float64; lane by lane the
    same additions as scalar ones, in feature order; numba leaves LLVM's SLP vectoriser
    off, so adjacent scalar updates would stay separate loads, adds and stores).

    The channels are loaded into a register once per sample. A loop of per-feature
    vector adds written in numba loaded them again for every feature: LLVM cannot tell
    that the histogram stores leave ``stats`` alone, and each reload could wait on a
    store whose address matched it in the low 12 bits (4K aliasing)."""

    @intrinsic
    def add_sample(typingctx, hist, codes, sample, stats, source, first_feature,
                   last_feature):
        signature = types.void(hist, codes, sample, stats, source, first_feature,
                               last_feature)

        def codegen(context, builder, sig, args):
            (hist_value, codes_value, sample_value, stats_value, source_value, first,
             last) = args
            hist_array = context.make_array(sig.args[0])(context, builder, hist_value)
            codes_array = context.make_array(sig.args[1])(context, builder, codes_value)
            stats_array = context.make_array(sig.args[3])(context, builder, stats_value)
            int64 = ir.IntType(64)
            vector = ir.VectorType(ir.DoubleType(), lanes)
            channels = builder.load(
                builder.bitcast(builder.gep(stats_array.data, [source_value]),
                                vector.as_pointer()), align=8)
            n_bins = builder.extract_value(hist_array.shape, 1)
            width = builder.extract_value(codes_array.shape, 1)
            row = builder.gep(codes_array.data, [builder.mul(sample_value, width)])
            with cgutils.for_range(builder, builder.sub(last, first)) as loop:
                f = builder.add(first, loop.index)
                code = builder.zext(builder.load(builder.gep(row, [f])), int64)
                entry = builder.mul(builder.add(builder.mul(f, n_bins), code), int64(lanes))
                pointer = builder.bitcast(builder.gep(hist_array.data, [entry]),
                                          vector.as_pointer())
                builder.store(builder.fadd(builder.load(pointer, align=8), channels),
                              pointer, align=8)
            return context.get_dummy_value()

        return signature, codegen

    return add_sample


_add_sample = _make_add_sample(N_CHANNELS)
# (gradient, hessian) only: see node_histogram's ``two_lanes``.
_add_sample_two_lanes = _make_add_sample(2)


@intrinsic
def _prefetch(typingctx, array, index):
    """Ask the CPU to start loading ``array.flat[index]`` into cache (``llvm.prefetch``:
    a hint, with no effect on results)."""
    signature = types.void(array, index)

    def codegen(context, builder, sig, args):
        array_value, i = args
        data = context.make_array(sig.args[0])(context, builder, array_value).data
        byte_pointer = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer, int32, int32, int32]),
            "llvm.prefetch.p0i8")
        builder.call(function, [builder.bitcast(builder.gep(data, [i]), byte_pointer),
                                int32(0), int32(3), int32(1)])
        return context.get_dummy_value()

    return signature, codegen


def has_parallel_passes(n_features, n_samples, n_trees=1):
    """Whether a fit on ``n_samples`` rows of ``n_features`` features, growing ``n_trees``
    trees an iteration (one per class), should take the grower's copy with parallel
    passes (see FEATURE_PARTS_MIN_ROWS above).

    Several trees an iteration mostly grow at once in the pool's threads, each with
    serial passes (``silva._boosting_loop.IterationGrower``): for them the parallel
    copy starts from 2 * FEATURE_PARTS_MIN_ROWS rows, as before the children's region,
    so that a small multiclass fit (digits in ``silva demo``) compiles no copy it would
    seldom run."""
    min_rows = FEATURE_PARTS_MIN_ROWS if n_trees == 1 else 2 * FEATURE_PARTS_MIN_ROWS
    return (n_samples >= 2 * BLOCK_ROWS
            or (n_samples >= min_rows and n_features >= 2 * MIN_PART_FEATURES))


@kernel(inline="always")
def _n_blocks(n_rows):
    """Row blocks of a parallel pass over ``n_rows`` rows: a function of the row count
    only, never of the number of threads, so that results do not depend on it."""
    return min(MAX_BLOCKS, max(1, n_rows // BLOCK_ROWS))


@kernel()
def _histogram_rows(hist, codes, index, stats, start, end, n_features, statistics, fill):
    """``hist`` (zeroed first) += the channels of the samples ``index[start:end]``, bin by
    bin, in that order: all four channels, or with a 2-channel ``hist`` the gradient and
    the hessian only. ``fill``: first write each sample's channels into its record
    (:func:`_fill_sample`)."""
    _histogram_rows_of_features(hist, codes, index, stats, start, end, np.int64(0),
                                np.int64(n_features), statistics, fill)


@kernel(inline="always")
def _histogram_rows_of_features(hist, codes, index, stats, start, end, first_feature,
                                last_feature, statistics, fill):
    """:func:`_histogram_rows` for the features ``first_feature..last_feature - 1`` only
    (their rows of ``hist`` zeroed first, the others left alone)."""
    zeros = hist[first_feature:last_feature].reshape(-1)
    for e in range(zeros.shape[0]):
        zeros[e] = 0.0
    _add_rows_of_features(hist, codes, index, stats, start, end, first_feature,
                          last_feature, statistics, fill)


@kernel(inline="always")
def prefetch_rows(n_features):
    """How many rows ahead a pass adding ``n_features`` features to a node's histogram
    asks for a sample's record: far enough that the record (a cache miss to memory when
    the node's samples lie scattered over a large fit's records) has arrived when its
    row's turn comes, so the fewer features a row adds (the less time it takes), the
    further ahead. Memory's latency is about the same whatever the row's work.

    Sixteen rows ahead, as for every pass before, left a fit on 800,000 x 8 rows (binary,
    100 trees of 31 leaves, 2 threads, Zen 5) waiting on the records' loads for about a
    third of its histogram passes (perf: the first load of a record's channels held 37%
    of the pass's samples). One pass over a node of a half / a tenth of 800,000
    scattered samples, one thread, ns per row at 16 / 32 / 48 rows ahead
    (``benchmarks/bench_prefetch.py``): 8 features, four channels 11.7 / 9.4 / 8.0 and
    16.3 / 12.7 / 12.2, two channels 9.6 / 6.9 / 5.6 and 7.6 / 6.0 / 5.8; 16 features, two
    channels 14.3 / 10.9 / 10.7 and 13.1 / 10.5 / 10.7; 28 features the same within 3%
    at any distance from 16 on. Nodes of 8,000 samples (1%) read 2-4% slower 48 rows
    ahead than 16, and further still a little more: hence the cap. The machine's
    readings of one pass vary by up to a third from run to run (in one run the
    tenth-of-the-rows node read the same at every distance); the half-of-the-rows node
    gained in every run.
    """
    return min(PREFETCH_MAX_ROWS,
               max(PREFETCH_MIN_ROWS, PREFETCH_FEATURE_ROWS // max(n_features, 1)))


@kernel(inline="always")
def _add_rows_of_features(hist, codes, index, stats, start, end, first_feature,
                          last_feature, statistics, fill):
    """``hist`` += the channels of the samples ``index[start:end]`` for the features
    ``first_feature..last_feature - 1`` (see :func:`_histogram_rows`)."""
    width = stats.shape[1]
    first = width - N_CHANNELS
    first_code_word = first_feature * codes.itemsize // 8
    two_lanes = hist.shape[2] == 2
    rows_ahead = prefetch_rows(last_feature - first_feature)
    for i in range(start, end):
        # A deep node's samples are scattered over the records: ask for the record of a
        # sample further on (one cache line for up to 32 features) while this one is
        # added.
        ahead = np.int64(index[min(i + rows_ahead, end - 1)]) * width
        # The line of the record that holds the first code this pass reads (beyond the
        # first line for a share or a tile of wide data's features).
        _prefetch(stats, ahead + first_code_word)
        if width > 8:
            # The channels are on another cache line than the first codes. (A record of
            # up to 8 words is one line: a second prefetch of it took 7.56 against 7.14
            # ms per root pass of 800,000 samples of 8 features, one thread, Zen 5.)
            _prefetch(stats, ahead + first)
        s = np.int64(index[i])
        if fill:
            _fill_sample(s, statistics, stats)
        if two_lanes:
            _add_sample_two_lanes(hist, codes, s, stats, s * width + first + 1,
                                  first_feature, last_feature)
        else:
            _add_sample(hist, codes, s, stats, s * width + first, first_feature,
                        last_feature)


@kernel(inline="always")
def _histogram_block(k, hist, parts, codes, index, stats, start, end, n_features,
                     n_blocks, statistics, fill):
    n_rows = end - start
    target = hist if k == 0 else parts[k - 1]
    _histogram_rows(target, codes, index, stats, start + k * n_rows // n_blocks,
                    start + (k + 1) * n_rows // n_blocks, n_features, statistics, fill)


@kernel(inline="always")
def _subtract(target, source):
    """``target -= source`` for two C-contiguous arrays of one shape, as one flat loop:
    numba's in-place array operator took 8 times longer on a (28, 261, 4) histogram
    (57 against 7 microseconds)."""
    target_flat = target.reshape(-1)
    source_flat = source.reshape(-1)
    for i in range(target_flat.shape[0]):
        target_flat[i] -= source_flat[i]


@kernel(inline="always")
def _add_blocks(f, hist, parts, n_blocks):
    # Blocks in order: the same sums whatever thread computed which block. One flat
    # loop per block: three nested loops over bins and channels took 3.5 times longer.
    target = hist[f].reshape(-1)
    for k in range(n_blocks - 1):
        source = parts[k, f].reshape(-1)
        for i in range(target.shape[0]):
            target[i] += source[i]


@kernel(parallel=True)
def _histogram_blocks(hist, parts, codes, index, stats, start, end, n_features, n_blocks,
                      statistics, fill):
    for k in nb.prange(n_blocks):
        _histogram_block(k, hist, parts, codes, index, stats, start, end, n_features,
                         n_blocks, statistics, fill)
    for f in nb.prange(n_features):
        _add_blocks(f, hist, parts, n_blocks)


@kernel(inline="always")
def _histogram_feature_range(hist, scratch, codes, index, stats, start, end, first, last,
                             n_blocks, chunk_rows, tile_features, statistics):
    """The sums of the features ``first..last - 1`` over the node's samples: block 0's
    into ``hist``, each further block's into ``scratch`` and then added to ``hist``, in
    block order: per (feature, bin), the additions of :func:`_histogram_blocks` (or of
    the serial pass, with one block) in the same order, so the same sums.

    Within a block, the samples go in chunks of ``chunk_rows``, and each chunk once per
    tile of ``tile_features`` features: the chunk's records stay in cache from tile to
    tile, and a tile's histograms are small enough to stay in the core's L2 cache while
    the chunk is added (200 features' histograms are 1.7 MB; a row-by-row pass over all
    of them missed L2 on most additions)."""
    n_rows = end - start
    for k in range(n_blocks):
        target = hist if k == 0 else scratch
        zeros = target[first:last].reshape(-1)
        for e in range(zeros.shape[0]):
            zeros[e] = 0.0
        block_end = start + (k + 1) * n_rows // n_blocks
        for chunk_start in range(start + k * n_rows // n_blocks, block_end, chunk_rows):
            chunk_end = min(chunk_start + chunk_rows, block_end)
            for tile_start in range(first, last, tile_features):
                _add_rows_of_features(target, codes, index, stats, chunk_start, chunk_end,
                                      tile_start, min(tile_start + tile_features, last),
                                      statistics, False)
        if k > 0:
            block_sums = scratch[first:last].reshape(-1)
            sums = hist[first:last].reshape(-1)
            for e in range(sums.shape[0]):
                sums[e] += block_sums[e]


@kernel(parallel=True)
def _histogram_feature_ranges_parallel(hist, scratch, codes, index, stats, start, end,
                                       n_features, n_blocks, n_parts, chunk_rows,
                                       tile_features, statistics):
    # The parts never share a feature, so they share the scratch histogram too.
    for part in nb.prange(n_parts):
        _histogram_feature_range(hist, scratch, codes, index, stats, start, end,
                                 part * n_features // n_parts,
                                 (part + 1) * n_features // n_parts, n_blocks, chunk_rows,
                                 tile_features, statistics)


@kernel(parallel=True)
def _fill_records_parallel(index, start, end, stats, statistics):
    n_chunks = min(MAX_BLOCKS, max(1, (end - start) // BLOCK_ROWS))
    for k in nb.prange(n_chunks):
        for i in range(start + k * (end - start) // n_chunks,
                       start + (k + 1) * (end - start) // n_chunks):
            _fill_sample(np.int64(index[i]), statistics, stats)


@kernel()
def _fill_records(index, start, end, stats, statistics):
    for i in range(start, end):
        _fill_sample(np.int64(index[i]), statistics, stats)


@kernel()
def _sum_node_tiled(hist, scratch, codes, index, stats, start, end, n_features, threads,
                    statistics, fill):
    """:func:`_sum_node` for wide data (see :func:`wide_node_histogram`): chunks of
    samples added tile of features by tile (:func:`_histogram_feature_range`); the
    threads share out the features, each over all the node's samples, so that no block
    sums of every feature are added afterwards. The sums are those of
    :func:`_sum_node`'s serial and block passes, bit for bit."""
    parallel = PARALLEL and threads > 1 and end - start >= FEATURE_PARTS_MIN_ROWS
    if fill:
        # Before the tiles: each tile reads every record's channels.
        if PARALLEL and parallel:
            _fill_records_parallel(index, start, end, stats, statistics)
        else:
            _fill_records(index, start, end, stats, statistics)
    n_blocks = _n_blocks(end - start)
    if PARALLEL and parallel:
        _histogram_feature_ranges_parallel(hist, scratch, codes, index, stats, start, end,
                                           n_features, n_blocks, threads, CHUNK_ROWS,
                                           TILE_FEATURES, statistics)
    else:
        _histogram_feature_range(hist, scratch, codes, index, stats, start, end, 0,
                                 n_features, n_blocks, CHUNK_ROWS, TILE_FEATURES,
                                 statistics)


@kernel()
def _sum_node(hist, parts, codes, index, stats, start, end, n_features, threads, statistics,
              fill):
    if WIDE:
        _sum_node_tiled(hist, parts[0], codes, index, stats, start, end, n_features,
                        threads, statistics, fill)
        return
    serial = threads <= 1
    n_blocks = _n_blocks(end - start)
    if n_blocks == 1:
        _histogram_rows(hist, codes, index, stats, start, end, n_features, statistics,
                        fill)
    elif PARALLEL and not serial:
        _histogram_blocks(hist, parts, codes, index, stats, start, end, n_features,
                          n_blocks, statistics, fill)
    else:
        for k in range(n_blocks):
            _histogram_block(k, hist, parts, codes, index, stats, start, end, n_features,
                             n_blocks, statistics, fill)
        for f in range(n_features):
            _add_blocks(f, hist, parts, n_blocks)


@kernel(inline="always")
def _two_lane_view(hist):
    """The first half of a 4-channel histogram's memory as a 2-channel histogram of the
    same leading shape."""
    return hist.reshape(-1)[:hist.size // 2].reshape(hist.shape[:-1] + (2,))


@kernel(inline="always")
def _adds_two_lanes(two_lanes, n_rows):
    """Whether a pass over ``n_rows`` samples of a fit allowed two lanes (``two_lanes``)
    adds only the gradient and hessian: from ``TWO_LANES_MIN_ROWS`` rows."""
    return two_lanes and n_rows >= TWO_LANES_MIN_ROWS


@kernel()
def _widen(hist):
    """In place: the (gradient, hessian) histogram held by :func:`_two_lane_view` of
    ``hist`` becomes the 4-channel ``(hessian, gradient, hessian, hessian)`` one (count
    and weight are the hessian sums when every sample's weight and hessian are 1).
    Entries are widened from the last to the first, so that none is overwritten before
    it is read."""
    flat = hist.reshape(-1)
    for e in range(hist.size // N_CHANNELS - 1, -1, -1):
        gradient = flat[2 * e]
        hessian = flat[2 * e + 1]
        flat[N_CHANNELS * e] = hessian
        flat[N_CHANNELS * e + 1] = gradient
        flat[N_CHANNELS * e + 2] = hessian
        flat[N_CHANNELS * e + 3] = hessian


# Inlined: called apart, its code was optimised once on its own and again in the
# parallel loop that calls it (a cold first fit about 2 s longer).
@kernel(inline="always")
def feature_share_histogram(hist, codes, index, stats, start, end, first_feature,
                            last_feature, two_lanes, statistics):
    """The rows ``first_feature..last_feature - 1`` of the histogram ``hist`` (n_features,
    n_bins, 4) of the samples ``index[start:end]``, as one serial pass sums them (see
    :func:`node_histogram`; records already filled), the other rows left alone: for one
    thread's share of the features (:func:`silva.engine.gradient_children.children_pass`).

    With ``two_lanes`` (and at least ``TWO_LANES_MIN_ROWS`` samples) the gradient and
    hessian sums go into the first half of each feature's own entries, which are then
    widened feature by feature (not into the first half of the whole histogram, as
    :func:`node_histogram` does, whose widening reads other features' entries)."""
    n_bins = hist.shape[1]
    by_two_lanes = _adds_two_lanes(two_lanes, end - start)
    lanes = 2 if by_two_lanes else N_CHANNELS
    for f in range(first_feature, last_feature):
        entries = hist[f].reshape(-1)
        for e in range(n_bins * lanes):
            entries[e] = 0.0
    # Feature f's entry for bin b is at (f * n_bins * 4 + b * lanes) in either layout.
    target = hist.reshape((hist.shape[0], N_CHANNELS // lanes * n_bins, lanes))
    _add_rows_of_features(target, codes, index, stats, start, end, first_feature,
                          last_feature, statistics, False)
    if by_two_lanes:
        for f in range(first_feature, last_feature):
            _widen(hist[f])


@kernel()
def node_histogram(hist, parent, parts, codes, index, stats, start, end, n_features,
                   subtract, threads, two_lanes, statistics, fill):
    """The node's histogram ``hist`` (n_features, n_bins, 4) and, with ``subtract``,
    ``parent -= hist`` (the sibling's histogram).

    The node's samples are ``index[start:end]`` (the half of the workspace's index that
    holds them; the grower keeps every node's samples contiguous and increasing): the
    pass reads each sample's record (its ``codes`` and ``stats``, see
    :func:`make_workspace`) and adds its channels to the bin of each feature with one
    vector operation. A node of fewer than ``2 * BLOCK_ROWS`` samples is one pass that
    adds its samples in order (the sums of
    :func:`silva.engine.histogram.build_histogram`); a larger node is split into row
    blocks, summed in parallel into ``parts`` (at least ``MAX_BLOCKS - 1`` histograms)
    and then added block after block (with ``threads=1``, the same blocks one after the
    other, so the same sums). ``threads``: how many threads the passes may use
    (numba's current number, or 1 for no parallel region at all); the sums never depend
    on it.

    ``two_lanes``: every sample's hessian channel equals its count and weight channels
    (unit sample weights, and a unit hessian, as for squared error, or Friedman's
    least-squares fit), so the pass adds only the gradient and the hessian, with 2-wide
    vector operations into half as much memory (measured: a quarter less time per
    addition), and then copies the hessian sums into the count and weight channels: the
    same sums, bit for bit. With other weights the count differs from the hessian sum,
    and the pass must add all four channels. A node of fewer than ``TWO_LANES_MIN_ROWS``
    samples adds all four anyway: its widening would cost more than its additions save.

    ``fill``: the pass first writes each sample's channels into its record, from
    ``statistics`` (a :class:`GradientStatistics`), as it reads the record anyway: the
    grower fills every record of a tree in its root's pass. As a pass of its own, the
    fill took 2.7 ms per 800,000 samples (a read and a write-back of every record's
    cache line); in the root's pass, about 1.2 ms more than the pass alone.
    """
    if _adds_two_lanes(two_lanes, end - start):
        _sum_node(_two_lane_view(hist), _two_lane_view(parts), codes, index, stats, start,
                  end, n_features, threads, statistics, fill)
        _widen(hist)
    else:
        _sum_node(hist, parts, codes, index, stats, start, end, n_features, threads,
                  statistics, fill)
    if subtract:
        _subtract(parent, hist)


def serial_node_histogram():
    """:func:`node_histogram` compiled without its parallel passes (as with ``threads=1``),
    for fits too small for them: a cold first fit then compiles no parallel region."""
    return specialize(node_histogram, "serial",
                      _sum_node=specialize(_sum_node, "serial", PARALLEL=False))


@functools.cache
def l2_cache_bytes():
    """One core's L2 cache in bytes, from Linux's sysfs (read once per process);
    ``DEFAULT_L2_BYTES`` where it cannot be read (another OS, a container that hides
    it)."""
    root = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in sorted(os.listdir(root)):
            with open(os.path.join(root, entry, "level")) as level_file:
                if level_file.read().strip() != "2":
                    continue
            with open(os.path.join(root, entry, "type")) as type_file:
                if type_file.read().strip() == "Instruction":
                    continue
            with open(os.path.join(root, entry, "size")) as size_file:
                size = size_file.read().strip().upper()
            scale = {"K": 2**10, "M": 2**20}.get(size[-1:], 1)
            return int(size.rstrip("KM")) * scale
    except (OSError, ValueError):
        pass
    return DEFAULT_L2_BYTES


def is_wide(n_features, n_bins, l2_bytes=None):
    """Whether a fit on ``n_features`` features of ``n_bins`` bins takes
    :func:`wide_node_histogram`'s tiled passes: when a node's histogram exceeds
    ``WIDE_L2_FRACTION`` of the core's L2 cache (``l2_bytes``, by default this CPU's),
    so that a row-by-row pass over all features would miss L2 on most additions. A
    choice made at run time, per CPU: 94 features of 255 bins on a 1 MiB L2 (AMD Zen 5),
    188 on a 2 MiB one (Intel Sapphire and Emerald Rapids). The trees are the same either
    way."""
    if l2_bytes is None:
        l2_bytes = l2_cache_bytes()
    histogram_bytes = n_features * padded_bins(n_bins) * N_CHANNELS * 8
    return (n_features >= 2 * TILE_FEATURES
            and histogram_bytes > WIDE_L2_FRACTION * l2_bytes)


def wide_node_histogram(parallel=True):
    """:func:`node_histogram` for wide data (:func:`is_wide`): each pass sums the
    features in tiles (:func:`_sum_node_tiled`); ``parallel=False`` compiles no parallel
    region, as :func:`serial_node_histogram`. The same sums as :func:`node_histogram`.

    Measured on 160,000 samples x 200 features of random codes, 4-channel passes, AMD
    EPYC Zen 5, 2 threads (a noisy shared machine): see the commit that added it."""
    suffix = "wide" if parallel else "serialwide"
    tiled = _sum_node_tiled if parallel else specialize(_sum_node_tiled, "serial",
                                                        PARALLEL=False)
    return specialize(node_histogram, suffix,
                      _sum_node=specialize(_sum_node, suffix, WIDE=True, PARALLEL=parallel,
                                           _sum_node_tiled=tiled))
