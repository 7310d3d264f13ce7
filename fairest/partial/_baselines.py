"""Baselines of the partial-fairness paper (spec section 8; paper G.3-G.4).

* :class:`PartialParityPenaltyClassifier`: the regularisation method, problems (114)
  (pSP) and (119) (pDP), trained by full-batch subgradient descent with a constant step.
* :class:`GroupAUCConstrainedClassifier`, :class:`InterGroupPairwiseConstrainedClassifier`,
  :class:`IntraGroupPairwiseConstrainedClassifier`: logistic regression under the
  *full* (not partial) pairwise constraints (102), (105), (107) with the quadratic
  surrogate ``(1 + x)^2 / 2``, trained by projected gradient descent; each projection onto
  the constraints (a small QCQP) is exact, by projected Newton on its dual
  (``fairest/partial/_qcqp.py``), or by cvxpy + Clarabel (``projection="clarabel"``).

The pairwise means are computed in closed form (spec section 8.4):
``mean_{i in A, j in B} (1 + a_i - b_j)^2 / 2 = ((1 + mean a - mean b)^2 + Var a + Var b) / 2``,
so every constraint is a convex quadratic in the coefficients, O(d^2) to evaluate; its
form is built once per fit from per-cell (group x label) moment sums.
"""

from __future__ import annotations

import gc
import warnings
from functools import partial
from numbers import Integral, Real
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from threadpoolctl import threadpool_limits

from fairest._kernels._buckets import pad_rows
from fairest.partial import _defaults, _qcqp
from fairest.partial._common import (
    METRICS,
    as_csr_or_dense,
    build_data,
    check_interval,
    row_weights,
)
from fairest.partial._dc import (
    Config,
    Data,
    _logistic_parts,
    linear_scores,
    objective,
    split,
)
from fairest.partial._fast import SOLVER_DTYPE, solver_data
from fairest.partial._idca import level_grid
from fairest.partial._linear import _LinearClassifierMixin
from fairest.partial._rows import row_dot, shift_columns
from fairest.partial._smooth import _smooth_min, _smooth_ramp
from fairest.utils._estimator import encode_binary_target, validate_fit_data
from fairest.utils._memory import release_free_memory

__all__ = [
    "PartialParityPenaltyClassifier",
    "GroupAUCConstrainedClassifier",
    "InterGroupPairwiseConstrainedClassifier",
    "IntraGroupPairwiseConstrainedClassifier",
    "pairwise_quadratic_mean",
]


# --------------------------------------------------------------------------------------
# penalty (regularisation) method, (114) and (119)
# --------------------------------------------------------------------------------------


def _penalised_objective(x, data: Data, cfg: Config, weight, smoothing=None):
    """``f_0(x) + weight * penalty(x)``, differentiable in reverse mode with every row sum
    of its gradient in the fixed order of :mod:`fairest.partial._rows` (the same
    subgradient on one device and on a row-sharded mesh). ``smoothing``: ``(delta,
    tau)`` of the smoothed penalty (:func:`_penalty`), ``None`` for the exact one."""
    b, w, _ = split(x, cfg)
    s = linear_scores(b, w, data.X)
    loss = _logistic_parts(s, data)[0] + 0.5 * data.alpha * jnp.sum(w * w)
    if cfg.constraint == "none":
        return loss
    return loss + weight * _penalty(x, data, cfg, s, smoothing)


def _largest_magnitude(v):
    return jnp.max(jnp.abs(v))


def _smoothed_operations(delta, tau):
    """The ramp, the ``min`` of the pDP bands and the largest magnitude of
    :func:`_penalty`, smoothed: the ramp and the ``min`` as in
    :mod:`fairest.partial._smooth` (width ``delta``, within ``delta / 4`` and ``delta log
    2`` of the exact ones), ``max |v_i|`` by ``tau logsumexp(+-v / tau)`` (at most ``tau
    log(2 m)`` above it, ``m`` the number of terms)."""

    def largest(v):
        v = v.ravel()
        return tau * jax.nn.logsumexp(jnp.concatenate([v, -v]) / tau)

    return (
        lambda z: _smooth_ramp(z, delta),
        lambda a, b: _smooth_min(a, b, delta),
        largest,
    )


_EXACT_OPERATIONS = (lambda z: jnp.clip(z + 0.5, 0.0, 1.0), jnp.minimum, _largest_magnitude)


def _penalty(x, data: Data, cfg: Config, s=None, smoothing=None):
    """Fairness penalty of (114) (pSP) or (119) (pDP) with the ramp, unsplit (``s``: the
    scores of ``x``, when known); smoothed with ``smoothing = (delta, tau)`` (see
    :func:`_smoothed_operations`)."""
    b, w, theta = split(x, cfg)
    s = linear_scores(b, w, data.X) if s is None else s
    ramp, lower, largest = (
        _EXACT_OPERATIONS if smoothing is None else _smoothed_operations(*smoothing)
    )
    width = data.hi - data.lo
    if cfg.constraint == "statistical":
        means = row_dot(data.membership, ramp(shift_columns(s, theta)))  # (G, J)
        return 2.0 / width * largest(means - data.grid[None, :])
    S = row_dot(data.membership, ramp(s - data.threshold))
    T = lower(S, data.hi) - lower(S, data.lo)
    return largest(T[:, None] - T[None, :]) / width


class _Stage(NamedTuple):
    x: jax.Array
    state: tuple  # optax's L-BFGS state
    k: jax.Array  # L-BFGS steps of the stage
    previous: jax.Array  # smoothed objective before the last step
    value: jax.Array  # ... after it
    finite: jax.Array  # the smoothed objective and its gradient at x are finite


@partial(jax.jit, static_argnames="cfg")
def _smoothed_penalty_run(x0, data: Data, cfg: Config, weight, deltas, taus, steps, tol):
    """Minimise the smoothed penalised objective by L-BFGS (optax, zoom line search) at
    every smoothing ``(deltas[i], taus[i])`` in turn, each stage warm-started from the
    last; returns every stage's end point ``(S, D)``, its L-BFGS steps ``(S,)`` and
    whether the run stayed finite.

    A stage ends after ``steps`` L-BFGS steps, when a step lowered the smoothed
    objective by at most ``tol`` (relative), or when the sup-norm of its gradient is at
    most ``_defaults.PENALTY_GTOL``; a non-finite value or gradient (huge features)
    ends the run at the last finite point. ``data`` is cast to ``x0``'s precision here,
    inside the executable (no separate cast executables)."""
    import optax  # at trace time only: importing fairest.partial does not load optax

    data = solver_data(data)
    optimizer = optax.lbfgs(memory_size=_defaults.PENALTY_MEMORY)
    inf = jnp.asarray(jnp.inf, x0.dtype)

    def stage(carry, smoothing):
        x, finite = carry

        def fun(v):
            return _penalised_objective(v, data, cfg, weight, smoothing)

        value_and_grad = optax.value_and_grad_from_state(fun)

        def cond(st: _Stage):
            grad = optax.tree_utils.tree_get(st.state, "grad")
            moving = st.previous - st.value > tol * jnp.abs(st.value)
            large = jnp.max(jnp.abs(grad)) > _defaults.PENALTY_GTOL
            return st.finite & (st.k < steps) & ((st.k < 2) | (moving & large))

        def body(st: _Stage):
            value, grad = value_and_grad(st.x, state=st.state)
            finite = jnp.isfinite(value) & jnp.all(jnp.isfinite(grad))
            update, state = optimizer.update(
                grad, st.state, st.x, value=value, grad=grad, value_fn=fun
            )
            moved = optax.apply_updates(st.x, update)
            finite = finite & jnp.all(jnp.isfinite(moved))
            return _Stage(
                x=jnp.where(finite, moved, st.x),
                state=state,
                k=st.k + 1,
                previous=value,
                value=optax.tree_utils.tree_get(state, "value"),
                finite=finite,
            )

        start = _Stage(x, optimizer.init(x), jnp.int32(0), inf, inf, finite)
        end = jax.lax.while_loop(cond, body, start)
        return (end.x, end.finite), (end.x, end.k)

    (_, finite), (points, n_steps) = jax.lax.scan(stage, (x0, jnp.array(True)), (deltas, taus))
    return points, n_steps, finite


def _exact_parts(points, X, y01, codes, sample_weight, settings: Data, cfg: Config):
    """``(f_0, penalty)`` of every row of ``points`` ``(P, D)``, exact and float64: the
    scores ``X w + b`` from the caller's float64 ``X`` (numpy or scipy sparse), the row
    weights from ``sample_weight``, the hyper-parameters from ``settings`` (a
    :class:`Data` whose row arrays are not read)."""
    n, d = X.shape
    scores = X @ points[:, 1 : 1 + d].T + points[:, 0]
    c0, cg = row_weights(codes, sample_weight, cfg.num_groups)
    membership = (codes[:, None] == np.arange(cfg.num_groups)[None, :]) * cg[:, None]
    # zero rows up to the row bucket (zero weights): one executable per bucket
    scores, y, groups, c0, cg, membership = pad_rows(
        n, scores, np.asarray(y01, float), codes, c0, cg, membership
    )
    rows = settings._replace(X=None, y=y, groups=groups, c0=c0, cg=cg, membership=membership)
    values = _parts_of_scores(points, scores, rows, cfg)
    return tuple(np.asarray(v) for v in values)


@partial(jax.jit, static_argnames="cfg")
def _parts_of_scores(points, scores, data: Data, cfg: Config):
    def parts(x, s):
        _, w, _ = split(x, cfg)
        loss = _logistic_parts(s, data)[0] + 0.5 * data.alpha * jnp.sum(w * w)
        if cfg.constraint == "none":
            return loss, jnp.zeros_like(loss)
        return loss, _penalty(x, data, cfg, s)

    # one point at a time: the (n, J) band temporaries of one point, not of all
    return jax.lax.map(lambda args: parts(*args), (points, scores.T))


class _Descent(NamedTuple):
    k: jax.Array  # steps taken
    x: jax.Array
    finite: jax.Array  # the objective and subgradient at x are finite
    window_best: jax.Array  # lowest penalised objective of the current window
    previous_best: jax.Array  # ... of the previous window
    converged: jax.Array


@partial(jax.jit, static_argnames="cfg")
def _penalty_descent(x0, data: Data, cfg: Config, weight, step, n_iter, tol, window):
    """Full-batch subgradient descent with a constant step; returns the last iterate,
    its loss and penalty, the number of steps taken, whether the last subgradient was
    finite and whether the convergence test stopped the run.

    Convergence test (``tol > 0``): after every ``window`` steps, the lowest penalised
    objective of the window is compared with that of the previous window; the run stops
    when it fell by at most ``tol`` relative (a subgradient method with a constant step
    oscillates around its limit, so single steps are not compared).

    Every step checks on device that the objective and the subgradient at the current
    iterate are finite; the loop stops at the first that is not (huge features or a too
    large step overflow), keeping that iterate, and the caller raises."""

    value_and_grad = jax.value_and_grad(lambda x: _penalised_objective(x, data, cfg, weight))
    inf = jnp.asarray(jnp.inf, x0.dtype)

    def cond(st: _Descent):
        return (st.k < n_iter) & st.finite & ~st.converged

    def body(st: _Descent):
        value, grad = value_and_grad(st.x)
        finite = jnp.isfinite(value) & jnp.all(jnp.isfinite(grad))
        best = jnp.minimum(st.window_best, value)
        k = st.k + finite.astype(st.k.dtype)
        closes = finite & (k % window == 0)
        scale = jnp.maximum(
            jnp.abs(jnp.where(jnp.isfinite(st.previous_best), st.previous_best, 1.0)), 1.0
        )
        progress = st.previous_best - best  # inf after the first window
        converged = closes & (tol > 0) & (progress <= tol * scale)
        return _Descent(
            k=k,
            x=jnp.where(finite, st.x - step * grad, st.x),
            finite=finite,
            window_best=jnp.where(closes, inf, best),
            previous_best=jnp.where(closes, best, st.previous_best),
            converged=converged,
        )

    start = _Descent(jnp.int32(0), x0, jnp.array(True), inf, inf, jnp.array(False))
    end = jax.lax.while_loop(cond, body, start)
    x = end.x
    penalty = _penalty(x, data, cfg) if cfg.constraint != "none" else jnp.zeros(())
    return x, objective(x, data, cfg), penalty, end.k, end.finite, end.converged


class PartialParityPenaltyClassifier(_LinearClassifierMixin, BaseEstimator):
    r"""Logistic regression with a partial-parity penalty (the paper's regularisation baseline).

    ``metric="partial_statistical_parity"`` minimises (114),
    :math:`f_0(w) + \frac{2\lambda}{\beta-\alpha}\max_{p}\max_k
    |\frac1{n_k}\sum_{i\in k}\sigma(s_i-\theta_p)-p|` over ``(b, w, theta)`` with the levels
    ``p_j = alpha + j (beta - alpha) / J``; ``"partial_demographic_parity"`` minimises (119),
    :math:`f_0(w)+\frac{\lambda}{\beta-\alpha}\max_{k,k'}|T_k-T_{k'}|` with
    :math:`T_k=\min(S_k,\beta)-\min(S_k,\alpha)`. :math:`\sigma` is the ramp.

    Two solvers of the same objective:

    * ``"lbfgs"`` (default): L-BFGS (optax) on smoothed versions of the objective, the
      ramp and the ``min`` rounded with width ``delta``, the maximum by a log-sum-exp of
      temperature ``tau``, through a continuation of ``(delta, tau)`` stages in one
      jitted loop (float32 passes over the rows); the model returned is, among the start
      ``w = 0`` and every stage's end point, the one of lowest *exact* penalised
      objective (float64). On Adult it reaches a lower exact objective than the paper's
      80,000 subgradient steps in half a second (``benchmarks/results/partial_speed.md``).
    * ``"subgradient"``: the paper's method (G.4.2), full-batch subgradient descent with a
      constant step from ``w = 0``, ``theta_p = 1/2 - p``, returning the last iterate;
      the paper runs a fixed number of steps, here the run may stop earlier (``tol``).

    Parameters
    ----------
    metric : {"partial_statistical_parity", "partial_demographic_parity"}, default="partial_statistical_parity"
        Penalise partial statistical parity (pSP, problem (114)) or partial demographic
        parity (pDP, problem (119)).
    interval : tuple (alpha, beta), default=(0.0, 1.0)
        Percentile interval in CCDF units, ``0 <= alpha < beta <= 1``.
    fairness_weight : float, default=0.3
        Penalty weight :math:`\lambda`.
    n_grid : int, default=10
        Number of levels ``J`` (pSP).
    threshold : float, default=0.0
        Decision threshold (pDP and ``predict``).
    alpha : float, default=0.0
        L2 strength on the coefficients.
    solver : {"lbfgs", "subgradient"}, default="lbfgs"
        L-BFGS on the smoothed objective, or the paper's subgradient descent.
    learning_rate : float, default=1e-3
        Constant step (``solver="subgradient"`` only).
    max_iter : int, default=80000
        Most steps in all: subgradient steps (the paper runs as many as IDCA's ``T K``),
        or L-BFGS steps split evenly over the smoothing stages.
    tol : float, default=1e-6
        Convergence test. ``"lbfgs"``: a smoothing stage ends when one step lowered the
        smoothed objective by at most ``tol`` (relative) or its gradient is flat.
        ``"subgradient"``: after every 1,000 steps, stop when the lowest penalised
        objective (loss plus weighted penalty) of these steps is at most ``tol``
        (relative) below that of the 1,000 steps before; ``0`` runs ``max_iter`` steps,
        as the paper does.

    Attributes
    ----------
    classes_, coef_, intercept_, thresholds_, grid_, groups_
    n_iter_ : int
        Subgradient or L-BFGS steps taken.
    objective_ : float
        Mean training loss at the returned model.
    penalty_ : float
        Value of the (unweighted, exact) fairness penalty at the returned model.

    References
    ----------
    .. [1] He, Y., Huang, Y., Yao, Y. and Lin, Q. "Enforcing Fair Predicted Scores on
       Intervals of Percentiles by Difference-of-Convex Constraints", arXiv:2505.12530,
       2025. Appendix G.4, problems (114) and (119).
    """

    __metadata_request__fit = {"sensitive_features": True}

    _parameter_constraints: dict = {
        "metric": [StrOptions(set(METRICS))],
        "interval": [tuple, list, np.ndarray],
        "fairness_weight": [Interval(Real, 0, None, closed="left")],
        "n_grid": [Interval(Integral, 1, None, closed="left")],
        "threshold": [Real],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "solver": [StrOptions({"lbfgs", "subgradient"})],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        metric="partial_statistical_parity",
        *,
        interval=(0.0, 1.0),
        fairness_weight=_defaults.PENALTY_WEIGHT,
        n_grid=_defaults.N_GRID,
        threshold=_defaults.THRESHOLD,
        alpha=_defaults.ALPHA,
        solver=_defaults.PENALTY_SOLVER,
        learning_rate=_defaults.PENALTY_STEP,
        max_iter=_defaults.PENALTY_MAX_ITER,
        tol=_defaults.PENALTY_TOL,
    ):
        self.metric = metric
        self.interval = interval
        self.fairness_weight = fairness_weight
        self.n_grid = n_grid
        self.threshold = threshold
        self.alpha = alpha
        self.solver = solver
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.tol = tol

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit the penalised model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data. A scipy sparse ``X`` (CSR, CSC, COO) is never densified when
            every row is at most 25 % non-zero (the rows are stored by their non-zeros);
            otherwise it is densified for the solve.
        y : array-like of shape (n_samples,)
            Binary target.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Group membership; ``None`` means one group (with a warning): no penalty.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights, used in the mean logistic loss and in the within-group means
            of the penalty. ``None`` gives every sample weight 1.

        Returns
        -------
        self : PartialParityPenaltyClassifier
            The fitted estimator.
        """
        fit_data = validate_fit_data(
            self, X, y, sensitive_features, sample_weight, accept_sparse=True
        )
        self.classes_, y01 = encode_binary_target(type(self).__name__, fit_data.y)
        X, codes, sw = as_csr_or_dense(fit_data.X), fit_data.groups, fit_data.sample_weight
        G = len(fit_data.group_labels)
        lo, hi = check_interval(self.interval)
        statistical = METRICS[self.metric] == "statistical"
        kind = METRICS[self.metric] if G >= 2 else "none"
        grid = level_grid((lo, hi), 0.0, self.n_grid, "interval") if statistical else np.zeros(0)
        cfg = Config(kind, "ramp", "minimal", G, X.shape[1], grid.size)
        smooth = self.solver == "lbfgs"
        # a float32 copy of huge features overflows to inf: the run then stops at its
        # first non-finite step and the fit raises with the clear message below
        with jax.enable_x64(True), np.errstate(over="ignore"):
            data = build_data(
                X,
                y01,
                codes,
                sw,
                G,
                # the smoothed run's one copy of a dense X (its passes are float32)
                x_dtype=np.float32 if smooth else np.float64,
                grid=grid,
                slack=0.0,
                lo=lo,
                hi=hi,
                threshold=float(self.threshold),
                alpha=float(self.alpha),
                mu=0.0,
                rho=0.0,
                width=1.0,
            )
            x0 = np.concatenate([np.zeros(1 + X.shape[1]), 0.5 - grid])
            if smooth:
                candidates, n_steps, finite = self._smoothed_run(x0, data, cfg)
                settings = data._replace(X=None)
                large = data.c0.size * cfg.num_features >= _defaults.PENALTY_COLLECT_CELLS
                del data
                if large:  # what the run left in reference cycles (400 MiB at 1e6 x 100)
                    gc.collect()
                    release_free_memory()
                x, f0, pen = self._lowest_exact(
                    candidates, n_steps, finite, X, (y01, codes, sw), settings, cfg
                )
            else:
                x, f0, pen, n_steps = self._subgradient_run(x0, data, cfg)
        d = X.shape[1]
        self.objective_, self.penalty_ = f0, pen
        self._set_linear_parameters(x[: 1 + d])
        self.thresholds_ = x[1 + d :]
        self.grid_ = grid
        self.groups_ = fit_data.group_labels
        self.n_iter_ = n_steps
        return self

    def _subgradient_run(self, x0, data, cfg):
        """The paper's full-batch subgradient descent (float64): its last iterate."""
        x, f0, pen, n_steps, finite, _ = _penalty_descent(
            jnp.asarray(x0),
            data,
            cfg,
            jnp.float64(self.fairness_weight),
            jnp.float64(self.learning_rate),
            jnp.int32(self.max_iter),
            jnp.float64(self.tol),
            jnp.int32(_defaults.PENALTY_WINDOW),
        )
        x, f0, pen, n_steps = np.asarray(x), float(f0), float(pen), int(n_steps)
        if not bool(finite) or not np.isfinite(f0 + pen):
            self._raise_non_finite(f"{n_steps} subgradient steps", " or lower learning_rate")
        return x, f0, pen, n_steps

    def _smoothed_run(self, x0, data, cfg):
        """L-BFGS on the smoothed problem (float32 passes): the candidates (the start,
        then every stage's end point), the steps taken and whether the run stayed
        finite."""
        smoothing = np.asarray(_defaults.PENALTY_SMOOTHING, dtype=SOLVER_DTYPE)
        steps = max(1, int(self.max_iter) // len(smoothing))
        dtype = np.dtype(SOLVER_DTYPE).type
        # traced without x64: optax's scalars (line-search steps, L-BFGS curvature
        # pairs) are then float32 too; with x64 its zoom line search took a float64
        # directional derivative, converting X to float64 (n x d x 8 bytes) in the run
        with jax.enable_x64(False):
            points, n_steps, finite = _smoothed_penalty_run(
                x0.astype(SOLVER_DTYPE),
                data,
                cfg,
                dtype(self.fairness_weight),
                smoothing[:, 0],
                smoothing[:, 1],
                np.int32(steps),
                dtype(self.tol),
            )
        candidates = np.vstack([x0, np.asarray(points, dtype=np.float64)])
        return candidates, int(np.sum(np.asarray(n_steps))), bool(finite)

    def _lowest_exact(self, candidates, n_steps, finite, X, rows, settings, cfg):
        """The candidate of lowest exact (float64) penalised objective, its loss and
        penalty."""
        f0, pen = _exact_parts(candidates, X, *rows, settings, cfg)
        total = f0 + float(self.fairness_weight) * pen
        if not finite or not np.all(np.isfinite(total)):
            self._raise_non_finite(f"{n_steps} L-BFGS steps", "")
        best = int(np.argmin(total))
        return candidates[best], float(f0[best]), float(pen[best])

    def _raise_non_finite(self, after, remedy):
        raise ValueError(
            f"{type(self).__name__}: the iterates became non-finite after {after} "
            f"(overflow): scale the features (e.g. StandardScaler){remedy}."
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


# --------------------------------------------------------------------------------------
# constrained pairwise baselines, (102), (105), (107)
# --------------------------------------------------------------------------------------


def pairwise_quadratic_mean(a, b, weights_a=None, weights_b=None):
    """Mean of ``(1 + a_i - b_j)^2 / 2`` over all pairs ``(i, j)``, in closed form.

    Computed as ``((1 + mean a - mean b)^2 + Var a + Var b) / 2`` with weighted
    population moments (spec section 8.4), without forming the pairs.

    Parameters
    ----------
    a : ndarray of shape (n_a,)
        Scores of the first set.
    b : ndarray of shape (n_b,)
        Scores of the second set.
    weights_a : ndarray of shape (n_a,), default=None
        Non-negative weights of ``a`` (uniform when ``None``).
    weights_b : ndarray of shape (n_b,), default=None
        Non-negative weights of ``b`` (uniform when ``None``).

    Returns
    -------
    float
        The weighted mean of ``(1 + a_i - b_j)^2 / 2`` over the pairs.
    """
    mean_a = np.average(a, weights=weights_a)
    mean_b = np.average(b, weights=weights_b)
    var_a = np.average((a - mean_a) ** 2, weights=weights_a)
    var_b = np.average((b - mean_b) ** 2, weights=weights_b)
    return 0.5 * ((1.0 + mean_a - mean_b) ** 2 + var_a + var_b)


class _PairwiseConstrainedClassifier(_LinearClassifierMixin, BaseEstimator):
    """Projected gradient descent on the logistic loss under quadratic pairwise
    constraints; subclasses define the (A, B) sample sets of every constraint."""

    __metadata_request__fit = {"sensitive_features": True}

    _parameter_constraints: dict = {
        "tolerance": [Interval(Real, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "projection": [StrOptions({"exact", "clarabel"})],
    }

    # offset subtracted from the sum of the pairwise means of one constraint
    _offset = 0.0

    def __init__(
        self,
        tolerance=1.0,
        *,
        learning_rate=_defaults.BASELINE_STEP,
        max_iter=_defaults.BASELINE_MAX_ITER,
        alpha=_defaults.ALPHA,
        tol=1e-5,
        projection="exact",
    ):
        self.tolerance = tolerance
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.alpha = alpha
        self.tol = tol
        self.projection = projection

    def _cell_sets(self, G):
        """Constraints, each a list of (cells_A, cells_B) terms; cell ``2 k + y`` holds
        the samples of group ``k`` with label ``y``."""
        raise NotImplementedError

    def _sets(self, groups, y01, G):
        """The constraints' (mask_A, mask_B) terms on the samples (brute-force checks)."""
        cells = 2 * groups + y01.astype(int)
        return [
            [(np.isin(cells, a), np.isin(cells, b)) for a, b in terms]
            for terms in self._cell_sets(G)
        ]

    def _quadratic_forms(self, X, y01, codes, weights, G):
        """Each constraint as ``1/2 w^T Q w + q^T w + c <= tolerance`` (spec 8.4)."""
        with np.errstate(over="ignore", invalid="ignore"):
            moments = _qcqp.cell_moments(X, weights, 2 * codes + y01.astype(int), 2 * G)
        if not all(np.all(np.isfinite(m)) for m in moments):
            raise ValueError(
                _overflow_message(self, "the pairwise constraints' second moments", remedy="")
            )
        try:
            forms = _qcqp.pairwise_forms(moments, self._cell_sets(G), self._offset)
        except np.linalg.LinAlgError:
            raise ValueError(
                _overflow_message(self, "the pairwise constraints", remedy="")
            ) from None
        except ValueError:
            raise ValueError(
                f"{type(self).__name__} needs every group to contain both classes."
            ) from None
        if not all(np.all(np.isfinite(f)) for f in forms):
            raise ValueError(_overflow_message(self, "the pairwise constraints", remedy=""))
        return forms

    def _projector(self, forms):
        """``v -> argmin_{w in F} ||w - v||`` for the chosen ``projection``."""
        if self.projection == "clarabel":
            return _qcqp.clarabel_projector(forms, self.tolerance, _defaults.PROJECTION_TOL)
        multipliers = np.zeros(forms.constant.size)
        fallback = []

        def exact(v):
            nonlocal multipliers
            try:
                w, multipliers, _ = _qcqp.project(v, forms, float(self.tolerance), multipliers)
            except RuntimeError:
                # no dual maximiser (a feasible set without interior, e.g. tolerance=0
                # with more constraints than features): the reference solver takes over
                if not fallback:
                    fallback.append(
                        _qcqp.clarabel_projector(forms, self.tolerance, _defaults.PROJECTION_TOL)
                    )
                multipliers = np.zeros(forms.constant.size)
                return fallback[0](v)
            return w

        return exact

    def constraint_values(self, X, sensitive_features, y):
        """Compute the fitted model's surrogate constraint values by brute force.

        Every pair of samples is enumerated (no closed form), so this is meant for
        checks on small data; ``tolerance`` is not subtracted.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.
        sensitive_features : array-like of shape (n_samples,)
            Group membership.
        y : array-like of shape (n_samples,)
            Binary target, with the labels of ``classes_``.

        Returns
        -------
        values : ndarray of shape (n_constraints,)
            Sum of the pairwise means of ``(1 + s_i - s_j)^2 / 2`` of every constraint,
            minus its offset, one entry per ordered pair of groups ``k != k'``.
        """
        from fairest.utils import encode_groups

        s = self.decision_function(X)
        codes, _ = encode_groups(sensitive_features, n_samples=len(s))
        y01 = (np.asarray(y) == self.classes_[1]).astype(float)
        out = []
        for terms in self._sets(codes, y01, codes.max() + 1):
            total = 0.0
            for a, b in terms:
                diff = s[a][:, None] - s[b][None, :]
                total += np.mean(0.5 * (1.0 + diff) ** 2)
            out.append(total - self._offset)
        return np.array(out)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit by projected gradient descent from ``w = 0``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Binary target.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Group membership; ``None`` means one group (no constraint, with a warning).
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights, used in the mean logistic loss and in the means and
            covariances behind the pairwise constraints. ``None`` gives every sample
            weight 1.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        fit_data = validate_fit_data(self, X, y, sensitive_features, sample_weight)
        self.classes_, y01 = encode_binary_target(type(self).__name__, fit_data.y)
        X, codes, sw = fit_data.X, fit_data.groups, fit_data.sample_weight
        G = len(fit_data.group_labels)
        # p x p solves and n x p products: too small for BLAS threads to pay for
        # their synchronisation
        with threadpool_limits(limits=1, user_api="blas"):
            project = (
                self._projector(self._quadratic_forms(X, y01, codes, sw, G)) if (G >= 2) else None
            )
            b, w, value, self.n_iter_, converged = _projected_gradient_descent(
                X,
                y01,
                sw / sw.sum(),
                project,
                self.learning_rate,
                self.alpha,
                self.max_iter,
                self.tol,
            )
        if not (np.isfinite(value) and np.isfinite(b) and np.all(np.isfinite(w))):
            raise ValueError(_overflow_message(self, "the iterates"))
        if not converged and self.tol > 0:
            warnings.warn(
                f"{type(self).__name__} did not converge in {self.max_iter} iterations.",
                ConvergenceWarning,
                stacklevel=2,
            )
        self._set_linear_parameters(np.r_[b, w])
        self.objective_ = value
        self.groups_ = fit_data.group_labels
        return self


def _overflow_message(estimator, what, remedy="or lower learning_rate") -> str:
    return (
        f"{type(estimator).__name__}: {what} became non-finite (overflow): scale the "
        f"features (e.g. StandardScaler) {remedy}.".replace(" .", ".")
    )


def _projected_gradient_descent(X, y01, c, project, step, alpha, max_iter, tol):
    """PGD on the weighted mean logistic loss from ``b = 0, w = 0`` (paper G.3.2).

    The intercept takes a plain gradient step; ``w`` is projected (``project=None``: no
    constraint). Stops when the objective changes by less than ``tol``.

    Returns
    -------
    b, w, objective, n_iter, converged
    """
    b, w = 0.0, np.zeros(X.shape[1])
    previous = np.inf
    for it in range(max_iter):
        with np.errstate(over="ignore", invalid="ignore"):
            s = X @ w + b
            r = c * (0.5 * (1.0 + np.tanh(0.5 * s)) - y01)
            b = b - step * r.sum()
            target = w - step * (r @ X + alpha * w)
            if not (np.isfinite(b) and np.all(np.isfinite(target))):
                return b, w, np.nan, it + 1, False
            w = target if project is None else project(target)
            s = X @ w + b
            value = float(c @ (np.logaddexp(0.0, s) - y01 * s) + 0.5 * alpha * w @ w)
        if not np.isfinite(value):  # the caller raises
            return b, w, value, it + 1, False
        if abs(previous - value) < tol:
            return b, w, value, it + 1, True
        previous = value
    return b, w, value, max_iter, False


def _ordered_pairs(G):
    return [(k, kk) for k in range(G) for kk in range(G) if k != kk]


def _pairwise_doc(problem: str) -> str:
    """Parameters, attributes and references of the three pairwise classes, which share
    everything but the paper's problem number."""
    return _PAIRWISE_DOC + problem + ").\n    "


_PAIRWISE_DOC = r"""    Parameters
    ----------
    tolerance : float, default=1.0
        Bound :math:`\kappa` on every constraint.
    learning_rate : float, default=0.5
        Constant PGD step :math:`\eta`.
    max_iter : int, default=1000
        Maximum number of projected gradient iterations.
    alpha : float, default=0.0
        L2 strength on the coefficients.
    tol : float, default=1e-5
        Stop when the objective changes by less than this.
    projection : {"exact", "clarabel"}, default="exact"
        How each projection onto the constraints is computed: ``"exact"`` maximises its
        Lagrange dual by projected Newton (one ``d x d`` Cholesky solve per dual step,
        feasibility to 1e-12 relative); ``"clarabel"`` solves the QCQP with cvxpy +
        Clarabel at tolerance 1e-6 (the spec's reference path, much slower; see
        benchmarks/results/partial_speed.md).

    Attributes
    ----------
    classes_, coef_, intercept_, groups_, n_iter_, objective_

    References
    ----------
    .. [1] He, Y., Huang, Y., Yao, Y. and Lin, Q. "Enforcing Fair Predicted Scores on
       Intervals of Percentiles by Difference-of-Convex Constraints", arXiv:2505.12530,
       2025. Appendix G.3, problem ("""


class GroupAUCConstrainedClassifier(_PairwiseConstrainedClassifier):
    __doc__ = r"""Logistic regression under group AUC fairness constraints (paper (102)).

    For every ordered pair of groups ``k != k'``:
    :math:`\mathrm{mean}_{i\in k, j\in k'}\tfrac12(1+s_i-s_j)^2 - \tfrac12 \le \kappa`
    (the quadratic surrogate of :math:`\Pr(s_i > s_j) = 1/2`). Trained by projected
    gradient descent; each projection onto the constraints (a small QCQP) is exact,
    through its Lagrange dual (see ``projection``).

""" + _pairwise_doc("102")

    _offset = 0.5

    def _cell_sets(self, G):
        return [[((2 * k, 2 * k + 1), (2 * kk, 2 * kk + 1))] for k, kk in _ordered_pairs(G)]


class InterGroupPairwiseConstrainedClassifier(_PairwiseConstrainedClassifier):
    __doc__ = r"""Logistic regression under inter-group pairwise fairness constraints (paper (105)).

    For every ordered pair ``k != k'``: mean over (positives of k, negatives of k') plus
    mean over (negatives of k, positives of k') of :math:`\tfrac12(1+s_i-s_j)^2`, minus 1,
    at most :math:`\kappa`. Parameters as :class:`GroupAUCConstrainedClassifier`.

""" + _pairwise_doc("105")

    _offset = 1.0

    def _cell_sets(self, G):
        return [
            [((2 * k + 1,), (2 * kk,)), ((2 * k,), (2 * kk + 1,))] for k, kk in _ordered_pairs(G)
        ]


class IntraGroupPairwiseConstrainedClassifier(_PairwiseConstrainedClassifier):
    __doc__ = r"""Logistic regression under intra-group pairwise fairness constraints (paper (107)).

    For every ordered pair ``k != k'``: mean over (positives of k, negatives of k) plus
    mean over (negatives of k', positives of k') of :math:`\tfrac12(1+s_i-s_j)^2`, minus 1,
    at most :math:`\kappa` (equal within-group AUCs). Parameters as
    :class:`GroupAUCConstrainedClassifier`.

""" + _pairwise_doc("107")

    _offset = 1.0

    def _cell_sets(self, G):
        return [
            [((2 * k + 1,), (2 * k,)), ((2 * kk,), (2 * kk + 1,))] for k, kk in _ordered_pairs(G)
        ]
