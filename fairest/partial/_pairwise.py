"""Constrained pairwise baselines of the partial-fairness paper (spec section 8; paper G.4).

:class:`GroupAUCConstrainedClassifier`, :class:`InterGroupPairwiseConstrainedClassifier`,
:class:`IntraGroupPairwiseConstrainedClassifier`: logistic regression under the *full*
(not partial) pairwise constraints (102), (105), (107) with the quadratic surrogate
``(1 + x)^2 / 2``, trained by projected gradient descent; each projection onto the
constraints (a small QCQP) is exact, by projected Newton on its dual
(``fairest/partial/_qcqp.py``), or by cvxpy + Clarabel (``projection="clarabel"``).

The pairwise means are computed in closed form (spec section 8.4):
``mean_{i in A, j in B} (1 + a_i - b_j)^2 / 2 = ((1 + mean a - mean b)^2 + Var a + Var b) / 2``,
so every constraint is a convex quadratic in the coefficients, O(d^2) to evaluate; its
form is built once per fit from per-cell (group x label) moment sums.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from threadpoolctl import threadpool_limits

from fairest._kernels._losses import cross_entropy_host
from fairest.partial import _defaults, _qcqp
from fairest.partial._linear import _LinearClassifierMixin
from fairest.utils._estimator import encode_binary_target, validate_fit_data

__all__ = [
    "GroupAUCConstrainedClassifier",
    "InterGroupPairwiseConstrainedClassifier",
    "IntraGroupPairwiseConstrainedClassifier",
    "pairwise_quadratic_mean",
]


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
            value = float(c @ cross_entropy_host(s[:, None], y01) + 0.5 * alpha * w @ w)
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
