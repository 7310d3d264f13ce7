"""The partial family's solver entry point and its tightening policy, without an
estimator (``fairest.partial._fit``)."""

import numpy as np
import pytest
from _partial_helpers import PSP

from fairest.metrics import partial_statistical_parity
from fairest.partial._defaults import PARTIAL_RULES
from fairest.partial._fit import PartialFit, Settings, fit_partial, select, tighten


def _solve(objectives, exact, tolerance, width=1.0, first=0):
    """A fake surrogate solve: its candidate objectives and exact metrics."""
    objectives = np.asarray(objectives, dtype=float)
    exact = np.asarray(exact, dtype=float)
    return {
        "objectives": objectives,
        "violations": np.zeros_like(objectives),
        "iterates": np.arange(objectives.size, dtype=float)[:, None],
        "exact": np.full(objectives.size, np.nan),
        "true_exact": exact,
        "measure": None,
        "first": first,
        "tolerance": tolerance,
        "width": width,
    }


def _measured(sol):
    """Fill the final exact value and make the lazy measure read ``true_exact``."""
    sol["exact"][-1] = sol["true_exact"][-1]
    sol["measure"] = lambda x: float(sol["true_exact"][int(x[0])])
    return sol


def test_select_most_accurate_candidate_meeting_tolerance():
    """Among candidates meeting kappa the smallest objective wins (across solves); with
    none, the fairest final model is returned."""
    a = _measured(_solve([0.9, 0.5, 0.4, 0.3], [0.0, 0.04, 0.06, 0.2], 0.05))
    b = _measured(_solve([0.9, 0.45, 0.42], [0.0, 0.05, 0.03], 0.03))
    sol, k = select([a, b], 0.05)
    assert sol is b and k == 2  # 0.42 < 0.5 (a's best meeting 0.05)
    c = _measured(_solve([0.9, 0.3], [0.2, 0.2], 0.05, first=1))
    d = _measured(_solve([0.9, 0.35], [0.0, 0.1], 0.03, first=1))
    sol, k = select([c, d], 0.05)
    assert sol is d and k == 1  # nobody meets 0.05: the fairest final model


def test_tighten_follows_the_documented_rule():
    """Each round lowers the internal tolerance by the measured excess, clipped to
    [0.25, 0.9] x the last one, halves the width, and stops after PARTIAL_RULES.tighten_rounds."""
    kappa = 0.05
    calls = []
    excess = iter([0.08, 0.06, 0.055])

    def rebuild(tolerance, width):
        calls.append((tolerance, width))
        return None, None, None

    def solve(cfg, data, x0, tolerance):
        return _measured(_solve([0.9, 0.5], [0.0, next(excess)], tolerance, calls[-1][1], 1))

    solves = [_measured(_solve([0.9, 0.4], [0.0, 0.1], kappa, 1.0, 1))]
    tighten(solves, rebuild, solve, lambda cfg: False)
    assert len(solves) == 1 + PARTIAL_RULES.tighten_rounds
    low, high = PARTIAL_RULES.tighten_factors
    expected, previous, last_exact = [], kappa, 0.1
    for exact in (0.08, 0.06, 0.055):
        previous = float(np.clip(previous - (last_exact - kappa), low * previous, high * previous))
        expected.append(previous)
        last_exact = exact
    np.testing.assert_allclose([t for t, _ in calls], expected)
    np.testing.assert_allclose([w for _, w in calls], [0.5, 0.25, 0.125])


def test_tighten_stops_when_a_round_is_no_fairer_than_an_earlier_solve():
    """KDD census by race (top 10 %): exact 0.188, then 0.112 and 0.133 at tighter
    internal tolerances; the third round is not run (it gave 0.168)."""
    excess = iter([0.112, 0.133, 0.168])

    def solve(cfg, data, x0, tolerance):
        return _measured(_solve([0.9, 0.5], [0.0, next(excess)], tolerance, 0.5, 1))

    solves = [_measured(_solve([0.9, 0.4], [0.0, 0.188], 0.1, 1.0, 1))]
    tighten(solves, lambda tolerance, width: (None, None, None), solve, lambda cfg: False)
    assert [sol["exact"][-1] for sol in solves] == [0.188, 0.112, 0.133]


def test_tighten_warm_starts_only_after_a_converged_run():
    """A smoothed round starts at the last solve's final model when that run converged,
    from the constant start (``rebuild``'s ``x0``) after a first solve that stalled."""
    excess = iter([(0.06, True), (0.055, True), (0.052, True)])
    starts = []

    def solve(cfg, data, x0, tolerance):
        starts.append(x0)
        exact, converged = next(excess)
        sol = _measured(_solve([0.9, 0.5], [0.0, exact], tolerance, 0.5, 1))
        return {**sol, "converged": converged, "feasible_only": 1e-3}

    first = {**_measured(_solve([0.9, 0.4], [0.0, 0.1], 0.05, 1.0, 1)), "converged": False}
    solves = [first]
    tighten(solves, lambda tolerance, width: (None, None, "cold"), solve, lambda cfg: True)
    assert len(solves) == 1 + PARTIAL_RULES.tighten_rounds
    assert [x0 if isinstance(x0, str) else float(x0[0]) for x0 in starts] == ["cold", 1.0, 1.0]


def test_a_stalled_tightening_round_ends_the_rounds():
    """A tightening round whose smoothed solve stalled (not converged) is the last one:
    a tighter round stalls again (KDD census by race); a converged one goes on."""
    for stalled, rounds in ((False, PARTIAL_RULES.tighten_rounds), (True, 1)):
        excess = iter([(0.08, not stalled), (0.06, True), (0.055, True)])

        def solve(cfg, data, x0, tolerance, excess=excess):
            exact, converged = next(excess)
            sol = _measured(_solve([0.9, 0.5], [0.0, exact], tolerance, 0.5, 1))
            return {**sol, "converged": converged, "feasible_only": 1e-3}

        first = {**_measured(_solve([0.9, 0.4], [0.0, 0.1], 0.05, 1.0, 1)), "converged": True}
        solves = [first]
        tighten(solves, lambda tolerance, width: (None, None, "cold"), solve, lambda cfg: True)
        assert len(solves) == 1 + rounds


def test_a_stalled_warm_tightening_solve_is_kept_without_a_cold_solve():
    """A warm-started tightening solve that stalled outside its surrogate tolerance is a
    candidate and the last solve: no cold solve at the same tolerance follows
    (ACSPublicCoverage by race: it ended less fair, 0.131 against 0.123)."""
    starts = []

    def solve(cfg, data, x0, tolerance):
        starts.append(x0)
        sol = _measured(_solve([0.9, 0.5], [0.0, 0.06], tolerance, 0.5, 1))
        sol["violations"] = np.array([0.0, 0.01])  # outside feasible_only: stalled
        return {**sol, "converged": False, "feasible_only": 1e-3}

    first = {**_measured(_solve([0.9, 0.4], [0.0, 0.1], 0.05, 1.0, 1)), "converged": True}
    solves = [first]
    tighten(solves, lambda tolerance, width: (None, None, "cold"), solve, lambda cfg: True)
    assert [float(x0[0]) for x0 in starts] == [1.0]  # warm only
    assert len(solves) == 2 and solves[-1]["exact"][-1] == 0.06
    sol, k = select(solves, 0.05)
    assert sol is solves[-1] and k == 1  # the fairest final model: the stalled one


def test_tighten_stops_when_a_candidate_meets_tolerance():
    solves = [_measured(_solve([0.9, 0.5, 0.4], [0.0, 0.04, 0.1], 0.05, 1.0, 1))]
    tighten(solves, None, None, lambda cfg: False)
    assert len(solves) == 1


def test_fit_partial_promise_without_estimator():
    """fit_partial on numpy data: the stored train_unfairness_ is the exact metric of
    the returned parameters (recomputed by fairest.metrics) and meets tolerance."""
    rng = np.random.default_rng(0)  # the estimator's docstring example
    g = rng.integers(0, 2, 400)
    X = rng.normal(size=(400, 3)) + g[:, None]
    y = (X[:, 0] + rng.normal(size=400) > 0.5).astype(float)
    settings = Settings(PSP, interval=(0.0, 0.5), tolerance=0.2, max_iter=20, inner_max_iter=100)
    result = fit_partial(settings, X, y, g.astype(np.int32), np.ones(400), 2)
    assert isinstance(result, PartialFit)
    d = X.shape[1]
    scores = X @ result.params[1 : 1 + d] + result.params[0]
    exact = partial_statistical_parity(None, scores, sensitive_features=g, interval=(0.0, 0.5))
    assert result.train_unfairness == pytest.approx(exact, abs=1e-12)
    assert result.train_unfairness <= 0.2
    assert result.tightening["objective"].size == result.n_solves


def test_fit_partial_on_one_configured_device_equals_default_placement():
    """config_context(devices=[one device]) places the solver's rows on that device
    (fairest.partial._common.build_data through place_rows) and fits the same model as
    JAX's default placement; the several-device case is in
    tests/scale/test_devices_equivalence.py."""
    import jax

    import fairest
    from fairest.partial._common import build_data

    rng = np.random.default_rng(1)
    g = rng.integers(0, 2, 300)
    X = rng.normal(size=(300, 3)) + g[:, None]
    y = (X[:, 0] + rng.normal(size=300) > 0.5).astype(float)
    w = rng.uniform(0.5, 2.0, 300)
    settings = Settings(PSP, interval=(0.0, 0.5), tolerance=0.2, max_iter=10)
    args = (settings, X, y, g.astype(np.int32), w, 2)
    default = fit_partial(*args)
    device = jax.devices()[-1]
    with fairest.config_context(devices=[device]):
        placed = fit_partial(*args)
        with jax.enable_x64(True):
            hyper = dict.fromkeys(("slack", "lo", "threshold", "alpha", "mu", "rho"), 0.0)
            data = build_data(X, y, g, w, 2, grid=np.zeros(0), hi=1.0, width=1.0, **hyper)
    assert data.membership.devices() == {device} and data.grid.devices() == {device}
    np.testing.assert_allclose(placed.params, default.params, rtol=1e-9, atol=1e-12)
    assert placed.train_unfairness == default.train_unfairness
