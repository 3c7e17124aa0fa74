"""Progress display for loops over trees (``verbose`` in ensembles).

:func:`progress` wraps an iterable: disabled, it returns the iterable itself (no cost);
enabled, it shows a tqdm bar when tqdm is installed and a plain counter on stderr
otherwise. tqdm is optional (``pip install tqdm``); silva never requires it.
"""

from __future__ import annotations

import sys
import time

__all__ = ["progress"]

# Redraw the plain counter at most this often (seconds), so printing never costs more
# than a tiny fraction of a fit.
_MIN_INTERVAL = 0.1


def _load_tqdm():
    """tqdm's progress bar class, or None when tqdm is not installed."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def progress(iterable, total=None, enabled=False, desc="", *, file=None):
    """Iterate over ``iterable`` while showing progress.

    Parameters
    ----------
    iterable : iterable
        What to iterate over, e.g. ``range(n_estimators)``.
    total : int, default=None
        Number of items; taken from ``len(iterable)`` when None and available.
    enabled : bool or int, default=False
        Show progress (estimators pass their ``verbose``). When false the iterable is
        returned unchanged.
    desc : str, default=""
        Label shown before the counter, e.g. ``"RandomForestClassifier"``.
    file : text stream, default=None
        Where to write; defaults to ``sys.stderr``.

    Returns
    -------
    iterable
        The iterable itself, a tqdm bar, or a generator that prints ``desc: i/total``.
    """
    if not enabled:
        return iterable
    if total is None:
        try:
            total = len(iterable)
        except TypeError:
            total = None
    tqdm = _load_tqdm()
    if tqdm is not None:
        return tqdm(iterable, total=total, desc=desc or None, file=file, leave=True)
    return _counter(iterable, total, desc, sys.stderr if file is None else file)


def _counter(iterable, total, desc, file):
    prefix = f"{desc}: " if desc else ""
    of_total = f"/{total}" if total is not None else ""
    start = last = time.perf_counter()
    count = 0
    try:
        for count, item in enumerate(iterable, start=1):
            yield item
            now = time.perf_counter()
            if now - last >= _MIN_INTERVAL or count == total:
                file.write(f"\r{prefix}{count}{of_total}")
                file.flush()
                last = now
    finally:
        elapsed = time.perf_counter() - start
        file.write(f"\r{prefix}{count}{of_total} done in {elapsed:.1f}s\n")
        file.flush()
