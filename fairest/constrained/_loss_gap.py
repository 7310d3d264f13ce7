"""Loss-gap constrained classifiers (paper B; constrained spec sections 3 and 4.2).

``min_theta L(theta)  s.t.  +-(L_g(theta) - L_h(theta)) <= tolerance`` for pairs of groups,
solved by one of the stochastic approximation methods benchmarked by Kliachkin et al.:
SSL-ALM, ALM, the stochastic switching subgradient method (SSw), Stochastic Ghost, plus the
unconstrained SGD and fairness-penalised SGD baselines.
"""

from __future__ import annotations

from numbers import Integral, Real

import jax
import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from fairest._kernels._losses import cross_entropy_host
from fairest.constrained import _defaults
from fairest.constrained._common import (
    MLPClassifierMixin,
    host_layers,
    validate_constrained_fit,
)
from fairest.constrained._engine import SOLVERS, numpy_forward, solve, spawn_rngs
from fairest.constrained._feasibility import (
    near_constant_figures,
    restore_feasibility,
    warn_fit,
    weak_accuracy_figures,
)
from fairest.constrained._gaps import (  # noqa: F401 (constraint_matrix: a public helper)
    LossGapConstraints,
    constraint_matrix,
    loss_gap_constraints,
    unscale_history,
)
from fairest.constrained._loss_gap_fit import (
    FitSetup,
    build_setup,
    constraints_of,
    host_ravel,
    partial_fit_chunk,
    resolve_settings,
)
from fairest.constrained._presets import (
    ALIASES,
    SOLVER_NAMES,
    UNCONSTRAINED,
    resolve_n_epochs,
)
from fairest.utils._degenerate import plain_label
from fairest.utils._linear import score_codes
from fairest.utils._reporting import log_fit, store_result, wants_progress

__all__ = [
    "LossGapConstrainedClassifier",
]


class LossGapConstrainedClassifier(MLPClassifierMixin, BaseEstimator):
    """Classifier trained under bounds on the differences of group losses.

    Solves ``min_theta L(theta)`` subject to ``-tolerance <= L_g(theta) - L_h(theta) <=
    tolerance`` for every pair of groups (``constraint_pairs="all"``; two inequality
    constraints per pair) or for every group against the mean group loss (``"vs_mean"``),
    where ``L`` is the mean cross-entropy of a small MLP (or a linear model for
    ``hidden_layer_sizes=()``) and ``L_g`` the mean over group g (means weighted by
    ``sample_weight`` when given). Constraint estimates use group-balanced draws of
    ``constraint_batch_size`` rows per group. Prediction is group-blind.

    Parameters
    ----------
    hidden_layer_sizes : tuple of int, default=(64, 32)
        ReLU hidden layers; ``()`` is logistic regression. PyTorch's default
        initialisation ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``.
    solver : {"ssl-alm", "alm", "ssw", "ghost", "sgd", "penalty"}, default="ssl-alm"
        ``"ssl-alm"`` stochastic smoothed linearised augmented Lagrangian, ``"alm"`` the
        same with no proximal term (``proximal_strength=0``), ``"ssw"`` stochastic
        switching subgradient, ``"ghost"`` Stochastic Ghost (SQP with unbiased multilevel
        Monte Carlo directions), ``"sgd"`` unconstrained ERM, ``"penalty"`` SGD on
        ``loss + fairness_weight * P`` with the fairret accuracy-parity penalty.
        ``"ssl_alm"`` and ``"penalty_sgd"`` are accepted as aliases.
    tolerance : float, default=0.005
        Bound ``delta`` on the loss gaps (differences of mean log losses, in nats) that
        the solver targets. The solvers are stochastic: what is promised is the
        measurement, ``train_unfairness_``, the exact (weighted) train value of the
        returned model, with ``is_feasible_`` saying whether it is within ``tolerance``
        (up to ``1e-3``); a fit where it is not warns (``FairnessWarning``, with the
        achieved gap and the groups that set it), and ``verbose=1`` logs both. The final
        feasibility phase (``feasibility_steps``) brings a near miss within the
        tolerance. Groups of a few hundred rows or fewer have loss means too noisy for a
        train tolerance to hold on new data (see the user guide).
    metric : {"loss_parity", "loss_equal_opportunity", "loss_equalized_odds"}, \
default="loss_parity"
        Loss gaps on all rows, on rows with ``y = 1``, or the sum over both labels of the
        absolute gaps (4 linear inequalities per pair).
    constraint_pairs : {"all", "vs_mean"}, default="all"
        Pairs of groups compared (identical for two groups up to naming).
    batch_size : int, "auto" or None, default="auto"
        Objective minibatch size; ``"auto"`` is 32 (preset ``"default"``), or 8 (16 for
        ``"ssw"``) for the ``"paper"`` and ``"release"`` presets; ``None`` is full batch.
    constraint_batch_size : int or None, default=8
        Rows per group (cell) in every constraint draw; ``None`` uses every row.
    constraint_sampler : {"reshuffle", "replay"}, default="reshuffle"
        Group streams reshuffle when exhausted, or replay their first pass (released code).
    n_epochs : float, "auto" or None, default="auto"
        Epochs of the objective sampler (ignored by ``"ghost"``, which counts
        iterations). ``"auto"``: for preset ``"default"``, ``200_000 / n_samples`` epochs
        (10 epochs of 20,000 rows), at least 2 and at most 100; 5 (the paper's) for the
        other presets. ``None``: no epoch limit (``max_iter`` or ``max_time`` stops).
    max_iter : int or None, default=None
        Iteration cap (for ``"ghost"`` it overrides ``solver_params["max_iter"]``).
    max_time : float or None, default=None
        Wall-clock budget in seconds, checked between jitted chunks of iterations.
    solver_params : dict or None, default=None
        Overrides of the solver's defaults (see Notes).
    feasibility_steps : int or "auto", default="auto"
        Steps of the final feasibility phase: when the solver's model misses
        ``tolerance`` on the exact train loss gaps, at most this many full-batch Polyak
        steps on the squared violation of the constraints (see Notes), stopped once the
        largest gap is within the tolerance. ``"auto"`` is 50 for preset ``"default"``
        and 0 (none) for ``"paper"`` and ``"release"``; the baselines ``"sgd"`` and
        ``"penalty"`` never take them. ``n_feasibility_steps_`` records the steps taken.
    preset : {"default", "paper", "release"}, default="default"
        Settings of the parameters left at ``"auto"`` and of the solver's step sizes.
        ``"default"``: settings that mitigate on practitioners' data (batches of 32, the
        epochs of ``n_epochs="auto"``, SSL-ALM / ALM ``learning_rate=0.05`` and
        SSL-ALM / ALM / SSw ``constraint_draw="shared"``, SGD ``learning_rate=0.05``,
        the final feasibility phase). ``"paper"``: the benchmark of Kliachkin et al.
        (batches of 8, 5 epochs, the paper's step sizes, no feasibility phase; with
        the default MLP (64, 32) and ``tolerance=0.005`` its whole configuration).
        ``"release"``: the paper's with the step sizes of the authors' released
        configuration (see Notes).
    dtype : {"float32", "float64"}, default="float32"
        Computation precision (float64 is scoped to the fit).
    random_state : int, Generator or None, default=None
        Seeds the initialisation, the samplers and the solver's own randomness.
    verbose : int, default=0
        Logging of the fit (:mod:`logging` at INFO, on a child of the ``fairest``
        logger): 1 a one-line summary after the fit, 2 also a line after every jitted
        chunk of iterations (every 100 iterations for ``"ghost"``).
    record_history : bool or int, default=False
        Store ``history_``: ``True`` records every iteration, an int ``k`` every
        ``k``-th. Off, the per-iteration values never leave the device.
    eval_every : int or None, default=None
        Also record the full-training-set objective and constraints in ``history_``
        every ``eval_every`` iterations; needs ``record_history`` (``ValueError``
        otherwise).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    params_ : list of (ndarray, ndarray)
        ``(W, b)`` of every layer, ``W`` of shape ``(fan_in, fan_out)``.
    coef_ : ndarray of shape (n_outputs, n_features)
        Linear models only.
    intercept_ : ndarray of shape (n_outputs,)
        Linear models only.
    groups_ : ndarray of shape (n_groups,)
    constraint_names_ : list of str
    constraint_values_ : ndarray of shape (n_constraints,)
        Full-training-set ``C(theta)`` of the returned model (``<= 0`` is feasible).
    group_losses_ : ndarray of shape (n_groups,)
        Training mean loss of every group (weighted by ``sample_weight``).
    loss_gaps_ : ndarray of shape (n_groups, n_groups)
        ``L_g - L_h`` on the training set.
    is_feasible_ : bool
        ``all(constraint_values_ <= 1e-3)``.
    train_unfairness_ : float
        The exact train value of ``metric`` for the returned model, ``max(A L) =
        max(constraint_values_) + tolerance``: the largest loss gap over the compared pairs
        (for ``"loss_equalized_odds"`` the largest sum over both labels), weighted by
        ``sample_weight``; compare it with ``tolerance``.
    multipliers_ : ndarray of shape (n_constraints,) or None
        Dual variables ``y`` of SSL-ALM / ALM (not sign-constrained), for the constraints
        ``C(theta) <= 0`` (see ``constraint_scale_``); ``None`` otherwise.
    slacks_ : ndarray of shape (n_constraints,) or None
        Slack variables of SSL-ALM / ALM, in the units of ``C``.
    constraint_scale_ : float
        Factor ``a`` of the equivalent constraints ``a C(theta) <= 0`` the solver ran on:
        ``sqrt(2 / n_groups)`` for SSL-ALM / ALM with ``constraint_pairs="all"`` and more
        than two groups, 1 otherwise (see Notes).
    step_size_factor_ : float
        Factor applied to the step sizes of ``solver_params`` by the divergence guard:
        1.0 unless the iterates became non-finite and a refit with smaller steps
        succeeded (see Notes).
    history_ : dict of str to ndarray
        Only with ``record_history``: one value per recorded iteration under ``iter``,
        ``epoch``, ``time``, ``n_samples``, ``objective``, ``c_<name>`` (the iteration's
        constraint estimates), ``step_size`` and the solver's own (``lambda_<name>``,
        ``slack_<name>`` for SSL-ALM / ALM; ``step_type``, ``constraint_tol`` for SSw;
        ``kappa``, ``N_geom`` for Ghost; ``full_objective``, ``full_c_<name>`` with
        ``eval_every``).
    n_iter_ : int
        Iterations of the solver (the final feasibility phase not included).
    n_epochs_done_ : float
    n_feasibility_steps_ : int
        Steps taken by the final feasibility phase (0 when the solver's model was within
        the tolerance, or without the phase).
    step_counts_ : dict or None
        SSw: numbers of objective and constraint steps.
    n_qp_failures_ : int or None
        Ghost: subproblems that no backend solved (direction set to 0).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Notes
    -----
    ``solver_params`` keys (defaults of ``preset="paper"``; spec symbols in brackets):

    - ``"ssl-alm"``: ``learning_rate=0.01`` (primal step [tau]),
      ``dual_learning_rate=0.05`` (multiplier step [eta]), ``penalty_strength=1``
      (augmented Lagrangian penalty [rho]), ``proximal_strength=2`` (weight of the
      proximal term ``||u - z||^2 / 2`` [mu]), ``anchor_rate=0.5`` (rate at which the
      proximal anchor ``z`` moves to the iterate, ``z += anchor_rate (u - z)`` [beta]),
      ``dual_radius=10`` (the multipliers are reset to 0 when their norm reaches it
      [M_y]), ``slack_init="zero"`` (or ``"feasible"``), ``final_full_step=True`` (a last
      primal step on the full data), ``constraint_draw="independent"``.
    - ``"alm"``: the same with ``proximal_strength=0``.
    - ``"ssw"``: ``learning_rate=0.5`` (objective step [eta^f]),
      ``constraint_learning_rate=0.05`` (constraint step [eta^c]),
      ``learning_rate_rule="const"`` (or ``"dimin"``: divided by the square root of the
      number of objective steps), ``constraint_learning_rate_rule="const"`` (or
      ``"dimin"``, or ``"adaptive"``: Polyak's step), ``constraint_tol=1e-4`` (a
      constraint step is taken when the estimated largest constraint reaches it
      [epsilon_0]), ``constraint_tol_decay=0.97`` and ``constraint_tol_decay_start=500``
      (it is multiplied by the decay every iteration from that in-epoch index on),
      ``reset_each_epoch=True`` (the counters restart every epoch), ``output="last"``
      (or ``"random"``: an iterate drawn with probability proportional to its step),
      ``output_start=0`` (first iteration eligible for the random output [k0]),
      ``constraint_draw="independent"``.
    - ``"ghost"``: ``mlmc_probability=0.4`` (parameter of the geometric law of the
      multilevel Monte Carlo level, ``P(N = j) = (1 - p) ^ j p`` [p0]),
      ``learning_rate=0.05`` (first step size [gamma_0]),
      ``learning_rate_decay_rate=0.05`` (``"dimin"``: ``gamma_k = gamma_(k-1) (1 - rate
      gamma_(k-1))``; ``"inv_iter"``: ``gamma_k = learning_rate / (k + 1) ^ rate``
      [zeta_gamma]), ``learning_rate_rule="dimin"``, ``relaxation_weight=0.5`` (weight
      of the LP value ``t*`` in the constraint relaxation ``kappa`` [lambda_kappa]),
      ``relaxation_radius=0.8`` (box of the LP's direction [rho_kappa]),
      ``proximal_strength=1`` (weight of ``||d||^2 / 2`` in the direction subproblem
      [tau]), ``trust_radius=10`` (box ``||d||_inf <= trust_radius`` of the direction
      [beta]), ``max_iter=1000``, ``sampling="mlmc"`` (or ``"full"``: exact directions),
      ``qp_backend="cvxpy"`` (or ``"dual"``).
    - ``"penalty"``: ``learning_rate=0.05``, ``penalty="accuracy_parity_l1"``,
      ``fairness_weight=0.5``, ``balanced_batches=True`` (objective batches with equal
      rows per group).
    - ``"sgd"``: ``learning_rate=0.005``.

    ``preset="release"`` sets SSw ``learning_rate=0.2, constraint_learning_rate=0.02,
    constraint_tol_decay_start=800`` and Ghost ``learning_rate=0.02,
    learning_rate_decay_rate=0.001, relaxation_weight=0.8, relaxation_radius=0.5``.
    ``preset="default"`` sets SSL-ALM and ALM ``learning_rate=0.05,
    constraint_draw="shared"``, SSw ``constraint_draw="shared"`` and SGD
    ``learning_rate=0.05``, with batches of 32 (``batch_size="auto"``).

    Final feasibility phase (``feasibility_steps``; the constrained solvers): when the
    solver's model has a train loss gap above ``tolerance`` (exact, full data), at most
    ``feasibility_steps`` full-batch Polyak steps on the squared violation ``V(theta) =
    1/2 ||max(0, A L(theta) - 0.9 tolerance)||^2``, ``theta <- theta - (2 V / ||grad
    V||^2) grad V`` (the step that zeroes the linearised violation of the active
    constraints), stopped once the largest gap is within ``0.95 tolerance``; the
    iterate with the smallest largest gap is kept. From the solvers' end points it takes
    a few steps and little accuracy (``benchmarks/results/constrained_defaults.md``).
    A model still outside the tolerance warns (``FairnessWarning``), as does a model that
    predicts one class for all but 1 % of the (weighted) training rows while the labels
    are less one-sided.

    ``sample_weight`` multiplies every row's loss in the objective and in its group's
    (cell's) loss of the constraints. The samplers stay uniform: a drawn row's loss is
    scaled by its weight divided by the mean weight of the rows it was drawn from (all
    rows for objective batches, its group or cell for constraint draws; its group for
    the group-balanced batches of ``"penalty"``), so minibatch estimates are unbiased
    for the weighted means, and full-batch ones are exact. Unit weights run the
    unweighted computation unchanged.

    ``constraint_draw`` (SSL-ALM, ALM, SSw): ``"independent"`` is the paper's algorithm,
    which uses two independent constraint draws in an iteration: SSL-ALM evaluates the
    penalty value ``c(x; zeta2)`` on a draw independent of the Jacobian's ``zeta1`` (an
    unbiased gradient of the proximal augmented Lagrangian), SSw takes its constraint
    step on a draw independent of the one that triggered it. ``"shared"`` (a fairest
    option; humancompatible-train 0.4 does the same) reuses the first draw: one
    constraint draw per iteration. For SSL-ALM the step is then biased (its penalty part
    is the gradient of ``penalty_strength/2 ||h(x; zeta1)||^2``, which in expectation
    adds the variance of the draw's estimate) but the loss gaps of its iterates fluctuate
    less: on the paper's ACSIncome task its models violate the loss-gap bound several
    times less than with the paper's estimator after the same number of epochs (see
    ``benchmarks/results/constrained_speed_epochs.md``).

    Many groups (SSL-ALM, ALM): ``constraint_pairs="all"`` gives ``G (G - 1)``
    constraints, and as a map of the group losses their matrix ``A`` has ``A^T A`` equal
    to twice the Laplacian of the complete graph on the ``G`` groups (four times for
    ``"loss_equalized_odds"``), of spectral norm ``2 G``. The augmented-Lagrangian step
    sums its penalty and multiplier terms ``J^T (y + penalty_strength (C + s))`` over all
    constraints, so at a fixed iterate it grows faster than ``G`` (12 rows per group, 5
    features, the default MLP: norm 0.03 for 2 groups, 1.5 for 30, 18 for 100) and the
    fixed primal step diverged (NaN parameters from about 70 groups with the defaults).
    These two solvers therefore run on the equivalent constraints
    ``sqrt(2 / G) C(theta) <= 0`` (the same feasible set), whose matrix has at every
    ``G`` the spectral norm it has for two groups: in the units of ``C``, the penalty
    and the multipliers' step shrink by ``2 / G``. Two groups, ``"vs_mean"`` (whose
    matrix norm does not grow with ``G``) and the other solvers (SSw steps along one
    constraint, Ghost solves a subproblem) run unchanged. ``constraint_scale_`` is the
    factor; ``multipliers_``, ``slacks_`` and ``history_`` are reported for ``C`` itself.

    Divergence guard: every solver checks on device, every 16 iterations at most, that
    its parameters are finite (one ``isfinite`` reduction, no host synchronisation). When
    they are not (typically features of very different scales, or a step size too
    large), the fit is run again from the same initialisation and random streams with
    the step sizes of ``solver_params`` (``learning_rate`` and the multipliers' or
    constraint step) halved, at most twice, with a ``ConvergenceWarning``
    (``step_size_factor_`` records the factor); when the last refit diverges too,
    ``fit`` raises a ``ValueError`` naming the iteration and the remedy (scale the
    features, e.g. with ``StandardScaler``, or lower the step sizes). A non-finite model
    is never stored.

    References
    ----------
    .. [1] Kliachkin, Lepšová, Bareilles, Marecek. "Benchmarking Stochastic Approximation
       Algorithms for Fairness-Constrained Training of Deep Neural Networks", 2025.
    .. [2] Huang, Lin. "Oracle complexity of single-loop switching subgradient methods for
       non-smooth weakly convex functional constrained optimization", 2023.
    .. [3] Facchinei, Kungurtsev. "Stochastic approximation for expectation objective and
       expectation inequality-constrained nonconvex optimization", 2023.
    """

    __metadata_request__fit = {"sensitive_features": True}
    _fairness_path = ("tolerance", "vmap")  # fairness_path's knob and strategy
    __metadata_request__partial_fit = {"sensitive_features": True}

    _parameter_constraints: dict = {
        "hidden_layer_sizes": ["array-like"],
        "solver": [StrOptions(set(SOLVER_NAMES) | set(ALIASES))],
        "tolerance": [Interval(Real, 0, None, closed="left")],
        "metric": [StrOptions({"loss_parity", "loss_equal_opportunity", "loss_equalized_odds"})],
        "constraint_pairs": [StrOptions({"all", "vs_mean"})],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"}), None],
        "constraint_batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "constraint_sampler": [StrOptions({"reshuffle", "replay"})],
        "n_epochs": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"}), None],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "max_time": [Interval(Real, 0, None, closed="neither"), None],
        "solver_params": [dict, None],
        "feasibility_steps": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "preset": [StrOptions({"default", "paper", "release"})],
        "dtype": [StrOptions({"float32", "float64"})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "record_history": ["boolean", Interval(Integral, 1, None, closed="left")],
        "eval_every": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        hidden_layer_sizes=_defaults.HIDDEN_LAYER_SIZES,
        *,
        solver="ssl-alm",
        tolerance=_defaults.TOLERANCE,
        metric="loss_parity",
        constraint_pairs="all",
        batch_size="auto",
        constraint_batch_size=_defaults.CONSTRAINT_BATCH_SIZE,
        constraint_sampler="reshuffle",
        n_epochs="auto",
        max_iter=None,
        max_time=None,
        solver_params=None,
        feasibility_steps="auto",
        preset="default",
        dtype="float32",
        random_state=None,
        verbose=0,
        record_history=False,
        eval_every=None,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.solver = solver
        self.tolerance = tolerance
        self.metric = metric
        self.constraint_pairs = constraint_pairs
        self.batch_size = batch_size
        self.constraint_batch_size = constraint_batch_size
        self.constraint_sampler = constraint_sampler
        self.n_epochs = n_epochs
        self.max_iter = max_iter
        self.max_time = max_time
        self.solver_params = solver_params
        self.feasibility_steps = feasibility_steps
        self.preset = preset
        self.dtype = dtype
        self.random_state = random_state
        self.verbose = verbose
        self.record_history = record_history
        self.eval_every = eval_every

    def _solver_name(self):
        return ALIASES.get(self.solver, self.solver)

    def _run_options(self, gaps, batch_size, dtype, sample_weight) -> dict:
        """The solver-loop options ``fit`` and ``partial_fit`` share."""
        return {
            "aux": gaps.aux(self.tolerance, dtype),
            "batch_size": batch_size,
            "constraint_batch_size": self.constraint_batch_size,
            "constraint_sampler": self.constraint_sampler,
            "max_iter": self.max_iter,
            "max_time": self.max_time,
            "record_history": self.record_history,
            "eval_every": self.eval_every,
            "constraint_names": gaps.names,
            "dtype": dtype,
            "sample_weight": sample_weight,
        }

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit the constrained model.

        Parameters
        ----------
        X : {array-like, sparse matrix} or DataFrame of shape (n_samples, n_features)
            Training data. Columns named by ``sensitive_features`` are removed from the
            features.
        y : array-like of shape (n_samples,)
            Target labels; the metrics other than ``"loss_parity"`` need two classes.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), str, \
list of str or None, default=None
            Group membership, or column name(s) of the DataFrame ``X`` (removed from the
            features; a str or list of str names columns only when every entry is a
            distinct column of ``X``, otherwise a list is read as group labels). ``None``
            means one group (every constraint is ``-tolerance``; the fit is the solver's
            plain ERM), with a warning.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows' losses in the objective and in their
            groups' losses of the constraints (see Notes); ``None`` is unit weights.

        Returns
        -------
        self : LossGapConstrainedClassifier
            The fitted estimator.
        """
        setup = self._fit_setup(X, y, sensitive_features, sample_weight)

        def progress(n_iter, n_epochs):
            log_fit(
                self,
                "iteration %d, epoch %.2f",
                n_iter,
                n_epochs,
                level=2,
                progress=(n_epochs, setup.n_epochs, "epoch"),  # the bar of show_progress
            )

        args, kwargs = setup.solver_args()
        with jax.enable_x64(self.dtype == "float64"):
            result, factor = solve(
                *args,
                **kwargs,
                owner=type(self).__name__,
                n_epochs=None if SOLVERS[setup.solver].host else setup.n_epochs,
                progress=progress if wants_progress(self) else None,
                **self._run_options(setup.gaps, setup.batch_size, setup.dtype, setup.weight),
            )
        return self._fit_finish(setup, result, factor)

    def _fit_setup(self, X, y, sensitive_features, sample_weight) -> FitSetup:
        """Everything :meth:`fit` prepares before the solver runs (validation, constraints,
        model, initial parameters, random streams); sets the input attributes
        (``n_features_in_``, ``sensitive_columns_``...)."""
        settings = resolve_settings(self)
        X, y_codes, classes, groups, labels, sample_weight = validate_constrained_fit(
            self, X, y, sensitive_features, sample_weight
        )
        self.__dict__.pop("_stream_state", None)  # a fit starts a new stream
        gaps = constraints_of(
            self, settings[0], labels, groups, y_codes, classes.size, sample_weight
        )
        unit = bool(np.all(sample_weight == 1.0))
        setup = build_setup(
            self,
            settings,
            gaps,
            X,
            y_codes,
            classes,
            groups,
            labels,
            None if unit else sample_weight,
        )
        rngs = spawn_rngs(self.random_state)
        return setup._replace(
            rngs=rngs,
            x0=setup.model.init_flat(rngs[0], setup.dtype),  # on the host: no device program
            n_epochs=resolve_n_epochs(self.n_epochs, self.preset, X.shape[0]),
        )

    def _fit_finish(self, setup: FitSetup, result, factor: float, logits=None, design=None):
        """Store the fitted attributes of the solver's ``result`` (what :meth:`fit` does
        after the solver ran with its step sizes times ``factor``), after the final
        feasibility phase when the model misses the tolerance, and warn; ``logits``: the
        model's training logits when the caller computed them already; ``design()``:
        the training ``X`` when ``setup.X`` is ``None`` (read only by that phase)."""
        self.step_size_factor_ = factor
        self.classes_ = setup.classes
        self.groups_ = setup.labels
        logits = self._finish_model(setup, result.x, logits, design)
        self._store_run(result, setup.gaps, setup.hidden)
        self.n_epochs_done_ = result.n_epochs
        self._warn_fit(setup, logits)
        history = result.history
        store_result(
            self,
            n_iter=result.n_iter,
            history=None if history is None else unscale_history(history, setup.gaps.scale),
            message="solver=%s iterations=%d feasibility steps=%d train %s %.4g "
            "(tolerance %g) feasible=%s",
            args=(
                setup.solver,
                result.n_iter,
                self.n_feasibility_steps_,
                self.metric,
                self.train_unfairness_,
                self.tolerance,
                self.is_feasible_,
            ),
        )
        return self

    def _finish_model(self, setup: FitSetup, x, logits=None, design=None):
        """``params_`` and the training statistics of the solver's parameters ``x``,
        after the final feasibility phase (:func:`~fairest.constrained._feasibility.
        restore_feasibility`) when they miss the tolerance on the exact train values;
        returns the training logits of ``params_``."""
        self.params_ = host_layers(setup.model, x, setup.dtype)
        X = setup.X
        logits = self._store_statistics(
            X, setup.y_codes, setup.groups, setup.gaps, setup.weight, logits
        )
        self.n_feasibility_steps_ = 0
        if setup.feasibility_steps and self.train_unfairness_ > self.tolerance:
            X = design() if X is None else X
            with jax.enable_x64(self.dtype == "float64"):
                x, self.n_feasibility_steps_ = restore_feasibility(
                    setup.problem,
                    host_ravel(self.params_, setup.dtype),
                    X,
                    setup.y_codes,
                    setup.groups,
                    setup.gaps,
                    self.tolerance,
                    sample_weight=setup.weight,
                    dtype=setup.dtype,
                    max_steps=setup.feasibility_steps,
                )
            self.params_ = host_layers(setup.model, x, setup.dtype)
            logits = self._store_statistics(
                X, setup.y_codes, setup.groups, setup.gaps, setup.weight
            )
        return logits

    def _warn_fit(self, setup: FitSetup, logits) -> None:
        """``FairnessWarning`` s of a fit (:func:`~fairest.constrained._feasibility.
        warn_fit`): a missed tolerance (not for the baselines, which do not target it)
        and a (nearly) one-class model."""
        rows = np.bincount(setup.groups, minlength=setup.labels.size)
        missed = None
        if setup.solver not in UNCONSTRAINED and not self.is_feasible_:
            worst = int(np.argmax(self.constraint_values_))
            shown = ", ".join(
                f"{plain_label(label)!r}: {loss:.4f} ({n} rows)"
                for label, loss, n in list(zip(setup.labels, self.group_losses_, rows))[:12]
            )
            more = f", ... ({rows.size - 12} more)" if rows.size > 12 else ""
            missed = (
                f"the returned model's train {self.metric} is {self.train_unfairness_:.4g}, "
                f"above tolerance={self.tolerance:g} (largest constraint "
                f"{self.constraint_names_[worst]}; group mean losses: {shown}{more}; "
                f"{self.n_epochs_done_:.3g} epochs, {self.n_feasibility_steps_} of "
                f"{setup.feasibility_steps} feasibility steps)"
            )
        pred = score_codes(logits)
        labels = [plain_label(label) for label in setup.labels]
        classes = [plain_label(label) for label in setup.classes]
        constant = near_constant_figures(
            pred, setup.y_codes, setup.groups, setup.weight, labels, classes
        )
        phase = (
            "raise feasibility_steps"
            if self.preset == "default"
            else "use preset='default' (its final feasibility phase brings near misses "
            "within the tolerance) or set feasibility_steps"
        )
        advice = (
            f"raise n_epochs, {phase}, raise tolerance, or merge small groups (the "
            f"smallest has {rows.min()} rows)."
        )
        weak = None
        if setup.solver not in UNCONSTRAINED:
            weak = weak_accuracy_figures(pred, setup.y_codes, setup.weight, classes)
        warn_fit(self, missed=missed, constant=constant, advice=advice, weak=weak)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(
        self, X, y, *, sensitive_features=None, sample_weight=None, classes=None, groups=None
    ):
        """One epoch of the solver over the chunk ``(X, y)``, continuing the previous calls.

        The first call initialises the model and the random streams as :meth:`fit` does,
        so one call on the whole data gives the model of ``fit`` with ``n_epochs=1``.
        Every later call resumes the solver's whole state (parameters, multipliers,
        slacks, proximal anchors, SSw's counters and random-output reservoir) and the
        iteration counter, and draws from the same random streams, now over the new
        chunk's rows. ``n_epochs`` is not used (one call is one epoch of its chunk;
        ``max_iter`` / ``max_time`` still cap a call). SSL-ALM's ``final_full_step`` and
        the final feasibility phase (``feasibility_steps``) are taken on the chunk for
        the returned ``params_``; the next call resumes from the solver's state before
        them. A call does not warn (a stream has many small chunks): ``is_feasible_`` and
        ``train_unfairness_`` say whether the chunk's model meets the tolerance.

        Group statistics of a stream: the mean weights of the loss scales (see Notes of
        the class) are running means over every chunk seen so far, this one included;
        the constraint draws are group-balanced within each chunk, so **every chunk needs
        rows (of positive weight) of every constraint cell** (a ``ValueError`` names the
        empty cells otherwise): draw chunks large enough, or stratified. The
        training-set attributes (``constraint_values_``, ``group_losses_``,
        ``loss_gaps_``, ``is_feasible_``, ``train_unfairness_``) are measured on the last
        chunk; ``history_`` records the last call. ``solver="ghost"`` (a host loop
        counting iterations, not epochs) is refused.

        Parameters
        ----------
        X : {array-like, sparse matrix} or DataFrame of shape (n_samples, n_features)
            The chunk's rows (sensitive columns named by ``sensitive_features`` are
            removed, as in :meth:`fit`).
        y : array-like of shape (n_samples,)
            Their labels, all in ``classes``.
        sensitive_features : array-like, str, list of str or None, default=None
            Their group labels (or column names), all in the stream's vocabulary.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the chunk's rows.
        classes : array-like, default=None
            Every class label of the stream; required on the first call.
        groups : array-like, default=None
            Every group label of the stream, on the first call; default: the first
            chunk's labels (a later chunk with another label raises ``ValueError``).

        Returns
        -------
        self : LossGapConstrainedClassifier
            The estimator, updated.
        """
        return partial_fit_chunk(
            self,
            X,
            y,
            sensitive_features=sensitive_features,
            sample_weight=sample_weight,
            classes=classes,
            groups=groups,
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # large or very sparse X stays sparse (_sparse)
        return tags

    def _store_statistics(self, X, y_codes, groups, gaps, sample_weight, logits=None):
        """Training-set statistics of ``params_`` on ``(X, y_codes, groups)``, on the host
        in float64 (``sample_weight=None``: unweighted; ``logits``: ``params_``'s logits
        on ``X`` if already computed); returns the logits."""
        logits = numpy_forward(self.params_, X) if logits is None else logits
        loss = cross_entropy_host(logits, y_codes)
        cell_losses, group_losses = gaps.mean_losses(loss, groups, sample_weight)
        c_full = gaps.A @ cell_losses - self.tolerance
        self.constraint_names_ = gaps.names
        self.constraint_values_ = c_full
        self.group_losses_ = group_losses
        self.loss_gaps_ = group_losses[:, None] - group_losses[None, :]
        self.is_feasible_ = bool(np.all(c_full <= _defaults.FEASIBILITY_TOL))
        self.train_unfairness_ = float(c_full.max() + self.tolerance) if c_full.size else 0.0
        return logits

    def _store_run(self, result, gaps, hidden):
        """The solver's own outcome: multipliers, slacks, counts, linear coef_."""
        # multipliers and slacks of C(x) <= 0 itself (the solver's are of scale * C)
        multipliers, slacks = result.extras.get("multipliers"), result.extras.get("slacks")
        self.multipliers_ = None if multipliers is None else gaps.scale * multipliers
        self.slacks_ = None if slacks is None else slacks / gaps.scale
        self.constraint_scale_ = gaps.scale
        self.step_counts_ = result.extras.get("step_counts")
        self.n_qp_failures_ = result.extras.get("n_qp_failures")
        if not hidden:
            W, b = self.params_[0]
            self.coef_, self.intercept_ = W.T.copy(), b.copy()
