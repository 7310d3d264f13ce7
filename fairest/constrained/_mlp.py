"""The model of the constrained family: a dense ReLU network (``hidden=()`` is the linear /
logistic model) with PyTorch's ``nn.Linear`` default initialisation, its device and host
forward passes, and the per-sample loss statistics the problems read."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from fairest.constrained._sparse import host_matmul

__all__ = ["MLP", "numpy_forward", "per_sample_stats", "group_means", "weighted_mean"]


@dataclass(frozen=True)
class MLP:
    """Dense ReLU network ``n_features -> hidden... -> n_outputs`` (spec 1.1).

    Parameters are a list of ``(W, b)`` with ``W`` of shape ``(fan_in, fan_out)``.
    """

    n_features: int
    hidden: tuple
    n_outputs: int

    @property
    def sizes(self) -> tuple:
        return (self.n_features, *self.hidden, self.n_outputs)

    def init(self, rng: np.random.Generator, dtype) -> list:
        """PyTorch ``nn.Linear`` default init: W and b ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        return [(jnp.asarray(W), jnp.asarray(b)) for W, b in self.init_host(rng, dtype)]

    def init_host(self, rng: np.random.Generator, dtype) -> list:
        """The draws of :meth:`init` as host arrays of ``dtype`` (cast on the host: no
        device program)."""
        real = np.dtype(dtype)
        params = []
        for d_in, d_out in zip(self.sizes[:-1], self.sizes[1:]):
            bound = 1.0 / np.sqrt(d_in)
            W = rng.uniform(-bound, bound, size=(d_in, d_out))
            b = rng.uniform(-bound, bound, size=(d_out,))
            params.append((W.astype(real), b.astype(real)))
        return params

    def init_flat(self, rng: np.random.Generator, dtype) -> np.ndarray:
        """:meth:`init_host` raveled on the host (``ravel_pytree`` order: layer order, W
        row-major before b)."""
        layers = self.init_host(rng, dtype)
        return np.concatenate([np.concatenate([W.ravel(), b.ravel()]) for W, b in layers])

    @staticmethod
    def apply(params, X, masks=None):
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


# rows per block of the host forward pass: its hidden activations (n x 64 float64 for the
# default network, with temporaries) are held for one block at a time, not for all of X
FORWARD_BLOCK_ROWS = 65_536


def numpy_forward(params, X) -> np.ndarray:
    """Host forward pass in float64 (prediction is group-blind and needs no JAX); ``X``
    dense or scipy sparse (never densified: the first layer is a sparse product). Dense
    ``X`` is read in blocks of ``FORWARD_BLOCK_ROWS`` rows (only the logits are whole)."""
    n = X.shape[0]
    if sp.issparse(X) or n <= FORWARD_BLOCK_ROWS or len(params) < 2:
        return _forward_rows(params, X)
    blocks = [
        _forward_rows(params, X[start : start + FORWARD_BLOCK_ROWS])
        for start in range(0, n, FORWARD_BLOCK_ROWS)
    ]
    return np.concatenate(blocks)


def _forward_rows(params, X) -> np.ndarray:
    h = X
    last = len(params) - 1
    for layer, (W, b) in enumerate(params):
        h = host_matmul(h, W) + np.asarray(b, dtype=np.float64)
        if layer < last:
            h = np.maximum(h, 0.0)
    return h


def per_sample_stats(logits, y):
    """Per-sample loss, correctness (0/1) and probability of the true class.

    One output column: BCE-with-logits ``softplus(z) - y z`` with ``y`` in {0, 1}; several:
    softmax cross-entropy with integer labels (spec 0).
    """
    if logits.shape[-1] == 1:
        z = logits[:, 0]
        yf = y.astype(z.dtype)
        loss = jnp.logaddexp(0.0, z) - yf * z
        correct = ((z > 0) == (yf > 0.5)).astype(z.dtype)
        p = jax.nn.sigmoid(z)
        p_true = yf * p + (1.0 - yf) * (1.0 - p)
        return loss, correct, p_true
    yi = y.astype(jnp.int32)
    lse = jax.nn.logsumexp(logits, axis=1)
    z_true = jnp.take_along_axis(logits, yi[:, None], axis=1)[:, 0]
    correct = (jnp.argmax(logits, axis=1) == yi).astype(logits.dtype)
    return lse - z_true, correct, jnp.exp(z_true - lse)


def group_means(values, g, w, num_groups: int):
    """Weighted per-group means of ``values`` (n,), the counts and ``present`` (spec 1.2).

    Groups without weight get mean 0 and ``present = False``.
    """
    gid = jnp.clip(g, 0, num_groups - 1)
    counts = jax.ops.segment_sum(w, gid, num_segments=num_groups)
    sums = jax.ops.segment_sum(w * values, gid, num_segments=num_groups)
    present = counts > 0
    return jnp.where(present, sums / jnp.where(present, counts, 1.0), 0.0), counts, present


def weighted_mean(values, w):
    return jnp.sum(w * values) / jnp.maximum(jnp.sum(w), jnp.finfo(values.dtype).tiny)
