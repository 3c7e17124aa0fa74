"""Compile silva's kernels ahead of time: :func:`compile`, and ``silva compile``.

numba compiles each kernel on its first call and caches the machine code on disk (see
:mod:`silva.engine.compile_notice`). A container image, a CI job or a teaching lab that
wants every user's first fit to be fast runs this once, after installing silva: it fits
each chosen estimator on a few dozen rows, with the options users start from, in
parallel worker processes (compiling is single-threaded, and estimators share few
kernels), and predicts with it, so that the cache holds what those calls reach.

Kernels that a configuration reaches only with other options (another criterion, loss
or splitter) are compiled when first used, as without warm-up.
"""

import os
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np

# Estimator name -> the parameter sets compiled for it. Each criterion, loss and
# splitter has kernels of its own; these are the defaults plus the common alternatives.
_CONFIGURATIONS = {
    "DecisionTreeClassifier": [{}, {"criterion": "entropy"}],
    "DecisionTreeRegressor": [{}],
    "RandomForestClassifier": [{"n_estimators": 2}],
    "RandomForestRegressor": [{"n_estimators": 2}],
    "ExtraTreesClassifier": [{"n_estimators": 2}],
    "ExtraTreesRegressor": [{"n_estimators": 2}],
    "BaggingClassifier": [{"n_estimators": 2}],
    "BaggingRegressor": [{"n_estimators": 2}],
    "AdaBoostClassifier": [{"n_estimators": 2}],
    "AdaBoostRegressor": [{"n_estimators": 2}],
    "GradientBoostingClassifier": [{"n_estimators": 2}],
    "GradientBoostingRegressor": [{"n_estimators": 2}],
    "ID3Classifier": [{}],
    "C45Classifier": [{}],
}


def _small_data(classifier, n_classes):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 4))
    X[::7, 1] = np.nan  # the missing-value paths
    if classifier:
        y = np.arange(60) % n_classes
    else:
        y = X[:, 0] * 2.0 + rng.normal(size=60)
    return X, y


def _compile_one(name):
    """Fit and predict ``name`` in each of its configurations; returns the seconds taken."""
    import silva

    start = time.perf_counter()
    estimator_class = getattr(silva, name)
    classifier = name.endswith("Classifier")
    for params in _CONFIGURATIONS[name]:
        # Binary and multiclass classification take different loss kernels in boosting.
        for n_classes in ((2, 3) if classifier else (0,)):
            X, y = _small_data(classifier, n_classes)
            model = estimator_class(**params).fit(X, y)
            model.predict(X)
            if classifier:
                model.predict_proba(X)
    return time.perf_counter() - start


def compile(estimators=None, *, n_jobs=None, verbose=False):  # shadows the builtin on purpose
    """Compile the kernels of ``estimators`` into numba's on-disk cache, ahead of time.

    Parameters
    ----------
    estimators : list of str, optional
        Names of silva estimators (``"DecisionTreeClassifier"``, ...); all of them when
        omitted. Voting and stacking compile through the estimators they combine.
    n_jobs : int, optional
        Worker processes; the number of CPUs when omitted.
    verbose : bool, default=False
        Print each estimator's compile time as it finishes.

    Returns
    -------
    dict
        Seconds spent on each estimator (a few hundredths once the cache is warm).

    Examples
    --------
    >>> import silva
    >>> seconds = silva.compile(["DecisionTreeClassifier"])  # doctest: +SKIP
    """
    names = list(_CONFIGURATIONS) if estimators is None else list(estimators)
    unknown = [name for name in names if name not in _CONFIGURATIONS]
    if unknown:
        raise ValueError(f"silva.compile: unknown estimator(s) {unknown}; choose from "
                         f"{sorted(_CONFIGURATIONS)}.")
    n_jobs = (os.cpu_count() or 1) if n_jobs is None else int(n_jobs)
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be >= 1; got {n_jobs}.")
    seconds = {}
    # Fresh interpreters ("spawn"): a forked child would inherit this process's state.
    with ProcessPoolExecutor(max_workers=min(n_jobs, len(names)),
                             mp_context=get_context("spawn")) as pool:
        futures = {name: pool.submit(_compile_one, name) for name in names}
        for name, future in futures.items():
            seconds[name] = future.result()
            if verbose:
                print(f"{name}: {seconds[name]:.1f} s", flush=True)
    return seconds
