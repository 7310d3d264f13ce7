"""Groups too small for a partial statistical parity tolerance: every group's floor, the
least exact pSP its percentile band can reach against any other group, and the
:class:`~fairest.utils.FairnessWarning` text that names the groups above ``tolerance``.

A band of ``m`` samples moves its CCDF in steps of ``1 / m``; another group's CCDF stays
put at those scores unless one of its own band's scores ties them, so no model whose
scores do not tie across groups has a pSP below ``1 / (2 m)`` for that group. On
practitioner data (ACSPublicCoverage by race: groups of 15-40 training rows, bands of
width 0.1 holding 1-4 of them) the tolerance then cannot be met, and chasing it
(tightening rounds, the IDCA fallback) only costs time and accuracy.
"""

from __future__ import annotations

import numpy as np

from fairest.partial import _defaults
from fairest.partial._common import METRICS
from fairest.utils._degenerate import plain_label

__all__ = ["band_floors", "too_small", "small_groups_message"]


def band_floors(settings, codes, sample_weight, num_groups, interval):
    """Per group, a lower bound on the exact pSP of any model against any other group
    (``None`` for pDP or one group).

    A group's band CCDF jumps at each of its band's scores by that sample's weight share
    of the band, while another group's CCDF stays put there unless one of its band's
    scores ties it; so the KS distance of the two bands is at least half the smallest
    such jump. With equal weights in the group the band holds ``m = ceil(beta n) -
    ceil(alpha n)`` samples (the rule of :func:`fairest.metrics.partial_statistical_parity`)
    and the floor is ``1 / (2 m)`` (1 for an empty band); otherwise the band's mass is
    at most ``(beta - alpha) W + w_max`` and the floor ``w_min / (2 ((beta - alpha) W +
    w_max))``. A group of 15 rows on a band of width 0.1 (one sample) has floor 0.5: no
    model without ties between groups has a pSP below 0.5.
    """
    if METRICS[settings.metric] != "statistical" or num_groups < 2:
        return None
    lo, hi = interval
    floors = np.ones(num_groups)
    for k in range(num_groups):
        weights = sample_weight[codes == k]
        weights = weights[weights > 0]
        if not weights.size:
            continue
        if np.ptp(weights) == 0:
            n = weights.size
            eps = _defaults.CEIL_EPS
            m = int(np.ceil(hi * n - eps)) - int(np.ceil(lo * n - eps))
            floors[k] = 0.5 / m if m > 0 else 1.0
        else:
            mass = (hi - lo) * weights.sum() + weights.max()
            floors[k] = weights.min() / (2.0 * mass)
    return floors


def too_small(settings, floors):
    """Mask of the groups whose floor (:func:`band_floors`) exceeds ``tolerance``, or
    ``None`` when there is none."""
    if floors is None:
        return None
    small = floors > float(settings.tolerance)
    return small if small.any() else None


def small_groups_message(
    name, metric, tolerance, interval, labels, codes, floors, small, unfairness, judged
):
    """The ``FairnessWarning`` text of a fit with groups too small for ``tolerance``:
    each with its training rows and floor, the achieved exact metric over every group
    and over the others."""
    counts = np.bincount(codes, minlength=len(labels))
    shown = ", ".join(
        f"{plain_label(labels[k])!r} ({counts[k]} rows, floor {floors[k]:.3g})"
        for k in np.flatnonzero(small)
    )
    others = int(np.sum(~small))
    among = (
        f"among the other {others} groups it is {judged:.4g}"
        if others >= 2
        else "no two other groups are left to constrain"
    )
    return (
        f"{name}: groups {shown} are too small for tolerance={tolerance:g} on interval "
        f"{tuple(interval)}: a group whose band holds m samples has an exact {metric} of "
        "at least 1/(2m) against any other group unless their scores tie. They are held "
        f"to that floor; the exact training {metric} is {unfairness:.4g} over all groups, "
        f"{among}. Widen the interval, raise tolerance, or merge small groups."
    )
