"""Input checks shared by every estimator: X (arrays and data frames), y, sample weights,
categorical features, and parameter values.

Every check raises a ``ValueError`` (``TypeError`` for a wrong type) whose message names
the parameter, the column or the value at fault, so that no bad input reaches compiled code.
"""

import numbers

import numpy as np
from sklearn.utils.validation import validate_data


def _is_dataframe(X):
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def _auto_categorical_columns(X):
    """Columns of a pandas frame whose dtype is category, object, string or bool."""
    import pandas as pd

    return np.array([
        isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
        or pd.api.types.is_bool_dtype(dtype)
        for dtype in X.dtypes
    ], dtype=bool)


def resolve_categorical_features(categorical_features, X, n_features, feature_names):
    """Boolean mask of the categorical features.

    ``categorical_features`` is None (none), ``"auto"`` (pandas category, object, string
    and bool columns), a boolean mask, integer indices, or column names.
    """
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
    so follow each split's missing-value direction."""

    def fit(self, X, mask):
        import pandas as pd

        self.categories_ = {}
        for j in np.flatnonzero(mask):
            column = X.iloc[:, j]
            if isinstance(column.dtype, pd.CategoricalDtype):
                categories = np.asarray(column.cat.categories)
            else:
                categories = np.sort(pd.unique(column.dropna()).astype(object))
            self.categories_[j] = categories
        return self

    def transform(self, X):
        import pandas as pd

        if not self.categories_:
            return X
        encoded = X.copy()
        for j, categories in self.categories_.items():
            # -1 for missing values and for values not among the fit categories.
            codes = pd.Index(categories).get_indexer(np.asarray(X.iloc[:, j], dtype=object))
            encoded[encoded.columns[j]] = np.where(codes < 0, np.nan, codes).astype(float)
        return encoded


def validate_X(estimator, X, *, reset):
    """Float64 C-contiguous X, NaN allowed (missing), infinity rejected."""
    return validate_data(
        estimator, X, reset=reset, dtype=np.float64, order="C",
        ensure_all_finite="allow-nan",
    )


def check_categorical_codes(X, mask, max_bins, feature_names):
    """Categorical columns of numeric X must hold integer codes in [0, max_bins)."""
    for j in np.flatnonzero(mask):
        column = X[:, j]
        present = column[~np.isnan(column)]
        bad = (present < 0) | (present >= max_bins) | (present != np.floor(present))
        if bad.any():
            name = feature_names[j] if feature_names is not None else f"feature {j}"
            raise ValueError(
                f"categorical column {name!r} holds the value {present[bad][0]!r}: "
                f"categorical features must be integer codes in [0, max_bins={max_bins}) "
                f"(or NaN for missing). Pass a pandas category column to have silva "
                f"encode it, or raise max_bins."
            )


def check_sample_weight(sample_weight, n_samples):
    """Validated float64 sample weights (ones when None)."""
    if sample_weight is None:
        return np.ones(n_samples)
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(n_samples, float(sample_weight))
    sample_weight = np.asarray(sample_weight, dtype=np.float64)
    if sample_weight.ndim != 1 or sample_weight.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight must have shape ({n_samples},), one weight per sample; got "
            f"shape {sample_weight.shape}."
        )
    if not np.all(np.isfinite(sample_weight)):
        raise ValueError("sample_weight contains NaN or infinity.")
    if np.any(sample_weight < 0):
        raise ValueError(
            f"sample_weight must be non-negative; sample {np.argmax(sample_weight < 0)} "
            f"has weight {sample_weight[sample_weight < 0][0]}."
        )
    if sample_weight.sum() <= 0:
        raise ValueError("sample_weight sums to zero: at least one sample needs a "
                         "positive weight.")
    return sample_weight


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
                             f"got {value}.")
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
        if not 0.0 < value <= 1.0:
            raise ValueError(f"{name} as a fraction must be in (0, 1]; got {value}.")
        return float(value)
    raise TypeError(f"{name} must be an int or a float; got {value!r}.")


def check_float(value, name, low, high=np.inf, *, low_inclusive=True):
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a float; got {value!r}.")
    value = float(value)
    ok_low = value >= low if low_inclusive else value > low
    if not (ok_low and value <= high) or np.isnan(value):
        bracket = "[" if low_inclusive else "("
        raise ValueError(f"{name} must be in {bracket}{low}, {high}]; got {value}.")
    return value


def check_option(value, name, options):
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {sorted(options)}; got {value!r}.")
    return value


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
        if not 1 <= max_features:
            raise ValueError(f"max_features must be >= 1; got {max_features}.")
        return min(int(max_features), n_features)
    if isinstance(max_features, numbers.Real) and not isinstance(max_features, bool):
        if not 0.0 < max_features <= 1.0:
            raise ValueError(f"max_features as a fraction must be in (0, 1]; got "
                             f"{max_features}.")
        return max(1, int(max_features * n_features))
    raise TypeError(f"max_features must be None, 'sqrt', 'log2', an int or a float; got "
                    f"{max_features!r}.")
