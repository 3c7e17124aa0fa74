"""The gradient grower's kernels against plain numpy: the stable partition of a node's
sample indices, the node histogram (all four channels, or gradient and hessian only),
whole trees grown either way, and a grown tree's leaf values against its samples."""

import numpy as np
import pytest
from sklearn.datasets import make_regression

from silva.boosting import GradientBoostingRegressor
from silva.engine import losses

from ._fitted import check_nodes_hold_their_samples, small_data
from ._kernels import (
    GRADIENT_HISTOGRAM,
    PARTITION,
    add_leaf_values,
    gradient_children_pass,
    gradient_feature_scans,
    gradient_leaf_table,
    gradient_node_histogram,
    gradient_params,
    make_gradient_workspace,
    partition,
    split_block,
)

# 64 bins, which the histograms pad to 65 (see padded_bins).
MISSING_BIN = 63


def _workspace(n_samples, n_features, seed, unit_hessian=False):
    """A workspace on random codes (its records' channels still zero), its bin codes and
    random statistics ``(gradient, hessian, column, weight, use_hessian)``; with
    ``unit_hessian`` the weights are ones too (what two-lane passes require)."""
    rng = np.random.default_rng(seed)
    bin_codes = rng.integers(0, MISSING_BIN + 1, size=(n_features, n_samples)).astype(np.uint8)
    workspace = make_gradient_workspace(bin_codes=bin_codes, n_bins=MISSING_BIN + 1)
    gradient = rng.normal(size=(n_samples, 1))
    hessian = np.ones((n_samples, 1)) if unit_hessian else rng.random((n_samples, 1))
    weight = rng.integers(1, 4, n_samples).astype(np.float64)
    if unit_hessian:
        weight[:] = 1.0
    return workspace, bin_codes, (gradient, hessian, 0, weight, True)


def _node(n_samples, node_size, seed):
    rng = np.random.default_rng(seed + 1)
    return np.sort(rng.choice(n_samples, node_size, replace=False)).astype(np.int32)


@pytest.mark.parametrize("n_samples,node_size", [(3000, 1000), (120_000, 90_000)])
@pytest.mark.parametrize("split", ["numeric", "missing_left", "categorical"])
# None: the serial pass; else partition_in_blocks with that many blocks (7 of 1,000
# samples: blocks not multiples of 16 samples, so the sixteen-lane steps' spill and the
# scalar tails meet block edges).
@pytest.mark.parametrize("blocks", [None, 1, 2, 7])
def test_partition_is_numpys_stable_partition(n_samples, node_size, split, blocks):
    workspace, bin_codes, *_ = _workspace(n_samples, 3, seed=node_size)
    work_index = workspace["work_index"]
    node = _node(n_samples, node_size, seed=1)
    start = 17  # a node that does not begin at 0
    half = 1
    work_index[half, start:start + node_size] = node
    bitset = np.zeros(1, dtype=np.uint64)
    for category in (0, 3, 4, 9, 31):
        bitset[0] |= np.uint64(1) << np.uint64(category)
    codes = bin_codes[1, node].astype(np.int64)
    if split == "categorical":
        goes_left = (bitset[0] >> codes.astype(np.uint64)) & np.uint64(1) != 0
        goes_left[codes == MISSING_BIN] = False
    else:
        goes_left = codes <= 12
        goes_left[codes == MISSING_BIN] = split == "missing_left"
    n_left = partition(
        column=bin_codes[1], work_index=work_index, half=half, start=start,
        end=start + node_size, missing_bin=MISSING_BIN, split_bin=12,
        missing_left=split == "missing_left", categorical=split == "categorical",
        bitset=bitset, blocks=blocks)
    assert n_left == goes_left.sum()
    expected = np.concatenate([node[goes_left], node[~goes_left]])
    np.testing.assert_array_equal(work_index[1 - half, start:start + node_size], expected)


@pytest.mark.parametrize("sixteen_lanes", [False, True])
@pytest.mark.parametrize("missing_left", [False, True])
def test_split_block_with_and_without_sixteen_lanes(monkeypatch, sixteen_lanes,
                                                    missing_left):
    # The compiled block split (16 samples a step on this CPU), and the scalar loop
    # alone, which is what CPUs without AVX-512 run: as plain Python with the step off.
    if sixteen_lanes and not PARTITION.SIXTEEN_LANE_SPLIT:
        pytest.skip("this CPU has no AVX-512")
    if not sixteen_lanes:
        monkeypatch.setattr(PARTITION, "SIXTEEN_LANE_SPLIT", False)
    _, bin_codes, *_ = _workspace(600, 2, seed=5)
    node = _node(600, 250, seed=3)
    first, last = 7, 7 + node.size
    index_from = np.zeros(300, dtype=np.int32)
    index_from[first:last] = node
    index_to = np.zeros(300, dtype=np.int32)
    n_left = split_block(
        column=bin_codes[0], index_from=index_from, index_to=index_to, first=first,
        last=last, missing_bin=MISSING_BIN, split_bin=20, missing_left=missing_left,
        compiled=sixteen_lanes)
    codes = bin_codes[0, node]
    goes_left = np.where(codes == MISSING_BIN, missing_left, codes <= 20)
    assert n_left == goes_left.sum()
    np.testing.assert_array_equal(index_to[first:last],
                                  np.concatenate([node[goes_left], node[~goes_left]]))


def _reference_histogram(bin_codes, node, channels):
    n_features = bin_codes.shape[0]
    hist = np.zeros((n_features, MISSING_BIN + 1, 4))
    for f in range(n_features):
        for c, values in enumerate(channels):
            np.add.at(hist[f, :, c], bin_codes[f, node], values[node])
    return hist


def _histogram_case(n_samples, n_features, seed, two_lanes):
    """A workspace for the histogram passes' tests (see :func:`_workspace`), with each
    sample's four channels as a pass should write them: count, weighted gradient,
    weighted hessian, weight."""
    workspace, bin_codes, statistics = _workspace(n_samples, n_features, seed=seed,
                                                  unit_hessian=two_lanes)
    gradient, hessian, _, weight, _ = statistics
    channels = np.column_stack([np.ones(n_samples), weight * gradient[:, 0],
                                weight * hessian[:, 0], weight])
    return workspace, bin_codes, statistics, channels


def _serial_pass(workspace, index, node_size, n_features, two_lanes, statistics):
    """The node ``index[:node_size]``'s histogram from the default pass, one thread (the
    records' channels already filled)."""
    hist = np.zeros_like(workspace["histograms"][0])
    gradient_node_histogram(
        workspace=workspace, hist=hist, parent=np.zeros_like(hist), index=index, start=0,
        end=node_size, n_features=n_features, subtract=False, threads=1,
        two_lanes=two_lanes, statistics=statistics, fill=False)
    return hist


# One block (a serial pass, however many threads); several blocks run in parallel; the
# same blocks serially.
@pytest.mark.parametrize("n_samples,node_size,n_features,threads",
                         [(3000, 1000, 5, 2), (3000, 1500, 12, 2), (3000, 1500, 12, 3),
                          (120_000, 90_000, 5, 2), (120_000, 90_000, 5, 1)])
@pytest.mark.parametrize("two_lanes", [False, True])
@pytest.mark.parametrize("fill", [False, True])
def test_node_histogram_and_subtraction(n_samples, node_size, n_features, threads,
                                        two_lanes, fill):
    workspace, bin_codes, statistics, channels = _histogram_case(
        n_samples, n_features, node_size, two_lanes)
    stats = workspace["stats"]
    work_index = workspace["work_index"]
    histograms = workspace["histograms"]
    if fill:
        # The pass must write every sample's channels itself.
        stats[:, -4:] = np.nan
    else:
        # As a root's pass leaves them.
        work_index[0] = np.arange(n_samples, dtype=np.int32)
        gradient_node_histogram(
            workspace=workspace, hist=histograms[1], parent=histograms[2],
            index=work_index[0], start=0, end=n_samples, n_features=n_features,
            subtract=False, threads=2, two_lanes=False, statistics=statistics, fill=True)
        np.testing.assert_array_equal(stats[:, -4:], channels)
    node = _node(n_samples, node_size, seed=2)
    work_index[0, :node_size] = node
    hist = histograms[0]
    parent = np.random.default_rng(0).normal(size=hist.shape)
    parent_before = parent.copy()
    gradient_node_histogram(
        workspace=workspace, hist=hist, parent=parent, index=work_index[0], start=0,
        end=node_size, n_features=n_features, subtract=True, threads=threads,
        two_lanes=two_lanes, statistics=statistics, fill=fill)
    expected = _reference_histogram(bin_codes, node, channels.T)
    assert hist.shape[1] == GRADIENT_HISTOGRAM.padded_bins(MISSING_BIN + 1) > MISSING_BIN + 1
    np.testing.assert_allclose(hist[:, :MISSING_BIN + 1], expected, rtol=1e-12, atol=1e-9)
    assert not hist[:, MISSING_BIN + 1:].any()
    if two_lanes:
        # The count and weight channels are the hessian channel, bit for bit.
        np.testing.assert_array_equal(hist[:, :, 0], hist[:, :, 2])
        np.testing.assert_array_equal(hist[:, :, 3], hist[:, :, 2])
    np.testing.assert_array_equal(parent, parent_before - hist)
    np.testing.assert_array_equal(stats[node, -4:], channels[node])
    # However many threads share the pass, the sums are one serial pass's, bit for bit.
    np.testing.assert_array_equal(
        hist, _serial_pass(workspace, work_index[0], node_size, n_features, two_lanes,
                           statistics))


# A fit allowed two lanes sums a node of fewer than TWO_LANES_MIN_ROWS samples with all
# four channels (no widening), a larger one with two: either way the sums of a pass
# that adds all four, bit for bit, in one block or several.
@pytest.mark.parametrize("node_size", [40, GRADIENT_HISTOGRAM.TWO_LANES_MIN_ROWS - 1,
                                       GRADIENT_HISTOGRAM.TWO_LANES_MIN_ROWS, 9000])
def test_a_two_lane_fit_sums_every_node_as_the_four_channel_pass(node_size):
    n_samples, n_features = 10_000, 7
    workspace, _, statistics, channels = _histogram_case(n_samples, n_features, seed=8,
                                                         two_lanes=True)
    workspace["stats"][:, -4:] = channels  # as the root's pass leaves them
    index = workspace["work_index"][0]
    index[:node_size] = _node(n_samples, node_size, seed=9)
    two_lane_sums = _serial_pass(workspace, index, node_size, n_features, True, statistics)
    four_channel_sums = _serial_pass(workspace, index, node_size, n_features, False,
                                     statistics)
    np.testing.assert_array_equal(two_lane_sums, four_channel_sums)
    assert four_channel_sums[:, :, 0].sum() == n_features * node_size


# A node summed by 1-3 threads for their shares of 12 features, with all four channels
# or the gradient and hessian only (or summed before, as over row blocks); the smaller
# child of a split (its histogram built) and the larger one (the parent's minus it) are
# scanned over all or some features. A two-lane fit's child of 700 samples is summed
# with four channels, one of 2,500 with two (TWO_LANES_MIN_ROWS).
@pytest.mark.parametrize("n_parts", [1, 2, 3])
@pytest.mark.parametrize("two_lanes", [False, True])
@pytest.mark.parametrize("build", [True, False])
@pytest.mark.parametrize("parent_size,node_size", [(2000, 700), (5000, 2500)])
def test_children_pass_builds_subtracts_and_scans_as_the_serial_steps(n_parts, two_lanes,
                                                                      build, parent_size,
                                                                      node_size):
    n_samples, n_features = 6000, 12
    workspace, bin_codes, statistics, channels = _histogram_case(
        n_samples, n_features, seed=4, two_lanes=two_lanes)
    workspace["stats"][:, -4:] = channels  # as the root's pass leaves them
    index = workspace["work_index"][0]
    parent_node = _node(n_samples, parent_size, seed=5)
    index[:parent_size] = parent_node
    parent_hist = _serial_pass(workspace, index, parent_size, n_features, two_lanes,
                               statistics)
    # The smaller child: some of the parent's samples, in order.
    index[:node_size] = np.sort(np.random.default_rng(6).choice(parent_node, node_size,
                                                                replace=False))
    built = _serial_pass(workspace, index, node_size, n_features, two_lanes, statistics)
    # Built in the pass: every entry must be written.
    pool = np.stack([np.full_like(built, np.nan) if build else built, parent_hist])
    node_sums = np.stack([built[0].sum(axis=0), (parent_hist - built)[0].sum(axis=0)])
    scan = dict(n_value_bins=np.full(n_features, MISSING_BIN), missing_bin=MISSING_BIN,
                params=gradient_params(l2=1.0, min_samples_leaf=3))
    candidates = [np.arange(n_features), np.arange(1, n_features, 3)]
    results = gradient_children_pass(
        workspace=workspace, pool=pool, index=index, start=0, end=node_size,
        two_lanes=two_lanes, statistics=statistics, build=build, subtract=True,
        node_candidates=candidates, node_sums=node_sums, n_parts=n_parts, **scan)
    # The serial pass's sums and subtraction, bit for bit.
    np.testing.assert_array_equal(pool[0], built)
    np.testing.assert_array_equal(pool[1], parent_hist - built)
    for p in range(2):
        expected = gradient_feature_scans(hist=pool[p], candidates=candidates[p],
                                          node_sums=node_sums[p], **scan)
        for got, want in zip(results[p], expected, strict=True):
            np.testing.assert_array_equal(got, want)
        assert np.isfinite(results[p][0][candidates[p]]).all()
    assert np.isnan(np.delete(results[1][0], candidates[1])).all()  # only candidates


# Wide data's tiled pass (3 tiles, the last one short; chunks of 2,048 samples): a
# serial pass, one shared out by features between threads, several row blocks; compiled
# with and without its parallel regions.
@pytest.mark.parametrize("node_size", [700, 1500, 9000])
@pytest.mark.parametrize("threads,wide", [(1, "serial"), (1, "parallel"), (2, "parallel"),
                                          (3, "parallel")])
@pytest.mark.parametrize("two_lanes", [False, True])
@pytest.mark.parametrize("fill", [False, True])
def test_wide_node_histogram_sums_as_the_row_by_row_pass(node_size, threads, wide,
                                                         two_lanes, fill):
    n_samples, n_features = 10_000, 60
    workspace, bin_codes, statistics, channels = _histogram_case(
        n_samples, n_features, node_size, two_lanes)
    stats = workspace["stats"]
    work_index = workspace["work_index"]
    histograms = workspace["histograms"]
    node = _node(n_samples, node_size, seed=3)
    work_index[0, :node_size] = node
    if fill:
        stats[:, -4:] = np.nan  # the pass must write the node's channels itself
    else:
        stats[:, -4:] = channels
    parent = np.random.default_rng(0).normal(size=histograms[0].shape)
    parent_before = parent.copy()
    hist = histograms[0]
    hist[:] = np.nan  # every entry must be written
    gradient_node_histogram(
        workspace=workspace, hist=hist, parent=parent, index=work_index[0], start=0,
        end=node_size, n_features=n_features, subtract=True, threads=threads,
        two_lanes=two_lanes, statistics=statistics, fill=fill, wide=wide)
    np.testing.assert_array_equal(stats[node, -4:], channels[node])
    expected = _reference_histogram(bin_codes, node, channels.T)
    np.testing.assert_allclose(hist[:, :MISSING_BIN + 1], expected, rtol=1e-12, atol=1e-9)
    assert not hist[:, MISSING_BIN + 1:].any()
    np.testing.assert_array_equal(parent, parent_before - hist)
    # The default pass's sums (its row blocks added in the same order), bit for bit.
    np.testing.assert_array_equal(
        hist, _serial_pass(workspace, work_index[0], node_size, n_features, two_lanes,
                           statistics))


def test_wide_passes_are_chosen_by_the_histograms_size_against_l2():
    # 255 bins pad to 261: a feature's histogram is 8,352 bytes, 3/4 MiB is 94 features.
    assert not GRADIENT_HISTOGRAM.is_wide(94, 255, l2_bytes=2**20)
    assert GRADIENT_HISTOGRAM.is_wide(95, 255, l2_bytes=2**20)
    assert not GRADIENT_HISTOGRAM.is_wide(188, 255, l2_bytes=2 * 2**20)
    assert GRADIENT_HISTOGRAM.is_wide(200, 255, l2_bytes=2 * 2**20)
    # Never fewer features than two tiles, however small the cache.
    assert not GRADIENT_HISTOGRAM.is_wide(49, 255, l2_bytes=1)
    assert GRADIENT_HISTOGRAM.l2_cache_bytes() >= 2**16


def test_wide_passes_grow_the_same_trees(monkeypatch):
    X, y = make_regression(3000, 55, n_informative=10, noise=5.0, random_state=0)
    X[::9, 1] = np.nan
    params = dict(n_estimators=8, max_leaf_nodes=12, random_state=0)
    monkeypatch.setattr(GRADIENT_HISTOGRAM, "is_wide", lambda *args: False)
    rows = GradientBoostingRegressor(**params).fit(X, y)
    monkeypatch.setattr(GRADIENT_HISTOGRAM, "is_wide", lambda *args: True)
    tiles = GradientBoostingRegressor(**params).fit(X, y)
    np.testing.assert_array_equal(rows.predict(X), tiles.predict(X))
    for tree_rows, tree_tiles in zip(rows.estimators_, tiles.estimators_, strict=True):
        np.testing.assert_array_equal(tree_rows[0].threshold, tree_tiles[0].threshold)
        np.testing.assert_array_equal(tree_rows[0].value, tree_tiles[0].value)


def test_padded_bins_keep_feature_histograms_off_4k_multiples():
    for n_bins in range(1, 3000):
        padded = GRADIENT_HISTOGRAM.padded_bins(n_bins)
        assert n_bins <= padded <= n_bins + 10
        # Odd, so 32- and 16-byte entries both give a stride off every 4 KiB multiple.
        assert padded % 2 == 1 and 5 <= padded % 128 <= 123


def test_two_lane_histograms_grow_the_same_trees(monkeypatch):
    X, y = make_regression(3000, 6, noise=5.0, random_state=0)
    X[::9, 1] = np.nan
    params = dict(n_estimators=15, max_leaf_nodes=12, random_state=0)
    two = GradientBoostingRegressor(**params).fit(X, y)
    monkeypatch.setattr(losses.SquaredError, "unit_hessian", False)
    four = GradientBoostingRegressor(**params).fit(X, y)
    np.testing.assert_array_equal(two.predict(X), four.predict(X))
    for tree_two, tree_four in zip(two.estimators_, four.estimators_, strict=True):
        np.testing.assert_array_equal(tree_two[0].threshold, tree_four[0].threshold)
        np.testing.assert_array_equal(tree_two[0].value, tree_four[0].value)


def test_pool_size_does_not_change_the_trees(monkeypatch):
    # 40 leaves: a pool of 4 slots grows within each tree (allocate, copy, carry on);
    # one of 41 never does. Both must give the same trees.
    X, y = make_regression(20_000, 6, noise=5.0, random_state=0)
    X[::9, 1] = np.nan
    params = dict(n_estimators=5, max_leaf_nodes=40, min_samples_leaf=5, random_state=0)
    assert GRADIENT_HISTOGRAM.pool_slots_for(40, 6, 256) == 41
    large = GradientBoostingRegressor(**params).fit(X, y)
    monkeypatch.setattr(GRADIENT_HISTOGRAM, "pool_slots_for", lambda *args: 4)
    small = GradientBoostingRegressor(**params).fit(X, y)
    assert max(tree[0].n_leaves for tree in small.estimators_) == 40
    for tree_large, tree_small in zip(large.estimators_, small.estimators_, strict=True):
        np.testing.assert_array_equal(tree_large[0].threshold, tree_small[0].threshold)
        np.testing.assert_array_equal(tree_large[0].value, tree_small[0].value)


@pytest.mark.parametrize("n_positions,n_leaves", [(5, 3), (1001, 1), (100_003, 31)])
def test_add_leaf_values_adds_each_leafs_value_to_its_samples(n_positions, n_leaves):
    # Leaves of uneven sizes, in shuffled table rows among internal nodes: every sample
    # gets its own leaf's value once.
    rng = np.random.default_rng(n_positions)
    n_samples = n_positions + 50
    sample_indices = np.sort(rng.choice(n_samples, n_positions, replace=False))
    sample_indices = rng.permutation(sample_indices).astype(np.int32)
    cuts = np.sort(rng.choice(np.arange(1, n_positions), n_leaves - 1, replace=False))
    bounds = np.concatenate([[0], cuts, [n_positions]])
    n_rows = 2 * n_leaves + 3
    rows = rng.permutation(n_rows)[:n_leaves]
    table = gradient_leaf_table(n_rows=n_rows, leaf_rows=rows, starts=bounds[:-1],
                                ends=bounds[1:])
    values = rng.normal(size=n_rows)
    raw = np.zeros((n_samples, 2), order="F")
    add_leaf_values(raw=raw, column=1, sample_indices=sample_indices, table=table,
                    leaf_values=values)
    expected = np.zeros(n_samples)
    for row, first, last in zip(rows, bounds[:-1], bounds[1:], strict=True):
        expected[sample_indices[first:last]] += values[row]
    np.testing.assert_array_equal(raw[:, 1], expected)
    assert not raw[:, 0].any()


def test_gradient_tree_leaves_hold_their_newton_steps():
    # Squared error, one tree, learning rate 1, no regularisation: a leaf's value is the
    # Newton step -G/H = the mean residual of its samples from the initial constant.
    X, y, _ = small_data(seed=2, n=200)
    model = GradientBoostingRegressor(n_estimators=1, learning_rate=1.0, max_leaf_nodes=6,
                                      min_samples_leaf=5, random_state=0).fit(X, y)
    tree = model.estimators_[0][0]
    members = check_nodes_hold_their_samples(tree, X, np.ones(X.shape[0]))
    assert tree.n_leaves == 6
    residual = y - model.init_raw_[0]
    for leaf in np.flatnonzero(tree.children_left == -1):
        rows = members[:, leaf]
        assert rows.sum() >= 5
        np.testing.assert_allclose(tree.value[leaf, 0, 0], residual[rows].mean(),
                                   rtol=1e-9, atol=1e-12)
