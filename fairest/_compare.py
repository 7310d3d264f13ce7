"""The ``fairest compare`` job: fit every available method on one dataset, side by side.

:data:`METHODS` (name -> :class:`Method`) is the list of compared methods, written out
below: adding a method is adding one entry. A method is a factory of an unfitted
estimator; the job wraps it in the same preprocessing Pipeline, routes
``sensitive_features`` through metadata routing, times ``fit`` and scores the held-out
split.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn import config_context
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.impute import SimpleImputer
from sklearn.metrics import accuracy_score, root_mean_squared_error
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from fairest.constrained import LossGapConstrainedClassifier
from fairest.ermi import ERMIClassifier
from fairest.metrics import demographic_parity_difference, equalized_odds_difference
from fairest.partial import PartialParityClassifier
from fairest.reweighting import (
    BADRClassifier,
    BADRRegressor,
    GroupWeightedClassifier,
    GroupWeightedRegressor,
)

__all__ = ["METHODS", "Method", "CompareData", "Comparison", "run_comparison"]


@dataclass(frozen=True)
class Method:
    """A method of the comparison: a label, its task and a factory of the estimator."""

    label: str
    task: str  # "classification" or "regression"
    make: Callable[[int], object]  # random_state -> unfitted estimator
    routed: bool = True  # takes sensitive_features through metadata routing
    describe: Callable[[object], str] | None = None  # fitted estimator -> what it chose


def _describe_group_weights(estimator) -> str:
    weights = ", ".join(
        f"{label}: {w:.3f}" for label, w in zip(estimator.groups_, estimator.group_weights_)
    )
    return f"group weights {weights}"


def _describe_interval(estimator) -> str:
    alpha, beta = estimator.interval_
    return f"interval [{alpha:.2f}, {beta:.2f}]"


def _describe_privacy(estimator) -> str:
    return f"epsilon spent {estimator.epsilon_spent_:.2f}"


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
        lambda seed: BADRClassifier(metric="demographic_parity", random_state=seed),
        describe=_describe_group_weights,
    ),
    "badr-eodds": Method(
        "BADR (SLSQP, min equalized odds on the Pareto front)",
        "classification",
        lambda seed: BADRClassifier(metric="equalized_odds", random_state=seed),
        describe=_describe_group_weights,
    ),
    "ermi": Method(
        "FERMI (ERMI-regularised logistic regression)",
        "classification",
        lambda seed: ERMIClassifier(fairness_weight=1.0, random_state=seed),
    ),
    "dp-fermi": Method(
        "DP-FERMI (epsilon=3, private sensitive attribute)",
        "classification",
        lambda seed: ERMIClassifier(fairness_weight=1.0, dp_epsilon=3.0, random_state=seed),
        describe=_describe_privacy,
    ),
    "partial-sp": Method(
        "Partial statistical parity (IDCA 50 x SSG 100, auto interval, tolerance 0.1)",
        "classification",
        # the paper's 200 x 200 budget takes minutes on full Adult; this one about 30 s
        lambda seed: PartialParityClassifier(max_iter=50, inner_max_iter=100, random_state=seed),
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
    "ridge": Method("ERM (ridge)", "regression", lambda seed: GroupWeightedRegressor()),
    "badr-ridge-dp": Method(
        "BADR ridge (SLSQP, min demographic parity)",
        "regression",
        lambda seed: BADRRegressor(metric="demographic_parity", random_state=seed),
        describe=_describe_group_weights,
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

    return ExponentiatedGradient(LogisticRegression(max_iter=1000), DemographicParity())


if importlib.util.find_spec("fairlearn") is not None:  # optional: in the test and bench extras
    METHODS["fairlearn-eg"] = Method(
        "fairlearn ExponentiatedGradient (demographic parity, logistic)",
        "classification",
        _fairlearn_exponentiated_gradient,
        routed=False,  # ExponentiatedGradient has no set_fit_request
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


def _preprocessor() -> ColumnTransformer:
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


def group_labels(sensitive: pd.DataFrame) -> np.ndarray:
    if sensitive.shape[1] == 1:
        return sensitive.iloc[:, 0].astype(str).to_numpy()
    return sensitive.astype(str).agg("|".join, axis=1).to_numpy()


def _score_row(method: Method, estimator, data: CompareData, fit_seconds: float) -> dict:
    y_pred = estimator.predict(data.X_test)
    groups = group_labels(data.s_test)
    row = {"method": method.label, "fit time (s)": fit_seconds}
    if data.task == "regression":
        row["RMSE"] = root_mean_squared_error(data.y_test, y_pred)
        per_group = pd.Series(y_pred).groupby(groups).mean()
        row["mean prediction gap"] = float(per_group.max() - per_group.min())
        return row
    positive = np.unique(data.y_train)[-1]
    row["accuracy"] = accuracy_score(data.y_test, y_pred)
    row["demographic parity diff"] = demographic_parity_difference(
        data.y_test == positive, y_pred == positive, sensitive_features=groups
    )
    row["equalized odds diff"] = equalized_odds_difference(
        data.y_test == positive, y_pred == positive, sensitive_features=groups
    )
    return row


def run_comparison(
    data: CompareData,
    method_names: list[str],
    *,
    random_state: int = 0,
    progress: Callable[[str], None] = lambda message: None,
) -> pd.DataFrame:
    """Fit each method on the training split and score it on the test split.

    Returns a :class:`Comparison`: a table with one row per method (accuracy or RMSE,
    demographic parity and equalized odds differences on the test split, the wall-clock
    fit time, and what the method chose: group weights, interval, privacy spent) and the
    fitted pipelines by method name.
    """
    rows, fitted = [], {}
    for position, name in enumerate(method_names, start=1):
        method = METHODS[name]
        progress(f"[{position}/{len(method_names)}] fitting {method.label} ...")
        pipeline = make_pipeline(_preprocessor(), method.make(random_state))
        groups = group_labels(data.s_train)
        start = time.perf_counter()
        if method.routed:
            with config_context(enable_metadata_routing=True):
                pipeline.fit(data.X_train, data.y_train, sensitive_features=groups)
        else:  # an estimator without metadata routing: scikit-learn's step__param path
            step = pipeline.steps[-1][0]
            pipeline.fit(data.X_train, data.y_train, **{f"{step}__sensitive_features": groups})
        seconds = time.perf_counter() - start
        row = _score_row(method, pipeline, data, seconds)
        row["fitted"] = method.describe(pipeline[-1]) if method.describe else ""
        rows.append(row)
        fitted[name] = pipeline
    return Comparison(pd.DataFrame(rows).set_index("method"), fitted)
