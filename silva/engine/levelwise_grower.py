"""The level-wise forest driver: grows a batch of trees over row shards, level by level.

The forest is defined in :mod:`silva.engine.levelwise` (Poisson bootstrap keyed by
global row, node-keyed feature draws, level-wise growth from summed histograms). This
module is the driver, in plain Python: it holds no rows. It asks every shard (a
:class:`~silva.engine.levelwise.RowShard`, in this process or a Dask actor) through
``call(method, *args)``, which returns the shards' answers in shard order, and sums
their histograms itself. Per batch of trees:

- one round trip to draw the bootstraps and build the roots' histograms;
- one per level: the level's splits (of every tree of the batch) applied by the shards,
  which send back the smaller child's histogram of each split whose children will be
  split again (the larger child's is the parent's minus it, LightGBM's subtraction
  trick); the last level, whose children are all leaves, costs none.

So a batch of trees of depth ``D`` costs at most ``D + 1`` round trips, whatever the
number of trees in it. Each node is scored by the engine's own split search
(:func:`silva.engine.splitting.find_node_split` on the dense summed histogram) and
stopped by CART's rules as :func:`silva.engine.grower.grow_tree` stops it
(``max_depth``, ``min_samples_split``, ``min_samples_leaf``, ``min_weight_leaf``, pure
nodes, ``min_impurity_decrease``); counts are of distinct in-bag rows, as in the forests.
"""

from dataclasses import dataclass

import numpy as np

from silva.engine.binning import ALL_VALUE_BINS, midpoint
from silva.engine.criteria import EPSILON, impurity, leaf_value, node_weight
from silva.engine.levelwise import (
    HistogramAccumulator,
    histogram_bytes,
    node_seed,
    sum_node_histograms,
)
from silva.engine.nodes import CART_NODE, LEAF, UNDEFINED
from silva.engine.splitting import make_split_scratch, split_finder
from silva.engine.tree import Tree

# Row of SplitScratch.side_sums that holds the winning split's left sums
# (see silva.engine.splitting.winning_left_sums).
_NODE_LEFT = 4


@dataclass
class LevelwiseRules:
    """What a level-wise tree needs besides its histograms: the binning tables and
    CART's rules (``max_depth`` a number, ``min_weight_fraction`` of the tree's weight)."""

    criterion: int
    n_classes: int
    max_depth: int
    min_samples_split: int
    min_samples_leaf: int
    min_weight_fraction: float
    min_impurity_decrease: float
    max_features: int
    use_random: bool
    n_value_bins: np.ndarray
    is_categorical: np.ndarray  # uint8
    missing_bin: int
    bin_lower: np.ndarray
    bin_upper: np.ndarray
    n_words: int
    n_categories: np.ndarray

    @property
    def classification(self):
        return self.criterion < 10

    @property
    def n_values(self):
        return self.n_classes if self.classification else 1

    @property
    def n_channels(self):
        return 1 + self.n_classes if self.classification else 4


class _TreeBuild:
    """One tree under construction: its nodes (dicts), open nodes of the current level
    and their histograms."""

    def __init__(self, rules, seed, finder, search):
        self.rules = rules
        self.seed = np.uint64(seed)
        self.finder = finder
        # The split search's scratch, rows, the dense histogram it reads (cleared after
        # each node) and the accumulator of node subtractions.
        self.search = search
        # The split search's monotonic constraints: none (this forest takes none).
        self.no_constraints = np.zeros(rules.n_value_bins.shape[0], dtype=np.int8)
        self.nodes = []
        self.level = []  # open nodes of the current level: (node id, histogram)
        self.pending = []  # the level's scheduled splits

    def create_root(self, exact_hist):
        cells, values = exact_hist
        n_bins = self.rules.missing_bin + 1
        # Feature 0's bins hold every row once: the root's channel sums.
        sums = values[cells < n_bins, :self.rules.n_channels].sum(axis=0)
        self.root_weight = node_weight(self.rules.criterion, sums)
        self.min_weight_leaf = self.rules.min_weight_fraction * self.root_weight
        self._create(sums, exact_hist, 0, -1, 0)

    def _splittable(self, sums, depth):
        """CART's stopping rules (as :func:`silva.engine.grower._fill_node`)."""
        r = self.rules
        return not (depth >= r.max_depth or sums[0] < r.min_samples_split
                    or sums[0] < 2 * r.min_samples_leaf
                    or node_weight(r.criterion, sums) < 2 * self.min_weight_leaf
                    or impurity(r.criterion, sums) <= EPSILON)

    def _create(self, sums, exact_hist, depth, parent, side):
        r = self.rules
        node = len(self.nodes)
        values = np.zeros(r.n_values)
        leaf_value(r.criterion, sums, values)
        row = {"left": LEAF, "right": LEAF, "feature": UNDEFINED,
               "threshold": float(UNDEFINED), "missing_left": False,
               "is_categorical": False, "depth": depth,
               "impurity": impurity(r.criterion, sums), "n_samples": sums[0],
               "weighted_n": node_weight(r.criterion, sums), "values": values,
               "bitset": np.zeros(r.n_words, dtype=np.uint64), "sums": sums}
        self.nodes.append(row)
        if parent >= 0:
            self.nodes[parent]["left" if side == 0 else "right"] = node
        if exact_hist is None or not self._splittable(sums, depth):
            return
        scratch, dummy, hist, _ = self.search
        # The node's dense histogram (rounded values) in the search's buffer, for the
        # engine's split search; cleared again below.
        cells, exact_values = exact_hist
        flat = hist.reshape(-1, r.n_channels)
        flat[cells] = exact_values[:, :r.n_channels]
        rng_state = np.array([node_seed(self.seed, np.int64(node))], dtype=np.uint64)
        gain, feature, split_bin, missing_left = self.finder(
            r.criterion, hist, True, False, dummy.bin_codes, dummy.ordered_codes,
            dummy.ordered_stats, dummy.ordered_stats, dummy.y, dummy.y,
            dummy.sample_indices, np.int64(0), np.int64(0), sums, row["impurity"],
            self.root_weight, r.n_value_bins, r.is_categorical, np.int64(r.missing_bin),
            r.bin_lower, r.bin_upper, np.int64(r.min_samples_leaf), self.min_weight_leaf,
            np.int64(r.max_features), bool(r.use_random), rng_state,
            np.int64(r.n_classes), scratch, row["bitset"], self.no_constraints,
            -np.inf, np.inf)
        flat[cells] = 0.0
        if feature < 0 or gain + EPSILON < r.min_impurity_decrease:
            row["bitset"][:] = 0
            return
        row["split"] = (int(feature), int(split_bin), bool(missing_left), float(gain),
                        scratch.side_sums[_NODE_LEFT].copy())
        self.level.append((node, exact_hist))

    def schedule_level(self):
        """The request for this level's splits (``None``: the tree is finished), and
        the decision rule of each splitting node."""
        if not self.level:
            return None
        r = self.rules
        base = len(self.nodes)
        fields = {name: [] for name in ("node", "feature", "split_bin", "missing_left",
                                        "is_categorical", "bitset", "left", "build")}
        child_open = []
        self.pending = []
        n_bins = r.missing_bin + 1
        for k, (node, exact_hist) in enumerate(self.level):
            row = self.nodes[node]
            feature, split_bin, missing_left, _, left_sums = row["split"]
            categorical = bool(r.is_categorical[feature])
            row["feature"] = feature
            row["missing_left"] = missing_left
            row["is_categorical"] = categorical
            if categorical:
                row["threshold"] = float(UNDEFINED)
            elif split_bin == ALL_VALUE_BINS:
                row["threshold"] = np.inf  # missing values versus the rest
            else:
                cells = exact_hist[0]
                present = cells[(cells >= feature * n_bins)
                                & (cells < feature * n_bins + r.n_value_bins[feature])
                                ] - feature * n_bins
                largest_left = present[present <= split_bin].max()
                smallest_right = present[present > split_bin].min()
                row["threshold"] = midpoint(r.bin_upper[feature, largest_left],
                                            r.bin_lower[feature, smallest_right])
                row["bitset"][:] = 0
            child_sums = (left_sums, row["sums"] - left_sums)
            needs = [self._splittable(s, row["depth"] + 1) for s in child_sums]
            smaller = 0 if child_sums[0][0] <= child_sums[1][0] else 1
            build = base + 2 * k + smaller if (needs[0] or needs[1]) else -1
            for name, value in (("node", node), ("feature", feature),
                                ("split_bin", split_bin), ("missing_left", missing_left),
                                ("is_categorical", categorical), ("bitset", row["bitset"]),
                                ("left", base + 2 * k), ("build", build)):
                fields[name].append(value)
            # The shards keep the rows of the children that will split, and of the one
            # whose histogram they build (a leaf's, when only its sibling splits).
            child_open += [needs[c] or build == base + 2 * k + c for c in range(2)]
            self.pending.append((node, exact_hist, child_sums, needs, smaller, build))
        self.level = []
        request = {name: np.array(values) for name, values in fields.items()}
        request["bitset"] = np.array(fields["bitset"], dtype=np.uint64).reshape(
            len(self.pending), r.n_words)
        for name in ("node", "feature", "split_bin", "left", "build"):
            request[name] = request[name].astype(np.int64)
        request["missing_left"] = request["missing_left"].astype(np.bool_)
        request["is_categorical"] = request["is_categorical"].astype(np.bool_)
        request["child_open"] = np.array(child_open, dtype=np.bool_)
        return request

    def n_built(self):
        return sum(1 for p in self.pending if p[5] >= 0)

    def create_children(self, built):
        """Create the level's children in order, from the built histograms (one per
        split with ``build >= 0``, in order)."""
        j = 0
        for node, parent_hist, child_sums, needs, smaller, build in self.pending:
            hists = [None, None]
            if build >= 0:
                hists[smaller] = built[j]
                j += 1
                if needs[1 - smaller]:
                    hists[1 - smaller] = self.search[3].difference(parent_hist,
                                                                   hists[smaller])
            depth = self.nodes[node]["depth"] + 1
            for c in range(2):
                self._create(child_sums[c], hists[c] if needs[c] else None, depth, node, c)
        self.pending = []

    def tree(self, n_features):
        r = self.rules
        n_nodes = len(self.nodes)
        table = np.zeros(n_nodes, dtype=CART_NODE)
        values = np.zeros((n_nodes, r.n_values))
        bitsets = np.zeros((n_nodes, r.n_words), dtype=np.uint64)
        for n, row in enumerate(self.nodes):
            for name in ("left", "right", "feature", "threshold", "missing_left",
                         "is_categorical", "depth", "impurity", "n_samples", "weighted_n"):
                table[n][name] = row[name]
            table[n]["split_gain"] = row["split"][3] if "split" in row else -np.inf
            values[n] = row["values"]
            bitsets[n] = row["bitset"]
        return Tree.from_grower(table, values, bitsets, n_features, r.n_classes,
                                r.n_categories)


class _NoRows:
    """The row arguments of the engine's split search, empty: a search on a dense
    histogram reads none of them (only their feature count)."""

    def __init__(self, n_features):
        self.bin_codes = np.empty((n_features, 0), dtype=np.uint8)
        self.ordered_codes = np.empty((0, n_features), dtype=np.uint8)
        self.ordered_stats = np.empty((0, 1))
        self.y = np.empty(0)
        self.sample_indices = np.empty(0, dtype=np.int32)


def _sum_histograms(answers, rules, counter):
    """The shards' node histograms summed node by node, as exactly as each shard's:
    the result does not depend on how the rows are spread. Counts the bytes
    received."""
    if counter is not None:
        counter["histogram_bytes"] += sum(histogram_bytes(a) for a in answers)
    n_cells = len(rules.n_value_bins) * (rules.missing_bin + 1)
    return sum_node_histograms(answers, n_cells, rules.n_channels)


def grow_levelwise_trees(call, rules, tree_seeds, rate, counter=None):
    """Grow the trees ``tree_seeds`` (one batch) over the shards that ``call`` reaches;
    returns their :class:`~silva.engine.tree.Tree` objects. ``counter`` (a dict with
    ``histogram_bytes``), when given, counts the bytes of histograms received."""
    n_features = len(rules.n_value_bins)
    finder = split_finder(rules.criterion, parallel=False,
                          categorical=bool(np.any(rules.is_categorical)),
                          random=bool(rules.use_random))
    n_bins = rules.missing_bin + 1
    search = (make_split_scratch(n_features, n_bins, rules.n_channels, rules.n_words),
              _NoRows(n_features), np.zeros((n_features, n_bins, rules.n_channels)),
              HistogramAccumulator(n_features * n_bins, rules.n_channels))
    builds = [_TreeBuild(rules, seed, finder, search) for seed in tree_seeds]
    roots = _sum_histograms(call("start_trees", [int(s) for s in tree_seeds], rate),
                            rules, counter)
    for build, hist in zip(builds, roots, strict=True):
        build.create_root(hist)
    while True:
        requests = [build.schedule_level() for build in builds]
        if all(request is None for request in requests):
            break
        if any(build.n_built() for build in builds):
            built = _sum_histograms(call("split_level", requests), rules, counter)
        else:
            built = []  # only leaves below: the shards need not apply it
        j = 0
        for build in builds:
            n = build.n_built()
            build.create_children(built[j:j + n])
            j += n
    call("end_trees")
    return [build.tree(n_features) for build in builds]
