"""Confidence sequences for means of [0, 1] values: intervals valid at every time at once.

A confidence sequence ``(L_n, U_n)`` for the mean of observations ``x_1, x_2, ...`` in
[0, 1] holds at all sample sizes simultaneously:
``P(for all n >= 1: L_n <= mu_n <= U_n) >= 1 - alpha``, where ``mu_n`` is the average of
the conditional means ``E[x_i | x_1, ..., x_{i-1}]`` of the first ``n`` observations (the
common mean for i.i.d. data). A monitor may therefore look after every batch, as often as
it likes, and stop whenever it likes, without losing the coverage that a fixed-sample
interval has only at one sample size fixed in advance.

Both boundaries are inversions of a nonnegative supermartingale by Ville's inequality
(``P(sup_n M_n >= 1 / alpha) <= alpha``), in closed form or by vectorised bisection, and
take only the sufficient statistics (the number of successes and of trials), so millions
of rows and many groups cost one array operation per check.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaln

__all__ = ["BOUNDARIES", "bernoulli_confidence_sequence"]

BOUNDARIES = ("beta-binomial", "normal-mixture")

# steps of the beta-binomial inversion (see _beta_binomial): geometric bisection of each
# end's distance to its edge between _FLOOR and the estimate (20 halvings of a log-range
# of at most 690 leave a relative bracket below 1e-3), then Newton steps from the outer
# end; the returned ends are outside the exact interval, so fewer steps only widen it
_BISECTION_STEPS = 20
_NEWTON_STEPS = 5
_FLOOR = 1e-300


def _check_alpha(alpha) -> np.ndarray:
    try:
        values = np.asarray(alpha, dtype=np.float64)
    except (TypeError, ValueError):
        values = None
    if values is None or not np.all((values > 0) & (values < 1)):
        raise ValueError(f"alpha must be a number in (0, 1) (or an array of them); got {alpha!r}.")
    return values


def _beta_binomial(successes, trials, alpha, prior):
    """``{p : M_n(p) < 1 / alpha}``, both ends at once.

    ``M_n(p) = B(a + S, b + n - S) / (B(a, b) p^S (1 - p)^(n - S))`` is the likelihood
    ratio of Bernoulli(q) against Bernoulli(p), mixed over ``q ~ Beta(a, b)``. Its log is
    convex in ``p`` and at most 0 at ``p = S / n`` (a mixture of likelihood ratios never
    exceeds the largest one, 1), so the set is an interval around ``S / n`` whose ends are
    the roots of ``log M_n(p) = log(1 / alpha)``.

    Each end is found as a distance ``d`` from its edge of [0, 1] (``p = d`` below,
    ``p = 1 - d`` above, the upper end being the lower end of the mirrored counts
    ``(n - S, S)``), so ends within 1e-16 of 1 keep their precision: geometric bisection
    between ``_FLOOR`` and the estimate's distance, then Newton steps from the outer
    bracket end. On a convex function a Newton step from a point where it is positive
    moves towards the root and stops short of it, so the returned ends are always
    outside the exact interval: fewer steps only widen it.
    """
    a, b = prior
    failures = trials - successes
    # log M_n(p) - log(1 / alpha) = offset - S log p - (n - S) log(1 - p)
    offset = betaln(a + successes, b + failures) - betaln(a, b) - np.log(1.0 / alpha)
    near = np.concatenate([successes, failures])  # count whose log-term blows up at the edge
    far = np.concatenate([failures, successes])
    offset = np.concatenate([offset, offset])
    # a side without counts near its edge has the edge inside: its values are not used
    interior = near > 0
    inner = np.divide(
        np.concatenate([successes, failures]),
        np.concatenate([trials, trials]),
        out=np.full(near.shape, 0.5),
        where=interior,
    )

    def excess(d):  # log M_n - log(1 / alpha) at distance d from the edge
        return offset - near * np.log(d) - far * np.log1p(-d)

    outer = np.full_like(inner, _FLOOR)
    outer_is_out = excess(outer) > 0
    for _ in range(_BISECTION_STEPS):
        middle = np.sqrt(inner) * np.sqrt(outer)  # no underflow of the product
        keep = excess(middle) < 0
        inner = np.where(keep, middle, inner)
        outer = np.where(keep, outer, middle)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(_NEWTON_STEPS):
            value = excess(outer)
            slope = far / (1.0 - outer) - near / outer
            step = (value > 0) & (slope < 0)
            outer = np.where(step, outer - value / np.where(step, slope, -1.0), outer)
    # the edge where it is inside (no count near it) or no point outside was found
    distance = np.where(interior & outer_is_out, outer, 0.0)
    half = successes.size
    upper = np.minimum(np.nextafter(1.0 - distance[half:], 2.0), 1.0)
    return distance[:half], np.where(distance[half:] > 0, upper, 1.0)


def _normal_mixture(successes, trials, alpha, n_opt):
    """Robbins' two-sided normal mixture for 1/4-sub-Gaussian increments.

    For ``x_i`` in [0, 1], ``exp(lambda S_n - lambda^2 n / 8)`` (``S_n`` the centred sum)
    is a supermartingale for every ``lambda`` (Hoeffding's lemma); mixing ``lambda`` over
    ``N(0, 1 / rho)`` gives ``sqrt(rho / (V + rho)) exp(S_n^2 / (2 (V + rho)))`` with
    ``V = n / 4``, and Ville's inequality the radius
    ``sqrt(2 (V + rho) log(sqrt((V + rho) / rho) / alpha)) / n``. ``rho`` is set so that
    the radius is smallest near ``n = n_opt``.
    """
    log_term = 2.0 * np.log(1.0 / alpha)
    rho = (n_opt / 4.0) / (log_term + np.log1p(log_term))
    variance = trials / 4.0
    radius_sum = np.sqrt(
        2.0 * (variance + rho) * (np.log(1.0 / alpha) + 0.5 * np.log((variance + rho) / rho))
    )
    safe = np.maximum(trials, 1)
    estimate = np.where(trials > 0, successes / safe, 0.5)
    radius = np.where(trials > 0, radius_sum / safe, np.inf)
    return np.clip(estimate - radius, 0.0, 1.0), np.clip(estimate + radius, 0.0, 1.0)


def bernoulli_confidence_sequence(
    successes, trials, alpha=0.05, *, boundary="beta-binomial", prior=(1.0, 1.0), n_opt=1e5
):
    """Two-sided confidence sequence for the mean of [0, 1] observations, vectorised.

    The interval at every sample size ``n`` of one sequence holds simultaneously with
    probability at least ``1 - alpha``: it may be recomputed after every new observation
    or batch, and a decision taken at any data-dependent time, with no loss of
    coverage. It covers the average of the conditional means of the observations
    seen so far (the mean itself for i.i.d. or constant-conditional-mean data).

    Parameters
    ----------
    successes : array-like of float
        Sum of the observations so far (the count of ones for 0/1 data), per sequence.
    trials : array-like of int
        Number of observations so far, per sequence (broadcast with ``successes``). A
        sequence with no observation gets the interval [0, 1].
    alpha : float or array-like of float, default=0.05
        Error probability of each sequence over its whole (unbounded) run (broadcast with
        ``successes``: one per sequence where they differ).
    boundary : {"beta-binomial", "normal-mixture"}, default="beta-binomial"
        ``"beta-binomial"``: the inversion of Robbins' beta-binomial mixture of
        likelihood ratios (prior ``Beta(prior)``); its width follows ``sqrt(p (1 - p))``,
        so rates near 0 or 1 (false positive rates, rare selections) get narrow
        intervals. ``"normal-mixture"``: Robbins' normal mixture of the Hoeffding
        (1/4-sub-Gaussian) supermartingale, closed form, tuned at ``n_opt``; its width
        ignores the variance.
    prior : tuple of two floats, default=(1.0, 1.0)
        Beta prior ``(a, b)`` of the beta-binomial mixture (uniform by default).
    n_opt : float, default=1e5
        Sample size at which the normal-mixture interval is narrowest.

    Returns
    -------
    lower, upper : ndarray of float
        The interval's ends, in [0, 1], of the broadcast shape of the inputs.

    Raises
    ------
    ValueError
        If ``alpha`` is not in (0, 1), ``boundary`` is unknown, ``prior`` is not
        positive, or ``successes`` lies outside ``[0, trials]``.

    Notes
    -----
    Beta-binomial: for ``x_i`` in [0, 1] with conditional mean ``p``, the factor
    ``q^x (1 - q)^(1 - x) / (p^x (1 - p)^(1 - x))`` is convex in ``x``, so its conditional
    mean is at most its value at the chord, ``1``; the product over the observations is
    a nonnegative supermartingale for every ``q`` and so is its ``Beta(a, b)`` mixture
    ``M_n(p)``. Ville's inequality gives ``P(exists n: M_n(p) >= 1 / alpha) <= alpha``, and
    ``{p : M_n(p) < 1 / alpha}`` is the confidence sequence ([1]_, [2]_ Section 3). With
    the uniform prior, ``M_n(p) = 1 / ((n + 1) C(n, S) p^S (1 - p)^(n - S))``, Robbins'
    Bernoulli sequence. Normal mixture: [2]_ eq. (14) with the sub-Gaussian variance
    process ``n / 4`` of [0, 1] observations. Both are two-sided at level ``alpha`` (not
    ``alpha / 2`` per side): the mixtures are over both directions at once.

    References
    ----------
    .. [1] H. Robbins. "Statistical methods related to the law of the iterated
       logarithm", Annals of Mathematical Statistics 41(5), 1397-1409 (1970).
    .. [2] S. R. Howard, A. Ramdas, J. McAuliffe and J. Sekhon. "Time-uniform,
       nonparametric, nonasymptotic confidence sequences", Annals of Statistics 49(2),
       1055-1080 (2021).

    Examples
    --------
    >>> from fairest.monitoring import bernoulli_confidence_sequence
    >>> lower, upper = bernoulli_confidence_sequence([300, 3000], [1000, 10000], 0.05)
    >>> lower.round(3).tolist(), upper.round(3).tolist()
    ([0.25, 0.283], [0.353, 0.318])
    """
    alpha = _check_alpha(alpha)
    if boundary not in BOUNDARIES:
        raise ValueError(f"boundary must be one of {BOUNDARIES}; got {boundary!r}.")
    successes, trials, alpha = np.broadcast_arrays(
        np.asarray(successes, dtype=np.float64), np.asarray(trials, dtype=np.float64), alpha
    )
    if np.any(trials < 0) or np.any(successes < 0) or np.any(successes > trials):
        raise ValueError(
            "successes must lie in [0, trials] and trials must be >= 0 for every sequence; "
            "pass sums of [0, 1] observations and their counts."
        )
    if boundary == "normal-mixture":
        if not n_opt > 0:
            raise ValueError(f"n_opt must be positive; got {n_opt!r}.")
        return _normal_mixture(successes, trials, alpha, float(n_opt))
    a, b = (float(value) for value in prior)
    if not (a > 0 and b > 0):
        raise ValueError(f"prior must be two positive numbers (a, b); got {prior!r}.")
    lower, upper = _beta_binomial(successes.ravel(), trials.ravel(), alpha.ravel(), (a, b))
    lower, upper = lower.reshape(trials.shape), upper.reshape(trials.shape)
    empty = trials == 0
    return np.where(empty, 0.0, lower), np.where(empty, 1.0, upper)
