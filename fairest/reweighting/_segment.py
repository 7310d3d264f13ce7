"""BADR's outer search at two groups: the simplex is the segment ``lambda = (t, 1 - t)``.

SLSQP spends 7-8 lower-level solves on this one-dimensional problem (issue 19). Here the
safeguard's vertices, already solved, bracket the minimiser: from the start point the
search walks down ``dPhi/dt = grad_0 - grad_1`` towards the vertex ahead; if the slope has
changed sign there, a local minimiser lies strictly between, and a safeguarded
interpolation (the cubic matching ``Phi`` and its slope at both ends of the bracket,
bisection when the bracket stops shrinking) closes in on it, each new point warm-started
from the nearest solved one by :class:`~._oracle.ImplicitOracle`. A vertex still sloping
down is the constrained minimiser itself. Anything else (a vertex not solved, a
non-finite value, a vertex higher than the start with no sign change of the slope) is
left to SLSQP.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["SegmentPoint", "hermite_minimiser", "run_segment", "search_bracket"]

XTOL = 1e-7  # predicted weight change below which the search stops (superlinear: closer)
FLAT_FACTOR = 1e-4  # and where it promises less than this part of SLSQP's ftol (flat Phi)


class SegmentPoint(NamedTuple):
    """An evaluated point of the segment: ``t`` (weight of group 0), ``Phi`` and ``dPhi/dt``."""

    t: float
    value: float
    slope: float


def weights_at(t: float) -> np.ndarray:
    """The group weights ``(t, 1 - t)``."""
    return np.array([t, 1.0 - t])


def hermite_minimiser(lo: SegmentPoint, hi: SegmentPoint) -> float:
    """Minimiser of the cubic with ``lo``'s and ``hi``'s values and slopes (Nocedal and
    Wright, eq. 3.59); NaN where it is undefined."""
    h = hi.t - lo.t
    d1 = lo.slope + hi.slope - 3.0 * (lo.value - hi.value) / (lo.t - hi.t)
    disc = d1 * d1 - lo.slope * hi.slope
    if not disc >= 0.0:
        return np.nan
    d2 = np.sign(h) * np.sqrt(disc)
    denom = hi.slope - lo.slope + 2.0 * d2
    if denom == 0.0:
        return np.nan
    return hi.t - h * (hi.slope + d2 - d1) / denom


def _secant(lo: SegmentPoint, hi: SegmentPoint) -> float:
    """Root of the slope's chord (inside the bracket when the slopes differ in sign)."""
    return lo.t - lo.slope * (hi.t - lo.t) / (hi.slope - lo.slope)


def next_trial(lo: SegmentPoint, hi: SegmentPoint, last: SegmentPoint, previous, steps) -> float:
    """The next point inside the bracket ``(lo.t, hi.t)``.

    The cubic through the two newest points (``last``, ``previous``: superlinear, as a
    secant step, where the bracket's far end would make it regula falsi) when it lands
    inside and at most half the last step away (else an extrapolation from one side may
    overshoot), else the cubic through the bracket's ends, else the slopes' chord, else
    the midpoint.
    """
    inside = lambda t: lo.t < t < hi.t  # noqa: E731
    if previous is not None and previous.t != last.t:
        t = hermite_minimiser(previous, last)
        if inside(t) and abs(t - last.t) <= 0.5 * steps[-1]:
            return t
    for t in (hermite_minimiser(lo, hi), _secant(lo, hi)):
        if inside(t):
            return t
    return 0.5 * (lo.t + hi.t)


def search_bracket(evaluate, lo: SegmentPoint, hi: SegmentPoint, last, *, max_iter, xtol, ftol):
    """Local minimiser of ``Phi`` in ``(lo.t, hi.t)``, given ``lo.slope < 0 < hi.slope``
    and ``last`` (one of them) the newest point.

    ``evaluate(t)`` returns a :class:`SegmentPoint` (or ``None`` if not finite). Stops when
    the next trial is within ``xtol`` of the newest point or promises less than ``ftol``
    (``|slope| * step``) there, and returns that point. Returns
    ``(point, n_iter, converged)``, ``point`` ``None`` after a non-finite evaluation.
    """
    previous, steps = None, []
    for n_iter in range(max_iter):
        t = next_trial(lo, hi, last, previous, steps)
        step = abs(t - last.t)
        if step <= xtol or abs(last.slope) * step <= ftol or hi.t - lo.t <= xtol:
            return last, n_iter, True
        point = evaluate(t)
        if point is None:
            return None, n_iter + 1, False
        steps.append(step)
        previous, last = last, point
        if point.slope == 0.0:
            return point, n_iter + 1, True
        lo, hi = (point, hi) if point.slope < 0.0 else (lo, point)
    return last, max_iter, False


def run_segment(orc, lam0, *, max_iter: int, tol: float, ends, progress=None):
    """The two-group outer search from ``lam0`` (call with the safeguard's baselines
    evaluated). ``ends``: the weights at the segment's ends, smaller ``t`` first (the
    one-group baselines: the vertices, else the capped ones of ``max_weight_ratio``).
    Returns ``(lambda, n_iter, message, ok)`` as
    :func:`~._outer.run_scipy`, or ``None`` where SLSQP must run instead.
    ``progress(step, total, unit)``, if given, is called after every trial point."""
    ends = tuple(np.asarray(end, dtype=np.float64) for end in ends)
    trials = [0]
    with orc.loose_solves():  # the caller re-solves the returned point to inner_tol

        def trial(t):  # a point of the bracket search: one outer iteration
            trials[0] += 1
            if progress is not None:
                progress(trials[0], max_iter, "outer iteration")
            return evaluate(t)

        def evaluate(t, lam=None):
            value, grad, _ = orc.evaluate_near(weights_at(t) if lam is None else lam)
            slope = float(grad[0] - grad[1])
            return SegmentPoint(t, value, slope) if np.isfinite([value, slope]).all() else None

        start = evaluate(float(lam0[0]), np.asarray(lam0, dtype=np.float64))
        if start is None:
            return None
        if start.slope == 0.0:
            return np.asarray(lam0, dtype=np.float64), 0, "", True
        end_weights = ends[1] if start.slope < 0.0 else ends[0]
        end_t = float(end_weights[0])
        if start.t == end_t:  # a vertex sloping outwards: a constrained minimiser
            return np.asarray(lam0, dtype=np.float64), 0, "", True
        if not orc.has_value(end_weights):
            return None  # vertices not solved (no safeguard, or a single-class group)
        end = evaluate(end_t, end_weights)  # its hypergradient only: no new lower-level solve
        if end is None:
            return None
        if end.slope * start.slope > 0.0:  # no sign change up to the vertex
            if end.value <= start.value:
                return end_weights, 0, "", True
            return None
        lo, hi = (start, end) if start.t < end.t else (end, start)
        # SLSQP (run_scipy) stops on a decrease below tol * max|grad - mean| / 0.2 at lam0,
        # which is 2.5 tol |dPhi/dt| on the segment; the search asks FLAT_FACTOR of it
        ftol = FLAT_FACTOR * 2.5 * tol * abs(start.slope)
        point, n_iter, ok = search_bracket(
            trial, lo, hi, start, max_iter=max_iter, xtol=XTOL, ftol=ftol
        )
    if point is None:
        return None
    lam = np.asarray(lam0, dtype=np.float64) if point is start else weights_at(point.t)
    if point is end:
        lam = end_weights
    return lam, n_iter, "" if ok else "Iteration limit reached", ok
