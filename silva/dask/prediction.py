"""Prediction on dask collections for every silva estimator, lazily, partition by partition.

:func:`predict`, :func:`predict_proba` and :func:`decision_function` take any fitted
silva estimator (a single-machine one, or a Dask-trained one, which is used through
``to_local()``) and a dask array or DataFrame X partitioned by rows. Nothing is computed
when they are called: each row partition becomes one task that calls the estimator's own
method on that partition (so its input checks and category encoding apply unchanged).
The model enters the graph once, as one key every task depends on.

Returns: a dask array for a dask array X (rows chunked as X's, unknown sizes included);
for a dask DataFrame X, a dask Series (:func:`predict`, one output) or a dask DataFrame
(one column per class for :func:`predict_proba`, per output otherwise), indexed as X.
"""

import numpy as np


def predict(model, X):
    """The model's ``predict`` on each row partition of ``X``, lazily."""
    return _map(model, X, "predict")


def predict_proba(model, X):
    """The model's ``predict_proba`` on each row partition of ``X``, lazily."""
    if not hasattr(model, "predict_proba"):
        raise AttributeError(f"{type(model).__name__} has no predict_proba.")
    return _map(model, X, "predict_proba")


def decision_function(model, X):
    """The model's ``decision_function`` on each row partition of ``X``, lazily."""
    if not hasattr(model, "decision_function"):
        raise AttributeError(f"{type(model).__name__} has no decision_function.")
    return _map(model, X, "decision_function")


def _output_shape(model, method):
    """``(n_columns or None for one-dimensional output, dtype)`` of ``method``, found by
    calling it on one row of zeros with the model's columns; None for a model fitted on
    category columns (zeros are not its categories: the output is then learnt from
    the first rows of the data frame's meta)."""
    from sklearn.utils.validation import check_is_fitted
    check_is_fitted(model)
    if getattr(model, "_encoder", None) is not None:
        return None
    row = np.zeros((1, model.n_features_in_))
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        import pandas as pd
        row = pd.DataFrame(row, columns=names)
    out = np.asarray(getattr(model, method)(row))
    return (None if out.ndim == 1 else out.shape[1]), out.dtype


def _call(model, method, block, empty=None):
    # An empty partition (a valid dask chunk) gets an empty answer: the estimators'
    # input checks refuse zero rows.
    if empty is not None and len(block) == 0:
        return empty
    return getattr(model, method)(block)


def _map(model, X, method):
    import dask
    import dask.array as da
    import dask.dataframe as dd

    from silva.dask._data import is_dask_collection
    if hasattr(model, "to_local") and hasattr(model, "dask_fit_"):
        model = model.to_local()
    if not is_dask_collection(X):
        raise TypeError(f"silva.dask.{method} takes a dask array or DataFrame; got "
                        f"{type(X).__name__} (call the model's own {method} on data in "
                        "memory).")
    model_key = dask.delayed(model, pure=True)
    shape = _output_shape(model, method)
    if isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D dask array; got {X.ndim} dimensions.")
        if X.numblocks[1] > 1:
            X = X.rechunk({1: -1})
        if shape is None:
            raise ValueError(f"{type(model).__name__} was fitted on a data frame with "
                             "category columns: predict on a dask DataFrame.")
        n_columns, dtype = shape
        if n_columns is None:
            return X.map_blocks(_call_block, model_key, method,
                                np.empty(0, dtype=dtype), dtype=dtype, drop_axis=1,
                                chunks=(X.chunks[0],), meta=np.empty(0, dtype=dtype))
        return X.map_blocks(_call_block, model_key, method,
                            np.empty((0, n_columns), dtype=dtype), dtype=dtype,
                            chunks=(X.chunks[0], (n_columns,)),
                            meta=np.empty((0, 0), dtype=dtype))
    if not isinstance(X, dd.DataFrame):
        raise TypeError(f"X must be a dask array or DataFrame; got {type(X).__name__}.")
    if shape is None:
        meta = _frame_output(model, method, X._meta_nonempty.iloc[:1])
    else:
        n_columns, dtype = shape
        meta = _frame_output(model, method, None, n_columns, dtype)
    return X.map_partitions(_call_frame, model_key, method, meta.iloc[:0],
                            meta=meta.iloc[:0])


def _call_block(block, model, method, empty):
    return _call(model, method, block, empty)


def _frame_output(model, method, frame, n_columns=None, dtype=None):
    import pandas as pd
    if frame is not None:
        out = np.asarray(getattr(model, method)(frame))
        index = frame.index
    else:
        out = np.zeros((1,) if n_columns is None else (1, n_columns), dtype=dtype)
        index = pd.RangeIndex(1)
    return _wrap(model, method, out, index)


def _wrap(model, method, out, index):
    import pandas as pd
    if out.ndim == 1:
        return pd.Series(out, index=index, name=method)
    classes = getattr(model, "classes_", None)
    if method == "predict_proba" and classes is not None and len(classes) == out.shape[1]:
        columns = list(classes)
    else:
        columns = list(range(out.shape[1]))
    return pd.DataFrame(out, index=index, columns=columns)


def _call_frame(frame, model, method, empty):
    if len(frame) == 0:
        return empty.set_axis(frame.index, axis=0)
    return _wrap(model, method, np.asarray(getattr(model, method)(frame)), frame.index)
