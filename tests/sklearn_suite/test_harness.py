"""The substitution harness itself: imports rewritten, nothing else touched."""

import importlib.util
from pathlib import Path

import pytest


def _conftest():
    spec = importlib.util.spec_from_file_location(
        "sklearn_suite_conftest", Path(__file__).with_name("conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_imports_of_the_substituted_estimators_come_from_silva():
    source = (
        "from sklearn.tree import (\n"
        "    DecisionTreeClassifier,\n"
        "    ExtraTreeClassifier,\n"
        ")\n"
        "from sklearn.tree._classes import CRITERIA_CLF\n"
        "from sklearn.ensemble import HistGradientBoostingClassifier\n"
        "def test_inner():\n"
        "    from sklearn.ensemble import RandomForestRegressor as Forest\n"
        "    return Forest\n"
    )
    rewritten = _conftest().substitute_imports(source).splitlines()
    # Same number of lines, so that tracebacks point at scikit-learn's line numbers.
    assert len(rewritten) == len(source.splitlines())
    assert rewritten[0] == ("from sklearn.tree import ExtraTreeClassifier; "
                            "from silva import DecisionTreeClassifier")
    assert rewritten[1:4] == ["", "", ""]
    assert rewritten[4] == "from sklearn.tree._classes import CRITERIA_CLF"
    assert rewritten[5] == "from sklearn.ensemble import HistGradientBoostingClassifier"
    assert rewritten[7] == "    from silva import RandomForestRegressor as Forest"


def test_a_module_scikit_learn_lacks_is_not_found():
    conftest = _conftest()
    assert conftest._installed_source("sklearn.ensemble.tests.no_such_suite") is None
    assert conftest._installed_source("no_such_package.tests") is None
    assert conftest._installed_source("sklearn.tree.tests.test_tree") is not None or \
        pytest.skip("this scikit-learn ships no tests")


def test_every_non_strict_failure_is_a_listed_failure():
    from expected_failures import EXPECTED_FAILURES, OUTCOME_VARIES

    assert OUTCOME_VARIES <= set(EXPECTED_FAILURES)


def test_every_listed_failure_names_a_suite_and_gives_a_reason():
    from expected_failures import EXPECTED_FAILURES

    suites = set(_conftest().SKLEARN_SUITES)
    for key, reason in EXPECTED_FAILURES.items():
        assert key.split("::")[0] in suites, key
        assert reason.split(":")[0] in {
            "feature to come", "not applicable", "difference by design",
            "gap, to fix (issue 23 item 1)"}, (key, reason)
