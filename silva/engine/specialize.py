"""Specialisation: a compiled copy of a kernel with some of its module's names rebound.

numba types, and so compiles, every branch of a function and every function those
branches call, whether or not a call will ever take them. A kernel that chooses its
criterion's code at run time (``if criterion == GINI: ... elif criterion == ENTROPY:
...``) therefore compiles every criterion on its first call: a gini tree paid for the
absolute-error and Poisson kernels too, most of a cold first fit.

:func:`specialize` makes the choice a compile-time one instead. It copies a jitted
function's Python code with its module's globals updated by ``bindings`` and jits the
copy with the same options. numba reads globals as constants, so in the copy a name bound
to a kernel calls that kernel alone, and a branch on a bound constant (``if
ORDER_STATISTICS:``) is pruned before typing, with everything it alone calls. Each copy
gets a name of its own (``<name>_<suffix>``), which keeps the copies apart in numba's
on-disk cache, as it does for the per-criterion scans of :mod:`silva.engine.splitting`.

A copy is made once per (function, suffix) and compiled on its first call, like any
jitted function. Callers that inline (``inline="always"``) inline the copy they name,
so a chain of kernels is specialised bottom-up: each copy's bindings name the copies of
its callees.
"""

import types

import numba as nb
from numba.core.caching import FunctionCache

_COPIES = {}


def specialize(dispatcher, suffix, **bindings):
    """A jitted copy of ``dispatcher`` whose globals ``bindings`` replace the module's.

    ``dispatcher`` is a function decorated with ``numba.njit``; the copy is compiled
    with the same options (cache, inline, parallel, nogil) and named
    ``<name>_<suffix>``. ``suffix`` must identify ``bindings``: the same (function,
    suffix) always returns the first copy made.
    """
    return _copy(dispatcher, suffix, bindings, {})


def specialize_options(dispatcher, suffix, options, **bindings):
    """:func:`specialize` with some compile ``options`` changed (e.g. ``{"_nrt": False}``
    for a copy that allocates nothing); ``suffix`` must identify them too."""
    return _copy(dispatcher, suffix, bindings, options)


def serial_copy(dispatcher, **bindings):
    """:func:`specialize` under the suffix ``serial``, compiled without ``parallel``:
    its ``prange`` loops run as ``range`` loops, in the calling thread. For inputs too
    small for a parallel region, which then costs no compile (about a second or more
    of a cold first fit each)."""
    return _copy(dispatcher, "serial", bindings, {"parallel": False})


def _copy(dispatcher, suffix, bindings, option_changes):
    key = (dispatcher, suffix)
    copy = _COPIES.get(key)
    if copy is not None:
        return copy
    source = dispatcher.py_func
    unknown = set(bindings) - set(source.__code__.co_names)
    if unknown:
        raise ValueError(f"{source.__qualname__} reads no global named {sorted(unknown)}")
    namespace = dict(source.__globals__)
    namespace.update(bindings)
    function = types.FunctionType(source.__code__, namespace, f"{source.__name__}_{suffix}",
                                  source.__defaults__, source.__closure__)
    function.__qualname__ = f"{source.__qualname__}_{suffix}"
    function.__module__ = source.__module__
    function.__doc__ = source.__doc__
    function.__kwdefaults__ = source.__kwdefaults__
    options = {name: value for name, value in dispatcher.targetoptions.items()
               if name != "nopython"}  # implied by njit, which warns when it is given
    options.update(option_changes)
    copy = nb.njit(**options)(function)
    if isinstance(dispatcher._cache, FunctionCache):  # the original has cache=True
        copy.enable_caching()
    _COPIES[key] = copy
    return copy
