"""Names and machine code of numba's compiled kernels, for Linux ``perf``.

numba's machine code lives in anonymous memory, so ``perf report`` shows its samples as
bare ``[JIT]`` addresses. Two steps make them readable, down to the instruction:

1. In the profiled process, after the kernels ran, call :func:`write_perf_map`. For every
   compiled function it writes a line of ``/tmp/perf-<pid>.map`` (which ``perf report``
   reads by itself: ``--sort sym`` then names silva's kernels), and it copies the machine
   code of the functions of at least ``min_dump_bytes`` from memory into a folder.
2. ``python benchmarks/perf_map.py annotate perf.data SYMBOL --dump-dir FOLDER`` prints
   that code with each instruction's share of the function's samples.

Why copy the code from memory: a kernel's callees are linked into its module and
compiled again there, so the same function has several copies, and an object file
emitted again from the module (``emit_object``) is laid out apart from the code the JIT
placed: placed by their offset from the kernel's entry, only about a fifth of the
samples of a callee fell on instructions. Here each function's address is the JIT's
own (its engine's symbol lookup) and the code annotated is the bytes run.

Profile with an empty numba cache (``NUMBA_CACHE_DIR=$(mktemp -d)``): kernels loaded
from the cache keep no module to read their symbols from, and are left out. Example::

    NUMBA_CACHE_DIR=$(mktemp -d) python my_fit_loop.py   # calls perf record -p <pid>
                                                        # and then write_perf_map()
    perf report -i perf.data --no-children --sort sym
    python benchmarks/perf_map.py annotate perf.data search_random_node \\
        --dump-dir /tmp/silva-perf-<pid>

Needs binutils' ``nm`` and ``objdump``.
"""

import argparse
import collections
import ctypes
import gc
import os
import re
import subprocess
import tempfile

_TEXT_SYMBOL_TYPES = set("tTwW")


def _is_dispatcher(obj, dispatcher_class):
    """``isinstance(obj, dispatcher_class)``, False for a weak proxy whose object is gone
    (``gc.get_objects`` lists them, and ``isinstance`` on one raises ReferenceError)."""
    try:
        return isinstance(obj, dispatcher_class)
    except ReferenceError:
        return False


def _compiled_libraries(dispatchers):
    """Each distinct code library of the compiled overloads of ``dispatchers`` (every
    live numba dispatcher when None), with its entry function's name."""
    if dispatchers is None:
        from numba.core.registry import CPUDispatcher

        dispatchers = [obj for obj in gc.get_objects() if _is_dispatcher(obj, CPUDispatcher)]
    seen = set()
    for dispatcher in dispatchers:
        for result in list(dispatcher.overloads.values()):
            library = result.library
            if id(library) not in seen:
                seen.add(id(library))
                yield library


def _function_symbols(library):
    """``(name, size)`` of each function in ``library``'s machine code, from an object
    file emitted again from its final module (names and sizes only: see the module
    docstring for why not its layout); empty for a library loaded from the cache."""
    module = getattr(library, "_final_module", None)
    if module is None:
        return []
    with tempfile.NamedTemporaryFile(suffix=".o") as handle:
        handle.write(library._codegen._tm.emit_object(module))
        handle.flush()
        listing = subprocess.run(["nm", "--print-size", "--defined-only", handle.name],
                                 capture_output=True, text=True, check=True).stdout
    symbols = []
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[2] in _TEXT_SYMBOL_TYPES:
            symbols.append((fields[3], int(fields[1], 16)))
    return symbols


def write_perf_map(dump_dir=None, min_dump_bytes=1024, dispatchers=None):
    """Write ``/tmp/perf-<pid>.map`` for the compiled functions of ``dispatchers`` (all
    live numba dispatchers by default) and copy the code of those of at least
    ``min_dump_bytes`` into ``dump_dir`` (``/tmp/silva-perf-<pid>`` by default), listed
    in its ``index.tsv`` (address, size, name). Returns ``(n_functions, dump_dir)``."""
    pid = os.getpid()
    dump_dir = dump_dir or f"/tmp/silva-perf-{pid}"
    os.makedirs(dump_dir, exist_ok=True)
    map_lines, index_lines = [], []
    for library in _compiled_libraries(dispatchers):
        engine = library._codegen._engine
        for name, size in _function_symbols(library):
            address = engine.get_function_address(name)
            if not address or not size:
                continue
            map_lines.append(f"{address:x} {size:x} {name}\n")
            if size >= min_dump_bytes:
                with open(os.path.join(dump_dir, f"{address:x}.bin"), "wb") as handle:
                    handle.write(ctypes.string_at(address, size))
                index_lines.append(f"{address:x}\t{size:x}\t{name}\n")
    with open(f"/tmp/perf-{pid}.map", "w") as handle:
        handle.writelines(map_lines)
    with open(os.path.join(dump_dir, "index.tsv"), "w") as handle:
        handle.writelines(index_lines)
    return len(map_lines), dump_dir


def _sampled_addresses(perf_data):
    """How many samples ``perf_data`` holds at each instruction address, and in all."""
    script = subprocess.run(["perf", "script", "-i", perf_data, "-G", "-F", "ip"],
                            capture_output=True, text=True, check=True).stdout
    counts = collections.Counter()
    for line in script.split():
        counts[int(line, 16)] += 1
    return counts, sum(counts.values())


def annotate(perf_data, symbol, dump_dir):
    """Lines of the dumped function whose name holds ``symbol`` and which holds the most
    samples: each instruction with its share of the function's samples, after a header
    (its share of all samples, and how many of its samples fell on an instruction's
    first byte: all of them when the code is the code run)."""
    counts, total = _sampled_addresses(perf_data)
    best = None
    with open(os.path.join(dump_dir, "index.tsv")) as handle:
        for line in handle:
            address, size, name = line.rstrip("\n").split("\t")
            if symbol not in name:
                continue
            start, size = int(address, 16), int(size, 16)
            n_samples = sum(c for ip, c in counts.items() if start <= ip < start + size)
            if best is None or n_samples > best[0]:
                best = (n_samples, start, name)
    if best is None or best[0] == 0:
        raise SystemExit(f"no sampled function named like {symbol!r} in {dump_dir}")
    n_samples, start, name = best
    listing = subprocess.run(
        ["objdump", "-D", "-b", "binary", "-m", "i386:x86-64", "-M", "intel",
         "--no-show-raw-insn", f"--adjust-vma={start:#x}",
         os.path.join(dump_dir, f"{start:x}.bin")],
        capture_output=True, text=True, check=True).stdout
    body, on_instructions = [], 0
    for line in listing.splitlines():
        match = re.match(r"\s*([0-9a-f]+):\s*(.*)", line)
        if match:
            ip = int(match.group(1), 16)
            on_instructions += counts.get(ip, 0)
            share = 100.0 * counts.get(ip, 0) / n_samples
            body.append(f"{share:6.2f} {ip - start:6x}  {match.group(2)}")
    header = [f"{name}: {n_samples} samples, {100.0 * n_samples / total:.1f}% of all; "
              f"{100.0 * on_instructions / n_samples:.0f}% on instruction starts"]
    return header + body


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    annotate_parser = commands.add_parser("annotate", help="per-instruction sample shares")
    annotate_parser.add_argument("perf_data")
    annotate_parser.add_argument("symbol", help="part of the function's (mangled) name")
    annotate_parser.add_argument("--dump-dir", required=True,
                                 help="the folder write_perf_map wrote")
    args = parser.parse_args(argv)
    print("\n".join(annotate(args.perf_data, args.symbol, args.dump_dir)))


if __name__ == "__main__":
    main()
