"""Solver oracles of the constrained engine (constrained spec section 5, oracles 18-22).

Generic-constraint problems run through ``run_solver`` in float64 (scoped with
``jax.enable_x64``); references are closed forms, scipy and cvxpy + clarabel.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _constrained_helpers import FULL_BATCH, mse, step_context
from scipy.optimize import linprog

from fairest.constrained._engine import (
    GenericProblem,
    ghost_kappa,
    ghost_subproblem,
    run_solver,
    spawn_rngs,
    weighted_mean,
)
from fairest.constrained._engine._solvers import AlmState, SswState, _step_ssl_alm, _step_ssw

# ------------------------------------------------------------------------------------------
# oracle 22: convex norm-ball problem with a known solution
# ------------------------------------------------------------------------------------------


def _norm_ball_problem():
    rng = np.random.default_rng(0)
    n, p = 200, 5
    X = rng.normal(size=(n, p))
    y = X @ (2.0 * rng.normal(size=p)) + 0.5 * rng.normal(size=n)
    w_ols = np.linalg.lstsq(X, y, rcond=None)[0]
    r = 0.25 * w_ols @ w_ols  # active constraint

    def ridge(mu):
        return np.linalg.solve(X.T @ X / n + mu * np.eye(p), X.T @ y / n)

    lo, hi = 0.0, 1e3
    for _ in range(200):  # bisection on the ridge path: ||w(mu)||^2 = r
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ridge(mid) @ ridge(mid) > r else (lo, mid)
    w_star = ridge(hi)
    return X, y, r, w_star, np.mean((X @ w_star - y) ** 2)


def _norm_constraint(x, batch, aux):
    return jnp.array([x @ x - aux["r"]])


NORM_BALL = GenericProblem(mse, _norm_constraint, m=1)

CONVEX_RUNS = {
    "ssw": dict(
        learning_rate=0.05,
        constraint_learning_rate=0.05,
        learning_rate_rule="dimin",
        constraint_learning_rate_rule="dimin",
        constraint_tol=0.0,
        constraint_tol_decay=1.0,
        constraint_tol_decay_start=10**9,
        reset_each_epoch=False,
        output="last",
        output_start=0,
    ),
    "alm": dict(
        learning_rate=0.05,
        dual_learning_rate=0.05,
        penalty_strength=1.0,
        proximal_strength=0.0,
        anchor_rate=0.5,
        dual_radius=1e6,
        slack_init="zero",
        final_full_step=False,
    ),
    "gda": dict(learning_rate=0.05, dual_learning_rate=0.05),
    "ghost": dict(
        mlmc_probability=0.4,
        learning_rate=0.5,
        learning_rate_decay_rate=0.0,
        learning_rate_rule="inv_iter",
        relaxation_weight=0.5,
        relaxation_radius=0.8,
        proximal_strength=2.0,
        trust_radius=10.0,
        max_iter=300,
        sampling="full",
        qp_backend="dual",
    ),
}


@pytest.mark.parametrize("solver", sorted(CONVEX_RUNS))
def test_constrained_all_solvers_reach_norm_ball_optimum(solver, x64):
    X, y, r, w_star, f_star = _norm_ball_problem()
    # independent check of the reference with cvxpy + clarabel
    import cvxpy as cp

    w = cp.Variable(X.shape[1])
    cp.Problem(cp.Minimize(cp.sum_squares(X @ w - y) / X.shape[0]), [cp.sum_squares(w) <= r]).solve(
        solver="CLARABEL"
    )
    np.testing.assert_allclose(w.value, w_star, atol=1e-6)

    cells = np.zeros(X.shape[0], dtype=np.int32)
    res = run_solver(
        solver,
        NORM_BALL,
        X,
        y,
        cells,
        cells,
        np.zeros(X.shape[1]),
        hyper=CONVEX_RUNS[solver],
        aux={"r": jnp.asarray(r)},
        **FULL_BATCH,
        max_iter=300 if solver == "ghost" else 20_000,
        rngs=spawn_rngs(0),
        dtype=jnp.float64,
    )
    x = res.x
    assert x @ x - r <= 1e-2 * r
    assert np.mean((X @ x - y) ** 2) <= 1.02 * f_star
    np.testing.assert_allclose(x, w_star, atol=5e-2 * np.linalg.norm(w_star))
    if solver == "gda":
        assert np.all(res.history["lambda_0"] >= 0.0)  # projected multipliers


# ------------------------------------------------------------------------------------------
# oracle 18: SSL-ALM invariants
# ------------------------------------------------------------------------------------------


def _two_constraint_problem():
    def obj(x, batch, aux):
        return weighted_mean(jnp.logaddexp(0.0, batch.X @ x) - batch.y * (batch.X @ x), batch.w)

    def con(x, batch, aux):
        means = jax.ops.segment_sum(batch.w * (batch.X @ x) ** 2, batch.g, num_segments=2)
        counts = jax.ops.segment_sum(batch.w, batch.g, num_segments=2)
        gap = means[0] / counts[0] - means[1] / counts[1]
        return jnp.array([gap - aux["delta"], -gap - aux["delta"]])

    return GenericProblem(obj, con, m=2, n_cells=2)


def _small_data(n=120, p=4, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    g = (rng.random(n) < 0.4).astype(np.int32)
    X[g == 1] *= 1.5
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(np.float64)
    return X, y, g


def _run_small(solver, hyper, delta, seed, **options):
    """``run_solver`` on the small two-constraint problem in float64 (call under x64)."""
    X, y, g = _small_data()
    return run_solver(
        solver,
        _two_constraint_problem(),
        X,
        y,
        g,
        g,
        np.zeros(4),
        hyper=hyper,
        aux={"delta": jnp.asarray(delta)},
        rngs=spawn_rngs(seed),
        dtype=jnp.float64,
        **options,
    )


def _alm_state(x):
    """An SSL-ALM state at ``x``: one positive and one zero slack, multipliers of both
    signs, anchors away from the iterate."""
    return AlmState(
        x=x,
        s=jnp.asarray([0.3, 0.0]),
        y=jnp.asarray([0.2, -0.1]),
        z_x=x + 0.1,
        z_s=jnp.asarray([0.1, 0.2]),
    )


def _ssl_alm_context():
    """An SSL-ALM step context on the small two-constraint problem (call under x64);
    returns the context, its hyper-parameters and the group codes."""
    X, y, g = _small_data()
    hyper_np = dict(
        learning_rate=0.05,
        dual_learning_rate=0.5,
        penalty_strength=1.0,
        proximal_strength=2.0,
        anchor_rate=0.5,
        dual_radius=10.0,
    )
    hyper = {k: jnp.asarray(v) for k, v in hyper_np.items()}
    problem = _two_constraint_problem()
    ctx = step_context(problem, X, y, g, {"delta": jnp.asarray(0.01)}, hyper)
    return ctx, hyper, g


def test_constrained_ssl_alm_step_invariants(x64):
    ctx, hyper, g = _ssl_alm_context()
    rng = np.random.default_rng(3)
    inp = {"obj_idx": jnp.asarray(rng.integers(0, 120, 8)), "obj_w": jnp.ones(8)}
    for k in (1, 2):
        idx = np.concatenate([rng.choice(np.flatnonzero(g == c), 4) for c in (0, 1)])
        inp[f"con_idx{k}"], inp[f"con_w{k}"] = jnp.asarray(idx), jnp.ones(8)
    x = jnp.asarray(rng.normal(size=4))
    state = _alm_state(x)
    s = state["s"]
    new, _ = _step_ssl_alm(state, inp, ctx)

    # explicit full-Jacobian reference of steps 2-7
    b1, b2, bf = ctx.con_batch(inp, 1), ctx.con_batch(inp, 2), ctx.obj_batch(inp)
    J = jax.jacrev(lambda z: ctx.c(z, b1))(x)
    h1 = ctx.c(x, b1) + s
    y_ref = state["y"] + hyper["dual_learning_rate"] * h1
    assert np.linalg.norm(y_ref) < 10.0
    h2 = ctx.c(x, b2) + s
    G_x = (
        jax.grad(ctx.f)(x, bf)
        + J.T @ y_ref
        + hyper["penalty_strength"] * J.T @ h2
        + hyper["proximal_strength"] * (x - state["z_x"])
    )
    G_s = y_ref + hyper["penalty_strength"] * h2 + hyper["proximal_strength"] * (s - state["z_s"])
    np.testing.assert_allclose(new["y"], y_ref, rtol=1e-12)
    lr = hyper["learning_rate"]
    np.testing.assert_allclose(new["x"], x - lr * G_x, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(new["s"], np.maximum(s - lr * G_s, 0), atol=1e-14)
    np.testing.assert_allclose(new["z_x"], 0.5 * state["z_x"] + 0.5 * x, rtol=1e-14)
    np.testing.assert_allclose(new["z_s"], 0.5 * state["z_s"] + 0.5 * s, rtol=1e-14)
    assert np.all(np.asarray(new["s"]) >= 0)

    # safeguard: ||y + eta h1|| >= M_y stores exactly 0
    big = state._replace(y=jnp.asarray([9.99, 0.5]))
    assert np.linalg.norm(big["y"] + hyper["dual_learning_rate"] * h1) >= 10.0
    new_big, _ = _step_ssl_alm(big, inp, ctx)
    assert np.all(np.asarray(new_big["y"]) == 0.0)


def test_constrained_ssl_alm_history_invariants(x64):
    hyper = dict(
        learning_rate=0.05,
        dual_learning_rate=2.0,
        penalty_strength=1.0,
        proximal_strength=2.0,
        anchor_rate=0.5,
        dual_radius=1.0,
        slack_init="zero",
        final_full_step=True,
    )
    res = _run_small("ssl-alm", hyper, 0.0, 5, batch_size=8, constraint_batch_size=4, n_epochs=3)
    lam = np.column_stack([res.history["lambda_0"], res.history["lambda_1"]])
    slack = np.column_stack([res.history["slack_0"], res.history["slack_1"]])
    assert np.all(slack >= 0) and np.all(res.state["s"] >= 0)
    assert np.all(np.linalg.norm(lam, axis=1) < 1.0)
    assert np.any(np.all(lam == 0.0, axis=1)[1:])  # the safeguard fired at least once
    assert res.n_iter == 3 * 15 == len(res.history["iter"])


# ------------------------------------------------------------------------------------------
# oracle 21: Ghost kappa and subproblem
# ------------------------------------------------------------------------------------------


def _ghost_instance(m, seed=0, n=6):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n), rng.normal(size=m) + 0.5, rng.normal(size=(m, n))


@pytest.mark.parametrize("m", [1, 2, 3])
def test_constrained_ghost_kappa_and_lp(m):
    g, c, J = _ghost_instance(m)
    kappa, t_star, _ = ghost_kappa(c, J, 0.5, 0.8)
    assert 0.0 <= kappa <= np.maximum(c, 0).max() + 1e-12
    # the LP against a direct linprog of min t s.t. c + J d <= t, t >= 0, |d| <= rho
    n = J.shape[1]
    res = linprog(
        np.r_[np.zeros(n), 1.0],
        A_ub=np.hstack([J, -np.ones((m, 1))]),
        b_ub=-c,
        bounds=[(-0.8, 0.8)] * n + [(0, None)],
        method="highs",
    )
    np.testing.assert_allclose(t_star, res.x[-1], atol=1e-9)
    # all constraints satisfied -> kappa = 0
    kappa0, _, _ = ghost_kappa(-np.abs(c), J, 0.5, 0.8)
    assert kappa0 == 0.0


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("scale", [0.01, 1.0, 10.0])
def test_constrained_ghost_kappa_pair_closed_form_equals_lp(seed, scale):
    """The two sides of one loss gap (J_2 = -J_1) skip the LP: same t*, a feasible d."""
    rng = np.random.default_rng(seed)
    J1 = scale * rng.normal(size=7)
    J = np.vstack([J1, -J1])
    c = rng.normal(size=2) + rng.choice([-1.0, 0.5, 3.0])
    _, t_star, d = ghost_kappa(c, J, 0.5, 0.8)
    res = linprog(
        np.r_[np.zeros(7), 1.0],
        A_ub=np.hstack([J, -np.ones((2, 1))]),
        b_ub=-c,
        bounds=[(-0.8, 0.8)] * 7 + [(0, None)],
        method="highs",
    )
    np.testing.assert_allclose(t_star, res.x[-1], atol=1e-9)
    assert np.all(np.abs(d) <= 0.8 + 1e-12)
    assert np.all(c + J @ d <= t_star + 1e-9)  # d attains t*


@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_constrained_ghost_qp_backends_agree(m, seed):
    g, c, J = _ghost_instance(m, seed)
    c = c + 3.0  # strongly violated: kappa relaxation is what keeps the QP feasible
    kw = dict(tau=1.0, box=10.0, kappa_lambda=0.5, kappa_box=0.8)
    d_dual, kappa, failed_dual = ghost_subproblem(g, c, J, backend="dual", **kw)
    d_cvx, _, failed_cvx = ghost_subproblem(g, c, J, backend="cvxpy", **kw)
    assert not failed_dual and not failed_cvx
    np.testing.assert_allclose(d_dual, d_cvx, atol=1e-6)
    assert np.all(c + J @ d_dual <= kappa + 1e-8) and np.all(np.abs(d_dual) <= 10 + 1e-12)
    # feasibility certificate of spec 3.7: lambda_kappa * d_LP is feasible when rho <= beta
    _, t_star, d_lp = ghost_kappa(c, J, 0.5, 0.8)
    if m > 1:
        assert np.all(c + J @ (0.5 * d_lp) <= kappa + 1e-8)
    else:
        assert c[0] + J[0] @ (0.5 * d_lp) <= kappa + 1e-8


def test_constrained_ghost_reduces_to_sgd(x64):
    """Oracle 20: delta, beta huge -> d = -g/tau and x_{k+1} = x_k - gamma_k/tau grad f(1 row)."""
    X, y, g = _small_data()
    hyper = dict(
        mlmc_probability=0.4,
        learning_rate=0.05,
        learning_rate_decay_rate=0.05,
        learning_rate_rule="dimin",
        relaxation_weight=0.5,
        relaxation_radius=0.8,
        proximal_strength=2.0,
        trust_radius=1e6,
        max_iter=20,
        sampling="mlmc",
        qp_backend="dual",
    )
    res = _run_small("ghost", hyper, 1e6, 7, n_epochs=None)
    # replay the same draws: objective stream rngs[1], one row per iteration after the
    # 2^{N+1} big-sample rows (draw order of the engine)
    rngs = spawn_rngs(7)
    obj_rng, con_rng, solver_rng = rngs[1], rngs[2], rngs[3]
    members = [np.flatnonzero(g == c) for c in (0, 1)]
    largest = max(mm.size for mm in members)
    x = np.zeros(4)
    gamma = 0.05
    for k in range(20):
        if k > 0:
            gamma = gamma * (1 - 0.05 * gamma)
        N = int(solver_rng.geometric(0.4)) - 1
        while 2 ** (N + 1) > largest:
            N = int(solver_rng.geometric(0.4)) - 1
        size = 2 ** (N + 1)
        obj_rng.integers(len(y), size=size)
        for mm in members:
            con_rng.integers(mm.size, size=size)
        row = obj_rng.integers(len(y), size=1)
        for mm in members:
            con_rng.integers(mm.size, size=1)
        z = X[row] @ x
        grad = (X[row].T @ (1 / (1 + np.exp(-z)) - y[row])) / 1
        x = x - gamma / 2.0 * grad
    np.testing.assert_allclose(res.x, x, atol=1e-10)
    assert res.extras["n_qp_failures"] == 0


# ------------------------------------------------------------------------------------------
# SSL-ALM constraint_draw="shared" [F]: the penalty value reuses the Jacobian's draw
# ------------------------------------------------------------------------------------------


def test_constrained_ssl_alm_shared_draw_step_uses_zeta1_only(x64):
    ctx, hyper, g = _ssl_alm_context()
    rng = np.random.default_rng(4)
    idx = np.concatenate([rng.choice(np.flatnonzero(g == c), 4) for c in (0, 1)])
    inp = {
        "obj_idx": jnp.asarray(rng.integers(0, 120, 8)),
        "obj_w": jnp.ones(8),
        "con_idx1": jnp.asarray(idx),
        "con_w1": jnp.ones(8),
    }  # no second draw
    x = jnp.asarray(rng.normal(size=4))
    state = _alm_state(x)
    s = state["s"]
    new, _ = _step_ssl_alm(state, inp, ctx, shared_draw=True)

    b1, bf = ctx.con_batch(inp, 1), ctx.obj_batch(inp)
    J = jax.jacrev(lambda z: ctx.c(z, b1))(x)
    h1 = ctx.c(x, b1) + s
    y_ref = state["y"] + hyper["dual_learning_rate"] * h1
    G_x = (
        jax.grad(ctx.f)(x, bf)
        + J.T @ (y_ref + hyper["penalty_strength"] * h1)
        + hyper["proximal_strength"] * (x - state["z_x"])
    )
    G_s = y_ref + hyper["penalty_strength"] * h1 + hyper["proximal_strength"] * (s - state["z_s"])
    np.testing.assert_allclose(new["y"], y_ref, rtol=1e-12)
    lr = hyper["learning_rate"]
    np.testing.assert_allclose(new["x"], x - lr * G_x, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(new["s"], np.maximum(s - lr * G_s, 0), atol=1e-14)


def _ssl_alm_run(constraint_draw, constraint_batch_size):
    hyper = dict(
        learning_rate=0.05,
        dual_learning_rate=0.5,
        penalty_strength=1.0,
        proximal_strength=2.0,
        anchor_rate=0.5,
        dual_radius=10.0,
        slack_init="zero",
        final_full_step=True,
        constraint_draw=constraint_draw,
    )
    with jax.enable_x64(True):
        return _run_small(
            "ssl-alm",
            hyper,
            0.01,
            7,
            batch_size=8,
            constraint_batch_size=constraint_batch_size,
            n_epochs=2,
        )


def test_constrained_ssl_alm_shared_draw_runs():
    # whole groups as constraint "draws": zeta1 = zeta2, so both estimators coincide
    full_ind, full_sh = _ssl_alm_run("independent", None), _ssl_alm_run("shared", None)
    np.testing.assert_allclose(full_sh.x, full_ind.x, rtol=1e-12, atol=1e-14)
    # minibatch draws: different estimators, one constraint draw per iteration logged
    ind, sh = _ssl_alm_run("independent", 4), _ssl_alm_run("shared", 4)
    assert not np.allclose(sh.x, ind.x)
    rows = 8 + 2 * 4
    np.testing.assert_array_equal(sh.history["n_samples"], (sh.history["iter"] + 1) * rows)
    np.testing.assert_array_equal(
        ind.history["n_samples"], (ind.history["iter"] + 1) * (rows + 2 * 4)
    )


def test_constrained_ssw_shared_draw_steps_on_the_tested_draw(x64):
    problem = _two_constraint_problem()
    X, y, g = _small_data()
    hyper_np = dict(
        learning_rate=0.5,
        constraint_learning_rate=0.05,
        constraint_tol=1e-4,
        constraint_tol_decay=0.97,
        constraint_tol_decay_start=500,
        output_start=0,
    )
    hyper = {k: jnp.asarray(v) for k, v in hyper_np.items()}
    ctx = step_context(problem, X, y, g, {"delta": jnp.asarray(-1.0)}, hyper)
    rng = np.random.default_rng(5)
    idx = np.concatenate([rng.choice(np.flatnonzero(g == c), 4) for c in (0, 1)])
    inp = {
        "obj_idx": jnp.asarray(rng.integers(0, 120, 8)),
        "obj_w": jnp.ones(8),
        "con_idx1": jnp.asarray(idx),
        "con_w1": jnp.ones(8),  # no second draw
        "t": jnp.asarray(0),
        "it": jnp.asarray(0),
        "u": jnp.asarray(0.5),
    }
    x = jnp.asarray(rng.normal(size=4))
    zero = jnp.zeros((), jnp.int32)
    state = SswState(x=x, n_f=zero, n_c=zero, x_out=x, w_total=jnp.zeros(()))
    new, log = _step_ssw(
        state, inp, ctx, f_rule="const", c_rule="const", reset=True, shared_draw=True
    )
    b1 = ctx.con_batch(inp, 1)
    c1 = ctx.c(x, b1)
    assert bool(log["constraint_step"])  # delta = -1: every estimate is violated
    grad = jax.grad(lambda z: jnp.max(ctx.c(z, b1)))(x)
    np.testing.assert_allclose(new["x"], x - 0.05 * grad, rtol=1e-12)
    np.testing.assert_allclose(log["c"], c1, rtol=1e-12)
