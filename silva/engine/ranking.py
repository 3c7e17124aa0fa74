"""Learning to rank: per-query gradients of the ranking objectives, and NDCG@k.

Rows are sorted by query; query ``q`` owns rows ``offsets[q]:offsets[q + 1]``. Every
kernel is compiled with numba and parallel over queries (each query's values depend on
its own rows only, so the results do not depend on the number of threads). Gradients
and hessians are unweighted, as for every :mod:`silva.engine.losses` loss: the booster
multiplies them by the sample weights (a query's weight, repeated on its rows).

Notation for one query: scores ``s_i`` (the raw predictions), relevance labels
``l_i`` (integers >= 0), gains ``G(l)`` (``label_gain[l]``, by default ``2^l - 1``),
position discounts ``D(p) = 1 / log2(2 + p)`` for the 0-based position ``p`` of a document
in the ranking by descending score (ties kept in row order),
``DCG@k = sum_{p < k} G(l_(p)) D(p)`` and ``NDCG@k = DCG@k / IDCG@k``, the ideal DCG
being that of the ranking by descending label (Jarvelin & Kekalainen 2002).

Objectives
----------
lambdarank (LambdaMART; Burges 2010, "From RankNet to LambdaRank to LambdaMART: An
Overview", sections 4-7)
    For every pair of the current ranking at positions ``a < b`` with ``a < k`` (the
    truncation level: at least the higher-placed document is in the top ``k``) and
    ``l_hi > l_lo`` (``hi``, ``lo`` the more and the less relevant of the two),
    ``|dNDCG| = |G(l_hi) - G(l_lo)| |D(a) - D(b)| / IDCG@k`` is the change of NDCG if
    the two swapped places, ``rho = 1 / (1 + exp(sigma (s_hi - s_lo)))`` RankNet's
    probability of the wrong order, and the pair adds

    - ``lambda = -sigma |dNDCG| rho`` to the gradient of ``hi`` and ``-lambda`` to
      that of ``lo`` (section 6: lambdas are RankNet's gradients scaled by the change
      of the metric);
    - ``sigma^2 |dNDCG| rho (1 - rho)`` to the hessian of both (section 7: the second
      derivative of RankNet's cost, scaled the same way, for the Newton step).

    With ``norm`` (LightGBM's ``lambdarank_norm``): each pair's ``|dNDCG|`` is divided
    by ``0.01 + |s_hi - s_lo|`` (unless every score of the query is the same), so pairs
    already far apart weigh less; then all the query's gradients and hessians are
    multiplied by ``log2(1 + S) / S``, ``S = sum over pairs of 2 |lambda|``, so that a
    query with many pairs does not outweigh the others. A query whose IDCG@k is 0 (no
    relevant document) has zero gradients.

pairwise (RankNet; Burges 2010, sections 2-3)
    The same pair terms over every pair of different labels, without ``|dNDCG|``,
    truncation or normalisation: ``lambda = -sigma rho``, hessian ``sigma^2 rho
    (1 - rho)``; the loss is ``sum_pairs log(1 + exp(-sigma (s_hi - s_lo)))``.

rank_xendcg (XE-NDCG; Bruch 2021, "An Alternative Cross Entropy Loss for
Learning-to-Rank", section 4)
    The cross entropy between the softmax of the scores ``p_i = e^{s_i} / sum_j e^{s_j}``
    and the target distribution ``t_i = phi_i / sum_j phi_j``, ``phi_i = 2^{l_i} -
    gamma_i``, with ``gamma_i`` drawn uniformly in [0, 1) afresh every iteration:
    ``L = -sum_i t_i log p_i``. Since ``sum t = 1``, its gradient is ``p_i - t_i`` and
    the diagonal of its hessian ``p_i (1 - p_i)``. A query with no relevant document
    (all labels 0) has zero gradients, as in LightGBM. (LightGBM's ``rank_xendcg`` adds
    higher-order terms of a series to the first-order gradient; this module keeps the
    exact derivative of the loss.)
"""

import numba as nb
import numpy as np

from silva.engine.jit import kernel
from silva.engine.losses import Loss

LAMBDARANK = 0
PAIRWISE = 1
XENDCG = 2

# NDCG's normalisation of a pair's metric change by the score gap: LightGBM's constant.
_SCORE_GAP_FLOOR = 0.01


@kernel()
def position_discounts(n):
    """``D(p) = 1 / log2(2 + p)`` for positions ``p = 0 .. n - 1``."""
    out = np.empty(n)
    for p in range(n):
        out[p] = 1.0 / np.log2(2.0 + p)
    return out


@kernel()
def _ideal_dcg(labels, label_gain, discounts, k):
    """DCG@k of the ranking by descending label."""
    ordered = np.sort(labels)[::-1]
    total = 0.0
    for p in range(min(k, ordered.shape[0])):
        total += label_gain[np.int64(ordered[p])] * discounts[p]
    return total


@kernel()
def _ranking_by_score(scores):
    """Positions by descending score, ties in row order (a stable sort)."""
    return np.argsort(-scores, kind="mergesort")


# Below this sum of a pair's two weights, its square underflows: the pair takes the exp.
_TINY_WEIGHT_SUM = 1e-150


@kernel(inline="always")
def _pair_terms(sigma, metric_change, gap_divisor, gap, weight_hi, weight_lo):
    """``(lambda, curvature)`` of a pair: ``-sigma m rho`` and ``sigma^2 m rho (1 - rho)``
    with ``m = metric_change / gap_divisor`` and RankNet's ``rho = 1 / (1 + exp(sigma
    gap))``, ``gap`` the better document's lead.

    ``rho`` comes from the per-document ``weight_i = exp(-sigma (s_i - s_min))`` (``s_min``
    the query's lowest score): ``rho = w_hi / (w_hi + w_lo)`` and ``rho (1 - rho) = w_hi
    w_lo / (w_hi + w_lo)^2``, so a pair costs one division and no exp (the exp and two
    divisions were most of the pair loop's time). When the weights are too small for
    their square (scores more than ~345 / sigma above the query's lowest), the exp.
    """
    total = weight_hi + weight_lo
    if total > _TINY_WEIGHT_SUM:
        scale = sigma * metric_change * weight_hi / (gap_divisor * total * total)
        return -scale * total, sigma * scale * weight_lo
    wrong = 1.0 / (1.0 + np.exp(sigma * gap))
    change = metric_change / gap_divisor
    return -sigma * change * wrong, sigma * sigma * change * wrong * (1.0 - wrong)


@kernel()
def _score_weights(scores, sigma, lowest):
    out = np.empty(scores.shape[0])
    for i in range(scores.shape[0]):
        out[i] = np.exp(-sigma * (scores[i] - lowest))
    return out


@kernel()
def _rerank(scores, order):
    """Sort ``order`` (local row numbers) by descending score, ties by row number: the
    same ranking as a stable sort, found by insertion from the previous iteration's
    ranking, which one tree changes little (linear time when nothing moves)."""
    for p in range(1, order.shape[0]):
        row = order[p]
        score = scores[row]
        q = p - 1
        while q >= 0 and (scores[order[q]] < score
                          or (scores[order[q]] == score and order[q] > row)):
            order[q + 1] = order[q]
            q -= 1
        order[q + 1] = row


@kernel()
def _lambdarank_query(labels, s, label_gain, inverse_ideal, discounts, sigma, truncation,
                      norm, order, scratch, grad, hess):
    """One query's lambdarank gradients and hessians (rows in their own order);
    ``order`` is its ranking of the last call (updated here), ``scratch`` (6, n) work
    space, ``inverse_ideal`` 1 / IDCG@k (0 when IDCG is 0)."""
    n = labels.shape[0]
    for i in range(n):
        grad[i] = 0.0
        hess[i] = 0.0
    if n < 2 or inverse_ideal == 0.0:
        return
    _rerank(s, order)
    # Work in ranked order, so that position b's values are contiguous.
    ranked_score = scratch[0]
    ranked_weight = scratch[1]
    ranked_label = scratch[2]
    ranked_gain = scratch[3]
    ranked_grad = scratch[4]
    ranked_hess = scratch[5]
    lowest = s[order[n - 1]]
    for p in range(n):
        ranked_score[p] = s[order[p]]
        ranked_weight[p] = np.exp(-sigma * (ranked_score[p] - lowest))
        ranked_label[p] = labels[order[p]]
        ranked_gain[p] = label_gain[np.int64(ranked_label[p])]
        ranked_grad[p] = 0.0
        ranked_hess[p] = 0.0
    divide_by_gap = norm and ranked_score[0] != lowest
    lambda_total = 0.0
    for a in range(min(n - 1, truncation)):
        score_a = ranked_score[a]
        label_a = ranked_label[a]
        gain_a = ranked_gain[a]
        weight_a = ranked_weight[a]
        discount_a = discounts[a]
        grad_a = 0.0
        hess_a = 0.0
        for b in range(a + 1, n):
            if label_a == ranked_label[b]:
                continue
            change = (abs(gain_a - ranked_gain[b]) * abs(discount_a - discounts[b])
                      * inverse_ideal)
            distance = abs(score_a - ranked_score[b])
            divisor = _SCORE_GAP_FLOOR + distance if divide_by_gap else 1.0
            if label_a > ranked_label[b]:  # a is the more relevant of the pair
                sign = 1.0
                lam, curvature = _pair_terms(sigma, change, divisor, score_a - ranked_score[b],
                                             weight_a, ranked_weight[b])
            else:
                sign = -1.0
                lam, curvature = _pair_terms(sigma, change, divisor, ranked_score[b] - score_a,
                                             ranked_weight[b], weight_a)
            grad_a += sign * lam
            ranked_grad[b] -= sign * lam
            hess_a += curvature
            ranked_hess[b] += curvature
            lambda_total -= 2.0 * lam
        ranked_grad[a] += grad_a
        ranked_hess[a] += hess_a
    factor = 1.0
    if norm and lambda_total > 0.0:
        factor = np.log2(1.0 + lambda_total) / lambda_total
    for p in range(n):
        grad[order[p]] = ranked_grad[p] * factor
        hess[order[p]] = ranked_hess[p] * factor


@kernel(parallel=True)
def inverse_ideal_dcg(y, offsets, label_gain, k):
    """``1 / IDCG@k`` per query (0 for a query whose IDCG is 0): labels do not change
    between iterations, so lambdarank computes these once per fit."""
    longest = 0
    for q in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[q + 1] - offsets[q])
    discounts = position_discounts(max(longest, 1))
    out = np.zeros(offsets.shape[0] - 1)
    for q in nb.prange(offsets.shape[0] - 1):
        ideal = _ideal_dcg(y[offsets[q]:offsets[q + 1]], label_gain, discounts, k)
        if ideal > 0.0:
            out[q] = 1.0 / ideal
    return out


def initial_ranking(offsets):
    """Each query's rows in their own order (local row numbers): the ranking of equal
    scores, where boosting starts."""
    sizes = np.diff(offsets)
    return (np.arange(offsets[-1]) - np.repeat(offsets[:-1], sizes)).astype(np.int64)


@kernel(parallel=True)
def _lambdarank_kernel(y, scores, offsets, label_gain, inverse_ideal, order, sigma,
                       truncation, norm, grad, hess):
    longest = 0
    for q in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[q + 1] - offsets[q])
    discounts = position_discounts(max(longest, 1))
    scratch = np.empty((6, scores.shape[0]))
    for q in nb.prange(offsets.shape[0] - 1):
        start = offsets[q]
        end = offsets[q + 1]
        _lambdarank_query(y[start:end], scores[start:end], label_gain, inverse_ideal[q],
                          discounts, sigma, truncation, norm, order[start:end],
                          scratch[:, start:end], grad[start:end], hess[start:end])


def lambdarank_gradients(y, scores, offsets, label_gain, sigma, truncation, norm, grad,
                         hess, inverse_ideal=None, order=None):
    """LambdaMART's gradients and hessians (see the module docstring) into ``grad`` and
    ``hess`` (n_rows,); ``truncation`` is ``k``, ``norm`` LightGBM's normalisation.

    A booster passes the fit's ``inverse_ideal`` (:func:`inverse_ideal_dcg`) and
    ``order`` (:func:`initial_ranking` at first, then updated in place: each query's
    ranking by score, which the next iteration starts its sort from); without them they
    are made here for this call.
    """
    if inverse_ideal is None:
        inverse_ideal = inverse_ideal_dcg(y, offsets, label_gain, truncation)
    if order is None:
        order = initial_ranking(offsets)
    _lambdarank_kernel(y, scores, offsets, label_gain, inverse_ideal, order, float(sigma),
                       int(truncation), bool(norm), grad, hess)


@kernel(parallel=True)
def pairwise_gradients(y, scores, offsets, sigma, grad, hess):
    """RankNet's pairwise logistic gradients and hessians over every pair of different
    labels of each query (see the module docstring)."""
    for q in nb.prange(offsets.shape[0] - 1):
        start = offsets[q]
        end = offsets[q + 1]
        for i in range(start, end):
            grad[i] = 0.0
            hess[i] = 0.0
        if end - start < 2:
            continue
        lowest = scores[start]
        for i in range(start, end):
            lowest = min(lowest, scores[i])
        weight = _score_weights(scores[start:end], sigma, lowest)
        for i in range(start, end):
            grad_i = 0.0
            hess_i = 0.0
            for j in range(i + 1, end):
                if y[i] == y[j]:
                    continue
                if y[i] > y[j]:
                    sign = 1.0
                    lam, curvature = _pair_terms(sigma, 1.0, 1.0, scores[i] - scores[j],
                                                 weight[i - start], weight[j - start])
                else:
                    sign = -1.0
                    lam, curvature = _pair_terms(sigma, 1.0, 1.0, scores[j] - scores[i],
                                                 weight[j - start], weight[i - start])
                grad_i += sign * lam
                grad[j] -= sign * lam
                hess_i += curvature
                hess[j] += curvature
            grad[i] += grad_i
            hess[i] += hess_i


@kernel(parallel=True)
def xendcg_gradients(y, scores, offsets, gammas, grad, hess):
    """XE-NDCG's gradients ``p - t`` and hessians ``p (1 - p)`` for the draws
    ``gammas`` (one per row, in [0, 1)); see the module docstring."""
    for q in nb.prange(offsets.shape[0] - 1):
        start = offsets[q]
        end = offsets[q + 1]
        relevant = False
        top = -np.inf
        for i in range(start, end):
            grad[i] = 0.0
            hess[i] = 0.0
            relevant = relevant or y[i] > 0
            top = max(top, scores[i])
        if not relevant or end - start < 2:
            continue
        exp_total = 0.0
        phi_total = 0.0
        for i in range(start, end):
            exp_total += np.exp(scores[i] - top)
            phi_total += 2.0 ** y[i] - gammas[i]
        for i in range(start, end):
            p = np.exp(scores[i] - top) / exp_total
            grad[i] = p - (2.0 ** y[i] - gammas[i]) / phi_total
            hess[i] = p * (1.0 - p)


@kernel(parallel=True)
def ndcg_per_query(y, scores, offsets, label_gain, k, out):
    """``out[q]`` = NDCG@k of query ``q``, its documents ranked by descending score (ties
    in row order); 1.0 for a query whose ideal DCG is 0 (LightGBM's convention: no
    ranking of it can be wrong)."""
    longest = 0
    for q in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[q + 1] - offsets[q])
    discounts = position_discounts(max(longest, 1))
    for q in nb.prange(offsets.shape[0] - 1):
        start = offsets[q]
        end = offsets[q + 1]
        labels = y[start:end]
        ideal = _ideal_dcg(labels, label_gain, discounts, k)
        if ideal <= 0.0:
            out[q] = 1.0
            continue
        order = _ranking_by_score(scores[start:end])
        total = 0.0
        for p in range(min(k, end - start)):
            total += label_gain[np.int64(labels[order[p]])] * discounts[p]
        out[q] = total / ideal


# ---------------------------------------------------------------- the losses
def default_label_gain(max_label=30):
    """LightGBM's default gains ``2^l - 1`` for labels ``0 .. max_label``."""
    return 2.0 ** np.arange(max_label + 1) - 1.0


class RankingLoss(Loss):
    """A ranking objective for the booster (see :class:`silva.engine.losses.Loss`).

    ``query_offsets`` (int64, rows sorted by query) is set by the estimator for the rows
    it trains on, and cleared after the fit; the scores start from 0 (only differences
    within a query matter), and the link is the identity (predictions are scores).
    """

    objective = LAMBDARANK

    def __init__(self, label_gain, sigma=1.0, truncation=30, norm=True, seed=0):
        self.name = ("lambdarank", "pairwise", "rank_xendcg")[self.objective]
        self.label_gain = np.ascontiguousarray(label_gain, dtype=np.float64)
        self.sigma = float(sigma)
        self.truncation = int(truncation)
        self.norm = bool(norm)
        self.seed = int(seed)
        self.query_offsets = None
        self._fit_state = None  # lambdarank: 1 / IDCG per query, the last ranking

    def check_y(self, y, sample_weight):
        check_relevance(y, len(self.label_gain), "y")

    def init_raw(self, y, sample_weight):
        return np.zeros(1)

    def loss(self, y, raw, sample_weight=None):
        raise ValueError("a ranking objective is evaluated by NDCG (eval_at), not a loss.")

    def gradient_hessian(self, y, raw, grad, hess, iteration=0):
        scores = np.ascontiguousarray(raw[:, 0])
        g = np.empty(y.shape[0])
        h = np.empty(y.shape[0])
        self._fill(y, scores, g, h, iteration)
        grad[:, 0] = g
        hess[:, 0] = h

    def _fill(self, y, scores, grad, hess, iteration):
        if self._fit_state is None:
            self._fit_state = (
                inverse_ideal_dcg(y, self.query_offsets, self.label_gain, self.truncation),
                initial_ranking(self.query_offsets))
        lambdarank_gradients(y, scores, self.query_offsets, self.label_gain, self.sigma,
                             self.truncation, self.norm, grad, hess, *self._fit_state)

    def end_fit(self):
        """Forget the training queries and what was computed from them: they are not
        part of the model."""
        self.query_offsets = None
        self._fit_state = None


class LambdaRank(RankingLoss):
    objective = LAMBDARANK


class Pairwise(RankingLoss):
    objective = PAIRWISE

    def _fill(self, y, scores, grad, hess, iteration):
        pairwise_gradients(y, scores, self.query_offsets, self.sigma, grad, hess)


class XENDCG(RankingLoss):
    objective = XENDCG

    def gammas(self, n_rows, iteration):
        """The iteration's draws, one per row: a stream of their own per (seed,
        iteration), so that a warm start continues with the same draws."""
        return np.random.default_rng([self.seed, iteration]).random(n_rows)

    def _fill(self, y, scores, grad, hess, iteration):
        xendcg_gradients(y, scores, self.query_offsets, self.gammas(y.shape[0], iteration),
                         grad, hess)


OBJECTIVES = {"lambdarank": LambdaRank, "rank_xendcg": XENDCG, "pairwise": Pairwise}


def check_relevance(y, n_gains, what):
    """ValueError unless every label of ``y`` is an integer in ``[0, n_gains - 1]``."""
    bad = ~np.isfinite(y) | (y < 0) | (y != np.floor(y))
    if bad.any():
        first = np.flatnonzero(bad)[0]
        raise ValueError(f"{what} must hold relevance labels, integers >= 0; row {first} "
                         f"has {y[first]}.")
    if y.size and y.max() > n_gains - 1:
        raise ValueError(f"{what} holds the relevance {int(y.max())}, above the largest "
                         f"that label_gain covers ({n_gains - 1}); pass a longer "
                         f"label_gain.")


def mean_ndcg(y, scores, offsets, label_gain, k, query_weight=None):
    """The (query-weighted) mean over queries of NDCG@k (:func:`ndcg_per_query`)."""
    out = np.empty(offsets.shape[0] - 1)
    ndcg_per_query(np.ascontiguousarray(y, dtype=np.float64),
                   np.ascontiguousarray(scores, dtype=np.float64),
                   np.ascontiguousarray(offsets, dtype=np.int64),
                   np.ascontiguousarray(label_gain, dtype=np.float64), int(k), out)
    return float(np.average(out, weights=query_weight))
