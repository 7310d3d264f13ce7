"""FA*IR: top-k rankings whose every prefix passes a binomial test (Zehlike et al. 2017).

A ranking of ``k`` candidates satisfies *ranked group fairness* at target proportion ``p``
and significance ``alpha`` when every prefix of length ``i`` holds at least
``m(i) = F^{-1}(alpha_c; i, p)`` protected candidates, ``F^{-1}`` the inverse CDF of the
binomial law ``Bin(i, p)`` (the smallest ``m`` with ``F(m; i, p) >= alpha_c``). The ``k``
tests are dependent; with ``alpha_c = alpha`` a ranking drawn fairly (every position
protected with probability ``p``, independently) fails one of them with probability above
``alpha``. The paper's adjustment picks ``alpha_c`` so that this probability is ``alpha``;
here it is computed exactly (a dynamic programme over the protected count of the prefixes)
and ``alpha_c`` is found by bisection.
"""

from __future__ import annotations

import functools
import numbers
import warnings

import numpy as np
from scipy import stats

from fairest.selection._topk import _as_scores
from fairest.utils._degenerate import plain_label
from fairest.utils._validation import FairnessWarning, encode_groups

__all__ = ["fair_ranking", "fair_ranking_table", "is_ranked_group_fair"]

# bisection steps of the adjusted significance: alpha_c is then within alpha * 2**-40
_BISECTION_STEPS = 40
# the failure probability follows the protected count up to this many standard deviations
# above its mean (see _failure_probability)
_TAIL_SIGMAS = 14


def _check_p_alpha(p, alpha) -> None:
    for name, value in (("p", p), ("alpha", alpha)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be a float in (0, 1); got {value!r}.")
        if not 0.0 < value < 1.0:
            raise ValueError(f"{name}={value} must lie strictly between 0 and 1.")


def _minimum_counts(k: int, p: float, alpha: float) -> np.ndarray:
    """``m(i) = F^{-1}(alpha; i, p)`` for ``i = 1..k``."""
    counts = stats.binom.ppf(alpha, np.arange(1, k + 1), p)
    return np.nan_to_num(counts, nan=0.0).astype(np.int64)


def _failure_probability(minimum: np.ndarray, p: float) -> float:
    """Probability that a fair random ranking fails some prefix test of ``minimum``.

    The protected count ``T_i`` of the prefixes is a random walk with ``Bin(1, p)`` steps;
    ``survive[c]`` is the probability that ``T_i = c`` and no prefix up to ``i`` failed.
    Counts below ``minimum[i - 1]`` are dead, and ``minimum`` never decreases, so only the
    live range is updated. Counts more than ``_TAIL_SIGMAS`` standard deviations (plus
    ``_TAIL_SIGMAS``) above the mean ``i p`` have probability below ``1e-30`` (Bernstein's
    inequality); the walk is followed up to there, and mass that passes it is counted as
    surviving, which moves the result by less than ``k * 1e-30``.
    """
    k = minimum.shape[0]
    survive = np.zeros(k + 2)
    survive[0] = 1.0
    low = high = 0  # the live counts are low..high
    for i in range(1, k + 1):
        top = min(i, int(i * p + _TAIL_SIGMAS * np.sqrt(i * p * (1 - p)) + _TAIL_SIGMAS))
        step = survive[low : high + 1] * p
        survive[low : high + 1] *= 1.0 - p
        survive[low + 1 : high + 2] += step
        high = min(high + 1, top)  # survive[top + 1] keeps the escaped mass, never read
        new_low = int(minimum[i - 1])
        survive[low:new_low] = 0.0
        low = max(low, new_low)
    escaped = survive[high + 1 :].sum()
    return float(min(1.0, max(0.0, 1.0 - survive[: high + 1].sum() - escaped)))


@functools.lru_cache(maxsize=64)
def cached_minimum_table(
    k: int, p: float, alpha: float, adjust: bool
) -> tuple[tuple[int, ...], float]:
    """:func:`fair_ranking_table`'s work on validated arguments, cached (clear it with
    ``cached_minimum_table.cache_clear()`` to time a first computation)."""
    if not adjust or _failure_probability(_minimum_counts(k, p, alpha), p) <= alpha:
        return tuple(_minimum_counts(k, p, alpha).tolist()), alpha
    low, high = 0.0, alpha  # P(fail) is non-decreasing in alpha_c: <= alpha at low
    for _ in range(_BISECTION_STEPS):
        middle = 0.5 * (low + high)
        if _failure_probability(_minimum_counts(k, p, middle), p) <= alpha:
            low = middle
        else:
            high = middle
    return tuple(_minimum_counts(k, p, low).tolist()), low


def fair_ranking_table(k, p, alpha=0.1, *, adjust_alpha=True):
    """Least number of protected candidates in every prefix of a FA*IR-fair ranking.

    The table of the ranked group fairness test of FA*IR: ``minimum[i - 1] =
    F^{-1}(alpha_c; i, p)``, the ``alpha_c``-quantile of ``Bin(i, p)`` (scipy's
    ``binom.ppf``), for the prefixes ``i = 1..k``. With ``adjust_alpha=True`` (the
    paper's model adjustment) ``alpha_c`` is the largest significance (up to a bisection
    step of ``alpha * 2**-40``) at which a ranking drawn fairly (every position protected
    with probability ``p``, independently) fails some prefix test with probability at most
    ``alpha``, computed exactly; with ``False``, ``alpha_c = alpha`` and every prefix is an
    unadjusted test at level ``alpha``.

    Parameters
    ----------
    k : int
        Length of the ranking (positive).
    p : float
        Target minimum proportion of protected candidates, in (0, 1).
    alpha : float, default=0.1
        Significance of the test, in (0, 1).
    adjust_alpha : bool, default=True
        Adjust the significance of the prefix tests for their multiplicity.

    Returns
    -------
    minimum : ndarray of shape (k,) of int
        Least protected count of the prefixes of lengths ``1..k``.
    alpha_adjusted : float
        The significance ``alpha_c`` of every prefix test.

    Notes
    -----
    The adjustment runs 40 bisection steps, each a pass over the ``k`` prefixes that
    updates about ``28 sqrt(k p (1 - p))`` counts: milliseconds at ``k = 100``, seconds at
    ``k = 10,000``. Tables are cached per ``(k, p, alpha, adjust_alpha)``.

    References
    ----------
    .. [1] M. Zehlike, F. Bonchi, C. Castillo, S. Hajian, M. Megahed, R. Baeza-Yates.
       "FA*IR: A Fair Top-k Ranking Algorithm". CIKM 2017.

    Examples
    --------
    >>> from fairest.selection import fair_ranking_table
    >>> minimum, alpha_c = fair_ranking_table(10, 0.5, 0.1, adjust_alpha=False)
    >>> minimum.tolist()
    [0, 0, 0, 1, 1, 1, 2, 2, 3, 3]
    """
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"k must be a positive int; got {k!r}.")
    _check_p_alpha(p, alpha)
    minimum, alpha_c = cached_minimum_table(int(k), float(p), float(alpha), bool(adjust_alpha))
    return np.array(minimum, dtype=np.int64), alpha_c


def is_ranked_group_fair(is_protected, *, p, alpha=0.1, adjust_alpha=True):
    """Whether a ranking passes FA*IR's ranked group fairness test.

    Every prefix of the ranking must hold at least the protected count of
    :func:`fair_ranking_table` for ``k = len(is_protected)``.

    Parameters
    ----------
    is_protected : array-like of shape (k,) of bool
        Whether the candidate at each position (best first) is protected.
    p : float
        Target minimum proportion of protected candidates, in (0, 1).
    alpha : float, default=0.1
        Significance of the test, in (0, 1).
    adjust_alpha : bool, default=True
        Adjust the significance for the multiplicity of the prefix tests.

    Returns
    -------
    bool
        True when every prefix passes.

    References
    ----------
    .. [1] M. Zehlike et al. "FA*IR: A Fair Top-k Ranking Algorithm". CIKM 2017.

    Examples
    --------
    >>> from fairest.selection import is_ranked_group_fair
    >>> is_ranked_group_fair([0, 0, 0, 0, 1, 1], p=0.5, adjust_alpha=False)
    False
    >>> is_ranked_group_fair([0, 1, 0, 1, 0, 1], p=0.5, adjust_alpha=False)
    True
    """
    flags = np.asarray(is_protected)
    if flags.ndim != 1 or flags.shape[0] == 0 or not np.isin(flags, (0, 1)).all():
        raise ValueError("is_protected must be a non-empty 1-D array of booleans (or 0 / 1).")
    minimum, _ = fair_ranking_table(flags.shape[0], p, alpha, adjust_alpha=adjust_alpha)
    return bool(np.all(np.cumsum(flags.astype(np.int64)) >= minimum))


def fair_ranking(scores, sensitive_features, *, protected, p, alpha=0.1, k=None, adjust_alpha=True):
    """Rank the best ``k`` candidates so that every prefix passes FA*IR's test.

    FA*IR's greedy (Zehlike et al. 2017, Algorithm 1): position ``i`` takes the best
    remaining protected candidate when the prefix holds fewer protected candidates than
    ``minimum[i - 1]`` of :func:`fair_ranking_table`, and otherwise the best remaining
    candidate of either kind. Within each kind candidates keep their score order (ties:
    the earlier row first). The paper shows that this ranking maximises the selection and
    ordering utility among the rankings that pass the test and keep each kind in score
    order.

    Parameters
    ----------
    scores : array-like of shape (n_samples,)
        Finite scores; larger is better.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership.
    protected : label or list of labels
        The group label(s) forming the protected kind; every other group is
        non-protected.
    p : float
        Target minimum proportion of protected candidates, in (0, 1).
    alpha : float, default=0.1
        Significance of the ranked group fairness test, in (0, 1).
    k : int, default=None
        Length of the ranking; ``None`` ranks every candidate.
    adjust_alpha : bool, default=True
        Adjust the significance for the multiplicity of the prefix tests (the paper's
        model adjustment, see :func:`fair_ranking_table`).

    Returns
    -------
    ranking : ndarray of shape (k,) of int
        Row indices, best position first.

    Raises
    ------
    ValueError
        When ``protected`` names no group, or the protected candidates are fewer than the
        test requires in the top ``k``.

    Warns
    -----
    FairnessWarning
        When there are no non-protected candidates (the test is vacuous).

    References
    ----------
    .. [1] M. Zehlike, F. Bonchi, C. Castillo, S. Hajian, M. Megahed, R. Baeza-Yates.
       "FA*IR: A Fair Top-k Ranking Algorithm". CIKM 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from fairest.selection import fair_ranking
    >>> scores = np.array([10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0])
    >>> group = np.array(["a"] * 6 + ["b"] * 2)
    >>> fair_ranking(scores, group, protected="b", p=0.5, adjust_alpha=False).tolist()
    [0, 1, 2, 6, 3, 4, 7, 5]
    """
    values = _as_scores(scores)
    n = values.shape[0]
    codes, groups = encode_groups(sensitive_features, n_samples=n, reference="scores")
    labels = [plain_label(g) for g in groups]
    wanted = protected if isinstance(protected, (list, tuple, set, np.ndarray)) else [protected]
    wanted = [plain_label(w) for w in wanted]
    missing = [w for w in wanted if w not in labels]
    if missing:
        raise ValueError(
            f"protected names groups that are not in sensitive_features: {missing!r}; the "
            f"groups are {labels!r}."
        )
    if k is None:
        k = n
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral) or not 1 <= k <= n:
        raise ValueError(f"k must be an int in [1, {n}] (the number of scores); got {k!r}.")
    k = int(k)
    minimum, alpha_c = fair_ranking_table(k, p, alpha, adjust_alpha=adjust_alpha)
    is_protected = np.isin(codes, [labels.index(w) for w in wanted])
    order = np.argsort(-values, kind="stable")
    prot = order[is_protected[order]]
    other = order[~is_protected[order]]
    if prot.shape[0] < minimum[-1]:
        raise ValueError(
            f"the protected groups have {prot.shape[0]} candidates but ranked group fairness "
            f"at p={p}, alpha={alpha} needs {minimum[-1]} in the top {k}; lower p or k."
        )
    if other.shape[0] == 0:
        warnings.warn(
            "every candidate is protected: the ranking is the score order.",
            FairnessWarning,
            stacklevel=2,
        )
    ranking = np.empty(k, dtype=np.int64)
    i_prot = i_other = 0
    for i in range(k):
        take_protected = i_prot < minimum[i] or i_other == other.shape[0]
        if not take_protected and i_prot < prot.shape[0]:
            a, b = prot[i_prot], other[i_other]
            take_protected = values[a] > values[b] or (values[a] == values[b] and a < b)
        if take_protected:
            ranking[i] = prot[i_prot]
            i_prot += 1
        else:
            ranking[i] = other[i_other]
            i_other += 1
    return ranking
