"""The commands ``fit``, ``predict``, ``evaluate``, ``show``, ``export`` and ``compile``: each
takes the parsed arguments and the stream for its result, and returns the exit status."""

from __future__ import annotations

import csv
import os
import sys
import time

import numpy as np
from sklearn.base import is_classifier

from silva.cli.describe import describe_params, model_trees, score_of, text_table, tree_text
from silva.cli.errors import CLIError
from silva.cli.models import (
    RANDOM_STATE,
    infer_task,
    load_model,
    model_feature_names,
    new_estimator,
    resolve_model,
)
from silva.cli.tables import (
    SHOWN_BAD_CELLS,
    describe_columns,
    is_missing_cell,
    read_table,
    summarize_columns,
)

__all__ = ["COMMANDS", "evaluation_metrics", "settle_columns"]


def settle_columns(args, table, names, roles, report=None):
    """Settle the types of the columns ``names`` (``--bad-cells``) and say what was read.

    Notes on cells read as missing go to stderr, as warnings do. The summary line goes
    to ``report`` when one is given (``fit``, whose stdout is a report) and, with
    ``--verbose``, the column table too; ``predict`` and ``evaluate``, whose stdout is
    their result, print both on stderr with ``--verbose`` only.
    """
    notes = table.check_cells(names, args.bad_cells)
    if report is None and args.verbose:
        report = sys.stderr
    if report is not None:
        print(summarize_columns(table), file=report)
        if args.verbose:
            print(describe_columns(table, roles), file=report)
    for note in notes:
        print(f"silva {args.command}: note: {note}", file=sys.stderr)


def _check_target(y, name, table, purpose):
    """A clear error when target cells are missing (every row needs one to ``purpose``)."""
    y = np.asarray(y)
    missing = np.isnan(y) if y.dtype.kind == "f" else \
        np.array([is_missing_cell(v) for v in y], dtype=bool)
    if missing.any():
        rows = np.flatnonzero(missing)
        shown = ", ".join(str(i + 1) for i in rows[:SHOWN_BAD_CELLS])
        more = f" and {rows.size - SHOWN_BAD_CELLS} more" if rows.size > SHOWN_BAD_CELLS \
            else ""
        raise CLIError(f"target column {name!r} of {table.path} is missing in "
                       f"{rows.size} row{'s' if rows.size > 1 else ''} (row"
                       f"{'s' if rows.size > 1 else ''} {shown}{more}); every row needs a "
                       f"target to {purpose}: fill or drop those rows")


def _predict(model, X, proba):
    try:
        if proba:
            if not hasattr(model, "predict_proba"):
                raise CLIError(f"{type(model).__name__} has no predict_proba (--proba is for "
                               "classifiers)")
            return model.predict_proba(X)
        return model.predict(X)
    except (ValueError, TypeError) as error:
        raise CLIError(f"cannot predict: {error}") from None


def command_fit(args, out) -> int:
    table = read_table(args.data)
    table.check_columns([args.target])
    settle_columns(args, table, table.names,
                   {name: "target" if name == args.target else "feature"
                    for name in table.names}, report=out)
    y = table.column(args.target)
    _check_target(y, args.target, table, "fit")
    task, reason = args.task, "--task"
    if task is None:
        task, reason = infer_task(y)
    cls = resolve_model(args.model, task)
    estimator = new_estimator(cls, task)
    params = dict(args.param or [])
    valid = estimator.get_params(deep=False)
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise CLIError(f"unknown parameter{'s' if len(unknown) > 1 else ''} {unknown} for "
                       f"{cls.__name__}; valid: {', '.join(sorted(valid))}")
    # Reproducible by default; categorical text columns used as categories by default.
    if "random_state" in valid and "random_state" not in params:
        params["random_state"] = RANDOM_STATE
    if "categorical_features" in valid and "categorical_features" not in params \
            and table.frame is not None:
        params["categorical_features"] = "auto"
    estimator.set_params(**params)
    features = [name for name in table.names if name != args.target]
    if not features:
        raise CLIError(f"{args.data} has no feature columns besides the target")
    X = table.features(features)
    if "categorical_features" not in valid and table.frame is not None:
        text = [name for name in features
                if table.frame[name].dtype.kind not in "biuf"]
        if text:
            raise CLIError(f"{cls.__name__} takes numeric columns only, and {text} are not "
                           "numeric; encode them first or pick a model that takes "
                           "categorical columns (tree, id3, c45, rf, et, gbm)")
    if task == "regression":
        try:
            y = y.astype(float)
        except (TypeError, ValueError):
            raise CLIError(f"target {args.target!r} is not numeric; use --task "
                           "classification") from None
    start = time.perf_counter()
    try:
        estimator.fit(X, y)
    except (ValueError, TypeError) as error:
        shown = ", ".join(f"{k}={v!r}" for k, v in sorted(args.param or [])) or "defaults"
        raise CLIError(f"cannot fit {cls.__name__} ({shown}): {error}") from None
    seconds = time.perf_counter() - start
    from silva.persistence import save

    metadata = {"target": args.target, "task": task, "features": features,
                "model": args.model, "data": os.path.basename(args.data)}
    try:
        save(estimator, args.out, metadata=metadata, allow_pickle=args.allow_pickle)
    except (OSError, ValueError) as error:
        hint = "" if args.allow_pickle else " (add --allow-pickle to store it with pickle)"
        raise CLIError(f"cannot write {args.out}: {error}"
                       f"{hint if 'non-silva' in str(error) else ''}") from None
    n_categorical = int(np.sum(getattr(estimator, "is_categorical_", [])))
    metric, score = score_of(estimator, X, y)
    print(f"{cls.__name__}: {task} of {args.target!r} ({reason}), {table.n_rows} rows, "
          f"{len(features)} features ({n_categorical} categorical); fit in {seconds:.2f} s; "
          f"training {metric} {score:.4f}; saved to {args.out}", file=out)
    return 0


def _write_csv(header, rows, file):
    writer = csv.writer(file, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)


def command_predict(args, out) -> int:
    model, info = load_model(args.model, args.allow_pickle)
    table = read_table(args.data)
    names = model_feature_names(model, info)
    table.check_columns(names, what="feature column")
    settle_columns(args, table, names, dict.fromkeys(names, "feature"))
    X = table.features(names)
    predicted = _predict(model, X, args.proba)
    if args.proba:
        header = [f"proba_{c}" for c in np.asarray(model.classes_).tolist()]
        rows = [[repr(float(p)) for p in row] for row in predicted]
    else:
        header = ["prediction"]
        rows = [[value] for value in np.asarray(predicted).tolist()]
    if args.out is None:
        _write_csv(header, rows, out)
        return 0
    try:
        if args.out.lower().endswith((".parquet", ".pq")):
            import pyarrow as pa
            import pyarrow.parquet as pq

            values = predicted if args.proba else np.asarray(predicted)[:, None]
            columns = {name: np.asarray(values)[:, j].tolist() for j, name in enumerate(header)}
            pq.write_table(pa.table(columns), args.out)
        else:
            with open(args.out, "w", newline="", encoding="utf-8") as file:
                _write_csv(header, rows, file)
    except (OSError, ImportError) as error:
        raise CLIError(f"cannot write {args.out}: {error}") from None
    return 0


def evaluation_metrics(model, X, y) -> list[tuple[str, float]]:
    """(name, value) pairs: accuracy, balanced accuracy, macro F1, log loss and ROC AUC
    for classifiers; R2, RMSE and MAE for regressors."""
    from sklearn import metrics

    predicted = _predict(model, X, proba=False)
    if not is_classifier(model):
        y = np.asarray(y, dtype=float)
        return [("R2", metrics.r2_score(y, predicted)),
                ("RMSE", float(np.sqrt(metrics.mean_squared_error(y, predicted)))),
                ("MAE", metrics.mean_absolute_error(y, predicted))]
    rows = [("accuracy", metrics.accuracy_score(y, predicted)),
            ("balanced accuracy", metrics.balanced_accuracy_score(y, predicted)),
            ("F1 (macro)", metrics.f1_score(y, predicted, average="macro"))]
    if hasattr(model, "predict_proba"):
        proba = _predict(model, X, proba=True)
        classes = np.asarray(model.classes_)
        if set(np.unique(y).tolist()) <= set(classes.tolist()):
            rows.append(("log loss", metrics.log_loss(y, proba, labels=classes)))
            if len(classes) == 2 and len(np.unique(y)) == 2:
                rows.append(("ROC AUC", metrics.roc_auc_score(y == classes[1], proba[:, 1])))
    return rows


def command_evaluate(args, out) -> int:
    model, info = load_model(args.model, args.allow_pickle)
    table = read_table(args.data)
    target = args.target or info.get("target")
    if target is None:
        raise CLIError("give the target column with --target")
    names = model_feature_names(model, info)
    table.check_columns([target])
    table.check_columns(names, what="feature column")
    roles = dict.fromkeys(names, "feature")
    roles[target] = "target"
    settle_columns(args, table, [*names, target] if target not in names else names, roles)
    y = table.column(target)
    _check_target(y, target, table, "be scored")
    X = table.features(names)
    try:
        rows = evaluation_metrics(model, X, y)
    except (ValueError, TypeError) as error:
        raise CLIError(f"cannot evaluate: {error}") from None
    print(f"{type(model).__name__} on {args.data} ({table.n_rows} rows, target "
          f"{target!r})", file=out)
    print(file=out)
    print(text_table(["metric", "value"], [[name, f"{value:.4f}"] for name, value in rows],
                 right={1}), file=out)
    return 0


def command_show(args, out) -> int:
    from silva.persistence import read_metadata

    model, info = load_model(args.model, args.allow_pickle)
    meta = read_metadata(args.model)
    versions = meta.get("versions", {})
    print(f"{type(model).__name__} (model file format {meta.get('format_version')}, written "
          f"by silva {versions.get('silva', '?')})", file=out)
    if info:
        print(f"task: {info.get('task')} of {info.get('target')!r}, fitted on "
              f"{info.get('data')}", file=out)
    print(f"parameters: {describe_params(model)}", file=out)
    names = getattr(model, "feature_names_in_", None)
    names = [str(n) for n in names] if names is not None else info.get("features")
    n_features = getattr(model, "n_features_in_", None)
    if n_features is not None:
        shown = "" if names is None else ": " + ", ".join(names[:20]) + \
            (", ..." if len(names) > 20 else "")
        print(f"features: {n_features}{shown}", file=out)
        mask = getattr(model, "is_categorical_", None)
        if mask is not None and np.any(mask):
            categorical = [names[j] if names else str(j) for j in np.flatnonzero(mask)]
            print(f"categorical: {', '.join(categorical)}", file=out)
    classes = getattr(model, "classes_", None)
    if classes is not None:
        print(f"classes: {', '.join(str(c) for c in np.asarray(classes).tolist())}", file=out)
    trees = model_trees(model)
    if not trees:
        print("not fitted", file=out)
        return 0
    print(f"trees: {len(trees)}, {sum(t.node_count for t in trees)} nodes, "
          f"{sum(t.n_leaves for t in trees)} leaves, depth up to "
          f"{max(t.max_depth for t in trees)}", file=out)
    try:
        importances = np.asarray(model.feature_importances_, dtype=float)
    except (AttributeError, ValueError):
        importances = None
    if importances is not None and importances.size:
        labels = names if names is not None else [f"feature_{j}" for j in
                                                  range(importances.size)]
        order = np.argsort(-importances, kind="stable")[:10]
        print(file=out)
        print(text_table(["feature", "importance"],
                     [[labels[j], f"{importances[j]:.4f}"] for j in order], right={1}),
              file=out)
    print(file=out)
    print(f"first levels of the tree (depth <= {args.depth}):", file=out)
    print(tree_text(model, names, None, args.depth), end="", file=out)
    return 0


EXPORT_FORMATS = {"onnx": ".onnx", "treelite": ".treelite"}


def _exported_path(args):
    if args.output:
        return args.output
    stem, _ = os.path.splitext(args.model)
    return stem + EXPORT_FORMATS[args.to]


def _describe_input(model, dtype, out):
    """How the exported model reads its input: columns in order, category codes."""
    names = getattr(model, "feature_names_in_", None)
    n_features = model.n_features_in_
    columns = ", ".join(str(n) for n in names) if names is not None else \
        f"{n_features} numeric columns"
    print(f"input: X [N, {n_features}] {dtype}, columns in order: {columns}", file=out)
    encoder = getattr(model, "_encoder", None)
    for j, categories in (getattr(encoder, "categories_", None) or {}).items():
        label = str(names[j]) if names is not None else f"column {j}"
        codes = ", ".join(f"{category}={code}" for code, category in enumerate(categories))
        print(f"  {label} as category codes ({codes}; others and missing: NaN)", file=out)


def command_export(args, out) -> int:
    """``silva export``: the model as ONNX (:func:`silva.to_onnx`) or as a Treelite model
    (:func:`silva.to_treelite`; a checkpoint, or Treelite's JSON dump for ``.json``)."""
    model, _ = load_model(args.model, args.allow_pickle)
    path = _exported_path(args)
    try:
        if args.to == "onnx":
            from silva.export_onnx import to_onnx

            dtype = np.float64 if args.float64 else np.float32
            data = to_onnx(model, dtype=dtype).SerializeToString()
            _write_bytes(path, data)
            dtype_name = np.dtype(dtype).name
        else:
            from silva.export_treelite import to_treelite

            exported = to_treelite(model)
            if path.endswith(".json"):
                _write_bytes(path, exported.dump_as_json(pretty_print=True).encode("utf-8"))
            else:
                _write_bytes(path, exported.serialize_bytes())
            dtype_name = "float64"
    except NotImplementedError as error:
        raise CLIError(str(error)) from None
    print(f"wrote {path} ({args.to}, {type(model).__name__})", file=out)
    _describe_input(model, dtype_name, out)
    return 0


def _write_bytes(path, data):
    from silva.persistence import atomic_write

    atomic_write(os.fspath(path), lambda file: file.write(data))


def command_compile(args, out):
    """``silva compile``: :func:`silva.compile` with its timings on ``out``."""
    from silva._warmup import compile as compile_kernels

    start = time.perf_counter()
    compile_kernels(args.estimators or None, n_jobs=args.jobs or None, verbose=True)
    print(f"compiled in {time.perf_counter() - start:.1f} s; later first fits on this "
          "machine load the cache", file=out)
    return 0


COMMANDS = {"fit": command_fit, "predict": command_predict, "evaluate": command_evaluate,
            "show": command_show, "export": command_export, "compile": command_compile}
