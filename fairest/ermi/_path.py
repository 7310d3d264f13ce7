"""ERMI's ``fairness_weight`` path: Newton continuation with an L-BFGS finish.

Used by :func:`fairest.fairness_path` (``strategy="continuation"``).
"""

from __future__ import annotations

import copy
import warnings

import jax
import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from fairest.utils._validation import FairnessWarning


def fit_weight_path(estimator, param, values, X, y, fit):
    """ERMI fitted at every ``fairness_weight``: one Newton continuation, L-BFGS fallback.

    A template is fitted with one L-BFGS iteration (every fitted attribute that does not
    depend on the coefficients: classes, groups, privacy report, feature names); each
    point is a copy of it with the path's coefficients, ``W_``, ``n_iter_`` and
    ``objective_`` (``n_iter_``: Newton iterations, plus L-BFGS ones where it finished).
    :func:`~fairest.ermi._newton.newton_path` solves the weights in increasing order
    (exact Hessian, tangent warm starts) to the fit's own stationarity test
    ``||grad||_inf <= tol``, with the refit's compiled objective and one Hessian program;
    a weight it leaves above ``tol`` (stalled at the float32 Hessian's accuracy, or max
    iterations) is finished by the family's L-BFGS
    (:func:`~fairest.ermi._solvers.full_batch_solve`) from there.
    """
    from fairest._kernels._buckets import pad_rows
    from fairest.ermi._kernels import device_scalar
    from fairest.ermi._newton import newton_path
    from fairest.ermi._solvers import _device_strata, fitted_w, full_batch_solve
    from fairest.ermi._strata import strata_constants
    from fairest.utils._devices import place_rows
    from fairest.utils._estimator import validate_fit_data

    sensitive_features, sample_weight = fit["sensitive_features"], fit["sample_weight"]
    template = clone(estimator).set_params(max_iter=1, fairness_weight=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", FairnessWarning)  # of a one-iteration model
        template.fit(X, y, sensitive_features=sensitive_features, sample_weight=sample_weight)
    template.set_params(max_iter=estimator.max_iter)
    data = validate_fit_data(clone(estimator), X, y, sensitive_features, sample_weight)
    y_codes = np.searchsorted(template.classes_, data.y).astype(np.int32)
    n, d = data.X.shape
    n_classes, n_groups = template.classes_.size, len(template.groups_)
    weight = data.sample_weight / data.sample_weight.mean()
    eo = estimator.metric == "equalized_odds"
    strata_codes = y_codes if eo else np.zeros(n, np.int32)
    strata, _, _ = strata_constants(
        strata_codes, data.groups, weight, n_classes if eo else 1, n_groups, estimator.eo_weighting
    )
    lams = values if sensitive_features is not None else np.zeros_like(values)
    binary = n_classes == 2
    shape = (d + 1, 1 if binary else n_classes)
    tol, max_iter = float(estimator.tol), int(estimator.max_iter)
    points = []
    with jax.enable_x64(True):
        device_strata = _device_strata(strata)
        rows = place_rows(pad_rows(n, data.X, y_codes, data.groups, strata_codes, weight))
        alpha = device_scalar(estimator.alpha)
        solved = newton_path(
            lams, np.zeros(shape), *rows, device_strata, alpha, tol, max_iter, binary=binary
        )
        for value, lam, solution in zip(values, lams, solved):
            theta, objective, grad_norm, n_iter, point_converged = solution
            if not point_converged:
                theta, objective, grad_norm, more, point_converged = full_batch_solve(
                    theta,
                    *rows,
                    device_strata,
                    device_scalar(lam),
                    alpha,
                    tol,
                    max_iter,
                    binary=binary,
                )
                n_iter += more
            theta = np.asarray(theta, dtype=np.float64)
            W = fitted_w(jax.device_put(theta), rows[0], *rows[2:], device_strata, binary=binary)
            point = copy.deepcopy(template)
            point.set_params(**{param: value})
            point.fairness_weight_ = float(lam)
            point.intercept_, point.coef_ = theta[0].copy(), theta[1:].T.copy()
            W = np.asarray(W, dtype=np.float64)
            point.W_ = W if eo else W[0]
            point.n_iter_, point.objective_ = n_iter, objective
            if not point_converged:
                warnings.warn(
                    f"ERMI path: stopped at {param}={value:g} with gradient norm "
                    f"{grad_norm:.2e} > tol={estimator.tol}; increase max_iter or alpha.",
                    ConvergenceWarning,
                    stacklevel=3,
                )
            points.append(point)
    return points
