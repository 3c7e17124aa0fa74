"""Level-wise forest growth on row shards: partition-independent random forests.

The forests of :mod:`silva.forest` grow each tree depth-first in one compiled call,
drawing every random number from one stream in the order the nodes are met, and draw
their bootstrap samples with ``randint`` over the whole data: neither can be reproduced
by machines that each hold part of the rows. ``bootstrap="poisson"`` defines another
forest, one that can (the data-parallel forests of Spark MLlib and of PLANET, Panda et
al. 2009, grow the same way):

- **bootstrap**: each row's count in tree ``t`` is a Poisson(``rate``) draw made from
  the tree's seed and the row's *global* index alone (:func:`poisson_counts`: a
  counter-based draw, SplitMix64 of the pair, by inversion of the Poisson CDF), as
  Spark MLlib's ``BaggedPoint`` does; with ``rate = 1`` it approximates the classical
  bootstrap (Oza & Russell 2001). Counts times sample weights are the tree's weights;
  rows of count 0 are out of bag;
- **growth**: level by level: every node of a level is split from its *summed*
  histogram (:mod:`silva.engine.histogram`'s layout: ``(n_features, n_bins,
  n_channels)``, the CART channels of :mod:`silva.engine.criteria`), the smaller
  child's histogram built from the rows and the larger's the parent's minus it;
- **feature draws**: each node's random numbers (the ``max_features`` candidates, extra
  trees' thresholds) come from a state keyed by the tree's seed and the node's id
  (:func:`node_seed`), the node id being its position in level order, which no
  partition of the rows changes;
- **thresholds**: CART's midpoint between the node's largest value going left and its
  smallest going right, read off the summed histogram's non-empty bins.

The split search is the engine's :func:`silva.engine.splitting.find_node_split` on the
dense summed histogram, unchanged. The driver (:mod:`silva.engine.levelwise_grower`)
runs in Python and calls the shards' methods once per level; a :class:`RowShard` holds
one machine's rows (all rows for the single-machine forest, a worker's for
:mod:`silva.dask.forest`) and answers with local histograms. Sums over shards differ
from single-machine sums by rounding only, so the trees agree in structure, features
and thresholds, and their values to rounding.
"""

import numba as nb
import numpy as np

from silva.engine.random import next_uint64

# Salts that keep the bootstrap stream and the node streams of one tree seed apart.
_BOOTSTRAP_SALT = np.uint64(0x6A09E667F3BCC908)
_NODE_SALT = np.uint64(0xBB67AE8584CAA73B)


@nb.njit(cache=True, inline="always")
def _mix(value):
    """One SplitMix64 output for the counter ``value`` (Steele, Lea & Flood 2014)."""
    state = np.empty(1, dtype=np.uint64)
    state[0] = value
    return next_uint64(state)


@nb.njit(cache=True)
def node_seed(tree_seed, node):
    """The random state of node ``node`` (level-order id) of the tree ``tree_seed``."""
    return _mix(np.uint64(tree_seed) ^ _NODE_SALT ^ _mix(np.uint64(node)))


@nb.njit(cache=True, nogil=True)
def poisson_counts(tree_seed, global_rows, rate):
    """Each row's Poisson(``rate``) count in the tree ``tree_seed``, from its global
    index alone (so any partition of the rows draws the same counts).

    The uniform of row ``r`` is the top 53 bits of SplitMix64 of ``(seed, r)``; the count
    is the smallest ``k`` whose Poisson CDF reaches it (inversion, Devroye 1986, sec.
    X.3.2), exact for the rates of a bootstrap (``rate <= 1`` in practice: the loop runs
    ``k + 1`` times).
    """
    counts = np.empty(global_rows.shape[0])
    key = _mix(np.uint64(tree_seed) ^ _BOOTSTRAP_SALT)
    p0 = np.exp(-rate)
    for i in range(global_rows.shape[0]):
        bits = _mix(key ^ _mix(np.uint64(global_rows[i])))
        u = np.float64(bits >> np.uint64(11)) * (1.0 / 9007199254740992.0)
        k = 0
        p = p0
        cdf = p0
        while u >= cdf and k < 1000:
            k += 1
            p *= rate / k
            cdf += p
        counts[i] = k
    return counts


@nb.njit(cache=True, inline="always")
def _add_exactly(cell, c, n_channels, value):
    """Add ``value`` to the double-double ``(cell[c], cell[n_channels + c])``: Knuth's
    TwoSum keeps the rounding error of each addition in the low word."""
    high = cell[c]
    total = high + value
    virtual = total - high
    cell[n_channels + c] += (high - (total - virtual)) + (value - virtual)
    cell[c] = total


@nb.njit(cache=True, nogil=True)
def level_histograms(hist, codes, rows, node_of_row, slot_of_node, y, weight, counts,
                     classification):
    """Add to ``hist[slot]`` (``(n_slots, n_features, n_bins, 2 * n_channels)``, zeroed
    by the caller) the CART channels of the ``rows`` whose node has a slot
    (``slot_of_node[node_of_row[r]] >= 0``): the count, then ``w`` on class ``y``
    (classifiers) or ``w, w * y, w * y * y`` (regressors), as
    :func:`silva.engine.criteria.build_statistics` defines them, where ``w = weight *
    counts`` (the sample weight times the bootstrap count, kept as one byte a row).

    Each channel is a double-double (high words, then low words: see
    :func:`normalize_histograms`): its rounded value is the correctly rounded sum of the
    rows' values (but where the exact sum lies within about ``n_rows * 2**-106`` of a
    rounding boundary), whatever the order the rows are added in and however they are
    spread over shards. So sums over shards equal the single machine's bit for bit, and
    the trees grown from them are the same, ties between splits included."""
    n_features = codes.shape[0]
    n_channels = hist.shape[3] // 2
    for f in range(n_features):
        codes_f = codes[f]
        for i in range(rows.shape[0]):
            r = rows[i]
            slot = slot_of_node[node_of_row[r]]
            if slot < 0:
                continue
            cell = hist[slot, f, codes_f[r]]
            w = weight[r] * counts[r]
            cell[0] += 1.0  # counts are integers: exact
            if classification:
                _add_exactly(cell, 1 + np.int64(y[r]), n_channels, w)
            else:
                wy = w * y[r]
                _add_exactly(cell, 1, n_channels, w)
                _add_exactly(cell, 2, n_channels, wy)
                _add_exactly(cell, 3, n_channels, wy * y[r])
    normalize_histograms(hist)


@nb.njit(cache=True, nogil=True)
def normalize_histograms(hist):
    """Renormalise double-double histograms (last axis: ``n_channels`` high words, then
    as many low words) so that each high word is the rounded value of its pair (Dekker's
    FastTwoSum: ``high + low`` rounded, and what rounding lost)."""
    flat = hist.reshape(-1, hist.shape[-1])
    n_channels = flat.shape[1] // 2
    for i in range(flat.shape[0]):
        for c in range(n_channels):
            high = flat[i, c]
            low = flat[i, n_channels + c]
            total = high + low
            flat[i, n_channels + c] = low - (total - high)
            flat[i, c] = total


@nb.njit(cache=True, nogil=True)
def _add_exactly_all(total, other, sign):
    n_channels = total.shape[1] // 2
    for i in range(total.shape[0]):
        for c in range(n_channels):
            high = total[i, c]
            value = sign * other[i, c]
            summed = high + value
            virtual = summed - high
            low = (total[i, n_channels + c]
                   + ((high - (summed - virtual)) + (value - virtual)
                      + sign * other[i, n_channels + c]))
            renormalized = summed + low
            total[i, n_channels + c] = low - (renormalized - summed)
            total[i, c] = renormalized


def add_histograms(total, other, sign=1.0):
    """``total += sign * other`` for double-double histograms (see
    :func:`level_histograms`; both C-contiguous), renormalised: the sums of shards'
    histograms, or a parent's minus a child's (the subtraction trick), each as exact
    as the rows'."""
    _add_exactly_all(total.reshape(-1, total.shape[-1]),
                     np.ascontiguousarray(other).reshape(-1, other.shape[-1]), float(sign))
    return total


@nb.njit(cache=True, nogil=True)
def apply_level_splits(codes, rows, node_of_row, split_of_node, features, split_bins,
                       missing_left, is_categorical, bitsets, left_children, child_open,
                       missing_bin):
    """Send each of ``rows`` in a split node (``split_of_node[node] = k >= 0``) to its
    child ``left_children[k]`` or ``left_children[k] + 1`` by the ``k``-th split
    (numeric: bins ``<= split_bins[k]`` go left; categorical: the categories of
    ``bitsets[k]``; the missing bin follows ``missing_left[k]``). Returns the rows, in
    order, whose new node is still wanted (``child_open`` indexed by ``child - first
    child`` of the level, the lowest left child: a child that will split, or whose
    histogram is built next)."""
    kept = np.empty(rows.shape[0], dtype=rows.dtype)
    n_kept = 0
    first_child = left_children.min() if left_children.shape[0] > 0 else 0
    for i in range(rows.shape[0]):
        r = rows[i]
        k = split_of_node[node_of_row[r]]
        if k < 0:
            continue
        code = np.int64(codes[features[k], r])
        if code == missing_bin:
            go_left = missing_left[k]
        elif is_categorical[k]:
            go_left = (bitsets[k, code >> 6] >> np.uint64(code & 63)) & np.uint64(1) != 0
        else:
            go_left = code <= split_bins[k]
        child = left_children[k] + (0 if go_left else 1)
        node_of_row[r] = child
        if child_open[child - first_child]:
            kept[n_kept] = r
            n_kept += 1
    return kept[:n_kept].copy()


def pack_histograms(hist):
    """``hist`` (double-double: high words, then low words) for the wire:
    ``(shape, cells, values)``. ``cells`` is None (``values`` is every cell) or, when
    that is smaller, the indices of the cells that hold rows (count channel > 0; a cell
    without rows sums to zero in every channel): deep in a tree most of a node's bins are
    empty. ``values`` drops the low words when all are zero (integer weights: counts
    and class counts are exact in the high words alone)."""
    flat = hist.reshape(-1, hist.shape[-1])
    n_channels = flat.shape[1] // 2
    cells = np.flatnonzero(flat[:, 0] > 0)
    if cells.shape[0] * (flat.itemsize * flat.shape[1] + 8) < flat.nbytes:
        values = flat[cells]
        cells = cells.astype(np.int32 if flat.shape[0] < 2**31 else np.int64)
    else:
        values, cells = flat, None
    if not np.any(values[:, n_channels:]):
        values = np.ascontiguousarray(values[:, :n_channels])
    return (hist.shape, cells, values)


def unpack_histograms(packed):
    """The dense histograms of :func:`pack_histograms`' result (or ``packed`` itself,
    a dense array from a shard that does not pack)."""
    if isinstance(packed, np.ndarray):
        return packed
    shape, cells, values = packed
    hist = np.zeros(shape)
    flat = hist.reshape(-1, shape[-1])
    width = values.shape[1]
    if cells is None:
        flat[:, :width] = values
    else:
        flat[cells, :width] = values
    return hist


def packed_bytes(packed):
    """Bytes of :func:`pack_histograms`' result (what travels)."""
    if isinstance(packed, np.ndarray):
        return packed.nbytes
    _, cells, values = packed
    return values.nbytes + (0 if cells is None else cells.nbytes)


def reproducible_offset(mean):
    """The centring offset of a level-wise regression forest: the weighted mean of y
    rounded to 24 significant bits. Machines that sum y in different orders get means
    that differ in their last bits; rounded, the offsets agree (but for means within
    2**-53 of a 24-bit boundary), so every row's centred target is the same everywhere,
    and the offset still removes the cancellation that centring is for."""
    if mean == 0.0 or not np.isfinite(mean):
        return float(mean)
    fraction, exponent = np.frexp(mean)
    return float(np.ldexp(np.round(fraction * 2.0**24) / 2.0**24, exponent))


class RowShard:
    """One machine's rows for level-wise forests, and the trees being grown on them.

    ``codes``: feature-major bin codes ``(n_features, n_rows)`` (uint8); ``y``: class
    indices (float) or centred targets; ``weight``: sample weights (rows of zero weight
    are never in a bag);
    ``global_rows``: each row's index in the whole data (int64), which keys its
    bootstrap counts. Per tree being grown it keeps the rows' bootstrap counts (uint8),
    their current node (int32) and the in-bag rows still in open nodes (int32): at most
    9 bytes a row a tree.
    """

    def __init__(self, codes, y, weight, global_rows, n_bins, n_channels, classification,
                 pack=False):
        self.codes = codes
        self.y = y
        self.weight = weight
        self.global_rows = global_rows
        self.n_rows = y.shape[0]
        self.n_features = codes.shape[0]
        self.n_bins = int(n_bins)
        self.n_channels = int(n_channels)
        self.classification = bool(classification)
        self.pack = bool(pack)  # histograms that travel are packed, in-process ones not
        self.trees = []

    def has_missing(self, missing_bin):
        """Whether any row has a missing value (the bin ``missing_bin``)."""
        return bool(np.any(self.codes == missing_bin))

    def start_trees(self, tree_seeds, rate):
        """Draw the bootstrap of each tree of ``tree_seeds`` and return the roots' local
        histograms ``(n_trees, n_features, n_bins, 2 * n_channels)`` (double-double:
        see :func:`level_histograms`; packed by :func:`pack_histograms` when the
        shard packs)."""
        self.trees = []
        hist = np.zeros((len(tree_seeds), self.n_features, self.n_bins,
                         2 * self.n_channels))
        for t, seed in enumerate(tree_seeds):
            counts = poisson_counts(np.uint64(seed), self.global_rows, float(rate))
            # In the bag: a positive count and a positive sample weight.
            rows = np.flatnonzero((counts > 0) & (self.weight > 0)).astype(np.int32)
            # One byte a row (a Poisson(1) count above 255 has probability 1e-500).
            counts = counts.astype(np.uint8 if counts.max(initial=0) <= 255 else np.float64)
            node_of_row = np.zeros(self.n_rows, dtype=np.int32)
            self.trees.append([counts, node_of_row, rows])
            level_histograms(hist[t:t + 1], self.codes, rows, node_of_row,
                             np.zeros(1, dtype=np.int64), self.y, self.weight, counts,
                             self.classification)
        return pack_histograms(hist) if self.pack else hist

    def split_level(self, requests):
        """Apply one level's splits to each tree's rows and return the local histograms
        of the children asked for, stacked in request order (packed, when the shard
        packs, by :func:`pack_histograms`).

        ``requests[t]`` is ``None`` (tree ``t`` has no split left) or a dict of arrays,
        one entry per split of the level: ``node``, ``feature``, ``split_bin``,
        ``missing_left``, ``is_categorical``, ``bitset``, ``left`` (the left child's id,
        the right's is the next), ``child_open`` (per child of the level, whether it
        will be split), ``build`` (the child id whose histogram is wanted, or -1)."""
        n_built = sum(int(np.sum(r["build"] >= 0)) for r in requests if r is not None)
        out = np.zeros((n_built, self.n_features, self.n_bins, 2 * self.n_channels))
        first = 0
        for t, request in enumerate(requests):
            if request is None:
                continue
            counts, node_of_row, rows = self.trees[t]
            n_nodes = int(request["left"].max()) + 2
            split_of_node = np.full(n_nodes, -1, dtype=np.int64)
            split_of_node[request["node"]] = np.arange(request["node"].shape[0])
            rows = apply_level_splits(
                self.codes, rows, node_of_row, split_of_node, request["feature"],
                request["split_bin"], request["missing_left"], request["is_categorical"],
                request["bitset"], request["left"], request["child_open"],
                np.int64(self.n_bins - 1))
            self.trees[t][2] = rows
            build = request["build"][request["build"] >= 0]
            if build.shape[0] == 0:
                continue
            slot_of_node = np.full(n_nodes, -1, dtype=np.int64)
            slot_of_node[build] = np.arange(build.shape[0])
            level_histograms(out[first:first + build.shape[0]], self.codes, rows,
                             node_of_row, slot_of_node, self.y, self.weight, counts,
                             self.classification)
            first += build.shape[0]
        return pack_histograms(out) if self.pack else out

    def leaf_rows(self, t):
        """Tree ``t``'s in-bag rows and their final nodes (after its last level)."""
        counts, node_of_row, _ = self.trees[t]
        inbag = np.flatnonzero((counts > 0) & (self.weight > 0))
        return inbag, node_of_row[inbag], self.weight[inbag] * counts[inbag]

    def end_trees(self):
        self.trees = []
        return self.n_rows
