"""Dask collections into prepared partitions on the workers, checked before any tree.

X is a dask array (2-D, chunked by rows; column chunks are merged) or a dask DataFrame;
y a dask array, Series or one-column DataFrame with as many partitions, partition ``i``
of y holding the targets of partition ``i`` of X. What is checked, and when:

- on the client, before anything is computed: the collection types, the number of
  partitions, the row chunk sizes when both are known, and that every non-numeric
  column of a DataFrame is categorical with known categories (from the dtype, which
  every worker then encodes alike);
- on the workers, in the first pass over the partitions
  (:func:`silva.dask._shard.describe_partition`): its columns against the collection's
  (names and count, by the estimator's own ``_prepare_X``), categorical codes, its row
  count against y's partition (which also covers dask arrays with unknown chunk sizes:
  their lengths become known in this pass), and y itself.

Empty partitions are skipped (they add nothing to any sum); a collection with no rows
at all is refused.
"""

import numpy as np


def is_dask_collection(obj):
    """Whether ``obj`` is a dask array, DataFrame or Series (without importing dask when
    it is not loaded: nothing else can be one then)."""
    import sys
    if "dask" not in sys.modules:
        return False
    from dask import is_dask_collection as check
    return check(obj)


def _is_dataframe_like(obj):
    import dask.dataframe as dd
    return isinstance(obj, dd.DataFrame | dd.Series)


def row_partitions(X, y, owner, sample_weight=None):
    """``(X_parts, y_parts, w_parts, X_sample)``: lists of one delayed object per row
    partition of X, y and ``sample_weight`` (None entries without weights), and a small
    in-memory stand-in of X with its columns and dtypes (for the template estimator's
    feature checks). ``owner`` names the estimator in errors."""
    import dask.array as da

    if not is_dask_collection(X):
        raise TypeError(f"{owner}.fit takes a dask array or dask DataFrame X; got "
                        f"{type(X).__name__}. For data in memory use the single-machine "
                        "estimator (silva.GradientBoostingClassifier / Regressor).")
    if not is_dask_collection(y):
        raise TypeError(f"{owner}.fit takes y as a dask array or Series partitioned like "
                        f"X; got {type(y).__name__}.")
    if isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(f"{owner}: X must be a 2-D dask array; got {X.ndim} "
                             "dimensions.")
        if X.numblocks[1] > 1:
            X = X.rechunk({1: -1})  # whole rows in each partition
        X_parts = list(X.to_delayed()[:, 0])
        n_features = X.shape[1]
        if np.isnan(n_features):
            raise ValueError(f"{owner}: X has an unknown number of columns.")
        X_sample = np.zeros((1, int(n_features)), dtype=X.dtype)
        x_rows = X.chunks[0]
    elif _is_dataframe_like(X):
        if X.ndim != 2:
            raise ValueError(f"{owner}: X must be a DataFrame, not a Series.")
        import pandas as pd
        from pandas.api.types import is_bool_dtype, is_numeric_dtype
        unknown = [c for c, t in X.dtypes.items()
                   if not (is_numeric_dtype(t) or is_bool_dtype(t))
                   and not (isinstance(t, pd.CategoricalDtype) and X[c].cat.known)]
        if unknown:
            # The categories must be known before any partition is read, so that every
            # worker encodes a category with the same code.
            raise ValueError(
                f"{owner}: the columns {unknown} are neither numeric nor categorical with "
                "known categories; make them categories first (X = X.categorize()).")
        X_parts = list(X.to_delayed())
        X_sample = X._meta_nonempty
        x_rows = None
    else:
        raise TypeError(f"{owner}.fit takes a dask array or DataFrame X; got "
                        f"{type(X).__name__}.")
    y_parts, y_rows = _column_partitions(y, "y", owner)
    w_parts = [None] * len(y_parts)
    named = [("y", y_parts, y_rows)]
    if sample_weight is not None:
        if not is_dask_collection(sample_weight):
            raise TypeError(f"{owner}.fit takes sample_weight as a dask array or Series "
                            f"partitioned like X; got {type(sample_weight).__name__}.")
        w_parts, w_rows = _column_partitions(sample_weight, "sample_weight", owner)
        named.append(("sample_weight", w_parts, w_rows))
    for name, parts, rows in named:
        if len(X_parts) != len(parts):
            raise ValueError(f"{owner}: X has {len(X_parts)} row partitions and {name} "
                             f"has {len(parts)}: they must be partitioned alike (rechunk "
                             f"{name} like X, e.g. {name}.rechunk(X.chunks[0])).")
        if x_rows is not None and rows is not None:
            for i, (a, b) in enumerate(zip(x_rows, rows, strict=True)):
                if not (np.isnan(a) or np.isnan(b)) and a != b:
                    raise ValueError(f"{owner}: partition {i} of X has {a} rows and "
                                     f"partition {i} of {name} has {b}: they must be "
                                     f"partitioned alike (e.g. "
                                     f"{name}.rechunk(X.chunks[0])).")
    return X_parts, y_parts, w_parts, X_sample


def _column_partitions(column, name, owner):
    """``(parts, row_chunks or None)`` of a one-dimensional dask collection."""
    import dask.array as da

    if isinstance(column, da.Array):
        if column.ndim == 2 and column.shape[1] == 1:
            column = column[:, 0]
        if column.ndim != 1:
            raise ValueError(f"{owner}: {name} must be one-dimensional; got shape "
                             f"{column.shape}.")
        return list(column.to_delayed()), column.chunks[0]
    if _is_dataframe_like(column):
        if column.ndim == 2:
            if len(column.columns) != 1:
                raise ValueError(f"{owner}: {name} must be one column; got "
                                 f"{len(column.columns)}.")
            column = column[column.columns[0]]
        return list(column.to_delayed()), None
    raise TypeError(f"{owner}: {name} must be a dask array or Series; got "
                    f"{type(column).__name__}.")


def gather_each(client, tasks):
    """Compute the delayed ``tasks`` on the cluster and bring their (small) results to
    the client; a task's error is raised as it is (the partition checks name their
    partition)."""
    return client.gather(client.compute(tasks))


def keep_by_worker(client, tasks, indices):
    """Compute the delayed ``tasks`` (of partitions ``indices``) on the cluster and leave
    their results there: ``{worker address: [(partition index, future), ...]}``."""
    from distributed import wait

    futures = client.compute(tasks)
    wait(futures)
    for future in futures:
        if future.status == "error":
            future.result()  # raises the task's own error
    holders = client.who_has(futures)
    by_worker = {}
    for index, future in zip(indices, futures, strict=True):
        addresses = holders.get(future.key) or []
        if not addresses:
            raise RuntimeError(f"silva.dask: a binned partition ({future.key}) is held by "
                               "no worker; was a worker lost while loading?")
        by_worker.setdefault(sorted(addresses)[0], []).append((index, future))
    return by_worker


def release_and_wait(client, futures, timeout=10.0):
    """Release ``futures`` and wait (at most ``timeout`` seconds) until no worker holds
    their results any more: so that their memory is free before the next allocation."""
    import time

    keys = [f.key for f in futures]
    for future in futures:
        future.release()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(client.who_has(keys).values()):
            return
        time.sleep(0.02)


def _same(value):
    return value


def balance_by_rows(client, by_worker, rows):
    """Even out the rows the workers hold (``by_worker`` as :func:`keep_by_worker` returns
    it, changed in place; ``rows[i]``: partition ``i``'s rows): Dask places the
    partitions as its scheduler sees fit, and a worker given more than its share can pass
    its memory limit once its shard is built. A partition moves from the most to the
    least loaded worker (a task pinned there copies it; binned partitions are small)
    while the move lowers the larger of the two loads, choosing the partition that
    leaves the two nearest; each move lowers the sum of squared loads, so this ends."""
    from distributed import wait

    load = {address: 0 for address in client.scheduler_info()["workers"]}
    for address, held in by_worker.items():
        load[address] = sum(rows[i] for i, _ in held)
    moved, replaced = [], []
    while len(load) > 1:
        heavy = max(sorted(load), key=load.get)
        light = min(sorted(load), key=load.get)
        held = by_worker.get(heavy, [])
        gap = load[heavy] - load[light]
        # A move of r rows leaves the pair |gap - 2r| apart: it helps when 0 < r < gap.
        fits = [(abs(gap - 2 * rows[i]), k) for k, (i, _) in enumerate(held)
                if 0 < rows[i] < gap]
        if not fits:
            break
        _, k = min(fits)
        index, future = held.pop(k)
        copy = client.submit(_same, future, workers=[light], allow_other_workers=False,
                             pure=False)
        by_worker.setdefault(light, []).append((index, copy))
        load[heavy] -= rows[index]
        load[light] += rows[index]
        moved.append(copy)
        replaced.append(future)
    if moved:
        wait(moved)
        release_and_wait(client, replaced)
    for address in [a for a, held in by_worker.items() if not held]:
        del by_worker[address]
    return by_worker
