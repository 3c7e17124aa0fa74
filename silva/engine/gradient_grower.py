"""Gradient grower: one boosting tree on gradient statistics, in one compiled call.

Each sample carries four statistic channels (:func:`_fill_sample`, in the root's
histogram pass): a one that counts it, its weighted gradient, its weighted hessian and
its weight. Splits maximise the second-order gain of
:mod:`silva.engine.gradient_splitting` and every node's value is its (clipped) Newton
weight ``-T(G)/(H + lambda)`` (Chen & Guestrin 2016); with the hessian channel set to
the sample weight, the same tree is Friedman's (2001) least-squares fit of the negative
gradient.

Which limits are weighted: ``min_samples_leaf`` counts samples (channel 0), as
LightGBM's ``min_data_in_leaf`` and scikit-learn do, so that rescaling every
``sample_weight`` by one constant leaves it alone; ``min_child_weight`` bounds the
weighted hessian sum (channel 2), as LightGBM's ``min_sum_hessian_in_leaf``. The weight
channel (3) only gives each node's reported weight (``WEIGHT``). Without sample weights
channel 0 and channel 3 hold the same sums, and channel 0 what it held when it was the
weight, so such fits grow the trees they grew then.

Growth:

- ``leafwise`` (best-first, LightGBM's default): a heap of open leaves keyed by their best
  split's gain; the best leaf is split until ``max_leaf_nodes`` leaves exist or no split
  has positive gain;
- ``depthwise`` (XGBoost's default): a FIFO queue, so that a whole level is split before
  the next, with the same limits.

Data layout (:func:`make_workspace`, built once per fit): each sample is one record of
64 bytes (for up to 32 one-byte bin codes) holding its codes and its statistic channels
(count, gradient, hessian, weight), in sample order; records never move. A
node's samples are a contiguous range of a sample-index array, in increasing order; a
split moves those 4-byte indices, stably, in one pass (:func:`_partition`; 16 samples
a step on CPUs with AVX-512, :func:`_split_sixteen`), deciding each sample's side from
the split feature's column of the feature-major bin codes (a byte per sample, which
stays in cache). A histogram pass reads each sample's record,
one cache line, prefetched a few samples ahead (:func:`_prefetch`), and adds its four
channels to each feature's bin with one 4-wide vector operation
(:func:`_make_add_sample`), or only the gradient and the hessian, 2-wide, when every
hessian channel equals the count (unit weights, unit hessians; see
:func:`node_histogram`). Moving whole rows of codes
instead, so that a pass reads them in memory order, cost more in the partition than it
saved in the histograms: a split then copied 32 bytes per sample after a counting pass
over them, against 4 bytes now. The smaller child's histogram is built, the larger
child's is the parent's minus it (the subtraction trick), and no histogram is built for
a child that may not split (depth or leaf limit reached, too small).

Parallelism: a histogram pass over a node of at least ``2 * BLOCK_ROWS`` samples runs
over row blocks whose number depends only on the node's size; each block sums its own
samples, and the block sums are then added in block order, so results do not depend on
the number of threads; a node below ``2 * BLOCK_ROWS`` samples is one serial pass whose
sums are those of :func:`silva.engine.histogram.build_histogram` (same samples, same
order). The partition is one serial pass at every size (see :func:`_partition`). With
``serial=True`` (trees grown at once in several threads, one per class of a multiclass
iteration) no parallel region starts: the same histogram blocks run one after the other
and are added in the same order, so the tree is the same.

Per-node feature choice: ``feature_mask`` (the tree's ``colsample_bytree`` draw), the
interaction constraints (a node may use the features of any constraint set that holds
every feature used on its path, as in XGBoost and LightGBM), and then
``features_per_node`` of those drawn at random (``colsample_bynode``) from an explicit
SplitMix64 stream (:mod:`silva.engine.random`), on the calling thread.

Monotonic constraints follow LightGBM's "basic" method: a node carries bounds on its
value; a split on a constrained feature must order its children's values, and its
children's bounds meet at the midpoint of the two values.

Compared with :mod:`silva.engine.grower` (the CART grower), this module keeps the same
design (node table, histogram pool with slots, pending children, stable partition) but
differs where boosting needs it: fixed gradient channels and the row layout above, split
thresholds from the binner's global bin edges (as LightGBM and XGBoost) instead of the
node's midpoints, leaf weights from the Newton step with L1/L2/``max_delta_step``,
monotonic and interaction constraints, and a FIFO depthwise order.
"""

import heapq

import numba as nb
import numpy as np
from llvmlite import binding as llvm_binding
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from silva.engine.binning import ALL_VALUE_BINS
from silva.engine.gradient_splitting import (
    L1,
    L2,
    MAX_DELTA_STEP,
    MIN_CHILD_WEIGHT,
    MIN_SAMPLES_LEAF,
    find_best_split,
    leaf_output,
)
from silva.engine.random import randint

# Columns of the node table (float64, one row per node).
LEFT = 0
RIGHT = 1
FEATURE = 2
THRESHOLD = 3
MISSING_LEFT = 4
IS_CATEGORICAL = 5
GAIN = 6
WEIGHT = 7
SUM_GRADIENT = 8
SUM_HESSIAN = 9
VALUE = 10
START = 11
END = 12
DEPTH = 13
LOWER = 14
UPPER = 15
HIST_SLOT = 16
SPLIT_BIN = 17
SPLIT_GAIN = 18
SPLIT_FEATURE = 19
SPLIT_MISSING_LEFT = 20
LEFT_WEIGHT = 21
LEFT_GRADIENT = 22
LEFT_HESSIAN = 23
DATA_HALF = 24
N_COLUMNS = 25

LEAF = -1
UNDEFINED = -2

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
# At most this much memory for a fit's pool of node histograms (see pool_slots_for).
POOL_BYTES = 64 * 2**20
# How many rows ahead a histogram pass prefetches a sample's statistics.
PREFETCH_ROWS = 16


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

    Returns ``(codes, stats, index, histograms, columns)``: ``codes`` (n_samples,
    record_bytes / itemsize) and ``stats`` (n_samples, record_bytes / 8) float64, two
    views of the records (a sample's channels are the last four ``stats`` columns);
    ``index`` (2, n_samples) int32, the two halves between which the partition moves a
    tree's sample indices; ``histograms`` (pool_slots + MAX_BLOCKS, n_features,
    ``padded_bins(n_bins)``, 4): the ``pool_slots`` slots of a tree's node histograms,
    a scratch one and the ``MAX_BLOCKS - 1`` block sums of parallel passes; ``columns``,
    ``bin_codes`` itself.
    """
    n_features, n_samples = bin_codes.shape
    code_words = -(-(n_features * bin_codes.itemsize) // 8)
    stats_word = -(-code_words // N_CHANNELS) * N_CHANNELS
    records = _aligned_zeros((n_samples, stats_word + N_CHANNELS), np.uint64)
    codes = records.view(bin_codes.dtype)
    codes[:, :n_features] = bin_codes.T
    index = _aligned_zeros((2, n_samples), np.int32)
    histograms = _aligned_zeros(
        (pool_slots + MAX_BLOCKS, n_features, padded_bins(n_bins), N_CHANNELS), np.float64)
    return codes, records.view(np.float64), index, histograms, bin_codes


@nb.njit(cache=True, inline="always")
def _fill_sample(s, statistics, stats):
    """The channels ``(1, w_s g_s, w_s h_s, w_s)`` of sample ``s`` into its record (the
    last four columns of the workspace's ``stats``), from ``statistics`` (see
    :func:`grow_gradient_tree`)."""
    gradient, hessian, column, weight, use_hessian = statistics
    w = weight[s]
    first = stats.shape[1] - N_CHANNELS
    stats[s, first] = 1.0
    stats[s, first + 1] = w * gradient[s, column]
    stats[s, first + 2] = w * hessian[s, column] if use_hessian else w
    stats[s, first + 3] = w


def clone_workspace(workspace):
    """A workspace of its own for a tree grown at the same time in another thread: the
    records copied (their codes never change), fresh index halves and histograms, the
    same read-only ``columns``."""
    codes, stats, index, histograms, columns = workspace
    records = _aligned_zeros(stats.shape, np.float64)
    records[:] = stats
    return (records.view(codes.dtype), records, _aligned_zeros(index.shape, index.dtype),
            _aligned_zeros(histograms.shape, histograms.dtype), columns)


def _make_add_sample(lanes):
    """An intrinsic ``add(hist, codes, sample, stats, source, n_features)``:
    ``hist[f, codes[sample, f]] += stats.flat[source:source + lanes]`` for every feature
    ``f < n_features``, one sample's channels added to its bin of each feature with one
    ``lanes``-wide vector operation each (C-contiguous ``hist`` (n_features, n_bins,
    lanes) float64, ``codes`` (n_samples, width) and ``stats`` float64; lane by lane the
    same additions as scalar ones, in feature order; numba leaves LLVM's SLP vectoriser
    off, so adjacent scalar updates would stay separate loads, adds and stores).

    The channels are loaded into a register once per sample. A loop of per-feature
    vector adds written in numba loaded them again for every feature: LLVM cannot tell
    that the histogram stores leave ``stats`` alone, and each reload could wait on a
    store whose address matched it in the low 12 bits (4K aliasing)."""

    @intrinsic
    def add_sample(typingctx, hist, codes, sample, stats, source, n_features):
        signature = types.void(hist, codes, sample, stats, source, n_features)

        def codegen(context, builder, sig, args):
            hist_value, codes_value, sample_value, stats_value, source_value, count = args
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
            with cgutils.for_range(builder, count) as loop:
                f = loop.index
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


@nb.njit(cache=True, inline="always")
def _n_blocks(n_rows):
    """Row blocks of a parallel pass over ``n_rows`` rows: a function of the row count
    only, never of the number of threads, so that results do not depend on it."""
    return min(MAX_BLOCKS, max(1, n_rows // BLOCK_ROWS))


@nb.njit(cache=True)
def _histogram_rows(hist, codes, index, stats, start, end, n_features, statistics, fill):
    """``hist`` (zeroed first) += the channels of the samples ``index[start:end]``, bin by
    bin, in that order: all four channels, or with a 2-channel ``hist`` the gradient and
    the hessian only. ``fill``: first write each sample's channels into its record
    (:func:`_fill_sample`)."""
    hist[:, :, :] = 0.0
    width = stats.shape[1]
    first = width - N_CHANNELS
    two_lanes = hist.shape[2] == 2
    for i in range(start, end):
        # A deep node's samples are scattered over the records: ask for the record of a
        # sample further on (one cache line for up to 32 features) while this one is
        # added.
        ahead = np.int64(index[min(i + PREFETCH_ROWS, end - 1)]) * width
        _prefetch(stats, ahead)
        _prefetch(stats, ahead + first)
        s = np.int64(index[i])
        if fill:
            _fill_sample(s, statistics, stats)
        if two_lanes:
            _add_sample_two_lanes(hist, codes, s, stats, s * width + first + 1,
                                  np.int64(n_features))
        else:
            _add_sample(hist, codes, s, stats, s * width + first, np.int64(n_features))


@nb.njit(cache=True, inline="always")
def _histogram_block(k, hist, parts, codes, index, stats, start, end, n_features,
                     n_blocks, statistics, fill):
    n_rows = end - start
    target = hist if k == 0 else parts[k - 1]
    _histogram_rows(target, codes, index, stats, start + k * n_rows // n_blocks,
                    start + (k + 1) * n_rows // n_blocks, n_features, statistics, fill)


@nb.njit(cache=True, inline="always")
def _subtract(target, source):
    """``target -= source`` for two C-contiguous arrays of one shape, as one flat loop:
    numba's in-place array operator took 8 times longer on a (28, 261, 4) histogram
    (57 against 7 microseconds)."""
    target_flat = target.reshape(-1)
    source_flat = source.reshape(-1)
    for i in range(target_flat.shape[0]):
        target_flat[i] -= source_flat[i]


@nb.njit(cache=True, inline="always")
def _add_blocks(f, hist, parts, n_blocks):
    # Blocks in order: the same sums whatever thread computed which block. One flat
    # loop per block: three nested loops over bins and channels took 3.5 times longer.
    target = hist[f].reshape(-1)
    for k in range(n_blocks - 1):
        source = parts[k, f].reshape(-1)
        for i in range(target.shape[0]):
            target[i] += source[i]


@nb.njit(cache=True, parallel=True)
def _histogram_blocks(hist, parts, codes, index, stats, start, end, n_features, n_blocks,
                      statistics, fill):
    for k in nb.prange(n_blocks):
        _histogram_block(k, hist, parts, codes, index, stats, start, end, n_features,
                         n_blocks, statistics, fill)
    for f in nb.prange(n_features):
        _add_blocks(f, hist, parts, n_blocks)


@nb.njit(cache=True)
def _sum_node(hist, parts, codes, index, stats, start, end, n_features, serial, statistics,
              fill):
    n_blocks = _n_blocks(end - start)
    if n_blocks == 1:
        _histogram_rows(hist, codes, index, stats, start, end, n_features, statistics, fill)
    elif serial:
        for k in range(n_blocks):
            _histogram_block(k, hist, parts, codes, index, stats, start, end, n_features,
                             n_blocks, statistics, fill)
        for f in range(n_features):
            _add_blocks(f, hist, parts, n_blocks)
    else:
        _histogram_blocks(hist, parts, codes, index, stats, start, end, n_features,
                          n_blocks, statistics, fill)


@nb.njit(cache=True, inline="always")
def _two_lane_view(hist):
    """The first half of a 4-channel histogram's memory as a 2-channel histogram of the
    same leading shape."""
    return hist.reshape(-1)[:hist.size // 2].reshape(hist.shape[:-1] + (2,))


@nb.njit(cache=True)
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


@nb.njit(cache=True)
def node_histogram(hist, parent, parts, codes, index, stats, start, end, n_features,
                   subtract, serial, two_lanes, statistics, fill):
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
    and then added block after block (with ``serial``, the same blocks one after the
    other, so the same sums).

    ``two_lanes``: every sample's hessian channel equals its count and weight channels
    (unit sample weights, and a unit hessian, as for squared error, or Friedman's
    least-squares fit), so the pass adds only the gradient and the hessian, with 2-wide
    vector operations into half as much memory (measured: a quarter less time per
    addition), and then copies the hessian sums into the count and weight channels: the
    same sums, bit for bit. With other weights the count differs from the hessian sum,
    and the pass must add all four channels.

    ``fill``: the pass first writes each sample's channels into its record, from
    ``statistics`` (see :func:`grow_gradient_tree`), as it reads the record anyway: the
    grower fills every record of a tree in its root's pass. As a pass of its own, the
    fill took 2.7 ms per 800,000 samples (a read and a write-back of every record's
    cache line); in the root's pass, about 1.2 ms more than the pass alone.
    """
    if two_lanes:
        _sum_node(_two_lane_view(hist), _two_lane_view(parts), codes, index, stats, start,
                  end, n_features, serial, statistics, fill)
        _widen(hist)
    else:
        _sum_node(hist, parts, codes, index, stats, start, end, n_features, serial,
                  statistics, fill)
    if subtract:
        _subtract(parent, hist)


@nb.njit(cache=True, inline="always")
def _goes_left(code, missing_bin, split_bin, missing_left, categorical, bitset_row):
    if code == missing_bin:
        return missing_left
    if categorical:
        return (bitset_row[code >> 6] >> np.uint64(code & 63)) & np.uint64(1) != 0
    return code <= split_bin


@nb.njit(cache=True, inline="always")
def _left_flag(code, missing_bin, split_bin, missing_goes, categorical, bitset_row):
    """1 when a sample of bin ``code`` goes left, else 0; branch-free for numeric splits
    (a data-dependent branch mispredicts on about half the samples)."""
    if categorical:
        if code == missing_bin:
            return missing_goes
        return np.int64((bitset_row[code >> 6] >> np.uint64(code & 63)) & np.uint64(1))
    left = np.int64(code <= split_bin)
    return missing_goes if code == missing_bin else left


# Whether the CPU compresses a 16-lane vector in one instruction (AVX-512's vpcompressd),
# which _split_sixteen relies on; elsewhere LLVM would expand it lane by lane.
SIXTEEN_LANE_SPLIT = "+avx512f" in llvm_binding.get_host_cpu_features().flatten()


@intrinsic
def _split_sixteen(typingctx, column, index_from, i, split, missing, missing_goes, index_to,
                   to_left, to_right):
    """Split the 16 sample indices ``index_from[i:i + 16]`` on a numeric split: a sample
    goes left when its code in ``column`` is at most ``split``, or, for the
    ``missing`` bin, when ``missing_goes`` is 1. The left ones are stored, in order, from
    ``index_to[to_left]`` on and the right ones from ``index_from[to_right]`` on, each
    as one 16-lane store whose lanes past the run hold garbage (the caller overwrites
    them): ``to_left`` and ``to_right`` must be at most ``i``. Returns how many go
    left. The compress is LLVM's ``vector.compress`` into a register, then a plain
    store: on AMD Zen 4 a compressing store straight to memory took longer than the
    scalar loop (3.3 against 2.1 ns per sample), the register form 0.6."""
    signature = types.int64(column, index_from, i, split, missing, missing_goes, index_to,
                            to_left, to_right)

    def codegen(context, builder, sig, args):
        (column_value, from_value, i_value, split_value, missing_value, goes_value, to_value,
         left_value, right_value) = args
        column_array = context.make_array(sig.args[0])(context, builder, column_value)
        from_array = context.make_array(sig.args[1])(context, builder, from_value)
        to_array = context.make_array(sig.args[6])(context, builder, to_value)
        int32 = ir.IntType(32)
        int64 = ir.IntType(64)
        lanes = ir.VectorType(int32, 16)
        flags = ir.VectorType(ir.IntType(1), 16)

        def splat(scalar):
            one = builder.insert_element(ir.Constant(lanes, None), scalar, int32(0))
            return builder.shuffle_vector(one, ir.Constant(lanes, None),
                                          ir.Constant(lanes, [0] * 16))

        samples = builder.load(builder.bitcast(builder.gep(from_array.data, [i_value]),
                                               lanes.as_pointer()), align=4)
        codes = ir.Constant(lanes, None)
        for k in range(16):
            sample = builder.zext(builder.extract_element(samples, int32(k)), int64)
            code = builder.load(builder.gep(column_array.data, [sample]))
            codes = builder.insert_element(codes, builder.zext(code, int32), int32(k))
        at_most = builder.icmp_unsigned("<=", codes, splat(builder.trunc(split_value, int32)))
        is_missing = builder.icmp_unsigned("==", codes,
                                           splat(builder.trunc(missing_value, int32)))
        missing_left = builder.icmp_unsigned("!=", splat(builder.trunc(goes_value, int32)),
                                             ir.Constant(lanes, [0] * 16))
        left = builder.select(is_missing, missing_left, at_most)
        compress = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(lanes, [lanes, flags, lanes]),
            "llvm.experimental.vector.compress.v16i32")
        undefined = ir.Constant(lanes, None)
        lefts = builder.call(compress, [samples, left, undefined])
        rights = builder.call(compress, [samples, builder.not_(left), undefined])
        builder.store(lefts, builder.bitcast(builder.gep(to_array.data, [left_value]),
                                             lanes.as_pointer()), align=4)
        builder.store(rights, builder.bitcast(builder.gep(from_array.data, [right_value]),
                                              lanes.as_pointer()), align=4)
        count = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(16), [ir.IntType(16)]),
            "llvm.ctpop.i16")
        n_left = builder.call(count, [builder.bitcast(left, ir.IntType(16))])
        return builder.zext(n_left, int64)

    return signature, codegen


@nb.njit(cache=True)
def _split_block(column, index_from, index_to, first, last, missing, split, missing_goes,
                 categorical, bitset_row):
    """Partition the sample indices ``index_from[first:last]`` into the same range of
    ``index_to``, stably: the left ones first, then the right ones, each in their
    order. ``index_from[first:last]`` is overwritten (the right ones are gathered there
    on the way). Returns how many go left."""
    to_left = first
    to_right = first
    i = first
    if SIXTEEN_LANE_SPLIT and not categorical:
        while i + 16 <= last:
            n_left = _split_sixteen(column, index_from, i, split, missing, missing_goes,
                                    index_to, to_left, to_right)
            to_left += n_left
            to_right += 16 - n_left
            i += 16
    for tail in range(i, last):
        s = index_from[tail]
        left = _left_flag(np.int64(column[s]), missing, split, missing_goes, categorical,
                          bitset_row)
        # Branch-free (a data-dependent branch mispredicts on about half the samples):
        # write both places, advance one. Neither write reaches an unread index.
        index_to[to_left] = s
        index_from[to_right] = s
        to_left += left
        to_right += 1 - left
    # The right ones after the left ones.
    index_to[to_left:last] = index_from[first:to_right]
    return to_left - first


@nb.njit(cache=True)
def _partition(column, work_index, half, start, end, missing_bin, split_bin, missing_left,
               categorical, bitset_row):
    """Stable partition of a node's sample indices, ``work_index[half, start:end]``, by
    their codes in ``column`` (the split feature's row of the feature-major bin codes):
    left samples first, each side in its original (increasing) order, into the same
    range of the other half, ``work_index[1 - half]``. Returns the number of left
    samples.

    One serial pass (:func:`_split_block`: 16 samples at a time with AVX-512, see
    :func:`_split_sixteen`), whatever the node's size. A parallel version split row
    blocks in their own ranges and then copied each block's two runs to their final
    places; on the 2-core machine it took longer than the serial pass at every size
    (800,000 rows: 0.79-1.23 against 0.69 ns per sample; 30,000: 1.2-1.7 against 0.77):
    the extra copy cost more than the second core gave back on this load-bound pass.
    """
    missing_goes = np.int64(1) if missing_left else np.int64(0)
    return _split_block(column, work_index[half], work_index[1 - half], start, end,
                        np.int64(missing_bin), np.int64(split_bin), missing_goes,
                        categorical, bitset_row)


@nb.njit(cache=True)
def _grow_rows(table, bitsets, paths, n_rows):
    capacity = table.shape[0]
    if n_rows <= capacity:
        return table, bitsets, paths
    new_capacity = max(2 * capacity, n_rows)
    new_table = np.zeros((new_capacity, table.shape[1]))
    new_table[:capacity] = table
    new_bitsets = np.zeros((new_capacity, bitsets.shape[1]), dtype=np.uint64)
    new_bitsets[:capacity] = bitsets
    new_paths = np.zeros((new_capacity, paths.shape[1]), dtype=np.uint8)
    new_paths[:capacity] = paths
    return new_table, new_bitsets, new_paths


@nb.njit(cache=True)
def _histograms(n_slots, n_features, n_bins):
    """Empty histograms (n_slots, n_features, n_bins, 4) on a 64-byte boundary, so that no
    32-byte (feature, bin) entry straddles two cache lines (an unaligned pool made the
    vector updates of histogram passes a quarter slower)."""
    size = n_slots * n_features * n_bins * N_CHANNELS
    buffer = np.empty(size + 8)
    offset = ((-buffer.ctypes.data) % 64) // 8
    return buffer[offset:offset + size].reshape((n_slots, n_features, n_bins, N_CHANNELS))


@nb.njit(cache=True)
def _take_slot(pool, free_slots):
    if len(free_slots) > 0:
        return pool, free_slots.pop()
    n_slots = pool.shape[0]
    new_pool = _histograms(2 * n_slots, pool.shape[1], pool.shape[2])
    new_pool[:n_slots] = pool
    for slot in range(2 * n_slots - 1, n_slots, -1):
        free_slots.append(slot)
    return new_pool, n_slots


@nb.njit(cache=True)
def _node_candidates(path_row, feature_mask, interaction_sets, features_per_node, rng_state,
                     candidates):
    """Features a node may split on, increasing; returns how many."""
    n_features = feature_mask.shape[0]
    n_sets = interaction_sets.shape[0]
    n = 0
    for f in range(n_features):
        if feature_mask[f] == 0:
            continue
        allowed = n_sets == 0
        for s in range(n_sets):
            if allowed:
                break
            if interaction_sets[s, f] == 0:
                continue
            # Set s may extend this path only if it holds every feature used on it.
            contains_path = True
            for u in range(n_features):
                if path_row[u] != 0 and interaction_sets[s, u] == 0:
                    contains_path = False
                    break
            allowed = contains_path
        if allowed:
            candidates[n] = f
            n += 1
    if features_per_node < n:
        # Partial Fisher-Yates shuffle, then back to increasing order for tie-breaking.
        for i in range(features_per_node):
            j = i + randint(rng_state, n - i)
            tmp = candidates[i]
            candidates[i] = candidates[j]
            candidates[j] = tmp
        candidates[:features_per_node] = np.sort(candidates[:features_per_node])
        n = features_per_node
    return n


@nb.njit(cache=True, inline="always")
def _leaf_samples_of(node, table, work_index, sample_indices):
    if table[node, LEFT] == LEAF:
        half = np.int64(table[node, DATA_HALF])
        start = np.int64(table[node, START])
        end = np.int64(table[node, END])
        # A slice copy (a memcpy): the element loop it replaces took 13 times longer
        # (1.1 ms against 0.09 for 800,000 samples in 31 leaves).
        sample_indices[start:end] = work_index[half, start:end]


@nb.njit(cache=True, parallel=True)
def _leaf_samples_parallel(table, work_index, sample_indices):
    for node in nb.prange(table.shape[0]):
        _leaf_samples_of(node, table, work_index, sample_indices)


@nb.njit(cache=True)
def _leaf_samples(table, work_index, sample_indices, serial):
    """Every leaf's samples, from whichever half of the workspace holds them, into
    ``sample_indices[START:END]`` (leaves in parallel unless ``serial``)."""
    if serial:
        for node in range(table.shape[0]):
            _leaf_samples_of(node, table, work_index, sample_indices)
    else:
        _leaf_samples_parallel(table, work_index, sample_indices)


@nb.njit(cache=True)
def _left_weight(hist_f, n_bins_f, missing_bin, split_bin, missing_left, categorical,
                 bitset_row):
    """Total weight (channel ``WEIGHT_CHANNEL`` of one feature's histogram ``hist_f``) of
    the samples a split sends left: the bins :func:`_goes_left` sends left, the missing
    bin included when ``missing_left``."""
    total = hist_f[missing_bin, WEIGHT_CHANNEL] if missing_left else 0.0
    for b in range(n_bins_f):
        if _goes_left(b, missing_bin, split_bin, missing_left, categorical, bitset_row):
            total += hist_f[b, WEIGHT_CHANNEL]
    return total


@nb.njit(cache=True, nogil=True)
def grow_gradient_tree(workspace, sample_indices, n_value_bins, is_categorical,
                       missing_bin, bin_thresholds, feature_mask, monotonic, interaction_sets,
                       params, max_depth, max_leaf_nodes, depthwise, features_per_node, seed,
                       n_words, serial, two_lanes, statistics):
    """Grow one tree on the samples ``sample_indices`` (increasing; reordered in place).

    Parameters: ``workspace`` (:func:`make_workspace`); the binner's ``n_value_bins``,
    ``missing_bin`` and ``bin_thresholds``; ``feature_mask`` (uint8), ``monotonic``
    (int8: -1, 0, +1), ``interaction_sets`` (n_sets, n_features) uint8 (no sets: no
    constraint); ``params`` (see :mod:`silva.engine.gradient_splitting`);
    ``max_leaf_nodes <= 0`` means unlimited;
    ``serial``: start no parallel region (the same row blocks run one after the other,
    so the tree is the same), for trees grown at once in several threads: the call
    releases the GIL. ``two_lanes``: every sample's weight is 1 and its hessian channel
    is its weight (see :func:`node_histogram`). ``statistics``: the tuple ``(gradient,
    hessian, column, weight, use_hessian)``; a sample's channels are ``(1, w_s g_s,
    w_s h_s, w_s)`` from column ``column`` of the (n_samples, n_outputs) gradients and
    hessians, with ``use_hessian`` False the third is ``w_s`` (Friedman's least-squares
    fit of the negative gradient); the root's histogram pass writes them into the
    samples' records (see :func:`node_histogram`).

    ``min_samples_leaf`` (in ``params``) bounds each child's number of samples and
    ``min_child_weight`` its weighted hessian sum; a node is only split when it holds
    twice each.

    Returns ``(table, bitsets)``: the node table (columns above; a leaf's samples are
    ``sample_indices[START:END]``; ``WEIGHT`` is a node's total sample weight) and the
    left category bitsets.
    """
    codes, stats, work_index, histograms, columns = workspace
    n_features = n_value_bins.shape[0]
    n_bins = missing_bin + 1
    n_total = sample_indices.shape[0]
    constrained = params[MAX_DELTA_STEP] > 0.0
    for f in range(n_features):
        if monotonic[f] != 0:
            constrained = True
    l1 = params[L1]
    l2 = params[L2]
    max_delta_step = params[MAX_DELTA_STEP]
    min_samples_leaf = params[MIN_SAMPLES_LEAF]
    min_child_weight = params[MIN_CHILD_WEIGHT]
    rng_state = np.empty(1, dtype=np.uint64)
    rng_state[0] = seed
    unlimited_leaves = max_leaf_nodes <= 0

    capacity = 64
    table = np.zeros((capacity, N_COLUMNS))
    bitsets = np.zeros((capacity, n_words), dtype=np.uint64)
    paths = np.zeros((capacity, n_features), dtype=np.uint8)
    # Reused from tree to tree: no allocation (and page faults) per tree, unless a tree
    # keeps more histograms at once than the workspace's pool holds.
    n_pool = histograms.shape[0] - MAX_BLOCKS
    pool = histograms[:n_pool]
    free_slots = list(range(n_pool - 1, -1, -1))
    scratch_hist = histograms[n_pool]
    parts = histograms[n_pool + 1:]
    candidates = np.empty(n_features, dtype=np.int64)
    feature_score = np.empty(n_features)
    feature_bin = np.empty(n_features, dtype=np.int64)
    feature_missing_left = np.empty(n_features, dtype=np.uint8)
    feature_left = np.empty((n_features, 3))
    feature_bitset = np.zeros((n_features, n_words), dtype=np.uint64)
    scan_scratch = np.empty((4, n_bins))

    # numba types a list by its first element: start each with one, then empty it.
    heap = [(0.0, 0)]
    heap.pop()
    queue = [0]
    queue.pop()
    queue_head = 0

    # Pending nodes: the root, then the two children of each split. Their sums: count,
    # weighted gradient, weighted hessian, weight (the histogram channels).
    pending_sums = np.zeros((2, N_CHANNELS))
    pending_start = np.zeros(2, dtype=np.int64)
    pending_end = np.zeros(2, dtype=np.int64)
    pending_slot = np.full(2, -1, dtype=np.int64)
    pending_lower = np.full(2, -np.inf)
    pending_upper = np.full(2, np.inf)
    pending_splittable = np.zeros(2, dtype=np.bool_)
    # Which half of the workspace holds the node's samples (a split moves them over).
    pending_half = np.zeros(2, dtype=np.int64)
    pending_parent = -1
    pending_depth = 0
    n_pending = 1
    pending_start[0] = 0
    pending_end[0] = n_total

    # The root's samples start in half 0.
    work_index[0, :n_total] = sample_indices
    pending_half[0] = 0
    pool, slot = _take_slot(pool, free_slots)
    # Flags and the start as np.bool_/np.int64, not literals: numba compiles a callee
    # (and everything it calls) apart for each literal argument it is given.
    node_histogram(pool[slot], scratch_hist, parts, codes, work_index[0], stats,
                   np.int64(0), n_total, n_features, np.bool_(False), serial, two_lanes,
                   statistics, np.bool_(True))
    pending_slot[0] = slot
    # Every sample falls in one bin of feature 0 (the missing bin included).
    for b in range(n_bins):
        for c in range(N_CHANNELS):
            pending_sums[0, c] += pool[slot][0, b, c]
    pending_splittable[0] = True
    n_nodes = 0
    n_leaves = 1

    while True:
        for p in range(n_pending):
            node = n_nodes
            n_nodes += 1
            table, bitsets, paths = _grow_rows(table, bitsets, paths, n_nodes)
            row = table[node]
            if pending_parent >= 0:
                table[pending_parent, LEFT if p == 0 else RIGHT] = node
                paths[node] = paths[pending_parent]
                paths[node, np.int64(table[pending_parent, FEATURE])] = 1
            sums = pending_sums[p]
            lower = pending_lower[p]
            upper = pending_upper[p]
            row[LEFT] = LEAF
            row[RIGHT] = LEAF
            row[FEATURE] = UNDEFINED
            row[THRESHOLD] = UNDEFINED
            row[MISSING_LEFT] = 0.0
            row[IS_CATEGORICAL] = 0.0
            row[GAIN] = 0.0
            row[WEIGHT] = sums[WEIGHT_CHANNEL]
            row[SUM_GRADIENT] = sums[1]
            row[SUM_HESSIAN] = sums[2]
            row[VALUE] = leaf_output(sums[1], sums[2], l1, l2, max_delta_step, lower, upper)
            row[START] = pending_start[p]
            row[END] = pending_end[p]
            row[DEPTH] = pending_depth
            row[LOWER] = lower
            row[UPPER] = upper
            row[HIST_SLOT] = pending_slot[p]
            row[DATA_HALF] = pending_half[p]
            row[SPLIT_GAIN] = -np.inf
            slot = pending_slot[p]
            if pending_splittable[p] and slot >= 0:
                n_candidates = _node_candidates(paths[node], feature_mask, interaction_sets,
                                                features_per_node, rng_state, candidates)
                gain, feature, split_bin, missing_left = find_best_split(
                    pool[slot], candidates, n_candidates, n_value_bins, is_categorical,
                    monotonic, missing_bin, sums, params, lower, upper, constrained,
                    # Serial: a node's scan takes tens of microseconds, less than
                    # starting a parallel region (measured: 31 us serial, 4 ms parallel
                    # on a loaded 2-core machine, 200k x 28).
                    False, feature_score, feature_bin,
                    feature_missing_left, feature_left, feature_bitset, scan_scratch)
                if feature >= 0 and gain > 0.0:
                    row[SPLIT_GAIN] = gain
                    row[SPLIT_FEATURE] = feature
                    row[SPLIT_BIN] = split_bin
                    row[SPLIT_MISSING_LEFT] = missing_left
                    # The scan tracks the left count; the left weight is only
                    # reported, so it is summed for the winner alone.
                    row[LEFT_WEIGHT] = _left_weight(
                        pool[slot][feature], n_value_bins[feature], missing_bin, split_bin,
                        missing_left, is_categorical[feature] != 0, feature_bitset[feature])
                    row[LEFT_GRADIENT] = feature_left[feature, 1]
                    row[LEFT_HESSIAN] = feature_left[feature, 2]
                    if is_categorical[feature]:
                        bitsets[node] = feature_bitset[feature]
                    if depthwise:
                        queue.append(node)
                    else:
                        heapq.heappush(heap, (-gain, node))
            if row[SPLIT_GAIN] == -np.inf and slot >= 0:
                free_slots.append(slot)
                row[HIST_SLOT] = -1

        # --- The next node to split. ---
        if not unlimited_leaves and n_leaves >= max_leaf_nodes:
            break
        if depthwise:
            if queue_head >= len(queue):
                break
            node = queue[queue_head]
            queue_head += 1
        else:
            if len(heap) == 0:
                break
            node = heapq.heappop(heap)[1]
        n_leaves += 1
        row = table[node]
        feature = np.int64(row[SPLIT_FEATURE])
        split_bin = np.int64(row[SPLIT_BIN])
        missing_left = row[SPLIT_MISSING_LEFT] != 0.0
        categorical = is_categorical[feature] != 0
        start = np.int64(row[START])
        end = np.int64(row[END])
        depth = np.int64(row[DEPTH])
        row[FEATURE] = feature
        row[MISSING_LEFT] = missing_left
        row[IS_CATEGORICAL] = categorical
        row[GAIN] = row[SPLIT_GAIN]
        if categorical:
            row[THRESHOLD] = UNDEFINED
        elif split_bin == ALL_VALUE_BINS:
            row[THRESHOLD] = np.inf  # missing values versus the rest
        else:
            row[THRESHOLD] = bin_thresholds[feature, split_bin]

        half = np.int64(row[DATA_HALF])
        n_left = _partition(columns[feature], work_index, half, start, end, missing_bin,
                            split_bin, missing_left, categorical, bitsets[node])
        children_half = 1 - half
        mid = start + n_left
        pending_half[0] = children_half
        pending_half[1] = children_half
        # Counts are exact in floating point: the partition's are the histograms'.
        pending_sums[0, COUNT_CHANNEL] = n_left
        pending_sums[0, 1] = row[LEFT_GRADIENT]
        pending_sums[0, 2] = row[LEFT_HESSIAN]
        pending_sums[0, WEIGHT_CHANNEL] = row[LEFT_WEIGHT]
        pending_sums[1, COUNT_CHANNEL] = end - mid
        pending_sums[1, 1] = row[SUM_GRADIENT] - row[LEFT_GRADIENT]
        pending_sums[1, 2] = row[SUM_HESSIAN] - row[LEFT_HESSIAN]
        pending_sums[1, WEIGHT_CHANNEL] = row[WEIGHT] - row[LEFT_WEIGHT]
        pending_start[0] = start
        pending_end[0] = mid
        pending_start[1] = mid
        pending_end[1] = end

        # Children's bounds: LightGBM's basic monotone method.
        lower = row[LOWER]
        upper = row[UPPER]
        pending_lower[:] = lower
        pending_upper[:] = upper
        if monotonic[feature] != 0:
            wl = leaf_output(pending_sums[0, 1], pending_sums[0, 2], l1, l2, max_delta_step,
                             lower, upper)
            wr = leaf_output(pending_sums[1, 1], pending_sums[1, 2], l1, l2, max_delta_step,
                             lower, upper)
            middle = 0.5 * (wl + wr)
            if monotonic[feature] > 0:
                pending_upper[0] = min(upper, middle)
                pending_lower[1] = max(lower, middle)
            else:
                pending_lower[0] = max(lower, middle)
                pending_upper[1] = min(upper, middle)

        # Which children may split at all; only those need histograms: the smaller
        # child's is built, the larger's is the parent's minus it.
        room = unlimited_leaves or n_leaves < max_leaf_nodes
        for c in range(2):
            pending_splittable[c] = (
                room and depth + 1 < max_depth
                and pending_sums[c, COUNT_CHANNEL] >= 2.0 * min_samples_leaf
                and pending_sums[c, 2] >= 2.0 * min_child_weight
                and pending_end[c] - pending_start[c] >= 2
            )
        parent_slot = np.int64(row[HIST_SLOT])
        row[HIST_SLOT] = -1
        pending_slot[0] = -1
        pending_slot[1] = -1
        smaller = 0 if n_left <= end - mid else 1
        larger = 1 - smaller
        if pending_splittable[larger]:
            if pending_splittable[smaller]:
                pool, slot = _take_slot(pool, free_slots)
                target = pool[slot]
                pending_slot[smaller] = slot
            else:
                target = scratch_hist
            node_histogram(target, pool[parent_slot], parts, codes,
                           work_index[children_half], stats, pending_start[smaller],
                           pending_end[smaller], n_features, np.bool_(True), serial,
                           two_lanes, statistics, np.bool_(False))
            pending_slot[larger] = parent_slot
        elif pending_splittable[smaller]:
            # The parent's histogram is no longer needed: its slot takes the child's.
            node_histogram(pool[parent_slot], scratch_hist, parts, codes,
                           work_index[children_half], stats, pending_start[smaller],
                           pending_end[smaller], n_features, np.bool_(False), serial,
                           two_lanes, statistics, np.bool_(False))
            pending_slot[smaller] = parent_slot
        else:
            free_slots.append(parent_slot)
        n_pending = 2
        pending_parent = node
        pending_depth = depth + 1

    table = table[:n_nodes].copy()
    _leaf_samples(table, work_index, sample_indices, serial)
    return table, bitsets[:n_nodes].copy()


# How many samples ahead add_leaf_values prefetches a sample's raw prediction.
UPDATE_PREFETCH_ROWS = 64


@nb.njit(cache=True, parallel=True)
def add_leaf_values(raw, column, sample_indices, table, leaf_values):
    """``raw[s, column] += leaf_values[node]`` for the samples of every leaf of ``table``;
    ``raw`` column-major, as boosting keeps it (the prefetch addresses assume a
    contiguous column; on another layout they would only miss, the sums stay right).

    A leaf's samples are increasing but spread over all of ``raw``, a cache line each,
    which the CPU cannot guess: the pass asks for the line of the sample
    ``UPDATE_PREFETCH_ROWS`` further on (800,000 samples in 31 leaves, caches cold: 2.2
    against 3.2 ms; 16 and 32 ahead gained less, 128 and 256 no more)."""
    target = raw[:, column]
    for node in nb.prange(table.shape[0]):
        if table[node, LEFT] != LEAF:
            continue
        value = leaf_values[node]
        start = np.int64(table[node, START])
        end = np.int64(table[node, END])
        for i in range(start, end):
            _prefetch(target, np.int64(sample_indices[min(i + UPDATE_PREFETCH_ROWS, end - 1)]))
            target[sample_indices[i]] += value


@nb.njit(cache=True, parallel=True)
def add_leaf_values_binned(raw, column, rows, codes, table, bitsets, missing_bin,
                           leaf_values):
    """``raw[s, column] += leaf_values[leaf of s]`` for ``s`` in ``rows``, walking the tree on
    the row-major bin ``codes`` (samples the tree was not grown on: out-of-bag ones)."""
    for k in nb.prange(rows.shape[0]):
        s = rows[k]
        node = 0
        while table[node, LEFT] != LEAF:
            feature = np.int64(table[node, FEATURE])
            if _goes_left(np.int64(codes[s, feature]), missing_bin,
                          np.int64(table[node, SPLIT_BIN]), table[node, MISSING_LEFT] != 0,
                          table[node, IS_CATEGORICAL] != 0, bitsets[node]):
                node = np.int64(table[node, LEFT])
            else:
                node = np.int64(table[node, RIGHT])
        raw[s, column] += leaf_values[node]


@nb.njit(cache=True, parallel=True)
def leaf_sums(gradient, hessian, column, weight, sample_indices, table, out):
    """``out[node] = (sum w g, sum w h)`` over each leaf's samples (Newton line search)."""
    for node in nb.prange(table.shape[0]):
        out[node, 0] = 0.0
        out[node, 1] = 0.0
        if table[node, LEFT] != LEAF:
            continue
        for i in range(np.int64(table[node, START]), np.int64(table[node, END])):
            s = sample_indices[i]
            out[node, 0] += weight[s] * gradient[s, column]
            out[node, 1] += weight[s] * hessian[s, column]
