"""Synthetic data with group structure and controllable group bias.

Both generators are vectorised (no Python loop over samples; the only loops run over
row chunks of fixed size), draw float32 directly when asked, and handle 10 million rows:
10 million x 10 float32 features are 0.4 GB and a single pass of numpy work.
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.special import expit

from fairest.utils._tuning import HOST_TUNING

__all__ = ["make_grouped_classification", "make_grouped_regression"]

MAX_GROUPS = 64


def _rng(random_state) -> np.random.Generator:
    """A numpy Generator from None, an int, a Generator or a legacy RandomState."""
    if random_state is None or isinstance(random_state, (numbers.Integral, np.integer)):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1, size=4))
    raise ValueError(
        f"random_state must be None, an int, a numpy Generator or a RandomState; "
        f"got {random_state!r}."
    )


def _check_int(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an int; got {value!r}.")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {bound}; got {value}.")
    return int(value)


def _check_real(name, value):
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating)):
        raise TypeError(f"{name} must be a real number; got {value!r}.")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite; got {value}.")
    return float(value)


def _group_counts(n_samples, n_groups, group_proportions) -> np.ndarray:
    """Exact group sizes: round n * p by the largest-remainder method (sum = n)."""
    if group_proportions is None:
        p = np.full(n_groups, 1.0 / n_groups)
    else:
        p = np.asarray(group_proportions, dtype=np.float64)
        if p.shape != (n_groups,):
            raise ValueError(
                f"group_proportions must have n_groups={n_groups} entries; got shape {p.shape}."
            )
        if not np.all(np.isfinite(p)) or np.any(p < 0):
            raise ValueError("group_proportions must be finite and non-negative.")
        if not np.isclose(p.sum(), 1.0, rtol=0, atol=1e-6):
            raise ValueError(f"group_proportions must sum to 1; they sum to {p.sum()}.")
        p = p / p.sum()
    raw = n_samples * p
    counts = np.floor(raw).astype(np.int64)
    remainder = n_samples - counts.sum()
    if remainder:
        order = np.argsort(-(raw - counts), kind="stable")
        counts[order[:remainder]] += 1
    return counts


def _group_offsets(n_groups, span) -> np.ndarray:
    """Offsets decreasing linearly from +span/2 (group 0) to -span/2 (last group)."""
    if n_groups == 1:
        return np.zeros(1)
    return span * (0.5 - np.arange(n_groups) / (n_groups - 1))


def _grouped_features(rng, n_samples, n_features, n_groups, group_proportions, group_bias, dtype):
    """Group codes (shuffled, exact counts), group centroids and features X."""
    counts = _group_counts(n_samples, n_groups, group_proportions)
    groups = np.repeat(np.arange(n_groups, dtype=np.int32), counts)
    rng.shuffle(groups)
    # Centroid of group g: group_bias * (offset_g * u + sqrt(1/d) * z_g): a shared
    # direction u (unit vector) ordered by group code plus a group-specific random part.
    u = rng.standard_normal(n_features)
    u /= np.linalg.norm(u)
    z = rng.standard_normal((n_groups, n_features)) / np.sqrt(n_features)
    centroids = group_bias * (2.0 * _group_offsets(n_groups, 1.0)[:, None] * u + z)
    X = rng.standard_normal((n_samples, n_features), dtype=dtype)
    if group_bias != 0.0:
        centroids_cast = centroids.astype(dtype)
        chunk = HOST_TUNING.synthetic_chunk_rows
        for start in range(0, n_samples, chunk):
            stop = min(start + chunk, n_samples)
            X[start:stop] += centroids_cast[groups[start:stop]]
    return X, groups, centroids


def _finish(X, y, groups, group_names, return_groups):
    if not return_groups:
        return X, y
    if group_names is not None:
        names = np.asarray(group_names)
        groups = names[groups]
    return X, y, groups


def _check_common(n_samples, n_features, n_groups, group_bias, label_bias, dtype, group_names):
    n_samples = _check_int("n_samples", n_samples, 1)
    n_features = _check_int("n_features", n_features, 1)
    n_groups = _check_int("n_groups", n_groups, 1, MAX_GROUPS)
    group_bias = _check_real("group_bias", group_bias)
    label_bias = _check_real("label_bias", label_bias)
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32 or float64; got {dtype}.")
    if group_names is not None and len(group_names) != n_groups:
        raise ValueError(
            f"group_names must have n_groups={n_groups} entries; got {len(group_names)}."
        )
    return n_samples, n_features, n_groups, group_bias, label_bias, dtype


def make_grouped_classification(
    n_samples=1000,
    n_features=10,
    n_groups=2,
    *,
    group_proportions=None,
    group_bias=1.0,
    label_bias=1.0,
    class_sep=2.0,
    base_rate=0.5,
    dtype=np.float64,
    group_names=None,
    return_groups=True,
    random_state=None,
):
    """Generate a binary classification problem with groups and group bias.

    The generative model, for sample ``i`` in group ``g = groups[i]``:

    1. **Groups.** Group ``g`` gets exactly ``n_g`` samples, ``n * group_proportions[g]``
       rounded by the largest-remainder method (so the sizes sum to ``n_samples``), in a
       random order.
    2. **Features (feature bias).** ``X[i] = z_i + m_g`` with ``z_i ~ N(0, I_d)``. The
       group centroid is ``m_g = group_bias * (s_g * u + r_g)``, where ``u`` is a random
       unit vector shared by all groups, ``s_g = 1 - 2 g / (G - 1)`` runs from +1
       (group 0) to -1 (last group), and ``r_g ~ N(0, I_d / d)`` is a group-specific
       random part. ``group_bias=0`` gives identically distributed features.
    3. **Labels (label bias).** ``w ~ N(0, I_d * class_sep**2 / d)`` (so ``z @ w`` has
       standard deviation about ``class_sep``) and

       ``P(y_i = 1) = sigmoid(logit(base_rate) + (X[i] - mean_g(m_g)) @ w + b_g)``

       with ``b_g = label_bias * (1/2 - g / (G - 1))``: the logit offset falls linearly
       from ``+label_bias / 2`` for group 0 to ``-label_bias / 2`` for the last group
       (0 for a single group). So group 0 is the most favoured, and ``label_bias`` is
       the difference of log-odds between the first and the last group at equal
       features. The feature shift also moves base rates (through ``m_g @ w``).
       ``y_i`` is drawn from that Bernoulli law.

    With ``group_bias=0`` and ``label_bias=0`` the groups are exchangeable (equal base
    rates up to sampling noise).

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples. Up to 10 million and more; memory is about
        ``n_samples * n_features * itemsize`` plus a few vectors of length ``n_samples``.
    n_features : int, default=10
        Number of features.
    n_groups : int, default=2
        Number of groups, 1 to 64.
    group_proportions : array-like of shape (n_groups,), default=None
        Share of each group; non-negative, summing to 1. ``None`` means equal shares.
        Sizes are exact (see above), e.g. ``[0.9, 0.1]`` for an imbalanced pair.
    group_bias : float, default=1.0
        Scale of the group centroids (feature bias).
    label_bias : float, default=1.0
        Log-odds gap between group 0 and the last group (label bias); may be negative.
    class_sep : float, default=2.0
        Standard deviation (about) of the linear score ``z @ w``; larger is easier.
    base_rate : float, default=0.5
        Base rate at zero score: the intercept is ``logit(base_rate)``. The realised
        overall rate is close to it only when the biases are symmetric.
    dtype : {np.float64, np.float32}, default=np.float64
        Dtype of ``X``; float32 halves the memory and is drawn directly in float32.
    group_names : array-like of shape (n_groups,), default=None
        If given, ``groups`` holds ``group_names[code]`` instead of the int codes.
    return_groups : bool, default=True
        If False, return only ``(X, y)``.
    random_state : int, numpy Generator, RandomState or None, default=None
        Seed. The same seed gives the same output, bit for bit.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The features.
    y : ndarray of shape (n_samples,), dtype int32
        Binary labels 0/1.
    groups : ndarray of shape (n_samples,)
        Group codes (int32, ``0..n_groups-1``) or labels from ``group_names``. Only when
        ``return_groups`` is True.

    See Also
    --------
    make_grouped_regression : The regression counterpart.
    sklearn.datasets.make_classification : Classification data without groups.

    References
    ----------
    .. [1] T. Calders and S. Verwer, "Three naive Bayes approaches for
       discrimination-free classification", Data Mining and Knowledge Discovery 21(2),
       2010 (biased synthetic data with a sensitive attribute).
    .. [2] M. B. Zafar, I. Valera, M. Gomez Rodriguez and K. P. Gummadi, "Fairness
       constraints: mechanisms for fair classification", Proc. AISTATS, 2017 (Gaussian
       groups with shifted means).

    Examples
    --------
    >>> from fairest.datasets import make_grouped_classification
    >>> X, y, groups = make_grouped_classification(
    ...     n_samples=1000, n_groups=3, group_proportions=[0.6, 0.3, 0.1], random_state=0)
    >>> X.shape, [int((groups == g).sum()) for g in range(3)]
    ((1000, 10), [600, 300, 100])
    """
    n_samples, n_features, n_groups, group_bias, label_bias, dtype = _check_common(
        n_samples, n_features, n_groups, group_bias, label_bias, dtype, group_names
    )
    class_sep = _check_real("class_sep", class_sep)
    base_rate = _check_real("base_rate", base_rate)
    if not 0.0 < base_rate < 1.0:
        raise ValueError(f"base_rate must be in (0, 1); got {base_rate}.")
    rng = _rng(random_state)
    X, groups, centroids = _grouped_features(
        rng, n_samples, n_features, n_groups, group_proportions, group_bias, dtype
    )
    w = rng.standard_normal(n_features) * (class_sep / np.sqrt(n_features))
    # centre the score so that the intercept sets the base rate at the average centroid
    intercept = np.log(base_rate / (1.0 - base_rate)) - centroids.mean(axis=0) @ w
    offsets = _group_offsets(n_groups, label_bias) + intercept
    logit = X @ w.astype(dtype)
    logit += offsets.astype(dtype)[groups]
    p = expit(logit)
    y = (rng.random(n_samples, dtype=dtype) < p).astype(np.int32)
    return _finish(X, y, groups, group_names, return_groups)


def make_grouped_regression(
    n_samples=1000,
    n_features=10,
    n_groups=2,
    *,
    group_proportions=None,
    group_bias=1.0,
    label_bias=1.0,
    noise=1.0,
    group_noise=None,
    dtype=np.float64,
    group_names=None,
    return_groups=True,
    random_state=None,
):
    """Generate a linear regression problem with groups and group bias.

    Groups and features are drawn exactly as in :func:`make_grouped_classification`
    (exact group sizes, ``X[i] = z_i + m_g`` with centroids scaled by ``group_bias``).
    The target is

    ``y_i = X[i] @ w + b_g + sigma_g * e_i``,  ``e_i ~ N(0, 1)``,

    with ``w ~ N(0, I_d / d)``, the target offset ``b_g = label_bias * (1/2 - g/(G-1))``
    (from ``+label_bias / 2`` for group 0 to ``-label_bias / 2`` for the last group) and
    the noise level ``sigma_g = noise * group_noise[g]`` (``noise`` for every group by
    default). So ``label_bias`` is the gap of mean targets between the first and the last
    group at equal features, and ``group_noise`` makes some groups harder to fit.

    Parameters
    ----------
    n_samples, n_features, n_groups, group_proportions, group_bias : see
        :func:`make_grouped_classification`.
    label_bias : float, default=1.0
        Gap of the target offsets between group 0 and the last group.
    noise : float, default=1.0
        Standard deviation of the Gaussian noise.
    group_noise : array-like of shape (n_groups,), default=None
        Per-group multipliers of ``noise`` (non-negative). ``None`` means all 1.
    dtype : {np.float64, np.float32}, default=np.float64
        Dtype of ``X`` and ``y``.
    group_names, return_groups, random_state : see
        :func:`make_grouped_classification`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The features.
    y : ndarray of shape (n_samples,), same dtype as ``X``
        The targets.
    groups : ndarray of shape (n_samples,)
        Group labels, only when ``return_groups`` is True.

    See Also
    --------
    make_grouped_classification : The classification counterpart.

    References
    ----------
    .. [1] A. Agarwal, M. Dudík and Z. S. Wu, "Fair regression: quantitative definitions
       and reduction-based algorithms", Proc. ICML, 2019.

    Examples
    --------
    >>> from fairest.datasets import make_grouped_regression
    >>> X, y, groups = make_grouped_regression(n_samples=500, random_state=0)
    >>> X.shape, y.shape
    ((500, 10), (500,))
    """
    n_samples, n_features, n_groups, group_bias, label_bias, dtype = _check_common(
        n_samples, n_features, n_groups, group_bias, label_bias, dtype, group_names
    )
    noise = _check_real("noise", noise)
    if noise < 0:
        raise ValueError(f"noise must be non-negative; got {noise}.")
    if group_noise is None:
        scales = np.ones(n_groups)
    else:
        scales = np.asarray(group_noise, dtype=np.float64)
        if scales.shape != (n_groups,) or not np.all(np.isfinite(scales)) or np.any(scales < 0):
            raise ValueError(
                f"group_noise must be {n_groups} finite non-negative numbers; got {group_noise!r}."
            )
    rng = _rng(random_state)
    X, groups, _ = _grouped_features(
        rng, n_samples, n_features, n_groups, group_proportions, group_bias, dtype
    )
    w = rng.standard_normal(n_features) / np.sqrt(n_features)
    y = X @ w.astype(dtype)
    y += _group_offsets(n_groups, label_bias).astype(dtype)[groups]
    eps = rng.standard_normal(n_samples, dtype=dtype)
    eps *= (noise * scales).astype(dtype)[groups]
    y += eps
    return _finish(X, y, groups, group_names, return_groups)
