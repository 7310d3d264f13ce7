"""Per-group empirical CDFs of model scores, with a partial-fairness interval shaded."""

from __future__ import annotations

import numpy as np

from fairest.metrics._partial import _check_interval
from fairest.plot._common import finite_vector, get_axes, group_colors
from fairest.utils import encode_groups

__all__ = ["group_percentile_bands", "plot_group_score_cdfs"]

# Relative tolerance on within-group ranks at the band edges (spec partial_fairness.md
# section 2.1: ceilings computed as ceil(a * n - 1e-12)); the same rule as the metrics.
_RANK_TOL = 1e-9


def _prepare(scores, sensitive_features, sample_weight):
    s = finite_vector(scores, "scores")
    codes, groups = encode_groups(sensitive_features, n_samples=s.size)
    if sample_weight is None:
        w = np.ones_like(s)
    else:
        w = finite_vector(sample_weight, "sample_weight")
        if w.shape != s.shape:
            raise ValueError(f"sample_weight has {w.size} entries for {s.size} scores.")
        if (w < 0).any():
            raise ValueError("sample_weight must be non-negative.")
    mass = np.bincount(codes, weights=w, minlength=len(groups))
    if not (mass > 0).all():
        empty = groups[int(np.flatnonzero(~(mass > 0))[0])]
        raise ValueError(f"group {empty!r} has zero total sample weight.")
    return s, codes, groups, w


def group_percentile_bands(scores, *, sensitive_features, interval, sample_weight=None):
    """Membership of every sample in its group's percentile band ``[alpha, beta)``.

    Partial fairness (spec ``partial_fairness.md`` section 2.1) compares the groups only
    on the samples whose within-group rank lies in ``interval = (alpha, beta)``, in CCDF
    units: ``alpha = 0`` is the top of every group. Without weights, group ``k`` keeps its
    sorted positions ``ceil(alpha n_k) + 1 .. ceil(beta n_k)`` (1-based, decreasing
    scores, ties by original position); with weights, a sample is kept when the share of
    its group's weight strictly above it in that order lies in ``[alpha, beta)``.

    Parameters
    ----------
    scores : array-like of shape (n_samples,)
        Model scores (e.g. ``decision_function``).
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership, encoded with :func:`fairest.utils.encode_groups`.
    interval : tuple of float
        ``(alpha, beta)`` with ``0 <= alpha < beta <= 1``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.

    Returns
    -------
    in_band : ndarray of shape (n_samples,), dtype bool
        Whether each sample lies in its group's band.
    groups : ndarray of shape (n_groups,)
        Group labels (sorted), as in :func:`fairest.utils.encode_groups`.

    Raises
    ------
    ValueError
        On a bad interval, NaN scores, mismatched lengths or an empty band.

    References
    ----------
    .. [1] He, Huang, Yao and Lin. "Enforcing Fair Predicted Scores on Intervals of
       Percentiles by Difference-of-Convex Constraints", arXiv:2505.12530 (2025),
       Definitions 4.2-4.3 and Appendix A.
    """
    alpha, beta = _check_interval(interval)
    s, codes, groups, w = _prepare(scores, sensitive_features, sample_weight)
    return _bands(s, codes, groups, w, alpha, beta), groups


def _bands(s, codes, groups, w, alpha, beta):
    in_band = np.zeros(s.shape, dtype=bool)
    for k in range(len(groups)):
        members = np.flatnonzero(codes == k)
        order = members[np.argsort(-s[members], kind="stable")]
        weights = w[order]
        start_rank = (np.cumsum(weights) - weights) / weights.sum()
        keep = (start_rank >= alpha - _RANK_TOL) & (start_rank < beta - _RANK_TOL)
        keep &= weights > 0
        if not keep.any():
            raise ValueError(
                f"the percentile band ({alpha}, {beta}) of group {groups[k]!r} "
                f"({members.size} samples) is empty; widen the interval or merge small groups."
            )
        in_band[order[keep]] = True
    return in_band


def _group_name(label) -> str:
    if isinstance(label, tuple):
        return " & ".join(map(str, label))
    return str(label)


def plot_group_score_cdfs(
    scores,
    *,
    sensitive_features,
    interval=None,
    sample_weight=None,
    threshold=None,
    xlim="auto",
    ax=None,
    title=None,
):
    """Empirical CDF of the scores in every group, with a percentile interval shaded.

    One step curve per group, ``F_k(t) = P(score <= t | group k)``. When ``interval =
    (alpha, beta)`` is given (the percentile interval of partial fairness, in CCDF units:
    ``(0, 0.25)`` is the top 25 % of every group), the plot shows

    * a grey horizontal band at CDF levels ``[1 - beta, 1 - alpha]``, the same for every
      group;
    * for every group, the part of its CDF over its band (the samples whose within-group
      rank lies in ``[alpha, beta)``, see :func:`group_percentile_bands`) drawn thick, and
      the box "band scores x band levels" shaded in the group's colour (its horizontal
      extent is the range of the group's band scores).

    Partial statistical parity on the interval holds when the bands' score laws agree:
    the shaded score ranges coincide and the thick pieces, rescaled to the band's height,
    overlap. Outside the band the curves may differ freely.

    Parameters
    ----------
    scores : array-like of shape (n_samples,)
        Model scores (e.g. ``decision_function``) or predictions.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership, encoded with :func:`fairest.utils.encode_groups` (``k``
        columns give intersectional groups).
    interval : tuple of float, default=None
        ``(alpha, beta)`` with ``0 <= alpha < beta <= 1``; ``None`` shades nothing.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights for weighted CDFs and bands.
    threshold : float, default=None
        A decision threshold to mark with a vertical line (partial demographic parity).
    xlim : "auto", None or tuple of float, default="auto"
        Score range shown. ``"auto"`` shows the pooled 1 %-99 % quantiles of the
        scores (plus a margin), so that a few extreme scores do not squeeze the curves;
        ``None`` leaves matplotlib's default (all scores).
    ax : matplotlib Axes, default=None
        Where to draw; by default a new :class:`matplotlib.figure.Figure`.
    title : str, default=None
        Axes title; a default one when ``None``, none with ``""``.

    Returns
    -------
    ax : matplotlib Axes
        The Axes drawn on.

    Raises
    ------
    ValueError
        On NaN scores, mismatched lengths, a bad interval or an empty band.
    ImportError
        If matplotlib is missing from the environment.

    See Also
    --------
    fairest.metrics.partial_statistical_parity : The metric this plot illustrates.

    References
    ----------
    .. [1] He, Huang, Yao and Lin. "Enforcing Fair Predicted Scores on Intervals of
       Percentiles by Difference-of-Convex Constraints", arXiv:2505.12530 (2025).
    """
    s, codes, groups, w = _prepare(scores, sensitive_features, sample_weight)
    if interval is not None:
        alpha, beta = _check_interval(interval)
        in_band = _bands(s, codes, groups, w, alpha, beta)
    ax = get_axes(ax)
    colors = group_colors(len(groups))
    if interval is not None:
        ax.axhspan(
            1.0 - beta,
            1.0 - alpha,
            color="0.5",
            alpha=0.1,
            lw=0,
            zorder=0,
            label=(
                f"percentile interval [{alpha:g}, {beta:g}) of within-group rank\n"
                f"(CDF levels {1 - beta:g} to {1 - alpha:g}; boxes: band scores)"
            ),
        )
    for k, (label, color) in enumerate(zip(groups, colors)):
        members = np.flatnonzero(codes == k)
        order = members[np.argsort(s[members], kind="stable")]
        xs = s[order]
        cdf = np.cumsum(w[order]) / w[order].sum()
        name = f"{_group_name(label)} (n={members.size})"
        line = ax.step(
            np.r_[xs[0], xs], np.r_[0.0, cdf], where="post", color=color, lw=1.4, label=name
        )[0]
        line.set_gid(f"cdf:{k}")
        if interval is None:
            continue
        band = in_band[order]
        band_x, band_y = xs[band], cdf[band]
        below = int(np.searchsorted(xs, band_x[0], side="left"))  # scores < the band's lowest
        before = cdf[below - 1] if below > 0 else 0.0
        thick = ax.step(
            np.r_[band_x[0], band_x],
            np.r_[before, band_y],
            where="post",
            color=color,
            lw=3.5,
            alpha=0.9,
            solid_capstyle="butt",
            label="_nolegend_",
        )[0]
        thick.set_gid(f"band:{k}")
        ax.fill_between(
            [band_x.min(), band_x.max()],
            1.0 - beta,
            1.0 - alpha,
            color=color,
            alpha=0.18,
            lw=0,
            zorder=0.5,
        )
    if threshold is not None:
        ax.axvline(float(threshold), color="k", ls=":", lw=1.2, label=f"threshold = {threshold:g}")
    ax.set_xlabel("score")
    ax.set_ylabel("within-group CDF  P(score <= t | group)")
    ax.set_ylim(-0.02, 1.02)
    if isinstance(xlim, str) and xlim == "auto":
        low, high = np.quantile(s, [0.01, 0.99])
        margin = 0.05 * (high - low) if high > low else 0.5
        ax.set_xlim(low - margin, high + margin)
    elif xlim is not None:
        ax.set_xlim(*xlim)
    if title is None:
        title = "Score distribution per group"
        if interval is not None:
            title += f" (top-percentile band [{alpha:g}, {beta:g}) shaded)"
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return ax
