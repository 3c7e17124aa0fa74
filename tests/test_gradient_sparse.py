"""Gradient boosting on a sparse X grown from its stored entries (engine/gradient_sparse.py).

The contract: the same trees as the dense fit on ``X.toarray()`` (split features,
thresholds, missing-value sides), leaf values and predictions equal up to floating-point
rounding (a feature's default bin is the node's totals minus its other bins), and no
dense code matrix.

Rounding can decide what exact arithmetic leaves tied: two splits of equal gain (one-hot
columns whose rows have the same gradients), or a split of a pure node, whose gain is 0
exactly and 4e-16 after rounding. The comparisons below therefore use continuous sample
weights (no equal sums) and ``min_split_gain=1e-9`` (no split gaining only rounding).
"""

import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.metrics import roc_auc_score

import silva
from silva.engine import gradient_sparse
from silva.engine.binning import Binner
from silva.engine.gradient_histogram import GradientStatistics
from silva.export_json import dump_json


def _structure(model):
    return [(t.feature.tobytes(), t.threshold.tobytes(), t.missing_go_to_left.tobytes())
            for trees in model.estimators_ for t in trees]


def _wide_sparse(n=600, p=60, density=0.05, seed=0, negative=False, nan=False):
    """Count-like sparse columns (values 1-4, or -2..2 without 0 when ``negative``, so
    that the default bin lies inside the value bins), a denser signal in the first 5."""
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random((n, p)) < density, rng.integers(1, 5, (n, p)), 0.0)
    dense[:, :5] = np.where(rng.random((n, 5)) < 0.4, rng.integers(1, 5, (n, 5)), 0.0)
    if negative:
        dense = np.where(dense != 0, dense - 3 + (dense >= 3), 0.0)
    if nan:
        stored = np.flatnonzero(dense.reshape(-1))
        dense.reshape(-1)[stored[::7]] = np.nan
    score = np.nan_to_num(dense[:, :5]) @ np.array([1.0, -1.0, 0.5, 2.0, -0.5])
    score = score + rng.normal(scale=0.5, size=n)
    return dense, score


def _check_same_model(model, dense, y, **fit):
    """Fit ``model`` (with ``min_split_gain=1e-9``, see above) on ``dense`` and on its
    CSR: the same trees, predictions within rounding. Returns ``(from_sparse,
    from_dense, got, expected)``."""
    model = clone(model).set_params(min_split_gain=1e-9)
    from_dense = clone(model).fit(dense, y, **fit)
    from_sparse = clone(model).fit(sp.csr_matrix(dense), y, **fit)
    assert _structure(from_sparse) == _structure(from_dense)
    method = "predict_proba" if hasattr(model, "predict_proba") else "predict"
    expected = getattr(from_dense, method)(dense)
    got = getattr(from_sparse, method)(sp.csr_matrix(dense))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    return from_sparse, from_dense, got, expected


@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("nan", [False, True])
def test_binary_classifier_matches_dense(negative, nan):
    dense, score = _wide_sparse(negative=negative, nan=nan)
    y = (score > np.median(score)).astype(int)
    model = silva.GradientBoostingClassifier(n_estimators=8, max_leaf_nodes=15,
                                             min_samples_leaf=5)
    *_, got, expected = _check_same_model(model, dense, y)
    assert roc_auc_score(y, got[:, 1]) == roc_auc_score(y, expected[:, 1])


def test_multiclass_weights_and_depthwise_match_dense():
    dense, score = _wide_sparse(seed=1)
    y = np.digitize(score, np.quantile(score, [0.33, 0.66]))
    weight = np.random.default_rng(2).uniform(0.2, 3.0, size=y.shape[0])
    model = silva.GradientBoostingClassifier(n_estimators=5, max_depth=4, growth="depthwise",
                                             min_samples_leaf=3)
    from_sparse, _, _, _ = _check_same_model(model, dense, y, sample_weight=weight)
    assert from_sparse.n_trees_per_iteration_ == 3


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
def test_regressor_matches_dense(loss):
    dense, score = _wide_sparse(seed=3, negative=True)
    model = silva.GradientBoostingRegressor(loss=loss, n_estimators=6, max_leaf_nodes=20,
                                            min_samples_leaf=1, l2_regularization=0.5)
    _check_same_model(model, dense, score)


def test_constraints_and_feature_sampling_match_dense():
    """Monotonic and interaction constraints, per-tree and per-node feature draws: the
    sparse grower takes the dense grower's rules and random draws."""
    dense, score = _wide_sparse(seed=10, negative=True)
    model = silva.GradientBoostingRegressor(
        n_estimators=6, max_leaf_nodes=12, min_samples_leaf=3, colsample_bytree=0.8,
        colsample_bynode=0.5, monotonic_constraints={0: 1, 1: -1},
        interaction_constraints=[[0, 1, 2], [3, 4] + list(range(5, 60))], random_state=3)
    from_sparse, *_ = _check_same_model(model, dense, score)
    grid = np.zeros((9, dense.shape[1]))
    grid[:, 0] = np.linspace(-3, 3, 9)
    assert np.all(np.diff(from_sparse.predict(sp.csr_matrix(grid))) >= 0)


def test_exclusive_and_overlapping_columns():
    """One-hot columns (never two non-zeros in a row: what exclusive feature bundling
    would merge) beside overlapping ones."""
    rng = np.random.default_rng(4)
    n = 800
    group = rng.integers(0, 40, n)
    one_hot = np.zeros((n, 40))
    one_hot[np.arange(n), group] = 1.0
    overlapping = np.where(rng.random((n, 30)) < 0.2, rng.integers(1, 4, (n, 30)), 0.0)
    dense = np.hstack([one_hot, overlapping])
    y = ((group % 3 == 0) ^ (overlapping[:, 0] > 1)).astype(int)
    weight = rng.uniform(0.5, 2.0, size=n)
    model = silva.GradientBoostingClassifier(n_estimators=10, max_leaf_nodes=8,
                                             min_samples_leaf=2)
    from_sparse, *_ = _check_same_model(model, dense, y, sample_weight=weight)
    used = {int(f) for trees in from_sparse.estimators_ for t in trees
            for f in t.feature if f >= 0}
    assert used & set(range(40)) and used & set(range(40, 70))


def test_categorical_sparse_column_matches_dense():
    dense, score = _wide_sparse(seed=5, p=30)
    rng = np.random.default_rng(5)
    dense[:, 7] = np.where(rng.random(dense.shape[0]) < 0.3, rng.integers(1, 6, dense.shape[0]),
                           0.0)
    y = ((score > 0) ^ np.isin(dense[:, 7], (2, 4))).astype(int)
    model = silva.GradientBoostingClassifier(n_estimators=6, max_leaf_nodes=10,
                                             min_samples_leaf=2, categorical_features=[7])
    from_sparse, *_ = _check_same_model(model, dense, y)
    assert any(t.is_categorical.any() for trees in from_sparse.estimators_ for t in trees)


@pytest.mark.parametrize("sampling", [{"subsample": 0.7}, {"sampling": "goss"}])
def test_row_sampling_matches_dense(sampling):
    """Row sampling: the out-of-bag rows' predictions are updated by walking each tree
    on their entries (gradient_sparse.add_leaf_values_sparse), which must give the dense
    walk on their codes, and so the same next trees."""
    dense, score = _wide_sparse(seed=6, n=900)
    y = (score > 0).astype(int)
    model = silva.GradientBoostingClassifier(n_estimators=6, max_leaf_nodes=10,
                                             min_samples_leaf=3, random_state=0, **sampling)
    # Continuous weights: the first tree's gradients take two values, so splits of
    # discrete columns would otherwise tie exactly (see the module docstring).
    weight = np.random.default_rng(7).uniform(0.5, 2.0, size=y.shape[0])
    from_sparse, *_ = _check_same_model(model, dense, y, sample_weight=weight)
    assert from_sparse.n_iter_ == 6


def test_sample_code_finds_every_code():
    dense, _ = _wide_sparse(n=80, p=15, density=0.2, seed=12, negative=True, nan=True)
    binner = Binner(255, np.zeros(15, dtype=bool)).fit(dense)
    codes = binner.transform(dense)
    workspace = gradient_sparse.make_sparse_workspace(
        binner.sparse_entries(sp.csr_matrix(dense)), binner.n_value_bins_,
        binner.missing_bin_, 80, 2)
    found = np.array([[gradient_sparse.sample_code(workspace, s, f, binner.missing_bin_)
                       for s in range(80)] for f in range(15)])
    np.testing.assert_array_equal(found, codes)


def test_which_workspace_a_fit_takes(monkeypatch):
    """A sparse X with at most SPARSE_GROWTH_MAX_DENSITY of its values stored grows on
    its entries; a denser one (here every value stored) on the dense workspace, so its
    model is the dense fit's bit for bit."""
    built = []
    make = gradient_sparse.make_sparse_workspace
    monkeypatch.setattr(gradient_sparse, "make_sparse_workspace",
                        lambda *args: built.append(args) or make(*args))
    dense, score = _wide_sparse(seed=11)
    y = (score > 0).astype(int)
    model = silva.GradientBoostingClassifier(n_estimators=3)
    clone(model).fit(sp.csr_matrix(dense), y)
    assert len(built) == 1
    X = np.random.default_rng(0).random((60, 8))
    y = (X[:, 0] > 0.5).astype(int)
    from_sparse = clone(model).set_params(min_samples_leaf=2).fit(sp.csr_matrix(X), y)
    assert len(built) == 1
    from_dense = clone(model).set_params(min_samples_leaf=2).fit(X, y)
    assert dump_json(from_sparse) == dump_json(from_dense)


def test_sparse_node_histogram_by_brute_force():
    """Every (feature, bin) sum of a node against a dense count over its samples, the
    default bins (by subtraction) included, and the sibling by subtraction."""
    dense, score = _wide_sparse(n=200, p=12, density=0.2, seed=7, negative=True, nan=True)
    binner = Binner(255, np.zeros(dense.shape[1], dtype=bool)).fit(dense)
    codes = binner.transform(dense)
    workspace = gradient_sparse.make_sparse_workspace(
        binner.sparse_entries(sp.csr_matrix(dense)), binner.n_value_bins_,
        binner.missing_bin_, dense.shape[0], 2)
    rng = np.random.default_rng(8)
    gradient = rng.normal(size=(200, 1))
    hessian = rng.uniform(0.5, 1.0, size=(200, 1))
    weight = rng.uniform(0.5, 2.0, size=200)
    statistics = GradientStatistics(gradient, hessian, np.int64(0), weight, np.bool_(True),
                                    np.bool_(False))
    index = np.sort(rng.choice(200, 150, replace=False)).astype(np.int32)
    parent = workspace.histograms[0, 0]
    child = workspace.histograms[1, 0]
    totals = np.empty(4)
    gradient_sparse.sparse_node_histogram(parent, child, workspace, index, np.int64(0),
                                          np.int64(150), np.bool_(False), statistics,
                                          np.bool_(True), totals)
    gradient_sparse.sparse_node_histogram(child, parent, workspace, index, np.int64(0),
                                          np.int64(40), np.bool_(True), statistics,
                                          np.bool_(False), totals)
    channels = np.column_stack([np.ones(200), weight * gradient[:, 0],
                                weight * hessian[:, 0], weight])
    np.testing.assert_allclose(totals, channels[index[:40]].sum(axis=0), rtol=1e-12)
    offsets = workspace.bin_offsets
    for rows, hist, summed in ((index[:40], child, True), (index[40:], parent, False)):
        for f in range(dense.shape[1]):
            for local in range(offsets[f + 1] - offsets[f]):
                code = binner.missing_bin_ if local == binner.n_value_bins_[f] else local
                expected = channels[rows][codes[f, rows] == code].sum(axis=0)
                np.testing.assert_allclose(hist[offsets[f] + local], expected, rtol=1e-12,
                                           atol=1e-12)
                if summed and code != workspace.default_code[f]:
                    # A non-default bin of a pass is an exact count.
                    assert hist[offsets[f] + local, 0] == expected[0]


def test_sparse_entries_are_the_transform_codes():
    dense, _ = _wide_sparse(n=150, p=20, density=0.1, seed=9, negative=True, nan=True)
    binner = Binner(16, np.zeros(20, dtype=bool)).fit(dense)
    start, rows, codes, default = binner.sparse_entries(sp.csc_matrix(dense))
    rebuilt = np.repeat(default[:, None], 150, axis=1)
    for f in range(20):
        assert np.all(codes[start[f]:start[f + 1]] != default[f])
        rebuilt[f, rows[start[f]:start[f + 1]]] = codes[start[f]:start[f + 1]]
    np.testing.assert_array_equal(rebuilt, binner.transform(dense))


def test_fit_never_builds_a_dense_code_matrix():
    """20,000 x 4,000 at 0.1%: a code matrix alone would be 80 MB, and the dense
    workspace's records as many again; a sparse fit allocates less than half of the code
    matrix (mostly the binner's three (features, 255) float64 tables, 24 MB)."""
    X = sp.random(20_000, 4_000, density=0.001, format="csr", random_state=0,
                  data_rvs=lambda k: np.random.default_rng(0).integers(1, 5, k))
    y = (np.asarray(X[:, :400].sum(axis=1)).ravel() > 0).astype(int)
    model = silva.GradientBoostingClassifier(n_estimators=2, max_leaf_nodes=8)
    model.fit(X, y)  # compiled (and its caches loaded) before measuring
    tracemalloc.start()
    try:
        model.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000 * 4_000 / 2
    assert model.estimators_[-1][0].node_count > 1


def test_dense_fit_compiles_no_sparse_grower():
    code = ("import numpy as np, silva\n"
            "from silva.engine import gradient_grower as gg, gradient_sparse as gs\n"
            "X = np.random.default_rng(0).normal(size=(300, 4))\n"
            "silva.GradientBoostingClassifier(n_estimators=2).fit(X, X[:, 0] > 0)\n"
            "print(len(gg.grow_sparse_gradient_tree.signatures),"
            " len(gs.sparse_node_histogram.signatures))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["0", "0"]
