"""Compile silva's kernels ahead of time: :func:`compile`, and ``silva compile``.

numba compiles each kernel on its first call and caches the machine code on disk (see
:mod:`silva.engine.compile_notice`). A container image, a CI job or a teaching lab that
wants every user's first fit to be fast runs this once, after installing silva: it fits
each chosen estimator on a few dozen rows and on 10,000 rows (small and large data take
kernels of their own; gradient boosting also on data as wide as its tiled histogram
passes take on this CPU), with the options users start from, in parallel worker processes
(compiling is single-threaded; kernels that estimators share may be compiled by more
than one worker), and predicts with it, so that the cache holds what those calls reach.

Kernels that a configuration reaches only with other options (another criterion, loss
or splitter) are compiled when first used, as without warm-up.
"""

import os
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np

from silva.engine.jit import kernel

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


# A fit compiles the paths its data take (silva.engine.grower.compiled_grower): a few
# dozen rows take the serial kernels and numpy's binning; this many rows x features
# take the parallel ones (boosting's row blocks from 8,192 rows) and the compiled binning
# (above binning.NUMPY_BINNING_MAX_VALUES values), which large data use.
_LARGE_ROWS, _LARGE_FEATURES = 10000, 28
# Gradient boosting sums the histograms of data with many features in tiles, in a copy
# of its grower of its own, chosen at run time by this CPU's L2 cache
# (gradient_histogram.is_wide): a third size, as wide as that takes, compiles it. Fewer
# rows than the large size: enough for the parallel passes, and quick to bin.
_WIDE_ROWS = 4000


def _wide_features():
    """The fewest features (of 255 bins, a few more for margin) that this CPU's
    boosting fits sum in tiles."""
    from silva.engine import gradient_histogram

    bins = gradient_histogram.padded_bins(256)
    n_features = 2 * gradient_histogram.TILE_FEATURES
    while not gradient_histogram.is_wide(n_features, bins):
        n_features += 1
    return n_features + 4


@kernel()
def _cache_marker():
    """A kernel of no use but its cache entry: the workers of :func:`compile` (and of
    a cold ``silva demo``) compile it after their fits, and so does the demo's check
    (a tenth of a second), so that a process that finds it cached knows that this
    machine has compiled silva's kernels for this silva (see :func:`cache_seems_cold`)."""
    return 1


def count_silva_compiles(function):
    """Call ``function()``; return how many of silva's kernels numba compiled meanwhile
    (0 when every kernel it reached came from numba's on-disk cache, whose loads raise
    no compile event)."""
    from numba.core import event

    from silva.engine.compile_notice import is_silva_compile

    with event.install_recorder("numba:compile") as recorder:
        function()
    return sum(1 for _, compile_event in recorder.buffer
               if compile_event.is_start and is_silva_compile(compile_event))


def cache_seems_cold():
    """Whether numba's on-disk cache seems to hold none of silva's kernels: a new
    machine, or a new silva or numba. Reads that from :func:`_cache_marker`, compiled
    now if it was not cached (which marks the cache for next time). A cache warmed
    otherwise (a user's own first fits) reads cold once; one emptied in part reads
    warm."""
    return count_silva_compiles(_cache_marker) > 0


def _sizes(name):
    """``(n_rows, n_features)`` of the data each of ``name``'s configurations is fitted
    on."""
    sizes = [(60, 4), (_LARGE_ROWS, _LARGE_FEATURES)]
    if name.startswith("GradientBoosting"):
        sizes.append((_WIDE_ROWS, _wide_features()))
    return sizes


def _data(classifier, n_classes, n_rows=60, n_features=4):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(n_rows, n_features))
    X[::7, 1] = np.nan  # the missing-value paths
    if classifier:
        y = np.arange(n_rows) % n_classes
    else:
        y = X[:, 0] * 2.0 + rng.normal(size=n_rows)
    return X, y


def _fit_and_predict(fits):
    """Fit each ``(estimator, X, y)`` of ``fits`` (a copy unpickled in this worker) and
    predict with it, in order; returns the seconds taken."""
    start = time.perf_counter()
    for estimator, X, y in fits:
        model = estimator.fit(X, y)
        model.predict(X)
        if hasattr(model, "predict_proba"):
            model.predict_proba(X)
    # The cache now holds silva's kernels (see cache_seems_cold). Marked here, not in
    # the parent, whose compile would print the compile notice after the work is done.
    _cache_marker()
    return time.perf_counter() - start


def fit_in_workers(jobs, n_jobs=None, on_done=None):
    """Run each job (a list of ``(estimator, X, y)``) in a worker process.

    The fits compile what they reach into numba's on-disk cache, where this process
    (and every later one) then finds it. Jobs run in parallel, up to ``n_jobs`` at a
    time (the number of CPUs by default), in fresh ("spawn") interpreters whose own
    compile notices are silenced. ``on_done(index, seconds)`` is called as each job
    finishes, in job order. Returns the seconds each job took.
    """
    n_jobs = (os.cpu_count() or 1) if n_jobs is None else int(n_jobs)
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be >= 1; got {n_jobs}.")
    seconds = []
    # Workers inherit the environment when they start (and may import silva's engine
    # before any initializer runs): the parent says once that kernels are compiling.
    notice = os.environ.get("SILVA_COMPILE_NOTICE")
    os.environ["SILVA_COMPILE_NOTICE"] = "0"
    try:
        with ProcessPoolExecutor(max_workers=max(1, min(n_jobs, len(jobs))),
                                 mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(_fit_and_predict, job) for job in jobs]
            for index, future in enumerate(futures):
                seconds.append(future.result())
                if on_done is not None:
                    on_done(index, seconds[-1])
    finally:
        if notice is None:
            del os.environ["SILVA_COMPILE_NOTICE"]
        else:
            os.environ["SILVA_COMPILE_NOTICE"] = notice
    return seconds


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
    import silva

    names = list(_CONFIGURATIONS) if estimators is None else list(estimators)
    unknown = [name for name in names if name not in _CONFIGURATIONS]
    if unknown:
        raise ValueError(f"silva.compile: unknown estimator(s) {unknown}; choose from "
                         f"{sorted(_CONFIGURATIONS)}.")
    jobs = []
    for name in names:
        estimator_class = getattr(silva, name)
        classifier = name.endswith("Classifier")
        # Binary and multiclass classification take different loss kernels in boosting.
        jobs.append([(estimator_class(**params), *_data(classifier, n_classes, *size))
                     for params in _CONFIGURATIONS[name]
                     for n_classes in ((2, 3) if classifier else (0,))
                     for size in _sizes(name)])

    def report(index, seconds):
        if verbose:
            print(f"{names[index]}: {seconds:.1f} s", flush=True)

    return dict(zip(names, fit_in_workers(jobs, n_jobs, report), strict=True))
