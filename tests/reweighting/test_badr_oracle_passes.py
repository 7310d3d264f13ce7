"""The oracle's pass savers: Newton's predicted last step (checked by the adjoint pass) and
one-group vertices solved on their own rows (each must give the oracle of the plain path), and
the scaling of SLSQP's first step."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _badr_helpers import dense_problem, grouped_classification

from fairest._kernels._glm import (
    blocked_hessian,
    row_block_pass,
    value_grad_hessian,
)
from fairest._kernels._placement import GatheredRows, pass_block_rows, shifted_rows
from fairest._solvers._newton import newton_solve
from fairest.reweighting import _bilevel, _outer
from fairest.reweighting._badr_metrics import MetricSpec
from fairest.reweighting._bilevel import oracle
from fairest.reweighting._defaults import SLSQP_FIRST_STEP
from fairest.reweighting._oracle import ImplicitOracle
from fairest.reweighting._runtime import group_row_blocks

SPEC = MetricSpec("demographic_parity_deviation", "classification", "logistic")


def _data(n=400, num_groups=4, seed=0):
    return grouped_classification(n, num_groups, seed)


def _weights(num_groups, count=8, seed=1):
    rng = np.random.default_rng(seed)
    points = [np.full(num_groups, 1.0 / num_groups), *np.eye(num_groups)]
    points += list(rng.dirichlet(np.ones(num_groups), size=count))
    return points


def test_newton_predicted_step_lands_on_the_optimum():
    """With the contraction constant observed in a plain solve, Newton stops one pass
    early at the full step it did not evaluate: flagged unverified (not converged), and
    there the gradient is below the threshold and theta equals the plain solve's."""
    X, y, _ = _data()
    with jax.enable_x64(True):
        data = (
            jnp.asarray(X),
            jnp.asarray(y),
            jnp.full(len(y), 1.0 / len(y)),
            jnp.float64(0.05),
            jnp.float64(0.0),
        )
        predictions = 0
        for tol in (1e-6, 1e-8, 1e-10, 1e-12):
            args = (*data, jnp.zeros(4), jnp.float64(tol), jnp.int32(50))
            plain = newton_solve("logistic", *args)
            assert bool(plain.converged) and not bool(plain.unverified)
            assert float(plain.contraction) > 0
            predicted = newton_solve("logistic", *args, None, plain.contraction)
            if not bool(predicted.unverified):
                np.testing.assert_array_equal(predicted.theta, plain.theta)
                continue
            predictions += 1
            assert not bool(predicted.converged)
            _, grad, _ = value_grad_hessian("logistic", predicted.theta, *data)
            assert float(jnp.max(jnp.abs(grad))) <= float(predicted.threshold)
            np.testing.assert_allclose(predicted.theta, plain.theta, atol=10 * tol)
            # a contraction of infinity never predicts: the plain solve
            never = newton_solve("logistic", *args, None, jnp.float64(np.inf))
            assert not bool(never.unverified)
            np.testing.assert_array_equal(never.theta, plain.theta)
        assert predictions >= 1


def test_oracle_with_predicted_steps_equals_the_plain_oracle():
    """Along a sequence of weights (warm starts, predicted last Newton steps, the adjoint on
    the float32 factor of the point before the last step, refined once) the oracle's
    value, hypergradient and theta equal those of the plain float64 oracle started from
    zero. Without the float32 Hessian (small data) nothing is predicted."""
    X, y, groups = _data()
    with jax.enable_x64(True):
        exact = dense_problem(X, y, groups)
        small = ImplicitOracle("logistic", SPEC, 4, exact, jnp.zeros(4))
        assert not any(bool(small.evaluate(lam)[2].unverified) for lam in _weights(4))
        problem = dense_problem(X, y, groups, X_hessian=jnp.asarray(X, dtype=jnp.float32))
        orc = ImplicitOracle("logistic", SPEC, 4, problem, jnp.zeros(4))
        predicted = 0
        for lam in _weights(4):
            value, grad, out = orc.evaluate(lam)
            predicted += bool(out.unverified)
            assert bool(out.inner_converged)
            ref = oracle("logistic", SPEC, 4, jnp.asarray(lam), jnp.zeros(4), exact)
            np.testing.assert_allclose(value, float(ref.value), rtol=1e-10)
            np.testing.assert_allclose(grad, np.asarray(ref.grad), rtol=1e-6, atol=1e-9)
            np.testing.assert_allclose(np.asarray(out.theta), np.asarray(ref.theta), atol=1e-8)
        assert predicted >= 3  # the saving is exercised, not just allowed


def test_a_predicted_step_that_falls_short_is_resumed():
    """A far too small contraction estimate makes Newton stop early where the gradient is
    still large: the adjoint pass catches it, the solve resumes there and the oracle is
    still the plain one."""
    X, y, groups = _data()
    with jax.enable_x64(True):
        problem = dense_problem(X, y, groups, X_hessian=jnp.asarray(X, dtype=jnp.float32))
        orc = ImplicitOracle("logistic", SPEC, 4, problem, jnp.zeros(4))
        orc._contractions = [1e-30]
        lam = np.array([0.4, 0.3, 0.2, 0.1])
        value, grad, out = orc.evaluate(lam)
        assert orc.mispredictions == 1
        assert bool(out.inner_converged)
        ref = oracle("logistic", SPEC, 4, jnp.asarray(lam), jnp.zeros(4), problem)
        np.testing.assert_allclose(value, float(ref.value), rtol=1e-10)
        np.testing.assert_allclose(grad, np.asarray(ref.grad), rtol=1e-6, atol=1e-9)


def test_group_row_blocks():
    """Each block lists exactly its group's rows (valid entries), padded to one size."""
    groups = np.array([2, 0, 1, 2, 2, 0, 1, 2, 0, 2], dtype=np.int32)
    rows, valid = group_row_blocks(groups, 3, num_rows=10**6)
    assert rows.shape == valid.shape == (3, 64)
    for g in range(3):
        np.testing.assert_array_equal(rows[g][valid[g] > 0], np.flatnonzero(groups == g))
        assert np.all(rows[g][valid[g] == 0] == 0)
    assert group_row_blocks(groups, 3, num_rows=1000) is None  # too small to pay


def test_vertices_solved_on_their_rows_equal_the_full_solve(monkeypatch, oracle_tuning):
    """A one-group vertex solved on that group's rows only gives the full-data oracle."""
    X, y, groups = _data(n=512, num_groups=4)
    oracle_tuning(group_rows_min_rows=0)
    with jax.enable_x64(True):
        problem = dense_problem(X, y, groups)
        orc = ImplicitOracle("logistic", SPEC, 4, problem, jnp.zeros(4), groups)
        assert orc.runtime.group_rows is not None
        orc.compile_in_background()
        orc.evaluate(np.full(4, 0.25))
        for g in range(4):
            vertex = np.eye(4)[g]
            value, grad, out = orc.evaluate(vertex)
            ref = oracle("logistic", SPEC, 4, jnp.asarray(vertex), jnp.zeros(4), problem)
            np.testing.assert_allclose(value, float(ref.value), rtol=1e-10)
            np.testing.assert_allclose(grad, np.asarray(ref.grad), rtol=1e-6, atol=1e-9)
            np.testing.assert_allclose(np.asarray(out.theta), np.asarray(ref.theta), atol=1e-8)


def _unaligned(X):
    """A copy of ``X`` starting 8 bytes past a 64-byte boundary (placed as ShiftedRows)."""
    raw = np.empty(X.size + 16)
    skip = (-raw.ctypes.data % 64) // 8 + 1
    out = raw[skip : skip + X.size].reshape(X.shape)
    out[:] = X
    return out


@pytest.mark.parametrize("placement", ["dense", "shifted"])
def test_gathered_rows_read_the_subset_block_by_block(placement):
    """A GatheredRows reads exactly the rows of its index, from a dense X or a ShiftedRows
    (blocks overlapping the head included), and the fused row-block pass over it equals the
    pass over the gathered copy."""
    rng = np.random.default_rng(3)
    n, d = 40_000, 5
    X = rng.normal(size=(n, d))
    index = np.sort(rng.choice(n, 20_000, replace=False)).astype(np.int32)
    index[:2] = [0, 1]  # rows in a ShiftedRows' head
    y = (rng.random(n) < 0.4).astype(np.float64)[index]
    c = rng.random(n)[index]
    theta = rng.normal(size=d + 1)
    with jax.enable_x64(True):
        base = shifted_rows(_unaligned(X)) if placement == "shifted" else jnp.asarray(X)
        if placement == "shifted":
            assert base.shift > 0
        lazy = GatheredRows(base, jnp.asarray(index))
        assert lazy.shape == (20_000, d) and lazy.dtype == jnp.float64
        for start in (0, 7, 20_000 - 300):
            np.testing.assert_array_equal(
                np.asarray(lazy.rows(jnp.int32(start), 300)), X[index[start : start + 300]]
            )
        block = pass_block_rows(d) // 4
        for dtype in (None, jnp.float32):
            got = row_block_pass("logistic", theta, lazy, y, c, dtype, block_rows=block)
            want = row_block_pass("logistic", theta, jnp.asarray(X[index]), y, c, dtype, block)
            for a, b in zip(got, want, strict=True):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)


def test_large_vertices_read_their_rows_lazily_and_equal_the_full_solve(monkeypatch):
    """From more rows than one pass block per group, a one-group vertex is solved through a
    GatheredRows (no copy of the group's rows; float32 Hessian blocks too) and gives the
    full-data oracle."""
    n_groups, per_group = 5, pass_block_rows(3) + 1000
    X, y, groups = _data(n=n_groups * per_group, num_groups=n_groups, seed=4)
    made = []
    monkeypatch.setattr(_bilevel, "GatheredRows", lambda *a: made.append(1) or GatheredRows(*a))
    with jax.enable_x64(True):
        for X_hessian in (None, blocked_hessian()):
            problem = dense_problem(X, y, groups, X_hessian=X_hessian)
            orc = ImplicitOracle("logistic", SPEC, n_groups, problem, jnp.zeros(4), groups)
            assert orc.runtime.group_rows is not None
            made.clear()
            for g in (0, 3):
                vertex = np.eye(n_groups)[g]
                value, grad, out = orc.evaluate(vertex)
                ref = oracle("logistic", SPEC, n_groups, jnp.asarray(vertex), jnp.zeros(4), problem)
                np.testing.assert_allclose(value, float(ref.value), rtol=1e-9)
                np.testing.assert_allclose(grad, np.asarray(ref.grad), rtol=1e-6, atol=1e-9)
                np.testing.assert_allclose(np.asarray(out.theta), np.asarray(ref.theta), atol=1e-7)
            assert made  # the lazy path ran


def test_slsqp_first_step_scaling():
    """The objective scale makes SLSQP's first (identity-Hessian) step move the largest
    weight by SLSQP_FIRST_STEP; a constant shift of the gradient (normal to the simplex)
    does not change it, and a zero tangent gradient leaves the scale alone."""
    grad = np.array([0.003, -0.001, 0.0005])
    boost = _outer._first_step_boost(grad)
    step = boost * (grad - grad.mean())
    assert np.max(np.abs(step)) == pytest.approx(SLSQP_FIRST_STEP)
    assert _outer._first_step_boost(grad + 7.0) == pytest.approx(boost)
    assert _outer._first_step_boost(np.full(3, 2.0)) == 1.0
    assert _outer._first_step_boost(np.array([np.nan, 0.0, 1.0])) == 1.0
