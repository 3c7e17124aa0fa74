"""silva on Dask (``pip install silva[dask]``): distributed boosting, forests and prediction.

- :class:`DaskGradientBoostingRegressor`, :class:`DaskGradientBoostingClassifier`:
  data-parallel training on the histogram engine over a ``distributed`` cluster
  (:mod:`silva.dask.boosting`); ``to_local()`` gives the ordinary fitted estimator;
- :class:`DaskRandomForestClassifier`, :class:`DaskRandomForestRegressor` and the
  extra-trees pair: the Poisson-bootstrap, level-wise forest of
  :mod:`silva.engine.levelwise` grown over the workers' rows (:mod:`silva.dask.forest`);
- :func:`predict`, :func:`predict_proba`, :func:`decision_function`: any fitted silva
  estimator on dask arrays and DataFrames, lazily (:mod:`silva.dask.prediction`).

How it works, round trips per tree and what is not done yet: ``docs/distributed.md``.
"""

try:
    import dask  # noqa: F401
    import distributed  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError("silva.dask needs dask and distributed: pip install silva[dask]"
                      ) from error

from silva.dask._grower import WorkerLostError
from silva.dask.boosting import DaskGradientBoostingClassifier, DaskGradientBoostingRegressor
from silva.dask.forest import (
    DaskExtraTreesClassifier,
    DaskExtraTreesRegressor,
    DaskRandomForestClassifier,
    DaskRandomForestRegressor,
)
from silva.dask.prediction import decision_function, predict, predict_proba

__all__ = ["DaskExtraTreesClassifier", "DaskExtraTreesRegressor",
           "DaskGradientBoostingClassifier", "DaskGradientBoostingRegressor",
           "DaskRandomForestClassifier", "DaskRandomForestRegressor", "WorkerLostError",
           "decision_function", "predict", "predict_proba"]
