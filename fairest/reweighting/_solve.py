"""BADR's one solver entry point: :func:`solve_badr` (badr spec sections 4-6).

It holds the policy around the solvers of :mod:`fairest.reweighting._bilevel` and
:mod:`fairest.reweighting._single_loop`: the safeguard's baselines (uniform, balanced,
every one-group vertex, spec 4.8), the dispatch to the chosen solver, the restarts of a
two-loop solver that ends no better than a baseline, the final choice of the weights, and
the one-group case (nothing to reweigh). It takes a :class:`~._bilevel.Problem` built by
:func:`~._common.make_problem` and returns a :class:`BADRResult` of host values; the
estimators only validate, build the problem, call it and store the result.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.utils import check_random_state

from fairest.reweighting import _defaults
from fairest.reweighting._badr_metrics import MetricSpec
from fairest.reweighting._bilevel import (
    Problem,
    exact_metric_value,
    group_losses_and_jacobian,
    host_scores,
    lower_solve,
)
from fairest.reweighting._capped import project_capped, weight_caps
from fairest.reweighting._common import baseline_weights, one_label_groups, single_class_groups
from fairest.reweighting._defaults import ORACLE_TUNING
from fairest.reweighting._oracle import ImplicitOracle
from fairest.reweighting._outer import run_frank_wolfe, run_scipy
from fairest.reweighting._segment import run_segment
from fairest.utils._degenerate import near_constant
from fairest.utils._linear import positive_scores

__all__ = [
    "SOLVERS",
    "BADRResult",
    "BADRSettings",
    "OneClassVertex",
    "evaluate_baselines",
    "restart_points",
    "run_single_loop",
    "run_solver",
    "selected_name",
    "solve_badr",
]

SOLVERS = ("slsqp", "frank-wolfe", "trust-constr", "gd", "sgd")
TWO_LOOP_SOLVERS = ("slsqp", "trust-constr", "frank-wolfe")


class BADRSettings(NamedTuple):
    """The hyper-parameters of a BADR solve (the estimator's parameters of the same names).

    ``max_iter`` / ``tol`` ``None`` mean the solver's default (``_defaults.MAX_ITER``,
    ``_defaults.TOL``); ``batch_size`` ``None`` means ``max(G, min(n, 256))``;
    ``random_state`` seeds badr-sgd's minibatches (and badr-gd's key), drawn only by the
    single-loop solvers; ``max_weight_ratio`` caps every group's weight at that multiple
    of its share of the sample weight (:mod:`~._capped`; ``None``: the whole simplex).
    """

    solver: str = "slsqp"
    max_iter: int | None = None
    tol: float | None = None
    batch_size: int | None = None
    learning_rate: float | str = _defaults.LEARNING_RATE
    dual_learning_rate: float = _defaults.DUAL_LEARNING_RATE
    clip_norm: float = _defaults.CLIP_NORM
    check_every: int = _defaults.CHECK_EVERY
    step_rule: str = "log"
    gap_mode: str = "gap"
    safeguard: bool = True
    random_state: object = None
    record_history: bool = False
    max_weight_ratio: float | None = None


class BADRResult(NamedTuple):
    """Outcome of :func:`solve_badr` (host values)."""

    theta: np.ndarray  # (d + 1,) intercept first: the weighted refit at group_weights
    group_weights: np.ndarray  # (G,) on the simplex
    n_iter: int  # outer iterations (one group: Newton iterations of the plain fit)
    n_evaluations: int  # oracle calls (lower-level solves) made from the host
    converged: bool
    message: str  # why the solver did not converge ("" or a reason)
    inner_converged: bool  # the lower-level Newton solve at group_weights reached inner_tol
    unfairness: float  # smooth train unfairness at group_weights
    unfairness_exact: float
    group_losses: np.ndarray  # (G,) mean train loss of every group
    baseline_unfairness: dict  # safeguard baselines -> smooth unfairness ({} without safeguard)
    selected: str  # the solver's name, a baseline's name or "one group"
    history: dict  # per outer iteration / oracle call / check ({} unless record_history)
    one_class_vertex: OneClassVertex | None = None  # the result steered off, if any


class OneClassVertex(NamedTuple):
    """A (nearly) constant classifier that the weight search reached near a single-class
    group's vertex, replaced by the best baseline whose model is not constant."""

    group: int  # the single-class group of largest weight in group_weights
    group_weights: np.ndarray  # (G,) where the search ended
    unfairness: float  # its smooth train unfairness
    theta: np.ndarray  # (d + 1,) its model


def solve_badr(
    loss: str,
    metric: MetricSpec,
    problem: Problem,
    groups: np.ndarray,
    num_groups: int,
    settings: BADRSettings | None = None,
    progress=None,
) -> BADRResult:
    """Group weights of minimal train unfairness and the model fitted at them.

    Parameters
    ----------
    loss : {"logistic", "squared_hinge", "squared_error"}
        Per-sample loss of the model.
    metric : MetricSpec
        The smooth train unfairness (``_common.build_metric_spec``).
    problem : Problem
        Padded float64 device arrays (``_common.make_problem``, built inside
        ``jax.enable_x64(True)``); every group needs a positive total weight.
    groups : ndarray of shape (n_samples,)
        Integer group codes ``0..G-1`` of the unpadded rows.
    num_groups : int
        Number G of groups.
    settings : BADRSettings, default=None
        The solver and its hyper-parameters; ``None`` means ``BADRSettings()`` (the
        whole simplex, the paper's search).
    progress : callable, default=None
        ``progress(step, total, unit)``, called as the outer loop advances (after every
        SLSQP / trust-constr iteration or bracket trial, every chunk of the single-loop
        solvers; as the jitted Frank-Wolfe loop starts and ends).

    Returns
    -------
    BADRResult
        Weights, model and diagnostics. With a single group the plain model is fitted
        (weights ``[1.0]``, ``selected="one group"``).

    Two-loop solvers start at uniform weights (warm-started at ``theta*(uniform)``), or,
    where ``settings.max_weight_ratio`` caps a group, at the fairest baseline (the pooled
    weights, plain ERM, without the safeguard): on ACSPublicCoverage by race (9 groups)
    that halves the lower-level solves to the same weights;
    with ``settings.safeguard`` the baselines are evaluated first, a two-loop solver that
    ends no better than them is restarted (:func:`restart_points`), and the best baseline
    is returned when it still beats the solver (spec 4.8).
    """
    settings = BADRSettings() if settings is None else settings
    groups = np.asarray(groups)
    n = groups.shape[0]
    with jax.enable_x64(True):
        totals = np.bincount(groups, weights=np.asarray(problem.weight)[:n], minlength=num_groups)
        theta0 = jax.device_put(np.zeros(problem.X.shape[1] + 1))
        if num_groups == 1:  # nothing to reweigh, no disparity: the plain model
            return _solve_one_group(loss, problem, theta0)
        caps = weight_caps(totals, settings.max_weight_ratio)
        weights = baseline_weights(totals, caps)
        orc = ImplicitOracle(loss, metric, num_groups, problem, theta0, groups)
        orc.compile_in_background(vertices=settings.safeguard and caps is None)
        start = weights["uniform" if caps is None else "pooled"]
        with orc.loose_solves():  # compared and ranked only: the chosen one is re-solved
            candidates = evaluate_baselines(
                orc, totals, groups, loss, settings.safeguard, weights, start
            )
            if caps is not None and candidates:  # from the fairest baseline
                start = weights[min(candidates, key=candidates.get)]
                orc.theta = orc.evaluate(start, with_grad=False)[2].theta
        lam, n_iter, converged, message, history = run_solver(
            orc, loss, metric, problem, groups, start, settings, caps, weights, progress
        )
        value, _, out = orc.evaluate(lam, with_grad=False)
        for restart in restart_points(settings.solver, candidates, weights, start):
            if value < min(candidates.values()):
                break  # the solver beats every baseline: no restart
            lam2, n_iter2, converged2, message2, history2 = run_solver(
                orc, loss, metric, problem, groups, restart, settings, caps, weights, progress
            )
            n_iter += n_iter2
            value2, _, out2 = orc.evaluate(lam2, with_grad=False)
            if value2 < value:
                lam, value, out = lam2, value2, out2
                converged, message, history = converged2, message2, history2
        if settings.safeguard and candidates:
            name = min(candidates, key=candidates.get)
            if candidates[name] < value:
                lam = weights[name]
                value, _, out = orc.evaluate(lam, with_grad=False)
                candidates[name] = value  # solved to inner_tol now (it may have been loose)
        selected = selected_name(lam, candidates, settings.solver, weights)
        steered = None
        if loss != "squared_error":
            steered = steer_off_one_class_vertex(
                orc, lam, out, value, candidates, totals, groups, weights
            )
            if steered is not None:
                selected, lam, value, out, _ = steered
                steered = steered[-1]
        return BADRResult(
            theta=np.asarray(out.theta),
            group_weights=np.asarray(lam, dtype=np.float64),
            n_iter=int(n_iter),
            n_evaluations=orc.nfev,
            converged=bool(converged),
            message=message,
            inner_converged=bool(out.inner_converged),
            unfairness=float(value),
            unfairness_exact=float(exact_metric_value(metric, out.theta, problem, num_groups)),
            group_losses=np.asarray(out.group_losses),
            baseline_unfairness=dict(candidates),
            selected=selected,
            history=history,
            one_class_vertex=steered,
        )


def hard_predictions(theta, problem: Problem, n: int) -> np.ndarray:
    """``1[b + X w >= 0]`` of the ``n`` real rows, on the host: ``predict``'s rule
    (:func:`~fairest.utils._linear.positive_scores`)."""
    theta = np.asarray(theta)
    return positive_scores(host_scores(problem.X, theta[1:])[:n] + theta[0]).astype(np.float64)


def steer_off_one_class_vertex(orc, lam, out, value, candidates: dict, totals, groups, weights):
    """The fairest baseline that does not lean toward a single-class group, when the
    search ended at a (nearly) constant classifier near such a group's vertex.

    A group whose labels are one class has its loss minimised by the constant model that
    predicts that class (logistic with a free intercept: no minimiser at all, the
    intercept diverges), and a model that predicts one class for everyone is trivially
    fair for demographic parity, individual fairness, disparate mistreatment and equal
    opportunity: moving weight onto that group is a path to the degenerate model, not to
    a fair classifier, and the search's infimum lies at its end. The replacement is the
    safeguard baseline of smallest train unfairness (uniform alone without the
    safeguard) that puts at most the uniform share ``1/G`` on every single-class group
    and whose model is not (nearly) constant; uniform, the search's start, always
    qualifies on the first count. Returns ``None`` when there is no single-class group,
    the model is not (nearly) constant, or no baseline qualifies; else
    ``(name, weights, value, output, OneClassVertex)``.
    """
    n = groups.shape[0]
    y = np.asarray(orc.problem.y)[:n]
    weight = np.asarray(orc.problem.weight)[:n]
    one_class = one_label_groups(y, groups, weight, totals.size)
    if not one_class.any() or not near_constant(
        hard_predictions(out.theta, orc.problem, n), y, weight
    ):
        return None
    lam = np.asarray(lam, dtype=np.float64)
    group = int(np.flatnonzero(one_class)[np.argmax(lam[one_class])])
    reached = OneClassVertex(group, lam, float(value), np.asarray(out.theta))
    names = sorted(candidates, key=candidates.get) if candidates else ["uniform"]
    for name in names:
        if np.any(weights[name][one_class] > 1.0 / totals.size + 1e-12):
            continue  # leans toward a single-class group: the way to the constant model
        value2, _, out2 = orc.evaluate(weights[name], with_grad=False)
        if not near_constant(hard_predictions(out2.theta, orc.problem, n), y, weight):
            return name, weights[name], float(value2), out2, reached
    return None


def _solve_one_group(loss, problem, theta0) -> BADRResult:
    """The plain (unweighted) model: one Newton solve, no disparity."""
    result = lower_solve(loss, jnp.ones(1), theta0, problem, 1)
    losses, _ = group_losses_and_jacobian(loss, result.theta, problem, 1)
    return BADRResult(
        theta=np.asarray(result.theta),
        group_weights=np.ones(1),
        n_iter=int(result.n_iter),
        n_evaluations=1,
        converged=True,
        message="",
        inner_converged=bool(result.converged),
        unfairness=0.0,
        unfairness_exact=0.0,
        group_losses=np.asarray(losses),
        baseline_unfairness={},
        selected="one group",
        history={},
    )


def restart_points(solver: str, candidates: dict, weights, start) -> list[np.ndarray]:
    """Where to restart a two-loop solver that ends no better than a baseline.

    A solver started at ``start`` (uniform weights, say) stops at once when it is nearly
    stationary (for instance a local maximum of the unfairness when the groups mirror
    each other). It is then run again from the best baseline other than the start and,
    if that is no better, from the best one-group vertex. ``weights``: the baselines'
    weights (:func:`~._common.baseline_weights`).
    """
    if solver not in TWO_LOOP_SOLVERS or not candidates:
        return []
    ranked = [
        n
        for n in sorted(candidates, key=candidates.get)
        if np.max(np.abs(weights[n] - start)) > 1e-9
    ]
    vertices = [n for n in ranked if n.startswith("group_")]
    names = list(dict.fromkeys(ranked[:1] + vertices[:1]))
    return [weights[n] for n in names]


def selected_name(lam, candidates: dict, solver: str, weights) -> str:
    """The baseline whose weights (in ``weights``) ``lam`` are, else the solver's name."""
    for name in candidates:
        if np.max(np.abs(np.asarray(lam) - weights[name])) <= 1e-12:
            return name
    return solver


def evaluate_baselines(
    orc: ImplicitOracle, totals, groups, loss, safeguard, weights, start
) -> dict[str, float]:
    """Phi at the baselines ``weights`` (:func:`~._common.baseline_weights`: uniform,
    balanced and every one-group vertex; spec 4.8 safeguard).

    A vertex on a single-class group (logistic with a free intercept) has no minimiser
    and is skipped. The solver's ``start`` is evaluated first, also without the
    safeguard: its theta* warm-starts the solver. Returns ``{}`` without the safeguard.
    """
    values = {}
    y_num = np.asarray(orc.problem.y)[: groups.shape[0]]
    penalize = bool(np.asarray(orc.problem.penalize_intercept))
    single_class = single_class_groups(loss, penalize, y_num, groups, totals.size)
    for name, lam in weights.items():
        if not safeguard and not np.array_equal(lam, start):
            continue
        if np.any(single_class & (lam >= 1.0)):
            continue  # the vertex of a single-class group: no minimiser
        values[name] = orc.evaluate(lam, with_grad=False)[0]
    orc.theta = orc.evaluate(start, with_grad=False)[2].theta
    return values if safeguard else {}


def run_solver(
    orc,
    loss,
    metric,
    problem,
    groups,
    lam0,
    settings: BADRSettings,
    caps,
    weights,
    progress,
):
    """One run of the chosen solver from ``lam0``, on the simplex capped at ``caps``
    (:func:`~._capped.weight_caps`; ``None``: the whole simplex); ``weights`` are the
    baselines' weights (the two-group search's ends are its one-group ones);
    ``progress(step, total, unit)`` as in :func:`solve_badr`.

    Returns ``(lam, n_iter, converged, message, history)``.
    """
    solver = settings.solver
    max_iter = settings.max_iter or _defaults.MAX_ITER[solver]
    tol = settings.tol if settings.tol is not None else _defaults.TOL[solver]
    history = {}
    if solver in ("slsqp", "trust-constr"):
        start = len(orc.path)
        found = None
        if solver == "slsqp" and orc.num_groups == 2 and ORACLE_TUNING.segment_search:
            ends = (weights["group_1"], weights["group_0"])
            found = run_segment(orc, lam0, max_iter=max_iter, tol=tol, ends=ends, progress=progress)
        if found is None:
            found = run_scipy(
                solver, orc, lam0, max_iter=max_iter, tol=tol, caps=caps, progress=progress
            )
        lam, n_iter, message, ok = found
        if progress is not None:  # where it stopped (also a search that took no step)
            progress(n_iter, max_iter, "outer iteration")
        if orc.best[1] is not None and orc.best[0] < orc.evaluate(lam, with_grad=False)[0]:
            lam = orc.best[1]
        if settings.record_history:
            path = orc.path[start:]
            history = {
                "unfairness": np.array([v for v, _ in path]),
                "group_weights": np.array([w for _, w in path]),
            }
        return lam, n_iter, ok, message, history
    if solver == "frank-wolfe":
        lam, n_iter, ok, hist = run_frank_wolfe(
            orc,
            lam0,
            max_iter=max_iter,
            tol=tol,
            step_rule=settings.step_rule,
            gap_mode=settings.gap_mode,
            record=settings.record_history,
            caps=caps,
            progress=progress,
        )
        return lam, n_iter, ok, "Frank-Wolfe gap above tol", hist or {}
    if solver in ("gd", "sgd"):
        return run_single_loop(
            orc, loss, metric, problem, groups, lam0, max_iter, settings, caps, progress
        )
    raise ValueError(f"solver must be one of {SOLVERS}; got {solver!r}.")


def run_single_loop(
    orc,
    loss,
    metric,
    problem,
    groups,
    lam0,
    max_iter,
    settings: BADRSettings,
    caps=None,
    progress=None,
):
    """badr-gd / badr-sgd from ``lam0``: the best weights of the exact checks (projected
    on the simplex capped at ``caps``, or the whole simplex); ``progress(step, total,
    unit)`` is called after every chunk of ``check_every`` iterations (from the jitted
    scan, through :func:`~._single_loop.reporting`).

    Returns ``(lam, n_iter, converged, message, history)``; not converged means non-finite
    iterates (then ``lam0`` is returned if the best weights are not finite).
    """
    from fairest._kernels._projections import project_simplex
    from fairest.reweighting._single_loop import (
        lipschitz_step,
        make_sampler,
        reporting,
        single_loop,
    )

    stochastic = settings.solver == "sgd"
    n = groups.shape[0]
    num_groups = orc.num_groups
    batch_size = settings.batch_size or max(num_groups, min(n, _defaults.BATCH_SIZE))
    if stochastic and batch_size < num_groups:
        raise ValueError(
            f"batch_size={batch_size} is smaller than the number of groups "
            f"({num_groups}); every group needs at least one sample per batch."
        )
    seed = check_random_state(settings.random_state).randint(np.iinfo(np.int32).max)
    sampler = make_sampler(groups, num_groups, batch_size, seed) if stochastic else None
    rate = settings.learning_rate
    if rate == "auto":
        rate = lipschitz_step(loss, problem, jnp.asarray(lam0), orc.theta, num_groups)
    check_every = min(settings.check_every, max_iter)
    n_chunks = -(-max_iter // check_every)
    report = None if progress is None else lambda done, total: progress(done, total, "iteration")
    with reporting(report):
        state, (lams, values, proxy, grad_norm) = single_loop(
            loss,
            metric,
            num_groups,
            problem,
            sampler,
            jnp.asarray(lam0),
            orc.theta,
            jnp.float64(orc.evaluate(lam0, with_grad=False)[0]),
            jax.random.key(seed),
            jnp.float64(rate),
            jnp.float64(settings.dual_learning_rate),
            jnp.float64(settings.clip_norm),
            jnp.int32(check_every),
            n_chunks=n_chunks,
            stochastic=stochastic,
            batch_size=batch_size if stochastic else 0,
            caps=None if caps is None else jnp.asarray(caps),
        )
        values = np.asarray(values)  # the chunks' reports arrive inside the block
    ok = bool(np.all(np.isfinite(values))) and bool(np.isfinite(float(state.best_value)))
    best = jnp.asarray(state.best_lam)
    lam = np.asarray(project_simplex(best) if caps is None else project_capped(best, caps))
    if not np.all(np.isfinite(lam)):
        lam = np.asarray(lam0)
    history = {}
    if settings.record_history:
        history = {
            "iteration": np.arange(1, n_chunks + 1) * check_every,
            "group_weights": np.asarray(lams),
            "unfairness": values,
            "unfairness_proxy": np.asarray(proxy),
            "grad_norm": np.asarray(grad_norm),
        }
    message = "diverged (non-finite iterates); lower learning_rate" if not ok else ""
    return lam, n_chunks * check_every, ok, message, history
