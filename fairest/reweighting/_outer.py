"""Outer loops of two-loop BADR on the (capped) simplex: SLSQP, trust-constr (SciPy) and
Frank-Wolfe (badr spec 4.4-4.6), each driving an :class:`~fairest.reweighting._oracle.ImplicitOracle`.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from fairest._kernels._projections import project_simplex
from fairest.reweighting._badr_metrics import MetricSpec
from fairest.reweighting._bilevel import Problem, _oracle
from fairest.reweighting._capped import capped_vertex, project_capped, project_capped_host
from fairest.reweighting._defaults import (
    SLSQP_FIRST_STEP,
)
from fairest.reweighting._oracle import ImplicitOracle

__all__ = ["frank_wolfe", "iteration_counter", "run_frank_wolfe", "run_scipy"]


def _first_step_boost(grad) -> float:
    """Factor making SLSQP's first step (minus the gradient's tangent part) move the
    largest weight change by ``SLSQP_FIRST_STEP``; 1 where that step is undefined."""
    size = float(np.max(np.abs(grad - np.mean(grad))))
    return SLSQP_FIRST_STEP / size if np.isfinite(size) and size > 0 else 1.0


def iteration_counter(progress, max_iter: int):
    """A SciPy ``callback`` calling ``progress(k, max_iter, "outer iteration")`` after
    iteration ``k`` (``None`` without ``progress``); it never stops the solver."""
    if progress is None:
        return None
    done = [0]

    def callback(*_):
        done[0] += 1
        progress(done[0], max_iter, "outer iteration")

    return callback


def run_scipy(
    method: str, orc: ImplicitOracle, lam0, *, max_iter: int, tol: float, caps=None, progress=None
):
    """SLSQP or trust-constr on the simplex (spec 4.4, 4.6), capped at ``caps`` (the
    bounds ``lambda_g <= caps_g``; ``None``: 1). ``progress(step, total, unit)``, if
    given, is called after every iteration. Returns (lambda, n_iter, message, ok)."""
    from scipy.optimize import BFGS, Bounds, LinearConstraint, minimize

    num_groups = lam0.shape[0]
    callback = iteration_counter(progress, max_iter)
    upper = np.ones(num_groups) if caps is None else np.asarray(caps, dtype=np.float64)
    # inexact early solves (ImplicitOracle.loose_solves); the caller re-solves the result
    with orc.loose_solves():
        if method == "slsqp":
            # SLSQP's ftol is absolute: on an unfairness of order 1e-3 the default 1e-10 stops
            # while the optimum is still orders of magnitude lower. Dividing Phi by its starting
            # value (kept within [1e-6, 1]) makes the tolerance relative; it only ever tightens.
            start = abs(orc.fun(lam0))
            scale = 1.0 / float(np.clip(start, 1e-6, 1.0)) if np.isfinite(start) else 1.0
            # SLSQP starts from an identity Hessian, so its first step is the (projected)
            # gradient itself: often 1e-3 of the simplex, and the next iterations only learn
            # the scale. Scaling the objective so that the first step moves a weight by
            # SLSQP_FIRST_STEP, with ftol scaled alike (the same stopping rule), takes 20-40 %
            # fewer evaluations to the same optimum (benchmarks/badr_scaling.py data, G = 2-10).
            boost = _first_step_boost(scale * orc.jac(lam0))
            scale, tol = scale * boost, tol * boost
            result = minimize(
                lambda v: scale * orc.fun(v),
                lam0,
                jac=lambda v: scale * orc.jac(v),
                method="SLSQP",
                bounds=[(0.0, float(u)) for u in upper],
                constraints=[
                    {
                        "type": "eq",
                        "fun": lambda v: np.sum(v) - 1.0,
                        "jac": lambda v: np.ones_like(v),
                    }
                ],
                options={"ftol": tol, "maxiter": max_iter},
                callback=callback,
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
                    bounds=Bounds(np.zeros(num_groups), upper),
                    constraints=[LinearConstraint(np.ones((1, num_groups)), 1.0, 1.0)],
                    options={"gtol": tol, "maxiter": max_iter},
                    callback=callback,
                )
            ok = bool(result.status in (1, 2))
    lam = np.clip(result.x, 0.0, upper)
    lam = lam / lam.sum() if caps is None else project_capped_host(lam, upper)
    lam = orc.snap(lam)  # the last iterate itself where only rounding differs
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
    caps=None,
    *,
    history_rows: int = 0,
):
    """Frank-Wolfe on the simplex with an open-loop step, one ``lax.while_loop`` (spec 4.5).

    LMO ``s_t = e_k``, ``k = argmin_g grad_g``; gap ``<grad, lambda - s_t> >= 0``; stop when
    ``gap < tol`` (``scaled_gap``: ``eta_t gap < tol``, the reference rule) or after
    ``max_iter`` oracle calls. Step (``log_step``) ``min(1, (2 + log(t+1)) / (t + 2 +
    log(t+1)))``, else ``2/(t+2)``. Everything but the history length is traced: the
    iteration counter, ``max_iter``, ``tol`` and the rule never recompile. With ``caps``
    (the weight caps of ``max_weight_ratio``) the LMO is the capped simplex's
    (:func:`~._capped.capped_vertex`).
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
        if caps is None:
            k = jnp.argmin(out.grad)
            vertex = jax.nn.one_hot(k, num_groups, dtype=dtype)
            gap = jnp.dot(out.grad, state.lam) - out.grad[k]
        else:
            vertex = capped_vertex(out.grad, caps)
            gap = jnp.dot(out.grad, state.lam - vertex)
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


def run_frank_wolfe(
    orc: ImplicitOracle,
    lam0,
    *,
    max_iter,
    tol,
    step_rule,
    gap_mode,
    record,
    caps=None,
    progress=None,
):
    """Host entry: run the jitted loop, return (best lambda, n_iter, converged, history).
    ``progress(step, total, unit)``, if given, is called as the loop starts and once it
    ends (the loop itself runs on the device without a host call per iteration)."""
    if progress is not None:
        progress(0, max_iter, "outer iteration")
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
        None if caps is None else jnp.asarray(caps),
        history_rows=max_iter if record else 0,
    )
    n_iter = int(state.t)
    if progress is not None:
        progress(n_iter, max_iter, "outer iteration")
    converged = bool(state.gap < tol)
    best = state.best_lam
    lam = np.asarray(project_simplex(best) if caps is None else project_capped(best, caps))
    history = None
    if record:
        rows = np.asarray(state.history)[:n_iter]
        history = {
            "group_weights": rows[:, :-2],
            "unfairness": rows[:, -2],
            "gap": rows[:, -1],
        }
    return lam, n_iter, converged, history
