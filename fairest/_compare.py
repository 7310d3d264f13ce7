"""The ``fairest compare`` job: fit every available method on one dataset, side by side.

:data:`METHODS` (name -> :class:`Method`) is the list of compared methods, written out
below: adding a method is adding one entry. A method is a factory of an unfitted
estimator; the job wraps it in the same preprocessing Pipeline, routes
``sensitive_features`` through metadata routing, times ``fit`` and scores the held-out
split, with confidence intervals that hold at exact parity
(:class:`fairest.metrics.MetricFrame`: Clopper-Pearson per group, combined over the groups
at the simultaneous level). A method with a fairness knob (``Method.path``) also gets
its fairness path on a few values (:func:`fairest.fairness_path`, fitted on the
preprocessed training split, scored on the test split); a post-processor's path reuses its
fitted classifier (one score computation for all tolerances). Methods marked
``optional`` (the certified row) run only when named. A :class:`~fairest.utils.FairnessWarning`, a
:class:`~sklearn.exceptions.ConvergenceWarning` of a fit or an
:class:`~sklearn.exceptions.UndefinedMetricWarning` of its scoring (a tiny group without
positives in the test split) becomes a one-line note of the method instead of a warning.

Speed: the preprocessing is fitted once and shared, frozen, by every pipeline; the fits
run with OpenMP / BLAS limited to one thread (spinning worker threads cost more than they
save on these small solves); a method that ``reuses`` another wraps its fitted model (the thresholds around
logistic regression); rows whose settings are cheaper than their estimator's defaults
say so in ``Method.settings``, printed under *Settings* in the terminal and the report,
and ``run_comparison(params=...)`` (the CLI's ``--set METHOD.PARAM=VALUE``) changes them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn import config_context
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.exceptions import ConvergenceWarning, UndefinedMetricWarning
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, root_mean_squared_error
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler
from threadpoolctl import threadpool_limits

from fairest.certified import CertifiedFairClassifier
from fairest.constrained import LossGapConstrainedClassifier
from fairest.ermi import ERMIClassifier
from fairest.metrics import MetricFrame, prediction_ks_distance
from fairest.metrics._catalogue import get_metric
from fairest.metrics._intervals import IntervalWarning
from fairest.metrics._rates import RATE_METRICS
from fairest.partial import PartialParityClassifier
from fairest.paths import fairness_path
from fairest.postprocessing import GroupThresholdClassifier, WassersteinParityRegressor
from fairest.reweighting import (
    BADRClassifier,
    BADRRegressor,
    GroupWeightedClassifier,
    GroupWeightedRegressor,
)
from fairest.utils import FairnessWarning

__all__ = ["METHODS", "Method", "CompareData", "Comparison", "make_estimator", "run_comparison"]

N_BOOT = 200  # bootstrap replicates of the test metrics
CI_LEVEL = 0.95
NOTED_WARNINGS = (FairnessWarning, ConvergenceWarning, UndefinedMetricWarning, IntervalWarning)


@dataclass(frozen=True)
class Method:
    """A method of the comparison: a label, its task and a factory of the estimator."""

    label: str
    task: str  # "classification" or "regression"
    make: Callable[[int], object]  # random_state -> unfitted estimator
    routed: bool = True  # takes sensitive_features through metadata routing
    describe: Callable[[object], str] | None = None  # fitted estimator -> what it chose
    groups_at_predict: bool = False  # predict(X, sensitive_features=...) (post-processors)
    path: tuple[str, tuple] | None = None  # (param, values) of its fairness path
    optional: bool = False  # runs only when named (--methods or --certified)
    reuses: str | None = None  # a method whose fitted model it wraps (prefit) when both run
    settings: str = ""  # how the compare row departs from the estimator's defaults, and why
    encoding: str = "onehot"  # preprocessing: "onehot" (scaled, one-hot) or "ordinal" (trees)


def _describe_group_weights(estimator) -> str:
    weights = ", ".join(
        f"{label}: {w:.3f}" for label, w in zip(estimator.groups_, estimator.group_weights_)
    )
    return f"group weights {weights}"


def _describe_interval(estimator) -> str:
    alpha, beta = estimator.interval_
    solver = getattr(estimator, "solver", None)
    return f"interval [{alpha:.2f}, {beta:.2f}]" + (f", solver {solver}" if solver else "")


def _describe_privacy(estimator) -> str:
    return f"epsilon spent {estimator.epsilon_spent_:.2f}"


def _describe_thresholds(estimator) -> str:
    thresholds = ", ".join(
        f"{label}: {t:.3f}" for label, t in zip(estimator.groups_, estimator.thresholds_)
    )
    return f"thresholds {thresholds} (train unfairness {estimator.train_unfairness_:.4f})"


def _describe_certificate(estimator) -> str:
    if estimator.certified_:
        return f"certified ({estimator.best_params_})" if estimator.best_params_ else "certified"
    return f"no solution found, predicts the majority class: {estimator.no_solution_reason_}"


TOLERANCE_PATH = ("tolerance", (0.0, 0.01, 0.02, 0.05, 0.1, 0.2))


METHODS: dict[str, Method] = {
    "erm": Method(
        "ERM (logistic regression)", "classification", lambda seed: GroupWeightedClassifier()
    ),
    "erm-balanced": Method(
        "Group-balanced logistic regression",
        "classification",
        lambda seed: GroupWeightedClassifier(weights="balanced"),
        describe=_describe_group_weights,
    ),
    "erm-minimax": Method(
        "Minimax group weights (worst group loss)",
        "classification",
        lambda seed: GroupWeightedClassifier(weights="minimax"),
        describe=_describe_group_weights,
    ),
    "erm-best-group": Method(
        "Best single group (least demographic parity)",
        "classification",
        lambda seed: GroupWeightedClassifier(
            weights="best_single_group", metric="demographic_parity"
        ),
        describe=_describe_group_weights,
    ),
    "badr-dp": Method(
        "BADR (SLSQP, min demographic parity on the Pareto front)",
        "classification",
        lambda seed: BADRClassifier(metric="demographic_parity_deviation", random_state=seed),
        describe=_describe_group_weights,
    ),
    "badr-eodds": Method(
        "BADR (SLSQP, min equalized odds on the Pareto front)",
        "classification",
        lambda seed: BADRClassifier(metric="equalized_odds_range", random_state=seed),
        describe=_describe_group_weights,
    ),
    "ermi": Method(
        "FERMI (ERMI-regularised logistic regression, weight halving the train DP gap)",
        "classification",
        lambda seed: ERMIClassifier(random_state=seed),
        path=("fairness_weight", (0.0, 1.0, 4.0, 16.0)),
    ),
    "dp-fermi": Method(
        "DP-FERMI (epsilon=3, private sensitive attribute)",
        "classification",
        lambda seed: ERMIClassifier(fairness_weight=1.0, dp_epsilon=3.0, random_state=seed),
        describe=_describe_privacy,
    ),
    "partial-sp": Method(
        "Partial statistical parity (auto interval, tolerance 0.1)",
        "classification",
        # the estimator's defaults (the fast smoothed augmented Lagrangian, a few seconds
        # on Adult), so the family's own speed-ups reach this row
        lambda seed: PartialParityClassifier(random_state=seed),
        describe=_describe_interval,
    ),
    "loss-gap-ssl-alm": Method(
        "Loss-gap constrained MLP (SSL-ALM)",
        "classification",
        lambda seed: LossGapConstrainedClassifier(solver="ssl-alm", random_state=seed),
    ),
    "loss-gap-ssw": Method(
        "Loss-gap constrained MLP (switching subgradient)",
        "classification",
        lambda seed: LossGapConstrainedClassifier(solver="ssw", random_state=seed),
    ),
    "threshold-erm": Method(
        "Group thresholds on logistic regression (demographic parity, tolerance 0.02)",
        "classification",
        lambda seed: GroupThresholdClassifier(LogisticRegression(max_iter=1000), tolerance=0.02),
        describe=_describe_thresholds,
        groups_at_predict=True,
        path=TOLERANCE_PATH,
        reuses="erm",  # thresholds the ERM row's fitted logistic regression, no refit
    ),
    "threshold-hgb": Method(
        "Group thresholds on gradient boosting (demographic parity, tolerance 0.02)",
        "classification",
        lambda seed: GroupThresholdClassifier(
            HistGradientBoostingClassifier(random_state=seed), tolerance=0.02
        ),
        describe=_describe_thresholds,
        groups_at_predict=True,
        path=TOLERANCE_PATH,
        encoding="ordinal",
        settings="categories as integer codes instead of one-hot columns (14 features "
        "instead of 108 on Adult: 5x less fit time, test accuracy .8718 vs .8732 unthresholded)",
    ),
    "certified-threshold": Method(
        "Certified group thresholds (demographic parity <= 0.05 w.p. 0.95; --certified)",
        "classification",
        lambda seed: CertifiedFairClassifier(
            GroupThresholdClassifier(LogisticRegression(max_iter=1000)),
            on_no_solution="constant",
            random_state=seed,
        ),
        describe=_describe_certificate,
        groups_at_predict=True,
        optional=True,
    ),
    "ridge": Method("ERM (ridge)", "regression", lambda seed: GroupWeightedRegressor()),
    "badr-ridge-dp": Method(
        "BADR ridge (SLSQP, min demographic parity)",
        "regression",
        lambda seed: BADRRegressor(metric="demographic_parity_deviation", random_state=seed),
        describe=_describe_group_weights,
    ),
    "parity-ridge": Method(
        "Wasserstein parity on ridge (group prediction distributions made equal)",
        "regression",
        lambda seed: WassersteinParityRegressor(GroupWeightedRegressor(), random_state=seed),
        groups_at_predict=True,
        reuses="ridge",  # maps the ridge row's fitted predictions, no refit
    ),
    "ridge-balanced": Method(
        "Group-balanced ridge",
        "regression",
        lambda seed: GroupWeightedRegressor(weights="balanced"),
        describe=_describe_group_weights,
    ),
}


def _fairlearn_exponentiated_gradient(seed: int):
    """fairlearn's reductions approach (demographic parity), the usual external anchor."""
    from fairlearn.reductions import DemographicParity, ExponentiatedGradient
    from sklearn.linear_model import LogisticRegression

    return ExponentiatedGradient(LogisticRegression(max_iter=1000, tol=1e-3), DemographicParity())


if importlib.util.find_spec("fairlearn") is not None:  # optional: in the test and bench extras
    METHODS["fairlearn-eg"] = Method(
        "fairlearn ExponentiatedGradient (demographic parity, logistic)",
        "classification",
        _fairlearn_exponentiated_gradient,
        routed=False,  # ExponentiatedGradient has no set_fit_request
        settings="its logistic regressions stop at tol=1e-3 (scikit-learn's default 1e-4): "
        "about 3.5x less fit time; on Adult test accuracy .8342 vs .8339, demographic "
        "parity difference .013 vs .012",
    )


@dataclass
class CompareData:
    """A train/test split with the sensitive features of each side."""

    name: str
    X_train: pd.DataFrame
    y_train: np.ndarray
    s_train: pd.DataFrame
    X_test: pd.DataFrame
    y_test: np.ndarray
    s_test: pd.DataFrame
    task: str


def _preprocessor(encoding: str = "onehot") -> ColumnTransformer:
    """Median-imputed scaled numbers and one-hot categories; for trees (``"ordinal"``)
    median-imputed numbers unscaled and one integer code per category (-1: missing,
    -2: unseen in training)."""
    if encoding == "ordinal":
        codes = OrdinalEncoder(
            handle_unknown="use_encoded_value",
            unknown_value=-2,
            encoded_missing_value=-1,
            min_frequency=5,
        )
        numbers = SimpleImputer(strategy="median")
        return ColumnTransformer(
            [
                ("numeric", numbers, make_column_selector(dtype_include="number")),
                ("categorical", codes, make_column_selector(dtype_exclude="number")),
            ]
        )
    numeric = make_pipeline(SimpleImputer(strategy="median"), StandardScaler())
    categorical = OneHotEncoder(handle_unknown="ignore", sparse_output=False, min_frequency=5)
    return ColumnTransformer(
        [
            ("numeric", numeric, make_column_selector(dtype_include="number")),
            ("categorical", categorical, make_column_selector(dtype_exclude="number")),
        ]
    )


@dataclass
class Comparison:
    """What :func:`run_comparison` returns: the score table and the fitted pipelines."""

    table: pd.DataFrame  # one row per method label
    fitted: dict  # method name -> fitted Pipeline
    paths: dict = field(default_factory=dict)  # method name -> its fairness path (DataFrame)
    settings: dict = field(default_factory=dict)  # method label -> its compare settings


def group_labels(sensitive: pd.DataFrame) -> np.ndarray:
    if sensitive.shape[1] == 1:
        return sensitive.iloc[:, 0].astype(str).to_numpy()
    return sensitive.astype(str).agg("|".join, axis=1).to_numpy()


def _rates(*names):
    """Built-in rates, 0 where undefined (fairlearn's convention, as in the point values)."""
    return {name: dataclasses.replace(RATE_METRICS[name], undefined=0.0) for name in names}


# the fairness columns of a classification report: column -> catalogue metric (each a
# difference of label rates, with a covering interval from its rates' intervals)
FAIRNESS_COLUMNS = {
    "demographic parity diff": "demographic_parity_difference",
    "equalized odds diff": "equalized_odds_difference",
}


def _fairness_columns(y_true01, y_pred01, groups, bootstrap) -> dict:
    """Every fairness column's value and, with ``bootstrap``, its interval: the worst of
    the intervals of the metric's rate differences, each at the Bonferroni level."""
    row, intervals = {}, {}
    for column, name in FAIRNESS_COLUMNS.items():
        record = get_metric(name)
        row[column] = record(y_true01, y_pred01, sensitive_features=groups)
        if bootstrap is None:
            continue
        gaps = MetricFrame(
            metrics={rate.name: dataclasses.replace(rate, undefined=0.0) for rate in record.rates},
            y_true=y_true01,
            y_pred=y_pred01,
            ci=1 - (1 - CI_LEVEL) / len(record.rates),
            **bootstrap,
        ).difference_ci()
        intervals[ci_column(column)] = _interval(_worst_of(gap for _, gap in gaps.iterrows()))
    return row, intervals


def _interval(interval) -> str:
    """A ``lower`` / ``upper`` pair as the report prints it."""
    return f"[{float(interval['lower']):.4f}, {float(interval['upper']):.4f}]"


def _worst_of(intervals) -> dict:
    """Interval of the larger of several quantities whose intervals hold together."""
    intervals = list(intervals)
    return {
        "lower": max(float(i["lower"]) for i in intervals),
        "upper": max(float(i["upper"]) for i in intervals),
    }


def ci_column(metric: str) -> str:
    """Name of the column holding the interval of ``metric``."""
    return f"{metric} {CI_LEVEL:.0%} CI"


def _predict(method: Method, pipeline, X, groups):
    """``pipeline.predict(X)``; the groups go to the last step of a post-processor."""
    if not method.groups_at_predict:
        return pipeline.predict(X)
    return pipeline[-1].predict(pipeline[:-1].transform(X), sensitive_features=groups)


def _score_row(method: Method, estimator, data: CompareData, fit_seconds: float, n_boot, seed):
    groups = group_labels(data.s_test)
    y_pred = _predict(method, estimator, data.X_test, groups)
    row = {"method": method.label, "fit time (s)": fit_seconds}
    bootstrap = dict(sensitive_features=groups, n_boot=n_boot, random_state=seed)
    if data.task == "regression":
        row["RMSE"] = root_mean_squared_error(data.y_test, y_pred)
        per_group = pd.Series(y_pred).groupby(groups).mean()
        row["mean prediction gap"] = float(per_group.max() - per_group.min())
        row["KS gap"] = prediction_ks_distance(data.y_test, y_pred, sensitive_features=groups)
        if n_boot:
            frame = MetricFrame(
                metrics=_rates("mean_squared_error", "mean_prediction"),
                y_true=np.asarray(data.y_test, dtype=float),
                y_pred=np.asarray(y_pred, dtype=float),
                **bootstrap,
            )
            mse = frame.overall_ci.loc["mean_squared_error"]
            row[ci_column("RMSE")] = _interval(np.sqrt(np.maximum(mse, 0.0)))
            gap = frame.difference_ci().loc["mean_prediction"]
            row[ci_column("mean prediction gap")] = _interval(gap)
        return row
    positive = np.unique(data.y_train)[-1]
    y_true01 = (data.y_test == positive).astype(int)
    y_pred01 = (y_pred == positive).astype(int)
    row["accuracy"] = accuracy_score(data.y_test, y_pred)
    values, intervals = _fairness_columns(y_true01, y_pred01, groups, bootstrap if n_boot else None)
    row.update(values)
    if n_boot:
        frame = MetricFrame(
            metrics=_rates("accuracy"), y_true=y_true01, y_pred=y_pred01, **bootstrap
        )
        row[ci_column("accuracy")] = _interval(frame.overall_ci.loc["accuracy"])
        row.update(intervals)
    return row


def _note(caught) -> str:
    """The noted warnings of a fit as one line each: the sentence before the advice."""
    lines = []
    for record in caught:
        text = " ".join(str(record.message).split()).split("; ")[0]
        line = f"{record.category.__name__}: {text}"
        if line not in lines:
            lines.append(line)
    return " | ".join(lines)


@contextlib.contextmanager
def _noting_warnings(noted: list):
    """Collect the noted warnings raised inside the block into ``noted``; any other
    warning goes on as it came."""
    with warnings.catch_warnings(record=True) as caught:
        for category in NOTED_WARNINGS:
            warnings.simplefilter("always", category)
        yield
    for record in caught:
        if issubclass(record.category, NOTED_WARNINGS):
            noted.append(record)
        else:
            warnings.warn_explicit(record.message, record.category, record.filename, record.lineno)


def _fit(method: Method, pipeline, data: CompareData, groups) -> float:
    """Fit ``pipeline``; return the seconds it took."""
    start = time.perf_counter()
    if method.routed:
        with config_context(enable_metadata_routing=True):
            pipeline.fit(data.X_train, data.y_train, sensitive_features=groups)
    else:  # an estimator without metadata routing: scikit-learn's step__param path
        step = pipeline.steps[-1][0]
        pipeline.fit(data.X_train, data.y_train, **{f"{step}__sensitive_features": groups})
    return time.perf_counter() - start


def _wrapping(estimator, fitted_classifier):
    """``estimator`` (a post-processor) set to wrap ``fitted_classifier`` as is (prefit)."""
    return estimator.set_params(estimator=fitted_classifier, prefit=True)


def _path_estimator(method: Method, fitted_step, seed: int, params: dict | None = None):
    """The unfitted estimator of the path: a post-processor reuses its fitted classifier."""
    estimator = make_estimator(method, seed, params)
    parameters = estimator.get_params(deep=False)
    if "prefit" in parameters and hasattr(fitted_step, "estimator_"):
        _wrapping(estimator, fitted_step.estimator_)
    return estimator


def make_estimator(method: Method, seed: int, params: dict | None = None):
    """``method``'s unfitted estimator with the ``params`` overrides (``--set``) applied."""
    estimator = method.make(seed)
    if params:
        estimator.set_params(**params)
        if hasattr(estimator, "_validate_params"):  # scikit-learn's InvalidParameterError
            estimator._validate_params()
    return estimator


def _estimator(method: Method, fitted: dict, seed: int, params: dict | None = None):
    """The unfitted last step of ``method``'s pipeline; a method that ``reuses`` another
    one's fitted model wraps it (``prefit``) when that method ran before it."""
    estimator = make_estimator(method, seed, params)
    if method.reuses in fitted:
        _wrapping(estimator, fitted[method.reuses][-1])
    return estimator


def _frozen_preprocessor(data: CompareData, encoding: str, cache: dict):
    """The preprocessing fitted once per encoding on the training split, shared by every
    pipeline (``FrozenEstimator``: a pipeline's ``fit`` does not refit it)."""
    if encoding not in cache:
        cache[encoding] = FrozenEstimator(_preprocessor(encoding).fit(data.X_train))
    return cache[encoding]


def fit_path(
    method: Method, pipeline, data: CompareData, seed: int, params: dict | None = None
) -> pd.DataFrame:
    """``method``'s fairness path on the preprocessed training split, scored on the test
    split: one row per value with the test accuracy and demographic parity difference."""
    param, values = method.path
    features = pipeline[:-1]
    y_train = (data.y_train == np.unique(data.y_train)[-1]).astype(int)
    y_test = (data.y_test == np.unique(data.y_train)[-1]).astype(int)
    path = fairness_path(
        _path_estimator(method, pipeline[-1], seed, params),
        features.transform(data.X_train),
        y_train,
        sensitive_features=group_labels(data.s_train),
        param=param,
        values=list(values),
        X_val=features.transform(data.X_test),
        y_val=y_test,
        sensitive_features_val=group_labels(data.s_test),
    )
    frame = path.to_frame().rename(columns={param: "value"})
    frame.insert(0, "param", param)
    frame["method"] = method.label
    frame["unfairness metric"] = path.unfairness
    frame["path time (s)"] = path.fit_time
    return frame


def run_comparison(
    data: CompareData,
    method_names: list[str],
    *,
    random_state: int = 0,
    n_boot: int = N_BOOT,
    progress: Callable[[str], None] = lambda message: None,
    paths: bool = True,
    params: dict | None = None,
) -> Comparison:
    """Fit each method on the training split and score it on the test split.

    Returns a :class:`Comparison`: a table with one row per method (accuracy or RMSE,
    demographic parity and equalized odds differences on the test split with their
    confidence intervals (none when ``n_boot`` is 0; rates' intervals are exact and use
    no replicate, see :class:`~fairest.metrics.MetricFrame`), the
    wall-clock fit time, what the method chose: group weights, interval, privacy spent,
    thresholds, certificate, and a ``note`` of the fairness or convergence warnings of its
    fit), the fitted pipelines by method name and, for the methods with a ``path`` (on
    classification, unless ``paths=False``), their fairness paths. ``params`` maps a
    method name to parameters set on its estimator (the CLI's ``--set``), e.g.
    ``{"partial-sp": {"max_iter": 200}}``.

    The preprocessing is fitted once on the training split and shared (frozen) by every
    pipeline, so the fit time of a row is its estimator's alone; a method that
    ``reuses`` another (the thresholds around logistic regression) wraps that method's
    fitted model when both run, instead of refitting it.

    An empty ``method_names``, an unknown name, a method of the other task, or a class
    target of more than two classes (the methods and the scores are binary) raise
    ``ValueError`` before any fit.
    """
    _check_run(data, method_names)
    params = params or {}
    with_paths, paths = paths, {}
    rows, fitted, settings, preprocessors = [], {}, {}, {}
    with threadpool_limits(limits=1):  # no spinning OpenMP / BLAS threads on a busy box
        for position, name in enumerate(method_names, start=1):
            method = METHODS[name]
            step = f"[{position}/{len(method_names)}]"
            progress(f"{step} fitting {method.label} ...")
            pipeline = make_pipeline(
                _frozen_preprocessor(data, method.encoding, preprocessors),
                _estimator(method, fitted, random_state, params.get(name)),
            )
            noted = []
            with _noting_warnings(noted):
                seconds = _fit(method, pipeline, data, group_labels(data.s_train))
                row = _score_row(method, pipeline, data, seconds, n_boot, random_state)
            if with_paths and method.path is not None and data.task == "classification":
                progress(f"{step} fairness path of {method.label} ...")
                with _noting_warnings(noted):
                    path = fit_path(method, pipeline, data, random_state, params.get(name))
                    paths[name] = path.assign(name=name)
            row["fitted"] = method.describe(pipeline[-1]) if method.describe else ""
            if method.reuses in fitted:
                row["fitted"] += f" (around the fitted {method.reuses} row's model, not refitted)"
            row["note"] = _note(noted)
            rows.append(row)
            fitted[name] = pipeline
            if method.settings or name in params:
                settings[method.label] = _settings_text(method, params.get(name))
    return Comparison(pd.DataFrame(rows).set_index("method"), fitted, paths, settings)


def _check_run(data: CompareData, method_names) -> None:
    """The ``ValueError`` of a comparison that cannot run, before any fit."""
    available = [n for n, m in METHODS.items() if m.task == data.task and not m.optional]
    if not method_names:
        raise ValueError(
            f"method_names is empty; name at least one of {', '.join(available)} "
            f"(the methods for {data.task})."
        )
    unknown = [n for n in method_names if n not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; available: {', '.join(METHODS)}.")
    wrong_task = [n for n in method_names if METHODS[n].task != data.task]
    if wrong_task:
        raise ValueError(f"method(s) {wrong_task} do not handle {data.task}.")
    if data.task == "classification":
        classes = np.unique(np.asarray(data.y_train))
        if classes.size > 2:
            raise ValueError(
                f"y_train has {classes.size} classes; the compared methods are binary "
                "classifiers: binarise the target first (one class coded 1, the others 0, "
                "as the CLI's --positive LABEL does)."
            )


def _settings_text(method: Method, params: dict | None) -> str:
    text = method.settings
    if params:
        given = ", ".join(f"{param}={value!r}" for param, value in params.items())
        text = f"{text}; set on the command line: {given}" if text else f"set: {given}"
    return text
