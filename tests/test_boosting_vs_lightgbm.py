"""silva's first boosting trees against LightGBM's on the same bins (pygbm's approach).

With features of few distinct values, both libraries bin them exactly (one bin per
value), so with the same lambda, leaves, learning rate and minimum leaf sizes, and no
sampling, both must grow the same trees: same leaf values, same predictions.
"""

import numpy as np
import pytest

from silva.boosting import GradientBoostingClassifier, GradientBoostingRegressor

lgb = pytest.importorskip("lightgbm")

N_ITER = 5


def _data(seed, classification):
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 40, size=(600, 5)).astype(float)
    score = 0.1 * X[:, 0] - 0.08 * X[:, 1] + 0.002 * X[:, 2] * X[:, 3] + rng.randn(600)
    if classification:
        return X, (score > np.median(score)).astype(int)
    return X, score


def _lgb_params():
    return dict(n_estimators=N_ITER, num_leaves=8, learning_rate=0.3, reg_lambda=1.0,
                reg_alpha=0.0, min_child_samples=10, min_child_weight=1e-3,
                min_split_gain=0.0, max_bin=255, min_data_in_bin=1, subsample=1.0,
                colsample_bytree=1.0, verbose=-1, deterministic=True, n_jobs=1)


def _silva_params():
    return dict(n_estimators=N_ITER, max_leaf_nodes=8, learning_rate=0.3,
                l2_regularization=1.0, min_samples_leaf=10, min_child_weight=1e-3,
                max_bins=255)


def _lgb_leaf_values(booster, tree):
    frame = booster.trees_to_dataframe()
    leaves = frame[(frame.tree_index == tree) & frame.split_feature.isna()]
    return np.sort(leaves.value.to_numpy())


def _silva_leaf_values(model, iteration):
    tree = model.estimators_[iteration][0]
    return np.sort(tree.value[tree.children_left == -1, 0, 0])


@pytest.mark.parametrize("classification", [False, True])
def test_first_trees_match_lightgbm(classification):
    X, y = _data(0, classification)
    if classification:
        ours = GradientBoostingClassifier(**_silva_params()).fit(X, y)
        theirs = lgb.LGBMClassifier(**_lgb_params()).fit(X, y)
    else:
        ours = GradientBoostingRegressor(**_silva_params()).fit(X, y)
        theirs = lgb.LGBMRegressor(**_lgb_params()).fit(X, y)
    booster = theirs.booster_
    # LightGBM adds the initial score to its first tree's leaves.
    # LightGBM keeps gradients in float32: agreement is to about 1e-8, not 1e-15.
    np.testing.assert_allclose(_silva_leaf_values(ours, 0) + ours.init_raw_[0],
                               _lgb_leaf_values(booster, 0), rtol=1e-6, atol=1e-7)
    for t in range(1, N_ITER):
        np.testing.assert_allclose(_silva_leaf_values(ours, t), _lgb_leaf_values(booster, t),
                                   rtol=1e-6, atol=1e-7)
    for n in (1, 3, N_ITER):
        if classification:
            mine = ours.decision_function(X, iteration_range=(0, n))
        else:
            mine = ours.predict(X, iteration_range=(0, n))
        np.testing.assert_allclose(mine, booster.predict(X, num_iteration=n, raw_score=True),
                                   rtol=1e-6, atol=1e-7)
    # Split gains: LightGBM reports the un-halved bracket.
    frame = booster.trees_to_dataframe()
    splits = frame[(frame.tree_index == 1) & frame.split_feature.notna()]
    tree = ours.estimators_[1][0]
    internal = tree.children_left != -1
    np.testing.assert_allclose(np.sort(2 * ours._split_gains[1][internal]),
                               np.sort(splits.split_gain.to_numpy()), rtol=1e-5)  # float32 dump
