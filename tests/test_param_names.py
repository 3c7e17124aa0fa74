"""ParamNamesMixin: each estimator's constructor parameter names read once per class, and
the same names scikit-learn's own BaseEstimator._get_param_names reads every time."""

import inspect

import pytest
from sklearn.base import BaseEstimator

import silva
from silva._mixins import ParamNamesMixin

ESTIMATORS = [name for name in silva.__all__
              if inspect.isclass(getattr(silva, name, None))
              and issubclass(getattr(silva, name), BaseEstimator)]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_estimator_keeps_scikit_learns_parameter_names(name):
    cls = getattr(silva, name)
    assert issubclass(cls, ParamNamesMixin), f"{name} reads its signature at every get_params"
    assert cls._get_param_names() == BaseEstimator._get_param_names.__func__(cls)
    # A list each call, which a caller may change without changing the class's.
    names = cls._get_param_names()
    names.append("not_a_parameter")
    assert "not_a_parameter" not in cls._get_param_names()


def test_each_subclass_reads_its_own_constructor():
    class Narrow(silva.DecisionTreeRegressor):
        def __init__(self, max_depth=None):
            super().__init__(max_depth=max_depth)

    assert silva.DecisionTreeRegressor._get_param_names()  # cached first
    assert Narrow._get_param_names() == ["max_depth"]
    assert "criterion" in silva.DecisionTreeRegressor._get_param_names()
    assert Narrow().get_params() == {"max_depth": None}
