"""benchmarks/perf_map.py: the perf map names a kernel at the address the JIT placed it."""

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import perf_map  # noqa: E402

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.machine() != "x86_64"
    or not (shutil.which("nm") and shutil.which("objdump")),
    reason="needs Linux on x86-64 and binutils' nm and objdump")


def test_map_and_dump_hold_the_code_the_jit_runs(tmp_path):
    @numba.njit  # no cache: the module to read symbols from is kept
    def sum_of_squares(values):
        total = 0.0
        for v in values:
            total += v * v
        return total

    assert sum_of_squares(np.arange(4.0)) == 14.0
    result = next(iter(sum_of_squares.overloads.values()))
    name = result.fndesc.llvm_func_name
    address = result.library.get_pointer_to_function(name)

    n_functions, dump_dir = perf_map.write_perf_map(str(tmp_path), min_dump_bytes=1,
                                                    dispatchers=[sum_of_squares])
    assert dump_dir == str(tmp_path) and n_functions >= 1
    map_path = f"/tmp/perf-{os.getpid()}.map"  # where perf looks for it
    with open(map_path) as handle:
        entries = {line.split()[2]: line.split()[:2] for line in handle}
    os.remove(map_path)
    assert int(entries[name][0], 16) == address
    size = int(entries[name][1], 16)
    index = (tmp_path / "index.tsv").read_text().splitlines()
    assert f"{address:x}\t{size:x}\t{name}" in index
    code = (tmp_path / f"{address:x}.bin").read_bytes()
    assert len(code) == size
    listing = subprocess.run(["objdump", "-D", "-b", "binary", "-m", "i386:x86-64",
                              str(tmp_path / f"{address:x}.bin")],
                             capture_output=True, text=True, check=True).stdout
    assert "ret" in listing
