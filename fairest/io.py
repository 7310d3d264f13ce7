"""Data in chunks: aligned ``(X, y, sensitive_features, sample_weight)`` for streaming fits.

A stream of chunks keeps every row's group label and weight beside its features, so no
chunk can lose the alignment that fairness needs. Sources: a parquet file or dataset read
batch by batch (``pyarrow``, never the whole file at once), or any iterable of chunks
(tuples, dicts or DataFrames). :class:`GroupVocabulary` fixes the group labels up front, or
learns them from the first chunk and refuses a label it has not seen with a clear error.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["Chunk", "GroupVocabulary", "iter_chunks", "iter_parquet"]


class Chunk(NamedTuple):
    """One block of aligned rows.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features)
        Features.
    y : ndarray of shape (n_rows,)
        Labels.
    sensitive_features : ndarray of shape (n_rows,) or (n_rows, n_columns), or None
        Group labels of the rows.
    sample_weight : ndarray of shape (n_rows,) or None
        Weights of the rows.
    """

    X: np.ndarray
    y: np.ndarray
    sensitive_features: np.ndarray | None = None
    sample_weight: np.ndarray | None = None


def _checked_chunk(X, y, sensitive_features=None, sample_weight=None, *, index: int) -> Chunk:
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"chunk {index}: X must be 2-D, got shape {X.shape}.")
    n_rows = X.shape[0]
    parts = {"y": y, "sensitive_features": sensitive_features, "sample_weight": sample_weight}
    arrays = {}
    for name, value in parts.items():
        if value is None:
            arrays[name] = None
            continue
        value = np.asarray(value)
        if value.shape[0] != n_rows:
            raise ValueError(
                f"chunk {index}: {name} has {value.shape[0]} rows but X has {n_rows}; a "
                "chunk's parts must be row-aligned."
            )
        arrays[name] = value
    if arrays["y"] is None:
        raise ValueError(f"chunk {index}: y is missing.")
    return Chunk(X, arrays["y"], arrays["sensitive_features"], arrays["sample_weight"])


def _as_chunk(item, index: int) -> Chunk:
    """A ``Chunk`` from a tuple ``(X, y[, A[, w]])``, a mapping with keys ``X``, ``y``,
    ``sensitive_features``, ``sample_weight``, or a ``Chunk``."""
    if isinstance(item, Chunk):
        return _checked_chunk(*item, index=index)
    if isinstance(item, Mapping):
        unknown = set(item) - set(Chunk._fields)
        if unknown:
            raise ValueError(f"chunk {index}: unknown keys {sorted(unknown)}; use {Chunk._fields}.")
        return _checked_chunk(**item, index=index)
    if isinstance(item, Sequence) and 2 <= len(item) <= 4:
        return _checked_chunk(*item, index=index)
    raise TypeError(
        f"chunk {index}: expected (X, y[, sensitive_features[, sample_weight]]), a mapping or "
        f"a Chunk; got {type(item).__name__}."
    )


def iter_chunks(chunks: Iterable) -> Iterator[Chunk]:
    """Check and normalise any iterable of chunks.

    Parameters
    ----------
    chunks : iterable
        Items ``(X, y)``, ``(X, y, sensitive_features)``,
        ``(X, y, sensitive_features, sample_weight)``, mappings with those keys, or
        :class:`Chunk`.

    Yields
    ------
    chunk : Chunk
        Numpy arrays, row-aligned (a misaligned chunk raises ``ValueError`` naming it).

    References
    ----------
    .. [1] scikit-learn developers, "Strategies to scale computationally: bigger data",
       scikit-learn user guide (incremental learning with ``partial_fit``).
    """
    for index, item in enumerate(chunks):
        yield _as_chunk(item, index)


def iter_parquet(
    source,
    *,
    target: str,
    sensitive: str | Sequence[str] | None = None,
    weight: str | None = None,
    features: Sequence[str] | None = None,
    batch_size: int = 65_536,
    dtype=np.float64,
) -> Iterator[Chunk]:
    """Read a parquet file (or dataset directory) as a stream of aligned chunks.

    Only one record batch is in memory at a time, so a file far larger than memory can be
    streamed into ``partial_fit``.

    Parameters
    ----------
    source : str or path-like
        A parquet file or a directory of parquet files (:func:`pyarrow.dataset.dataset`).
    target : str
        Column of the labels.
    sensitive : str or list of str, optional
        Column(s) of the sensitive features.
    weight : str, optional
        Column of the sample weights.
    features : list of str, optional
        Feature columns (numeric). Default: every other column.
    batch_size : int, default=65536
        Rows per chunk (the last may be shorter).
    dtype : numpy dtype, default=np.float64
        Dtype of ``X``.

    Yields
    ------
    chunk : Chunk

    References
    ----------
    .. [1] Apache Arrow developers, "Tabular Datasets", pyarrow documentation.
    """
    try:
        import pyarrow.dataset as ds
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("iter_parquet needs pyarrow: pip install pyarrow") from error
    dataset = ds.dataset(source, format="parquet")
    sensitive_columns = [sensitive] if isinstance(sensitive, str) else list(sensitive or [])
    named = [target, *sensitive_columns, *([weight] if weight else [])]
    missing = [
        column for column in named + list(features or []) if column not in dataset.schema.names
    ]
    if missing:
        raise ValueError(f"iter_parquet: columns {missing} are not in {source}.")
    if features is None:
        features = [column for column in dataset.schema.names if column not in named]
    columns = list(features) + named
    for index, batch in enumerate(dataset.to_batches(columns=columns, batch_size=batch_size)):
        if batch.num_rows == 0:
            continue
        X = np.column_stack(
            [batch.column(name).to_numpy(zero_copy_only=False) for name in features]
        ).astype(dtype, copy=False)
        y = batch.column(target).to_numpy(zero_copy_only=False)
        groups = None
        if sensitive_columns:
            stacked = [
                batch.column(name).to_numpy(zero_copy_only=False) for name in sensitive_columns
            ]
            groups = stacked[0] if len(stacked) == 1 else np.column_stack(stacked)
        w = batch.column(weight).to_numpy(zero_copy_only=False) if weight else None
        yield _checked_chunk(X, y, groups, w, index=index)


class GroupVocabulary:
    """The group labels of a stream, fixed up front or learnt from its first chunk.

    Parameters
    ----------
    groups : array-like, optional
        Every group label the stream may contain. When omitted, the labels of the first
        chunk are the vocabulary; a later chunk with another label is an error (give
        ``groups`` up front when a group may be absent from the first chunk).

    Attributes
    ----------
    labels_ : ndarray or None
        The sorted labels (``None`` until known).

    References
    ----------
    .. [1] scikit-learn developers, ``partial_fit(..., classes=...)``: the labels of an
       incremental fit are given up front, as here.

    Examples
    --------
    >>> import numpy as np
    >>> vocabulary = GroupVocabulary(groups=["a", "b"])
    >>> vocabulary.codes(np.array(["b", "a", "b"]))
    array([1, 0, 1], dtype=int32)
    """

    def __init__(self, groups=None):
        self.labels_ = None if groups is None else np.unique(np.asarray(groups))

    def codes(self, labels) -> np.ndarray:
        """Integer codes of ``labels`` (0 .. n_groups - 1) in the vocabulary.

        Parameters
        ----------
        labels : array-like of shape (n_rows,)
            Group labels of one chunk.

        Returns
        -------
        codes : ndarray of int32
            Position of each label among the sorted ``labels_``.
        """
        labels = np.asarray(labels)
        if self.labels_ is None:
            self.labels_ = np.unique(labels)
        position = np.searchsorted(self.labels_, labels)
        position = np.clip(position, 0, len(self.labels_) - 1)
        unseen = self.labels_[position] != labels
        if np.any(unseen):
            new = np.unique(labels[unseen])[:5].tolist()
            raise ValueError(
                f"group labels {new} were not in the groups known when the stream started "
                f"({self.labels_.tolist()[:10]}); pass every label up front with groups=."
            )
        return position.astype(np.int32)
