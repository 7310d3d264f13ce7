"""Baseline of the partial-fairness paper: the regularisation method (spec section 8;
paper G.3).

:class:`PartialParityPenaltyClassifier`: problems (114) (pSP) and (119) (pDP), trained by
full-batch subgradient descent with a constant step, or by L-BFGS on the smoothed
objective (the default). The constrained pairwise baselines are in
:mod:`fairest.partial._pairwise`.
"""

from __future__ import annotations

from functools import partial
from numbers import Integral, Real
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from fairest._kernels._buckets import pad_rows
from fairest.partial import _defaults
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
from fairest.partial._runtime import release_after_run
from fairest.partial._smooth import _smooth_min, _smooth_ramp
from fairest.utils._estimator import encode_binary_target, validate_fit_data
from fairest.utils._reporting import store_result

__all__ = ["PartialParityPenaltyClassifier"]


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
                large = (
                    data.c0.size * cfg.num_features
                    >= _defaults.PARTIAL_TUNING.penalty_collect_cells
                )
                del data
                release_after_run(large)  # its reference cycles: 400 MiB at 1e6 x 100
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
        store_result(self, n_iter=n_steps)
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
