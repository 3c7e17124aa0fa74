"""The one decorator of silva's compiled kernels: ``numba.njit`` with the engine's options.

Every kernel is compiled with

- ``cache=True``: compiled once per machine and silva version, then loaded from numba's
  on-disk cache;
- ``error_model="numpy"``: a division by zero gives inf or NaN, as in numpy, rather
  than a check and a Python exception at every division;
- ``no_cfunc_wrapper=True``: numba compiles, for every jitted function, a C-callable
  wrapper, which only serves a function passed as a first-class function value or
  asked for its C address. silva does neither; its kernels call each other directly
  and are called from Python through their CPython wrapper. Each wrapper is lowered,
  optimised and emitted with its function, and again in every caller whose module the
  function's module is linked into. Without them a cold first
  ``DecisionTreeClassifier`` fit took about 0.35 s less (AMD EPYC Zen 4, alternated
  cold processes; see the commit and ``benchmarks/RESULTS.md``).

Options given to :func:`kernel` are added (``parallel=True``, ``inline="always"``,
``nogil=True``, ...). :func:`silva.engine.specialize.specialize` copies a kernel with
its options, these included.
"""

import numba as nb

KERNEL_OPTIONS = {"cache": True, "error_model": "numpy", "no_cfunc_wrapper": True}

#: Options of a copy (:func:`silva.engine.specialize.specialize_options`) that only compiled
#: code calls: without numba's CPython wrapper, whose unboxing of every argument is
#: compiled with the copy. Python must never call such a copy: it crashes the process.
CALLED_FROM_COMPILED_CODE = {"no_cpython_wrapper": True}


def kernel(**options):
    """``numba.njit`` with :data:`KERNEL_OPTIONS` and ``options``; use as
    ``@kernel()`` or ``@kernel(parallel=True)``."""
    return nb.njit(**KERNEL_OPTIONS, **options)
