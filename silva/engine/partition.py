"""The gradient grower's partition: a node's sample indices split stably by a split.

A node's samples are a contiguous range of one half of the workspace's index array, in
increasing order; a split moves those 4-byte indices, stably, in one pass into the same
range of the other half (:func:`partition`; 16 samples a step on CPUs with AVX-512,
:func:`_split_sixteen`), deciding each sample's side from the split feature's column of
the feature-major bin codes (a byte per sample, which stays in cache).
"""

import numba as nb
import numpy as np
from llvmlite import binding as llvm_binding
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from silva.engine.array_copy import copy_vector


@nb.njit(cache=True, error_model="numpy", inline="always")
def goes_left(code, missing_bin, split_bin, missing_left, categorical, bitset_row):
    if code == missing_bin:
        return missing_left
    if categorical:
        return (bitset_row[code >> 6] >> np.uint64(code & 63)) & np.uint64(1) != 0
    return code <= split_bin


@nb.njit(cache=True, error_model="numpy", inline="always")
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


@nb.njit(cache=True, error_model="numpy")
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


@nb.njit(cache=True, error_model="numpy")
def partition(column, work_index, half, start, end, missing_bin, split_bin, missing_left,
               categorical, bitset_row):
    """Stable partition of a node's sample indices, ``work_index[half, start:end]``, by
    their codes in ``column`` (the split feature's row of the feature-major bin codes):
    left samples first, each side in its original (increasing) order, into the same
    range of the other half, ``work_index[1 - half]``. Returns the number of left
    samples.

    One serial pass (:func:`_split_block`: 16 samples at a time with AVX-512, see
    :func:`_split_sixteen`; elsewhere a scalar loop, 1.9 ns a sample on AMD Zen 3),
    whatever the node's size. A parallel version split row blocks in their own ranges
    and then copied each block's two runs to their final places; on the 2-core machine
    (Zen 4) it took longer than the serial pass at every size (800,000 rows: 0.79-1.23
    against 0.69 ns per sample; 30,000: 1.2-1.7 against 0.77):
    the extra copy cost more than the second core gave back on this load-bound pass.
    """
    missing_goes = np.int64(1) if missing_left else np.int64(0)
    return _split_block(column, work_index[half], work_index[1 - half], start, end,
                        np.int64(missing_bin), np.int64(split_bin), missing_goes,
                        categorical, bitset_row)
