"""Which estimator a command-line name means, how one is built, loaded and told its
parameters."""

from __future__ import annotations

import argparse
import ast
import importlib
import os
from typing import Any

import numpy as np

from silva.cli.errors import CLIError

__all__ = ["ENSEMBLE_MEMBERS", "MAX_INTEGER_CLASSES", "MODELS", "RANDOM_STATE", "TASKS",
           "infer_task", "load_model", "model_feature_names", "new_estimator",
           "parse_param", "resolve_model"]


# The random_state of every estimator the command line builds, unless --param sets one.
RANDOM_STATE = 0

# Name on the command line -> ("module:Class" for classification, for regression);
# None where the family has no such estimator. Imported only when used.
MODELS: dict[str, tuple[str | None, str | None]] = {
    "tree": ("silva.decision_tree:DecisionTreeClassifier",
             "silva.decision_tree:DecisionTreeRegressor"),
    "id3": ("silva.classic:ID3Classifier", None),
    "c45": ("silva.classic:C45Classifier", None),
    "rf": ("silva.forest:RandomForestClassifier", "silva.forest:RandomForestRegressor"),
    "et": ("silva.forest:ExtraTreesClassifier", "silva.forest:ExtraTreesRegressor"),
    "bagging": ("silva.bagging:BaggingClassifier", "silva.bagging:BaggingRegressor"),
    "gbm": ("silva.boosting:GradientBoostingClassifier",
            "silva.boosting:GradientBoostingRegressor"),
    "ada": ("silva.adaboost:AdaBoostClassifier", "silva.adaboost:AdaBoostRegressor"),
    "vote": ("silva.voting:VotingClassifier", "silva.voting:VotingRegressor"),
    "stack": ("silva.stacking:StackingClassifier", "silva.stacking:StackingRegressor"),
}

TASKS = ("classification", "regression")

# A numeric target is taken as class labels when it holds integers only and at most
# this many distinct values (override with --task).
MAX_INTEGER_CLASSES = 20


def resolve_model(name: str, task: str):
    """The estimator class registered as ``name`` for ``task``."""
    if name not in MODELS:
        raise CLIError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    target = MODELS[name][TASKS.index(task)]
    if target is None:
        raise CLIError(f"model {name!r} does not do {task}")
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and (module_name == error.name
                                       or module_name.startswith(error.name + ".")):
            raise CLIError(f"model {name!r} is not available in this build "
                           f"({module_name} is not installed)") from None
        raise
    cls = getattr(module, class_name, None)
    if cls is None:
        raise CLIError(f"model {name!r} is not available in this build "
                       f"({module_name} has no {class_name})")
    return cls


def parse_param(text: str) -> tuple[str, Any]:
    """``key=value`` with the value read as a Python literal (``3``, ``0.5``, ``None``,
    ``'gini'``, ``[0, 2]``), else kept as the string itself."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = raw.strip()
    return key, value


def infer_task(y: np.ndarray) -> tuple[str, str]:
    """("classification" or "regression", the reason in words) for the target ``y``."""
    y = np.asarray(y)
    if y.dtype.kind not in "iuf":
        return "classification", f"non-numeric values ({y.dtype})"
    values = y.astype(float)
    values = values[np.isfinite(values)]
    distinct = np.unique(values)
    if values.size and np.all(distinct == np.round(distinct)) and \
            distinct.size <= MAX_INTEGER_CLASSES:
        return "classification", f"{distinct.size} distinct integer values"
    return "regression", f"{distinct.size} distinct numeric values"

# Members of the voting and stacking ensembles built by ``--model vote|stack`` (those
# whose modules are present), each with its defaults and random_state=0.
ENSEMBLE_MEMBERS = ("tree", "rf", "gbm")


def new_estimator(cls, task):
    """``cls()``, or for a meta-estimator that needs ``estimators`` (voting, stacking),
    ``cls(estimators=[...])`` with the available :data:`ENSEMBLE_MEMBERS`."""
    import inspect

    parameter = inspect.signature(cls).parameters.get("estimators")
    if parameter is None or parameter.default is not inspect.Parameter.empty:
        return cls()
    members = []
    for name in ENSEMBLE_MEMBERS:
        try:
            member = resolve_model(name, task)()
        except CLIError:
            continue
        if "random_state" in member.get_params(deep=False):
            member.set_params(random_state=RANDOM_STATE)
        members.append((name, member))
    return cls(estimators=members)


def load_model(path, allow_pickle=False):
    from silva.persistence import load, read_metadata

    if not os.path.isfile(path):
        raise CLIError(f"cannot read model {path}: no such file")
    try:
        model = load(path, allow_pickle=allow_pickle)
        metadata = read_metadata(path)
    except ValueError as error:
        hint = " (pass --allow-pickle for a file you trust)" if "allow_pickle" in str(error) \
            else ""
        raise CLIError(f"cannot load model {path}: {error}{hint}") from None
    return model, (metadata.get("user") or {})


def model_feature_names(model, info):
    names = info.get("features")
    if names is None and getattr(model, "feature_names_in_", None) is not None:
        names = [str(n) for n in model.feature_names_in_]
    if names is None:
        raise CLIError("the model file does not record its feature columns; save it with "
                       "silva fit")
    return names
