"""Multinomial logistic (softmax) loss with an explicit intercept row.

``theta`` has shape (p, K): row 0 is the intercept of every class, rows 1.. are the
coefficients; scores are ``S = b + X W`` of shape (n, K); ``y`` holds integer classes.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

__all__ = ["multinomial_scores", "multinomial_loss", "multinomial_group_sums"]


def multinomial_scores(theta, X):
    """Class scores ``b + X W`` of shape (n, K)."""
    return X @ theta[1:] + theta[0]


def multinomial_loss(S, y):
    """Per-sample cross-entropy ``logsumexp(S_i) - S_{i, y_i}``."""
    return jax.nn.logsumexp(S, axis=1) - jnp.take_along_axis(S, y[:, None], axis=1)[:, 0]


@partial(jax.jit, static_argnames="num_groups")
def multinomial_group_sums(theta, X, y, groups, weight, num_groups: int):
    """Per-group weighted loss sums (G,), gradient sums (G, p, K) and totals (G,).

    The gradient of sample i is ``a_i (softmax(S_i) - e_{y_i})^T`` with ``a_i = (1, x_i)``.
    """
    S = multinomial_scores(theta, X)
    R = (jax.nn.softmax(S, axis=1) - jax.nn.one_hot(y, S.shape[1], dtype=S.dtype)) * weight[:, None]
    onehot = jax.nn.one_hot(groups, num_groups, dtype=S.dtype)  # (n, G)
    n, k = R.shape
    per_group_residuals = (onehot[:, :, None] * R[:, None, :]).reshape(n, num_groups * k)
    grad_coef = (X.T @ per_group_residuals).reshape(X.shape[1], num_groups, k).transpose(1, 0, 2)
    grad_intercept = onehot.T @ R  # (G, K)
    grads = jnp.concatenate([grad_intercept[:, None, :], grad_coef], axis=1)
    seg = partial(jax.ops.segment_sum, segment_ids=groups, num_segments=num_groups)
    return seg(weight * multinomial_loss(S, y)), grads, seg(weight)
