"""Input checks shared by every estimator: X (arrays and data frames), y, sample weights,
categorical features, and parameter values.

Every check raises a ``ValueError`` (``TypeError`` for a wrong type) whose message names
the parameter, the column or the value at fault, so that no bad input reaches compiled code.
"""

import numbers
import warnings

import numpy as np
from sklearn.exceptions import DataConversionWarning
from sklearn.utils import check_random_state, compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from silva.engine.random import seed_from_random_state, seeded_random_state
from silva.engine.sparse import is_sparse

# The range of total sample weight accepted (see check_sample_weight): the engine squares
# sums of weights, and twoing multiplies four (1e50**4 is far below float64's 1.8e308);
# products of tiny sums underflow to zero, which twoing and the chi-square test divide by.
MAX_TOTAL_WEIGHT = 1e50
MIN_TOTAL_WEIGHT = 1e-50

# ------------------------------------------------------------------- data frames
#
# pandas, polars and pyarrow tables are accepted everywhere. polars and pyarrow are
# converted to pandas at the boundary (so that one code path encodes categories and
# sklearn's ``validate_data`` records ``feature_names_in_``); neither library is imported
# unless the caller passed one of its objects, so neither is a dependency of silva.


def _module_root(X):
    return type(X).__module__.split(".", 1)[0]


def _is_pandas(X):
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def _is_polars(X):
    return _module_root(X) == "polars" and hasattr(X, "columns") and hasattr(X, "get_column")


def _is_arrow(X):
    return (_module_root(X) == "pyarrow" and hasattr(X, "column_names")
            and hasattr(X, "to_pandas"))


def _is_dataframe(X):
    """True for a pandas or polars DataFrame and a pyarrow Table or RecordBatch."""
    return _is_pandas(X) or _is_polars(X) or _is_arrow(X)


def frame_column_names(X):
    """Column names of a data frame or table, as a list (None for other inputs)."""
    if _is_arrow(X):
        return list(X.column_names)
    if _is_pandas(X) or _is_polars(X):
        return list(X.columns)
    return None


def _require_pandas(kind):
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is in the dev and frames extras
        raise ImportError(f"silva reads {kind} tables through pandas, which is not "
                          "installed: pip install silva[frames]") from None
    return pd


def _polars_to_pandas(frame):
    """A pandas frame with the same columns; polars Categorical and Enum columns become
    pandas categories (an Enum keeps its category order, a Categorical is ordered by its
    sorted values), String columns object columns, nulls NaN/None."""
    pd = _require_pandas("polars")
    import polars as pl

    columns = {}
    for name in frame.columns:
        series = frame.get_column(name)
        dtype = series.dtype
        if isinstance(dtype, pl.Enum):
            columns[name] = pd.Categorical(series.cast(pl.String).to_list(),
                                           categories=list(dtype.categories))
        elif dtype == pl.Categorical:
            values = series.cast(pl.String).to_list()
            present = sorted({v for v in values if v is not None})
            columns[name] = pd.Categorical(values, categories=present)
        elif dtype == pl.String:
            columns[name] = np.array(series.to_list(), dtype=object)
        else:
            # Numeric nulls become NaN; a Boolean column with nulls becomes an object
            # column of True/False/None, which "auto" still treats as categorical.
            columns[name] = series.to_numpy()
    return pd.DataFrame(columns, index=pd.RangeIndex(frame.height))


def as_pandas_or_array(X):
    """Convert a polars DataFrame or a pyarrow Table/RecordBatch to a pandas DataFrame;
    return anything else unchanged. Estimators call this once at the boundary; every
    other function here accepts all three kinds of frames anyway."""
    if _is_polars(X):
        return _polars_to_pandas(X)
    if _is_arrow(X):
        return _arrow_to_pandas(X)
    return X


def _arrow_to_pandas(table):
    """A pandas frame of a pyarrow Table or RecordBatch. Dictionary columns become pandas
    categories: an ordered dictionary keeps its order, an unordered one (whose order is
    usually that of first appearance) is ordered by sorted values, as polars Categorical
    and text columns are, so that the same data encodes the same way in every library."""
    _require_pandas("pyarrow")
    import pyarrow as pa

    frame = table.to_pandas()
    for field in table.schema:
        if pa.types.is_dictionary(field.type) and not field.type.ordered:
            column = frame[field.name]
            try:
                order = sorted(column.cat.categories)
            except TypeError:  # mixed types: keep the dictionary's order
                continue
            frame[field.name] = column.cat.reorder_categories(order)
    return frame


def _auto_categorical_columns(X):
    """Columns of a frame whose dtype is category, object, string or bool."""
    import pandas as pd

    X = as_pandas_or_array(X)
    return np.array([
        isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
        or pd.api.types.is_bool_dtype(dtype)
        for dtype in X.dtypes
    ], dtype=bool)


def check_frame_columns(expected, X):
    """Raise a ValueError naming the columns when frame ``X`` does not have exactly the
    columns ``expected`` (the names seen at fit), in the same order.

    Columns are matched by position in the compiled code, so a frame whose columns are
    reordered, missing or extra would silently mix features up."""
    if expected is None or not _is_dataframe(X):
        return
    expected = [str(name) for name in expected]
    got = [str(name) for name in frame_column_names(X)]
    if got == expected:
        return
    missing = [name for name in expected if name not in got]
    extra = [name for name in got if name not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing columns seen at fit: {missing}")
        if extra:
            parts.append(f"columns not seen at fit: {extra}")
        raise ValueError("X does not have the columns the model was fitted on: "
                         + "; ".join(parts) + ". Select the fit columns, e.g. "
                         "X[model.feature_names_in_].")
    moved = [name for name, want in zip(got, expected, strict=True) if name != want]
    raise ValueError(f"X has the fit columns in another order (columns {moved} moved); "
                     f"expected the order {expected}. Reorder them, e.g. "
                     "X[model.feature_names_in_].")


def resolve_categorical_features(categorical_features, X, n_features, feature_names):
    """Boolean mask of the categorical features.

    ``categorical_features`` is None (none), ``"auto"`` (category, object, string and
    bool columns of a pandas, polars or pyarrow frame), a boolean mask, integer indices,
    or column names.
    """
    if _is_dataframe(X):
        feature_names = frame_column_names(X)
    if categorical_features is None:
        return np.zeros(n_features, dtype=bool)
    if isinstance(categorical_features, str):
        if categorical_features != "auto":
            raise ValueError(
                "categorical_features must be None, 'auto', a boolean mask, indices or "
                f"column names; got the string {categorical_features!r}."
            )
        if _is_dataframe(X):
            return _auto_categorical_columns(X)
        return np.zeros(n_features, dtype=bool)
    values = np.asarray(categorical_features)
    if values.size == 0:
        return np.zeros(n_features, dtype=bool)
    if values.dtype.kind == "b":
        if values.shape != (n_features,):
            raise ValueError(
                f"categorical_features as a boolean mask must have {n_features} entries, "
                f"one per feature; got shape {values.shape}."
            )
        return values.astype(bool)
    mask = np.zeros(n_features, dtype=bool)
    if values.dtype.kind in "iu":
        for index in values.ravel():
            if not 0 <= index < n_features:
                raise ValueError(
                    f"categorical_features index {index} is out of range for "
                    f"{n_features} features."
                )
            mask[index] = True
        return mask
    if values.dtype.kind in "OU":
        if feature_names is None:
            raise ValueError(
                "categorical_features names columns, but X has no column names; pass a "
                "pandas DataFrame or give indices or a boolean mask."
            )
        names = list(feature_names)
        for name in values.ravel():
            if name not in names:
                raise ValueError(f"categorical_features names {str(name)!r}, which is not a "
                                 f"column of X.")
            mask[names.index(name)] = True
        return mask
    raise ValueError(
        "categorical_features must be None, 'auto', a boolean mask, indices or column "
        f"names; got an array of dtype {values.dtype}."
    )


class CategoryEncoder:
    """Turns the categorical columns of a data frame into category codes (floats, NaN
    for missing) with the categories learned at fit; values unseen at fit become NaN and
    so follow each split's missing-value direction.

    Attributes
    ----------
    categories_ : dict of int to ndarray
        Column position to its categories; code ``i`` is ``categories_[j][i]``. A pandas
        category column keeps its own category order, any other column (object, string,
        bool; polars and pyarrow columns after conversion) is ordered by sorted values.
    columns_ : list of str or None
        Column names seen at fit; :meth:`transform` refuses a frame whose columns differ.
    """

    def fit(self, X, mask):
        import pandas as pd

        X = as_pandas_or_array(X)
        self.columns_ = [str(name) for name in X.columns]
        self.categories_ = {}
        for j in np.flatnonzero(mask):
            column = X.iloc[:, j]
            if isinstance(column.dtype, pd.CategoricalDtype):
                categories = np.asarray(column.cat.categories)
            else:
                categories = np.sort(pd.unique(column.dropna()).astype(object))
            self.categories_[int(j)] = categories
        return self

    def transform(self, X):
        import pandas as pd

        X = as_pandas_or_array(X)
        if not self.categories_:
            return X
        # Encoding is by position: check names first so that reordered columns cannot
        # have one column's categories applied to another.
        check_frame_columns(getattr(self, "columns_", None), X)
        encoded = X.copy()
        for j, categories in self.categories_.items():
            # -1 for missing values and for values not among the fit categories.
            codes = pd.Index(categories).get_indexer(np.asarray(X.iloc[:, j], dtype=object))
            encoded[encoded.columns[j]] = np.where(codes < 0, np.nan, codes).astype(float)
        return encoded


def ready_to_predict(estimator, X, *, allow_nan=True):
    """True when ``X`` is already what a fitted ``estimator`` predicts from.

    That is a non-empty two-dimensional C-contiguous float64 numpy array with the fit's
    number of columns, no infinity (nor NaN unless ``allow_nan``), for an estimator fitted
    without feature names. scikit-learn's ``validate_data`` would return such an ``X``
    unchanged, but spends about 50 us finding that out, which was most of a one-row
    prediction (a tree's, and each member's of a bagging or AdaBoost ensemble). Any other
    input goes through ``validate_data``, which converts it or raises its usual errors.
    """
    if not (type(X) is np.ndarray and X.ndim == 2 and X.dtype == np.float64
            and X.flags.c_contiguous and X.shape[0] > 0
            and X.shape[1] == getattr(estimator, "n_features_in_", -1)
            and not hasattr(estimator, "feature_names_in_")):
        return False
    # One pass in the common case: a finite sum rules out both NaN and infinity.
    if np.isfinite(X.sum()):
        return True
    return allow_nan and not np.isinf(X).any()


def _ready_to_fit(X, allow_infinite):
    """True when ``validate_data`` would hand ``X`` back unchanged at fit: a non-empty
    two-dimensional C-contiguous float64 numpy array without infinity (unless
    ``allow_infinite``). Checking that here costs a sum over X; ``validate_data`` spent
    about 0.1 ms on it, a tenth of a small tree's fit. Any other input goes through
    ``validate_data``, which converts it or raises its usual errors."""
    if not (type(X) is np.ndarray and X.ndim == 2 and X.dtype == np.float64
            and X.flags.c_contiguous and X.shape[0] > 0 and X.shape[1] > 0):
        return False
    return allow_infinite or np.isfinite(X.sum()) or not np.isinf(X).any()


# Sparse formats kept as they are; any other two-dimensional scipy.sparse format (COO,
# LIL, DOK, DIA, BSR) is converted to CSR once, as scikit-learn does.
SPARSE_FORMATS = ("csr", "csc")


def validate_sparse_X(estimator, X, *, reset):
    """A ``scipy.sparse`` X as a canonical float64 CSR or CSC matrix or array (the
    caller's kind, matrix or array, and format kept, other formats converted to CSR;
    sorted indices, no duplicate entries: duplicates are summed, as ``X.toarray()``
    sums them).

    Implicit zeros are 0.0 and stored NaN is missing (see :mod:`silva.engine.sparse`).
    Clear errors naming the estimator, before any compiled code sees X: a sparse array
    that is not two-dimensional or not numeric (TypeError), stored infinity, and index
    arrays that do not describe the matrix's shape (negative, out of range, overflowed).
    """
    name = type(estimator).__name__
    fmt = getattr(X, "format", None)
    ndim = getattr(X, "ndim", 2)
    if ndim != 2 or fmt is None or not hasattr(X, "tocsr"):
        raise TypeError(
            f"{name} takes a two-dimensional scipy.sparse matrix or array (CSR or CSC best; "
            f"other formats are converted to CSR); got a {type(X).__name__} with "
            f"{ndim} dimension(s) in format {fmt!r}.")
    if np.dtype(X.dtype).kind not in "biuf":
        raise TypeError(f"{name} takes numeric sparse X; got dtype {X.dtype}.")
    if fmt not in SPARSE_FORMATS:
        X = X.tocsr()
    try:
        X.check_format(full_check=True)
    except (ValueError, OverflowError) as error:
        raise ValueError(f"{name}: sparse X is malformed ({error}); its index arrays "
                         f"must address a matrix of shape {X.shape}.") from None
    if X.data.size and np.isinf(X.data).any():
        raise ValueError(f"Input X contains infinity: {name} takes NaN as missing in sparse "
                         "X, but not infinity (stored at "
                         f"{int(np.isinf(X.data).sum())} entries).")
    X = validate_data(estimator, X, reset=reset, accept_sparse=SPARSE_FORMATS,
                      dtype=np.float64, ensure_all_finite="allow-nan")
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def validate_X(estimator, X, *, reset, allow_infinite=False):
    """Float64 C-contiguous X, NaN allowed (missing), infinity rejected unless
    ``allow_infinite`` (a meta-estimator whose members validate their own input).

    Frames of pandas, polars or pyarrow are accepted (their column names become
    ``feature_names_in_``); at predict time a frame must have the fit columns in the fit
    order, else a ValueError names the missing, extra or moved columns. A
    ``scipy.sparse`` X stays sparse (:func:`validate_sparse_X`).
    """
    if not reset and ready_to_predict(estimator, X):
        return X
    if reset and _ready_to_fit(X, allow_infinite):
        # What validate_data records at fit for an array without column names.
        estimator.n_features_in_ = X.shape[1]
        estimator.__dict__.pop("feature_names_in_", None)
        return X
    if is_sparse(X):
        return validate_sparse_X(estimator, X, reset=reset)
    X = as_pandas_or_array(X)
    if not reset:
        check_frame_columns(getattr(estimator, "feature_names_in_", None), X)
    return validate_data(
        estimator, X, reset=reset, dtype=np.float64, order="C",
        ensure_all_finite=False if allow_infinite else "allow-nan",
    )


def prepare_X(estimator, X, *, reset, categorical_features=None, allow_infinite=False):
    """Validated float64 X for ``estimator``, categorical frame columns encoded.

    The one call an estimator needs at fit (``reset=True``) and predict (``reset=False``):
    converts polars/pyarrow input, resolves ``categorical_features`` (stored as
    ``estimator.is_categorical_``), fits or applies a :class:`CategoryEncoder` (stored as
    ``estimator._encoder``; None when there is nothing to encode) and records or checks
    ``n_features_in_`` and ``feature_names_in_``. ``allow_infinite``: see
    :func:`validate_X`.
    """
    X = as_pandas_or_array(X)
    if not reset:
        encoder = getattr(estimator, "_encoder", None)
        if encoder is not None and _is_dataframe(X):
            X = encoder.transform(X)
        return validate_X(estimator, X, reset=False, allow_infinite=allow_infinite)
    names = frame_column_names(X)
    n_features = X.shape[1] if hasattr(X, "shape") and len(X.shape) == 2 else None
    mask = None
    if n_features is not None:
        mask = resolve_categorical_features(categorical_features, X, n_features, names)
    estimator._encoder = None
    if _is_dataframe(X) and mask is not None and mask.any():
        estimator._encoder = CategoryEncoder().fit(X, mask)
        X = estimator._encoder.transform(X)
    X = validate_X(estimator, X, reset=True, allow_infinite=allow_infinite)
    if mask is None:
        mask = resolve_categorical_features(categorical_features, X, X.shape[1], names)
    estimator.is_categorical_ = mask
    return X


def has_missing(X):
    """True when X (dense or sparse) holds a NaN."""
    values = X.data if is_sparse(X) else X
    return bool(np.isnan(values).any())


def check_categorical_codes(X, mask, max_bins, feature_names):
    """Categorical columns of numeric X must hold integer codes in [0, max_bins)."""
    for j in np.flatnonzero(mask):
        # A sparse column's implicit zeros are the valid code 0: its stored values suffice.
        column = X[:, [j]].tocsc().data if is_sparse(X) else X[:, j]
        present = column[~np.isnan(column)]
        bad = (present < 0) | (present >= max_bins) | (present != np.floor(present))
        if bad.any():
            name = feature_names[j] if feature_names is not None else f"feature {j}"
            raise ValueError(
                f"categorical column {name!r} holds the value {float(present[bad][0])!r}: "
                f"categorical features must be integer codes in [0, max_bins={max_bins}) "
                f"(or NaN for missing). Pass a pandas category column to have silva "
                f"encode it, or raise max_bins."
            )


# ----------------------------------------------------------------------- targets
#
# One set of y checks for every estimator, so that the same bad y gets the same message
# from a tree, a forest, a boosted model or an ensemble.


class SparseTargetError(TypeError, ValueError):
    """A sparse y. Both a TypeError (the wrong kind of object, as scikit-learn's trees
    raise) and a ValueError (as its forests raise), so that code written for either
    catches it."""


def refuse_sparse_target(estimator, y):
    """A sparse y is refused with :class:`SparseTargetError` (scikit-learn's first
    sentence)."""
    if is_sparse(y):
        raise SparseTargetError(
            f"sparse multilabel-indicator for y is not supported: {type(estimator).__name__} "
            "takes y as a dense array (sparse X is fine); pass y.toarray().")


def target_1d(estimator, y, n_samples, *, stacklevel=3):
    """``y`` as a one-dimensional array of ``n_samples`` entries.

    None is refused (scikit-learn's ``check_requires_y_none`` message); a column vector
    is raveled with a ``DataConversionWarning`` (``stacklevel`` 3 points at the caller
    of the function that calls this one); any other shape, or another length than X's,
    is a ValueError that gives the expected and the actual shape.
    """
    if y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target "
                         "y is None.")
    refuse_sparse_target(estimator, y)
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; it is "
                      "used as y.ravel().", DataConversionWarning, stacklevel=stacklevel)
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y must have shape ({n_samples},), one-dimensional (one target); "
                         f"got shape {y.shape}. Multi-output models are not supported.")
    if y.shape[0] != n_samples:
        raise ValueError(f"y must have shape ({n_samples},), one label per row of X: X has "
                         f"{n_samples} samples but y has {y.shape[0]}.")
    return y


def _missing_labels(y):
    """Boolean mask of the missing entries of an object or string y: None, NaN, pandas'
    NA and NaT."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is in the dev and frames extras
        return np.array([v is None or (isinstance(v, float | np.floating) and np.isnan(v))
                         for v in y], dtype=bool)
    return np.asarray(pd.isna(y), dtype=bool)


def _integer_labels(y, classes):
    """True when the one-dimensional labels ``y``, of sorted distinct values ``classes``,
    are numbers that are all integers (finite, as checked before): scikit-learn's
    ``type_of_target`` then says "binary" or "multiclass", which
    ``check_classification_targets`` accepts. It takes 120-160 us to find that out (two
    ``check_array`` calls and a cached ``unique``), a third of a tree's fit on wine, so
    only other labels (strings, objects, floats with a fraction) go through it. Its test
    for a fraction is the same as here: a value that casting to int64 changes."""
    if y.dtype.kind in "biu":
        return True
    if y.dtype.kind != "f":
        return False
    with np.errstate(invalid="ignore"):  # a huge value's cast; it then differs
        return bool(np.all(classes == classes.astype(np.int64)))


def classification_target(y):
    """``(classes, codes)`` of class labels ``y`` (one-dimensional, see :func:`target_1d`):
    the sorted distinct labels and each sample's index into them (int64).

    A missing label (NaN, None, pandas NA) or an infinite one is a ValueError that counts
    them and gives the first index; labels of types that cannot be ordered together
    (numbers and strings) are a ValueError naming the types; continuous targets get
    scikit-learn's "Unknown label type" error.
    """
    if y.dtype.kind == "f" or y.dtype.kind == "c":
        bad = ~np.isfinite(y)
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"y contains NaN or infinity: {int(bad.sum())} of {y.shape[0]} labels are "
                f"missing or infinite, the first at index {first} (y[{first}] = "
                f"{y[first]}); every sample needs a class label.")
    elif y.dtype.kind == "O":
        missing = _missing_labels(y)
        if missing.any():
            first = int(np.flatnonzero(missing)[0])
            raise ValueError(
                f"y has missing values: {int(missing.sum())} of {y.shape[0]} labels are "
                f"NaN or None, the first at index {first} (y[{first}] = {y[first]!r}); "
                "every sample needs a class label. Drop those rows or fill in their "
                "labels.")
    try:
        classes = np.unique(y)
    except TypeError:
        kinds = sorted({type(v).__name__ for v in y.ravel()})
        raise ValueError(f"y mixes labels of types that cannot be ordered together "
                         f"({', '.join(kinds)}); give every label the same type, e.g. "
                         "all strings.") from None
    if not _integer_labels(y, classes):
        check_classification_targets(y)
    # The sorted distinct labels and a binary search give np.unique's inverse in a
    # fraction of its time (it sorts all of y a second time).
    codes = np.searchsorted(classes, y)
    return classes, codes.astype(np.int64)


def regression_target(y):
    """``y`` as float64 for a regressor; a clear error when it is not numeric or holds
    NaN or infinity (naming the first such sample)."""
    try:
        y = y.astype(np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"y must be numeric for regression: {error}") from None
    if not np.all(np.isfinite(y)):
        bad = np.flatnonzero(~np.isfinite(y))[0]
        raise ValueError(f"y contains NaN or infinity (first at sample {bad}: {y[bad]}).")
    return y


def check_target_scale(y, sample_weight):
    """Refuse a regression target whose weighted moments overflow float64.

    Split scores and Newton gains square sums of ``w (y - c)`` over a node (``c`` the
    weighted mean of y): the variance proxy ``(sum w y)^2 / w``,
    boosting's ``G^2 / (H + lambda)``. When ``(sum w |y - c|)^2`` or ``sum w (y - c)^2``
    is not finite, every candidate scores inf or NaN and the model silently stays a
    constant, so this is a ValueError that says the target is too large.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        total = sample_weight.sum()
        centre_value = float(np.sum(sample_weight * y) / total)
        deviation = np.abs(y - centre_value)
        first = float(np.sum(sample_weight * deviation))
        second = float(np.sum(sample_weight * deviation * deviation))
        ok = np.isfinite(centre_value) and np.isfinite(first * first) and np.isfinite(second)
    if not ok:
        largest = float(np.max(np.abs(y)))
        raise ValueError(
            f"y is too large for float64 arithmetic: |y| reaches {largest:.3g}, and the "
            "weighted sums of squared deviations that split scores use overflow (with "
            f"these sample weights, totalling {total:.3g}). Rescale y (e.g. divide it by "
            f"{10.0 ** np.floor(np.log10(largest)):.0e}) and scale the predictions back.")


def numeric_or_none(values):
    """``values`` as a float64 array, or None when they are not numbers (to check their
    content before their shape is validated)."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        return None


def check_sample_weight(sample_weight, n_samples):
    """Validated float64 sample weights (ones when None).

    Weights must be finite and non-negative, not all zero, and sum to at most
    :data:`MAX_TOTAL_WEIGHT`: the engine squares sums of weights (Gini, variance, Newton
    gains) and twoing multiplies four, so larger totals overflow float64 and leave every
    split scored inf (a constant model). Totals below :data:`MIN_TOTAL_WEIGHT` are
    refused too: products of such sums underflow to zero, and twoing and the chi-square
    test of ``min_significance`` divide by them. Weights are refused, not rescaled, because
    several parameters are in units of weight (``min_child_weight``, C4.5's
    ``min_samples_leaf``, the chi-square counts of ``min_significance``): a silent
    rescaling would change what they mean.
    """
    if sample_weight is None:
        return np.ones(n_samples)
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(n_samples, float(sample_weight))
    try:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"sample_weight must be numeric: {error}") from None
    if sample_weight.ndim == 0:
        # A TypeError whose first sentence is scikit-learn's, so that code matching it
        # keeps working: a 0-d array is not a Python number, which is broadcast above.
        raise TypeError(
            "Input should have at least 1 dimension i.e. satisfy `len(x.shape) > 0`, got "
            f"scalar `{sample_weight!r}` instead. sample_weight must be a number or an "
            f"array of shape ({n_samples},)."
        )
    if sample_weight.ndim != 1 or sample_weight.shape[0] != n_samples:
        # scikit-learn's "sample_weight.shape == (1,), expected (6,)" kept inside.
        raise ValueError(
            f"sample_weight must have shape ({n_samples},), one weight per sample; got "
            f"shape {sample_weight.shape} (sample_weight.shape == {sample_weight.shape}, "
            f"expected ({n_samples},))."
        )
    if not np.all(np.isfinite(sample_weight)):
        raise ValueError("sample_weight contains NaN or infinity.")
    if np.any(sample_weight < 0):
        raise ValueError(
            f"sample_weight must be non-negative; sample {np.argmax(sample_weight < 0)} "
            f"has weight {sample_weight[sample_weight < 0][0]} (Negative values in data "
            "passed to `sample_weight`, in scikit-learn's words)."
        )
    with np.errstate(over="ignore"):
        total = sample_weight.sum()
    if total <= 0:
        raise ValueError("sample_weight sums to zero: at least one sample needs a "
                         "positive weight.")
    if not total <= MAX_TOTAL_WEIGHT:
        shown = "more than the largest float64 (overflow)" if np.isinf(total) \
            else f"{total:.3g}"
        raise ValueError(
            f"sample_weight sums to {shown}; silva needs a total of at most "
            f"{MAX_TOTAL_WEIGHT:.0e}, because split scores square sums of weights. "
            "Rescale the weights (e.g. divide them by their largest value).")
    if total < MIN_TOTAL_WEIGHT:
        raise ValueError(
            f"sample_weight sums to {total:.3g}; silva needs a total of at least "
            f"{MIN_TOTAL_WEIGHT:.0e}, because split scores multiply sums of weights, which "
            "underflow to zero. Rescale the weights (e.g. divide them by their largest "
            "value).")
    return sample_weight


# ------------------------------------------------------------------ class weights


def class_weight_per_sample(class_weight, y, classes, *, options=("balanced",)):
    """Per-sample factors of ``class_weight`` for labels ``y`` (original labels, whose
    sorted distinct values are ``classes``); None gives None (no factor).

    ``class_weight`` is None, one of ``options`` ("balanced", and for forests
    "balanced_subsample", which the caller applies per tree and so gets None here
    unless it passes it on), or a dict from class label to weight. A dict's weights must
    be finite and non-negative numbers and not all zero on the classes of y; a class
    it leaves out weighs 1. Keys that are not classes of y are an error when some class
    is left out (a misspelt label, most likely), and ignored when every class has its
    weight, as in scikit-learn's ``compute_class_weight``. Dict keys are matched as
    scikit-learn matches them (an integer label by ``int``, any other by ``str``).
    """
    if class_weight is None:
        return None
    if isinstance(class_weight, str):
        if class_weight not in options:
            raise ValueError(f"class_weight must be None, a dict or one of "
                             f"{sorted(options)}; got {class_weight!r}.")
        return compute_sample_weight("balanced", y)
    if not isinstance(class_weight, dict):
        raise TypeError(f"class_weight must be None, a dict or one of {sorted(options)}; "
                        f"got {type(class_weight).__name__} {class_weight!r}.")
    for label, weight in class_weight.items():
        if isinstance(weight, bool | np.bool_) or not isinstance(weight, numbers.Real):
            raise TypeError(f"class_weight[{label!r}] must be a number; got {weight!r}.")
        if not np.isfinite(weight) or weight < 0:
            raise ValueError(f"class_weight[{label!r}] must be a finite number >= 0; got "
                             f"{weight!r}.")
    weights = np.ones(len(classes))
    unweighted = []
    used = 0
    for i, label in enumerate(classes):
        key = _label_key(label)
        if key in class_weight:
            weights[i] = float(class_weight[key])
            used += 1
        else:
            unweighted.append(label.item() if isinstance(label, np.generic) else label)
    if unweighted and used != len(class_weight):
        keys = {_label_key(label) for label in classes}
        unknown = [k for k in class_weight if k not in keys]
        raise ValueError(f"class_weight has the labels {unknown}, which are not classes of "
                         f"y, and no weight for the classes {unweighted}; its keys must be "
                         f"labels of y (the classes are {classes.tolist()}).")
    if not np.any(weights > 0):
        raise ValueError(f"class_weight gives every class of y weight zero "
                         f"({dict(zip(classes.tolist(), weights.tolist(), strict=True))}); "
                         "at least one class needs a positive weight.")
    return weights[np.searchsorted(classes, y)]


def _label_key(label):
    """The key a class_weight dict gives ``label`` (scikit-learn's rule: ``int`` when the
    label converts, else ``str``)."""
    try:
        return int(label)
    except (TypeError, ValueError):
        return str(label)


def apply_class_weight(sample_weight, factors):
    """``sample_weight`` times the class-weight ``factors`` (None: unchanged), checked
    again: a class weight may zero every weighted sample, or push the total out of
    [:data:`MIN_TOTAL_WEIGHT`, :data:`MAX_TOTAL_WEIGHT`]."""
    if factors is None:
        return sample_weight
    combined = sample_weight * factors
    with np.errstate(over="ignore"):
        total = combined.sum()
    if not total > 0:
        raise ValueError("sample_weight times class_weight is zero for every sample: the "
                         "classes with positive class_weight have no sample of positive "
                         "weight.")
    if not MIN_TOTAL_WEIGHT <= total <= MAX_TOTAL_WEIGHT:
        raise ValueError(f"sample_weight times class_weight sums to {total:.3g}, outside "
                         f"[{MIN_TOTAL_WEIGHT:.0e}, {MAX_TOTAL_WEIGHT:.0e}] (split scores "
                         "multiply sums of weights); rescale class_weight.")
    return combined


def check_int(value, name, low, *, allow_none=False):
    """``value`` is an int >= low (or None when allowed); returns it."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int >= {low}" + (" or None" if allow_none else "")
                        + f"; got {value!r}.")
    if value < low:
        raise ValueError(f"{name} must be >= {low}; got {value}.")
    return int(value)


def check_count_or_fraction(value, name, int_low, *, fraction_low_open=True):
    """An int >= int_low, or a float fraction in (0, 1] (of the samples)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_):
        if value < int_low:
            raise ValueError(f"{name} must be an int >= {int_low} or a float in (0, 1]; "
                             f"got {value} (in scikit-learn's words: the '{name}' parameter "
                             f"must be an int in the range [{int_low}, inf) or a float in "
                             "the range (0.0, 1.0]).")
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
        if not 0.0 < value <= 1.0:
            raise ValueError(f"{name} as a fraction must be in (0, 1]; got {value}.")
        return float(value)
    raise TypeError(f"{name} must be an int or a float; got {value!r}.")


def check_float(value, name, low, high=np.inf, *, low_inclusive=True, allow_inf=False):
    """``value`` as a finite float in [low, high] (``(low, high]`` unless
    ``low_inclusive``); NaN is refused, and so is infinity even when ``high`` is
    infinite, because most parameters mean nothing there (a learning rate of inf
    predicts NaN). ``allow_inf`` admits +inf for the few that do (``ccp_alpha=inf``
    prunes a tree to its root, as in scikit-learn)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a float; got {value!r}.")
    value = float(value)
    if not (np.isfinite(value) or (allow_inf and value == np.inf)):
        raise ValueError(f"{name} must be a finite number; got {value}.")
    ok_low = value >= low if low_inclusive else value > low
    if not (ok_low and value <= high):
        bracket = "[" if low_inclusive else "("
        raise ValueError(f"{name} must be in {bracket}{low}, {high}]; got {value}.")
    return value


def check_option(value, name, options):
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {sorted(options)}; got {value!r}.")
    return value


def criterion_code(criterion, codes):
    """The code of ``criterion`` in ``codes`` (a dict from names to engine codes)."""
    return codes[check_option(criterion, "criterion", codes)]


def check_significance_level(min_significance):
    """The CHAID-style significance level of a CART tree: a float in (0, 1], or 1.0 (no
    test) for None."""
    if min_significance is None:
        return 1.0
    return check_float(min_significance, "min_significance", 0.0, 1.0, low_inclusive=False)


def check_same_classes(estimator, classes):
    """Refuse a warm-start fit whose classes differ from those of the previous fit."""
    if (estimator.warm_start and hasattr(estimator, "classes_")
            and not np.array_equal(classes, estimator.classes_)):
        raise ValueError("warm_start=True needs the same classes as the previous fit.")


def resolve_max_features(max_features, n_features):
    """Number of features to draw per node from scikit-learn's ``max_features`` forms."""
    if max_features is None:
        return n_features
    if isinstance(max_features, str):
        check_option(max_features, "max_features", {"sqrt", "log2"})
        if max_features == "sqrt":
            return max(1, int(np.sqrt(n_features)))
        return max(1, int(np.log2(n_features)))
    if isinstance(max_features, numbers.Integral) and not isinstance(max_features, bool):
        if not 1 <= max_features <= n_features:
            raise ValueError(f"max_features must be in [1, n_features={n_features}] as an "
                             f"int; got {max_features}.")
        return int(max_features)
    if isinstance(max_features, numbers.Real) and not isinstance(max_features, bool):
        if not 0.0 < max_features <= 1.0:
            raise ValueError(f"max_features as a fraction must be in (0, 1]; got "
                             f"{max_features}.")
        return max(1, int(max_features * n_features))
    raise TypeError(f"max_features must be None, 'sqrt', 'log2', an int or a float; got "
                    f"{max_features!r}.")


def seed_from_param(random_state):
    """The engine seed that ``seed_from_random_state(check_random_state(random_state))``
    gives, for an estimator's ``random_state`` parameter; an integer's without building a
    new ``RandomState`` (:func:`~silva.engine.random.seeded_random_state`)."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return seed_from_random_state(seeded_random_state(random_state))
    return seed_from_random_state(check_random_state(random_state))
