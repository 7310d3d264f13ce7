"""LossGapConstrainedClassifier oracles (constrained spec section 5, oracles 2, 15-19, 23, 24)."""

import numpy as np
import pytest
from _constrained_helpers import bce
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from fairest.constrained import LossGapConstrainedClassifier
from fairest.constrained._engine import EpochSampler, spawn_rngs
from fairest.utils import FairnessWarning


def _data(n=600, p=5, seed=0, shift=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    g = (rng.random(n) < 0.3).astype(int)
    X[:, 0] += shift * g
    logits = X @ np.array([1.0, -1.0, 0.5, 0.0, 0.0]) + 0.8 * g
    noise = np.where(g == 1, 1.5, 0.5) * rng.normal(size=n)
    y = (logits + noise > 0).astype(int)
    return StandardScaler().fit_transform(X), y, g


LINEAR = dict(hidden_layer_sizes=(), dtype="float64")


def test_constrained_constraint_values_are_loss_gaps():
    X, y, g = _data()
    est = LossGapConstrainedClassifier(
        **LINEAR, solver="sgd", tolerance=0.02, n_epochs=1, random_state=0
    ).fit(X, y, sensitive_features=g)
    losses = bce(est.decision_function(X), y)
    gap = losses[g == 0].mean() - losses[g == 1].mean()
    np.testing.assert_allclose(est.constraint_values_, [gap - 0.02, -gap - 0.02], rtol=1e-10)
    np.testing.assert_allclose(est.constraint_values_.max(), abs(gap) - 0.02, rtol=1e-10)
    np.testing.assert_allclose(est.loss_gaps_[0, 1], gap, rtol=1e-10)
    assert est.constraint_names_ == ["gap[0,1]", "gap[1,0]"]
    assert est.is_feasible_ == (abs(gap) - 0.02 <= 1e-3)
    with pytest.warns(FairnessWarning):
        one = LossGapConstrainedClassifier(
            **LINEAR, solver="sgd", tolerance=0.02, n_epochs=1, random_state=0
        ).fit(X, y)
    np.testing.assert_array_equal(one.constraint_values_, [-0.02, -0.02])


def test_constrained_sgd_matches_hand_rolled_loop():
    X, y, g = _data(n=200)
    est = LossGapConstrainedClassifier(
        **LINEAR,
        solver="sgd",
        batch_size=16,
        n_epochs=2,
        solver_params={"learning_rate": 0.3},
        random_state=4,
        record_history=True,
    )
    est.fit(X, y, sensitive_features=g)
    rngs = spawn_rngs(4)
    bound = 1 / np.sqrt(X.shape[1])
    W = rngs[0].uniform(-bound, bound, size=(X.shape[1], 1))[:, 0]
    b = rngs[0].uniform(-bound, bound, size=1)[0]
    sampler = EpochSampler(len(y), 16, rngs[1])
    for _ in range(2):
        idx, w = sampler.epoch()
        for rows, weights in zip(idx, w):
            rows = rows[weights > 0]
            r = 1 / (1 + np.exp(-(X[rows] @ W + b))) - y[rows]
            W, b = W - 0.3 * X[rows].T @ r / rows.size, b - 0.3 * r.mean()
    np.testing.assert_allclose(est.coef_[0], W, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(est.intercept_[0], b, rtol=1e-12, atol=1e-14)
    assert est.n_iter_ == 2 * 13 and len(est.history_["iter"]) == est.n_iter_


def test_constrained_ssw_loose_bound_is_sgd_and_penalty_zero_is_sgd():
    """Oracles 16 and 24: same objective batches, independent constraint streams."""
    X, y, g = _data(n=300)
    common = dict(**LINEAR, batch_size=16, n_epochs=2, random_state=3)
    sgd = LossGapConstrainedClassifier(solver="sgd", solver_params={"learning_rate": 0.2}, **common)
    ssw = LossGapConstrainedClassifier(
        solver="ssw", tolerance=1e6, solver_params={"learning_rate": 0.2}, **common
    )
    pen = LossGapConstrainedClassifier(
        solver="penalty",
        solver_params={"learning_rate": 0.2, "fairness_weight": 0.0, "balanced_batches": False},
        **common,
    )
    for est in (sgd, ssw, pen):
        est.fit(X, y, sensitive_features=g)
    assert ssw.step_counts_ == {"objective": ssw.n_iter_, "constraint": 0}
    np.testing.assert_allclose(ssw.coef_, sgd.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(pen.coef_, sgd.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(pen.intercept_, sgd.intercept_, rtol=1e-12, atol=1e-14)


def test_constrained_ssw_step_accounting():
    """Oracle 17: objective + constraint steps = n_iter_; constraint step iff c_hat >= eps;
    eps = constraint_tol * decay^max(0, t - start + 1), reset every epoch."""
    X, y, g = _data(n=300)
    est = LossGapConstrainedClassifier(
        **LINEAR,
        solver="ssw",
        tolerance=0.0,
        batch_size=16,
        n_epochs=3,
        random_state=0,
        solver_params={
            "constraint_tol": 0.01,
            "constraint_tol_decay": 0.9,
            "constraint_tol_decay_start": 5,
        },
        record_history=True,
    ).fit(X, y, sensitive_features=g)
    h = est.history_
    counts = est.step_counts_
    assert counts["objective"] + counts["constraint"] == est.n_iter_ == 3 * 19
    assert counts["constraint"] > 0 and counts["objective"] > 0
    c_hat = np.maximum(h["c_gap[0,1]"], h["c_gap[1,0]"])
    np.testing.assert_array_equal(h["step_type"] == "constraint", c_hat >= h["constraint_tol"])
    t = h["iter"] % 19
    np.testing.assert_allclose(
        h["constraint_tol"], 0.01 * 0.9 ** np.maximum(t - 5 + 1, 0), rtol=1e-12
    )


@pytest.mark.parametrize("solver", ["ssl-alm", "alm"])
def test_constrained_alm_loose_bound_matches_logistic_regression(solver):
    """Oracle 19: delta = 1e3, feasible slacks, full batch, tau = 0.1, 5000 iterations."""
    X, y, g = _data(n=300)
    est = LossGapConstrainedClassifier(
        **LINEAR,
        solver=solver,
        tolerance=1e3,
        batch_size=None,
        constraint_batch_size=None,
        n_epochs=None,
        max_iter=5000,
        record_history=50,
        random_state=0,
        solver_params={"learning_rate": 0.1, "slack_init": "feasible"},
    ).fit(X, y, sensitive_features=g)
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(X, y)
    f_ref = bce(ref.decision_function(X), y).mean()
    f_est = bce(est.decision_function(X), y).mean()
    assert abs(f_est - f_ref) <= 1e-4
    np.testing.assert_allclose(est.multipliers_, 0.0, atol=1e-6)
    h = est.constraint_values_ + est.slacks_
    np.testing.assert_allclose(h, 0.0, atol=1e-6)
    assert len(est.history_["iter"]) == 100


def test_constrained_determinism_and_seed_dependence():
    X, y, g = _data(n=200)
    kw = dict(**LINEAR, solver="ssl-alm", n_epochs=1, record_history=True)
    a = LossGapConstrainedClassifier(random_state=11, **kw).fit(X, y, sensitive_features=g)
    b = LossGapConstrainedClassifier(random_state=11, **kw).fit(X, y, sensitive_features=g)
    c = LossGapConstrainedClassifier(random_state=12, **kw).fit(X, y, sensitive_features=g)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.multipliers_, b.multipliers_)
    assert set(a.history_) == set(b.history_)
    for col in set(a.history_) - {"time"}:
        np.testing.assert_array_equal(a.history_[col], b.history_[col])
    assert not np.allclose(a.coef_, c.coef_)


def test_constrained_ssl_alm_reduces_loss_gap():
    """Oracle 23 (behavioural, fixed seed): SSL-ALM ends near the bound, below SGD's gap."""
    X, y, g = _data(n=600, seed=2)
    kw = dict(hidden_layer_sizes=(), n_epochs=20, random_state=0)
    sgd = LossGapConstrainedClassifier(solver="sgd", solver_params={"learning_rate": 0.05}, **kw)
    alm = LossGapConstrainedClassifier(solver="ssl-alm", tolerance=0.005, **kw)
    gaps = {}
    for name, est in (("sgd", sgd), ("alm", alm)):
        est.fit(X, y, sensitive_features=g)
        gaps[name] = abs(est.loss_gaps_[0, 1])
    assert gaps["sgd"] > 0.05
    assert gaps["alm"] <= 0.005 + 0.01
    assert gaps["alm"] < gaps["sgd"]


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")  # the paper preset
def test_constrained_constraint_draw_option():
    from fairest.constrained._presets import resolve_solver_params

    for solver in ("ssl-alm", "alm", "ssw"):
        for preset in ("paper", "release"):  # the paper's estimators
            params = resolve_solver_params(solver, preset, None)
            assert params["constraint_draw"] == "independent"
        assert resolve_solver_params(solver, "default", None)["constraint_draw"] == "shared"
    assert (
        resolve_solver_params("ssl-alm", "paper", {"constraint_draw": "shared"})["constraint_draw"]
        == "shared"
    )
    X, y, g = _data(n=200)
    kw = dict(
        **LINEAR, solver="ssl-alm", n_epochs=1, random_state=3, record_history=True, preset="paper"
    )
    with pytest.raises(ValueError, match="constraint_draw"):
        LossGapConstrainedClassifier(**kw, solver_params={"constraint_draw": "same"}).fit(
            X, y, sensitive_features=g
        )
    a = LossGapConstrainedClassifier(**kw, solver_params={"constraint_draw": "shared"})
    b = LossGapConstrainedClassifier(**kw)
    a.fit(X, y, sensitive_features=g)
    b.fit(X, y, sensitive_features=g)
    assert not np.allclose(a.coef_, b.coef_)
    per_iter = np.diff(a.history_["n_samples"])
    assert np.all(per_iter == 8 + 2 * 8)  # objective batch + one draw of 8 rows per group
    ssw = LossGapConstrainedClassifier(
        **{**kw, "solver": "ssw"}, tolerance=0.0, solver_params={"constraint_draw": "shared"}
    )
    h = ssw.fit(X, y, sensitive_features=g).history_
    rows = np.diff(np.concatenate([[0], h["n_samples"]]))
    expected = np.where(h["step_type"] == "constraint", 2 * 8, 16 + 2 * 8)
    np.testing.assert_array_equal(rows, expected)  # one constraint draw per iteration


# ------------------------------------------------------------------------------------------
# sample_weight
# ------------------------------------------------------------------------------------------


def _fitted_arrays(est):
    arrays = [a for layer in est.params_ for a in layer]
    arrays += [est.constraint_values_, est.group_losses_]
    if est.multipliers_ is not None:
        arrays += [est.multipliers_, est.slacks_]
    return arrays


@pytest.mark.parametrize("solver", ["ssl-alm", "ssw", "penalty", "ghost"])
def test_constrained_unit_weights_are_bitwise_unweighted(solver):
    X, y, g = _data(n=200)
    kw = dict(
        hidden_layer_sizes=(4,),
        solver=solver,
        n_epochs=1,
        max_iter=4 if solver == "ghost" else None,
        random_state=5,
        record_history=True,
        solver_params={"qp_backend": "dual"} if solver == "ghost" else None,
    )
    none = LossGapConstrainedClassifier(**kw).fit(X, y, sensitive_features=g)
    ones = LossGapConstrainedClassifier(**kw).fit(
        X, y, sensitive_features=g, sample_weight=np.ones(len(y))
    )
    for a, b in zip(_fitted_arrays(none), _fitted_arrays(ones), strict=True):
        np.testing.assert_array_equal(a, b)
    for key in set(none.history_) - {"time"}:
        np.testing.assert_array_equal(none.history_[key], ones.history_[key])


@pytest.mark.parametrize("solver", ["sgd", "alm", "ghost"])
def test_constrained_integer_weights_equal_repeated_rows(solver):
    """Full-batch, deterministic: integer weights (zeros included) = repeated rows."""
    X, y, g = _data(n=120, seed=3)
    w = np.random.default_rng(0).integers(0, 4, size=len(y))
    rows = np.repeat(np.arange(len(y)), w)
    kw = dict(
        **LINEAR,
        solver=solver,
        tolerance=0.01,
        batch_size=None,
        constraint_batch_size=None,
        n_epochs=None,
        max_iter=40,
        random_state=0,
    )
    if solver == "ghost":
        kw["solver_params"] = {"sampling": "full", "qp_backend": "dual"}
    weighted = LossGapConstrainedClassifier(**kw).fit(X, y, sensitive_features=g, sample_weight=w)
    repeated = LossGapConstrainedClassifier(**kw).fit(X[rows], y[rows], sensitive_features=g[rows])
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(weighted.intercept_, repeated.intercept_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        weighted.constraint_values_, repeated.constraint_values_, rtol=1e-9, atol=1e-12
    )
    np.testing.assert_allclose(weighted.group_losses_, repeated.group_losses_, rtol=1e-10)
    if solver == "alm":
        np.testing.assert_allclose(
            weighted.multipliers_, repeated.multipliers_, rtol=1e-8, atol=1e-12
        )
        assert np.abs(weighted.multipliers_).max() > 0  # the constraints were active


@pytest.mark.parametrize("solver", ["ssl-alm", "ssw"])
def test_constrained_zero_weight_rows_are_irrelevant(solver):
    """Minibatch draws: the rows of weight 0 add exactly nothing, whatever their values."""
    X, y, g = _data(n=200, seed=1)
    w = np.where(np.arange(len(y)) % 5 == 0, 0.0, 1.0 + np.arange(len(y)) % 3)
    X2, y2 = X.copy(), y.copy()
    X2[w == 0] = 5.0 * np.random.default_rng(2).normal(size=((w == 0).sum(), X.shape[1]))
    y2[w == 0] = 1 - y2[w == 0]
    kw = dict(**LINEAR, solver=solver, n_epochs=2, random_state=0)
    a = LossGapConstrainedClassifier(**kw).fit(X, y, sensitive_features=g, sample_weight=w)
    b = LossGapConstrainedClassifier(**kw).fit(X2, y2, sensitive_features=g, sample_weight=w)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(a.constraint_values_, b.constraint_values_, rtol=1e-12, atol=1e-14)


def test_constrained_weighted_train_gaps_match_weighted_metrics():
    from sklearn.metrics import log_loss

    from fairest.metrics import loss_gap

    X, y, g = _data(n=400, seed=4)
    w = np.random.default_rng(1).uniform(0.2, 3.0, size=len(y))
    est = LossGapConstrainedClassifier(
        **LINEAR, solver="ssl-alm", tolerance=0.01, n_epochs=2, random_state=0
    )
    est.fit(X, y, sensitive_features=g, sample_weight=w)
    proba = est.predict_proba(X)
    L = np.array(
        [log_loss(y[g == k], proba[g == k], sample_weight=w[g == k], labels=[0, 1]) for k in (0, 1)]
    )
    np.testing.assert_allclose(est.group_losses_, L, rtol=1e-9)
    np.testing.assert_allclose(est.loss_gaps_[0, 1], L[0] - L[1], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(
        abs(est.loss_gaps_[0, 1]),
        loss_gap(y, proba, sensitive_features=g, sample_weight=w),
        rtol=1e-8,
        atol=1e-12,
    )
    gap = L[0] - L[1]
    np.testing.assert_allclose(
        est.constraint_values_, [gap - 0.01, -gap - 0.01], rtol=1e-8, atol=1e-12
    )
    unweighted = bce(est.decision_function(X), y)
    assert not np.isclose(unweighted[g == 0].mean(), L[0])  # the weights mattered


def test_constrained_bad_sample_weight_raises():
    X, y, g = _data(n=100)
    est = LossGapConstrainedClassifier(**LINEAR, n_epochs=1)
    w = np.ones(len(y))
    w[3] = -1.0
    with pytest.raises(ValueError, match="[Nn]egative"):
        est.fit(X, y, sensitive_features=g, sample_weight=w)
    w[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(X, y, sensitive_features=g, sample_weight=w)
    with pytest.raises(ValueError, match="positive total sample_weight"):  # shared check
        est.fit(X, y, sensitive_features=g, sample_weight=(g == 0).astype(float))
    eopp = LossGapConstrainedClassifier(**LINEAR, n_epochs=1, metric="loss_equal_opportunity")
    with pytest.raises(ValueError, match="positive sample_weight in every"):
        eopp.fit(
            X, y, sensitive_features=g, sample_weight=1.0 - ((g == 0) & (y == 1))
        )  # its cell (0, y=1) weighs 0
    with pytest.raises(ValueError, match="2 classes"):
        est.fit(X, y, sensitive_features=g, sample_weight=(y == 1).astype(float))


@pytest.mark.parametrize("solver", ["ssl-alm", "alm", "ssw"])
@pytest.mark.parametrize("tolerance", [0.002, 0.02, 0.1])
def test_constrained_train_unfairness_is_the_exact_weighted_loss_gap(solver, tolerance):
    """What tolerance promises for these stochastic solvers: train_unfairness_ is the exact
    weighted train loss gap of the returned model (checked against fairest.metrics.loss_gap),
    and is_feasible_ says whether it is within tolerance."""
    from fairest.metrics import loss_gap

    X, y, g = _data(n=400, seed=5)
    w = np.random.default_rng(2).uniform(0.2, 3.0, size=len(y))
    est = LossGapConstrainedClassifier(
        **LINEAR, solver=solver, tolerance=tolerance, n_epochs=3, random_state=0
    ).fit(X, y, sensitive_features=g, sample_weight=w)
    exact = loss_gap(y, est.predict_proba(X), sensitive_features=g, sample_weight=w)
    assert est.train_unfairness_ == pytest.approx(exact, rel=1e-8, abs=1e-12)
    assert est.is_feasible_ == (exact <= tolerance + 1e-3)
