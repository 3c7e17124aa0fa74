"""Binning: raw feature values to small integer bin codes, once per fit.

Every later stage works on bin codes, never on raw values: histograms are indexed by them
and splits are chosen between them. A fitted :class:`Binner` holds, per feature,

- ``n_value_bins_[f]``: how many bins hold non-missing values;
- ``bin_thresholds_[f, b]``: the real value separating bin ``b`` from bin ``b + 1``; a raw
  value ``x`` lies in the first bin whose threshold is ``>= x``;
- ``bin_lower_[f, b]`` and ``bin_upper_[f, b]``: the smallest and largest training value in
  the bin. A split's real threshold is the midpoint between the largest value going left
  and the smallest going right *in the node* (CART's rule), so a fitted tree predicts
  from raw X without the binner; extra trees draw their random thresholds in this range.

Numeric features with at most ``max_bins`` distinct values are binned *exactly*: one bin
per distinct value, so splits fall exactly where CART (Breiman et al. 1984) and
scikit-learn put theirs. Features with more distinct values
get at most ``max_bins`` quantile bins. Categorical features must hold category codes,
integers ``>= 0``; the code is the bin (``max_bins`` does not limit categories). Missing
values (NaN) of every feature share one extra bin, ``missing_bin_``, the largest code in use.
"""

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from silva.engine.array_copy import copy_vector
from silva.engine.jit import kernel
from silva.engine.sparse import column_values, is_sparse

MAX_BINS_LIMIT = 65535
# A bin index above every value bin: a split whose last left bin is this sends every
# non-missing value left ("missing values versus the rest"), a threshold of +inf.
ALL_VALUE_BINS = 1 << 30


@kernel()
def midpoint(low, high):
    """A threshold between two values that sends ``low`` left and ``high`` right."""
    # Halving before adding cannot overflow; if rounding lands on ``high`` (adjacent
    # floats), the threshold falls back to ``low`` so that ``low`` still goes left.
    mid = low / 2.0 + high / 2.0
    if mid >= high or np.isinf(mid):
        mid = low
    return mid


# Sort keys: uint64 whose unsigned order is the order of the floats (see _column_keys).
_SIGN = np.uint64(1) << np.uint64(63)
_ZERO_KEY = _SIGN  # the key of 0.0, and of -0.0
_NEGATIVE_ZERO_KEY = ~_SIGN  # what the key of -0.0 would be without that exception
_NAN_KEY = np.uint64(0xFFFFFFFFFFFFFFFF)
_INF_BITS = np.uint64(0x7FF0000000000000)
_HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing
_SORT_ROWS = 1 << 16  # shorter columns are sorted whole (most of their keys are wanted)
# Buckets of keys (see _plan_buckets): a first digit, each of its buckets split on up to
# _SPLIT_BITS more bits, aiming at _BUCKET_KEYS keys a bucket.
_TOP_BITS = 11
_SPLIT_BITS = 14
_BUCKET_KEYS = 32
_TOP_SAMPLE = 1 << 16  # keys sampled to estimate the first digit's bucket sizes
_SORTED_RANGE = 32  # buckets at most this long are sorted by insertion
_COPIED, _WANTED = 1, 2  # flags of a bucket
_MISS_BUCKETS = 64  # nonempty buckets copied when the walk asks for one not copied
_MAX_MISSES = 8  # after which the column is sorted whole
# The memory (128 MiB) that the threads' copied columns may take together, unless a
# column per thread takes more.
_GROUP_BYTES = 1 << 27
_BLOCK_ROWS = 256  # rows copied column by column (see _fit_numeric_bins)


@kernel()
def _column_keys(keys):
    """Turn the float64 bits in ``keys`` into sort keys, in place.

    A key's unsigned order is the order of the floats: the sign bit set for positive
    numbers, every bit flipped for negative ones, NaN the largest key, and -0.0 given the
    key of 0.0. The two compare equal, so they are one distinct value, whose bins keep
    the bits of -0.0 when -0.0 occurs (``negative_zero``), as when a full sort put -0.0
    first and each run of equal values kept its first. Returns ``(n_present, smallest
    key, largest key of a present value, negative_zero)``. Branch-free, so that it
    vectorises.
    """
    n_missing = 0
    low = _NAN_KEY
    high = np.uint64(0)
    negative_zero = np.uint64(0)
    for i in range(keys.shape[0]):
        b = keys[i]
        missing = (b & ~_SIGN) > _INF_BITS
        k = b ^ (((b >> np.uint64(63)) * _NAN_KEY) | _SIGN)
        is_negative_zero = k == _NEGATIVE_ZERO_KEY
        negative_zero |= np.uint64(is_negative_zero)
        k = _ZERO_KEY if is_negative_zero else k
        k = _NAN_KEY if missing else k
        n_missing += missing
        low = min(low, k)
        high = max(high, np.uint64(0) if missing else k)
        keys[i] = k
    return keys.shape[0] - n_missing, low, high, negative_zero != 0


@kernel()
def _key_value(key, negative_zero, cell):
    """The float of a present value's ``key``; ``cell``: a 1-element uint64 scratch."""
    if key == _ZERO_KEY and negative_zero:
        return -0.0
    cell[0] = key ^ _SIGN if key & _SIGN else ~key
    return cell.view(np.float64)[0]


@kernel()
def _distinct_keys(keys, limit, table, distinct):
    """How many distinct present values ``keys`` holds, their keys written to
    ``distinct`` (unsorted), or ``limit + 1`` as soon as there are more than ``limit``.

    An open-addressing hash set in ``table`` (a power-of-two length above ``2 * limit``;
    key 0 marks an empty slot: no present value has it). It gives up within the first
    ``limit + 1`` distinct values of a column with many, and spares a column with few
    any sorting.
    """
    table[:] = 0
    size = table.shape[0]
    bits = 0
    while (1 << bits) < size:
        bits += 1
    shift = np.uint64(64 - bits)
    slot_mask = size - 1
    n_distinct = 0
    previous = np.uint64(0)
    for i in range(keys.shape[0]):
        k = keys[i]
        if k == previous or k == _NAN_KEY:
            continue
        previous = k
        h = np.int64((k * _HASH_MULTIPLIER) >> shift)
        while True:
            t = table[h]
            if t == k:
                break
            if t == 0:
                if n_distinct == limit:
                    return limit + 1
                table[h] = k
                distinct[n_distinct] = k
                n_distinct += 1
                break
            h = (h + 1) & slot_mask
    return n_distinct


@kernel()
def _sort_keys(keys, buffer, counts):
    """Sort ``keys`` into ``buffer[:keys.shape[0]]``, using ``keys`` as work space.

    Least-significant-digit radix sort, 8 passes of 8 bits, each skipped when every key
    has the same digit there (integers, few exponents); ``counts``: (8, 256) work space.
    """
    n = keys.shape[0]
    counts[:] = 0
    for i in range(n):
        k = keys[i]
        for d in range(8):
            counts[d, (k >> np.uint64(8 * d)) & np.uint64(255)] += 1
    in_buffer = False
    for d in range(8):
        if counts[d].max() == n:
            continue
        source = buffer if in_buffer else keys
        target = keys if in_buffer else buffer
        shift = np.uint64(8 * d)
        total = 0
        for b in range(256):
            c = counts[d, b]
            counts[d, b] = total
            total += c
        for i in range(n):
            k = source[i]
            digit = (k >> shift) & np.uint64(255)
            target[counts[d, digit]] = k
            counts[d, digit] += 1
        in_buffer = not in_buffer
    if not in_buffer:
        copy_vector(buffer, keys)


@kernel()
def _plan_buckets(keys, width, route):
    """Split the keys' range into buckets, each the keys of one prefix, in key order;
    return how many there are.

    Keys share all but their low ``width`` bits. The first digit is the top _TOP_BITS of
    those; each of its buckets is split on as many of the next bits (at most
    _SPLIT_BITS) as bring it to about _BUCKET_KEYS keys, its size estimated from a
    sample (a float's top bits are mostly its exponent: the first digit alone leaves
    most keys in a few buckets). A key's bucket is ``route[1, c] + ((key >> route[2, c])
    & route[3, c])``, ``c`` its first digit (see _bucket).
    """
    n = keys.shape[0]
    top_shift = max(width - _TOP_BITS, 0)
    n_top = 1 << (width - top_shift)
    top_mask = np.uint64(n_top - 1)
    counts = route[0]
    counts[:n_top] = 0
    step = n // _TOP_SAMPLE + 1
    for i in range(0, n, step):
        counts[(keys[i] >> np.uint64(top_shift)) & top_mask] += step
    n_buckets = 0
    for c in range(n_top):
        bits = 0
        while (counts[c] >> bits) > _BUCKET_KEYS and bits < min(_SPLIT_BITS, top_shift):
            bits += 1
        route[1, c] = n_buckets
        route[2, c] = top_shift - bits
        route[3, c] = (1 << bits) - 1
        n_buckets += 1 << bits
    return n_buckets


@kernel()
def _bucket(key, top_shift, top_mask, route):
    """The bucket of ``key`` (see _plan_buckets)."""
    c = (key >> top_shift) & top_mask
    return route[1, c] + ((key >> np.uint64(route[2, c])) & np.uint64(route[3, c]))


@kernel()
def _count_buckets(keys, width, route, n_buckets, starts):
    """``starts[j]``: the rank of the first key of bucket ``j`` (``starts[n_buckets]``:
    how many keys)."""
    top_shift = np.uint64(max(width - _TOP_BITS, 0))
    top_mask = np.uint64((1 << (width - max(width - _TOP_BITS, 0))) - 1)
    starts[:n_buckets + 1] = 0
    for i in range(keys.shape[0]):
        starts[1 + _bucket(keys[i], top_shift, top_mask, route)] += 1
    for j in range(n_buckets):
        starts[j + 1] += starts[j]


@kernel()
def _want_edge_buckets(n_present, max_bins, n_buckets, starts, flags):
    """Flag ``_WANTED`` the buckets the quantile walk will most likely ask for: those of
    rank 0, of the last present rank and of each target's rank ceil(target) - 1, and
    after each, the nonempty buckets that the next distinct values may lie in: two, and
    one more per target that the bucket's keys span."""
    flags[:n_buckets] = 0
    j = 0
    last = -1
    for b in range(-1, max_bins):
        if b < 0:
            rank = 0
        elif b + 1 < max_bins:
            rank = np.int64(np.ceil((b + 1) * n_present / max_bins)) - 1
        else:
            rank = n_present - 1
        while starts[j + 1] <= rank:
            j += 1
        if j == last:
            continue
        last = j
        flags[j] = _WANTED
        extra = 2 + (starts[j + 1] - starts[j]) * max_bins // n_present
        m = j + 1
        while extra > 0 and m < n_buckets:
            if starts[m + 1] > starts[m]:
                flags[m] = _WANTED
                extra -= 1
            m += 1


@kernel()
def _copy_buckets(keys, width, route, n_buckets, starts, flags, fill, first, n_first,
                  buffer):
    """Copy the keys of the ``_WANTED`` buckets to ``buffer``, sorted, at their ranks
    (where a sort of the column would put them); they become ``_COPIED``.

    The copies of a bucket's first key met, ``first[j]``, are only counted
    (``n_first[j]``), then written into the gap left for them among the other keys,
    sorted: a heavy value is most of its bucket, often all of it, and copying it all
    then sorting it took most of the time on columns with heavy values.
    """
    top_shift = np.uint64(max(width - _TOP_BITS, 0))
    top_mask = np.uint64((1 << (width - max(width - _TOP_BITS, 0))) - 1)
    for j in range(n_buckets):
        if flags[j] & _WANTED:
            fill[j] = starts[j]
            n_first[j] = 0
    for i in range(keys.shape[0]):
        k = keys[i]
        j = _bucket(k, top_shift, top_mask, route)
        if flags[j] & _WANTED:
            if n_first[j] == 0:
                first[j] = k
                n_first[j] = 1
            elif k == first[j]:
                n_first[j] += 1
            else:
                buffer[fill[j]] = k
                fill[j] += 1
    for j in range(n_buckets):
        if not flags[j] & _WANTED:
            continue
        flags[j] = _COPIED
        lo = starts[j]
        n_others = starts[j + 1] - lo - n_first[j]
        if n_others == 0:
            continue  # copies of one value: _rank_key reads first[j]
        if n_others <= _SORTED_RANGE:
            for i in range(lo + 1, lo + n_others):
                k = buffer[i]
                m = i - 1
                while m >= lo and buffer[m] > k:
                    buffer[m + 1] = buffer[m]
                    m -= 1
                buffer[m + 1] = k
        else:
            buffer[lo:lo + n_others].sort()
        below = lo + np.searchsorted(buffer[lo:lo + n_others], first[j])
        for i in range(lo + n_others - 1, below - 1, -1):
            buffer[i + n_first[j]] = buffer[i]
        buffer[below:below + n_first[j]] = first[j]


@kernel()
def _rank_key(starts, flags, first, n_first, buffer, cursor, rank):
    """The key of rank ``rank`` (0-based, in sorted order) and the rank one past its last
    copy, from the buckets copied to ``buffer``. Returns ``(key, end, found)``; not found
    when its bucket, then ``cursor[0]``, was not copied.

    Ranks asked must not decrease (``cursor[0]``: the bucket of the last one). Kept
    small, so that it is inlined: the walk calls it about ``2 * max_bins`` times.
    """
    bucket = cursor[0]
    while starts[bucket + 1] <= rank:
        bucket += 1
    cursor[0] = bucket
    if not flags[bucket] & _COPIED:
        return np.uint64(0), 0, False
    hi = starts[bucket + 1]
    if n_first[bucket] == hi - starts[bucket]:
        return first[bucket], hi, True
    k = buffer[rank]
    end = rank + 1
    while end < hi and buffer[end] == k:
        end += 1
    return k, end, True


@kernel()
def _quantile_walk(starts, flags, first, n_first, buffer, cursor, n_present, f, max_bins,
                   thresholds, lower, upper, n_value_bins, negative_zero, cell):
    """Quantile bins: close a bin at the distinct value where the running count first
    reaches the next quantile target, so heavy values are never split across bins.

    That value has rank ceil(target) - 1, unless the copies of the value that closed the
    previous bin reach past the target: then it is the next distinct value, of rank
    ``end``. A bin never closes at the largest value, and at most max_bins - 1 do.
    Returns False, unfinished, at the first rank whose bucket was not copied.
    """
    cursor[0] = 0
    # np.int64(0), not 0: numba compiles a callee apart for each literal argument.
    key, end, found = _rank_key(starts, flags, first, n_first, buffer, cursor, np.int64(0))
    if not found:
        return False
    lower[f, 0] = _key_value(key, negative_zero, cell)
    b = 0
    end = 0
    while b + 1 < max_bins:
        target = (b + 1) * n_present / max_bins
        rank = max(np.int64(np.ceil(target)) - 1, end)
        key, key_end, found = _rank_key(starts, flags, first, n_first, buffer, cursor, rank)
        if not found:
            return False
        if key_end >= n_present:
            break
        following, _, found = _rank_key(starts, flags, first, n_first, buffer, cursor,
                                        key_end)
        if not found:
            return False
        value = _key_value(key, negative_zero, cell)
        next_value = _key_value(following, negative_zero, cell)
        upper[f, b] = value
        thresholds[f, b] = midpoint(value, next_value)
        b += 1
        lower[f, b] = next_value
        end = key_end
    key, _, found = _rank_key(starts, flags, first, n_first, buffer, cursor, n_present - 1)
    if not found:
        return False
    upper[f, b] = _key_value(key, negative_zero, cell)
    n_value_bins[f] = b + 1
    return True


@kernel()
def _feature_bins(keys, f, max_bins, thresholds, lower, upper, n_value_bins, buffer,
                  table, route, starts, flags, fill, first, n_first, cursor, radix_counts,
                  cell):
    """Fill the bin edges of numeric feature ``f`` from ``keys``, the float64 bits of its
    column; ``keys`` (overwritten) and the arrays after ``n_value_bins`` are work space.

    Bins need the distinct values (when at most ``max_bins``) or about ``2 * max_bins``
    ranks of the sorted column, not the sorted column. Of a long column, two histogram
    passes find the buckets of those ranks and a third copies only those buckets (a
    few percent of the keys) to be sorted: several times faster than sorting it all.
    """
    n_present, low, high, negative_zero = _column_keys(keys)
    if n_present == 0:
        n_value_bins[f] = 1
        lower[f, 0] = 0.0
        upper[f, 0] = 0.0
        return
    n_distinct = _distinct_keys(keys, max_bins, table, buffer)
    if n_distinct <= max_bins:
        distinct = np.sort(buffer[:n_distinct])
        n_value_bins[f] = n_distinct
        value = _key_value(distinct[0], negative_zero, cell)
        for b in range(n_distinct):
            lower[f, b] = value
            upper[f, b] = value
            if b + 1 < n_distinct:
                following = _key_value(distinct[b + 1], negative_zero, cell)
                thresholds[f, b] = midpoint(value, following)
                value = following
        return
    n = keys.shape[0]
    if n >= _SORT_ROWS:
        if n_present < n:
            high = _NAN_KEY  # missing values sort last, in the same buckets
        width = 0
        spread = low ^ high
        while spread:
            spread >>= np.uint64(1)
            width += 1
        n_buckets = _plan_buckets(keys, width, route)
        _count_buckets(keys, width, route, n_buckets, starts)
        _want_edge_buckets(n_present, max_bins, n_buckets, starts, flags)
        _copy_buckets(keys, width, route, n_buckets, starts, flags, fill, first, n_first,
                      buffer)
        for _ in range(_MAX_MISSES):
            if _quantile_walk(starts, flags, first, n_first, buffer, cursor, n_present, f,
                              max_bins, thresholds, lower, upper, n_value_bins,
                              negative_zero, cell):
                return
            # The walk asked for a bucket not copied (a long run of distinct values
            # after a heavy one): copy it and the next nonempty ones, walk again.
            j = cursor[0]
            n_wanted = 0
            while j < n_buckets and n_wanted < _MISS_BUCKETS:
                if starts[j + 1] > starts[j] and not flags[j] & _COPIED:
                    flags[j] = _WANTED
                    n_wanted += 1
                j += 1
            _copy_buckets(keys, width, route, n_buckets, starts, flags, fill, first,
                          n_first, buffer)
    # A short column, or too many misses: sort it whole, one bucket.
    _sort_keys(keys, buffer, radix_counts)
    starts[0] = 0
    starts[1] = n
    flags[0] = _COPIED
    n_first[0] = 0
    _quantile_walk(starts, flags, first, n_first, buffer, cursor, n_present, f, max_bins,
                   thresholds, lower, upper, n_value_bins, negative_zero, cell)


@kernel(parallel=True)
def _fit_numeric_bins(X, numeric_features, max_bins, thresholds, lower, upper,
                      n_value_bins, keys, buffers):
    """Fill the bin edges of every numeric feature ``numeric_features`` of ``X``.

    Parallel over threads, thread ``t`` taking a contiguous share of the features in
    groups of at most ``keys.shape[0] // n_threads``: it copies a group's columns to its
    rows of ``keys`` together, row by row (each cache line of ``X`` then serves every
    feature of the group: reading a single column of a wide C-ordered X is bound by
    memory traffic), then bins them one by one with ``buffers[t]`` and one set of small
    work arrays. One parallel region, no barrier: on a busy machine, each one cost a
    wait for the threads to be scheduled.
    """
    n_samples = X.shape[0]
    n_features = numeric_features.shape[0]
    n_threads = buffers.shape[0]
    per_thread = keys.shape[0] // n_threads
    table_size = 1
    while table_size <= 2 * min(max_bins, n_samples):
        table_size *= 2
    # _plan_buckets: 2 ** _TOP_BITS first-digit buckets, each split in at most
    # 2 * s / _BUCKET_KEYS, s its estimated size; the estimates add up to at most
    # n_samples + step (its sampling step).
    step = n_samples // _TOP_SAMPLE + 1
    max_buckets = (1 << _TOP_BITS) + 2 * (n_samples + step) // _BUCKET_KEYS + 1
    as_float = keys.view(np.float64)
    for t in nb.prange(n_threads):
        table = np.empty(table_size, dtype=np.uint64)
        route = np.empty((4, 1 << _TOP_BITS), dtype=np.int64)
        starts = np.empty(max_buckets + 1, dtype=np.int64)
        fill = np.empty(max_buckets, dtype=np.int64)
        flags = np.empty(max_buckets, dtype=np.uint8)
        first = np.empty(max_buckets, dtype=np.uint64)
        n_first = np.empty(max_buckets, dtype=np.int64)
        cursor = np.empty(2, dtype=np.int64)
        radix_counts = np.empty((8, 256), dtype=np.int64)
        cell = np.empty(1, dtype=np.uint64)
        share_start = t * n_features // n_threads
        share_stop = (t + 1) * n_features // n_threads
        n_groups = (share_stop - share_start + per_thread - 1) // per_thread
        for group in range(n_groups):
            group_start = share_start + group * (share_stop - share_start) // n_groups
            group_stop = share_start + (group + 1) * (share_stop - share_start) // n_groups
            size = group_stop - group_start
            rows = as_float[t * per_thread:t * per_thread + size]
            if size >= 8:
                # Row by row: the loop over the group's features vectorises...
                for i in range(n_samples):
                    for g in range(size):
                        rows[g, i] = X[i, numeric_features[group_start + g]]
            else:
                # ...but with fewer than 8 features it does not, and is twice as slow as
                # column by column over blocks of rows that stay in cache.
                for start in range(0, n_samples, _BLOCK_ROWS):
                    stop = min(start + _BLOCK_ROWS, n_samples)
                    for g in range(size):
                        f = numeric_features[group_start + g]
                        for i in range(start, stop):
                            rows[g, i] = X[i, f]
            for g in range(size):
                _feature_bins(keys[t * per_thread + g], numeric_features[group_start + g],
                              max_bins, thresholds, lower, upper, n_value_bins,
                              buffers[t], table, route, starts, flags, fill, first,
                              n_first, cursor, radix_counts, cell)


# Rows that one step of _map_to_bins' searches advances at once (_search_step).
SEARCH_LANES = 8


@intrinsic
def _search_step(typingctx, thresholds, position, values, start, step):
    """One halving step of :func:`_map_to_bins`' searches for the ``SEARCH_LANES`` rows
    from ``start``: ``position[i] += step`` where ``thresholds[position[i] + step - 1] <
    values[i]`` (float64 ``thresholds`` and ``values``, int64 ``position``), with one
    vector comparison and no branch.

    The thresholds are read by an explicit gather (``llvm.masked.gather``, every lane
    on): a hardware gather where the CPU has one, separate loads where it has none.
    Written as a loop, the step was vectorised with gathers for AMD's cores, but for
    every Intel core LLVM knows (rocketlake, skylake-avx512, sapphirerapids,
    graniterapids: its cost model prefers no gathers there) it became a comparison and
    a branch per row, mispredicted about every other step: the codes of 16,000 x 28
    values took 17.5 ms on one thread against 1.6 ms (Intel Xeon, family 6 model 167,
    which LLVM takes for a rocketlake), the same codes.
    """
    # The code below reads contiguous float64 thresholds and values, int64 positions.
    if not all(isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C"
               and a.dtype == dtype for a, dtype in ((thresholds, types.float64),
                                                     (position, types.int64),
                                                     (values, types.float64))):
        return None
    signature = types.void(thresholds, position, values, start, step)

    def codegen(context, builder, sig, args):
        thresholds_value, position_value, values_value, start_value, step_value = args
        thresholds_array = context.make_array(sig.args[0])(context, builder,
                                                           thresholds_value)
        position_array = context.make_array(sig.args[1])(context, builder, position_value)
        values_array = context.make_array(sig.args[2])(context, builder, values_value)
        int32 = ir.IntType(32)
        int64 = ir.IntType(64)
        indices = ir.VectorType(int64, SEARCH_LANES)
        doubles = ir.VectorType(ir.DoubleType(), SEARCH_LANES)

        def splat(value):
            vector = builder.insert_element(ir.Constant(indices, ir.Undefined), value,
                                            int32(0))
            return builder.shuffle_vector(
                vector, vector, ir.Constant(ir.VectorType(int32, SEARCH_LANES),
                                            [0] * SEARCH_LANES))

        position_pointer = builder.bitcast(builder.gep(position_array.data, [start_value]),
                                           indices.as_pointer())
        position = builder.load(position_pointer, align=8)
        row_values = builder.load(builder.bitcast(
            builder.gep(values_array.data, [start_value]), doubles.as_pointer()), align=8)
        advanced = builder.add(position, splat(step_value))
        # The addresses of thresholds[advanced - 1], as integers (a GEP takes no vector
        # of indices here).
        base = builder.ptrtoint(thresholds_array.data, int64)
        addresses = builder.add(splat(builder.sub(base, int64(8))),
                                builder.mul(advanced, ir.Constant(indices,
                                                                  [8] * SEARCH_LANES)))
        pointers = builder.inttoptr(addresses,
                                    ir.VectorType(thresholds_array.data.type, SEARCH_LANES))
        pointer_kind = "p0" if str(thresholds_array.data.type) == "ptr" else "p0f64"
        gather = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(doubles, [pointers.type, int32,
                                      ir.VectorType(ir.IntType(1), SEARCH_LANES), doubles]),
            f"llvm.masked.gather.v{SEARCH_LANES}f64.v{SEARCH_LANES}{pointer_kind}")
        below = builder.call(gather, [
            pointers, int32(8), ir.Constant(ir.VectorType(ir.IntType(1), SEARCH_LANES),
                                            [1] * SEARCH_LANES),
            ir.Constant(doubles, ir.Undefined)])
        builder.store(builder.select(builder.fcmp_ordered("<", below, row_values),
                                     advanced, position), position_pointer, align=8)
        return context.get_dummy_value()

    return signature, codegen


@kernel(parallel=True)
def _map_to_bins(X, is_categorical, padded_thresholds, missing_bin, out):
    """Bin codes of X, feature-major: ``out[f, i]`` is the bin of ``X[i, f]``.

    ``padded_thresholds[f]`` holds the feature's thresholds followed by +inf up to a
    power-of-two length minus one, so that the bin (the number of thresholds below x) is
    found by a fixed number of halving steps without unpredictable branches. Parallel
    over blocks of rows; within a block, feature by feature (one feature's thresholds
    stay in L1 cache), and each halving step runs over the whole block,
    ``SEARCH_LANES`` rows at a time (:func:`_search_step`): the rows' searches are
    independent, so the core overlaps their loads instead of waiting on one search's
    chain of dependent loads (5 times faster than one search after the other).
    """
    n_samples, n_features = X.shape
    first_step = (padded_thresholds.shape[1] + 1) // 2
    block = 256
    n_blocks = (n_samples + block - 1) // block
    for k in nb.prange(n_blocks):
        first = k * block
        m = min(block, n_samples - first)
        # Whole groups of lanes: the rows past m search too (for 0.0, never read). A
        # position stays below the padded length whatever the value compared.
        m_lanes = (m + SEARCH_LANES - 1) // SEARCH_LANES * SEARCH_LANES
        values = np.zeros(block)
        position = np.empty(block, dtype=np.int64)
        for f in range(n_features):
            for i in range(m):
                values[i] = X[first + i, f]
            if is_categorical[f]:
                for i in range(m):
                    x = values[i]
                    out[f, first + i] = missing_bin if np.isnan(x) else np.int64(x)
                continue
            thresholds = padded_thresholds[f]
            for i in range(m_lanes):
                position[i] = 0
            step = first_step
            while step > 0:
                for i in range(0, m_lanes, SEARCH_LANES):
                    # NaN compares false: its search ends at 0, replaced below.
                    _search_step(thresholds, position, values, i, step)
                step >>= 1
            for i in range(m):
                out[f, first + i] = missing_bin if np.isnan(values[i]) else position[i]


# Up to this many values (rows x features), bin edges and codes come from numpy
# (_numeric_bins_numpy, _codes_numpy): the same edges and codes, no compile. The compiled
# kernels are faster on large data but cost a cold first fit about five seconds to
# compile. 2**18 values (9,362 rows of 28 features) covers the fits that boosting grows
# with parallel passes but without row blocks (1,024-8,191 rows), whose first fit would
# otherwise compile both; numpy took about 5 ms more on 5,000 x 28.
NUMPY_BINNING_MAX_VALUES = 1 << 18


def _numeric_columns(X, numeric):
    """The ``numeric`` columns of ``X`` as rows (a transposed view when they are all of
    X's columns; the fancy-indexed copy, one more temporary the size of X, otherwise)."""
    if numeric.size == X.shape[1]:
        return X.T
    return X[:, numeric].T


def _holds_negative_zero(columns):
    """One bool per row of ``columns``: whether it holds a -0.0."""
    return ((columns == 0.0) & np.signbit(columns)).any(axis=1)


# Order-preserving integer keys of float64 values (see _sorted_with_order): a value's bits
# with the sign bit set when it is positive, and its other 63 bits flipped when it is
# negative, so that unsigned comparison of keys is the comparison of the values (-0.0 just
# below 0.0).
_SIGN_BIT = np.uint64(1 << 63)
_NOT_SIGN_BITS = np.uint64((1 << 63) - 1)


def _sorted_with_order(columns):
    """``(sorted_columns, order)``: each row of ``columns`` (float64) sorted, NaN last,
    and each sorted value's position in its row (int64, ``sorted_columns[j] ==
    columns[j, order[j]]``): what ``np.sort`` and ``np.argsort`` give, up to the order of
    equal values. ``columns`` is left as it was.

    Through one sort of 64-bit integers in place of numpy's argsort, which took 5x a sort
    of the same columns on AMD Zen 5 and 4-8x on Zen 4 (a digits tree's largest cost
    after its grower). Each value's order-preserving key (:data:`_SIGN_BIT`) gives up its
    low bits to the value's position in the row, so that the sorted keys carry the
    order. Where no value has a bit set there (integers, float32 data), the sorted keys
    give back the sorted values exactly. Otherwise the values are read through the order,
    and values that differ only in those bits (a relative difference below about
    ``2**-34`` with 2**18 rows), which sort by position, are caught: such columns take
    numpy's argsort after all. No temporary the size of ``columns`` beyond the two
    results and, in the second case, the values read: on small data each is memory fresh
    from the system (page faults and all).
    """
    n_rows = columns.shape[1]
    values = np.array(columns, order="C")
    # NaNs last: one positive NaN for all (x86's own NaN has the sign bit set, and a
    # payload in the low bits would be lost to the position below).
    missing = np.isnan(values)
    if missing.any():
        values[missing] = np.nan
    keys = values.view(np.uint64)
    position_mask = np.uint64((1 << max(1, (n_rows - 1).bit_length())) - 1)
    order = np.empty(values.shape, dtype=np.int64)
    positions = order.view(np.uint64)
    np.bitwise_and(keys, position_mask, out=positions)
    exact = not positions.any()
    negative = np.signbit(values)
    keys ^= _SIGN_BIT
    np.bitwise_xor(keys, _NOT_SIGN_BITS, out=keys, where=negative)
    keys &= ~position_mask
    keys |= np.arange(n_rows, dtype=np.uint64)
    keys.sort(axis=1)
    np.bitwise_and(keys, position_mask, out=positions)
    if exact:
        # The key back to the value: the steps above undone (a negative value's flipped
        # position bits were ones).
        np.less(keys, _SIGN_BIT, out=negative)
        np.bitwise_xor(keys, _NOT_SIGN_BITS, out=keys, where=negative)
        keys ^= _SIGN_BIT
        keys &= ~position_mask
        return values, order
    sorted_columns = _read_through_order(columns, order)
    if (sorted_columns[:, 1:] < sorted_columns[:, :-1]).any():
        values = np.array(columns, order="C")
        order = np.argsort(values, axis=1)
        values.sort(axis=1)
        sorted_columns = values
    return sorted_columns, order


def _read_through_order(columns, order):
    """``np.take_along_axis(columns, order, axis=1)``: row ``j`` of ``columns`` read in
    the order of ``order[j]``. Where ``columns`` is the transpose of a C-contiguous
    array (the binner's columns are X's), one flat take: element ``(j, k)`` lies at
    ``k * n_columns + j`` of the array's memory. take_along_axis builds a broadcast
    index per axis, and took 7.5 us against 3.2 us on wine's 142 x 13 (Zen 5), the
    difference about 1.5% of a tree's fit there."""
    rows = columns.T
    if not rows.flags.c_contiguous:
        return np.take_along_axis(columns, order, axis=1)
    flat_index = order * columns.shape[0]
    flat_index += np.arange(columns.shape[0])[:, None]
    return rows.ravel().take(flat_index)


def _midpoints(low, high):
    """:func:`midpoint` of each pair, vectorised."""
    mid = low / 2.0 + high / 2.0
    return np.where((mid >= high) | np.isinf(mid), low, mid)


def _numeric_bins_numpy(sorted_columns, negative_zero, features, max_bins, thresholds, lower,
                        upper, n_value_bins):
    """Bin edges of the numeric ``features`` with numpy, written to those features' rows
    of the binner's arrays; returns each sorted value's bin code (``sorted_columns``'
    shape; missing values' entries are to be replaced by the missing bin).
    ``sorted_columns[j]`` holds feature ``features[j]``'s values in ascending order, NaN
    (missing) last.

    The same edges as the compiled :func:`_feature_bins` (the tests compare them bit for
    bit), by :func:`_edges_from_distinct`'s rule. -0.0 and 0.0 are one value, reported
    as -0.0 when the column holds a -0.0: where ``negative_zero`` (one bool per column,
    :func:`_holds_negative_zero` of the columns before sorting, since numpy's sort may
    turn a -0.0 into 0.0) is True. Every feature at once, in whole-array
    operations on flat arrays: on small data (a few hundred rows) numpy's per-call cost,
    paid per feature, was most of the binning's time, and two-dimensional fancy
    indexing cost about 10 ns an element.
    """
    n_features, n_rows = sorted_columns.shape
    missing = np.isnan(sorted_columns)
    n_present = n_rows - missing.sum(axis=1)
    # Only a column holding a -0.0 needs its zeros made one value; elsewhere they are all
    # 0.0 already (and a copy of every value is a page-faulting temporary on small data).
    values = sorted_columns
    if negative_zero.any():
        signed_zero = np.where(negative_zero, -0.0, 0.0)
        values = np.where(sorted_columns == 0.0, signed_zero[:, None], sorted_columns)
    is_first = ~missing
    np.logical_and(is_first[:, 1:], values[:, 1:] != values[:, :-1], out=is_first[:, 1:])
    # Each sorted value's distinct value, counted over the columns one after the other:
    # a running count of first copies along the flattened columns (numpy's cumulative
    # sum of booleans converts element by element: ten times slower than of bytes).
    # 32 bits suffice: the numpy path bins at most NUMPY_BINNING_MAX_VALUES values.
    flat_index = np.cumsum(is_first.ravel().view(np.int8), dtype=np.int32)
    flat_index -= 1
    n_distinct = is_first.sum(axis=1)
    column_first = np.cumsum(n_distinct) - n_distinct
    _edges_from_distinct(
        values[is_first], n_distinct, n_present,
        lambda rows, ranks: flat_index[rows[:, None] * n_rows + ranks] - column_first[rows, None],
        features, max_bins, thresholds, lower, upper, n_value_bins)
    # A value's code: its distinct value's index where each has a bin of its own,
    # else the number of thresholds below it, found in the sorted column (whose keys
    # arrive in order: a search of the unsorted column mispredicts a branch at each
    # step, 5x slower). A column of missing values alone has codes of its neighbour's,
    # replaced by the caller.
    codes = flat_index.reshape(n_features, n_rows)
    codes -= column_first[:, None].astype(np.int32)
    for j in np.flatnonzero(n_distinct > max_bins):
        codes[j] = np.searchsorted(thresholds[features[j]], sorted_columns[j], side="left")
    return codes


def _edges_from_distinct(distinct, n_distinct, n_present, distinct_index, features,
                         max_bins, thresholds, lower, upper, n_value_bins):
    """Bin edges of the numeric ``features``, written to their rows of the binner's
    arrays (as :meth:`Binner._allocate` leaves them), from each one's sorted distinct
    present values, the columns' one after the other in ``distinct``:
    ``n_distinct[j]`` values for feature ``features[j]``, which
    has ``n_present[j]`` present values. ``distinct_index(rows, ranks)`` maps ranks into
    the sorted present values of columns ``rows`` (one row of ``ranks`` per column) to
    the indices of the distinct values at those ranks. The one rule that dense columns
    (:func:`_numeric_bins_numpy`) and the sparse columns of :meth:`Binner.fit` (whose
    zeros are only counted) share.

    One bin per distinct value when there are at most ``max_bins``; otherwise the
    quantile walk of :func:`_quantile_walk`, which closes bin ``b`` at the distinct value
    of index ``k_b = max(d_b, k_{b-1} + 1)``, ``d_b`` the distinct index of rank
    ``ceil((b + 1) n / max_bins) - 1``: unrolled, ``k_b = b + max_{j <= b}(d_j - j)``, a
    running maximum, so no Python loop per bin. Bins close while ``k_b`` is below the
    last distinct value, whose bin is the last. A column without present values has one
    empty bin at 0.0.
    """
    n_columns = n_distinct.shape[0]
    column_first = np.cumsum(n_distinct) - n_distinct
    features = np.asarray(features, dtype=np.intp)  # a list from the sparse path
    walked = np.flatnonzero(n_distinct > max_bins)
    if not walked.size:
        _edges_one_bin_per_value(distinct, n_distinct, column_first, features, max_bins,
                                 thresholds, lower, upper, n_value_bins)
        return
    # Two entries past the end, so that reads at a column's first value (and the one
    # after) stay in bounds for empty columns; their results are masked below.
    padded = np.zeros(distinct.size + 2)
    padded[:distinct.size] = distinct
    bin_number = np.arange(max_bins - 1)
    # Bin b closes at distinct value k_b: k_b = b when every value has its own bin.
    closing = np.broadcast_to(bin_number, (n_columns, bin_number.size)).copy()
    ranks = np.ceil((bin_number + 1) * n_present[walked, None] / max_bins).astype(np.int64) - 1
    closing[walked] = bin_number + np.maximum.accumulate(
        distinct_index(walked, ranks) - bin_number, axis=1)
    n_closed = np.count_nonzero(closing < (n_distinct - 1)[:, None], axis=1)
    closed = bin_number < n_closed[:, None]
    at = column_first[:, None] + np.where(closed, closing, 0)
    below = padded[at]
    above = padded[at + 1]
    present = n_distinct > 0
    thresholds[features, :bin_number.size] = np.where(closed, _midpoints(below, above),
                                                      np.inf)
    lower[features, 0] = np.where(present, padded[column_first], 0.0)
    lower[features, 1:max_bins] = np.where(closed, above, 0.0)
    upper_rows = np.zeros((n_columns, max_bins))
    upper_rows[:, :bin_number.size] = np.where(closed, below, 0.0)
    upper_rows[np.arange(n_columns), n_closed] = np.where(
        present, padded[column_first + n_distinct - 1], 0.0)
    upper[features, :max_bins] = upper_rows
    n_value_bins[features] = n_closed + 1


def _edges_one_bin_per_value(distinct, n_distinct, column_first, features, max_bins,
                             thresholds, lower, upper, n_value_bins):
    """:func:`_edges_from_distinct` where no column has more than ``max_bins`` distinct
    values: bin ``k`` of a column holds its ``k``-th distinct value alone (its lower and
    upper value), and its threshold is the midpoint of that value and the next. The same
    arrays, from operations over the distinct values rather than over ``max_bins``
    entries per column, most of them masked: on small data, where every value of every
    column has a bin of its own, a tree's fit on wine (142 x 13) took 305 us before and
    275 us after (Zen 5).

    Only the entries of present bins are written: the features' rows must hold what
    :meth:`Binner._allocate` leaves there (thresholds ``inf``, values 0.0), as they do
    in both callers' fits. Setting them again cost three fancy-indexed writes of
    ``max_bins`` entries per feature, about 4.5 us on wine.
    """
    column = np.repeat(np.arange(n_distinct.shape[0]), n_distinct)
    rank = np.arange(distinct.size) - column_first[column]
    rows = features[column]
    lower[rows, rank] = distinct
    upper[rows, rank] = distinct
    # A value followed by another of its column closes its bin there.
    closing = np.flatnonzero(column[:-1] == column[1:])
    thresholds[rows[closing], rank[closing]] = _midpoints(distinct[closing],
                                                          distinct[closing + 1])
    # A column without present values has one empty bin at 0.0.
    n_value_bins[features] = np.maximum(n_distinct, 1)


def _sparse_column_distinct(values, n_implicit_zeros):
    """``(distinct, first_ranks, n_present)`` of a sparse column (see
    :func:`_edges_from_distinct`) from its stored ``values`` and its count of implicit
    zeros, without materialising the zeros: they only add to the count of 0.0.

    A stored -0.0 is 0.0, as in ``X.toarray()`` (which adds the stored values to
    zeros); NaN is missing.
    """
    present = values[~np.isnan(values)]
    present = np.where(present == 0.0, 0.0, present)
    distinct, counts = np.unique(present, return_counts=True)
    if n_implicit_zeros:
        at = np.searchsorted(distinct, 0.0)
        if at < distinct.size and distinct[at] == 0.0:
            counts[at] += n_implicit_zeros
        else:
            distinct = np.insert(distinct, at, 0.0)
            counts = np.insert(counts, at, n_implicit_zeros)
    first_ranks = np.zeros(distinct.size, dtype=np.int64)
    np.cumsum(counts[:-1], out=first_ranks[1:])
    return distinct, first_ranks, int(counts.sum())


def _codes_numpy(X, is_categorical, thresholds, missing_bin, out):
    """:func:`_map_to_bins` with numpy: a value's bin is the number of thresholds below
    it (``searchsorted`` on the left), a category's its code, NaN ``missing_bin``."""
    columns = np.ascontiguousarray(X.T)
    missing = np.isnan(columns)
    for f in range(columns.shape[0]):
        if is_categorical[f]:
            out[f] = np.where(missing[f], 0.0, columns[f])
        else:
            out[f] = np.searchsorted(thresholds[f], columns[f], side="left")
    out[missing] = missing_bin


class Binner:
    """Map raw features to bin codes (see the module docstring for the contract).

    Parameters
    ----------
    max_bins : int
        Largest number of bins for the non-missing values of one feature, in [2, 65535].
    is_categorical : ndarray of bool, shape (n_features,)
        Which features hold category codes.
    """

    def __init__(self, max_bins, is_categorical):
        self.max_bins = max_bins
        self.is_categorical = np.asarray(is_categorical, dtype=np.bool_)

    def fit(self, X, edge_rows=None):
        """Learn bin edges from ``X`` (float64, NaN = missing, already validated).

        ``edge_rows``: the rows whose values place the numeric features' edges (all
        rows when None), as LightGBM (``bin_construct_sample_cnt``) and scikit-learn's
        histogram boosting bin from a subsample of a large dataset. Category counts
        are always taken from every row.

        ``X`` may be a ``scipy.sparse`` matrix or array (canonical: no duplicate
        entries): it is binned column by column from a CSC copy, its implicit zeros
        counted, never written out (:mod:`silva.engine.sparse`); the edges are those of
        ``X.toarray()``, bit for bit.
        """
        if is_sparse(X):
            return self._fit_sparse(X, edge_rows)
        self._fit(X, edge_rows)
        return self

    def _allocate(self, n_features, n_categories):
        """The binner's arrays, before any feature is binned."""
        width = max([self.max_bins, *n_categories.values()])
        self.bin_thresholds_ = np.full((n_features, max(self.max_bins - 1, 1)), np.inf)
        self.bin_lower_ = np.zeros((n_features, width))
        self.bin_upper_ = np.zeros((n_features, width))
        self.n_value_bins_ = np.ones(n_features, dtype=np.int32)

    def _finish(self, n_categories):
        """Categorical features' bins (one per code), the missing bin and the dtype."""
        for f, n_codes in n_categories.items():
            self.n_value_bins_[f] = n_codes
            codes = np.arange(n_codes, dtype=np.float64)
            self.bin_lower_[f, :n_codes] = codes
            self.bin_upper_[f, :n_codes] = codes
        self.missing_bin_ = int(self.n_value_bins_.max())
        self.dtype_ = np.uint8 if self.missing_bin_ <= 255 else np.uint16
        return self

    def _fit_sparse(self, X, edge_rows):
        """:meth:`fit` on a sparse ``X``: one conversion to CSC, then per column its
        stored values and its count of implicit zeros (:func:`_sparse_column_distinct`)
        give the edges :func:`_numeric_bins_numpy` gives the dense column."""
        columns = X.tocsc()
        edge_columns = columns if edge_rows is None else X.tocsr()[edge_rows].tocsc()
        n_features = X.shape[1]
        n_categories = {}
        for f in np.flatnonzero(self.is_categorical):
            _, values, n_zeros = column_values(columns, f)
            present = values[~np.isnan(values)]
            largest = present.max() if present.size else (0.0 if n_zeros else -1.0)
            if n_zeros:
                largest = max(largest, 0.0)
            n_categories[f] = int(largest) + 1 if largest >= 0 else 1
        self._allocate(n_features, n_categories)
        for f in np.flatnonzero(~self.is_categorical):
            _, values, n_zeros = column_values(edge_columns, f)
            distinct, first_ranks, n_present = _sparse_column_distinct(values, n_zeros)
            _edges_from_distinct(
                distinct, np.array([distinct.size]), np.array([n_present]),
                lambda _, ranks, first=first_ranks: np.searchsorted(first, ranks, "right") - 1,
                [f], self.max_bins, self.bin_thresholds_, self.bin_lower_,
                self.bin_upper_, self.n_value_bins_)
        return self._finish(n_categories)

    def _transform_sparse(self, X):
        """Bin codes of a sparse ``X``, column by column: the code of 0.0 for the whole
        column, then the codes of its stored values (:func:`_codes_numpy`'s rule)."""
        columns = X.tocsc()
        out = np.empty((X.shape[1], X.shape[0]), dtype=self.dtype_)
        for f in range(X.shape[1]):
            rows, values, _ = column_values(columns, f)
            missing = np.isnan(values)
            if self.is_categorical[f]:
                out[f] = 0
                codes = np.where(missing, 0.0, values)
            else:
                out[f] = np.searchsorted(self.bin_thresholds_[f], 0.0, side="left")
                codes = np.searchsorted(self.bin_thresholds_[f], values, side="left")
            out[f, rows] = np.where(missing, self.missing_bin_, codes)
        return out

    def sparse_entries(self, X):
        """The non-default bin codes of a canonical sparse ``X`` (sorted indices, no
        duplicates, as :func:`silva._input.validate_sparse_X` gives it), column by column,
        without a dense code matrix: ``(column_start, column_rows, column_codes,
        default_code)``.

        A column's *default code* is the code of 0.0 (category 0 for a categorical
        column), which every implicit zero takes; its entries are the stored values
        whose code differs from it (a NaN stored takes the missing bin), rows
        increasing, in ``column_rows[column_start[f]:column_start[f + 1]]`` with their
        codes in ``column_codes``. Together they are :meth:`transform`'s codes, entry
        for entry (:mod:`silva.engine.gradient_sparse` grows on them)."""
        columns = X.tocsc()
        n_features = X.shape[1]
        default_code = np.empty(n_features, dtype=self.dtype_)
        rows_parts, codes_parts = [], []
        column_start = np.zeros(n_features + 1, dtype=np.int64)
        for f in range(n_features):
            rows, values, _ = column_values(columns, f)
            missing = np.isnan(values)
            if self.is_categorical[f]:
                default = 0
                codes = np.where(missing, 0.0, values).astype(np.int64)
            else:
                default = np.searchsorted(self.bin_thresholds_[f], 0.0, side="left")
                codes = np.searchsorted(self.bin_thresholds_[f], values, side="left")
            codes = np.where(missing, self.missing_bin_, codes)
            kept = codes != default
            default_code[f] = default
            rows_parts.append(rows[kept].astype(np.int32))
            codes_parts.append(codes[kept].astype(self.dtype_))
            column_start[f + 1] = column_start[f] + int(kept.sum())
        column_rows = (np.concatenate(rows_parts) if rows_parts
                       else np.empty(0, dtype=np.int32))
        column_codes = (np.concatenate(codes_parts) if codes_parts
                        else np.empty(0, dtype=self.dtype_))
        return column_start, column_rows, column_codes, default_code

    def _fit(self, X, edge_rows, presorted=None):
        """:meth:`fit`; ``presorted``, when given, is ``(sorted_numeric,
        negative_zero)``: the numeric columns of ``X`` sorted, and which of them hold a
        -0.0 (as :func:`_numeric_bins_numpy` takes them). Returns the bin codes
        of the sorted numeric columns when numpy binned them (see
        :func:`_numeric_bins_numpy`), else None."""
        n_features = X.shape[1]
        max_bins = self.max_bins
        # A categorical feature has one bin per category, however many: max_bins limits
        # the quantile bins of numeric features. The CART and boosting estimators keep
        # codes below max_bins; ID3 bins numeric features into few bins and takes any
        # number of categories, which then set the width of the per-bin arrays.
        n_categories = {}
        for f in np.flatnonzero(self.is_categorical):
            present = X[:, f][~np.isnan(X[:, f])]
            n_categories[f] = int(present.max()) + 1 if present.size else 1
        self._allocate(n_features, n_categories)
        numeric = np.flatnonzero(~self.is_categorical).astype(np.int64)
        sorted_codes = None
        if numeric.size:
            X = np.asarray(X, dtype=np.float64)
            X_edges = X if edge_rows is None else X[edge_rows]
            n_rows = X_edges.shape[0]
            if presorted is None and n_rows * numeric.size <= NUMPY_BINNING_MAX_VALUES:
                columns = _numeric_columns(X_edges, numeric)
                presorted = np.sort(columns, axis=1), _holds_negative_zero(columns)
            if presorted is not None:
                sorted_codes = _numeric_bins_numpy(
                    *presorted, numeric, max_bins, self.bin_thresholds_,
                    self.bin_lower_, self.bin_upper_, self.n_value_bins_)
                numeric = numeric[:0]  # all binned
        if numeric.size:
            n_threads = max(1, min(nb.get_num_threads(), numeric.size))
            per_thread = max(1, min(-(-numeric.size // n_threads),
                                    _GROUP_BYTES // (8 * max(n_rows, 1) * n_threads)))
            # The large work arrays come from numpy, which asks the kernel for huge
            # pages: from numba's allocator, their page faults took about 3 times longer.
            keys = np.empty((per_thread * n_threads, n_rows), dtype=np.uint64)
            buffers = np.empty((n_threads, max(n_rows, max_bins)), dtype=np.uint64)
            _fit_numeric_bins(
                X_edges, numeric, max_bins, self.bin_thresholds_, self.bin_lower_,
                self.bin_upper_, self.n_value_bins_, keys, buffers,
            )
        self._finish(n_categories)
        return sorted_codes

    def restricted(self, codes, rows):
        """``(binner, codes)`` of ``X[rows]`` from this binner's ``codes`` of ``X``
        (:meth:`fit_transform`'s), without sorting anything again; None where that
        cannot give what ``Binner(max_bins, is_categorical).fit_transform(X[rows])``
        gives, bit for bit.

        Where every feature is numeric and has a bin per distinct value (at most
        ``max_bins`` of them, so no quantile walk), the bins of ``X[rows]`` are the bins
        that its rows occupy, renumbered in order, and the thresholds the midpoints of
        neighbouring occupied bins' values: what a fit on those rows computes from the
        same distinct values. Otherwise (a category, a quantile walk, a column whose
        zero is ``-0.0``, whose sign a fit on fewer rows may not keep) it returns None.
        AdaBoost's rounds leave out the samples whose weights have fallen to zero:
        their trees bin those rows, an argsort of every column each round (4 of the
        7 ms a round on digits, 100 rounds of depth-3 trees) that this avoids.
        """
        n_features = self.n_value_bins_.shape[0]
        columns = np.arange(self.max_bins)
        in_use = columns < self.n_value_bins_[:, None]
        if (self.is_categorical.any() or n_features == 0
                or np.any((self.bin_lower_ != self.bin_upper_) & in_use)
                or np.any((self.bin_lower_ == 0.0) & np.signbit(self.bin_lower_) & in_use)):
            return None
        missing_bin = self.missing_bin_
        width = missing_bin + 1
        row_codes = codes[:, rows]
        # Which bins the rows occupy, per feature, from one count over all features.
        flat = row_codes + (np.arange(n_features) * width)[:, None]
        occupied = np.bincount(flat.ravel(), minlength=n_features * width).reshape(
            n_features, width)[:, :missing_bin] > 0
        new_bin = np.cumsum(occupied, axis=1) - 1
        n_value_bins = np.maximum(occupied.sum(axis=1), 1).astype(np.int32)
        binner = Binner(self.max_bins, self.is_categorical)
        binner._allocate(n_features, {})
        binner.n_value_bins_[:] = n_value_bins
        # Each occupied bin's value moves to its new place; the rest stay 0.
        feature, old_bin = np.nonzero(occupied)
        values = self.bin_lower_[feature, old_bin]
        binner.bin_lower_[feature, new_bin[feature, old_bin]] = values
        binner.bin_upper_[feature, new_bin[feature, old_bin]] = values
        n_thresholds = binner.bin_thresholds_.shape[1]
        closed = np.arange(n_thresholds) < (n_value_bins - 1)[:, None]
        low = binner.bin_lower_[:, :n_thresholds]
        high = binner.bin_lower_[:, 1:n_thresholds + 1]
        binner.bin_thresholds_[closed] = _midpoints(low[closed], high[closed])
        binner._finish({})
        remap = np.empty((n_features, width), dtype=np.int64)
        remap[:, :missing_bin] = new_bin
        remap[:, missing_bin] = binner.missing_bin_
        return binner, remap.ravel()[flat].astype(binner.dtype_)

    def transform(self, X):
        """Bin codes of ``X`` as a C-contiguous (n_features, n_samples) array (dense
        even for a sparse ``X``: one byte per value up to 255 bins, two above)."""
        if is_sparse(X):
            return self._transform_sparse(X)
        out = np.empty((X.shape[1], X.shape[0]), dtype=self.dtype_)
        if X.shape[0] * X.shape[1] <= NUMPY_BINNING_MAX_VALUES:
            _codes_numpy(X, self.is_categorical, self.bin_thresholds_, self.missing_bin_,
                         out)
            return out
        n_thresholds = self.bin_thresholds_.shape[1]
        padded_length = 1 << int(np.ceil(np.log2(n_thresholds + 1)))
        padded = np.full((X.shape[1], padded_length - 1), np.inf)
        padded[:, :n_thresholds] = self.bin_thresholds_
        _map_to_bins(X, self.is_categorical.astype(np.uint8), padded, self.missing_bin_, out)
        return out

    def fit_transform(self, X):
        """:meth:`fit` then :meth:`transform` on the same ``X``.

        On the numpy path the codes come from the fit's sort: each sorted value's code
        is its distinct value's bin (:func:`_numeric_bins_numpy`), put back in row
        order (a search of the unsorted column mispredicts a branch at each step: 5x
        slower).
        """
        numeric = np.flatnonzero(~self.is_categorical)
        if is_sparse(X) or X.size > NUMPY_BINNING_MAX_VALUES or numeric.size == 0:
            return self.fit(X).transform(X)
        X = np.asarray(X, dtype=np.float64)
        columns = _numeric_columns(X, numeric)
        # Read before sorting: a sort may turn a -0.0 into 0.0.
        negative_zero = _holds_negative_zero(columns)
        sorted_numeric, order = _sorted_with_order(columns)
        # Each value's position in the flattened columns, in sorted order (NaN last); one
        # flat index serves the scatter back (numpy's two-dimensional put_along_axis
        # costs about 4 ns more an element).
        order += np.arange(0, order.size, order.shape[1])[:, None]
        order = order.ravel()
        sorted_codes = self._fit(X, None, (sorted_numeric, negative_zero))
        out = np.empty((X.shape[1], X.shape[0]), dtype=self.dtype_)
        categorical = np.flatnonzero(self.is_categorical)
        if categorical.size:
            codes = np.empty((categorical.size, X.shape[0]), dtype=self.dtype_)
            _codes_numpy(X[:, categorical], np.ones(categorical.size, dtype=np.bool_),
                         self.bin_thresholds_[categorical], self.missing_bin_, codes)
            out[categorical] = codes
        sorted_codes[np.isnan(sorted_numeric)] = self.missing_bin_
        if numeric.size == X.shape[1]:
            out.ravel()[order] = sorted_codes.ravel()
            return out
        numeric_codes = np.empty(sorted_codes.shape, dtype=self.dtype_)
        numeric_codes.ravel()[order] = sorted_codes.ravel()
        out[numeric] = numeric_codes
        return out
