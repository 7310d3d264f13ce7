"""A certified bound on the Kolmogorov-Smirnov gap between the groups' prediction
distributions, from per-group Dvoretzky-Kiefer-Wolfowitz bands."""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

import numpy as np

__all__ = ["KSGapCertificate", "certify_ks_gap"]


def _dkw_epsilon(rows: np.ndarray, delta: float, num_groups: int) -> np.ndarray:
    """Half-widths of simultaneous DKW bands: with probability at least ``1 - delta``
    every group's empirical CDF is within its half-width of the true CDF, uniformly.

    DKW with Massart's constant: ``P(sup_t |F_n(t) - F(t)| > eps) <= 2 exp(-2 n eps^2)``
    for any distribution (atoms included); the union bound over the groups splits
    ``delta`` into ``delta / G``.
    """
    return np.sqrt(np.log(2.0 * num_groups / delta) / (2.0 * rows))


@dataclass(frozen=True)
class KSGapCertificate:
    """A confidence interval of the population KS gap between the groups' predictions.

    Parameters
    ----------
    estimate : float
        The KS gap of the held-out predictions (largest over pairs of groups).
    lower, upper : float
        Bounds of the population gap, simultaneous over the pairs, holding together with
        probability at least ``1 - delta``.
    delta : float
        The allowed probability of a wrong interval.
    tolerance : float or None
        The tested ceiling of the population gap.
    certified : bool or None
        ``upper <= tolerance`` (None without a tolerance).
    groups : ndarray of shape (n_groups,)
        Group labels.
    rows : ndarray of shape (n_groups,)
        Held-out rows per group.
    epsilon : ndarray of shape (n_groups,)
        Every group's DKW half-width.
    worst_pair : tuple
        The two groups whose pair gives ``upper``.
    """

    estimate: float
    lower: float
    upper: float
    delta: float
    tolerance: float | None
    certified: bool | None
    groups: np.ndarray
    rows: np.ndarray
    epsilon: np.ndarray
    worst_pair: tuple


def _pairwise_ks(values: np.ndarray, codes: np.ndarray, num_groups: int) -> np.ndarray:
    """``sup_t |F_a(t) - F_b(t)|`` of the groups' empirical CDFs, for every pair."""
    from fairest.metrics._regression import group_cdfs

    gaps = np.zeros((num_groups, num_groups))
    ones = np.ones(values.size)
    for _, _, cdfs in group_cdfs(values, codes, ones, num_groups):
        groups = cdfs[:num_groups]
        for a in range(num_groups - 1):
            block = np.abs(groups[a + 1 :] - groups[a]).max(axis=1)
            gaps[a, a + 1 :] = np.maximum(gaps[a, a + 1 :], block)
    return gaps + gaps.T


def certify_ks_gap(y_pred, *, sensitive_features, delta=0.05, tolerance=None) -> KSGapCertificate:
    r"""Certified bounds of the KS gap between the groups' prediction distributions.

    On held-out rows drawn independently from the population, group ``g``'s empirical
    CDF ``F_g`` is within ``eps_g = sqrt(log(2 G / delta) / (2 n_g))`` of its population
    CDF uniformly, for all ``G`` groups at once, with probability at least ``1 - delta``
    (the Dvoretzky-Kiefer-Wolfowitz inequality with Massart's constant, and a union
    bound over the groups). Then for every pair the population gap ``sup_t |F_a - F_b|``
    lies within ``eps_a + eps_b`` of the held-out one, so

    ``lower = max_{a,b} (D_ab - eps_a - eps_b)^+`` and ``upper = min(1, max_{a,b} (D_ab +
    eps_a + eps_b))``

    hold together with probability at least ``1 - delta``, for any distribution of the
    predictions (ties and atoms included). The interval is conservative: it needs no
    assumption, and the union bound counts every group. A fitted model is certified
    when ``upper <= tolerance``.

    Parameters
    ----------
    y_pred : array-like of shape (n_samples,)
        Predictions of a fitted model on held-out rows (not used to fit it), e.g.
        ``model.predict(X_test, sensitive_features=groups_test)``.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership of the rows; every group needs at least 2 rows.
    delta : float, default=0.05
        Allowed probability that the interval misses the population gap.
    tolerance : float in [0, 1], default=None
        The ceiling to certify; ``None`` gives the interval only.

    Returns
    -------
    KSGapCertificate
        The estimate, the bounds, and whether the tolerance is certified.

    Raises
    ------
    ValueError
        If ``delta`` is not in (0, 1), ``tolerance`` not in [0, 1], ``y_pred`` holds
        non-finite values, or fewer than 2 groups are given.

    References
    ----------
    .. [1] P. Massart. "The tight constant in the Dvoretzky-Kiefer-Wolfowitz
       inequality". Annals of Probability 18(3), 1990.
    .. [2] A. Dvoretzky, J. Kiefer, J. Wolfowitz. "Asymptotic minimax character of the
       sample distribution function and of the classical multinomial estimator". Annals
       of Mathematical Statistics 27(3), 1956.

    Examples
    --------
    >>> import numpy as np
    >>> from fairest.certified._ks import certify_ks_gap
    >>> rng = np.random.default_rng(0)
    >>> groups = rng.choice(["a", "b"], size=20000)
    >>> y_pred = rng.normal(size=20000)  # the same law in both groups
    >>> result = certify_ks_gap(y_pred, sensitive_features=groups, tolerance=0.1)
    >>> bool(result.certified), round(result.upper, 3)
    (True, 0.041)
    """
    from fairest.metrics._checks import as_finite_vector, encode_sensitive_features

    if not isinstance(delta, Real) or not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1); got {delta!r}.")
    if tolerance is not None and (not isinstance(tolerance, Real) or not 0 <= tolerance <= 1):
        raise ValueError(f"tolerance must be in [0, 1] (a KS gap) or None; got {tolerance!r}.")
    values = as_finite_vector(y_pred, "y_pred")
    codes, groups = encode_sensitive_features(
        sensitive_features, values.size, reference="y_pred", min_groups=2
    )
    num_groups = len(groups)
    rows = np.bincount(codes, minlength=num_groups).astype(np.float64)
    epsilon = _dkw_epsilon(rows, float(delta), num_groups)
    gaps = _pairwise_ks(values, np.asarray(codes, dtype=np.int64), num_groups)
    widths = epsilon[:, None] + epsilon[None, :]
    pairs = ~np.eye(num_groups, dtype=bool)
    upper_pairs = np.where(pairs, gaps + widths, -np.inf)
    worst = np.unravel_index(np.argmax(upper_pairs), upper_pairs.shape)
    upper = float(min(1.0, upper_pairs[worst]))
    lower = float(max(0.0, np.max(np.where(pairs, gaps - widths, -np.inf))))
    return KSGapCertificate(
        estimate=float(gaps.max()),
        lower=lower,
        upper=upper,
        delta=float(delta),
        tolerance=None if tolerance is None else float(tolerance),
        certified=None if tolerance is None else bool(upper <= tolerance),
        groups=np.asarray(groups),
        rows=rows.astype(np.int64),
        epsilon=epsilon,
        worst_pair=(groups[worst[0]], groups[worst[1]]),
    )
