"""Levelling up: group thresholds that raise the worst group's rate, exactly.

Minimum-rate constraints ("every group's selection rate / recall / precision is at least
``r``") and the worst group's rate maximised within an accuracy budget, on the per-group
candidate thresholds of :func:`~fairest.postprocessing._thresholds.group_points`.

* **Minimum rate.** Accuracy is a sum of per-group correct decisions and the constraint
  is one per group, so the problem separates: each group takes its most accurate
  candidate whose rate is at least ``r`` (one masked maximum per group, ``O(M)`` for
  ``M`` candidates in all; precision is not monotone in the threshold, so the feasible
  candidates are a mask, not a suffix).
* **Max-min within an accuracy budget.** ``A(r)``, the best accuracy with every rate
  ``>= r``, is nonincreasing in ``r``; the optimal worst rate is the largest candidate
  rate ``r`` with ``A(r) >= A(0) - budget`` (the worst rate of an optimal classifier is
  some candidate's rate), found by bisection over the sorted candidate rates:
  ``O(M log M)``. Among the classifiers of that worst rate, the most accurate is kept.
"""

from __future__ import annotations

import warnings
from numbers import Real
from typing import NamedTuple

import numpy as np
import pandas as pd
from sklearn.base import _fit_context
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from fairest.metrics._intervals import effective_size, proportion_interval
from fairest.postprocessing._diagnostics import UNCERTAINTY_LEVEL, check_not_regressor
from fairest.postprocessing._estimator import GroupThresholdClassifier
from fairest.postprocessing._thresholds import RATE_SLACK, GroupPoints, group_points
from fairest.utils._degenerate import NEAR_CONSTANT_SHARE, plain_label
from fairest.utils._estimator import encode_binary_target, validate_passthrough_fit_data
from fairest.utils._validation import FairnessWarning

__all__ = ["LevellingUpClassifier", "LevelledThresholds", "level_up"]

# the rates a levelling constraint can hold up, by the name of group_points' rates
LEVELLED_RATES = {"selection_rate": "selection", "recall": "tpr", "precision": "precision"}
RATE_WORDS = {"selection_rate": "selection rate", "recall": "recall", "precision": "precision"}
ACCURACY_SLACK = 1e-9  # float rounding allowed on the accuracy budget (a share of the weight)
SHOWN = 5  # groups quoted in a message


class LevelledThresholds(NamedTuple):
    """The solver's answer: one candidate point per group and what it achieves."""

    chosen: np.ndarray  # (G,) index of every group's point in the GroupPoints
    target: float  # the rate every reachable group holds (min_rate, or the maximised one)
    infeasible: np.ndarray  # group codes that cannot reach ``target``
    reach: np.ndarray  # (G,) the highest rate of every group's candidates


def _most_accurate_above(points: GroupPoints, rate, target, starts):
    """Per group, the most accurate point whose rate is ``>= target`` (the first one on
    ties), ``-1`` where none is, and the total correct (``-inf`` if a group has none)."""
    feasible = rate >= target - RATE_SLACK
    value = np.where(feasible, points.correct, -np.inf)
    best = np.maximum.reduceat(value, starts)
    hit = np.flatnonzero(feasible & (value == best[points.group]))
    groups, first = np.unique(points.group[hit], return_index=True)
    chosen = np.full(points.num_groups, -1)
    chosen[groups] = hit[first]
    return chosen, float(best.sum()) if np.all(chosen >= 0) else -np.inf


def level_up(
    points: GroupPoints,
    rate_name: str,
    total_weight: float,
    *,
    min_rate: float | None = None,
    accuracy_budget: float | None = None,
) -> LevelledThresholds:
    """Most accurate per-group thresholds under a minimum rate, or the largest worst
    group's rate within an accuracy budget (exact).

    Parameters
    ----------
    points : GroupPoints
        From :func:`~fairest.postprocessing._thresholds.group_points`.
    rate_name : {"selection", "tpr", "precision"}
        The rate held up.
    total_weight : float
        The total sample weight (accuracies are ``correct / total_weight``).
    min_rate : float, default=None
        Every group's rate must be at least this. A group that cannot reach it takes
        its highest-rate point (the most accurate of those) and is listed in
        ``infeasible``.
    accuracy_budget : float, default=None
        Used when ``min_rate`` is None: the accuracy may drop by at most this below the
        unconstrained thresholds' (the per-group most accurate ones); the worst group's
        rate is maximised within it, then the accuracy.

    Returns
    -------
    LevelledThresholds
    """
    rate = points.rates[rate_name]
    starts = np.searchsorted(points.group, np.arange(points.num_groups))
    reach = np.maximum.reduceat(rate, starts)
    if min_rate is not None:
        target = float(min_rate)
        infeasible = np.flatnonzero(reach < target - RATE_SLACK)
        # an unreachable target is replaced, for those groups only, by their highest rate
        floor = np.where(reach < target - RATE_SLACK, reach, target)
        chosen, _ = _most_accurate_above(points, rate, floor[points.group], starts)
        return LevelledThresholds(chosen, target, infeasible, reach)
    budget = 0.0 if accuracy_budget is None else float(accuracy_budget)
    _, unconstrained = _most_accurate_above(points, rate, 0.0, starts)
    needed = unconstrained - (budget + ACCURACY_SLACK) * total_weight
    candidates = np.unique(rate)
    candidates = candidates[candidates <= reach.min() + RATE_SLACK]
    lo, hi = 0, candidates.size - 1  # candidates[lo] meets the budget (it is 0)
    while lo < hi:  # largest index whose best accuracy meets the budget
        mid = (lo + hi + 1) // 2
        if _most_accurate_above(points, rate, candidates[mid], starts)[1] >= needed:
            lo = mid
        else:
            hi = mid - 1
    chosen, _ = _most_accurate_above(points, rate, candidates[lo], starts)
    return LevelledThresholds(chosen, float(candidates[lo]), np.array([], dtype=np.int64), reach)


def group_rate_table(positive, y01, sample_weight, codes, group_labels, rate):
    """Every group's fitted ``rate`` with its Clopper-Pearson interval at
    :data:`~fairest.postprocessing._diagnostics.UNCERTAINTY_LEVEL`.

    The rate is a weighted mean over the group's eligible rows (all for the selection
    rate, ``y = 1`` for recall, the selected rows for precision) of ``y_pred`` (selection
    rate, recall) or ``y`` (precision), over an effective (Kish's) number of rows. A group
    without an eligible row has the rate 0 (as in :mod:`fairest.metrics`) and NaN bounds.
    """
    num_groups = len(group_labels)
    if rate == "selection_rate":
        eligible, hit = np.ones_like(y01), positive
    elif rate == "recall":
        eligible, hit = y01, positive
    else:
        eligible, hit = positive, y01
    w = sample_weight * eligible
    mass = np.bincount(codes, w, minlength=num_groups)
    rows = effective_size(mass, np.bincount(codes, w * w, minlength=num_groups))
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.bincount(codes, w * hit, minlength=num_groups) / mass
    defined = mass > 0
    value = np.where(defined, np.clip(value, 0.0, 1.0), np.nan)
    lower, upper = proportion_interval(value, rows, UNCERTAINTY_LEVEL)
    return pd.DataFrame(
        {
            "group": [plain_label(g) for g in group_labels],
            "rate": rate,
            "rows": rows,
            "value": np.where(defined, value, 0.0),
            "lower": lower,
            "upper": upper,
        }
    )


def _labels(group_labels, codes) -> str:
    shown = ", ".join(repr(plain_label(v)) for v in group_labels[codes][:SHOWN])
    return shown + (f" and {codes.size - SHOWN} more" if codes.size > SHOWN else "")


class LevellingUpClassifier(GroupThresholdClassifier):
    """Group thresholds that hold every group's rate up: levelling up, exactly.

    The wrapped ``estimator`` scores every sample as in
    :class:`GroupThresholdClassifier`, and every group gets its own threshold, chosen on
    the fit data for one of two objectives on the groups' ``rate`` (selection rate,
    recall or precision):

    * ``min_rate=r``: the most accurate thresholds with every group's rate at least
      ``r``;
    * ``accuracy_budget=b`` (or neither, which means ``b = 0``): the thresholds whose
      worst group's rate is the largest among those whose accuracy is at most ``b``
      below the unconstrained group thresholds' (each group's most accurate one); the
      most accurate of them.

    Rather than lowering the best-off group's rate to meet the others (what a parity
    ``tolerance`` allows), these constraints raise the worst-off group's, as OxonFair's
    minimum-rate constraints do. A separate class, not parameters of
    :class:`GroupThresholdClassifier`: its ``metric`` / ``tolerance`` (a band on rate
    differences), ``randomized`` and group-blind mode have no meaning here, and a floor on
    each group's rate is a different promise. Prediction, ``decision_function``,
    ``score`` and the routing of the groups are those of
    :class:`GroupThresholdClassifier`.

    **Algorithms** (exact, polynomial in the number of groups). A group's candidate
    classifiers are the thresholds between its distinct scores; accuracy is a sum over
    the groups, so with a minimum rate each group independently takes its most accurate
    candidate whose rate is at least ``r`` (``O(n log n)`` for the sort, then ``O(n)``).
    The best accuracy with every rate at least ``r`` is nonincreasing in ``r``, so the
    largest worst-group rate within a budget is found by bisection over the finite set of
    candidate rates, ``O(n log n)`` in all. OxonFair's search, by contrast, grows as
    ``grid_width ** groups`` and meets the constraint approximately.

    **Judged results.** A group whose highest reachable rate is below ``min_rate`` (e.g.
    recall of a group without positives, which counts as 0, or precision above the
    group's best) takes its highest-rate threshold (the most accurate of those): a
    :class:`~fairest.utils.FairnessWarning` names it with the rate it reaches and the
    achieved worst rate and accuracy. A fit that ends with a (near-)constant classifier
    (at most 1 % of the fit rows get the minority prediction, e.g. a selection rate of 1
    asked of every group) warns with its accuracy and that of the unconstrained
    thresholds. A rate met on the fit rows need not hold on new rows:
    ``group_rates_`` gives every group's rate with a 95 % Clopper-Pearson interval.

    Parameters
    ----------
    estimator : classifier
        A binary scikit-learn classifier with ``predict_proba``, ``decision_function`` or
        ``predict``. Cloned and fitted in ``fit`` unless ``prefit=True``.
    rate : {"selection_rate", "recall", "precision"}, default="recall"
        The group rate held up: ``P(h = 1 | A = a)``, ``P(h = 1 | Y = 1, A = a)`` (true
        positive rate) or ``P(Y = 1 | h = 1, A = a)`` (0 where nobody of the group is
        selected, as scikit-learn's ``precision_score``).
    min_rate : float in [0, 1], default=None
        Every group's ``rate`` on the fit data must be at least this. Give it or
        ``accuracy_budget``, not both.
    accuracy_budget : float in [0, 1], default=None
        Largest drop of the (weighted) training accuracy below the unconstrained group
        thresholds' that buys a higher worst-group rate. ``None`` with
        ``min_rate=None`` means 0: the fairest of the most accurate thresholds.
    prefit : bool, default=False
        Use ``estimator`` (and ``group_estimator``) as already fitted: ``fit`` only
        chooses the thresholds.
    group_estimator : classifier, default=None
        Group-blind mode: a classifier of the group from ``X`` (fitted on the group codes
        ``0..G-1`` of ``groups_`` unless ``prefit=True``, then predicting labels of
        ``groups_``). The thresholds are then per *inferred* group: the floor is met
        exactly by the inferred groups on the fit rows, and ``group_rates_`` /
        ``worst_rate_`` report the true groups' rates under that routing, which can be
        lower where the group classifier errs.

    Attributes
    ----------
    estimator_ : classifier
        The fitted wrapped classifier.
    classes_ : ndarray of shape (2,)
        The labels; ``classes_[1]`` is the positive one.
    groups_ : ndarray of shape (n_groups,)
        Group labels, in the order of ``thresholds_``.
    thresholds_ : ndarray of shape (n_groups,)
        Predict ``classes_[1]`` where the score is > the group's threshold (finite, as in
        :class:`GroupThresholdClassifier`).
    target_rate_ : float
        ``min_rate``, or the largest worst-group rate found within the budget.
    worst_rate_ : float
        The smallest group ``rate`` of the fitted classifier on the fit data (at least
        ``target_rate_`` unless a group cannot reach it).
    train_accuracy_ : float
        Weighted accuracy of the fitted classifier on the fit data.
    unconstrained_accuracy_ : float
        That of each group's most accurate threshold (no constraint).
    infeasible_groups_ : ndarray
        Labels of the groups that cannot reach ``min_rate`` (empty otherwise).
    group_rates_ : pandas.DataFrame
        One row per group: ``group``, ``rate``, ``rows`` (effective number of eligible
        rows), ``value`` (the fitted rate), ``lower`` / ``upper`` (95 % Clopper-Pearson).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.

    See Also
    --------
    GroupThresholdClassifier : thresholds within a tolerance of parity.

    References
    ----------
    .. [1] E. Delaney, Z. Fu, S. Wachter, B. Mittelstadt, C. Russell. "OxonFair: A
       Flexible Toolkit for Algorithmic Fairness". NeurIPS 2024.
    .. [2] B. Mittelstadt, S. Wachter, C. Russell. "The Unfairness of Fair Machine
       Learning: Levelling down and strict egalitarianism by default". arXiv
       preprint, 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from fairest.postprocessing import LevellingUpClassifier
    >>> rng = np.random.default_rng(0)
    >>> groups = rng.choice(["a", "b"], size=2000)
    >>> X = rng.normal(size=(2000, 2)) + (groups == "a")[:, None]
    >>> y = (X[:, 0] + rng.normal(size=2000) > 0.5).astype(int)
    >>> clf = LevellingUpClassifier(LogisticRegression(), rate="recall", min_rate=0.8)
    >>> clf = clf.fit(X, y, sensitive_features=groups)
    >>> bool(clf.worst_rate_ >= 0.8)
    True
    >>> clf.predict(X[:3], sensitive_features=groups[:3]).shape
    (3,)
    """

    _fairness_path = None  # no shared-scores path: fairness_path refits per value
    # the inherited prediction code reads this: one deterministic threshold per group
    randomized = False

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"])],
        "rate": [StrOptions(set(LEVELLED_RATES))],
        "min_rate": [Interval(Real, 0, 1, closed="both"), None],
        "accuracy_budget": [Interval(Real, 0, 1, closed="both"), None],
        "prefit": ["boolean"],
        "group_estimator": [HasMethods(["fit", "predict"]), None],
    }

    def __init__(
        self,
        estimator,
        *,
        rate="recall",
        min_rate=None,
        accuracy_budget=None,
        prefit=False,
        group_estimator=None,
    ):
        self.estimator = estimator
        self.rate = rate
        self.min_rate = min_rate
        self.accuracy_budget = accuracy_budget
        self.prefit = prefit
        self.group_estimator = group_estimator

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit the wrapped classifier (unless prefit) and choose the group thresholds.

        Parameters
        ----------
        X : array-like, dataframe or sparse matrix of shape (n_samples, n_features)
            Training data, passed as given to the wrapped estimator.
        y : array-like of shape (n_samples,)
            Binary target (any two labels).
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Group membership; ``k`` columns define intersectional groups.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rates and of the accuracy; passed to the wrapped estimator's
            ``fit`` when it is fitted here.

        Returns
        -------
        self : LevellingUpClassifier
            The fitted estimator.
        """
        if self.min_rate is not None and self.accuracy_budget is not None:
            raise ValueError(
                f"LevellingUpClassifier got min_rate={self.min_rate!r} and "
                f"accuracy_budget={self.accuracy_budget!r}: they are two objectives (the "
                "most accurate thresholds with every group's rate >= min_rate, or the "
                "largest worst-group rate within accuracy_budget). Set one of them to None."
            )
        data = validate_passthrough_fit_data(self, X, y, sensitive_features, sample_weight)
        check_not_regressor(self.estimator, "estimator")
        if self.group_estimator is not None:
            check_not_regressor(self.group_estimator, "group_estimator")
        self.__dict__.pop("group_estimator_", None)  # from a refit
        self.classes_, y01 = encode_binary_target(type(self).__name__, data.y)
        self.groups_ = data.group_labels
        weighted = sample_weight is not None
        self.estimator_ = self._fitted(
            self.estimator, X, data.y, data.sample_weight, weighted, sensitive_features
        )
        self._check_estimator_classes()
        scores = self._scores(X)
        w, codes, num_groups = data.sample_weight, data.groups, len(self.groups_)
        route = codes  # the group whose threshold a row gets: inferred when group-blind
        if self.group_estimator is not None and num_groups > 1:
            self.group_estimator_ = self._fitted(self.group_estimator, X, codes, w, weighted)
            route = self._inferred_codes(X)
        points = group_points(scores, y01, w, route, num_groups)
        total = float(w.sum())
        solved = level_up(
            points,
            LEVELLED_RATES[self.rate],
            total,
            min_rate=self.min_rate,
            accuracy_budget=self.accuracy_budget,
        )
        free = level_up(points, LEVELLED_RATES[self.rate], total, min_rate=0.0)
        thresholds = points.threshold[solved.chosen][:, None]
        self._set_thresholds(thresholds, np.ones_like(thresholds), scores)
        positive = self._positive_probability(scores, route)
        self.target_rate_ = solved.target
        self.group_rates_ = group_rate_table(positive, y01, w, codes, self.groups_, self.rate)
        self.worst_rate_ = float(self.group_rates_["value"].min())
        self.train_accuracy_ = float(points.correct[solved.chosen].sum() / total)
        self.unconstrained_accuracy_ = float(points.correct[free.chosen].sum() / total)
        self.infeasible_groups_ = self.groups_[solved.infeasible]
        if solved.infeasible.size:
            self._warn_infeasible(solved)
        self._warn_if_near_constant(positive, w)
        return self

    def _warn_infeasible(self, solved):
        words = RATE_WORDS[self.rate]
        reached = ", ".join(
            f"{_labels(self.groups_, np.array([g]))} {solved.reach[g]:.4g}"
            for g in solved.infeasible[:SHOWN]
        )
        more = (
            f" and {solved.infeasible.size - SHOWN} more" if solved.infeasible.size > SHOWN else ""
        )
        warnings.warn(
            f"LevellingUpClassifier: group(s) {reached}{more} (the highest {words} any of "
            f"their thresholds reaches) cannot reach min_rate={self.min_rate:g}; they get "
            f"their highest-{words} threshold. Achieved: worst {words} "
            f"{self.worst_rate_:.4g}, training accuracy {self.train_accuracy_:.4g}. Lower "
            "min_rate, merge the group(s) (a group without positive rows has recall 0), "
            "or use accuracy_budget= to raise the worst rate as far as it goes.",
            FairnessWarning,
            stacklevel=4,  # this helper, fit, scikit-learn's fit wrapper, caller
        )

    def _warn_if_near_constant(self, positive, sample_weight):
        share = float(np.average(positive, weights=sample_weight))
        if min(share, 1.0 - share) > NEAR_CONSTANT_SHARE:
            return
        majority = plain_label(self.classes_[1] if share >= 0.5 else self.classes_[0])
        warnings.warn(
            f"LevellingUpClassifier: the fitted thresholds predict {majority!r} for "
            f"{100 * max(share, 1 - share):.1f}% of the fit rows (training accuracy "
            f"{self.train_accuracy_:.4g}, unconstrained thresholds "
            f"{self.unconstrained_accuracy_:.4g}; worst {RATE_WORDS[self.rate]} "
            f"{self.worst_rate_:.4g}): the {RATE_WORDS[self.rate]} asked of every group "
            "is reached only by (nearly) selecting everybody or nobody. Lower min_rate "
            "or accuracy_budget, or use better scores.",
            FairnessWarning,
            stacklevel=4,  # this helper, fit, scikit-learn's fit wrapper, caller
        )
