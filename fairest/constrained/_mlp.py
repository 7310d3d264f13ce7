"""The model of the constrained family: a dense ReLU network (``hidden=()`` is the linear /
logistic model) with PyTorch's ``nn.Linear`` default initialisation; its forward passes are
the shared ones of :mod:`fairest._kernels._mlp` (the host one read in row blocks here)."""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from fairest._kernels._mlp import mlp_forward, mlp_forward_host
from fairest.constrained._defaults import CONSTRAINED_TUNING

__all__ = ["MLP", "numpy_forward"]


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
        """Logits of shape ``(n, n_outputs)``; weights are multiplied by ``masks`` if given
        (:func:`fairest._kernels.mlp_forward`)."""
        return mlp_forward(params, X, masks)


def numpy_forward(params, X) -> np.ndarray:
    """Host forward pass in float64 (prediction is group-blind and needs no JAX); ``X``
    dense or scipy sparse (never densified: the first layer is a sparse product). Dense
    ``X`` is read in blocks of ``CONSTRAINED_TUNING.forward_block_rows`` rows (only the
    logits are whole)."""
    n, block = X.shape[0], CONSTRAINED_TUNING.forward_block_rows
    if sp.issparse(X) or n <= block or len(params) < 2:
        return mlp_forward_host(params, X)
    blocks = [mlp_forward_host(params, X[start : start + block]) for start in range(0, n, block)]
    return np.concatenate(blocks)
