"""BADR estimators: bilevel adaptive reweighting of group losses (badr spec sections 1-5).

``BADRClassifier`` / ``BADRRegressor`` search the group weights ``lambda`` on the simplex
whose weighted-ERM model ``theta*(lambda)`` (always Pareto-efficient for the regularised
group losses) has the smallest train unfairness ``U(theta*(lambda))``. The final model is
an ordinary weighted refit at ``group_weights_``.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import jax
import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from fairest._solvers._lbfgs import single_threaded_blas
from fairest.reweighting import _defaults
from fairest.reweighting._badr_metrics import (
    CLASSIFICATION_METRICS,
    REGRESSION_METRICS,
    RENAMED,
)
from fairest.reweighting._common import build_metric_spec, make_problem
from fairest.reweighting._solve import SOLVERS, BADRSettings, solve_badr
from fairest.utils._degenerate import near_constant, plain_label, prediction_figures
from fairest.utils._estimator import encode_binary_target, validate_fit_data
from fairest.utils._linear import LinearClassifierMixin, LinearRegressorMixin, positive_scores
from fairest.utils._reporting import (
    callback_in_fit_context,
    log_fit,
    store_result,
    wants_progress,
)
from fairest.utils._validation import FairnessWarning

__all__ = ["BADRClassifier", "BADRRegressor"]


class _BADRBase(BaseEstimator):
    """Shared fit of the BADR classifier and regressor."""

    __metadata_request__fit = {"sensitive_features": True}

    _parameter_constraints: dict = {
        "metric": [
            StrOptions(
                {*CLASSIFICATION_METRICS, *REGRESSION_METRICS, *RENAMED}, deprecated=set(RENAMED)
            ),
            callable,
        ],
        "metric_params": [dict, None],
        "max_weight_ratio": [Interval(Real, 1, None, closed="left"), None],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "penalize_intercept": ["boolean", None],
        "solver": [StrOptions(set(SOLVERS))],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="neither"), None],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "learning_rate": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "dual_learning_rate": [Interval(Real, 0, None, closed="neither")],
        "clip_norm": [Interval(Real, 0, None, closed="neither")],
        "check_every": [Interval(Integral, 1, None, closed="left")],
        "step_rule": [StrOptions({"log", "2/(t+2)"})],
        "gap_mode": [StrOptions({"gap", "scaled"})],
        "safeguard": ["boolean"],
        "reference_compat": ["boolean"],
        "inner_tol": [Interval(Real, 0, None, closed="neither")],
        "inner_max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "record_history": ["boolean"],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # scipy sparse X: SparseRows (_kernels._sparse), dense only where small enough that
        # a dense copy pays (_runtime.densify_pays)
        tags.input_tags.sparse = True
        return tags

    # ------------------------------------------------------------------ fit
    def _fit_badr(self, data, loss: str, y_num: np.ndarray, task: str):
        num_groups = len(data.group_labels)
        metric, temperature = build_metric_spec(
            self.metric, self.metric_params, task, loss, data.X.shape[0]
        )
        penalize = self.penalize_intercept
        if penalize is None:
            penalize = loss == "squared_hinge"  # spec section 2: liblinear's convention
        self.groups_ = data.group_labels
        # the solver's settings are the estimator's parameters of the same names
        settings = BADRSettings(**{name: getattr(self, name) for name in BADRSettings._fields})
        with jax.enable_x64(True), single_threaded_blas():  # Cholesky: see the function
            problem = make_problem(
                data,
                y_num,
                self.alpha,
                penalize,
                temperature,
                self.inner_tol,
                self.inner_max_iter,
                reference_compat=self.reference_compat,
            )
            result = solve_badr(
                loss,
                metric,
                problem,
                data.groups,
                num_groups,
                settings,
                progress=self._progress_hook() if wants_progress(self) else None,
            )
        if not result.inner_converged:
            warnings.warn(
                "The Newton solve did not reach inner_tol; increase inner_max_iter."
                if num_groups == 1
                else "The lower-level Newton solve did not reach inner_tol at the returned "
                "group weights; increase inner_max_iter.",
                ConvergenceWarning,
                stacklevel=3,
            )
        if not result.converged:
            warnings.warn(
                f"BADR solver {self.solver!r} did not converge ({result.message}); the best "
                "weights found are returned. Increase max_iter or loosen tol.",
                ConvergenceWarning,
                stacklevel=3,
            )
        if num_groups > 1:
            log_fit(
                self,
                "BADR %s: %d outer iterations, %d oracle calls, train unfairness %.6g (%s)",
                self.solver,
                result.n_iter,
                result.n_evaluations,
                result.unfairness,
                result.selected,
            )
        if task == "classification" and num_groups > 1:
            self._warn_constant(data, y_num, result)
        self._set_linear_parameters(result.theta)
        self.group_weights_ = result.group_weights
        self.n_evaluations_ = result.n_evaluations
        self.converged_ = result.converged
        self.unfairness_ = result.unfairness
        self.unfairness_exact_ = result.unfairness_exact
        self.group_losses_ = result.group_losses
        self.baseline_unfairness_ = result.baseline_unfairness
        self.selected_ = result.selected
        store_result(self, n_iter=result.n_iter, history=result.history)
        return self

    def _progress_hook(self):
        """``progress(step, total, unit)`` of :func:`solve_badr`: a level-2 log line
        (``verbose >= 2``) that also moves the line of
        :func:`fairest.utils._reporting.show_progress` around this fit (the single loops'
        compiled scan calls it through ``jax.debug.callback``)."""
        return callback_in_fit_context(
            lambda step, total, unit: log_fit(self, f"{unit} %d/%d", step, total, level=2)
        )

    def _warn_constant(self, data, y_num, result):
        """``FairnessWarning`` when the search ended at a (nearly) constant classifier
        (:func:`~fairest.reweighting._solve.steer_off_one_class_vertex`), and when the
        returned one is, with the achieved accuracy and selection rates."""
        positive = plain_label(self.classes_[1])
        labels = data.group_labels

        def figures(theta):
            theta = np.asarray(theta)
            pred = positive_scores(data.X @ theta[1:] + theta[0]).astype(np.float64)
            shown = prediction_figures(
                pred, y_num, data.groups, data.sample_weight, labels, positive
            )
            return pred, shown

        name = type(self).__name__
        steered = result.one_class_vertex
        if steered is not None:
            group = plain_label(labels[steered.group])
            weighted = (data.groups == steered.group) & (data.sample_weight > 0)
            only = plain_label(self.classes_[int(np.max(y_num[weighted]))])
            warnings.warn(
                f"{name}: every label of group {group!r} is {only!r}, so its loss is "
                "minimised by a constant model, which is trivially fair: the weight search "
                f"went toward it (weight {steered.group_weights[steered.group]:.3g} on "
                f"{group!r}, train unfairness {steered.unfairness:.4g}) and ended at a model "
                f"that predicts one class nearly everywhere ({figures(steered.theta)[1]}). "
                "The fairest safeguard baseline that gives no single-class group more than "
                f"the uniform weight and whose model is not constant, "
                f"{result.selected!r}, is returned instead (train unfairness "
                f"{result.unfairness:.4g}; {figures(result.theta)[1]}). Drop or merge "
                f"group {group!r}, or give it fixed weights with GroupWeightedClassifier.",
                FairnessWarning,
                stacklevel=4,
            )
            return
        pred, shown = figures(result.theta)
        if near_constant(pred, y_num, data.sample_weight):
            heaviest = plain_label(labels[int(np.argmax(result.group_weights))])
            warnings.warn(
                f"{name}: the returned model predicts one class nearly everywhere "
                f"({shown}): its group weights put {np.max(result.group_weights):.3g} on "
                f"group {heaviest!r}, and the smallest train unfairness the search found "
                f"({result.unfairness:.4g}) is that of this nearly constant, trivially fair "
                "model. Choose another metric, or fixed weights with GroupWeightedClassifier.",
                FairnessWarning,
                stacklevel=4,
            )


_DOC_PARAMS = """
    metric : str or callable, default="demographic_parity_deviation"
        Train unfairness ``U`` minimised over the weights (badr spec section 3), named
        after its exact function in :mod:`fairest.metrics`; the default is the largest
        deviation of a group's selection rate (classifier) or mean prediction (regressor)
        from their mean over the groups (not fairlearn's max - min difference).
        Classifier: ``"group_loss_variance"``, ``"individual_fairness"``,
        ``"demographic_parity_deviation"``, ``"disparate_mistreatment"``,
        ``"equal_opportunity_range"`` (max - min of the true positive rates),
        ``"equalized_odds_range"`` (mean of the TPR and FPR ranges). Regressor:
        ``"group_loss_variance"``, ``"individual_fairness"``,
        ``"demographic_parity_deviation"``, ``"hsic_linear"``. The previous names
        ``"group_variance"``, ``"demographic_parity"``, ``"equal_opportunity"``,
        ``"equalized_odds"`` and ``"hsic"`` still work, with a ``FutureWarning``, until the
        next release. A callable ``metric(scores, y, groups)``
        (JAX-differentiable in ``scores``; ``y`` in {0, 1} for classifiers, ``groups``
        int codes in the order of ``groups_``) returning a scalar.
    metric_params : dict, default=None
        ``temperature_sigmoid`` (default 10) and ``temperature_max`` (default 50):
        smoothing of demographic parity, equal opportunity and equalized odds, the
        temperature of the sigmoid of the scores (a soft selection) and of the
        log-sum-exp (a soft maximum over the groups); larger is closer to the exact
        metric, whose value the smooth one exceeds by up to ``log(G)/temperature_max``
        (DP) or ``2 log(G)/temperature_max`` (EO, EOdds). ``temperature`` sets both (the
        paper: 1.0, where the offset ``log G`` exceeds the deviations it ranks).
        ``encoding`` (``"index"``, default, or ``"onehot"``): group variable of disparate
        mistreatment / HSIC; ``"onehot"`` makes them invariant to the group numbering.
    max_weight_ratio : float >= 1 or None, default=5.0
        Cap on a group's weight: at most this multiple of its share of the training
        weight, ``lambda_g <= min(1, max_weight_ratio W_g / W)``. Every weighted fit then
        keeps at least ``n / max_weight_ratio`` effective rows; without the cap the
        fairest point of the simplex can be a model fitted to a group of a few dozen rows
        (on ACSPublicCoverage by race, 9 groups of 15 to 14,336 rows: test accuracy 0.62
        against a majority rate of 0.70). Where a cap binds the safeguard also evaluates
        the pooled weights (plain ERM), its other baselines are projected onto the capped
        simplex, and the search starts at the fairest of them. ``None``: the whole simplex (the
        paper).
    alpha : float, default=1e-3
        L2 regularisation strength of the model.
    penalize_intercept : bool, default=None
        Whether the intercept is penalised; ``None`` means only for
        ``loss="squared_hinge"`` (liblinear's convention, and it keeps the Hessian
        positive definite).
    solver : {"slsqp", "frank-wolfe", "trust-constr", "gd", "sgd"}, default="slsqp"
        Two-loop solvers (implicit hypergradient; SciPy SLSQP, SciPy trust-constr, or a
        jitted Frank-Wolfe) or single-loop badr-gd / badr-sgd. With two groups the
        simplex is a segment and ``"slsqp"`` runs a one-dimensional search instead
        (the safeguard's vertices bracket the minimiser, closed in on by cubic
        interpolation of ``Phi`` and its hypergradient [2]_): the same optimum in fewer
        lower-level solves; SciPy SLSQP where that search does not apply (no safeguard,
        a vertex without a minimiser).
    max_iter : int, default=None
        Outer iterations: 500 (slsqp, trust-constr), 300 (frank-wolfe), 1000 (gd, sgd).
    tol : float, default=None
        Stopping tolerance of the two-loop solvers; ``None`` means the solver's default:
        SLSQP ``ftol`` 1e-10 (on the objective divided by its starting value, so
        relative), trust-constr ``gtol`` 1e-5, Frank-Wolfe gap 1e-6 (the two-group
        search of ``"slsqp"`` stops on a weight step below 1e-7, or a promised decrease
        below 1e-4 of SLSQP's ``ftol`` at the same scale). Ignored by the
        single-loop solvers, which run ``max_iter`` iterations.
    batch_size : int, default=None
        Minibatch size ``B >= G`` of badr-sgd (``solver="sgd"``), split evenly over the
        groups; ``None`` means ``max(G, min(n, 256))``. Ignored by the other solvers.
    learning_rate : float or "auto", default=0.1
        Step size of the model parameters theta and of the adjoint v in badr-gd /
        badr-sgd; ``"auto"`` is
        ``1 / lambda_max(H)`` at the start.
    dual_learning_rate : float, default=1.0
        Step size ``gamma`` of the group weights ``lambda`` in badr-gd / badr-sgd: the
        second time-scale of the single-loop solvers.
    clip_norm : float, default=1.0
        Clipping threshold of the weight direction in badr-sgd.
    check_every : int, default=25
        Period, in iterations, at which badr-gd / badr-sgd evaluate the train unfairness
        exactly (full lower-level solve); the best weights seen at these checks are
        returned.
    step_rule : {"log", "2/(t+2)"}, default="log"
        Frank-Wolfe open-loop step.
    gap_mode : {"gap", "scaled"}, default="gap"
        Frank-Wolfe stopping test: the duality gap ``gap_t < tol`` (the paper), or the
        gap scaled by the step, ``eta_t * gap_t < tol``, as the published BADR code stops
        (spec 4.5; it stops earlier).
    safeguard : bool, default=True
        Also evaluate uniform, balanced and every one-group weighting (projected onto the
        capped simplex, with the pooled weights, where ``max_weight_ratio`` caps a group),
        and return the one with the smallest train unfairness if it beats the solver
        (spec 4.8). When a
        two-loop solver (slsqp, trust-constr, frank-wolfe) started at uniform weights ends
        no better than these baselines, it is run again from the best one other than
        uniform and then from the best one-group vertex (uniform can be stationary, e.g.
        when the groups mirror each other).
        Classifiers: a group whose labels are all one class has its loss minimised by a
        constant model, which predicts one class for everyone and so is trivially fair;
        when the search ends at such a (nearly) constant model (the rarer predicted class
        on at most 1 % of the training weight), the fairest baseline that gives no
        single-class group more than the uniform weight ``1/G`` and whose model is not
        constant is returned instead (uniform alone without the safeguard), with a
        :class:`~fairest.utils.FairnessWarning` naming the group and giving both models'
        accuracy and selection rate per group. Any (nearly) constant returned classifier
        gets such a warning.
    reference_compat : bool, default=False
        Score the unfairness as the published ``badr`` toolbox does, on ``X w`` with the
        intercept dropped (spec 3.0), both where it is optimised and where it is reported
        (``unfairness_``, ``unfairness_exact_``, ``baseline_unfairness_``); group variance
        then also drops the intercept from the group losses. For reproducing the recorded
        numbers of that toolbox; ``predict`` always uses the intercept.
    inner_tol : float, default=1e-10
        Relative tolerance of the lower-level Newton solve.
    inner_max_iter : int, default=50
        Maximum Newton steps per lower-level solve.
    random_state : int, RandomState instance or None, default=None
        Seeds badr-sgd's minibatches.
    verbose : int, default=0
        Log a summary of the fit through :mod:`logging` (logger
        ``fairest.reweighting._badr``, INFO, ``[ClassName] ...``) when at least 1.
    record_history : bool, default=False
        Store ``history_`` (per outer iteration / oracle call / check).
"""

_DOC_ATTRS = """
    group_weights_ : ndarray of shape (n_groups,)
        The chosen weights ``lambda`` (on the simplex); the model is the weighted refit there.
    groups_ : ndarray of shape (n_groups,)
        Group labels, in the order of ``group_weights_``.
    n_iter_ : int
        Outer iterations of the solver (for one group: Newton iterations of the plain fit).
    n_evaluations_ : int
        Lower-level solves (oracle calls) made from the host.
    converged_ : bool
    unfairness_ : float
        Smooth train unfairness at ``group_weights_`` (the minimised objective).
    unfairness_exact_ : float
        Exact train unfairness (hard predictions for DP / EO / EOdds).
    group_losses_ : ndarray of shape (n_groups,)
        Train mean loss of every group (no penalty).
    baseline_unfairness_ : dict
        Smooth train unfairness of the safeguard's baselines (``"uniform"``,
        ``"balanced"``, ``"group_<g>"``).
    selected_ : str
        ``solver``, or the name of the baseline (``"uniform"``, ``"balanced"``,
        ``"group_<k>"``) whose weights are returned.
    history_ : dict of ndarray
        Only with ``record_history=True``: one value per recorded outer iteration / oracle
        call / check, keyed by quantity (``"unfairness"``, ``"group_weights"``, ...).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
"""

_REFERENCES = """
    References
    ----------
    .. [1] Tanji, Vaiter, Laguel. "Fairness-informed Pareto Optimization: An Efficient
       Bilevel Framework" (BADR).
    .. [2] J. Nocedal, S. J. Wright. "Numerical Optimization", 2nd ed., Springer, 2006,
       section 3.5 (cubic interpolation, eq. 3.59).
"""


class BADRClassifier(LinearClassifierMixin, _BADRBase):
    __doc__ = (
        """Linear classifier on the Pareto front of group losses with minimal unfairness.

    BADR (bilevel adaptive rescalarisation) solves
    ``min_{lambda in simplex} U(theta*(lambda))`` where ``theta*(lambda)`` minimises
    ``sum_g lambda_g L_g(theta) + R(theta)`` (``L_g`` the mean loss of group g) and ``U`` is
    a train unfairness metric. Every ``theta*(lambda)`` is Pareto-efficient for the
    regularised group losses, so the result improves fairness without a model that some
    other model beats on every group. Prediction is group-blind.

    The defaults mitigate demographic parity on practitioners' data (many groups, some
    small): ``metric="demographic_parity_deviation"``, temperatures (10, 50) and the weight cap
    ``max_weight_ratio=5``. The paper's settings, used by the reproductions, are
    ``metric="individual_fairness", metric_params={"temperature": 1.0},
    max_weight_ratio=None``.

    Parameters
    ----------
    loss : {"logistic", "squared_hinge"}, default="logistic"
        Logistic regression or the smoothed (squared hinge) SVM."""
        + _DOC_PARAMS
        + """
    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)"""
        + _DOC_ATTRS
        + _REFERENCES
    )

    _parameter_constraints = {
        **_BADRBase._parameter_constraints,
        "loss": [StrOptions({"logistic", "squared_hinge"})],
    }

    def __init__(
        self,
        loss="logistic",
        *,
        metric="demographic_parity_deviation",
        metric_params=None,
        max_weight_ratio=_defaults.MAX_WEIGHT_RATIO,
        alpha=_defaults.ALPHA,
        penalize_intercept=None,
        solver="slsqp",
        max_iter=None,
        tol=None,
        batch_size=None,
        learning_rate=_defaults.LEARNING_RATE,
        dual_learning_rate=_defaults.DUAL_LEARNING_RATE,
        clip_norm=_defaults.CLIP_NORM,
        check_every=_defaults.CHECK_EVERY,
        step_rule="log",
        gap_mode="gap",
        safeguard=True,
        reference_compat=False,
        inner_tol=_defaults.NEWTON_TOL,
        inner_max_iter=_defaults.INNER_MAX_ITER,
        random_state=None,
        verbose=0,
        record_history=False,
    ):
        self.loss = loss
        self.metric = metric
        self.metric_params = metric_params
        self.max_weight_ratio = max_weight_ratio
        self.alpha = alpha
        self.penalize_intercept = penalize_intercept
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.dual_learning_rate = dual_learning_rate
        self.clip_norm = clip_norm
        self.check_every = check_every
        self.step_rule = step_rule
        self.gap_mode = gap_mode
        self.safeguard = safeguard
        self.reference_compat = reference_compat
        self.inner_tol = inner_tol
        self.inner_max_iter = inner_max_iter
        self.random_state = random_state
        self.verbose = verbose
        self.record_history = record_history

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Optimise the group weights and fit the model at them.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; scipy sparse X (CSR, CSC, COO) is used without densifying it.
        y : array-like of shape (n_samples,)
            Binary target (any two labels).
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Group membership; ``None`` means one group (plain model, with a warning).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the samples inside their group's loss and inside the metrics;
            ``None`` means unit weights.

        Returns
        -------
        self : BADRClassifier
            The fitted estimator.
        """
        data = validate_fit_data(self, X, y, sensitive_features, sample_weight, accept_sparse=True)
        self.classes_, y01 = encode_binary_target(type(self).__name__, data.y)
        return self._fit_badr(data, self.loss, y01, "classification")

    def _has_probabilities(self):
        return self.loss == "logistic"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


class BADRRegressor(LinearRegressorMixin, _BADRBase):
    __doc__ = (
        """Ridge regression on the Pareto front of group losses with minimal unfairness.

    Same bilevel program as :class:`BADRClassifier` with the lower level
    ``sum_g lambda_g MSE_g(b, w) + alpha ||w||^2`` (no one half, as in scikit-learn's
    ``Ridge``), solved exactly. Defaults and the paper's settings as for
    :class:`BADRClassifier`.

    Parameters
    ----------"""
        + _DOC_PARAMS
        + """
    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float"""
        + _DOC_ATTRS
        + _REFERENCES
    )

    def __init__(
        self,
        *,
        metric="demographic_parity_deviation",
        metric_params=None,
        max_weight_ratio=_defaults.MAX_WEIGHT_RATIO,
        alpha=_defaults.ALPHA,
        penalize_intercept=None,
        solver="slsqp",
        max_iter=None,
        tol=None,
        batch_size=None,
        learning_rate=_defaults.LEARNING_RATE,
        dual_learning_rate=_defaults.DUAL_LEARNING_RATE,
        clip_norm=_defaults.CLIP_NORM,
        check_every=_defaults.CHECK_EVERY,
        step_rule="log",
        gap_mode="gap",
        safeguard=True,
        reference_compat=False,
        inner_tol=_defaults.NEWTON_TOL,
        inner_max_iter=_defaults.INNER_MAX_ITER,
        random_state=None,
        verbose=0,
        record_history=False,
    ):
        self.metric = metric
        self.metric_params = metric_params
        self.max_weight_ratio = max_weight_ratio
        self.alpha = alpha
        self.penalize_intercept = penalize_intercept
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.dual_learning_rate = dual_learning_rate
        self.clip_norm = clip_norm
        self.check_every = check_every
        self.step_rule = step_rule
        self.gap_mode = gap_mode
        self.safeguard = safeguard
        self.reference_compat = reference_compat
        self.inner_tol = inner_tol
        self.inner_max_iter = inner_max_iter
        self.random_state = random_state
        self.verbose = verbose
        self.record_history = record_history

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Optimise the group weights and fit the model at them.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; scipy sparse X (CSR, CSC, COO) is used without densifying it.
        y : array-like of shape (n_samples,)
            Target values.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Group membership; ``None`` means one group (plain model, with a warning).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the samples inside their group's loss and inside the metrics;
            ``None`` means unit weights.

        Returns
        -------
        self : BADRRegressor
            The fitted estimator.
        """
        data = validate_fit_data(
            self, X, y, sensitive_features, sample_weight, regression=True, accept_sparse=True
        )
        return self._fit_badr(data, "squared_error", data.y, "regression")
