"""Two-loop BADR: implicit hypergradient, SLSQP, trust-constr and Frank-Wolfe on the simplex.

The implicit function is ``Phi(lambda) = U(theta*(lambda))`` with
``theta*(lambda) = argmin_theta sum_g lambda_g L_g(theta) + R(theta)`` (badr spec 1.2-1.3).
Its gradient (spec 4.1) needs ONE adjoint solve per outer step:

    H q = grad_theta U(theta*),      (grad Phi)_g = -<grad L_g(theta*), q>,

where ``H`` is factorised by the last Newton pass of the lower-level solve (the factor is
reused, no extra Hessian or factorisation) and ``grad_theta U`` and ``J = [grad L_g]``
come from one pass over the data. The intercept is part of theta everywhere. An oracle
call, :func:`implicit_hypergradient`, is two jitted functions (Newton; metric + adjoint)
with no host synchronisation in between. The host side, a cache of evaluated points and
warm starts, is :class:`~fairest.reweighting._oracle.ImplicitOracle`, run through the
hooks of :class:`~fairest.reweighting._runtime.OracleRuntime`; the outer loops (SLSQP,
trust-constr, Frank-Wolfe) are in :mod:`fairest.reweighting._outer`.

On large data (the thresholds of ``ORACLE_TUNING`` in ``_defaults.py``) the oracle does
less per call: early solves are inexact
(``ORACLE_TUNING.inexact_min_rows``), points that only need ``Phi`` (the safeguard's baselines, the
final refit, restart comparisons) skip the adjoint and get it later only if asked, the
adjoint's products run in two blocked passes (:func:`_adjoint_blocked`), and SLSQP's
points within rounding of an evaluated one reuse it (``ORACLE_TUNING.reuse_min_rows``).
"""

from __future__ import annotations

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
    penalty_diagonal,
    scores,
)
from fairest._kernels._losses import loss_derivatives
from fairest._kernels._placement import (
    GatheredRows,
    gather_dense_rows,
    is_shifted,
    pass_block_rows,
    row_block,
)
from fairest._kernels._sparse import is_sparse, take_rows
from fairest._solvers import _newton
from fairest._solvers._defaults import SOLVER_TUNING
from fairest._solvers._newton import NewtonResult, newton_solve
from fairest._solvers._newton_cg import jacobi_preconditioner, newton_cg_solve, pcg_solve
from fairest.reweighting._badr_metrics import MetricSpec, exact_unfairness, smooth_unfairness
from fairest.reweighting._defaults import ADJOINT_CG_MAX_ITER, ORACLE_TUNING

# re-exported: tests/estimators/test_sparse_badr_ermi.py reads it here

__all__ = [
    "OracleOutput",
    "Problem",
    "implicit_hypergradient",
    "lower_level",
    "oracle",
    "upper_level",
]


def cache_size(num_params: int, num_groups: int) -> int:
    """Evaluated points the oracle keeps: each holds a p x p Cholesky factor (none on the
    Newton-CG path) and the p x G Jacobian, so many parameters mean fewer points (at least
    one)."""
    per_point = num_params * (factor_size(num_params) + num_groups)
    return max(1, min(ORACLE_TUNING.cache_size, ORACLE_TUNING.cache_floats // per_point))


def uses_newton_cg(num_params: int) -> bool:
    """Whether the lower level runs Newton-CG (p above
    ``SOLVER_TUNING.newton_cg_min_params``, badr spec
    section 2): no Hessian is formed, the adjoint is a CG solve and there is no factor
    (a 1 x 1 placeholder stands in for it). Decided from a shape, so at trace time."""
    return num_params > SOLVER_TUNING.newton_cg_min_params


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
    temperature: jax.Array  # (2,) metric smoothing: sigmoid and smooth-max temperatures
    inner_tol: jax.Array
    inner_max_iter: jax.Array
    # float32 Hessian blocks (large n): a float32 copy of X or the blocked_hessian() marker
    X_hessian: jax.Array | None = None
    # 1.0: the metrics score b + X w; 0.0: X w, the reference toolbox's convention (badr
    # spec 3.0, ``reference_compat``)
    metric_intercept: jax.Array | float = 1.0


class OracleOutput(NamedTuple):
    value: jax.Array  # Phi(lambda)
    grad: jax.Array  # (G,) grad Phi(lambda)
    theta: jax.Array  # theta*(lambda)
    group_losses: jax.Array  # (G,) L_g(theta*)
    inner_iter: jax.Array
    inner_converged: jax.Array
    cholesky: jax.Array  # (p, p) lower factor of H at theta* or at the Newton point before it
    jacobian: jax.Array  # (p, G) J = [grad L_g(theta*)]
    contraction: jax.Array  # largest ||g_next|| / ||g||^2 seen in the Newton solve (0: none)
    unverified: jax.Array  # Newton ended with a predicted step (its gradient checked here)
    lower_grad_norm: jax.Array  # ||grad F(theta*)||_inf, measured by the value / adjoint pass


def metric_scores(theta, problem: Problem):
    """Scores the metrics see: ``b + X w``, or ``X w`` under ``reference_compat``."""
    return problem.X @ theta[1:] + problem.metric_intercept * theta[0]


def metric_value(loss_metric: MetricSpec, theta, problem: Problem, num_groups: int):
    """Smooth train unfairness ``U(theta)``."""
    return smooth_unfairness(
        loss_metric,
        metric_scores(theta, problem),
        problem.y,
        problem.groups,
        problem.weight,
        num_groups,
        problem.temperature,
    )


def batch_group_sums(loss: str, theta, batch: Batch, num_groups: int):
    """:func:`~fairest._kernels._glm.group_sums`; a
    :class:`~fairest._kernels._placement.ShiftedRows` ``X`` is traced with the caller's
    program, not through ``group_sums``'s own jit."""
    run = group_sums.__wrapped__ if is_shifted(batch.X) else group_sums
    return run(loss, theta, batch, num_groups)


def group_losses_and_jacobian(loss: str, theta, problem: Problem, num_groups: int):
    """Mean group losses ``L_g`` (G,) and ``J = [grad L_g]`` (p, G) in one pass."""
    batch = Batch(problem.X, problem.y, problem.groups, problem.weight)
    loss_sums, grad_sums, totals = batch_group_sums(loss, theta, batch, num_groups)
    safe = jnp.where(totals > 0, totals, 1.0)
    return loss_sums / safe, grad_sums / safe


def lower_solve(loss: str, lam, theta0, problem: Problem, num_groups: int, contraction=None):
    """``theta*(lambda)`` by damped Newton (returns the Cholesky factor too), or by
    Newton-CG when there are many parameters (:func:`uses_newton_cg`). ``contraction``
    enables Newton's predicted last step (:func:`~fairest._solvers._newton.newton_solve`):
    the result may then be ``unverified``, to be checked by :func:`_adjoint`."""
    c = group_to_sample_weights(lam, problem.groups, problem.weight, num_groups)
    args = (
        loss,
        problem.X,
        problem.y,
        c,
        problem.alpha,
        problem.penalize_intercept,
        theta0,
        problem.inner_tol,
        problem.inner_max_iter,
    )
    if uses_newton_cg(theta0.shape[0]):
        result = newton_cg_solve(*args)
        no_factor = jnp.zeros((factor_size(theta0.shape[0]),) * 2, theta0.dtype)
        zero = jnp.zeros((), theta0.dtype)
        return NewtonResult(
            result.theta,
            result.objective,
            result.grad_norm,
            no_factor,
            result.n_iter,
            result.converged,
            zero,
            jnp.array(False),
            zero,
        )
    return newton_solve(*args, problem.X_hessian, contraction)


def score_gradient_sums(
    grad_s, r, X, groups, num_groups: int, use_segments=None, block_rows: int | None = None
):
    """``A^T grad_s`` (p,) and ``A^T M`` (p, G), ``M_ig = 1[g(i) = g] r_i``, ``A = [1, X]``.

    Large data (more than ``block_rows`` rows, default ``ORACLE_TUNING.adjoint_block_rows``; the
    default path): the products are summed over row blocks (:func:`row_block_sums`),
    the one-hot columns built block by block, never as an n x G matrix. Otherwise (or
    with ``use_segments`` given): few groups, one product ``[grad_s, M]^T X`` with M
    one-hot (samples as the contracted leading axis of both); many groups
    (``num_groups >= ORACLE_TUNING.segment_sum_min_groups``, decided at trace time), per-group
    segment sums of ``r_i x_i``.
    """
    block_rows = ORACLE_TUNING.adjoint_block_rows if block_rows is None else block_rows
    if is_sparse(X):  # one sparse product [grad_s, M]^T X, O(nnz (1 + G))
        use_segments = False
    if use_segments is None and X.shape[0] > block_rows:

        def make_columns(grad_s, r, groups):  # (rows, 1 + G): [grad_s, one-hot * r]
            one_hot = jax.nn.one_hot(groups, num_groups, dtype=r.dtype)
            return jnp.concatenate([grad_s[:, None], one_hot * r[:, None]], axis=1)

        sums = row_block_sums(X, make_columns, grad_s, r, groups, block_rows=block_rows)
        return sums[:, 0], sums[:, 1:]
    if use_segments is None:
        use_segments = num_groups >= ORACLE_TUNING.segment_sum_min_groups
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


def row_block_sums(X, make_columns, *row_arrays, block_rows: int | None = None):
    """``A^T C`` (p, k), ``A = [1, X]``, ``C = make_columns(*row_arrays)`` (n, k), in one
    pass over ``X`` summed over blocks of ``block_rows`` rows: ``make_columns`` gets the
    block's rows of every array of ``row_arrays`` (each of leading size n), so ``C`` is
    only ever formed block by block.

    XLA on CPU runs a product contracting the samples axis of an (n, d) matrix (``c @ X``,
    ``C.T @ X``) several times slower than a pass over ``X`` needs, so these products run
    over row blocks as :func:`~fairest._kernels._glm.weighted_gram` does: the last block
    is clamped to the end of the data, its rows already counted masked out. Traceable;
    ``make_columns`` and ``block_rows`` are static.
    """
    block_rows = ORACLE_TUNING.adjoint_block_rows if block_rows is None else block_rows
    n, d = X.shape
    if n <= block_rows or is_sparse(X):  # sparse: one O(nnz k) product, C is (n, k)
        C = make_columns(*row_arrays)
        return jnp.concatenate([jnp.sum(C, axis=0)[None, :], X.T @ C], axis=0)

    def add_block(k, total):
        start = jnp.minimum(k * block_rows, n - block_rows)
        take = partial(row_block, start=start, count=block_rows)  # ShiftedRows X too
        fresh = start + jnp.arange(block_rows) >= k * block_rows  # not in an earlier block
        C = jnp.where(fresh[:, None], make_columns(*map(take, row_arrays)), 0.0)
        return total + jnp.concatenate([jnp.sum(C, axis=0)[None, :], take(X).T @ C], axis=0)

    num_columns = jax.eval_shape(make_columns, *row_arrays).shape[1]
    zero = jnp.zeros((d + 1, num_columns), X.dtype)
    return jax.lax.fori_loop(0, -(-n // block_rows), add_block, zero)


def exact_hessian_vector_product(loss: str, theta, v, X, y, c, alpha, penalize_intercept):
    """``H v`` in float64 (:func:`~fairest._kernels._glm.hessian_vector_product`) with
    its ``u^T A`` product summed over row blocks (:func:`row_block_sums`)."""
    _, _, d2 = loss_derivatives(loss, scores(theta, X), y)
    u = c * d2 * scores(v, X)
    hv = row_block_sums(X, lambda u: u[:, None], u)[:, 0]
    return hv + penalty_diagonal(loss, theta, alpha, penalize_intercept) * v


def _adjoint(loss, metric, num_groups, lam, theta, cholesky, problem):
    """Metric, its gradient, ONE adjoint solve with the given factor, and ``-J^T q``.

    Also returns the group losses, ``J`` (kept for the tangent warm start of the next
    lower-level solve, :func:`predicted_start`) and ``||grad F(theta)||_inf = ||J lambda +
    R'(theta)||_inf``, the lower-level gradient, which checks a Newton solve that ended
    with a predicted step. One pass over the data: the scores are formed once, and
    ``grad_theta U = A^T grad_s U`` and ``J = A^T M`` come out of one product ``[grad_s U,
    M]^T X`` (samples as the contracted leading axis of both). With ``problem.X_hessian``
    the factor is that of a float32-assembled Hessian, possibly at the Newton point before
    a predicted step (:class:`ImplicitOracle` predicts only then): one step of iterative
    refinement with an exact float64 Hessian-vector product at ``theta`` brings the
    adjoint back to float64 accuracy.
    """
    s = scores(theta, problem.X)
    dropped = (1.0 - problem.metric_intercept) * theta[0]  # 0 unless reference_compat
    value, grad_s = jax.value_and_grad(smooth_unfairness, argnums=1)(
        metric,
        s - dropped,
        problem.y,
        problem.groups,
        problem.weight,
        num_groups,
        problem.temperature,
    )
    pointwise, d1, _ = loss_derivatives(loss, s, problem.y)
    seg = partial(jax.ops.segment_sum, segment_ids=problem.groups, num_segments=num_groups)
    totals = seg(problem.weight)
    safe = jnp.where(totals > 0, totals, 1.0)
    r = problem.weight * d1
    grad_u, jacobian_sums = score_gradient_sums(grad_s, r, problem.X, problem.groups, num_groups)
    grad_u = grad_u.at[0].multiply(problem.metric_intercept)
    jacobian = jacobian_sums / safe
    c = group_to_sample_weights(lam, problem.groups, problem.weight, num_groups)
    args = (problem.X, problem.y, c, problem.alpha, problem.penalize_intercept)
    if uses_newton_cg(theta.shape[0]):
        hvp = partial(
            hessian_vector_product,
            loss,
            theta,
            X=problem.X,
            y=problem.y,
            c=c,
            alpha=problem.alpha,
            penalize_intercept=problem.penalize_intercept,
        )
        preconditioner = jacobi_preconditioner(loss, theta, *args)
        adjoint, _ = pcg_solve(hvp, grad_u, preconditioner, problem.inner_tol, ADJOINT_CG_MAX_ITER)
    else:
        adjoint = cho_solve((cholesky, True), grad_u)
        if problem.X_hessian is not None:  # the factor is inexact (see the docstring)
            exact = exact_hessian_vector_product(loss, theta, adjoint, *args)
            adjoint = adjoint + cho_solve((cholesky, True), grad_u - exact)
    losses = seg(problem.weight * pointwise) / safe
    penalty = penalty_diagonal(loss, theta, problem.alpha, problem.penalize_intercept)
    lower_grad_norm = jnp.max(jnp.abs(jacobian @ lam + penalty * theta))
    return value, -(jacobian.T @ adjoint), losses, jacobian, lower_grad_norm


def row_block_sums_t(X, make_rows, *row_arrays, block_rows: int | None = None):
    """:func:`row_block_sums` with ``make_rows`` giving the (k, rows) TRANSPOSE of the
    columns, each block's product formed as ``C_b X_b`` (k, d): XLA CPU runs that faster
    than ``X_b^T C_b``. Returns ``A^T C`` (p, k) as :func:`row_block_sums`; dense ``X``
    only. Traceable; ``make_rows`` and ``block_rows`` are static."""
    block_rows = ORACLE_TUNING.adjoint_block_rows if block_rows is None else block_rows
    n, d = X.shape
    if n <= block_rows:
        C = make_rows(*row_arrays)
        return jnp.concatenate([jnp.sum(C, axis=1)[None, :], (C @ X).T], axis=0)

    def add_block(k, totals):
        start = jnp.minimum(k * block_rows, n - block_rows)
        take = partial(row_block, start=start, count=block_rows)  # ShiftedRows X too
        fresh = start + jnp.arange(block_rows) >= k * block_rows  # not in an earlier block
        C = jnp.where(fresh[None, :], make_rows(*map(take, row_arrays)), 0.0)
        return totals[0] + jnp.sum(C, axis=1), totals[1] + C @ take(X)

    k = jax.eval_shape(make_rows, *row_arrays).shape[0]
    zeros = (jnp.zeros((k,), X.dtype), jnp.zeros((k, d), X.dtype))
    sums, products = jax.lax.fori_loop(0, -(-n // block_rows), add_block, zeros)
    return jnp.concatenate([sums[None, :], products.T], axis=0)


def blocked_hessian_vector_product(
    loss: str, theta, v, X, y, c, alpha, penalize_intercept, d2=None, block_rows=None
):
    """``H v`` in float64 in ONE blocked pass over dense ``X`` (:func:`row_block_sums_t`:
    ``A v`` and ``u^T A`` of each block together), ``d2`` the loss's second derivatives
    at ``theta`` when already known. Equals :func:`exact_hessian_vector_product`."""
    if d2 is None:
        _, _, d2 = loss_derivatives(loss, scores(theta, X), y)
    q = c * d2

    def make_rows(q, rows_X):  # the block's u = q * (A v), as a (1, rows) row
        return (q * (rows_X @ v[1:] + v[0]))[None, :]

    # X's block is passed as a row array: sliced once, used for both products
    hv = row_block_sums_t(X, make_rows, q, X, block_rows=block_rows)[:, 0]
    return hv + penalty_diagonal(loss, theta, alpha, penalize_intercept) * v


def _metric_parts(loss, metric, num_groups, theta, problem, with_grad: bool):
    """Scores, the smooth unfairness (and its score gradient), loss derivatives and
    group totals at ``theta``: the elementwise part of an oracle call."""
    s = scores(theta, problem.X)
    dropped = (1.0 - problem.metric_intercept) * theta[0]  # 0 unless reference_compat
    args = (problem.y, problem.groups, problem.weight, num_groups, problem.temperature)
    if with_grad:
        value, grad_s = jax.value_and_grad(smooth_unfairness, argnums=1)(metric, s - dropped, *args)
    else:
        value, grad_s = smooth_unfairness(metric, s - dropped, *args), None
    pointwise, d1, d2 = loss_derivatives(loss, s, problem.y)
    totals = jax.ops.segment_sum(problem.weight, problem.groups, num_segments=num_groups)
    return value, grad_s, pointwise, d1, d2, jnp.where(totals > 0, totals, 1.0)


def _group_rows(num_groups: int):
    """``make_rows`` of the Jacobian (:func:`row_block_sums_t`): one-hot rows times ``r``."""

    def make_rows(r, groups):
        one_hot = groups[None, :] == jnp.arange(num_groups, dtype=groups.dtype)[:, None]
        return one_hot.astype(r.dtype) * r[None, :]

    return make_rows


def _blocked(X) -> bool:
    """Whether the large-data kernels (:func:`row_block_sums_t`) apply: dense ``X`` of
    more than one adjoint block."""
    return not is_sparse(X) and X.shape[0] > ORACLE_TUNING.adjoint_block_rows


def _adjoint_blocked(loss, metric, num_groups, lam, theta, cholesky, problem):
    """:func:`_adjoint` for large dense data (``ORACLE_TUNING.reuse_min_rows``, Cholesky path), the
    same values in fewer passes over ``X``: the loss derivatives once, ``[grad_s U,
    M]^T A`` in one :func:`row_block_sums_t` pass and the refinement's exact Hessian-vector
    product in one more (:func:`blocked_hessian_vector_product`, reusing ``l''``), where
    the plain path recomputes the scores and runs two products per sum."""
    value, grad_s, pointwise, d1, d2, safe = _metric_parts(
        loss, metric, num_groups, theta, problem, with_grad=True
    )
    group_rows = _group_rows(num_groups)

    def make_rows(grad_s, r, groups):  # (1 + G, rows): [grad_s; one-hot * r]
        return jnp.concatenate([grad_s[None, :], group_rows(r, groups)], axis=0)

    r = problem.weight * d1
    sums = row_block_sums_t(problem.X, make_rows, grad_s, r, problem.groups)
    grad_u = sums[:, 0].at[0].multiply(problem.metric_intercept)
    jacobian = sums[:, 1:] / safe
    adjoint = cho_solve((cholesky, True), grad_u)
    if problem.X_hessian is not None:  # the factor is inexact (see _adjoint)
        c = group_to_sample_weights(lam, problem.groups, problem.weight, num_groups)
        args = (problem.X, problem.y, c, problem.alpha, problem.penalize_intercept)
        exact = blocked_hessian_vector_product(loss, theta, adjoint, *args, d2=d2)
        adjoint = adjoint + cho_solve((cholesky, True), grad_u - exact)
    losses = jax.ops.segment_sum(problem.weight * pointwise, problem.groups, num_groups) / safe
    lower_grad_norm = _lower_gradient_norm(jacobian, lam, loss, theta, problem)
    return value, -(jacobian.T @ adjoint), losses, jacobian, lower_grad_norm


def _group_columns(num_groups: int):
    """``make_columns`` of the Jacobian: the one-hot columns of the groups times ``r``."""

    def make_columns(r, groups):
        return jax.nn.one_hot(groups, num_groups, dtype=r.dtype) * r[:, None]

    return make_columns


def _lower_gradient_norm(jacobian, lam, loss, theta, problem):
    """``||J lambda + R'(theta)||_inf``: the lower level's gradient at ``theta``."""
    penalty = penalty_diagonal(loss, theta, problem.alpha, problem.penalize_intercept)
    return jnp.max(jnp.abs(jacobian @ lam + penalty * theta))


def _value_one_pass(loss, metric, num_groups, lam, theta, problem):
    """The oracle's value part only (no adjoint): ``Phi``, the group losses, ``J`` (for
    tangent predictions) and the lower level's gradient norm (the check of a predicted
    Newton step), ``J`` in one blocked pass. What a comparison (the safeguard's
    baselines, a line-search trial point, the final refit) needs; the gradient is added
    later only if asked for (:meth:`ImplicitOracle.evaluate`)."""
    value, _, pointwise, d1, _, safe = _metric_parts(
        loss, metric, num_groups, theta, problem, with_grad=False
    )
    r = problem.weight * d1
    if _blocked(problem.X):
        sums = row_block_sums_t(problem.X, _group_rows(num_groups), r, problem.groups)
    else:
        sums = row_block_sums(problem.X, _group_columns(num_groups), r, problem.groups)
    jacobian = sums / safe
    losses = jax.ops.segment_sum(problem.weight * pointwise, problem.groups, num_groups) / safe
    lower_grad_norm = _lower_gradient_norm(jacobian, lam, loss, theta, problem)
    return value, losses, jacobian, lower_grad_norm


def _oracle(loss, metric, num_groups, lam, theta0, problem):
    """Traceable oracle (used inside the jitted Frank-Wolfe and single-loop solvers)."""
    result = lower_solve(loss, lam, theta0, problem, num_groups)
    upper = _adjoint(loss, metric, num_groups, lam, result.theta, result.cholesky, problem)
    return _output(result, *upper)


def _output(result, value, grad, losses, jacobian, lower_grad_norm) -> OracleOutput:
    """Oracle output from a Newton result and the metric + adjoint part; a predicted last
    Newton step is judged here by the gradient the adjoint pass computed at ``theta``."""
    unverified = result.unverified
    converged = jnp.where(unverified, lower_grad_norm <= result.threshold, result.converged)
    measurable = unverified & (lower_grad_norm >= _newton.NOISE_FLOOR * result.threshold)
    observed = jnp.where(measurable, lower_grad_norm / result.grad_norm**2, 0.0)
    return OracleOutput(
        value,
        grad,
        result.theta,
        losses,
        result.n_iter,
        converged,
        result.cholesky,
        jacobian,
        jnp.maximum(result.contraction, observed),
        unverified,
        lower_grad_norm,
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
def _lower_from_anchor(loss, num_groups, lam, anchor: Anchor, problem: Problem, contraction):
    start = predicted_start(lam, anchor)
    return lower_solve(loss, lam, start, problem, num_groups, contraction)


@partial(jax.jit, static_argnames=("loss", "num_groups"))
def _lower_on_rows(
    loss, num_groups, lam, anchor: Anchor, problem: Problem, contraction, rows, valid
):
    """:func:`_lower_from_anchor` on the rows ``rows`` (``valid`` 0 on filler entries): the
    same solution when every row with a positive weight under ``lam`` is among them."""
    take = partial(jnp.take, indices=rows, axis=0)
    subset = problem._replace(
        X=_rows_of(problem, rows),
        y=take(problem.y),
        groups=take(problem.groups),
        weight=take(problem.weight) * valid,
        X_hessian=(  # a float32 copy is gathered too; None or the blocked marker stays
            take(problem.X_hessian)
            if problem.X_hessian is not None and problem.X_hessian.shape[0] > 0
            else problem.X_hessian
        ),
    )
    return _lower_from_anchor(loss, num_groups, lam, anchor, subset, contraction)


def _rows_of(problem: Problem, rows):
    """The rows ``rows`` of ``problem.X`` for a solve on them: a
    :class:`~fairest._kernels._placement.GatheredRows` (no copy; each pass gathers its row
    blocks) where the Newton passes read ``X`` only by row blocks (dense, more rows than
    one block, no float32 copy of ``X``, Cholesky Newton), else the gathered rows
    themselves (sparse ``X``: :meth:`SparseRows.take_rows`)."""
    X = problem.X
    if reads_rows_lazily(problem) and rows.shape[0] > pass_block_rows(X.shape[1]):
        return GatheredRows(X, rows)
    return gather_rows(X, rows)  # at most one row block when dense: a few MiB


def reads_rows_lazily(problem: Problem) -> bool:
    """Whether a solve on a subset of the rows reads them through a
    :class:`~fairest._kernels._placement.GatheredRows` (when it has more rows than one
    block): dense ``X``, Cholesky Newton, no float32 copy of ``X``."""
    X_hessian = problem.X_hessian
    return (
        not is_sparse(problem.X)
        and not uses_newton_cg(problem.X.shape[1] + 1)
        and (X_hessian is None or X_hessian.shape[0] == 0)
    )


@partial(jax.jit, static_argnames=("loss", "metric", "num_groups"))
def _upper_from_result(loss, metric, num_groups, lam, result: NewtonResult, problem: Problem):
    upper = _adjoint(loss, metric, num_groups, lam, result.theta, result.cholesky, problem)
    return _output(result, *upper)


@partial(jax.jit, static_argnames=("loss", "metric", "num_groups"))
def _upper_blocked(loss, metric, num_groups, lam, result: NewtonResult, problem: Problem):
    """:func:`_upper_from_result` by :func:`_adjoint_blocked`."""
    upper = _adjoint_blocked(loss, metric, num_groups, lam, result.theta, result.cholesky, problem)
    return _output(result, *upper)


@partial(jax.jit, static_argnames=("loss", "metric", "num_groups"))
def _value_from_result(loss, metric, num_groups, lam, result: NewtonResult, problem: Problem):
    """Oracle output without the hypergradient (``grad`` NaN): :func:`_value_one_pass`."""
    value, losses, jacobian, lower_grad_norm = _value_one_pass(
        loss, metric, num_groups, lam, result.theta, problem
    )
    no_grad = jnp.full((num_groups,), jnp.nan, value.dtype)
    return _output(result, value, no_grad, losses, jacobian, lower_grad_norm)


def placeholder_result(theta) -> NewtonResult:
    """A Newton result of the right shapes and dtypes (compiles the upper level early)."""
    p, zero = theta.shape[0], np.float64(0.0)
    return NewtonResult(
        theta,
        zero,
        zero,
        np.eye(factor_size(p)),
        np.int32(0),
        np.bool_(True),
        zero,
        np.bool_(False),
        zero,
    )


def implicit_hypergradient(
    loss: str,
    metric: MetricSpec,
    num_groups: int,
    lam,
    problem: Problem,
    anchor: Anchor,
    *,
    contraction=np.inf,
    mode: str = "plain",
    rows=None,
    ready=None,
):
    """``Phi(lambda) = U(theta*(lambda))`` and its gradient by the implicit function
    theorem (badr spec 1.3, 4.1)::

        theta* = argmin_theta sum_g lambda_g L_g(theta) + R(theta)   lower level (Newton)
        H q    = grad_theta U(theta*)                                adjoint (one solve)
        (grad Phi)_g = -<grad L_g(theta*), q>                        hypergradient

    ``H`` is the lower level's Hessian at ``theta*``, factorised by Newton's last pass
    (no extra factorisation; the Newton-CG path solves with conjugate gradients), and
    ``grad_theta U`` and ``J = [grad L_g]`` come from one pass over the data.

    Two jitted calls in sequence, no host synchronisation in between: the Newton solve
    started at ``anchor``'s tangent prediction (:func:`predicted_start`; compiled once
    per loss and shape whatever the metric) and the metric + adjoint part
    (:func:`upper_level`, compiled per metric), so that a new metric never recompiles the
    Newton solver.

    Parameters
    ----------
    loss, metric, num_groups, lam, problem
        The lower-level loss, the smooth unfairness, G, the weights and the data.
    anchor : Anchor
        Where the Newton solve starts (:func:`plain_anchor` for a given ``theta``).
    contraction : float, default=inf
        Finite: Newton may end with a predicted step (checked by the adjoint pass,
        ``OracleOutput.inner_converged``).
    mode : {"plain", "blocked", "value"}, default="plain"
        The adjoint kernel (:func:`upper_level`); ``"value"`` computes no hypergradient.
    rows : tuple (rows, valid), default=None
        Solve the lower level on these rows only (:func:`_lower_on_rows`: the same
        solution when every row of positive weight under ``lam`` is among them).
    ready : callable, default=None
        ``ready(name)`` is called before the kernel ``"rows"``, ``"adjoint"`` or
        ``"value"`` first runs (the runtime's wait for its background compilation).

    Returns
    -------
    result : NewtonResult
        The lower-level solve.
    output : OracleOutput
        ``Phi``, its gradient (NaN with ``mode="value"``), ``theta*`` and diagnostics.
    """
    ready = ready or (lambda name: None)
    contraction = np.float64(contraction)
    if rows is None:
        result = _lower_from_anchor(loss, num_groups, lam, anchor, problem, contraction)
    else:
        ready("rows")
        result = _lower_on_rows(loss, num_groups, lam, anchor, problem, contraction, *rows)
    ready("value" if mode == "value" else "adjoint")
    return result, upper_level(loss, metric, num_groups, lam, result, problem, mode)


def oracle(
    loss: str, metric: MetricSpec, num_groups: int, lam, theta0, problem: Problem, anchor=None
):
    """``Phi(lambda)``, ``grad Phi(lambda)``, ``theta*(lambda)`` from the host: the
    :class:`OracleOutput` of :func:`implicit_hypergradient` started at ``theta0`` or, given
    an ``anchor``, at its tangent prediction."""
    anchor = plain_anchor(theta0, num_groups) if anchor is None else anchor
    return implicit_hypergradient(loss, metric, num_groups, lam, problem, anchor)[1]


def lower_level(loss: str, num_groups: int, lam, theta0, problem: Problem):
    """Jitted Newton solve for ``theta*(lambda)`` started at ``theta0``, to convergence
    (no predicted last step)."""
    anchor = plain_anchor(theta0, num_groups)
    return _lower_from_anchor(loss, num_groups, lam, anchor, problem, np.float64(np.inf))


def upper_level(
    loss: str, metric: MetricSpec, num_groups: int, lam, result, problem: Problem, mode="plain"
):
    """Jitted metric + adjoint part at the solution ``result`` of :func:`lower_level`:
    ``mode`` ``"plain"`` (:func:`_adjoint`), ``"blocked"`` (:func:`_adjoint_blocked`,
    large dense data) or ``"value"`` (no hypergradient, :func:`_value_one_pass`)."""
    kernel = {
        "plain": _upper_from_result,
        "blocked": _upper_blocked,
        "value": _value_from_result,
    }[mode]
    return kernel(loss, metric, num_groups, lam, result, problem)


def exact_metric_value(metric: MetricSpec, theta, problem: Problem, num_groups: int) -> float:
    """Exact train unfairness (hard predictions) at ``theta``: the numpy metrics of
    :mod:`fairest.metrics`, on the host (reporting only, called once per fit)."""
    theta = np.asarray(theta)
    intercept = float(problem.metric_intercept) * theta[0]
    s = host_scores(problem.X, theta[1:]) + intercept  # numpy: no kernel compiled for it
    return exact_unfairness(metric, s, problem.y, problem.groups, problem.weight, num_groups)


def gather_rows(X, rows):
    """Rows ``rows`` of a device ``X`` (dense, :class:`SparseRows` or
    :class:`~fairest._kernels._placement.ShiftedRows`, read from its flat buffer and head
    without assembling ``X``) as a dense / sparse device matrix. Traceable."""
    return take_rows(X, rows) if is_sparse(X) else gather_dense_rows(X, rows)


def host_scores(X, w) -> np.ndarray:
    """``X @ w`` on the host (numpy, no kernel compiled) for a device ``X``: dense,
    :class:`SparseRows` or :class:`~fairest._kernels._placement.ShiftedRows` (rows read
    as views of its flat buffer; the few rows overlapping its head assembled apart)."""
    w = np.asarray(w)
    if not is_shifted(X):
        return host_matrix(X) @ w
    n, d = X.shape
    shift = X.shift
    flat = host_view(X.flat)
    lead_rows = min(n, -(-shift // d))  # rows holding one of the head's elements
    lead = np.concatenate([host_view(X.head), flat[: lead_rows * d - shift]])
    rest = flat[lead_rows * d - shift :].reshape(n - lead_rows, d)
    return np.concatenate([lead.reshape(lead_rows, d) @ w, rest @ w])


def host_matrix(X):
    """:func:`host_view` of a dense ``X``; a scipy CSR view of a :class:`SparseRows`."""
    if not is_sparse(X):
        return host_view(X)
    import scipy.sparse as sp

    parts = (host_view(X.data), host_view(X.indices), host_view(X.indptr))
    return sp.csr_matrix(parts, shape=X.shape)


def host_view(array) -> np.ndarray:
    """A numpy view of a device array without copying it where the device is the host
    (DLPack), else a copy."""
    try:
        return np.from_dlpack(array)
    except (BufferError, RuntimeError, TypeError, ValueError):
        return np.asarray(array)
