"""Shared builders of the BADR oracle tests: one dense :class:`Problem` and one data set."""

import jax.numpy as jnp
import numpy as np

from fairest.reweighting._bilevel import Problem


def dense_problem(X, y, groups, *, alpha=0.05, inner_tol=1e-10, X_hessian=None):
    """Unit-weight dense problem, free intercept, temperature 1, 50 Newton steps at most
    (call inside ``jax.enable_x64(True)``); ``X_hessian`` is the float32 Hessian marker."""
    return Problem(
        jnp.asarray(X),
        jnp.asarray(y),
        jnp.asarray(groups, dtype=jnp.int32),
        jnp.ones(len(y)),
        jnp.float64(alpha),
        jnp.float64(0.0),
        jnp.float64(1.0),
        jnp.float64(inner_tol),
        jnp.int32(50),
        X_hessian,
    )


def grouped_classification(n, num_groups, seed=0):
    """Balanced shuffled groups, 3 features shifted by group, labels of a noisy linear
    score with a group offset."""
    rng = np.random.default_rng(seed)
    groups = rng.permutation(np.arange(n) % num_groups).astype(np.int32)
    X = rng.normal(size=(n, 3))
    X[:, 0] += 0.5 * groups
    y = (X @ np.array([1.0, -0.5, 0.3]) + 0.3 * groups + rng.normal(size=n) > 0).astype(float)
    return X, y, groups
