"""The divergence guard every iterative solver shares (constrained engine, ERMI's SGDA).

A solver's iterates are checked for finiteness on device, once every few iterations
(:func:`guarded_scan`), and a run that diverged is repeated from its initialisation with
smaller step sizes (:func:`refit_on_divergence`) before the fit gives up with an error
naming the remedy. Family-neutral: no family's package is imported here.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from jax import lax
from sklearn.exceptions import ConvergenceWarning

__all__ = [
    "NONFINITE_CHECK_EVERY",
    "NONFINITE_RETRIES",
    "NONFINITE_STEP_FACTOR",
    "all_finite",
    "guard_block",
    "guarded_scan",
    "largest_magnitude",
    "refit_on_divergence",
]

# When the iterates of a solver become non-finite (NaN / inf), the estimator refits from
# the same initialisation (and the same random streams) with every step size of the phase
# multiplied by NONFINITE_STEP_FACTOR, up to NONFINITE_RETRIES times (step sizes 1/2, 1/4
# of the given ones), with a ConvergenceWarning; if the last refit also diverges, fit
# raises a ValueError naming the remedy (scale the features or lower the step size).
NONFINITE_RETRIES = 2
NONFINITE_STEP_FACTOR = 0.5
# iterations between two on-device finiteness checks of the parameters (at most; a divisor
# of the scan length): an isfinite reduction over the parameters every iteration would
# be a noticeable share of a small model's stochastic step
NONFINITE_CHECK_EVERY = 16


def all_finite(tree):
    """On device: whether every floating-point leaf of ``tree`` is finite (a bool scalar)."""
    leaves = [
        jnp.all(jnp.isfinite(leaf))
        for leaf in jax.tree_util.tree_leaves(tree)
        if jnp.issubdtype(jnp.result_type(leaf), jnp.inexact)
    ]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.asarray(True)


def guard_block(length: int) -> int:
    """Iterations between two finiteness checks of :func:`guarded_scan`: the largest
    divisor of ``length`` up to ``NONFINITE_CHECK_EVERY``."""
    block = max(1, min(NONFINITE_CHECK_EVERY, length))
    while length % block:
        block -= 1
    return block


def guarded_scan(body, state, bad, inputs, *, parameters, iteration):
    """``lax.scan`` of ``body(state, inp, bad) -> (state, out)`` with a divergence guard.

    ``bad`` (an int32 scalar carried on device) is -1 while the parameters were finite at
    every check; the parameters (``parameters(state)``) are checked with one ``isfinite``
    reduction every :func:`guard_block` iterations (not one per iteration), and on the first
    failure ``bad`` becomes ``iteration(state, inputs of the block)``, the block's last
    iteration.
    ``body`` reads ``bad`` to skip the iterations after it. Nothing leaves the device.
    Returns ``((state, bad), outputs)``, the outputs stacked as by ``lax.scan``.
    """
    n = jax.tree_util.tree_leaves(inputs)[0].shape[0]
    block = guard_block(n)

    def run_block(carry, inputs_block):
        st, bad = carry
        st, out = lax.scan(lambda s, inp: body(s, inp, bad), st, inputs_block)
        diverged = jnp.logical_and(bad < 0, ~all_finite(parameters(st)))
        return (st, jnp.where(diverged, iteration(st, inputs_block), bad)), out

    blocks = jax.tree_util.tree_map(lambda a: a.reshape((n // block, block) + a.shape[1:]), inputs)
    carry, out = lax.scan(run_block, (state, bad), blocks)
    return carry, jax.tree_util.tree_map(lambda a: a.reshape((n,) + a.shape[2:]), out)


def largest_magnitude(X) -> float:
    """``max |X_ij|`` of a dense or scipy sparse ``X`` (0 when empty)."""
    if sp.issparse(X):
        return float(abs(X).max()) if X.nnz else 0.0
    return float(np.max(np.abs(X))) if np.size(X) else 0.0


def refit_on_divergence(owner: str, attempt, *, remedy: str, X, phase: str = ""):
    """Run ``attempt(factor) -> (output, nonfinite_iter)`` until its iterates stay finite.

    ``attempt`` runs a solver from its initialisation with every step size multiplied by
    ``factor`` and returns the first iteration whose iterates were not finite, or
    ``None``. The first run uses ``factor=1``; a diverged run is repeated with the factor
    multiplied by ``NONFINITE_STEP_FACTOR``, up to
    ``NONFINITE_RETRIES`` times (with a :class:`ConvergenceWarning` when a refit
    succeeds); when the last one diverges too, a ``ValueError`` names the cause and the
    remedy (``remedy``: the parameters that set the step sizes). ``owner`` names the
    estimator; ``phase`` is appended to the iteration (e.g. ``" of the dense
    pre-training"``). Returns ``(output, factor)``.
    """
    factor, first = 1.0, None
    for retry in range(NONFINITE_RETRIES + 1):
        output, bad = attempt(factor)
        if bad is None:
            if retry:
                warnings.warn(
                    f"{owner}: the iterates became non-finite (NaN/inf) by iteration "
                    f"{first}{phase}; refitted from the initialisation with the step sizes "
                    f"multiplied by {factor:g}. Scale the features (e.g. StandardScaler) or "
                    f"lower {remedy} to fit with the given step sizes.",
                    ConvergenceWarning,
                    stacklevel=4,
                )
            return output, factor
        first = bad if first is None else first
        factor *= NONFINITE_STEP_FACTOR
    largest = largest_magnitude(X)
    raise ValueError(
        f"{owner}: the iterates became non-finite (NaN/inf) by iteration {first}{phase}, "
        f"also in {NONFINITE_RETRIES} refits with the step sizes halved: scale "
        f"the features (e.g. StandardScaler; the largest feature magnitude is "
        f"{largest:.3g}) or lower {remedy}."
    )
