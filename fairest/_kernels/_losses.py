"""Pointwise losses of scores, their first two derivatives in the score, and their
(group) means: the logistic / cross-entropy loss is written here once.

Every loss is a function of a score ``s`` and a target ``y``; the derivatives are taken
with respect to ``s``. Binary losses take ``y`` in {0, 1}. The ``loss`` name is a static
(Python) argument of every kernel; everything numeric is traced.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from fairest.utils._linear import positive_scores

__all__ = [
    "LOSSES",
    "PENALTY_SCALE",
    "cross_entropy",
    "cross_entropy_grad",
    "cross_entropy_host",
    "cross_entropy_stats",
    "group_means",
    "weighted_mean",
    "pointwise_loss",
    "loss_derivatives",
]

LOSSES = ("logistic", "squared_hinge", "squared_error")

# Penalty R(theta) = PENALTY_SCALE[loss] * alpha * ||w||^2 (badr spec section 2): one half
# for the classifiers, one (no half) for ridge.
PENALTY_SCALE = {"logistic": 0.5, "squared_hinge": 0.5, "squared_error": 1.0}


def _check_loss(loss: str) -> None:
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}; got {loss!r}.")


def cross_entropy(S, y):
    """Per-sample cross-entropy of class scores: the one written in fairest.

    ``S`` of shape (n,): binary logits with ``y`` in {0, 1}, ``softplus(s) - y s``.
    ``S`` of shape (n, K): class scores with integer ``y``, ``logsumexp(S_i) - S_{i, y_i}``.
    """
    if S.ndim == 1:
        return jnp.logaddexp(0.0, S) - y * S
    return jax.nn.logsumexp(S, axis=1) - jnp.take_along_axis(S, y[:, None], axis=1)[:, 0]


def cross_entropy_grad(S, y):
    """Gradient of :func:`cross_entropy` in the scores: ``sigmoid(s) - y`` (binary) or
    ``softmax(S_i) - e_{y_i}`` (classes), of the shape of ``S``."""
    if S.ndim == 1:
        return jax.nn.sigmoid(S) - y
    return jax.nn.softmax(S, axis=1) - jax.nn.one_hot(y, S.shape[1], dtype=S.dtype)


def cross_entropy_stats(S, y):
    """Per-sample :func:`cross_entropy`, correctness (0/1, by the rule of ``predict``:
    :func:`~fairest.utils._linear.positive_scores`) and probability of the true class.

    ``S`` of shape (n, 1): binary logits (BCE-with-logits) with ``y`` in {0, 1}; (n, K):
    class scores with integer ``y`` (softmax cross-entropy).
    """
    if S.shape[-1] == 1:
        z = S[:, 0]
        yf = y.astype(z.dtype)
        correct = (positive_scores(z) == (yf > 0.5)).astype(z.dtype)
        p = jax.nn.sigmoid(z)
        return cross_entropy(z, yf), correct, yf * p + (1.0 - yf) * (1.0 - p)
    yi = y.astype(jnp.int32)
    lse = jax.nn.logsumexp(S, axis=1)
    z_true = jnp.take_along_axis(S, yi[:, None], axis=1)[:, 0]
    correct = (jnp.argmax(S, axis=1) == yi).astype(S.dtype)
    return cross_entropy(S, yi), correct, jnp.exp(z_true - lse)


def cross_entropy_host(S, y):
    """:func:`cross_entropy` on the host in float64 for logits ``S`` of shape (n, 1) (binary,
    ``y`` in {0, 1}) or (n, K) (integer ``y``)."""
    if S.shape[1] == 1:
        z = S[:, 0]
        return np.logaddexp(0.0, z) - y * z
    zmax = S.max(axis=1)
    lse = zmax + np.log(np.exp(S - zmax[:, None]).sum(axis=1))
    return lse - S[np.arange(len(y)), y]


def group_means(values, g, w, num_groups: int):
    """Weighted per-group means of per-sample ``values`` (n,), the counts and ``present``.

    Groups without weight get mean 0 and ``present = False``.
    """
    gid = jnp.clip(g, 0, num_groups - 1)
    counts = jax.ops.segment_sum(w, gid, num_segments=num_groups)
    sums = jax.ops.segment_sum(w * values, gid, num_segments=num_groups)
    present = counts > 0
    return jnp.where(present, sums / jnp.where(present, counts, 1.0), 0.0), counts, present


def weighted_mean(values, w):
    """``sum(w values) / sum(w)`` (0 when every weight is 0)."""
    return jnp.sum(w * values) / jnp.maximum(jnp.sum(w), jnp.finfo(values.dtype).tiny)


def pointwise_loss(loss: str, s, y):
    """Per-sample loss ``l(s, y)``.

    logistic: ``softplus(s) - y s``; squared_hinge: ``max(0, 1 - (2y-1) s)^2``;
    squared_error: ``(s - y)^2``.
    """
    _check_loss(loss)
    if loss == "logistic":
        return cross_entropy(s, y)
    if loss == "squared_hinge":
        return jnp.square(jnp.maximum(0.0, 1.0 - (2.0 * y - 1.0) * s))
    return jnp.square(s - y)


def loss_derivatives(loss: str, s, y):
    """Per-sample ``(l, dl/ds, d2l/ds2)``; squared hinge uses the generalised Hessian."""
    _check_loss(loss)
    if loss == "logistic":
        # one exponential for all three: e = exp(-|s|), softplus(s) = max(s, 0) + log1p(e),
        # sigmoid(s) = 1/(1+e) or e/(1+e), sigmoid' = e/(1+e)^2 (no cancellation in p(1-p))
        e = jnp.exp(-jnp.abs(s))
        inverse = 1.0 / (1.0 + e)
        p = jnp.where(s >= 0, inverse, e * inverse)
        return jnp.maximum(s, 0.0) + jnp.log1p(e) - y * s, p - y, e * inverse * inverse
    if loss == "squared_hinge":
        signed = 2.0 * y - 1.0
        margin = jnp.maximum(0.0, 1.0 - signed * s)
        return jnp.square(margin), -2.0 * signed * margin, 2.0 * (margin > 0).astype(s.dtype)
    residual = s - y
    return jnp.square(residual), 2.0 * residual, jnp.full_like(s, 2.0)
