"""What a first call costs: lazy imports, per-criterion kernels, the compile notice."""

import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from numba.core.caching import FunctionCache

import silva
from silva.engine import cart, criteria, grower, splitting
from silva.engine.specialize import specialize


def _run(code, cache_dir, **env):
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
        env={**os.environ, "NUMBA_CACHE_DIR": str(cache_dir), **env}, check=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )


# ------------------------------------------------------------------ lazy import
def test_all_lists_every_lazy_name():
    assert sorted(silva.__all__) == sorted([*silva._LAZY_NAMES, "__version__"])
    for name in silva.__all__:
        assert getattr(silva, name) is not None
    assert set(silva.__all__) <= set(dir(silva))


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'DecisionTree'"):
        silva.DecisionTree  # noqa: B018


def test_import_silva_imports_no_estimator_module(tmp_path):
    result = _run("""
        import sys
        import silva
        loaded = sorted(m for m in sys.modules if m.startswith(("silva.", "sklearn", "numba")))
        print(loaded)
        silva.DecisionTreeClassifier
        print("silva.decision_tree" in sys.modules)
    """, tmp_path)
    loaded, tree_loaded = result.stdout.strip().splitlines()
    assert loaded == "[]"
    assert tree_loaded == "True"


# ------------------------------------------------------------------ specialisation
def test_each_criterion_binds_its_own_scans():
    for code, proxy in [(criteria.GINI, "gini"), (criteria.ENTROPY, "entropy"),
                        (criteria.TWOING, "twoing"), (criteria.POISSON, "poisson"),
                        (criteria.SQUARED_ERROR, "variance"),
                        (criteria.ABSOLUTE_ERROR, "variance")]:
        finder = splitting.split_finder(code)
        bound = finder.py_func.__globals__
        assert bound["ORDER_STATISTICS"] == (code == criteria.ABSOLUTE_ERROR)
        feature = bound["evaluate_feature"].py_func.__globals__
        search = bound["search_numeric_features"].py_func.__globals__
        # Both the numeric search and the per-feature evaluation scan with this
        # criterion's kernels, through one copy of evaluate_numeric_feature.
        numeric_feature = search["evaluate_numeric_feature"]
        assert feature["evaluate_numeric_feature"] is numeric_feature
        numeric = numeric_feature.py_func.__globals__["evaluate_numeric"].py_func.__globals__
        assert feature["scan_categorical"] is splitting._SCANS[proxy][1]
        assert numeric["scan_numeric"] is splitting._SCANS[proxy][0]
        dense = bound["_evaluate_dense_parallel"].py_func.__globals__
        assert dense["evaluate_feature"] is bound["evaluate_feature"]
        grow = grower.compiled_grower(code)
        # The grower opens its nodes through its _open_node step, which searches them.
        open_node = grow.py_func.__globals__["_open_node"].py_func.__globals__
        # ... with its own copy of the search, called from compiled code alone: no
        # CPython wrapper to compile.
        grower_finder = open_node["find_node_split"]
        assert grower_finder is grower._called_from_grower(finder)
        assert grower_finder.py_func.__code__ is finder.py_func.__code__
        assert grower_finder.targetoptions["no_cpython_wrapper"]
        fill_node = open_node["_fill_node"]
        assert (fill_node.py_func.__globals__["ORDER_STATISTICS"]
                == (code == criteria.ABSOLUTE_ERROR))
        # The node's impurity and the winner's improvement use this criterion's
        # impurity kernel alone.
        own_impurity = criteria.IMPURITY_OF_CRITERION[code]
        assert fill_node.py_func.__globals__["impurity"] is own_impurity
        winner_improvement = bound["_winner"].py_func.__globals__["improvement"]
        assert winner_improvement.py_func.__globals__["impurity"] is own_impurity
        assert grow.targetoptions["nogil"]
    # The template keeps its own globals: specialising never rebinds the module's.
    assert splitting.scan_numeric is None and splitting.ORDER_STATISTICS is False
    # Criteria that bind the same kernels share one compiled copy.
    assert (grower.compiled_grower(criteria.SQUARED_ERROR)
            is grower.compiled_grower(criteria.FRIEDMAN_MSE))
    assert (grower.compiled_grower(criteria.SQUARED_ERROR)
            is not grower.compiled_grower(criteria.ABSOLUTE_ERROR))


_COMPILED_BY_A_SMALL_FIT = """
    from numba.core import event
    from sklearn.datasets import load_breast_cancer
    import silva
    compiled = set()
    class Listener(event.Listener):
        def on_start(self, e):
            function = e.data["dispatcher"].py_func
            compiled.add(f"{function.__module__}.{function.__qualname__}")
        def on_end(self, e): pass
    event.register("numba:compile", Listener())
    X, y = load_breast_cancer(return_X_y=True)
    silva.DecisionTreeClassifier(random_state=0).fit(X, y)
    print("\\n".join(sorted(compiled)))
"""


def test_a_small_numeric_fit_compiles_only_the_paths_it_takes(tmp_path):
    compiled = _run(_COMPILED_BY_A_SMALL_FIT, tmp_path, SILVA_COMPILE_NOTICE="0",
                    NUMBA_NUM_THREADS="2").stdout.split()
    assert "silva.engine.grower.grow_tree_gini_serial_numeric_plain" in compiled
    # No parallel region, category scan, significance test, heap or compiled binning
    # (numpy bins small data), and no slice assignment's shape-check message.
    for name in compiled:
        assert "parallel" not in name and "categorical" not in name, name
        for left_out in ("split_p_value", "heappush", "_fit_numeric_bins", "_map_to_bins",
                         "raise_with_shape_context", "multi_output", "multi_gini"):
            assert left_out not in name, name


class _Chosen(Exception):
    """Raised by a recording stub in place of compiling: the test needs the choice only."""


def _paths_chosen(monkeypatch, module, name, fit):
    """The keyword flags ``fit()`` passes to ``module.name`` (a grower factory)."""
    def recording(*args, **paths):
        raise _Chosen(paths)

    monkeypatch.setattr(module, name, recording)
    with pytest.raises(_Chosen) as chosen:
        fit()
    return chosen.value.args[0]


def test_fits_choose_the_paths_their_data_take(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    X_categorical = X.copy()
    X_categorical[:, 2] = rng.integers(0, 4, size=200)

    def paths(X, **params):
        return _paths_chosen(monkeypatch, cart, "compiled_grower",
                             lambda: silva.DecisionTreeClassifier(**params).fit(X, X[:, 0] > 0))

    # 200 rows: no node reaches the histograms' size, so every node searches its rows.
    assert paths(X) == {"parallel": False, "categorical": False, "extras": False,
                        "random": False, "rows_only": True}
    assert paths(X_categorical, categorical_features=[2])["categorical"]
    assert paths(X, max_leaf_nodes=5)["extras"]
    # A constrained fit takes the monotone copy; an all-zero constraint does not.
    assert paths(X, monotonic_cst=[1, 0, 0])["monotone"]
    assert "monotone" not in paths(X, monotonic_cst=[0, 0, 0])
    assert paths(X, min_significance=0.05)["extras"]
    # Extra trees' random splits: a lean copy of their own, without the other extras.
    random_paths = paths(X, splitter="random")
    assert random_paths["random"] and not random_paths["extras"]
    assert random_paths["rows_only"]
    # From 256 rows a single tree's large nodes hold histograms: not the rows-only copy,
    # whose split search compiles no per-feature (histogram) search.
    assert not paths(rng.normal(size=(300, 3)), splitter="random")["rows_only"]
    # The root reaches parallel_min_work: the parallel paths, unless on one thread.
    big = rng.normal(size=(8000, 28))
    assert paths(big)["parallel"] == (numba.get_num_threads() > 1)
    # A forest's trees grow in threads, each serially.
    forest = _paths_chosen(monkeypatch, cart, "compiled_grower", lambda: silva.
                           RandomForestClassifier(n_estimators=4, n_jobs=2).fit(big, big[:, 0] > 0))
    assert not forest["parallel"]
    # Extra trees never build histograms: rows only, unless wide data gathers the drawn
    # features' codes per node.
    extra = _paths_chosen(monkeypatch, cart, "compiled_grower", lambda: silva.
                          ExtraTreesClassifier(n_estimators=4, n_jobs=2).fit(big, big[:, 0] > 0))
    assert extra["random"] and extra["rows_only"]
    wide = rng.normal(size=(300, 1000))
    extra = _paths_chosen(monkeypatch, cart, "compiled_grower", lambda: silva.
                          ExtraTreesClassifier(n_estimators=4).fit(wide, wide[:, 0] > 0))
    assert not extra["rows_only"]


def test_boosting_chooses_the_paths_its_data_take(monkeypatch):
    from silva.engine import gradient_grower

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))

    def paths(X, **params):
        return _paths_chosen(
            monkeypatch, gradient_grower, "compiled_gradient_grower",
            lambda: silva.GradientBoostingRegressor(n_estimators=2, **params).fit(X, X[:, 0]))

    # Three features: narrow data's row-by-row histogram passes (not the wide copy's).
    assert paths(X) == {"parallel": False, "categorical": False, "wide": False}
    X[:, 2] = rng.integers(0, 4, size=300)
    assert paths(X, categorical_features=[2]) == {"parallel": False, "categorical": True,
                                                  "wide": False}
    big = rng.normal(size=(9000, 4))
    assert paths(big)["parallel"] == (numba.get_num_threads() > 1)
    # From 1,024 rows, each split's children share out 8 features or more between the
    # threads (gradient_children.children_pass).
    assert paths(rng.normal(size=(3000, 12)))["parallel"] == (numba.get_num_threads() > 1)
    assert paths(rng.normal(size=(1500, 12)))["parallel"] == (numba.get_num_threads() > 1)
    assert not paths(rng.normal(size=(3000, 4)))["parallel"]
    assert not paths(rng.normal(size=(1000, 12)))["parallel"]
    # Several trees an iteration grow at once in the pool, each serially: from 2,048
    # rows.
    X = rng.normal(size=(1500, 12))
    classes = np.arange(1500) % 3
    assert not _paths_chosen(
        monkeypatch, gradient_grower, "compiled_gradient_grower",
        lambda: silva.GradientBoostingClassifier(n_estimators=2).fit(X, classes))["parallel"]


def test_compile_fits_boosting_on_data_that_takes_the_wide_copy(monkeypatch):
    from silva import _warmup
    from silva.engine import gradient_grower

    sizes = _warmup._sizes("GradientBoostingRegressor")
    assert (_warmup._LARGE_ROWS, _warmup._LARGE_FEATURES) in sizes
    for n_rows, n_features in sizes:
        X, y = _warmup._data(False, 0, n_rows, n_features)
        paths = _paths_chosen(
            monkeypatch, gradient_grower, "compiled_gradient_grower",
            lambda X=X, y=y: silva.GradientBoostingRegressor(n_estimators=2).fit(X, y))
        assert paths["wide"] == (n_features == sizes[-1][1])
        if paths["wide"]:
            assert paths["parallel"] == (numba.get_num_threads() > 1)
    # The wide size is the narrowest wide data of this CPU plus a margin of 4 features.
    from silva.engine import gradient_histogram

    bins = gradient_histogram.padded_bins(256)
    assert gradient_histogram.is_wide(sizes[-1][1] - 4, bins)
    assert not gradient_histogram.is_wide(sizes[-1][1] - 5, bins)
    # The other estimators fit no wide data.
    assert _warmup._sizes("DecisionTreeClassifier") == sizes[:2]


def test_parallel_numeric_boosting_compiles_no_category_scan():
    from silva.engine import gradient_grower

    copy = gradient_grower.compiled_gradient_grower(parallel=True, categorical=False)
    bound = copy.py_func.__globals__
    assert copy is not gradient_grower.grow_gradient_tree
    assert bound["PAIR_SEARCH"] is True
    for name in ("find_best_split", "children_pass"):
        scan_feature = bound[name].py_func.__globals__["scan_feature"]
        assert scan_feature.py_func.__globals__["CATEGORICAL"] is False
    assert bound["node_histogram"] is gradient_grower.node_histogram  # the parallel one
    assert gradient_grower.compiled_gradient_grower(parallel=True, categorical=True) is \
        gradient_grower.grow_gradient_tree


def _silva_kernels():
    """Every jitted function defined at the top level of silva's modules."""
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    kernels = {}
    # silva.dask needs the optional dask and distributed; neither it nor the command
    # line defines a kernel.
    modules = [info.name for info in pkgutil.walk_packages(silva.__path__, "silva.")
               if not info.name.startswith(("silva.dask", "silva.cli"))]
    for name in modules:
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            if (isinstance(value, CPUDispatcher)
                    and value.py_func.__module__ == module.__name__):
                kernels[f"{name}.{attribute}"] = value
    return kernels


def test_every_kernel_is_compiled_with_the_engine_options():
    # No C-callable wrapper (see silva.engine.jit): silva never takes a kernel's C
    # address, and each wrapper was compiled again in every caller.
    from silva.engine.jit import KERNEL_OPTIONS

    kernels = _silva_kernels()
    assert len(kernels) > 250  # the walk reaches the engine's modules
    for name, kernel in kernels.items():
        for option, value in KERNEL_OPTIONS.items():
            if option == "cache":
                assert isinstance(kernel._cache, FunctionCache), name
            else:
                assert kernel.targetoptions.get(option) == value, (name, option)
    # Specialised copies keep them: the copies are what most fits compile.
    grow = grower.compiled_grower(criteria.GINI, parallel=False, categorical=False,
                                  extras=False, random=False)
    open_node = grow.py_func.__globals__["_open_node"]
    for copy in (grow, open_node, open_node.py_func.__globals__["find_node_split"]):
        assert copy.targetoptions["no_cfunc_wrapper"], copy.py_func.__qualname__


def test_specialize_refuses_a_name_the_function_does_not_read():
    with pytest.raises(ValueError, match="reads no global named"):
        specialize(splitting.evaluate_numeric, "test", no_such_name=1)


_TOY_MODULE = """
import numba as nb

@nb.njit(cache=True)
def kernel_a(x):
    return x + 1.0

@nb.njit(cache=True)
def kernel_b(x):
    return x * 2.0

USE_A = True

@nb.njit(cache=True)
def template(x):
    if USE_A:
        return kernel_a(x)
    return kernel_b(x)
"""


def test_a_bound_constant_prunes_the_other_branch_before_compiling(tmp_path):
    (tmp_path / "toy_kernels.py").write_text(_TOY_MODULE)
    code = f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from numba.core import event
        import toy_kernels
        from silva.engine.specialize import specialize
        compiled = []
        class Listener(event.Listener):
            def on_start(self, e): compiled.append(e.data["dispatcher"].py_func.__name__)
            def on_end(self, e): pass
        event.register("numba:compile", Listener())
        only_b = specialize(toy_kernels.template, "b", USE_A=False)
        print(only_b(3.0), sorted(set(compiled)))
    """
    first = _run(code, tmp_path / "cache", SILVA_COMPILE_NOTICE="0").stdout.split(maxsplit=1)
    assert first == ["6.0", "['kernel_b', 'template_b']\n"]
    # The copy is cached on disk like any cache=True kernel: nothing compiles again.
    second = _run(code, tmp_path / "cache", SILVA_COMPILE_NOTICE="0").stdout.split(maxsplit=1)
    assert second == ["6.0", "[]\n"]


# ------------------------------------------------------------------ compile notice
_SMALL_KERNEL = """
    import silva.engine.binning as binning
    print(binning.midpoint(1.0, 2.0))
"""


def test_compile_notice_once_then_silent_with_a_warm_cache(tmp_path):
    cold = _run(_SMALL_KERNEL, tmp_path, SILVA_COMPILE_NOTICE="1")
    assert cold.stdout.strip() == "1.5"
    assert cold.stderr.count("silva: compiling its engine for this machine") == 1
    assert "midpoint" in cold.stderr
    warm = _run(_SMALL_KERNEL, tmp_path, SILVA_COMPILE_NOTICE="1")
    assert "silva: compiling" not in warm.stderr


def test_compile_notice_can_be_silenced(tmp_path):
    quiet = _run(_SMALL_KERNEL, tmp_path, SILVA_COMPILE_NOTICE="0")
    assert quiet.stdout.strip() == "1.5"
    assert "silva: compiling" not in quiet.stderr


# ------------------------------------------------------------------ silva.compile
def test_compile_rejects_unknown_estimators_and_bad_n_jobs():
    with pytest.raises(ValueError, match="unknown estimator"):
        silva.compile(["DecisionTree"])
    with pytest.raises(ValueError, match="n_jobs must be >= 1"):
        silva.compile(["DecisionTreeClassifier"], n_jobs=0)


def test_compile_fills_the_cache_for_later_processes(tmp_path):
    code = """
        import silva
        print(silva.compile(["DecisionTreeRegressor"], n_jobs=1))
    """
    compiling = _run(code, tmp_path, SILVA_COMPILE_NOTICE="1")
    # The workers compile without a notice each: the caller asked for the compile.
    assert "silva: compiling" not in compiling.stderr
    assert "'DecisionTreeRegressor':" in compiling.stdout
    later = _run("""
        import numpy as np
        import silva
        X = np.arange(40.0).reshape(20, 2)
        silva.DecisionTreeRegressor().fit(X, X[:, 0]).predict(X)
    """, tmp_path, SILVA_COMPILE_NOTICE="1")
    assert "silva: compiling" not in later.stderr



def test_cli_compile_names_an_unknown_estimator(capsys):
    from silva.cli import main

    assert main(["compile", "DecisionTree"]) == 1
    assert "unknown estimator(s) ['DecisionTree']" in capsys.readouterr().err
