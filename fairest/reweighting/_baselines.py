"""Group-weighted linear models: the ERM baseline of every family.

The lower level of BADR (badr spec section 1.2): for group weights ``lambda`` on the
simplex, minimise ``sum_g lambda_g L_g(theta) + R(theta)``, where ``L_g`` is the
(sample-weighted) mean loss of group g. ``weights="pooled"`` is ordinary ERM.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from fairest._solvers._driver import solve_weighted_glm
from fairest.reweighting import _defaults
from fairest.reweighting._group_weights import (
    ADAPTIVE_WEIGHTS,
    NAMED_WEIGHTS,
    resolve_group_weights,
)
from fairest.utils._estimator import encode_binary_target, validate_fit_data
from fairest.utils._linear import LinearClassifierMixin, LinearRegressorMixin
from fairest.utils._reporting import store_result

__all__ = ["GroupWeightedClassifier", "GroupWeightedRegressor"]


class _GroupWeightedLinearModel(BaseEstimator):
    """Shared fit of the group-weighted classifier and regressor."""

    __metadata_request__fit = {"sensitive_features": True}

    _parameter_constraints: dict = {
        "weights": [StrOptions(set(NAMED_WEIGHTS) | set(ADAPTIVE_WEIGHTS)), "array-like", dict],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "penalize_intercept": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "metric": [str, callable],
        "metric_params": [dict, None],
        "minimax_solver": [StrOptions({"auto", "cvxpy", "dual"})],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # scipy sparse X: SparseRows (_kernels._sparse), dense only where small enough that
        # a dense copy pays (_runtime.densify_pays)
        tags.input_tags.sparse = True
        return tags

    def _adaptive_weights(self, loss, y01, data):
        """``"minimax"`` (spec 6.3) or ``"best_single_group"`` (spec 6.4) weights."""
        from fairest.reweighting._common import best_single_group, make_problem

        penalize = bool(self.penalize_intercept)
        num_groups = len(data.group_labels)
        if num_groups == 1:
            return np.ones(1)
        if self.weights == "best_single_group":
            task = "regression" if loss == "squared_error" else "classification"
            weights, values = best_single_group(
                loss,
                data,
                y01,
                alpha=self.alpha,
                penalize=penalize,
                metric=self.metric,
                metric_params=self.metric_params,
                task=task,
            )
            self.single_group_unfairness_ = values
            return weights
        solver = self.minimax_solver
        if solver == "auto":
            solver = "cvxpy" if data.X.shape[0] <= _defaults.MINIMAX_CVXPY_MAX_N else "dual"
        if solver == "cvxpy":
            from fairest.reweighting._minimax import MinimaxSolverError, minimax_cvxpy

            try:
                weights, _, worst = minimax_cvxpy(
                    loss,
                    data.X,
                    y01,
                    data.groups,
                    data.sample_weight,
                    num_groups,
                    self.alpha,
                    penalize,
                )
            except MinimaxSolverError as error:
                if self.minimax_solver == "cvxpy":
                    raise
                warnings.warn(
                    f"{error} Using the first-order dual path (minimax_solver='dual') instead.",
                    ConvergenceWarning,
                    stacklevel=4,
                )
                solver = "dual"
        if solver == "dual":
            import jax
            import jax.numpy as jnp

            from fairest.reweighting._minimax import minimax_dual

            with jax.enable_x64(True):
                problem = make_problem(
                    data, y01, self.alpha, penalize, 1.0, self.tol, self.max_iter
                )
                weights, _, worst, _ = minimax_dual(
                    loss, problem, num_groups, jnp.zeros(data.X.shape[1] + 1)
                )
        self.minimax_objective_ = worst
        return weights

    def _solve(self, loss, X, y01, data):
        totals = np.bincount(
            data.groups, weights=data.sample_weight, minlength=len(data.group_labels)
        )
        if isinstance(self.weights, str) and self.weights in ADAPTIVE_WEIGHTS:
            group_weights = self._adaptive_weights(loss, y01, data)
        else:
            group_weights = resolve_group_weights(self.weights, totals, data.group_labels)
        per_group = group_weights / np.where(totals > 0, totals, 1.0)
        c = data.sample_weight * per_group[data.groups]
        result = solve_weighted_glm(
            loss,
            X,
            y01,
            c,
            self.alpha,
            penalize_intercept=self.penalize_intercept,
            tol=self.tol,
            max_iter=self.max_iter,
        )
        if not result.converged:
            warnings.warn(
                f"The {result.solver} solver did not converge in {result.n_iter} iterations "
                f"(gradient norm {result.grad_norm:.2e}); increase max_iter.",
                ConvergenceWarning,
                stacklevel=3,
            )
        theta = result.theta
        self._set_linear_parameters(theta)
        self.group_weights_ = group_weights
        self.groups_ = data.group_labels
        self.objective_ = result.objective
        store_result(self, n_iter=result.n_iter)
        return self


class GroupWeightedClassifier(LinearClassifierMixin, _GroupWeightedLinearModel):
    """Linear classifier trained on a fixed weighting of the group losses.

    Minimises ``sum_g lambda_g L_g(b, w) + (alpha / 2) (||w||^2 + [penalize_intercept] b^2)``
    where ``L_g`` is the mean loss of group g and ``lambda`` is given by ``weights``.
    Solved to high accuracy in float64 by the shared ERM driver, which picks the solver by
    shape: damped Newton where the Hessian is cheap (few features or rows), L-BFGS on the
    jitted objective with a final Newton step where it is not (scikit-learn's default
    solver; see ``benchmarks/results/speed_table.md``). Large data is neither padded nor
    copied beyond one device copy. Prediction is group-blind.

    Parameters
    ----------
    loss : {"logistic", "squared_hinge"}, default="logistic"
        Logistic regression or the smoothed (squared hinge) SVM.
    weights : {"pooled", "uniform", "balanced", "balanced_complement", "minimax", \
"best_single_group"}, array-like of shape (n_groups,) or dict, default="pooled"
        Group weights ``lambda``: ``"pooled"`` is plain ERM (``lambda_g`` proportional to
        the group's total sample weight), ``"uniform"`` gives every group the same total
        weight, ``"balanced"`` weights groups inversely to their size,
        ``"balanced_complement"`` weights group g by ``(W - W_g) / ((G - 1) W)`` (the
        balanced sampling of the BADR code's experiment 3; the same as ``"balanced"`` for
        two groups), ``"minimax"`` are
        the dual weights of ``min max_g L_g + R`` (the refit is the minimax model),
        ``"best_single_group"`` trains on the one group whose model has the smallest train
        ``metric``. An array (in the order of ``groups_``) or a dict keyed by group label
        is normalised to sum to one.
    alpha : float, default=1e-3
        L2 regularisation strength. The same problem in scikit-learn is
        ``LogisticRegression(C=1 / (alpha * sum(c)))`` /
        ``LinearSVC(C=1 / (alpha * sum(c)))`` fitted with ``sample_weight=c``, where ``c``
        are the per-sample weights ``lambda_g w_i / W_g`` (sum one).
    penalize_intercept : bool, default=False
        Whether the intercept is penalised too (``LinearSVC`` penalises it).
    tol : float, default=1e-10
        Relative tolerance on the infinity norm of the gradient.
    max_iter : int, default=100
        Maximum number of Newton iterations (L-BFGS, where chosen: ten times as many).
    metric : str or callable, default="individual_fairness"
        Only for ``weights="best_single_group"``: the train unfairness that picks the
        group (names and callables as in :class:`BADRClassifier` / :class:`BADRRegressor`).
    metric_params : dict, default=None
        Only for ``weights="best_single_group"``: ``temperature`` / ``encoding`` of the metric
        (see :class:`BADRClassifier`).
    minimax_solver : {"auto", "cvxpy", "dual"}, default="auto"
        Only for ``weights="minimax"``: the epigraph program with Clarabel (``"cvxpy"``),
        or SLSQP on the concave dual with Newton lower-level solves (``"dual"``, for large
        n); ``"auto"`` uses cvxpy up to 20,000 samples.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
    group_weights_ : ndarray of shape (n_groups,)
        The weights ``lambda`` on the simplex.
    groups_ : ndarray of shape (n_groups,)
        Group labels, in the order of ``group_weights_``.
    n_iter_ : int
    objective_ : float
        Final value of the weighted objective.
    minimax_objective_ : float
        Only for ``weights="minimax"``: ``max_g L_g + R`` of the minimax solution.
    single_group_unfairness_ : ndarray of shape (n_groups,)
        Only for ``weights="best_single_group"``: train unfairness of every one-group fit
        (``inf`` where the group has a single class and a logistic fit has no minimiser).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.

    References
    ----------
    .. [1] Tanji, Vaiter, Laguel. "Fairness-informed Pareto Optimization: An Efficient
       Bilevel Framework" (BADR), section 2: weighted-sum scalarisation of group losses.
    """

    _parameter_constraints = {
        **_GroupWeightedLinearModel._parameter_constraints,
        "loss": [StrOptions({"logistic", "squared_hinge"})],
    }

    def __init__(
        self,
        loss="logistic",
        *,
        weights="pooled",
        alpha=_defaults.ALPHA,
        penalize_intercept=False,
        tol=_defaults.NEWTON_TOL,
        max_iter=_defaults.NEWTON_MAX_ITER,
        metric="individual_fairness",
        metric_params=None,
        minimax_solver="auto",
    ):
        self.loss = loss
        self.weights = weights
        self.alpha = alpha
        self.penalize_intercept = penalize_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.metric = metric
        self.metric_params = metric_params
        self.minimax_solver = minimax_solver

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; scipy sparse X (CSR, CSC, COO) is used without densifying it.
        y : array-like of shape (n_samples,)
            Binary target (any two labels).
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Group membership; ``None`` means one group (with a warning).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the samples inside their group's mean loss ``L_g``; their group
            totals set the ``"pooled"`` and ``"balanced*"`` weights. ``None`` means unit
            weights.

        Returns
        -------
        self : GroupWeightedClassifier
            The fitted estimator.
        """
        data = validate_fit_data(self, X, y, sensitive_features, sample_weight, accept_sparse=True)
        self.classes_, y01 = encode_binary_target(type(self).__name__, data.y)
        return self._solve(self.loss, data.X, y01, data)

    def _has_probabilities(self):
        return self.loss == "logistic"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


class GroupWeightedRegressor(LinearRegressorMixin, _GroupWeightedLinearModel):
    """Ridge regression trained on a fixed weighting of the group losses.

    Minimises ``sum_g lambda_g MSE_g(b, w) + alpha (||w||^2 + [penalize_intercept] b^2)``
    (no one half, as in scikit-learn's ``Ridge``); ``lambda`` is given by ``weights``.

    Parameters
    ----------
    weights : {"pooled", "uniform", "balanced", "balanced_complement", "minimax", \
"best_single_group"}, array-like of shape (n_groups,) or dict, default="pooled"
        Group weights, see :class:`GroupWeightedClassifier`.
    alpha : float, default=1e-3
        L2 regularisation strength. The same problem in scikit-learn is
        ``Ridge(alpha=alpha * sum(c))`` fitted with ``sample_weight=c``.
    penalize_intercept : bool, default=False
        Whether the intercept is penalised too.
    tol : float, default=1e-10
        Relative tolerance on the infinity norm of the gradient.
    max_iter : int, default=100
        Maximum number of Newton iterations (one suffices for a quadratic).
    metric : str or callable, default="individual_fairness"
        Only for ``weights="best_single_group"``: the train unfairness that picks the
        group (names and callables as in :class:`BADRClassifier` / :class:`BADRRegressor`).
    metric_params : dict, default=None
        Only for ``weights="best_single_group"``: ``temperature`` / ``encoding`` of the metric
        (see :class:`BADRClassifier`).
    minimax_solver : {"auto", "cvxpy", "dual"}, default="auto"
        Only for ``weights="minimax"``: the epigraph program with Clarabel (``"cvxpy"``),
        or SLSQP on the concave dual with Newton lower-level solves (``"dual"``, for large
        n); ``"auto"`` uses cvxpy up to 20,000 samples.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    group_weights_ : ndarray of shape (n_groups,)
    groups_ : ndarray of shape (n_groups,)
    n_iter_ : int
    objective_ : float
    minimax_objective_ : float
        Only for ``weights="minimax"``.
    single_group_unfairness_ : ndarray of shape (n_groups,)
        Only for ``weights="best_single_group"``.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    References
    ----------
    .. [1] Tanji, Vaiter, Laguel. "Fairness-informed Pareto Optimization: An Efficient
       Bilevel Framework" (BADR), section 2.
    """

    def __init__(
        self,
        *,
        weights="pooled",
        alpha=_defaults.ALPHA,
        penalize_intercept=False,
        tol=_defaults.NEWTON_TOL,
        max_iter=_defaults.NEWTON_MAX_ITER,
        metric="individual_fairness",
        metric_params=None,
        minimax_solver="auto",
    ):
        self.weights = weights
        self.alpha = alpha
        self.penalize_intercept = penalize_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.metric = metric
        self.metric_params = metric_params
        self.minimax_solver = minimax_solver

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; scipy sparse X (CSR, CSC, COO) is used without densifying it.
        y : array-like of shape (n_samples,)
            Target values.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Group membership; ``None`` means one group (with a warning).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the samples inside their group's mean loss ``L_g``; their group
            totals set the ``"pooled"`` and ``"balanced*"`` weights. ``None`` means unit
            weights.

        Returns
        -------
        self : GroupWeightedRegressor
            The fitted estimator.
        """
        data = validate_fit_data(
            self, X, y, sensitive_features, sample_weight, regression=True, accept_sparse=True
        )
        return self._solve("squared_error", data.X, data.y, data)
