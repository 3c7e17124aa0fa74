"""The kernel decorator's whole-module optimisation (silva.engine.jit)."""

import llvmlite.binding as llvm
import numba as nb
import numpy as np

from silva.engine.histogram import build_histogram
from silva.engine.jit import KERNEL_OPTIONS, make_linked_copies_private


def _defined_functions(llvm_ir):
    """``{name: linkage}`` of the functions an LLVM module's text defines."""
    return {function.name: function.linkage.name
            for function in llvm.parse_assembly(llvm_ir).functions
            if not function.is_declaration}


def test_the_kernels_a_silva_kernel_calls_are_private_to_its_module():
    # build_histogram calls two kernels compiled apart (_build_serial, _build_parallel):
    # numba links their modules into its own, marked linkonce_odr; silva's hook makes
    # them private so that LLVM optimises the calls (arguments dropped, calls inlined).
    # Private, not internal: numba's engine finds internal functions by name.
    # Compiled here, not loaded from the cache (which keeps no module to read), and
    # not cached: the same function and options as the kernel, cache=False.
    build = nb.njit(**{**KERNEL_OPTIONS, "cache": False})(build_histogram.py_func)
    hist = np.zeros((2, 3, 1))
    codes = np.zeros((2, 4), dtype=np.uint8)
    stats = np.ones((4, 1))
    rows = np.arange(4, dtype=np.int32)
    build(hist, codes, stats, rows, 0, 4, False)
    assert np.array_equal(hist[:, 0, 0], [4.0, 4.0])
    llvm_ir = build.inspect_llvm(build.signatures[0])
    functions = _defined_functions(llvm_ir)
    own = [name for name, linkage in functions.items()
           if name.startswith("_ZN5silva6engine9histogram15build_histogram")]
    assert own and all(functions[name] == "external" for name in own)
    linked = {name: linkage for name, linkage in functions.items() if name not in own
              and not name.startswith("_ZN7cpython")}
    assert linked and "linkonce_odr" not in linked.values(), linked


def _callee(values):
    total = 0.0
    for value in values:
        total += value
    return total


def test_other_numba_code_compiles_as_numba_compiles_it():
    # A module that defines no silva kernel keeps numba's linkage: silva changes
    # nothing for the other numba code of the process.
    callee = nb.njit(_callee)

    @nb.njit
    def caller(values):
        return callee(values) + 1.0

    assert caller(np.ones(3)) == 4.0
    functions = _defined_functions(caller.inspect_llvm(caller.signatures[0]))
    # The helpers numba links in (reference counting, here) keep their linkonce_odr.
    assert "linkonce_odr" in functions.values(), functions


_LINKED_MODULE = """
define linkonce_odr i64 @{callee}(i64 %x) noinline {{ ret i64 111 }}
define i64 @{caller}(i64 %x) {{
  %r = call i64 @{callee}(i64 %x)
  ret i64 %r
}}
"""


def _linked_module(caller, callee):
    return llvm.parse_assembly(_LINKED_MODULE.format(caller=caller, callee=callee))


def test_linked_copies_become_private_where_no_engine_lookup_finds_them():
    module = _linked_module("_ZN5silva6engine5probe6callerB2v1Ex",
                            "_ZN5silva6engine5probe6calleeB2v2Ex")
    make_linked_copies_private(module)
    linkage = {function.name: function.linkage for function in module.functions}
    assert linkage["_ZN5silva6engine5probe6calleeB2v2Ex"] == llvm.Linkage.private
    assert linkage["_ZN5silva6engine5probe6callerB2v1Ex"] == llvm.Linkage.external
    # numba finds a kernel's code by name in its JIT engine, whose lookup would also
    # find an internal function: a private one it cannot find.
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machine = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    assert engine.get_function_address("_ZN5silva6engine5probe6callerB2v1Ex") != 0
    assert engine.get_function_address("_ZN5silva6engine5probe6calleeB2v2Ex") == 0


def test_a_module_without_a_silva_kernel_keeps_its_linkage():
    module = _linked_module("_ZN5other5probe6callerB2v1Ex", "_ZN5silva6engine5probe6calleeB2v2Ex")
    make_linked_copies_private(module)
    linkage = {function.name: function.linkage for function in module.functions}
    assert linkage["_ZN5silva6engine5probe6calleeB2v2Ex"] == llvm.Linkage.linkonce_odr
