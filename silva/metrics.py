"""Evaluation metrics of gradient boosting: what ``eval_set``, ``evals_result_`` and early
stopping measure.

A metric is named by ``scoring`` (see :class:`silva.boosting.GradientBoostingRegressor`):
None is the loss itself (or, for a custom objective, which has no loss value, RMSE for
regressors and log loss for classifiers); strings are the names in
``REGRESSION_METRICS`` and ``CLASSIFICATION_METRICS``; a callable
``scoring(y_true, prediction, sample_weight)`` is a score, higher being better.
:func:`evaluate` computes one from raw predictions and reports whether higher is better,
which is what :class:`silva.callbacks.EarlyStopping` needs to compare iterations.
"""

import numbers

import numpy as np

from silva.engine import losses

REGRESSION_METRICS = frozenset({"loss", "rmse", "mae"})
CLASSIFICATION_METRICS = frozenset({"loss", "log_loss", "accuracy", "error", "auc"})


def metric_name(scoring, loss):
    """The name under which ``scoring`` is recorded for ``loss``; ValueError for a string
    that is not a metric of the loss's task (regression or classification)."""
    if scoring is None:
        if isinstance(loss, losses.CustomObjective):
            return "log_loss" if loss.is_classification else "rmse"
        return "loss"
    if callable(scoring):
        return getattr(scoring, "__name__", "score")
    allowed = CLASSIFICATION_METRICS if loss.is_classification else REGRESSION_METRICS
    if scoring not in allowed:
        raise ValueError(f"scoring must be None, a callable or one of {sorted(allowed)}; "
                         f"got {scoring!r}.")
    return scoring


def evaluate(name, scoring, loss, y, raw, weight):
    """``(value, higher_is_better)`` of metric ``name`` (from :func:`metric_name`) at raw
    predictions ``raw`` of shape (n_samples, n_outputs).

    A callable ``scoring`` receives the link of ``raw``: a regressor's predictions as a
    vector, a classifier's class probabilities as a matrix.
    """
    if callable(scoring):
        prediction = loss.link(raw)
        if not loss.is_classification:
            prediction = prediction[:, 0]
        return float(scoring(y, prediction, weight)), True
    if name == "loss":
        return loss.loss(y, raw, weight), False
    if name == "log_loss":
        p = np.clip(loss.link(raw), 1e-15, 1.0)
        return float(np.average(-np.log(p[np.arange(len(y)), y.astype(np.int64)]),
                                weights=weight)), False
    if name in ("rmse", "mae"):
        error = loss.link(raw)[:, 0] - y
        if name == "rmse":
            return float(np.sqrt(np.average(error**2, weights=weight))), False
        return float(np.average(np.abs(error), weights=weight)), False
    proba = loss.link(raw)
    if name in ("accuracy", "error"):
        accuracy = float(np.average(np.argmax(proba, axis=1) == y, weights=weight))
        return (accuracy, True) if name == "accuracy" else (1.0 - accuracy, False)
    if proba.shape[1] != 2:
        raise ValueError("scoring='auc' is for binary classification.")
    return float(auc(y, proba[:, 1], weight)), True


def auc(y, score, weight):
    """Weighted ROC AUC of ``score`` for the positive class ``y == 1`` (ties count one
    half), from the rank statistic; NaN when a class has no weight."""
    order = np.argsort(score, kind="mergesort")
    score, y, weight = score[order], y[order], weight[order]
    positive = weight * (y == 1)
    negative = weight * (y != 1)
    total_pos = positive.sum()
    total_neg = negative.sum()
    if total_pos == 0 or total_neg == 0:
        return np.nan
    # Group ties: each positive counts the negatives below it plus half of those tied.
    _, starts = np.unique(score, return_index=True)
    ends = np.append(starts[1:], len(score))
    neg_below = 0.0
    area = 0.0
    for s, e in zip(starts, ends, strict=True):
        pos_here = positive[s:e].sum()
        neg_here = negative[s:e].sum()
        area += pos_here * (neg_below + 0.5 * neg_here)
        neg_below += neg_here
    return area / (total_pos * total_neg)


def ndcg_score(y_true, y_score, *, group=None, qid=None, k=10, label_gain=None,
               sample_weight=None):
    """Mean NDCG@k over queries (Jarvelin & Kekalainen 2002), as LightGBM's ``ndcg@k``.

    Each query's documents are ranked by descending ``y_score`` (ties in row order);
    ``DCG@k = sum_{p < k} label_gain[y_(p)] / log2(2 + p)`` over the 0-based positions
    ``p``, divided by the DCG@k of the ranking by descending label. A query whose ideal
    DCG is 0 (no relevant document) scores 1.0, as in LightGBM. Queries are given by
    exactly one of ``group`` (sizes of consecutive queries) and ``qid`` (an id per row);
    ``label_gain`` defaults to ``2^l - 1``; ``sample_weight`` holds one weight per query
    (in the order of ``group``, or of the sorted distinct ``qid``) and weights the mean.

    Unlike :func:`sklearn.metrics.ndcg_score`, whose gain is the label itself and which
    averages tied scores, this uses ``label_gain`` and breaks ties by row order.
    """
    from silva._queries import query_layout, query_weights
    from silva.engine import ranking

    y_true = np.asarray(y_true, dtype=np.float64)
    y_score = np.asarray(y_score, dtype=np.float64)
    if y_true.ndim != 1 or y_true.shape != y_score.shape:
        raise ValueError(f"ndcg_score: y_true and y_score must be 1-d of the same length; "
                         f"got shapes {y_true.shape} and {y_score.shape}.")
    gain = ranking.default_label_gain() if label_gain is None else np.asarray(
        label_gain, dtype=np.float64)
    ranking.check_relevance(y_true, len(gain), "ndcg_score: y_true")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"ndcg_score: k must be an int >= 1; got {k!r}.")
    layout = query_layout(y_true.shape[0], group, qid, "ndcg_score")
    weights = query_weights(sample_weight, layout.n_queries, "ndcg_score")
    return ranking.mean_ndcg(layout.sort(y_true), layout.sort(y_score), layout.offsets,
                             gain, k, weights)
