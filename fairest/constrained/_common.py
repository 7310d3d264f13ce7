"""Pieces shared by the constrained estimators: input handling and the model problem."""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import jax.numpy as jnp
import numpy as np
import pandas as pd
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from fairest.constrained._engine import MLP, group_means, per_sample_stats, weighted_mean
from fairest.utils._validation import check_sensitive_features

__all__ = ["prepare_fit", "ModelProblem", "ravel_params", "unravel_params"]


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


def _is_column_names(sensitive_features) -> bool:
    if isinstance(sensitive_features, str):
        return True
    return (
        isinstance(sensitive_features, (list, tuple))
        and len(sensitive_features) > 0
        and all(isinstance(s, str) for s in sensitive_features)
        and not isinstance(sensitive_features, np.ndarray)
    )


def split_sensitive_columns(X, sensitive_features):
    """Column name(s) of a DataFrame ``X`` as sensitive features: take them out of X."""
    if sensitive_features is None or not _is_column_names(sensitive_features):
        return X, sensitive_features, None
    if not isinstance(X, pd.DataFrame):
        raise ValueError(
            "sensitive_features given as column name(s) needs X to be a pandas DataFrame."
        )
    cols = [sensitive_features] if isinstance(sensitive_features, str) else list(sensitive_features)
    missing = [c for c in cols if c not in X.columns]
    if missing:
        raise ValueError(f"sensitive feature column(s) {missing} are not columns of X.")
    return X.drop(columns=cols), X[cols], tuple(cols)


def prepare_fit(estimator, X, y, sensitive_features):
    """Validate ``X, y``, sensitive features; encode labels. Returns
    ``(X, y_codes, classes, groups, group_labels)``."""
    X, sensitive_features, cols = split_sensitive_columns(X, sensitive_features)
    estimator.sensitive_columns_ = cols
    X, y = validate_data(estimator, X, y, dtype=np.float64)
    check_classification_targets(y)
    classes, y_codes = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(
            "This solver needs samples of at least 2 classes in the data, but the data "
            f"contains only one class: {classes[0]!r}."
        )
    groups, labels = check_sensitive_features(sensitive_features, X.shape[0], min_groups=1)
    return X, y_codes.astype(np.int32), classes, groups, labels


def prepare_predict(estimator, X):
    check_is_fitted(estimator)
    cols = getattr(estimator, "sensitive_columns_", None)
    if cols and isinstance(X, pd.DataFrame) and all(c in X.columns for c in cols):
        X = X.drop(columns=list(cols))
    return validate_data(estimator, X, dtype=np.float64, reset=False)


def validate_hidden(hidden) -> tuple:
    hidden = tuple(hidden)
    if not all(isinstance(h, Integral) and h >= 1 for h in hidden):
        raise ValueError(f"hidden_layer_sizes must be positive integers; got {hidden!r}.")
    return tuple(int(h) for h in hidden)


@dataclass(frozen=True)
class ModelProblem:
    """Objective = mean loss of the MLP; constraints = ``A @ L_cells - delta`` (loss gaps);
    penalty = fairret-style ``sum_g |acc_g / acc - 1|`` of soft accuracies (spec 3.8).

    Frozen and hashable on its configuration, so fits of the same shape reuse the
    compiled solver chunk. ``aux`` holds the traced ``A`` (m, n_cells) and ``delta``.
    """

    model: MLP
    n_cells: int
    m: int
    n_groups: int

    def logits(self, x, X):
        return MLP.apply(unravel_params(self.model, x), X)

    def objective(self, x, batch, aux):
        loss, _, _ = per_sample_stats(self.logits(x, batch.X), batch.y)
        return weighted_mean(loss, batch.w)

    def cell_losses(self, x, batch):
        loss, _, _ = per_sample_stats(self.logits(x, batch.X), batch.y)
        return group_means(loss, batch.g, batch.w, self.n_cells)[0]

    def constraints(self, x, batch, aux):
        return aux["A"] @ self.cell_losses(x, batch) - aux["delta"]

    def penalty(self, x, batch, aux):
        _, _, p_true = per_sample_stats(self.logits(x, batch.X), batch.y)
        acc_g, _, present = group_means(p_true, batch.g, batch.w, self.n_groups)
        acc = weighted_mean(p_true, batch.w)
        return jnp.sum(jnp.where(present, jnp.abs(acc_g / acc - 1.0), 0.0))
