"""Logistic regression constrained to partial statistical / demographic parity on a
percentile interval, trained by IDCA with switching-subgradient inner solves."""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from fairest._solvers._newton import solve_weighted_glm
from fairest.metrics import (
    partial_demographic_parity,
    partial_statistical_parity,
    suggest_interval,
)
from fairest.partial import _defaults
from fairest.partial._common import METRICS, build_data, check_interval
from fairest.partial._dc import Config, objective
from fairest.partial._idca import (
    constant_intercept,
    initial_point,
    level_grid,
    run_idca,
    run_ssg_direct,
    theory_schedule,
)
from fairest.partial._linear import _LinearClassifierMixin
from fairest.partial._smooth import STEPS, run_smooth_alm
from fairest.utils._estimator import encode_binary_target, validate_fit_data
from fairest.utils._reporting import as_history, log_fit
from fairest.utils._validation import FairnessWarning

__all__ = ["PartialParityClassifier"]

_AUTO_RIDGE = 1e-6  # tiny ridge of the unconstrained model behind interval="auto"


def unconstrained_scores(X, y01, sample_weight, alpha):
    """Scores of ``argmin f_0`` (Newton, with a tiny ridge so separable data converge)."""
    c = sample_weight / sample_weight.sum()
    result = solve_weighted_glm("logistic", X, y01, c, max(alpha, _AUTO_RIDGE))
    theta = result["theta"]
    return X @ theta[1:] + theta[0]


def _check_finite_model(name, x, X, objective_value):
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


def _truncate(history, k):
    """The IDCA record of outer iterations ``0..k`` (the run with ``max_iter = k``)."""
    if not history:
        return history
    out = {key: history[key][: k + 1] for key in ("objective", "max_violation", "params")}
    out.update({key: history[key][:k] for key in ("n_feasible", "subproblem_gap")})
    return out


class _ExactMetric:
    """The exact training metric the docstring names, of a flat parameter vector: pSP or
    pDP of :mod:`fairest.metrics` on the fitted interval, sample-weighted, at
    ``threshold`` for pDP; 0 with one group, NaN when not measurable (empty band)."""

    def __init__(self, estimator, X, codes, sample_weight, interval, num_groups):
        self.X, self.codes, self.sample_weight = X, codes, sample_weight
        self.interval, self.num_groups = interval, num_groups
        self.statistical = METRICS[estimator.metric] == "statistical"
        self.threshold = float(estimator.threshold)

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


class PartialParityClassifier(_LinearClassifierMixin, BaseEstimator):
    r"""Logistic regression with partial statistical or demographic parity constraints.

    Minimises the (sample-weighted) mean logistic loss of a linear score
    :math:`h(x) = b + x^\top w` subject to fairness *on a percentile interval*
    :math:`\mathcal I = [\alpha, \beta)` of every group's own scores (:math:`\alpha = 0`
    is the top of each group):

    * ``metric="partial_statistical_parity"`` (pSP, problem (15) of [1]_): inside their
      bands the groups' score distributions differ by at most ``tolerance`` in
      Kolmogorov-Smirnov distance. Trained with ``J = n_grid`` shared thresholds
      :math:`\theta_p`:
      :math:`p \le \frac1{n_k}\sum_{i\in k}\sigma(s_i-\theta_p) \le p+\kappa(\beta-\alpha)`
      for every level ``p`` and group ``k`` (2 G J constraints, Lemma 5.1 of [1]_).
    * ``metric="partial_demographic_parity"`` (pDP, problem (21)): the in-band positive
      rates at the decision ``threshold`` differ by at most ``tolerance`` for every
      ordered pair of groups (G (G - 1) constraints, Lemma 5.2).

    The step :math:`1[z > 0]` is replaced by a surrogate :math:`\sigma` (the ramp
    :math:`\mathrm{clip}(z + 1/2, 0, 1)` by default), which makes the constraints
    differences of convex functions. With ``solver="smooth_alm"`` the surrogate's kinks
    are rounded and the smoothed problem is solved by an augmented Lagrangian with
    L-BFGS-B rounds, stopping on a convergence test (seconds on Adult; see ``solver``).
    By default, IDCA (Algorithm 1 of [1]_) linearises their
    concave parts at the current point and solves the convex subproblem with the
    switching subgradient method (Algorithm 2): Polyak-type steps on the objective where
    the iterate is nearly feasible (all constraints <= ``inner_tol``), on the most
    violated constraint otherwise; the output is the best nearly-feasible iterate. The
    run starts from a trivially fair constant model (``init``), so every iterate stays
    nearly feasible and the objective never increases. All loops are jitted
    (``lax.scan`` / ``fori_loop``, float64).

    Prediction is group-blind. The paper's model class with group cross terms,
    :math:`(1, x, \gamma, \gamma x)`, is obtained by putting the numeric group code in
    ``X`` and adding :class:`GroupInteractionFeatures` in a pipeline (see Examples).

    Parameters
    ----------
    metric : {"partial_statistical_parity", "partial_demographic_parity"}, default="partial_statistical_parity"
        Constrain partial statistical parity (pSP) or partial demographic parity (pDP),
        as :func:`fairest.metrics.partial_statistical_parity` and
        :func:`fairest.metrics.partial_demographic_parity` measure them.
    interval : "auto" or tuple (alpha, beta), default="auto"
        Percentile interval in CCDF units, ``0 <= alpha < beta <= 1``. ``"auto"`` follows
        the paper's guideline (its Appendix B): fit the unconstrained model, take its
        share ``p`` of scores above ``threshold`` on the training data and pick, among
        intervals of widths 0.1, 0.2, 0.25, 0.3 on a 0.05 lattice that contain ``p``,
        the one where the unconstrained model has the largest pSP
        (:func:`fairest.metrics.suggest_interval`).
    tolerance : float, default=0.1
        Allowed unfairness :math:`\kappa`, a measured promise on the training data: the
        exact training metric of the returned model,
        :func:`~fairest.metrics.partial_statistical_parity` or
        :func:`~fairest.metrics.partial_demographic_parity` on ``interval_`` (at
        ``threshold`` for pDP) with the fit's ``sample_weight``, stored as
        ``train_unfairness_``, is at most ``tolerance``, or a
        :class:`~fairest.utils.FairnessWarning` gives the achieved value. The surrogate
        problem is first solved with ``tolerance`` itself (the paper's model); when its
        exact metric exceeds it (the surrogate and the finite grid leave a gap), the
        problem is solved again with a smaller internal tolerance and a narrower
        surrogate, at most 3 more times, and the most accurate model that meets
        ``tolerance`` is returned (see Notes). No promise on held-out data. With
        ``grid="lemma"`` and ``tolerance >= 1`` pSP has no constraint at all.
    surrogate : {"ramp", "sigmoid"}, default="ramp"
        Surrogate of the step function. The sigmoid split adds a proximal term
        :math:`\rho/2\|x\|^2` to both DC pieces, with :math:`\rho` from the data.
    surrogate_width : float, default=1.0
        Width :math:`\tau` of :math:`\sigma(z / \tau)`, in score units.
    n_grid : int, default=10
        Number ``J`` of levels ``p`` of the pSP constraints.
    grid : {"lemma", "interval", "linspace"}, default="lemma"
        Levels: ``alpha + j (1 - kappa)(beta - alpha) / J`` (Lemma 5.1), ``alpha + j
        (beta - alpha) / J``, or ``J`` points from alpha to beta inclusive.
    threshold : float, default=0.0
        Decision threshold: ``predict`` returns ``classes_[1]`` where the score is
        strictly above it, and pDP compares positive rates at it.
    dc_split : {"minimal", "paper"}, default="minimal"
        DC split of the pDP constraints; ``"paper"`` adds the paper's cancelling terms
        (Example D.5), which makes the convex subproblems more conservative.
    alpha : float, default=0.0
        L2 strength on the coefficients added to the loss (``alpha / 2 ||w||^2``); the
        paper has none.
    proximal_strength : float, default=0.0
        Weight of the strong-convexity add-on (:math:`\mu` of the paper),
        ``proximal_strength / 2 ||x||^2`` on both sides of every DC split, i.e. a
        proximal term ``proximal_strength / 2 ||x - x_k||^2`` in every subproblem. The
        convergence theory needs ``proximal_strength > 0``; the values of the problem do
        not change.
    solver : {"idca", "smooth_alm", "ssg_direct"}, default="idca"
        ``"smooth_alm"``: the surrogate's kinks rounded (parabolas of width ``delta``,
        log-sum-exp for the pDP ``min``; ``delta`` 0.05, 0.01, 0.002 in turn) and the
        smoothed problem solved by an augmented Lagrangian whose rounds are SciPy
        L-BFGS-B runs on one jitted ``value_and_grad`` (linear in ``n``); it stops on
        the convergence test ``tol``, ``max_iter`` capping the rounds and
        ``inner_max_iter`` the L-BFGS-B steps of a round (``"auto"``: 200); its KKT points
        tend to those of the DC problem as ``delta -> 0``. ``"idca"``: the paper's IDCA
        (Algorithm 1, inner solver ``inner_solver``), always ``max_iter`` outer
        iterations. ``"ssg_direct"``: SSG applied directly to the non-convex problem (the
        paper's Algorithm 3, for comparison) with ``max_iter * inner_max_iter``
        iterations. ``schedule="theory"`` runs IDCA.
    inner_solver : {"ssg", "alm"}, default="ssg"
        Solver of every IDCA subproblem. ``"ssg"``: the paper's switching subgradient
        method (Algorithm 2). ``"alm"``: an augmented Lagrangian with Newton steps on the
        subproblem with its kinks smoothed by majorants (softplus for the ramp, log-sum-exp
        for the pDP maxima; width ``1e-3`` then ``1e-4``), which solves it to about 1e-7
        instead of stopping ``inner_max_iter`` Polyak steps short of the optimum;
        each Newton step costs an ``(n, D^2)`` product (``D = 2 + n_features + n_grid``),
        so it suits up to a few hundred features. Its output is kept only when it is
        ``inner_tol``-feasible and no worse than the anchor, so the IDCA invariants hold
        for both; its multipliers warm-start the next subproblem.
    init : {"auto", "zero", "intercept"}, default="auto"
        Starting model, always a constant score (trivially fair, pSP = pDP = 0) with
        thresholds that make it feasible with margin ``c / 2``: ``"zero"`` is the paper's
        ``h = 0``; ``"intercept"`` the best constant model, ``h = logit(share of
        positives)``; ``"auto"`` uses ``"intercept"`` for pDP and ``"zero"`` for pSP. From
        ``h = 0`` every surrogate positive rate is 1/2; when 1/2 is outside the interval
        the in-band pDP terms are flat there, and IDCA can stop at a poor critical point
        where one group's rate sits at the interval's edge (on law school: accuracy 0.75
        against 0.89 from the intercept).
    schedule : {"practical", "theory"}, default="practical"
        ``"practical"``: constant ``inner_tol`` and ``inner_max_iter`` for ``max_iter``
        outer iterations (the paper's experiments). ``"theory"``: ``K``, ``eps_k`` and
        ``T_k`` of Theorem 6.5 for target accuracy ``inner_tol`` (needs
        ``proximal_strength > 0``), with the Lipschitz constant estimated from the data and
        the Slater margin of the starting point; ``K`` and ``T_k`` are capped (a warning
        says so).
    max_iter : int, default=200
        Outer (IDCA) iterations ``K``; with ``solver="smooth_alm"`` a cap on its
        augmented-Lagrangian rounds (it stops at convergence, after 8-15 on Adult).
    inner_max_iter : int or "auto", default="auto"
        Iterations per subproblem: SSG steps ``T`` (``"auto"``: 200, the paper's setting)
        or, with ``inner_solver="alm"``, a cap on its Newton steps and multiplier updates
        (``"auto"``: 1000; it stops at convergence, after 50-400 on the benchmarks);
        with ``solver="smooth_alm"``, L-BFGS-B steps per round (``"auto"``: 200).
    inner_tol : float, default=1e-3
        SSG tolerance :math:`\epsilon`: constraints up to it count as satisfied, and it is
        the target decrease of each objective step.
    tol : float, default=1e-5
        Convergence test of ``solver="smooth_alm"``: it stops at the finest smoothing when
        the relative change of the training loss over a round is at most ``tol`` and the
        surrogate constraints are within ``inner_tol``. Unused by the other solvers.
    random_state : int, RandomState instance or None, default=None
        Unused: the algorithm is deterministic. Accepted for API uniformity.
    verbose : int, default=0
        Log the fit through :mod:`logging` (``"fairest.partial._estimator"``, INFO): 1 a
        summary after the fit (outer iterations, final objective and largest surrogate
        constraint, whether it is met up to ``inner_tol``), 2 also one line per outer
        iteration.
    record_history : bool, default=False
        Store ``history_``.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
    thresholds_ : ndarray of shape (n_levels,)
        The shared thresholds :math:`\theta_p` (pSP; empty for pDP).
    grid_ : ndarray of shape (n_levels,)
        The levels ``p`` (pSP; empty for pDP or without constraints).
    interval_ : tuple of float
        The interval used (resolved when ``interval="auto"``).
    groups_ : ndarray of shape (n_groups,)
    n_iter_ : int
        Outer iterations of the run that gave the returned model (IDCA stopped there:
        the returned model is iterate ``n_iter_``, see Notes; ``max_iter`` for
        ``solver="ssg_direct"``).
    objective_ : float
        Mean training loss (plus the optional L2 term) of the returned model.
    constraint_violation_ : float
        Largest surrogate constraint value at the returned model, in the surrogate
        problem it was fitted on (internal tolerance ``effective_tolerance_``; <=
        ``inner_tol`` when nearly feasible; ``-inf`` without constraints). It does not
        measure the exact metric: see ``train_unfairness_``.
    train_unfairness_ : float
        Exact training pSP or pDP of the returned model (``metric`` of
        :mod:`fairest.metrics` on ``interval_``, sample-weighted, at ``threshold`` for
        pDP): at most ``tolerance`` unless a warning said otherwise. 0 with one group;
        NaN when it cannot be measured (a group with an empty band).
    effective_tolerance_ : float
        Internal tolerance of the surrogate problem the returned model solves
        (``tolerance`` unless the problem was tightened).
    tightening_ : dict of ndarray
        One entry per surrogate solve, the first being the paper's: its internal
        ``effective_tolerance``, and the exact ``train_unfairness`` and ``objective``
        of its final iterate.
    schedule_ : dict
        ``max_iter``, ``inner_tol`` and ``inner_max_iter`` actually used.
    history_ : dict of ndarray
        With ``record_history=True``, of the run that gave the returned model, up to it
        (``K = n_iter_``): per outer iteration ``k = 0..K`` the ``objective``,
        ``max_violation`` and ``params`` (``(b, w, theta)``), and per SSG run the number
        of objective steps ``n_feasible`` and the subproblem decrease ``subproblem_gap``.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    See Also
    --------
    PartialParityPenaltyClassifier : the penalty (regularisation) baseline.
    fairest.metrics.partial_statistical_parity : exact pSP for evaluation.

    Notes
    -----
    Sample weights enter the loss and the group means of the surrogate constraints.
    With ``sensitive_features=None`` (one group) the constraints are vacuous and the
    plain logistic model is fitted by the same subgradient loop (with a warning).

    The surrogate and the finite grid loosen the guarantee of one solve: with every
    constraint met up to ``inner_tol`` the exact training pSP is at most ``tolerance +
    (1 - tolerance) / J + 2 (inner_tol + e) / (beta - alpha) + 2 / (n_min (beta -
    alpha))``, where ``e`` is the largest gap between surrogate and exact group
    exceedance rates at the thresholds (spec section 10); on the top 20 % of Adult with
    ``tolerance=0.05`` the exact training pSP of the paper's solve was 0.067-0.12.
    Hence the exact metric is measured after the solve. Candidates are the iterates of
    the last half of every IDCA run (each is nearly feasible, and IDCA stopped there is
    the run with fewer outer iterations) or the output of direct SSG; the most accurate
    one (smallest ``objective_``) whose exact metric meets ``tolerance`` is returned.
    While no candidate of the last solve meets it, the problem is solved again from the
    constant start, at most 3 more times (``fairest.partial._defaults.TIGHTEN_ROUNDS``),
    with the internal tolerance lowered by the measured excess (by at least 10 % and at
    most 75 % a round), half the surrogate width (smaller gaps ``e``) and pSP levels from
    ``alpha`` to ``beta - c`` inclusive (which also constrain the bottom of the band).
    When no
    candidate meets it, the fairest final model is returned with a ``FairnessWarning``:
    with short runs or bands of a few samples the exact metric may not come down. When
    the first solve meets ``tolerance`` its final iterate, the paper's model, is
    returned at no extra cost; ``tightening_`` records every solve.

    References
    ----------
    .. [1] He, Y., Huang, Y., Yao, Y. and Lin, Q. "Enforcing Fair Predicted Scores on
       Intervals of Percentiles by Difference-of-Convex Constraints", arXiv:2505.12530,
       2025. Problems (15) and (21), Algorithms 1-3, Theorem 6.5, Appendix G.2.

    Examples
    --------
    >>> import numpy as np
    >>> from fairest.partial import PartialParityClassifier
    >>> rng = np.random.default_rng(0)
    >>> g = rng.integers(0, 2, 400)
    >>> X = rng.normal(size=(400, 3)) + g[:, None]
    >>> y = (X[:, 0] + rng.normal(size=400) > 0.5).astype(int)
    >>> clf = PartialParityClassifier(interval=(0.0, 0.5), tolerance=0.2,
    ...                               max_iter=20, inner_max_iter=100)
    >>> clf.fit(X, y, sensitive_features=g).coef_.shape
    (1, 3)
    >>> bool(clf.train_unfairness_ <= clf.tolerance)  # the exact training pSP
    True

    The paper's cross terms :math:`(1, x, \gamma, \gamma x)`, with the group code as the
    last column of ``X``:

    >>> from sklearn.pipeline import make_pipeline
    >>> from fairest.partial import GroupInteractionFeatures
    >>> Xg = np.column_stack([X, g + 1.0])
    >>> pipe = make_pipeline(GroupInteractionFeatures(group_column=-1),
    ...                      PartialParityClassifier(interval=(0.0, 0.5), tolerance=0.3,
    ...                                              max_iter=20, inner_max_iter=100))
    >>> pipe.fit(Xg, y, partialparityclassifier__sensitive_features=g).score(Xg, y) > 0.5
    True
    """

    __metadata_request__fit = {"sensitive_features": True}

    _parameter_constraints: dict = {
        "metric": [StrOptions(set(METRICS))],
        "interval": [StrOptions({"auto"}), tuple, list, np.ndarray],
        "tolerance": [Interval(Real, 0, None, closed="left")],
        "surrogate": [StrOptions({"ramp", "sigmoid"})],
        "surrogate_width": [Interval(Real, 0, None, closed="neither")],
        "n_grid": [Interval(Integral, 1, None, closed="left")],
        "grid": [StrOptions({"lemma", "interval", "linspace"})],
        "threshold": [Real],
        "dc_split": [StrOptions({"minimal", "paper"})],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "proximal_strength": [Interval(Real, 0, None, closed="left")],
        "solver": [StrOptions({"smooth_alm", "idca", "ssg_direct"})],
        "inner_solver": [StrOptions({"ssg", "alm"})],
        "init": [StrOptions({"auto", "zero", "intercept"})],
        "schedule": [StrOptions({"practical", "theory"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "inner_max_iter": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "inner_tol": [Interval(Real, 0, None, closed="neither")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "record_history": ["boolean"],
    }

    def __init__(
        self,
        metric="partial_statistical_parity",
        *,
        interval="auto",
        tolerance=_defaults.TOLERANCE,
        surrogate=_defaults.SURROGATE,
        surrogate_width=_defaults.SURROGATE_WIDTH,
        n_grid=_defaults.N_GRID,
        grid=_defaults.GRID,
        threshold=_defaults.THRESHOLD,
        dc_split=_defaults.DC_SPLIT,
        alpha=_defaults.ALPHA,
        proximal_strength=_defaults.PROXIMAL_STRENGTH,
        solver=_defaults.SOLVER,
        inner_solver="ssg",
        init=_defaults.INIT,
        schedule="practical",
        max_iter=_defaults.MAX_ITER,
        inner_max_iter="auto",
        inner_tol=_defaults.INNER_TOL,
        tol=_defaults.TOL,
        random_state=None,
        verbose=0,
        record_history=False,
    ):
        self.metric = metric
        self.interval = interval
        self.tolerance = tolerance
        self.surrogate = surrogate
        self.surrogate_width = surrogate_width
        self.n_grid = n_grid
        self.grid = grid
        self.threshold = threshold
        self.dc_split = dc_split
        self.alpha = alpha
        self.proximal_strength = proximal_strength
        self.solver = solver
        self.inner_solver = inner_solver
        self.init = init
        self.schedule = schedule
        self.max_iter = max_iter
        self.inner_max_iter = inner_max_iter
        self.inner_tol = inner_tol
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose
        self.record_history = record_history

    # ------------------------------------------------------------------ fit pieces

    def _resolve_interval(self, X, y01, codes, sample_weight, num_groups):
        if not (isinstance(self.interval, str) and self.interval == "auto"):
            return check_interval(self.interval)
        if num_groups < 2:
            return (0.0, 1.0)
        scores = unconstrained_scores(X, y01, sample_weight, self.alpha)
        lo, hi = suggest_interval(
            scores,
            sensitive_features=codes,
            threshold=float(self.threshold),
            sample_weight=sample_weight,
            widths=_defaults.AUTO_WIDTHS,
            step=_defaults.AUTO_STEP,
        )
        return float(lo), float(hi)

    def _problem(
        self,
        X,
        y01,
        codes,
        sample_weight,
        num_groups,
        interval,
        tolerance=None,
        grid_rule=None,
        width=None,
    ):
        """``(cfg, data, x0)`` of the surrogate problem with ``tolerance``, the level rule
        ``grid_rule`` and the surrogate width ``width`` (defaults: the parameters)."""
        lo, hi = interval
        tolerance = float(self.tolerance if tolerance is None else tolerance)
        slack = tolerance * (hi - lo)
        active = num_groups >= 2
        if METRICS[self.metric] == "statistical":
            grid = np.zeros(0)
            if active:
                grid = level_grid(interval, tolerance, self.n_grid, grid_rule or self.grid)
            kind = "statistical" if grid.size else "none"
        else:
            grid = np.zeros(0)
            kind = "demographic" if active else "none"
        width = float(self.surrogate_width if width is None else width)
        rho = 0.0
        if self.surrogate == "sigmoid" and kind != "none":
            with np.errstate(over="ignore"):
                sq = 1.0 + np.max(np.einsum("ij,ij->i", X, X))  # max ||(1, x_i)||^2
            if not np.isfinite(sq):
                raise ValueError(
                    "surrogate='sigmoid': the weak-convexity constant of the sigmoid split "
                    "overflows for features of this size; scale the features (e.g. "
                    "StandardScaler)."
                )
            if kind == "statistical":
                rho = _defaults.SIGMOID_CURVATURE * (sq + 1.0) / width**2
            else:
                rho = 2.0 * _defaults.SIGMOID_CURVATURE * sq / width**2
        cfg = Config(
            constraint=kind,
            surrogate=self.surrogate,
            dc_split=self.dc_split,
            num_groups=num_groups,
            num_features=X.shape[1],
            num_levels=grid.size if kind == "statistical" else 0,
        )
        data = build_data(
            X,
            y01,
            codes,
            sample_weight,
            num_groups,
            grid=grid if kind == "statistical" else np.zeros(0),
            slack=slack,
            lo=lo,
            hi=hi,
            threshold=float(self.threshold),
            alpha=float(self.alpha),
            mu=float(self.proximal_strength),
            rho=rho,
            width=width,
        )
        x0 = initial_point(
            X.shape[1],
            data.grid,
            slack,
            self.surrogate,
            width,
            self._start_intercept(y01, sample_weight),
        )
        return cfg, data, x0

    def _start_intercept(self, y01, sample_weight) -> float:
        """Intercept of the constant starting model (``init``)."""
        init = self.init
        if init == "auto":
            init = "intercept" if METRICS[self.metric] == "demographic" else "zero"
        return constant_intercept(y01, sample_weight) if init == "intercept" else 0.0

    def _inner(self, cfg) -> str:
        """The inner solver; a problem without constraints (one group, or
        ``tolerance >= 1``) runs SSG, which then takes plain subgradient steps."""
        return self.inner_solver if cfg.constraint != "none" else "ssg"

    def _solver(self) -> str:
        """The solver run: ``schedule="theory"`` is IDCA's (Theorem 6.5)."""
        if self.solver == "smooth_alm" and self.schedule == "theory":
            return "idca"
        return self.solver

    def _smooth_ran(self, cfg) -> bool:
        """``solver="smooth_alm"`` on a problem with constraints (without any, the plain
        logistic model is fitted by the IDCA loop, whose SSG then takes plain
        subgradient steps)."""
        return self._solver() == "smooth_alm" and cfg.constraint != "none"

    def _alm_ran(self, cfg) -> bool:
        return self._solver() == "idca" and self._inner(cfg) == "alm"

    def _inner_iterations(self) -> int:
        if self.inner_max_iter != "auto":
            return int(self.inner_max_iter)
        if self.inner_solver == "alm":
            return _defaults.ALM_MAX_ITER

        return _defaults.INNER_MAX_ITER

    def _schedule(self, X, cfg, data, x0):
        if self.schedule == "practical":
            return int(self.max_iter), float(self.inner_tol), self._inner_iterations()
        if self.proximal_strength <= 0:
            raise ValueError("schedule='theory' needs proximal_strength > 0 (Assumption 6.3A).")
        # M ~ max_i ||(phi_i, 1)|| for the ramp pieces with a linear score (spec 5.4);
        # nu: the Slater margin c/2 of the starting point (spec 5.1).
        with np.errstate(over="ignore"):
            lipschitz = float(np.sqrt(2.0 + np.max(np.einsum("ij,ij->i", X, X))))
        slater = 0.5 * float(data.slack) if float(data.slack) > 0 else 1.0
        gap = float(objective(jnp.asarray(x0), data, cfg))  # f_lb = 0 (logistic loss)
        try:
            if not np.isfinite(lipschitz):
                raise OverflowError
            K, eps_k, T = theory_schedule(
                float(self.inner_tol), float(self.proximal_strength), lipschitz, slater, gap
            )
        except OverflowError:
            raise ValueError(
                "schedule='theory': the iteration counts of Theorem 6.5 overflow for "
                f"features of this size (Lipschitz constant {lipschitz:.3g}); scale the "
                "features (e.g. StandardScaler)."
            ) from None
        capped_K, capped_T = min(K, _defaults.THEORY_MAX_OUTER), min(T, _defaults.THEORY_MAX_INNER)
        if (capped_K, capped_T) != (K, T):
            warnings.warn(
                f"schedule='theory' asks for K={K} outer and T={T} inner iterations; "
                f"capped at K={capped_K}, T={capped_T}, so the guarantee of Theorem 6.5 "
                "does not apply.",
                ConvergenceWarning,
                stacklevel=3,
            )
        return capped_K, eps_k, capped_T

    # ------------------------------------------------------------------ public API

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit the constrained model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Binary target (any two labels).
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Group membership; ``None`` means one group (with a warning): no constraint.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights, used in the mean logistic loss and in the within-group means
            of the surrogate constraints. ``None`` gives every sample weight 1.

        Returns
        -------
        self : PartialParityClassifier
            The fitted estimator.
        """
        data_in = validate_fit_data(self, X, y, sensitive_features, sample_weight)
        self.classes_, y01 = encode_binary_target(type(self).__name__, data_in.y)
        X, codes, sw = data_in.X, data_in.groups, data_in.sample_weight
        num_groups = len(data_in.group_labels)
        kappa = float(self.tolerance)
        with jax.enable_x64(True):
            interval = self._resolve_interval(X, y01, codes, sw, num_groups)
            problem = self._problem(X, y01, codes, sw, num_groups, interval)
            K, eps, T = self._schedule(X, *problem)
            measure = _ExactMetric(self, X, codes, sw, interval, num_groups)
            solves = [self._solve(X, *problem, K, eps, T, measure, kappa)]
            if problem[0].constraint != "none":
                self._tighten(solves, measure, X, y01, codes, sw, num_groups, interval, K, eps, T)
        chosen, pick = self._select(solves, kappa)
        history = _truncate(chosen["history"], pick)
        x = chosen["iterates"][pick]
        objective_value = float(chosen["objectives"][pick])
        violation = float(chosen["violations"][pick])
        stuck = chosen["stuck"]
        d = X.shape[1]
        self._set_linear_parameters(x[: 1 + d])
        self.thresholds_ = x[1 + d :].copy()
        self.grid_ = chosen["grid"].copy()
        self.interval_ = interval
        self.groups_ = data_in.group_labels
        self.n_iter_ = K if self.solver == "ssg_direct" else pick
        self.objective_ = objective_value
        self.constraint_violation_ = violation
        self.train_unfairness_ = float(chosen["exact"][pick])
        self.effective_tolerance_ = chosen["tolerance"]
        self.tightening_ = {
            "effective_tolerance": np.array([sol["tolerance"] for sol in solves]),
            "train_unfairness": np.array([sol["exact"][-1] for sol in solves]),
            "objective": np.array([sol["objectives"][-1] for sol in solves]),
        }
        self.schedule_ = {"max_iter": K, "inner_tol": eps, "inner_max_iter": T}
        if self.record_history:
            self.history_ = as_history(history)
        capped = (
            int(np.sum(chosen["history"]["n_feasible"] >= T)) if self._alm_ran(problem[0]) else 0
        )
        if capped:
            warnings.warn(
                f"the ALM inner solver stopped at inner_max_iter={T} on {capped} of {K} "
                "subproblems; raise inner_max_iter, or set alpha > 0 or proximal_strength > 0 "
                "when the loss has no minimiser (e.g. a group whose labels are separable).",
                ConvergenceWarning,
                stacklevel=2,
            )
        if violation > eps or stuck:
            warnings.warn(
                f"the returned model violates a surrogate constraint by {violation:.3g} "
                f"(> inner_tol={eps:.3g}); the problem may be infeasible or need more "
                "iterations.",
                ConvergenceWarning,
                stacklevel=2,
            )
        if self.train_unfairness_ > kappa:  # (False for NaN: not measurable)
            warnings.warn(
                f"the exact training {self.metric} of the returned model is "
                f"{self.train_unfairness_:.4g} > tolerance={kappa:.4g} after {len(solves)} "
                f"surrogate solves (internal tolerance down to "
                f"{min(sol['tolerance'] for sol in solves):.3g}); the fairest model found is "
                "returned. Raise tolerance, max_iter or n_grid, or widen the interval.",
                FairnessWarning,
                stacklevel=2,
            )
        self._log_fit(history, K, T, objective_value, violation, eps, stuck)
        return self

    def _solve(self, X, cfg, data, x0, K, eps, T, measure, tolerance) -> dict:
        """One surrogate solve (IDCA or direct SSG) from ``x0``, with its candidate
        iterates (the last ``TIGHTEN_TAIL`` share of the IDCA iterates; the output of
        direct SSG) and their exact training metric (NaN: not evaluated). Raises a
        ``ValueError`` when the final model is not finite (overflow on huge features)."""
        if self._smooth_ran(cfg):
            steps = STEPS if self.inner_max_iter == "auto" else int(self.inner_max_iter)
            result = run_smooth_alm(x0, data, cfg, eps, float(self.tol), K, steps)
            # the run ends at its last point within eps of the surrogate constraints (a
            # short run may stop before the rounds reach feasibility; the constant start
            # is feasible with margin c / 2)
            within = np.flatnonzero(result.max_violation <= eps)
            n = int(within[-1]) if within.size else result.n_steps.size
            history = {
                "objective": result.objective[: n + 1],
                "max_violation": result.max_violation[: n + 1],
                "params": result.iterates[: n + 1],
                "n_feasible": result.n_steps[:n],
                "subproblem_gap": np.diff(result.objective[: n + 1]),
            }
            sol = {
                "iterates": history["params"],
                "objectives": history["objective"],
                "violations": history["max_violation"],
                "stuck": False,
                "history": history,
                "first": max(1, n - int(_defaults.TIGHTEN_TAIL * n)) if n else 0,
                "feasible_only": eps,
                "converged": result.converged,
            }
        elif self.solver in ("idca", "smooth_alm"):
            result = run_idca(jnp.asarray(x0), data, cfg, eps, T, K, self._inner(cfg))
            history = {
                "objective": np.asarray(result.objective),
                "max_violation": np.asarray(result.max_violation),
                "params": np.asarray(result.iterates),
                "n_feasible": np.asarray(result.n_feasible),
                "subproblem_gap": np.asarray(result.subproblem_gap),
            }
            sol = {
                "iterates": history["params"],
                "objectives": history["objective"],
                "violations": history["max_violation"],
                "stuck": bool(np.any(np.asarray(result.stuck))),
                "history": history,
                "first": max(1, K - int(_defaults.TIGHTEN_TAIL * K)),
            }
        else:
            result = run_ssg_direct(jnp.asarray(x0), data, cfg, jnp.full((K * T,), eps))
            sol = {
                "iterates": np.asarray(result.x)[None, :],
                "objectives": np.asarray(result.objective)[None],
                "violations": np.asarray(result.max_violation)[None],
                "stuck": False,
                "history": {},
                "first": 0,
            }
        _check_finite_model(type(self).__name__, sol["iterates"][-1], X, sol["objectives"][-1])
        sol["grid"] = np.asarray(data.grid)
        sol["tolerance"] = tolerance
        sol["width"] = float(data.width)
        sol["exact"] = np.full(len(sol["objectives"]), np.nan)
        sol["exact"][-1] = measure(sol["iterates"][-1])
        sol["measure"] = measure
        return sol

    @staticmethod
    def _best_candidate(sol, kappa, bound):
        """Index of the candidate of ``sol`` with the smallest objective below ``bound``
        whose exact metric is at most ``kappa``, or ``None``. The IDCA objective does not
        increase along a run, so the scan goes backwards and stops at the first
        candidate that meets the tolerance or whose objective reaches ``bound``."""
        for k in range(len(sol["objectives"]) - 1, sol["first"] - 1, -1):
            objective_value = sol["objectives"][k]
            if not objective_value < bound:
                return None
            if sol.get("feasible_only", np.inf) < sol["violations"][k]:
                continue  # an L-BFGS iterate outside inner_tol of the surrogate constraints
            if np.isnan(sol["exact"][k]):
                sol["exact"][k] = sol["measure"](sol["iterates"][k])
            if sol["exact"][k] <= kappa:
                return k
        return None

    def _select(self, solves, kappa):
        """``(solve, iterate)`` returned: the most accurate candidate whose exact metric
        meets ``kappa``; else the fairest final model (NaN, not measurable, last)."""
        best, bound = None, np.inf
        for sol in solves:
            k = self._best_candidate(sol, kappa, bound)
            if k is not None:
                best, bound = (sol, k), sol["objectives"][k]
        if best is not None:
            return best
        fairest = min(
            solves,
            key=lambda sol: (np.isnan(sol["exact"][-1]), sol["exact"][-1], sol["objectives"][-1]),
        )
        return fairest, len(fairest["objectives"]) - 1

    def _tighten(self, solves, measure, X, y01, codes, sw, num_groups, interval, K, eps, T):
        """Solve again with a smaller internal tolerance while no candidate of the last
        solve meets ``tolerance`` (at most ``_defaults.TIGHTEN_ROUNDS`` times, see there);
        appends the solves to ``solves``."""
        kappa = float(self.tolerance)
        rule = "closed" if self.grid == "lemma" else self.grid
        low, high = _defaults.TIGHTEN_FACTORS
        for _ in range(_defaults.TIGHTEN_ROUNDS):
            last = solves[-1]
            if not last["exact"][-1] > kappa:  # met, or NaN (not measurable)
                return
            if self._best_candidate(last, kappa, np.inf) is not None:
                return
            first = solves[0]["exact"][-1]
            if len(solves) > 2 and not min(sol["exact"][-1] for sol in solves[1:]) < first:
                return  # two rounds no fairer than the first solve: more will not help
            previous = last["tolerance"]
            effective = float(
                np.clip(previous - (last["exact"][-1] - kappa), low * previous, high * previous)
            )
            if not effective < previous and len(solves) > 1:  # tolerance 0: nothing left
                return
            width = _defaults.TIGHTEN_WIDTH_FACTOR * last["width"]
            cfg, data, x0 = self._problem(
                X,
                y01,
                codes,
                sw,
                num_groups,
                interval,
                tolerance=effective,
                grid_rule=rule,
                width=width,
            )
            sol = None
            if self._smooth_ran(cfg):  # warm start: the last solve's final iterate
                sol = self._solve(X, cfg, data, last["iterates"][-1], K, eps, T, measure, effective)
                if not sol["violations"][-1] <= eps:  # no round got feasible: cold start
                    sol = None
            if sol is None:
                sol = self._solve(X, cfg, data, x0, K, eps, T, measure, effective)
            solves.append(sol)

    def _log_fit(self, history, K, T, objective_value, violation, eps, stuck):
        """``verbose``: a line per outer iteration (2), then the summary (1)."""
        if history:  # entry 0 is the starting point
            for k in range(1, len(history["objective"])):
                log_fit(
                    self,
                    "outer iteration %d/%d: objective %.6f, max violation %.3e",
                    k,
                    K,
                    history["objective"][k],
                    history["max_violation"][k],
                    level=2,
                )
        feasible = violation <= eps and not stuck
        run = {
            "idca": f"idca, {K} outer iterations",
            "smooth_alm": f"smooth_alm, at most {K} augmented-Lagrangian rounds",
            "ssg_direct": f"ssg_direct, {K * T} iterations",
        }[self._solver()]
        if self.solver != "ssg_direct" and self.n_iter_ < K:
            run += f" (iterate {self.n_iter_} returned)"
        log_fit(
            self,
            "%s: objective %.6f, max violation %.3e (%s inner_tol=%.3g); exact "
            "train unfairness %.4g (tolerance %.4g, %d surrogate solves)",
            run,
            objective_value,
            violation,
            "within" if feasible else "NOT within",
            eps,
            self.train_unfairness_,
            float(self.tolerance),
            self.tightening_["objective"].size,
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
