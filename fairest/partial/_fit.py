"""The fit of :class:`~fairest.partial.PartialParityClassifier` as one solver entry point,
callable without an estimator: the surrogate problem and its constants, the schedule,
the solve, and the policy that keeps the exact-train-metric promise (tightening rounds,
choice of the returned iterate).

:func:`fit_partial` takes validated numpy data and a :class:`Settings` (the estimator's
parameters) and returns a :class:`PartialFit` of numpy results; the estimator only
validates, calls it and stores the fields. The pieces, each a small function:

* :func:`build_problem`: ``(cfg, data, x0)`` of the surrogate problem (15) / (21) for an
  internal tolerance, level rule and surrogate width, with the weak-convexity constant of
  the sigmoid split;
* :func:`schedule`: ``K``, ``eps`` and ``T``, practical or from Theorem 6.5 (Lipschitz
  constant from the data, Slater margin of the constant start);
* :func:`solve_surrogate`: one surrogate solve (smoothed ALM, IDCA or direct SSG) and
  its candidate iterates;
* :func:`tighten` and :func:`select`: the policy of ``fairest.partial._defaults``
  (``PARTIAL_RULES.tighten_*``): solve again with a smaller internal tolerance while no candidate meets
  ``tolerance``, then return the most accurate candidate that meets it, else the fairest.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from fairest._solvers._driver import solve_weighted_glm
from fairest.metrics import (
    partial_demographic_parity,
    partial_statistical_parity,
    suggest_interval,
)
from fairest.partial import _defaults
from fairest.partial._common import (
    METRICS,
    build_data,
    check_interval,
    smooth_dense_cost,
    squared_row_norms,
)
from fairest.partial._dc import Config, objective
from fairest.partial._defaults import PARTIAL_RULES, PARTIAL_TUNING
from fairest.partial._fast import (
    NEWTON_STEPS,
    SOLVER_DTYPE,
    reporting,
)
from fairest.partial._floors import band_floors, too_small
from fairest.partial._idca import (
    constant_intercept,
    initial_point,
    level_grid,
    run_idca,
    run_ssg_direct,
    theory_schedule,
)
from fairest.partial._runtime import dense_on_one_device, rows_then_dense, run_alm

__all__ = [
    "PartialFit",
    "Settings",
    "build_problem",
    "ExactMetric",
    "fit_partial",
    "resolve_interval",
    "schedule",
    "select",
    "solve_surrogate",
    "tighten",
]

_AUTO_RIDGE = 1e-6  # tiny ridge of the unconstrained model behind interval="auto"
# Its solver and gradient tolerance: the scores only pick an interval on a 0.05 lattice
# (and the groups named by the near-constant warning). Newton-CG needs no (d, d) Hessian;
# on one-hot data whose levels are collinear with the intercept (the ridge tiny) L-BFGS
# runs into its iteration cap, and the last Newton-CG steps to a gradient norm below
# 1e-4 move only the scores of rare levels, not the interval
# (benchmarks/results/partial_practitioner_speed.md: the same interval at 1e-6, 1e-5,
# 1e-4 and 1e-3 on the four practitioner tasks).
_AUTO_TOL = 1e-4
_AUTO_MAX_ITER = 100


class Settings(NamedTuple):
    """The parameters of :class:`~fairest.partial.PartialParityClassifier` (same names)."""

    metric: str = "partial_statistical_parity"
    interval: object = "auto"
    tolerance: float = _defaults.TOLERANCE
    surrogate: str = _defaults.SURROGATE
    surrogate_width: float = _defaults.SURROGATE_WIDTH
    n_grid: int = _defaults.N_GRID
    grid: str = _defaults.GRID
    threshold: float = _defaults.THRESHOLD
    dc_split: str = _defaults.DC_SPLIT
    alpha: float = _defaults.ALPHA
    proximal_strength: float = _defaults.PROXIMAL_STRENGTH
    solver: str = _defaults.SOLVER
    inner_solver: str = "ssg"
    init: str = _defaults.INIT
    schedule: str = "practical"
    max_iter: int = _defaults.MAX_ITER
    inner_max_iter: object = "auto"
    inner_tol: float = _defaults.INNER_TOL
    tol: float = _defaults.TOL

    @classmethod
    def of(cls, estimator) -> Settings:
        """The settings of an estimator with these parameters."""
        return cls(**{name: getattr(estimator, name) for name in cls._fields})

    def solver_run(self) -> str:
        """The solver run: ``schedule="theory"`` is IDCA's (Theorem 6.5)."""
        if self.solver == "smooth_alm" and self.schedule == "theory":
            return "idca"
        return self.solver

    def inner(self, cfg: Config) -> str:
        """The inner solver; a problem without constraints (one group, or
        ``tolerance >= 1``) runs SSG, which then takes plain subgradient steps."""
        return self.inner_solver if cfg.constraint != "none" else "ssg"

    def smooth_ran(self, cfg: Config) -> bool:
        """``solver="smooth_alm"`` on a problem with constraints (without any, the plain
        logistic model is fitted by the IDCA loop)."""
        return self.solver_run() == "smooth_alm" and cfg.constraint != "none"

    def alm_ran(self, cfg: Config) -> bool:
        return self.solver_run() == "idca" and self.inner(cfg) == "alm"

    def inner_iterations(self) -> int:
        if self.inner_max_iter != "auto":
            return int(self.inner_max_iter)
        if self.inner_solver == "alm":
            return _defaults.ALM_MAX_ITER
        return _defaults.INNER_MAX_ITER


class PartialFit(NamedTuple):
    """Numpy results of :func:`fit_partial` (the estimator's fitted attributes)."""

    params: np.ndarray  # (b, w, theta) of the returned model
    grid: np.ndarray  # the levels p of its surrogate problem
    interval: tuple  # (alpha, beta) used
    n_iter: int
    objective: float
    constraint_violation: float
    train_unfairness: float
    effective_tolerance: float
    tightening: dict  # per solve: effective_tolerance, train_unfairness, objective
    schedule: dict  # max_iter, inner_tol, inner_max_iter
    history: dict  # the returned run up to the returned iterate ({} for ssg_direct)
    stuck: bool  # SSG met a zero constraint subgradient while infeasible
    n_capped: int  # ALM inner solves stopped at inner_max_iter
    n_solves: int
    min_tolerance: float  # smallest internal tolerance tried
    floors: np.ndarray | None = None  # band_floors per group (pSP), None for pDP
    small: np.ndarray | None = None  # the groups too small for tolerance (too_small)
    judged_unfairness: float = np.nan  # the exact metric over the other groups


def unconstrained_scores(X, y01, sample_weight, alpha):
    """Scores of ``argmin f_0``: the weighted mean logistic loss plus ``alpha / 2 ||w||^2``
    (at least a tiny ridge, so that separable data converge), by Newton-CG: scikit-learn's
    on the host for data of at most ``PARTIAL_TUNING.host_interval_cells`` cells, the
    library's jitted one above."""
    ridge = max(float(alpha), _AUTO_RIDGE)
    cells = X.nnz if sp.issparse(X) else X.shape[0] * X.shape[1]
    if cells <= PARTIAL_TUNING.host_interval_cells:
        return _host_scores(X, y01, sample_weight, ridge)
    c = sample_weight / sample_weight.sum()
    theta = solve_weighted_glm(
        "logistic", X, y01, c, ridge, tol=_AUTO_TOL, max_iter=_AUTO_MAX_ITER, solver="newton-cg"
    ).theta
    return X @ theta[1:] + theta[0]


def _host_scores(X, y01, sample_weight, ridge):
    """:func:`unconstrained_scores` by scikit-learn's Newton-CG, whose objective is the same
    with ``C = 1 / (ridge sum(sample_weight))``."""
    model = LogisticRegression(
        C=1.0 / (ridge * float(np.sum(sample_weight))),
        solver="newton-cg",
        tol=_AUTO_TOL,
        max_iter=_AUTO_MAX_ITER,
    )
    with warnings.catch_warnings():
        # a capped run still orders the rows well enough to pick the interval
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("ignore", message="Line Search failed")
        warnings.filterwarnings("ignore", message="The line search algorithm")
        model.fit(X, y01, sample_weight=sample_weight)
    return model.decision_function(X)


def resolve_interval(settings: Settings, X, y01, codes, sample_weight, num_groups):
    """The interval: ``settings.interval`` checked, or the paper's guideline for "auto"
    (:func:`fairest.metrics.suggest_interval` on the unconstrained model's scores)."""
    if not (isinstance(settings.interval, str) and settings.interval == "auto"):
        return check_interval(settings.interval)
    if num_groups < 2:
        return (0.0, 1.0)
    scores = unconstrained_scores(X, y01, sample_weight, settings.alpha)
    lo, hi = suggest_interval(
        scores,
        sensitive_features=codes,
        threshold=float(settings.threshold),
        sample_weight=sample_weight,
        widths=_defaults.AUTO_WIDTHS,
        step=_defaults.AUTO_STEP,
    )
    return float(lo), float(hi)


def _sigmoid_split_constant(X, kind: str, width: float) -> float:
    """Weak-convexity constant ``rho`` of the sigmoid split (spec section 3.3)."""
    with np.errstate(over="ignore"):
        sq = 1.0 + np.max(squared_row_norms(X))  # max ||(1, x_i)||^2
    if not np.isfinite(sq):
        raise ValueError(
            "surrogate='sigmoid': the weak-convexity constant of the sigmoid split "
            "overflows for features of this size; scale the features (e.g. "
            "StandardScaler)."
        )
    if kind == "statistical":
        return _defaults.SIGMOID_CURVATURE * (sq + 1.0) / width**2
    return 2.0 * _defaults.SIGMOID_CURVATURE * sq / width**2


def start_intercept(settings: Settings, y01, sample_weight) -> float:
    """Intercept of the constant starting model (``init``)."""
    init = settings.init
    if init == "auto":
        init = "intercept" if METRICS[settings.metric] == "demographic" else "zero"
    return constant_intercept(y01, sample_weight) if init == "intercept" else 0.0


def build_problem(
    settings: Settings,
    X,
    y01,
    codes,
    sample_weight,
    num_groups,
    interval,
    tolerance=None,
    grid_rule=None,
    width=None,
    lean=False,
    like=None,
    floors=None,
):
    """``(cfg, data, x0)`` of the surrogate problem with ``tolerance``, the level rule
    ``grid_rule`` and the surrogate width ``width`` (defaults: the settings').

    ``floors``: per group (pSP), the least exact pSP its band can reach
    (:func:`band_floors`); a group whose floor exceeds ``settings.tolerance`` gets its
    own tolerance, its floor, in the upper constraints of its levels (the slack
    ``c_k = floor_k (beta - alpha)`` of Lemma 5.1, a ``(G, 1)`` column), and is never
    tightened; ``None`` or no such group: the paper's problem, one slack for all.

    ``lean``: when the smoothed ALM runs, a dense ``X`` is stored in its
    ``SOLVER_DTYPE`` (the one copy of ``X`` the fit makes; the run casts to it anyway),
    and ``X`` is stored dense unless its ELL form makes that solver's passes cheaper
    (:func:`~fairest.partial._common.smooth_dense_cost`).
    ``like``: a ``data`` of the same rows whose placed arrays are reused."""
    lo, hi = interval
    tolerance = float(settings.tolerance if tolerance is None else tolerance)
    slack = tolerance * (hi - lo)
    small = too_small(settings, floors)
    group_slack = slack
    if small is not None and METRICS[settings.metric] == "statistical":
        group_slack = np.where(small, floors * (hi - lo), slack)[:, None]
    active = num_groups >= 2
    grid = np.zeros(0)
    if METRICS[settings.metric] == "statistical":
        if active:
            grid = level_grid(interval, tolerance, settings.n_grid, grid_rule or settings.grid)
        kind = "statistical" if grid.size else "none"
    else:
        kind = "demographic" if active else "none"
    width = float(settings.surrogate_width if width is None else width)
    rho = 0.0
    if settings.surrogate == "sigmoid" and kind != "none":
        rho = _sigmoid_split_constant(X, kind, width)
    cfg = Config(
        constraint=kind,
        surrogate=settings.surrogate,
        dc_split=settings.dc_split,
        num_groups=num_groups,
        num_features=X.shape[1],
        num_levels=grid.size if kind == "statistical" else 0,
    )
    lean = lean and settings.smooth_ran(cfg)
    x_dtype = np.dtype(SOLVER_DTYPE) if lean else np.dtype(np.float64)
    dense_cost = smooth_dense_cost() if lean else 0.0
    hyper = dict(
        grid=grid if kind == "statistical" else np.zeros(0),
        slack=group_slack if kind == "statistical" else slack,
        lo=lo,
        hi=hi,
        threshold=float(settings.threshold),
        alpha=float(settings.alpha),
        mu=float(settings.proximal_strength),
        rho=rho,
        width=width,
    )
    rows = (X, y01, codes, sample_weight)
    if lean and like is None and dense_on_one_device(X, dense_cost):
        steps = (int(settings.max_iter), newton_steps(settings))
        data = rows_then_dense(cfg, *rows, num_groups, hyper, *steps)
    else:
        data = build_data(
            *rows, num_groups, x_dtype=x_dtype, like=like, dense_cost=dense_cost, **hyper
        )
    x0 = initial_point(
        X.shape[1],
        data.grid,
        slack,
        settings.surrogate,
        width,
        start_intercept(settings, y01, sample_weight),
    )
    return cfg, data, x0


def schedule(settings: Settings, X, cfg, data, x0):
    """``(K, eps, T)``: the practical settings, or those of Theorem 6.5 (capped, with a
    ``ConvergenceWarning``) for ``schedule="theory"``."""
    if settings.schedule == "practical":
        return int(settings.max_iter), float(settings.inner_tol), settings.inner_iterations()
    if settings.proximal_strength <= 0:
        raise ValueError("schedule='theory' needs proximal_strength > 0 (Assumption 6.3A).")
    # M ~ max_i ||(phi_i, 1)|| for the ramp pieces with a linear score (spec 5.4);
    # nu: the Slater margin c/2 of the starting point (spec 5.1).
    with np.errstate(over="ignore"):
        lipschitz = float(np.sqrt(2.0 + np.max(squared_row_norms(X))))
    least = float(np.min(np.asarray(data.slack)))  # (G, 1) with small groups (floors)
    slater = 0.5 * least if least > 0 else 1.0
    gap = float(objective(jnp.asarray(x0), data, cfg))  # f_lb = 0 (logistic loss)
    try:
        if not np.isfinite(lipschitz):
            raise OverflowError
        K, eps_k, T = theory_schedule(
            float(settings.inner_tol), float(settings.proximal_strength), lipschitz, slater, gap
        )
    except OverflowError:
        raise ValueError(
            "schedule='theory': the iteration counts of Theorem 6.5 overflow for "
            f"features of this size (Lipschitz constant {lipschitz:.3g}); scale the "
            "features (e.g. StandardScaler)."
        ) from None
    capped_K, capped_T = (
        min(K, PARTIAL_RULES.theory_max_outer),
        min(T, PARTIAL_RULES.theory_max_inner),
    )
    if (capped_K, capped_T) != (K, T):
        warnings.warn(
            f"schedule='theory' asks for K={K} outer and T={T} inner iterations; "
            f"capped at K={capped_K}, T={capped_T}, so the guarantee of Theorem 6.5 "
            "does not apply.",
            ConvergenceWarning,
            stacklevel=4,
        )
    return capped_K, eps_k, capped_T


class ExactMetric:
    """The exact training metric the estimator promises, of a flat parameter vector: pSP
    or pDP of :mod:`fairest.metrics` on the fitted interval, sample-weighted, at
    ``threshold`` for pDP; 0 with one group, NaN when not measurable (empty band).

    ``keep``: a mask of the groups measured (the rows of the others left out: a group's
    band depends on its own rows only, so this is the largest value over the pairs of
    kept groups); ``None`` measures every group."""

    def __init__(
        self, settings: Settings, X, codes, sample_weight, interval, num_groups, keep=None
    ):
        if keep is not None:
            rows = np.flatnonzero(keep[codes])
            X, codes, sample_weight = X[rows], codes[rows], sample_weight[rows]
            num_groups = int(np.sum(keep))
        self.X, self.codes, self.sample_weight = X, codes, sample_weight
        self.interval, self.num_groups = interval, num_groups
        self.statistical = METRICS[settings.metric] == "statistical"
        self.threshold = float(settings.threshold)

    def __call__(self, x) -> float:
        if self.num_groups < 2:
            return 0.0
        scores = self.X @ x[1 : 1 + self.X.shape[1]] + x[0]
        common = dict(
            sensitive_features=self.codes, interval=self.interval, sample_weight=self.sample_weight
        )
        try:
            if self.statistical:
                return float(partial_statistical_parity(None, scores, **common))
            return float(
                partial_demographic_parity(None, scores, threshold=self.threshold, **common)
            )
        except ValueError:
            return float("nan")


def check_finite_model(name, x, X, objective_value):
    """Raise a ``ValueError`` when the fitted parameters, the training scores or the
    objective are not finite (overflow on features of huge scale)."""
    finite = np.all(np.isfinite(x)) and np.isfinite(objective_value)
    if finite:
        with np.errstate(over="ignore", invalid="ignore"):
            finite = bool(np.all(np.isfinite(X @ x[1 : 1 + X.shape[1]] + x[0])))
    if not finite:
        raise ValueError(
            f"{name}: the iterates became non-finite (overflow): scale the features "
            "(e.g. StandardScaler) or lower learning_rate."
        )


def _by_group(X, y01, codes, sample_weight):
    """The rows ordered by group (stable) when ``PARTIAL_TUNING.products_by_group`` is on
    and they fit in one row block of the smoothed solver's passes
    (:func:`~fairest.partial._fast.group_ranges`: its ``X^T U`` then costs ``n d J``
    rather than ``n d G J``), else as given (no copy of large data)."""
    if not PARTIAL_TUNING.products_by_group or X.shape[0] > PARTIAL_TUNING.solver_block_rows:
        return X, y01, codes, sample_weight
    if np.all(np.diff(codes) >= 0):
        return X, y01, codes, sample_weight
    order = np.argsort(codes, kind="stable")
    return X[order], y01[order], codes[order], sample_weight[order]


def newton_steps(settings: Settings) -> int:
    """Gauss-Newton steps of a smoothed-ALM round at most."""
    return NEWTON_STEPS if settings.inner_max_iter == "auto" else int(settings.inner_max_iter)


def _smooth_solution(settings: Settings, cfg, data, x0, K, eps) -> dict:
    steps = newton_steps(settings)
    result = run_alm(x0, data, cfg, eps, float(settings.tol), K, steps)
    # the run ends at its last point within eps of the surrogate constraints (a run cut
    # by max_iter may stop before the rounds reach feasibility; the constant start is
    # feasible with margin c / 2); a run that stalled before max_iter (a flat violated
    # constraint, e.g. the top level of the closed grid above a gap in the scores) keeps
    # its final point as a candidate, judged by the exact metric
    within = np.flatnonzero(result.max_violation <= eps)
    n = int(within[-1]) if within.size else result.n_steps.size
    if not result.converged and result.n_steps.size < K:
        n = result.n_steps.size
    history = {
        "objective": result.objective[: n + 1],
        "max_violation": result.max_violation[: n + 1],
        "params": result.iterates[: n + 1],
        "n_feasible": result.n_steps[:n],
        "subproblem_gap": np.diff(result.objective[: n + 1]),
    }
    return {
        "iterates": history["params"],
        "objectives": history["objective"],
        "violations": history["max_violation"],
        "stuck": False,
        "history": history,
        "first": max(1, n - int(PARTIAL_RULES.tighten_tail * n)) if n else 0,
        "feasible_only": eps,
        "converged": result.converged,
    }


def _idca_solution(settings: Settings, cfg, data, x0, K, eps, T) -> dict:
    result = run_idca(jnp.asarray(x0), data, cfg, eps, T, K, settings.inner(cfg))
    history = {
        "objective": np.asarray(result.objective),
        "max_violation": np.asarray(result.max_violation),
        "params": np.asarray(result.iterates),
        "n_feasible": np.asarray(result.n_feasible),
        "subproblem_gap": np.asarray(result.subproblem_gap),
    }
    return {
        "iterates": history["params"],
        "objectives": history["objective"],
        "violations": history["max_violation"],
        "stuck": bool(np.any(np.asarray(result.stuck))),
        "history": history,
        "first": max(1, K - int(PARTIAL_RULES.tighten_tail * K)),
    }


def _direct_solution(cfg, data, x0, K, eps, T) -> dict:
    result = run_ssg_direct(jnp.asarray(x0), data, cfg, jnp.full((K * T,), eps))
    return {
        "iterates": np.asarray(result.x)[None, :],
        "objectives": np.asarray(result.objective)[None],
        "violations": np.asarray(result.max_violation)[None],
        "stuck": False,
        "history": {},
        "first": 0,
    }


def solve_surrogate(settings: Settings, name, X, cfg, data, x0, K, eps, T, measure, tolerance):
    """One surrogate solve (smoothed ALM, IDCA or direct SSG) from ``x0``, with its
    candidate iterates (the last
    ``PARTIAL_RULES.tighten_tail`` share of the run's iterates; the output of direct SSG) and their
    exact training metric (NaN: not evaluated). Raises a ``ValueError`` naming ``name``
    when the final model is not finite."""
    if settings.smooth_ran(cfg):
        sol = _smooth_solution(settings, cfg, data, x0, K, eps)
    elif settings.solver in ("idca", "smooth_alm"):
        sol = _idca_solution(settings, cfg, data, x0, K, eps, T)
    else:
        sol = _direct_solution(cfg, data, x0, K, eps, T)
    check_finite_model(name, sol["iterates"][-1], X, sol["objectives"][-1])
    sol["grid"] = np.asarray(data.grid)
    sol["tolerance"] = tolerance
    sol["width"] = float(data.width)
    sol["exact"] = np.full(len(sol["objectives"]), np.nan)
    sol["exact"][-1] = measure(sol["iterates"][-1])
    sol["measure"] = measure
    return sol


def best_candidate(sol, kappa, bound):
    """Index of the candidate of ``sol`` with the smallest objective below ``bound``
    whose exact metric is at most ``kappa``, or ``None``. The objective does not increase
    along a run, so the scan goes backwards and stops at the first candidate that meets
    the tolerance or whose objective reaches ``bound``."""
    for k in range(len(sol["objectives"]) - 1, sol["first"] - 1, -1):
        objective_value = sol["objectives"][k]
        if not objective_value < bound:
            return None
        if (
            sol.get("feasible_only", np.inf) < sol["violations"][k]
            and k < len(sol["objectives"]) - 1
        ):
            continue  # an L-BFGS iterate outside inner_tol of the surrogate constraints
        if np.isnan(sol["exact"][k]):
            sol["exact"][k] = sol["measure"](sol["iterates"][k])
        if sol["exact"][k] <= kappa:
            return k
    return None


def select(solves, kappa):
    """``(solve, iterate)`` returned: the most accurate candidate whose exact metric
    meets ``kappa``; else the fairest final model (NaN, not measurable, last)."""
    best, bound = None, np.inf
    for sol in solves:
        k = best_candidate(sol, kappa, bound)
        if k is not None:
            best, bound = (sol, k), sol["objectives"][k]
    if best is not None:
        return best
    fairest = min(
        solves,
        key=lambda sol: (np.isnan(sol["exact"][-1]), sol["exact"][-1], sol["objectives"][-1]),
    )
    return fairest, len(fairest["objectives"]) - 1


def tighten(solves, rebuild, solve, smooth):
    """Solve again with a smaller internal tolerance while no candidate of the last solve
    meets ``tolerance`` (at most ``PARTIAL_RULES.tighten_rounds`` times, see there); appends
    the solves to ``solves``. ``rebuild(tolerance, width)`` gives ``(cfg, data, x0)``;
    ``solve(cfg, data, x0, tolerance)`` a solve; ``smooth(cfg)`` whether it runs the
    smoothed ALM (then warm-started at the last final iterate)."""
    kappa = solves[0]["tolerance"]
    low, high = PARTIAL_RULES.tighten_factors
    for _ in range(PARTIAL_RULES.tighten_rounds):
        last = solves[-1]
        if not last["exact"][-1] > kappa:  # met, or NaN (not measurable)
            return
        if best_candidate(last, kappa, np.inf) is not None:
            return
        if len(solves) > 1 and not last.get("converged", True):
            # a tightening round whose smoothed solve stalled (a violated constraint flat
            # on its plateau): a tighter round stalls again and ends no fairer (KDD census
            # by race, top 10 %: rounds 2 and 3 stalled at 0.112 and 0.133)
            return
        if len(solves) > 2 and not last["exact"][-1] < min(s["exact"][-1] for s in solves[:-1]):
            # a tighter round no fairer than an earlier solve: the surrogate no longer
            # follows the exact metric (bands of a few samples; KDD census by race, top
            # 10 %: 0.188, 0.112, then 0.133 and 0.168), more rounds do not help
            return
        previous = last["tolerance"]
        effective = float(
            np.clip(previous - (last["exact"][-1] - kappa), low * previous, high * previous)
        )
        if not effective < previous and len(solves) > 1:  # tolerance 0: nothing left
            return
        width = PARTIAL_RULES.tighten_width_factor * last["width"]
        cfg, data, x0 = rebuild(effective, width)
        # smoothed ALM: warm start at the last final iterate when that run converged (a
        # warm start from a stalled run stalls again where it began). A warm solve that
        # stalls is kept as a candidate and ends the rounds (the rule above): a cold
        # solve at its tolerance ended no fairer (ACSPublicCoverage by race: 0.131
        # against the stalled point's 0.123)
        warm = smooth(cfg) and last.get("converged", True)
        solves.append(solve(cfg, data, last["iterates"][-1] if warm else x0, effective))


def _any_meets(solves, kappa) -> bool:
    """Whether a candidate of ``solves`` meets ``kappa`` (exact training metric)."""
    return any(best_candidate(sol, kappa, np.inf) is not None for sol in solves)


def _fallback_affordable(settings: Settings, n_rows: int) -> bool:
    """Whether the IDCA fallback's SSG passes over the rows (``n_rows max_iter T`` a
    solve) are within ``PARTIAL_TUNING.fallback_row_passes``."""
    inner = settings._replace(solver="idca").inner_iterations()
    return n_rows * int(settings.max_iter) * inner <= PARTIAL_TUNING.fallback_row_passes


def _idca_fallback(
    settings: Settings, name, X, cfg, data, x0, measure, rebuild, kappa, report=None
):
    """The solves of IDCA (``solver="idca"``, same settings otherwise) with its own
    tightening rounds: run when no smoothed-ALM candidate meets the tolerance (a
    violated constraint flat on its plateau, e.g. a band of a few hundred samples; see
    ``fairest.partial._defaults.SOLVER``)."""
    idca = settings._replace(solver="idca")
    K, eps, T = schedule(idca, X, cfg, data, x0)

    report = report or _Progress(None)

    def solve(cfg, data, x0, tolerance):
        with reporting(report.next_solve(False)):
            return solve_surrogate(idca, name, X, cfg, data, x0, K, eps, T, measure, tolerance)

    solves = [solve(cfg, data, x0, kappa)]
    tighten(solves, rebuild, solve, lambda cfg: False)
    return solves


class _Progress:
    """Numbers the surrogate solves of a fit and gives each its host callback for
    :func:`~fairest.partial._fast.reporting`: ``progress(step, total, unit)`` with the
    unit ``"solve <i> round"`` (smoothed ALM) or ``"solve <i> outer iteration"`` (IDCA);
    ``None`` reports nothing."""

    def __init__(self, progress):
        self.progress, self.count = progress, 0

    def next_solve(self, smooth: bool):
        self.count += 1
        if self.progress is None:
            return None
        unit = f"solve {self.count} {'round' if smooth else 'outer iteration'}"
        return lambda step, total: self.progress(step, total, unit)


def _truncate(history, k):
    """The record of outer iterations ``0..k`` (the run with ``max_iter = k``)."""
    if not history:
        return history
    out = {key: history[key][: k + 1] for key in ("objective", "max_violation", "params")}
    out.update({key: history[key][:k] for key in ("n_feasible", "subproblem_gap")})
    return out


def fit_partial(
    settings: Settings,
    X,
    y01,
    codes,
    sample_weight,
    num_groups,
    name="partial",
    progress=None,
):
    """Fit the constrained model on validated numpy data (float64, inside
    ``jax.enable_x64``): resolve the interval, build the problem, solve it, tighten while
    the exact training metric misses ``tolerance``, select the returned iterate.

    Groups too small for ``tolerance`` (pSP: :func:`band_floors` above it) are held to
    their floors in the surrogate problem, and the exact metric that the tightening and
    the choice of the returned iterate judge is that of the other groups
    (``judged_unfairness``); ``train_unfairness`` is always that of every group.
    ``progress(step, total, unit)``: called on the host after every round of a smoothed
    solve and every IDCA outer iteration (``None``: not reported).

    Returns
    -------
    PartialFit
        Numpy results; ``name`` names the estimator in error messages.
    """
    kappa = float(settings.tolerance)
    with jax.enable_x64(True):
        interval = resolve_interval(settings, X, y01, codes, sample_weight, num_groups)
        floors = band_floors(settings, codes, sample_weight, num_groups, interval)
        small = too_small(settings, floors)
        args = (X, y01, codes, sample_weight, num_groups, interval)
        # the smoothed solver's rows ordered by group (_by_group): the same problem; the
        # float64 IDCA paths keep the given order (their ties follow the summation order)
        rows = args[:4]
        if settings.solver_run() == "smooth_alm":
            rows = _by_group(*rows)
        cfg, data, x0 = build_problem(settings, *rows, *args[4:], lean=True, floors=floors)
        K, eps, T = schedule(settings, X, cfg, data, x0)
        everyone = ExactMetric(settings, X, codes, sample_weight, interval, num_groups)
        measure = everyone
        if small is not None:
            keep = ~small
            measure = ExactMetric(settings, X, codes, sample_weight, interval, num_groups, keep)

        report = _Progress(progress)

        def solve(cfg, data, x0, tolerance):
            with reporting(report.next_solve(settings.smooth_ran(cfg))):
                return solve_surrogate(
                    settings, name, X, cfg, data, x0, K, eps, T, measure, tolerance
                )

        def rebuild(tolerance, width, like=data):
            rule = "closed" if settings.grid == "lemma" else settings.grid
            return build_problem(
                settings,
                *args,
                tolerance=tolerance,
                grid_rule=rule,
                width=width,
                like=like,
                floors=floors,
            )

        solves = [solve(cfg, data, x0, kappa)]
        if cfg.constraint != "none":
            tighten(solves, rebuild, solve, settings.smooth_ran)
        if (
            settings.smooth_ran(cfg)
            and not _any_meets(solves, kappa)
            and _fallback_affordable(settings, X.shape[0])
        ):
            first = build_problem(settings, *args, floors=floors)  # float64: IDCA's
            fallback = partial(rebuild, like=first[1])
            solves += _idca_fallback(settings, name, X, *first, measure, fallback, kappa, report)
    chosen, pick = select(solves, kappa)
    judged = float(chosen["exact"][pick])
    if measure is not everyone:
        with jax.enable_x64(True):
            unfairness = everyone(chosen["iterates"][pick])
    else:
        unfairness = judged
    capped = 0
    if settings.alm_ran(cfg):
        capped = int(np.sum(chosen["history"]["n_feasible"] >= T))
    return PartialFit(
        params=chosen["iterates"][pick],
        grid=chosen["grid"].copy(),
        interval=interval,
        n_iter=K if settings.solver == "ssg_direct" else pick,
        objective=float(chosen["objectives"][pick]),
        constraint_violation=float(chosen["violations"][pick]),
        train_unfairness=unfairness,
        effective_tolerance=chosen["tolerance"],
        tightening={
            "effective_tolerance": np.array([sol["tolerance"] for sol in solves]),
            "train_unfairness": np.array([sol["exact"][-1] for sol in solves]),
            "objective": np.array([sol["objectives"][-1] for sol in solves]),
        },
        schedule={"max_iter": K, "inner_tol": eps, "inner_max_iter": T},
        history=_truncate(chosen["history"], pick),
        stuck=chosen["stuck"],
        n_capped=capped,
        n_solves=len(solves),
        min_tolerance=min(sol["tolerance"] for sol in solves),
        floors=floors,
        small=small,
        judged_unfairness=judged,
    )
