"""One line on stderr when silva's kernels are compiled, so that a first fit's wait is
explained rather than silent.

numba compiles a kernel on its first call and keeps the machine code in its on-disk
cache (``__pycache__`` beside the sources, or ``NUMBA_CACHE_DIR``), so the wait comes
once per machine, Python version and silva version; later processes load the cache in
milliseconds. Loading from the cache raises no compile event, so the notice appears only
when something is really compiled, at most once per process. ``SILVA_COMPILE_NOTICE=0``
silences it; :func:`silva.compile` compiles ahead of time.
"""

import os
import sys

from numba.core import event

_NOTICE = (
    "silva: compiling its engine for this machine ({what}); this happens once per machine "
    "and silva version and takes 10-30 s per kind of estimator and size of data; the "
    "result is cached on disk. `silva compile` does it ahead of time. (SILVA_COMPILE_NOTICE=0 "
    "silences this line.)\n"
)


def is_silva_compile(compile_event):
    """Whether a ``numba:compile`` event compiles one of silva's kernels (rather than
    numba's own helpers, compiled on the way)."""
    return compile_event.data["dispatcher"].py_func.__module__.startswith("silva.")


class _FirstCompileNotice(event.Listener):
    """Writes the notice at the start of the first compile of a silva kernel."""

    def __init__(self):
        self.done = False

    def on_start(self, compile_event):
        if self.done or not is_silva_compile(compile_event):
            return
        self.done = True
        function = compile_event.data["dispatcher"].py_func
        sys.stderr.write(_NOTICE.format(what=function.__qualname__))
        sys.stderr.flush()

    def on_end(self, compile_event):
        pass


_listener = None


def install():
    """Register the notice (once per process) unless ``SILVA_COMPILE_NOTICE=0``."""
    global _listener
    if _listener is not None or os.environ.get("SILVA_COMPILE_NOTICE", "1") == "0":
        return
    _listener = _FirstCompileNotice()
    event.register("numba:compile", _listener)
