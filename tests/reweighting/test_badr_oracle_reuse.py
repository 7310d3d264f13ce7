"""Fewer and cheaper BADR oracle calls on large data (issue 19): blocked adjoint products,
values without the adjoint, hypergradients added on demand, SLSQP's near-duplicate points
snapped to evaluated ones. Each is checked against the plain oracle / plain fit it
replaces (numpy products, the plain adjoint, the fit with the savings switched off)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _badr_helpers import dense_problem

from fairest._kernels._glm import blocked_hessian, hessian_vector_product
from fairest.reweighting import BADRClassifier, _bilevel
from fairest.reweighting._badr_metrics import MetricSpec
from fairest.reweighting._bilevel import (
    blocked_hessian_vector_product,
    lower_level,
    oracle,
    row_block_sums_t,
    upper_level,
)
from fairest.reweighting._oracle import ImplicitOracle

SPEC = MetricSpec("demographic_parity_deviation", "classification", "logistic")


def _data(n, num_groups=3, d=3, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.permutation(np.arange(n) % num_groups).astype(np.int32)
    X = rng.normal(size=(n, d))
    X[:, 0] += 0.5 * groups
    w = rng.normal(size=d)
    y = (X @ w + 0.3 * groups + rng.normal(size=n) > 0).astype(float)
    return X, y, groups


@pytest.mark.parametrize("block_rows", [100, 5000])
def test_row_block_sums_t_and_blocked_hvp_equal_numpy(block_rows):
    """Transposed blocked sums (a last block overlapping the previous one, or one block)
    equal numpy's A^T C, and the one-pass Hessian-vector product the plain one."""
    rng = np.random.default_rng(block_rows)
    n, d, num_groups = 1003, 4, 3
    X, r, s = rng.normal(size=(n, d)), rng.normal(size=n), rng.normal(size=n)
    groups = rng.integers(0, num_groups, n).astype(np.int32)
    A = np.column_stack([np.ones(n), X])
    C = np.column_stack([s, np.eye(num_groups)[groups] * r[:, None]])
    with jax.enable_x64(True):

        def make_rows(s, r, g):
            return jnp.concatenate([s[None, :], _bilevel._group_rows(num_groups)(r, g)], axis=0)

        args = (jnp.asarray(s), jnp.asarray(r), jnp.asarray(groups))
        sums = row_block_sums_t(jnp.asarray(X), make_rows, *args, block_rows=block_rows)
        np.testing.assert_allclose(sums, A.T @ C, rtol=1e-12, atol=1e-12)
        theta, v = jnp.asarray(rng.normal(size=d + 1)), jnp.asarray(rng.normal(size=d + 1))
        data = (jnp.asarray(X), jnp.asarray((r > 0).astype(float)), jnp.full(n, 1.0 / n), 0.01, 0.0)
        blocked = blocked_hessian_vector_product("logistic", theta, v, *data, block_rows=block_rows)
        plain = hessian_vector_product("logistic", theta, v, *data)
        np.testing.assert_allclose(blocked, plain, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("float32_hessian", [False, True])
def test_blocked_and_value_modes_equal_the_plain_upper_level(
    monkeypatch, float32_hessian, oracle_tuning
):
    """The blocked adjoint (with and without the float32 factor's refinement) gives the
    plain adjoint's value, hypergradient, Jacobian and group losses; the value mode the
    same value, Jacobian and losses with a NaN gradient."""
    oracle_tuning(adjoint_block_rows=128)
    X, y, groups = _data(n=1001 + 2 * float32_hessian, num_groups=3)
    with jax.enable_x64(True):
        marker = jax.device_put(blocked_hessian()) if float32_hessian else None
        problem = dense_problem(X, y, groups, X_hessian=marker)
        lam = jnp.asarray([0.2, 0.5, 0.3])
        result = lower_level("logistic", 3, lam, jnp.zeros(4), problem)
        plain = upper_level("logistic", SPEC, 3, lam, result, problem, "plain")
        blocked = upper_level("logistic", SPEC, 3, lam, result, problem, "blocked")
        value = upper_level("logistic", SPEC, 3, lam, result, problem, "value")
    np.testing.assert_allclose(blocked.value, plain.value, rtol=1e-13)
    np.testing.assert_allclose(blocked.grad, plain.grad, rtol=1e-9, atol=1e-14)
    for out in (blocked, value):
        np.testing.assert_allclose(out.jacobian, plain.jacobian, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(out.group_losses, plain.group_losses, rtol=1e-13)
        assert bool(out.inner_converged) == bool(plain.inner_converged)
    np.testing.assert_allclose(value.value, plain.value, rtol=1e-13)
    assert np.all(np.isnan(np.asarray(value.grad)))


def test_gradient_on_demand_and_snapping(monkeypatch, oracle_tuning):
    """With the savings on, a value-only evaluation solves once and leaves the gradient
    out; asking for it later adds the plain oracle's hypergradient without a new solve.
    A point within SNAP_ATOL of an evaluated one is that point (no solve); a farther one
    is solved."""
    oracle_tuning(reuse_min_rows=0)
    X, y, groups = _data(n=600, num_groups=3)
    with jax.enable_x64(True):
        problem = dense_problem(X, y, groups)
        orc = ImplicitOracle("logistic", SPEC, 3, problem, jnp.zeros(4), groups)
        lam = np.array([0.5, 0.3, 0.2])
        value, grad, _ = orc.evaluate(lam, with_grad=False)
        assert np.all(np.isnan(grad)) and orc.nfev == 1 and orc.gradients == 0
        value2, grad2, out = orc.evaluate(lam)
        assert orc.nfev == 1 and orc.gradients == 1 and value2 == value
        ref = oracle("logistic", SPEC, 3, jnp.asarray(lam), jnp.zeros(4), problem)
        np.testing.assert_allclose(value, float(ref.value), rtol=1e-10)
        np.testing.assert_allclose(grad2, np.asarray(ref.grad), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(np.asarray(out.theta), np.asarray(ref.theta), atol=1e-8)
        near = lam + np.array([1e-11, -1e-11, 0.0])
        assert orc.fun(near) == value and np.array_equal(orc.jac(near), grad2)
        assert orc.nfev == 1
        orc.fun(lam + np.array([1e-6, -1e-6, 0.0]))
        assert orc.nfev == 2


def test_savings_off_below_reuse_rows():
    """Below REUSE_MIN_ROWS the oracle is the plain one: every evaluation solves the
    adjoint, nothing is snapped."""
    X, y, groups = _data(n=600, num_groups=3)
    with jax.enable_x64(True):
        orc = ImplicitOracle("logistic", SPEC, 3, dense_problem(X, y, groups), jnp.zeros(4), groups)
        lam = np.array([0.5, 0.3, 0.2])
        _, grad, _ = orc.evaluate(lam, with_grad=False)
        assert np.all(np.isfinite(grad)) and orc.gradients == 1
        orc.fun(lam + np.array([1e-11, -1e-11, 0.0]))
        assert orc.nfev == 2


@pytest.mark.parametrize("metric", ["demographic_parity_deviation", "group_loss_variance"])
@pytest.mark.parametrize("inexact", [False, True])
def test_savings_select_the_same_model(monkeypatch, metric, inexact, oracle_tuning):
    """BADR-SLSQP with the large-data savings on (small data, thresholds lowered) returns
    the weights, model and exact unfairness of the fit without them, with fewer
    adjoint solves than oracle calls would need."""
    X, y, groups = _data(n=2000, num_groups=3, seed=3)
    if inexact:
        oracle_tuning(inexact_min_rows=0)
    plain = BADRClassifier(metric=metric).fit(X, y, sensitive_features=groups)
    oracle_tuning(reuse_min_rows=0)
    oracle_tuning(adjoint_block_rows=256)
    reuse = BADRClassifier(metric=metric).fit(X, y, sensitive_features=groups)
    assert reuse.selected_ == plain.selected_
    np.testing.assert_allclose(reuse.group_weights_, plain.group_weights_, atol=1e-6)
    np.testing.assert_allclose(reuse.coef_, plain.coef_, atol=1e-6)
    assert reuse.unfairness_exact_ == pytest.approx(plain.unfairness_exact_, abs=1e-10)
    assert reuse.unfairness_ == pytest.approx(plain.unfairness_, rel=1e-6, abs=1e-12)
