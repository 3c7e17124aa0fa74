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

import numpy as np

from silva.engine.jit import kernel
from silva.engine.random import next_uint64

# Salts that keep the bootstrap stream and the node streams of one tree seed apart.
_BOOTSTRAP_SALT = np.uint64(0x6A09E667F3BCC908)
_NODE_SALT = np.uint64(0xBB67AE8584CAA73B)


@kernel(inline="always")
def _mix(value):
    """One SplitMix64 output for the counter ``value`` (Steele, Lea & Flood 2014)."""
    state = np.empty(1, dtype=np.uint64)
    state[0] = value
    return next_uint64(state)


@kernel()
def node_seed(tree_seed, node):
    """The random state of node ``node`` (level-order id) of the tree ``tree_seed``."""
    return _mix(np.uint64(tree_seed) ^ _NODE_SALT ^ _mix(np.uint64(node)))


@kernel(nogil=True)
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


@kernel(inline="always")
def _add_exactly(cell, c, n_channels, value):
    """Add ``value`` to the double-double ``(cell[c], cell[n_channels + c])``: Knuth's
    TwoSum keeps the rounding error of each addition in the low word."""
    high = cell[c]
    total = high + value
    virtual = total - high
    cell[n_channels + c] += (high - (total - virtual)) + (value - virtual)
    cell[c] = total


@kernel(nogil=True)
def slot_histograms(hist, codes, rows, row_slots, first_slot, y, weight, counts,
                    classification):
    """Add to ``hist[row_slots[i] - first_slot]`` (``(n_slots, n_features, n_bins,
    2 * n_channels)``) the CART channels of each of ``rows``: the count, then ``w`` on
    class ``y`` (classifiers) or ``w, w * y, w * y * y`` (regressors), as
    :func:`silva.engine.criteria.build_statistics` defines them, where ``w = weight *
    counts`` (the sample weight times the bootstrap count, kept as one byte a row).

    Each channel is a double-double (high words, then low words: see
    :func:`normalize_histograms`, which the caller applies): its rounded value is the
    correctly rounded sum of the rows' values (but where the exact sum lies within about
    ``n_rows * 2**-106`` of a rounding boundary), whatever the order the rows are added
    in and however they are spread over shards. So sums over shards equal the single
    machine's bit for bit, and the trees grown from them are the same, ties between
    splits included."""
    n_features = codes.shape[0]
    n_channels = hist.shape[3] // 2
    for f in range(n_features):
        codes_f = codes[f]
        for i in range(rows.shape[0]):
            r = rows[i]
            cell = hist[row_slots[i] - first_slot, f, codes_f[r]]
            w = weight[r] * counts[r]
            cell[0] += 1.0  # counts are integers: exact
            if classification:
                _add_exactly(cell, 1 + np.int64(y[r]), n_channels, w)
            else:
                wy = w * y[r]
                _add_exactly(cell, 1, n_channels, w)
                _add_exactly(cell, 2, n_channels, wy)
                _add_exactly(cell, 3, n_channels, wy * y[r])


@kernel(nogil=True)
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


@kernel(nogil=True)
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


#: Nodes whose histograms a shard builds in one dense buffer (32 x 28 features x 256
#: bins x 6 channels x 8 bytes = 11 MB), whatever the number of nodes in a level.
CHUNK_NODES = 32


def node_histograms(hist_list, n_channels):
    """Nodes' double-double histograms as they travel and are kept: ``(offsets,
    cells, values)``, node ``j`` holding the cells ``cells[offsets[j]:offsets[j + 1]]``
    (flat ``feature * n_bins + bin``) that hold rows, with their channels ``values``
    (high words, then low words; the low words are dropped, ``values`` then
    ``n_channels`` wide, when all are zero: integer weights). A cell without rows sums
    to zero in every channel, and deep in a tree a node fills few of its cells.
    ``hist_list``: per node, ``(cells, values)``."""
    offsets = np.zeros(len(hist_list) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([cells.shape[0] for cells, _ in hist_list])
    cells = (np.concatenate([c for c, _ in hist_list]).astype(np.int32) if hist_list
             else np.empty(0, dtype=np.int32))
    values = (np.concatenate([v for _, v in hist_list]) if hist_list
              else np.empty((0, 2 * n_channels)))
    if not np.any(values[:, n_channels:]):
        values = np.ascontiguousarray(values[:, :n_channels])
    return offsets, cells, values


def split_node_histograms(answer, n_channels):
    """The per-node ``(cells, values)`` of :func:`node_histograms`' result, values
    ``2 * n_channels`` wide."""
    offsets, cells, values = answer
    if values.shape[1] < 2 * n_channels:
        values = np.concatenate([values, np.zeros_like(values)], axis=1)
    return [(cells[offsets[j]:offsets[j + 1]].astype(np.int64),
             values[offsets[j]:offsets[j + 1]]) for j in range(offsets.shape[0] - 1)]


def histogram_bytes(answer):
    """Bytes of :func:`node_histograms`' result (what travels)."""
    return sum(a.nbytes for a in answer)


@kernel(nogil=True)
def add_cells_exactly(accumulator, cells, values, sign):
    """``accumulator[cells] += sign * values`` for double-double cells (``values``
    ``2 * n_channels`` wide), each addition by TwoSum, each cell renormalised after it:
    the sums of shards' node histograms, or a parent's minus a child's (the subtraction
    trick), as exact as the rows' own."""
    n_channels = accumulator.shape[1] // 2
    for i in range(cells.shape[0]):
        cell = cells[i]
        for c in range(n_channels):
            high = accumulator[cell, c]
            value = sign * values[i, c]
            summed = high + value
            virtual = summed - high
            low = (accumulator[cell, n_channels + c]
                   + ((high - (summed - virtual)) + (value - virtual)
                      + sign * values[i, n_channels + c]))
            renormalized = summed + low
            accumulator[cell, n_channels + c] = low - (renormalized - summed)
            accumulator[cell, c] = renormalized


class HistogramAccumulator:
    """A dense scratch of one node's cells, ``(n_features * n_bins, 2 * n_channels)``,
    reset after each use (only the cells touched): sums node histograms of several
    shards, and subtracts a child's from its parent's."""

    def __init__(self, n_cells, n_channels):
        self.cells = np.zeros((n_cells, 2 * n_channels))

    def total(self, parts):
        """The exact sum of ``parts`` (``(cells, values)`` each) of one node."""
        if len(parts) == 1:
            return parts[0]
        for cells, values in parts:
            add_cells_exactly(self.cells, cells, values, 1.0)
        union = np.unique(np.concatenate([cells for cells, _ in parts]))
        return self._take(union)

    def difference(self, parent, child):
        """``parent - child`` (a node's histogram minus one child's: the other
        child's), keeping the cells that still hold rows."""
        parent_cells, parent_values = parent
        self.cells[parent_cells] = parent_values
        add_cells_exactly(self.cells, child[0], child[1], -1.0)
        return self._take(parent_cells, rows_only=True)

    def _take(self, cells, rows_only=False):
        values = self.cells[cells]
        self.cells[cells] = 0.0
        if rows_only:
            keep = values[:, 0] > 0.5  # counts are exact integers
            cells, values = cells[keep], values[keep]
        return cells, values


def sum_node_histograms(answers, n_cells, n_channels):
    """The shards' answers (:func:`node_histograms` each, nodes alike) summed node by
    node: a list of ``(cells, values)``."""
    per_shard = [split_node_histograms(a, n_channels) for a in answers]
    accumulator = HistogramAccumulator(n_cells, n_channels)
    return [accumulator.total([shard[j] for shard in per_shard])
            for j in range(len(per_shard[0]))]


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

    def __init__(self, codes, y, weight, global_rows, n_bins, n_channels, classification):
        self.codes = codes
        self.y = y
        self.weight = weight
        self.global_rows = global_rows
        self.n_rows = y.shape[0]
        self.n_features = codes.shape[0]
        self.n_bins = int(n_bins)
        self.n_channels = int(n_channels)
        self.classification = bool(classification)
        self.trees = []

    def has_missing(self, missing_bin):
        """Whether any row has a missing value (the bin ``missing_bin``)."""
        return bool(np.any(self.codes == missing_bin))

    def start_trees(self, tree_seeds, rate):
        """Draw the bootstrap of each tree of ``tree_seeds`` and return the roots'
        local histograms (:func:`node_histograms`, one node per tree)."""
        self.trees = []
        roots = []
        for seed in tree_seeds:
            counts = poisson_counts(np.uint64(seed), self.global_rows, float(rate))
            # In the bag: a positive count and a positive sample weight.
            rows = np.flatnonzero((counts > 0) & (self.weight > 0)).astype(np.int32)
            # One byte a row (a Poisson(1) count above 255 has probability 1e-500).
            counts = counts.astype(np.uint8 if counts.max(initial=0) <= 255 else np.float64)
            node_of_row = np.zeros(self.n_rows, dtype=np.int32)
            self.trees.append([counts, node_of_row, rows])
            roots += self._histograms(rows, np.zeros(rows.shape[0], dtype=np.int64), 1,
                                      counts)
        return node_histograms(roots, self.n_channels)

    def _histograms(self, rows, row_slots, n_slots, counts):
        """``(cells, values)`` of slots ``0 .. n_slots - 1`` from ``rows`` (each in
        slot ``row_slots``), :data:`CHUNK_NODES` slots at a time."""
        order = np.argsort(row_slots, kind="stable")
        rows, row_slots = rows[order], row_slots[order]
        bounds = np.searchsorted(row_slots, np.arange(0, n_slots + CHUNK_NODES,
                                                      CHUNK_NODES))
        buffer = np.zeros((min(CHUNK_NODES, n_slots), self.n_features, self.n_bins,
                           2 * self.n_channels))
        flat = buffer.reshape(buffer.shape[0], -1, buffer.shape[-1])
        out = []
        for k, first in enumerate(range(0, n_slots, CHUNK_NODES)):
            lo, hi = bounds[k], bounds[k + 1]
            slot_histograms(buffer, self.codes, rows[lo:hi], row_slots[lo:hi],
                            np.int64(first), self.y, self.weight, counts,
                            self.classification)
            for j in range(min(CHUNK_NODES, n_slots - first)):
                cells = np.flatnonzero(flat[j, :, 0] > 0)
                values = flat[j, cells]
                flat[j, cells] = 0.0
                normalize_histograms(values)
                out.append((cells, values))
        return out

    def split_level(self, requests):
        """Apply one level's splits to each tree's rows and return the local histograms
        of the children asked for (:func:`node_histograms`, in request order).

        ``requests[t]`` is ``None`` (tree ``t`` has no split left) or a dict of arrays,
        one entry per split of the level: ``node``, ``feature``, ``split_bin``,
        ``missing_left``, ``is_categorical``, ``bitset``, ``left`` (the left child's id,
        the right's is the next), ``child_open`` (per child of the level, whether its
        rows are still wanted), ``build`` (the child id whose histogram is wanted, or
        -1)."""
        out = []
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
            row_slots = slot_of_node[node_of_row[rows]]
            wanted = row_slots >= 0
            out += self._histograms(rows[wanted], row_slots[wanted], build.shape[0],
                                    counts)
        return node_histograms(out, self.n_channels)

    def leaf_rows(self, t):
        """Tree ``t``'s in-bag rows and their final nodes (after its last level)."""
        counts, node_of_row, _ = self.trees[t]
        inbag = np.flatnonzero((counts > 0) & (self.weight > 0))
        return inbag, node_of_row[inbag], self.weight[inbag] * counts[inbag]

    def end_trees(self):
        self.trees = []
        return self.n_rows
