"""silva: decision trees and tree ensembles on one compiled engine, scikit-learn's API."""

from silva.decision_tree import DecisionTreeClassifier, DecisionTreeRegressor
from silva.export import export_graphviz, export_text

__version__ = "0.1.0"

__all__ = [
    "DecisionTreeClassifier",
    "DecisionTreeRegressor",
    "export_graphviz",
    "export_text",
    "__version__",
]
