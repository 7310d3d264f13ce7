"""Data in chunks: aligned ``(X, y, sensitive_features, sample_weight)`` for streaming fits.

A stream of chunks keeps every row's group label and weight beside its features, so no
chunk can lose the alignment that fairness needs. Sources: a parquet file or dataset read
batch by batch (``pyarrow``, never the whole file at once), or any iterable of chunks
(tuples, dicts or DataFrames). :class:`GroupVocabulary` fixes the group labels up front, or
learns them from the first chunk and refuses a label it has not seen with a clear error.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np

__all__ = ["Chunk", "GroupVocabulary", "fit_stream", "iter_chunks", "iter_parquet"]


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
        Feature columns (numeric). Default: every column other than ``target``,
        ``sensitive`` and ``weight`` (and a pandas index stored in the file). A feature
        column that is not numeric raises ``ValueError`` naming it.
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
    features_given = features is not None
    sensitive_columns = [sensitive] if isinstance(sensitive, str) else list(sensitive or [])
    named = [target, *sensitive_columns, *([weight] if weight else [])]
    missing = [
        column for column in named + list(features or []) if column not in dataset.schema.names
    ]
    if missing:
        raise ValueError(f"iter_parquet: columns {missing} are not in {source}.")
    if features is None:
        index = _pandas_index_columns(dataset.schema)
        features = [column for column in dataset.schema.names if column not in named + index]
    _check_numeric_features(dataset.schema, list(features), features_given, source)
    columns = list(features) + named
    for index, batch in enumerate(_record_batches(dataset, columns, batch_size)):
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


def _pandas_index_columns(schema) -> list[str]:
    """The columns that hold a pandas index (``DataFrame.to_parquet`` stores a non-range
    index as a column, e.g. ``__index_level_0__``): row labels, not features."""
    metadata = schema.pandas_metadata or {}
    return [name for name in metadata.get("index_columns", []) if isinstance(name, str)]


def _check_numeric_features(schema, features: list, given: bool, source) -> None:
    """A ``ValueError`` naming the feature columns that are not numbers, and the fix."""
    import pyarrow as pa

    def numeric(kind) -> bool:
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        return (
            pa.types.is_integer(kind)
            or pa.types.is_floating(kind)
            or pa.types.is_boolean(kind)
            or pa.types.is_decimal(kind)
            or pa.types.is_null(kind)
        )

    bad = [
        (name, schema.field(name).type) for name in features if not numeric(schema.field(name).type)
    ]
    if not bad:
        return
    shown = ", ".join(f"{name!r} ({kind})" for name, kind in bad[:5])
    numbers = [name for name in features if name not in dict(bad)]
    where = (
        "features="
        if given
        else "the default features (every column but target, sensitive and weight)"
    )
    raise ValueError(
        f"iter_parquet: feature column(s) {shown} of {source} in {where} are not numeric; X "
        f"must be numbers. Pass features= with the numeric columns (e.g. features="
        f"{numbers[:5]}), name a group column with sensitive=, or encode the column(s) as "
        "numbers first."
    )


def _record_batches(dataset, columns, batch_size: int):
    """The record batches of every file of ``dataset``, read on demand file by file
    (``pyarrow.parquet.ParquetFile.iter_batches`` without pre-buffering). Measured on a
    4.6 GB file streamed into ``partial_fit``: the dataset scanner held 8.7 GB of RSS at
    the end, and ``iter_batches`` with its default ``pre_buffer=True`` also grows by
    about a batch per batch read; without pre-buffering the RSS stays flat."""
    import pyarrow.parquet as pq

    for path in dataset.files:
        with pq.ParquetFile(path, filesystem=dataset.filesystem, pre_buffer=False) as reader:
            yield from reader.iter_batches(batch_size=batch_size, columns=columns)


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
        if len(self.labels_) == 1:  # no ordering needed (the label of no groups is None)
            position = np.zeros(labels.shape, np.intp)
        else:
            position = np.clip(np.searchsorted(self.labels_, labels), 0, len(self.labels_) - 1)
        unseen = self.labels_[position] != labels
        if np.any(unseen):
            new = np.unique(labels[unseen])[:5].tolist()
            raise ValueError(
                f"group labels {new} were not in the groups known when the stream started "
                f"({self.labels_.tolist()[:10]}); pass every label up front with groups=."
            )
        return position.astype(np.int32)


def fit_stream(estimator, chunks, *, n_epochs: int = 1, classes=None, groups=None):
    """Fit ``estimator`` by ``partial_fit`` over a stream of chunks, ``n_epochs`` times.

    Every chunk's group labels and weights go to ``partial_fit`` with its rows
    (``sensitive_features=chunk.sensitive_features``, ``sample_weight=chunk.sample_weight``),
    so no chunk can lose the alignment; only one chunk is in memory at a time when
    ``chunks`` reads lazily (:func:`iter_parquet`).

    Parameters
    ----------
    estimator : estimator with ``partial_fit``
        ``ERMIClassifier`` (SGDA) or ``LossGapConstrainedClassifier``; fitted in place
        and continued if it was already streamed into.
    chunks : iterable or callable
        Chunks as accepted by :func:`iter_chunks`. For ``n_epochs > 1`` the stream is
        read again every epoch: pass a re-iterable (a list) or a callable returning a
        fresh iterable (``lambda: iter_parquet(path, target="y", sensitive="group")``);
        a one-shot iterator is refused.
    n_epochs : int, default=1
        Passes over the stream; every chunk of every pass is one ``partial_fit`` call.
    classes : array-like
        Every class label of the stream (required unless ``estimator`` already has a
        stream state from an earlier ``partial_fit``).
    groups : array-like, optional
        Every group label of the stream; default: the labels of the first chunk (a later
        chunk with another label raises ``ValueError``).

    Returns
    -------
    estimator : estimator
        The fitted estimator.

    Raises
    ------
    ValueError
        If ``n_epochs`` is not a positive integer, if a one-shot iterator is given with
        ``n_epochs > 1``, or if a pass over ``chunks`` reads no chunk (nothing fitted).

    References
    ----------
    .. [1] scikit-learn developers, "Strategies to scale computationally: bigger data",
       scikit-learn user guide (incremental learning with ``partial_fit``).

    Examples
    --------
    >>> import numpy as np
    >>> from fairest import ERMIClassifier
    >>> rng = np.random.default_rng(0)
    >>> def chunk():
    ...     s = rng.integers(0, 2, 500)
    ...     X = rng.normal(size=(500, 3)) + s[:, None]
    ...     return X, (X[:, 0] > 0.5).astype(int), s
    >>> stream = [chunk() for _ in range(4)]
    >>> model = fit_stream(ERMIClassifier(solver="sgda", random_state=0), stream,
    ...                    n_epochs=2, classes=[0, 1])
    >>> model.n_iter_
    8
    """
    if not hasattr(estimator, "partial_fit"):
        raise TypeError(f"{type(estimator).__name__} has no partial_fit.")
    if not isinstance(n_epochs, (int, np.integer)) or n_epochs < 1:
        raise ValueError(f"n_epochs must be a positive integer; got {n_epochs!r}.")
    source = chunks if callable(chunks) else (lambda: chunks)
    if n_epochs > 1 and not callable(chunks) and iter(chunks) is chunks:
        raise ValueError(
            "fit_stream: a one-shot iterator cannot be read n_epochs > 1 times; pass a list "
            "or a callable returning a fresh iterable (e.g. lambda: iter_parquet(...))."
        )
    for epoch in range(n_epochs):
        n_chunks = 0
        for chunk in iter_chunks(source()):
            estimator.partial_fit(
                chunk.X,
                chunk.y,
                sensitive_features=chunk.sensitive_features,
                sample_weight=chunk.sample_weight,
                classes=classes,
                groups=groups,
            )
            n_chunks += 1
        if n_chunks == 0:  # nothing fitted: returning the estimator would hide it
            raise ValueError(
                "fit_stream: chunks is empty"
                + (f" on epoch {epoch + 1} of {n_epochs}" if epoch else "")
                + ": no chunk was read, so nothing was fitted. Pass at least one chunk "
                "(X, y[, sensitive_features[, sample_weight]]); for n_epochs > 1 pass a list "
                "or a callable returning a fresh iterable each time."
            )
    return estimator


class StreamState:
    """What ``partial_fit`` carries between calls besides the solver's own state: the
    classes, the group vocabulary, the feature count, the number of calls and the running
    per-group weight totals (the stream's group frequencies)."""

    def __init__(self, classes, vocabulary: GroupVocabulary):
        self.classes = classes
        self.vocabulary = vocabulary
        self.n_calls = 0
        self.solver = None  # the estimator's typed carry (SgdaCarry, PrunedCarry, LossGapCarry)
        self.warm = False  # the stream starts from a fitted model (partial_fit after fit)
        self.weighted = False  # some chunk so far had non-unit sample weights
        self.group_weight = None  # running sums, shape set by the estimator

    def running_totals(self, key: str, values: np.ndarray) -> np.ndarray:
        """Add ``values`` to the running totals stored under ``key`` and return them."""
        totals = getattr(self, key, None)
        totals = values.astype(np.float64) if totals is None else totals + values
        setattr(self, key, totals)
        return totals


def start_or_continue_stream(estimator, classes, groups) -> tuple[StreamState, bool]:
    """The stream state of ``estimator`` (``_stream_state``), created on the first call.

    The first call needs ``classes`` (every label of the stream, as for scikit-learn's
    ``SGDClassifier.partial_fit``), unless the estimator was fitted: then the stream
    starts from the fitted model (``state.warm``), with its ``classes_`` and ``groups_``.
    A later call may repeat the same ``classes`` and ``groups`` but not change them.
    Returns ``(state, first)``.
    """
    name = type(estimator).__name__
    state = getattr(estimator, "_stream_state", None)
    if state is None and hasattr(estimator, "classes_") and classes is None:
        # after fit (scikit-learn's semantics): the stream continues the fitted model
        state = StreamState(estimator.classes_, GroupVocabulary(estimator.groups_))
        state.warm = True
        return state, True
    if state is None:
        if classes is None:
            raise ValueError(
                f"{name}.partial_fit: classes must be given on the first call (every label "
                "of the stream, e.g. classes=[0, 1]; a chunk may hold only some of them), as "
                "for scikit-learn's SGDClassifier."
            )
        labels = np.unique(np.asarray(classes))
        if labels.size < 2:
            raise ValueError(f"{name}.partial_fit: classes needs at least 2 labels.")
        return StreamState(labels, GroupVocabulary(groups)), True
    if classes is not None and not np.array_equal(np.unique(np.asarray(classes)), state.classes):
        raise ValueError(
            f"{name}.partial_fit: classes={np.asarray(classes).tolist()} differs from the "
            f"first call's {state.classes.tolist()}."
        )
    if groups is not None and not np.array_equal(
        np.unique(np.asarray(groups)), state.vocabulary.labels_
    ):
        raise ValueError(
            f"{name}.partial_fit: groups differs from the stream's vocabulary "
            f"{state.vocabulary.labels_.tolist()[:10]}."
        )
    # a copy: the estimator keeps its state until the call succeeds (an error, e.g. a
    # chunk lacking a group or diverging iterates, leaves it as it was)
    return copy.deepcopy(state), False


def encode_stream_chunk(state: StreamState, y, chunk_codes, chunk_labels, name: str):
    """Class codes of ``y`` in ``state.classes`` and group codes in the stream's
    vocabulary (from the chunk's own codes and labels); an unseen label raises
    ``ValueError``."""
    y = np.asarray(y)
    position = np.clip(np.searchsorted(state.classes, y), 0, state.classes.size - 1)
    unknown = state.classes[position] != y
    if np.any(unknown):
        origin = "the fitted model's" if state.warm else "given with classes= on the first call"
        raise ValueError(
            f"{name}.partial_fit: labels {np.unique(y[unknown])[:5].tolist()} of y are not in "
            f"classes_={state.classes.tolist()} ({origin}). `classes` should include all "
            "valid labels that can be in y: pass every label of the stream with classes= "
            "on the first call."
        )
    group_codes = state.vocabulary.codes(chunk_labels)[np.asarray(chunk_codes)]
    return position.astype(np.int32), group_codes.astype(np.int32)


@contextmanager
def chunk_of_a_stream(sensitive_features):
    """Validation of one chunk: a chunk that holds a single group of the stream's
    vocabulary is not a fit with one group, so its ``FairnessWarning`` is silenced (a
    ``sensitive_features=None`` chunk still warns); a chunk that holds a single class is
    not a one-class fit either (its labels are checked against the stream's classes by
    :func:`encode_stream_chunk`), so the fit's "at least 2 classes" checks are off
    (:func:`fairest.utils._estimator.stream_chunk`)."""
    from fairest.utils._estimator import stream_chunk

    with warnings.catch_warnings(), stream_chunk():
        if sensitive_features is not None:
            warnings.filterwarnings("ignore", message="sensitive_features holds a single group")
        yield
