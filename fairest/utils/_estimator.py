"""Shared pieces of every fairest estimator's ``fit``: validation and group encoding."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn import get_config
from sklearn.utils.metadata_routing import MetadataRequest, get_routing_for_object
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    _check_y,
    _num_samples,
    check_consistent_length,
    validate_data,
)

from fairest.utils._tuning import HOST_TUNING
from fairest.utils._validation import check_sensitive_features, raise_if_weightless_group

__all__ = [
    "FitData",
    "validate_fit_data",
    "validate_passthrough_fit_data",
    "check_passthrough_X",
    "wrapped_nan_error",
    "wrapped_fit_params",
    "encode_binary_target",
    "stream_chunk",
    "in_stream_chunk",
]

# set while one chunk of a stream (``partial_fit``) is validated: the classes are the
# stream's (given on its first call), so a chunk holding one of them is not a one-class fit
_STREAM_CHUNK: ContextVar[bool] = ContextVar("fairest_stream_chunk", default=False)


@contextmanager
def stream_chunk() -> Iterator[None]:
    """Validate the inputs inside the block as one chunk of a stream.

    A chunk's labels are checked against the stream's classes (``partial_fit``'s
    ``classes=``) rather than on their own, so the "at least 2 classes" checks of a fit
    (:func:`in_stream_chunk`) do not apply: a chunk of a single class is normal.

    Yields
    ------
    None
    """
    token = _STREAM_CHUNK.set(True)
    try:
        yield
    finally:
        _STREAM_CHUNK.reset(token)


def in_stream_chunk() -> bool:
    """Whether the inputs being validated are one chunk of a stream (:func:`stream_chunk`).

    Returns
    -------
    bool
        ``True`` inside :func:`stream_chunk`.
    """
    return _STREAM_CHUNK.get()


class FitData(NamedTuple):
    """Validated fit inputs, as returned by :func:`validate_fit_data`.

    Parameters
    ----------
    X : ndarray or scipy sparse matrix of shape (n_samples, n_features)
        Features, float64 (sparse CSR / CSC / COO only under ``accept_sparse``).
    y : ndarray of shape (n_samples,)
        Validated target: the labels for classifiers, float64 for regressors.
    groups : ndarray of shape (n_samples,), dtype int32
        Group code of every sample, in ``0..G-1``.
    group_labels : ndarray of shape (G,)
        Group labels, in the order of the codes.
    sample_weight : ndarray of shape (n_samples,)
        Float64 weights, non-negative and not all zero.
    """

    X: np.ndarray  # (n, d) float64 (scipy sparse CSR / CSC / COO under accept_sparse)
    y: np.ndarray  # (n,) validated target (labels for classifiers, float for regressors)
    groups: np.ndarray  # (n,) int32 codes 0..G-1
    group_labels: np.ndarray  # (G,)
    sample_weight: np.ndarray  # (n,) float64, non-negative, not all zero


def validate_fit_data(
    estimator,
    X,
    y,
    sensitive_features,
    sample_weight,
    *,
    regression: bool = False,
    min_groups: int = 1,
    accept_sparse: bool = False,
) -> FitData:
    """Validate ``X, y``, sample weights and sensitive features for ``estimator.fit``.

    Sets ``n_features_in_`` / ``feature_names_in_`` through sklearn's ``validate_data``.
    NaN/inf, mismatched lengths, negative or all-zero weights and degenerate groups raise
    ``ValueError``; ``sensitive_features=None`` warns (one group).

    Parameters
    ----------
    estimator : estimator instance
        The estimator being fitted (receives ``n_features_in_`` / ``feature_names_in_``).
    X : array-like of shape (n_samples, n_features)
        Training data.
    y : array-like of shape (n_samples,)
        Target.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k), or None
        Group membership, see :func:`check_sensitive_features`.
    sample_weight : array-like of shape (n_samples,) or None
        Sample weights; ``None`` means all ones.
    regression : bool, default=False
        Whether ``y`` is a continuous target (converted to float64) rather than class
        labels.
    min_groups : int, default=1
        Minimum number of distinct groups required.
    accept_sparse : bool, default=False
        Whether ``X`` may be a scipy sparse matrix (kept sparse: CSR, CSC and COO as they
        are, other formats converted to CSR; never densified). Estimators whose kernels
        take sparse input opt in; for the others sparse ``X`` raises a ``TypeError``
        naming the estimator.

    Returns
    -------
    FitData
        The validated ``X``, ``y``, group codes, group labels and sample weights.
    """
    if not accept_sparse:
        _refuse_sparse(estimator, X)
    X, y = validate_data(
        estimator,
        X,
        y,
        dtype=np.float64,
        y_numeric=regression,
        ensure_all_finite=False,
        accept_sparse=["csr", "csc", "coo"] if accept_sparse else False,
    )
    if sp.issparse(X):
        _check_finite_sparse(X)
    else:
        _check_finite(X, "X")
    if regression:
        y = np.asarray(y, dtype=np.float64)
        _check_finite(y, "y")
    else:
        check_classification_targets(y)
    return _fit_data(X, y, sensitive_features, sample_weight, X.shape[0], min_groups)


def _fit_data(X, y, sensitive_features, sample_weight, n_samples, min_groups) -> FitData:
    """The :class:`FitData` of checked ``X`` and ``y``: non-negative weights with a positive
    total, group codes with a positive weight in every group."""
    sample_weight = _check_sample_weight(
        sample_weight, X, dtype=np.float64, ensure_non_negative=True
    )
    if not sample_weight.sum() > 0:
        raise ValueError("sample_weight sums to zero; at least one sample needs a positive weight.")
    codes, labels = check_sensitive_features(sensitive_features, n_samples, min_groups=min_groups)
    raise_if_weightless_group(np.bincount(codes, sample_weight, minlength=len(labels)), labels)
    return FitData(X, y, codes, labels, sample_weight)


def _refuse_sparse(estimator, X) -> None:
    """A ``TypeError`` naming the estimator for scipy sparse ``X`` it cannot take."""
    if sp.issparse(X):
        raise TypeError(
            f"{type(estimator).__name__} does not accept sparse X (a scipy.sparse "
            f"{X.format} matrix): pass X.toarray(), or use an estimator that takes sparse "
            "input (e.g. GroupWeightedClassifier, ERMIClassifier, BADRClassifier, or a "
            "scikit-learn model wrapped in GroupThresholdClassifier or "
            "CertifiedFairClassifier, which pass X to it as given)."
        )


def validate_passthrough_fit_data(
    estimator, X, y, sensitive_features, sample_weight, *, regression: bool = False
) -> FitData:
    """Validate the fit inputs of a meta-estimator that hands ``X`` on as given.

    Only what the meta-estimator itself uses is checked: the number of rows of ``X``
    (which must match ``y``, the weights and the groups), ``n_features_in_`` and
    ``feature_names_in_`` (set as scikit-learn's ``validate_data(...,
    skip_check_array=True)`` does), the target, the weights and the groups. ``X`` itself
    (pandas or polars frames with string categoricals or missing values, scipy sparse
    matrices, lists) is returned untouched: the wrapped estimator judges it, as in
    scikit-learn's own meta-estimators (``StackingClassifier``, ``FrozenEstimator``,
    ``TunedThresholdClassifierCV``).

    Parameters
    ----------
    estimator : estimator instance
        The meta-estimator being fitted (receives ``n_features_in_`` /
        ``feature_names_in_``).
    X : array-like, dataframe or sparse matrix of shape (n_samples, n_features)
        Training data, passed through.
    y : array-like of shape (n_samples,)
        Class labels, or the target with ``regression=True``.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k), or None
        Group membership, see :func:`check_sensitive_features`.
    sample_weight : array-like of shape (n_samples,) or None
        Sample weights; ``None`` means all ones.
    regression : bool, default=False
        Whether ``y`` is a numeric target (finite, converted to float64) rather than class
        labels.

    Returns
    -------
    FitData
        ``X`` as given, the validated target, group codes, group labels and weights.
    """
    validate_data(estimator, X, skip_check_array=True)  # feature names and count
    n_samples = _num_samples(X)
    if n_samples < 1:
        raise ValueError(
            f"Found array with 0 sample(s) (shape={getattr(X, 'shape', (0,))}) while a "
            f"minimum of 1 is required by {type(estimator).__name__}."
        )
    if regression:  # scikit-learn's check refuses NaN / infinite targets ("Input y contains NaN.")
        y = _check_y(y, y_numeric=True, estimator=estimator).astype(np.float64)
    else:
        y = _check_y(y, estimator=estimator)
    check_consistent_length(X, y)
    if not regression:
        check_classification_targets(y)
    return _fit_data(X, y, sensitive_features, sample_weight, n_samples, min_groups=1)


def check_passthrough_X(estimator, X) -> None:
    """Check ``X``'s feature count and names against the fitted meta-estimator's, leaving
    ``X`` as given for the wrapped estimator (which judges its values).

    An ``X`` that is not two-dimensional (a 1-D array) is left to the wrapped estimator,
    whose own validation says how to reshape it.

    Parameters
    ----------
    estimator : estimator instance
        The fitted meta-estimator (with ``n_features_in_``, and ``feature_names_in_`` when
        it was fitted on named columns).
    X : array-like, dataframe or sparse matrix
        The data to predict on.
    """
    if getattr(X, "ndim", 2) != 2:
        return
    validate_data(estimator, X, skip_check_array=True, reset=False)


@contextmanager
def wrapped_nan_error(owner: str, estimator, method: str = "fit") -> Iterator[None]:
    """Say which model refused missing values when a wrapped method raises for NaN in ``X``.

    A meta-estimator passes ``X`` to the model it wraps as given, so NaN reaches that
    model's own validation, whose message (scikit-learn's runs to 600 characters) does
    not say that the meta-estimator did not look at ``X``. Its first line is kept, the
    original error is chained, and the message gives the two fixes.

    Parameters
    ----------
    owner : str
        The meta-estimator's name.
    estimator : estimator instance
        The wrapped estimator.
    method : str, default="fit"
        The wrapped method called in the block.

    Yields
    ------
    None
    """
    try:
        yield
    except ValueError as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        if "NaN" not in first:
            raise
        name = type(estimator).__name__
        raise ValueError(
            f"{owner} passes X to {name} as given, and {name}.{method} refused it: {first} Put "
            "an imputer in front of the model (e.g. a Pipeline starting with "
            "sklearn.impute.SimpleImputer) or wrap a model that handles missing values "
            "(e.g. HistGradientBoostingClassifier)."
        ) from error


def wrapped_fit_params(
    estimator,
    *,
    sensitive_features=None,
    sample_weight=None,
    owner: str,
    require_weight: bool = False,
) -> dict:
    """The keyword arguments a meta-estimator passes to its wrapped estimator's ``fit``.

    ``sensitive_features`` and ``sample_weight`` (each when not ``None``) go to the
    wrapped ``fit`` when it takes them:

    * metadata routing on: a router (a ``Pipeline``, a search) gets those its
      ``get_metadata_routing()`` consumes in ``fit``; a consumer gets those its ``fit``
      names, unless its request says ``False``;
    * routing off: a ``Pipeline`` gets them as ``<last step>__<name>`` when its last step
      takes them (scikit-learn's legacy convention); another estimator those its ``fit``
      names (or all, with ``**kwargs``).

    Parameters
    ----------
    estimator : estimator instance
        The wrapped (unfitted) estimator.
    sensitive_features : array-like or None, default=None
        The groups of the fit rows.
    sample_weight : array-like or None, default=None
        The fit rows' weights; ``None`` when the fit is unweighted.
    owner : str
        The meta-estimator's name, for the error message.
    require_weight : bool, default=False
        Raise a ``ValueError`` when ``sample_weight`` is given and cannot reach the
        wrapped fit (else the wrapped fit is unweighted).

    Returns
    -------
    dict
        The keyword arguments of the wrapped ``fit``.
    """
    values = {"sensitive_features": sensitive_features, "sample_weight": sample_weight}
    values = {key: value for key, value in values.items() if value is not None}
    if not values:
        return {}
    if get_config().get("enable_metadata_routing", False):
        routing = get_routing_for_object(estimator)
        if isinstance(routing, MetadataRequest):  # a consumer, called directly
            requests = routing.fit.requests
            takes = _fit_parameters(estimator)
            params = {
                key: value
                for key, value in values.items()
                if requests.get(key) is not False and (key in takes or "**" in takes)
            }
        else:
            params = {key: values[key] for key in routing.consumes("fit", list(values))}
        how = (
            f"set_fit_request(sample_weight=True) on the step of {type(estimator).__name__} "
            "that should be weighted (metadata routing is on)"
        )
    elif _is_pipeline(estimator):
        name, last = estimator.steps[-1]
        takes = _fit_parameters(last)
        params = {f"{name}__{key}": value for key, value in values.items() if key in takes}
        how = f"give {type(estimator).__name__}'s last step a fit that takes sample_weight"
    else:
        takes = _fit_parameters(estimator)
        params = {key: value for key, value in values.items() if key in takes or "**" in takes}
        how = "wrap an estimator whose fit takes sample_weight"
    passed = {key.rsplit("__", 1)[-1] for key in params}
    if require_weight and sample_weight is not None and "sample_weight" not in passed:
        raise ValueError(
            f"{owner} was given sample_weight, but {type(estimator).__name__}.fit does not "
            f"accept sample_weight: {how}; fit it yourself and pass prefit=True; or drop "
            "sample_weight."
        )
    return params


def _is_pipeline(estimator) -> bool:
    from sklearn.pipeline import Pipeline  # imported on use: most fits never need it

    return isinstance(estimator, Pipeline)


def _fit_parameters(estimator) -> set:
    """Names of ``estimator.fit``'s parameters; ``"**"`` when it takes ``**kwargs``."""
    fit = getattr(estimator, "fit", None)
    if fit is None:  # "passthrough" or None as a pipeline's last step
        return set()
    parameters = inspect.signature(fit).parameters.values()
    return {p.name for p in parameters} | {"**" for p in parameters if p.kind == p.VAR_KEYWORD}


def _check_finite_sparse(X) -> None:
    """The short error of :func:`_check_finite` for the stored values of sparse ``X``."""
    if not np.isfinite(X.data).all():
        raise ValueError(
            "Input X contains NaN or infinity among its stored values. Impute or drop "
            "missing values first (e.g. sklearn.impute.SimpleImputer) and replace infinite ones."
        )


def _check_finite(array: np.ndarray, name: str) -> None:
    """A short error naming the first NaN or infinite entry (scikit-learn's is 600
    characters of advice)."""
    rows = max(1, HOST_TUNING.check_block_bytes // max(1, array[:1].nbytes))
    starts = range(0, array.shape[0], rows)  # row blocks: no (n, d) boolean temporary
    first = next((s for s in starts if not np.isfinite(array[s : s + rows]).all()), None)
    if first is None:
        return
    bad = np.argwhere(~np.isfinite(array[first : first + rows]))[0]
    bad[0] += first
    value = array[tuple(bad)]
    kind = "NaN" if np.isnan(value) else "infinity"
    where = f"row {bad[0]}" + (f", column {bad[1]}" if array.ndim == 2 else "")
    raise ValueError(
        f"Input {name} contains {kind} (first at {where}). Impute or drop missing values "
        "first (e.g. sklearn.impute.SimpleImputer) and replace infinite ones."
    )


def _binary_classes(y: np.ndarray) -> np.ndarray | None:
    """The sorted classes of a numeric (not float) ``y`` of at most two values, read from
    its extremes in O(n) (``np.unique`` sorts, a noticeable share of a small ERM fit);
    ``None`` for other targets (``np.unique`` then)."""
    if y.dtype.kind not in "biu" or y.size == 0:
        return None
    low, high = y.min(), y.max()
    if low == high:
        return np.array([low])
    if np.count_nonzero((y != low) & (y != high)):
        return None  # more than two classes: np.unique names them
    return np.array([low, high])


def encode_binary_target(estimator_name: str, y) -> tuple[np.ndarray, np.ndarray]:
    """Encode a binary target as classes and a float {0, 1} array.

    Parameters
    ----------
    estimator_name : str
        Name used in the error message for more than two classes.
    y : array-like of shape (n_samples,)
        Class labels.

    Returns
    -------
    classes : ndarray of shape (2,)
        The sorted labels; ``classes[1]`` is coded 1.
    y01 : ndarray of shape (n_samples,)
        The target as float64 zeros and ones.

    Raises
    ------
    ValueError
        If ``y`` has one class or more than two.
    """
    y = np.asarray(y)
    classes = _binary_classes(y)
    if classes is None:
        classes, y01 = np.unique(y, return_inverse=True)
    else:
        y01 = y == classes[-1]
    if classes.size < 2:
        raise ValueError(
            "This solver needs samples of at least 2 classes in the data, but the data "
            f"contains only one class: {classes[:1].tolist()[0]!r}."
        )
    if classes.size > 2:
        raise ValueError(
            f"Only binary classification is supported by {estimator_name}; y has "
            f"{classes.size} classes. Use a one-vs-rest wrapper or a multi-class method "
            "(e.g. ERMI)."
        )
    return classes, y01.astype(np.float64)
