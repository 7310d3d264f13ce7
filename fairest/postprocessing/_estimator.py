"""Group-threshold post-processing around any scikit-learn classifier."""

from __future__ import annotations

import copy
import warnings
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context, clone
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import accuracy_score
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import (
    check_is_fitted,
)

from fairest.postprocessing._diagnostics import (
    NEAR_CONSTANT_MESSAGE,
    NEAR_CONSTANT_SHARE,
    SMALL_GROUPS_MESSAGE,
    check_not_regressor,
    check_predicted_labels,
    finite_thresholds,
    group_uncertainty,
    score_range,
    threshold_metric,
    threshold_rule,
    undefined_rates,
    warn_if_near_constant,
    warn_small_groups,
    warn_undefined_rates,
)
from fairest.postprocessing._routing import GroupRouting
from fairest.postprocessing._thresholds import (
    METRIC_RATES,
    best_thresholds,
    group_points,
    mixed_positive_probability,
    solve_thresholds,
    threshold_path,
)
from fairest.utils._degenerate import plain_label
from fairest.utils._estimator import (
    check_passthrough_X,
    encode_binary_target,
    validate_passthrough_fit_data,
)
from fairest.utils._validation import FairnessWarning

__all__ = ["GroupThresholdClassifier"]

# internal tolerances on the inferred groups tried by the group-blind mode (times 1, and
# absolute values), the most accurate one whose true-group unfairness fits is kept
BLIND_TOLERANCE_FACTORS = (0.0, 0.5, 1.0, 2.0)
BLIND_TOLERANCE_VALUES = (0.05, 1.0)
BLIND_DUAL_STEPS = 60  # dual-ascent iterates of the group-blind mode
ROUNDING_SLACK = 1e-9  # float rounding of the rates; the LP's feasibility tolerance


class GroupThresholdClassifier(GroupRouting, ClassifierMixin, BaseEstimator):
    """Group-specific thresholds on the scores of any classifier, for group fairness.

    Post-processing (Hardt et al. 2016): the wrapped ``estimator`` scores every sample
    (``predict_proba[:, 1]``, else ``decision_function``, else ``predict``), and every
    group gets its own threshold, chosen on the fit data to maximise the (weighted)
    accuracy subject to the between-group difference of the rate(s) of ``metric`` being at
    most ``tolerance``:

    * ``"demographic_parity"``: selection rates ``P(h = 1 | A = a)``;
    * ``"equal_opportunity"``: true positive rates;
    * ``"equalized_odds"``: true and false positive rates (both).

    **What is promised.** After ``fit``, ``train_unfairness_`` is the metric of the fitted
    classifier on the fit data, computed with :mod:`fairest.metrics`
    (``demographic_parity_difference``, ``equal_opportunity_difference``,
    ``equalized_odds_difference``, ``method="between_groups"``, with ``sample_weight``).
    It is at most ``tolerance`` (up to 1e-9 of rounding); otherwise (only possible in the
    group-blind mode) a :class:`~fairest.utils.FairnessWarning` gives the achieved value.
    With ``randomized=True`` it is the metric of the expected predictions (the
    randomized classifier's rates).

    **Algorithms** (exact, polynomial in the number of groups ``G``). A group's candidate
    classifiers are the thresholds between its distinct scores. Deterministic, one rate:
    the rates must lie in a band ``[b, b + tolerance]``; for a given band each group takes
    its most accurate threshold in the band, and sweeping ``b`` over every candidate rate
    is exact, ``O(G n log n)`` (sorted cumulative counts and a sparse table of range
    maxima). Deterministic equalized odds: the same over band pairs on (TPR, FPR), every
    pair of lower edges when there are at most 4 million (pair, group) evaluations,
    else a quantile grid of them (then optimal on that grid only; always feasible).
    ``randomized=True``: a linear program (HiGHS) over mixing weights of each group's
    thresholds, the exact optimum over the convex hulls of the groups' ROC /
    (rate, accuracy) points, as fairlearn's ``ThresholdOptimizer`` (``tolerance=0``) and
    error-parity's ``RelaxedThresholdOptimizer`` do. A deterministic classifier with
    ``tolerance=0`` can only equalise rates that coincide exactly, often only "nobody" or
    "everybody" selected (it warns): hence the default ``tolerance=0.02``, or use
    ``randomized=True`` for exact parity.

    **Judged inputs and results.** A regressor as ``estimator`` (or ``group_estimator``),
    a ``predict`` used as the score that returns values outside ``classes_``, a prefit
    ``estimator`` fitted on other labels and NaN scores raise ``ValueError``. With
    ``"equal_opportunity"`` / ``"equalized_odds"``, a group without positives (negatives)
    has an undefined true (false) positive rate, which counts as 0 as in
    :mod:`fairest.metrics`, so every group's rate is held near 0: a
    :class:`~fairest.utils.FairnessWarning` names the group. A fit that ends with a
    (near-)constant classifier (at most 1 % of the fit rows get the minority prediction)
    warns with its accuracy and selection rates, those of the unconstrained thresholds,
    and the groups that forced it (those whose reachable rates miss the most bands of
    width ``tolerance``: too few rows, one score, or a single class).

    **Small groups.** A tolerance met on the fit rows need not hold on new rows: a group
    of 200 rows has a selection rate uncertain by about +-0.05. ``group_uncertainty_``
    gives every group's fitted rate(s) with a 95 % Clopper-Pearson interval, and a
    ``FairnessWarning`` names the groups whose interval reaches further than
    ``tolerance`` from the fitted rate, with the interval and its half-width.

    **Groups at predict.** ``predict(X, sensitive_features=...)`` needs the groups (they
    are requested through metadata routing, so they reach ``predict`` and ``score`` in a
    ``Pipeline``, ``GridSearchCV`` or ``cross_validate``). A group unseen during ``fit``
    raises ``ValueError``. With ``group_estimator`` (group-blind mode, OxonFair's idea)
    the group is predicted from ``X``, the thresholds are per predicted group, and
    ``predict`` needs no groups (``sensitive_features`` given at predict is then
    ignored). The group-blind thresholds are picked among the exact solutions on the
    predicted groups at several internal tolerances, as the most accurate one whose
    true-group train unfairness is within ``tolerance`` (a heuristic: the true-group
    problem is not separable); when none is, the fairest one is kept with a
    ``FairnessWarning``.

    Parameters
    ----------
    estimator : classifier
        A binary scikit-learn classifier with ``predict_proba``, ``decision_function`` or
        ``predict``. Cloned and fitted in ``fit`` unless ``prefit=True``.
    metric : str, default="demographic_parity"
        The group rates that must agree: ``"demographic_parity"``,
        ``"equal_opportunity"`` or ``"equalized_odds"`` (fairlearn's
        ``*_difference``), or the name of a between-group difference of label rates in
        the metric catalogue (:func:`fairest.metrics.catalogue`; its rates must be
        selection, true / false positive or negative rates: a false negative rate moves
        with the true positive rate, a true negative rate with the false positive rate).
        Ratios and metrics of scores raise ``ValueError`` at ``fit``.
    tolerance : float, default=0.02
        Largest allowed between-group difference of the rate(s) on the fit data. The
        default keeps the rates within 2 points, which thresholds reach at little cost in
        accuracy; ``0.0`` asks for exact equality (see above).
        ``fairest.fairness_path`` sweeps it.
    prefit : bool, default=False
        Use ``estimator`` (and ``group_estimator``) as already fitted: ``fit`` only
        chooses the thresholds (cheap: one sort and a sweep).
    randomized : bool, default=False
        Allow randomized mixing of two or more thresholds per group; ``predict`` then
        draws with ``random_state``.
    group_estimator : classifier, default=None
        Group-blind mode: a classifier of the group from ``X``, fitted in ``fit`` on the
        group labels (codes ``0..G-1`` of ``groups_``) unless ``prefit=True`` (then it
        must predict labels of ``groups_``).
    random_state : int, RandomState instance or None, default=None
        Seed of the draws of a randomized ``predict`` (the same seed gives the same
        predictions at every call). Unused when ``randomized=False``.

    Attributes
    ----------
    estimator_ : classifier
        The fitted wrapped classifier.
    group_estimator_ : classifier
        The fitted group classifier (group-blind mode only).
    classes_ : ndarray of shape (2,)
        The labels; ``classes_[1]`` is the positive one.
    groups_ : ndarray of shape (n_groups,)
        Group labels (tuples for several sensitive columns), in the order of the rows of
        ``thresholds_``.
    thresholds_ : ndarray of shape (n_groups,) or (n_groups, n_mix)
        Deterministic: predict ``classes_[1]`` where the score is > the group's threshold.
        Always finite: a group where nobody is selected has the top of the score range
        (1 for probabilities and labels, else the largest fit score), one where
        everybody is selected a value below its bottom. Randomized: the thresholds each
        group mixes (padded with the top of the range, at probability 0).
    threshold_probabilities_ : ndarray of shape (n_groups, n_mix)
        Randomized only: the probability of each threshold of ``thresholds_``.
    train_unfairness_ : float
        The exact ``metric`` of the fitted classifier on the fit data (see above).
    group_uncertainty_ : pandas.DataFrame
        One row per group and rate of ``metric`` (``rate``: ``"selection"``, ``"tpr"``,
        ``"fpr"``) on the fit data: ``group``, ``rows`` (effective, Kish's with weights),
        ``value`` (the fitted rate), ``lower`` / ``upper`` (95 % Clopper-Pearson),
        ``half_width`` and ``exceeds_tolerance`` (the interval reaches further than
        ``tolerance`` from ``value``).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.

    See Also
    --------
    fairlearn.postprocessing.ThresholdOptimizer : the randomized ``tolerance=0`` method.

    Notes
    -----
    ``decision_function(X, sensitive_features=...)`` is the score minus the group's
    threshold (deterministic mode only: positive means ``classes_[1]``); there is no
    ``predict_proba``, since group thresholds change decisions, not the probability
    estimates, which stay those of ``estimator_``. ``X`` reaches the wrapped estimators as
    given (a DataFrame with string categoricals or missing values, polars, scipy sparse),
    so a ``Pipeline`` with a ``ColumnTransformer`` by column names or a NaN-aware model
    works inside; only its number of rows, features and column names are checked here.
    ``fit``'s ``sensitive_features`` also reach the wrapped ``fit`` when it takes them (a
    fairest estimator; under metadata routing, a pipeline that requests them).

    References
    ----------
    .. [1] M. Hardt, E. Price, N. Srebro. "Equality of Opportunity in Supervised
       Learning". NeurIPS 2016.
    .. [2] A. F. Cruz, M. Hardt. "Unprocessing Seven Years of Algorithmic Fairness".
       ICLR 2024 (error-parity).
    .. [3] E. Delaney, Z. Fu, S. Wachter, B. Mittelstadt, C. Russell. "OxonFair: A
       Flexible Toolkit for Algorithmic Fairness". NeurIPS 2024 (group-blind inference).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from fairest.postprocessing import GroupThresholdClassifier
    >>> rng = np.random.default_rng(0)
    >>> groups = rng.choice(["a", "b"], size=2000)
    >>> X = rng.normal(size=(2000, 2)) + (groups == "a")[:, None]
    >>> y = (X[:, 0] + rng.normal(size=2000) > 0.5).astype(int)
    >>> clf = GroupThresholdClassifier(LogisticRegression(), tolerance=0.05)
    >>> clf = clf.fit(X, y, sensitive_features=groups)
    >>> bool(clf.train_unfairness_ <= 0.05)
    True
    >>> bool(clf.group_uncertainty_["exceeds_tolerance"].any())  # 1000 rows per group
    False
    >>> clf.predict(X[:3], sensitive_features=groups[:3]).shape
    (3,)
    """

    __metadata_request__fit = {"sensitive_features": True}
    _fairness_path = ("tolerance", "shared_scores")  # fairness_path's knob and strategy
    __metadata_request__predict = {"sensitive_features": True}
    __metadata_request__score = {"sensitive_features": True}
    __metadata_request__decision_function = {"sensitive_features": True}

    per_group = "threshold"  # the noun of the per-group object in messages

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"])],
        "metric": [str],  # a name of threshold_metric, checked in fit
        "tolerance": [Interval(Real, 0, 1, closed="both")],
        "prefit": ["boolean"],
        "randomized": ["boolean"],
        "group_estimator": [HasMethods(["fit", "predict"]), None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        estimator,
        *,
        metric="demographic_parity",
        tolerance=0.02,
        prefit=False,
        randomized=False,
        group_estimator=None,
        random_state=None,
    ):
        self.estimator = estimator
        self.metric = metric
        self.tolerance = tolerance
        self.prefit = prefit
        self.randomized = randomized
        self.group_estimator = group_estimator
        self.random_state = random_state

    # -----------------------------------------------------------------------------------
    # fit

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit the wrapped classifier (unless prefit) and choose the group thresholds.

        Parameters
        ----------
        X : array-like, dataframe or sparse matrix of shape (n_samples, n_features)
            Training data, passed as given to the wrapped estimators.
        y : array-like of shape (n_samples,)
            Binary target (any two labels).
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Group membership; ``k`` columns define intersectional groups (the observed
            combinations). ``None`` means one group (with a warning).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rates and of the accuracy the thresholds maximise; passed to
            the wrapped estimator's ``fit`` when it is fitted here (which must then accept
            ``sample_weight``).

        Returns
        -------
        self : GroupThresholdClassifier
            The fitted estimator.
        """
        data = validate_passthrough_fit_data(self, X, y, sensitive_features, sample_weight)
        threshold_metric(self.metric)
        check_not_regressor(self.estimator, "estimator")
        if self.group_estimator is not None:
            check_not_regressor(self.group_estimator, "group_estimator")
        for stale in ("group_estimator_", "threshold_probabilities_"):  # from a refit
            self.__dict__.pop(stale, None)
        self.classes_, y01 = encode_binary_target(type(self).__name__, data.y)
        self.groups_ = data.group_labels
        weighted = sample_weight is not None
        self.estimator_ = self._fitted(
            self.estimator, X, data.y, data.sample_weight, weighted, sensitive_features
        )
        self._check_estimator_classes()
        scores = self._scores(X)
        warn_undefined_rates(
            undefined_rates(y01, data.sample_weight, data.groups, len(self.groups_), self.metric),
            self.groups_,
            self.metric,
            self.tolerance,
            stacklevel=4,  # helper, fit, scikit-learn's fit wrapper, caller
        )
        if self.group_estimator is None:
            thresholds, probabilities = self._solve(
                scores, y01, data.sample_weight, data.groups, self.tolerance
            )
        else:
            thresholds, probabilities = self._fit_group_blind(X, scores, y01, data, weighted)
        self._set_thresholds(thresholds, probabilities, scores)
        positive = self._positive_probability(scores, self._routing_codes(X, data.groups))
        self.train_unfairness_ = self._expected_unfairness(
            y01, positive, data.groups, data.sample_weight
        )
        self.group_uncertainty_ = self._uncertainty(positive, y01, data)
        # one group has no difference to keep: its rate's uncertainty does not matter
        constant = self._warn_if_near_constant(scores, y01, positive, data)
        if not constant and len(self.groups_) > 1:
            warn_small_groups(self.group_uncertainty_, self.tolerance, stacklevel=4)
        if self.train_unfairness_ > self.tolerance + ROUNDING_SLACK:
            warnings.warn(
                f"the training {threshold_metric(self.metric).name} of the fitted thresholds is "
                f"{self.train_unfairness_:.4g} > tolerance={self.tolerance:.4g}: the "
                "group-blind thresholds cannot reach the tolerance on the true groups; "
                "the fairest ones found are kept. Raise tolerance or use the groups at "
                "predict (group_estimator=None).",
                FairnessWarning,
                stacklevel=2,
            )
        return self

    def _tolerance_path(self, X, y, *, sensitive_features, sample_weight, tolerances):
        """Fitted copies at every tolerance (:func:`fairest.fairness_path`).

        One fit (and one score computation) of the wrapped classifier and one build of
        the per-group sorted counts; only the threshold search runs per tolerance. The
        copies share ``estimator_``. Needs the groups at predict (no ``group_estimator``).
        A sweep does not warn about its near-constant points (small tolerances often are):
        the path's accuracies show them.
        """
        first = clone(self).set_params(tolerance=float(tolerances[0]))
        if self.prefit:  # clone would drop the fitted classifier
            first.set_params(estimator=self.estimator)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", NEAR_CONSTANT_MESSAGE, FairnessWarning)
            warnings.filterwarnings("ignore", SMALL_GROUPS_MESSAGE, FairnessWarning)
            first.fit(X, y, sensitive_features=sensitive_features, sample_weight=sample_weight)
        data = validate_passthrough_fit_data(clone(self), X, y, sensitive_features, sample_weight)
        _, y01 = encode_binary_target(type(self).__name__, data.y)
        scores = first._scores(X)
        points = group_points(
            scores, y01, data.sample_weight, data.groups, int(data.groups.max()) + 1
        )
        solutions = threshold_path(
            points, threshold_rule(self.metric), [float(t) for t in tolerances], self.randomized
        )
        path = []
        for tolerance, solution in zip(tolerances, solutions):
            fitted = copy.copy(first)
            fitted.tolerance = tolerance
            fitted._set_thresholds(*solution, scores)
            positive = fitted._positive_probability(scores, data.groups)
            fitted.train_unfairness_ = fitted._expected_unfairness(
                y01, positive, data.groups, data.sample_weight
            )
            fitted.group_uncertainty_ = fitted._uncertainty(positive, y01, data)
            path.append(fitted)
        return path

    def _solve(self, scores, y01, sample_weight, codes, tolerance):
        points = group_points(scores, y01, sample_weight, codes, int(codes.max()) + 1)
        return solve_thresholds(points, threshold_rule(self.metric), tolerance, self.randomized)

    def _fit_group_blind(self, X, scores, y01, data, weighted):
        """Thresholds per inferred group, whose true-group unfairness is checked."""
        num_groups = len(self.groups_)
        if num_groups == 1:  # nothing to infer
            self.group_estimator_ = None
            return self._solve(scores, y01, data.sample_weight, data.groups, self.tolerance)
        self.group_estimator_ = self._fitted(
            self.group_estimator, X, data.groups, data.sample_weight, weighted
        )
        inferred = self._inferred_codes(X)
        present, compact = np.unique(inferred, return_inverse=True)  # codes 0..K-1
        candidates = [
            self._solve(scores, y01, data.sample_weight, compact, internal)
            for internal in sorted(
                {self.tolerance * f for f in BLIND_TOLERANCE_FACTORS} | set(BLIND_TOLERANCE_VALUES)
            )
        ]
        candidates += self._lagrangian_candidates(
            scores, y01, data, compact, candidates[-1], present.size
        )
        best, best_key = None, None
        for thr, prob in candidates:  # a few dozen O(n) evaluations
            full_thr = np.full((num_groups, thr.shape[1]), np.inf)
            full_prob = np.zeros((num_groups, thr.shape[1]))
            full_thr[present], full_prob[present] = thr, prob
            positive = mixed_positive_probability(scores, inferred, full_thr, full_prob)
            unfairness = self._expected_unfairness(
                y01, positive, data.groups, data.sample_weight, mixed=True
            )
            correct = np.where(y01 == 1, positive, 1 - positive)
            accuracy = np.average(correct, weights=data.sample_weight)
            feasible = unfairness <= self.tolerance + ROUNDING_SLACK
            key = (feasible, accuracy if feasible else -unfairness)
            if best_key is None or key > best_key:
                best, best_key = (full_thr, full_prob), key
        return best

    def _lagrangian_candidates(self, scores, y01, data, compact, unconstrained, n_inferred):
        """Deterministic thresholds of a dual ascent on the true groups' rate deviations.

        Every iterate maximises accuracy minus ``sum_a mu_a r_a`` (``r_a``: the rates of
        ``metric`` of true group ``a``): each inferred group's problem stays separable,
        and it can over-correct. The multipliers move along the deviations of the rates
        from their mean, with steps ``W / sqrt(t + 1)``; every iterate is a candidate.
        """
        codes, w = data.groups, data.sample_weight
        masks = {"selection": np.ones_like(y01), "tpr": y01, "fpr": 1.0 - y01}
        names = METRIC_RATES[threshold_rule(self.metric)]
        num_groups = len(self.groups_)
        mass = {name: np.bincount(codes, w * masks[name], minlength=num_groups) for name in names}
        multipliers = {name: np.zeros(num_groups) for name in names}
        thresholds = unconstrained
        candidates = []
        for step in range(BLIND_DUAL_STEPS):  # a fixed number of O(n log n) solves
            positive = mixed_positive_probability(scores, compact, *thresholds)
            bonus = np.zeros_like(y01)
            for name in names:
                present = mass[name] > 0
                safe = np.where(present, mass[name], 1.0)
                rates = np.bincount(codes, w * masks[name] * positive, minlength=num_groups)
                deviation = np.where(present, rates / safe - (rates / safe)[present].mean(), 0)
                multipliers[name] += 0.3 * w.sum() / np.sqrt(step + 1.0) * deviation
                bonus -= (multipliers[name] / safe)[codes] * w * masks[name]
            points = group_points(scores, y01, w, compact, n_inferred, bonus=bonus)
            thresholds = (best_thresholds(points), np.ones((n_inferred, 1)))
            candidates.append(thresholds)
        return candidates

    def _check_estimator_classes(self):
        """The wrapped classifier's classes must be those of ``y``: its scores are read as
        the score of ``classes_[1]``."""
        fitted = getattr(self.estimator_, "classes_", None)
        if fitted is None:
            return
        fitted = [plain_label(c) for c in np.asarray(fitted)]
        expected = [plain_label(c) for c in self.classes_]
        if fitted != expected:
            raise ValueError(
                f"estimator has classes_ {fitted[:5]}, but y holds the labels {expected}: "
                "its scores would be read for another class. Fit it on these labels (or "
                "recode y to its classes)."
            )

    def _uncertainty(self, positive, y01, data):
        """``group_uncertainty_``: every group's fitted rate(s) and their intervals."""
        return group_uncertainty(
            positive,
            y01,
            data.sample_weight,
            data.groups,
            self.groups_,
            self.metric,
            self.tolerance,
        )

    def _warn_if_near_constant(self, scores, y01, positive, data) -> bool:
        """A :class:`FairnessWarning` when the fit ends with a (near-)constant classifier,
        with the groups that forced it (see :mod:`._diagnostics`); whether it warned."""
        share = float(np.average(positive, weights=data.sample_weight))
        if min(share, 1.0 - share) > NEAR_CONSTANT_SHARE:
            return False
        num_groups = len(self.groups_)
        points = group_points(scores, y01, data.sample_weight, data.groups, num_groups)
        unconstrained = mixed_positive_probability(
            scores, data.groups, best_thresholds(points), np.ones((num_groups, 1))
        )
        return warn_if_near_constant(
            positive,
            y01,
            data.sample_weight,
            data.groups,
            self.groups_,
            self.classes_,
            unconstrained=unconstrained,
            points=points,
            metric=self.metric,
            tolerance=self.tolerance,
            randomized=self.randomized,
            stacklevel=5,  # helper, this method, fit, scikit-learn's fit wrapper, caller
        )

    def _set_thresholds(self, thresholds, probabilities, scores):
        """Store the solver's thresholds, finite (see :func:`finite_thresholds`)."""
        low, high = score_range(scores, bounded=self._score_method() != "decision_function")
        thresholds = finite_thresholds(thresholds, low, high)
        self._mix_thresholds, self._mix_probabilities = thresholds, probabilities
        if self.randomized:
            self.thresholds_ = thresholds
            self.threshold_probabilities_ = probabilities
        else:
            self.thresholds_ = thresholds[:, 0].copy()

    def _expected_unfairness(self, y01, positive, codes, sample_weight, mixed=None):
        """The fairest.metrics value of the expected predictions: each row enters as a
        positive with weight ``w p`` and a negative with weight ``w (1 - p)``."""
        metric = threshold_metric(self.metric).exact
        if not (self.randomized if mixed is None else mixed):
            y_pred = (positive > 0.5).astype(np.float64)
            y_true, codes_all, weights = y01, codes, sample_weight
        else:
            n = y01.size
            y_true = np.concatenate([y01, y01])
            y_pred = np.concatenate([np.ones(n), np.zeros(n)])
            codes_all = np.concatenate([codes, codes])
            weights = np.concatenate([sample_weight * positive, sample_weight * (1 - positive)])
        with warnings.catch_warnings():
            # a group without positives (negatives) has a TPR (FPR) of 0, as in the metric
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            return float(
                metric(y_true, y_pred, sensitive_features=codes_all, sample_weight=weights)
            )

    # -----------------------------------------------------------------------------------
    # prediction

    def _score_method(self) -> str:
        for method in ("predict_proba", "decision_function"):
            if hasattr(self.estimator_, method):
                return method
        return "predict"

    def _scores(self, X) -> np.ndarray:
        estimator = self.estimator_
        method = self._score_method()
        if method == "predict_proba":
            scores = np.asarray(estimator.predict_proba(X))[:, 1]
        elif method == "decision_function":
            scores = np.asarray(estimator.decision_function(X)).reshape(-1)
        else:
            predicted = np.asarray(estimator.predict(X))
            check_predicted_labels(predicted, self.classes_, "estimator")
            scores = (predicted == self.classes_[1]).astype(np.float64)
        scores = np.asarray(scores, dtype=np.float64)
        if np.isnan(scores).any():
            raise ValueError(
                f"estimator's {method} returned NaN for {int(np.isnan(scores).sum())} row(s); "
                "group thresholds need a score for every row. Check the wrapped estimator "
                "and X."
            )
        return scores

    def _positive_probability(self, scores, codes):
        return mixed_positive_probability(
            scores, codes, self._mix_thresholds, self._mix_probabilities
        )

    def _validated(self, X):
        """Check the fitted state and ``X``'s feature count and names only: ``X`` goes to
        the wrapped estimators as given."""
        check_is_fitted(self)
        check_passthrough_X(self, X)

    def predict(self, X, *, sensitive_features=None):
        """Predicted labels from the group thresholds.

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
            Predicted labels from ``classes_``; with ``randomized=True`` drawn with
            ``random_state``.
        """
        self._validated(X)
        return self._predict_from(self._scores(X), self._predict_codes(X, sensitive_features))

    def _predict_from(self, scores, codes):
        """Labels from the wrapped classifier's scores and the threshold group codes."""
        positive = self._positive_probability(scores, codes)
        if self.randomized:
            draws = check_random_state(self.random_state).uniform(size=positive.size)
            chosen = draws < positive
        else:
            chosen = positive > 0.5
        return self.classes_[chosen.astype(np.int64)]

    def _is_deterministic(self):
        return not self.randomized

    @available_if(_is_deterministic)
    def decision_function(self, X, *, sensitive_features=None):
        """Score minus the group's threshold (deterministic mode only).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            The samples' groups, as in :meth:`predict`.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            Positive where ``classes_[1]`` is predicted; finite, since the thresholds are
            (see ``thresholds_``).
        """
        self._validated(X)
        thresholds = self.thresholds_[self._predict_codes(X, sensitive_features)]
        return self._scores(X) - thresholds

    def score(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Accuracy of :meth:`predict` (groups routed to it).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.
        y : array-like of shape (n_samples,)
            True labels.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            The samples' groups, as in :meth:`predict`.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        score : float
            Mean accuracy.
        """
        y_pred = self.predict(X, sensitive_features=sensitive_features)
        return float(accuracy_score(y, y_pred, sample_weight=sample_weight))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return self._wrapped_input_tags(tags, self.estimator)
