"""A Seldonian meta-estimator: fit candidates, certify one on held-out data, or say why not."""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import accuracy_score
from sklearn.model_selection import ParameterGrid
from sklearn.utils import get_tags, indexable
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import _num_samples, check_is_fitted

from fairest.certified import _defaults
from fairest.certified._bounds import BOUNDS, METRICS, rate_condition, rows_needed
from fairest.certified._certificate import (
    FairnessCertificate,
    call_with_groups,
    check_constraints,
    check_delta_and_bound,
    shift_name,
    takes_groups,
)
from fairest.certified._checks import check_not_regressor, warn_if_near_constant
from fairest.certified._fit import fit_candidates, select_candidate
from fairest.certified._selection import (
    seed_of,
    stratified_safety_split,
)
from fairest.certified._shift import DemographicShift, encode_shift_features
from fairest.utils._degenerate import plain_label
from fairest.utils._estimator import (
    check_passthrough_X,
    validate_passthrough_fit_data,
)
from fairest.utils._reporting import log_fit

__all__ = ["CertifiedFairClassifier", "NoSolutionFoundError", "stratified_safety_split"]


class NoSolutionFoundError(RuntimeError):
    """Raised by a :class:`CertifiedFairClassifier` that could not certify any model.

    The fitted estimator's ``no_solution_reason_`` says why (too little data per group,
    with the number of rows needed; a group missing from the safety part; or no
    candidate reaching the constraint).
    """


def _estimator_has(attribute):
    def check(self):
        source = getattr(self, "best_estimator_", None)
        source = self.estimator if source is None else source
        return hasattr(source, attribute)

    return check


class CertifiedFairClassifier(ClassifierMixin, BaseEstimator):
    """Fairness with a high-confidence guarantee on unseen data, or "no solution found".

    The Seldonian algorithm of Thomas et al. (2019) around any binary classifier:

    1. **Split.** The rows are split, stratified by group and label, into a candidate part
       and a safety part (``safety_fraction`` of every group-label stratum).
    2. **Candidates.** Copies of ``estimator`` are fitted on the candidate part over a sweep
       of its own fairness knob: ``param_grid`` when given, else ``tolerance`` (fairest's
       constrained classifiers) or ``fairness_weight`` (penalised ones) over a default
       sweep, else the estimator as it is (one candidate). A ``GridSearchCV`` as
       ``estimator`` sees the candidate part only, so its search costs no confidence.
    3. **Selection.** The most accurate candidate (on the candidate part) whose
       *predicted* bound passes: the safety test computed on candidate data as if it had
       the safety part's size, every group-rate interval widened ``inflation`` times. When
       no candidate passes, the one closest to passing goes forward.
    4. **Safety test.** One :func:`certify_fairness` of the chosen candidate on the safety
       part, with ``delta / n_comparisons`` shared by the constraints. Pass: the model is
       certified; with probability at least ``1 - delta`` over the draw of the data, every
       constraint holds on the population the rows were drawn from. Fail: no solution
       found (NSF).

    The certified model is the candidate-part fit. It is never refitted on all the rows:
    a refit is a different model the safety test never saw, and the guarantee would be
    void. Only one model is tested on the safety part; re-running after an NSF (another
    seed, tolerance or estimator on the same data) or picking the best of ``k`` runs
    multiplies the risk up to ``k`` times: pass ``n_comparisons=k`` to every run.

    Parameters
    ----------
    estimator : classifier
        Any binary classifier with ``fit`` / ``predict``. It gets ``X`` as given (rows
        taken as cross-validation takes them: a DataFrame keeps its column names, string
        categoricals and missing values, sparse stays sparse), so a ``Pipeline`` with a
        ``ColumnTransformer`` by column names or a NaN-aware model works; only the number
        of rows, features and column names are checked here. Its ``fit`` receives
        ``sensitive_features`` and ``sample_weight`` when it takes them (fairest
        estimators; a ``Pipeline`` whose last step takes them, as
        ``<step>__sensitive_features``, without metadata routing; under routing, what
        the estimator's metadata requests consume). A ``predict`` that needs the groups
        (a group-aware post-processor, or a pipeline ending with one under routing) gets
        them through this estimator's ``predict(X, sensitive_features=...)``, which
        requests them through metadata routing (as ``predict_proba``,
        ``decision_function`` and ``score`` do).
    constraints : list of (str, float) or dict, default=(("demographic_parity_difference", 0.05),)
        ``(metric, tolerance)`` pairs to certify: ``"demographic_parity_difference"``,
        ``"demographic_parity_ratio"``, ``"equal_opportunity_difference"``,
        ``"equal_opportunity_ratio"``, ``"equalized_odds_difference"``,
        ``"equalized_odds_ratio"``, ``"zero_one_loss_gap"``, ``"log_loss_gap"`` (see
        :func:`fairness_interval`). Differences and gaps are certified at most their
        tolerance, ratios at least.
    delta : float, default=0.05
        Probability that a certified model violates a constraint on the population.
    bound : {"clopper-pearson", "hoeffding", "bernstein", "student-t", "bootstrap"}, \
default="clopper-pearson"
        Confidence bound of the group rates. The last two are approximate (as in the
        Seldonian tools) and the certificate says so.
    safety_fraction : float, default=0.6
        Share of every group-label stratum held out for the safety test.
    param_grid : dict or list of dicts, default=None
        Candidate settings of ``estimator`` (as for ``GridSearchCV``); ``None`` sweeps its
        ``tolerance`` over (0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0) or its
        ``fairness_weight`` over (0, 0.1, 0.3, 1, 3, 10) when it has one (also as the last
        step of a pipeline), else fits it once.
    inflation : float, default=2.0
        Widening of the predicted bound in candidate selection (Thomas et al. use 2): it
        trades NSF (too optimistic a prediction) against accuracy (too pessimistic).
        It does not affect the guarantee.
    n_comparisons : int, default=1
        Number of wrapper runs (settings, seeds, estimators) on the same data among which
        this one is kept; delta is divided by it (Bonferroni). A search *around* the
        wrapper (``GridSearchCV(CertifiedFairClassifier(...))`` with ``k`` settings)
        keeps the guarantee only with ``n_comparisons=k``.
    random_state : int, RandomState instance or None, default=None
        Seed of the split (and of the bootstrap bound).
    on_no_solution : {"raise", "constant"}, default="raise"
        What ``predict`` does after an NSF: raise :class:`NoSolutionFoundError`, or
        predict the majority class of the training labels (a constant classifier has
        demographic parity, equal opportunity and equalized odds differences of exactly 0;
        not a zero 0-1 loss gap).
    selection : {"predicted", "fixed_sequence"}, default="predicted"
        How the safety part is used. ``"predicted"``: the Seldonian rule above, one
        safety test. ``"fixed_sequence"``: Learn-then-Test (Angelopoulos et al. 2021):
        the candidates are tested on the safety part one after the other, in the order of
        their predicted bounds (most likely to pass first), each at the full delta, until
        the first failure; every candidate that passed is certified at once and the most
        accurate is kept (no Bonferroni factor). Suited to a knob that orders the
        candidates, e.g. the ``tolerance`` path of a post-processor.
    shift : DemographicShift, default=None
        Certify for a deployed population whose distribution of a demographic attribute
        ``T`` (the ``shift_features`` of ``fit``) has the declared shares, or any shares
        in the declared box, with ``P(X, Y, S | T)`` unchanged (see
        :func:`certify_fairness`). Candidates are chosen by the shift-aware predicted
        bound, and the safety test is shift-aware.
    verbose : int, default=0
        1 logs the chosen candidate and the safety test.

    Attributes
    ----------
    certified_ : bool
        Whether the safety test passed.
    certificate_ : FairnessCertificate
        The safety test of the chosen candidate.
    best_estimator_ : estimator
        The chosen candidate, fitted on the candidate part (used by ``predict`` when
        ``certified_``).
    best_params_ : dict
        Its setting.
    best_index_ : int
        Its index in ``candidate_results_``.
    candidate_results_ : dict
        ``params`` (list of dicts), ``accuracy`` (on the candidate part),
        ``predicted_bound`` (per constraint: shape (n_candidates, n_constraints), the
        end of the predicted interval checked against the tolerance) and
        ``predicted_pass``, ``predicted_margin`` (the largest predicted excess over a
        tolerance) and ``safety_tested`` (which candidates met the safety part).
    no_solution_reason_ : str or None
        Why no solution was found; ``None`` when certified.
    rows_needed_ : int or None
        After an NSF for too little data: rows per group (in the rate's condition, e.g.
        positives for equal opportunity) in the safety part that a perfectly fair model
        at the observed rates would need; else ``None``.
    classes_ : ndarray of shape (2,)
    groups_ : ndarray of shape (n_groups,)
    majority_class_ : object
        The majority training label (the ``"constant"`` fallback).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.

    References
    ----------
    .. [1] Thomas, P. S., Castro da Silva, B., Barto, A. G., Giguere, S., Brun, Y. and
       Brunskill, E. "Preventing undesirable behavior of intelligent machines",
       Science 366 (2019), 999-1004.
    .. [2] Giguere, S., Metevier, B., Brun, Y., Castro da Silva, B., Thomas, P. S. and
       Niekum, S. "Fairness guarantees under demographic shift", ICLR 2022.
    .. [3] Clopper, C. J. and Pearson, E. S. "The use of confidence or fiducial limits
       illustrated in the case of the binomial", Biometrika 26 (1934).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from fairest.certified import CertifiedFairClassifier
    >>> from fairest.datasets import make_grouped_classification
    >>> X, y, groups = make_grouped_classification(n_samples=3000, random_state=0)
    >>> model = CertifiedFairClassifier(
    ...     LogisticRegression(), constraints=[("demographic_parity_difference", 0.9)],
    ...     param_grid={"C": [0.01, 1.0]}, random_state=0,
    ... ).fit(X, y, sensitive_features=groups)
    >>> model.certified_
    True
    """

    __metadata_request__fit = {"sensitive_features": True}
    __metadata_request__predict = {"sensitive_features": True}
    __metadata_request__predict_proba = {"sensitive_features": True}
    __metadata_request__decision_function = {"sensitive_features": True}
    __metadata_request__score = {"sensitive_features": True}

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"])],
        "constraints": [list, tuple, dict],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "bound": [StrOptions(set(BOUNDS))],
        "safety_fraction": [Interval(Real, 0, 1, closed="neither")],
        "param_grid": [dict, list, None],
        "inflation": [Interval(Real, 1, None, closed="left")],
        "n_comparisons": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "on_no_solution": [StrOptions({"raise", "constant"})],
        "selection": [StrOptions({"predicted", "fixed_sequence"})],
        "shift": [DemographicShift, None],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        estimator,
        *,
        constraints=(("demographic_parity_difference", 0.05),),
        delta=0.05,
        bound="clopper-pearson",
        safety_fraction=0.6,
        param_grid=None,
        inflation=2.0,
        n_comparisons=1,
        random_state=None,
        on_no_solution="raise",
        selection="predicted",
        shift=None,
        verbose=0,
    ):
        self.estimator = estimator
        self.constraints = constraints
        self.delta = delta
        self.bound = bound
        self.safety_fraction = safety_fraction
        self.param_grid = param_grid
        self.inflation = inflation
        self.n_comparisons = n_comparisons
        self.random_state = random_state
        self.on_no_solution = on_no_solution
        self.selection = selection
        self.shift = shift
        self.verbose = verbose

    # ----------------------------------------------------------------------------------
    # fit

    def fit(self, X, y, *, sensitive_features=None, sample_weight=None, shift_features=None):
        """Fit the candidates, choose one and run the safety test.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (both parts).
        y : array-like of shape (n_samples,)
            Binary target.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Group membership; ``None`` means one group (with a warning), where every
            parity metric is 0.
        sample_weight : array-like of shape (n_samples,), default=None
            Passed to the candidates' fits (when they take it) and to the candidate
            accuracy; the safety test counts rows unweighted, since the guarantee is about
            the population the rows are drawn from.
        shift_features : array-like of shape (n_samples,) or str, default=None
            With ``shift``: the value of the shift attribute ``T`` of every row, or the
            name of a column of ``X``.

        Returns
        -------
        self : CertifiedFairClassifier
            The fitted estimator (certified or not: see ``certified_``).
        """
        constraints, data, y_codes, t_codes = self._validate(
            X, y, sensitive_features, sample_weight, shift_features
        )
        seed = seed_of(self.random_state)
        safety = self._split(data, y_codes, seed)
        results = fit_candidates(
            self, self._candidate_grid(), data, ~safety, constraints, seed, t_codes
        )
        estimators, outcomes = results.pop("estimators"), results.pop("outcomes")
        fit_warnings = results.pop("fit_warnings")
        chosen = select_candidate(
            self, data, safety, estimators, results, constraints, seed, t_codes
        )
        results["safety_tested"] = chosen.safety_tested
        self._store(chosen, results, estimators, safety, shift_features)
        self._warn_about_kept(chosen, results, outcomes, fit_warnings, data, safety)
        log_fit(
            self,
            "candidate %s (accuracy %.4f): %s",
            self.best_params_,
            results["accuracy"][self.best_index_],
            "certified" if self.certified_ else f"no solution found: {self.no_solution_reason_}",
        )
        return self

    def _validate(self, X, y, sensitive_features, sample_weight, shift_features):
        """Check the settings and the data; set ``classes_``, ``groups_`` and
        ``majority_class_``. Returns the constraints, the validated data, the class codes
        of ``y`` and the shift attribute's codes (``None`` without ``shift``)."""
        self._validate_params()
        constraints = check_constraints(self.constraints)
        check_delta_and_bound(self.delta, self.bound, self.n_comparisons)
        check_not_regressor(
            self.estimator,
            "estimator",
            "CertifiedFairClassifier",
            fix="Wrap a classifier (e.g. LogisticRegression) instead.",
        )
        data = validate_passthrough_fit_data(self, X, y, sensitive_features, sample_weight)
        data = data._replace(X=indexable(data.X)[0])  # rows taken as cross-validation does
        self.classes_, y_codes = np.unique(data.y, return_inverse=True)
        if self.classes_.size != 2:
            raise ValueError(
                "Only binary classification is supported by CertifiedFairClassifier: y "
                f"needs samples of 2 classes and has {self.classes_.size} class(es) "
                f"({', '.join(repr(c) for c in self.classes_.tolist()[:5])})."
            )
        self.groups_ = data.group_labels
        if self.shift is None and shift_features is not None:
            raise ValueError(
                "shift_features is given but shift is None; set shift=DemographicShift(...) "
                "with the deployed shares of T, or drop shift_features."
            )
        t_codes = (
            None
            if self.shift is None
            else encode_shift_features(shift_features, self.shift, data.y.shape[0], X=X)
        )
        self.majority_class_ = self.classes_[np.argmax(np.bincount(y_codes))]
        return constraints, data, y_codes, t_codes

    def _split(self, data, y_codes, seed) -> np.ndarray:
        """The safety rows (a boolean mask), stratified by group and label; the others are
        the candidate part. Refuses a split the candidates cannot be fitted on."""
        safety = stratified_safety_split(data.groups * 2 + y_codes, self.safety_fraction, seed)
        self._check_split(data, y_codes, safety)
        return safety

    def _store(self, chosen, results, estimators, safety, shift_features) -> None:
        """Set the fitted attributes from the safety test's outcome: the kept candidate,
        the certificate, and why nothing was certified when nothing was."""
        self.best_index_ = chosen.best_index
        self.candidate_results_ = results
        self.best_params_ = results["params"][self.best_index_]
        self.best_estimator_ = estimators[self.best_index_]
        n_safety = int(safety.sum())
        self.certificate_ = FairnessCertificate(
            constraints=chosen.outcome,
            delta=float(self.delta),
            bound=self.bound,
            n_comparisons=int(self.n_comparisons),
            n_certification=n_safety,
            n_candidate=safety.size - n_safety,
            random_state=self.random_state if isinstance(self.random_state, int) else None,
            selection=chosen.how,
            shift=self.shift,
            shift_attribute=shift_name(shift_features),
        )
        self.certified_ = self.certificate_.passed
        self.no_solution_reason_, self.rows_needed_ = (
            (None, None) if self.certified_ else self._explain(results)
        )

    def _warn_about_kept(self, chosen, results, outcomes, fit_warnings, data, safety) -> None:
        """Re-emit the fairness warnings of the kept candidate's fit, and warn when the
        certified candidate is (near-)constant on the safety rows. Called by :meth:`fit`
        only: the warnings point at ``fit``'s caller."""
        for caught in fit_warnings[self.best_index_]:
            warnings.warn(
                f"the fit of the kept candidate {self.best_params_ or '(as given)'}: "
                f"{caught.message}",
                caught.category,
                stacklevel=3,
            )
        if self.certified_:
            warn_if_near_constant(
                chosen.predictions[self.best_index_],
                data.groups[safety],
                data.group_labels,
                self.classes_,
                who=f"CertifiedFairClassifier: the certified candidate {self.best_params_ or ''}",
                rows="safety rows",
                cause=self._degenerate_cause(results, outcomes),
                stacklevel=4,
            )

    def _candidate_grid(self) -> list[dict]:
        if self.param_grid is not None:
            return list(ParameterGrid(self.param_grid))
        params = self.estimator.get_params()
        for knob, sweep in (
            ("tolerance", _defaults.TOLERANCE_SWEEP),
            ("fairness_weight", _defaults.FAIRNESS_WEIGHT_SWEEP),
        ):
            names = [name for name in params if name == knob or name.endswith(f"__{knob}")]
            if names:
                name = min(names, key=len) if knob in names else names[-1]
                return [{name: value} for value in sweep]
        return [{}]

    def _check_split(self, data, y_codes, safety) -> None:
        """Refuse a candidate / safety split the candidates cannot be fitted on, before
        fitting anything: an empty part, a class missing from the candidate part, or a
        group missing from it when the wrapped ``predict`` needs the groups."""
        n_rows, n_safety = safety.size, int(safety.sum())
        split = (
            f"safety_fraction={self.safety_fraction:g} of every group-label stratum, rounded, "
            f"gives {n_safety} safety row(s) and {n_rows - n_safety} candidate row(s) of "
            f"{n_rows}"
        )
        if n_safety == 0:
            raise ValueError(
                f"the safety part is empty: {split}. Raise safety_fraction or give more rows."
            )
        if n_safety == n_rows:
            raise ValueError(
                f"the candidate part is empty: {split}. Lower safety_fraction or give more rows."
            )
        candidate = ~safety
        for code, label in enumerate(self.classes_.tolist()):
            if not np.any(y_codes[candidate] == code):
                total = int(np.sum(y_codes == code))
                raise ValueError(
                    f"the candidate part holds no row of class {label!r}, so the candidates "
                    f"cannot be fitted on two classes: {split}, and the {total} row(s) of "
                    f"class {label!r} all fall in the safety part. Lower safety_fraction or "
                    f"give more rows of class {label!r}."
                )
        if takes_groups(self.estimator, "predict"):
            seen = np.bincount(data.groups[candidate], minlength=len(data.group_labels)) > 0
            if not seen.all():
                label = plain_label(data.group_labels[np.flatnonzero(~seen)[0]])
                raise ValueError(
                    f"the candidate part holds no row of group {label!r}, and "
                    f"{type(self.estimator).__name__}.predict needs a group it was fitted "
                    f"on: {split}. Lower safety_fraction, give more rows of group "
                    f"{label!r} or merge it with another group."
                )

    def _degenerate_cause(self, results, outcomes) -> str:
        """What made the certified candidate (near-)constant, as the fit shows it: the most
        accurate candidate, predicted to fail, and the groups at the ends of its failing
        constraint's rates (``outcomes``: every candidate's predicted constraint results)."""
        accuracy = results["accuracy"]
        better = np.flatnonzero(accuracy > accuracy[self.best_index_])
        if not better.size:
            return (
                " No candidate was more accurate on the candidate part: the estimator is "
                "(near-)constant there itself."
            )
        best = int(better[np.argmax(accuracy[better])])
        failed = [r for r in outcomes[best] if not r.passed]
        if not failed:  # pragma: no cover - a passing, more accurate one would be chosen
            return ""
        result = failed[0]
        head = (
            f" The most accurate candidate, {results['params'][best] or 'as given'} "
            f"(accuracy {accuracy[best]:.3g} on the candidate part, against "
            f"{accuracy[self.best_index_]:.3g}), was predicted to fail {result.metric} "
            f"{result.relation} {result.tolerance:g}: predicted bound "
            f"{result.certified_bound:.3g}, estimate {result.estimate:.3g}."
        )
        within = (
            result.estimate <= result.tolerance
            if result.kind == "difference"
            else result.estimate >= result.tolerance
        )
        if within:  # fair enough, but too few rows to show it
            rate, group = np.unravel_index(np.argmin(result.group_count), result.group_count.shape)
            return (
                f"{head} Its estimate meets the tolerance but its predicted interval does "
                f"not: group {plain_label(result.group_labels[group])!r} has the fewest "
                f"{rate_condition(result.rate_names[rate])} behind its "
                f"{result.rate_names[rate]} rate ({int(result.group_count[rate, group])} at "
                "the safety part's size). Give more rows of that group, loosen the tolerance, "
                "raise delta or lower inflation."
            )
        spread = result.group_estimate
        rate = int(np.argmax(spread.max(axis=1) - spread.min(axis=1)))
        low, high = int(np.argmin(spread[rate])), int(np.argmax(spread[rate]))
        return (
            f"{head} Its {result.rate_names[rate]} rates range from {spread[rate, low]:.3g} "
            f"(group {plain_label(result.group_labels[low])!r}) to {spread[rate, high]:.3g} "
            f"(group {plain_label(result.group_labels[high])!r}). Give the candidates more "
            "fairness (param_grid) or loosen the tolerance."
        )

    def _explain(self, results) -> tuple[str, int | None]:
        """Why the safety test failed, and the rows per group needed when data is short."""
        share = self.certificate_.constraints[0].delta_share
        failed = [r for r in self.certificate_.constraints if not r.passed]
        for result in failed:
            if result.shift_reason:
                return result.shift_reason, None
        for result in failed:
            for i, rate in enumerate(result.rate_names):
                empty = np.flatnonzero(result.group_count[i] == 0)
                if empty.size:
                    return (
                        f"group {result.group_labels[empty[0]]!r} has no {rate_condition(rate)} "
                        f"in the safety part, so {result.metric} cannot be bounded; collect "
                        "more data for it or merge it with another group.",
                        None,
                    )
        # rows_needed is the i.i.d. count; under a shift more rows are needed
        for result in failed if self.shift is None else []:
            if METRICS[result.metric].needs_proba:
                continue
            counts = result.group_count
            rate = float(np.clip(result.group_estimate.mean(), 0.0, 1.0))
            needed = rows_needed(
                result.metric,
                result.tolerance,
                share,
                self.bound,
                rate=rate,
                num_groups=counts.shape[1],
            )
            smallest = np.unravel_index(np.argmin(counts), counts.shape)
            if counts[smallest] < needed <= 10**8:  # above: no amount of data suffices
                condition = rate_condition(result.rate_names[smallest[0]])
                return (
                    f"too little data: group {result.group_labels[smallest[1]]!r} has "
                    f"{counts[smallest]} {condition} in the safety part, but certifying "
                    f"{result.metric} {result.relation} {result.tolerance:g} at delta share "
                    f"{share:.3g} with the {self.bound} bound needs about {needed} per group "
                    f"even for a perfectly fair model (at the observed rate {rate:.3g}).",
                    int(needed),
                )
        result = failed[0]
        predicted = results["predicted_bound"][self.best_index_]
        return (
            f"no candidate reached the constraint: the chosen candidate "
            f"{self.best_params_ or '(the estimator as given)'} has {result.metric} certified "
            f"only {'below' if result.kind == 'difference' else 'above'} "
            f"{result.certified_bound:.4g} (estimate {result.estimate:.4g}, tolerance "
            f"{result.tolerance:g}; predicted {predicted[0]:.4g}). Widen the candidates' "
            "fairness (param_grid) or loosen the tolerance.",
            None,
        )

    # ----------------------------------------------------------------------------------
    # prediction

    def _delegate(self, X, method: str, sensitive_features):
        """The certified model's ``method`` on ``X`` as given (only its feature count and
        names are checked here), or the number of rows for the NSF fallback."""
        check_is_fitted(self, "certified_")
        check_passthrough_X(self, X)
        if self.certified_:
            return call_with_groups(self.best_estimator_, method, X, sensitive_features), True
        if self.on_no_solution == "raise":
            raise NoSolutionFoundError(
                f"No solution found: {self.no_solution_reason_} (on_no_solution='constant' "
                "predicts the majority class instead)."
            )
        return _num_samples(X), False

    def predict(self, X, sensitive_features=None):
        """Predict with the certified model (or the fallback after an NSF).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.
        sensitive_features : array-like of shape (n_samples,), default=None
            Only for a wrapped estimator whose prediction needs the groups (a group-aware
            post-processor); ignored otherwise.

        Returns
        -------
        ndarray of shape (n_samples,)
            Predicted labels.

        Raises
        ------
        NoSolutionFoundError
            After an NSF with ``on_no_solution="raise"``.
        """
        result, certified = self._delegate(X, "predict", sensitive_features)
        if certified:
            return result
        return np.full(result, self.majority_class_)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X, sensitive_features=None):
        """Predict class probabilities with the certified model.

        After an NSF with ``on_no_solution="constant"``: one-hot on the majority class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.
        sensitive_features : array-like of shape (n_samples,), default=None
            Only for a wrapped estimator whose prediction needs the groups (a group-aware
            post-processor); ignored otherwise.

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Class probabilities, columns in the order of ``classes_``.
        """
        result, certified = self._delegate(X, "predict_proba", sensitive_features)
        if certified:
            return result
        proba = np.zeros((result, self.classes_.size))
        proba[:, np.flatnonzero(self.classes_ == self.majority_class_)[0]] = 1.0
        return proba

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X, sensitive_features=None):
        """Compute the scores of the certified model.

        After an NSF with ``on_no_solution="constant"``: a constant +-1 toward the
        majority class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.
        sensitive_features : array-like of shape (n_samples,), default=None
            Only for a wrapped estimator whose prediction needs the groups (a group-aware
            post-processor); ignored otherwise.

        Returns
        -------
        ndarray of shape (n_samples,)
            Scores; positive values favour ``classes_[1]``.
        """
        result, certified = self._delegate(X, "decision_function", sensitive_features)
        if certified:
            return result
        sign = 1.0 if self.majority_class_ == self.classes_[-1] else -1.0
        return np.full(result, sign)

    def score(self, X, y, sensitive_features=None, sample_weight=None):
        """Accuracy of :meth:`predict`, with the groups passed on to it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.
        y : array-like of shape (n_samples,)
            True labels.
        sensitive_features : array-like of shape (n_samples,), default=None
            Only for a wrapped estimator whose prediction needs the groups (a group-aware
            post-processor); ignored otherwise.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        float
            Mean accuracy.
        """
        y_pred = self.predict(X, sensitive_features=sensitive_features)
        return float(accuracy_score(y, y_pred, sample_weight=sample_weight))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        # X goes to the candidates as given: the wrapped estimator says what it may hold
        wrapped = get_tags(self.estimator).input_tags
        tags.input_tags.sparse = wrapped.sparse
        tags.input_tags.allow_nan = wrapped.allow_nan
        return tags
