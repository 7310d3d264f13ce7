"""The implicit hypergradient equals finite differences of lambda -> U(theta*(lambda))
(badr spec 10.1) for every model and metric, intercept included."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fairest._solvers._defaults import SOLVER_TUNING
from fairest.reweighting._badr_metrics import (
    CLASSIFICATION_METRICS,
    REGRESSION_METRICS,
    MetricSpec,
)
from fairest.reweighting._bilevel import Problem, oracle

N, D, G = 90, 3, 3


def _problem(task, penalize, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    groups = np.repeat(np.arange(G), N // G).astype(np.int32)
    X[:, 0] += 0.7 * groups
    signal = X @ np.array([1.0, -0.5, 0.3]) + 0.8 * groups + 0.4  # non-zero intercept
    if task == "classification":
        y = (signal + rng.normal(size=N) > 0.5).astype(float)
    else:
        y = np.round(signal + rng.normal(size=N), 1)  # ties in y
    weight = rng.uniform(0.5, 1.5, size=N)
    return Problem(
        jnp.asarray(X),
        jnp.asarray(y),
        jnp.asarray(groups),
        jnp.asarray(weight),
        jnp.float64(0.05),
        jnp.float64(penalize),
        jnp.float64(2.0),
        jnp.float64(1e-14),
        jnp.int32(100),
    )


def _group_mean_gap(s, y, g):
    means = jax.ops.segment_sum(s, g, num_segments=G) / jax.ops.segment_sum(
        jnp.ones_like(s), g, num_segments=G
    )
    return jnp.sum(jnp.square(means - jnp.mean(means)))


CASES = (
    [("logistic", "classification", m, "index") for m in CLASSIFICATION_METRICS]
    + [("squared_hinge", "classification", m, "index") for m in CLASSIFICATION_METRICS]
    + [("squared_error", "regression", m, "index") for m in REGRESSION_METRICS]
    + [
        ("logistic", "classification", "disparate_mistreatment", "onehot"),
        ("squared_error", "regression", "hsic_linear", "onehot"),
        ("logistic", "classification", "callable", "index"),
        ("squared_error", "regression", "callable", "index"),
    ]
)


@pytest.mark.parametrize("loss,task,name,encoding", CASES)
def test_hypergradient_matches_finite_differences(loss, task, name, encoding):
    with jax.enable_x64(True):
        problem = _problem(task, penalize=1.0 if loss == "squared_hinge" else 0.0)
        fn = _group_mean_gap if name == "callable" else None
        spec = MetricSpec(name, task, loss, encoding, fn=fn, n_valid=N)
        theta0 = jnp.zeros(D + 1)

        def phi(lam):
            return float(oracle(loss, spec, G, jnp.asarray(lam), theta0, problem).value)

        lam = np.array([0.3, 0.45, 0.25])
        out = oracle(loss, spec, G, jnp.asarray(lam), theta0, problem)
        assert bool(out.inner_converged)
        assert abs(float(out.theta[0])) > 1e-3  # the intercept is really in play
        grad = np.asarray(out.grad)
        h = 1e-5
        scale = np.linalg.norm(grad)
        assert scale > 1e-8
        # tangent directions and single coordinates (R sits outside the lambda-sum)
        for u in (np.array([1.0, 0.0, -1.0]), np.array([0.0, 1.0, -1.0]), np.eye(G)[0]):
            fd = (phi(lam + h * u) - phi(lam - h * u)) / (2 * h)
            assert abs(fd - grad @ u) <= 1e-5 * max(abs(fd), scale), (u, fd, grad @ u)


def test_adjoint_is_one_solve_of_the_newton_factor():
    """grad Phi = -J^T H^{-1} grad U, with H the exact Hessian at theta*(lambda)."""
    from fairest._kernels._glm import group_to_sample_weights, value_grad_hessian
    from fairest.reweighting._bilevel import group_losses_and_jacobian, metric_value

    with jax.enable_x64(True):
        problem = _problem("classification", 0.0)
        spec = MetricSpec("demographic_parity_deviation", "classification", "logistic")
        lam = jnp.array([0.2, 0.5, 0.3])
        out = oracle("logistic", spec, G, lam, jnp.zeros(D + 1), problem)
        c = group_to_sample_weights(lam, problem.groups, problem.weight, G)
        _, grad_f, hessian = value_grad_hessian(
            "logistic", out.theta, problem.X, problem.y, c, problem.alpha, 0.0
        )
        assert float(jnp.max(jnp.abs(grad_f))) < 1e-12  # optimality (spec 10.3)
        assert np.all(np.linalg.eigvalsh(np.asarray(hessian)) > 0)
        grad_u = jax.grad(metric_value, argnums=1)(spec, out.theta, problem, G)
        _, jac = group_losses_and_jacobian("logistic", out.theta, problem, G)
        expected = -np.asarray(jac).T @ np.linalg.solve(np.asarray(hessian), np.asarray(grad_u))
        np.testing.assert_allclose(np.asarray(out.grad), expected, rtol=1e-9, atol=1e-14)


def test_float32_hessian_blocks_keep_the_oracle_exact():
    """With a float32 copy of X for the Newton Hessian, theta* (float64 gradient) and the
    refined adjoint, hence Phi and grad Phi, match the float64 oracle."""
    with jax.enable_x64(True):
        problem = _problem("classification", 0.0)
        mixed = problem._replace(X_hessian=problem.X.astype(jnp.float32))
        spec = MetricSpec("demographic_parity_deviation", "classification", "logistic")
        lam = jnp.array([0.2, 0.5, 0.3])
        exact = oracle("logistic", spec, G, lam, jnp.zeros(D + 1), problem)
        fast = oracle("logistic", spec, G, lam, jnp.zeros(D + 1), mixed)
        assert bool(fast.inner_converged)
        np.testing.assert_allclose(np.asarray(fast.theta), np.asarray(exact.theta), atol=1e-11)
        np.testing.assert_allclose(float(fast.value), float(exact.value), rtol=1e-12)
        np.testing.assert_allclose(
            np.asarray(fast.grad), np.asarray(exact.grad), rtol=1e-9, atol=1e-14
        )


def test_implicit_oracle_caches_points_and_warm_starts_on_the_tangent():
    """A revisited lambda costs no solve; a nearby one starts at the tangent prediction
    (at most one Newton step) and gives the same result as a solve from scratch."""
    from fairest.reweighting._oracle import ImplicitOracle

    with jax.enable_x64(True):
        problem = _problem("classification", 0.0)._replace(inner_tol=jnp.float64(1e-10))
        spec = MetricSpec("demographic_parity_deviation", "classification", "logistic")
        orc = ImplicitOracle("logistic", spec, G, problem, jnp.zeros(D + 1))
        lam = np.array([0.3, 0.45, 0.25])
        orc.evaluate(lam)
        orc.evaluate(np.array([1.0, 0.0, 0.0]))
        orc.evaluate(lam.copy())  # cached
        assert orc.nfev == 2
        before = orc.inner_iter
        near = lam + 1e-3 * np.array([1.0, -2.0, 1.0])
        value, grad, out = orc.evaluate(near)
        assert orc.nfev == 3 and orc.inner_iter - before <= 1
        scratch = oracle("logistic", spec, G, jnp.asarray(near), jnp.zeros(D + 1), problem)
        np.testing.assert_allclose(value, float(scratch.value), rtol=1e-12)
        np.testing.assert_allclose(grad, np.asarray(scratch.grad), rtol=1e-8, atol=1e-13)


def test_oracle_cache_shrinks_with_many_parameters():
    """Each cached point holds a p x p factor: the cache keeps at most 128 MB of them and
    always at least the last point."""
    from fairest.reweighting._bilevel import cache_size
    from fairest.reweighting._defaults import ORACLE_TUNING
    from fairest.reweighting._oracle import ImplicitOracle

    assert cache_size(11, 5) == 64
    assert cache_size(2000, 10) == 3
    assert cache_size(10_001, 2) == 64  # Newton-CG: no factor kept
    with jax.enable_x64(True), ORACLE_TUNING.override(cache_floats=2 * (D + 1) * (D + 1 + G)):
        problem = _problem("classification", 0.0)
        spec = MetricSpec("demographic_parity_deviation", "classification", "logistic")
        orc = ImplicitOracle("logistic", spec, G, problem, jnp.zeros(D + 1))
        for k in range(4):
            orc.evaluate(np.array([0.2 + 0.1 * k, 0.5 - 0.1 * k, 0.3]))
        assert len(orc._cache) == 2 and len(orc._anchors) == 2


@pytest.fixture
def clear_jit_caches():
    """The Newton-CG switch is decided at trace time: start and end with empty jit caches."""
    jax.clear_caches()
    yield
    jax.clear_caches()


@pytest.mark.parametrize("metric", ["demographic_parity_deviation", "group_loss_variance"])
def test_newton_cg_path_gives_the_cholesky_oracle(metric, clear_jit_caches):
    """Many features (badr spec 2): Newton-CG lower level and a CG adjoint give the same
    Phi, grad Phi and theta* as Newton with Cholesky, and BADR the same weights."""
    from fairest.reweighting import BADRClassifier
    from fairest.reweighting._bilevel import uses_newton_cg

    spec = MetricSpec(metric, "classification", "logistic")
    lam = jnp.array([0.2, 0.5, 0.3])
    X, y, g = _data_for_fit()
    runs = {}
    for threshold in (10_000, D):
        with SOLVER_TUNING.override(newton_cg_min_params=threshold):
            with jax.enable_x64(True):
                problem = _problem("classification", 0.0)
                assert uses_newton_cg(D + 1) == (threshold == D)
                out = oracle("logistic", spec, G, lam, jnp.zeros(D + 1), problem)
                assert bool(out.inner_converged)
            est = BADRClassifier(metric=metric, alpha=0.05).fit(X, y, sensitive_features=g)
        runs[threshold] = (out, est)
    (chol, est_chol), (cg, est_cg) = runs[10_000], runs[D]
    assert cg.cholesky.shape == (1, 1)
    np.testing.assert_allclose(np.asarray(cg.theta), np.asarray(chol.theta), atol=1e-10)
    np.testing.assert_allclose(float(cg.value), float(chol.value), rtol=1e-10, atol=1e-16)
    np.testing.assert_allclose(np.asarray(cg.grad), np.asarray(chol.grad), rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(est_cg.group_weights_, est_chol.group_weights_, atol=1e-6)
    np.testing.assert_allclose(est_cg.coef_, est_chol.coef_, atol=1e-6)


def _data_for_fit(n=300, seed=4):
    rng = np.random.default_rng(seed)
    g = np.arange(n) % G
    X = rng.normal(size=(n, D)) + 0.5 * g[:, None]
    y = (X[:, 0] - 0.3 * X[:, 1] + rng.normal(size=n) > 0.4).astype(int)
    return X, y, g


@pytest.mark.parametrize("num_groups", [2, 7])
def test_score_gradient_sums_one_hot_and_segment_paths_agree(num_groups):
    """A^T grad_s and A^T M by the one-hot product and by segment sums, against numpy."""
    from fairest.reweighting._bilevel import score_gradient_sums

    rng = np.random.default_rng(num_groups)
    n, d = 500, 4
    X, grad_s, r = rng.normal(size=(n, d)), rng.normal(size=n), rng.normal(size=n)
    groups = rng.integers(0, num_groups, n).astype(np.int32)
    A = np.column_stack([np.ones(n), X])
    M = np.eye(num_groups)[groups] * r[:, None]
    with jax.enable_x64(True):
        for use_segments in (False, True):
            grad_u, jac = score_gradient_sums(
                jnp.asarray(grad_s),
                jnp.asarray(r),
                jnp.asarray(X),
                jnp.asarray(groups),
                num_groups,
                use_segments,
            )
            np.testing.assert_allclose(grad_u, A.T @ grad_s, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(jac, A.T @ M, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "name", ["demographic_parity_deviation", "equal_opportunity_range", "group_loss_variance"]
)
def test_reference_compat_hypergradient_drops_the_intercept(name):
    """With the metrics scoring ``X w`` (reference_compat, spec 3.0) the oracle's value is
    the metric at the intercept-free scores and its hypergradient still equals finite
    differences of lambda -> U(theta*(lambda))."""
    from fairest.reweighting._badr_metrics import smooth_unfairness

    with jax.enable_x64(True):
        problem = _problem("classification", 0.0)._replace(metric_intercept=jnp.float64(0.0))
        spec = MetricSpec(name, "classification", "logistic")
        theta0 = jnp.zeros(D + 1)

        def phi(lam):
            return float(oracle("logistic", spec, G, jnp.asarray(lam), theta0, problem).value)

        lam = np.array([0.3, 0.45, 0.25])
        out = oracle("logistic", spec, G, jnp.asarray(lam), theta0, problem)
        assert abs(float(out.theta[0])) > 1e-3
        dropped = smooth_unfairness(
            spec,
            problem.X @ out.theta[1:],
            problem.y,
            problem.groups,
            problem.weight,
            G,
            problem.temperature,
        )
        kept = smooth_unfairness(
            spec,
            problem.X @ out.theta[1:] + out.theta[0],
            problem.y,
            problem.groups,
            problem.weight,
            G,
            problem.temperature,
        )
        np.testing.assert_allclose(float(out.value), float(dropped), rtol=1e-12)
        assert abs(float(kept) - float(dropped)) > 1e-6  # the switch changes the metric
        grad = np.asarray(out.grad)
        h, scale = 1e-5, np.linalg.norm(grad)
        for u in (np.array([1.0, 0.0, -1.0]), np.array([0.0, 1.0, -1.0])):
            fd = (phi(lam + h * u) - phi(lam - h * u)) / (2 * h)
            assert abs(fd - grad @ u) <= 1e-5 * max(abs(fd), scale), (u, fd, grad @ u)
