"""The per-stratum group constants of the ERMI objective, from the data's group masses.

A stratum is the whole sample (demographic parity) or one true label (equalized odds);
:class:`~fairest.ermi._kernels.Strata` holds each stratum's ``1 / sqrt(p_S|t(r))``, its
weight and which groups it holds. These are host-side (numpy) tables computed once per
fit, or per ``partial_fit`` from the running masses, or from noisy counts in private fits.
"""

from __future__ import annotations

import numpy as np

__all__ = ["strata_constants", "strata_from_mass"]


def strata_constants(strata_codes, groups, weight, n_strata, n_groups, eo_weighting):
    """``Strata`` constants (numpy), the stratum weights and the data's minority fraction rho.

    ``p_S|t(r)`` is the weighted frequency of group r in stratum t; rho is the smallest
    ``(n_tr - 1) / n_t`` over non-empty cells (unweighted counts, spec 6.3).
    """
    cell = strata_codes * n_groups + groups
    mass = np.bincount(cell, weights=weight, minlength=n_strata * n_groups).reshape(
        n_strata, n_groups
    )
    counts = np.bincount(cell, minlength=n_strata * n_groups).reshape(n_strata, n_groups)
    strata, omega = strata_from_mass(mass, eo_weighting)
    n_t = counts.sum(axis=1, keepdims=True)
    fractions = np.divide(counts - 1, n_t, out=np.full(counts.shape, np.inf), where=counts > 0)
    return strata, omega, float(np.min(fractions))


def strata_from_mass(mass, eo_weighting):
    """``Strata`` constants and stratum weights from the (stratum, group) mass table."""
    n_strata = mass.shape[0]
    totals = mass.sum(axis=1, keepdims=True)
    p = np.divide(mass, totals, out=np.zeros_like(mass), where=totals > 0)
    inv_sqrt_p = np.divide(1.0, np.sqrt(p), out=np.zeros_like(p), where=p > 0)
    mask = (p > 0).astype(np.float64)
    if eo_weighting == "uniform" and n_strata > 1:
        omega = mass.sum() / np.maximum(totals[:, 0], np.finfo(float).tiny)
    else:
        omega = np.ones(n_strata)
    return (inv_sqrt_p, omega, mask), omega
