"""LossGapConstrainedClassifier oracles (constrained spec section 5, oracles 2, 15-19, 23, 24)."""


import numpy as np
import pytest
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


def _bce(z, y):
    return np.logaddexp(0, z) - y * z


LINEAR = dict(hidden_layer_sizes=(), dtype="float64")


def test_constrained_constraint_values_are_loss_gaps():
    X, y, g = _data()
    est = LossGapConstrainedClassifier(**LINEAR, solver="sgd", tolerance=0.02, n_epochs=1,
                                       random_state=0).fit(X, y, sensitive_features=g)
    losses = _bce(est.decision_function(X), y)
    gap = losses[g == 0].mean() - losses[g == 1].mean()
    np.testing.assert_allclose(est.constraint_values_, [gap - 0.02, -gap - 0.02], rtol=1e-10)
    np.testing.assert_allclose(est.constraint_values_.max(), abs(gap) - 0.02, rtol=1e-10)
    np.testing.assert_allclose(est.loss_gaps_[0, 1], gap, rtol=1e-10)
    assert est.constraint_names_ == ["gap[0,1]", "gap[1,0]"]
    assert est.is_feasible_ == (abs(gap) - 0.02 <= 1e-3)
    with pytest.warns(FairnessWarning):
        one = LossGapConstrainedClassifier(**LINEAR, solver="sgd", tolerance=0.02, n_epochs=1,
                                           random_state=0).fit(X, y)
    np.testing.assert_array_equal(one.constraint_values_, [-0.02, -0.02])


def test_constrained_sgd_matches_hand_rolled_loop():
    X, y, g = _data(n=200)
    est = LossGapConstrainedClassifier(**LINEAR, solver="sgd", batch_size=16, n_epochs=2,
                                       solver_params={"lr": 0.3}, random_state=4)
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
    assert est.n_iter_ == 2 * 13 and len(est.history_) == est.n_iter_


def test_constrained_ssw_loose_bound_is_sgd_and_penalty_zero_is_sgd():
    """Oracles 16 and 24: same objective batches, independent constraint streams."""
    X, y, g = _data(n=300)
    common = dict(**LINEAR, batch_size=16, n_epochs=2, random_state=3)
    sgd = LossGapConstrainedClassifier(solver="sgd", solver_params={"lr": 0.2}, **common)
    ssw = LossGapConstrainedClassifier(solver="ssw", tolerance=1e6,
                                       solver_params={"f_lr": 0.2}, **common)
    pen = LossGapConstrainedClassifier(
        solver="penalty", solver_params={"lr": 0.2, "penalty_weight": 0.0,
                                         "balanced_batches": False}, **common)
    for est in (sgd, ssw, pen):
        est.fit(X, y, sensitive_features=g)
    assert ssw.step_counts_ == {"objective": ssw.n_iter_, "constraint": 0}
    np.testing.assert_allclose(ssw.coef_, sgd.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(pen.coef_, sgd.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(pen.intercept_, sgd.intercept_, rtol=1e-12, atol=1e-14)


def test_constrained_ssw_step_accounting():
    """Oracle 17: objective + constraint steps = n_iter_; constraint step iff c_hat >= eps;
    eps = ctol * decay^max(0, t - start + 1), reset every epoch."""
    X, y, g = _data(n=300)
    est = LossGapConstrainedClassifier(
        **LINEAR, solver="ssw", tolerance=0.0, batch_size=16, n_epochs=3, random_state=0,
        solver_params={"ctol": 0.01, "ctol_decay": 0.9, "ctol_decay_start": 5},
    ).fit(X, y, sensitive_features=g)
    h = est.history_
    counts = est.step_counts_
    assert counts["objective"] + counts["constraint"] == est.n_iter_ == 3 * 19
    assert counts["constraint"] > 0 and counts["objective"] > 0
    c_hat = h[["c_gap[0,1]", "c_gap[1,0]"]].max(axis=1).to_numpy()
    np.testing.assert_array_equal(h["step_type"] == "constraint", c_hat >= h["ctol"])
    t = h["iter"].to_numpy() % 19
    np.testing.assert_allclose(h["ctol"], 0.01 * 0.9 ** np.maximum(t - 5 + 1, 0), rtol=1e-12)


@pytest.mark.parametrize("solver", ["ssl-alm", "alm"])
def test_constrained_alm_loose_bound_matches_logistic_regression(solver):
    """Oracle 19: delta = 1e3, feasible slacks, full batch, tau = 0.1, 5000 iterations."""
    X, y, g = _data(n=300)
    est = LossGapConstrainedClassifier(
        **LINEAR, solver=solver, tolerance=1e3, batch_size=None, constraint_batch_size=None,
        n_epochs=None, max_iter=5000, log_every=50, random_state=0,
        solver_params={"lr": 0.1, "slack_init": "feasible"},
    ).fit(X, y, sensitive_features=g)
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(X, y)
    f_ref = _bce(ref.decision_function(X), y).mean()
    f_est = _bce(est.decision_function(X), y).mean()
    assert abs(f_est - f_ref) <= 1e-4
    np.testing.assert_allclose(est.multipliers_, 0.0, atol=1e-6)
    h = est.constraint_values_ + est.slacks_
    np.testing.assert_allclose(h, 0.0, atol=1e-6)
    assert len(est.history_) == 100


def test_constrained_determinism_and_seed_dependence():
    X, y, g = _data(n=200)
    kw = dict(**LINEAR, solver="ssl-alm", n_epochs=1)
    a = LossGapConstrainedClassifier(random_state=11, **kw).fit(X, y, sensitive_features=g)
    b = LossGapConstrainedClassifier(random_state=11, **kw).fit(X, y, sensitive_features=g)
    c = LossGapConstrainedClassifier(random_state=12, **kw).fit(X, y, sensitive_features=g)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.multipliers_, b.multipliers_)
    cols = [col for col in a.history_.columns if col != "time"]
    assert a.history_[cols].equals(b.history_[cols])
    assert not np.allclose(a.coef_, c.coef_)


def test_constrained_ssl_alm_reduces_loss_gap():
    """Oracle 23 (behavioural, fixed seed): SSL-ALM ends near the bound, below SGD's gap."""
    X, y, g = _data(n=600, seed=2)
    kw = dict(hidden_layer_sizes=(), n_epochs=20, random_state=0)
    sgd = LossGapConstrainedClassifier(solver="sgd", solver_params={"lr": 0.05}, **kw)
    alm = LossGapConstrainedClassifier(solver="ssl-alm", tolerance=0.005, **kw)
    gaps = {}
    for name, est in (("sgd", sgd), ("alm", alm)):
        est.fit(X, y, sensitive_features=g)
        gaps[name] = abs(est.loss_gaps_[0, 1])
    assert gaps["sgd"] > 0.05
    assert gaps["alm"] <= 0.005 + 0.01
    assert gaps["alm"] < gaps["sgd"]


def test_constrained_constraint_draw_option():
    from fairest.constrained._loss_gap import resolve_solver_params

    for solver in ("ssl-alm", "alm", "ssw"):
        for preset in ("paper", "release"):  # the paper's estimators are the default
            params = resolve_solver_params(solver, preset, None)
            assert params["constraint_draw"] == "independent"
    assert resolve_solver_params("ssl-alm", "paper",
                                 {"constraint_draw": "shared"})["constraint_draw"] == "shared"
    X, y, g = _data(n=200)
    kw = dict(**LINEAR, solver="ssl-alm", n_epochs=1, random_state=3)
    with pytest.raises(ValueError, match="constraint_draw"):
        LossGapConstrainedClassifier(**kw, solver_params={"constraint_draw": "same"}).fit(
            X, y, sensitive_features=g)
    a = LossGapConstrainedClassifier(**kw, solver_params={"constraint_draw": "shared"})
    b = LossGapConstrainedClassifier(**kw)
    a.fit(X, y, sensitive_features=g)
    b.fit(X, y, sensitive_features=g)
    assert not np.allclose(a.coef_, b.coef_)
    per_iter = np.diff(a.history_["n_samples"].to_numpy())
    assert np.all(per_iter == 8 + 2 * 8)  # objective batch + one draw of 8 rows per group
    ssw = LossGapConstrainedClassifier(**{**kw, "solver": "ssw"}, tolerance=0.0,
                                       solver_params={"constraint_draw": "shared"})
    h = ssw.fit(X, y, sensitive_features=g).history_
    rows = np.diff(np.concatenate([[0], h["n_samples"].to_numpy()]))
    expected = np.where(h["step_type"] == "constraint", 2 * 8, 16 + 2 * 8)
    np.testing.assert_array_equal(rows, expected)  # one constraint draw per iteration
