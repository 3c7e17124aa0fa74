"""silva: decision trees and tree ensembles on one compiled engine, scikit-learn's API.

The public names below are imported on first use (PEP 562), so that ``import silva``
costs milliseconds and a script pays only for the estimators it touches: importing an
estimator's module brings in scikit-learn and numba, about a second between them.
"""

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# Public name -> the module that defines it.
_LAZY_NAMES = {
    "AdaBoostClassifier": "silva.adaboost",
    "AdaBoostRegressor": "silva.adaboost",
    "BaggingClassifier": "silva.bagging",
    "BaggingRegressor": "silva.bagging",
    "C45Classifier": "silva.classic",
    "DecisionTreeClassifier": "silva.decision_tree",
    "DecisionTreeRegressor": "silva.decision_tree",
    "ExtraTreesClassifier": "silva.forest",
    "ExtraTreesRegressor": "silva.forest",
    "GradientBoostingClassifier": "silva.boosting",
    "GradientBoostingRanker": "silva.ranker",
    "GradientBoostingRegressor": "silva.boosting",
    "ID3Classifier": "silva.classic",
    "NothingLearnedWarning": "silva.exceptions",
    "RandomForestClassifier": "silva.forest",
    "RandomForestRegressor": "silva.forest",
    "StackingClassifier": "silva.stacking",
    "StackingRegressor": "silva.stacking",
    "VotingClassifier": "silva.voting",
    "VotingRegressor": "silva.voting",
    "compile": "silva._warmup",
    "dump_json": "silva.export_json",
    "export_graphviz": "silva.export",
    "export_text": "silva.export",
    "load": "silva.persistence",
    "permutation_importance": "silva.inspection",
    "to_onnx": "silva.export_onnx",
    "to_treelite": "silva.export_treelite",
}

__all__ = [  # spelled out for static analysers; tests check it against _LAZY_NAMES
    "AdaBoostClassifier",
    "AdaBoostRegressor",
    "BaggingClassifier",
    "BaggingRegressor",
    "C45Classifier",
    "DecisionTreeClassifier",
    "DecisionTreeRegressor",
    "ExtraTreesClassifier",
    "ExtraTreesRegressor",
    "GradientBoostingClassifier",
    "GradientBoostingRanker",
    "GradientBoostingRegressor",
    "ID3Classifier",
    "NothingLearnedWarning",
    "RandomForestClassifier",
    "RandomForestRegressor",
    "StackingClassifier",
    "StackingRegressor",
    "VotingClassifier",
    "VotingRegressor",
    "compile",
    "dump_json",
    "export_graphviz",
    "export_text",
    "load",
    "permutation_importance",
    "to_onnx",
    "to_treelite",
    "__version__",
]

if TYPE_CHECKING:  # static analysers and IDEs see ordinary imports
    from silva._warmup import compile
    from silva.adaboost import AdaBoostClassifier, AdaBoostRegressor
    from silva.bagging import BaggingClassifier, BaggingRegressor
    from silva.boosting import GradientBoostingClassifier, GradientBoostingRegressor
    from silva.classic import C45Classifier, ID3Classifier
    from silva.decision_tree import DecisionTreeClassifier, DecisionTreeRegressor
    from silva.exceptions import NothingLearnedWarning
    from silva.export import export_graphviz, export_text
    from silva.export_json import dump_json
    from silva.export_onnx import to_onnx
    from silva.export_treelite import to_treelite
    from silva.forest import (
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from silva.inspection import permutation_importance
    from silva.persistence import load
    from silva.ranker import GradientBoostingRanker
    from silva.stacking import StackingClassifier, StackingRegressor
    from silva.voting import VotingClassifier, VotingRegressor


def __getattr__(name):
    module_name = _LAZY_NAMES.get(name)
    if module_name is None:
        raise AttributeError(f"module 'silva' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
