"""The distributed tree grower: one boosting tree over the shards of a Dask cluster.

The driver (this module, plain Python) grows the tree; the shards
(:class:`silva.dask._shard.Shard`, one Dask actor per worker) hold the rows. Only
histograms, split descriptions and counts travel. The steps mirror the engine's compiled
grower, :func:`silva.engine.gradient_grower.grow_gradient_tree`, one for one, so that
with the same bin edges the distributed tree is the single-machine tree:

- the root: every shard computes its local root histogram (filling its rows' gradient
  channels on the way); the driver sums them and takes the root's channel sums from
  feature 0's bins;
- a node's split: :func:`silva.engine.gradient_splitting.find_best_split` on the summed
  histogram, over the candidates of
  :func:`silva.engine.gradient_grower.node_candidates` (the same per-node feature draws
  from the tree's seed);
- growth order: best-first (a heap keyed by ``-gain``, ties to the lower node id) or
  depthwise (a FIFO queue), split until ``max_leaf_nodes`` leaves or no positive gain;
- children: channel sums from the split scan's left sums, value bounds by LightGBM's
  basic monotone method, the smaller child's histogram built by the shards and the
  larger's the parent's minus it (the subtraction trick), on the driver;
- node values: the Newton weight ``-T(G)/(H + lambda)`` clipped as the engine clips it
  (:func:`silva.engine.gradient_splitting.leaf_output`).

Round trips (each one call to every shard at once, answered in parallel):

- one to start the tree (it also carries the previous tree's deferred splits and leaf
  values, and at the first tree of an iteration computes the gradients);
- leaf-wise growth: one per split whose children need a histogram (the last splits of
  a tree, whose children will not be split, are deferred to the next call);
- depthwise growth: one per level (every split of the level in one call);
- ``boosting="gradient"``: one more, for the leaves' gradient and hessian sums.

So a 31-leaf leaf-wise tree costs at most 31 round trips, a depth-6 depthwise tree at most
7. The summation order over rows differs from the single-machine fit (shard by shard),
so sums agree to rounding, not bit for bit.

With ``reduce_on_workers`` (``histogram_reduction="workers"``) the round trips are the
same calls, answered differently: inside each, every shard publishes its local
histograms, fetches the other shards' parts of the features it owns (actor to actor,
in parallel), sums them in shard order and searches its features
(:meth:`silva.dask._shard.Shard.split_reduced`); the driver draws each node's candidate
features (as the single-machine grower, in the same order) and sends them with the
split, and picks the best of the owners' answers. Nothing but split descriptions,
candidates and counts reaches the driver.
"""

import heapq
import pickle
import time
from concurrent.futures import CancelledError

import numpy as np

from silva.dask._shard import (
    NodeSearch,
    OwnerSearch,
    SplitRequest,
    feature_owners,
    widen_channels,
)
from silva.engine.binning import ALL_VALUE_BINS
from silva.engine.gradient_grower import left_weight, new_search_buffers, node_candidates
from silva.engine.gradient_histogram import COUNT_CHANNEL, N_CHANNELS, WEIGHT_CHANNEL
from silva.engine.gradient_splitting import (
    L1,
    L2,
    MAX_DELTA_STEP,
    MIN_CHILD_WEIGHT,
    MIN_SAMPLES_LEAF,
    find_best_split,
    leaf_output,
    numeric_split_finder,
)
from silva.engine.nodes import GRADIENT_NODE, LEAF, UNDEFINED

#: How often a wait for a shard's answer checks that its worker is still there.
LIVENESS_CHECK_SECONDS = 2.0


class WorkerLostError(RuntimeError):
    """A worker that held a shard failed or left during a fit (``address``). The fit
    recovers (its partitions are binned again on the other workers and the tree is
    grown again) or, with ``on_worker_loss="raise"``, stops: never a model grown on part
    of the rows."""

    def __init__(self, message, address):
        super().__init__(message)
        self.address = address


class Cluster:
    """The fit's shards and how to call them all at once; counts round trips and the
    bytes of histograms that come back."""

    def __init__(self, client, shards, addresses, actor_futures, partitions):
        self.client = client
        self.shards = shards
        self.addresses = addresses
        self.actor_futures = actor_futures  # keep the actors alive
        self.partitions = partitions  # per shard, the partition indices it holds
        self.recoveries = 0
        self.round_trips = 0
        self.histogram_bytes = 0
        self.bytes_between_workers = 0
        self.reducing = False  # whether the shards wait for each other (connect)
        self.wait_seconds = 0.0
        self.current_tree = None  # for error messages: the tree being grown

    def call(self, method, *args, what=""):
        """``method(*args)`` on every shard, in parallel; their answers in shard order."""
        return self.call_each(method, [args] * len(self.shards), what=what)

    def call_each(self, method, shard_args, what=""):
        """``method(*shard_args[i])`` on shard ``i``, all in parallel; the answers."""
        t0 = time.perf_counter()
        pending = []
        for shard, args in zip(self.shards, shard_args, strict=True):
            try:
                pending.append(getattr(shard, method)(*args))
            except Exception as error:  # noqa: BLE001 - an actor whose worker is gone
                pending.append(error)
        answers = []
        failed = None
        # Every answer is awaited, even after a failure, so that the shards left have
        # all finished the call when the error is raised (recovery relies on it).
        for address, future in zip(self.addresses, pending, strict=True):
            try:
                if isinstance(future, Exception):
                    raise future
                answers.append(self._await(address, future))
            except Exception as error:  # noqa: BLE001 - sorted out below
                if failed is None:
                    failed = (address, error)
                    self._abort_reduction(address)
        if failed is not None:
            address, error = failed
            gone = self._gone()
            if gone:
                # With the reduction between the workers, a shard whose peer died fails
                # too: name the worker that is gone, not the one that complained.
                address = gone[0]
            elif not self._lost(address, error):
                raise error  # the shard's own error (a bug, bad data), not a lost worker
            where = "" if self.current_tree is None else f" at tree {self.current_tree}"
            raise WorkerLostError(
                f"the Dask worker {address} failed or was lost during the fit{where} "
                f"({what or method}): {type(error).__name__}: {error}. Its rows lived "
                "only in that worker's memory: the fit does not go on with part of the "
                "data.", address) from error
        self.round_trips += 1
        self.wait_seconds += time.perf_counter() - t0
        return answers


    def reduce(self, method, args, combine, what=""):
        """``method(*args)`` on every shard, run by a task on the shard's worker, and
        the answers combined pairwise by ``combine`` tasks (a tree reduction between
        the workers, ``ceil(log2(n_shards))`` levels deep): only the total comes to
        the client. Each answer is ``(value, bytes moved between workers so far)``."""
        from distributed import wait

        t0 = time.perf_counter()
        level = [self.client.submit(_actor_call, shard, method, args, workers=[address],
                                    allow_other_workers=False, pure=False)
                 for shard, address in zip(self.shards, self.addresses, strict=True)]
        while len(level) > 1:
            pairs = [self.client.submit(combine, level[k], level[k + 1], pure=False)
                     for k in range(0, len(level) - 1, 2)]
            level = pairs + ([level[-1]] if len(level) % 2 else [])
        try:
            while True:
                try:
                    wait(level, timeout=LIVENESS_CHECK_SECONDS)
                    answer = level[0].result()
                    break
                except TimeoutError:
                    gone = self._gone()
                    if gone:
                        raise OSError(f"the worker {gone[0]} left the cluster") from None
        except Exception as error:  # noqa: BLE001 - sorted out below
            gone = self._gone()
            if not gone:
                raise
            where = "" if self.current_tree is None else f" at tree {self.current_tree}"
            raise WorkerLostError(
                f"the Dask worker {gone[0]} failed or was lost during the fit{where} "
                f"({what or method}): {type(error).__name__}: {error}. Its rows lived "
                "only in that worker's memory: the fit does not go on with part of the "
                "data.", gone[0]) from error
        self.round_trips += 1
        self.wait_seconds += time.perf_counter() - t0
        return answer

    def _gone(self):
        """The shards' addresses the scheduler no longer lists."""
        try:
            workers = self.client.scheduler_info()["workers"]
        except Exception:  # noqa: BLE001 - no scheduler: every worker is gone
            return list(self.addresses)
        return [a for a in self.addresses if a not in workers]

    def _await(self, address, future):
        """The answer of the shard on ``address``. An actor's call to a worker that was
        closed (rather than killed: no connection breaks) can wait forever, so the wait
        is cut into slices, and a worker the scheduler no longer lists is lost."""
        while True:
            try:
                return future.result(timeout=LIVENESS_CHECK_SECONDS)
            except TimeoutError:
                gone = self._gone()
                if address in gone:
                    raise OSError(f"the worker {address} left the cluster") from None
                if gone:
                    # This shard waits for a peer that is gone: let it fail now.
                    self._abort_reduction(gone[0])

    def _abort_reduction(self, lost_address):
        """Tell the shards other than ``lost_address``'s to stop waiting for their
        peers' histograms (only while they reduce between themselves)."""
        if not self.reducing:
            return
        for shard, address in zip(self.shards, self.addresses, strict=True):
            if address != lost_address:
                try:
                    shard.abort()
                except Exception:  # noqa: BLE001, S110 - that worker is gone too
                    pass

    def _lost(self, address, error):
        """Whether ``error`` of the shard on ``address`` means its worker is gone: a
        broken connection, or the scheduler no longer lists the worker (distributed
        raises a plain RuntimeError for an actor whose worker it has removed)."""
        if isinstance(error, OSError | CancelledError):
            return True
        try:
            return address not in self.client.scheduler_info()["workers"]
        except Exception:  # noqa: BLE001 - no scheduler either: nothing is left
            return True

    def connect(self, owner):
        """Start the reduction between the workers (``owner``: an
        :class:`~silva.dask._shard.OwnerSearch`): each shard learns its peers and the
        features it owns. Called again after a recovery, as the shards change."""
        bounds = feature_owners(len(owner.n_value_bins), len(self.shards))
        self.call_each("connect", [(self.shards, rank, bounds, owner)
                                   for rank in range(len(self.shards))],
                       what="connecting the shards")
        self.reducing = True

    def drop(self, address):
        """Forget the shard on ``address``; returns the partition indices it held."""
        k = self.addresses.index(address)
        self.actor_futures[k].release()
        lost = self.partitions[k]
        for name in ("shards", "addresses", "actor_futures", "partitions"):
            del getattr(self, name)[k]
        return lost

    def add(self, shards, addresses, actor_futures, partitions):
        self.shards += shards
        self.addresses += addresses
        self.actor_futures += actor_futures
        self.partitions += partitions

    def release(self):
        for future in self.actor_futures:
            future.release()


def _actor_call(shard, method, args):
    """A task's call of ``method(*args)`` on the shard actor of its own worker:
    ``(answer, 0)``, no bytes moved between workers yet."""
    return getattr(shard, method)(*args).result(), 0


class TreeGrower:
    """Grows the trees of one fit (see the module docstring); holds the fit's binning
    tables, growth rules and split-search buffers."""

    def __init__(self, cluster, binner, is_categorical, params, max_depth, max_leaf_nodes,
                 depthwise, features_per_node, monotonic, interaction_sets,
                 reduce_on_workers=False):
        self.cluster = cluster
        # True: histograms are summed between the shards, each searching its features
        # (Shard.split_reduced); False: summed and searched here.
        self.reduce_on_workers = bool(reduce_on_workers)
        self.reduce_round = 0
        self.n_value_bins = binner.n_value_bins_
        self.is_categorical = is_categorical.astype(np.uint8)
        self.missing_bin = int(binner.missing_bin_)
        self.bin_thresholds = binner.bin_thresholds_
        self.n_features = len(self.n_value_bins)
        n_categories = binner.n_value_bins_[is_categorical].max(initial=1)
        self.n_words = max(1, (int(n_categories) + 63) // 64)
        self.params = params
        self.max_depth = max_depth
        self.max_leaf_nodes = max_leaf_nodes
        self.depthwise = depthwise
        self.features_per_node = np.int64(features_per_node)
        self.monotonic = monotonic
        self.interaction_sets = interaction_sets
        self.constrained = bool(params[MAX_DELTA_STEP] > 0.0 or np.any(monotonic != 0))
        self.find_best_split = (find_best_split if is_categorical.any()
                                else numeric_split_finder())
        # What the next call to the shards carries for the previous tree.
        self.deferred_splits = []
        self.leaf_update = None

    def owner_search(self):
        """What the shards need to search their features (the reduction between the
        workers)."""
        return OwnerSearch(np.ascontiguousarray(self.n_value_bins),
                           self.is_categorical, np.ascontiguousarray(self.monotonic),
                           self.missing_bin, self.params, self.constrained, self.n_words,
                           not self.is_categorical.any())

    # ------------------------------------------------------------------ a tree
    def grow(self, column, iteration, feature_mask, seed):
        """One tree on gradient column ``column``: ``(table, bitsets)`` as the engine's
        grower returns them (node ``start``/``end`` hold ``0``/the node's row count)."""
        search = new_search_buffers(self.n_features, self.missing_bin + 1, self.n_words,
                                     np.uint64(seed))
        self.search = search
        self.feature_mask = feature_mask
        unlimited = self.max_leaf_nodes <= 0
        self.nodes = []  # per node: a dict of its fields
        self.histograms = {}
        frontier = []
        head = 0
        if self.reduce_on_workers:
            # The root's candidates are drawn first, as _create draws them.
            candidates = self._candidates(np.zeros(self.n_features, dtype=np.uint8))
            answers = self.cluster.call(
                "start_tree_reduced", column, iteration, self.deferred_splits,
                self.leaf_update, candidates, self._next_round(),
                what="the root's histograms, reduced")
            self._count_reduced(answers)
            root_sums = answers[0][0]
            root_found = self._best_of([a[1] for a in answers])
            root_hist = None
        else:
            roots = self.cluster.call("start_tree", column, iteration,
                                      self.deferred_splits, self.leaf_update,
                                      what="the root's histograms")
            root_hist = self._sum(roots)
            # Every sample falls in one bin of feature 0 (the missing bin included);
            # summed bin after bin, as the engine sums them.
            root_sums = np.cumsum(root_hist[0], axis=0)[-1].copy()
            root_found = None
        self.deferred_splits = []
        self.leaf_update = None
        # The root, then each batch of children: (sums, hist or None, lower, upper,
        # depth, parent, needs_histogram).
        self._create(root_sums, root_hist, -np.inf, np.inf, 0, -1, True, frontier,
                     root_found)
        n_leaves = 1
        while True:
            # The splits of this round: the best leaf (leaf-wise), or the whole current
            # level (depthwise: the queue's nodes pushed before this round).
            batch = []
            level_end = len(frontier)
            while unlimited or n_leaves < self.max_leaf_nodes:
                if self.depthwise:
                    if head >= level_end:
                        break
                    node = frontier[head][1]
                    head += 1
                else:
                    if not frontier or batch:
                        break
                    node = heapq.heappop(frontier)[1]
                n_leaves += 1
                room = unlimited or n_leaves < self.max_leaf_nodes
                batch.append(self._schedule_split(node, room))
            if not batch:
                break
            self._split_batch(batch, frontier)
        return self._table()

    def finish_tree(self, column, values):
        """Queue the tree's leaf values for the shards' raw predictions (sent with the
        next call)."""
        leaves = [n for n, row in enumerate(self.nodes) if row["left"] == LEAF]
        self.leaf_update = (column, np.array(leaves, dtype=np.int64), values[leaves])

    def leaf_gradient_sums(self, column, leaves):
        """``(n_leaves, 2)``: each leaf's ``(sum w g, sum w h)`` over every shard, for
        Friedman's per-leaf Newton step (one more round trip, which also applies the
        tree's deferred splits)."""
        answers = self.cluster.call("leaf_gradient_sums", self.deferred_splits, column,
                                    leaves, what="the leaves' gradient sums")
        self.deferred_splits = []
        total = np.array(answers[0], copy=True)
        for answer in answers[1:]:
            total += answer
        return total

    def flush(self):
        """Send the last tree's deferred splits and leaf values."""
        self.cluster.call("finish", self.deferred_splits, self.leaf_update,
                          what="the last tree's leaf values")
        self.deferred_splits = []
        self.leaf_update = None

    # ------------------------------------------------------------------ steps
    def _sum(self, histograms):
        """The shards' histograms summed in shard order, with all four channels
        (:func:`~silva.dask._shard.widen_channels`)."""
        total = np.array(histograms[0], dtype=np.float64, copy=True)
        self.cluster.histogram_bytes += sum(h.nbytes for h in histograms)
        for h in histograms[1:]:
            total += h
        return widen_channels(total)

    def _next_round(self):
        self.reduce_round += 1
        return self.reduce_round

    def _count_reduced(self, answers):
        """Bytes of a reduced round: the owners' candidates into the client (as
        pickled), the histogram parts between the workers (as the shards count them)."""
        self.cluster.histogram_bytes += sum(len(pickle.dumps(a[-2])) for a in answers)
        self.cluster.bytes_between_workers += sum(int(a[-1]) for a in answers)

    @staticmethod
    def _best_of(found):
        """The best of the owners' splits of one node (owners in shard order hold
        increasing feature ranges: strict '>' keeps the lowest feature on a tie, as the
        engine's search does); None when no owner has one."""
        best = None
        for split in found:
            if split is not None and (best is None or split.score > best.score):
                best = split
        return best

    def _candidates(self, path):
        """A node's candidate features (increasing), drawn from the tree's state as the
        single-machine grower draws them."""
        s = self.search
        n = node_candidates(path, self.feature_mask, self.interaction_sets,
                            self.features_per_node, s.rng_state, s.candidates)
        return s.candidates[:n].copy()

    def _create(self, sums, hist, lower, upper, depth, parent, needs_histogram, frontier,
                found=None):
        """A new node from its channel ``sums``; with a histogram, its best split is
        searched (on the client; or, reduced between the workers, ``found`` is the
        owners' best: an :class:`~silva.dask._shard.OwnerSplit` or None), and a gainful
        one puts it on the frontier."""
        node = len(self.nodes)
        path = (np.zeros(self.n_features, dtype=np.uint8) if parent < 0
                else self.nodes[parent]["path"].copy())
        if parent >= 0:
            path[self.nodes[parent]["feature"]] = 1
        params = self.params
        row = {
            "left": LEAF, "right": LEAF, "feature": UNDEFINED, "threshold": float(UNDEFINED),
            "missing_left": False, "is_categorical": False, "gain": 0.0, "depth": depth,
            "lower": lower, "upper": upper, "count": sums[COUNT_CHANNEL],
            "weight": sums[WEIGHT_CHANNEL], "sum_gradient": sums[1], "sum_hessian": sums[2],
            "value": leaf_output(sums[1], sums[2], params[L1], params[L2],
                                 params[MAX_DELTA_STEP], lower, upper),
            "split_gain": -np.inf, "path": path, "bitset": np.zeros(self.n_words, np.uint64),
        }
        self.nodes.append(row)
        if not needs_histogram:
            return
        if self.reduce_on_workers:
            if found is None or found.gain <= 0.0:
                return
            gain, feature = found.gain, found.feature
            split_bin, missing_left = found.split_bin, found.missing_left
            left_sums, weight_left, bitset = found.left_sums, found.left_weight, found.bitset
        else:
            s = self.search
            candidates = self._candidates(path)
            gain, feature, split_bin, missing_left = self.find_best_split(
                hist, candidates, np.int64(len(candidates)), self.n_value_bins,
                self.is_categorical, self.monotonic, np.int64(self.missing_bin), sums,
                params, lower, upper, self.constrained, s.feature_score, s.feature_bin,
                s.feature_missing_left, s.feature_left, s.feature_bitset, s.scan_scratch)
            if feature < 0 or gain <= 0.0:
                return
            left_sums = s.feature_left[feature]
            weight_left = left_weight(
                hist[feature], self.n_value_bins[feature], np.int64(self.missing_bin),
                np.int64(split_bin), bool(missing_left),
                bool(self.is_categorical[feature] != 0), s.feature_bitset[feature])
            bitset = s.feature_bitset[feature]
            self.histograms[node] = hist
        row["split_gain"] = gain
        row["split_feature"] = int(feature)
        row["split_bin"] = int(split_bin)
        row["split_missing_left"] = bool(missing_left)
        row["left_count"] = left_sums[0]
        row["left_gradient"] = left_sums[1]
        row["left_hessian"] = left_sums[2]
        row["left_weight"] = weight_left
        if self.is_categorical[feature] != 0:
            row["bitset"] = bitset.copy()
        if self.depthwise:
            frontier.append((-gain, node))
        else:
            heapq.heappush(frontier, (-gain, node))

    def _schedule_split(self, node, room):
        """Apply ``node``'s chosen split as its decision rule, and decide its children:
        sums, bounds, which may split, and which histogram the shards build."""
        row = self.nodes[node]
        feature = row["split_feature"]
        categorical = self.is_categorical[feature] != 0
        row["feature"] = feature
        row["missing_left"] = row["split_missing_left"]
        row["is_categorical"] = bool(categorical)
        row["gain"] = row["split_gain"]
        if categorical:
            row["threshold"] = float(UNDEFINED)
        elif row["split_bin"] == ALL_VALUE_BINS:
            row["threshold"] = np.inf  # missing values versus the rest
        else:
            row["threshold"] = float(self.bin_thresholds[feature, row["split_bin"]])
        n_left = row["left_count"]
        n_right = row["count"] - n_left
        sums = np.empty((2, N_CHANNELS))
        sums[0] = (n_left, row["left_gradient"], row["left_hessian"], row["left_weight"])
        sums[1] = (n_right, row["sum_gradient"] - row["left_gradient"],
                   row["sum_hessian"] - row["left_hessian"], row["weight"] - row["left_weight"])
        lower = [row["lower"], row["lower"]]
        upper = [row["upper"], row["upper"]]
        direction = self.monotonic[feature]
        if direction != 0:
            p = self.params
            wl = leaf_output(sums[0, 1], sums[0, 2], p[L1], p[L2], p[MAX_DELTA_STEP],
                             row["lower"], row["upper"])
            wr = leaf_output(sums[1, 1], sums[1, 2], p[L1], p[L2], p[MAX_DELTA_STEP],
                             row["lower"], row["upper"])
            middle = 0.5 * (wl + wr)
            if direction > 0:
                upper[0] = min(row["upper"], middle)
                lower[1] = max(row["lower"], middle)
            else:
                lower[0] = max(row["lower"], middle)
                upper[1] = min(row["upper"], middle)
        needs = [bool(room and row["depth"] + 1 < self.max_depth
                      and sums[c, COUNT_CHANNEL] >= 2.0 * self.params[MIN_SAMPLES_LEAF]
                      and sums[c, 2] >= 2.0 * self.params[MIN_CHILD_WEIGHT]
                      and sums[c, COUNT_CHANNEL] >= 2)
                 for c in range(2)]
        smaller = 0 if n_left <= n_right else 1
        # The shards build the smaller child's histogram when either child needs one (the
        # larger's is the parent's minus it).
        build = smaller if (needs[0] or needs[1]) else -1
        return {"node": node, "sums": sums, "lower": lower, "upper": upper, "needs": needs,
                "smaller": smaller, "build": build}

    def _split_batch(self, batch, frontier):
        """Send a round's splits to the shards, then create the children in order."""
        requests = []
        base = len(self.nodes)
        for k, split in enumerate(batch):
            row = self.nodes[split["node"]]
            requests.append(SplitRequest(
                split["node"], int(row["feature"]), int(row["split_bin"]),
                bool(row["missing_left"]), bool(row["is_categorical"]), row["bitset"],
                base + 2 * k, base + 2 * k + 1, int(split["build"])))
        found = []
        if not any(r.histogram_child >= 0 for r in requests):
            # No histogram is needed: the partitions can wait for the next call.
            self.deferred_splits.extend(requests)
            answers = None
        else:
            n_deferred = len(self.deferred_splits)
            if self.reduce_on_workers:
                searches = [None] * n_deferred + self._searches(batch, base)
                answers = self.cluster.call(
                    "split_reduced", self.deferred_splits + requests, searches,
                    self._next_round(), what="a split's histograms, reduced")
                self._count_reduced(answers)
                found = [self._best_of(owners)
                         for owners in zip(*[a[1] for a in answers], strict=True)]
            else:
                answers = self.cluster.call("split", self.deferred_splits + requests,
                                            what="a split's histograms")
                built = self._sum([a[1] for a in answers])
            self.deferred_splits = []
            n_left = np.sum([a[0][n_deferred:] for a in answers], axis=0)
            for k, split in enumerate(batch):
                if n_left[k] != split["sums"][0, COUNT_CHANNEL]:
                    raise RuntimeError(
                        f"silva.dask: the shards sent {n_left[k]} rows left at node "
                        f"{split['node']}, the histograms {split['sums'][0, 0]}: the "
                        "workers' data changed during the fit.")
        j = 0
        found = iter(found)
        for k, split in enumerate(batch):
            node = split["node"]
            child_hist = [None, None]
            if not self.reduce_on_workers:
                parent_hist = self.histograms.pop(node)
                if split["build"] >= 0:
                    smaller = split["smaller"]
                    child_hist[smaller] = built[j]
                    j += 1
                    parent_hist -= child_hist[smaller]
                    child_hist[1 - smaller] = parent_hist
            row = self.nodes[node]
            row["left"] = base + 2 * k
            row["right"] = base + 2 * k + 1
            for c in range(2):
                searched = bool(split["needs"][c] and split["build"] >= 0)
                self._create(split["sums"][c], child_hist[c], split["lower"][c],
                             split["upper"][c], row["depth"] + 1, node, searched, frontier,
                             next(found) if searched and self.reduce_on_workers else None)

    def _searches(self, batch, base):
        """Per split of ``batch``: None when the shards build no histogram, else the
        :class:`~silva.dask._shard.NodeSearch` of each child that may split (None for
        the other), their candidates drawn in the order _create draws them."""
        searches = []
        for k, split in enumerate(batch):
            if split["build"] < 0:
                searches.append(None)
                continue
            row = self.nodes[split["node"]]
            path = row["path"].copy()
            path[row["feature"]] = 1
            searches.append(tuple(
                NodeSearch(base + 2 * k + c, split["sums"][c], split["lower"][c],
                           split["upper"][c], self._candidates(path))
                if split["needs"][c] else None for c in range(2)))
        return searches

    def _table(self):
        n_nodes = len(self.nodes)
        table = np.zeros(n_nodes, dtype=GRADIENT_NODE)
        bitsets = np.zeros((n_nodes, self.n_words), dtype=np.uint64)
        for n, row in enumerate(self.nodes):
            for name in ("left", "right", "feature", "threshold", "missing_left",
                         "is_categorical", "depth", "gain", "weight", "sum_gradient",
                         "sum_hessian", "value", "lower", "upper"):
                table[n][name] = row[name]
            table[n]["start"] = 0
            table[n]["end"] = int(row["count"])
            table[n]["hist_slot"] = -1
            table[n]["split_gain"] = row["split_gain"]
            if row["left"] != LEAF:
                table[n]["split_feature"] = row["split_feature"]
                table[n]["split_bin"] = row["split_bin"]
                table[n]["split_missing_left"] = row["split_missing_left"]
            bitsets[n] = row["bitset"]
        return table, bitsets
