"""ERMI kernels: closed-form maximiser, gradients, unbiasedness (spec ermi.md 3, oracles 4-8)."""

import itertools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fairest._kernels import scores
from fairest.ermi._kernels import (
    Strata,
    closed_form_w,
    loss_and_logit_grad,
    probabilities,
    saddle_coefficients,
    saddle_logit_grad,
    saddle_value,
    w_gradient,
)
from fairest.ermi._strata import strata_constants
from fairest.metrics import conditional_ermi, ermi


def theta_gradient(X, A):
    """Sum of per-sample gradients ``(1, x_i) a_i^T`` of shape (d + 1, q)."""
    return jnp.concatenate([jnp.sum(A, axis=0)[None, :], X.T @ A], axis=0)


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _problem(n=40, d=3, k=3, l=3, eo=False, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    s = (np.arange(n) % k).astype(np.int32)
    rng.shuffle(s)
    y = rng.integers(0, l, n).astype(np.int32)
    y[:l] = np.arange(l)
    t = y if eo else np.zeros(n, np.int32)
    n_strata = l if eo else 1
    weight = np.ones(n)
    (inv, omega, mask), _, _ = strata_constants(t, s, weight, n_strata, k, "label_prior")
    strata = Strata(jnp.asarray(inv), jnp.asarray(omega), jnp.asarray(mask))
    q = 1 if l == 2 else l
    theta = jnp.asarray(rng.normal(size=(d + 1, q)))
    return X, y, s, t, weight, strata, theta, n_strata


@partial(jax.jit, static_argnames="binary")
def _mean_saddle(theta, W, X, y, s, t, weight, strata, lam, binary):
    """Mean of loss + lam psi (the per-sample objective of SGDA)."""
    Z = scores(theta, X)
    F = probabilities(Z, binary)
    loss, _ = loss_and_logit_grad(Z, y, binary)
    psi = saddle_value(F, saddle_coefficients(W, s, t, strata), t, strata)
    return jnp.sum(weight * (loss + lam * psi)) / jnp.sum(weight)


@partial(jax.jit, static_argnames="binary")
def _analytic_grads(theta, W, X, y, s, t, weight, strata, lam, binary):
    Z = scores(theta, X)
    F = probabilities(Z, binary)
    _, dloss = loss_and_logit_grad(Z, y, binary)
    c = saddle_coefficients(W, s, t, strata)
    A = weight[:, None] * (dloss + lam * saddle_logit_grad(F, c, binary))
    n = jnp.sum(weight)
    return theta_gradient(X, A) / n, lam * w_gradient(F, W, s, t, weight, strata) / n


@pytest.mark.parametrize("l, eo", [(2, False), (3, False), (3, True), (2, True)])
def test_closed_form_maximiser_gives_ermi(l, eo):
    X, y, s, t, weight, strata, theta, n_strata = _problem(l=l, eo=eo)
    binary = l == 2
    F = probabilities(scores(theta, X), binary)
    W = closed_form_w(F, s, t, weight, strata)

    def Psi(W):
        return jnp.mean(saddle_value(F, saddle_coefficients(W, s, t, strata), t, strata))

    expected = (
        conditional_ermi(y, np.asarray(F), sensitive_features=s)
        if eo
        else ermi(None, np.asarray(F), sensitive_features=s)
    )
    assert float(Psi(W)) == pytest.approx(expected, abs=1e-10)
    grad = w_gradient(F, W, s, t, weight, strata) / X.shape[0]
    np.testing.assert_allclose(grad, 0.0, atol=1e-12)
    rng = np.random.default_rng(1)
    for _ in range(5):  # strictly concave: any perturbation decreases Psi
        assert float(Psi(W + 1e-3 * rng.normal(size=W.shape))) < float(Psi(W))
    bound = np.asarray(strata.inv_sqrt_p)[:, :, None]
    assert np.all(np.asarray(W) >= 0) and np.all(np.asarray(W) <= bound + 1e-12)


def test_hand_example_and_independence():
    """Spec oracle 4 (W* of the hand example) and the independence case of oracle 5."""
    s = np.array([0, 0, 0, 0, 1, 1, 1, 1], np.int32)
    y_hat = np.array([1, 1, 1, 0, 1, 0, 0, 0])
    F = jnp.asarray(np.eye(2)[y_hat])
    t = np.zeros(8, np.int32)
    (inv, omega, mask), _, _ = strata_constants(t, s, np.ones(8), 1, 2, "label_prior")
    strata = Strata(jnp.asarray(inv), jnp.asarray(omega), jnp.asarray(mask))
    W = closed_form_w(F, s, t, jnp.ones(8), strata)[0]
    np.testing.assert_allclose(W, [[0.353553, 1.060660], [1.060660, 0.353553]], atol=1e-6)
    value = jnp.mean(saddle_value(F, saddle_coefficients(W[None], s, t, strata), t, strata))
    assert float(value) == pytest.approx(0.25, abs=1e-12)
    soft = jnp.asarray(
        np.column_stack(
            [
                1 - np.r_[0.8, 0.7, 0.4, 0.1, 0.5, 0.6, 0.2, 0.3],
                np.r_[0.8, 0.7, 0.4, 0.1, 0.5, 0.6, 0.2, 0.3],
            ]
        )
    )
    W_soft = closed_form_w(soft, s, t, jnp.ones(8), strata)
    value = jnp.mean(saddle_value(soft, saddle_coefficients(W_soft, s, t, strata), t, strata))
    assert float(value) == pytest.approx(1 / 99, abs=1e-12)
    same = jnp.tile(jnp.asarray([[0.3, 0.7]]), (8, 1))  # independence: W* = sqrt(p_S) 1^T
    np.testing.assert_allclose(
        closed_form_w(same, s, t, jnp.ones(8), strata)[0], np.sqrt(0.5), atol=1e-12
    )


@pytest.mark.parametrize("l, eo", [(2, False), (3, False), (3, True)])
def test_gradients_match_finite_differences(l, eo):
    X, y, s, t, weight, strata, theta, n_strata = _problem(n=30, l=l, eo=eo, seed=2)
    binary = l == 2
    rng = np.random.default_rng(3)
    W = jnp.asarray(rng.normal(size=(n_strata, 3, l))) * strata.mask[:, :, None]
    lam = 0.7
    g_theta, g_w = _analytic_grads(theta, W, X, y, s, t, weight, strata, lam, binary)
    h = 1e-6

    def f(theta, W):
        return float(_mean_saddle(theta, W, X, y, s, t, weight, strata, lam, binary))

    fd_theta = np.zeros(theta.shape)
    for idx in np.ndindex(theta.shape):
        e = np.zeros(theta.shape)
        e[idx] = h
        fd_theta[idx] = (f(theta + e, W) - f(theta - e, W)) / (2 * h)
    fd_w = np.zeros(W.shape)
    for idx in np.ndindex(W.shape):
        e = np.zeros(W.shape)
        e[idx] = h
        fd_w[idx] = (f(theta, W + e) - f(theta, W - e)) / (2 * h)
    np.testing.assert_allclose(g_theta, fd_theta, atol=1e-6)
    np.testing.assert_allclose(g_w, fd_w * np.asarray(strata.mask)[:, :, None], atol=1e-6)


def test_per_sample_gradient_norm_is_product_of_norms():
    X, y, s, t, weight, strata, theta, _ = _problem(n=10, l=3)
    W = closed_form_w(probabilities(scores(theta, X), False), s, t, weight, strata)

    def single(theta, x, yi, si, ti):
        return _mean_saddle(
            theta, W, x[None], yi[None], si[None], ti[None], jnp.ones(1), strata, 0.5, False
        )

    per_sample = jax.jit(jax.vmap(jax.grad(single), in_axes=(None, 0, 0, 0, 0)))(theta, X, y, s, t)
    Z = scores(theta, X)
    F = probabilities(Z, False)
    _, dloss = loss_and_logit_grad(Z, y, False)
    A = dloss + 0.5 * saddle_logit_grad(F, saddle_coefficients(W, s, t, strata), False)
    expected = np.linalg.norm(A, axis=1) * np.sqrt(1 + np.sum(X**2, axis=1))
    np.testing.assert_allclose(jnp.sqrt(jnp.sum(per_sample**2, axis=(1, 2))), expected, rtol=1e-10)


@pytest.mark.parametrize("eo", [False, True])
def test_minibatch_gradients_are_unbiased(eo):
    """Spec oracle 7: the mean over all C(6, 2) batches equals the full-data gradient."""
    X, y, s, t, weight, strata, theta, n_strata = _problem(n=6, k=2, l=2, eo=eo, seed=4)
    W = (
        jnp.asarray(np.random.default_rng(5).normal(size=(n_strata, 2, 2)))
        * strata.mask[:, :, None]
    )
    full = _analytic_grads(theta, W, X, y, s, t, weight, strata, 1.3, True)
    batches = list(itertools.combinations(range(6), 2))
    sums = [np.zeros(full[0].shape), np.zeros(full[1].shape)]
    for b in batches:
        b = np.asarray(b)
        grads = _analytic_grads(theta, W, X[b], y[b], s[b], t[b], weight[b], strata, 1.3, True)
        sums[0] += np.asarray(grads[0]) / len(batches)
        sums[1] += np.asarray(grads[1]) / len(batches)
    np.testing.assert_allclose(sums[0], full[0], atol=1e-12)
    np.testing.assert_allclose(sums[1], full[1], atol=1e-12)


def test_inner_ascent_converges_to_closed_form():
    """Spec oracle 8: full-batch ascent with eta = 1 / (2 max_j p_Yhat(j)) reaches W*."""
    X, y, s, t, weight, strata, theta, _ = _problem(n=50, l=3, seed=6)
    F = probabilities(scores(theta, X), False)
    target = closed_form_w(F, s, t, weight, strata)
    step = 1.0 / (2.0 * float(jnp.max(jnp.mean(F, axis=0))))

    def body(_, W):
        return W + step * w_gradient(F, W, s, t, weight, strata) / X.shape[0]

    W = jax.lax.fori_loop(0, 2000, body, jnp.zeros_like(target))
    assert float(jnp.max(jnp.abs(W - target))) < 1e-6
