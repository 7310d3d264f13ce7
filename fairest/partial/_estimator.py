"""Logistic regression constrained to partial statistical / demographic parity on a
percentile interval, trained by IDCA with switching-subgradient inner solves."""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from fairest.partial import _defaults
from fairest.partial._common import METRICS, as_csr_or_dense
from fairest.partial._fit import Settings, build_problem, fit_partial, unconstrained_scores
from fairest.partial._floors import small_groups_message
from fairest.partial._linear import _LinearClassifierMixin
from fairest.utils._degenerate import near_constant, plain_label, prediction_figures
from fairest.utils._estimator import encode_binary_target, validate_fit_data
from fairest.utils._reporting import (
    callback_in_fit_context,
    log_fit,
    report_progress,
    store_result,
)
from fairest.utils._validation import FairnessWarning

__all__ = ["PartialParityClassifier"]


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
    differences of convex functions. By default (``solver="smooth_alm"``) the
    surrogate's kinks are rounded and the smoothed problem is solved by an augmented
    Lagrangian with damped Gauss-Newton rounds in one jitted loop, stopping on a
    convergence test (seconds on Adult; see ``solver``). With ``solver="idca"``, IDCA
    (Algorithm 1 of [1]_) linearises their
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
    solver : {"smooth_alm", "idca", "ssg_direct"}, default="smooth_alm"
        ``"smooth_alm"``: the surrogate's kinks rounded (parabolas of width ``delta``,
        log-sum-exp for the pDP ``min``; ``delta`` 0.05, 0.01, 0.002 in turn) and the
        smoothed problem solved by an augmented Lagrangian whose rounds are damped
        Gauss-Newton steps (Armijo line search; the ``D x D`` Gauss-Newton matrix costs
        one weighted Gram of the rows, so a step is linear in ``n``), the whole run in one
        jitted ``lax.while_loop`` in float32 (the exact training metric and the returned
        model are float64); it stops on the convergence test ``tol``, ``max_iter``
        capping the rounds and ``inner_max_iter`` the Gauss-Newton steps of a round
        (``"auto"``: 20); its KKT points tend to those of the DC problem as
        ``delta -> 0``. A dense float32 copy of ``X`` is solved on unless its rows are
        sparse enough (100 k^2 < d^2 for k non-zeros a row of d) for their ELL form to
        be faster. When none of its solves meets ``tolerance`` exactly (a violated
        smoothed constraint can be flat on small bands), the fit also runs ``"idca"``
        and returns the best model of both, on data small enough for its cost (rows x
        ``max_iter`` x 200 SSG steps at most 5,000 x 200 x 200); a round-budget rule
        stops a run whose violation has not fallen by 10 % in 5 rounds at the largest
        penalty. ``"idca"``: the paper's IDCA
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
        augmented-Lagrangian rounds (it stops at convergence, after 5-15 on Adult).
    inner_max_iter : int or "auto", default="auto"
        Iterations per subproblem: SSG steps ``T`` (``"auto"``: 200, the paper's setting)
        or, with ``inner_solver="alm"``, a cap on its Newton steps and multiplier updates
        (``"auto"``: 1000; it stops at convergence, after 50-400 on the benchmarks);
        with ``solver="smooth_alm"``, Gauss-Newton steps per round (``"auto"``: 20).
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
    small_groups_ : ndarray
        The groups too small for ``tolerance`` (pSP; see Notes): no model whose scores do
        not tie across groups has a training pSP at most ``tolerance`` against them.
        Empty when there is none (always for pDP).
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
        measure the exact metric: see ``train_unfairness_``. With
        ``solver="smooth_alm"`` (a run that stalled on a flat constraint or was cut by
        ``max_iter``) or after a tightening solve it may exceed ``inner_tol`` without a
        ``ConvergenceWarning``: the promise is the exact metric (``FairnessWarning``).
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
        of its final iterate (``train_unfairness`` over the groups not in
        ``small_groups_``: the metric the tightening judges).
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
    While no candidate of the last solve meets it, the problem is solved again (the
    smoothed ALM from the last solve's model when that run converged, otherwise from the
    constant start), at most 3 more times (``fairest.partial._defaults.PARTIAL_RULES.tighten_rounds``),
    with the internal tolerance lowered by the measured excess (by at least 10 % and at
    most 75 % a round), half the surrogate width (smaller gaps ``e``) and pSP levels from
    ``alpha`` to ``beta - c`` inclusive (which also constrain the bottom of the band);
    the rounds stop early when one ends no fairer than an earlier solve. When no
    candidate meets it, the fairest final model is returned with a ``FairnessWarning``:
    with short runs or bands of a few samples the exact metric may not come down. When
    the first solve meets ``tolerance`` its final iterate, the paper's model, is
    returned at no extra cost; ``tightening_`` records every solve.

    Small groups (pSP). A band of ``m`` samples (``m = ceil(beta n_k) - ceil(alpha
    n_k)`` of a group of ``n_k``) moves its CCDF in steps of ``1 / m``, so no model whose
    scores do not tie across groups has a pSP below ``1 / (2 m)`` against that group
    (with sample weights: half the smallest weight share of the band). A group whose
    floor exceeds ``tolerance`` (e.g. 15 rows on a band of width 0.1: one sample, floor
    0.5) is listed in ``small_groups_`` with a ``FairnessWarning``; its upper constraints
    get its floor as tolerance (slack ``floor (beta - alpha)``) and are never tightened,
    and the tightening rounds and the choice of the returned model judge the exact
    metric over the other groups; ``train_unfairness_`` is still over all groups. The
    cost of a fit does not grow with the number of groups beyond the ``2 G J``
    constraints' share of each pass over the rows (``benchmarks/results/partial_groups.md``);
    a fit inside :func:`fairest.utils._reporting.show_progress` (the ``fairest`` command
    line) moves its progress line after every augmented-Lagrangian round or IDCA
    outer iteration.

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
        """``(cfg, data, x0)`` of the surrogate problem
        (:func:`fairest.partial._fit.build_problem` with this estimator's settings)."""
        return build_problem(
            Settings.of(self),
            X,
            y01,
            codes,
            sample_weight,
            num_groups,
            interval,
            tolerance=tolerance,
            grid_rule=grid_rule,
            width=width,
        )

    # ------------------------------------------------------------------ public API

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit the constrained model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data. A scipy sparse ``X`` (CSR, CSC, COO) is stored by the
            non-zeros of its rows (as mostly-zero numpy ``X``) when every row is at
            most 25 % non-zero and, for ``solver="smooth_alm"``, ``100 k^2 < d^2``
            (``k`` non-zeros a row rounded up to 8, ``d`` columns: where that is faster
            than dense products); otherwise it is densified block by block of rows
            into the solver's copy (float32 for ``"smooth_alm"``), never as a whole
            float64 array.
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
        data_in = validate_fit_data(
            self, X, y, sensitive_features, sample_weight, accept_sparse=True
        )
        self.classes_, y01 = encode_binary_target(type(self).__name__, data_in.y)
        X = as_csr_or_dense(data_in.X)
        result = fit_partial(
            Settings.of(self),
            X,
            y01,
            data_in.groups,
            data_in.sample_weight,
            len(data_in.group_labels),
            name=type(self).__name__,
            progress=self._progress_hook(),
        )
        d = X.shape[1]
        self._set_linear_parameters(result.params[: 1 + d])
        self.thresholds_ = result.params[1 + d :].copy()
        self.grid_ = result.grid
        self.interval_ = result.interval
        self.groups_ = data_in.group_labels
        small = np.zeros(len(self.groups_), bool) if result.small is None else result.small
        self.small_groups_ = self.groups_[small]
        self.objective_ = result.objective
        self.constraint_violation_ = result.constraint_violation
        self.train_unfairness_ = result.train_unfairness
        self.effective_tolerance_ = result.effective_tolerance
        self.tightening_ = result.tightening
        self.schedule_ = result.schedule
        store_result(self, n_iter=result.n_iter, history=result.history)
        self._warn(result, data_in.groups)
        if len(self.groups_) > 1:
            self._warn_constant(X, y01, data_in)
        self._log_fit(result)
        return self

    def _progress_hook(self):
        """``progress(step, total, unit)`` of :func:`fit_partial`: moves the progress line
        of :func:`fairest.utils._reporting.show_progress` active around this fit (the
        compiled loops call it through ``jax.debug.callback``)."""
        return callback_in_fit_context(
            lambda step, total, unit: report_progress(self, step, total, unit=unit)
        )

    def _warn_constant(self, X, y01, data_in):
        """``FairnessWarning`` when the returned classifier is (nearly) constant, with
        the achieved accuracy and selection rates per group and the two groups between
        which the model without constraints is least fair (those the constraint has to
        bring together)."""
        weight, codes, labels = data_in.sample_weight, data_in.groups, self.groups_
        threshold = float(self.threshold)
        scores = X @ self.coef_.ravel() + self.intercept_[0]  # X validated: no name check
        pred = (scores > threshold).astype(np.float64)
        if not near_constant(pred, y01, weight):
            return
        positive = plain_label(self.classes_[1])
        shown = prediction_figures(pred, y01, codes, weight, labels, positive)
        free = (unconstrained_scores(X, y01, weight, float(self.alpha)) > threshold) * weight
        totals = np.bincount(codes, weights=weight, minlength=len(labels))
        rates = np.bincount(codes, weights=free, minlength=len(labels)) / totals
        low, high = np.argmin(rates), np.argmax(rates)
        warnings.warn(
            f"{type(self).__name__}: the returned model predicts one class nearly "
            f"everywhere ({shown}). A constant model is trivially fair, and the "
            f"{self.metric} <= {float(self.tolerance):g} constraint on interval "
            f"{self.interval_} over {len(labels)} groups leaves little else: the model "
            f"without it predicts {positive!r} for {rates[low]:.3f} of group "
            f"{plain_label(labels[low])!r} (weight {totals[low]:.4g}) and {rates[high]:.3f} "
            f"of group {plain_label(labels[high])!r} (weight {totals[high]:.4g}). Raise "
            "tolerance, widen the interval, or merge small groups.",
            FairnessWarning,
            stacklevel=3,
        )

    def _warn(self, result, codes):
        """Convergence and fairness warnings of a fit."""
        K, T = result.schedule["max_iter"], result.schedule["inner_max_iter"]
        eps = result.schedule["inner_tol"]
        if result.n_capped:
            warnings.warn(
                f"the ALM inner solver stopped at inner_max_iter={T} on {result.n_capped} "
                f"of {K} subproblems; raise inner_max_iter, or set alpha > 0 or "
                "proximal_strength > 0 when the loss has no minimiser (e.g. a group whose "
                "labels are separable).",
                ConvergenceWarning,
                stacklevel=3,
            )
        # the surrogate is internal to a tightening solve whose model meets the exact
        # metric, and to solver="smooth_alm" (stalled runs are judged by the exact
        # metric; a miss gets the FairnessWarning below, which names max_iter too)
        judged = result.train_unfairness if result.small is None else result.judged_unfairness
        met = judged <= float(self.tolerance)
        smooth = self.solver == "smooth_alm" and self.schedule == "practical"
        internal = smooth or (met and result.effective_tolerance < float(self.tolerance))
        if (result.constraint_violation > eps and not internal) or result.stuck:
            warnings.warn(
                f"the returned model violates a surrogate constraint by "
                f"{result.constraint_violation:.3g} (> inner_tol={eps:.3g}); the problem "
                "may be infeasible or need more iterations.",
                ConvergenceWarning,
                stacklevel=3,
            )
        kappa = float(self.tolerance)
        among = ""
        if result.small is not None:
            message = small_groups_message(
                type(self).__name__,
                self.metric,
                kappa,
                result.interval,
                self.groups_,
                codes,
                result.floors,
                result.small,
                result.train_unfairness,
                result.judged_unfairness,
            )
            warnings.warn(message, FairnessWarning, stacklevel=3)
            among = " among the groups large enough for it"
        if judged > kappa:  # (False for NaN: not measurable)
            warnings.warn(
                f"the exact training {self.metric}{among} of the returned model is "
                f"{judged:.4g} > tolerance={kappa:.4g} after "
                f"{result.n_solves} surrogate solves (internal tolerance down to "
                f"{result.min_tolerance:.3g}); the fairest model found is "
                "returned. Raise tolerance, max_iter or n_grid, or widen the interval.",
                FairnessWarning,
                stacklevel=3,
            )

    def _log_fit(self, result):
        """``verbose``: a line per outer iteration (2), then the summary (1)."""
        history, K = result.history, result.schedule["max_iter"]
        T, eps = result.schedule["inner_max_iter"], result.schedule["inner_tol"]
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
        feasible = result.constraint_violation <= eps and not result.stuck
        run = {
            "idca": f"idca, {K} outer iterations",
            "smooth_alm": f"smooth_alm, at most {K} augmented-Lagrangian rounds",
            "ssg_direct": f"ssg_direct, {K * T} iterations",
        }[Settings.of(self).solver_run()]
        if self.solver != "ssg_direct" and self.n_iter_ < K:
            run += f" (iterate {self.n_iter_} returned)"
        log_fit(
            self,
            "%s: objective %.6f, max violation %.3e (%s inner_tol=%.3g); exact "
            "train unfairness %.4g (tolerance %.4g, %d surrogate solves)",
            run,
            result.objective,
            result.constraint_violation,
            "within" if feasible else "NOT within",
            eps,
            self.train_unfairness_,
            float(self.tolerance),
            self.tightening_["objective"].size,
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = True
        return tags
