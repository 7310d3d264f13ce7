"""Demographic parity for regression: each group's predictions moved onto the
Wasserstein-2 barycenter of the groups' prediction distributions."""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn.utils import check_random_state, get_tags
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_is_fitted

from fairest.metrics._regression import (
    barycenter_quantiles,
    prediction_w2_unfairness,
    quantile_tables,
)
from fairest.postprocessing._routing import GroupRouting
from fairest.utils._degenerate import plain_label
from fairest.utils._estimator import check_passthrough_X, validate_passthrough_fit_data
from fairest.utils._validation import FairnessWarning

__all__ = ["WassersteinParityRegressor"]

# A group's empirical CDF is uncertain by sqrt(log(2 / 0.05) / (2 n)) in KS distance at
# 95 % (DKW with Massart's constant): below this many effective rows that exceeds 0.1,
# and a fit warns that parity on new rows may be far from the fitted one.
SMALL_GROUP_ROWS = 185
SMALL_GROUP_DELTA = 0.05


class WassersteinParityRegressor(GroupRouting, RegressorMixin, BaseEstimator):
    """Demographic parity for any regressor, through the Wasserstein-2 barycenter.

    Each group's predictions are mapped onto the Wasserstein-2 barycenter of the groups'
    prediction distributions. Post-processing (Chzhen et al. 2020; Le Gouic et al. 2020): the wrapped regressor
    ``estimator`` predicts ``f(x)``; in group ``s`` with (weighted) empirical CDF ``F_s``
    of the fit predictions, the fair prediction is ``T_s(f) = Q(F_s(f))``, where ``Q =
    sum_s p_s Q_s`` is the quantile function of the barycenter (``p_s``: the groups'
    weighted shares, ``Q_s``: their quantile functions). Among all predictions whose
    distribution is the same in every group, it is the one closest to ``f`` in mean
    squared error, so for the Bayes regressor it is the optimal fair regressor. Its
    output has the same distribution in every group (up to the resolution ``1 / n_s`` of
    the groups' empirical distributions).

    **The trade-off** (Chzhen and Schreuder 2022). ``tolerance`` in [0, 1] is the allowed
    unfairness relative to the wrapped regressor's, on the unfairness ``U(g) = sum_s p_s
    W_2^2(law(g | s), barycenter)`` (:func:`fairest.metrics.prediction_w2_unfairness`).
    The prediction is the point ``g = (1 - t) f + t T_s(f)`` with ``t = 1 -
    sqrt(tolerance)`` on the geodesic between ``f`` and its fair version, which is
    optimal for that level: ``U(g) = tolerance * U(f)`` and ``E (g - f)^2 = (1 -
    sqrt(tolerance))^2 U(f)``, so that a Bayes-optimal ``f`` gives the minimal risk at
    relative unfairness ``tolerance``. ``tolerance=0`` is exact parity, ``1`` the wrapped
    regressor. The identities hold on the fit data when no two fit rows of a group share a
    prediction and the groups have equal sizes; otherwise up to the resolution
    ``1 / n_s``. ``train_unfairness_`` and ``estimator_unfairness_`` give the achieved
    values.

    **Ties.** A group's distribution with atoms (tied predictions, e.g. of a tree) cannot
    be moved onto another distribution by a deterministic map. By default a prediction
    ``f`` in group ``s`` takes the mid level ``(F_s(f-) + F_s(f)) / 2`` of its atom,
    which is deterministic and the same row by row whatever the batch; with
    ``randomized=True`` it takes a uniform draw in ``[F_s(f-), F_s(f)]`` seeded by
    ``random_state`` (the same seed gives the same predictions at every call), which
    makes the mapped distributions equal in law even with atoms (the randomised
    probability integral transform, the role of the jitter of Chzhen et al.).

    **Groups at predict.** ``predict(X, sensitive_features=...)`` needs the groups
    (requested through metadata routing); a group unseen in ``fit`` raises. Group-blind
    mode (``group_estimator``): a classifier predicts the group from ``X``, the maps are
    fitted on the predicted groups of the fit rows and applied to the predicted group at
    predict, so ``predict`` needs no groups. Parity then holds across the predicted
    groups; across the true groups it holds as far as the group classifier is accurate
    (``train_unfairness_`` is measured on the true groups).

    **Small groups.** The map of a group of ``n`` effective rows rests on its empirical
    CDF, uncertain by about ``sqrt(log(2 / 0.05) / (2 n))`` in Kolmogorov-Smirnov
    distance (95 %, DKW): a :class:`~fairest.utils.FairnessWarning` names the groups with
    fewer than 185 effective rows (an uncertainty above 0.1), and
    :func:`fairest.certified.certify_ks_gap` bounds the population KS gap of the fitted
    model on held-out data.

    Parameters
    ----------
    estimator : regressor, default=None
        A scikit-learn regressor; ``None`` means ``LinearRegression()``. Cloned and
        fitted in ``fit`` unless ``prefit=True``.
    tolerance : float, default=0.0
        Allowed unfairness relative to the wrapped regressor's, on
        :func:`~fairest.metrics.prediction_w2_unfairness` of the fit data: ``0`` is
        demographic parity, ``1`` the wrapped regressor's predictions.
    prefit : bool, default=False
        Use ``estimator`` (and ``group_estimator``) as already fitted: ``fit`` only
        builds the maps (one sort per group).
    randomized : bool, default=False
        Split tied predictions at random (seeded by ``random_state``) rather than at the
        mid level of their atom.
    group_estimator : classifier, default=None
        Group-blind mode: a classifier of the group from ``X``, fitted in ``fit`` on the
        group codes ``0..G-1`` of ``groups_`` unless ``prefit=True`` (then it must
        predict labels of ``groups_``).
    random_state : int, RandomState instance or None, default=None
        Seed of the draws of ``randomized=True``; unused otherwise.

    Attributes
    ----------
    estimator_ : regressor
        The fitted wrapped regressor.
    group_estimator_ : classifier
        The fitted group classifier (group-blind mode only).
    groups_ : ndarray of shape (n_groups,)
        Group labels (tuples for several sensitive columns).
    group_proportions_ : ndarray of shape (n_groups,)
        The groups' weighted shares ``p_s`` of the fit data (of the predicted groups in
        group-blind mode).
    barycenter_levels_ : ndarray of shape (n_levels,)
        Increasing levels in (0, 1]: the barycenter's quantile function is
        ``barycenter_values_[j]`` on ``(barycenter_levels_[j - 1], barycenter_levels_[j]]``.
    barycenter_values_ : ndarray of shape (n_levels,)
        Its values, non-decreasing.
    estimator_unfairness_ : float
        ``prediction_w2_unfairness`` of the wrapped regressor's predictions on the fit
        data (true groups).
    train_unfairness_ : float
        ``prediction_w2_unfairness`` of :meth:`predict` on the fit data (true groups).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.

    See Also
    --------
    fairest.postprocessing.GroupThresholdClassifier : the classification counterpart.
    fairest.metrics.prediction_ks_distance : the KS gap between the groups' predictions.

    Notes
    -----
    ``X`` reaches the wrapped estimators as given (DataFrames with string columns,
    polars, sparse). With one group the predictions are the wrapped regressor's.
    Outputs are finite: a prediction outside a group's fit range takes the level 0 or 1
    and so the barycenter's smallest or largest value.

    References
    ----------
    .. [1] E. Chzhen, C. Denis, M. Hebiri, L. Oneto, M. Pontil. "Fair Regression with
       Wasserstein Barycenters". NeurIPS 2020.
    .. [2] T. Le Gouic, J.-M. Loubes, P. Rigollet. "Projection to Fairness in Statistical
       Learning". arXiv:2005.11720, 2020.
    .. [3] E. Chzhen, N. Schreuder. "A minimax framework for quantifying risk-fairness
       trade-off in regression". Annals of Statistics 50(4), 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from fairest.metrics import prediction_ks_distance
    >>> from fairest.postprocessing import WassersteinParityRegressor
    >>> rng = np.random.default_rng(0)
    >>> groups = rng.choice(["a", "b"], size=2000)
    >>> X = rng.normal(size=(2000, 2)) + (groups == "a")[:, None]
    >>> y = X @ [1.0, 0.5] + rng.normal(size=2000)
    >>> model = WassersteinParityRegressor().fit(X, y, sensitive_features=groups)
    >>> fair = model.predict(X, sensitive_features=groups)
    >>> bool(prediction_ks_distance(y, fair, sensitive_features=groups) < 0.01)
    True
    >>> half = WassersteinParityRegressor(tolerance=0.25).fit(X, y, sensitive_features=groups)
    >>> round(half.train_unfairness_ / half.estimator_unfairness_, 2)
    0.25
    """

    __metadata_request__fit = {"sensitive_features": True}
    __metadata_request__predict = {"sensitive_features": True}
    __metadata_request__score = {"sensitive_features": True}

    per_group = "map"  # the noun of the per-group object in messages

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "tolerance": [Interval(Real, 0, 1, closed="both")],
        "prefit": ["boolean"],
        "randomized": ["boolean"],
        "group_estimator": [HasMethods(["fit", "predict"]), None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        estimator=None,
        *,
        tolerance=0.0,
        prefit=False,
        randomized=False,
        group_estimator=None,
        random_state=None,
    ):
        self.estimator = estimator
        self.tolerance = tolerance
        self.prefit = prefit
        self.randomized = randomized
        self.group_estimator = group_estimator
        self.random_state = random_state

    # -----------------------------------------------------------------------------------
    # fit

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit the wrapped regressor (unless prefit) and the groups' maps.

        Parameters
        ----------
        X : array-like, dataframe or sparse matrix of shape (n_samples, n_features)
            Training data, passed as given to the wrapped estimators.
        y : array-like of shape (n_samples,)
            Target (finite numbers).
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Group membership; ``k`` columns define intersectional groups. ``None`` means
            one group (with a warning): the predictions are the wrapped regressor's.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the groups' empirical distributions and shares; passed to the
            wrapped estimators' ``fit`` when they are fitted here (which must then
            accept ``sample_weight``).

        Returns
        -------
        self : WassersteinParityRegressor
            The fitted estimator.
        """
        y, codes, weights = self._validate_fit(X, y, sensitive_features, sample_weight)
        if (
            self.group_estimator is not None
            and get_tags(self.group_estimator).estimator_type == "regressor"
        ):
            raise ValueError(
                "group_estimator must be a classifier of the group from X; got the "
                f"regressor {type(self.group_estimator).__name__}."
            )
        self.__dict__.pop("group_estimator_", None)  # from a refit
        weighted = sample_weight is not None
        self.estimator_ = self._fitted(
            self._estimator(), X, y, weights, weighted, sensitive_features
        )
        predictions = self._base_predictions(X)
        num_groups = len(self.groups_)
        map_codes = codes
        if self.group_estimator is not None and num_groups > 1:
            self.group_estimator_ = self._fitted(self.group_estimator, X, codes, weights, weighted)
            map_codes = self._inferred_codes(X)
        mass = np.bincount(map_codes, weights, minlength=num_groups)
        self.group_proportions_ = mass / mass.sum()
        present = np.flatnonzero(mass > 0)  # an inferred group may be empty
        self._tables = tables = quantile_tables(predictions, map_codes, weights, num_groups)
        levels, _, values = barycenter_quantiles(
            [tables[g] for g in present], self.group_proportions_[present]
        )
        self.barycenter_levels_, self.barycenter_values_ = levels, values
        self._warn_small_groups(map_codes, weights, mass)
        fitted = self._predict_from(predictions, map_codes)
        self.estimator_unfairness_ = self._unfairness(predictions, codes, weights)
        self.train_unfairness_ = self._unfairness(fitted, codes, weights)
        return self

    def _validate_fit(self, X, y, sensitive_features, sample_weight):
        """Check what this meta-estimator uses (rows, features, target, weights,
        groups); ``X`` itself goes to the wrapped estimators as given."""
        data = validate_passthrough_fit_data(
            self, X, y, sensitive_features, sample_weight, regression=True
        )
        self.groups_ = data.group_labels
        return data.y, data.groups.astype(np.int64), data.sample_weight

    def _estimator(self):
        return LinearRegression() if self.estimator is None else self.estimator

    def _warn_small_groups(self, codes, weights, mass):
        """A :class:`FairnessWarning` naming the groups whose map rests on too few rows."""
        if len(self.groups_) == 1:
            return
        squares = np.bincount(codes, weights**2, minlength=len(self.groups_))
        effective = np.where(squares > 0, mass**2 / np.where(squares > 0, squares, 1.0), 0.0)
        small = np.flatnonzero(effective < SMALL_GROUP_ROWS)
        if small.size == 0:
            return
        half = np.sqrt(np.log(2 / SMALL_GROUP_DELTA) / (2 * np.maximum(effective[small], 1.0)))
        listed = ", ".join(
            f"{plain_label(self.groups_[g])!r} ({effective[g]:.0f} rows, +-{h:.2f})"
            for g, h in zip(small[:10], half[:10])
        )
        warnings.warn(
            f"{small.size} group(s) have fewer than {SMALL_GROUP_ROWS} effective rows: "
            f"{listed}. Their empirical CDFs are uncertain by the given Kolmogorov-Smirnov "
            "half-widths (95 %, DKW), so parity on new rows may be that far from the fitted "
            "one. Merge small groups, or bound the gap on held-out data with "
            "fairest.certified.certify_ks_gap.",
            FairnessWarning,
            stacklevel=4,  # this method, fit, scikit-learn's fit wrapper, caller
        )

    @staticmethod
    def _unfairness(values, codes, weights) -> float:
        return prediction_w2_unfairness(
            None, values, sensitive_features=codes, sample_weight=weights
        )

    # -----------------------------------------------------------------------------------
    # prediction

    def _base_predictions(self, X) -> np.ndarray:
        predicted = np.asarray(self.estimator_.predict(X), dtype=np.float64)
        if predicted.ndim == 2 and predicted.shape[1] == 1:
            predicted = predicted[:, 0]
        if predicted.ndim != 1:
            raise ValueError(
                f"estimator's predict returned shape {predicted.shape}; "
                f"{type(self).__name__} maps one prediction per row (a single-output "
                "regressor)."
            )
        bad = ~np.isfinite(predicted)
        if bad.any():
            raise ValueError(
                f"estimator's predict returned {int(bad.sum())} NaN or infinite value(s); "
                "the maps need a finite prediction for every row. Check the wrapped "
                "estimator and X."
            )
        return predicted

    def _levels(self, predictions, codes) -> np.ndarray:
        """Every row's level in its group's fit distribution: the mid level of its atom,
        or a seeded uniform draw within it (``randomized``)."""
        draws = None
        if self.randomized:
            draws = check_random_state(self.random_state).uniform(size=predictions.size)
        levels = np.zeros(predictions.size)
        for group, table in enumerate(self._tables):
            rows = np.flatnonzero(codes == group)
            if rows.size == 0 or table is None:
                continue
            points, cdf = table
            below = np.concatenate([[0.0], cdf])
            low = below[np.searchsorted(points, predictions[rows], "left")]
            high = below[np.searchsorted(points, predictions[rows], "right")]
            share = 0.5 if draws is None else draws[rows]
            levels[rows] = low + share * (high - low)
        return levels

    def _predict_from(self, predictions, codes) -> np.ndarray:
        if len(self.groups_) == 1:  # one group: no parity to reach
            return predictions.copy()
        levels = self._levels(predictions, codes)
        index = np.searchsorted(self.barycenter_levels_, levels, "left")
        fair = self.barycenter_values_[np.minimum(index, self.barycenter_values_.size - 1)]
        step = 1.0 - np.sqrt(self.tolerance)
        return (1.0 - step) * predictions + step * fair

    def predict(self, X, *, sensitive_features=None):
        """Predict, moving each group's predictions towards the barycenter.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            The samples' groups, as in ``fit`` (required unless the estimator was fitted
            on one group or with ``group_estimator``, where it is ignored).

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Finite predictions; with ``randomized=True`` drawn with ``random_state``.
        """
        check_is_fitted(self)
        check_passthrough_X(self, X)
        codes = self._predict_codes(X, sensitive_features)
        return self._predict_from(self._base_predictions(X), codes)

    def score(self, X, y, *, sensitive_features=None, sample_weight=None):
        """R^2 of :meth:`predict` (groups routed to it).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.
        y : array-like of shape (n_samples,)
            True targets.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            The samples' groups, as in :meth:`predict`.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        score : float
            The coefficient of determination.
        """
        y_pred = self.predict(X, sensitive_features=sensitive_features)
        return float(r2_score(y, y_pred, sample_weight=sample_weight))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        return self._wrapped_input_tags(tags, self._estimator())
