"""No fit returns a non-finite model: the all-pairs constraints of many groups (SSL-ALM /
ALM run on the equivalent constraints ``sqrt(2 / G) C <= 0``), and the divergence guard of
every solver (refits with halved step sizes, then a clear ``ValueError``)."""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest
from _constrained_helpers import FULL_BATCH, assert_same_layers
from sklearn.exceptions import ConvergenceWarning

from fairest._solvers import _guard
from fairest.constrained import LossGapConstrainedClassifier, PrunedFairClassifier
from fairest.constrained._engine import (
    GenericProblem,
    guard_block,
    run_solver,
    spawn_rngs,
    weighted_mean,
)
from fairest.constrained._loss_gap import constraint_matrix

PRUNED_FAST = dict(
    hidden_layer_sizes=(8,),
    dense_n_epochs=30,
    n_epochs=4,
    pruning_epochs=2,
    target_sparsity=0.5,
    batch_size=16,
    learning_rate=0.05,
    dense_learning_rate=0.05,
    random_state=0,
)

# the divergence guard's mechanics on small data, whose fits miss the tolerance (or predict
# one class) and warn; the warnings themselves: test_constrained_defaults.py
pytestmark = pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")


def _data(n_per=60, n_groups=2, p=3, seed=0):
    rng = np.random.default_rng(seed)
    n = n_per * n_groups
    X = rng.normal(size=(n, p))
    groups = np.arange(n) % n_groups
    y = ((X[:, 0] + 0.5 * groups + 0.5 * rng.normal(size=n)) > 0.25).astype(int)
    for g in range(n_groups):  # both classes in every group
        rows = np.flatnonzero(groups == g)
        y[rows[0]], y[rows[1]] = 0, 1
    return X, y, groups


def _finite(est, X):
    leaves = [a for layer in est.params_ for a in layer]
    return all(np.all(np.isfinite(a)) for a in leaves) and np.all(
        np.isfinite(est.decision_function(X))
    )


def _assert_clear(error, *words):
    message = str(error)
    assert len(message) < 500, message
    assert "scale" in message.lower(), message
    for word in words:
        assert word in message, message


# ------------------------------------------------------------------------------------------
# many groups: the root cause (all-pairs augmented Lagrangian grows faster than G)
# ------------------------------------------------------------------------------------------


def test_all_pairs_matrix_has_the_two_group_norm_after_scaling():
    """``A^T A`` is twice the Laplacian of the complete graph (norm 2G, 4G for equalized
    odds); scaled by ``sqrt(2 / G)`` its norm is the two-group value at every G."""
    for metric, two in (("loss_parity", 4.0), ("loss_equalized_odds", 8.0)):
        for G in (2, 3, 10, 40):
            A, _ = constraint_matrix(metric, "all", np.arange(G), G)
            norm = np.linalg.norm(A, 2) ** 2
            np.testing.assert_allclose(norm, two * G / 2)
            np.testing.assert_allclose(norm * (2.0 / G), two)
        A, _ = constraint_matrix(metric, "vs_mean", np.arange(40), 40)
        assert np.linalg.norm(A, 2) ** 2 <= two + 1e-9  # vs_mean does not grow with G


@pytest.mark.parametrize("solver", ["ssl-alm", "alm"])
def test_loss_gap_100_groups_all_pairs_default_fit_is_finite(solver):
    """100 groups of 12 rows, 5 features, defaults (MLP (64, 32)): NaN parameters before
    the constraints were scaled; now finite without any refit."""
    X, y, g = _data(n_per=12, n_groups=100, p=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # no refit needed
        est = LossGapConstrainedClassifier(solver=solver, random_state=0).fit(
            X, y, sensitive_features=g
        )
    assert _finite(est, X)
    assert est.step_size_factor_ == 1.0
    assert est.constraint_scale_ == pytest.approx(np.sqrt(2 / 100))
    assert len(est.constraint_names_) == 100 * 99
    assert np.all(np.isfinite(est.multipliers_)) and np.all(np.isfinite(est.slacks_))
    assert np.all(np.isfinite(est.constraint_values_))


def test_loss_gap_1200_rows_100_groups_cheap_settings_finite():
    """The setting of tests/reliability (linear model, learning_rate 0.1, 20 epochs)."""
    X, y, g = _data(n_per=12, n_groups=100)
    est = LossGapConstrainedClassifier(
        hidden_layer_sizes=(), n_epochs=20, random_state=0, solver_params={"learning_rate": 0.1}
    )
    est.fit(X, y, sensitive_features=g)
    assert _finite(est, X) and est.step_size_factor_ == 1.0


def test_two_groups_and_other_solvers_run_unscaled():
    X, y, g = _data(n_groups=3)
    for solver, pairs, G in (
        ("ssl-alm", "all", 2),
        ("ssl-alm", "vs_mean", 3),
        ("ssw", "all", 3),
        ("sgd", "all", 3),
    ):
        groups = g if G == 3 else g % 2
        est = LossGapConstrainedClassifier(
            hidden_layer_sizes=(), solver=solver, n_epochs=1, constraint_pairs=pairs, random_state=0
        )
        est.fit(X, y, sensitive_features=groups)
        assert est.constraint_scale_ == 1.0


def test_scaled_run_reports_multipliers_slacks_and_history_in_units_of_c():
    """Three groups: the solver runs on ``a C``; the history is in the units of ``C``: the
    full-data constraint values recorded at the last iteration equal ``constraint_values_``
    and its multipliers equal ``multipliers_`` (no final full step)."""
    X, y, g = _data(n_groups=3)
    kw = dict(
        hidden_layer_sizes=(),
        dtype="float64",
        n_epochs=2,
        random_state=0,
        solver_params={"final_full_step": False},
        preset="paper",  # the solver's own end point: no final feasibility phase
    )
    est = LossGapConstrainedClassifier(record_history=True, **kw)
    est.fit(X, y, sensitive_features=g)
    a = np.sqrt(2 / 3)
    assert est.constraint_scale_ == pytest.approx(a)
    n = est.n_iter_
    est_eval = LossGapConstrainedClassifier(record_history=True, eval_every=n, **kw)
    est_eval.fit(X, y, sensitive_features=g)
    last = {k: v[-1] for k, v in est_eval.history_.items()}
    full_c = np.array([last["full_c_" + name] for name in est_eval.constraint_names_])
    np.testing.assert_allclose(full_c, est_eval.constraint_values_, rtol=1e-10, atol=1e-12)
    lam = np.array([last["lambda_" + name] for name in est_eval.constraint_names_])
    slack = np.array([last["slack_" + name] for name in est_eval.constraint_names_])
    np.testing.assert_allclose(lam, est_eval.multipliers_, rtol=1e-12)
    assert np.all(slack >= 0) and np.all(np.isfinite(slack))


# ------------------------------------------------------------------------------------------
# divergence guard: huge feature scale, huge step
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("solver", ["ssl-alm", "alm", "ssw", "sgd", "penalty"])
def test_loss_gap_huge_feature_scale_is_finite_or_a_clear_error(solver):
    X, y, g = _data()
    X[:, 2] *= 1e10
    est = LossGapConstrainedClassifier(
        hidden_layer_sizes=(),
        solver=solver,
        n_epochs=20,
        solver_params={"learning_rate": 0.1},
        random_state=0,
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X, y, sensitive_features=g)
    except ValueError as error:
        _assert_clear(error, "non-finite", "learning_rate")
        assert not hasattr(est, "params_")  # nothing stored
    else:
        assert _finite(est, X)


def test_loss_gap_default_solver_huge_feature_scale_raises():
    X, y, g = _data()
    X[:, 2] *= 1e10
    est = LossGapConstrainedClassifier(
        hidden_layer_sizes=(), n_epochs=20, random_state=0, solver_params={"learning_rate": 0.1}
    )
    with pytest.raises(ValueError) as error:
        est.fit(X, y, sensitive_features=g)
    _assert_clear(error.value, "StandardScaler", "iteration", "e+10")


@pytest.mark.parametrize("solver", ["ssl-alm", "alm", "ssw", "sgd", "penalty"])
def test_loss_gap_huge_step_is_finite_or_a_clear_error(solver):
    X, y, g = _data()
    est = LossGapConstrainedClassifier(
        hidden_layer_sizes=(4,),
        solver=solver,
        n_epochs=2,
        solver_params={"learning_rate": 1e6},
        random_state=0,
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X, y, sensitive_features=g)
    except ValueError as error:
        _assert_clear(error, "non-finite", "learning_rate")
    else:
        assert _finite(est, X)


def test_loss_gap_huge_step_ssl_alm_raises_after_the_refits():
    X, y, g = _data()
    est = LossGapConstrainedClassifier(
        hidden_layer_sizes=(), n_epochs=2, random_state=0, solver_params={"learning_rate": 1e6}
    )
    with pytest.raises(ValueError) as error:
        est.fit(X, y, sensitive_features=g)
    _assert_clear(
        error.value,
        f"{_guard.NONFINITE_RETRIES} refits",
        'solver_params["learning_rate"]',
        'solver_params["dual_learning_rate"]',
    )


def test_loss_gap_large_step_recovers_with_halved_steps():
    """learning_rate=20 diverges; a refit with smaller steps from the same initialisation
    and streams is finite and equals a fit with those step sizes."""
    X, y, g = _data()
    kw = dict(hidden_layer_sizes=(), n_epochs=2, random_state=0, preset="paper")
    with pytest.warns(ConvergenceWarning, match="non-finite"):
        est = LossGapConstrainedClassifier(solver_params={"learning_rate": 20.0}, **kw).fit(
            X, y, sensitive_features=g
        )
    assert _finite(est, X)
    factor = est.step_size_factor_
    assert factor in (0.5, 0.25)
    direct = LossGapConstrainedClassifier(
        solver_params={"learning_rate": 20.0 * factor, "dual_learning_rate": 0.05 * factor}, **kw
    ).fit(X, y, sensitive_features=g)
    assert direct.step_size_factor_ == 1.0
    assert_same_layers(est.params_, direct.params_)


def test_run_solver_reports_the_first_non_finite_iteration():
    """Full-batch gradient descent on a quadratic with a step far beyond 2 / L: the scan
    flags the check (every few iterations) after the iteration whose iterate overflows
    float32 in a host loop."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = X @ np.array([1.0, -2.0, 0.5])

    def mse(x, batch, aux):
        return 0.5 * weighted_mean((batch.X @ x - batch.y) ** 2, batch.w)

    def no_constraint(x, batch, aux):
        return jnp.zeros(0)

    lr = 1e3
    x = np.zeros(3, np.float32)
    Xf, yf = X.astype(np.float32), y.astype(np.float32)
    first = None
    with np.errstate(all="ignore"):
        for k in range(200):
            x = (x - np.float32(lr) * (Xf.T @ (Xf @ x - yf) / np.float32(50))).astype(np.float32)
            if not np.all(np.isfinite(x)):
                first = k
                break
    assert first is not None
    cells = np.zeros(50, np.int32)

    def gradient_descent(learning_rate):
        return run_solver(
            "sgd",
            GenericProblem(mse, no_constraint, m=0),
            X,
            y,
            cells,
            cells,
            np.zeros(3),
            hyper={"learning_rate": learning_rate},
            **FULL_BATCH,
            max_iter=200,
            rngs=spawn_rngs(0),
            record_history=False,
            dtype=jnp.float32,
        )

    res = gradient_descent(lr)
    # checked every guard_block(256) iterations: reported is the last of first's block
    block = guard_block(256)
    assert block == _guard.NONFINITE_CHECK_EVERY
    assert res.extras["nonfinite_iter"] == (first // block + 1) * block - 1
    ok = gradient_descent(0.1)
    assert ok.extras["nonfinite_iter"] is None and np.all(np.isfinite(ok.x))


# ------------------------------------------------------------------------------------------
# PrunedFairClassifier
# ------------------------------------------------------------------------------------------


def test_pruned_huge_feature_scale_raises_clearly():
    X, y, g = _data()
    X[:, 2] *= 1e10
    est = PrunedFairClassifier(**PRUNED_FAST)
    with pytest.raises(ValueError) as error:
        est.fit(X, y, sensitive_features=g)
    _assert_clear(error.value, "dense pre-training", "dense_learning_rate", "StandardScaler")
    assert not hasattr(est, "params_")


def test_pruned_huge_fine_tuning_step_raises_clearly():
    X, y, g = _data()
    est = PrunedFairClassifier(**{**PRUNED_FAST, "learning_rate": 1e6})
    with pytest.raises(ValueError) as error:
        est.fit(X, y, sensitive_features=g)
    _assert_clear(error.value, "fine-tuning", "learning_rate / dual_learning_rate")


def test_pruned_large_dense_step_recovers_with_halved_steps():
    X, y, g = _data()
    with pytest.warns(ConvergenceWarning, match="dense pre-training"):
        est = PrunedFairClassifier(**{**PRUNED_FAST, "dense_learning_rate": 50.0}).fit(
            X, y, sensitive_features=g
        )
    assert _finite(est, X)
    assert est.dense_step_size_factor_ in (0.5, 0.25) and est.step_size_factor_ == 1.0
    assert all(np.all(np.isfinite(a)) for layer in est.dense_params_ for a in layer)
    direct = PrunedFairClassifier(
        **{**PRUNED_FAST, "dense_learning_rate": 50.0 * est.dense_step_size_factor_}
    ).fit(X, y, sensitive_features=g)
    assert_same_layers(est.params_, direct.params_)


def test_pruned_refuses_a_non_finite_dense_model():
    X, y, g = _data()
    dense = PrunedFairClassifier(**PRUNED_FAST).fit(X, y, sensitive_features=g)
    assert dense.dense_step_size_factor_ == 1.0 and dense.step_size_factor_ == 1.0
    W = dense.params_[0][0].copy()
    W[0, 0] = np.nan
    dense.params_ = [(W, dense.params_[0][1])] + dense.params_[1:]
    with pytest.raises(ValueError, match="non-finite"):
        PrunedFairClassifier(**{**PRUNED_FAST, "dense_model": dense}).fit(
            X, y, sensitive_features=g
        )
