"""Dense ReLU network forward passes: the one model code of fairest.

``params`` is a list of layers ``(W, b)`` with ``W`` of shape ``(fan_in, fan_out)``; ReLU
between the layers, none after the last (its outputs are the logits). :func:`mlp_forward`
is the traced JAX pass (0/1 weight masks optional); :func:`mlp_forward_host` is the float64
host pass for dense or scipy sparse ``X`` (the first layer is a sparse product: ``X`` is
never densified). ``hidden=()`` (one layer) is the linear / logistic model.
"""

from __future__ import annotations

import jax
import numpy as np
import scipy.sparse as sp

__all__ = ["host_matmul", "mlp_forward", "mlp_forward_host"]


def mlp_forward(params, X, masks=None):
    """Logits of shape ``(n, n_outputs)``; weights are multiplied by ``masks`` if given."""
    h = X
    last = len(params) - 1
    for layer, (W, b) in enumerate(params):
        if masks is not None:
            W = W * masks[layer]
        h = h @ W + b
        if layer < last:
            h = jax.nn.relu(h)
    return h


def host_matmul(X, W) -> np.ndarray:
    """``X @ W`` in float64 on the host for dense or scipy sparse ``X`` (a dense result)."""
    W = np.asarray(W, dtype=np.float64)
    if sp.issparse(X):
        return np.asarray(X.astype(np.float64) @ W)
    return np.asarray(X, dtype=np.float64) @ W


def mlp_forward_host(params, X) -> np.ndarray:
    """:func:`mlp_forward` on the host in float64 (no masks), ``X`` dense or scipy sparse."""
    h = X
    last = len(params) - 1
    for layer, (W, b) in enumerate(params):
        h = host_matmul(h, W) + np.asarray(b, dtype=np.float64)
        if layer < last:
            h = np.maximum(h, 0.0)
    return h
