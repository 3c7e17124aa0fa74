"""Significance: the chi-square test of a split's contingency table, compiled.

CHAID-style pre-pruning (Kass 1980) leaves a node unsplit when its best split does not
separate the classes significantly: the children's class counts form a 2 x K
contingency table, whose Pearson statistic ``sum (observed - expected)**2 / expected``
(expected counts from the margins) is chi-square distributed with ``K' - 1`` degrees of
freedom under independence, ``K'`` the number of classes present in the node. The test
is made once per node, on the split the criterion chose, so it costs nothing in the
scans.

Counts are the children's weighted class counts rescaled so that the table sums to the
node's number of samples: with unit weights they are the plain counts, and multiplying
every weight by a constant does not change the p-value. Unlike CHAID, no Bonferroni
correction is applied for having picked the best of many candidate splits, so the
p-value is that of a single pre-specified split (optimistic for the chosen one).

The p-value is the chi-square survival function ``Q(df / 2, x / 2)``, the regularised
upper incomplete gamma function, evaluated as in Press et al., *Numerical Recipes*
(2007, sec. 6.2): its power series below ``x < a + 1`` and Lentz's continued fraction
above, where each converges fast.
"""

import math

import numpy as np

from silva.engine.jit import kernel

_EPS = 1e-16
_TINY = 1e-300
_MAX_ITERATIONS = 100_000


@kernel()
def _lower_series(a, x, log_prefactor):
    """P(a, x) from its series ``x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a+1)...(a+n))``."""
    term = 1.0 / a
    total = term
    denominator = a
    for _ in range(_MAX_ITERATIONS):
        denominator += 1.0
        term *= x / denominator
        total += term
        if abs(term) < abs(total) * _EPS:
            break
    return total * math.exp(log_prefactor)


@kernel()
def _upper_continued_fraction(a, x, log_prefactor):
    """Q(a, x) from its continued fraction, by the modified Lentz method."""
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    h = d
    for i in range(1, _MAX_ITERATIONS):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        if abs(d) < _TINY:
            d = _TINY
        c = b + an / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return math.exp(log_prefactor) * h


@kernel()
def regularized_upper_gamma(a, x):
    """Q(a, x) = Gamma(a, x) / Gamma(a) for a > 0, x >= 0 (NaN otherwise)."""
    if a <= 0.0 or x < 0.0 or np.isnan(x):
        return np.nan
    if x == 0.0:
        return 1.0
    if np.isinf(x):
        return 0.0
    log_prefactor = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1.0:
        return max(0.0, 1.0 - _lower_series(a, x, log_prefactor))
    return _upper_continued_fraction(a, x, log_prefactor)


@kernel()
def chi2_sf(statistic, df):
    """Survival function of the chi-square distribution with ``df`` degrees of freedom."""
    return regularized_upper_gamma(0.5 * df, 0.5 * statistic)


@kernel()
def split_p_value(node_sums, left_sums):
    """p-value of the chi-square test of independence of a split and the class.

    ``node_sums`` and ``left_sums`` are classification channel sums (channel 0 the
    sample count, then one weighted count per class); the right child is the
    difference. Returns 1.0 when the table has fewer than two classes or an empty
    child (nothing to test).
    """
    n_channels = node_sums.shape[0]
    weight = 0.0
    left_weight = 0.0
    n_present = 0
    for k in range(1, n_channels):
        weight += node_sums[k]
        left_weight += left_sums[k]
        if node_sums[k] > 0.0:
            n_present += 1
    right_weight = weight - left_weight
    if n_present < 2 or weight <= 0.0 or left_weight <= 0.0 or right_weight <= 0.0:
        return 1.0
    # Rescaled so that the table sums to the node's sample count (module docstring).
    scale = node_sums[0] / weight
    statistic = 0.0
    for k in range(1, n_channels):
        column = node_sums[k]
        if column <= 0.0:
            continue
        for side in range(2):
            observed = left_sums[k] if side == 0 else column - left_sums[k]
            expected = column * (left_weight if side == 0 else right_weight) / weight
            diff = observed - expected
            statistic += diff * diff / expected
    return chi2_sf(statistic * scale, n_present - 1.0)
