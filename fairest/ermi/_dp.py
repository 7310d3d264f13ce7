"""Noise calibration of DP-FERMI (spec ``ermi.md`` section 6).

Every closed form of the paper is an instance of the *master formula* (spec 6.2)

    sigma^2 = 2 T ln(1/delta) Delta^2 / (epsilon^2 n^2),

with Delta the l2-sensitivity of one record's contribution to the minibatch *sum* of
gradients and sigma the std of the Gaussian added to the *averaged* gradient (moments
accountant of Abadi et al. 2016, constants as in Bassily et al. 2019). It is valid when
``epsilon <= 2 ln(1/delta)`` and ``T >= (n sqrt(epsilon) / (2 m))^2``; otherwise a
:class:`PrivacyWarning` is emitted (not an error, spec 6.2).

Known gaps of the privacy argument (spec 6.9), documented rather than hidden:

1. theta and W are each calibrated to (epsilon, delta) but both are released; the pair is
   about (sqrt(2) epsilon, delta)-DP. ``accounting="joint"`` multiplies both stds by sqrt(2).
2. The group frequencies p_S and the minority fraction rho (``min_group_fraction``) are
   computed from the sensitive data without noise.
3. The accountant assumes random subsampling; ``batching="shuffle"`` is not covered.
4. Under ``privacy_unit="sensitive"`` the guarantee rests on the Lipschitz constant of F
   (``lipschitz_constant``), not on clipping; ``lipschitz_constant="auto"`` makes it hold by
   construction for (multinomial) logistic regression.
5. The closed form is an asymptotic bound; :func:`rdp_epsilon` gives the numeric RDP
   value of the same mechanism with the optional ``dp-accounting`` package.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np

from fairest.ermi import _defaults

__all__ = [
    "PrivacyCalibration",
    "PrivacyWarning",
    "calibrate_privacy",
    "dp_fermi_noise",
    "paper_all_features_noise",
    "effective_noise",
    "noise_multiplier",
    "check_validity",
    "rdp_epsilon",
]


class PrivacyWarning(UserWarning):
    """The closed-form privacy calibration is used outside its validity conditions."""


class PrivacyCalibration(NamedTuple):
    """Noise and clipping of one (DP-)FERMI fit, from :func:`calibrate_privacy`."""

    delta: float | None  # None when non-private
    sigma_theta: float  # std actually added to the averaged theta-gradient (spec 6.6)
    sigma_w: float  # std actually added to the averaged W-gradient
    noise_multipliers: np.ndarray  # (2,) stds over the sensitivities (theta, W)
    epsilon_spent: float  # inf when non-private
    min_group_fraction: float  # the minority fraction rho the noise formula used
    lipschitz_constant: float | None  # L_theta used (``"auto"`` resolved); None non-private
    clip_sample: float  # per-sample clipping norm of the theta-gradients (inf: none)
    clip_batch: float  # clipping norm of the averaged theta-gradient (inf: none)


def calibrate_privacy(
    X,
    batch_size,
    n_iter,
    *,
    epsilon,
    delta=None,
    data_min_group_fraction,
    min_group_fraction=None,
    fairness_weight=_defaults.FAIRNESS_WEIGHT,
    weight_max=1.0,
    binary=True,
    privacy_unit="sensitive",
    clip_mode="per_sample",
    clip_norm=_defaults.CLIP_NORM,
    lipschitz_constant=_defaults.LIPSCHITZ_CONSTANT,
    dual_radius=_defaults.DUAL_RADIUS,
    noise_scaling="lambda",
    accounting="paper",
    stacklevel=2,
) -> PrivacyCalibration:
    """Noise stds, clipping and privacy accounting of a (DP-)FERMI fit (spec section 6).

    Checks the settings (a public ``min_group_fraction`` above the data's own raises;
    ``privacy_unit="all"`` needs per-sample clipping; every group needs 2 samples), sets
    ``delta`` (default ``1 / n**2``) and the Lipschitz constant (``"auto"``: ``c max_i
    ||(1, x_i)||``), calibrates the stds with :func:`dp_fermi_noise`, warns
    (:class:`PrivacyWarning`) outside the validity range of the closed form, scales
    them with lambda (:func:`effective_noise`) and reports the noise multipliers.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Training features (their norms set ``lipschitz_constant="auto"``).
    batch_size : int
        Minibatch size m (at most n).
    n_iter : int
        SGDA iterations T.
    epsilon : float or None
        Privacy budget; ``None`` is non-private (no noise, no clipping).
    delta : float or None, default=None
        ``None`` means ``1 / n**2``.
    data_min_group_fraction : float
        The data's own minority fraction ``(min_r n_r - 1) / n`` (per label stratum for
        equalized odds).
    min_group_fraction : float or None, default=None
        A public lower bound used instead of the data's own.
    fairness_weight : float, default=1.0
        Weight lambda of the ERMI penalty.
    weight_max : float, default=1.0
        Largest stratum weight omega.
    binary : bool, default=True
        One logit (``True``) or a softmax (for ``"auto"``).
    privacy_unit, clip_mode, clip_norm, lipschitz_constant, dual_radius, noise_scaling, accounting
        As the estimator's parameters of the same names.
    stacklevel : int, default=2
        Stack level of the :class:`PrivacyWarning` relative to this function (2: its
        caller).

    Returns
    -------
    PrivacyCalibration
    """
    rho = data_min_group_fraction
    if min_group_fraction is not None:
        if min_group_fraction > rho + 1e-12:
            raise ValueError(
                f"min_group_fraction={min_group_fraction} exceeds the data's own "
                f"minority fraction (min_r n_r - 1) / n = {rho:.6g}; the noise would "
                "be too small."
            )
        rho = float(min_group_fraction)
    inf = math.inf
    if epsilon is None:
        return PrivacyCalibration(None, 0.0, 0.0, np.zeros(2), inf, rho, None, inf, inf)
    if privacy_unit == "all" and clip_mode != "per_sample":
        raise ValueError(
            "privacy_unit='all' needs clip_mode='per_sample' (it bounds the sensitivity)."
        )
    if rho <= 0:
        raise ValueError(
            "a private fit needs min_group_fraction_ > 0: every group (every "
            "label-group cell for equalized odds) needs at least 2 samples."
        )
    n = X.shape[0]
    delta = float(delta) if delta is not None else 1.0 / n**2
    if lipschitz_constant == "auto":
        factor = _defaults.LIPSCHITZ_AUTO_BINARY if binary else _defaults.LIPSCHITZ_AUTO_SOFTMAX
        lipschitz = factor * float(np.sqrt(1.0 + np.max(np.sum(X * X, axis=1))))
    else:
        lipschitz = float(lipschitz_constant)
    lam = fairness_weight
    sigma_theta, sigma_w = dp_fermi_noise(
        n,
        batch_size,
        n_iter,
        epsilon,
        delta,
        rho,
        lipschitz=lipschitz,
        radius=dual_radius,
        unit=privacy_unit,
        clip=clip_norm,
        fairness_weight=lam,
        weight_max=weight_max,
        accounting=accounting,
    )
    check_validity(n, batch_size, n_iter, epsilon, delta, stacklevel=stacklevel)
    used = effective_noise(sigma_theta, sigma_w, lam, unit=privacy_unit, scaling=noise_scaling)
    base = noise_multiplier(n, batch_size, n_iter, epsilon, delta)
    if accounting == "joint":
        base *= math.sqrt(2.0)
    raw = np.array([sigma_theta, sigma_w])
    if privacy_unit == "sensitive":  # sensitivity of the lam-scaled part
        scale = np.divide(used, lam * raw, out=np.full(2, np.inf), where=lam * raw > 0)
    else:
        scale = np.divide(used, raw, out=np.full(2, np.inf), where=raw > 0)
    return PrivacyCalibration(
        delta=delta,
        sigma_theta=used[0],
        sigma_w=used[1],
        noise_multipliers=base * scale,
        epsilon_spent=float(epsilon),
        min_group_fraction=rho,
        lipschitz_constant=lipschitz,
        clip_sample=clip_norm if clip_mode == "per_sample" else inf,
        clip_batch=clip_norm if clip_mode == "batch" else inf,
    )


def dp_fermi_noise(
    n_samples,
    batch_size,
    n_iter,
    epsilon,
    delta,
    min_group_fraction,
    *,
    lipschitz=5.0,
    radius=5.0,
    unit="sensitive",
    clip=5.0,
    fairness_weight=1.0,
    weight_max=1.0,
    accounting="paper",
):
    """Standard deviations ``(sigma_theta, sigma_w)`` of the DP-FERMI noise, before lambda-scaling.

    Parameters
    ----------
    n_samples : int
        Number n of training samples.
    batch_size : int
        Minibatch size m. The stds do not depend on it (the noise is added to the
        averaged gradient); it only enters the validity condition
        ``T >= (n sqrt(epsilon) / (2 m))^2``, which the estimator checks separately.
    n_iter : int
        Number T of SGDA iterations, ``n_epochs * ceil(n / m)``.
    epsilon : float or None
        Privacy budget epsilon; ``None`` (non-private) gives zeros.
    delta : float
        Privacy parameter delta, in (0, 1).
    min_group_fraction : float
        Minority fraction rho (every group has frequency >= rho in neighbouring data
        sets); must be positive for a private calibration.
    lipschitz : float, default=5.0
        Lipschitz constant L_theta of F(x, .), used by ``unit="sensitive"``.
    radius : float, default=5.0
        Radius R = D of the Frobenius ball of W (bounds |W_rj|).
    unit : {"sensitive", "all"}, default="sensitive"
        Privacy unit. ``"sensitive"`` (spec 6.3): ``sigma_theta^2 = 16 L^2 D^2 T
        ln(1/delta) / (eps^2 n^2 rho)``, ``sigma_w^2 = 16 T ln(1/delta) / (eps^2 n^2
        rho)``. ``"all"`` (spec 6.4, generic clipped rule): ``sigma_theta^2 = 8 T C^2
        ln(1/delta) / (eps^2 n^2)`` and ``sigma_w^2 = 8 T B_W^2 ln(1/delta) / (eps^2
        n^2)`` with ``B_W = 2 lambda omega_max (R + 1/sqrt(rho))``.
    clip : float, default=5.0
        Per-sample clipping norm C_theta of the theta-gradients, used by ``unit="all"``.
    fairness_weight : float, default=1.0
        Weight lambda of the ERMI penalty; it only enters B_W of ``unit="all"``.
    weight_max : float, default=1.0
        Largest stratum weight omega (1 except for equalized odds with
        ``eo_weighting="uniform"``, spec 6.3); multiplies both stds.
    accounting : {"paper", "joint"}, default="paper"
        ``"paper"`` calibrates theta and W each to (epsilon, delta); ``"joint"``
        multiplies both stds by sqrt(2) so that the pair is (epsilon, delta)-DP
        (spec 6.9.1).

    Returns
    -------
    sigma_theta : float
        Noise std of the averaged theta-gradient, before lambda-scaling.
    sigma_w : float
        Noise std of the averaged W-gradient, before lambda-scaling.
    """
    if epsilon is None:
        return 0.0, 0.0
    rho = min_group_fraction
    if rho <= 0:
        raise ValueError(
            f"min_group_fraction must be positive for a private fit; got {rho}. Every "
            "group needs at least 2 samples (min_group_fraction = (min_r n_r - 1) / n)."
        )
    ln = math.log(1.0 / delta)
    base = math.sqrt(2.0 * n_iter * ln) / (epsilon * n_samples)  # sigma per unit of Delta
    if unit == "sensitive":
        # Delta_theta^2 = 8 D^2 L^2 / rho, Delta_W^2 = 8 / rho (spec 6.3)
        sigma_theta = base * math.sqrt(8.0 / rho) * radius * lipschitz * weight_max
        sigma_w = base * math.sqrt(8.0 / rho) * weight_max
    elif unit == "all":
        bound_w = 2.0 * fairness_weight * weight_max * (radius + 1.0 / math.sqrt(rho))
        sigma_theta = base * 2.0 * clip
        sigma_w = base * 2.0 * bound_w
    else:
        raise ValueError(f"unit must be 'sensitive' or 'all'; got {unit!r}.")
    if accounting == "joint":
        sigma_theta *= math.sqrt(2.0)
        sigma_w *= math.sqrt(2.0)
    elif accounting != "paper":
        raise ValueError(f"accounting must be 'paper' or 'joint'; got {accounting!r}.")
    return sigma_theta, sigma_w


def paper_all_features_noise(
    n_samples, n_iter, epsilon, delta, min_group_fraction, *, lipschitz, radius, n_classes
):
    """The paper's all-features stds (Thm 3.3, second part), for reference only (spec 6.4).

    Returns ``(sigma_theta_statement, sigma_theta_proof, sigma_w)``. Both ignore the
    sensitivity of the loss gradient and are not used by the estimator.
    """
    rho = min_group_fraction
    c = n_iter * math.log(1.0 / delta) / (epsilon**2 * n_samples**2)
    L2, D2, l2 = lipschitz**2, radius**2, n_classes**2
    statement = math.sqrt(64 * L2 * D2 * c / rho + 32 * D2**2 * L2 * l2 * c)
    proof = math.sqrt(8 * L2 * D2 * c * (4 / rho + l2))
    sigma_w = math.sqrt(32 * c * (1 / rho + D2))
    return statement, proof, sigma_w


def effective_noise(sigma_theta, sigma_w, fairness_weight, *, unit="sensitive", scaling="lambda"):
    """Stds ``(s_theta, s_w)`` actually added to the updates (spec 6.6).

    Under ``unit="sensitive"`` only the lambda-scaled part of the gradients depends on s:
    ``"lambda"`` (default) uses ``(lam sigma_theta, lam sigma_w)``, ``"paper_text"``
    ``(lam sigma_theta, sigma_w)`` (Alg. 1 as printed), ``"authors_code"``
    ``(sigma_theta, lam sigma_w)``. Under ``unit="all"`` the stds are used unscaled.
    """
    if unit == "all":
        return sigma_theta, sigma_w
    lam = fairness_weight
    if scaling == "lambda":
        return lam * sigma_theta, lam * sigma_w
    if scaling == "paper_text":
        return lam * sigma_theta, sigma_w
    if scaling == "authors_code":
        return sigma_theta, lam * sigma_w
    raise ValueError(
        f"noise_scaling must be 'lambda', 'paper_text' or 'authors_code'; got {scaling!r}."
    )


def noise_multiplier(n_samples, batch_size, n_iter, epsilon, delta):
    """Noise std over the sensitivity of the averaged gradient, ``z = (m/n) sqrt(2 T ln(1/delta)) / eps``.

    With the master formula ``sigma = z Delta / m`` for every stream, so z does not depend
    on Delta (the ``noise_multiplier`` of DP-SGD libraries).
    """
    if epsilon is None:
        return 0.0
    return batch_size * math.sqrt(2.0 * n_iter * math.log(1.0 / delta)) / (epsilon * n_samples)


def check_validity(n_samples, batch_size, n_iter, epsilon, delta, *, stacklevel=2):
    """Warn when the closed form is used outside ``eps <= 2 ln(1/delta)``, ``T >= (n sqrt(eps)/(2m))^2``."""
    if epsilon is None:
        return
    bound = 2.0 * math.log(1.0 / delta)
    if epsilon > bound:
        warnings.warn(
            f"dp_epsilon={epsilon} exceeds 2 ln(1/delta) = {bound:.4g}: the closed-form "
            "noise calibration (moments accountant) is outside its validity range.",
            PrivacyWarning,
            stacklevel=stacklevel + 1,
        )
    t_min = (n_samples * math.sqrt(epsilon) / (2.0 * batch_size)) ** 2
    if n_iter < t_min:
        warnings.warn(
            f"{n_iter} iterations are fewer than (n sqrt(eps) / (2 m))^2 = {t_min:.4g}: "
            "the closed-form noise calibration is outside its validity range; use more "
            "epochs or a larger batch.",
            PrivacyWarning,
            stacklevel=stacklevel + 1,
        )


def rdp_epsilon(noise_multiplier_value, sampling_rate, n_iter, delta):
    """Epsilon of T Poisson-subsampled Gaussian steps by the RDP accountant of ``dp-accounting``.

    A numeric cross-check of the closed form (spec 6.9.5). Needs the optional extra
    ``dp`` (``pip install dp-accounting``); raises ``ImportError`` otherwise.
    """
    try:
        import dp_accounting
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "rdp_epsilon needs the optional dependency dp-accounting (pip install 'fairest[dp]')."
        ) from error
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(
            sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier_value)
        ),
        int(n_iter),
    )
    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))
