"""Learning to rank with gradient-boosted trees: :class:`GradientBoostingRanker`.

LambdaMART (Burges 2010) and its relatives on silva's Newton boosting: the estimator is
:class:`silva.boosting.BaseGradientBoosting` with a ranking objective from
:mod:`silva.engine.ranking` as its loss. The objectives need to know which rows belong to
one query, so the ranker sorts the rows by query (``group=`` sizes as LightGBM's
``LGBMRanker`` takes them, or ``qid=`` ids per row as XGBoost's ``XGBRanker``), hands the
query offsets to the loss, and evaluates NDCG@k per query on the evaluation sets (its own
evaluator in the boosting loop's :class:`silva._boosting_loop.BoostingConfig`). Trees,
binning, sampling, early stopping and callbacks are the booster's own.
"""

import numbers

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from silva import _boosting_loop, _input
from silva._boosting_loop import EvalSet
from silva._queries import query_layout, query_weights
from silva.boosting import _COMMON_DOC, BaseGradientBoosting
from silva.engine import ranking


class GradientBoostingRanker(BaseGradientBoosting):
    """Gradient-boosted trees that rank documents within queries (LambdaMART).

    ``predict`` returns a score per row; within a query, higher scores rank first.

    Parameters
    ----------
    objective : {"lambdarank", "rank_xendcg", "pairwise"}, default="lambdarank"
        "lambdarank": LambdaMART's lambdas, RankNet's pair gradients scaled by the
        change of NDCG (Burges 2010); "rank_xendcg": the XE-NDCG cross entropy (Bruch
        2021); "pairwise": RankNet's logistic loss over all pairs of different
        relevance. Formulas in :mod:`silva.engine.ranking`.
    label_gain : array-like of float or None, default=None
        The gain of each relevance label ``0, 1, ...`` in DCG (and in lambdarank's
        metric changes); None is LightGBM's ``2^l - 1`` for labels up to 30. Labels
        must be integers below ``len(label_gain)``.
    sigma : float, default=1.0
        The slope of RankNet's pair probability ``1 / (1 + exp(-sigma (s_i - s_j)))``
        (LightGBM's ``sigmoid``); lambdarank and pairwise.
    lambdarank_truncation_level : int, default=30
        lambdarank's ``k``: only pairs with at least one document among the top ``k``
        of the current ranking contribute, and NDCG is normalised by the ideal DCG@k.
    lambdarank_norm : bool, default=True
        Divide each pair's NDCG change by ``0.01 + |score gap|`` and scale each query's
        lambdas by ``log2(1 + S) / S`` (``S`` their total size), as LightGBM does.
    eval_at : int or sequence of int, default=(1, 2, 3, 4, 5)
        The ``k`` of the NDCG@k recorded on every evaluation set (``evals_result_``
        holds ``"ndcg@k"`` for each); early stopping watches the first, on the first
        evaluation set (LightGBM with ``first_metric_only=True``), and :meth:`score`
        reports it.
    validation_fraction : float or None, default=0.1
        With early stopping and no ``eval_set``, this fraction of the queries (whole
        queries, drawn from ``random_state``) is held out.
    """ + _COMMON_DOC.replace(
        """    validation_fraction : float or None, default=0.1
        With early stopping and no ``eval_set``, this fraction of the training data is
        held out (stratified for classifiers).
    scoring : None, str or callable, default=None
        The evaluation metric: None is the loss itself; strings are listed per class;
        a callable ``scoring(y_true, prediction, sample_weight) -> float`` (higher is
        better) receives probabilities for classifiers.
""", "") + """
    Attributes
    ----------
    estimators_ : list of lists of silva.engine.tree.Tree
        The trees of every iteration (leaf values include the learning rate).
    init_raw_ : ndarray of shape (1,)
        The initial score, 0.
    n_iter_ : int
    best_iteration_ : int or None
        0-based best iteration when early stopping ran.
    evals_result_ : dict
        ``{data_name: {"ndcg@k": [value per iteration]}}``.
    feature_importances_ : ndarray of shape (n_features,)

    Examples
    --------
    >>> import numpy as np
    >>> from silva import GradientBoostingRanker
    >>> rng = np.random.RandomState(0)
    >>> X = rng.rand(200, 3)
    >>> y = np.minimum((4 * X[:, 0] + rng.rand(200)).astype(int), 4)
    >>> model = GradientBoostingRanker(n_estimators=10, min_samples_leaf=5)
    >>> model = model.fit(X, y, group=[20] * 10)
    >>> model.score(X, y, group=[20] * 10) > 0.9
    True
    """

    # The booster's evaluation metric is NDCG (eval_at), never a user scoring.
    scoring = None

    def __init__(self, *, objective="lambdarank", label_gain=None, sigma=1.0,
                 lambdarank_truncation_level=30, lambdarank_norm=True,
                 eval_at=(1, 2, 3, 4, 5), boosting="newton", learning_rate=0.1,
                 n_estimators=100, l2_regularization=0.0, l1_regularization=0.0,
                 min_split_gain=0.0, min_child_weight=1e-3, min_samples_leaf=20,
                 max_depth=None, max_leaf_nodes=31, growth="leafwise", max_delta_step=None,
                 subsample=1.0, sampling="uniform", goss_top_rate=0.2, goss_other_rate=0.1,
                 colsample_bytree=1.0, colsample_bynode=1.0, max_bins=255,
                 bin_subsample=None, min_samples_bin=3, categorical_features=None,
                 monotonic_constraints=None, interaction_constraints=None,
                 early_stopping_rounds=None,
                 validation_fraction=0.1, importance_type="gain", verbose=0,
                 warm_start=False, random_state=None):
        self.objective = objective
        self.label_gain = label_gain
        self.sigma = sigma
        self.lambdarank_truncation_level = lambdarank_truncation_level
        self.lambdarank_norm = lambdarank_norm
        self.eval_at = eval_at
        self.boosting = boosting
        self.learning_rate = learning_rate
        self.n_estimators = n_estimators
        self.l2_regularization = l2_regularization
        self.l1_regularization = l1_regularization
        self.min_split_gain = min_split_gain
        self.min_child_weight = min_child_weight
        self.min_samples_leaf = min_samples_leaf
        self.max_depth = max_depth
        self.max_leaf_nodes = max_leaf_nodes
        self.growth = growth
        self.max_delta_step = max_delta_step
        self.subsample = subsample
        self.sampling = sampling
        self.goss_top_rate = goss_top_rate
        self.goss_other_rate = goss_other_rate
        self.colsample_bytree = colsample_bytree
        self.colsample_bynode = colsample_bynode
        self.max_bins = max_bins
        self.bin_subsample = bin_subsample
        self.min_samples_bin = min_samples_bin
        self.categorical_features = categorical_features
        self.monotonic_constraints = monotonic_constraints
        self.interaction_constraints = interaction_constraints
        self.early_stopping_rounds = early_stopping_rounds
        self.validation_fraction = validation_fraction
        self.importance_type = importance_type
        self.verbose = verbose
        self.warm_start = warm_start
        self.random_state = random_state

    # ------------------------------------------------------------- checks
    def _where(self, what):
        return f"{type(self).__name__}.{what}"

    def _check_ranking_params(self):
        """``(loss class, label gains, eval_at tuple)``; ValueError naming the parameter."""
        name = type(self).__name__
        if not isinstance(self.objective, str) or self.objective not in ranking.OBJECTIVES:
            raise ValueError(f"{name}: objective must be one of "
                             f"{sorted(ranking.OBJECTIVES)}; got {self.objective!r}.")
        if self.label_gain is None:
            gain = ranking.default_label_gain()
        else:
            try:
                gain = np.asarray(self.label_gain, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"{name}: label_gain must be a list of numbers; got "
                                 f"{self.label_gain!r}.") from None
            if gain.ndim != 1 or gain.size == 0 or not np.all(np.isfinite(gain)) \
                    or np.any(gain < 0):
                raise ValueError(f"{name}: label_gain must be a non-empty 1-d list of "
                                 f"finite gains >= 0; got {self.label_gain!r}.")
        _input.check_float(self.sigma, "sigma", 0.0, low_inclusive=False)
        _input.check_int(self.lambdarank_truncation_level, "lambdarank_truncation_level", 1)
        if not isinstance(self.lambdarank_norm, bool | np.bool_):
            raise ValueError(f"{name}: lambdarank_norm must be a bool; got "
                             f"{self.lambdarank_norm!r}.")
        at = (self.eval_at,) if isinstance(self.eval_at, numbers.Integral) else self.eval_at
        try:
            at = tuple(at)
        except TypeError:
            raise ValueError(f"{name}: eval_at must be an int or a sequence of ints >= 1; "
                             f"got {self.eval_at!r}.") from None
        if not at or any(isinstance(k, bool | np.bool_) or not isinstance(k, numbers.Integral)
                         or k < 1 for k in at):
            raise ValueError(f"{name}: eval_at must be an int or a non-empty sequence of "
                             f"ints >= 1; got {self.eval_at!r}.")
        return ranking.OBJECTIVES[self.objective], gain, tuple(int(k) for k in at)

    def _relevance(self, y, n_rows, gain, who):
        y = _input.regression_target(self._check_y_shape(y, n_rows))
        ranking.check_relevance(y, len(gain), f"{who}: y")
        return y

    # ---------------------------------------------------------------- fit
    def fit(self, X, y, group=None, qid=None, sample_weight=None, *, eval_set=None,
            eval_group=None, eval_qid=None, callbacks=None):
        """Boost trees that rank the rows of each query of (X, y).

        Parameters
        ----------
        X : array-like or data frame of shape (n_rows, n_features)
            NaN means missing.
        y : array-like of shape (n_rows,)
            Relevance labels, integers ``0 .. len(label_gain) - 1`` (higher is more
            relevant).
        group : array-like of int or None
            Sizes of consecutive queries, summing to ``n_rows`` (LightGBM).
        qid : array-like of shape (n_rows,) or None
            A query id per row, in any order (XGBoost); rows are sorted by id stably,
            so the model depends on neither the order of the queries nor the
            interleaving of their rows. Exactly one of ``group`` and ``qid``.
        sample_weight : array-like of shape (n_queries,) or None
            One weight per *query* (as XGBoost's ranker), in the order of ``group`` or
            of the sorted distinct ``qid``; every document of a query carries it. A
            query of weight 0 takes no part.
        eval_set : list of (X, y) pairs
            Evaluated after every iteration (NDCG@k for each ``eval_at``), watched by
            early stopping; ``eval_group`` or ``eval_qid`` gives their queries, one
            entry per pair.
        callbacks : list of callables
            See :mod:`silva.callbacks`.
        """
        who = self._where("fit")
        loss_class, gain, eval_at = self._check_ranking_params()
        X = self._training_X(X)
        y = self._relevance(y, X.shape[0], gain, who)
        layout = query_layout(X.shape[0], group, qid, who)
        weights = query_weights(sample_weight, layout.n_queries, who)
        checked = self._check_params(X.shape[1])
        _input.check_categorical_codes(X, self.is_categorical_, self.max_bins,
                                       getattr(self, "feature_names_in_", None))
        evals = self._eval_sets(eval_set, eval_group, eval_qid, gain)
        rng = check_random_state(self.random_state)
        X, y, offsets = layout.sort(X), layout.sort(y), layout.offsets
        kept = np.flatnonzero(weights > 0)
        if kept.size < layout.n_queries:
            X, y, offsets = _select_queries(X, y, offsets, kept)
            weights = weights[kept]
        if self.early_stopping_rounds is not None and not evals:
            X, y, offsets, weights, evals = self._hold_out_queries(X, y, offsets, weights,
                                                                   rng)
        sizes = np.diff(offsets)
        row_weight = _input.check_sample_weight(np.repeat(weights, sizes), X.shape[0])

        loss = loss_class(gain, self.sigma, self.lambdarank_truncation_level,
                          bool(self.lambdarank_norm), seed=rng.randint(2**31 - 1))
        loss.query_offsets = offsets
        self._loss = loss
        config = self._loop_config(checked, loss, [e for e, _, _ in evals] or None,
                                   X.shape[1])
        if config.metric is not None:
            config = config._replace(
                metric=f"ndcg@{eval_at[0]}",
                evaluator=_NdcgEvaluator(gain, eval_at, y, offsets, weights, evals))
        record, codes = self._start_record(X, y, row_weight, loss, rng)
        self.estimators_ = record.trees
        self._split_gains = record.split_gains
        self.evals_result_ = record.evals_result
        self.best_iteration_ = None
        try:
            _boosting_loop.boost(X, y, row_weight, self._binner, self.is_categorical_,
                                 self.init_raw_, loss, config, rng,
                                 evals=[e for e, _, _ in evals], record=record,
                                 callbacks=callbacks, model=self, label=type(self).__name__,
                                 codes=codes)
        finally:
            loss.end_fit()
        self.best_iteration_ = record.best_iteration
        self._timings = record.timings
        self.n_iter_ = len(self.estimators_)
        self._packed = record.packed
        return self

    def _eval_sets(self, eval_set, eval_group, eval_qid, gain):
        """``[(EvalSet, offsets, query weights)]``, rows sorted by query."""
        if eval_set is None:
            if eval_group is not None or eval_qid is not None:
                raise ValueError(f"{self._where('fit')}: eval_group/eval_qid given "
                                 "without eval_set.")
            return []
        if isinstance(eval_set, tuple):
            eval_set = [eval_set]
        per_set = []
        for what, given in (("eval_group", eval_group), ("eval_qid", eval_qid)):
            if given is not None and len(given) != len(eval_set):
                raise ValueError(f"{self._where('fit')}: {what} needs one entry per "
                                 f"eval_set pair ({len(eval_set)}); got {len(given)}.")
            per_set.append(given)
        evals = []
        for j, pair in enumerate(eval_set):
            who = f"{self._where('fit')}: eval_set[{j}]"
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise ValueError(f"{who} must be an (X, y) pair.")
            try:
                X_e = self._prepare_X(pair[0], reset=False)
            except ValueError as error:
                raise ValueError(f"{who}: {error}") from error
            y_e = self._relevance(pair[1], X_e.shape[0], gain, who)
            group_e = None if eval_group is None else eval_group[j]
            qid_e = None if eval_qid is None else eval_qid[j]
            layout = query_layout(X_e.shape[0], group_e, qid_e, who)
            evals.append((EvalSet(f"valid_{j}", layout.sort(X_e), layout.sort(y_e),
                                  np.ones(X_e.shape[0])),
                          layout.offsets, np.ones(layout.n_queries)))
        return evals

    def _hold_out_queries(self, X, y, offsets, weights, rng):
        """Early stopping without an eval_set: ``validation_fraction`` of the queries
        (at least one, leaving at least one) become the ``"validation"`` set."""
        if self.validation_fraction is None:
            raise ValueError(f"{self._where('fit')}: early_stopping_rounds needs an "
                             "eval_set or a validation_fraction.")
        fraction = _input.check_float(self.validation_fraction, "validation_fraction", 0.0,
                                      1.0, low_inclusive=False)
        n_queries = offsets.shape[0] - 1
        if n_queries < 2:
            raise ValueError(f"{self._where('fit')}: early stopping without an eval_set "
                             f"holds out whole queries, and there is only {n_queries}.")
        n_held = min(n_queries - 1, max(1, int(round(fraction * n_queries))))
        shuffled = rng.permutation(n_queries)
        held, kept = np.sort(shuffled[:n_held]), np.sort(shuffled[n_held:])
        X_v, y_v, offsets_v = _select_queries(X, y, offsets, held)
        X, y, offsets_t = _select_queries(X, y, offsets, kept)
        validation = (EvalSet("validation", X_v, y_v, np.ones(X_v.shape[0])), offsets_v,
                      weights[held])
        return X, y, offsets_t, weights[kept], [validation]

    # ------------------------------------------------------------ predict
    def predict(self, X, iteration_range=None, pred_contrib=False, pred_interactions=False):
        """Ranking scores, one per row (higher ranks first within a query), from
        iterations ``[first, last)`` (default all).

        ``pred_contrib=True`` returns SHAP values of the score instead and
        ``pred_interactions=True`` SHAP interaction values (see :mod:`silva.explain`);
        with either, ``iteration_range`` must be None (all iterations).
        """
        if pred_contrib or pred_interactions:
            return self._explain(X, pred_interactions, iteration_range)
        return self._raw_predict(X, iteration_range)[:, 0]

    def staged_predict(self, X):
        """Scores after each iteration."""
        for raw in self._staged_raw(X):
            yield raw[:, 0]

    def score(self, X, y, group=None, qid=None, sample_weight=None):
        """Mean NDCG@k over the queries of (X, y), ``k`` the first of ``eval_at``;
        queries by ``group`` or ``qid`` and weights per query as in :meth:`fit`
        (see :func:`silva.metrics.ndcg_score`)."""
        check_is_fitted(self, "estimators_")
        from silva.metrics import ndcg_score

        _, gain, eval_at = self._check_ranking_params()
        scores = self.predict(X)
        y = self._relevance(y, scores.shape[0], gain, self._where("score"))
        return ndcg_score(y, scores, group=group, qid=qid, k=eval_at[0], label_gain=gain,
                          sample_weight=sample_weight)


class _NdcgEvaluator:
    """The boosting loop's evaluator for a ranker: NDCG@k for every ``k`` of ``eval_at``
    on the training queries (when recorded) and on each evaluation set."""

    def __init__(self, gain, eval_at, y, offsets, weights, evals):
        self.gain = gain
        self.eval_at = eval_at
        self.training = (y, offsets, weights)
        self.queries = {e.name: (offsets_e, weights_e) for e, offsets_e, weights_e in evals}

    def __call__(self, raw, evals, record_training):
        sets = [("training", *self.training, raw)] if record_training else []
        sets += [(e.name, e.y, *self.queries[e.name], e.raw) for e in evals]
        results = []
        for name, y, offsets, weights, scores in sets:
            for k in self.eval_at:
                value = ranking.mean_ndcg(y, scores[:, 0], offsets, self.gain, k, weights)
                results.append((name, f"ndcg@{k}", value, True))
        return results


def _select_queries(X, y, offsets, queries):
    """The rows of ``queries`` (sorted query numbers) and their new offsets."""
    sizes = np.diff(offsets)[queries]
    rows = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in queries])
    return X[rows], y[rows], np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
