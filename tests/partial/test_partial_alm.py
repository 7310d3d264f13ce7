"""The ALM inner solver of the pSP subproblem: its derivatives against autodiff, its
smoothing against the exact constraints, its optimum against cvxpy + Clarabel, and IDCA
/ the estimator run with it."""

import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _partial_helpers import PDP, PSP, cvxpy_subproblem, make_data, make_problem
from sklearn.exceptions import ConvergenceWarning

from fairest.metrics import partial_demographic_parity, partial_statistical_parity
from fairest.partial import PartialParityClassifier
from fairest.partial import _alm as alm_module
from fairest.partial._alm import _lagrangian, _newton_matrix, _pieces, alm, dense_data
from fairest.partial._dc import anchor, evaluate, num_constraints
from fairest.partial._idca import run_idca


def _alm_result(v0, anc, data, cfg, eps, n_iter):
    return alm(v0, anc, data, cfg, eps, n_iter)[0]


_alm = jax.jit(_alm_result, static_argnames="cfg")
_anchor = jax.jit(anchor, static_argnames="cfg")


def _anchor_after(cfg, data, x0, iterations):
    xk = jnp.asarray(x0)
    if iterations:
        xk = run_idca(xk, data, cfg, 1e-3, 100, iterations).x
    return xk, _anchor(xk, data, cfg)


PROBLEMS = [
    (PSP, "ramp", "minimal"),
    (PSP, "sigmoid", "minimal"),
    (PDP, "ramp", "minimal"),
    (PDP, "ramp", "paper"),
    (PDP, "sigmoid", "minimal"),
]


@pytest.mark.parametrize("metric,surrogate,dc_split", PROBLEMS)
def test_newton_matrix_and_jacobian_equal_autodiff(x64, metric, surrogate, dc_split):
    """The assembled Newton matrix is the Hessian of the augmented Lagrangian (where every
    constraint is strictly active or inactive) and the Jacobian that of the constraints,
    with sample weights, L2, the proximal add-on and three groups."""
    weights = np.random.default_rng(1).uniform(0.5, 2.0, 50)
    pdp = metric == PDP
    cfg, data, x0, *_ = make_problem(
        metric,
        surrogate,
        dc_split,
        n=50,
        d=3,
        n_grid=3,
        proximal_strength=0.3,
        alpha=0.2,
        n_groups=3,
        sample_weight=weights,
        tolerance=0.05 if pdp else 0.2,
        interval=(0.2, 0.7) if pdp else (0.0, 0.5),
    )
    data = dense_data(data)
    if pdp:  # a random anchor: the IDCA iterates keep the groups' rates equal
        xk = jnp.asarray(x0) + jax.random.normal(jax.random.PRNGKey(3), x0.shape, x0.dtype)
        anc = _anchor(xk, data, cfg)
    else:
        xk, anc = _anchor_after(cfg, data, x0, 2)
    v = xk + 0.05 * jax.random.normal(jax.random.PRNGKey(0), xk.shape, xk.dtype)
    # wide smoothing: many samples contribute curvature (narrower for pDP, whose four
    # smoothed pieces per pair would otherwise make every pair active)
    delta = 0.05 if pdp else 0.3
    m = num_constraints(cfg)
    lam = jnp.where(jnp.arange(m) % 2 == 0, 0.0, jnp.linspace(0.0, 0.5, m))
    rho = 3.0

    def lagrangian(u):
        return _lagrangian(_pieces(u, anc, data, cfg, delta), lam, rho)[0]

    pieces = _pieces(v, anc, data, cfg, delta)
    _, shifted, grad = _lagrangian(pieces, lam, rho)
    assert 0 < int(jnp.sum(shifted > 0)) < m  # some active, some not
    if metric == PDP:
        assert int(jnp.sum(shifted > 0)) < m - cfg.num_groups  # the diagonal is never active
    assert np.min(np.abs(np.asarray(lam + rho * pieces.gcon))) > 1e-6  # no kink at v
    np.testing.assert_allclose(grad, jax.jit(jax.grad(lagrangian))(v), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        _newton_matrix(pieces, shifted, rho, data, cfg),
        jax.jit(jax.hessian(lagrangian))(v),
        rtol=1e-9,
        atol=1e-11,
    )
    constraints = jax.jacfwd(lambda u: _pieces(u, anc, data, cfg, delta).gcon)
    np.testing.assert_allclose(pieces.jac, jax.jit(constraints)(v), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("metric,surrogate,dc_split", PROBLEMS)
def test_smoothed_constraints_majorise_the_exact_ones(x64, metric, surrogate, dc_split):
    """The smoothed constraints never lie below the exact ones, and by at most delta log 2
    per smoothed piece above, so a point feasible for them is feasible for the
    subproblem."""
    cfg, data, x0, *_ = make_problem(
        metric, surrogate, dc_split, n=200, d=3, n_grid=4, tolerance=0.2 if metric == PSP else 0.05
    )
    data = dense_data(data)
    xk, anc = _anchor_after(cfg, data, x0, 3)
    smoothed = jax.jit(lambda v, delta: _pieces(v, anc, data, cfg, delta).gcon)
    exact_values = jax.jit(lambda v: evaluate(v, anc, data, cfg).gcon)
    key = jax.random.PRNGKey(2)
    for delta in (1e-1, 1e-2, 1e-3):
        for scale in (0.0, 0.1, 1.0):
            key, sub = jax.random.split(key)
            v = xk + scale * jax.random.normal(sub, xk.shape, xk.dtype)
            smooth = np.asarray(smoothed(v, delta))
            exact = np.asarray(exact_values(v))
            keep = np.isfinite(exact)  # the pDP diagonal is -inf
            assert np.all(smooth[keep] >= exact[keep] - 1e-14)
            # relu majorants: one per pSP constraint; pDP: 2 per max, a max and (paper) an
            # A per group of the pair; the sigmoid pDP only smooths the max
            per_group = {"ramp": 2 + (dc_split == "paper"), "sigmoid": 1}[surrogate]
            bound = 1 if metric == PSP else 2 * per_group
            assert np.all(smooth[keep] <= exact[keep] + bound * delta * np.log(2.0) + 1e-14)


@pytest.mark.parametrize("anchor_iterations", [0, 3])
def test_alm_matches_cvxpy_on_small_subproblem(x64, anchor_iterations):
    """The ALM solves subproblem (31) to the cvxpy + Clarabel optimum (1e-10 tolerances)
    within 2e-6, and its point is feasible for the exact constraints to 1e-8."""
    cfg, data, x0, X, y, g = make_problem(n=60, d=2, n_grid=3, tolerance=0.2)
    xk, anc = _anchor_after(cfg, data, x0, anchor_iterations)
    out = _alm(xk, anc, dense_data(data), cfg, 1e-3, 500)
    ev = evaluate(out.v, anc, data, cfg)
    reference = cvxpy_subproblem(
        np.asarray(xk), X, y.astype(float), g, np.asarray(data.grid), float(data.slack)
    )
    assert bool(out.found) and not bool(out.stuck)
    assert int(out.n_feasible) < 500  # converged, not stopped by the cap
    assert float(jnp.max(ev.gcon)) <= 1e-8
    assert float(out.g0) == pytest.approx(float(ev.g0), abs=1e-14)
    # within the bias of the softplus majorant (1e-4 wide): 8e-7 at the start, 2e-12 later
    assert abs(float(out.g0) - reference) <= 2e-6, (float(out.g0), reference)
    assert reference < float(anc.f0) - 1e-3  # the subproblem has work to do


def _cvxpy_pdp_subproblem(xk, anc, X, y, g, data, constrained=True):
    """Subproblem (31) of the ramp pDP problem (21) (minimal split, mu = 0) in cvxpy: the
    convex pieces written from spec 4.7, the linearisation taken from the anchor."""
    n, d = X.shape
    G = int(g.max()) + 1
    b, w = cp.Variable(), cp.Variable(d)
    s = X @ w + b
    objective = cp.sum(cp.logistic(-cp.multiply(2.0 * y - 1.0, s))) / n
    v = cp.hstack([cp.reshape(b, (1,), order="C"), w])
    lo, hi, slack = float(data.lo), float(data.hi), float(data.slack)
    P = {}
    for k in range(G):
        idx = np.flatnonzero(g == k)
        z = (s[idx] - float(data.threshold)) / float(data.width)
        A, B = cp.sum(cp.pos(z + 0.5)) / idx.size, cp.sum(cp.pos(z - 0.5)) / idx.size
        P[k] = (cp.maximum(B + lo, A), cp.maximum(B + hi, A))
    lin, const = np.asarray(anc.lin), np.asarray(anc.const)
    constraints = [
        P[k][0] + P[kk][1] - slack - (lin[k * G + kk] @ (v - xk) - const[k * G + kk]) <= 0
        for k in range(G)
        for kk in range(G)
        if k != kk
    ]
    problem = cp.Problem(cp.Minimize(objective), constraints if constrained else [])
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return problem.value


def test_alm_matches_cvxpy_on_small_pdp_subproblem(x64):
    """Same for pDP (ramp, minimal split): the optimum of cvxpy + Clarabel within 2e-6,
    feasible to 1e-8, at an anchor where the pDP constraint binds."""
    cfg, data, x0, X, y, g = make_problem(PDP, n=80, d=2, tolerance=0.02, interval=(0.2, 0.7))
    xk, anc = _anchor_after(cfg, data, x0, 3)
    out = _alm(xk, anc, dense_data(data), cfg, 1e-3, 500)
    ev = evaluate(out.v, anc, data, cfg)
    reference = _cvxpy_pdp_subproblem(np.asarray(xk), anc, X, y.astype(float), g, data)
    assert bool(out.found) and int(out.n_feasible) < 500
    assert float(jnp.max(ev.gcon)) <= 1e-8
    assert abs(float(out.g0) - reference) <= 2e-6, (float(out.g0), reference)
    free = _cvxpy_pdp_subproblem(np.asarray(xk), anc, X, y.astype(float), g, data, False)
    assert free < reference - 1e-3 and reference < float(anc.f0) - 1e-3


def test_alm_keeps_the_anchor_when_stopped_early(x64):
    """With too few iterations to become feasible the anchor (feasible) is returned: the
    IDCA invariants cannot break."""
    cfg, data, x0, *_ = make_problem(n=120, d=3, n_grid=4, tolerance=0.05)
    xk, anc = _anchor_after(cfg, data, x0, 0)
    out = _alm(xk, anc, dense_data(data), cfg, 1e-9, 1)
    first = evaluate(out.v, anc, data, cfg)
    assert float(out.g0) <= float(anc.f0) + 1e-15
    assert float(jnp.max(first.gcon)) <= max(float(anc.fmax), 1e-9)


@pytest.mark.parametrize("metric", [PSP, PDP])
def test_idca_with_alm_invariants_and_progress(x64, metric):
    """IDCA with exact subproblem solves keeps the invariants of spec 5.1 (objective
    non-increasing, iterates eps-feasible) and, being a plain DCA, gets further in 5
    outer iterations than IDCA with SSG (T = 200) does."""
    eps = 1e-3
    cfg, data, x0, *_ = make_problem(
        metric,
        n=300,
        d=3,
        n_grid=4,
        tolerance=0.1,
        interval=(0.0, 0.5) if metric == PSP else (0.2, 0.7),
    )
    exact = run_idca(jnp.asarray(x0), data, cfg, eps, 300, 5, inner="alm")
    objective = np.asarray(exact.objective)
    assert np.all(np.diff(objective) <= 1e-15)
    assert np.all(np.asarray(exact.max_violation)[1:] <= eps)
    assert np.all(np.asarray(exact.found))
    ssg = run_idca(jnp.asarray(x0), data, cfg, eps, 200, 5)
    assert objective[-1] < float(ssg.objective[-1]) - 1e-3


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")  # exact metric > tolerance
def test_estimator_with_alm(x64):
    """inner_solver='alm' fits (weights, sigmoid, pDP), keeps pSP near the tolerance and
    the loss at most SSG's."""
    X, y, g = make_data(400, 3, 0)
    interval = (0.0, 0.5)
    fits = {}
    for inner in ("ssg", "alm"):
        clf = PartialParityClassifier(
            interval=interval, tolerance=0.1, max_iter=10, solver="idca", inner_solver=inner
        )
        fits[inner] = clf.fit(X, y, sensitive_features=g)
    alm_fit = fits["alm"]
    # inner_max_iter="auto": the paper's T = 200 for SSG, a cap of 1000 for the ALM
    assert [fits[k].schedule_["inner_max_iter"] for k in ("ssg", "alm")] == [200, 1000]
    assert alm_fit.constraint_violation_ <= alm_fit.inner_tol
    assert alm_fit.objective_ <= fits["ssg"].objective_ + 1e-6
    psp = partial_statistical_parity(
        None, alm_fit.decision_function(X), sensitive_features=g, interval=interval
    )
    assert psp <= 0.1 + 0.9 / 10 + 0.1
    weights = np.where(g == 0, 2.0, 1.0)
    sig = PartialParityClassifier(
        interval=interval,
        surrogate="sigmoid",
        max_iter=5,
        solver="idca",
        inner_solver="alm",
        record_history=True,
    )
    sig.fit(X, y, sensitive_features=g, sample_weight=weights)
    assert np.all(np.diff(sig.history_["objective"]) <= 1e-15)
    assert sig.constraint_violation_ <= sig.inner_tol
    short = PartialParityClassifier(
        interval=interval, max_iter=2, solver="idca", inner_solver="alm", inner_max_iter=3
    )
    with pytest.warns(ConvergenceWarning, match="stopped at inner_max_iter=3 on 2 of 2"):
        short.fit(X, y, sensitive_features=g)
    pdp = PartialParityClassifier(
        PDP, interval=(0.2, 0.7), tolerance=0.05, max_iter=5, solver="idca", inner_solver="alm"
    )
    pdp.fit(X, y, sensitive_features=g)
    assert pdp.constraint_violation_ <= pdp.inner_tol
    assert (
        partial_demographic_parity(
            None, pdp.decision_function(X), sensitive_features=g, interval=(0.2, 0.7)
        )
        <= 0.05 + 0.1
    )


def test_multipliers_move_when_newton_never_converges(x64, monkeypatch):
    """Where the loss has no minimiser (a separable group, alpha = mu = 0) Newton can
    chase it for ever; the step cap per multiplier update keeps the ALM going. Simulated
    by a decrement threshold no step meets: the output is still a feasible improvement
    (without the cap the multipliers would stay 0 and the anchor come back)."""
    cfg, data, x0, *_ = make_problem(n=120, d=3, n_grid=4, tolerance=0.05)
    xk, anc = _anchor_after(cfg, data, x0, 0)
    monkeypatch.setattr(alm_module, "_DECREMENT", -1.0)
    out, final = alm(xk, anc, dense_data(data), cfg, 1e-3, 300)  # eager: traced afresh
    assert int(out.n_feasible) == 300
    assert float(jnp.max(final.lam)) > 0
    assert float(out.g0) < float(anc.f0) - 1e-3 and float(out.gmax) <= 1e-3
