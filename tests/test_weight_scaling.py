"""Sample weights are relative: multiplying every weight by one constant ``c`` must not
change a model (silva issue 22, item 3).

Limits that bound how many samples a node holds count samples (``min_samples_leaf``,
``min_samples_split`` of CART and of boosting); limits on weights are relative to the
total weight (``min_weight_fraction_leaf``, ``min_impurity_decrease``, ``ccp_alpha``),
read weights rescaled to average 1 (ID3 and C4.5), or, in boosting, bound sums of
weighted hessians and gradients (``min_child_weight``, the L1/L2 penalties,
``min_split_gain``): those are multiplied by ``c`` with the weights.

Exactness. A power of two scales every float exactly, and every sum, ratio and
comparison the engines make scales with it, so those fits are compared bit for bit
(the ``EXACT`` factors; far from overflow and subnormals). Other factors (``ROUNDED``:
1e-6, 1e-3, 7, 1e6) are not exact: ``c * w`` and the sums of such products round
differently from ``w`` and its sums, so predictions on the training samples are
compared to float rounding (``RTOL``), and the trees' structure is not compared: where
two candidates tie exactly (two features that part a small node's samples alike do,
and happen to here), rounding picks either, which changes the tested feature and
threshold but not how the training samples are parted. Boosting carries the rounding
from tree to tree (each fits the previous predictions' gradients), yet its predictions
stayed within 4e-14 of each other (relative), inside the same tolerance.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from silva import (
    AdaBoostClassifier,
    AdaBoostRegressor,
    BaggingClassifier,
    BaggingRegressor,
    C45Classifier,
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    ID3Classifier,
    RandomForestClassifier,
    RandomForestRegressor,
)

EXACT = [2.0**-20, 2.0**-7, 2.0**3, 2.0**20]
ROUNDED = [1e-6, 1e-3, 7.0, 1e6]
RTOL = 1e-12


def _weights(n, seed=0):
    """Uneven weights in [0.2, 3), a few of them zero (those samples take no part)."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.2, 3.0, n)
    w[rng.choice(n, n // 50, replace=False)] = 0.0
    return w


def _classification(n=400, n_classes=2, missing=True, seed=0):
    X, y = make_classification(n, 6, n_informative=4, n_redundant=1, n_classes=n_classes,
                               n_clusters_per_class=1, random_state=seed)
    if missing:
        X[::11, 1] = np.nan
    return X, y


def _regression(n=400, missing=True, seed=0):
    X, y = make_regression(n, 6, n_informative=4, noise=5.0, random_state=seed)
    if missing:
        X[::11, 1] = np.nan
    return X, y


def _rows(X, w, c):
    """Rows to compare single trees' predictions on: all of them for a power-of-two
    factor, else the training samples (weight > 0), which a tie broken the other way
    (module doc) still parts alike."""
    return X if c in EXACT else X[w > 0]


def _assert_same_structure(base, scaled, c):
    """The same tested features and thresholds, for power-of-two factors (see the module
    doc for why not for the others)."""
    if c in EXACT:
        np.testing.assert_array_equal(scaled.tree_.feature, base.tree_.feature)
        np.testing.assert_array_equal(scaled.tree_.threshold, base.tree_.threshold)


def _assert_same(expected, actual, c, rtol=RTOL):
    """Bit for bit for a power-of-two factor, else to ``rtol`` (see the module doc)."""
    expected = np.asarray(expected, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    if c in EXACT:
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual, expected, rtol=rtol,
                                   atol=rtol * np.nanmax(np.abs(expected)))


def _fit_pair(make, X, y, w, c, scaled_params=None):
    """Two models from ``make(**params)``: on ``w``, and on ``c * w`` with every
    ``scaled_params`` entry multiplied by ``c`` as well."""
    scaled_params = scaled_params or {}
    base = make(**scaled_params).fit(X, y, sample_weight=w)
    scaled = make(**{k: c * v for k, v in scaled_params.items()}).fit(
        X, y, sample_weight=c * w)
    return base, scaled


# ------------------------------------------------------------------------- CART
@pytest.mark.parametrize("c", EXACT + ROUNDED)
@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_cart_classifier(criterion, c):
    X, y = _classification(n_classes=3)
    w = _weights(len(y))
    # Every limit in play: sample counts, a weight fraction, an impurity decrease.
    params = dict(criterion=criterion, min_samples_leaf=4, min_samples_split=10,
                  min_weight_fraction_leaf=0.01, min_impurity_decrease=1e-3,
                  max_leaf_nodes=25, random_state=0)
    base = DecisionTreeClassifier(**params).fit(X, y, sample_weight=w)
    scaled = DecisionTreeClassifier(**params).fit(X, y, sample_weight=c * w)
    assert base.get_n_leaves() > 5
    _assert_same_structure(base, scaled, c)
    rows = _rows(X, w, c)
    _assert_same(base.predict_proba(rows), scaled.predict_proba(rows), c)
    if c in EXACT:
        _assert_same(c * base.tree_.weighted_n_node_samples,
                     scaled.tree_.weighted_n_node_samples, c)


@pytest.mark.parametrize("c", EXACT + ROUNDED)
@pytest.mark.parametrize("criterion",
                         ["squared_error", "friedman_mse", "absolute_error", "poisson"])
def test_cart_regressor(criterion, c):
    X, y = _regression()
    if criterion == "poisson":
        y = np.floor(np.exp(y / 100.0) * 3.0)  # counts, many of them zero
    w = _weights(len(y))
    params = dict(criterion=criterion, min_samples_leaf=3, min_weight_fraction_leaf=0.005,
                  min_impurity_decrease=1e-4, max_depth=7, random_state=0)
    base = DecisionTreeRegressor(**params).fit(X, y, sample_weight=w)
    scaled = DecisionTreeRegressor(**params).fit(X, y, sample_weight=c * w)
    assert base.get_n_leaves() > 5
    _assert_same_structure(base, scaled, c)
    rows = _rows(X, w, c)
    _assert_same(base.predict(rows), scaled.predict(rows), c)


@pytest.mark.parametrize("c", [2.0**-20, 1e-6, 7.0, 1e6])
@pytest.mark.parametrize("pruning", [dict(ccp_alpha=0.005), dict(min_significance=0.01),
                                     dict(prune="reduced_error", random_state=0)])
def test_cart_pruning(pruning, c):
    # Cost-complexity pruning weighs impurities by weight fractions, significance tests
    # rescale weighted counts to the node's number of samples, and reduced-error pruning
    # compares weighted errors: all relative.
    X, y = _classification(n=600, missing=False, seed=3)
    w = _weights(len(y), seed=3)
    base = DecisionTreeClassifier(**pruning).fit(X, y, sample_weight=w)
    scaled = DecisionTreeClassifier(**pruning).fit(X, y, sample_weight=c * w)
    assert 1 < base.get_n_leaves() == scaled.get_n_leaves()
    rows = _rows(X, w, c)
    _assert_same(base.predict_proba(rows), scaled.predict_proba(rows), c)


def test_cart_min_samples_leaf_counts_samples():
    X, y = _regression(missing=False)
    w = np.full(len(y), 1e-9)
    tree = DecisionTreeRegressor(min_samples_leaf=7).fit(X, y, sample_weight=w)
    leaves = tree.tree_.children_left == -1
    assert leaves.sum() > 10
    assert tree.tree_.n_node_samples[leaves].min() >= 7


# ----------------------------------------------------------------- ensembles
# Members of bootstrap ensembles are not grown on every training sample, so an exact tie
# that rounding breaks the other way (see the module doc) would part some samples
# differently: with the non-exact factors their leaves are kept large enough (here) that
# no node ties.
def _leaf_size(c):
    return 2 if c in EXACT else 12


@pytest.mark.parametrize("c", [2.0**-20, 2.0**20, 1e-6, 1e-3, 7.0, 1e6])
def test_forests(c):
    X, y = _classification(n_classes=3)
    w = _weights(len(y))
    for cls, extra in ((RandomForestClassifier, dict(oob_score=True)),
                       (ExtraTreesClassifier, dict())):
        params = dict(n_estimators=6, min_samples_leaf=_leaf_size(c), random_state=0,
                      **extra)
        base = cls(**params).fit(X, y, sample_weight=w)
        scaled = cls(**params).fit(X, y, sample_weight=c * w)
        _assert_same(base.predict_proba(X), scaled.predict_proba(X), c)
        if extra:
            _assert_same(base.oob_decision_function_, scaled.oob_decision_function_, c)
    Xr, yr = _regression()
    for cls in (RandomForestRegressor, ExtraTreesRegressor):
        params = dict(n_estimators=6, min_samples_leaf=_leaf_size(c), max_features=0.5,
                      random_state=0)
        base = cls(**params).fit(Xr, yr, sample_weight=w)
        scaled = cls(**params).fit(Xr, yr, sample_weight=c * w)
        _assert_same(base.predict(Xr), scaled.predict(Xr), c)
        # Quantile predictions compare cumulative weight shares.
        _assert_same(base.predict_quantiles(Xr[:50], quantiles=(0.1, 0.5, 0.9)),
                     scaled.predict_quantiles(Xr[:50], quantiles=(0.1, 0.5, 0.9)), c)


@pytest.mark.parametrize("c", [2.0**-20, 2.0**20, 1e-6, 1e-3, 7.0, 1e6])
def test_bagging(c):
    X, y = _classification()
    w = _weights(len(y))
    base, scaled = _fit_pair(
        lambda: BaggingClassifier(DecisionTreeClassifier(min_samples_leaf=_leaf_size(c)),
                                  n_estimators=5, random_state=0), X, y, w, c)
    _assert_same(base.predict_proba(X), scaled.predict_proba(X), c)
    Xr, yr = _regression()
    base, scaled = _fit_pair(
        lambda: BaggingRegressor(DecisionTreeRegressor(min_samples_leaf=_leaf_size(c)),
                                 n_estimators=5, max_samples=0.7, bootstrap=False,
                                 random_state=0),
        Xr, yr, w, c)
    _assert_same(base.predict(Xr), scaled.predict(Xr), c)


@pytest.mark.parametrize("c", [2.0**-20, 2.0**20, 1e-3, 7.0])
@pytest.mark.parametrize("algorithm", ["samme", "real"])
def test_adaboost_classifier(algorithm, c):
    X, y = _classification(n_classes=3)
    w = _weights(len(y))
    base, scaled = _fit_pair(
        lambda: AdaBoostClassifier(DecisionTreeClassifier(max_depth=2), n_estimators=15,
                                   algorithm=algorithm, random_state=0), X, y, w, c)
    assert len(base.estimators_) == len(scaled.estimators_) > 5
    _assert_same(base.estimator_weights_, scaled.estimator_weights_, c)
    _assert_same(base.predict_proba(X), scaled.predict_proba(X), c)


@pytest.mark.parametrize("c", [2.0**-20, 1e-6, 7.0, 1e6])
def test_adaboost_regressor(c):
    X, y = _regression()
    w = _weights(len(y))
    base, scaled = _fit_pair(
        lambda: AdaBoostRegressor(DecisionTreeRegressor(max_depth=3, min_samples_leaf=2),
                                  n_estimators=15, random_state=0), X, y, w, c)
    _assert_same(base.estimator_weights_, scaled.estimator_weights_, c)
    _assert_same(base.predict(X), scaled.predict(X), c)


# ------------------------------------------------------------------ ID3, C4.5
@pytest.mark.parametrize("c", EXACT + ROUNDED)
def test_id3(c):
    X, y = _classification(n_classes=3)
    w = _weights(len(y))
    # The significance test reads weighted counts: in cases, whatever the unit.
    params = dict(n_bins=6, min_samples_split=8, min_significance=0.05)
    base = ID3Classifier(**params).fit(X, y, sample_weight=w)
    scaled = ID3Classifier(**params).fit(X, y, sample_weight=c * w)
    assert base.get_n_leaves() > 5
    _assert_same_structure(base, scaled, c)
    rows = _rows(X, w, c)
    _assert_same(base.predict_proba(rows), scaled.predict_proba(rows), c)
    if c in EXACT:
        # Reported in the caller's unit.
        _assert_same(c * base.tree_.weighted_n_node_samples,
                     scaled.tree_.weighted_n_node_samples, c)


@pytest.mark.parametrize("c", EXACT + ROUNDED)
@pytest.mark.parametrize("params", [dict(), dict(subtree_raising=False, min_samples_leaf=3),
                                    dict(min_significance=0.05, confidence=0.5)])
def test_c45(params, c):
    # Missing values make fractional cases; MINOBJS, the pessimistic error estimates and
    # the significance test all read weights rescaled to average 1.
    X, y = _classification(n_classes=3)
    w = _weights(len(y))
    base = C45Classifier(**params).fit(X, y, sample_weight=w)
    scaled = C45Classifier(**params).fit(X, y, sample_weight=c * w)
    assert base.get_n_leaves() > 3
    _assert_same_structure(base, scaled, c)
    rows = _rows(X, w, c)
    _assert_same(base.predict_proba(rows), scaled.predict_proba(rows), c)
    if c in EXACT:
        # Reported in the caller's unit.
        _assert_same(c * base.tree_.weighted_n_node_samples,
                     scaled.tree_.weighted_n_node_samples, c)
    report = scaled.split_report(X, y, sample_weight=c * w)
    expected = base.split_report(X, y, sample_weight=w)
    _assert_same(np.asarray(expected["gain_ratio"]), np.asarray(report["gain_ratio"]), c)
    _assert_same(np.asarray(expected["p_value"]), np.asarray(report["p_value"]), c,
                 rtol=1e-9)


def test_c45_weights_summing_to_one_grow_the_unweighted_tree():
    # The defect: MINOBJS (2) against weights summing to 1 left the root a leaf.
    X, y = _classification(n=512, n_classes=3)
    unweighted = C45Classifier().fit(X, y)
    weighted = C45Classifier().fit(X, y, sample_weight=np.full(512, 1 / 512))
    assert unweighted.get_n_leaves() > 3
    np.testing.assert_array_equal(weighted.tree_.feature, unweighted.tree_.feature)
    np.testing.assert_array_equal(weighted.predict_proba(X), unweighted.predict_proba(X))
    assert weighted.tree_.weighted_n_node_samples[0] == 1.0


# ------------------------------------------------------------------- boosting
BOOSTING_SCALED = dict(min_child_weight=1e-3, l2_regularization=0.5,
                       l1_regularization=0.1, min_split_gain=1e-4)


@pytest.mark.parametrize("c", EXACT + ROUNDED)
@pytest.mark.parametrize("params", [dict(), dict(growth="depthwise", max_depth=4),
                                    dict(sampling="goss"), dict(subsample=0.7)])
def test_boosting_regressor(params, c):
    X, y = _regression()
    w = _weights(len(y))
    base, scaled = _fit_pair(
        lambda **scaled: GradientBoostingRegressor(n_estimators=30, min_samples_leaf=8,
                                                   random_state=0, **params, **scaled),
        X, y, w, c, BOOSTING_SCALED)
    assert base.estimators_[0][0].n_leaves > 10
    _assert_same(base.predict(X), scaled.predict(X), c)


@pytest.mark.parametrize("c", EXACT + ROUNDED)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_boosting_classifier(n_classes, c):
    X, y = _classification(n_classes=n_classes)
    # A categorical feature too: its splits' left weights come from category bitsets.
    X[:, 4] = np.where(np.isnan(X[:, 1]), np.nan, np.floor(np.abs(X[:, 4]) * 3) % 7)
    w = _weights(len(y))
    base, scaled = _fit_pair(
        lambda **scaled: GradientBoostingClassifier(
            n_estimators=20, min_samples_leaf=6, categorical_features=[4], random_state=0,
            **scaled),
        X, y, w, c, BOOSTING_SCALED)
    _assert_same(base.predict_proba(X), scaled.predict_proba(X), c)


def test_boosting_nodes_report_weights_and_count_samples():
    # min_samples_leaf counts samples; weighted_n_node_samples is each node's weight in
    # the caller's unit (the root's is the total, a split's children add up to it).
    X, y = _classification(n_classes=2)
    X[:, 4] = np.floor(np.abs(X[:, 4]) * 3) % 7
    w = 1e-6 * _weights(len(y))
    model = GradientBoostingClassifier(n_estimators=5, min_samples_leaf=9,
                                       min_child_weight=0.0, categorical_features=[4],
                                       random_state=0).fit(X, y, sample_weight=w)
    kept = w > 0
    for (tree,) in model.estimators_:
        leaves = tree.children_left == -1
        assert leaves.sum() > 5
        assert tree.n_node_samples[leaves].min() >= 9
        leaf_weight = np.bincount(tree.apply(X[kept]), weights=w[kept],
                                  minlength=tree.node_count)
        np.testing.assert_allclose(tree.weighted_n_node_samples[leaves],
                                   leaf_weight[leaves], rtol=1e-12)
        inner = np.flatnonzero(~leaves)
        np.testing.assert_allclose(
            tree.weighted_n_node_samples[tree.children_left[inner]]
            + tree.weighted_n_node_samples[tree.children_right[inner]],
            tree.weighted_n_node_samples[inner], rtol=1e-12)
        assert np.isclose(tree.weighted_n_node_samples[0], w.sum(), rtol=1e-12)


def test_boosting_learns_with_weights_summing_to_one():
    # The defect of 2026-11-25: min_samples_leaf (20) against summed weights of 1/n made
    # every tree a single leaf (R^2 0.0; LightGBM and scikit-learn: 0.997). Samples are
    # counted now, so weights 1/n (a power of two here) grow the unweighted model, bit
    # for bit: the weighted fit sums all four histogram channels, the unweighted one
    # only the gradient and the hessian, so this also checks that the two agree.
    n = 2048
    X, y = make_regression(n, 10, noise=1.0, random_state=0)
    weighted = GradientBoostingRegressor().fit(X, y, sample_weight=np.full(n, 1 / n))
    unweighted = GradientBoostingRegressor().fit(X, y)
    np.testing.assert_array_equal(weighted.predict(X), unweighted.predict(X))
    r2 = weighted.score(X, y)
    assert r2 > 0.99
    lightgbm = pytest.importorskip("lightgbm")
    peer = lightgbm.LGBMRegressor(verbose=-1).fit(X, y, sample_weight=np.full(n, 1 / n))
    peer_r2 = peer.score(X, y)
    assert abs(r2 - peer_r2) < 0.01, (r2, peer_r2)


def test_cart_poisson_zero_sum_test_is_relative():
    # A Poisson child whose weighted target sum is "zero" (below EPSILON) may not be
    # split off; EPSILON is taken in units of the node's mean weight, so that weights
    # of 2**-60 (every sum below EPSILON) do not forbid every split.
    X, y = _regression(missing=False)
    y = np.floor(np.exp(y / 100.0) * 3.0)
    w = _weights(len(y))
    base = DecisionTreeRegressor(criterion="poisson", max_depth=5).fit(X, y, sample_weight=w)
    tiny = DecisionTreeRegressor(criterion="poisson", max_depth=5).fit(
        X, y, sample_weight=2.0**-60 * w)
    assert base.get_n_leaves() > 10
    np.testing.assert_array_equal(tiny.predict(X), base.predict(X))
