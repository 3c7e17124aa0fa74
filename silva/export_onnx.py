"""ONNX export of silva's tree models: :func:`to_onnx` and :func:`onnx_input`.

The graph is built with the ``onnx`` package's helpers (optional extra
``pip install silva[onnx]``) around one ``TreeEnsemble`` operator of the ``ai.onnx.ml``
domain, opset 5, which tests ``x <= threshold`` (``BRANCH_LEQ``), ``x == value``
(``BRANCH_EQ``) and set membership (``BRANCH_MEMBER``) and sends missing values (NaN)
to the true or false child per node (``nodes_missing_value_tracks_true``): every silva
split is one node (see :mod:`silva.additive_trees` for how CART's categorical splits and
ID3's multiway splits become binary tests). The operator's leaves add one value to one
target, so a tree whose leaves hold several values (a forest classifier's class
fractions) appears once per class. Standard ONNX operators after it add the intercept
(``Add``), apply the link (``Sigmoid``, ``Softmax``, ``Exp``) and pick the label
(``ArgMax``, then ``Gather`` from the classes).

Inputs and outputs
------------------
One input ``X``, ``[N, n_features]``, float32 by default (``dtype=numpy.float64`` for a
double graph). Classifiers output ``label`` (``[N]``, the class labels' type) and
``probabilities`` (``[N, n_classes]``); regressors output ``variable`` (``[N, 1]``).
Categorical features enter as their integer codes, NaN for missing; a data frame's
category columns are encoded by the estimator's own encoder: :func:`onnx_input` does it.

Thresholds in float32
---------------------
silva's thresholds are float64: boosting's are training values (bin edges), CART's the
midpoints between two training values. An input reaches a float32 graph rounded to the
nearest float32, so each threshold ``t`` is stored as its nearest float32 ``t32`` too,
except that a ``t`` exactly halfway between two float32 numbers (the midpoint of two
adjacent float32 training values) is stored as the lower one. Rounding is monotone, so
an input ``x`` takes the branch silva gives it except when ``x > t`` and ``x`` rounds to
``t32`` (``x`` within half a float32 step above ``t``), or when ``x`` equals such a
halfway ``t`` and rounds up (float32 data never hold such a value):

- an input equal to a threshold goes left, as in silva (boosting's thresholds are
  training values, so held-out rows often equal them);
- when the training data are float32 numbers, every float32 input takes silva's branch
  at thresholds that are float32 numbers or halfway between two of them, which covers
  boosting's edges and the midpoints of adjacent values;
- ``dtype=numpy.float64`` builds a double graph that decides exactly as silva for every
  input.

"""

from __future__ import annotations

import numpy as np

from silva.additive_trees import (
    EQUAL,
    EXP_CLIP,
    LEAF,
    LESS_EQUAL,
    MEMBER,
    additive_model,
    weighted_median_model,
)

__all__ = ["DEFAULT_OPSET", "float32_thresholds", "onnx_input", "to_onnx"]

# ai.onnx opset 21 and ai.onnx.ml opset 5, the first with the TreeEnsemble operator
# (tested with onnxruntime 1.32).
DEFAULT_OPSET = 21
ML_OPSET = 5
_MIN_OPSET = 13  # Softmax over one axis (earlier opsets flatten the trailing axes)

# TreeEnsemble's enumerations (ai.onnx.ml opset 5).
_MODES = {LESS_EQUAL: 0, EQUAL: 4, MEMBER: 6}
_AGGREGATE_SUM = 1
_POST_TRANSFORM_NONE = 0


def _import_onnx():
    try:
        import onnx
    except ImportError as error:
        raise ImportError("silva.to_onnx needs the onnx package: pip install silva[onnx]"
                          ) from error
    return onnx


def float32_thresholds(thresholds):
    """Float32 thresholds for float64 ``thresholds`` (see the module notes): the nearest
    float32, the lower of the two when a threshold is exactly halfway between them, the
    largest finite float32 for a finite threshold beyond float32's range; infinities
    stay."""
    thresholds = np.asarray(thresholds, dtype=np.float64)
    with np.errstate(over="ignore"):
        nearest = thresholds.astype(np.float32)
    below = nearest.copy()  # the largest float32 at most the threshold
    above = below.astype(np.float64) > thresholds
    below[above] = np.nextafter(below[above], np.float32(-np.inf))
    # Overflow past the largest float32, inf - inf at infinite thresholds: not halfway.
    with np.errstate(over="ignore", invalid="ignore"):
        next_up = np.nextafter(below, np.float32(np.inf)).astype(np.float64)
        halfway = (thresholds - below) == (next_up - thresholds)
    overflow = np.isinf(nearest) & np.isfinite(thresholds)
    return np.where(halfway | overflow, below, nearest).astype(np.float32)


def _check_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"to_onnx: dtype must be numpy.float32 or numpy.float64; got {dtype}.")
    return dtype


def _check_opset(target_opset):
    if target_opset is None:
        return DEFAULT_OPSET
    if isinstance(target_opset, dict):
        ml = target_opset.get("ai.onnx.ml", ML_OPSET)
        if ml < ML_OPSET:
            raise ValueError(f"to_onnx: target_opset['ai.onnx.ml'] must be at least {ML_OPSET} "
                             f"(the TreeEnsemble operator); got {ml}.")
        target_opset = target_opset.get("", DEFAULT_OPSET)
    if isinstance(target_opset, bool) or not isinstance(target_opset, int | np.integer) \
            or target_opset < _MIN_OPSET:
        raise ValueError(f"to_onnx: target_opset must be an int of at least {_MIN_OPSET} (or "
                         f"a dict of domain to opset); got {target_opset!r}.")
    return int(target_opset)


def _tree_ensemble_attributes(model, dtype):
    """The TreeEnsemble operator's attributes for ``model`` (an AdditiveModel)."""
    featureids, modes, splits, true_ids, false_ids = [], [], [], [], []
    true_leafs, false_leafs, missing_true, members, roots = [], [], [], [], []
    leaf_targets, leaf_weights = [], []

    def add_copy(tree, column, target):
        # Interior nodes and leaves are numbered apart: ids of this copy's nodes.
        is_leaf = tree.test == LEAF
        node_base, leaf_base = len(featureids), len(leaf_weights)
        new_id = np.empty(tree.n_nodes, dtype=np.int64)
        new_id[~is_leaf] = node_base + np.arange(int(np.sum(~is_leaf)))
        new_id[is_leaf] = leaf_base + np.arange(int(np.sum(is_leaf)))
        leaf_weights.extend(tree.value[is_leaf, column].tolist())
        leaf_targets.extend([target] * int(np.sum(is_leaf)))
        roots.append(node_base)
        if is_leaf[0]:  # a single leaf: one node whose two branches reach it
            featureids.append(0)
            modes.append(_MODES[LESS_EQUAL])
            splits.append(0.0)
            true_ids.append(leaf_base)
            false_ids.append(leaf_base)
            true_leafs.append(1)
            false_leafs.append(1)
            missing_true.append(0)
            return
        for node in np.flatnonzero(~is_leaf):  # in id order, as membership_values is
            test = int(tree.test[node])
            featureids.append(int(tree.feature[node]))
            modes.append(_MODES[test])
            splits.append(float(tree.threshold[node]) if test != MEMBER else 0.0)
            if test == MEMBER:
                members.extend(float(code) for code in tree.members[node])
                members.append(np.nan)
            t, f = tree.true_child[node], tree.false_child[node]
            true_ids.append(int(new_id[t]))
            false_ids.append(int(new_id[f]))
            true_leafs.append(int(is_leaf[t]))
            false_leafs.append(int(is_leaf[f]))
            missing_true.append(int(tree.missing_true[node]))

    for additive in model.trees:
        tree = additive.tree
        for column in range(tree.value.shape[1]):
            # A copy whose leaves all add zero changes nothing (AdaBoost's votes for
            # classes a learner never predicts).
            if np.any(tree.value[tree.test == LEAF, column] != 0.0):
                add_copy(tree, column, additive.first_column + column)
    if not roots:  # every leaf adds zero: one tree, one zero leaf
        add_copy(model.trees[0].tree._replace(
            test=np.array([LEAF], dtype=np.int8), value=np.zeros((1, 1))), 0, 0)

    splits = np.asarray(splits, dtype=np.float64)
    splits = float32_thresholds(splits) if dtype == np.float32 else splits
    attributes = {
        "n_targets": model.n_outputs,
        "aggregate_function": _AGGREGATE_SUM,
        "post_transform": _POST_TRANSFORM_NONE,
        "tree_roots": roots,
        "nodes_featureids": featureids,
        "nodes_modes": np.asarray(modes, dtype=np.uint8),
        "nodes_splits": splits.astype(dtype),
        "nodes_truenodeids": true_ids,
        "nodes_falsenodeids": false_ids,
        "nodes_trueleafs": true_leafs,
        "nodes_falseleafs": false_leafs,
        "nodes_missing_value_tracks_true": missing_true,
        "leaf_targetids": leaf_targets,
        "leaf_weights": np.asarray(leaf_weights, dtype=dtype),
    }
    if members:
        attributes["membership_values"] = np.asarray(members, dtype=dtype)
    return attributes


def _label_tensor(onnx, classes):
    """The classes as an ONNX constant tensor (int64, double, bool or string)."""
    from onnx import numpy_helper

    classes = np.asarray(classes)
    if classes.dtype.kind in "iu":
        return numpy_helper.from_array(classes.astype(np.int64), "classes"), \
            onnx.TensorProto.INT64
    if classes.dtype.kind == "f":
        return numpy_helper.from_array(classes.astype(np.float64), "classes"), \
            onnx.TensorProto.DOUBLE
    if classes.dtype.kind == "b":
        return numpy_helper.from_array(classes, "classes"), onnx.TensorProto.BOOL
    if classes.dtype.kind == "U" or all(isinstance(c, str) for c in classes):
        return onnx.helper.make_tensor("classes", onnx.TensorProto.STRING, [len(classes)],
                                       [str(c).encode("utf-8") for c in classes]), \
            onnx.TensorProto.STRING
    raise TypeError(f"to_onnx: class labels of dtype {classes.dtype} have no ONNX tensor "
                    "type; use integer, float, boolean or string labels.")


def to_onnx(model, *, target_opset=None, name=None, dtype=np.float32):
    """The fitted ``model`` as an ONNX ``ModelProto``.

    Parameters
    ----------
    model : fitted silva estimator
        DecisionTreeClassifier/Regressor, ID3Classifier, RandomForest* and ExtraTrees*,
        Bagging* of silva trees, GradientBoostingClassifier (log loss: sigmoid for two
        classes, softmax for more; exponential loss; custom objectives) and
        GradientBoostingRegressor (identity link, or ``Exp`` for the poisson, gamma and
        tweedie losses), AdaBoostClassifier of silva trees (softmax of the class scores)
        and AdaBoostRegressor of silva trees (the learners' weighted median, computed
        after the trees by ``TopK``, ``CumSum`` and ``GatherElements``).
    target_opset : int or dict, optional
        The ``ai.onnx`` opset (default 21, at least 13), or a dict of domain to opset
        (``{"": 21, "ai.onnx.ml": 5}``); ``ai.onnx.ml`` must be 5 or more.
    name : str, optional
        The graph's name (default ``"silva_" + the estimator's class name``).
    dtype : numpy.float32 or numpy.float64, default numpy.float32
        Type of the input ``X`` and of the thresholds and leaf values (see the module
        notes on float32 thresholds).

    Returns
    -------
    onnx.ModelProto
        Inputs ``X`` ``[N, n_features]``; outputs ``label`` and ``probabilities`` for a
        classifier (``label`` equals ``model.predict``, ``probabilities`` its
        ``predict_proba`` to float32 rounding), ``variable`` ``[N, 1]`` for a regressor.

    Raises
    ------
    NotFittedError
        ``model`` is not fitted.
    NotImplementedError
        C45Classifier: its fractional missing values have no path of binary tests.
    TypeError
        Any other model (voting and stacking ensembles, bagging of non-tree models).
    ImportError
        ``onnx`` is not installed (``pip install silva[onnx]``).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from silva import RandomForestClassifier, to_onnx
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> forest = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y)
    >>> [output.name for output in to_onnx(forest).graph.output]
    ['label', 'probabilities']
    """
    onnx = _import_onnx()
    from onnx import helper, numpy_helper

    from silva.adaboost import AdaBoostRegressor

    dtype = _check_dtype(dtype)
    opset = _check_opset(target_opset)
    if isinstance(model, AdaBoostRegressor):
        additive = weighted_median_model(model)
    else:
        additive = additive_model(model)
    elem = onnx.TensorProto.FLOAT if dtype == np.float32 else onnx.TensorProto.DOUBLE
    attributes = _tree_ensemble_attributes(additive, dtype)
    for key in ("nodes_modes", "nodes_splits", "leaf_weights", "membership_values"):
        if key in attributes:
            attributes[key] = numpy_helper.from_array(attributes[key])
    nodes = [helper.make_node("TreeEnsemble", ["X"], ["tree_sums"], domain="ai.onnx.ml",
                              name="trees", **attributes)]
    initializers = []
    raw = "tree_sums"
    if np.any(additive.base_score != 0.0):
        initializers.append(numpy_helper.from_array(
            additive.base_score.reshape(1, -1).astype(dtype), "base_score"))
        nodes.append(helper.make_node("Add", [raw, "base_score"], ["raw_score"]))
        raw = "raw_score"

    outputs = []
    if additive.classes is None:
        if additive.link == "weighted_median":
            nodes += _weighted_median_nodes(additive, raw, "variable", initializers)
        elif additive.link == "exp":
            initializers.append(numpy_helper.from_array(np.array([EXP_CLIP], dtype),
                                                        "exp_clip"))
            nodes.append(helper.make_node("Min", [raw, "exp_clip"], ["clipped_score"]))
            nodes.append(helper.make_node("Exp", ["clipped_score"], ["variable"]))
        else:
            nodes.append(helper.make_node("Identity", [raw], ["variable"]))
        outputs.append(helper.make_tensor_value_info("variable", elem, [None, 1]))
    else:
        if additive.link == "sigmoid":
            initializers.append(numpy_helper.from_array(np.array([1.0], dtype), "one"))
            nodes += [helper.make_node("Sigmoid", [raw], ["positive_probability"]),
                      helper.make_node("Sub", ["one", "positive_probability"],
                                       ["negative_probability"]),
                      helper.make_node("Concat", ["negative_probability",
                                                  "positive_probability"],
                                       ["probabilities"], axis=1)]
        elif additive.link == "softmax":
            nodes.append(helper.make_node("Softmax", [raw], ["probabilities"], axis=1))
        else:
            nodes.append(helper.make_node("Identity", [raw], ["probabilities"]))
        labels, label_type = _label_tensor(onnx, additive.classes)
        initializers.append(labels)
        # ArgMax returns the first of equal maxima, as numpy's argmax in silva's predict.
        nodes += [helper.make_node("ArgMax", ["probabilities"], ["class_index"], axis=1,
                                   keepdims=0, select_last_index=0),
                  helper.make_node("Gather", ["classes", "class_index"], ["label"], axis=0)]
        outputs += [helper.make_tensor_value_info("label", label_type, [None]),
                    helper.make_tensor_value_info("probabilities", elem,
                                                  [None, len(additive.classes)])]
    graph = helper.make_graph(
        nodes, name or f"silva_{additive.estimator}",
        [helper.make_tensor_value_info("X", elem, [None, additive.n_features])],
        outputs, initializer=initializers)
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid("ai.onnx.ml", ML_OPSET)]
    onnx_model = helper.make_model(graph, opset_imports=opsets,
                                   producer_name="silva", producer_version=_version(),
                                   doc_string=f"silva {additive.estimator}")
    onnx_model.ir_version = helper.find_min_ir_version_for(opsets)
    onnx.checker.check_model(onnx_model)
    return onnx_model


def _weighted_median_nodes(additive, predictions, output, initializers):
    """Nodes computing AdaBoost.R2's weighted median of the members' predictions
    (``predictions``, ``[N, M]``) into ``output`` (``[N, 1]``), as
    ``AdaBoostRegressor._weighted_median``: sort each row's predictions (``TopK``, which
    breaks ties by the lower index, as a stable sort), add up the sorted members'
    weights (float64, in sorted order), take the first member whose cumulative weight
    reaches half the total."""
    from onnx import helper, numpy_helper

    n_members = additive.n_outputs
    initializers += [
        numpy_helper.from_array(additive.member_weights, "member_weights"),
        numpy_helper.from_array(np.array([n_members], dtype=np.int64), "n_members"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "last"),
        numpy_helper.from_array(np.array([n_members], dtype=np.int64), "end"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis_one"),
        numpy_helper.from_array(np.array(1, dtype=np.int64), "scalar_axis_one"),
        numpy_helper.from_array(np.array([0.5]), "half"),
    ]
    return [
        helper.make_node("TopK", [predictions, "n_members"], ["sorted", "order"], axis=1,
                         largest=0, sorted=1),
        helper.make_node("Gather", ["member_weights", "order"], ["sorted_weights"], axis=0),
        helper.make_node("CumSum", ["sorted_weights", "scalar_axis_one"], ["cumulative"]),
        helper.make_node("Slice", ["cumulative", "last", "end", "axis_one"], ["total"]),
        helper.make_node("Mul", ["total", "half"], ["half_total"]),
        helper.make_node("GreaterOrEqual", ["cumulative", "half_total"], ["reached"]),
        helper.make_node("Cast", ["reached"], ["reached_int"], to=6),  # int32
        # ArgMax gives the first member that reaches half, as numpy's argmax.
        helper.make_node("ArgMax", ["reached_int"], ["chosen"], axis=1, keepdims=1,
                         select_last_index=0),
        helper.make_node("GatherElements", ["sorted", "chosen"], [output], axis=1),
    ]


def _version():
    import silva

    return silva.__version__


def onnx_input(model, X, dtype=np.float32):
    """``X`` as the exported graph's input: the estimator's own validation and category
    encoding (a data frame's category column becomes its codes, in the order of the
    categories seen at fit; unseen values and missing ones become NaN), cast to
    ``dtype``."""
    dtype = _check_dtype(dtype)
    validated = getattr(model, "_validated_X", None)
    if validated is not None:
        X = validated(X)
    else:  # gradient boosting: its own preparation after the fitted check
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(model, "estimators_")
        X = model._prepare_X(X, reset=False)
    return np.ascontiguousarray(X, dtype=dtype)
