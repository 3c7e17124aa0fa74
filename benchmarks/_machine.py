"""What a benchmark result is tied to: the CPU, its cores and memory, the library versions.

Shared by the benchmark scripts so that every section they write to RESULTS.md names the
machine the same way. Times only compare within one machine: a kernel that wins on one CPU
can lose on another, so the CPU model and whether it has AVX-512 go with every result.
"""

from __future__ import annotations

import datetime as dt
import importlib
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path


def _lscpu() -> str:
    try:
        return subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return ""


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_name() -> str:
    """``lscpu``'s model name (``/proc/cpuinfo``'s, or ``platform.processor()``, without it)."""
    for line in _lscpu().splitlines():
        if line.startswith("Model name"):
            return line.split(":", 1)[1].strip()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def has_avx512() -> bool:
    """Whether the CPU has AVX-512 Foundation (the ``avx512f`` flag)."""
    return "avx512f" in _cpu_flags() or "avx512f" in _lscpu()


def cpu_model() -> str:
    """The CPU in one phrase: model name, then ``AVX-512`` or ``no AVX-512``."""
    return cpu_name() + (", AVX-512" if has_avx512() else ", no AVX-512")


def cores() -> str:
    """Logical CPUs, and how many of them this process may use if that is fewer."""
    total = os.cpu_count() or 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else total
    return str(total) if usable == total else f"{usable} usable of {total}"


def ram() -> str:
    """Total memory, in GiB."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "?"


def versions(packages=("numpy", "numba", "sklearn", "silva", "lightgbm", "xgboost",
                       "ydf")) -> dict[str, str]:
    """Python's version and each installed package's; packages not installed are left out.

    numba's entry also gives its thread count, the threads silva's kernels run on.
    """
    out = {"python": platform.python_version()}
    for name in packages:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        out[name] = str(getattr(module, "__version__", "unknown"))
        if name == "numba":
            out[name] += f" ({module.config.NUMBA_NUM_THREADS} threads)"
    return out


def machine_info() -> dict[str, str]:
    """CPU (with AVX-512 or not), cores, RAM, OS and versions, as one flat dict."""
    return {"cpu": cpu_model(), "cores": cores(), "ram": ram(),
            "os": f"{platform.system()} {platform.release()}", **versions()}


def machine_line(info: dict[str, str] | None = None) -> str:
    """One line for a report: ``CPU, N cores, RAM; os ..., python ..., numpy ...``."""
    info = info or machine_info()
    rest = ", ".join(f"{k} {v}" for k, v in info.items() if k not in {"cpu", "cores", "ram"})
    return f"{info['cpu']}, {info['cores']} cores, {info['ram']} RAM; {rest}"


def command_line(script: str, argv: list[str] | None = None) -> str:
    """The command that reproduces this run, for the report."""
    args = sys.argv[1:] if argv is None else argv
    return f"python benchmarks/{script} {shlex.join(args)}".strip()


def utc_now() -> str:
    """The current time as ``YYYY-MM-DD HH:MM UTC``."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


RESULTS_PATH = Path(__file__).resolve().parent / "RESULTS.md"


def append_results(report: str) -> None:
    """Append one report (a section of tables) to ``benchmarks/RESULTS.md``."""
    with open(RESULTS_PATH, "a") as results:
        results.write("\n" + report)


def publish(lines: list[str], write_results: bool) -> None:
    """Print a report's lines and, with ``write_results``, append them to RESULTS.md."""
    report = "\n".join(lines) + "\n"
    print(report)
    if write_results:
        append_results(report)
