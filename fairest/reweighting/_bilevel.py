"""Two-loop BADR: implicit hypergradient, SLSQP, trust-constr and Frank-Wolfe on the simplex.

The implicit function is ``Phi(lambda) = U(theta*(lambda))`` with
``theta*(lambda) = argmin_theta sum_g lambda_g L_g(theta) + R(theta)`` (badr spec 1.2-1.3).
Its gradient (spec 4.1) needs ONE adjoint solve per outer step:

    H q = grad_theta U(theta*),      (grad Phi)_g = -<grad L_g(theta*), q>,

where ``H`` is factorised by the last Newton pass of the lower-level solve (the factor is
reused, no extra Hessian or factorisation) and ``grad_theta U`` and ``J = [grad L_g]``
come from one pass over the data. The intercept is part of theta everywhere. An oracle
call is two jitted functions (Newton; metric + adjoint) with no host synchronisation in
between. From the host (:class:`ImplicitOracle`) every evaluated point is cached, and a
new lower-level solve starts at the tangent prediction ``theta*(lambda_a) - H^{-1} J
(lambda - lambda_a)`` from the nearest evaluated point ``lambda_a``.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import cho_solve

from fairest._kernels._glm import (
    Batch,
    group_sums,
    group_to_sample_weights,
    hessian_vector_product,
    scores,
)
from fairest._kernels._losses import loss_derivatives
from fairest._kernels._projections import project_simplex
from fairest._solvers import _newton
from fairest._solvers._newton import NewtonResult, newton_solve
from fairest._solvers._newton_cg import jacobi_preconditioner, newton_cg_solve, pcg_solve
from fairest.reweighting._badr_metrics import MetricSpec, exact_unfairness, smooth_unfairness

__all__ = [
    "Problem",
    "OracleOutput",
    "oracle",
    "ImplicitOracle",
    "run_scipy",
    "run_frank_wolfe",
]

_CACHE_SIZE = 64  # evaluated points kept (cache and warm-start anchors) ...
_CACHE_FLOATS = 16_000_000  # ... unless their p x p factors would exceed 128 MB
# From this many groups on, the adjoint's Jacobian comes from segment sums rather than a
# one-hot product (n = 2e5, d = 10, CPU: 4.0 vs 8.4 ms at G = 10; 4.7 vs 3.7 ms at G = 2).
_SEGMENT_SUM_MIN_GROUPS = 5
_ADJOINT_CG_MAX_ITER = 1000  # Hessian-vector products of one adjoint solve (Newton-CG path)


def cache_size(num_params: int, num_groups: int) -> int:
    """Evaluated points the oracle keeps: each holds a p x p Cholesky factor (none on the
    Newton-CG path) and the p x G Jacobian, so many parameters mean fewer points (at least
    one)."""
    per_point = num_params * (factor_size(num_params) + num_groups)
    return max(1, min(_CACHE_SIZE, _CACHE_FLOATS // per_point))


def uses_newton_cg(num_params: int) -> bool:
    """Whether the lower level runs Newton-CG (p above ``NEWTON_CG_MIN_PARAMS``, badr spec
    section 2): no Hessian is formed, the adjoint is a CG solve and there is no factor
    (a 1 x 1 placeholder stands in for it). Decided from a shape, so at trace time."""
    return num_params > _newton.NEWTON_CG_MIN_PARAMS


def factor_size(num_params: int) -> int:
    """Side of the stored Cholesky factor: p, or 1 (the placeholder) on the Newton-CG path."""
    return 1 if uses_newton_cg(num_params) else num_params


class Problem(NamedTuple):
    """Traced data and hyper-parameters of one BADR fit (padded rows have weight 0)."""

    X: jax.Array  # (n, d)
    y: jax.Array  # (n,) {0,1} or real
    groups: jax.Array  # (n,) int32
    weight: jax.Array  # (n,) sample weights, 0 on padding
    alpha: jax.Array
    penalize_intercept: jax.Array  # 0.0 / 1.0
    rho: jax.Array  # metric smoothing
    inner_tol: jax.Array
    inner_max_iter: jax.Array
    X_hessian: jax.Array | None = None  # float32 copy of X for the Hessian block (large n)


class OracleOutput(NamedTuple):
    value: jax.Array  # Phi(lambda)
    grad: jax.Array  # (G,) grad Phi(lambda)
    theta: jax.Array  # theta*(lambda)
    group_losses: jax.Array  # (G,) L_g(theta*)
    inner_iter: jax.Array
    inner_converged: jax.Array
    cholesky: jax.Array  # (p, p) lower factor of H(theta*, lambda)
    jacobian: jax.Array  # (p, G) J = [grad L_g(theta*)]


def metric_value(loss_metric: MetricSpec, theta, problem: Problem, num_groups: int):
    """Smooth train unfairness ``U(theta)``."""
    return smooth_unfairness(
        loss_metric,
        scores(theta, problem.X),
        problem.y,
        problem.groups,
        problem.weight,
        num_groups,
        problem.rho,
    )


def group_losses_and_jacobian(loss: str, theta, problem: Problem, num_groups: int):
    """Mean group losses ``L_g`` (G,) and ``J = [grad L_g]`` (p, G) in one pass."""
    batch = Batch(problem.X, problem.y, problem.groups, problem.weight)
    loss_sums, grad_sums, totals = group_sums(loss, theta, batch, num_groups)
    safe = jnp.where(totals > 0, totals, 1.0)
    return loss_sums / safe, grad_sums / safe


def lower_solve(loss: str, lam, theta0, problem: Problem, num_groups: int):
    """``theta*(lambda)`` by damped Newton (returns the Cholesky factor too), or by
    Newton-CG when there are many parameters (:func:`uses_newton_cg`)."""
    c = group_to_sample_weights(lam, problem.groups, problem.weight, num_groups)
    args = (loss, problem.X, problem.y, c, problem.alpha, problem.penalize_intercept, theta0,
            problem.inner_tol, problem.inner_max_iter)
    if uses_newton_cg(theta0.shape[0]):
        result = newton_cg_solve(*args)
        no_factor = jnp.zeros((factor_size(theta0.shape[0]),) * 2, theta0.dtype)
        return NewtonResult(result.theta, result.objective, result.grad_norm, no_factor,
                            result.n_iter, result.converged)
    return newton_solve(*args, problem.X_hessian)


def score_gradient_sums(grad_s, r, X, groups, num_groups: int, use_segments=None):
    """``A^T grad_s`` (p,) and ``A^T M`` (p, G), ``M_ig = 1[g(i) = g] r_i``, ``A = [1, X]``.

    Few groups: one product ``[grad_s, M]^T X`` with M one-hot (samples as the contracted
    leading axis of both). Many groups (``num_groups >= _SEGMENT_SUM_MIN_GROUPS``, decided at
    trace time): per-group segment sums of ``r_i x_i``, which never form the n x G matrix.
    """
    if use_segments is None:
        use_segments = num_groups >= _SEGMENT_SUM_MIN_GROUPS
    if not use_segments:
        columns = jnp.concatenate(
            [grad_s[:, None], jax.nn.one_hot(groups, num_groups, dtype=r.dtype) * r[:, None]],
            axis=1,
        )  # (n, 1 + G)
        sums = jnp.concatenate([jnp.sum(columns, axis=0)[:, None], columns.T @ X], axis=1)
        return sums[0], sums[1:].T
    seg = partial(jax.ops.segment_sum, segment_ids=groups, num_segments=num_groups)
    grad_u = jnp.concatenate([jnp.sum(grad_s)[None], grad_s @ X])
    jacobian = jnp.concatenate([seg(r)[None, :], seg(r[:, None] * X).T], axis=0)
    return grad_u, jacobian


def _adjoint(loss, metric, num_groups, lam, theta, cholesky, problem):
    """Metric, its gradient, ONE adjoint solve with the given factor, and ``-J^T q``.

    Also returns the group losses and ``J`` (kept for the tangent warm start of the next
    lower-level solve, :func:`predicted_start`). One pass over the data: the scores are
    formed once, and ``grad_theta U = A^T grad_s U`` and ``J = A^T M`` come out of one
    product ``[grad_s U, M]^T X`` (samples as the contracted leading axis of both). When
    the factor is that of a float32-assembled Hessian (``problem.X_hessian``), one step
    of iterative refinement with an exact float64 Hessian-vector product brings the
    adjoint back to float64 accuracy.
    """
    s = scores(theta, problem.X)
    value, grad_s = jax.value_and_grad(smooth_unfairness, argnums=1)(
        metric, s, problem.y, problem.groups, problem.weight, num_groups, problem.rho
    )
    pointwise, d1, _ = loss_derivatives(loss, s, problem.y)
    seg = partial(jax.ops.segment_sum, segment_ids=problem.groups, num_segments=num_groups)
    totals = seg(problem.weight)
    safe = jnp.where(totals > 0, totals, 1.0)
    r = problem.weight * d1
    grad_u, jacobian_sums = score_gradient_sums(grad_s, r, problem.X, problem.groups, num_groups)
    jacobian = jacobian_sums / safe
    c = group_to_sample_weights(lam, problem.groups, problem.weight, num_groups)
    args = (problem.X, problem.y, c, problem.alpha, problem.penalize_intercept)
    if uses_newton_cg(theta.shape[0]):
        hvp = partial(hessian_vector_product, loss, theta, X=problem.X, y=problem.y, c=c,
                      alpha=problem.alpha, penalize_intercept=problem.penalize_intercept)
        preconditioner = jacobi_preconditioner(loss, theta, *args)
        adjoint, _ = pcg_solve(hvp, grad_u, preconditioner, problem.inner_tol, _ADJOINT_CG_MAX_ITER)
    else:
        adjoint = cho_solve((cholesky, True), grad_u)
        if problem.X_hessian is not None:
            exact = hessian_vector_product(loss, theta, adjoint, *args)
            adjoint = adjoint + cho_solve((cholesky, True), grad_u - exact)
    losses = seg(problem.weight * pointwise) / safe
    return value, -(jacobian.T @ adjoint), losses, jacobian


def _oracle(loss, metric, num_groups, lam, theta0, problem):
    """Traceable oracle (used inside the jitted Frank-Wolfe and single-loop solvers)."""
    result = lower_solve(loss, lam, theta0, problem, num_groups)
    upper = _adjoint(loss, metric, num_groups, lam, result.theta, result.cholesky, problem)
    return _output(result, *upper)


def _output(result, value, grad, losses, jacobian) -> OracleOutput:
    """Oracle output from a Newton result and the metric + adjoint part."""
    return OracleOutput(
        value, grad, result.theta, losses, result.n_iter, result.converged, result.cholesky,
        jacobian,
    )


class Anchor(NamedTuple):
    """An evaluated point ``(lambda_a, theta*(lambda_a))`` with the factor of its Hessian
    and its group-loss Jacobian: enough for a first-order prediction of ``theta*``."""

    lam: jax.Array  # (G,)
    theta: jax.Array  # (p,)
    cholesky: jax.Array  # (p, p)
    jacobian: jax.Array  # (p, G)


def predicted_start(lam, anchor: Anchor):
    """Tangent (implicit-function) prediction ``theta*(lambda_a) - H^{-1} J (lambda -
    lambda_a)`` of ``theta*(lambda)``: first-order accurate, so a Newton solve started
    there needs fewer steps than one started at ``theta*(lambda_a)``. One triangular
    solve pair with the stored factor."""
    if uses_newton_cg(anchor.theta.shape[0]):
        return anchor.theta  # no factor to predict with
    shift = anchor.jacobian @ (lam - anchor.lam)
    return anchor.theta - cho_solve((anchor.cholesky, True), shift)


def plain_anchor(theta, num_groups: int) -> Anchor:
    """An anchor whose prediction is ``theta`` itself (no tangent information)."""
    p = theta.shape[0]
    eye = np.eye(factor_size(p), dtype=np.float64)
    return Anchor(np.full(num_groups, 1.0 / num_groups), theta, eye, np.zeros((p, num_groups)))


@partial(jax.jit, static_argnames=("loss", "num_groups"))
def _lower_from_anchor(loss, num_groups, lam, anchor: Anchor, problem: Problem):
    return lower_solve(loss, lam, predicted_start(lam, anchor), problem, num_groups)


_adjoint_jit = jax.jit(_adjoint, static_argnames=("loss", "metric", "num_groups"))


def oracle(
    loss: str, metric: MetricSpec, num_groups: int, lam, theta0, problem: Problem, anchor=None
):
    """``Phi(lambda)``, ``grad Phi(lambda)``, ``theta*(lambda)`` from the host.

    Two jitted calls in sequence, no host synchronisation in between: the lower-level
    Newton solve (:func:`lower_level`: compiled once per loss and shape whatever the
    metric) and the metric + adjoint part (:func:`upper_level`, compiled per metric), so
    that a new metric never recompiles the Newton solver.
    """
    result = lower_level(loss, num_groups, lam, theta0, problem, anchor)
    return upper_level(loss, metric, num_groups, lam, result, problem)


def lower_level(loss: str, num_groups: int, lam, theta0, problem: Problem, anchor=None):
    """Jitted Newton solve for ``theta*(lambda)`` started at ``theta0`` or, given an
    ``anchor``, at its tangent prediction (:func:`predicted_start`)."""
    if anchor is None:
        anchor = plain_anchor(theta0, num_groups)
    return _lower_from_anchor(loss, num_groups, lam, anchor, problem)


def upper_level(loss: str, metric: MetricSpec, num_groups: int, lam, result, problem: Problem):
    """Jitted metric + adjoint part at the solution ``result`` of :func:`lower_level`."""
    upper = _adjoint_jit(loss, metric, num_groups, lam, result.theta, result.cholesky, problem)
    return _output(result, *upper)


def exact_metric_value(metric: MetricSpec, theta, problem: Problem, num_groups: int) -> float:
    """Exact train unfairness (hard predictions) at ``theta``: the numpy metrics of
    :mod:`fairest.metrics`, on the host (reporting only, called once per fit)."""
    theta = np.asarray(theta)
    s = np.asarray(problem.X) @ theta[1:] + theta[0]  # numpy: no kernel compiled for it
    return exact_unfairness(metric, s, problem.y, problem.groups, problem.weight, num_groups)


class ImplicitOracle:
    """Host-side wrapper for SciPy: warm starts, a cache keyed by lambda, counters, best point.

    SciPy asks for ``fun`` and ``jac`` separately at the same point, and SLSQP's line
    searches and the safeguard's baselines revisit points (a vertex, the uniform
    weights): every evaluated point stays in a cache keyed by lambda (exact equality,
    spec 4.3), so each is one jitted oracle call. A new lower-level solve starts at the
    tangent prediction from the nearest evaluated point (:func:`predicted_start`). Every
    evaluation at a point of the simplex (within 1e-8) is a candidate for the returned
    weights: the best one is kept.
    """

    def __init__(self, loss, metric, num_groups, problem, theta0):
        self.loss = loss
        self.metric = metric
        self.num_groups = num_groups
        self.problem = problem
        self.theta = theta0  # start of a solve with no evaluated point yet
        self.nfev = 0
        self.inner_iter = 0
        self.inner_failures = 0
        self.best = (np.inf, None, None)
        self.path = []
        self._cache = {}  # lambda bytes -> (value, grad, OracleOutput), at most _size
        self._size = cache_size(theta0.shape[0], num_groups)
        self._anchors = []  # (lambda, Anchor) of finite evaluations, newest last
        self._compiling = None  # thread compiling the metric + adjoint kernel

    def compile_adjoint_in_background(self) -> None:
        """Compile the metric + adjoint kernel in a thread while the first lower-level
        solve compiles and runs: XLA compiles outside the GIL, so on two or more cores
        the first fit pays about the longer of the two compilations, not their sum. The
        next evaluation waits for the thread; an error there is left to that evaluation,
        which compiles again and raises it."""
        p, num_groups = self.theta.shape[0], self.num_groups
        args = (self.loss, self.metric, num_groups, np.full(num_groups, 1.0 / num_groups),
                self.theta, np.eye(factor_size(p)), self.problem)

        def compile_adjoint():
            with jax.enable_x64(True), contextlib.suppress(Exception):
                jax.block_until_ready(_adjoint_jit(*args))

        self._compiling = threading.Thread(target=compile_adjoint, daemon=True)
        self._compiling.start()

    def evaluate(self, lam) -> tuple[float, np.ndarray, OracleOutput]:
        lam = np.maximum(np.asarray(lam, dtype=np.float64), 0.0)
        key = lam.tobytes()
        if key not in self._cache:
            value, grad, out = self._solve(lam)
            if len(self._cache) >= self._size:
                self._cache.pop(next(iter(self._cache)))  # oldest first
            self._cache[key] = (value, grad, out)
            self.path.append((value, lam.copy()))
            if value < self.best[0] and abs(lam.sum() - 1.0) <= 1e-8:
                self.best = (value, lam.copy(), out)
        return self._cache[key]

    def _solve(self, lam) -> tuple[float, np.ndarray, OracleOutput]:
        """One oracle call (two jitted parts), started at the nearest anchor's tangent
        prediction; one device-to-host copy of the scalars and the gradient."""
        lam_device = jax.device_put(lam)
        result = lower_level(
            self.loss, self.num_groups, lam_device, self.theta, self.problem,
            self._nearest_anchor(lam),
        )
        if self._compiling is not None:
            self._compiling.join()
            self._compiling = None
        out = upper_level(self.loss, self.metric, self.num_groups, lam_device, result, self.problem)
        value, grad, n_iter, converged = jax.device_get(
            (out.value, out.grad, out.inner_iter, out.inner_converged)
        )
        self.nfev += 1
        self.inner_iter += int(n_iter)
        self.inner_failures += int(not converged)
        if np.isfinite(value):
            self.theta = out.theta
            anchor = Anchor(lam_device, out.theta, out.cholesky, out.jacobian)
            self._anchors = [*self._anchors, (lam, anchor)][-self._size :]
        return float(value), np.asarray(grad), out

    def _nearest_anchor(self, lam) -> Anchor | None:
        """The evaluated point closest to ``lam`` (l1), the newest among ties."""
        if not self._anchors:
            return None
        distances = [np.abs(lam - point).sum() for point, _ in self._anchors]
        nearest = len(distances) - 1 - int(np.argmin(distances[::-1]))
        return self._anchors[nearest][1]

    def fun(self, lam):
        return self.evaluate(lam)[0]

    def jac(self, lam):
        return self.evaluate(lam)[1]


def run_scipy(method: str, orc: ImplicitOracle, lam0, *, max_iter: int, tol: float):
    """SLSQP or trust-constr on the simplex (spec 4.4, 4.6). Returns (lambda, n_iter, message, ok)."""
    from scipy.optimize import BFGS, Bounds, LinearConstraint, minimize

    num_groups = lam0.shape[0]
    if method == "slsqp":
        # SLSQP's ftol is absolute: on an unfairness of order 1e-3 the default 1e-10 stops
        # while the optimum is still orders of magnitude lower. Dividing Phi by its starting
        # value (kept within [1e-6, 1]) makes the tolerance relative; it only ever tightens.
        start = abs(orc.fun(lam0))
        scale = 1.0 / float(np.clip(start, 1e-6, 1.0)) if np.isfinite(start) else 1.0
        result = minimize(
            lambda v: scale * orc.fun(v),
            lam0,
            jac=lambda v: scale * orc.jac(v),
            method="SLSQP",
            bounds=[(0.0, 1.0)] * num_groups,
            constraints=[
                {"type": "eq", "fun": lambda v: np.sum(v) - 1.0, "jac": lambda v: np.ones_like(v)}
            ],
            options={"ftol": tol, "maxiter": max_iter},
        )
        # exit mode 8 "positive directional derivative for linesearch" and 9 "iteration
        # limit" are non-convergence (warned by the caller); the best point is still kept
        ok = bool(result.success)
    else:
        with warnings.catch_warnings():
            # BFGS updates skipped near the optimum ("delta_grad == 0.0") are harmless
            warnings.filterwarnings("ignore", message="delta_grad", category=UserWarning)
            result = minimize(
                orc.fun,
                lam0,
                jac=orc.jac,
                hess=BFGS(),
                method="trust-constr",
                bounds=Bounds(np.zeros(num_groups), np.ones(num_groups)),
                constraints=[LinearConstraint(np.ones((1, num_groups)), 1.0, 1.0)],
                options={"gtol": tol, "maxiter": max_iter},
            )
        ok = bool(result.status in (1, 2))
    lam = np.clip(result.x, 0.0, None)
    lam = lam / lam.sum()
    return lam, int(result.nit), str(result.message), ok


class FWState(NamedTuple):
    t: jax.Array
    lam: jax.Array
    theta: jax.Array
    gap: jax.Array
    best_value: jax.Array
    best_lam: jax.Array
    history: jax.Array  # (max_iter, G + 2): lambda, Phi, gap (NaN after the last iteration)


@partial(jax.jit, static_argnames=("loss", "metric", "num_groups", "history_rows"))
def frank_wolfe(
    loss: str,
    metric: MetricSpec,
    num_groups: int,
    problem: Problem,
    lam0,
    theta0,
    tol,
    max_iter,
    log_step=True,
    scaled_gap=False,
    *,
    history_rows: int = 0,
):
    """Frank-Wolfe on the simplex with an open-loop step, one ``lax.while_loop`` (spec 4.5).

    LMO ``s_t = e_k``, ``k = argmin_g grad_g``; gap ``<grad, lambda - s_t> >= 0``; stop when
    ``gap < tol`` (``scaled_gap``: ``eta_t gap < tol``, the reference rule) or after
    ``max_iter`` oracle calls. Step (``log_step``) ``min(1, (2 + log(t+1)) / (t + 2 +
    log(t+1)))``, else ``2/(t+2)``. Everything but the history length is traced: the
    iteration counter, ``max_iter``, ``tol`` and the rule never recompile.
    """
    dtype = lam0.dtype
    rows = max(history_rows, 1)

    def step_size(t):
        tf = t.astype(dtype)
        lg = jnp.log(tf + 1.0)
        return jnp.where(log_step, jnp.minimum(1.0, (2.0 + lg) / (tf + 2.0 + lg)), 2.0 / (tf + 2.0))

    def cond(state: FWState):
        return (state.t < max_iter) & (state.gap >= tol)

    def body(state: FWState):
        out = _oracle(loss, metric, num_groups, state.lam, state.theta, problem)
        k = jnp.argmin(out.grad)
        vertex = jax.nn.one_hot(k, num_groups, dtype=dtype)
        gap = jnp.dot(out.grad, state.lam) - out.grad[k]
        eta = step_size(state.t)
        lam = state.lam + eta * (vertex - state.lam)
        better = out.value < state.best_value
        history = state.history
        if history_rows:
            row = jnp.concatenate([state.lam, out.value[None], gap[None]])
            history = history.at[jnp.minimum(state.t, rows - 1)].set(row)
        return FWState(
            t=state.t + 1,
            lam=lam,
            theta=out.theta,
            gap=jnp.where(scaled_gap, gap * eta, gap),
            best_value=jnp.where(better, out.value, state.best_value),
            best_lam=jnp.where(better, state.lam, state.best_lam),
            history=history,
        )

    init = FWState(
        t=jnp.zeros((), jnp.int32),
        lam=lam0,
        theta=theta0,
        gap=jnp.array(jnp.inf, dtype),
        best_value=jnp.array(jnp.inf, dtype),
        best_lam=lam0,
        history=jnp.full((rows, num_groups + 2), jnp.nan, dtype),
    )
    return jax.lax.while_loop(cond, body, init)


def run_frank_wolfe(orc: ImplicitOracle, lam0, *, max_iter, tol, step_rule, gap_mode, record):
    """Host entry: run the jitted loop, return (best lambda, n_iter, converged, history)."""
    state = frank_wolfe(
        orc.loss,
        orc.metric,
        orc.num_groups,
        orc.problem,
        jnp.asarray(lam0),
        orc.theta,
        jnp.asarray(tol, dtype=lam0.dtype),
        jnp.int32(max_iter),
        jnp.asarray(step_rule == "log"),
        jnp.asarray(gap_mode == "scaled"),
        history_rows=max_iter if record else 0,
    )
    n_iter = int(state.t)
    converged = bool(state.gap < tol)
    lam = np.asarray(project_simplex(state.best_lam))
    history = None
    if record:
        rows = np.asarray(state.history)[:n_iter]
        history = {
            "group_weights": rows[:, :-2],
            "unfairness": rows[:, -2],
            "gap": rows[:, -1],
        }
    return lam, n_iter, converged, history
