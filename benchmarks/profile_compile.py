"""Where a cold first fit's compile time goes: numba's compile events, per kernel.

Run it with an empty numba cache, or every kernel loads from the cache and nothing is
listed (loading raises no compile event):

    NUMBA_CACHE_DIR=$(mktemp -d) python benchmarks/profile_compile.py DecisionTreeClassifier

It fits the estimator with default parameters on breast cancer (classifiers) or
diabetes (regressors), then prints the top-level compiles (what the fit called from
Python, with everything compiled under it) and each kernel's *exclusive* time (its own
compile, its callees' subtracted), largest first. A kernel listed with several
signatures compiles once per signature: look for literal arguments (``Literal[int](0)``
in ``--signatures``), which numba compiles apart.
"""

import argparse
import collections
import time

from numba.core import event


class _CompileTimes(event.Listener):
    """Inclusive and exclusive compile seconds per kernel, from nested compile events."""

    def __init__(self):
        self.open = []  # (name, start, seconds spent in nested compiles)
        self.top_level = collections.Counter()
        self.exclusive = collections.Counter()
        self.signatures = collections.defaultdict(set)

    def on_start(self, compile_event):
        function = compile_event.data["dispatcher"].py_func
        name = f"{function.__module__}.{function.__qualname__}"
        self.open.append([name, time.perf_counter(), 0.0])

    def on_end(self, compile_event):
        name, start, nested = self.open.pop()
        seconds = time.perf_counter() - start
        self.exclusive[name] += seconds - nested
        if self.open:
            self.open[-1][2] += seconds
        else:
            self.top_level[name] += seconds
        arguments = compile_event.data.get("args")
        if arguments is not None:
            self.signatures[name].add(", ".join(str(a) for a in arguments))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("estimator", help="a silva estimator class name")
    parser.add_argument("--top", type=int, default=25, help="kernels to list")
    parser.add_argument("--signatures", action="store_true",
                        help="print the argument types of kernels compiled more than once")
    args = parser.parse_args(argv)

    times = _CompileTimes()
    event.register("numba:compile", times)
    from sklearn.datasets import load_breast_cancer, load_diabetes

    import silva

    classifier = args.estimator.endswith("Classifier")
    X, y = (load_breast_cancer if classifier else load_diabetes)(return_X_y=True)
    start = time.perf_counter()
    getattr(silva, args.estimator)().fit(X, y)
    print(f"{args.estimator}: first fit {time.perf_counter() - start:.1f} s")
    print(f"top-level compiles ({sum(times.top_level.values()):.1f} s):")
    for name, seconds in times.top_level.most_common():
        print(f"  {seconds:7.2f} s  {name}")
    print("exclusive compile time per kernel:")
    for name, seconds in times.exclusive.most_common(args.top):
        count = len(times.signatures[name])
        print(f"  {seconds:7.2f} s  {name}" + (f"  ({count} signatures)" if count > 1 else ""))
        if args.signatures and count > 1:
            for signature in sorted(times.signatures[name]):
                print(f"             ({signature})")


if __name__ == "__main__":
    main()
