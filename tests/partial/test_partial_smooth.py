"""The default solver ``solver="smooth_alm"`` (augmented Lagrangian on the smoothed
problem, L-BFGS-B rounds): its smoothing against the exact constraints, the whole run
against IDCA with exact (ALM) subproblem solves, its convergence stop, warm tightening."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _partial_helpers import PDP, PSP, make_data, make_problem

from fairest.partial import PartialParityClassifier, _defaults
from fairest.partial import _smooth as smooth_module
from fairest.partial._dc import constraint_values
from fairest.utils import FairnessWarning


@pytest.mark.parametrize(
    "metric,surrogate", [(PSP, "ramp"), (PSP, "sigmoid"), (PDP, "ramp"), (PDP, "sigmoid")]
)
def test_smoothed_constraints_tend_to_the_exact_ones(x64, metric, surrogate):
    """The smoothed constraints differ from the exact surrogate constraints (computed by
    the independent formulas of ``constraint_values``) by at most the smoothing error:
    ``delta / 4`` a rounded kink (two a ramp), ``delta log 2`` a smoothed ``min``."""
    cfg, data, x0, *_ = make_problem(metric, surrogate, n=200, d=3, n_grid=4)
    x = jnp.asarray(x0) + 0.7 * jax.random.normal(jax.random.PRNGKey(0), x0.shape)
    exact = np.asarray(constraint_values(x, data, cfg))
    off = np.isfinite(exact)
    for delta in (0.1, 0.01, 1e-3):
        smooth = np.asarray(smooth_module.smooth_constraint_values(x, data, cfg, delta))
        bound = 0.5 * delta + (2 * np.log(2) * delta if metric == PDP else 0.0)
        assert np.max(np.abs(smooth[off] - exact[off])) <= bound + 1e-12
        if surrogate == "ramp" and delta == 0.1:
            assert np.max(np.abs(smooth[off] - exact[off])) > 0  # it does smooth


@pytest.mark.parametrize("metric", [PSP, PDP])
def test_default_run_stops_on_convergence_near_exact_idca(metric, monkeypatch):
    """solver="smooth_alm" stops on the convergence test well before max_iter,
    and reach the objective of IDCA with exact ALM subproblem solves on the same
    surrogate problem within 1 % (one solve each: no tightening round)."""
    monkeypatch.setattr(_defaults, "TIGHTEN_ROUNDS", 0)
    X, y, g = make_data(400, 3, 2)
    params = dict(metric=metric, interval=(0.0, 0.5), tolerance=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessWarning)
        fast = PartialParityClassifier(**params, solver="smooth_alm").fit(
            X, y, sensitive_features=g
        )
        exact = PartialParityClassifier(
            **params, solver="idca", inner_solver="alm", max_iter=40, inner_max_iter=400
        ).fit(X, y, sensitive_features=g)
    assert fast.n_iter_ < 0.5 * fast.max_iter
    final_fast = fast.tightening_["objective"][0]
    final_exact = exact.tightening_["objective"][0]
    assert final_fast <= 1.01 * final_exact
    assert fast.constraint_violation_ <= fast.inner_tol


def test_lbfgs_iterates_recorded_and_warm_tightening(monkeypatch):
    """history_ holds every augmented-Lagrangian round up to the returned one; a
    tightening round starts from the last solve's final model (not from the constant
    start)."""
    X, y, g = make_data(300, 3, 0)
    clf = PartialParityClassifier(
        interval=(0.0, 0.5), tolerance=0.05, solver="smooth_alm", record_history=True
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessWarning)
        clf.fit(X, y, sensitive_features=g)
    assert clf.history_["params"].shape[0] == clf.n_iter_ + 1
    assert np.all(np.isfinite(clf.history_["objective"]))
    calls = []
    original = smooth_module.run_smooth_alm

    def spy(x0, *args, **kwargs):
        calls.append(np.asarray(x0))
        result = original(x0, *args, **kwargs)
        calls.append(np.asarray(result.iterates[-1]))
        return result

    monkeypatch.setattr("fairest.partial._fit.run_smooth_alm", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessWarning)
        clf.fit(X, y, sensitive_features=g)
    starts, finals = calls[0::2], calls[1::2]
    assert len(starts) >= 2  # tolerance 0.05 on 300 rows: at least one tightening round
    # every round but a cold restart (when no warm round got feasible) starts warm
    warm = [np.array_equal(s, f) for s, f in zip(starts[1:], finals[:-1], strict=False)]
    assert warm[0]
