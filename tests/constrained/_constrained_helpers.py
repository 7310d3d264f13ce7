"""Helpers shared by the constrained family's tests (plain functions; fixtures live in
``conftest.py``)."""

import jax.numpy as jnp
import numpy as np

from fairest.constrained._engine import weighted_mean
from fairest.constrained._engine._contract import _Ctx

#: run_solver options of a deterministic full-batch run (iterations set by max_iter)
FULL_BATCH = dict(batch_size=None, constraint_batch_size=None, n_epochs=None)


def bce(z, y):
    """Per-sample binary cross-entropy of the logits ``z`` (NumPy)."""
    return np.logaddexp(0.0, z) - y * z


def mse(x, batch, aux):
    """Mean squared error of the linear model ``x`` on ``batch`` (a problem objective)."""
    return weighted_mean((batch.X @ x - batch.y) ** 2, batch.w)


class DenseModel:
    """Stand-in for a fitted dense estimator (``PrunedFairClassifier`` reads ``params_``)."""

    def __init__(self, params):
        self.params_ = params


def assert_same_layers(a, b):
    """Two lists of ``(W, b)`` layers are bitwise equal."""
    assert len(a) == len(b)
    for (W1, b1), (W2, b2) in zip(a, b):
        np.testing.assert_array_equal(W1, W2)
        np.testing.assert_array_equal(b1, b2)


def step_context(problem, X, y, g, aux, hyper):
    """A solver step context (``_Ctx``) on the rows ``(X, y)`` whose objective groups and
    constraint cells are both ``g``, minibatch draws for both (call under x64)."""
    data = {
        "X": jnp.asarray(X),
        "y": jnp.asarray(y),
        "groups": jnp.asarray(g),
        "cells": jnp.asarray(g),
        "w": jnp.ones(len(y)),
        "cw": jnp.ones(len(y)),
    }
    return _Ctx(problem, data, aux, hyper, False, False)
