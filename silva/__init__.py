"""silva: decision trees and tree ensembles on one compiled engine, scikit-learn's API."""

from silva.adaboost import AdaBoostClassifier, AdaBoostRegressor
from silva.bagging import BaggingClassifier, BaggingRegressor
from silva.boosting import GradientBoostingClassifier, GradientBoostingRegressor
from silva.classic import C45Classifier, ID3Classifier
from silva.decision_tree import DecisionTreeClassifier, DecisionTreeRegressor
from silva.export import export_graphviz, export_text
from silva.forest import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from silva.inspection import permutation_importance
from silva.persistence import dump_json, load
from silva.stacking import StackingClassifier, StackingRegressor
from silva.voting import VotingClassifier, VotingRegressor

__version__ = "0.1.0"

__all__ = [
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
    "GradientBoostingRegressor",
    "ID3Classifier",
    "RandomForestClassifier",
    "RandomForestRegressor",
    "StackingClassifier",
    "StackingRegressor",
    "VotingClassifier",
    "VotingRegressor",
    "dump_json",
    "export_graphviz",
    "export_text",
    "load",
    "permutation_importance",
    "__version__",
]
