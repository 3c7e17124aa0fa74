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

Each kernel's compiled module is also optimised as one program (see
:func:`_optimise_linked_kernels_as_one_program`).

Options given to :func:`kernel` are added (``parallel=True``, ``inline="always"``,
``nogil=True``, ...). :func:`silva.engine.specialize.specialize` copies a kernel with
its options, these included.
"""

import llvmlite.binding as llvm
import numba as nb
from numba.core import codegen

KERNEL_OPTIONS = {"cache": True, "error_model": "numpy", "no_cfunc_wrapper": True}

#: Options of a copy (:func:`silva.engine.specialize.specialize_options`) that only compiled
#: code calls: without numba's CPython wrapper, whose unboxing of every argument is
#: compiled with the copy. Python must never call such a copy: it crashes the process.
CALLED_FROM_COMPILED_CODE = {"no_cpython_wrapper": True}


def kernel(**options):
    """``numba.njit`` with :data:`KERNEL_OPTIONS` and ``options``; use as
    ``@kernel()`` or ``@kernel(parallel=True)``."""
    return nb.njit(**KERNEL_OPTIONS, **options)


# Mangled names of silva's kernels and of their CPython wrappers ("silva.engine...").
_SILVA_SYMBOL_PREFIXES = ("_ZN5silva", "_ZN7cpython5silva")


def _defines_silva_kernel(module):
    """Whether an LLVM module defines, for the outside, one of silva's kernels."""
    return any(not function.is_declaration and function.linkage == llvm.Linkage.external
               and function.name.startswith(_SILVA_SYMBOL_PREFIXES)
               for function in module.functions)


def make_linked_copies_private(module):
    """In an LLVM ``module`` that defines a silva kernel, give every function linked in
    as ``linkonce_odr`` (numba's copies of the kernels it calls, and its helpers)
    ``private`` linkage (see :func:`_optimise_linked_kernels_as_one_program`)."""
    if _defines_silva_kernel(module):
        for function in module.functions:
            if not function.is_declaration and function.linkage == llvm.Linkage.linkonce_odr:
                function.linkage = llvm.Linkage.private


def _optimise_linked_kernels_as_one_program():
    """Let LLVM optimise a silva kernel together with the kernels it calls.

    numba compiles each kernel to a library of its own and, before optimising a
    kernel's final module, links into it a copy of every kernel it calls, marked
    ``linkonce_odr``: a definition another module may replace. LLVM must then keep each
    callee's signature as it is, so every call passes every field of every array (an
    array is 7 to 13 machine words), unused ones included, and its inliner treats a
    callee called once like any other. The copies serve the module alone, so here they
    become ``private`` before the module is optimised. LLVM then sees the whole call
    graph: it inlines a callee whose one call it sees, drops the arguments
    a callee never reads and propagates the constant ones. A CART grower's node steps
    (``_open_node``, ``find_node_split``, the search, ``_split_node``), compiled apart
    so that numba counts no references in them, become one function in its module: no
    call passes the few hundred words of arrays they took per node.

    ``private``, not ``internal``: numba's JIT engine finds a kernel's code by its
    symbol's name (``get_pointer_to_function``), and its lookup also finds ``internal``
    functions, which keep their names in the object code. With ``internal`` copies, a
    kernel loaded from the cache beside kernels compiled in the process could be given
    another module's copy of itself, whose arguments LLVM had changed: a segfault
    (``test_wide_passes_grow_the_same_trees`` after a cache filled by another process).
    A ``private`` function has no symbol to find.

    Measured (AMD EPYC Zen 5, alternated processes, each code with its own cache; see
    ``benchmarks/RESULTS.md``, 2026-12-03): 100 one-job extra trees on 2,000 x 28
    ten-class rows 147-150 ms against 183-186 ms, on 20,000 binary rows (two jobs) 428-450
    against 505-541 ms, the diabetes regression tree 0.86-0.88 ms against 1.04-1.09 ms,
    the same predictions; million-row boosting unchanged; cold first fits unchanged.
    Only modules that define a silva kernel are
    touched: other numba code in the process compiles as numba compiles it. Should a
    numba version lack the hook, kernels compile as before.
    """
    library_class = getattr(codegen, "CPUCodeLibrary", None)
    optimise = getattr(library_class, "_optimize_final_module", None)
    if optimise is None or getattr(optimise, "_silva_makes_copies_private", False):
        return

    def optimize_final_module(library):
        make_linked_copies_private(library._final_module)
        return optimise(library)

    optimize_final_module._silva_makes_copies_private = True
    library_class._optimize_final_module = optimize_final_module


_optimise_linked_kernels_as_one_program()
