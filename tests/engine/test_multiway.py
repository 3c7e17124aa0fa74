"""The multiway kernels: ID3's and C4.5's split scores against the textbook values of
Quinlan's weather data (Quinlan 1986, table 1; Quinlan 1993, sec. 2.2 and 3.1) and a
numpy reference; C4.5's binomial error limit; the branches x classes chi-square test
against scipy."""

import numpy as np
import pytest
from scipy.stats import binom, chi2_contingency
from sklearn.datasets import make_classification

from silva.engine import multiway as mw

# Quinlan (1993, fig. 2-1): outlook, temperature, humidity, windy -> play.
OUTLOOK = {"sunny": 0, "overcast": 1, "rain": 2}
WEATHER = [
    ("sunny", 75, 70, True, 1), ("sunny", 80, 90, True, 0), ("sunny", 85, 85, False, 0),
    ("sunny", 72, 95, False, 0), ("sunny", 69, 70, False, 1),
    ("overcast", 72, 90, True, 1), ("overcast", 83, 78, False, 1),
    ("overcast", 64, 65, True, 1), ("overcast", 81, 75, False, 1),
    ("rain", 71, 80, True, 0), ("rain", 65, 70, True, 0), ("rain", 75, 80, False, 1),
    ("rain", 68, 80, False, 1), ("rain", 70, 96, False, 1),
]


def _weather():
    """X (outlook code, temperature, humidity, windy), y (1 = play)."""
    X = np.array([[OUTLOOK[o], t, h, float(w)] for o, t, h, w, _ in WEATHER])
    y = np.array([row[-1] for row in WEATHER], dtype=np.int64)
    return X, y


def test_entropy_in_bits():
    assert mw.entropy_bits(np.array([9.0, 5.0])) == pytest.approx(0.940286, abs=1e-6)
    assert mw.entropy_bits(np.array([4.0, 0.0])) == 0.0
    assert mw.entropy_bits(np.zeros(3)) == 0.0


# Quinlan (1986, table 1), as Mitchell (1997, table 3.2) prints it, coded:
# outlook (sunny 0, overcast 1, rain 2), temperature (hot 0, mild 1, cool 2), humidity
# (high 0, normal 1), wind (weak 0, strong 1) -> play.
PLAY_TENNIS = np.array([
    [0, 0, 0, 0, 0], [0, 0, 0, 1, 0], [1, 0, 0, 0, 1], [2, 1, 0, 0, 1], [2, 2, 1, 0, 1],
    [2, 2, 1, 1, 0], [1, 2, 1, 1, 1], [0, 1, 0, 0, 0], [0, 2, 1, 0, 1], [2, 1, 1, 0, 1],
    [0, 1, 1, 1, 1], [1, 1, 0, 1, 1], [1, 0, 1, 0, 1], [2, 1, 0, 1, 0],
])


def test_id3_gains_of_play_tennis():
    # Quinlan (1986): gain(outlook) = 0.246, gain(humidity) = 0.151, gain(wind) = 0.048,
    # gain(temperature) = 0.029.
    codes = np.ascontiguousarray(PLAY_TENNIS[:, :4].T).astype(np.uint8)
    y = PLAY_TENNIS[:, 4].astype(np.int64)
    samples = np.arange(14, dtype=np.int64)
    gains = mw.id3_gains(codes, samples, y, np.ones(14), 2, 3, np.ones(4, dtype=np.uint8))
    np.testing.assert_allclose(gains, [0.246750, 0.029223, 0.151836, 0.048127], atol=1e-6)
    # A feature already tested on the path is not scored; weights count as copies.
    not_allowed = mw.id3_gains(codes, samples, y, np.ones(14), 2, 3,
                               np.array([0, 1, 1, 1], dtype=np.uint8))
    assert not_allowed[0] == -np.inf and not_allowed[2] == gains[2]
    doubled = np.r_[samples, samples]
    weighted = mw.id3_gains(codes, samples, y, np.full(14, 2.0), 2, 3,
                            np.ones(4, dtype=np.uint8))
    copies = mw.id3_gains(np.hstack([codes, codes]), doubled, np.r_[y, y], np.ones(28), 2,
                          3, np.ones(4, dtype=np.uint8))
    np.testing.assert_allclose(weighted, copies, rtol=1e-12)
    np.testing.assert_allclose(weighted, gains, rtol=1e-12)


def _c45(X, y, is_categorical, weights=None, min_objects=2.0, parallel_min_work=10**9):
    n_features = X.shape[1]
    grids = [np.unique(X[~np.isnan(X[:, f]), f]) for f in range(n_features)]
    n_grid = np.array([g.size for g in grids], dtype=np.int64)
    grid = np.full((n_features, n_grid.max()), np.inf)
    for f, g in enumerate(grids):
        grid[f, :g.size] = g
    n_values = np.array([np.nanmax(X[:, f]) + 1 if is_categorical[f] else 0
                         for f in range(n_features)], dtype=np.int64)
    weights = np.ones(X.shape[0]) if weights is None else weights
    return mw.c45_evaluate(X, np.arange(X.shape[0], dtype=np.int64), weights, y, 2,
                           np.asarray(is_categorical, dtype=np.uint8), n_values,
                           np.ones(n_features, dtype=np.uint8), min_objects, grid, n_grid,
                           parallel_min_work)


def test_c45_gain_ratio_of_outlook():
    # Quinlan (1993, sec. 2.2): gain 0.246, split info 1.577, gain ratio 0.156.
    X, y = _weather()
    gain, split_info, _ = _c45(X[:, :1], y, [True])
    assert gain[0] == pytest.approx(0.246750, abs=1e-6)
    assert split_info[0] == pytest.approx(1.577406, abs=1e-6)
    assert gain[0] / split_info[0] == pytest.approx(0.156428, abs=1e-6)


def test_c45_unknown_outlook():
    # Quinlan (1993, sec. 3.1): with the outlook of case 6 unknown, the gain is taken on
    # the 13 known cases and scaled by 13/14: 13/14 (0.961 - 0.747) = 0.199, and the
    # split information counts the unknown case as a fourth subset: 1.809.
    X, y = _weather()
    X[5, 0] = np.nan
    gain, split_info, _ = _c45(X[:, :1], y, [True])
    known = np.r_[0:5, 6:14]
    info_t = mw.entropy_bits(np.bincount(y[known]).astype(float))
    assert info_t == pytest.approx(0.961, abs=5e-4)
    # Known cases: sunny 2 play / 3 not, overcast 3 / 0, rain 3 / 2.
    info_x = 10 / 13 * mw.entropy_bits(np.array([2.0, 3.0]))
    assert info_x == pytest.approx(0.747, abs=5e-4)
    assert gain[0] == pytest.approx(13 / 14 * (info_t - info_x), abs=1e-12)
    assert gain[0] == pytest.approx(0.199, abs=5e-4)
    assert split_info[0] == pytest.approx(1.809, abs=5e-4)


def _entropy(y):
    p = np.bincount(y) / y.size
    p = p[p > 0]
    return -np.sum(p * np.log2(p))


def test_c45_threshold_of_a_continuous_feature_is_the_best_cut():
    # Every cut between distinct humidities leaving >= 2 cases a side, scored in numpy;
    # the threshold is the largest training value not above the best cut's midpoint.
    X, y = _weather()
    humidity = X[:, 2]
    gain, split_info, threshold = _c45(X[:, 2:3], y, [False])
    best, best_cut = -np.inf, None
    for low, high in zip(np.unique(humidity)[:-1], np.unique(humidity)[1:], strict=True):
        left = humidity <= low
        if min(left.sum(), (~left).sum()) < 2:
            continue
        cut_gain = _entropy(y) - (left.mean() * _entropy(y[left])
                                  + (~left).mean() * _entropy(y[~left]))
        if cut_gain > best + 1e-12:
            best, best_cut = cut_gain, (low + high) / 2
    values = np.unique(humidity)
    assert threshold[0] == values[values <= best_cut].max()
    left = humidity <= threshold[0]
    # C4.5 scores a continuous test's gain net of log2(N - 1) / |T| (Quinlan 1996) only
    # in later releases; this one reports the plain gain.
    assert gain[0] == pytest.approx(best, abs=1e-9)
    assert split_info[0] == pytest.approx(_entropy(left.astype(int)), abs=1e-9)


# ------------------------------------------------------------------ C4.5 pruning and CHAID

def test_binomial_upper_limit_matches_quinlan():
    # Quinlan (1993, sec. 4.2): U_25%(0, 6) = 0.206, U_25%(0, 9) = 0.143, U_25%(0, 1) = 0.75.
    values = mw.binomial_upper_limit([0, 0, 0], [6, 9, 1], 0.25)
    assert np.round(values, 3).tolist() == [0.206, 0.143, 0.75]
    # The limit is the rate p with P(X <= E | N, p) = CF, exactly.
    p = mw.binomial_upper_limit([1, 3], [16, 20], 0.25)
    assert binom.cdf([1, 3], [16, 20], p) == pytest.approx([0.25, 0.25])
    # Quinlan's U_25%(1, 16) = 0.157 comes from his program's normal approximation.
    assert p[0] == pytest.approx(0.157, abs=0.003)


@pytest.mark.parametrize("table", [
    [[2, 3], [4, 0], [3, 2]],                 # play-tennis outlook
    [[10, 2, 0], [3, 9, 1], [0, 0, 0], [4, 4, 12]],  # an empty branch
    [[2, 0, 0], [5 / 13, 3, 0]],              # fractional weights, an absent class
    [[40, 38], [41, 39]],                     # close to independence
    [[200, 0], [0, 300]],                     # far from it: tiny p-value
])
def test_contingency_chi2_matches_scipy(table):
    statistic, df, p_value = mw.contingency_chi2(np.asarray(table, dtype=float))
    full = np.asarray(table, dtype=float)
    reduced = full[full.sum(axis=1) > 0][:, full.sum(axis=0) > 0]
    reference = chi2_contingency(reduced, correction=False)
    assert statistic == pytest.approx(reference.statistic, rel=1e-12)
    assert df == reference.dof
    assert p_value == pytest.approx(reference.pvalue, rel=1e-9, abs=1e-300)


def test_contingency_chi2_without_anything_to_test():
    for table in ([[3.0, 0.0], [5.0, 0.0]], [[0.0, 0.0], [2.0, 7.0]], [[0.0]]):
        assert mw.contingency_chi2(np.asarray(table)) == (0.0, 0, 1.0)


def test_c45_parallel_and_serial_feature_search_agree():
    X, y = make_classification(n_samples=400, n_features=12, random_state=3)
    X[::7, 2] = np.nan
    serial = _c45(X, y.astype(np.int64), [False] * 12, parallel_min_work=10**9)
    parallel = _c45(X, y.astype(np.int64), [False] * 12, parallel_min_work=0)
    for a, b in zip(serial, parallel, strict=True):
        assert np.array_equal(a, b)
    assert np.isfinite(serial[0]).all()
