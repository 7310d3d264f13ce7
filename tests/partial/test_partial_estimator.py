"""PartialParityClassifier: reference limits, fairness guarantees, sklearn compatibility
(spec oracles 13-17 and the issue's estimator tests)."""

import logging
import pickle
import warnings

import numpy as np
import pytest
import sklearn
from _partial_helpers import PDP, PSP, make_data
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fairest.metrics import (
    partial_demographic_parity,
    partial_statistical_parity,
    suggest_interval,
)
from fairest.partial import GroupInteractionFeatures, PartialParityClassifier, _defaults
from fairest.partial._defaults import PARTIAL_RULES
from fairest.utils import FairnessWarning

INTERVAL = (0.0, 0.5)
FAST = dict(max_iter=30, inner_max_iter=200, solver="idca")  # the paper's IDCA + SSG


@pytest.fixture(scope="module")
def data():
    return make_data(400, 3, 0)


@pytest.mark.parametrize("metric", [PSP, PDP])
def test_tolerance_one_equals_logistic_regression(data, metric):
    """Oracles 13/14: kappa = 1 gives unconstrained logistic regression (scikit-learn):
    mean log-loss within 1e-4 and >= 99 % of the predicted signs equal."""
    X, y, g = data
    reference = LogisticRegression(C=1e12, tol=1e-14, max_iter=10_000).fit(X, y)
    clf = PartialParityClassifier(metric, interval=INTERVAL, tolerance=1.0, **FAST)
    clf.fit(X, y, sensitive_features=g)
    if metric == PSP:
        assert clf.grid_.size == 0 and clf.thresholds_.size == 0  # no constraint at all
    gap = clf.objective_ - log_loss(y, reference.predict_proba(X))
    assert -1e-9 <= gap <= 1e-4
    agree = np.mean(np.sign(clf.decision_function(X)) == np.sign(reference.decision_function(X)))
    assert agree >= 0.99
    np.testing.assert_allclose(clf.coef_, reference.coef_, atol=0.02)


def _surrogate_gap(clf, X, g):
    """e = max_{k,j} |mean ramp(s - theta_j) - mean 1[s > theta_j]| (spec section 10)."""
    s = clf.decision_function(X)
    gap = 0.0
    for k in np.unique(g):
        z = s[g == k][:, None] - clf.thresholds_[None, :]
        gap = max(gap, np.abs(np.clip(z + 0.5, 0, 1).mean(0) - (z > 0).mean(0)).max())
    return gap


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")  # exact metric > tolerance
def test_psp_within_documented_bound_and_monotone(data):
    """Oracles 15/16: the exact training pSP is at most kappa + (1-kappa)/J +
    2 (eps + e)/(beta - alpha) + 2/(n_min (beta - alpha)); smaller kappa gives smaller pSP
    and larger loss."""
    X, y, g = data
    n_min = np.bincount(g).min()
    width = INTERVAL[1] - INTERVAL[0]
    unconstrained = partial_statistical_parity(
        None,
        LogisticRegression(C=1e12).fit(X, y).decision_function(X),
        sensitive_features=g,
        interval=INTERVAL,
    )
    psp, loss = [], []
    for kappa in (0.5, 0.2, 0.05):
        clf = PartialParityClassifier(interval=INTERVAL, tolerance=kappa, **FAST)
        clf.fit(X, y, sensitive_features=g)
        value = partial_statistical_parity(
            None, clf.decision_function(X), sensitive_features=g, interval=INTERVAL
        )
        eps, J = clf.inner_tol, clf.n_grid
        bound = kappa + (1 - kappa) / J + 2 * (eps + _surrogate_gap(clf, X, g)) / width
        bound += 2 / (n_min * width)
        assert clf.constraint_violation_ <= eps
        assert value <= bound, (kappa, value, bound)
        psp.append(value)
        loss.append(clf.objective_)
    assert unconstrained > 0.6  # the constraint has work to do
    assert psp[0] >= psp[1] - 0.02 and psp[1] >= psp[2] - 0.02 and psp[2] < 0.2
    assert loss[0] <= loss[1] <= loss[2]


def test_pdp_close_to_tolerance(data):
    """Oracle 16, pDP: training pDP <= kappa + surrogate gap + 2 eps / (beta - alpha)."""
    X, y, g = data
    unconstrained = PartialParityClassifier(PDP, interval=INTERVAL, tolerance=1.0, **FAST).fit(
        X, y, sensitive_features=g
    )
    before = partial_demographic_parity(
        None, unconstrained.decision_function(X), sensitive_features=g, interval=INTERVAL
    )
    kappa = 0.05
    clf = PartialParityClassifier(PDP, interval=INTERVAL, tolerance=kappa, **FAST)
    clf.fit(X, y, sensitive_features=g)
    s = clf.decision_function(X)
    value = partial_demographic_parity(None, s, sensitive_features=g, interval=INTERVAL)
    gap = max(abs(np.clip(s[g == k] + 0.5, 0, 1).mean() - (s[g == k] > 0).mean()) for k in (0, 1))
    width = INTERVAL[1] - INTERVAL[0]
    assert before > 0.15
    assert value <= kappa + 2 * (gap + clf.inner_tol) / width + 2 / (np.bincount(g).min() * width)
    assert clf.objective_ >= unconstrained.objective_


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")  # exact metric > tolerance
def test_full_interval_and_three_groups():
    """Oracle 17: interval [0, 1) is a full-SP-constrained model on the same code path;
    three groups give 2 G J constraints with shared thresholds."""
    X, y, g = make_data(300, 2, 1, n_groups=3)
    clf = PartialParityClassifier(interval=(0.0, 1.0), tolerance=0.1, n_grid=20, **FAST)
    clf.fit(X, y, sensitive_features=g)
    assert clf.constraint_violation_ <= clf.inner_tol and clf.grid_.size == 20
    full_sp = partial_statistical_parity(None, clf.decision_function(X), sensitive_features=g)
    assert full_sp <= 0.1 + 0.9 / 20 + 2 * 0.15 + 2 / np.bincount(g).min()


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")  # exact metric > tolerance
def test_sigmoid_surrogate_and_weights(data):
    X, y, g = data
    weights = np.where(g == 0, 2.0, 1.0)
    clf = PartialParityClassifier(
        interval=INTERVAL, tolerance=0.1, surrogate="sigmoid", record_history=True, **FAST
    )
    clf.fit(X, y, sensitive_features=g, sample_weight=weights)
    history = clf.history_
    assert history["params"].shape == (31, 1 + 3 + 10)
    assert np.all(np.diff(history["objective"]) <= 1e-15)
    assert np.all(history["max_violation"][1:] <= clf.inner_tol)


@pytest.mark.parametrize("verbose,n_lines", [(0, 0), (1, 1), (2, 4 + 1)])
def test_verbose_logs_a_summary_and_outer_iterations(data, caplog, verbose, n_lines):
    """verbose=1 logs one summary line, verbose=2 also one line per outer iteration
    k = 1..K; history_ (record_history=True) is a dict of numpy arrays."""
    X, y, g = data
    clf = PartialParityClassifier(
        interval=INTERVAL,
        tolerance=0.2,
        max_iter=4,
        inner_max_iter=20,
        solver="idca",
        verbose=verbose,
        record_history=True,
    )
    with caplog.at_level(logging.INFO, logger="fairest"):
        clf.fit(X, y, sensitive_features=g)
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("fairest.partial")]
    assert len(lines) == n_lines
    assert all(line.startswith("[PartialParityClassifier] ") for line in lines)
    if verbose:
        assert "4 outer iterations" in lines[-1] and "max violation" in lines[-1]
    assert all(isinstance(value, np.ndarray) for value in clf.history_.values())
    assert clf.history_["objective"].shape == (5,)


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")  # exact metric > tolerance
def test_interval_auto_follows_guideline(data):
    X, y, g = data
    clf = PartialParityClassifier(interval="auto", tolerance=0.2, max_iter=2, inner_max_iter=10)
    clf.fit(X, y, sensitive_features=g)
    scores = LogisticRegression(C=1e6, tol=1e-12, max_iter=10_000).fit(X, y).decision_function(X)
    assert clf.interval_ == suggest_interval(scores, sensitive_features=g)
    width = clf.interval_[1] - clf.interval_[0]
    assert min(abs(width - w) for w in _defaults.AUTO_WIDTHS) < 1e-9


def test_ssg_direct_solver(data):
    X, y, g = data
    clf = PartialParityClassifier(
        interval=INTERVAL, tolerance=0.2, solver="ssg_direct", max_iter=5, inner_max_iter=200
    )
    clf.fit(X, y, sensitive_features=g)
    assert clf.constraint_violation_ <= clf.inner_tol


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")  # exact metric > tolerance
def test_theory_schedule_caps_and_needs_proximal_strength(data):
    X, y, g = data
    with pytest.raises(ValueError, match="proximal_strength > 0"):
        PartialParityClassifier(interval=INTERVAL, schedule="theory").fit(
            X, y, sensitive_features=g
        )
    with PARTIAL_RULES.override(theory_max_outer=3, theory_max_inner=20):
        clf = PartialParityClassifier(
            interval=INTERVAL, schedule="theory", proximal_strength=0.1, inner_tol=0.1
        )
        with pytest.warns(ConvergenceWarning, match="capped"):
            clf.fit(X, y, sensitive_features=g)
        assert clf.schedule_["max_iter"] == 3 and clf.schedule_["inner_max_iter"] == 20
        assert clf.schedule_["inner_tol"] < 0.1**2


def test_errors(data):
    X, y, g = data
    with pytest.raises(ValueError, match="binary"):
        PartialParityClassifier(interval=INTERVAL).fit(X, np.arange(400) % 3, sensitive_features=g)
    with pytest.raises(ValueError, match="interval"):
        PartialParityClassifier(interval=(0.5, 0.2)).fit(X, y, sensitive_features=g)
    with pytest.raises(ValueError, match="rows"):
        PartialParityClassifier(interval=INTERVAL).fit(X, y, sensitive_features=g[:-1])
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        PartialParityClassifier(interval=INTERVAL).fit(X_nan, y, sensitive_features=g)


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")  # exact metric > tolerance
def test_pickle_pipeline_and_grid_search(data):
    X, y, g = data
    Xg = np.column_stack([X, g + 1.0])
    pipe = make_pipeline(
        StandardScaler(),
        GroupInteractionFeatures(group_column=-1),
        PartialParityClassifier(interval=INTERVAL, max_iter=5, inner_max_iter=50),
    )
    pipe.fit(Xg, y, partialparityclassifier__sensitive_features=g)
    assert pipe[-1].coef_.shape == (1, 7)  # x (4 incl. gamma) + gamma * x (3)
    clone = pickle.loads(pickle.dumps(pipe))
    np.testing.assert_array_equal(clone.decision_function(Xg), pipe.decision_function(Xg))
    grid = {"tolerance": [0.1, 0.5]}
    base = PartialParityClassifier(interval=INTERVAL, max_iter=5, inner_max_iter=50)
    search = GridSearchCV(base, grid, cv=2).fit(X, y, sensitive_features=g)  # routing off
    assert search.best_params_["tolerance"] in (0.1, 0.5)
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(base, grid, cv=2).fit(X, y, sensitive_features=g)
        assert hasattr(search.best_estimator_, "coef_")


def test_one_group_warns_and_fits_plain_model(data):
    X, y, _ = data
    with pytest.warns(FairnessWarning):
        clf = PartialParityClassifier(max_iter=5, inner_max_iter=50).fit(X, y)
    assert clf.interval_ == (0.0, 1.0) and clf.constraint_violation_ == -np.inf


def test_group_interaction_features():
    X = np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 2.0]])
    out = GroupInteractionFeatures(group_column=2).fit_transform(X)
    np.testing.assert_array_equal(out, [[1, 2, 1, 1, 2], [3, 4, 2, 6, 8]])
    with pytest.raises(ValueError, match="out of range"):
        GroupInteractionFeatures(group_column=5).fit(X)


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")  # exact metric > tolerance
def test_init_starts_from_a_constant_model(data):
    """init="zero" starts at h = 0 (the paper), "intercept" at the best constant model;
    "auto" picks the intercept for pDP and zero for pSP. Every start is feasible, so the
    objective never increases and the intercept start begins with a smaller loss."""
    X, y, g = data
    base = np.log(y.mean() / (1 - y.mean()))
    starts = {}
    for metric in (PSP, PDP):
        for init in ("zero", "intercept", "auto"):
            clf = PartialParityClassifier(
                metric,
                interval=INTERVAL,
                tolerance=0.1,
                init=init,
                max_iter=3,
                inner_max_iter=50,
                solver="idca",
                record_history=True,
            )
            history = clf.fit(X, y, sensitive_features=g).history_
            start = history["params"][0]
            assert not np.any(start[1 : 1 + X.shape[1]])
            assert np.all(np.diff(history["objective"]) <= 1e-12)
            assert history["max_violation"][0] < 0
            starts[metric, init] = (start[0], history["objective"][0])
        assert starts[metric, "zero"] == (0.0, pytest.approx(np.log(2.0)))
        assert starts[metric, "intercept"][0] == pytest.approx(base)
        assert starts[metric, "intercept"][1] < np.log(2.0)
    assert starts[PSP, "auto"] == starts[PSP, "zero"]
    assert starts[PDP, "auto"] == starts[PDP, "intercept"]


# the intercept start's model stays next to the constant one it starts from (99.8 % of
# the rows predicted 1, 85 % positives): the nearly-constant FairnessWarning says so
@pytest.mark.filterwarnings("ignore:.*nearly everywhere:fairest.utils.FairnessWarning")
def test_intercept_start_escapes_the_pdp_trap_of_the_zero_start():
    """pDP on the bottom 30 % with 85 % positives: from h = 0 every surrogate rate is 1/2,
    below the interval, and IDCA stops where one group's rate sits at its edge (the
    regression seen on law school); the best constant model starts inside the band."""
    rng = np.random.default_rng(0)
    g = rng.integers(0, 2, 400)
    X = rng.normal(size=(400, 3)) + 0.8 * g[:, None]
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=400) > -1.0).astype(int)
    fits = {}
    for init in ("zero", "intercept"):
        clf = PartialParityClassifier(
            PDP,
            interval=(0.7, 1.0),
            tolerance=0.05,
            init=init,
            max_iter=30,
            inner_max_iter=100,
            solver="idca",
        )
        fits[init] = clf.fit(X, y, sensitive_features=g)
    assert fits["intercept"].objective_ < fits["zero"].objective_ - 0.1
    assert fits["intercept"].score(X, y) > fits["zero"].score(X, y) + 0.05
    assert fits["intercept"].score(X, y) >= y.mean()


def test_auto_interval_uses_sample_weight_like_repeated_rows():
    """interval='auto' picks the interval on the weighted training data: integer weights
    give the interval of the data with rows repeated (regression: weights were ignored)."""
    rng = np.random.default_rng(1)
    n = 400
    X = rng.normal(size=(n, 3))
    A = rng.integers(0, 2, n)
    y = ((X[:, 0] + A + rng.normal(size=n)) > 0.8).astype(int)
    w = np.where(X[:, 0] > 0.3, 4, 1)
    repeat = np.repeat(np.arange(n), w)
    params = dict(max_iter=2, inner_max_iter=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = PartialParityClassifier(**params).fit(
            X, y, sensitive_features=A, sample_weight=w
        )
        repeated = PartialParityClassifier(**params).fit(
            X[repeat], y[repeat], sensitive_features=A[repeat]
        )
        unweighted = PartialParityClassifier(**params).fit(X, y, sensitive_features=A)
    assert weighted.interval_ == repeated.interval_
    assert weighted.interval_ != unweighted.interval_  # the weights matter on this data
