"""The ``silva`` command line: fit, predict, evaluate, show, export and demo.

::

    silva fit DATA --target COL [--model tree|id3|c45|rf|et|bagging|gbm|ada|vote|stack]
              [--param key=value ...] [--task classification|regression] --out MODEL
    silva predict MODEL DATA [--proba] [--out FILE]
    silva evaluate MODEL DATA --target COL
    silva show MODEL [--depth N]
    silva export MODEL --to onnx|treelite [-o OUT] [--float64]
    silva demo [--plots DIR]

(fit, predict and evaluate also take ``--bad-cells error|missing|text`` and
``--verbose``.)

DATA is a CSV file (read with pandas, or the csv module when pandas is absent) or a
Parquet file (read with pyarrow). A CSV column that holds mostly numbers but some cells
that are not (:func:`silva.cli.tables.mostly_numbers`) is an error naming them, unless
``--bad-cells`` says to read those cells as missing or the column as text; ``fit``
reports the column types it read on stdout (``--verbose``: a table of them, on stderr
for predict and evaluate, whose stdout is their result).

Models are looked up in :data:`silva.cli.models.MODELS`, a registry of ``"module:Class"`` strings
imported only when used, so an estimator appears on the command line as soon as its
module exists. Errors (a missing column, an unreadable file, a file that is not a
model, a bad parameter, any ValueError or TypeError that the estimators raise on bad
input) print one line to stderr and exit with status 1; command-line usage errors exit
with status 2.

The demo is driven by :data:`silva.cli.demo.DEMO_ENTRIES` (see :mod:`silva.cli.demo`).

The package, one module per job: this module holds the parser and :func:`main`;
:mod:`~silva.cli.commands` the commands, :mod:`~silva.cli.tables` reading data files,
:mod:`~silva.cli.models` naming, building and loading estimators,
:mod:`~silva.cli.describe` the text printed about models, :mod:`~silva.cli.demo` the
demo, and :mod:`~silva.cli.errors` the one-line error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from silva.cli.commands import COMMANDS
from silva.cli.demo import DATASETS, DEMO_ENTRIES, DemoEntry, load_dataset, run_demo
from silva.cli.describe import describe_params
from silva.cli.errors import CLIError
from silva.cli.models import (
    MAX_INTEGER_CLASSES,
    MODELS,
    TASKS,
    infer_task,
    parse_param,
    resolve_model,
)
from silva.cli.tables import BAD_CELLS, mostly_numbers, read_table

__all__ = ["DATASETS", "DEMO_ENTRIES", "MODELS", "CLIError", "DemoEntry", "build_parser",
           "describe_params", "infer_task", "load_dataset", "main", "mostly_numbers",
           "parse_param", "read_table", "resolve_model", "run_demo"]


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


PICKLE_SAVE_HELP = ("store non-silva parts of the model (e.g. the scikit-learn final "
                    "estimator of stacking) with pickle")


PICKLE_LOAD_HELP = ("load a model file that holds pickled non-silva parts; unpickling can "
                    "run code, so only for files you trust")


def _add_reading_options(parser):
    parser.add_argument(
        "--bad-cells", choices=BAD_CELLS, default="error",
        help="a CSV column of numbers (more than half of its non-empty cells) with cells "
             "that are not numbers: stop with an error naming them (error, the default), "
             "read them as missing values (missing), or read the column as text (text)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print on stderr how each column was read: its type, its "
                             "missing cells and its role")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="silva",
        description="silva: decision trees and tree ensembles on a numba engine, with the "
                    "scikit-learn API.",
        epilog="Errors exit with status 1, command-line usage errors with status 2.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    fit = sub.add_parser(
        "fit", help="fit a model on a CSV or Parquet file and save it",
        description="Fit a model on DATA (CSV or Parquet) to predict the column --target "
                    "from all the other columns, and save it to --out. Text, category and "
                    "bool columns are used as categorical features. The task is "
                    "classification when the target is not numeric or holds at most "
                    f"{MAX_INTEGER_CLASSES} distinct integers, else regression (--task "
                    "overrides). random_state defaults to 0.")
    fit.add_argument("data", metavar="DATA", help="CSV or Parquet file")
    fit.add_argument("--target", required=True, metavar="COL", help="the column to predict")
    fit.add_argument("--model", default="tree", choices=list(MODELS),
                     help="model family (default: tree)")
    fit.add_argument("--param", action="append", type=parse_param, metavar="KEY=VALUE",
                     help="estimator parameter, repeatable; the value is a Python literal "
                          "(3, 0.5, None, [0, 2]) or else a string")
    fit.add_argument("--task", choices=TASKS, help="override the inferred task")
    fit.add_argument("--out", required=True, metavar="MODEL", help="model file to write")
    fit.add_argument("--allow-pickle", action="store_true",
                     help=PICKLE_SAVE_HELP)
    _add_reading_options(fit)

    predict = sub.add_parser(
        "predict", help="predict with a saved model",
        description="Predict every row of DATA with MODEL; writes CSV (one row per input "
                    "row) to stdout or to --out (Parquet when it ends in .parquet). Columns "
                    "are matched by name; extra columns, such as the target, are ignored.")
    predict.add_argument("model", metavar="MODEL")
    predict.add_argument("data", metavar="DATA")
    predict.add_argument("--proba", action="store_true",
                         help="class probabilities (classifiers), one column per class")
    predict.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    predict.add_argument("--allow-pickle", action="store_true",
                     help=PICKLE_LOAD_HELP)
    _add_reading_options(predict)

    evaluate = sub.add_parser(
        "evaluate", help="score a saved model on labelled data",
        description="Print a table of metrics of MODEL on DATA: accuracy, balanced "
                    "accuracy, macro F1, log loss and ROC AUC (binary) for classifiers; R2, "
                    "RMSE and MAE for regressors.")
    evaluate.add_argument("model", metavar="MODEL")
    evaluate.add_argument("data", metavar="DATA")
    evaluate.add_argument("--target", metavar="COL",
                          help="the true values (default: the target the model was fitted on)")
    evaluate.add_argument("--allow-pickle", action="store_true",
                     help=PICKLE_LOAD_HELP)
    _add_reading_options(evaluate)

    show = sub.add_parser(
        "show", help="describe a saved model",
        description="Print the model's class, parameters, features, classes, tree sizes, "
                    "largest feature importances and the first levels of its (first) tree.")
    show.add_argument("model", metavar="MODEL")
    show.add_argument("--depth", type=_non_negative_int, default=2, metavar="N",
                      help="levels of the tree to print (default: 2)")
    show.add_argument("--allow-pickle", action="store_true",
                     help=PICKLE_LOAD_HELP)

    export = sub.add_parser(
        "export", help="export a saved model to ONNX or Treelite",
        description="Write MODEL as an ONNX model (silva.to_onnx: input X, float32 unless "
                    "--float64; outputs label and probabilities, or variable) or as a "
                    "Treelite model (silva.to_treelite: a Treelite checkpoint, or Treelite's "
                    "JSON dump when OUT ends in .json). Prints the input columns in order and "
                    "the codes of categorical columns.")
    export.add_argument("model", metavar="MODEL")
    export.add_argument("--to", required=True, choices=["onnx", "treelite"],
                        help="the format to write")
    export.add_argument("-o", "--output", metavar="OUT",
                        help="file to write (default: MODEL with .onnx or .treelite)")
    export.add_argument("--float64", action="store_true",
                        help="ONNX: a float64 input and thresholds (default float32)")
    export.add_argument("--allow-pickle", action="store_true", help=PICKLE_LOAD_HELP)

    compile_ = sub.add_parser(
        "compile", help="compile silva's kernels ahead of time (for images, CI, labs)",
        description="Fit each chosen estimator on a few rows in parallel worker processes, "
                    "so that numba's on-disk cache holds its compiled kernels and later "
                    "first fits on this machine start at once (see silva.compile).")
    compile_.add_argument("estimators", nargs="*", metavar="ESTIMATOR",
                          help="estimator class names (default: all of them)")
    compile_.add_argument("--jobs", type=_non_negative_int, metavar="N",
                          help="worker processes (default: the number of CPUs)")

    demo = sub.add_parser(
        "demo",
        help="train silva's models on datasets shipped with scikit-learn and print a summary",
        description=(
            "Fit silva's estimators on breast_cancer, digits and diabetes (fixed 75/25 "
            "split, random_state=0), print test scores, fit times and tree sizes, then "
            "print the top of one fitted tree."
        ),
    )
    demo.add_argument(
        "--max-depth-shown",
        type=_non_negative_int,
        default=3,
        metavar="N",
        help="depth of the printed tree; deeper branches are truncated (default: 3)",
    )
    demo.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="do not fit each estimator once before timing (times then include JIT compile)",
    )
    demo.add_argument("--plots", metavar="DIR",
                      help="also write PNG plots (importances, trees, learning curves, "
                           "decision boundaries) into DIR; needs matplotlib")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``silva`` command line; returns the process exit code."""
    args = build_parser().parse_args(argv)
    out = sys.stdout
    try:
        if args.command == "demo":
            run_demo(max_depth_shown=args.max_depth_shown, warm_up=args.warm_up,
                     plots_dir=args.plots)
            return 0
        return COMMANDS[args.command](args, out)
    except CLIError as error:
        print(f"silva {args.command}: error: {error}", file=sys.stderr)
        return 1
    except ImportError as error:  # an optional dependency (matplotlib, pyarrow)
        print(f"silva {args.command}: error: {error}", file=sys.stderr)
        return 1
    except (ValueError, TypeError) as error:
        # silva and scikit-learn report bad input this way; a user of the command line
        # gets the message, not a traceback (its first line: the rest is detail).
        message = str(error).strip().splitlines()[0] if str(error).strip() else \
            type(error).__name__
        print(f"silva {args.command}: error: {message}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (``silva predict ... | head``): stop quietly, as Unix tools
        # do, and keep Python from complaining again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
