"""Pieces shared by the constrained estimators: input handling and the model problem."""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import jax.numpy as jnp
import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted, validate_data

from fairest._kernels._losses import cross_entropy_stats, group_means, weighted_mean
from fairest.constrained._mlp import MLP, numpy_forward
from fairest.constrained._sparse import as_csr
from fairest.utils._estimator import in_stream_chunk, validate_fit_data
from fairest.utils._linear import ScoreClassifierMixin

__all__ = [
    "MLPClassifierMixin",
    "validate_constrained_fit",
    "split_sensitive_columns",
    "ModelProblem",
    "ravel_params",
    "unravel_params",
]


def ravel_params(params) -> np.ndarray:
    """Flat vector in ``ravel_pytree`` order: layer order, W (row-major) before b."""
    return jnp.concatenate([jnp.concatenate([W.ravel(), b.ravel()]) for W, b in params])


def unravel_params(model: MLP, x):
    """Inverse of :func:`ravel_params` for the shapes of ``model``."""
    params, offset = [], 0
    for d_in, d_out in zip(model.sizes[:-1], model.sizes[1:]):
        W = x[offset : offset + d_in * d_out].reshape(d_in, d_out)
        offset += d_in * d_out
        params.append((W, x[offset : offset + d_out]))
        offset += d_out
    return params


def host_layers(model: MLP, x, dtype=None) -> list:
    """``(W, b)`` host copies of every layer of the flat parameters ``x``, in ``dtype`` when
    given (else ``x``'s)."""
    x = np.asarray(x) if dtype is None else np.asarray(x, dtype=np.dtype(dtype))
    return [(W.copy(), b.copy()) for W, b in unravel_params(model, x)]


def _column_names(X, sensitive_features):
    """The column names ``sensitive_features`` stands for, or ``None`` for group labels.

    A str or a list / tuple of str names columns only when ``X`` is a DataFrame and every
    entry is a distinct column of ``X``; anything else (a plain list of group labels, of
    length n_samples, included) is group labels. A single str that is not a column of a
    DataFrame ``X``, or a str with a non-DataFrame ``X``, raises (it cannot be labels).
    """
    if isinstance(sensitive_features, str):
        if not isinstance(X, pd.DataFrame):
            raise ValueError(
                "sensitive_features given as a column name needs X to be a pandas DataFrame."
            )
        if sensitive_features not in X.columns:
            raise ValueError(
                f"sensitive feature column {sensitive_features!r} is not a column of X."
            )
        return [sensitive_features]
    if not (
        isinstance(X, pd.DataFrame)
        and isinstance(sensitive_features, (list, tuple))
        and len(sensitive_features) > 0
        and all(isinstance(s, str) for s in sensitive_features)
    ):
        return None
    names = list(sensitive_features)
    if len(set(names)) != len(names) or not all(name in X.columns for name in names):
        return None  # repeated entries or non-columns: group labels
    return names


def split_sensitive_columns(X, sensitive_features):
    """Column name(s) of a DataFrame ``X`` as sensitive features: take them out of X.

    Returns ``(X, sensitive_features, columns)``; ``columns`` is ``None`` when
    ``sensitive_features`` are group labels (see :func:`_column_names`).
    """
    if sensitive_features is None:
        return X, None, None
    cols = _column_names(X, sensitive_features)
    if cols is None:
        return X, sensitive_features, None
    return X.drop(columns=cols), X[cols], tuple(cols)


def validate_constrained_fit(estimator, X, y, sensitive_features, sample_weight=None):
    """Validate the inputs of a constrained ``fit`` through the shared estimator validation.

    Sensitive feature columns of a DataFrame ``X`` are split off first (``estimator``
    gets ``sensitive_columns_``); then :func:`fairest.utils._estimator.validate_fit_data`
    checks ``X``, ``y``, the weights and the groups. Returns ``(X, y_codes, classes,
    groups, group_labels, sample_weight)``; the rows of positive weight must hold at
    least two classes, except for one chunk of a stream (``partial_fit``, inside
    :func:`fairest.utils._estimator.stream_chunk`): its labels are checked against the
    stream's classes instead, and a chunk of a single class is normal.
    """
    X, sensitive_features, cols = split_sensitive_columns(X, sensitive_features)
    estimator.sensitive_columns_ = cols
    X, y, groups, labels, sample_weight = validate_fit_data(
        estimator, X, y, sensitive_features, sample_weight, min_groups=1, accept_sparse=True
    )
    X = as_csr(X)  # sparse X stays sparse (fairest.constrained._sparse)
    classes, y_codes = np.unique(y, return_inverse=True)
    weighted_classes = np.unique(y_codes[sample_weight > 0])
    if weighted_classes.size < 2 and not in_stream_chunk():
        raise ValueError(
            "This solver needs samples of at least 2 classes in the data, but the data "
            f"contains only one class: {classes[weighted_classes[:1]].tolist()[0]!r}"
            + (" among the rows of positive sample_weight." if classes.size > 1 else ".")
        )
    return X, y_codes.astype(np.int32), classes, groups, labels, sample_weight


def prepare_predict(estimator, X):
    check_is_fitted(estimator)
    cols = getattr(estimator, "sensitive_columns_", None)
    if cols and isinstance(X, pd.DataFrame) and all(c in X.columns for c in cols):
        X = X.drop(columns=list(cols))
    return validate_data(
        estimator, X, dtype=np.float64, reset=False, accept_sparse=["csr", "csc", "coo"]
    )


class MLPClassifierMixin(ScoreClassifierMixin):
    """``decision_function`` of the constrained family's networks (``params_``), and
    through it ``predict`` / ``predict_proba``."""

    def decision_function(self, X):
        """Return the logits of the fitted network.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples (sensitive feature columns of a DataFrame used in ``fit`` are
            dropped).

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            One column (positive class) for two classes, one per class otherwise.
        """
        X = prepare_predict(self, X)
        z = numpy_forward(self.params_, X)
        return z[:, 0] if z.shape[1] == 1 else z


def validate_hidden(hidden) -> tuple:
    hidden = tuple(hidden)
    if not all(isinstance(h, Integral) and h >= 1 for h in hidden):
        raise ValueError(f"hidden_layer_sizes must be positive integers; got {hidden!r}.")
    return tuple(int(h) for h in hidden)


@dataclass(frozen=True)
class ModelProblem:
    """Objective = mean loss of the MLP; constraints = ``A @ L_cells - delta`` (loss gaps);
    penalty = fairret-style ``sum_g |acc_g / acc - 1|`` of soft accuracies (spec 3.8).
    Sample weights enter through ``batch.s`` (loss scales, see ``_engine.Batch``); the
    penalty's accuracies are weighted means.

    Frozen and hashable on its configuration, so fits of the same shape reuse the
    compiled solver chunk. ``aux`` holds the traced ``A`` (m, n_cells) and ``delta``.
    """

    model: MLP
    n_cells: int
    m: int
    n_groups: int

    # objective and constraints are (weighted) means of per-row ``losses``: the engine may
    # sum a full-data step over row blocks (fairest.constrained._engine)
    row_separable = True

    def logits(self, x, X):
        return MLP.apply(unravel_params(self.model, x), X)

    def losses(self, x, batch):
        """Per-row losses, times the rows' sample-weight scales ``batch.s`` if any."""
        loss, _, _ = cross_entropy_stats(self.logits(x, batch.X), batch.y)
        return loss if batch.s is None else loss * batch.s

    def objective(self, x, batch, aux):
        return weighted_mean(self.losses(x, batch), batch.w)

    def cell_losses(self, x, batch):
        return group_means(self.losses(x, batch), batch.g, batch.w, self.n_cells)[0]

    def constraints(self, x, batch, aux):
        return aux["A"] @ self.cell_losses(x, batch) - aux["delta"]

    def penalty(self, x, batch, aux):
        _, _, p_true = cross_entropy_stats(self.logits(x, batch.X), batch.y)
        w = batch.w if batch.s is None else batch.w * batch.s  # weighted soft accuracies
        acc_g, _, present = group_means(p_true, batch.g, w, self.n_groups)
        acc = weighted_mean(p_true, w)
        return jnp.sum(jnp.where(present, jnp.abs(acc_g / acc - 1.0), 0.0))
