"""Node bookkeeping shared by the two growers: node tables, histogram slots, the frontier.

Both growers (:mod:`silva.engine.grower`, CART; :mod:`silva.engine.gradient_grower`,
boosting) grow a tree in one compiled call and keep the same books:

- a **node table**, one record per node (:data:`CART_NODE`, :data:`GRADIENT_NODE`, which
  share their first fields, :data:`NODE_FIELDS`), appended to and doubled in capacity as
  the tree grows (:func:`grow_records`, :func:`grow_rows`). A node's samples are the
  contiguous range ``[start, end)`` of the grower's sample order. A node whose best split
  is known but not yet applied holds it in the ``split_*`` fields; applying it fills
  ``feature``, ``threshold``, ``missing_left`` and ``is_categorical``, and a leaf keeps
  ``left == right == LEAF``;
- the **pending children**: the nodes about to be created (the root, then the two
  children of each split), as :data:`PENDING` records;
- a **pool of node histograms** with a free list of slots (:func:`take_slot`), and the
  subtraction schedule (:func:`schedule_children_histograms`): only the smaller child's
  histogram is built from its samples, the larger child's is its parent's minus it,
  computed in the parent's slot (Ke et al. 2017, LightGBM);
- the **table → Tree** arrays both tables hold alike (:func:`decision_arrays`);
- the **frontier** of nodes waiting to be split (:func:`push_frontier`,
  :func:`pop_frontier`): depth-first (a stack), best-first (a heap, the largest gain
  first: Friedman 2001, Shi 2007) or breadth-first (a queue).
"""

import heapq

import numpy as np

from silva.engine.array_copy import copy_rows, copy_vector
from silva.engine.jit import kernel

LEAF = -1  # children of a leaf
UNDEFINED = -2  # feature and threshold of a leaf, threshold of a categorical split

# The fields every node table starts with.
NODE_FIELDS = [
    ("left", np.int64),  # child ids, LEAF at leaves
    ("right", np.int64),
    ("feature", np.int64),  # the applied split (UNDEFINED at leaves)
    ("threshold", np.float64),  # x <= threshold goes left; UNDEFINED when categorical
    ("missing_left", np.bool_),
    ("is_categorical", np.bool_),
    ("depth", np.int64),
    ("start", np.int64),  # the node's samples: [start, end) of the grower's order
    ("end", np.int64),
    ("hist_slot", np.int64),  # the node's histogram in the pool, or -1
    ("split_gain", np.float64),  # the best split found, -inf when there is none
    ("split_feature", np.int64),
    ("split_bin", np.int64),  # the last bin going left (numeric splits)
    ("split_missing_left", np.bool_),
]

#: A node of a CART tree (:func:`silva.engine.grower.grow_tree`).
CART_NODE = np.dtype(NODE_FIELDS + [
    ("impurity", np.float64),
    ("n_samples", np.float64),  # the count channel's sum
    ("weighted_n", np.float64),  # the node's total sample weight
], align=True)

#: A node of a boosting tree (:func:`silva.engine.gradient_grower.grow_gradient_tree`).
GRADIENT_NODE = np.dtype(NODE_FIELDS + [
    ("gain", np.float64),  # the applied split's gain, 0 at leaves
    ("weight", np.float64),  # total sample weight
    ("sum_gradient", np.float64),
    ("sum_hessian", np.float64),
    ("value", np.float64),  # the Newton leaf value within [lower, upper]
    ("lower", np.float64),  # bounds from monotonic constraints
    ("upper", np.float64),
    ("left_weight", np.float64),  # the best split's left child: weight, G, H
    ("left_gradient", np.float64),
    ("left_hessian", np.float64),
    ("data_half", np.int64),  # which half of the workspace's index holds the samples
], align=True)

#: A node about to be created: the root, or one of the two children of a split.
PENDING = np.dtype([
    ("start", np.int64),
    ("end", np.int64),
    ("slot", np.int64),  # its histogram slot, or -1
    ("half", np.int64),  # gradient grower: the index half holding its samples
    ("lower", np.float64),  # gradient grower: monotonic bounds on its value
    ("upper", np.float64),
    ("needs_histogram", np.bool_),  # whether it may split (its split search reads one)
], align=True)

# Where schedule_children_histograms has the smaller child's histogram built.
SCRATCH = -1  # into the grower's scratch histogram (the child will not split)
NO_HISTOGRAM = -2  # nowhere: neither child needs one

# Frontier orders.
DEPTH_FIRST = 0  # a stack: the left child of the last split first (CART's recursion)
BEST_FIRST = 1  # the largest split gain first
BREADTH_FIRST = 2  # a queue: level by level (XGBoost's depthwise growth)


def decision_arrays(table):
    """The arrays of :class:`~silva.engine.tree.Tree` that both node tables hold alike
    (children, split feature and threshold, missing-value side, categorical flag), by
    Tree's names; the grower-specific ones (impurity, sample counts, weights, values)
    are each grower's caller's to add. Leaves keep ``UNDEFINED`` feature and threshold,
    as the growers write them. Field views, not copies: Tree makes each array
    contiguous."""
    return {
        "children_left": table["left"].astype(np.intp),
        "children_right": table["right"].astype(np.intp),
        "feature": table["feature"].astype(np.intp),
        "threshold": table["threshold"],
        "missing_go_to_left": table["missing_left"].astype(np.uint8),
        "is_categorical": table["is_categorical"],
    }


@kernel(inline="always")
def new_pending(n_channels):
    """Two pending-node records, reset, and their channel sums (2, n_channels)."""
    pending = np.zeros(2, dtype=PENDING)
    for p in range(2):
        pending[p].slot = -1
        pending[p].lower = -np.inf
        pending[p].upper = np.inf
    return pending, np.zeros((2, n_channels))


# Two pending records as new_pending resets them.
_PENDING_RESET = np.zeros(2, dtype=PENDING)
_PENDING_RESET["slot"] = -1
_PENDING_RESET["lower"] = -np.inf
_PENDING_RESET["upper"] = np.inf


def pending_nodes(n_channels):
    """:func:`new_pending` in numpy, for the CART grower's buffers, which are allocated
    in Python (see :func:`silva.engine.grower.new_buffers`)."""
    return _PENDING_RESET.copy(), np.zeros((2, n_channels))


@kernel(inline="always")
def link_child(table, parent, node, is_left):
    """Make ``node`` the left (``is_left``) or right child of ``parent``."""
    if is_left:
        table[parent].left = node
    else:
        table[parent].right = node


@kernel(inline="always")
def grow_records(table, n_rows):
    """``table`` with room for ``n_rows`` records: itself, or a copy of twice the capacity
    (or ``n_rows``), the new records zeroed."""
    capacity = table.shape[0]
    if n_rows <= capacity:
        return table
    grown = np.zeros(max(2 * capacity, n_rows), dtype=table.dtype)
    copy_vector(grown, table)
    return grown


@kernel(inline="always")
def grow_rows(array, n_rows):
    """The 2-D per-node ``array`` with room for ``n_rows`` rows, as :func:`grow_records`."""
    capacity = array.shape[0]
    if n_rows <= capacity:
        return array
    grown = np.zeros((max(2 * capacity, n_rows), array.shape[1]), dtype=array.dtype)
    copy_rows(grown, array)
    return grown


@kernel()
def aligned_histograms(n_slots, n_features, n_bins, n_channels):
    """Empty histograms (n_slots, n_features, n_bins, n_channels) on a 64-byte boundary, so
    that no 32-byte (feature, bin) entry straddles two cache lines (an unaligned pool made
    the vector updates of the gradient grower's histogram passes a quarter slower)."""
    size = n_slots * n_features * n_bins * n_channels
    buffer = np.empty(size + 8)
    offset = ((-buffer.ctypes.data) % 64) // 8
    return buffer[offset:offset + size].reshape((n_slots, n_features, n_bins, n_channels))


@kernel(inline="always")
def take_slot(pool, free_slots):
    """``(pool, slot)``: a free histogram slot, the pool doubled when none is left (the
    new slots go to the free list, lowest first out)."""
    if len(free_slots) > 0:
        return pool, free_slots.pop()
    n_slots = pool.shape[0]
    grown = aligned_histograms(2 * n_slots, pool.shape[1], pool.shape[2], pool.shape[3])
    for slot in range(n_slots):
        for f in range(pool.shape[1]):
            copy_rows(grown[slot, f], pool[slot, f])
    for slot in range(2 * n_slots - 1, n_slots, -1):
        free_slots.append(slot)
    return grown, n_slots


@kernel(inline="always")
def release_slot(row, free_slots):
    """Return a node's histogram slot to the pool (a node that will not be split)."""
    if row.hist_slot >= 0:
        free_slots.append(row.hist_slot)
        row.hist_slot = -1


@kernel(inline="always")
def schedule_children_histograms(pending, n_left, n_right, parent_slot, pool, free_slots):
    """Decide where the two children's histograms come from; ``pending[c].needs_histogram``
    says which children want one.

    The smaller child's histogram is built from its samples; when the larger child wants
    one too, it is the parent's minus the smaller's, computed in place in the parent's
    slot. Sets ``pending[c].slot`` and returns ``(pool, smaller, target, subtract)``:
    build the smaller child's histogram into slot ``target`` (:data:`SCRATCH`: the
    grower's scratch histogram, needed only for the subtraction), then, with
    ``subtract``, subtract it from the parent's slot; :data:`NO_HISTOGRAM`: build none
    (the parent's slot is freed).
    """
    pending[0].slot = -1
    pending[1].slot = -1
    smaller = 0 if n_left <= n_right else 1
    larger = 1 - smaller
    if parent_slot < 0:
        return pool, smaller, NO_HISTOGRAM, False
    if pending[larger].needs_histogram:
        target = SCRATCH
        if pending[smaller].needs_histogram:
            pool, target = take_slot(pool, free_slots)
            pending[smaller].slot = target
        pending[larger].slot = parent_slot
        return pool, smaller, target, True
    if pending[smaller].needs_histogram:
        # The parent's histogram is no longer needed: its slot takes the child's.
        pending[smaller].slot = parent_slot
        return pool, smaller, parent_slot, False
    free_slots.append(parent_slot)
    return pool, smaller, NO_HISTOGRAM, False


@kernel(inline="always")
def new_frontier():
    """An empty frontier: a list of ``(key, node)`` and the head of its queue."""
    # numba types a list by its first element: start with one, then empty it.
    items = [(0.0, 0)]
    items.pop()
    return items, np.zeros(1, dtype=np.int64)


@kernel(inline="always")
def push_frontier(items, head, order, gain, node):
    """Add ``node`` (whose best split gains ``gain``) to the frontier: a binary heap keyed
    by ``-gain`` for best-first (ties: the lower node id), a stack for depth-first (the
    last pushed pops first), a queue for breadth-first. A heap for every order cost
    forests of fully grown trees a fifth of their time."""
    if order == BEST_FIRST:
        heapq.heappush(items, (-gain, node))
    else:
        items.append((-gain, node))


@kernel(inline="always")
def pop_frontier(items, head, order):
    """The next node to split, or -1 when the frontier is empty."""
    if order == BEST_FIRST:
        if len(items) == 0:
            return -1
        return heapq.heappop(items)[1]
    if order == DEPTH_FIRST:
        if len(items) == 0:
            return -1
        return items.pop()[1]
    if head[0] >= len(items):
        return -1
    head[0] += 1
    return items[head[0] - 1][1]


@kernel(inline="always")
def new_array_stack(stack):
    """An empty depth-first frontier held in ``stack`` (int64, room for every node that
    may wait at once: a tree's open nodes hold disjoint samples, at least two each, so
    its sample count is enough) and its depth (a one-entry array)."""
    return stack, np.zeros(1, dtype=np.int64)


@kernel(inline="always")
def push_array_stack(stack, depth, order, gain, node):
    """:func:`push_frontier` for :func:`new_array_stack`'s frontier (depth-first alone:
    ``order`` and ``gain`` are not read).

    The list frontier counted references to its list at every push and pop (atomic
    operations, kept by numba across the grower's loop) and called the list's
    compiled helpers; a node id written to a preallocated array does neither."""
    stack[depth[0]] = node
    depth[0] += 1


@kernel(inline="always")
def pop_array_stack(stack, depth, order):
    """:func:`pop_frontier` for :func:`new_array_stack`'s frontier: the node pushed
    last, or -1 when none is left."""
    if depth[0] == 0:
        return np.int64(-1)
    depth[0] -= 1
    return stack[depth[0]]
