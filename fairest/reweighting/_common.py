"""Shared pieces of the reweighting family: metric options, device problem, baselines.

Used by the BADR estimators and by the group-weighted baselines; no estimator lives here,
so the baselines never import an estimator module.
"""

from __future__ import annotations

import warnings
from numbers import Real

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from fairest._kernels._glm import blocked_hessian
from fairest.reweighting import _defaults
from fairest.reweighting._badr_metrics import (
    CLASSIFICATION_METRICS,
    REGRESSION_METRICS,
    RENAMED,
    MetricSpec,
)
from fairest.reweighting._bilevel import Problem, lower_level, metric_value
from fairest.reweighting._capped import project_capped_host
from fairest.reweighting._group_weights import resolve_group_weights
from fairest.reweighting._oracle import ImplicitOracle
from fairest.reweighting._runtime import place_fit_arrays

__all__ = [
    "baseline_weights",
    "best_single_group",
    "build_metric_spec",
    "make_problem",
    "one_label_groups",
    "single_class_groups",
]


def build_metric_spec(metric, metric_params, task: str, loss: str, n_valid: int):
    """Validate ``metric`` / ``metric_params``; return ``(MetricSpec, temperatures)`` with
    ``temperatures`` the pair ``(sigmoid, max)`` of the smoothed parity metrics:
    ``temperature`` sets both, ``temperature_sigmoid`` / ``temperature_max`` one each."""
    params = dict(metric_params or {})
    keys = ("temperature", "temperature_sigmoid", "temperature_max", "encoding")
    unknown = set(params) - set(keys)
    if unknown:
        raise ValueError(
            f"metric_params accepts {', '.join(map(repr, keys))}; got {sorted(unknown)}."
        )
    for key in keys[:3]:
        value = params.get(key)
        if value is not None and (
            not isinstance(value, Real) or not np.isfinite(value) or value <= 0
        ):
            raise ValueError(f"metric_params[{key!r}] must be a positive number; got {value!r}.")
    both = params.get("temperature")
    sigmoid = params.get("temperature_sigmoid", both)
    largest = params.get("temperature_max", both)
    temperature = (
        float(_defaults.TEMPERATURE_SIGMOID if sigmoid is None else sigmoid),
        float(_defaults.TEMPERATURE_MAX if largest is None else largest),
    )
    encoding = params.get("encoding", "index")
    if encoding not in ("index", "onehot"):
        raise ValueError(
            f"metric_params['encoding'] must be 'index' or 'onehot'; got {encoding!r}."
        )
    if callable(metric):
        spec = MetricSpec("callable", task, loss, encoding, fn=metric, n_valid=n_valid)
        return spec, temperature
    if metric in RENAMED:
        warnings.warn(
            f"metric={metric!r} is renamed {RENAMED[metric]!r} (the name of the quantity it "
            f"is: fairest.metrics.{RENAMED[metric]}); the old name will be removed in the "
            "next release.",
            FutureWarning,
            stacklevel=4,
        )
        metric = RENAMED[metric]
    allowed = CLASSIFICATION_METRICS if task == "classification" else REGRESSION_METRICS
    if metric not in allowed:
        raise ValueError(
            f"metric={metric!r} is not available for {task}; use one of {allowed} or a callable."
        )
    if metric in ("disparate_mistreatment", "hsic_linear"):
        return MetricSpec(metric, task, loss, encoding), temperature
    return MetricSpec(metric, task, loss), temperature  # one compiled kernel whatever the encoding


def baseline_weights(totals: np.ndarray, caps: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Uniform, balanced (inverse size) and one-group weights (spec section 6); with
    ``caps`` (:func:`~._capped.weight_caps`) also the pooled weights (plain ERM), and every
    one projected onto the capped simplex (a one-group vertex then gives its group its
    cap and shares the rest evenly, within the caps)."""
    num_groups = totals.size
    labels = np.arange(num_groups)
    candidates = {
        name: resolve_group_weights(name, totals, labels) for name in ("uniform", "balanced")
    }
    for g in range(num_groups):
        candidates[f"group_{g}"] = np.eye(num_groups)[g]
    if caps is None:
        return candidates
    candidates = {"pooled": totals / totals.sum()} | {
        name: project_capped_host(weights, caps) for name, weights in candidates.items()
    }
    return candidates


def make_problem(
    data, y_num, alpha, penalize, temperature, inner_tol, inner_max_iter, *, reference_compat=False
) -> Problem:
    """Float64 device arrays of a fit, padded to a row bucket when small (call inside
    ``jax.enable_x64(True)``), plus the marker of float32 Newton Hessian blocks
    (:func:`~fairest._kernels._glm.blocked_hessian`) when the fit is large.
    ``reference_compat`` drops the intercept from the scores the metrics see.
    Sparse ``data.X`` becomes a device :class:`~fairest._kernels._sparse.SparseRows`
    (O(nnz), padded with empty rows, exact float64 Hessian blocks), or a dense copy where
    that pays (:func:`~._runtime.place_fit_arrays`)."""
    n, d = data.X.shape
    rows = (y_num, data.groups, data.sample_weight)
    X_dev, y_dev, g_dev, w_dev, sparse = place_fit_arrays(data.X, rows)
    return Problem(
        X=X_dev,
        y=y_dev,
        groups=g_dev,
        weight=w_dev,
        alpha=_on_device(alpha, np.float64),
        penalize_intercept=_on_device(penalize, np.float64),
        temperature=_on_device(np.broadcast_to(temperature, (2,)), np.float64),
        inner_tol=_on_device(inner_tol, np.float64),
        inner_max_iter=_on_device(inner_max_iter, np.int32),
        X_hessian=(  # float32 Hessian blocks cast on the fly: no float32 copy of X
            _on_device(blocked_hessian(), np.float32)
            if not sparse and n * d**2 >= _defaults.FLOAT32_HESSIAN_WORK
            else None
        ),
        metric_intercept=_on_device(0.0 if reference_compat else 1.0, np.float64),
    )


def _on_device(value, dtype):
    """Device copy with the dtype converted on the host (a conversion on the device would
    compile a kernel on the first fit)."""
    return jax.device_put(np.asarray(value, dtype=dtype))


def single_class_groups(loss, penalize, y_num, groups, num_groups) -> np.ndarray:
    """Groups whose one-group fit has no minimiser (logistic, free intercept, one class)."""
    mask = np.zeros(num_groups, dtype=bool)
    if loss == "logistic" and not penalize:
        positives = np.bincount(groups, weights=y_num, minlength=num_groups)
        counts = np.bincount(groups, minlength=num_groups)
        mask = (positives == 0) | (positives == counts)
    return mask


def one_label_groups(y_num, groups, weight, num_groups) -> np.ndarray:
    """Groups whose weighted labels are all one class (classification, ``y_num`` in {0, 1}):
    their group loss is minimised by a constant model, whatever the loss."""
    weight = np.asarray(weight, dtype=np.float64)
    positives = np.bincount(groups, weights=weight * y_num, minlength=num_groups)
    totals = np.bincount(groups, weights=weight, minlength=num_groups)
    return (positives == 0) | (positives == totals)


def best_single_group(loss, data, y_num, *, alpha, penalize, metric, metric_params, task):
    """One-group fitting baseline (spec 6.4): the vertex ``e_g`` with the smallest smooth
    train unfairness. Returns ``(weights, unfairness per group (inf where skipped))``."""
    num_groups = len(data.group_labels)
    spec, temperature = build_metric_spec(metric, metric_params, task, loss, data.X.shape[0])
    skip = single_class_groups(loss, penalize, y_num, data.groups, num_groups)
    values = np.full(num_groups, np.inf)
    with jax.enable_x64(True):
        problem = make_problem(
            data,
            y_num,
            alpha,
            penalize,
            temperature,
            _defaults.NEWTON_TOL,
            _defaults.NEWTON_MAX_ITER,
        )
        theta0 = jnp.zeros(data.X.shape[1] + 1)
        if sp.issparse(data.X):  # values only: the lower solve and the smooth metric
            for g in np.flatnonzero(~skip):
                vertex = jax.device_put(np.eye(num_groups)[g])
                theta = lower_level(loss, num_groups, vertex, theta0, problem).theta
                values[g] = float(metric_value(spec, theta, problem, num_groups))
        else:
            orc = ImplicitOracle(loss, spec, num_groups, problem, theta0, data.groups)
            for g in np.flatnonzero(~skip):
                values[g] = orc.evaluate(np.eye(num_groups)[g], with_grad=False)[0]
    if not np.any(np.isfinite(values)):
        raise ValueError("No group admits a one-group fit (every group has a single class).")
    return np.eye(num_groups)[int(np.argmin(values))], values
