"""The gradient grower's partition: a node's sample indices split stably by a split.

A node's samples are a contiguous range of one half of the workspace's index array, in
increasing order; a split moves those 4-byte indices, stably, in one pass into the same
range of the other half (:func:`partition`; 16 samples a step on CPUs with AVX-512,
:func:`_split_sixteen`), deciding each sample's side from the split feature's column of
the feature-major bin codes (a byte per sample, which stays in cache). Large nodes of fits
with several threads are split by the threads together, block by block, through a third
row of the index array (:func:`partition_in_blocks`); the result is the same.
"""

import numba as nb
import numpy as np
from llvmlite import binding as llvm_binding
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from silva.engine.array_copy import copy_vector
from silva.engine.jit import kernel


@kernel(inline="always")
def goes_left(code, missing_bin, split_bin, missing_left, categorical, bitset_row):
    if code == missing_bin:
        return missing_left
    if categorical:
        return (bitset_row[code >> 6] >> np.uint64(code & 63)) & np.uint64(1) != 0
    return code <= split_bin


@kernel(inline="always")
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


@kernel()
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
    # Unsigned positions: numba wraps a negative signed index around the array's end,
    # a compare and select on every store's address, which the next sample's store
    # waited on; without them the loop takes half the time on AMD Zen 3 (1.9 against 4.0
    # ns a sample at 800,000 rows), where it is every sample's path.
    one = np.uint64(1)
    to_left_u = np.uint64(to_left)
    to_right_u = np.uint64(to_right)
    for tail in range(i, last):
        s = index_from[tail]
        left = np.uint64(_left_flag(np.int64(column[s]), missing, split, missing_goes,
                                    categorical, bitset_row))
        # Branch-free (a data-dependent branch mispredicts on about half the samples):
        # write both places, advance one. Neither write reaches an unread index.
        index_to[to_left_u] = s
        index_from[to_right_u] = s
        to_left_u += left
        to_right_u += one - left
    to_left = np.int64(to_left_u)
    to_right = np.int64(to_right_u)
    # The right ones after the left ones.
    copy_vector(index_to[to_left:last], index_from[first:to_right])
    return to_left - first


@kernel()
def partition(column, work_index, half, start, end, missing_bin, split_bin, missing_left,
               categorical, bitset_row):
    """Stable partition of a node's sample indices, ``work_index[half, start:end]``, by
    their codes in ``column`` (the split feature's row of the feature-major bin codes):
    left samples first, each side in its original (increasing) order, into the same
    range of the other half, ``work_index[1 - half]``. Returns the number of left
    samples.

    One serial pass (:func:`_split_block`: 16 samples at a time with AVX-512, see
    :func:`_split_sixteen`; elsewhere a scalar loop, 1.9 ns a sample on AMD Zen 3).
    Large nodes of fits with several threads take :func:`partition_in_blocks`.
    """
    missing_goes = np.int64(1) if missing_left else np.int64(0)
    return _split_block(column, work_index[half], work_index[1 - half], start, end,
                        np.int64(missing_bin), np.int64(split_bin), missing_goes,
                        categorical, bitset_row)


# Nodes of at least this many samples are partitioned by the fit's threads together
# (partition_in_blocks). Measured on AMD EPYC Zen 4, 2 threads, random codes split half
# and half, best of 40, ns per sample (two blocks, then the serial pass): 0.39 against
# 0.57 at 800,000 samples, 0.52 against 0.59 at 100,000, 0.59 against 0.61 at 50,000,
# 0.65 against 0.62 at 32,768 and 0.81 against 0.65 at 20,000 (the copy and the parallel
# region's start eat the gain). With more threads the gain starts lower; the bound is
# the 2-thread one. An earlier parallel version (removed; its docstring read 0.79-1.23
# against 0.69 ns at 800,000 samples on this CPU) lost; this one runs the serial pass's
# own split, 16-lane steps included, in each block.
PARALLEL_PARTITION_MIN_ROWS = 65536


@kernel(parallel=True)
def partition_in_blocks(column, work_index, half, start, end, missing_bin, split_bin,
                        missing_left, categorical, bitset_row, n_blocks):
    """:func:`partition`'s result (the same indices in the same places: a stable
    partition has one result), made by ``n_blocks`` threads: each splits its own block of
    the node's range into the same range of ``work_index[2]`` (the staging row), left
    ones first (:func:`_split_block`), and then, once every block's count of left ones
    is known, copies its two runs to their places in ``work_index[1 - half]``: its left
    ones after the earlier blocks' left ones, its right ones after all the left ones and
    the earlier blocks' right ones. Returns the number of left samples.

    Why: the serial pass was about half of what a boosting fit ran on one thread while
    the others waited (``perf``, 2 threads, 800,000 x 28 rows), and it bounds the fit on
    many cores (Intel Xeon Emerald Rapids, 16 threads: about a fifth of the fit
    serial). The extra copy costs a block about 0.15 ns a sample.
    """
    index_from = work_index[half]
    index_to = work_index[1 - half]
    staging = work_index[2]
    missing_goes = np.int64(1) if missing_left else np.int64(0)
    n_rows = end - start
    block_lefts = np.empty(n_blocks, dtype=np.int64)
    for b in nb.prange(n_blocks):
        first = start + b * n_rows // n_blocks
        last = start + (b + 1) * n_rows // n_blocks
        block_lefts[b] = _split_block(column, index_from, staging, first, last,
                                      np.int64(missing_bin), np.int64(split_bin),
                                      missing_goes, categorical, bitset_row)
    n_left = np.int64(0)
    for b in range(n_blocks):
        n_left += block_lefts[b]
    for b in nb.prange(n_blocks):
        first = start + b * n_rows // n_blocks
        last = start + (b + 1) * n_rows // n_blocks
        # Earlier blocks' left ones come first; their right ones after all the left ones.
        lefts_before = np.int64(0)
        for c in range(b):
            lefts_before += block_lefts[c]
        rights_before = first - start - lefts_before
        n_block_left = block_lefts[b]
        left_to = start + lefts_before
        right_to = start + n_left + rights_before
        copy_vector(index_to[left_to:left_to + n_block_left],
                    staging[first:first + n_block_left])
        copy_vector(index_to[right_to:right_to + last - first - n_block_left],
                    staging[first + n_block_left:last])
    return n_left
