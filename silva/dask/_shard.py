"""One worker's rows for a distributed boosting fit: a Dask actor that holds them.

Loading reads the data three times, partition by partition, in tasks on the workers,
so that raw rows never sit in a worker's memory beyond the one partition a task reads:
:func:`describe_partition` (checks, row counts, labels), :func:`sample_partition` (the
rows that place the bin edges) and :func:`bin_partition` (bin codes and encoded y). A
:class:`Shard` then lives on one worker for the whole fit (``client.submit(Shard, ...,
actor=True)``), built from that worker's binned partitions, and keeps what the engine's
single-machine loop keeps for the whole data: the bin codes (in the grower's workspace,
:func:`silva.engine.gradient_histogram.make_workspace`), the raw predictions, the
gradients and hessians, and the current tree's partition of its row positions. Nothing
but histograms, split counts and a few numbers leaves the shard.

The driver (:mod:`silva.dask._grower`) calls the shard's methods; each call is one round
trip. With the reduction between the workers (``histogram_reduction="workers"``) the
shards also call each other inside a round trip: :meth:`Shard.connect` gives each the
others' handles and a range of features to own, :meth:`Shard.split_reduced` and
:meth:`Shard.start_tree_reduced` sum the owned features' histograms from every shard
(:meth:`Shard.histogram_slice`, a coroutine served from the worker's event loop) and
search them. The shard runs the engine's compiled kernels on its rows, unchanged:
:func:`~silva.engine.gradient_histogram.node_histogram` for a node's local histogram and
:func:`~silva.engine.partition.partition` to apply a split. Its histogram passes are
serial (``threads=1``: the same row blocks, one after the other): a Dask worker's
threads are its parallelism, and in a threaded ``LocalCluster`` several workers share one
process, where concurrent parallel regions of numba's default threading layer are not
allowed.
"""

import asyncio
import time
from collections import namedtuple

import numpy as np

from silva.engine import gradient_histogram
from silva.engine.gradient_histogram import COUNT_CHANNEL, N_CHANNELS, WEIGHT_CHANNEL
from silva.engine.partition import partition

#: How long a shard waits for a peer's histograms in the reduction between the workers
#: before it gives up (the driver then finds out which worker is gone).
PEER_WAIT_SECONDS = 120.0

#: What the client learns of one partition before the bin edges: its position, its row
#: count (rows of positive weight), its labels and their weighted counts (classifiers) or
#: the weighted sum, minimum and maximum of y (regressors), the largest code of each
#: categorical feature (-1: none), its total weight and whether every weight is 1.
#: ``n_all_rows`` counts every row (zero weights included: global row indices are
#: positions in the whole data) and ``label_rows`` the rows of each label (classifiers,
#: for "balanced" class weights).
PartitionSummary = namedtuple("PartitionSummary", [
    "index", "n_rows", "labels", "label_counts", "y_sum", "y_min", "y_max",
    "largest_codes", "weight_sum", "unit_weights", "n_all_rows", "label_rows"])

#: One partition binned on its worker: its position, feature-major bin codes
#: (n_features, n_rows), its target (float64; class indices as float32 for classifiers,
#: exact) and its sample weights (None when every one is 1: the shard makes them).
BinnedPartition = namedtuple("BinnedPartition", ["index", "codes", "y", "weight"])

#: A split the shard applies to its rows of ``node``: the split's feature, last left bin,
#: missing-value side, category flag and left-category bitset; ``left`` and ``right`` are
#: the children's node ids; ``histogram_child`` the child (0 left, 1 right) whose local
#: histogram the driver wants back, or -1 for none.
SplitRequest = namedtuple("SplitRequest", [
    "node", "feature", "split_bin", "missing_left", "is_categorical", "bitset", "left",
    "right", "histogram_child"])

#: What a shard needs to search its own slice of the features when histograms are
#: reduced between the workers: the fit's per-feature bin counts, category flags (uint8)
#: and monotone directions (all features), the missing bin, the split-search
#: parameters, whether bounds apply, the bitset words per category split, and whether
#: the fit has no categorical feature (the engine's numeric-only split finder).
OwnerSearch = namedtuple("OwnerSearch", [
    "n_value_bins", "is_categorical", "monotonic", "missing_bin", "params", "constrained",
    "n_words", "numeric"])

#: A node the feature owners search: its id, channel sums (4), output bounds and its
#: candidate features (global indices, increasing), drawn by the driver.
NodeSearch = namedtuple("NodeSearch", ["node", "sums", "lower", "upper", "candidates"])

#: One owner's best split of a node over its features: the children's score (what the
#: engine's search maximises; ties go to the lower feature), the gain, the (global)
#: feature, last left bin, missing side, left channel sums (count, gradient, hessian),
#: left weight and the left-category bitset (None for a numeric feature).
OwnerSplit = namedtuple("OwnerSplit", [
    "score", "gain", "feature", "split_bin", "missing_left", "left_sums", "left_weight",
    "bitset"])


def widen_channels(total):
    """A summed histogram with all four channels: shards of a fit with unit hessians and
    weights send the gradient and hessian channels only, and the count and weight
    channels are then the hessian's (as the engine's two-lane passes widen them)."""
    if total.shape[-1] == N_CHANNELS:
        return total
    full = np.empty(total.shape[:-1] + (N_CHANNELS,))
    full[..., 1:3] = total
    full[..., COUNT_CHANNEL] = total[..., 1]
    full[..., WEIGHT_CHANNEL] = total[..., 1]
    return full


def feature_owners(n_features, n_shards):
    """``n_shards + 1`` bounds: shard ``k`` owns features ``bounds[k]:bounds[k + 1]``
    (contiguous ranges of near-equal size; some empty when shards outnumber features)."""
    return np.array([k * n_features // n_shards for k in range(n_shards + 1)],
                    dtype=np.int64)


def validated_partition(template, index, X_part, y_part, w_part, classifier,
                        drop_zero_weight=True):
    """``(X, y, weight)`` of one partition, checked on the worker that computes it: X
    through the template estimator's own ``_prepare_X`` (feature count and names against
    the collection's), categorical codes, y one-dimensional with X's length (float64 for
    a regressor), the sample weights (``w_part``, None: ones) by the estimators' own
    check. Rows of zero weight are dropped, as the single-machine fit drops them. Errors
    name the partition. An empty partition gives empty arrays (its columns are not
    checked: the estimator's checks refuse 0 rows)."""
    from silva import _input

    owner = type(template).__name__
    if len(X_part) == 0:
        if len(y_part) != 0:
            raise ValueError(f"{owner}: partition {index} of X is empty but partition "
                             f"{index} of y has {len(y_part)} rows: X and y must be "
                             "partitioned alike.")
        return np.empty((0, template.n_features_in_)), np.empty(0), np.empty(0)
    try:
        X = template._prepare_X(X_part, reset=False)
    except ValueError as error:
        raise ValueError(f"{owner}: X partition {index} does not match the collection's "
                         f"columns: {error}") from None
    _input.check_categorical_codes(X, template.is_categorical_, template.max_bins,
                                   getattr(template, "feature_names_in_", None))
    y = np.asarray(y_part)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"{owner}: partition {index} of X has {X.shape[0]} rows but "
                         f"partition {index} of y has shape {y.shape}: X and y must be "
                         "partitioned alike (same number of partitions, same rows in "
                         "each).")
    if not classifier:
        try:
            y = _input.regression_target(y)
        except ValueError as error:
            raise ValueError(f"y partition {index}: {error}") from None
    weight = np.ones(X.shape[0])
    if w_part is not None:
        weight = np.asarray(w_part, dtype=np.float64).reshape(-1)
        try:
            if not (weight.shape == (X.shape[0],) and np.all(weight == 0.0)):
                weight = _input.check_sample_weight(weight, X.shape[0])
        except ValueError as error:
            raise ValueError(f"sample_weight partition {index}: {error}") from None
        positive = weight > 0
        if drop_zero_weight and not positive.all():
            X, y, weight = X[positive], y[positive], weight[positive]
    return X, y, weight


def describe_partition(template, index, X_part, y_part, w_part, classifier):
    """The :class:`PartitionSummary` of one partition (first pass over the data)."""
    X, y, weight = validated_partition(template, index, X_part, y_part, w_part,
                                       classifier, drop_zero_weight=False)
    # The labels of every row, zero weights included (the single-machine estimator takes
    # its classes before it drops them); everything else from the rows that take part.
    all_labels, label_rows = (np.unique(y, return_counts=True) if classifier
                              else (None, None))
    n_all_rows = X.shape[0]
    positive = weight > 0
    X, y, weight = X[positive], y[positive], weight[positive]
    columns = X[:, np.flatnonzero(template.is_categorical_)]
    present = ~np.isnan(columns)
    largest = np.max(np.where(present, columns, -1.0), axis=0, initial=-1.0)
    n_rows = X.shape[0]
    weight_sum = float(np.sum(weight))
    unit = bool(np.all(weight == 1.0))
    if classifier:
        codes = np.searchsorted(all_labels, y)
        counts = np.bincount(codes, weights=weight, minlength=len(all_labels))
        return PartitionSummary(index, n_rows, all_labels, counts, 0.0, np.inf, -np.inf,
                                largest, weight_sum, unit, n_all_rows, label_rows)
    if n_rows == 0:
        return PartitionSummary(index, 0, None, None, 0.0, np.inf, -np.inf, largest, 0.0,
                                unit, n_all_rows, None)
    return PartitionSummary(index, n_rows, None, None, float(np.sum(weight * y)),
                            float(y.min()), float(y.max()), largest, weight_sum, unit,
                            n_all_rows, None)


def sample_partition(template, index, X_part, y_part, w_part, classifier, n_wanted, seed):
    """``n_wanted`` rows (of positive weight) of one partition, drawn without
    replacement (all of them when it has no more), for the bin edges (second pass)."""
    X, _, _ = validated_partition(template, index, X_part, y_part, w_part, classifier)
    if n_wanted >= X.shape[0]:
        return X
    rng = np.random.default_rng(seed)
    return X[np.sort(rng.choice(X.shape[0], n_wanted, replace=False))]


def bin_partition(template, index, X_part, y_part, w_part, classifier, binner, classes):
    """One partition binned with the fit's binner, its target encoded (third pass): the
    raw rows live only while this task runs."""
    X, y, weight = validated_partition(template, index, X_part, y_part, w_part,
                                       classifier)
    # Held until the shard has copied it: kept small (class indices fit float32 exactly;
    # unit weights are not stored).
    y = (np.searchsorted(classes, y).astype(np.float32) if classes is not None
         else y.astype(np.float64))
    codes = binner.transform(X)
    del X
    return BinnedPartition(index, codes, y, None if np.all(weight == 1.0) else weight)


class Shard:
    """A worker's rows and per-row state during one fit (see the module docstring)."""

    def __init__(self, *parts):
        parts = [p for p in parts if p.y.shape[0] > 0]
        self.partition_indices = [p.index for p in parts]
        self.partition_rows = [p.y.shape[0] for p in parts]
        # Each array allocated once at its final size and filled part by part (no
        # concatenated copy next to it); the parts are released once the shard runs.
        self.n_rows = int(sum(self.partition_rows))
        self.n_features = parts[0].codes.shape[0]
        self.codes = np.empty((self.n_features, self.n_rows), dtype=parts[0].codes.dtype)
        self.y = np.empty(self.n_rows)
        self.weight = np.empty(self.n_rows)
        at = 0
        for p in parts:
            end = at + p.y.shape[0]
            self.codes[:, at:end] = p.codes
            self.y[at:end] = p.y
            self.weight[at:end] = 1.0 if p.weight is None else p.weight
            at = end

    def setup(self, missing_bin, loss, init_raw, use_hessian, two_lanes):
        """The grower's workspace on the codes, and the per-row state."""
        self.missing_bin = int(missing_bin)
        self.n_bins = self.missing_bin + 1
        self.workspace = gradient_histogram.make_workspace(self.codes, self.n_bins, 1)
        self.codes = None  # the workspace holds them (its ``columns``)
        self.loss = loss
        n_outputs = loss.n_outputs
        self.raw = np.asfortranarray(np.tile(init_raw, (self.n_rows, 1)))
        self.grad = np.empty((self.n_rows, n_outputs), order="F")
        self.hess = np.empty((self.n_rows, n_outputs), order="F")
        self.use_hessian = bool(use_hessian)
        self.two_lanes = bool(two_lanes)
        self.scratch = np.zeros_like(self.workspace.histograms[0])
        self.nodes = {}
        self.column = 0
        return self.n_rows

    def state_bytes(self):
        """Bytes of this shard's per-row arrays (sample records, feature-major codes, row
        positions, raw predictions, gradients, hessians, y, weights) and its rows."""
        w = self.workspace
        arrays = (w.stats, w.columns, w.index, self.raw, self.grad, self.hess, self.y,
                  self.weight)
        return sum(a.nbytes for a in arrays), self.n_rows

    def restore(self, history, n_before_iteration, iteration):
        """Bring a shard started in the middle of a fit (after a lost worker) to the
        state of the others: the raw predictions of the trees ``history`` (``(column,
        table, bitsets, values)`` each, in order), the gradients taken after the first
        ``n_before_iteration`` of them (the current iteration's start). The trees are
        walked on the bin codes (:func:`silva.engine.leaf_values.add_leaf_values_binned`):
        each row gets the same additions, in the same order, as the other shards'."""
        from silva.engine.leaf_values import leaf_updates

        add_binned = leaf_updates(False)[1]
        rows = np.arange(self.n_rows, dtype=np.int64)
        for j, (column, table, bitsets, values) in enumerate(history):
            if j == n_before_iteration:
                self._gradients(iteration)
            add_binned(self.raw, column, rows, self.workspace.codes, table, bitsets,
                       self.missing_bin, values)
        if n_before_iteration >= len(history):
            self._gradients(iteration)
        return self.n_rows

    def _gradients(self, iteration):
        self.loss.update_iteration(self.y, self.raw, self.weight)
        self.loss.gradient_hessian(self.y, self.raw, self.grad, self.hess,
                                   iteration=iteration)

    # --------------------------------------------------------------- per tree
    def start_tree(self, column, iteration, pending_splits, leaf_update):
        """Begin the tree on output ``column``: first finish the previous tree (apply its
        ``pending_splits``, then add its leaf values, ``leaf_update = (column, nodes,
        values)``), compute the gradients when ``iteration`` is not None (a new
        iteration), and return the root's local histogram."""
        self._apply_splits(pending_splits)
        if leaf_update is not None:
            self._add_leaf_values(*leaf_update)
        if iteration is not None:
            self._gradients(iteration)
        self.column = column
        index = self.workspace.index
        index[0, :] = np.arange(self.n_rows, dtype=np.int32)
        self.nodes = {0: (0, 0, self.n_rows)}
        return self._histogram(0, 0, self.n_rows, fill=True)

    def split(self, requests):
        """Apply the splits ``requests`` (:class:`SplitRequest`) to this shard's rows, in
        order; return each one's local left count and the local histograms asked for
        (one array, stacked in request order)."""
        n_left = self._apply_splits(requests)
        wanted = []
        for request in requests:
            if request.histogram_child >= 0:
                child = request.left if request.histogram_child == 0 else request.right
                half, start, end = self.nodes[child]
                wanted.append(self._histogram(half, start, end, fill=False))
        histograms = (np.stack(wanted) if wanted
                      else np.empty((0, self.n_features, self.n_bins,
                                     2 if self.two_lanes else 4)))
        return n_left, histograms

    def finish(self, pending_splits, leaf_update):
        """The last tree's pending splits and leaf values (keeps the raw predictions
        whole, for a fit that continues)."""
        self._apply_splits(pending_splits)
        if leaf_update is not None:
            self._add_leaf_values(*leaf_update)
        return self.n_rows

    def leaf_gradient_sums(self, pending_splits, column, leaves):
        """Apply ``pending_splits``; return each leaf's ``(sum w g, sum w h)`` over this
        shard's rows, on gradient column ``column`` (the true hessian)."""
        self._apply_splits(pending_splits)
        index = self.workspace.index
        out = np.zeros((len(leaves), 2))
        for k, node in enumerate(leaves):
            half, start, end = self.nodes[node]
            rows = index[half, start:end]
            w = self.weight[rows]
            out[k, 0] = np.dot(w, self.grad[rows, column])
            out[k, 1] = np.dot(w, self.hess[rows, column])
        return out

    # ------------------------------------- histograms reduced between the workers
    # LightGBM's data-parallel reduce-scatter (Meng et al. 2016, "A communication-
    # efficient parallel algorithm for decision tree", section 3; LightGBM's docs,
    # "Parallel Learning"): shard k owns a contiguous range of the features. After it
    # builds its local histograms it publishes them, fetches every other shard's part
    # of its own range, sums the parts in shard order (the order the driver summed
    # them in, so the totals are the same numbers on every run), keeps the totals of
    # the nodes that may split later (the subtraction trick needs the parent's), and
    # searches its features with the engine's split finder. Only each owner's best
    # candidate per node goes to the driver.
    def connect(self, peers, rank, bounds, owner):
        """Join the reduction: ``peers`` are every shard's actor handles in rank order
        (this one at ``rank``), ``bounds`` the features' owners
        (:func:`feature_owners`), ``owner`` an :class:`OwnerSearch`."""
        from distributed import get_worker
        from distributed.actor import Actor

        from silva.engine.gradient_grower import new_search_buffers
        from silva.engine.gradient_splitting import find_best_split, numeric_split_finder

        # Handles bound to this worker, made here in the actor's thread: a handle
        # unpickled with the call's arguments may be bound to another worker of a
        # threaded cluster, and would then call its peer's object in place.
        worker = get_worker()
        self.peers = [Actor(type(self), peer._address, peer.key, worker=worker)
                      for peer in peers]
        self.rank = int(rank)
        lo, hi = int(bounds[rank]), int(bounds[rank + 1])
        self.owned = (lo, hi)
        self.owner = owner
        self.owner_bins = np.ascontiguousarray(owner.n_value_bins[lo:hi])
        self.owner_categorical = np.ascontiguousarray(owner.is_categorical[lo:hi])
        self.owner_monotonic = np.ascontiguousarray(owner.monotonic[lo:hi])
        self.owner_buffers = new_search_buffers(max(1, hi - lo), self.n_bins,
                                                owner.n_words, np.uint64(0))
        self.find_split = numeric_split_finder() if owner.numeric else find_best_split
        self.published = {}
        self.owned_histograms = {}
        self.aborted = False
        return self.rank

    async def abort(self):
        """Stop waiting for peers (the driver found one lost): a coroutine, so that it
        runs while this shard's call waits in the actor's thread. Until the next
        :meth:`connect`, every wait for a peer fails at once."""
        self.aborted = True

    async def histogram_slice(self, tag, lo, hi):
        """Features ``lo:hi`` of the local histograms this shard published for round
        ``tag`` (a coroutine: it runs on the worker's event loop, so peers get it while
        this shard's own call, in the actor's thread, waits for theirs)."""
        deadline = time.monotonic() + PEER_WAIT_SECONDS
        while tag not in self.published:
            if time.monotonic() > deadline:
                raise TimeoutError(f"shard {self.rank} never published round {tag}")
            await asyncio.sleep(0.0002)
        published = self.published[tag]
        if isinstance(published, Exception):
            raise RuntimeError(f"shard {self.rank} failed in round {tag}: "
                               f"{published!r}")
        return np.ascontiguousarray(published[:, lo:hi])

    def start_tree_reduced(self, column, iteration, pending_splits, leaf_update,
                           root_candidates, tag):
        """:meth:`start_tree`, then the root's histogram reduced between the shards:
        ``(root sums, this owner's best root split or None, bytes received from
        peers)``. Every owner also sums feature 0's part (a few kB) to take the root's
        channel sums from its bins, as the single-machine grower does."""
        try:
            local = self.start_tree(column, iteration, pending_splits, leaf_update)
            self.owned_histograms = {}
        except Exception as error:
            self.published = {tag: error}
            raise
        totals, received = self._reduce(tag, local[None], self.owned)
        if self.owned[0] == 0 and self.owned[1] > 0:
            first = totals[0, :1]
        else:
            first, more = self._reduce(tag, None, (0, 1))
            first = first[0]
            received += more
        root_sums = np.cumsum(first[0], axis=0)[-1].copy()
        root = totals[0]
        self.owned_histograms[0] = root
        found = self._search(root, NodeSearch(0, root_sums, -np.inf, np.inf,
                                              root_candidates))
        return root_sums, found, received

    def split_reduced(self, requests, searches, tag):
        """:meth:`split` with the histograms reduced between the shards: ``(left counts,
        best split per searched child, in request then child order, bytes received from
        peers)``. ``searches[k]`` is, for a request that builds a histogram, a pair
        (left, right) of :class:`NodeSearch` or None (a child that will not split)."""
        try:
            n_left, local = self.split(requests)
        except Exception as error:
            self.published = {tag: error}
            raise
        totals, received = self._reduce(tag, local, self.owned)
        found = []
        j = 0
        for request, search in zip(requests, searches, strict=True):
            if request.histogram_child < 0:
                continue
            built = request.histogram_child
            children = [None, None]
            children[built] = totals[j]
            j += 1
            parent = self.owned_histograms.pop(request.node)
            parent -= children[built]  # the larger child: parent minus the smaller
            children[1 - built] = parent
            for c, child in enumerate((request.left, request.right)):
                if search[c] is not None:
                    self.owned_histograms[child] = children[c]
                    found.append(self._search(children[c], search[c]))
        return n_left, found, received

    def _reduce(self, tag, local, features):
        """Publish ``local`` (stacked local histograms; None: published already) for
        round ``tag`` and sum every shard's part of ``features`` (lo, hi) in shard
        order: ``(totals with four channels, bytes received from peers)``."""
        if local is not None:
            self.published = {tag: local}  # older rounds are done: every peer answered
        lo, hi = features
        pending = [None if r == self.rank else peer.histogram_slice(tag, lo, hi)
                   for r, peer in enumerate(self.peers)]
        total = None
        received = 0
        for future in pending:
            if future is None:
                part = self.published[tag][:, lo:hi]
            else:
                part = self._await_peer(future)
                received += part.nbytes
            if total is None:
                total = np.array(part, dtype=np.float64, copy=True)
            else:
                total += part
        return widen_channels(total), received

    def _await_peer(self, future):
        """A peer's answer; the wait, in slices, ends early when the driver aborts the
        round (a lost peer's answer may otherwise take minutes to fail)."""
        deadline = time.monotonic() + PEER_WAIT_SECONDS
        while True:
            try:
                return future.result(timeout=0.5)
            except TimeoutError:
                if self.aborted:
                    raise RuntimeError(f"shard {self.rank}: the driver stopped the "
                                       "reduction (a peer was lost)") from None
                if time.monotonic() > deadline:
                    raise

    def _search(self, hist, search):
        """This owner's best split of ``search``'s node over its own candidates (None:
        no candidate of its features passes the split rules)."""
        from silva.engine.gradient_grower import left_weight

        lo, hi = self.owned
        candidates = np.asarray(search.candidates, dtype=np.int64)
        mine = candidates[(candidates >= lo) & (candidates < hi)] - lo
        if mine.size == 0:
            return None
        b = self.owner_buffers
        b.candidates[:mine.size] = mine
        owner = self.owner
        gain, feature, split_bin, missing_left = self.find_split(
            hist, b.candidates, np.int64(mine.size), self.owner_bins,
            self.owner_categorical, self.owner_monotonic, np.int64(owner.missing_bin),
            np.asarray(search.sums, dtype=np.float64), owner.params,
            np.float64(search.lower), np.float64(search.upper), bool(owner.constrained),
            b.feature_score, b.feature_bin, b.feature_missing_left, b.feature_left,
            b.feature_bitset, b.scan_scratch)
        if feature < 0:
            return None
        categorical = self.owner_categorical[feature] != 0
        weight = left_weight(hist[feature], self.owner_bins[feature],
                             np.int64(owner.missing_bin), np.int64(split_bin),
                             bool(missing_left), bool(categorical),
                             b.feature_bitset[feature])
        return OwnerSplit(float(b.feature_score[feature]), float(gain), lo + int(feature),
                          int(split_bin), bool(missing_left), b.feature_left[feature].copy(),
                          float(weight),
                          b.feature_bitset[feature].copy() if categorical else None)

    # ------------------------------------------------------------------ steps
    def _apply_splits(self, requests):
        n_left = np.zeros(len(requests), dtype=np.int64)
        if not requests:
            return n_left
        columns = self.workspace.columns
        work_index = self.workspace.index
        for k, request in enumerate(requests):
            half, start, end = self.nodes.pop(request.node)
            left = partition(columns[request.feature], work_index, half, start, end,
                             self.missing_bin, request.split_bin, request.missing_left,
                             request.is_categorical, request.bitset)
            n_left[k] = left
            self.nodes[request.left] = (1 - half, start, start + left)
            self.nodes[request.right] = (1 - half, start + left, end)
        return n_left

    def _histogram(self, half, start, end, fill):
        hist = self.scratch
        workspace = self.workspace
        statistics = gradient_histogram.GradientStatistics(
            self.grad, self.hess, np.int64(self.column), self.weight,
            np.bool_(self.use_hessian), np.bool_(self.two_lanes))
        parts = workspace.histograms[1:]
        gradient_histogram.node_histogram(
            hist, hist, parts, workspace.codes, workspace.index[half], workspace.stats,
            np.int64(start), np.int64(end), np.int64(self.n_features), np.bool_(False),
            np.int64(1), np.bool_(self.two_lanes), statistics, np.bool_(fill))
        # Only the bins that exist travel (the workspace pads each feature's bins), and
        # with unit hessians and weights only the gradient and hessian channels (the
        # count and weight channels are the hessian's): half the bytes.
        if self.two_lanes:
            return np.ascontiguousarray(hist[:, :self.n_bins, 1:3])
        return np.ascontiguousarray(hist[:, :self.n_bins, :])

    def _add_leaf_values(self, column, nodes, values):
        target = self.raw[:, column]
        index = self.workspace.index
        for node, value in zip(nodes, values, strict=True):
            half, start, end = self.nodes[node]
            target[index[half, start:end]] += value
