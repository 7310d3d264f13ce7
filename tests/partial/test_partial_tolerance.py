"""A tolerance is a measured fact: the exact training pSP / pDP of PartialParityClassifier
is at most ``tolerance`` or a FairnessWarning gives the achieved value; no partial
estimator returns a non-finite model; fits run under ``jax.debug_nans``."""

import warnings

import jax
import numpy as np
import pandas as pd
import pytest
from _partial_helpers import PDP, PSP, make_data
from sklearn.preprocessing import StandardScaler

from fairest.datasets import load_adult
from fairest.metrics import partial_demographic_parity, partial_statistical_parity
from fairest.partial import (
    GroupAUCConstrainedClassifier,
    InterGroupPairwiseConstrainedClassifier,
    IntraGroupPairwiseConstrainedClassifier,
    PartialParityClassifier,
    PartialParityPenaltyClassifier,
)
from fairest.partial._defaults import PARTIAL_RULES
from fairest.utils import FairnessWarning

TOP = (0.0, 0.2)  # the top 20 % of every group
EXACT = {PSP: partial_statistical_parity, PDP: partial_demographic_parity}


@pytest.fixture(scope="module")
def adult():
    """2,000 rows of the bundled Adult training set: one-hot (pandas.get_dummies, sex
    included) and standardised, the sensitive feature is sex."""
    bunch = load_adult(subset="train", as_frame=True)
    rows = np.random.default_rng(0).choice(len(bunch.target), 2000, replace=False)
    X = pd.get_dummies(bunch.data.iloc[rows], dtype=float)
    X = StandardScaler().fit_transform(X.to_numpy())
    return X, bunch.target.to_numpy()[rows], bunch.data["sex"].to_numpy()[rows]


def _exact(clf, X, A, sample_weight=None):
    kwargs = {"threshold": clf.threshold} if clf.metric == PDP else {}
    return EXACT[clf.metric](
        None,
        clf.decision_function(X),
        sensitive_features=A,
        interval=clf.interval_,
        sample_weight=sample_weight,
        **kwargs,
    )


@pytest.mark.slow  # ~50 s (the IDCA fallback); benchmarks/partial_speed.py --parts defaults
# checks the promise on full Adult, test_adult_exact_metric_within_tolerance in the default run
def test_adult_psp_meets_the_tolerance_it_reports(adult):
    """The reproduction: on Adult, tolerance=0.05 on the top 20 % gave a surrogate
    violation of ~1e-3 but an exact training pSP of 0.06-0.1 (0.060 on these rows); the
    exact value of the returned model is now at most 0.05."""
    X, y, A = adult
    clf = PartialParityClassifier(interval=TOP, tolerance=0.05).fit(X, y, sensitive_features=A)
    value = _exact(clf, X, A)
    assert value <= 0.05
    assert clf.train_unfairness_ == pytest.approx(value, abs=1e-12)
    assert clf.constraint_violation_ <= clf.inner_tol
    assert clf.tightening_["train_unfairness"][0] > 0.05  # the paper's solve misses it
    assert clf.tightening_["effective_tolerance"][0] == 0.05
    tolerances = clf.tightening_["effective_tolerance"]
    assert np.all(tolerances <= 0.05)
    restarts = np.flatnonzero(np.diff(tolerances) >= 0)  # the IDCA fallback restarts at 0.05
    assert restarts.size <= 1
    assert np.all(tolerances[restarts + 1] == 0.05)


@pytest.mark.parametrize("metric,tolerance", [(PSP, 0.1), (PSP, 0.2), (PDP, 0.01), (PDP, 0.02)])
def test_adult_exact_metric_within_tolerance(adult, metric, tolerance):
    X, y, A = adult
    clf = PartialParityClassifier(metric, interval=TOP, tolerance=tolerance)
    clf.fit(X, y, sensitive_features=A)  # no FairnessWarning (warnings are errors)
    value = _exact(clf, X, A)
    assert value <= tolerance
    assert clf.train_unfairness_ == pytest.approx(value, abs=1e-12)
    # the surrogate of the user's tolerance is met; a tightening solve's (internal)
    # surrogate may have stalled on a flat constraint: its model meets the exact metric
    internal = clf.effective_tolerance_ < tolerance
    assert clf.constraint_violation_ <= clf.inner_tol or internal
    assert clf.effective_tolerance_ <= tolerance
    assert clf.score(X, y) > 0.8  # not a constant model (76 % negatives)


def test_first_solve_meeting_the_tolerance_is_the_papers_model(adult):
    """When the first solve meets the tolerance nothing more runs: one solve, the
    paper's final iterate, identical to a fit without tightening."""
    X, y, A = adult
    params = dict(interval=TOP, tolerance=0.05, max_iter=100, solver="idca", record_history=True)
    clf = PartialParityClassifier(PDP, **params).fit(X, y, sensitive_features=A)
    assert clf.tightening_["effective_tolerance"].tolist() == [0.05]
    assert clf.train_unfairness_ <= 0.05 and clf.effective_tolerance_ == 0.05
    assert clf.n_iter_ == 100 and clf.history_["params"].shape[0] == 101
    with PARTIAL_RULES.override(tighten_rounds=0, tighten_tail=0.0):
        paper = PartialParityClassifier(PDP, **params).fit(X, y, sensitive_features=A)
        np.testing.assert_array_equal(paper.coef_, clf.coef_)
        assert paper.objective_ == clf.objective_


def test_unmet_tolerance_warns_with_the_achieved_value():
    """400 samples, a band of 100 per group, 30 outer iterations: pSP <= 0.05 is out of
    reach; the fairest model found is returned and the warning names its exact value."""
    X, y, g = make_data(400, 3, 0)
    clf = PartialParityClassifier(
        interval=(0.0, 0.5), tolerance=0.05, max_iter=30, inner_max_iter=200, solver="idca"
    )
    with pytest.warns(FairnessWarning, match="exact training partial_statistical_parity") as rec:
        clf.fit(X, y, sensitive_features=g)
    value = _exact(clf, X, g)
    assert value > 0.05
    assert clf.train_unfairness_ == pytest.approx(value, abs=1e-12)
    assert f"{value:.4g} > tolerance=0.05" in str(rec[0].message)
    finals = clf.tightening_["train_unfairness"]
    assert 2 <= finals.size <= 1 + PARTIAL_RULES.tighten_rounds
    assert value == pytest.approx(finals.min())  # the fairest of the solves
    assert value < finals[0]  # fairer than the paper's solve


@pytest.mark.parametrize("metric", [PSP, PDP])
def test_train_unfairness_uses_weights_and_threshold(metric):
    X, y, g = make_data(400, 3, 1)
    weights = np.where(g == 0, 3.0, 1.0)
    clf = PartialParityClassifier(
        metric, interval=(0.1, 0.6), tolerance=0.3, threshold=0.5, max_iter=20, inner_max_iter=100
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessWarning)
        clf.fit(X, y, sensitive_features=g, sample_weight=weights)
    assert clf.train_unfairness_ == pytest.approx(_exact(clf, X, g, weights), abs=1e-12)


def test_one_group_and_no_constraint_run_once():
    X, y, g = make_data(200, 3, 0)
    clf = PartialParityClassifier(
        interval=(0.0, 0.5), tolerance=1.0, max_iter=5, inner_max_iter=50
    ).fit(X, y, sensitive_features=g)
    assert clf.tightening_["objective"].size == 1 and clf.train_unfairness_ <= 1.0
    with pytest.warns(FairnessWarning, match="one group"):
        single = PartialParityClassifier(max_iter=5, inner_max_iter=50).fit(X, y)
    assert single.train_unfairness_ == 0.0 and single.tightening_["objective"].size == 1


# ------------------------------------------------------------------------------------
# never a non-finite model
# ------------------------------------------------------------------------------------

HUGE = [
    PartialParityClassifier(interval=(0.0, 0.5), max_iter=10, inner_max_iter=100),
    PartialParityClassifier(PDP, interval=(0.0, 0.5), max_iter=10, inner_max_iter=100),
    PartialParityClassifier(
        interval=(0.0, 0.5), max_iter=3, solver="idca", inner_solver="alm", inner_max_iter=50
    ),
    PartialParityClassifier(
        interval=(0.0, 0.5), max_iter=5, inner_max_iter=50, solver="ssg_direct"
    ),
    PartialParityClassifier(
        interval=(0.0, 0.5), max_iter=5, inner_max_iter=50, surrogate="sigmoid"
    ),
    PartialParityClassifier(
        interval=(0.0, 0.5), schedule="theory", proximal_strength=0.1, inner_tol=0.5
    ),
    PartialParityPenaltyClassifier(max_iter=300, learning_rate=0.5),
    PartialParityPenaltyClassifier(PDP, interval=(0.0, 0.5)),
    GroupAUCConstrainedClassifier(max_iter=100),
    InterGroupPairwiseConstrainedClassifier(max_iter=100),
    IntraGroupPairwiseConstrainedClassifier(max_iter=100),
]


@pytest.mark.parametrize("scale", [1e10, 1e300])
@pytest.mark.parametrize("estimator", HUGE, ids=lambda e: type(e).__name__)
def test_huge_feature_column_gives_a_finite_model_or_a_clear_error(estimator, scale):
    with PARTIAL_RULES.override(theory_max_outer=3, theory_max_inner=50):
        rng = np.random.default_rng(0)
        n = 120
        X = rng.normal(size=(n, 3))
        g = np.arange(n) % 2
        y = ((X[:, 0] + 0.5 * g + 0.5 * rng.normal(size=n)) > 0.25).astype(int)
        X[:, 2] *= scale
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence / fairness warnings of short fits
                estimator.fit(X, y, sensitive_features=g)
        except ValueError as error:
            message = str(error)
            assert len(message) < 500 and "scale the features" in message, message
            assert scale > 1e100  # a 1e10 column always fits
        else:
            assert np.all(np.isfinite(estimator.coef_)) and np.all(
                np.isfinite(estimator.intercept_)
            )
            assert np.all(np.isfinite(estimator.decision_function(X)))
            assert np.isfinite(estimator.objective_)


def test_penalty_with_a_1e300_column_refuses_instead_of_inf_scores():
    """The regression: the subgradient steps on a 1e300 column overflowed the scores and
    the fit returned a model whose decision_function was inf everywhere."""
    X, y, g = make_data(120, 3, 0)
    X[:, 1] *= 1e300
    with pytest.raises(ValueError, match="non-finite.*scale the features"):
        PartialParityPenaltyClassifier(max_iter=300, learning_rate=0.5).fit(
            X, y, sensitive_features=g
        )


# ------------------------------------------------------------------------------------
# jax_debug_nans
# ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"metric": PDP},
        {"surrogate": "sigmoid"},
        {"solver": "idca", "inner_solver": "alm", "max_iter": 3},
        {"metric": PDP, "solver": "idca", "inner_solver": "alm", "max_iter": 3},
        {"solver": "ssg_direct"},
        {"tolerance": 1.0},
    ],
    ids=str,
)
def test_fits_under_jax_debug_nans(params):
    """No NaN is produced on the normal path (the skipped padding steps of the IDCA scan
    recorded NaN, which raised under jax_debug_nans)."""
    X, y, g = make_data(200, 3, 0)
    params = {"interval": (0.0, 0.5), "max_iter": 5, "inner_max_iter": 50, **params}
    with jax.debug_nans(True):
        with warnings.catch_warnings():
            # FairnessWarning and ConvergenceWarning (the ALM's short runs)
            warnings.simplefilter("ignore", UserWarning)
            clf = PartialParityClassifier(**params).fit(X, y, sensitive_features=g)
        penalty = PartialParityPenaltyClassifier(max_iter=200).fit(X, y, sensitive_features=g)
    assert jax.config.jax_debug_nans is False
    assert np.all(np.isfinite(clf.decision_function(X)))
    assert np.all(np.isfinite(penalty.decision_function(X)))
