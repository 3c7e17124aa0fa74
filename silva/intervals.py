"""Prediction intervals with a coverage guarantee: conformal methods over silva's models.

Every ``predict_interval(X, confidence=0.9, method=...)`` returns an array of shape
``(n_samples, 2)``: column 0 the lower and column 1 the upper end of the interval (the
layout of one level of MAPIE's ``y_pis``). Under exchangeability of the training (or
calibration) rows and the test row, the methods below cover a new ``y`` with probability

- at least ``confidence`` for split conformal and conformalized quantile regression;
- at least ``1 - 2 * (1 - confidence)`` for the jackknife+ (Barber et al. 2021, Theorem
  1), which in practice covers close to ``confidence`` (Kim et al. 2020, Section 5), and
  at least ``confidence`` for the jackknife+-minmax.

Sources:

- **jackknife+-after-bootstrap** (Kim, Xu & Barber 2020, "Predictive Inference Is Free
  with the Jackknife+-after-Bootstrap", NeurIPS, Algorithm 1): from one bagged ensemble,
  the leave-``i``-out prediction ``mu_{-i}(x)`` is the mean of the members whose bootstrap
  sample left training row ``i`` out, ``R_i = |y_i - mu_{-i}(X_i)|`` its out-of-bag
  residual, and the interval is ``[q^-{mu_{-i}(x) - R_i}, q^+{mu_{-i}(x) + R_i}]`` with
  ``q^-`` the ``floor(alpha (n + 1))``-th smallest and ``q^+`` the
  ``ceil((1 - alpha)(n + 1))``-th smallest of the ``n`` values. No model is refitted.
- **jackknife+-minmax** (Barber, Candès, Ramdas & Tibshirani 2021, "Predictive inference
  with the jackknife+", Annals of Statistics, Section 2.3), after bootstrap in the same
  way: ``[min_i mu_{-i}(x) - q^+{R_i}, max_i mu_{-i}(x) + q^+{R_i}]``.
- **split conformal** (Lei, G'Sell, Rinaldo, Tibshirani & Wasserman 2018, "Distribution-
  free predictive inference for regression", JASA, Algorithm 2): ``mu(x) -/+ Q`` with
  ``Q`` the ``ceil((n + 1)(1 - alpha))``-th smallest absolute residual of ``n``
  calibration rows.
- **conformalized quantile regression** (Romano, Patterson & Candès 2019, NeurIPS,
  Section 3): quantile models ``q_lo`` and ``q_hi`` at levels ``alpha / 2`` and
  ``1 - alpha / 2``, calibration scores ``E_i = max(q_lo(X_i) - y_i, y_i - q_hi(X_i))``
  and the interval ``[q_lo(x) - Q, q_hi(x) + Q]`` with ``Q`` the
  ``ceil((n + 1)(1 - alpha))``-th smallest score.

When the rank a formula asks for is beyond the ``n`` values (too few rows for the
confidence asked), that end of the interval is infinite, as the theory demands.
Intervals treat every training or calibration row alike: ``sample_weight`` shapes the
model, not the conformal ranks.
"""

import math
import numbers

import numpy as np

__all__ = [
    "JackknifeIntervalMixin",
    "check_confidence",
    "conformal_rank",
    "jackknife_plus_intervals",
    "split_conformal_quantile",
]

# Bytes of leave-one-out predictions held at once (test rows x training rows x 8): the
# test rows are taken in chunks of this size, whatever n_test.
_CHUNK_BYTES = 64 * 2**20


def check_confidence(confidence, where):
    """``confidence`` as a float in (0, 1), else a ValueError naming ``where`` (the
    estimator's method)."""
    if (isinstance(confidence, bool | np.bool_) or not isinstance(confidence, numbers.Real)
            or not 0.0 < float(confidence) < 1.0):
        raise ValueError(f"{where}: confidence must be a number in (0, 1) "
                         f"(0.9 for a 90% interval); got {confidence!r}.")
    return float(confidence)


def conformal_rank(n, confidence):
    """``ceil(confidence * (n + 1))``: the 1-based rank of the upper conformal quantile.

    Computed with a small tolerance so that ``0.9 * 100`` is 90, not 91 (floating-point
    ``1 - 0.1`` is below 0.9). The lower rank of the jackknife+, ``floor(alpha (n + 1))``,
    is ``n + 1`` minus this one.
    """
    return int(math.ceil(confidence * (n + 1) - 1e-9))


def split_conformal_quantile(scores, confidence):
    """The ``ceil((n + 1) confidence)``-th smallest of ``n`` conformity scores; +inf when
    that rank exceeds ``n`` (Lei et al. 2018, Algorithm 2; Romano et al. 2019, eq. 8)."""
    scores = np.asarray(scores, dtype=np.float64)
    rank = conformal_rank(scores.shape[0], confidence)
    if rank > scores.shape[0]:
        return np.inf
    return float(np.partition(scores, rank - 1)[rank - 1])


def jackknife_plus_intervals(member_predictions, out_of_bag, residuals, confidence,
                             minmax=False):
    """Jackknife+-after-bootstrap intervals (Kim et al. 2020, Algorithm 1).

    Parameters
    ----------
    member_predictions : ndarray of shape (n_test, n_members)
        Each member's prediction at each test row.
    out_of_bag : ndarray of shape (n_members, n_train), bool
        True where the training row was not in the member's bootstrap sample.
    residuals : ndarray of shape (n_train,)
        ``|y_i - mu_{-i}(X_i)|``, the out-of-bag absolute residuals; rows that were in
        every member's sample (no out-of-bag member, NaN residual) are left out, so ``n``
        counts the others.
    confidence : float in (0, 1)
    minmax : bool
        The jackknife+-minmax instead of the jackknife+.

    Returns an (n_test, 2) array of lower and upper ends.
    """
    out_of_bag = np.asarray(out_of_bag, dtype=bool)
    counts = out_of_bag.sum(axis=0)
    kept = (counts > 0) & np.isfinite(residuals)
    n = int(kept.sum())
    # mu_{-i}(x) for every kept i is one matrix product: predictions times the
    # out-of-bag indicator divided by each row's out-of-bag count.
    averaging = out_of_bag[:, kept] / counts[kept]
    residuals = np.asarray(residuals, dtype=np.float64)[kept]
    rank = conformal_rank(n, confidence)
    n_test = member_predictions.shape[0]
    intervals = np.empty((n_test, 2))
    if minmax:
        width = np.inf if rank > n else np.partition(residuals, rank - 1)[rank - 1]
    chunk = max(1, _CHUNK_BYTES // (8 * max(1, n)))
    for start in range(0, n_test, chunk):
        rows = slice(start, min(n_test, start + chunk))
        leave_one_out = member_predictions[rows] @ averaging  # (rows, n)
        if minmax:
            intervals[rows, 0] = leave_one_out.min(axis=1) - width
            intervals[rows, 1] = leave_one_out.max(axis=1) + width
        elif rank > n:
            intervals[rows] = (-np.inf, np.inf)
        else:
            # floor(alpha (n + 1)) = n + 1 - ceil((1 - alpha)(n + 1)) exactly.
            low_rank = n + 1 - rank
            lower = np.partition(leave_one_out - residuals, low_rank - 1, axis=1)
            intervals[rows, 0] = lower[:, low_rank - 1]
            upper = np.partition(leave_one_out + residuals, rank - 1, axis=1)
            intervals[rows, 1] = upper[:, rank - 1]
    return intervals


class JackknifeIntervalMixin:
    """``predict_interval`` for bagged regressors (forests with ``bootstrap=True``,
    :class:`~silva.BaggingRegressor`) fitted with ``oob_score=True``.

    A class using it provides ``_member_predictions(X_validated)`` (n_test, n_members),
    ``_out_of_bag_indicator()`` (n_members, n_train) bool, ``_oob_residuals()``
    (n_train,) and ``_validated_X``.
    """

    _interval_methods = ("jackknife+", "jackknife+-minmax")

    def predict_interval(self, X, confidence=0.9, method="jackknife+"):
        """Prediction intervals at level ``confidence``: an (n_samples, 2) array of
        [lower, upper].

        ``method="jackknife+"`` (default) is the jackknife+-after-bootstrap of Kim, Xu &
        Barber (2020, Algorithm 1), from the out-of-bag predictions and residuals of the
        training rows: no model is refitted. Its guarantee is coverage of at least
        ``1 - 2 alpha`` (``alpha = 1 - confidence``); it covers close to ``confidence``
        in practice. ``"jackknife+-minmax"`` guarantees ``confidence`` and is wider.
        Forests also offer ``"quantile"``: the quantile regression forest's
        ``alpha / 2`` and ``1 - alpha / 2`` quantiles (:meth:`predict_quantiles`), which
        carry no coverage guarantee (shown for comparison). See :mod:`silva.intervals`.

        The model must have been fitted with ``bootstrap=True`` and ``oob_score=True``
        (the out-of-bag predictions are the leave-one-out predictions at the training
        rows); training rows drawn into every member's sample are left out.
        """
        name = type(self).__name__
        confidence = check_confidence(confidence, f"{name}.predict_interval")
        if method not in self._interval_methods:
            raise ValueError(f"{name}.predict_interval: method must be one of "
                             f"{list(self._interval_methods)}; got {method!r}.")
        if method == "quantile":
            alpha = round(1.0 - confidence, 12)  # 0.1, not 1 - 0.9 = 0.09999999999999998
            return self.predict_quantiles(X, (alpha / 2, 1.0 - alpha / 2))
        if not self.bootstrap:
            raise ValueError(f"{name}.predict_interval(method={method!r}) needs "
                             "bootstrap=True: without bootstrap samples no training row is "
                             "out of bag, so there is no leave-one-out prediction.")
        if getattr(self, "oob_prediction_", None) is None:
            raise ValueError(f"{name}.predict_interval(method={method!r}) needs the "
                             "out-of-bag predictions of the training rows: fit with "
                             "oob_score=True.")
        X = self._validated_X(X)
        out_of_bag = self._out_of_bag_indicator()
        residuals = self._oob_residuals()
        if residuals.shape != (out_of_bag.shape[1],):
            raise ValueError(f"{name}: the stored out-of-bag residuals do not match the "
                             f"{out_of_bag.shape[1]} training rows; refit the model.")
        return jackknife_plus_intervals(self._member_predictions(X), out_of_bag,
                                        residuals, confidence,
                                        minmax=method == "jackknife+-minmax")
