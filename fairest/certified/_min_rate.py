"""Certificates of a rate floor: every group's selection rate, recall or precision at
least ``min_rate`` on the population (the promise of levelling up).

Each group's rate is a mean of 0/1 values over its eligible rows (all rows, the positives,
or the predicted positives). The floor is certified when every group's exact one-sided
Clopper-Pearson lower bound at level ``delta`` reaches it: an intersection-union test
(Berger 1982), whose error is at most ``delta`` without dividing ``delta`` over the
groups, since a model that misses the floor in some group ``g`` is certified only if
``g``'s own bound, wrong with probability at most ``delta``, says otherwise. A group
without eligible rows cannot be certified (its lower bound is 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

import numpy as np
import pandas as pd

from fairest.certified._bounds import RateStatistics, rate_bounds
from fairest.certified._certificate import binary_outcomes
from fairest.metrics._checks import encode_sensitive_features
from fairest.utils._degenerate import plain_label

__all__ = ["MinRateCertificate", "certify_min_rate"]

# the rows each rate is a mean over, and the 0/1 value of a row
_ELIGIBLE = {
    "selection_rate": lambda y01, pred01: np.ones_like(y01, dtype=bool),
    "recall": lambda y01, pred01: y01 == 1,
    "precision": lambda y01, pred01: pred01 == 1,
}
_VALUE = {
    "selection_rate": lambda y01, pred01: pred01,
    "recall": lambda y01, pred01: pred01,
    "precision": lambda y01, pred01: y01,
}


@dataclass(frozen=True)
class MinRateCertificate:
    """The verdict of :func:`certify_min_rate` with its per-group bounds.

    Parameters
    ----------
    passed : bool
        Every group's lower bound is at least ``min_rate``.
    rate : str
        ``"selection_rate"``, ``"recall"`` or ``"precision"``.
    min_rate : float
        The floor.
    delta : float
        Largest probability of certifying a model that misses the floor in some group
        (each group's lower bound is a one-sided bound at this level).
    groups : ndarray of shape (n_groups,)
        Group labels.
    estimate, lower : ndarray of shape (n_groups,)
        Each group's held-out rate and its lower bound.
    rows : ndarray of shape (n_groups,)
        Each group's eligible rows.
    """

    passed: bool
    rate: str
    min_rate: float
    delta: float
    groups: np.ndarray
    estimate: np.ndarray
    lower: np.ndarray
    rows: np.ndarray

    def promise(self) -> str:
        """The certificate as one sentence: what holds, with which probability.

        Returns
        -------
        sentence : str
            The promise and the verdict.
        """
        worst = int(np.argmin(self.lower))
        verdict = "certified" if self.passed else "not certified"
        return (
            f"A model whose {self.rate} on the population the held-out rows were drawn "
            f"from is below {self.min_rate:g} in some group is certified with probability "
            f"at most {self.delta:g}; the smallest of the groups' lower bounds is "
            f"{self.lower[worst]:.4g} (group {plain_label(self.groups[worst])!r}, "
            f"{int(self.rows[worst])} eligible rows), so {self.rate} >= {self.min_rate:g} "
            f"for every group is {verdict}."
        )

    def to_frame(self) -> pd.DataFrame:
        """The per-group bounds as a table.

        Returns
        -------
        frame : pandas.DataFrame
            One row per group: ``group``, ``rows``, ``estimate``, ``lower``,
            ``certified`` (its lower bound reaches ``min_rate``).
        """
        return pd.DataFrame(
            {
                "group": [plain_label(g) for g in self.groups],
                "rows": self.rows,
                "estimate": self.estimate,
                "lower": self.lower,
                "certified": self.lower >= self.min_rate,
            }
        )

    def __repr__(self) -> str:
        return f"MinRateCertificate({'passed' if self.passed else 'failed'}): {self.promise()}"


def certify_min_rate(
    fitted_model, X, y, *, sensitive_features, min_rate, rate="recall", delta=0.05
) -> MinRateCertificate:
    """Certify on held-out rows that every group's rate is at least ``min_rate``.

    The promise of :class:`~fairest.postprocessing.LevellingUpClassifier` (and of any
    binary classifier): the floor is certified when every group's exact one-sided
    Clopper-Pearson lower bound of its selection rate, recall or precision, at level
    ``delta``, reaches ``min_rate``. A model that misses the floor in some group on the
    population is certified with probability at most ``delta`` (an intersection-union
    test: no division of ``delta`` over the groups is needed for this verdict).

    Parameters
    ----------
    fitted_model : classifier
        A fitted binary classifier; a ``predict`` that takes ``sensitive_features``
        receives them (group-specific thresholds).
    X : array-like of shape (n_samples, n_features)
        Held-out rows, not used in fitting the model.
    y : array-like of shape (n_samples,)
        Their labels.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Their groups.
    min_rate : float in [0, 1]
        The floor every group's rate must reach.
    rate : {"selection_rate", "recall", "precision"}, default="recall"
        Which rate.
    delta : float in (0, 1), default=0.05
        Error probability of the certificate.

    Returns
    -------
    certificate : MinRateCertificate
        The verdict, with each group's estimate and lower bound.

    Raises
    ------
    ValueError
        For a ``rate`` other than the three, ``min_rate`` outside [0, 1], ``delta``
        outside (0, 1), or the inputs ``certify_fairness`` refuses (a regressor,
        predictions outside the model's classes).

    References
    ----------
    .. [1] C. J. Clopper and E. S. Pearson. "The use of confidence or fiducial limits
       illustrated in the case of the binomial". Biometrika 26 (1934).
    .. [2] R. L. Berger. "Multiparameter hypothesis testing and acceptance sampling".
       Technometrics 24 (1982).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from fairest.certified import certify_min_rate
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4000, 2))
    >>> groups = rng.choice(["a", "b"], size=4000)
    >>> y = (X[:, 0] + rng.normal(size=4000) > 0).astype(int)
    >>> model = LogisticRegression().fit(X[:2000], y[:2000])
    >>> certificate = certify_min_rate(
    ...     model, X[2000:], y[2000:], sensitive_features=groups[2000:], min_rate=0.65
    ... )
    >>> bool(certificate.passed)
    True
    """
    if rate not in _ELIGIBLE:
        raise ValueError(f"rate must be one of {tuple(_ELIGIBLE)}; got {rate!r}.")
    if not isinstance(min_rate, Real) or not 0.0 <= min_rate <= 1.0:
        raise ValueError(f"min_rate must be a number in [0, 1]; got {min_rate!r}.")
    if not isinstance(delta, Real) or not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1); got {delta!r}.")
    outcomes = binary_outcomes(
        fitted_model, X, y, False, sensitive_features, caller="certify_min_rate"
    )
    y01, pred01 = outcomes.y01, outcomes.pred01
    codes, groups = encode_sensitive_features(sensitive_features, y01.shape[0])
    num_groups = len(groups)
    eligible = _ELIGIBLE[rate](y01, pred01)
    value = _VALUE[rate](y01, pred01)
    count = np.bincount(codes[eligible], minlength=num_groups).astype(np.float64)
    total = np.bincount(codes[eligible], value[eligible], minlength=num_groups)
    statistics = RateStatistics(count[None], total[None], total[None], True)
    lower, _ = rate_bounds(statistics, delta, "clopper-pearson")
    estimate = total / np.maximum(count, 1)
    return MinRateCertificate(
        passed=bool(np.all(lower[0] >= min_rate)),
        rate=rate,
        min_rate=float(min_rate),
        delta=float(delta),
        groups=np.asarray(groups),
        estimate=estimate,
        lower=lower[0],
        rows=count.astype(np.int64),
    )
