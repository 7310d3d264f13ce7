"""DC pieces, linearisation and subgradients of problems (15) / (21) (spec oracles 7-10, 18)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _partial_helpers import PDP, PSP, make_problem

from fairest.partial._dc import (
    _gmean,
    _pdp_group_pieces,
    anchor,
    constraint_values,
    evaluate,
    matvec,
    objective,
    split,
)
from fairest.partial._idca import (
    constant_intercept,
    initial_point,
    level_grid,
    theory_schedule,
)

CASES = [
    (PSP, "ramp", "minimal"),
    (PSP, "sigmoid", "minimal"),
    (PDP, "ramp", "minimal"),
    (PDP, "ramp", "paper"),
    (PDP, "sigmoid", "minimal"),
]


def dc_pieces(x, data, cfg):
    """``(f^+, f^-)`` of every constraint (spec sections 4.5-4.8), the add-on
    ``(mu + rho) / 2 ||x||^2`` included on both sides. ``f^+ - f^-`` equals
    :func:`constraint_values` (off the pDP diagonal)."""
    b, w, theta = split(x, cfg)
    s = matvec(data.X, w) + b
    q = 0.5 * (data.mu + data.rho) * jnp.sum(x * x)
    if cfg.constraint == "statistical":
        z = (s[:, None] - theta[None, :]) / data.width
        p = data.grid[None, :]
        if cfg.surrogate == "ramp":
            A = _gmean(jax.nn.relu(z + 0.5), data, cfg)
            B = _gmean(jax.nn.relu(z - 0.5), data, cfg)
            plus = jnp.concatenate([B.ravel(), A.ravel()])
            minus = jnp.concatenate([(A - p).ravel(), (B + p + data.slack).ravel()])
        else:
            S = _gmean(jax.nn.sigmoid(z), data, cfg)
            zero = jnp.zeros_like(S)
            plus = jnp.concatenate([zero.ravel(), S.ravel()])
            minus = jnp.concatenate([(S - p).ravel(), (zero + p + data.slack).ravel()])
        return plus + q, minus + q
    if cfg.constraint == "demographic":
        z = (s - data.threshold) / data.width
        P_lo, P_hi, _, extra = _pdp_group_pieces(z, data, cfg)
        plus = P_lo[:, None] + P_hi[None, :] + extra[:, None] + extra[None, :]
        minus = P_hi[:, None] + P_lo[None, :] + extra[:, None] + extra[None, :] + data.slack
        return plus.ravel() + q, minus.ravel() + q
    empty = jnp.zeros((0,), dtype=x.dtype)
    return empty, empty


def _random_points(x0, rng, count=5, scale=0.7):
    return [np.asarray(x0) + scale * rng.normal(size=np.shape(x0)) for _ in range(count)]


def _numpy_constraints(x, X, g, weights, grid, slack, interval, surrogate, metric, G=2):
    """NumPy reference of the constraints of (15) / (21), straight from the spec formulas."""
    d = X.shape[1]
    s = X @ x[1 : 1 + d] + x[0]
    sigma = (
        (lambda z: np.clip(z + 0.5, 0, 1))
        if surrogate == "ramp"
        else (lambda z: 1 / (1 + np.exp(-z)))
    )
    lo, hi = interval
    if metric == PSP:
        theta = x[1 + d :]
        means = np.array(
            [
                [np.average(sigma(s[g == k] - t), weights=weights[g == k]) for t in theta]
                for k in range(G)
            ]
        )
        return np.concatenate([(grid[None] - means).ravel(), (means - grid[None] - slack).ravel()])
    S = np.array([np.average(sigma(s[g == k]), weights=weights[g == k]) for k in range(G)])
    T = np.minimum(S, hi) - np.minimum(S, lo)
    out = T[:, None] - T[None, :] - slack
    out[np.eye(G, dtype=bool)] = -np.inf
    return out.ravel()


@pytest.mark.parametrize("metric,surrogate,dc_split", CASES)
def test_dc_pieces_sum_to_constraints_and_match_numpy(x64, metric, surrogate, dc_split):
    """Oracle 7 (f+ - f- equals the directly computed constraint) and oracle 9 (NumPy)."""
    rng = np.random.default_rng(1)
    weights = rng.uniform(0.5, 2.0, 120)
    cfg, data, x0, X, y, g = make_problem(
        metric, surrogate, dc_split, proximal_strength=0.3, sample_weight=weights
    )
    off_diagonal = ~np.eye(2, dtype=bool).ravel() if metric == PDP else slice(None)
    for x in _random_points(x0, rng):
        direct = np.asarray(constraint_values(jnp.asarray(x), data, cfg))
        plus, minus = (np.asarray(a) for a in dc_pieces(jnp.asarray(x), data, cfg))
        np.testing.assert_allclose(
            (plus - minus)[off_diagonal], direct[off_diagonal], rtol=0, atol=1e-12
        )
        reference = _numpy_constraints(
            x,
            X,
            g,
            weights,
            np.asarray(data.grid),
            float(data.slack),
            (0.0, 0.5),
            surrogate,
            metric,
        )
        np.testing.assert_allclose(
            direct[off_diagonal], reference[off_diagonal], rtol=0, atol=1e-12
        )


def test_ramp_identities():
    """Oracle 7: sigma+ - sigma- = sigma, and min(A - B, a) = A + a - max(B + a, A)."""
    z = np.linspace(-3, 3, 1001)
    np.testing.assert_array_equal(
        np.maximum(z + 0.5, 0) - np.maximum(z - 0.5, 0), np.clip(z + 0.5, 0, 1)
    )
    rng = np.random.default_rng(0)
    for _ in range(200):
        scores = rng.normal(size=30)
        A = np.mean(np.maximum(scores + 0.5, 0))
        B = np.mean(np.maximum(scores - 0.5, 0))
        a = rng.uniform()
        assert abs(min(A - B, a) - (A + a - max(B + a, A))) < 1e-14


@pytest.mark.parametrize("metric,surrogate,dc_split", CASES)
def test_subproblem_majorises(x64, metric, surrogate, dc_split):
    """Oracle 8: g_i(x_k) = f_i(x_k) and g_i(v) >= f_i(v) (also for i = 0)."""
    rng = np.random.default_rng(2)
    cfg, data, x0, *_ = make_problem(metric, surrogate, dc_split, proximal_strength=0.1)
    for xk in _random_points(x0, rng, count=3):
        anc = anchor(jnp.asarray(xk), data, cfg)
        ev = evaluate(jnp.asarray(xk), anc, data, cfg)
        f_at = np.asarray(constraint_values(jnp.asarray(xk), data, cfg))
        finite = np.isfinite(f_at)
        np.testing.assert_allclose(np.asarray(ev.gcon)[finite], f_at[finite], atol=1e-12)
        assert abs(float(ev.g0) - float(objective(jnp.asarray(xk), data, cfg))) < 1e-12
        for v in _random_points(xk, rng, count=8, scale=1.0):
            ev = evaluate(jnp.asarray(v), anc, data, cfg)
            f_v = np.asarray(constraint_values(jnp.asarray(v), data, cfg))
            assert np.all(np.asarray(ev.gcon)[finite] >= f_v[finite] - 1e-12)
            assert float(ev.g0) >= float(objective(jnp.asarray(v), data, cfg)) - 1e-12


@pytest.mark.parametrize("metric,surrogate,dc_split", CASES)
def test_subgradients_match_finite_differences(x64, metric, surrogate, dc_split):
    """Oracle 9: subgradients of g_0 and of every g_i equal central differences (the
    points are random, so no ramp kink lies within the difference step)."""
    rng = np.random.default_rng(3)
    cfg, data, x0, *_ = make_problem(metric, surrogate, dc_split, proximal_strength=0.2, alpha=0.05)
    xk = _random_points(x0, rng, count=1)[0]
    anc = anchor(jnp.asarray(xk), data, cfg)
    v = xk + 0.3 * rng.normal(size=xk.shape)
    ev = evaluate(jnp.asarray(v), anc, data, cfg)
    m = ev.gcon.shape[0]
    h = 1e-6

    def values(point):
        out = evaluate(jnp.asarray(point), anc, data, cfg)
        return float(out.g0), np.asarray(out.gcon)

    basis = np.eye(v.size)
    numeric = np.array(
        [
            (np.array([values(v + h * e)[0]]) - np.array([values(v - h * e)[0]])) / (2 * h)
            for e in basis
        ]
    )[:, 0]
    np.testing.assert_allclose(np.asarray(ev.direction(True, 0)), numeric, atol=1e-6)
    gcon_plus = np.array([values(v + h * e)[1] for e in basis])
    gcon_minus = np.array([values(v - h * e)[1] for e in basis])
    checked = 0
    for i in range(m):
        if not np.isfinite(np.asarray(ev.gcon)[i]):
            continue
        numeric_i = (gcon_plus[:, i] - gcon_minus[:, i]) / (2 * h)
        analytic = np.asarray(ev.direction(False, i))
        np.testing.assert_allclose(analytic, numeric_i, atol=1e-6)
        checked += 1
    assert checked >= 2


def test_initial_point_is_feasible_with_margin(x64):
    """Oracle 10: w = 0 with theta_p = 1/2 - min(p + c/2, 1) has every (15) constraint at
    exactly -c/2 for grid="lemma"; w = 0 is feasible for (21)."""
    cfg, data, x0, *_ = make_problem(PSP, tolerance=0.3, n_grid=10)
    values = np.asarray(constraint_values(jnp.asarray(x0), data, cfg))
    assert values.shape == (2 * 2 * 10,)
    np.testing.assert_allclose(values, -0.5 * float(data.slack), atol=1e-15)
    cfg, data, x0, *_ = make_problem(PSP, tolerance=0.0, n_grid=10)
    assert np.max(np.asarray(constraint_values(jnp.asarray(x0), data, cfg))) <= 1e-15
    for rule in ("interval", "linspace"):  # the min(., 1) keeps other grids feasible
        grid = level_grid((0.5, 1.0), 0.2, 10, rule)
        x_start = initial_point(3, grid, 0.2 * 0.5, "ramp", 1.0)
        sigma = np.clip(-x_start[4:] + 0.5, 0, 1)
        assert np.all(grid <= sigma + 1e-15)
    cfg, data, x0, *_ = make_problem(PDP, tolerance=0.3)
    values = np.asarray(constraint_values(jnp.asarray(x0), data, cfg))
    np.testing.assert_allclose(values[np.isfinite(values)], -float(data.slack), atol=1e-15)


@pytest.mark.parametrize(
    "metric,surrogate", [(PSP, "ramp"), (PSP, "sigmoid"), (PDP, "ramp"), (PDP, "sigmoid")]
)
def test_constant_start_is_feasible_with_margin(x64, metric, surrogate):
    """Any constant model h = b is feasible: theta shifted by b keeps every (15) constraint
    at -c/2 (the same values as b = 0), and every (21) constraint equals -c."""
    cfg, data, x_zero, *_ = make_problem(metric, surrogate, tolerance=0.3, n_grid=6)
    grid, slack = np.asarray(data.grid), float(data.slack)
    x_b = initial_point(cfg.num_features, grid, slack, surrogate, 1.0, intercept=1.7)
    assert x_b[0] == 1.7 and not np.any(x_b[1 : 1 + cfg.num_features])
    at_b = np.asarray(constraint_values(jnp.asarray(x_b), data, cfg))
    at_zero = np.asarray(
        constraint_values(
            jnp.asarray(initial_point(cfg.num_features, grid, slack, surrogate, 1.0)), data, cfg
        )
    )
    finite = np.isfinite(at_b)
    np.testing.assert_allclose(at_b[finite], at_zero[finite], atol=1e-12)
    expected = -0.5 * slack if metric == PSP else -slack
    if surrogate == "ramp" or metric == PDP:
        np.testing.assert_allclose(at_b[finite], expected, atol=1e-12)


def test_constant_intercept_minimises_the_loss_of_constant_models():
    y = np.array([1, 1, 1, 0.0])
    b = constant_intercept(y, np.ones(4))
    assert b == pytest.approx(math.log(3.0))
    weighted = constant_intercept(y, np.array([1.0, 1.0, 1.0, 3.0]))
    assert weighted == pytest.approx(0.0, abs=1e-15)


def test_level_grids():
    np.testing.assert_allclose(
        level_grid((0.05, 0.3), 0.2, 10, "lemma"), 0.05 + np.arange(10) * 0.8 * 0.25 / 10
    )
    assert level_grid((0.0, 0.5), 1.0, 10, "lemma").size == 0
    np.testing.assert_allclose(
        level_grid((0.0, 0.5), 0.0, 5, "lemma"), level_grid((0.0, 0.5), 0.7, 5, "interval")
    )
    np.testing.assert_allclose(level_grid((0.2, 0.4), 0.1, 3, "linspace"), [0.2, 0.3, 0.4])
    # grid="lemma" stays inside [alpha, beta - c) (Lemma 5.1)
    grid = level_grid((0.1, 0.6), 0.25, 10, "lemma")
    assert grid.min() >= 0.1 and grid.max() < 0.6 - 0.25 * 0.5


def test_theory_schedule_numbers():
    """Oracle 18: K, eps_k, T_k of Theorem 6.5 / Lemma E.2 on numbers."""
    eps, mu, M, nu, gap = 0.1, 0.5, 1.2, 0.05, math.log(2)
    K, eps_k, T = theory_schedule(eps, mu, M, nu, gap)
    factor = max(1, 4 * M**2, 8 * M**4 / (mu * nu))
    assert K == math.ceil(2 * factor * gap / (mu * eps**2))
    expected_eps = mu / 8 * min(1, 1 / (4 * M**2), mu * nu / (8 * M**4)) * eps**2
    assert eps_k == pytest.approx(expected_eps, rel=1e-15)
    assert T == math.ceil(M**2 / (expected_eps * mu) * math.log(1 + 4 * M**2 / (mu * expected_eps)))
    # T_k decreases as eps_k grows
    Ts = [theory_schedule(e, mu, M, nu, gap)[2] for e in (0.05, 0.1, 0.2, 0.4)]
    assert all(a > b for a, b in zip(Ts, Ts[1:]))
    with pytest.raises(ValueError):
        theory_schedule(0.1, 0.0, M, nu, gap)


def test_kappa_one_pdp_constraints_never_violated(x64):
    """Oracle 13: with kappa >= 1 the pDP constraints cannot be violated."""
    cfg, data, x0, *_ = make_problem(PDP, tolerance=1.0)
    rng = np.random.default_rng(5)
    for x in _random_points(x0, rng, count=20, scale=3.0):
        assert np.max(np.asarray(constraint_values(jnp.asarray(x), data, cfg))) <= 1e-15


def test_no_global_x64_change():
    """Importing fairest.partial and building problems leaves JAX's global config alone."""
    assert not jax.config.jax_enable_x64


@pytest.mark.parametrize("metric,surrogate,dc_split", CASES)
def test_sparse_rows_match_dense(x64, metric, surrogate, dc_split):
    """Mostly-zero X is stored in ELL form (gather / scatter-add over the non-zeros): the
    anchor, the subproblem values and every subgradient equal the dense computation."""
    from fairest._kernels._sparse import SparseRows
    from fairest.partial._dc import matvec, rmatvec
    from fairest.partial._estimator import PartialParityClassifier

    rng = np.random.default_rng(5)
    n, d, G = 90, 16, 3
    g = rng.integers(0, G, n)
    X = np.zeros((n, d))  # at most 3 non-zeros per row: a one-hot-like design
    for i in range(n):
        X[i, rng.choice(d - G, 2, replace=False)] = rng.normal(size=2)
        X[i, d - G + g[i]] = 1.0
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(float)
    clf = PartialParityClassifier(
        metric,
        interval=(0.1, 0.6),
        tolerance=0.2,
        surrogate=surrogate,
        dc_split=dc_split,
        n_grid=4,
        surrogate_width=0.7,
        proximal_strength=0.1,
    )
    codes = g.astype(np.int32)
    cfg, sparse, x0 = clf._problem(X, y, codes, np.ones(n), G, (0.1, 0.6))
    assert isinstance(sparse.X, SparseRows)
    dense = sparse._replace(X=jnp.asarray(np.pad(X, ((0, sparse.y.shape[0] - n), (0, 0)))))
    u = rng.normal(size=sparse.y.shape[0])
    w = rng.normal(size=d)
    np.testing.assert_allclose(matvec(sparse.X, w), matvec(dense.X, w), atol=1e-13)
    np.testing.assert_allclose(rmatvec(u, sparse.X), rmatvec(u, dense.X), atol=1e-12)
    for xk in _random_points(x0, rng, count=1):
        a_s = anchor(jnp.asarray(xk), sparse, cfg)
        a_d = anchor(jnp.asarray(xk), dense, cfg)
        np.testing.assert_allclose(a_s.lin, a_d.lin, atol=1e-12)
        np.testing.assert_allclose(a_s.const, a_d.const, atol=1e-12)
        v = jnp.asarray(xk + 0.3 * rng.normal(size=xk.shape))
        e_s, e_d = evaluate(v, a_s, sparse, cfg), evaluate(v, a_d, dense, cfg)
        np.testing.assert_allclose(e_s.gcon, e_d.gcon, atol=1e-12)
        m = e_s.gcon.shape[0]
        for i in sorted({1, m // 2, m - 2}):  # a few constraints (eager calls are slow)
            np.testing.assert_allclose(e_s.direction(False, i), e_d.direction(False, i), atol=1e-12)
        np.testing.assert_allclose(e_s.direction(True, 0), e_d.direction(True, 0), atol=1e-12)
