"""Random forests and extra trees (silva/forest.py).

References: scikit-learn's forests (accuracy, out-of-bag score), direct numpy
computations from the fitted trees (out-of-bag decision function and error curve,
quantile regression forest weights, Breiman's margin, strength and correlation), and
statistical properties on synthetic data (out-of-bag versus held-out score, interval
coverage). The in-bag samples of tree ``t`` are regenerated from its seed
(``estimators_[t].random_state``) as scikit-learn draws them, ``RandomState(seed).randint
(0, n, n_drawn)``; :func:`test_inbag_regeneration_matches_the_trees` checks that this is
what the trees were grown on.
"""

from functools import partial

import numpy as np
import pandas as pd
import pytest
from sklearn import datasets, ensemble
from sklearn.datasets import make_classification, make_regression
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score
from sklearn.utils.estimator_checks import (
    check_sample_weight_equivalence_on_dense_data,
    parametrize_with_checks,
)

import silva
from silva import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from silva._weighted_bootstrap import weighted_bootstrap_counts, weighted_draw_plan
from silva.callbacks import EarlyStopException

FORESTS = (RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier,
           ExtraTreesRegressor)
CLASSIFIERS = (RandomForestClassifier, ExtraTreesClassifier)
REGRESSORS = (RandomForestRegressor, ExtraTreesRegressor)


# ------------------------------------------------------------------ scikit-learn checks
def _expected_failed_checks(estimator):
    if estimator.bootstrap is True:
        # A bootstrap draws n rows uniformly: a row of weight 2 is drawn as often as any
        # other row, while a repeated row is drawn twice as often, so the two fits are
        # different random forests (scikit-learn marks its own forests the same way).
        # test_sample_weight_equivalence_without_bootstrap checks the weights themselves;
        # bootstrap="weighted" passes the check (below, and in the list checked here).
        return dict.fromkeys(["check_sample_weight_equivalence_on_dense_data",
                              "check_sample_weight_equivalence_on_sparse_data"],
                             "bootstrap draws rows uniformly, not in proportion to "
                             "sample_weight")
    return {}


@parametrize_with_checks([cls(n_estimators=5, random_state=0) for cls in FORESTS]
                         + [cls(n_estimators=5, bootstrap="weighted", random_state=0)
                            for cls in (RandomForestClassifier, ExtraTreesRegressor)],
                         expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("cls", [RandomForestClassifier, RandomForestRegressor])
def test_sample_weight_equivalence_without_bootstrap(cls):
    # Without the bootstrap, integer weights are the same as repeated rows.
    check_sample_weight_equivalence_on_dense_data(
        cls.__name__, cls(n_estimators=5, bootstrap=False, random_state=0))


@pytest.mark.parametrize("cls", FORESTS)
@pytest.mark.parametrize("max_features", [None, 0.3])
def test_sample_weight_equivalence_with_weighted_bootstrap(cls, max_features):
    # Drawn in proportion to the weights, over rows in an order fixed by their content:
    # a row of weight k is k repeated rows, though the check shuffles the weighted rows.
    check_sample_weight_equivalence_on_dense_data(
        cls.__name__, cls(n_estimators=5, bootstrap="weighted", max_features=max_features,
                          oob_score=True, random_state=0))


def test_weighted_bootstrap_draws_in_proportion_to_the_weights():
    weight = np.array([1.0, 0.0, 3.0, 2.0, 2.0, 0.5])
    X = np.arange(6.0)[:, None]
    X[4] = X[3]  # rows 3 and 4 are one distinct row of weight 4, drawn on row 3
    y = np.array([0.0, 1.0, 2.0, 3.0, 3.0, 5.0])
    rows, cumulative = weighted_draw_plan(X, y, weight)
    assert sorted(rows) == [0, 2, 3, 5]
    assert cumulative[-1] == weight.sum()
    counts = sum(weighted_bootstrap_counts(np.random.RandomState(seed), rows, cumulative, 6, 85)
                 for seed in range(400))
    assert counts.sum() == 400 * 85 and counts[1] == counts[4] == 0
    expected = np.array([1.0, 0.0, 3.0, 4.0, 0.0, 0.5]) / weight.sum()
    # 34,000 draws: each frequency within 4 standard errors of its probability.
    np.testing.assert_allclose(counts / counts.sum(), expected,
                               atol=4 * np.sqrt(0.25 / counts.sum()))
    # The plan, and so the draw, does not depend on the order of the rows.
    order = np.random.RandomState(0).permutation(6)
    shuffled_rows, shuffled_cumulative = weighted_draw_plan(
        X[order], y[order], weight[order])
    np.testing.assert_array_equal(shuffled_cumulative, cumulative)
    np.testing.assert_array_equal(X[order][shuffled_rows], X[rows])


def test_weighted_bootstrap_forest_regrows_its_inbag_samples():
    X, y = datasets.make_regression(n_samples=120, n_features=4, random_state=0)
    weight = np.random.RandomState(1).randint(0, 4, size=120).astype(float)
    forest = RandomForestRegressor(n_estimators=4, bootstrap="weighted", oob_score=True,
                                   random_state=0).fit(X, y, sample_weight=weight)
    inbag = forest._inbag_mask(120).astype(bool)
    assert not inbag[:, weight == 0].any()  # zero-weight rows are never drawn
    for t, tree in enumerate(forest.estimators_):
        # The tree's root holds its in-bag samples, each counted once.
        assert tree.tree_.n_node_samples[0] == inbag[t].sum()
        assert tree.tree_.weighted_n_node_samples[0] == forest._n_drawn
    assert forest._n_drawn == round(weight.sum())
    with pytest.raises(ValueError, match="bootstrap must be True, False, 'poisson' or 'weighted'"):
        RandomForestRegressor(bootstrap="yes").fit(X, y)


# --------------------------------------------------------------- accuracy vs scikit-learn
# Tolerance: over random seeds the 5-fold mean accuracy of a 30-tree forest varies with a
# standard deviation of about 0.005 on these datasets (R² on diabetes: about 0.01), for
# scikit-learn's forests and silva's alike, so two independent forests differ by about
# 0.007 (0.014) typically; 0.02 (0.03 for R²) is a bit over two standard deviations of
# that difference, and well below what a broken split search or bootstrap costs.
@pytest.mark.parametrize("dataset", ["breast_cancer", "digits", "iris", "wine", "diabetes"])
@pytest.mark.parametrize("kind", ["RandomForest", "ExtraTrees"])
def test_cross_validated_score_matches_sklearn(dataset, kind):
    X, y = getattr(datasets, f"load_{dataset}")(return_X_y=True)
    regression = dataset == "diabetes"
    suffix = "Regressor" if regression else "Classifier"
    cv = (KFold(5, shuffle=True, random_state=0) if regression
          else StratifiedKFold(5, shuffle=True, random_state=0))
    scores = [cross_val_score(getattr(library, kind + suffix)(n_estimators=30, random_state=0),
                              X, y, cv=cv).mean() for library in (silva, ensemble)]
    assert abs(scores[0] - scores[1]) <= (0.03 if regression else 0.02), scores


# --------------------------------------------------------------------------- out of bag
def _inbag_counts(forest, n_samples, n_drawn=None):
    """(n_trees, n_samples) bootstrap counts regenerated from each tree's seed."""
    n_drawn = n_samples if n_drawn is None else n_drawn
    return np.array([np.bincount(np.random.RandomState(tree.random_state).randint(
        0, n_samples, n_drawn), minlength=n_samples) for tree in forest.estimators_])


@pytest.mark.parametrize("max_samples", [None, 0.5])
def test_inbag_regeneration_matches_the_trees(max_samples):
    X, y = datasets.make_classification(300, 5, random_state=0)
    forest = RandomForestClassifier(6, max_samples=max_samples, random_state=0).fit(X, y)
    n_drawn = 300 if max_samples is None else 150
    counts = _inbag_counts(forest, 300, n_drawn)
    for tree, count in zip(forest.estimators_, counts, strict=True):
        # The root holds every distinct in-bag sample, weighted by its count.
        assert tree.tree_.n_node_samples[0] == np.count_nonzero(count)
        assert tree.tree_.weighted_n_node_samples[0] == pytest.approx(n_drawn)


def _classification_split(seed=0):
    # A test set twice the training set: its accuracy has a standard error of about
    # 0.005, the out-of-bag estimate on 2000 rows about 0.007.
    X, y = datasets.make_classification(6000, 10, n_informative=5, random_state=seed)
    return X[:2000], y[:2000], X[2000:], y[2000:]


def _regression_split(seed=0):
    X, y = datasets.make_regression(6000, 10, n_informative=5, noise=10.0, random_state=seed)
    return X[:2000], y[:2000], X[2000:], y[2000:]


@pytest.mark.parametrize("cls", [RandomForestClassifier, RandomForestRegressor])
def test_oob_score_estimates_held_out_score_and_matches_sklearn(cls):
    classification = cls is RandomForestClassifier
    X, y, X_test, y_test = (_classification_split() if classification
                            else _regression_split())
    forest = cls(60, oob_score=True, random_state=0).fit(X, y)
    assert abs(forest.oob_score_ - forest.score(X_test, y_test)) <= 0.02
    reference = getattr(ensemble, cls.__name__)(60, oob_score=True, random_state=0).fit(X, y)
    assert abs(forest.oob_score_ - reference.oob_score_) <= 0.02


def test_oob_decision_function_and_curve_match_direct_computation():
    X, y = datasets.make_classification(200, 5, n_informative=3, n_classes=3,
                                        random_state=1)
    with pytest.warns(UserWarning, match="1 samples were drawn by every member"):
        forest = RandomForestClassifier(15, oob_score=True, random_state=0).fit(X, y)
    outside = _inbag_counts(forest, 200) == 0
    sums = np.zeros((200, 3))
    n_out = np.zeros(200)
    curve = []
    for t, tree in enumerate(forest.estimators_):
        sums[outside[t]] += tree.predict_proba(X[outside[t]])
        n_out += outside[t]
        seen = n_out > 0
        curve.append(np.mean(np.argmax(sums[seen], axis=1) != y[seen]))
    # One row is in all 15 bootstraps: it has no out-of-bag prediction (NaN) and is left
    # out of the score.
    seen = n_out > 0
    assert np.count_nonzero(~seen) == 1
    assert np.isnan(forest.oob_decision_function_[~seen]).all()
    np.testing.assert_allclose(forest.oob_decision_function_[seen],
                               sums[seen] / n_out[seen, None])
    np.testing.assert_allclose(forest.oob_decision_function_[seen].sum(axis=1), 1.0)
    assert forest.oob_score_ == pytest.approx(
        np.mean(np.argmax(sums[seen], axis=1) == y[seen]))
    assert forest.oob_curve_.shape == (15,)
    np.testing.assert_allclose(forest.oob_curve_, curve)
    # The curve is the error rate, so its last value is 1 - oob_score_.
    assert forest.oob_curve_[-1] == pytest.approx(1.0 - forest.oob_score_)


def test_oob_prediction_and_curve_of_regressor():
    X, y = datasets.make_regression(200, 5, noise=5.0, random_state=1)
    with pytest.warns(UserWarning, match="no out-of-bag prediction"):
        forest = RandomForestRegressor(25, oob_score=True, random_state=0).fit(X, y)
    outside = _inbag_counts(forest, 200) == 0
    covered = outside.any(axis=0)
    assert np.count_nonzero(~covered) == 1  # row 28 is in all 25 bootstraps
    per_tree = np.array([tree.predict(X) for tree in forest.estimators_])
    expected = (per_tree * outside).sum(axis=0)[covered] / outside.sum(axis=0)[covered]
    assert np.isnan(forest.oob_prediction_[~covered]).all()
    np.testing.assert_allclose(forest.oob_prediction_[covered], expected)
    assert forest.oob_score_ == pytest.approx(r2_score(y[covered], expected))
    # The regression curve is the out-of-bag mean squared error of the first t + 1 trees.
    curve = []
    for t in range(1, 26):
        n_out = outside[:t].sum(axis=0)
        seen = n_out > 0
        mean = (per_tree[:t] * outside[:t]).sum(axis=0)[seen] / n_out[seen]
        curve.append(np.mean((mean - y[seen]) ** 2))
    np.testing.assert_allclose(forest.oob_curve_, curve)


def test_oob_attributes_removed_when_refitted_without_oob():
    X, y = datasets.make_classification(100, 4, random_state=0)
    forest = RandomForestClassifier(5, oob_score=True, random_state=0).fit(X, y)
    assert hasattr(forest, "oob_score_")
    forest.set_params(oob_score=False).fit(X, y)
    assert not hasattr(forest, "oob_score_") and not hasattr(forest, "oob_curve_")


# ------------------------------------------------------------------------ determinism
def _tree_arrays(forest):
    return [(e.tree_.children_left, e.tree_.feature, e.tree_.threshold, e.tree_.value)
            for e in forest.estimators_]


@pytest.mark.parametrize("cls", FORESTS)
@pytest.mark.parametrize("every_feature", [False, True])
def test_same_forest_for_any_number_of_threads(cls, every_feature):
    # 5000 rows x 40 features: an extra-trees forest of one tree with two threads takes
    # the parallel histogram path inside its tree (n_node * n_features >= 200_000; a
    # random forest's bootstrap leaves its root below that); forests of more trees, of
    # one job (test_forest_of_one_job_grows_its_trees_serially) or threaded, never do.
    X, y = datasets.make_classification(5000, 40, n_informative=6, random_state=0)
    X[::13, 3] = np.nan
    options = {"max_features": None} if every_feature else {}
    fits = [cls(4, max_depth=6, random_state=0, n_jobs=n_jobs, **options).fit(X, y)
            for n_jobs in (1, 2, -1)]
    predict = "predict_proba" if cls in CLASSIFIERS else "predict"
    reference = getattr(fits[0], predict)(X)
    for other in fits[1:]:
        np.testing.assert_array_equal(getattr(other, predict)(X), reference)
        for mine, theirs in zip(_tree_arrays(fits[0]), _tree_arrays(other), strict=True):
            for a, b in zip(mine, theirs, strict=True):
                np.testing.assert_array_equal(a, b)
    # A forest of one tree: serial with one thread, parallel regions with two.
    single_trees = [cls(1, max_depth=6, random_state=0, n_jobs=n_jobs, **options).fit(X, y)
                    for n_jobs in (1, 2)]
    for a, b in zip(*map(_tree_arrays, single_trees), strict=True):
        for mine, theirs in zip(a, b, strict=True):
            np.testing.assert_array_equal(mine, theirs)
    # A different seed gives a different forest (the comparison above can fail).
    other_seed = cls(4, max_depth=6, random_state=1).fit(X, y)
    assert not np.array_equal(getattr(other_seed, predict)(X), reference)


def test_forest_of_one_job_grows_its_trees_serially():
    """A forest grown in the calling thread opens no parallel region inside its trees,
    but for a forest of one tree with threads to spare."""
    from types import SimpleNamespace

    from silva.engine.forest import NO_PARALLEL_WORK, _parallel_min_work_in_one_job

    rules = SimpleNamespace(parallel_min_work=200_000)
    assert _parallel_min_work_in_one_job(rules, 1) == NO_PARALLEL_WORK
    assert _parallel_min_work_in_one_job(rules, 2) == 200_000


def test_trees_per_job():
    from silva.engine.forest import trees_per_job

    assert trees_per_job(100, 2, 353) == 6  # diabetes: at most an eighth of a share
    assert trees_per_job(1000, 2, 353) == 12  # ceil(4096 / 353) rows' worth
    assert trees_per_job(100, 2, 4096) == 1
    assert trees_per_job(100, 2, 16_000) == 1
    assert trees_per_job(10, 2, 100) == 1


@pytest.mark.parametrize("cls", [RandomForestClassifier, ExtraTreesRegressor])
def test_threads_growing_trees_in_batches_give_the_same_forest(cls, monkeypatch):
    """Worker jobs of 5 consecutive trees (37 trees: the last job has 2). The trees,
    their order, and a stop by a callback are those of one thread."""
    from silva.engine import forest as engine_forest

    X, y = datasets.make_classification(150, 6, random_state=0)
    serial = cls(37, random_state=0, n_jobs=1).fit(X, y)
    sizes = []

    def five_per_job(n_trees, n_threads, n_rows):
        sizes.append(5)
        return 5

    monkeypatch.setattr(engine_forest, "trees_per_job", five_per_job)
    threaded = cls(37, random_state=0, n_jobs=2).fit(X, y)
    assert sizes == [5]
    for mine, theirs in zip(_tree_arrays(serial), _tree_arrays(threaded), strict=True):
        for a, b in zip(mine, theirs, strict=True):
            np.testing.assert_array_equal(a, b)

    def stop_after_seven(env):
        if env.iteration == 6:
            raise EarlyStopException(env.iteration)

    stopped = cls(37, random_state=0, n_jobs=2).fit(X, y, callbacks=[stop_after_seven])
    assert len(stopped.estimators_) == 7
    for mine, theirs in zip(_tree_arrays(stopped), _tree_arrays(serial)[:7], strict=True):
        np.testing.assert_array_equal(mine[2], theirs[2])


# ------------------------------------------------------------------------- warm start
@pytest.mark.filterwarnings("ignore:.*no out-of-bag prediction:UserWarning")
@pytest.mark.parametrize("cls", FORESTS)
def test_warm_start_equals_one_fit(cls):
    X, y = datasets.make_classification(200, 6, random_state=0)
    forest = cls(5, warm_start=True, random_state=0, oob_score=True, bootstrap=True)
    forest.fit(X, y)
    first_trees = list(forest.estimators_)
    forest.set_params(n_estimators=12).fit(X, y)
    at_once = cls(12, random_state=0, oob_score=True, bootstrap=True).fit(X, y)
    assert len(forest.estimators_) == 12
    # The first five trees are kept, not regrown.
    assert [e.random_state for e in forest.estimators_[:5]] == \
        [e.random_state for e in first_trees]
    for mine, theirs in zip(_tree_arrays(forest), _tree_arrays(at_once), strict=True):
        for a, b in zip(mine, theirs, strict=True):
            np.testing.assert_array_equal(a, b)
    predict = "predict_proba" if cls in CLASSIFIERS else "predict"
    np.testing.assert_array_equal(getattr(forest, predict)(X), getattr(at_once, predict)(X))
    assert forest.oob_score_ == at_once.oob_score_
    np.testing.assert_array_equal(forest.oob_curve_, at_once.oob_curve_)


def test_warm_start_errors():
    X, y = datasets.make_classification(100, 4, random_state=0)
    forest = RandomForestClassifier(6, warm_start=True, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="n_estimators=3 must be at least the 6"):
        forest.set_params(n_estimators=3).fit(X, y)
    with pytest.raises(ValueError, match="same data"):
        forest.set_params(n_estimators=8).fit(X[:80], y[:80])
    with pytest.raises(ValueError, match="same classes"):
        forest.set_params(n_estimators=8).fit(X, np.where(y == 1, 2, 0))


# --------------------------------------------------------- quantile regression forests
def _qrf_reference(forest, X_train, y_train, X, quantiles, sample_weight=None):
    """Meinshausen (2006) weights from leaf ids and regenerated bootstrap counts."""
    n = X_train.shape[0]
    weight = np.ones(n) if sample_weight is None else sample_weight
    counts = (_inbag_counts(forest, n) if forest.bootstrap
              else np.ones((len(forest.estimators_), n)))
    leaves_train, leaves = forest.apply(X_train), forest.apply(X)
    order = np.argsort(y_train, kind="stable")
    out = np.empty((X.shape[0], len(quantiles)))
    for i in range(X.shape[0]):
        w = np.zeros(n)
        for t in range(leaves.shape[1]):
            in_leaf = (leaves_train[:, t] == leaves[i, t]) * counts[t] * weight
            w += in_leaf / in_leaf.sum()
        w = w[order] / leaves.shape[1]
        support = w > 0
        cumulative = np.cumsum(w[support])
        for k, q in enumerate(quantiles):
            # The smallest y whose cumulative weight reaches q.
            position = min(np.searchsorted(cumulative, q * (1 - 1e-12)), support.sum() - 1)
            out[i, k] = y_train[order][support][position]
    return out


# Leaves of several samples, so that the weights within a leaf matter (a fully grown
# tree has one distinct sample per leaf here).
@pytest.mark.parametrize("cls, params", [
    (RandomForestRegressor, {"min_samples_leaf": 5}),
    (RandomForestRegressor, {"ccp_alpha": 20.0}),  # pruned trees regroup their leaves
    (ExtraTreesRegressor, {"min_samples_leaf": 3}),
])
def test_quantiles_match_meinshausen_weights(cls, params):
    X, y = datasets.make_regression(150, 3, noise=20.0, random_state=0)
    weight = np.random.RandomState(0).uniform(0.5, 2.0, 150)
    forest = cls(8, random_state=0, **params).fit(X, y, sample_weight=weight)
    if "ccp_alpha" in params:
        assert forest.estimators_[0].tree_.node_count < cls(8, random_state=0).fit(
            X, y, sample_weight=weight).estimators_[0].tree_.node_count
    quantiles = [0.0, 0.1, 0.5, 0.9, 1.0]
    X_new = X[:40] + 0.3
    np.testing.assert_array_equal(
        forest.predict_quantiles(X_new, quantiles),
        _qrf_reference(forest, X, y, X_new, quantiles, weight))


@pytest.mark.parametrize("cls", REGRESSORS)
def test_quantile_interval_coverage_on_heteroscedastic_data(cls):
    # y = x + noise whose sd grows with x. Leaves of at least 20 samples: the quantiles of
    # a leaf's targets underestimate the conditional spread when leaves are small (their
    # splits were chosen to make them homogeneous in y), so that 90% intervals from leaves
    # of 5 cover ~83% (silva's and the same weights on scikit-learn's trees alike).
    rng = np.random.RandomState(0)
    x = rng.uniform(0, 10, 4000)
    y = x + rng.normal(0.0, 0.1 + 0.3 * x)
    X = x[:, None]
    forest = cls(30, min_samples_leaf=20, random_state=0).fit(X[:2000], y[:2000])
    bounds = forest.predict_quantiles(X[2000:], [0.05, 0.95])
    assert bounds.shape == (2000, 2)
    covered = (y[2000:] >= bounds[:, 0]) & (y[2000:] <= bounds[:, 1])
    assert 0.85 <= covered.mean() <= 0.95
    # Heteroscedastic: intervals are wider where x is larger.
    width = bounds[:, 1] - bounds[:, 0]
    assert width[x[2000:] > 7].mean() > 2 * width[x[2000:] < 3].mean()


def test_quantiles_monotone_and_shape_and_bad_levels():
    X, y = datasets.make_regression(200, 4, noise=10.0, random_state=0)
    forest = RandomForestRegressor(10, random_state=0).fit(X, y)
    levels = np.linspace(0, 1, 11)
    quantiles = forest.predict_quantiles(X[:30], levels)
    assert quantiles.shape == (30, 11)
    assert np.all(np.diff(quantiles, axis=1) >= 0)
    assert forest.predict_quantiles(X[:5], 0.5).shape == (5, 1)
    for bad in ([-0.1], [1.5], [np.nan], [[0.1, 0.2]]):
        with pytest.raises(ValueError, match="quantiles"):
            forest.predict_quantiles(X[:5], bad)


# --------------------------------------------------------------- std, margin, strength
@pytest.mark.parametrize("cls", REGRESSORS)
def test_return_std_is_std_over_trees(cls):
    X, y = datasets.make_regression(200, 4, noise=10.0, random_state=0)
    forest = cls(12, random_state=0).fit(X, y)
    X_new = X[:50] + 0.5  # off the training points, where the trees disagree
    mean, std = forest.predict(X_new, return_std=True)
    per_tree = np.array([tree.predict(X_new) for tree in forest.estimators_])
    np.testing.assert_allclose(mean, per_tree.mean(axis=0))
    np.testing.assert_allclose(std, np.std(per_tree, axis=0), rtol=1e-9, atol=1e-9)
    assert std.min() > 1.0
    np.testing.assert_allclose(mean, forest.predict(X_new))


def test_margin_strength_correlation_from_hard_votes():
    X, y = datasets.make_classification(300, 6, n_informative=4, n_classes=3,
                                        random_state=0)
    labels = np.array(["a", "b", "c"])[y]  # string labels: the votes are mapped to classes
    forest = RandomForestClassifier(15, max_depth=3, random_state=0).fit(
        X[:200], labels[:200])
    X_test, y_test = X[200:], y[200:]
    votes = np.array([tree.predict(X_test) for tree in forest.estimators_]).T
    votes = np.searchsorted(forest.classes_, votes)  # label -> class index
    shares = np.stack([(votes == k).mean(axis=1) for k in range(3)], axis=1)
    n = len(y_test)
    wrong = shares.copy()
    wrong[np.arange(n), y_test] = -1.0
    strongest_wrong = wrong.argmax(axis=1)
    margin = shares[np.arange(n), y_test] - wrong.max(axis=1)
    np.testing.assert_allclose(forest.margin(X_test, labels[200:]), margin)

    result = forest.strength_correlation(X_test, labels[200:])
    strength = margin.mean()
    # Breiman (2001), sec. 2.2: rmg(θ) = I(h = y) − I(h = ĵ), sd(θ)² = p1 + p2 − (p1 − p2)².
    p1 = (votes == y_test[:, None]).mean(axis=0)
    p2 = (votes == strongest_wrong[:, None]).mean(axis=0)
    correlation = margin.var() / np.sqrt(p1 + p2 - (p1 - p2) ** 2).mean() ** 2
    assert result.strength == pytest.approx(strength)
    assert result.correlation == pytest.approx(correlation)
    assert strength > 0
    assert result.bound == pytest.approx(correlation * (1 - strength**2) / strength**2)
    # The bound is a bound: the forest's (hard-vote) error does not exceed it.
    assert np.mean(margin <= 0) <= result.bound


# ---------------------------------------------------------------- feature importances
@pytest.mark.parametrize("cls", FORESTS)
def test_feature_importances_sum_to_one_and_rank_informative_first(cls):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(400, 5))
    score = 2 * X[:, 0] + X[:, 1]
    y = (score > 0).astype(int) if cls in CLASSIFIERS else score + 0.1 * rng.normal(size=400)
    importances = cls(20, random_state=0).fit(X, y).feature_importances_
    assert importances.shape == (5,)
    assert importances.sum() == pytest.approx(1.0)
    assert importances[0] > importances[1] > importances[2:].max()


# ------------------------------------------------------ categorical and missing values
def _categorical_frame(n=600, seed=0):
    # The class is set by the category (8 of them, not ordered by their codes) and by
    # whether x is missing; the numeric values carry no signal beyond that.
    rng = np.random.RandomState(seed)
    category = rng.randint(0, 8, n)
    x = rng.normal(size=n)
    missing = rng.uniform(size=n) < 0.3
    x[missing] = np.nan
    y = (np.isin(category, [1, 4, 6]) ^ missing).astype(int)
    frame = pd.DataFrame({"c": pd.Categorical(np.array(list("pqrstuvw"))[category]),
                          "x": x, "noise": rng.normal(size=n)})
    return frame, y


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_categorical_and_missing_values(cls):
    frame, y = _categorical_frame()
    forest = cls(20, categorical_features="auto", random_state=0).fit(frame[:400], y[:400])
    np.testing.assert_array_equal(forest.is_categorical_, [True, False, False])
    assert forest.score(frame[400:], y[400:]) >= 0.97
    importances = forest.feature_importances_
    assert importances[2] < min(importances[0], importances[1])


def test_regressor_with_categorical_and_missing_values():
    frame, y = _categorical_frame()
    target = 3.0 * y + np.random.RandomState(1).normal(0, 0.1, len(y))
    forest = RandomForestRegressor(20, categorical_features="auto", random_state=0,
                                   oob_score=True).fit(frame[:400], target[:400])
    assert forest.score(frame[400:], target[400:]) > 0.95
    assert forest.oob_score_ > 0.95


# -------------------------------------------------------------------------- bad input
def _small_data():
    X, y = datasets.make_classification(40, 4, random_state=0)
    return X, y


@pytest.mark.parametrize("params, message", [
    ({"max_samples": 0}, "max_samples"),
    ({"max_samples": float("inf")}, "max_samples"),
    ({"max_samples": -1}, "max_samples"),
    ({"max_samples": 0.0}, "max_samples"),
    ({"max_samples": "half"}, "max_samples"),
    ({"max_samples": 0.5, "bootstrap": False}, "max_samples"),
    ({"max_samples": True, "bootstrap": True}, "max_samples"),
    ({"max_features": 5}, r"max_features must be in \[1, n_features=4\]"),
    ({"max_features": 0}, "max_features"),
    ({"max_features": 1.5}, "max_features"),
    ({"max_features": -1}, "max_features"),
    ({"max_features": "all"}, "max_features"),
    ({"oob_score": True, "bootstrap": False}, "oob_score"),
    ({"n_estimators": 0}, "n_estimators"),
    ({"n_estimators": 2.5}, "n_estimators"),
    ({"ccp_alpha": "cv"}, "ccp_alpha"),
    ({"bootstrap": "yes"}, "bootstrap"),
    ({"n_jobs": 0}, "n_jobs"),
    ({"criterion": "nope"}, "criterion"),
])
@pytest.mark.parametrize("cls", [RandomForestClassifier, ExtraTreesRegressor])
def test_bad_parameters(cls, params, message):
    X, y = _small_data()
    with pytest.raises((ValueError, TypeError), match=message):
        cls(3, **params).fit(X, y)


@pytest.mark.parametrize("cls, n_samples", [
    (RandomForestClassifier, 1), (RandomForestRegressor, 1), (RandomForestRegressor, 2)])
def test_too_few_samples_for_oob(cls, n_samples):
    # One sample is in every bootstrap. Of two samples one tree leaves at most one out,
    # and an out-of-bag R² needs two.
    X = np.arange(n_samples, dtype=float)[:, None]
    y = np.arange(n_samples)
    with pytest.raises(ValueError, match="oob_score=True: only [01] of"):
        cls(1, oob_score=True, random_state=0).fit(X, y)


def test_bad_targets_and_shapes():
    X, y = _small_data()
    for bad in (np.nan, np.inf):
        y_bad = y.astype(float)
        y_bad[3] = bad
        with pytest.raises(ValueError, match="y contains NaN or infinity"):
            RandomForestRegressor(3).fit(X, y_bad)
        with pytest.raises(ValueError, match="NaN or infinity"):
            RandomForestClassifier(3).fit(X, y_bad)
    with pytest.raises(ValueError, match="X has 40 samples but y has 39"):
        RandomForestClassifier(3).fit(X, y[:-1])
    with pytest.raises(ValueError, match="two-dimensional"):  # 2-D y: multi-output
        RandomForestRegressor(3).fit(X, y[:, None, None])
    forest = RandomForestClassifier(3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        forest.predict(X[:, :3])
    with pytest.raises(ValueError, match="infinity|inf"):
        RandomForestClassifier(3).fit(np.where(X > 1, np.inf, X), y)


# -------------------------------------------------------------------------- callbacks
@pytest.mark.filterwarnings("ignore:.*no out-of-bag prediction:UserWarning")
@pytest.mark.parametrize("cls", [RandomForestClassifier, ExtraTreesRegressor])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_callbacks_see_trees_in_order_and_can_stop(cls, n_jobs):
    X, y = datasets.make_classification(200, 5, random_state=0)
    seen = []

    def record(env):
        seen.append((env.iteration, env.begin_iteration, env.end_iteration))

    forest = cls(7, random_state=0, n_jobs=n_jobs).fit(X, y, callbacks=[record])
    assert seen == [(t, 0, 7) for t in range(7)]
    assert len(forest.estimators_) == 7

    def stop_after_four(env):
        if env.iteration == 3:
            raise EarlyStopException(env.iteration)

    stopped = cls(7, random_state=0, n_jobs=n_jobs, oob_score=True, bootstrap=True).fit(
        X, y, callbacks=[stop_after_four])
    assert len(stopped.estimators_) == 4
    assert stopped.oob_curve_.shape == (4,)
    # The four trees are the first four of the full forest.
    full = cls(7, random_state=0, bootstrap=True).fit(X, y)
    for mine, theirs in zip(_tree_arrays(stopped), _tree_arrays(full)[:4], strict=True):
        np.testing.assert_array_equal(mine[2], theirs[2])
    predict = "predict_proba" if cls in CLASSIFIERS else "predict"
    per_tree = [getattr(tree, predict)(X) for tree in full.estimators_[:4]]
    np.testing.assert_allclose(getattr(stopped, predict)(X), np.mean(per_tree, axis=0))


def test_callbacks_continue_counting_after_warm_start():
    X, y = datasets.make_classification(100, 4, random_state=0)
    seen = []
    forest = RandomForestClassifier(3, warm_start=True, random_state=0)
    forest.fit(X, y, callbacks=[lambda env: seen.append(env.iteration)])
    forest.set_params(n_estimators=5).fit(
        X, y, callbacks=[lambda env: seen.append((env.iteration, env.begin_iteration))])
    assert seen == [0, 1, 2, (3, 3), (4, 3)]


# ------------------------------------------------------------------------ persistence
@pytest.mark.filterwarnings("ignore:.*no out-of-bag prediction:UserWarning")
@pytest.mark.parametrize("cls", FORESTS)
def test_save_and_load(cls, tmp_path):
    frame, y = _categorical_frame(200)
    target = y if cls in CLASSIFIERS else y + frame["noise"].to_numpy()
    forest = cls(6, categorical_features="auto", random_state=0, oob_score=True,
                 bootstrap=True).fit(frame, target)
    path = tmp_path / "forest.silva"
    forest.save(path)
    loaded = silva.load(path)
    assert type(loaded) is cls
    predict = "predict_proba" if cls in CLASSIFIERS else "predict"
    np.testing.assert_array_equal(getattr(loaded, predict)(frame), getattr(forest, predict)(frame))
    np.testing.assert_array_equal(loaded.apply(frame), forest.apply(frame))
    assert loaded.oob_score_ == forest.oob_score_
    if cls in REGRESSORS:
        np.testing.assert_array_equal(loaded.predict_quantiles(frame, [0.2, 0.8]),
                                      forest.predict_quantiles(frame, [0.2, 0.8]))


@pytest.mark.parametrize("cls", [RandomForestClassifier, ExtraTreesClassifier])
def test_min_significance_reaches_the_trees(cls):
    rng = np.random.RandomState(0)
    X = rng.rand(400, 5)
    noise = rng.randint(0, 2, 400)  # labels independent of X
    full = cls(n_estimators=5, random_state=0).fit(X, noise)
    stopped = cls(n_estimators=5, random_state=0, min_significance=0.01).fit(X, noise)
    # On noise almost no split is significant at 1%: the trees collapse.
    assert sum(e.tree_.node_count for e in stopped.estimators_) < 0.1 * sum(
        e.tree_.node_count for e in full.estimators_)
    # A real signal is still split on, and the forest learns it.
    signal = (X[:, 0] > 0.5).astype(int)
    forest = cls(n_estimators=5, random_state=0, min_significance=0.01).fit(X, signal)
    assert all(e.tree_.node_count >= 3 for e in forest.estimators_)
    assert forest.score(X, signal) > 0.95
    with pytest.raises(ValueError, match="min_significance"):
        cls(min_significance=1.5).fit(X, signal)


def test_probabilities_never_exceed_one():
    # 1/n_trees weights summed tree by tree rounded to 1.0000000000000007 here once.
    X, y = datasets.load_breast_cancer(return_X_y=True)
    forest = RandomForestClassifier(n_estimators=100, random_state=0).fit(X[:400], y[:400])
    proba = forest.predict_proba(X[400:])
    assert proba.max() <= 1.0 and proba.min() >= 0.0
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    mean_of_trees = np.mean([tree.predict_proba(X[400:]) for tree in forest.estimators_], axis=0)
    np.testing.assert_allclose(proba, mean_of_trees, rtol=0, atol=1e-12)


@pytest.mark.parametrize("cls", [RandomForestClassifier, RandomForestRegressor])
def test_oob_score_callable_scores_the_out_of_bag_predictions(cls):
    """oob_score given as score_func(y_true, y_pred): applied to the out-of-bag
    predictions (class indices for classifiers), as scikit-learn does."""
    from sklearn.metrics import f1_score, mean_absolute_error

    is_classifier = cls is RandomForestClassifier
    X, y = (make_classification if is_classifier else make_regression)(
        200, 6, random_state=0)
    scorer = partial(f1_score, average="macro") if is_classifier else mean_absolute_error
    forest = cls(n_estimators=30, oob_score=scorer, random_state=0).fit(X, y)
    if is_classifier:
        covered = ~np.isnan(forest.oob_decision_function_[:, 0])
        expected = scorer(y[covered], np.argmax(forest.oob_decision_function_[covered], 1))
    else:
        covered = ~np.isnan(forest.oob_prediction_)
        expected = scorer(y[covered], forest.oob_prediction_[covered])
    assert forest.oob_score_ == pytest.approx(expected)
    default = cls(n_estimators=30, oob_score=True, random_state=0).fit(X, y)
    assert default.oob_score_ != pytest.approx(forest.oob_score_)
    with pytest.raises(ValueError, match="Out of bag estimation only available if "
                                         "bootstrap=True"):
        cls(oob_score=scorer, bootstrap=False).fit(X, y)
    with pytest.raises(ValueError, match="oob_score must be True, False or a metric"):
        cls(oob_score="f1").fit(X, y)


def test_forest_face_of_scikit_learn():
    """len(), indexing, iteration, estimator, estimators_samples_ and scikit-learn's
    messages for max_samples without bootstrap and a warm start that adds nothing."""
    X, y = make_classification(80, 5, random_state=0)
    forest = RandomForestClassifier(n_estimators=3, max_samples=0.5, warm_start=True,
                                    random_state=0).fit(X, y)
    assert len(forest) == 3 and forest[2] is forest.estimators_[2]
    assert list(forest) == forest.estimators_
    assert forest.estimator.get_params()["max_depth"] == forest.max_depth
    samples = forest.estimators_samples_
    assert [s.dtype for s in samples] == [np.int32] * 3
    assert [len(s) for s in samples] == [40] * 3
    # The draw is the one the trees were grown on: its distinct rows are the in-bag ones.
    inbag = forest._inbag_mask(80)
    for t, rows in enumerate(samples):
        np.testing.assert_array_equal(np.unique(rows), np.flatnonzero(inbag[t]))
    with pytest.warns(UserWarning, match="without increasing n_estimators"):
        forest.fit(X, y)
    no_bootstrap = ExtraTreesClassifier(n_estimators=2).fit(X, y)
    assert all(np.array_equal(s, np.arange(80)) for s in no_bootstrap.estimators_samples_)
    with pytest.raises(ValueError, match="`max_sample` cannot be set if `bootstrap=False`"):
        ExtraTreesClassifier(max_samples=0.5).fit(X, y)


def test_decision_path_stacks_the_trees_paths():
    """Tree t's block of the forest's indicator is that tree's own decision_path, and
    every sample visits each tree's root and exactly one of its leaves."""
    X, y = make_classification(50, 4, random_state=0)
    forest = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, y)
    indicator, n_nodes_ptr = forest.decision_path(X)
    assert n_nodes_ptr[-1] == indicator.shape[1] and len(n_nodes_ptr) == 5
    leaves = forest.apply(X)
    for t, tree in enumerate(forest.estimators_):
        block = indicator[:, n_nodes_ptr[t]:n_nodes_ptr[t + 1]].toarray()
        np.testing.assert_array_equal(block, tree.decision_path(X).toarray())
        assert block[:, 0].all()
        np.testing.assert_array_equal(block[np.arange(50), leaves[:, t]], 1)


@pytest.mark.parametrize("cls", [RandomForestRegressor, ExtraTreesClassifier])
def test_bootstrap_may_draw_more_rows_than_there_are(cls):
    """max_samples above n_samples (an int, or a fraction above 1) draws that many rows
    with replacement, as scikit-learn's forests allow; 1.5 and int(1.5 n) are the same."""
    X, y = make_classification(80, 4, random_state=0)
    as_fraction = cls(n_estimators=3, max_samples=1.5, bootstrap=True,
                      random_state=0).fit(X, y)
    as_count = cls(n_estimators=3, max_samples=120, bootstrap=True,
                   random_state=0).fit(X, y)
    assert as_fraction._n_samples_bootstrap == as_count._n_samples_bootstrap == 120
    assert all(rows.shape == (120,) for rows in as_count.estimators_samples_)
    np.testing.assert_array_equal(as_fraction.predict(X), as_count.predict(X))
    for bad in (0, -0.5, np.inf):
        with pytest.raises(ValueError, match="max_samples"):
            cls(n_estimators=2, max_samples=bad, bootstrap=True).fit(X, y)


@pytest.mark.parametrize("cls", [RandomForestClassifier, RandomForestRegressor])
def test_warm_start_adding_no_tree_keeps_the_forest_when_given_another_target(cls):
    # scikit-learn's forests warn and keep their trees when a warm start has nothing to
    # add, whatever y they are given (its test_class_weight_errors); silva does too when
    # the target differs in classes or outputs, and still refuses it when trees are added.
    X, y = datasets.make_classification(80, 4, random_state=0)
    other = np.column_stack([y, 2 * y])  # two outputs, other classes in the second
    forest = cls(4, warm_start=True, random_state=0).fit(X, y)
    predict = "predict_proba" if cls is RandomForestClassifier else "predict"
    before = getattr(forest, predict)(X)
    with pytest.warns(UserWarning, match="does not fit new trees.*the forest is unchanged"):
        forest.fit(X, other)
    np.testing.assert_array_equal(getattr(forest, predict)(X), before)
    assert forest.n_outputs_ == 1
    if cls is RandomForestClassifier:
        np.testing.assert_array_equal(forest.classes_, [0, 1])
    with pytest.raises(ValueError):
        forest.set_params(n_estimators=6).fit(X, other)


def test_warm_start_adding_no_tree_still_computes_the_requested_oob_score():
    # The same target goes on to the out-of-bag estimate (scikit-learn's
    # test_warm_start_oob), equal to a one-shot fit's.
    X, y = datasets.make_classification(120, 5, random_state=1)
    at_once = RandomForestClassifier(12, random_state=1, oob_score=True).fit(X, y)
    forest = RandomForestClassifier(12, warm_start=True, random_state=1).fit(X, y)
    assert not hasattr(forest, "oob_score_")
    with pytest.warns(UserWarning, match="does not fit new trees"):
        forest.set_params(oob_score=True).fit(X, y)
    assert forest.oob_score_ == at_once.oob_score_


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_single_node_tree_keeps_its_own_arrays(n_jobs):
    """A forest's trees grow on per-thread buffers that the next tree reuses: a tree
    whose root is a leaf (a pure bootstrap sample), whose one-element arrays numpy may
    leave as views, must not share them with another tree."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    y = np.zeros(12, dtype=int)
    y[0] = 1  # most bootstrap samples miss the one positive row: a pure root
    forest = RandomForestClassifier(n_estimators=40, random_state=0, n_jobs=n_jobs).fit(X, y)
    trees = [t.tree_ for t in forest.estimators_]
    leaves_alone = [tree for tree in trees if tree.node_count == 1]
    assert 2 <= len(leaves_alone) < 40
    for tree in leaves_alone:
        assert tree.threshold[0] == -2.0 and tree.feature[0] == -2
        assert tree.impurity[0] == 0.0 and tree.weighted_n_node_samples[0] == 12
        for other in trees:
            if other is not tree:
                for name in ("threshold", "impurity", "weighted_n_node_samples",
                             "is_categorical", "value"):
                    assert not np.shares_memory(getattr(tree, name), getattr(other, name))


def test_a_single_node_tree_holds_no_view_of_the_growers_node_table():
    """numpy calls a one-element field view contiguous, so a tree whose root is a leaf
    kept views of the grower's whole node table (spare capacity included) until
    run_grower copied a one-node table."""
    X = np.arange(20.0).reshape(10, 2)
    tree = silva.DecisionTreeClassifier().fit(X, np.zeros(10, dtype=int)).tree_
    assert tree.node_count == 1
    for name in ("threshold", "impurity", "weighted_n_node_samples", "is_categorical"):
        array = getattr(tree, name)
        assert array.base is None or array.base.size == array.size, name
