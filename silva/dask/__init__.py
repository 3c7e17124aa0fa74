"""silva on Dask (``pip install silva[dask]``): distributed boosting and prediction.

- :class:`DaskGradientBoostingRegressor`, :class:`DaskGradientBoostingClassifier`:
  data-parallel training on the histogram engine over a ``distributed`` cluster
  (:mod:`silva.dask.boosting`); ``to_local()`` gives the ordinary fitted estimator;
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
from silva.dask.prediction import decision_function, predict, predict_proba

__all__ = ["DaskGradientBoostingClassifier", "DaskGradientBoostingRegressor",
           "WorkerLostError", "decision_function", "predict", "predict_proba"]
