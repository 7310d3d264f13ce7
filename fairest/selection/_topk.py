"""Exact top-k selection under per-group count bounds or parity within strata.

The selection maximises the sum of the selected scores. Under per-group bounds
``L_g <= c_g <= U_g`` with ``sum_g c_g = k`` the objective is separable and concave in the
counts (``F_g(c)``, the sum of group ``g``'s ``c`` best scores, has non-increasing
increments), so the score order decides everything: every group keeps its ``L_g`` best
scores and the remaining seats go to the best remaining scores of the groups still below
their cap. See :func:`select_top_k` for the proof.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Mapping

import numpy as np

from fairest.utils._degenerate import plain_label
from fairest.utils._validation import FairnessWarning, encode_groups

__all__ = ["select_top_k"]

# a share s of k seats is the count ceil(s * k) (minimum) or floor(s * k) (maximum); the
# slack absorbs the rounding of s = c / k (3 / 7 * 7 = 3.0000000000000004)
_SHARE_SLACK = 1e-9


def _as_scores(scores) -> np.ndarray:
    values = np.asarray(scores)
    if values.ndim != 1:
        raise ValueError(f"scores must be 1-D; got an array of shape {values.shape}.")
    if values.dtype.kind not in "biuf":
        raise TypeError(f"scores must be numbers; got dtype {values.dtype}.")
    values = values.astype(np.float64, copy=False)
    if not np.all(np.isfinite(values)):
        bad = int(np.flatnonzero(~np.isfinite(values))[0])
        raise ValueError(
            f"scores must be finite; scores[{bad}] is {values[bad]}. Drop or impute these rows."
        )
    return values


def _resolve_k(k, n: int) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Real):
        raise TypeError(f"k must be an int (a count) or a float in [0, 1] (a share); got {k!r}.")
    if isinstance(k, numbers.Integral):
        if not 0 <= k <= n:
            raise ValueError(f"k={k} must lie in [0, {n}] (the number of scores).")
        return int(k)
    if not 0.0 <= k <= 1.0:
        raise ValueError(f"k={k} as a float is a share of the {n} scores and must lie in [0, 1].")
    return int(round(k * n))


def _bound_counts(value, name: str, groups, k: int, default: int) -> np.ndarray:
    """Per-group counts from ``None``, a scalar or a mapping of group -> scalar.

    An int is a count of seats, a float in [0, 1] a share of the ``k`` seats (scikit-learn's
    ``test_size`` convention); a minimum share rounds up, a maximum share down.
    """
    out = np.full(len(groups), default, dtype=np.int64)
    if value is None:
        return out
    if isinstance(value, Mapping):
        labels = {plain_label(g): j for j, g in enumerate(groups)}
        unknown = [key for key in value if plain_label(key) not in labels]
        if unknown:
            raise ValueError(
                f"{name} names groups that are not in sensitive_features: {unknown!r}; the "
                f"groups are {list(labels)!r}."
            )
        items = [(labels[plain_label(key)], key, v) for key, v in value.items()]
    else:
        items = [(j, None, value) for j in range(len(groups))]
    for j, key, v in items:
        where = name if key is None else f"{name}[{key!r}]"
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise TypeError(
                f"{where} must be an int (a count) or a float in [0, 1] (a share of k); got {v!r}."
            )
        if isinstance(v, numbers.Integral):
            if v < 0:
                raise ValueError(f"{where}={v} must be a non-negative count.")
            out[j] = int(v)
        else:
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{where}={v} as a float is a share of k and must lie in [0, 1].")
            if name == "min_share":
                out[j] = int(np.ceil(v * k - _SHARE_SLACK))
            else:
                out[j] = int(np.floor(v * k + _SHARE_SLACK))
    return out


def _ranks_within(labels: np.ndarray, n_labels: int) -> np.ndarray:
    """Position of every entry among the earlier entries with the same label (0, 1, ...)."""
    # small integer codes sort by radix (linear time) in numpy's stable sort
    order = np.argsort(labels.astype(np.min_scalar_type(max(n_labels - 1, 0))), kind="stable")
    counts = np.bincount(labels, minlength=n_labels)
    starts = np.cumsum(counts) - counts
    ranks = np.empty(labels.shape[0], dtype=np.int64)
    ranks[order] = np.arange(labels.shape[0]) - np.repeat(starts, counts)
    return ranks


def _check_feasible(lower, upper, sizes, k, groups) -> None:
    def name(j):
        return repr(plain_label(groups[j]))

    too_many = np.flatnonzero(lower > sizes)
    if too_many.size:
        j = too_many[0]
        raise ValueError(
            f"min_share asks for {lower[j]} seats for group {name(j)}, which has only "
            f"{sizes[j]} candidates; lower min_share for it (at most {sizes[j]})."
        )
    crossed = np.flatnonzero(lower > upper)
    if crossed.size:
        j = crossed[0]
        raise ValueError(
            f"group {name(j)}: min_share asks for {lower[j]} seats but max_share allows "
            f"{upper[j]}; raise max_share or lower min_share for it (a minimum share rounds "
            "up and a maximum share down: for proportional bounds pass the counts "
            "floor(k * share) and ceil(k * share))."
        )
    if lower.sum() > k:
        raise ValueError(
            f"min_share asks for {int(lower.sum())} seats in all, more than k={k}; lower "
            "min_share or raise k."
        )
    if upper.sum() < k:
        raise ValueError(
            f"max_share (capped by the group sizes) allows {int(upper.sum())} seats in all, "
            f"fewer than k={k}; raise max_share or lower k."
        )


def _best_first(values: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` best scores, best first, ties by position (earlier first)."""
    n = values.shape[0]
    if count >= n // 4:
        return np.argsort(-values, kind="stable")[:count]
    cut = -np.partition(-values, count - 1)[count - 1]  # the count-th best score
    candidates = np.flatnonzero(values >= cut)  # every row tied at the cut, in row order
    return candidates[np.argsort(-values[candidates], kind="stable")][:count]


def _bounded_selection(values, codes, lower, upper, k, n_groups) -> np.ndarray:
    """Indices (best first) of the optimum under ``lower <= counts <= upper``.

    The greedy of :func:`select_top_k` reads the rows in score order, so it runs on a
    prefix of that order: a prefix is enough once it holds the ``k - sum(lower)`` fill
    seats; the mandatory seats of a group with fewer than ``lower`` rows in the prefix are
    that group's best rows after it. The prefix starts at ``2 k`` rows and doubles.
    """
    n = values.shape[0]
    extra = k - int(lower.sum())
    length = min(n, 2 * k)
    while True:
        order = _best_first(values, length)
        codes_in_order = codes[order]
        rank = _ranks_within(codes_in_order, n_groups)
        mandatory = rank < lower[codes_in_order]
        eligible = np.flatnonzero(~mandatory & (rank < upper[codes_in_order]))
        if eligible.shape[0] >= extra or length == n:
            break
        length = min(n, 2 * length)
    keep = mandatory
    keep[eligible[:extra]] = True
    chosen = order[keep]
    missing = lower - np.bincount(codes_in_order, minlength=n_groups)
    if length < n and np.any(missing > 0):
        in_prefix = np.zeros(n, dtype=bool)
        in_prefix[order] = True
        rest = np.flatnonzero(~in_prefix & (missing[codes] > 0))
        rest = rest[np.argsort(-values[rest], kind="stable")]
        rest = rest[_ranks_within(codes[rest], n_groups) < missing[codes[rest]]]
        chosen = np.concatenate((chosen, rest))
        chosen = chosen[np.lexsort((chosen, -values[chosen]))]
    return chosen


def _strata_selection(order, codes, strata_codes, n_groups, n_strata, k) -> np.ndarray:
    """Indices (in score order) of the optimum under parity within strata (see the docstring)."""
    cells = strata_codes.astype(np.int64) * n_groups + codes
    n_cells = n_strata * n_groups
    cell_sizes = np.bincount(cells, minlength=n_cells).reshape(n_strata, n_groups)
    stratum_sizes = cell_sizes.sum(axis=1)
    seats = np.bincount(strata_codes[order[:k]], minlength=n_strata)
    quota = seats[:, None] * cell_sizes  # k_s n_sg, over n_s (every stratum is non-empty)
    base = quota // stratum_sizes[:, None]
    has_fraction = quota % stratum_sizes[:, None] > 0
    round_ups = seats - base.sum(axis=1)
    cells_in_order = cells[order]
    rank = _ranks_within(cells_in_order, n_cells)
    base_flat = base.ravel()
    keep = rank < base_flat[cells_in_order]
    # each cell with a fractional quota offers one more seat: its next best score; every
    # stratum gives its round_ups seats to its best offers
    offers = np.flatnonzero(
        (rank == base_flat[cells_in_order]) & has_fraction.ravel()[cells_in_order]
    )
    offer_strata = strata_codes[order[offers]]
    offer_rank = _ranks_within(offer_strata, n_strata)
    keep[offers[offer_rank < round_ups[offer_strata]]] = True
    return order[keep]


def select_top_k(
    scores,
    sensitive_features,
    k,
    *,
    min_share=None,
    max_share=None,
    strata=None,
    return_indices=False,
):
    r"""Select the ``k`` best scores under group constraints, exactly.

    Maximises the sum of the selected scores subject to either per-group bounds on the
    number of selected candidates (``min_share``, ``max_share``) or parity of the groups'
    selection rates within qualification ``strata``.

    **Bounds.** With ``L_g <= c_g <= U_g`` seats for group ``g`` and ``sum_g c_g = k``, the
    best selection with counts ``c`` takes every group's ``c_g`` best scores, worth
    ``F_g(c_g)`` (the sum of those scores). The increments ``F_g(c) - F_g(c - 1)`` are the
    group's scores in decreasing order, so every ``F_g`` is concave and the problem
    ``max sum_g F_g(c_g)`` over the box with a fixed sum is a separable concave resource
    allocation, which the greedy solves exactly (Gross 1956; Ibaraki and Katoh 1988,
    ch. 4): start from ``c = L`` and give each further seat to the largest increment of a
    group below its cap. *Proof.* Take an optimum ``c*`` agreeing with the greedy's first
    ``t`` seats and suppose seat ``t + 1`` goes to group ``a`` with ``c*_a`` no larger than
    the greedy's count so far. Since ``sum c* = k`` there is a group ``b`` with ``c*_b``
    above the greedy's final count, hence ``c*_b > L_b``; moving a seat of ``c*`` from ``b``
    to ``a`` changes the value by ``inc_a - inc_b >= 0`` (the greedy chose ``a``'s increment
    when ``b``'s next, no larger by concavity, was available) and keeps the bounds, so the
    new optimum agrees with ``t + 1`` seats. In score terms: every group keeps its ``L_g``
    best scores, and the other ``k - sum L`` seats go to the best of the remaining scores
    whose rank within their group is below ``U_g``. Both are read off the score order,
    sorted only as far as needed: the best ``2 k`` scores (a partial sort), more when the
    caps leave fewer than ``k - sum L`` seats to fill there, and a group's best rows past
    them when it has fewer than ``L_g`` in them; ``O(n + k log k)`` in general.

    **Strata.** With ``strata``, the number of seats of every stratum is what the
    unconstrained top ``k`` gives it (the strata are the qualification levels the scores
    are trusted to order), and within a stratum of ``n_s`` candidates with ``k_s`` seats
    every group ``g`` (``n_sg`` candidates) gets ``floor(k_s n_sg / n_s)`` or one more
    seat, the closest integers to equal selection rates (conditional statistical parity).
    The fixed floors take each group's best scores; the stratum's remaining seats go to
    the groups whose next score is largest (a greedy over 0/1 increments, exact by the
    same argument).

    Ties are broken by position: among equal scores the earlier row is preferred, so the
    result is deterministic.

    Parameters
    ----------
    scores : array-like of shape (n_samples,)
        Finite scores; larger is better.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership (several columns define intersectional groups).
    k : int or float
        Number of candidates to select, or a float in [0, 1]: the share of
        ``n_samples`` (rounded to the nearest integer).
    min_share, max_share : int, float or dict, default=None
        Least and most seats per group: an int is a count, a float in [0, 1] a share of
        the ``k`` seats (a minimum share rounds up, a maximum share down). A scalar
        applies to every group; a dict maps group labels to bounds (groups left out are
        unbounded). A maximum above a group's size is capped by the size.
    strata : array-like of shape (n_samples,), default=None
        Qualification stratum of every candidate, for parity of the groups' selection
        rates within every stratum. Not combined with ``min_share`` / ``max_share``.
    return_indices : bool, default=False
        Return the selected indices (by decreasing score) instead of a mask.

    Returns
    -------
    selected : ndarray of shape (n_samples,) of bool, or of shape (k,) of int
        The selection mask, or the selected row indices by decreasing score.

    Raises
    ------
    ValueError
        On infeasible bounds (naming the argument, the group and the fix), scores that
        are not finite, or ``strata`` combined with the share bounds.

    Warns
    -----
    FairnessWarning
        When ``sensitive_features`` holds a single group: the constraints only bound the
        count of that group.

    References
    ----------
    .. [1] O. Gross. "A class of discrete-type minimization problems". RAND RM-1644, 1956.
    .. [2] T. Ibaraki, N. Katoh. "Resource Allocation Problems: Algorithmic Approaches".
       MIT Press, 1988.
    .. [3] I. Zliobaite, F. Kamiran, T. Calders. "Handling conditional discrimination".
       ICDM 2011.

    Examples
    --------
    >>> import numpy as np
    >>> from fairest.selection import select_top_k
    >>> scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    >>> group = np.array(["a", "a", "a", "b", "b", "b"])
    >>> select_top_k(scores, group, 3, min_share={"b": 1}, return_indices=True)
    array([0, 1, 3])
    >>> select_top_k(scores, group, 4, max_share=0.5).astype(int)
    array([1, 1, 0, 1, 1, 0])
    """
    values = _as_scores(scores)
    n = values.shape[0]
    codes, groups = encode_groups(sensitive_features, n_samples=n, reference="scores")
    k = _resolve_k(k, n)
    if len(groups) == 1:
        warnings.warn(
            f"sensitive_features holds a single group ({plain_label(groups[0])!r}): the "
            "selection is the plain top k within its bounds.",
            FairnessWarning,
            stacklevel=2,
        )
    n_groups = len(groups)
    if strata is not None:
        if min_share is not None or max_share is not None:
            raise ValueError(
                "strata sets every group's seats within each stratum; pass min_share / "
                "max_share or strata, not both."
            )
        if len(strata) != n:
            raise ValueError(
                f"strata has {len(strata)} rows but scores has {n}; give every candidate "
                "its stratum."
            )
        strata_codes, _ = encode_groups(strata, n_samples=n, reference="scores")
        order = np.argsort(-values, kind="stable")
        chosen = _strata_selection(
            order, codes, strata_codes, n_groups, int(strata_codes.max()) + 1, k
        )
    else:
        sizes = np.bincount(codes, minlength=n_groups)
        lower = _bound_counts(min_share, "min_share", groups, k, 0)
        upper = np.minimum(_bound_counts(max_share, "max_share", groups, k, k), sizes)
        _check_feasible(lower, upper, sizes, k, groups)
        chosen = _bounded_selection(values, codes, lower, upper, k, n_groups)
    if return_indices:
        return chosen
    mask = np.zeros(n, dtype=bool)
    mask[chosen] = True
    return mask
