"""Treelite export of silva's tree models: :func:`to_treelite`.

Treelite (optional extra ``pip install silva[treelite]``) compiles tree ensembles to
shared libraries (with its companion TL2cgen) and predicts them without a compiler
through GTIL (``treelite.gtil.predict``). :func:`to_treelite` describes a silva model to
Treelite's model builder (``treelite.model_builder.ModelBuilder``), from the additive
form of :mod:`silva.additive_trees`:

- a threshold split is Treelite's numerical test ``x <= threshold`` (``opname="<="``),
  missing values to the left child when silva sends them left (``default_left``);
  thresholds and leaf values stay float64, so decisions are silva's;
- a categorical split is Treelite's categorical test on a list of category codes
  (written for the finite side of the split, see :mod:`silva.additive_trees`; codes
  that no list holds and NaN take the missing-value side);
- ID3's multiway splits are chains of ``==`` and ``<=`` tests;
- the forest's mean, AdaBoost's vote weights and boosting's learning rate are in the
  leaf values; boosting's initial prediction is Treelite's ``base_scores``; the link is
  Treelite's postprocessor: ``identity`` (regression), ``identity_multiclass`` (class
  probabilities of trees, forests and bagging), ``sigmoid`` (two-class boosting: GTIL
  gives the probability of ``classes_[1]`` alone), ``softmax`` (multiclass boosting,
  AdaBoost) and ``exponential`` (poisson, gamma and tweedie boosting; silva clips the
  raw score at 700 first, Treelite does not).

Treelite converts a categorical feature's value to an unsigned integer before looking
it up, so a non-integer code (which silva sends the missing-value way) is truncated by
Treelite; the codes silva's encoders produce are integers or NaN.
"""

from __future__ import annotations

import numpy as np

from silva.additive_trees import EQUAL, LEAF, MEMBER, additive_model

__all__ = ["to_treelite"]

_POSTPROCESSORS = {"sigmoid": "sigmoid", "softmax": "softmax", "exp": "exponential"}


def _import_treelite():
    try:
        import treelite
        import treelite.model_builder
    except ImportError as error:
        raise ImportError("silva.to_treelite needs the treelite package: "
                          "pip install silva[treelite]") from error
    return treelite


def to_treelite(model):
    """The fitted ``model`` as a ``treelite.Model``, built with Treelite's model builder.

    Supports the estimators of :func:`silva.to_onnx`; raises the same errors for the
    others. ``treelite.gtil.predict(result, X)`` returns ``(n_rows, 1, n_columns)``:
    class probabilities for classifiers (the probability of ``classes_[1]`` alone for
    two-class gradient boosting), predictions for regressors. Categorical features
    enter as the estimator's category codes (:func:`silva.export_onnx.onnx_input`
    encodes a data frame, with ``dtype=numpy.float64``).

    Examples
    --------
    >>> import treelite
    >>> from sklearn.datasets import load_diabetes
    >>> from silva import GradientBoostingRegressor, to_treelite
    >>> X, y = load_diabetes(return_X_y=True)
    >>> boosting = GradientBoostingRegressor(n_estimators=10).fit(X, y)
    >>> tl_model = to_treelite(boosting)
    >>> bool(abs(treelite.gtil.predict(tl_model, X)[:, 0, 0] - boosting.predict(X)).max()
    ...      < 1e-6)
    True
    """
    _import_treelite()
    from treelite.model_builder import (
        Metadata,
        ModelBuilder,
        PostProcessorFunc,
        TreeAnnotation,
    )

    additive = additive_model(model)
    n_outputs = additive.n_outputs
    widths = {tree.tree.value.shape[1] for tree in additive.trees}
    if len(widths) != 1:  # every silva model has one leaf width; guard the assumption
        raise ValueError(f"to_treelite: trees of {additive.estimator} have leaf values of "
                         f"different widths {sorted(widths)}.")
    width = widths.pop()
    classifier = additive.classes is not None
    if classifier and n_outputs > 1:
        task_type, num_class = "kMultiClf", [n_outputs]
    elif classifier:
        task_type, num_class = "kBinaryClf", [1]
    else:
        task_type, num_class = "kRegressor", [1]
    if additive.link == "identity":
        postprocessor = "identity_multiclass" if n_outputs > 1 else "identity"
    else:
        postprocessor = _POSTPROCESSORS[additive.link]
    # A tree whose leaves hold every output column counts for all classes (-1); a tree
    # of one column (boosting: one tree per class and iteration) for its own class.
    class_id = [-1 if width > 1 else tree.first_column for tree in additive.trees]
    builder = ModelBuilder(
        threshold_type="float64",
        leaf_output_type="float64",
        metadata=Metadata(num_feature=additive.n_features, task_type=task_type,
                          average_tree_output=False, num_target=1, num_class=num_class,
                          leaf_vector_shape=(1, width)),
        tree_annotation=TreeAnnotation(num_tree=len(additive.trees),
                                       target_id=[0] * len(additive.trees),
                                       class_id=class_id),
        postprocessor=PostProcessorFunc(name=postprocessor),
        base_scores=[float(score) for score in additive.base_score],
    )
    for additive_tree in additive.trees:
        _build_tree(builder, additive_tree.tree, width)
    return builder.commit()


def _build_tree(builder, tree, width):
    builder.start_tree()
    tests, features = tree.test.tolist(), tree.feature.tolist()
    # A split of present against missing values tests x <= +inf; the largest float64
    # decides the same for every finite x (silva refuses infinite inputs), and keeps
    # Treelite's JSON dump valid (it writes infinities as nothing).
    thresholds = np.minimum(tree.threshold, np.finfo(np.float64).max).tolist()
    missing_true = tree.missing_true.tolist()
    true_child, false_child = tree.true_child.tolist(), tree.false_child.tolist()
    for node in range(tree.n_nodes):
        builder.start_node(node)
        test = tests[node]
        if test == LEAF:
            value = tree.value[node]
            builder.leaf(value.tolist() if width > 1 else float(value[0]))
        elif test == MEMBER:
            # Codes in the list take the left child, the true side of silva's test.
            builder.categorical_test(
                features[node], default_left=missing_true[node],
                category_list=[int(code) for code in tree.members[node]],
                category_list_right_child=False, left_child_key=true_child[node],
                right_child_key=false_child[node])
        else:
            builder.numerical_test(
                features[node], thresholds[node], default_left=missing_true[node],
                opname="==" if test == EQUAL else "<=", left_child_key=true_child[node],
                right_child_key=false_child[node])
        builder.end_node()
    builder.end_tree()
