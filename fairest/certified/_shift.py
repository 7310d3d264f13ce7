"""Certificates under demographic shift: a declared change of the distribution of T.

The deployed population differs from the one the held-out rows were drawn from only in
the distribution of a demographic attribute ``T`` (which may differ from the sensitive
feature ``S``): ``P(X, Y, S | T)`` stays the same, and the shares ``q_t = P'(T = t)`` are
known or lie in a declared box ``low_t <= q_t <= high_t`` (with ``sum_t q_t = 1``).

A group rate of a metric (the mean of a ``[0, 1]`` quantity ``h`` over the rows of group
``s`` in the rate's condition ``C``) is then, in the deployed population,

    rate_s(q) = sum_t q_t A_st / sum_t q_t (A_st + M_st),
    A_st = E[h 1{S = s, C} | T = t],   M_st = E[(1 - h) 1{S = s, C} | T = t],

two means of ``[0, 1]`` values over the held-out rows with ``T = t``. ``rate_s`` grows
with every ``A_st`` and falls with every ``M_st``, so with one-sided bounds of all of them
its upper bound is ``max_q sum q A^up / sum q (A^up + M^low)`` and its lower bound the
``min`` with ``A^low``, ``M^up``: linear-fractional programs over the box intersected
with the simplex, solved exactly (:func:`linear_fractional_max`). A metric with ``R``
rates over ``G`` groups and ``K`` values of ``T`` that the deployment may hold (positive
upper share, some held-out rows) needs ``4 R G K`` one-sided bounds; each gets
``delta / (4 R G K)`` (union bound). Each group's rate is bounded over the shares on its
own (the worst shares of one group need not be those of another), which is valid for
every deployed distribution in the set at once, and conservative.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Real

import numpy as np
import pandas as pd

from fairest.certified._bounds import (
    METRICS,
    MetricInterval,
    RateStatistics,
    _rate_values,
    group_interval,
    inflated,
    rate_bounds,
)
from fairest.utils._degenerate import plain_label

__all__ = [
    "DemographicShift",
    "ShiftInterval",
    "encode_shift_features",
    "linear_fractional_max",
    "shift_interval",
]

_SUM_TOLERANCE = 1e-6  # shares summing to 1 within rounding


def _shares(mapping, name: str) -> dict:
    if not isinstance(mapping, Mapping) and not isinstance(mapping, pd.Series):
        raise TypeError(
            f"{name} must map each value of the shift attribute to its deployed share, "
            f"e.g. {{'white': 0.7, 'black': 0.3}}; got {type(mapping).__name__}."
        )
    items = dict(mapping.items())
    if not items:
        raise ValueError(f"{name} is empty; give the deployed share of each value of T.")
    checked = {}
    for key, value in items.items():
        if isinstance(value, bool) or not isinstance(value, Real) or not 0 <= value <= 1:
            raise ValueError(
                f"{name}[{plain_label(key)!r}] must be a share in [0, 1]; got {value!r}."
            )
        checked[plain_label(key)] = float(value)
    return checked


class DemographicShift:
    """The declared deployment distribution of a demographic attribute ``T``.

    A certificate under this shift holds for every deployed population that differs from
    the held-out rows' population only in the shares of ``T``: ``P(X, Y, S | T)``
    unchanged, and the shares known (``shares``) or in a box (``low``, ``high``).

    Parameters
    ----------
    shares : mapping, default=None
        The exact deployed share of each value of ``T`` (summing to 1).
    low, high : mapping, default=None
        Instead of ``shares``: the smallest and largest deployed share of each value
        (the same keys; ``low <= high``, ``sum(low) <= 1 <= sum(high)``). A value with
        ``high = 0`` is absent from the deployment.

    Attributes
    ----------
    values : tuple
        The values of ``T``, in the order of the arrays.
    low, high : ndarray of shape (K,)
        The box of shares (equal for known shares).
    exact : bool
        Whether the shares are known.
    nominal : ndarray of shape (K,)
        One distribution of the set: the shares, or ``low + c (high - low)`` with ``c``
        making them sum to 1 (the certificate's point estimate is evaluated there).

    Examples
    --------
    >>> from fairest.certified import DemographicShift
    >>> shift = DemographicShift(low={"a": 0.2, "b": 0.5}, high={"a": 0.5, "b": 0.8})
    >>> shift.nominal.round(3).tolist()
    [0.35, 0.65]
    """

    def __init__(self, shares=None, *, low=None, high=None):
        if shares is not None:
            if low is not None or high is not None:
                raise ValueError(
                    "give either shares (known deployed shares of T) or low and high (a "
                    "box of shares), not both."
                )
            exact = _shares(shares, "shares")
            total = sum(exact.values())
            if abs(total - 1.0) > _SUM_TOLERANCE:
                raise ValueError(f"shares must sum to 1; they sum to {total:.6g}.")
            keys, lows, highs = list(exact), list(exact.values()), list(exact.values())
        else:
            if low is None or high is None:
                raise ValueError(
                    "DemographicShift needs shares=... (known deployed shares of T) or both "
                    "low=... and high=... (a box of shares)."
                )
            low_, high_ = _shares(low, "low"), _shares(high, "high")
            if set(low_) != set(high_):
                missing = sorted(map(str, set(low_) ^ set(high_)))
                raise ValueError(
                    f"low and high must name the same values of T; {missing} are in one only."
                )
            keys = list(low_)
            lows, highs = [low_[k] for k in keys], [high_[k] for k in keys]
            for key, a, b in zip(keys, lows, highs):
                if a > b:
                    raise ValueError(
                        f"low[{key!r}] = {a:g} exceeds high[{key!r}] = {b:g}; the box is empty."
                    )
            if sum(lows) > 1.0 + _SUM_TOLERANCE or sum(highs) < 1.0 - _SUM_TOLERANCE:
                raise ValueError(
                    f"no distribution fits the box: sum(low) = {sum(lows):.6g} and sum(high) = "
                    f"{sum(highs):.6g} must enclose 1. Widen the box."
                )
        self.values = tuple(keys)
        self.low = np.asarray(lows, dtype=np.float64)
        self.high = np.asarray(highs, dtype=np.float64)
        self.exact = shares is not None
        room = self.high.sum() - self.low.sum()
        fill = 0.0 if room <= 0 else (1.0 - self.low.sum()) / room
        self.nominal = self.low + np.clip(fill, 0.0, 1.0) * (self.high - self.low)

    @classmethod
    def around(cls, shares, width):
        """A box of shares ``width`` either side of ``shares``, clipped to ``[0, 1]``.

        Parameters
        ----------
        shares : mapping
            Central deployed shares of each value of ``T`` (summing to 1), e.g. the
            published margins of the deployment population.
        width : float
            Half-width of the box, in shares (``0.02``: two percentage points).

        Returns
        -------
        DemographicShift
            The box.

        Examples
        --------
        >>> from fairest.certified import DemographicShift
        >>> DemographicShift.around({"a": 0.3, "b": 0.7}, 0.05).high.tolist()
        [0.35, 0.75]
        """
        centre = _shares(shares, "shares")
        if isinstance(width, bool) or not isinstance(width, Real) or not 0 <= width <= 1:
            raise ValueError(f"width must be a share in [0, 1]; got {width!r}.")
        total = sum(centre.values())
        if abs(total - 1.0) > _SUM_TOLERANCE:
            raise ValueError(f"shares must sum to 1; they sum to {total:.6g}.")
        return cls(
            low={k: max(0.0, v - width) for k, v in centre.items()},
            high={k: min(1.0, v + width) for k, v in centre.items()},
        )

    def describe(self) -> str:
        """The set of deployed distributions, in words.

        Returns
        -------
        str
            ``"T = a: 0.3, b: 0.7"`` or ``"T = a: [0.2, 0.4], ..."``.
        """
        if self.exact:
            parts = [f"{v!r}: {q:.3g}" for v, q in zip(self.values, self.low)]
        else:
            parts = [
                f"{v!r}: [{a:.3g}, {b:.3g}]" for v, a, b in zip(self.values, self.low, self.high)
            ]
        return ", ".join(parts)

    def __repr__(self) -> str:
        kind = "shares" if self.exact else "box"
        return f"DemographicShift({kind} {self.describe()})"


def encode_shift_features(shift_features, shift, n_samples: int, X=None) -> np.ndarray:
    """Codes ``0..K-1`` (positions in ``shift.values``) of the rows' values of ``T``.

    ``shift_features`` is an array of one value per row, or the name of a column of a
    DataFrame ``X``. A value the shift does not name, or a missing one, is refused.
    """
    if not isinstance(shift, DemographicShift):
        raise TypeError(
            "shift must be a DemographicShift (fairest.certified.DemographicShift(shares=...) "
            f"or (low=..., high=...)); got {type(shift).__name__}."
        )
    if shift_features is None:
        raise ValueError(
            "shift needs shift_features: the value of the shift attribute T of every row "
            "(an array, or the name of a column of X)."
        )
    if isinstance(shift_features, str):
        if not hasattr(X, "columns") or shift_features not in X.columns:
            raise ValueError(
                f"shift_features={shift_features!r} names no column of X; pass the values "
                "of T as an array of one value per row."
            )
        shift_features = X[shift_features]
    values = np.asarray(shift_features, dtype=object)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        raise ValueError(
            f"shift_features must hold one value per row (shape (n_samples,)); got shape "
            f"{values.shape}."
        )
    if values.shape[0] != n_samples:
        raise ValueError(
            f"shift_features has {values.shape[0]} rows, y has {n_samples}; give one value "
            "of T per row."
        )
    missing = pd.isna(values)
    if missing.any():
        raise ValueError(
            f"shift_features has {int(missing.sum())} missing value(s) (first at row "
            f"{int(np.flatnonzero(missing)[0])}); every row needs its value of T."
        )
    index = {value: code for code, value in enumerate(shift.values)}
    uniques, inverse = np.unique(values.astype(str), return_inverse=True)
    firsts = [values[np.flatnonzero(inverse == i)[0]] for i in range(uniques.size)]
    lookup = np.empty(uniques.size, dtype=np.int64)
    for i, first in enumerate(firsts):
        key = plain_label(first)
        if key not in index:
            key = next((k for k in shift.values if str(k) == str(key)), None)
        if key is None:
            raise ValueError(
                f"shift_features holds the value {plain_label(first)!r}, which the shift does "
                f"not name (it names {list(shift.values)}); give its deployed share (0 if "
                "the deployment has none)."
            )
        lookup[i] = index[key]
    return lookup[inverse]


# --------------------------------------------------------------------------------------
# linear-fractional programs over a box intersected with the simplex


def _best_vertex(c, low, high):
    """``argmax c . q`` over ``low <= q <= high``, ``sum q = 1``: the fractional knapsack
    (start at ``low``, give the remaining mass to the largest ``c`` first)."""
    q = low.copy()
    room = 1.0 - low.sum()
    for i in np.argsort(-c, kind="stable"):
        if room <= 0:
            break
        step = min(high[i] - low[i], room)
        q[i] += step
        room -= step
    return q


def linear_fractional_max(num, den, low, high):
    """``max (num . q) / (den . q)`` over shares ``q`` in a box and on the simplex.

    Exact: Dinkelbach's iteration, each step a fractional knapsack (a sort). The ratio
    ``lam`` of the current shares is the optimum exactly when ``max_q (num - lam den) . q``
    is 0; else that maximiser has a larger ratio, and the shares are vertices of a finite
    polytope, so the iteration stops after finitely many steps.

    Parameters
    ----------
    num, den : ndarray of shape (K,)
        Coefficients; ``den . q > 0`` on the whole set.
    low, high : ndarray of shape (K,)
        The box (``sum(low) <= 1 <= sum(high)``).

    Returns
    -------
    value : float
        The maximum.
    shares : ndarray of shape (K,)
        A maximiser.

    References
    ----------
    .. [1] Dinkelbach, W. "On nonlinear fractional programming", Management Science 13
       (1967), 492-498.

    Examples
    --------
    >>> import numpy as np
    >>> from fairest.certified._shift import linear_fractional_max
    >>> value, q = linear_fractional_max(np.array([0.1, 0.4]), np.array([0.5, 0.5]),
    ...                                  np.array([0.2, 0.2]), np.array([0.8, 0.8]))
    >>> round(value, 6), q.tolist()
    (0.7, [0.2, 0.8])
    """
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    q = _best_vertex(num / np.where(den > 0, den, np.inf), low, high)
    lam = float(num @ q / (den @ q))
    for _ in range(4 * num.size + 8):
        candidate = _best_vertex(num - lam * den, low, high)
        better = float(num @ candidate / (den @ candidate))
        if better <= lam * (1.0 + 1e-12) + 1e-15:
            break
        q, lam = candidate, better
    return lam, q


# --------------------------------------------------------------------------------------
# per-(T, S) statistics and the shift-aware metric interval


def shift_statistics(
    metric, y01, predicted, codes, num_groups, t_codes, num_values, *, seed=None
) -> RateStatistics:
    """Counts and sums of ``A`` (index 0) and ``M`` (index 1) per rate, group and value of
    ``T``: arrays of shape (2, R, G, K), each a mean over the rows with ``T = t``."""
    spec = METRICS[metric]
    num_rates = len(spec.records)
    rows_t = np.bincount(t_codes, minlength=num_values).astype(np.float64)
    shape = (2, num_rates, num_groups, num_values)
    total = np.zeros(shape)
    squares = np.zeros(shape)
    cell = codes * num_values + t_codes
    size = num_groups * num_values
    for r, rate in enumerate(spec.records):
        hits, mask = _rate_values(rate, y01, predicted)
        for side, value in enumerate((hits, 1.0 - hits)):
            kept = value[mask]
            total[side, r] = np.bincount(cell[mask], kept, minlength=size).reshape(
                num_groups, num_values
            )
            squares[side, r] = np.bincount(cell[mask], kept**2, minlength=size).reshape(
                num_groups, num_values
            )
    count = np.broadcast_to(rows_t, shape).copy()
    return RateStatistics(count, total, squares, not spec.needs_proba, seed=seed)


@dataclass
class ShiftInterval:
    """A shift-aware metric interval and what limited it.

    Parameters
    ----------
    interval : MetricInterval
        The metric's interval under every shift of the declared set; its group arrays
        are the worst-case deployed group rates.
    reason : str or None
        Why the interval is vacuous or loose (a value of ``T`` the deployment may hold
        with no held-out row), else ``None``.
    tested : int
        Number of one-sided bounds the delta was split over.
    """

    interval: MetricInterval
    reason: str | None
    tested: int


def shift_interval(
    statistics: RateStatistics,
    metric: str,
    delta: float,
    bound: str,
    shift: DemographicShift,
    *,
    inflation: float = 1.0,
) -> ShiftInterval:
    """The interval of ``metric`` over every deployed distribution of ``T`` in ``shift``.

    ``statistics`` are those of :func:`shift_statistics`; each of the ``4 R G K`` one-sided
    bounds (``K``: values of ``T`` with a positive upper share and held-out rows) gets
    ``delta / (4 R G K)``. ``inflation > 1`` widens them around their estimates (the
    predicted bound of candidate selection, not a confidence statement).
    """
    spec = METRICS[metric]
    _, num_rates, num_groups, num_values = statistics.count.shape
    rows_t = statistics.count[0, 0, 0]
    possible = shift.high > 0
    unseen = possible & (rows_t == 0)
    tested = max(4 * num_rates * num_groups * int((possible & (rows_t > 0)).sum()), 1)
    per_bound = delta / tested
    lower, upper = inflated(statistics, *rate_bounds(statistics, per_bound, bound), inflation)
    estimate = statistics.mean
    low, high = shift.low[possible], shift.high[possible]
    group_lower = np.zeros((num_rates, num_groups))
    group_upper = np.ones((num_rates, num_groups))
    group_estimate = np.zeros((num_rates, num_groups))
    nominal = shift.nominal
    for r in range(num_rates):
        for g in range(num_groups):
            a_up, m_low = upper[0, r, g, possible], lower[1, r, g, possible]
            a_low, m_up = lower[0, r, g, possible], upper[1, r, g, possible]
            den = a_up + m_low
            if np.all(den > 0):
                group_upper[r, g] = linear_fractional_max(a_up, den, low, high)[0]
            den = a_low + m_up
            if np.all(den > 0):
                group_lower[r, g] = -linear_fractional_max(-a_low, den, low, high)[0]
            a_hat, m_hat = estimate[0, r, g], estimate[1, r, g]
            mass = nominal @ (a_hat + m_hat)
            group_estimate[r, g] = nominal @ a_hat / mass if mass > 0 else 0.0
    group_lower = np.minimum(group_lower, group_upper)
    reason = None
    if unseen.any():
        first = int(np.flatnonzero(unseen)[0])
        reason = (
            f"value {shift.values[first]!r} of the shift attribute has no held-out row while "
            f"its deployed share may reach {shift.high[first]:.3g}, so its group rates are "
            "unbounded; collect rows with that value, or declare its share 0 if the "
            "deployment has none"
        )
    bounds = (group_lower, group_upper, group_estimate, _condition_counts(statistics))
    interval = group_interval(metric, spec, *bounds, delta, per_bound, bound)
    return ShiftInterval(interval, reason, tested)


def _condition_counts(statistics):
    """Rows per rate and group in the rate's condition: ``A + M`` is 1 on each such row
    (and 0 elsewhere), so the summed totals over the values of ``T`` count them."""
    return np.round(statistics.total.sum(axis=(0, 3))).astype(np.int64)
