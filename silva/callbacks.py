"""Callbacks for gradient boosting: early stopping, logging, and user hooks.

A callback is any callable ``callback(env)`` that :meth:`GradientBoostingRegressor.fit`
(and the classifier's) calls after every boosting iteration with a :class:`CallbackEnv`.
To stop training, a callback raises :class:`EarlyStopException` with the (0-based)
iteration to keep; the model is then cut to ``best_iteration + 1`` iterations and
``best_iteration_`` is set. This is the contract of LightGBM's callbacks, kept small.

``env.evaluation_result_list`` holds one ``(data_name, metric_name, value,
higher_is_better)`` tuple per evaluation set and metric, in the order of ``eval_set``
(``"training"`` first when ``verbose`` asks for the training metric, then
``"valid_0"``, ``"valid_1"``, ..., or ``"validation"`` for the split made by
``validation_fraction``).

Examples
--------
>>> from silva.callbacks import EarlyStopping
>>> seen = []
>>> def record(env):
...     seen.append(env.iteration)
>>> # model.fit(X, y, eval_set=[(X_val, y_val)], callbacks=[EarlyStopping(10), record])
"""

from dataclasses import dataclass, field


@dataclass
class CallbackEnv:
    """What a callback sees after an iteration.

    Attributes
    ----------
    model : estimator
        The estimator being fitted (its fitted attributes are not final yet).
    iteration : int
        The 0-based iteration just finished (counting from the first iteration of this
        fit, warm-started iterations included).
    begin_iteration, end_iteration : int
        The iterations this fit runs, ``[begin_iteration, end_iteration)``.
    evaluation_result_list : list of (str, str, float, bool)
        ``(data_name, metric_name, value, higher_is_better)`` for this iteration.
    """

    model: object
    iteration: int
    begin_iteration: int
    end_iteration: int
    evaluation_result_list: list = field(default_factory=list)


class EarlyStopException(Exception):  # noqa: N818 (LightGBM's name)
    """Raised by a callback to stop boosting, keeping iterations ``0..best_iteration``."""

    def __init__(self, best_iteration, best_score=None):
        super().__init__(best_iteration, best_score)
        self.best_iteration = best_iteration
        self.best_score = best_score


class EarlyStopping:
    """Stop when a validation metric has not improved for ``stopping_rounds`` iterations.

    Parameters
    ----------
    stopping_rounds : int
        Iterations without improvement after which boosting stops.
    data_name : str or None, default=None
        The evaluation set to watch; None watches the first one that is not
        ``"training"``.
    metric_name : str or None, default=None
        The metric to watch; None watches the first metric of that set.
    min_delta : float, default=0.0
        Smallest change that counts as an improvement.
    """

    def __init__(self, stopping_rounds, data_name=None, metric_name=None, min_delta=0.0):
        if isinstance(stopping_rounds, bool) or not isinstance(stopping_rounds, int) \
                or stopping_rounds < 1:
            raise ValueError(f"stopping_rounds must be an int >= 1; got {stopping_rounds!r}.")
        self.stopping_rounds = stopping_rounds
        self.data_name = data_name
        self.metric_name = metric_name
        self.min_delta = float(min_delta)
        self.best_iteration = None
        self.best_score = None

    def _pick(self, results):
        for data_name, metric_name, value, higher in results:
            if self.data_name is None and data_name == "training":
                continue
            if self.data_name is not None and data_name != self.data_name:
                continue
            if self.metric_name is not None and metric_name != self.metric_name:
                continue
            return value, higher
        raise ValueError(
            "EarlyStopping found no evaluation result to watch "
            f"(data_name={self.data_name!r}, metric_name={self.metric_name!r}); pass an "
            "eval_set or set validation_fraction.")

    def __call__(self, env):
        value, higher = self._pick(env.evaluation_result_list)
        if self.best_score is None:
            improved = True
        elif higher:
            improved = value > self.best_score + self.min_delta
        else:
            improved = value < self.best_score - self.min_delta
        if improved:
            self.best_score = value
            self.best_iteration = env.iteration
        elif env.iteration - self.best_iteration >= self.stopping_rounds:
            raise EarlyStopException(self.best_iteration, self.best_score)


class LogEvaluation:
    """Print the evaluation results every ``period`` iterations (and at the last one).

    Lines read ``[10]  training's loss: 0.41  valid_0's loss: 0.45``, iterations
    counted from 1 as LightGBM prints them.
    """

    def __init__(self, period=1, file=None):
        if isinstance(period, bool) or not isinstance(period, int) or period < 1:
            raise ValueError(f"period must be an int >= 1; got {period!r}.")
        self.period = period
        self.file = file

    def __call__(self, env):
        number = env.iteration + 1
        if number % self.period != 0 and number != env.end_iteration:
            return
        if not env.evaluation_result_list:
            return
        parts = [f"{data}'s {metric}: {value:.6g}"
                 for data, metric, value, _ in env.evaluation_result_list]
        print(f"[{number}]\t" + "\t".join(parts), file=self.file, flush=True)
