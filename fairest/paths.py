"""Fairness paths: one estimator fitted along a grid of its fairness knob, in one sweep.

:func:`fairness_path` returns, for every value of the knob (ERMI's ``fairness_weight``,
a constrained method's or the post-processor's ``tolerance``, ...), the fitted estimator
and its train (and validation) accuracy and unfairness, as a :class:`FairnessPath` with a
``to_frame()`` that :func:`fairest.plot.plot_pareto_frontier` draws directly. How the
points are computed depends on the family (``FairnessPath.strategy``, declared by the
estimator's class, see :func:`fairness_path`): Newton ``"continuation"`` along ERMI's
weights, ``"vmap"``-ped loss-gap solvers, ``"shared_scores"`` of the post-processor's
wrapped classifier, or one ``"refit"`` per value (compiled kernels shared across the
values, since the knobs are traced).
"""

from __future__ import annotations

import inspect
import numbers
import time
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.metrics import accuracy_score
from sklearn.model_selection import check_cv
from sklearn.utils import _safe_indexing
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import validate_data

from fairest import metrics as _metrics
from fairest.model_selection._split import group_stratified_splits
from fairest.utils._validation import frame_of_mapping

__all__ = ["FairnessPath", "fairness_path"]

STRATEGIES = ("continuation", "vmap", "shared_scores", "refit")


@dataclass
class FairnessPath:
    """What :func:`fairness_path` returns: one fitted model per value of the knob.

    Parameters
    ----------
    param : str
        The parameter the path runs over.
    values : ndarray of shape (n_values,)
        Its values, in the order given.
    estimators : list of estimators, or list of lists of estimators
        The fitted estimator at every value (``clone(estimator)`` with ``param`` set);
        with ``cv``, ``estimators[i][j]`` is the model of ``values[i]`` fitted on fold
        ``j``'s training rows (indexed as the ``fold_*`` arrays).
    train_accuracy, train_unfairness : ndarray of shape (n_values,)
        Accuracy and unfairness on the fit data (weighted by ``sample_weight``); with
        ``cv``, their means over the folds.
    val_accuracy, val_unfairness : ndarray of shape (n_values,) or None
        The same on the validation data (unweighted); ``None`` without ``X_val`` or
        ``cv``; with ``cv``, the means over the folds of the test rows' values.
    unfairness : str
        The catalogue metric that measures the unfairness: ``metric`` or the
        estimator's own (e.g. ``demographic_parity_difference``).
    strategy : {"continuation", "vmap", "shared_scores", "refit"}
        How the points were computed (see :func:`fairness_path`).
    method : str
        A label of the estimator (its class name), the ``method`` column of
        :meth:`to_frame`.
    fit_time : float
        Wall-clock seconds of the whole path.
    n_splits : int or None
        The number of cross-validation folds; ``None`` without ``cv``.
    fold_train_accuracy, fold_train_unfairness : ndarray of shape (n_values, n_splits) \
or None
        With ``cv``: every (value, fold) model's accuracy and unfairness on the fold's
        training rows (weighted by ``sample_weight``); ``None`` otherwise.
    fold_val_accuracy, fold_val_unfairness : ndarray of shape (n_values, n_splits) or None
        With ``cv``: the same on the fold's test rows (unweighted, as ``GridSearchCV``'s
        default scoring); ``None`` otherwise.
    """

    param: str
    values: np.ndarray
    estimators: list
    train_accuracy: np.ndarray
    train_unfairness: np.ndarray
    val_accuracy: np.ndarray | None
    val_unfairness: np.ndarray | None
    unfairness: str
    strategy: str
    method: str
    fit_time: float = field(default=0.0)
    n_splits: int | None = None
    fold_train_accuracy: np.ndarray | None = None
    fold_train_unfairness: np.ndarray | None = None
    fold_val_accuracy: np.ndarray | None = None
    fold_val_unfairness: np.ndarray | None = None

    def to_frame(self) -> pd.DataFrame:
        """One row per value of the knob, ready for :func:`fairest.plot.plot_pareto_frontier`.

        Columns: ``method``, the parameter, ``accuracy`` and ``unfairness`` (validation
        values when there are any, else train), and every train / validation column;
        with ``cv`` these are means over the folds, and ``train_accuracy_std``,
        ``train_unfairness_std``, ``val_accuracy_std`` and ``val_unfairness_std`` give
        their standard deviations over the folds.

        Returns
        -------
        frame : DataFrame
            One row per value, in the order of ``values``.
        """
        frame = pd.DataFrame(
            {
                "method": self.method,
                self.param: self.values,
                "train_accuracy": self.train_accuracy,
                "train_unfairness": self.train_unfairness,
            }
        )
        if self.val_accuracy is not None:
            frame["val_accuracy"] = self.val_accuracy
            frame["val_unfairness"] = self.val_unfairness
            frame["accuracy"], frame["unfairness"] = self.val_accuracy, self.val_unfairness
        else:
            frame["accuracy"], frame["unfairness"] = self.train_accuracy, self.train_unfairness
        if self.n_splits is not None:
            for name in ("train_accuracy", "train_unfairness", "val_accuracy", "val_unfairness"):
                frame[f"{name}_std"] = getattr(self, f"fold_{name}").std(axis=1)
        return frame


def fairness_path(
    estimator,
    X,
    y,
    *,
    sensitive_features,
    param=None,
    values,
    X_val=None,
    y_val=None,
    sensitive_features_val=None,
    sample_weight=None,
    cv=None,
    metric=None,
):
    """Fit ``estimator`` at every value of its fairness knob, faster than refitting.

    Every point of the path is the model that
    ``clone(estimator).set_params(**{param: value}).fit(X, y, sensitive_features=...,
    sample_weight=...)`` returns, to the solver's tolerance; the path computes them
    together:

    * :class:`~fairest.ermi.ERMIClassifier`, ``fairness_weight`` (full-batch solver):
      Newton's method (exact Hessian) continued along the sorted weights, to the
      refit's stationarity test ``||grad||_inf <= tol``, finished by the family's
      L-BFGS where it stops above it (``strategy="continuation"``);
    * :class:`~fairest.constrained.LossGapConstrainedClassifier`, ``tolerance`` (scan
      solvers, no ``record_history`` / ``max_time``, a linear model or
      ``dtype="float64"``): the seeded solver's epoch loop
      ``vmap``-ped over the values, on the draws of a refit (``strategy="vmap"``);
    * :class:`~fairest.postprocessing.GroupThresholdClassifier`, ``tolerance`` (groups
      at predict): one fit and one score computation of the wrapped classifier, the
      sorted per-group counts built once, only the threshold search per value
      (``strategy="shared_scores"``). The points share the fitted ``estimator_``; they
      equal refits when the wrapped classifier's fit is deterministic;
    * anything else, including ``PrunedFairClassifier``'s ``tolerance`` (seeded
      stochastic solvers: a warm start would not give the refit's model) and
      ERMI's SGDA solver: one refit per value, compiled code shared
      (``strategy="refit"``).

    Parameters
    ----------
    estimator : estimator
        An unfitted fairest (or scikit-learn) classifier; it is cloned, never modified.
    X : array-like of shape (n_samples, n_features)
        Training data, as the estimator's ``fit`` takes it.
    y : array-like of shape (n_samples,)
        Target.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership, passed to ``fit`` and to the unfairness metric.
    param : str, default=None
        The parameter the path runs over; ``None``: the knob the estimator's class
        declares (``fairness_weight`` for ERMI, ``tolerance`` for the constrained and
        post-processing families; see Notes).
    values : array-like of shape (n_values,)
        Values of ``param`` (numbers), each valid for the estimator; kept in the order
        given.
    X_val, y_val, sensitive_features_val : array-like, default=None
        Validation data (all three, or none): adds ``val_accuracy`` and
        ``val_unfairness``.
    sample_weight : array-like of shape (n_samples,), default=None
        Passed to ``fit``; weights the train accuracy and unfairness.
    cv : int, cross-validation generator or iterable of (train, test) pairs, default=None
        Cross-validate the path. An int ``k`` (with a class target) is
        :class:`~fairest.model_selection.GroupStratifiedKFold` ``(k)`` on the groups and
        labels, so every fold's training and test rows hold every group: a group or a
        label too small for ``k`` folds raises ``ValueError`` naming it (a group needs a
        row in every test fold and two in every training fold). Anything else is
        resolved by scikit-learn's ``check_cv(cv, y, classifier=True)`` (a splitter's
        ``split`` gets ``X`` and ``y`` only, so pass splits for one that needs
        ``groups``). Every (value, fold) model is fitted on the fold's training rows
        (groups and ``sample_weight`` split along) and scored on them and on the fold's
        test rows, as ``GridSearchCV(refit=False)`` or ``validation_curve`` do; no model
        is fitted on all the data. The path then holds ``fold_*`` arrays of shape (n_values,
        n_splits), their means as ``train_*`` / ``val_*``, and ``estimators[i][j]``
        (value ``i``, fold ``j``). The loss-gap lanes run every (fold, value) pair in one
        sweep; the other strategies run one path per fold. Not with ``X_val``.
    metric : str, default=None
        The unfairness the points are scored by: a name of the metric catalogue
        (:func:`fairest.metrics.catalogue`, including metrics added with
        :func:`fairest.metrics.register_metric`; metrics of labels take ``predict``,
        of scores ``decision_function`` (else the positive-class probability), of
        probabilities ``predict_proba``). ``None``: the estimator's own ``metric`` (a
        catalogue name, or a family's short name such as ``"equalized_odds"``, read as
        fairlearn's ``*_difference``; the constrained family's loss gaps), else the
        demographic parity difference.

    Returns
    -------
    path : FairnessPath
        The fitted estimators and their train / validation accuracy and unfairness
        (``path.to_frame()`` for a table).

    Raises
    ------
    ValueError
        If ``param`` is not a parameter of ``estimator`` (or none can be inferred), if
        ``values`` is empty, not 1-D or not finite numbers, if a value is invalid for the
        estimator (scikit-learn's ``InvalidParameterError``), if the validation data is
        incomplete, if ``cv`` comes with ``X_val`` or gives an empty split, or if a group
        or a label is too small for an int ``cv``'s folds.

    Notes
    -----
    The path protocol: an estimator class declares its fairness knob and the path
    strategy for it in a class attribute ``_fairness_path = (param, strategy)``, e.g.
    ``("tolerance", "shared_scores")``; ``strategy`` is one of ``"continuation"``,
    ``"vmap"``, ``"shared_scores"`` (each needs the family's path code, so only
    fairest's own estimators declare them) or ``"refit"``. A class without the attribute
    needs ``param=`` and is refitted per value.

    References
    ----------
    .. [1] J. Friedman, T. Hastie, R. Tibshirani. "Regularization Paths for Generalized
       Linear Models via Coordinate Descent". Journal of Statistical Software 33(1), 2010
       (paths over a penalty weight, computed together).
    .. [2] A. Lowy, S. Baharlouei, R. Pavan, M. Razaviyayn, A. Beirami. "A Stochastic
       Optimization Framework for Fair Risk Minimization", TMLR 2022 (FERMI).
    .. [3] M. Hardt, E. Price, N. Srebro. "Equality of Opportunity in Supervised
       Learning". NeurIPS 2016 (group thresholds).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from fairest import GroupThresholdClassifier, fairness_path
    >>> rng = np.random.default_rng(0)
    >>> groups = rng.choice(["a", "b"], size=400)
    >>> X = rng.normal(size=(400, 2)) + (groups == "a")[:, None]
    >>> y = (X[:, 0] + rng.normal(size=400) > 0.5).astype(int)
    >>> path = fairness_path(GroupThresholdClassifier(LogisticRegression()), X, y,
    ...                      sensitive_features=groups, values=[0.01, 0.05, 0.2])
    >>> path.to_frame()[["tolerance", "train_unfairness"]].shape
    (3, 2)
    >>> bool(np.all(path.train_unfairness <= path.values + 1e-9))
    True
    >>> cv_path = fairness_path(GroupThresholdClassifier(LogisticRegression()), X, y,
    ...                         sensitive_features=groups, values=[0.02, 0.2], cv=3)
    >>> cv_path.fold_val_accuracy.shape
    (2, 3)
    """
    start = time.perf_counter()
    param = _resolve_param(estimator, param)
    given = list(np.asarray(values, dtype=object).ravel())  # ints stay ints for set_params
    values = _check_values(estimator, param, values)
    validation = _check_validation(X_val, y_val, sensitive_features_val)
    fit = dict(sensitive_features=sensitive_features, sample_weight=sample_weight)
    strategy = _strategy(estimator, param)
    if cv is not None:
        if validation is not None:
            raise ValueError(
                "cv and X_val are two ways of validating: pass one of them (cv scores "
                "every fold's model on the fold's test rows)."
            )
        return _cross_validated_path(
            estimator, param, values, given, strategy, X, y, fit, cv, start, metric
        )
    metric_name, unfairness = _unfairness_metric(estimator, metric)
    own = metric is None  # the loss-gap lanes score their own metric
    estimators = _fit_points(estimator, param, values, given, strategy, X, y, fit)
    train = _path_scores(
        estimators, unfairness, X, y, sensitive_features, sample_weight, strategy, own
    )
    val = (
        _path_scores(estimators, unfairness, *validation, None, strategy, own)
        if validation
        else None
    )
    return FairnessPath(
        param=param,
        values=values,
        estimators=estimators,
        train_accuracy=np.array([a for a, _ in train]),
        train_unfairness=np.array([u for _, u in train]),
        val_accuracy=None if val is None else np.array([a for a, _ in val]),
        val_unfairness=None if val is None else np.array([u for _, u in val]),
        unfairness=metric_name,
        strategy=strategy,
        method=type(estimator).__name__,
        fit_time=time.perf_counter() - start,
    )


def _fit_points(estimator, param, values, given, strategy, X, y, fit) -> list:
    """The fitted estimator of every value, computed by ``strategy``."""
    if strategy == "vmap":  # the constrained engine's lanes
        from fairest.constrained._path import fit_tolerance_path

        return fit_tolerance_path(estimator, X, y, given, **fit)
    if strategy == "continuation":
        from fairest.ermi._path import fit_weight_path

        return fit_weight_path(estimator, param, values, X, y, fit)
    if strategy == "shared_scores":
        return estimator._tolerance_path(X, y, tolerances=values, **fit)
    return [_refit(estimator, param, value, X, y, fit) for value in given]


# ---------------------------------------------------------------------------------------
# cross-validation


def _cross_validated_path(
    estimator, param, values, given, strategy, X, y, fit, cv, start, metric=None
):
    """:func:`fairness_path` with ``cv``: every (value, fold) model, its train scores on
    the fold's training rows and its validation scores on the fold's test rows."""
    metric_name, unfairness = _unfairness_metric(estimator, metric)
    own = metric is None
    splits = _check_splits(cv, X, y, fit["sensitive_features"])
    if strategy == "vmap":  # every (fold, value) lane in one sweep
        from fairest.constrained._path import _fit_folds

        estimators, logits = _fit_folds(
            estimator,
            X,
            y,
            given,
            [train for train, _ in splits],
            fit["sensitive_features"],
            fit["sample_weight"],
        )
    else:
        per_fold = [
            _fit_points(estimator, param, values, given, strategy, *_fold_rows(X, y, fit, train))
            for train, _ in splits
        ]
        estimators = [list(points) for points in zip(*per_fold)]
    if strategy == "vmap" and own and hasattr(estimators[0][0], "coef_"):  # loss-gap lanes
        from fairest.constrained._path import score_linear_folds

        groups, weight = fit["sensitive_features"], fit["sample_weight"]
        train, val = score_linear_folds(estimators, X, y, groups, weight, splits, logits)
    else:
        train, val = _fold_scores(estimators, unfairness, strategy, X, y, fit, splits, own)
    train, val = np.asarray(train).transpose(1, 0, 2), np.asarray(val).transpose(1, 0, 2)
    return FairnessPath(
        param=param,
        values=values,
        estimators=estimators,
        train_accuracy=train[..., 0].mean(axis=1),
        train_unfairness=train[..., 1].mean(axis=1),
        val_accuracy=val[..., 0].mean(axis=1),
        val_unfairness=val[..., 1].mean(axis=1),
        unfairness=metric_name,
        strategy=strategy,
        method=type(estimator).__name__,
        fit_time=time.perf_counter() - start,
        n_splits=len(splits),
        fold_train_accuracy=train[..., 0],
        fold_train_unfairness=train[..., 1],
        fold_val_accuracy=val[..., 0],
        fold_val_unfairness=val[..., 1],
    )


def _fold_scores(estimators, metric, strategy, X, y, fit, splits, own=True) -> tuple:
    """``(train, val)``: per fold, every point's ``(accuracy, unfairness)`` on the fold's
    training rows (weighted) and test rows (unweighted)."""
    train, val = [], []
    for j, (train_rows, test_rows) in enumerate(splits):
        points = [row[j] for row in estimators]
        X_train, y_train, fit_train = _fold_rows(X, y, fit, train_rows)
        X_test, y_test, fit_test = _fold_rows(X, y, fit, test_rows)
        groups, weight = fit_train["sensitive_features"], fit_train["sample_weight"]
        train.append(_path_scores(points, metric, X_train, y_train, groups, weight, strategy, own))
        groups = fit_test["sensitive_features"]
        val.append(_path_scores(points, metric, X_test, y_test, groups, None, strategy, own))
    return train, val


def _check_splits(cv, X, y, sensitive_features) -> list:
    """``(train, test)`` index arrays of ``cv``: an int is a
    :class:`~fairest.model_selection.GroupStratifiedKFold` on the (group, label) cells of
    a classification target (every group and label checked to have a row in every fold
    up front); anything else goes through scikit-learn's ``check_cv(cv, y,
    classifier=True)``."""
    groups = _group_values(X, sensitive_features)
    if (
        isinstance(cv, numbers.Integral)
        and not isinstance(cv, bool)
        and groups is not None
        and type_of_target(y) in ("binary", "multiclass")
    ):
        return group_stratified_splits(int(cv), np.asarray(y), groups)
    splits = [
        (np.asarray(train), np.asarray(test))
        for train, test in check_cv(cv, y, classifier=True).split(X, y)
    ]
    if not splits or any(train.size == 0 or test.size == 0 for train, test in splits):
        raise ValueError("cv must give at least one split, each with train and test rows.")
    return splits


def _names_columns(X, groups) -> bool:
    """Whether ``groups`` names columns of a DataFrame ``X`` (rather than being labels)."""
    return isinstance(X, pd.DataFrame) and (
        isinstance(groups, str)
        or (
            isinstance(groups, (list, tuple))
            and len(groups) > 0
            and all(isinstance(name, str) and name in X.columns for name in groups)
        )
    )


def _group_values(X, groups):
    """The group labels of every row: ``groups`` itself, or the columns of ``X`` it names
    (``None`` without groups)."""
    if groups is None:
        return None
    if _names_columns(X, groups):
        return X[[groups] if isinstance(groups, str) else list(groups)].to_numpy()
    return groups


def _fold_rows(X, y, fit, rows):
    """``(X, y, fit keywords)`` of ``rows``: the groups (unless they name columns of a
    DataFrame ``X``) and the weights split along."""
    groups, weight = fit["sensitive_features"], fit["sample_weight"]
    names = _names_columns(X, groups)
    if groups is not None and not names:
        groups = _safe_indexing(frame_of_mapping(groups), rows)
    if weight is not None:
        weight = _safe_indexing(np.asarray(weight), rows)
    fold = dict(sensitive_features=groups, sample_weight=weight)
    return _safe_indexing(X, rows), _safe_indexing(y, rows), fold


# ---------------------------------------------------------------------------------------
# validation


def _resolve_param(estimator, param) -> str:
    if not hasattr(estimator, "get_params") or not hasattr(estimator, "fit"):
        raise TypeError(
            f"estimator must be a scikit-learn estimator; got {type(estimator).__name__}."
        )
    names = sorted(estimator.get_params(deep=False))
    if param is None:
        param = _declared_path(estimator)[0]
        if param is None:
            raise ValueError(
                f"no default path parameter for {type(estimator).__name__}; pass param= "
                f"(one of {names})."
            )
    if not isinstance(param, str) or param not in names:
        raise ValueError(
            f"param={param!r} is not a parameter of {type(estimator).__name__}; "
            f"its parameters are {names}."
        )
    return param


def _check_values(estimator, param, values) -> np.ndarray:
    array = np.asarray(values, dtype=object)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"values must be a non-empty 1-D list of numbers; got {values!r}.")
    try:
        numbers = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"values must be numbers; got {values!r}.") from None
    if not np.all(np.isfinite(numbers)):
        raise ValueError(f"values must be finite numbers; got {values!r}.")
    for value in array:  # scikit-learn's own check of each value (InvalidParameterError)
        candidate = clone(estimator).set_params(**{param: value})
        if hasattr(candidate, "_validate_params"):
            candidate._validate_params()
    return numbers


def _check_validation(X_val, y_val, sensitive_features_val):
    given = [v is not None for v in (X_val, y_val, sensitive_features_val)]
    if any(given) and not all(given):
        raise ValueError(
            "validation data needs X_val, y_val and sensitive_features_val together; got "
            f"only {[n for n, g in zip(('X_val', 'y_val', 'sensitive_features_val'), given) if g]}."
        )
    return (X_val, y_val, sensitive_features_val) if all(given) else None


# ---------------------------------------------------------------------------------------
# strategies


def _declared_path(estimator) -> tuple:
    """``(knob, strategy)`` that the estimator's class declares in its ``_fairness_path``
    attribute (the path protocol, see :func:`fairness_path`); ``(None, "refit")`` when
    it declares none."""
    declared = getattr(type(estimator), "_fairness_path", None)
    if declared is None:
        return None, "refit"
    param, strategy = declared
    if strategy not in STRATEGIES:
        raise ValueError(
            f"{type(estimator).__name__}._fairness_path names the strategy {strategy!r}; "
            f"it must be one of {STRATEGIES}."
        )
    return param, strategy


def _strategy(estimator, param) -> str:
    """The declared strategy when the path runs over the declared knob and the
    estimator's settings allow it, else one refit per value."""
    knob, strategy = _declared_path(estimator)
    if param != knob:
        return "refit"
    if strategy == "continuation":  # Newton continuation of the full-batch solver
        if estimator.dp_epsilon is None and estimator.solver in ("auto", "full-batch"):
            return strategy
    if strategy == "shared_scores":  # thresholds on scores shared by the points
        if estimator.group_estimator is None:
            return strategy
    if strategy == "vmap":
        from fairest.constrained._path import tolerance_path_supported

        if tolerance_path_supported(estimator):
            return strategy
    return "refit"


def _refit(estimator, param, value, X, y, fit):
    fitted = clone(estimator).set_params(**{param: value})
    weight = {} if fit["sample_weight"] is None else {"sample_weight": fit["sample_weight"]}
    if "sensitive_features" in inspect.signature(fitted.fit).parameters:
        return fitted.fit(X, y, sensitive_features=fit["sensitive_features"], **weight)
    return fitted.fit(X, y, **weight)


# ---------------------------------------------------------------------------------------
# scores


def _unfairness_metric(estimator, metric=None):
    """``(name, function(estimator, X, y, y_pred, groups, weight))``: the catalogue metric
    ``metric``, else the estimator's own ``metric`` (a catalogue name, a short name of
    :data:`~fairest.metrics._catalogue.METRIC_ALIASES`, or a loss gap of the constrained
    family), else the demographic parity difference."""
    if metric is not None:
        return _catalogue_unfairness(metric)
    own = getattr(estimator, "metric", None)
    if isinstance(own, str) and own.startswith("loss_"):
        return "loss_gap", partial(_loss_gap, kind=own)
    from fairest.metrics._catalogue import METRIC_ALIASES, catalogue

    record = catalogue().get(METRIC_ALIASES.get(own, own) if isinstance(own, str) else None)
    labels = record is not None and "labels" in record.kinds
    return _catalogue_unfairness(record.name if labels else "demographic_parity_difference")


def _catalogue_unfairness(metric):
    from fairest.metrics._catalogue import get_metric

    record = get_metric(metric)
    if "labels" not in record.kinds and {"scores", "probabilities"} & set(record.kinds):
        return record.name, partial(_score_gap, record=record)
    return record.name, partial(_rate_gap, function=record.exact)


def _predict(estimator, X, groups):
    if "sensitive_features" in inspect.signature(estimator.predict).parameters:
        return estimator.predict(X, sensitive_features=groups)
    return estimator.predict(X)


def _rate_gap(estimator, X, y, y_pred, groups, weight, *, function):
    positive = estimator.classes_[-1]
    return function(
        (np.asarray(y) == positive).astype(int),
        (np.asarray(y_pred) == positive).astype(int),
        sensitive_features=groups,
        sample_weight=weight,
    )


def _score_gap(estimator, X, y, y_pred, groups, weight, *, record):
    """A metric of scores (``decision_function``, else the positive-class probability)
    or of probabilities (``predict_proba``), against 0/1 labels."""
    positive = estimator.classes_[-1]
    if "scores" in record.kinds and hasattr(estimator, "decision_function"):
        output = estimator.decision_function(X)
    else:
        output = np.asarray(estimator.predict_proba(X))[:, -1]
    return record.exact(
        (np.asarray(y) == positive).astype(int),
        np.asarray(output, dtype=np.float64).reshape(-1),
        sensitive_features=groups,
        sample_weight=weight,
    )


def _loss_gap(estimator, X, y, y_pred, groups, weight, *, kind):
    """Spread of the groups' mean log losses, within the label strata of ``kind``."""
    proba = estimator.predict_proba(X)
    y = np.asarray(y)
    groups = np.asarray(groups)
    weight = np.ones(y.size) if weight is None else np.asarray(weight, dtype=np.float64)
    strata = {
        "loss_parity": [np.ones(y.size, dtype=bool)],
        "loss_equal_opportunity": [y == estimator.classes_[-1]],
        "loss_equalized_odds": [y == label for label in estimator.classes_],
    }[kind]
    gaps = [
        _metrics.loss_gap(
            y[rows],
            proba[rows],
            sensitive_features=groups[rows],
            sample_weight=weight[rows],
            labels=estimator.classes_,
        )
        for rows in strata
        if rows.any()
    ]
    return float(max(gaps))


def _group_codes(groups):
    """Integer codes of 1-D groups (the metrics are invariant to relabelling, and codes
    are encoded once instead of at every point; hashed, not sorted); several columns are
    kept as given."""
    array = np.asarray(groups)
    if array.ndim == 1:
        return pd.factorize(array, use_na_sentinel=False)[0]
    return groups


def _stacked_parity_scores(predictions, positive, y, codes, weight):
    """``(accuracy, demographic parity difference)`` of every point at once, from 1-D
    group codes: the values of :func:`~sklearn.metrics.accuracy_score` and
    :func:`~fairest.metrics.demographic_parity_difference` (weighted selection rate per
    group, max minus min) without their per-call checks; None where a group has no
    weight (the metric raises there)."""
    predicted = np.stack([np.asarray(y_pred) for y_pred in predictions])  # (values, n)
    weight = np.ones(len(codes)) if weight is None else np.asarray(weight, dtype=np.float64)
    accuracy = np.average(predicted == np.asarray(y), axis=1, weights=weight)
    n_groups = int(codes.max()) + 1
    totals = np.bincount(codes, weights=weight, minlength=n_groups)
    if np.any(totals <= 0):  # the metric refuses such a group: let it say so
        return None
    selected = np.stack(
        [
            np.bincount(codes, weights=weight * row, minlength=n_groups)
            for row in predicted == positive
        ]
    )
    rates = np.divide(selected, totals, out=np.zeros_like(selected), where=totals > 0)
    gaps = rates.max(axis=1) - rates.min(axis=1)
    return [(float(a), float(u)) for a, u in zip(accuracy, gaps)]


def _linear_predictions(estimators, X):
    """``predict`` of linear points sharing ``classes_`` (ERMI's path), with every
    point's scores from one product of X with all the coefficients (X validated once)."""
    first = estimators[0]
    X = validate_data(first, X, dtype=np.float64, reset=False, accept_sparse=["csr", "csc"])
    coefs = np.concatenate([point.coef_ for point in estimators])
    intercepts = np.concatenate([point.intercept_ for point in estimators])
    scores = np.asarray(X @ coefs.T) + intercepts
    q = first.coef_.shape[0]
    predictions = []
    for k, point in enumerate(estimators):
        block = scores[:, k * q : (k + 1) * q]
        codes = point._positive(block[:, 0]).astype(int) if q == 1 else np.argmax(block, axis=1)
        predictions.append(point.classes_[codes])
    return predictions


def _path_scores(estimators, metric, X, y, groups, weight, strategy, own=True):
    """``(accuracy, unfairness)`` of every point; the post-processor's points share one
    score computation of their wrapped classifier. ``own``: ``metric`` is the
    estimator's own (the linear loss-gap lanes score it themselves)."""
    if strategy == "vmap" and own and hasattr(estimators[0], "coef_"):  # loss-gap lanes
        from fairest.constrained._path import score_linear_points

        return score_linear_points(estimators, X, y, groups, weight)
    if strategy == "shared_scores":
        first = estimators[0]
        first._validated(X)
        scores, codes = first._scores(X), first._predict_codes(X, groups)
        predictions = [point._predict_from(scores, codes) for point in estimators]
    elif strategy in ("continuation", "vmap") and hasattr(
        estimators[0], "coef_"
    ):  # a loss-gap MLP has none
        predictions = _linear_predictions(estimators, X)
    else:
        predictions = [_predict(point, X, groups) for point in estimators]
    metric_groups = _group_codes(groups)
    if (
        getattr(metric, "keywords", {}).get("function") is _metrics.demographic_parity_difference
        and np.ndim(metric_groups) == 1
        and len(metric_groups) > 0
    ):  # the default metric: every point in a few vectorised passes
        positive = estimators[0].classes_[-1]
        scores = _stacked_parity_scores(predictions, positive, y, metric_groups, weight)
        if scores is not None:
            return scores
    return [
        (
            float(accuracy_score(y, y_pred, sample_weight=weight)),
            float(metric(point, X, y, y_pred, metric_groups, weight)),
        )
        for point, y_pred in zip(estimators, predictions)
    ]
