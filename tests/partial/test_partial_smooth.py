"""The default solver ``solver="smooth_alm"`` (augmented Lagrangian on the smoothed
problem, damped Gauss-Newton rounds in one jitted loop, ``fairest.partial._fast``): its
smoothing against the exact constraints, its gradient and Gauss-Newton matrix against
autodiff, the whole run against SciPy's L-BFGS-B on the same smoothed problem and
against IDCA with exact (ALM) subproblem solves, its convergence and stall stops, warm
tightening."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _partial_helpers import PDP, PSP, make_data, make_problem

from fairest.partial import PartialParityClassifier
from fairest.partial import _fast as fast_module
from fairest.partial import _smooth as smooth_module
from fairest.partial._dc import constraint_values
from fairest.partial._defaults import PARTIAL_RULES
from fairest.utils import FairnessWarning


@pytest.mark.parametrize(
    "metric,surrogate", [(PSP, "ramp"), (PSP, "sigmoid"), (PDP, "ramp"), (PDP, "sigmoid")]
)
def test_smoothed_constraints_tend_to_the_exact_ones(x64, metric, surrogate):
    """The smoothed constraints differ from the exact surrogate constraints (computed by
    the independent formulas of ``constraint_values``) by at most the smoothing error:
    ``delta / 4`` a rounded kink (two a ramp), ``delta log 2`` a smoothed ``min``."""
    cfg, data, x0, *_ = make_problem(metric, surrogate, n=200, d=3, n_grid=4)
    x = jnp.asarray(x0) + 0.7 * jax.random.normal(jax.random.PRNGKey(0), x0.shape)
    exact = np.asarray(constraint_values(x, data, cfg))
    off = np.isfinite(exact)
    for delta in (0.1, 0.01, 1e-3):
        smooth = np.asarray(smooth_module.smooth_constraint_values(x, data, cfg, delta))
        bound = 0.5 * delta + (2 * np.log(2) * delta if metric == PDP else 0.0)
        assert np.max(np.abs(smooth[off] - exact[off])) <= bound + 1e-12
        if surrogate == "ramp" and delta == 0.1:
            assert np.max(np.abs(smooth[off] - exact[off])) > 0  # it does smooth


@pytest.mark.parametrize("metric", [PSP, PDP])
def test_default_run_stops_on_convergence_near_exact_idca(metric):
    """solver="smooth_alm" stops on the convergence test well before max_iter,
    and reach the objective of IDCA with exact ALM subproblem solves on the same
    surrogate problem within 1 % (one solve each: no tightening round)."""
    with PARTIAL_RULES.override(tighten_rounds=0):
        X, y, g = make_data(400, 3, 2)
        params = dict(metric=metric, interval=(0.0, 0.5), tolerance=0.2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FairnessWarning)
            fast = PartialParityClassifier(**params, solver="smooth_alm").fit(
                X, y, sensitive_features=g
            )
            exact = PartialParityClassifier(
                **params, solver="idca", inner_solver="alm", max_iter=40, inner_max_iter=400
            ).fit(X, y, sensitive_features=g)
        assert fast.n_iter_ < 0.5 * fast.max_iter
        final_fast = fast.tightening_["objective"][0]
        final_exact = exact.tightening_["objective"][0]
        assert final_fast <= 1.01 * final_exact
        assert fast.constraint_violation_ <= fast.inner_tol


def test_lbfgs_iterates_recorded_and_warm_tightening(monkeypatch):
    """history_ holds every augmented-Lagrangian round up to the returned one; a
    tightening round starts from the last solve's final model (not from the constant
    start)."""
    X, y, g = make_data(300, 3, 0)
    clf = PartialParityClassifier(
        interval=(0.0, 0.5), tolerance=0.05, solver="smooth_alm", record_history=True
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessWarning)
        clf.fit(X, y, sensitive_features=g)
    assert clf.history_["params"].shape[0] == clf.n_iter_ + 1
    assert np.all(np.isfinite(clf.history_["objective"]))
    calls = []
    original = fast_module.run_fast_alm

    def spy(x0, *args, **kwargs):
        calls.append(np.asarray(x0))
        result = original(x0, *args, **kwargs)
        calls.append(np.asarray(result.iterates[-1]))
        return result

    monkeypatch.setattr("fairest.partial._runtime.run_fast_alm", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessWarning)
        clf.fit(X, y, sensitive_features=g)
    starts, finals = calls[0::2], calls[1::2]
    assert len(starts) >= 2  # tolerance 0.05 on 300 rows: at least one tightening round
    # every round but a cold restart (when no warm round got feasible) starts warm
    warm = [np.array_equal(s, f) for s, f in zip(starts[1:], finals[:-1], strict=False)]
    assert warm[0]


@pytest.mark.parametrize("rows", [None, 64])
@pytest.mark.parametrize(
    "metric,surrogate", [(PSP, "ramp"), (PSP, "sigmoid"), (PDP, "ramp"), (PDP, "sigmoid")]
)
def test_gauss_newton_pieces_equal_autodiff(x64, metric, surrogate, rows):
    """``_evaluate``'s value and gradient equal ``jax.value_and_grad`` of the augmented
    Lagrangian written from ``smooth_constraint_values``; its matrix equals the Hessian of
    ``f_0`` plus ``rho J_A^T J_A`` with ``J = jax.jacrev`` of the smoothed constraints
    (plus the documented shift); a line-search value equals the Lagrangian; a round's end
    equals ``smooth_constraint_values``, ``objective`` and ``constraint_values``. Every
    pass in one block of all 208 (padded) rows and in blocks of 64 rows (four, the last
    clamped: its 48 rows already summed count zero)."""
    cfg, data, x0, *_ = make_problem(metric, surrogate, n=200, d=3, n_grid=4, alpha=0.1)
    rows = data.c0.shape[0] if rows is None else rows
    x = jnp.asarray(x0) + 0.3 * jax.random.normal(jax.random.PRNGKey(1), x0.shape)
    m = fast_module.num_constraints(cfg)
    lam, rho, delta = jnp.linspace(0.0, 1.0, m), 3.0, 0.05
    hessian = fast_module._loss_hessian(x, data, cfg, rows)
    value, grad, H = fast_module._evaluate(x, lam, rho, delta, hessian, data, cfg, rows)
    lagrangian = jax.value_and_grad(smooth_module._lagrangian)
    ref_value, ref_grad = lagrangian(x, lam, rho, delta, data, cfg)
    assert float(value) == pytest.approx(float(ref_value), rel=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-12)
    assert float(fast_module._value(x, lam, rho, delta, data, cfg, rows)) == pytest.approx(
        float(ref_value), rel=1e-12
    )
    c = smooth_module.smooth_constraint_values(x, data, cfg, delta)
    J = jax.jacrev(smooth_module.smooth_constraint_values)(x, data, cfg, delta)
    active = np.asarray(lam + rho * c > 0, dtype=float)
    loss = jax.hessian(lambda v: smooth_module.objective(v, data, cfg))(x)
    ref = np.asarray(loss) + rho * (J * active[:, None]).T @ J
    shift = np.asarray(H) - ref
    np.testing.assert_allclose(shift - np.diag(np.diag(shift)), 0.0, atol=1e-10)
    assert np.all(np.diag(shift) > 0) and np.ptp(np.diag(shift)) < 1e-12
    end_c, f0, exact_max = fast_module._round_end(x, delta, data, cfg, rows)
    np.testing.assert_allclose(end_c, c, rtol=1e-12, atol=1e-14)
    assert float(f0) == pytest.approx(float(smooth_module.objective(x, data, cfg)), rel=1e-12)
    exact = float(jnp.max(constraint_values(x, data, cfg)))
    assert float(exact_max) == pytest.approx(exact, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("metric", [PSP, PDP])
def test_fast_run_matches_scipy_lbfgs_on_the_smoothed_problem(x64, metric):
    """One run of the Gauss-Newton solver (float32 and float64 data) against the SciPy
    L-BFGS-B rounds (``run_smooth_alm``, float64) on the same smoothed problem and start:
    both converge, the fast one within 1 % of its objective and within ``eps`` of the
    exact surrogate constraints, in fewer rounds than the cap."""
    cfg, data, x0, *_ = make_problem(metric, "ramp", n=400, d=3, n_grid=4)
    eps, tol = 1e-3, 1e-5
    ref = smooth_module.run_smooth_alm(x0, data, cfg, eps, tol, 100)
    assert ref.converged
    for fast_data in (data, fast_module.solver_data(data)):
        fast = fast_module.run_fast_alm(x0, fast_data, cfg, eps, tol, 100)
        assert fast.converged and fast.n_steps.size < 100
        assert fast.objective[-1] <= 1.01 * ref.objective[-1]
        exact = constraint_values(jnp.asarray(fast.iterates[-1]), data, cfg)
        assert float(jnp.max(exact)) <= eps


def test_float32_rounds_stop_at_float32_resolution(x64):
    """A float32 run's rounds end when a step's decrease or the gradient is at the level
    of float32 rounding (``_FTOL``, ``_GTOL`` by precision): on three 2,000-row pSP
    problems (5 groups, 10 levels) it reaches the float64 run's objective within 1e-4
    (relative) in under half its Gauss-Newton steps (0.38; float64's stopping tests in
    float32 take 0.62 of them, moving the point by rounding)."""
    steps32 = steps64 = 0
    for seed in range(3):
        cfg, data, x0, *_ = make_problem(
            PSP, n=2000, d=20, n_grid=10, n_groups=5, seed=seed, tolerance=0.05, interval=(0, 0.3)
        )
        ref = fast_module.run_fast_alm(x0, data, cfg, 1e-3, 1e-5, 100)
        run = fast_module.run_fast_alm(x0, fast_module.solver_data(data), cfg, 1e-3, 1e-5, 100)
        assert ref.converged and run.converged
        assert run.objective[-1] == pytest.approx(ref.objective[-1], rel=1e-4)
        steps32, steps64 = steps32 + run.n_steps.sum(), steps64 + ref.n_steps.sum()
    assert steps32 < 0.5 * steps64


def test_fast_run_stops_when_the_worst_violation_is_flat(x64):
    """A violated constraint that no parameter change can move (a pSP level above every
    score's ramp, its gradient zero): the run stops after two unchanged rounds, not
    converged, instead of raising the penalty to its cap for ``max_rounds``."""
    cfg, data, x0, *_ = make_problem(PSP, "ramp", n=200, d=3, n_grid=4)
    # a level of 0.9 above a threshold far above every score: mean 0 <= 0.9 is violated
    # (lower constraint 0.9 - mean > 0) and flat in every variable
    data = data._replace(grid=data.grid.at[0].set(0.9))
    x = jnp.asarray(x0).at[-cfg.num_levels].set(1e3)
    result = fast_module.run_fast_alm(x, data, cfg, 1e-3, 1e-5, 50)
    assert not result.converged
    assert result.n_steps.size <= 4
    assert result.max_violation[-1] == pytest.approx(0.9, abs=1e-6)


def test_weighted_gram_of_sparse_rows_equals_dense(x64):
    """The Gauss-Newton Gram over ELL rows (scatter of the per-row outer products)
    equals ``X~^T diag(a) X~`` of the dense matrix."""
    from fairest._kernels._sparse import ell_rows
    from fairest.partial._common import ell_slots

    rng = np.random.default_rng(0)
    X = np.zeros((60, 40))
    X[np.arange(60)[:, None], rng.integers(0, 40, size=(60, 3))] = rng.normal(size=(60, 3))
    index, value = ell_slots(X)
    rows = ell_rows(jnp.asarray(index), jnp.asarray(value), X.shape[1])
    a = jnp.asarray(rng.random(60))
    Xt = np.column_stack([np.ones(60), X])
    expected = Xt.T @ (np.asarray(a)[:, None] * Xt)
    gram = fast_module._bordered_gram(*fast_module._gram_sums(rows, a))
    np.testing.assert_allclose(gram, expected, atol=1e-12)
    dense = fast_module._bordered_gram(*fast_module._gram_sums(jnp.asarray(X), a))
    np.testing.assert_allclose(dense, expected, rtol=1e-12, atol=1e-12)


def test_newton_direction_survives_an_indefinite_float32_gram():
    """A float32 Gram of collinear columns (one-hot levels beside the intercept) can be
    slightly indefinite: the plain Cholesky direction is NaN (every step rejected, the
    fit left at its start: Adult with sparse one-hot columns gave the constant model);
    the retried solve gives a finite descent direction."""
    from fairest.partial._fast import _newton_direction

    H = jnp.asarray([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]], jnp.float32)
    H = H - 1e-6 * jnp.eye(3, dtype=jnp.float32)
    grad = jnp.asarray([0.3, -0.2, 0.1], jnp.float32)
    plain = -jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(H), grad)
    assert not np.all(np.isfinite(np.asarray(plain)))
    direction = np.asarray(_newton_direction(H, grad))
    assert np.all(np.isfinite(direction))
    assert float(np.dot(np.asarray(grad), direction)) < 0.0
