"""Input validation shared by every estimator and metric.

The single entry point for sensitive features is :func:`encode_groups`: whatever the user
passes (Series, DataFrame, list, ndarray, polars, a dict of columns, strings, numbers,
categoricals) becomes int32 codes ``0..G-1`` plus the group labels in a stable (sorted)
order.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import NoReturn

import numpy as np
import pandas as pd

from fairest.utils._degenerate import plain_label

__all__ = [
    "FairnessWarning",
    "encode_groups",
    "check_sensitive_features",
    "frame_of_mapping",
    "raise_if_weightless_group",
]


class FairnessWarning(UserWarning):
    """Warning for fits whose fairness part is vacuous or unreliable."""


def _columns_of(sensitive_features) -> list:
    """Split sensitive features into a list of 1-D columns (lists, arrays or Series)."""
    if isinstance(sensitive_features, Mapping):
        return _columns_of_mapping(sensitive_features)
    module = type(sensitive_features).__module__
    if module.startswith("polars"):
        if hasattr(sensitive_features, "columns"):
            return [sensitive_features[c].to_list() for c in sensitive_features.columns]
        return [sensitive_features.to_list()]
    if isinstance(sensitive_features, pd.DataFrame):
        return [sensitive_features.iloc[:, j] for j in range(sensitive_features.shape[1])]
    if isinstance(sensitive_features, (pd.Series, pd.Categorical, pd.Index)):
        return [pd.Series(sensitive_features)]
    if isinstance(sensitive_features, (str, bytes)) or np.isscalar(sensitive_features):
        raise TypeError(
            "sensitive_features must be array-like of shape (n_samples,) or "
            f"(n_samples, n_columns); got the scalar {sensitive_features!r}."
        )
    array = np.asarray(sensitive_features)
    if not _is_numeric(array):  # numbers keep their dtype: factorised natively, fast
        array = np.asarray(sensitive_features, dtype=object)
    if array.ndim == 1:
        return [array]
    if array.ndim == 2:
        return [array[:, j] for j in range(array.shape[1])]
    raise ValueError(
        f"sensitive_features must be 1-D or 2-D; got an array with {array.ndim} dimensions."
    )


def _columns_of_mapping(mapping: Mapping) -> list[pd.Series]:
    """The columns of a mapping ``{name: 1-D column}``, as fairlearn reads a dict: the
    same as a DataFrame of those columns, each a Series named by its key (so that group
    labels and names match the DataFrame's)."""
    columns, lengths = [], {}
    for key, value in mapping.items():
        if isinstance(value, (pd.Series, pd.Categorical, pd.Index)):
            column = pd.Series(value, name=key)
        elif type(value).__module__.startswith("polars") and not hasattr(value, "columns"):
            column = pd.Series(value.to_list(), name=key, dtype=object)
        else:
            try:
                array = np.asarray(value)
                if not _is_numeric(array):
                    array = np.asarray(value, dtype=object)
            except ValueError:  # ragged nested sequences
                _raise_not_a_column(key, f"a ragged {type(value).__name__}")
            if array.ndim == 0:
                _raise_not_a_column(key, f"the scalar {value!r}")
            if array.ndim != 1:
                _raise_not_a_column(key, f"{type(value).__name__} of shape {array.shape}")
            column = pd.Series(array, name=key, copy=False)
        columns.append(column)
        lengths[key] = len(column)
    if len(set(lengths.values())) > 1:
        first_key, first_length = next(iter(lengths.items()))
        key, length = next((k, n) for k, n in lengths.items() if n != first_length)
        raise ValueError(
            f"sensitive_features[{key!r}] has {length} rows but "
            f"sensitive_features[{first_key!r}] has {first_length}; every column of the "
            "dict must have one label per sample."
        )
    return columns


def frame_of_mapping(sensitive_features):
    """A mapping of columns as the DataFrame it means, anything else unchanged.

    For code that indexes rows of the sensitive features (cross-validation folds) or
    reads their names: a dict ``{name: 1-D column}`` becomes the DataFrame with those
    columns in that order, checked as :func:`encode_groups` checks it (1-D columns of
    one length; a ``ValueError`` names the key otherwise).

    Parameters
    ----------
    sensitive_features : object
        Sensitive features in any accepted form.

    Returns
    -------
    object
        A ``pandas.DataFrame`` for a mapping, else ``sensitive_features`` itself.
    """
    if not isinstance(sensitive_features, Mapping):
        return sensitive_features
    columns = _columns_of_mapping(sensitive_features)
    if not columns:
        return pd.DataFrame()
    return pd.concat([column.reset_index(drop=True) for column in columns], axis=1)


def _raise_not_a_column(key, got: str) -> NoReturn:
    raise ValueError(
        f"sensitive_features[{key!r}] must be a 1-D column of group labels, one per "
        f"sample; got {got}. Pass one column per key, or a DataFrame."
    )


def _is_numeric(column) -> bool:
    """Whether ``column`` is a numpy array of booleans or numbers (factorised natively)."""
    return isinstance(column, np.ndarray) and column.dtype.kind in "biuf"


def _factorize_column(column, position: int | str) -> tuple[np.ndarray, np.ndarray]:
    """Codes and labels of one column; labels sorted when they are comparable."""
    if isinstance(column, np.ndarray) and column.dtype.kind in "biu":  # no missing values
        return _factorize_integers(column)
    if isinstance(column, pd.Series):
        values = column
    else:
        values = pd.Series(column, dtype=None if _is_numeric(column) else object)
    if values.isna().any():
        first = int(np.flatnonzero(values.isna().to_numpy())[0])
        raise ValueError(
            f"sensitive_features column {position} has missing values (NaN/None), "
            f"first at row {first}. Encode missingness as its own category explicitly "
            "(e.g. fillna('missing')); no sample is dropped silently."
        )
    if isinstance(values.dtype, pd.CategoricalDtype):  # keep the categories' own order
        values = values.cat.remove_unused_categories()
        labels = np.asarray(values.cat.categories)
        return values.cat.codes.to_numpy(dtype=np.int64), labels
    try:
        codes, labels = pd.factorize(values, sort=True)
    except TypeError:  # mixed, unorderable labels: keep order of first appearance
        codes, labels = pd.factorize(values, sort=False)
    labels = np.asarray(labels, dtype=object if labels.dtype == object else None)
    if labels.dtype == object:
        _raise_if_labels_print_alike(labels, position)
    return np.asarray(codes, dtype=np.int64), labels


def _factorize_integers(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes and sorted labels (``column``'s dtype) of a boolean or integer numpy column:
    by counting where its values are small non-negative integers (group codes, 0/1: O(n),
    cheaper than pandas' factorisation and than ``np.unique``, which sorts), else by
    ``pandas.factorize``."""
    if column.size and column.min() >= 0 and column.max() <= 2 * column.size + 1024:
        values = column.astype(np.intp, copy=False)  # bool too: an index, not a mask
        present = np.bincount(values) > 0
        codes = (np.cumsum(present) - 1)[values]
        return codes.astype(np.int64, copy=False), np.flatnonzero(present).astype(column.dtype)
    codes, labels = pd.factorize(column, sort=True)
    return np.asarray(codes, dtype=np.int64), np.asarray(labels, dtype=column.dtype)


def _raise_if_labels_print_alike(labels: np.ndarray, position: int | str) -> None:
    """Refuse distinct labels that print the same (``1`` and ``"1"``): two groups a user
    would read as one."""
    printed = pd.Series([str(label) for label in labels])
    twins = printed[printed.duplicated(keep=False)]
    if not twins.empty:
        first = twins.iloc[0]
        alike = [labels[i] for i in twins.index if printed[i] == first]
        raise ValueError(
            f"sensitive_features column {position} mixes types: the labels "
            f"{', '.join(repr(label) for label in alike)} are different values that print "
            "the same, so they would form separate groups. Convert the column to one "
            "type (e.g. .astype(str))."
        )


def encode_groups(
    sensitive_features,
    *,
    n_samples: int | None = None,
    min_groups: int = 1,
    min_group_size: int = 1,
    reference: str = "X",
) -> tuple[np.ndarray, np.ndarray]:
    """Encode sensitive features as group codes.

    Parameters
    ----------
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k), or dict
        Group membership. With ``k > 1`` columns, groups are the observed row tuples
        (intersectional groups). A dict (any mapping) of ``k`` equal-length 1-D columns
        means the DataFrame of those columns, as in fairlearn.
    n_samples : int, default=None
        Expected number of rows; a mismatch raises ``ValueError``.
    min_groups : int, default=1
        Minimum number of distinct groups required.
    min_group_size : int, default=1
        Minimum number of samples in every group.
    reference : str, default="X"
        Name of the input ``n_samples`` was read from, for the length-mismatch message.

    Returns
    -------
    codes : ndarray of shape (n_samples,), dtype int32
        Group index of every sample, in ``0..G-1``.
    groups : ndarray of shape (G,)
        Group labels, sorted (lexicographically for tuples). For ``k > 1`` columns each
        label is a tuple.

    Raises
    ------
    ValueError
        On a length mismatch (of a dict's columns too), a dict value that is not 1-D,
        missing values, too few groups or a too small group.
    """
    columns = _columns_of(sensitive_features)
    if not columns:
        raise ValueError("sensitive_features has no columns.")
    lengths = {len(column) for column in columns}
    n_rows = lengths.pop()
    if n_samples is not None and n_rows != n_samples:
        raise ValueError(
            f"sensitive_features has {n_rows} rows but {reference} has {n_samples} samples; "
            "they must have the same length."
        )
    if n_rows == 0:
        raise ValueError("sensitive_features is empty.")
    encoded = [
        _factorize_column(column, _column_label(column, j)) for j, column in enumerate(columns)
    ]
    if len(encoded) == 1:
        codes, groups = encoded[0]
    else:
        shape = tuple(len(labels) for _, labels in encoded)
        flat = np.ravel_multi_index(tuple(c for c, _ in encoded), shape)
        unique_flat, codes = np.unique(flat, return_inverse=True)
        index_tuples = np.unravel_index(unique_flat, shape)
        groups = np.empty(len(unique_flat), dtype=object)
        groups[:] = [
            tuple(plain_label(labels[i]) for (_, labels), i in zip(encoded, idx))
            for idx in zip(*index_tuples)
        ]
    codes = codes.astype(np.int32)
    _check_group_counts(codes, groups, min_groups, min_group_size)
    return codes, groups


def _column_label(column, position: int):
    """How error messages name a column: its name (a DataFrame's or a dict's key) when
    it has one, else its position."""
    name = getattr(column, "name", None) if isinstance(column, pd.Series) else None
    return position if name is None else repr(name)


def _check_group_counts(codes, groups, min_groups, min_group_size) -> None:
    if len(groups) < min_groups:
        raise ValueError(
            f"sensitive_features defines {len(groups)} group(s) but at least "
            f"{min_groups} are needed for a fairness-aware fit."
        )
    counts = np.bincount(codes, minlength=len(groups))
    small = np.flatnonzero(counts < min_group_size)
    if small.size:
        detail = ", ".join(f"{plain_label(groups[g])!r} ({counts[g]} samples)" for g in small[:5])
        if small.size > 5:
            detail += f" and {small.size - 5} more"
        hint = ""
        if len(groups) > max(20, codes.shape[0] // 4):
            hint = (
                f" sensitive_features has {len(groups)} distinct values for "
                f"{codes.shape[0]} samples: if it is continuous, bin it first "
                "(e.g. pandas.cut)."
            )
        raise ValueError(
            f"every group needs at least {min_group_size} samples; too small: {detail}. "
            f"Merge or remove these groups explicitly; none is dropped silently.{hint}"
        )


def check_sensitive_features(
    sensitive_features,
    n_samples: int,
    *,
    min_groups: int = 2,
    min_group_size: int = 2,
) -> tuple[np.ndarray, np.ndarray]:
    """Validate sensitive features for a fairness-aware ``fit``.

    ``None`` means a single group: a :class:`FairnessWarning` says the fairness part is
    vacuous and the codes are all zero. Otherwise see :func:`encode_groups`.

    Parameters
    ----------
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k), dict, or None
        Group membership; ``k > 1`` columns define intersectional groups. A dict of
        equal-length 1-D columns means the DataFrame of those columns.
    n_samples : int
        Number of rows of ``X``; a mismatch raises ``ValueError``.
    min_groups : int, default=2
        Minimum number of distinct groups required.
    min_group_size : int, default=2
        Minimum number of samples in every group.

    Returns
    -------
    codes : ndarray of shape (n_samples,), dtype int32
        Group code of every sample, in ``0 .. G - 1``.
    groups : ndarray of shape (G,)
        The group labels, ``groups[code]``.
    """
    if sensitive_features is None:
        warnings.warn(
            "sensitive_features=None: all samples form one group, so the fairness "
            "part of this estimator is vacuous and the plain model is fitted.",
            FairnessWarning,
            stacklevel=3,
        )
        return np.zeros(n_samples, dtype=np.int32), np.array([None], dtype=object)
    codes, groups = encode_groups(
        sensitive_features,
        n_samples=n_samples,
        min_groups=min_groups,
        min_group_size=min_group_size,
    )
    if len(groups) == 1:
        warnings.warn(
            f"sensitive_features holds a single group ({plain_label(groups[0])!r}): the "
            "fairness part of this estimator is vacuous and the plain model is fitted.",
            FairnessWarning,
            stacklevel=3,
        )
    return codes, groups


def raise_if_weightless_group(mass: np.ndarray, groups: np.ndarray) -> None:
    """Raise ``ValueError`` naming the groups whose total sample weight is zero.

    Parameters
    ----------
    mass : ndarray of shape (G,)
        Total sample weight of every group.
    groups : ndarray of shape (G,)
        The group labels, in the order of ``mass``.
    """
    empty = np.flatnonzero(~(mass > 0))
    if empty.size:
        names = ", ".join(repr(plain_label(groups[g])) for g in empty[:5])
        more = f" and {empty.size - 5} more" if empty.size > 5 else ""
        raise ValueError(
            "every group needs a positive total sample_weight; zero total weight for: "
            f"{names}{more}. Drop these rows or give them weight; no group is dropped "
            "silently."
        )
