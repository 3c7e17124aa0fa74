"""Losses for gradient boosting: gradient, hessian, initial constant, line search, link.

Boosting fits an additive model ``F(x) = F_0 + sum_m f_m(x)`` on the *raw* scale (log-odds,
log-mean, ...); a loss ``L(y, F)`` supplies, per sample,

- the gradient ``g = dL/dF`` and hessian ``h = d2L/dF2`` at the current raw prediction
  (Friedman 2001 fits trees to ``-g``; Chen & Guestrin 2016 use ``g`` and ``h`` in the
  second-order objective), both *unweighted*: the booster multiplies them by the sample
  weights;
- the optimal constant ``F_0 = argmin_c sum_i w_i L(y_i, c)`` (the initial prediction);
- a per-leaf line search ``argmin_c sum_{i in leaf} w_i L(y_i, F_i + c)`` where it is not a
  Newton step (Friedman 2001, Algorithms 2-4: the median of the residuals for
  absolute error, their quantile for quantile loss, Friedman's one-step estimate for
  Huber);
- the loss value (the weighted mean of ``L``, used for metrics and early stopping);
- the link from the raw scale to predictions (identity, exp, sigmoid, softmax).

Definitions (``F`` raw, ``r = y - F``):

============== ========================================== ===============================
loss           L(y, F)                                    link
============== ========================================== ===============================
squared_error  (y - F)^2 / 2                              identity
absolute_error |y - F|                                    identity
huber          r^2/2 if |r| <= d else d(|r| - d/2)        identity; ``d`` is the ``alpha``
                                                          quantile of ``|r|`` (Friedman
                                                          2001, sec. 4.4), per iteration
quantile       alpha r if r > 0 else (alpha - 1) r        identity
poisson        exp(F) - y F                               exp
gamma          y exp(-F) + F                              exp
tweedie        -y e^{(1-p)F}/(1-p) + e^{(2-p)F}/(2-p)     exp; power ``p`` in (1, 2)
log_loss       log(1 + e^F) - y F; multinomial:           sigmoid; softmax
               logsumexp(F) - F_y
exponential    exp(-(2y - 1) F)                           sigmoid(2F) (AdaBoost's loss,
                                                          Friedman, Hastie & Tibshirani
                                                          2000)
============== ========================================== ===============================

Hessians: absolute_error, quantile and huber use ``h = 1`` (their second derivative is
zero or a point mass; their leaf values come from the line search instead, as LightGBM's
"leaf renewal" does). The multinomial hessian is ``K/(K-1) p_k (1 - p_k)``: the diagonal of
the softmax hessian scaled by Friedman's ``(K-1)/K`` factor (Friedman 2001, Algorithm 6),
which LightGBM uses too.

Per-sample work is compiled with numba and parallel over samples; every sample's value is
computed independently, so results do not depend on the number of threads. The gradient
kernels exponentiate with :func:`silva.engine.vector_exp.exp` (within 1 ulp of the C
library's, and vectorised: the binary log loss's gradients took a quarter of the time).
"""

import numbers

import numba as nb
import numpy as np

from silva.engine.jit import kernel
from silva.engine.specialize import serial_copy
from silva.engine.vector_exp import exp

_EPS = 1e-15

# Each built-in loss's code, the ``code`` attribute of its class: the compiled kernels
# that serve several losses (``_pointwise_loss``) branch on it. numba reads these
# module-level ints as compile-time constants.
SQUARED_ERROR = 0
ABSOLUTE_ERROR = 1
HUBER = 2
QUANTILE = 3
POISSON = 4
GAMMA = 5
TWEEDIE = 6
BINARY_LOG_LOSS = 7
MULTINOMIAL_LOG_LOSS = 8
EXPONENTIAL = 9

# The line searches of ``leaf_line_search``, the ``line_search`` attribute of a loss
# whose leaves it sets: a weighted quantile of the residuals, or Friedman's Huber step.
LINE_SEARCH_QUANTILE = 0
LINE_SEARCH_HUBER = 1
# exp() overflows above ~709: raw predictions are clipped there before exponentiating.
_MAX_EXP = 700.0


# ---------------------------------------------------------------- compiled kernels
@kernel(parallel=True)
def _squared_error_gh(y, raw, grad, hess):
    for i in nb.prange(y.shape[0]):
        grad[i, 0] = raw[i, 0] - y[i]
        hess[i, 0] = 1.0


@kernel(parallel=True)
def _absolute_error_gh(y, raw, grad, hess):
    for i in nb.prange(y.shape[0]):
        r = raw[i, 0] - y[i]
        grad[i, 0] = 1.0 if r > 0 else (-1.0 if r < 0 else 0.0)
        hess[i, 0] = 1.0


@kernel(parallel=True)
def _huber_gh(y, raw, delta, grad, hess):
    for i in nb.prange(y.shape[0]):
        r = raw[i, 0] - y[i]
        if abs(r) <= delta:
            grad[i, 0] = r
        else:
            grad[i, 0] = delta if r > 0 else -delta
        hess[i, 0] = 1.0


@kernel(parallel=True)
def _quantile_gh(y, raw, alpha, grad, hess):
    for i in nb.prange(y.shape[0]):
        # dL/dF: -alpha where y > F (under-prediction), 1 - alpha where y < F.
        grad[i, 0] = -alpha if y[i] > raw[i, 0] else (1.0 - alpha if y[i] < raw[i, 0] else 0.0)
        hess[i, 0] = 1.0


@kernel(parallel=True)
def _poisson_gh(y, raw, grad, hess):
    for i in nb.prange(y.shape[0]):
        mu = exp(min(raw[i, 0], _MAX_EXP))
        grad[i, 0] = mu - y[i]
        hess[i, 0] = mu


@kernel(parallel=True)
def _gamma_gh(y, raw, grad, hess):
    for i in nb.prange(y.shape[0]):
        t = y[i] * exp(min(-raw[i, 0], _MAX_EXP))
        grad[i, 0] = 1.0 - t
        hess[i, 0] = t


@kernel(parallel=True)
def _tweedie_gh(y, raw, power, grad, hess):
    for i in nb.prange(y.shape[0]):
        f = min(max(raw[i, 0], -_MAX_EXP), _MAX_EXP)
        a = exp((1.0 - power) * f)
        b = exp((2.0 - power) * f)
        grad[i, 0] = -y[i] * a + b
        hess[i, 0] = -y[i] * (1.0 - power) * a + (2.0 - power) * b


@kernel(inline="always")
def _sigmoid(f):
    """``1 / (1 + e^-f)`` without overflow: ``1 / (1 + e)`` for ``f >= 0`` and ``e / (1 +
    e)`` below, with ``e = exp(-|f|)``. The two cases are blended by arithmetic, not a
    branch (raw scores straddle 0, so a branch mispredicts on half the samples); the
    results are the same numbers (``1 + 0 e = 1`` and ``0 + 1 e = e`` exactly)."""
    e = exp(-abs(f))
    positive = np.float64(f >= 0)
    return (positive + (1.0 - positive) * e) / (1.0 + e)


@kernel(parallel=True)
def _binary_log_loss_gh(y, raw, grad, hess):
    for i in nb.prange(y.shape[0]):
        p = _sigmoid(raw[i, 0])
        grad[i, 0] = p - y[i]
        hess[i, 0] = p * (1.0 - p)


# Rows per block of the softmax gradient's parallel loop: its working set (ten classes'
# raw, gradient and hessian slices of a block, 480 KiB at 2,048 rows) stays in a core's
# L2 cache from the maximum's pass to the gradient's.
SOFTMAX_BLOCK_ROWS = 2048


@kernel(parallel=True, nogil=True)
def _multinomial_gh(y, raw, grad, hess):
    # One parallel loop over blocks of rows (one region per call: a region per class and
    # pass started 3 x n_classes of them, about 15 us each on a quiet 2-core machine);
    # within a block, class by class along the columns of the column-major raw, grad
    # and hess, so that the loops vectorise (exp included): sample by sample, the loop
    # over classes strode across columns and did not (200,000 x 10: 4.2 against 11 ms).
    # Each sample's maximum and sum still run over the classes in order: same values.
    n_samples = raw.shape[0]
    n_blocks = (n_samples + SOFTMAX_BLOCK_ROWS - 1) // SOFTMAX_BLOCK_ROWS
    for block in nb.prange(n_blocks):
        start = block * SOFTMAX_BLOCK_ROWS
        stop = min(start + SOFTMAX_BLOCK_ROWS, n_samples)
        _multinomial_gh_rows(y, raw, grad, hess, start, stop)


@kernel(nogil=True)
def _multinomial_gh_rows(y, raw, grad, hess, start, stop):
    """The softmax gradient and hessian of the rows of ``raw`` (Friedman 2001, Algorithm
    6; the hessian divided by his ``(K-1)/K`` factor, see the module docstring):
    ``p_k - [y = k]`` and ``K / (K - 1) p_k (1 - p_k)``."""
    # Each class's column slice is a contiguous array, which the loops vectorise over;
    # indexed as raw[i, k] with i from start to stop, or as raw[start:stop] (a strided
    # block), they did not: six times slower.
    n_classes = raw.shape[1]
    factor = n_classes / (n_classes - 1.0)
    top = raw[start:stop, 0].copy()
    total = np.zeros(stop - start)
    for k in range(1, n_classes):
        column = raw[start:stop, k]
        for i in range(stop - start):
            top[i] = max(top[i], column[i])
    for k in range(n_classes):
        column = raw[start:stop, k]
        out = grad[start:stop, k]
        for i in range(stop - start):
            e = exp(column[i] - top[i])
            out[i] = e
            total[i] += e
    for k in range(n_classes):
        out = grad[start:stop, k]
        second = hess[start:stop, k]
        labels = y[start:stop]
        for i in range(stop - start):
            p = out[i] / total[i]
            out[i] = p - (1.0 if k == np.int64(labels[i]) else 0.0)
            second[i] = factor * p * (1.0 - p)


# Below this many rows a loss's gradient (and pointwise loss) kernel runs serially, its
# copy without a parallel region (silva.engine.specialize.serial_copy). Starting a
# parallel region costs about 15 us on a quiet 2-core machine and up to 0.4 ms when
# other processes keep the cores busy, against a few ns of work a row: boosting on
# breast cancer (455 rows) spent half its fit starting the gradient's regions on the
# busy machine, and the multinomial gradient ran 3 x n_classes of them an iteration
# (now one). The values are the same either way, and a small fit compiles no parallel
# gradient. (A ten-class fit that grows its trees in a pool of threads computes the
# softmax gradient in that pool instead, see MultinomialLogLoss.gradient_hessian_rows.)
GRADIENT_PARALLEL_MIN_ROWS = 1 << 16


def _parallel_if_large(kernel, n_rows):
    """``kernel`` for ``n_rows >= GRADIENT_PARALLEL_MIN_ROWS``, else its serial copy."""
    return kernel if n_rows >= GRADIENT_PARALLEL_MIN_ROWS else serial_copy(kernel)


@kernel(parallel=True)
def _exponential_gh(y, raw, grad, hess):
    for i in nb.prange(y.shape[0]):
        sign = 2.0 * y[i] - 1.0
        e = exp(min(-sign * raw[i, 0], _MAX_EXP))
        grad[i, 0] = -sign * e
        hess[i, 0] = e


@kernel(parallel=True)
def _pointwise_loss(code, param, y, raw, out):
    """``out[i] = L(y_i, F_i)`` for the built-in loss ``code`` (``SQUARED_ERROR`` ...
    ``EXPONENTIAL``); ``param`` is Huber's delta, the quantile or the Tweedie power."""
    n_classes = raw.shape[1]
    for i in nb.prange(y.shape[0]):
        f = raw[i, 0]
        if code == SQUARED_ERROR:
            out[i] = 0.5 * (y[i] - f) ** 2
        elif code == ABSOLUTE_ERROR:
            out[i] = abs(y[i] - f)
        elif code == HUBER:
            r = abs(y[i] - f)
            out[i] = 0.5 * r * r if r <= param else param * (r - 0.5 * param)
        elif code == QUANTILE:
            r = y[i] - f
            out[i] = param * r if r > 0 else (param - 1.0) * r
        elif code == POISSON:
            out[i] = np.exp(min(f, _MAX_EXP)) - y[i] * f
        elif code == GAMMA:
            out[i] = y[i] * np.exp(min(-f, _MAX_EXP)) + f
        elif code == TWEEDIE:
            f = min(max(f, -_MAX_EXP), _MAX_EXP)
            out[i] = (-y[i] * np.exp((1.0 - param) * f) / (1.0 - param)
                      + np.exp((2.0 - param) * f) / (2.0 - param))
        elif code == BINARY_LOG_LOSS:
            # log(1 + e^f) - y f, computed without overflow.
            out[i] = max(f, 0.0) + np.log1p(np.exp(-abs(f))) - y[i] * f
        elif code == MULTINOMIAL_LOG_LOSS:
            top = raw[i, 0]
            for k in range(1, n_classes):
                top = max(top, raw[i, k])
            total = 0.0
            for k in range(n_classes):
                total += np.exp(raw[i, k] - top)
            out[i] = top + np.log(total) - raw[i, np.int64(y[i])]
        else:  # EXPONENTIAL
            out[i] = np.exp(min(-(2.0 * y[i] - 1.0) * f, _MAX_EXP))


@kernel(inline="always")
def _weighted_quantile_sorted(values, weights, alpha):
    """Lower weighted ``alpha``-quantile of ``values`` (sorted ascending)."""
    total = 0.0
    for i in range(values.shape[0]):
        total += weights[i]
    target = alpha * total
    running = 0.0
    for i in range(values.shape[0]):
        running += weights[i]
        if running >= target - 1e-12 * total:
            return values[i]
    return values[values.shape[0] - 1]


@kernel(parallel=True, nogil=True)
def leaf_line_search(kind, param, delta, y, raw, weight, sample_indices, leaf_start,
                     leaf_end, out):
    """Line-search leaf values from the residuals ``r = y - raw`` of each leaf's samples.

    ``kind`` ``LINE_SEARCH_QUANTILE``: weighted ``param``-quantile of ``r`` (median for
    absolute error, ``alpha`` for quantile loss); ``LINE_SEARCH_HUBER``: Friedman's (2001,
    Algorithm 4) one-step Huber estimate
    ``median(r) + mean(sign(r - median) min(delta, |r - median|))``. A leaf owns
    samples ``sample_indices[leaf_start[j]:leaf_end[j]]``. Parallel over leaves.
    """
    for j in nb.prange(leaf_start.shape[0]):
        start = leaf_start[j]
        end = leaf_end[j]
        n = end - start
        if n == 0:
            out[j] = 0.0
            continue
        residuals = np.empty(n)
        weights = np.empty(n)
        for i in range(n):
            s = sample_indices[start + i]
            residuals[i] = y[s] - raw[s]
            weights[i] = weight[s]
        order = np.argsort(residuals, kind="mergesort")
        sorted_r = residuals[order]
        sorted_w = weights[order]
        median = _weighted_quantile_sorted(sorted_r, sorted_w,
                                           0.5 if kind == LINE_SEARCH_HUBER else param)
        if kind == LINE_SEARCH_QUANTILE:
            out[j] = median
            continue
        total = 0.0
        weighted = 0.0
        for i in range(n):
            d = sorted_r[i] - median
            clipped = min(delta, abs(d))
            weighted += sorted_w[i] * (clipped if d > 0 else -clipped)
            total += sorted_w[i]
        out[j] = median + (weighted / total if total > 0 else 0.0)


# ------------------------------------------------------------------- helpers
def weighted_quantile(values, weights, alpha):
    """Lower weighted ``alpha``-quantile: the smallest value whose cumulative weight reaches
    ``alpha`` times the total (scikit-learn's ``_weighted_percentile`` rule)."""
    order = np.argsort(values, kind="mergesort")
    return float(_weighted_quantile_sorted(np.ascontiguousarray(values[order]),
                                           np.ascontiguousarray(weights[order]), alpha))


def _raw_2d(raw):
    raw = np.asarray(raw, dtype=np.float64)
    return raw.reshape(-1, 1) if raw.ndim == 1 else raw


def sigmoid(raw):
    """Numerically safe logistic function."""
    out = np.empty_like(raw)
    positive = raw >= 0
    out[positive] = 1.0 / (1.0 + np.exp(-raw[positive]))
    e = np.exp(raw[~positive])
    out[~positive] = e / (1.0 + e)
    return out


def softmax(raw):
    shifted = raw - raw.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


# --------------------------------------------------------------------- losses
class Loss:
    """A boosting loss (see the module docstring). Subclasses set ``code`` and the kernels.

    Attributes
    ----------
    name : str
    n_outputs : int
        Raw prediction columns (trees per iteration).
    is_classification : bool
    line_search : {None, LINE_SEARCH_QUANTILE, LINE_SEARCH_HUBER}
        How ``boosting="gradient"`` sets leaf values (the ``kind`` of
        :func:`leaf_line_search`); None means a Newton step
        ``-G / (H + lambda)``, which is the exact line search for squared error and
        Friedman's one-step approximation for the others.
    renew_leaves_in_newton : bool
        Whether ``boosting="newton"`` also takes leaf values from the line search (for
        absolute_error and quantile, whose hessian carries no curvature).
    unit_hessian : bool
        Whether ``gradient_hessian`` sets every hessian to exactly 1 (so a sample's
        weighted hessian is its weight, and the grower need not sum both).
    row_parallel_gradient : bool
        Whether the loss has ``gradient_hessian_rows(y, raw, grad, hess, start, stop)``:
        the gradient of a range of rows, computed without the GIL, so that threads may
        share the rows out.
    """

    name = ""
    code = -1  # no built-in code: a custom objective has no compiled pointwise loss
    n_outputs = 1
    is_classification = False
    line_search = None
    renew_leaves_in_newton = False
    unit_hessian = False
    row_parallel_gradient = False
    param = 0.0

    def check_y(self, y, sample_weight):
        """Raise ``ValueError`` when y lies outside the loss's domain."""

    def init_raw(self, y, sample_weight):
        """The optimal constant raw prediction, shape (n_outputs,)."""
        raise NotImplementedError

    def update_iteration(self, y, raw, sample_weight):
        """Per-iteration state (Huber's ``delta``); a no-op for most losses."""

    def gradient_hessian(self, y, raw, grad, hess, iteration=0):
        """Fill ``grad`` and ``hess`` (n_samples, n_outputs) at ``raw`` (same shape)."""
        raise NotImplementedError

    def pointwise(self, y, raw):
        raw = _raw_2d(raw)
        out = np.empty(raw.shape[0])
        _parallel_if_large(_pointwise_loss, raw.shape[0])(
            self.code, float(self.param), np.asarray(y, dtype=np.float64), raw, out)
        return out

    def loss(self, y, raw, sample_weight=None):
        """Weighted mean of the pointwise loss."""
        return float(np.average(self.pointwise(y, raw), weights=sample_weight))

    def link(self, raw):
        """Predictions (mean, probabilities) from raw predictions."""
        return raw

    def line_search_param(self):
        return self.param


class SquaredError(Loss):
    name = "squared_error"
    code = SQUARED_ERROR
    unit_hessian = True

    def init_raw(self, y, sample_weight):
        return np.array([np.average(y, weights=sample_weight)])

    def gradient_hessian(self, y, raw, grad, hess, iteration=0):
        _parallel_if_large(_squared_error_gh, raw.shape[0])(y, raw, grad, hess)


class AbsoluteError(Loss):
    name = "absolute_error"
    code = ABSOLUTE_ERROR
    line_search = LINE_SEARCH_QUANTILE
    renew_leaves_in_newton = True
    unit_hessian = True

    def init_raw(self, y, sample_weight):
        return np.array([weighted_quantile(y, sample_weight, 0.5)])

    def gradient_hessian(self, y, raw, grad, hess, iteration=0):
        _parallel_if_large(_absolute_error_gh, raw.shape[0])(y, raw, grad, hess)

    def line_search_param(self):
        return 0.5


class Huber(Loss):
    name = "huber"
    code = HUBER
    line_search = LINE_SEARCH_HUBER
    unit_hessian = True

    def __init__(self, alpha):
        self.alpha = alpha
        self.param = np.inf

    def init_raw(self, y, sample_weight):
        return np.array([weighted_quantile(y, sample_weight, 0.5)])

    def update_iteration(self, y, raw, sample_weight):
        # Friedman (2001, sec. 4.4): delta is the alpha-quantile of the absolute residuals.
        self.param = weighted_quantile(np.abs(y - raw[:, 0]), sample_weight, self.alpha)

    def gradient_hessian(self, y, raw, grad, hess, iteration=0):
        _parallel_if_large(_huber_gh, raw.shape[0])(y, raw, float(self.param), grad, hess)


class Quantile(Loss):
    name = "quantile"
    code = QUANTILE
    line_search = LINE_SEARCH_QUANTILE
    renew_leaves_in_newton = True
    unit_hessian = True

    def __init__(self, alpha):
        self.param = alpha

    def init_raw(self, y, sample_weight):
        return np.array([weighted_quantile(y, sample_weight, self.param)])

    def gradient_hessian(self, y, raw, grad, hess, iteration=0):
        _parallel_if_large(_quantile_gh, raw.shape[0])(y, raw, float(self.param), grad, hess)


class _LogLink(Loss):
    def init_raw(self, y, sample_weight):
        return np.array([np.log(max(np.average(y, weights=sample_weight), _EPS))])

    def link(self, raw):
        return np.exp(np.minimum(raw, _MAX_EXP))


class Poisson(_LogLink):
    name = "poisson"
    code = POISSON

    def check_y(self, y, sample_weight):
        if np.any(y < 0):
            raise ValueError(f"loss='poisson' needs y >= 0; y has negative values (the "
                             f"smallest is {y.min()}).")
        if np.sum(y * sample_weight) <= 0:
            raise ValueError("loss='poisson' needs a positive (weighted) sum of y.")

    def gradient_hessian(self, y, raw, grad, hess, iteration=0):
        _parallel_if_large(_poisson_gh, raw.shape[0])(y, raw, grad, hess)


class Gamma(_LogLink):
    name = "gamma"
    code = GAMMA

    def check_y(self, y, sample_weight):
        if np.any(y <= 0):
            raise ValueError(f"loss='gamma' needs y > 0; the smallest y is {y.min()}.")

    def gradient_hessian(self, y, raw, grad, hess, iteration=0):
        _parallel_if_large(_gamma_gh, raw.shape[0])(y, raw, grad, hess)


class Tweedie(_LogLink):
    name = "tweedie"
    code = TWEEDIE

    def __init__(self, power):
        self.param = power

    def check_y(self, y, sample_weight):
        if np.any(y < 0):
            raise ValueError(f"loss='tweedie' needs y >= 0; y has negative values (the "
                             f"smallest is {y.min()}).")
        if np.sum(y * sample_weight) <= 0:
            raise ValueError("loss='tweedie' needs a positive (weighted) sum of y.")

    def gradient_hessian(self, y, raw, grad, hess, iteration=0):
        _parallel_if_large(_tweedie_gh, raw.shape[0])(y, raw, float(self.param), grad, hess)


class BinaryLogLoss(Loss):
    name = "log_loss"
    code = BINARY_LOG_LOSS
    is_classification = True

    def init_raw(self, y, sample_weight):
        p = np.clip(np.average(y, weights=sample_weight), _EPS, 1 - _EPS)
        return np.array([np.log(p / (1 - p))])

    def gradient_hessian(self, y, raw, grad, hess, iteration=0):
        _parallel_if_large(_binary_log_loss_gh, raw.shape[0])(y, raw, grad, hess)

    def link(self, raw):
        p = sigmoid(raw[:, 0])
        return np.column_stack([1 - p, p])


class MultinomialLogLoss(Loss):
    name = "log_loss"
    code = MULTINOMIAL_LOG_LOSS
    is_classification = True

    row_parallel_gradient = True

    def __init__(self, n_classes):
        self.n_outputs = n_classes

    def init_raw(self, y, sample_weight):
        counts = np.bincount(y.astype(np.int64), weights=sample_weight,
                             minlength=self.n_outputs)
        p = np.clip(counts / counts.sum(), _EPS, 1.0)
        return np.log(p)

    def gradient_hessian(self, y, raw, grad, hess, iteration=0):
        _parallel_if_large(_multinomial_gh, raw.shape[0])(y, raw, grad, hess)

    def gradient_hessian_rows(self, y, raw, grad, hess, start, stop):
        """:meth:`gradient_hessian` of rows ``start:stop`` only, in the calling thread
        without holding the GIL: for threads that share the rows out (the boosting
        loop's pool, whose threads then grow the class trees). The same values."""
        _multinomial_gh_rows(y, raw, grad, hess, np.int64(start), np.int64(stop))

    def link(self, raw):
        return softmax(raw)


class Exponential(Loss):
    name = "exponential"
    code = EXPONENTIAL
    is_classification = True

    def init_raw(self, y, sample_weight):
        p = np.clip(np.average(y, weights=sample_weight), _EPS, 1 - _EPS)
        return np.array([0.5 * np.log(p / (1 - p))])

    def gradient_hessian(self, y, raw, grad, hess, iteration=0):
        _parallel_if_large(_exponential_gh, raw.shape[0])(y, raw, grad, hess)

    def link(self, raw):
        p = sigmoid(2.0 * raw[:, 0])
        return np.column_stack([1 - p, p])


class CustomObjective(Loss):
    """A user objective ``func(y_true, raw_prediction) -> (gradient, hessian)``.

    ``y_true`` is the target (class indices ``0..n_classes-1`` for classifiers) and
    ``raw_prediction`` has shape (n_samples,) for one output or (n_samples, n_outputs);
    gradient and hessian must have the same shape as ``raw_prediction`` (or be flat with
    as many entries) and be finite. The initial constant is found by Newton steps on
    the objective from 0 (exact in one step for a quadratic objective), so that a custom
    objective equal to a built-in loss starts from the same constant. The link is the
    identity for regressors and sigmoid (binary) or softmax for classifiers. There is no
    loss value: metrics need ``scoring``.
    """

    name = "custom"

    def __init__(self, func, n_outputs, is_classification):
        self.func = func
        self.n_outputs = n_outputs
        self.is_classification = is_classification

    def _call(self, y, raw, iteration):
        where = "the initial constant" if iteration < 0 else f"iteration {iteration}"
        arg = raw[:, 0].copy() if raw.shape[1] == 1 else raw.copy()
        try:
            result = self.func(y, arg)
        except Exception as error:
            raise ValueError(f"the custom objective failed at {where}: {error!r}") from error
        if not isinstance(result, tuple) or len(result) != 2:
            raise ValueError(f"the custom objective must return (gradient, hessian); at "
                             f"{where} it returned {type(result).__name__}.")
        out = []
        for name, values in zip(("gradient", "hessian"), result, strict=True):
            values = np.asarray(values, dtype=np.float64)
            if values.size != raw.size:
                raise ValueError(
                    f"the custom objective's {name} at {where} has shape {values.shape}; "
                    f"expected {arg.shape}, the shape of raw_prediction.")
            values = values.reshape(raw.shape)
            if not np.all(np.isfinite(values)):
                raise ValueError(f"the custom objective's {name} at {where} holds NaN or "
                                 f"infinite values.")
            out.append(values)
        if np.any(out[1] < 0):
            raise ValueError(f"the custom objective's hessian at {where} is negative; a "
                             f"hessian must be >= 0.")
        return out

    def init_raw(self, y, sample_weight):
        init = np.zeros(self.n_outputs)
        for _ in range(20):
            raw = np.tile(init, (y.shape[0], 1))
            g, h = self._call(y, raw, -1)
            step = -(sample_weight @ g) / np.maximum(sample_weight @ h, _EPS)
            init = init + step
            if np.all(np.abs(step) <= 1e-12 * np.maximum(1.0, np.abs(init))):
                break
        return init

    def gradient_hessian(self, y, raw, grad, hess, iteration=0):
        g, h = self._call(y, raw, iteration)
        grad[:] = g
        hess[:] = h

    def loss(self, y, raw, sample_weight=None):
        raise ValueError("a custom objective has no loss value; pass scoring= to evaluate.")

    def link(self, raw):
        if not self.is_classification:
            return raw
        if self.n_outputs == 1:
            p = sigmoid(raw[:, 0])
            return np.column_stack([1 - p, p])
        return softmax(raw)


REGRESSION_LOSSES = ("squared_error", "absolute_error", "huber", "quantile", "poisson",
                     "gamma", "tweedie")
CLASSIFICATION_LOSSES = ("log_loss", "exponential")


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be a float in (0, 1); got {alpha!r}.")
    return float(alpha)


def make_loss(loss, *, n_classes=None, alpha=0.9, power=1.5):
    """The :class:`Loss` for a loss name (or a callable objective).

    ``n_classes`` is None for regression and the number of classes for classification.
    """
    classification = n_classes is not None
    if callable(loss):
        n_outputs = 1 if not classification or n_classes <= 2 else n_classes
        return CustomObjective(loss, n_outputs, classification)
    names = CLASSIFICATION_LOSSES if classification else REGRESSION_LOSSES
    if not isinstance(loss, str) or loss not in names:
        raise ValueError(f"loss must be one of {list(names)} or a callable "
                         f"(y_true, raw_prediction) -> (gradient, hessian); got {loss!r}.")
    if loss == "squared_error":
        return SquaredError()
    if loss == "absolute_error":
        return AbsoluteError()
    if loss == "huber":
        return Huber(_check_alpha(alpha))
    if loss == "quantile":
        return Quantile(_check_alpha(alpha))
    if loss == "poisson":
        return Poisson()
    if loss == "gamma":
        return Gamma()
    if loss == "tweedie":
        if isinstance(power, bool) or not isinstance(power, numbers.Real) \
                or not 1 < power < 2:
            raise ValueError(f"power must be a float in (1, 2) for loss='tweedie'; got "
                             f"{power!r}.")
        return Tweedie(float(power))
    if loss == "exponential":
        if n_classes > 2:
            raise ValueError(f"loss='exponential' is for binary classification; y has "
                             f"{n_classes} classes. Use loss='log_loss'.")
        return Exponential()
    if n_classes <= 2:
        return BinaryLogLoss()
    return MultinomialLogLoss(n_classes)
