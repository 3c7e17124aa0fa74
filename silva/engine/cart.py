"""CART growing: the bundles a binary tree is grown from, and the one call that grows it.

Every CART tree in silva — a single :class:`~silva.decision_tree.DecisionTreeClassifier`
or regressor, each tree of a forest, each round of AdaBoost over trees — is grown by
:func:`grow_cart_tree` from three bundles:

- :class:`BinnedData`: the training features binned once
  (:class:`~silva.engine.binning.Binner`), which many trees may share: a dense code
  matrix, or for a sparse X storing at most :data:`SPARSE_GROWTH_MAX_DENSITY` of its
  values each feature's non-default entries, which the sparse grower
  (:mod:`silva.engine.cart_sparse`) reads;
- :class:`GrowthRules`: the criterion and stopping rules, the same for every tree of an
  ensemble;
- :class:`TreeTask`: what is one tree's own: statistic channels, weights, the samples it
  grows on and its seed.

:func:`grow_cart_tree` is the only place that turns the bundles into the named tuples of
the compiled :func:`silva.engine.grower.grow_tree`. It returns a :class:`GrownTree`:
the :class:`~silva.engine.tree.Tree` and its *leaf samples*, the sample ids in the order
the grower left them with each node's range into that order, which quantile regression
forests (Meinshausen 2006) read.
"""

from dataclasses import dataclass

import numba as nb
import numpy as np

from silva.engine.binning import Binner
from silva.engine.cart_sparse import entries_by_row, sparse_columns
from silva.engine.grower import CartData, CartSamples, cart_rules, compiled_grower, run_grower
from silva.engine.sparse import is_sparse
from silva.engine.tree import Tree

#: A sparse X storing at most this fraction of its values grows on its stored entries
#: (:mod:`silva.engine.cart_sparse`); a denser one on the dense code matrix, as a dense
#: X (the same model, bit for bit). The same threshold as gradient boosting's sparse
#: growth (``silva._boosting_loop.SPARSE_GROWTH_MAX_DENSITY``, measured there).
SPARSE_GROWTH_MAX_DENSITY = 0.25


@dataclass
class BinnedData:
    """Training features binned once (:class:`~silva.engine.binning.Binner`) for many trees.

    Either the dense code matrix (``bin_codes`` and its transpose ``codes_by_sample``)
    or, for a sparse X grown on its entries, ``sparse_entries``
    (:meth:`~silva.engine.binning.Binner.sparse_entries`) with the codes None.
    """

    bin_codes: np.ndarray  # (n_features, n_samples), feature-major for histograms
    codes_by_sample: np.ndarray  # (n_samples, n_features), for small nodes
    n_value_bins: np.ndarray
    is_categorical: np.ndarray  # uint8 per feature
    missing_bin: int
    bin_lower: np.ndarray
    bin_upper: np.ndarray
    n_words: int  # uint64 words per category bitset
    n_categories: np.ndarray  # category codes per feature, 0 for numeric ones
    #: ``(column_start, column_rows, column_codes, default_code)`` of a sparse X grown
    #: on its entries (:mod:`silva.engine.cart_sparse`), else None.
    sparse_entries: tuple = None
    #: The same entries by row (:func:`silva.engine.cart_sparse.entries_by_row`).
    sparse_rows: tuple = None
    n_samples: int = 0
    #: The fitted binner of the dense codes (for :meth:`restricted`), else None.
    binner: Binner = None

    @classmethod
    def from_X(cls, X, is_categorical, max_bins, sparse_growth=True):
        """Bin ``X``. A canonical sparse ``X`` (as :func:`silva._input.validate_sparse_X`
        gives it) storing at most :data:`SPARSE_GROWTH_MAX_DENSITY` of its values keeps
        only its non-default entries when ``sparse_growth`` (callers pass False for
        what the sparse grower does not take: absolute_error, level-wise growth)."""
        binner = Binner(max_bins, is_categorical)
        n_samples, n_features = X.shape
        entries = rows = None
        if (sparse_growth and is_sparse(X)
                and X.nnz <= SPARSE_GROWTH_MAX_DENSITY * n_samples * n_features):
            binner.fit(X)
            entries = binner.sparse_entries(X)
            rows = entries_by_row(entries, n_samples)
            bin_codes = codes_by_sample = None
        else:
            bin_codes = binner.fit_transform(X)
            codes_by_sample = np.ascontiguousarray(bin_codes.T)
        return cls._from_binner(binner, bin_codes, codes_by_sample, n_samples, entries,
                                rows)

    @classmethod
    def _from_binner(cls, binner, bin_codes, codes_by_sample, n_samples, entries=None,
                     rows=None):
        n_categories = np.where(binner.is_categorical, binner.n_value_bins_, 0)
        return cls(
            bin_codes=bin_codes,
            codes_by_sample=codes_by_sample,
            n_value_bins=binner.n_value_bins_,
            is_categorical=binner.is_categorical.astype(np.uint8),
            missing_bin=binner.missing_bin_,
            bin_lower=binner.bin_lower_,
            bin_upper=binner.bin_upper_,
            n_words=max(1, (int(n_categories.max(initial=1)) + 63) // 64),
            n_categories=n_categories,
            sparse_entries=entries,
            sparse_rows=rows,
            n_samples=n_samples,
            binner=None if entries is not None else binner,
        )

    def restricted(self, rows):
        """``BinnedData.from_X(X[rows], ...)`` of the ``X`` binned here, derived from
        these codes (:meth:`~silva.engine.binning.Binner.restricted`); None where it
        cannot be derived (sparse growth, categories, quantile bins)."""
        if self.binner is None:
            return None
        derived = self.binner.restricted(self.bin_codes, rows)
        if derived is None:
            return None
        binner, bin_codes = derived
        return self._from_binner(binner, bin_codes, np.ascontiguousarray(bin_codes.T),
                                 bin_codes.shape[1])

    @property
    def n_features(self):
        return self.n_value_bins.shape[0]

    @property
    def grows_sparse(self):
        """Whether trees grow on the sparse entries (:mod:`silva.engine.cart_sparse`)."""
        return self.sparse_entries is not None

    def compiled(self, sample_indices=None):
        """The :class:`~silva.engine.grower.CartData` the compiled grower reads; for
        sparse growth, that of the tree growing on ``sample_indices`` (its positions)."""
        codes, codes_by_sample = self.bin_codes, self.codes_by_sample
        if self.grows_sparse:
            codes = sparse_columns(self.sparse_entries, self.sparse_rows, sample_indices,
                                   self.n_samples)
            # Only its dtype is read: the sparse grower keeps no code in order.
            codes_by_sample = np.zeros((1, 1), dtype=codes.column_codes.dtype)
        return CartData(codes, codes_by_sample, self.n_value_bins,
                        self.is_categorical, np.int64(self.missing_bin), self.bin_lower,
                        self.bin_upper, np.int64(self.n_words))


@dataclass
class GrowthRules:
    """The criterion and stopping rules of a tree (shared by every tree of a forest).

    ``max_leaf_nodes <= 0`` means unlimited (depth-first growth); nodes of fewer than
    ``histogram_min_samples`` samples search splits by sorting; parallel regions start
    above ``parallel_min_work`` (samples x features); ``min_significance >= 1`` turns
    the significance test off.
    """

    criterion: int
    n_classes: int
    n_values: int
    max_depth: int
    min_samples_split: int
    min_samples_leaf: int
    max_leaf_nodes: int
    min_impurity_decrease: float
    max_features: int
    use_random: bool
    histogram_min_samples: int
    parallel_min_work: int
    min_significance: float = 1.0
    #: int8 per feature (-1, 0, +1) on the engine's monotone value (see
    #: :mod:`silva.engine.monotone`: a classifier's signs already flipped); None or all
    #: zeros: unconstrained.
    monotonic_cst: np.ndarray = None
    #: Outputs of a multi-output tree (a multi-output criterion code), whose
    #: ``n_values`` leaf values per node are ``n_outputs`` blocks of equal width.
    n_outputs: int = 1


@dataclass
class TreeTask:
    """One tree's inputs: statistic channels, targets, weights, samples, seed.

    ``sample_indices`` are the int32 ids of the samples the tree grows on (those of
    positive weight); ``y`` and ``weight`` are the raw targets and weights, which only
    absolute_error reads.
    """

    stats: np.ndarray
    y: np.ndarray
    weight: np.ndarray
    sample_indices: np.ndarray
    min_weight_leaf: float
    seed: np.uint64


@dataclass
class GrownTree:
    """A grown tree and its leaf samples (see the module docstring)."""

    tree: Tree
    leaf_samples: np.ndarray  # sample ids, each node's samples contiguous
    node_start: np.ndarray  # node i holds leaf_samples[node_start[i]:node_end[i]]
    node_end: np.ndarray


#: Features per feature drawn from which the grower gathers the drawn features' codes at
#: each node rather than keeping every sample's codes in node order (see
#: :func:`silva.engine.splitting.node_feature_codes`). Measured on 20,000 rows, random
#: and extra-trees classifiers with ``"sqrt"`` features, 10 trees, AMD EPYC (Zen 5):
#: gathering was 5-10% slower at 64 features (8 drawn), even at 200 (14 drawn), 8%
#: faster at 1,000 dense columns, 17% at 5,000, and 3.3x faster on a sparse 20,000 x
#: 5,000 matrix (whose trees are long chains of large nodes).
GATHER_FEATURE_RATIO = 16


def gathers_codes(n_features, max_features):
    """Whether trees drawing ``max_features`` of ``n_features`` per node gather codes.
    The trees are the same either way; only the time differs."""
    return n_features >= GATHER_FEATURE_RATIO * max_features


def grow_cart_tree(data, rules, task, parallel_min_work=None):
    """Grow the tree of ``task`` on ``data`` under ``rules`` in one compiled call.

    ``parallel_min_work`` overrides ``rules.parallel_min_work`` (a forest's worker
    threads turn parallel regions off). ``task.sample_indices`` is left as it was.
    """
    if parallel_min_work is None:
        parallel_min_work = rules.parallel_min_work
    sample_indices = task.sample_indices.copy()
    sparse = data.grows_sparse
    # The sparse grower keeps no dense histogram and gathers every code it reads.
    histogram_min_samples = (sample_indices.shape[0] + 1 if sparse
                             else rules.histogram_min_samples)
    gather_codes = sparse or gathers_codes(data.n_features, rules.max_features)
    compiled_rules = cart_rules(
        # A multi-output tree has one class count per output; the grower reads the
        # largest (category orderings).
        rules.criterion, np.max(rules.n_classes), rules.n_values, rules.max_depth,
        rules.min_samples_split, rules.min_samples_leaf, task.min_weight_leaf,
        rules.max_leaf_nodes, rules.min_impurity_decrease, rules.max_features,
        rules.use_random, histogram_min_samples, parallel_min_work,
        rules.min_significance, gather_codes)
    samples = CartSamples(task.stats, task.y, task.weight, sample_indices, task.seed)
    # Compile only the paths this fit takes (see compiled_grower): no parallel region
    # when even the root is below the threshold, or with one thread.
    parallel = (not sparse and nb.get_num_threads() > 1
                and sample_indices.shape[0] * data.n_features >= parallel_min_work)
    extras = rules.min_significance < 1.0 or rules.max_leaf_nodes > 0
    monotone = rules.monotonic_cst is not None and bool(np.any(rules.monotonic_cst))
    monotonic_cst = (np.ascontiguousarray(rules.monotonic_cst, dtype=np.int8) if monotone
                     else np.zeros(data.n_features, dtype=np.int8))
    # monotone only when asked: an unconstrained fit picks its copy exactly as before.
    paths = {"monotone": True} if monotone else {}
    if sparse:
        paths["sparse"] = True
    # Every node searched from its rows: no histogram (the root is below their size) and
    # every feature's codes kept in node order.
    rows_only = histogram_min_samples > sample_indices.shape[0] and not gather_codes
    grower = compiled_grower(rules.criterion, parallel=parallel,
                             categorical=bool(data.is_categorical.any()), extras=extras,
                             random=bool(rules.use_random), rows_only=rows_only,
                             **paths)
    # The grower releases the GIL, so that threads grow trees at once.
    table, values, bitsets = run_grower(grower, data.compiled(task.sample_indices),
                                        compiled_rules, samples, monotonic_cst)
    tree = Tree.from_grower(table, values, bitsets, data.n_features, rules.n_classes,
                            data.n_categories, n_outputs=rules.n_outputs)
    # int32 ranges (a tree has fewer than 2**31 samples): a quantile forest keeps them
    # for every node.
    return GrownTree(tree, sample_indices, table["start"].astype(np.int32),
                     table["end"].astype(np.int32))
