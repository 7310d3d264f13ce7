"""Spec oracles of constrained.md section 5 not covered by the other constrained tests.

Oracles 4, 7, 8, 9, 10 (dual estimate / balanced and weighted overall), 2 and 25 for
``PrunedFairClassifier``, 12 (biases never masked) and the MLMC clause of oracle 21.

The proxy-GDA references are hand-rolled NumPy loops over a linear (logistic) model: the
per-sample BCE gradient ``(sigmoid(z) - y) [x, 1]`` is a closed form, the excess-accuracy
estimate uses ``collections.deque`` replay buffers, and the primal gradient is the weighted
ERM gradient of spec 2.3 (``w_i = 1/|B| + lambda_g/b_g - Lambda/|B|``), i.e. none of them
reuses the engine's JAX code. Only the objective batch order is taken from the engine's
``EpochSampler`` (itself checked by oracle 1).
"""

import math
from collections import deque

import jax.numpy as jnp
import numpy as np
import pytest
from _constrained_helpers import DenseModel, assert_same_layers, bce, mse

from fairest.constrained import PrunedFairClassifier
from fairest.constrained._engine import (
    MLP,
    EpochSampler,
    GenericProblem,
    _ghost_solver,
    group_means,
    run_solver,
    spawn_rngs,
)
from fairest.constrained._pruned_epoch import PrunedConfig, epoch_chunk, initial_state

# oracles of the solvers' mechanics on small data, whose fits often miss the tolerance and
# warn; the warnings themselves: tests/constrained/test_constrained_defaults.py
pytestmark = pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _data(n=90, p=4, seed=0):
    """Three groups of very different sizes (the smallest is often absent from a batch)."""
    rng = np.random.default_rng(seed)
    sizes = [n - n // 4 - n // 9, n // 4, n // 9]
    g = np.repeat([0, 1, 2], sizes)[rng.permutation(n)]
    X = rng.normal(size=(n, p)) + 0.7 * (g == 2)[:, None]
    score = X @ np.array([1.0, -0.7, 0.4, 0.2]) - 0.8 * (g == 1)
    y = (score + 0.8 * rng.normal(size=n) > 0).astype(int)
    return X, y, g


# ------------------------------------------------------------------------------------------
# oracles 8, 9, 10, 4 (and 6 / 12): the whole constrained phase against a NumPy loop
# ------------------------------------------------------------------------------------------

VARIANTS = {
    "ceag-rb-balanced": dict(
        metric="excess_accuracy_gap", use_buffer=True, buffer_overall="balanced"
    ),
    "ceag-rb-weighted": dict(
        metric="excess_accuracy_gap", use_buffer=True, buffer_overall="weighted"
    ),
    "ceag-no-rb": dict(metric="excess_accuracy_gap", use_buffer=False),
    "excess-loss-rb": dict(metric="excess_loss_gap", use_buffer=True),
    "el-free-rb": dict(metric="loss_parity", use_buffer=True, absolute_gaps=False),
    "el-abs-no-rb": dict(metric="loss_parity", use_buffer=False, absolute_gaps=True),
}

COMMON = dict(
    hidden_layer_sizes=(),
    target_sparsity=0.5,
    initial_sparsity=0.0,
    pruning_epochs=1,
    n_epochs=4,
    batch_size=8,
    learning_rate=0.2,
    momentum=0.9,
    alpha=1e-3,
    learning_rate_milestones=(0.75,),
    learning_rate_decay=0.1,
    tolerance=0.02,
    dual_learning_rate=0.5,
    buffer_size=5,
    dtype="float64",
    random_state=3,
    record_history=True,
)


def _reference(X, y, g, W0, b0, kw, *, primal_first=False):
    """Hand-rolled proxy-GDA (spec 2.3-2.7) for a logistic model; returns x and per-step logs."""
    n, p = X.shape
    G = int(g.max()) + 1
    metric, use_buffer = kw["metric"], kw["use_buffer"]
    absolute_gaps = kw.get("absolute_gaps", True)
    weighted = kw.get("buffer_overall", "balanced") == "weighted"
    k, eta, eps, mu, wd = (
        kw["buffer_size"],
        kw["dual_learning_rate"],
        kw["tolerance"],
        kw["momentum"],
        kw["alpha"],
    )
    Xt = np.hstack([X, np.ones((n, 1))])  # flat order: W then b
    pi = np.bincount(g, minlength=G) / n

    # reference statistics of the dense model (spec 2.6 step 2)
    x_dense = np.r_[W0[:, 0], b0]
    z_d = Xt @ x_dense
    corr_d, loss_d = ((z_d > 0) == (y == 1)).astype(float), bce(z_d, y)
    Ad, Ld = corr_d.mean(), loss_d.mean()
    Ad_g = np.array([corr_d[g == c].mean() for c in range(G)])
    Ld_g = np.array([loss_d[g == c].mean() for c in range(G)])

    x, v, lam = x_dense.copy(), np.zeros(p + 1), np.zeros(G)
    mask = np.ones(p + 1)
    bufs = [deque(maxlen=k) for _ in range(G)]
    sampler = EpochSampler(n, kw["batch_size"], spawn_rngs(kw["random_state"])[1])
    logs = {"lam": [], "psi_hat": [], "absent": []}
    for epoch in range(kw["n_epochs"]):
        if epoch <= kw["pruning_epochs"]:  # GMP event at the start of the epoch (cubic)
            t, T = epoch, kw["pruning_epochs"]
            s = (
                kw["target_sparsity"]
                if t >= T
                else (
                    kw["target_sparsity"]
                    + (kw["initial_sparsity"] - kw["target_sparsity"]) * (1 - t / T) ** 3
                )
            )
            n_zero = math.ceil(s * p - 1e-9)
            active = mask[:p] * np.abs(x[:p])
            order = np.argsort(active, kind="stable")
            mask[:p][order[:n_zero]] = 0.0  # bias (last entry) is never pruned
            x = x * mask
        constrained = epoch >= kw["pruning_epochs"]
        lr = kw["learning_rate"] * kw["learning_rate_decay"] ** sum(
            epoch >= int(f * kw["n_epochs"]) for f in kw["learning_rate_milestones"]
        )
        idx, w = sampler.epoch()
        for rows, wt in zip(idx, w):
            rows = rows[wt > 0]
            B, gb, yb, Xb = rows.size, g[rows], y[rows], Xt[rows]
            z = Xb @ x
            corr, loss = ((z > 0) == (yb == 1)).astype(float), bce(z, yb)
            present = np.array([np.any(gb == c) for c in range(G)])
            b_g = np.array([np.sum(gb == c) for c in range(G)])
            stat_src = corr if metric == "excess_accuracy_gap" else loss
            if constrained and use_buffer:
                for val, gi in zip(stat_src, gb):
                    bufs[gi].append(val)
            if use_buffer:
                eligible = np.array([len(bb) == k for bb in bufs]) & constrained
                stat = np.array([np.mean(bb) if len(bb) == k else 0.0 for bb in bufs])
                if not eligible.any():
                    overall = 0.0
                elif weighted and metric != "loss_parity":
                    overall = np.sum(pi[eligible] * stat[eligible]) / np.sum(pi[eligible])
                else:
                    overall = stat[eligible].mean()
            else:
                eligible = present & constrained
                stat = np.array([stat_src[gb == c].mean() if present[c] else 0.0 for c in range(G)])
                overall = stat_src.mean()
            if metric == "excess_accuracy_gap":
                est = (Ad_g - stat) - (Ad - overall)
            elif metric == "excess_loss_gap":
                est = (stat - Ld_g) - (overall - Ld)
            else:
                est = stat - overall
                est = np.abs(est) if absolute_gaps else est
            est = np.where(eligible, est, 0.0)
            lam_old = lam.copy()
            new = lam + eta * (est - (0.0 if metric == "loss_parity" else eps))
            if metric != "loss_parity":
                new = np.maximum(new, 0.0)
            lam = np.where(eligible, new, lam)
            lam_primal = lam_old if primal_first else lam

            # spec 2.3 closed form: w_i = 1/|B| + s_g lam_g / b_g - sum_h s_h lam_h / |B|
            sign = np.ones(G)
            if metric == "loss_parity" and absolute_gaps:
                L_g = np.array([loss[gb == c].mean() if present[c] else 0.0 for c in range(G)])
                sign = np.sign(L_g - loss.mean())
            coef = np.where(present, sign * lam_primal, 0.0) if constrained else np.zeros(G)
            w_i = 1.0 / B + coef[gb] / np.maximum(b_g[gb], 1) - coef.sum() / B
            grad = mask * (Xb.T @ (w_i * (_sigmoid(z) - yb)) + wd * x)
            v = mu * v + grad
            x = (x - lr * v) * mask
            logs["lam"].append(lam.copy())
            logs["psi_hat"].append(est.copy())
            logs["absent"].append(~present)
    return x, mask, {key: np.array(val) for key, val in logs.items()}


@pytest.fixture(scope="module")
def problem():
    X, y, g = _data()
    rng = np.random.default_rng(11)
    W0 = rng.normal(size=(X.shape[1], 1))
    b0 = rng.normal(size=1) * 0.3
    return X, y, g, W0, b0


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_constrained_proxy_gda_matches_hand_rolled_loop(problem, variant):
    """Oracles 8 (dual first, primal with the updated lambda), 9 (weighted-gradient
    identity), 10 (buffer-based dual estimates, balanced/weighted overall, < k items -> no
    update), 6 (CEAG lambda >= 0), 12 (bias never masked, masked weights stay 0)."""
    X, y, g, W0, b0 = problem
    kw = {**COMMON, **VARIANTS[variant]}
    est = PrunedFairClassifier(dense_model=DenseModel([(W0, b0)]), **kw).fit(
        X, y, sensitive_features=g
    )
    x_ref, mask_ref, logs = _reference(X, y, g, W0, b0, kw)

    lam = np.column_stack([est.history_[f"lambda_g{c}"] for c in range(3)])
    psi = np.column_stack([est.history_[f"psi_hat_g{c}"] for c in range(3)])
    assert lam.shape == logs["lam"].shape  # record_history=True: one row per iteration
    np.testing.assert_allclose(psi, logs["psi_hat"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lam, logs["lam"], rtol=1e-10, atol=1e-12)
    W, b = est.params_[0]
    np.testing.assert_allclose(np.r_[W[:, 0], b], x_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(est.masks_[0][:, 0], mask_ref[:-1])
    assert np.all(W[est.masks_[0] == 0] == 0.0) and b[0] != 0.0
    assert lam.max() > 0  # the constraints were active: the comparison is not vacuous
    if VARIANTS[variant]["metric"] != "loss_parity":
        assert np.all(lam >= 0.0)
    # update order matters here: the primal-first loop is measurably different
    x_wrong, _, _ = _reference(X, y, g, W0, b0, kw, primal_first=True)
    assert np.max(np.abs(x_wrong - x_ref)) > 1e-6


def test_constrained_absent_group_untouched_without_buffers(problem):
    """Oracle 4 (no-buffer mode): an absent group has present_g = False, its lambda is
    unchanged by that iteration and it adds nothing to the primal term."""
    X, y, g, W0, b0 = problem
    kw = {**COMMON, **VARIANTS["ceag-no-rb"]}
    est = PrunedFairClassifier(dense_model=DenseModel([(W0, b0)]), **kw).fit(
        X, y, sensitive_features=g
    )
    lam = np.column_stack([est.history_[f"lambda_g{c}"] for c in range(3)])
    psi = np.column_stack([est.history_[f"psi_hat_g{c}"] for c in range(3)])
    _, _, logs = _reference(X, y, g, W0, b0, kw)
    absent = logs["absent"]
    prev = np.vstack([np.zeros((1, 3)), lam[:-1]])
    # the situation occurs with a positive multiplier (so "unchanged" is informative)
    assert np.any(absent & (prev > 0))
    np.testing.assert_array_equal(lam[absent], prev[absent])
    np.testing.assert_array_equal(psi[absent], 0.0)
    # present_g straight from the kernel
    values = jnp.asarray([1.0, 2.0, 3.0, 4.0])
    means, counts, present = group_means(
        values, jnp.asarray([0, 0, 1, 2]), jnp.asarray([1.0, 1.0, 1.0, 0.0]), 3
    )
    np.testing.assert_array_equal(present, [True, True, False])
    np.testing.assert_array_equal(means, [1.5, 3.0, 0.0])


# ------------------------------------------------------------------------------------------
# oracle 7: the dual player sees true values, the surrogate only enters the primal step
# ------------------------------------------------------------------------------------------


def _epoch_fn(
    model, num_groups, metric, use_buffer, balanced, absolute_gaps, dual_opt, nesterov, record=True
):
    """One epoch as ``epoch(state, data, ref, hyper, flags, inputs) -> (state, log)``
    (``data`` holding the flat ``mask``, ``flags`` the ``constrained`` switch, ``inputs``
    the steps' ``idx``, ``w``, ``learning_rate`` and ``active`` flags): the driver's chunk
    of :func:`epoch_chunk` with the divergence flag in ``state.bad``, for direct calls."""
    config = PrunedConfig(
        model, num_groups, metric, use_buffer, balanced, absolute_gaps, dual_opt, nesterov
    )
    chunk = epoch_chunk(config, record)

    def epoch(state, data, ref, hyper, flags, inputs):
        rows = {key: value for key, value in data.items() if key != "mask"}
        aux = {**ref, "mask": data["mask"], "constrained": flags["constrained"]}
        steps = jnp.arange(inputs["active"].shape[0], dtype=jnp.int32)
        inputs = {**inputs, "it": state.it + steps}
        (state, bad), log = chunk((state, state.bad), rows, aux, hyper, inputs)
        return state._replace(bad=bad), (log if record else None)

    return epoch


def _direct_step_setup(X, y, g, lr):
    model = MLP(X.shape[1], (), 1)
    G = 3
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.normal(size=X.shape[1] + 1))
    state = initial_state(x, G, 40, "sgd")
    data = {
        "X": jnp.asarray(X),
        "y": jnp.asarray(y),
        "groups": jnp.asarray(g),
        "mask": jnp.ones_like(x),
    }
    T, n = 6, X.shape[0]
    inputs = {
        "idx": jnp.tile(jnp.arange(n, dtype=jnp.int32), (T, 1)),
        "w": jnp.ones((T, n)),
        "learning_rate": jnp.full(T, lr),
        "active": jnp.ones(T, dtype=bool),
    }
    fn = _epoch_fn(model, G, "excess_accuracy_gap", False, True, True, "sgd", False)
    return fn, state, data, inputs, np.asarray(x)


def test_constrained_dual_uses_true_values_not_the_surrogate(problem, x64):
    """Oracle 7: a huge surrogate with true psi_hat - eps < 0 keeps lambda = 0; with the
    primal frozen (surrogate has no effect) lambda_g grows by exactly eta * v per step."""
    X, y, g, _, _ = problem
    # (a) surrogate (L_g - Ld_g) - (L_B - Ld) ~ 1e6 while the true estimate is negative
    fn, state, data, inputs, x0 = _direct_step_setup(X, y, g, lr=0.3)
    hyper = {
        "momentum": jnp.asarray(0.9),
        "alpha": jnp.asarray(0.0),
        "dual_learning_rate": jnp.asarray(0.5),
    }
    flags = {"constrained": jnp.asarray(True)}
    ref = {
        "acc": jnp.asarray(0.8),
        "acc_g": jnp.asarray([0.8, 0.7, 0.9]),
        "loss": jnp.asarray(0.0),
        "loss_g": jnp.full(3, -1e6),
        "pi": jnp.asarray(np.bincount(g) / len(g)),
    }
    _, probe = fn(state, data, ref, {**hyper, "tolerance": jnp.asarray(10.0)}, flags, inputs)
    psi = np.asarray(probe["psi_hat"])
    assert np.all(np.asarray(probe["lam"]) == 0.0)
    eps_ok = float(psi.max()) + 1e-3  # lambda = 0 => trajectory independent of eps
    _, log = fn(state, data, ref, {**hyper, "tolerance": jnp.asarray(eps_ok)}, flags, inputs)
    assert np.all(np.asarray(log["lam"]) == 0.0)
    np.testing.assert_array_equal(log["psi_hat"], psi)
    # the same run with eps just below the largest estimate does move lambda (power)
    eps_bad = float(psi.max()) - 1e-3
    _, log = fn(state, data, ref, {**hyper, "tolerance": jnp.asarray(eps_bad)}, flags, inputs)
    assert np.asarray(log["lam"]).max() > 0

    # (b) primal frozen (lr = 0), surrogate exactly 0 at x: lambda_g = t * eta * v_g
    fn, state, data, inputs, x0 = _direct_step_setup(X, y, g, lr=0.0)
    z = X @ x0[:-1] + x0[-1]
    corr, loss = ((z > 0) == (y == 1)).astype(float), bce(z, y)
    A_g = np.array([corr[g == c].mean() for c in range(3)])
    Ad_g = A_g + np.array([0.10, -0.05, 0.02])
    Ad = corr.mean() + 0.01
    v = (Ad_g - A_g) - (Ad - corr.mean()) - 0.02
    ref = {
        "acc": jnp.asarray(Ad),
        "acc_g": jnp.asarray(Ad_g),
        "loss": jnp.asarray(loss.mean()),
        "loss_g": jnp.asarray([loss[g == c].mean() for c in range(3)]),
        "pi": jnp.asarray(np.bincount(g) / len(g)),
    }
    _, log = fn(state, data, ref, {**hyper, "tolerance": jnp.asarray(0.02)}, flags, inputs)
    t = np.arange(1, 7)[:, None]
    expected = np.where(v > 0, t * 0.5 * v, 0.0)
    assert (v > 0).any() and (v < 0).any()
    np.testing.assert_allclose(log["lam"], expected, rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------------------------------------
# oracles 2 and 25 for PrunedFairClassifier
# ------------------------------------------------------------------------------------------


def test_constrained_pruned_determinism_and_history_length():
    X, y, g = _data(n=200, seed=4)
    kw = dict(
        hidden_layer_sizes=(8,),
        dense_n_epochs=3,
        n_epochs=4,
        pruning_epochs=2,
        target_sparsity=0.6,
        batch_size=32,
        buffer_size=5,
        record_history=3,
    )
    a = PrunedFairClassifier(random_state=7, **kw).fit(X, y, sensitive_features=g)
    b = PrunedFairClassifier(random_state=7, **kw).fit(X, y, sensitive_features=g)
    c = PrunedFairClassifier(random_state=8, **kw).fit(X, y, sensitive_features=g)
    assert_same_layers(a.params_, b.params_)
    assert a.history_.keys() == b.history_.keys()
    for key in a.history_:
        np.testing.assert_array_equal(a.history_[key], b.history_[key])
    assert not np.allclose(a.params_[0][0], c.params_[0][0])
    assert a.n_iter_ == 4 * math.ceil(200 / 32)
    assert len(a.history_["iter"]) == math.ceil(a.n_iter_ / 3)


# ------------------------------------------------------------------------------------------
# oracle 21 (last clause): the MLMC combination returns d* when all four solutions are d*
# ------------------------------------------------------------------------------------------


def test_constrained_ghost_mlmc_combination_is_exact(monkeypatch, x64):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 3))
    y = rng.normal(size=64)
    cells = (np.arange(64) % 2).astype(np.int32)
    d_star = np.array([0.3, -1.7, 0.05])

    def fixed(g, c, J, **kw):
        return d_star.copy(), 0.0, False

    monkeypatch.setattr(_ghost_solver, "ghost_subproblem", fixed)

    def con(x, batch, aux):
        return jnp.array([x @ x - 1.0])

    hyper = dict(
        mlmc_probability=0.4,
        learning_rate=0.1,
        learning_rate_decay_rate=0.3,
        learning_rate_rule="dimin",
        relaxation_weight=0.5,
        relaxation_radius=0.8,
        proximal_strength=1.0,
        trust_radius=10.0,
        max_iter=25,
        sampling="mlmc",
        qp_backend="dual",
    )
    res = run_solver(
        "ghost",
        GenericProblem(mse, con, m=1, n_cells=2),
        X,
        y,
        cells,
        cells,
        np.zeros(3),
        hyper=hyper,
        aux={},
        n_epochs=None,
        rngs=spawn_rngs(1),
        dtype=jnp.float64,
    )
    # the 1/(p0 (1-p0)^N) amplification multiplies an exactly-zero correction
    assert res.history["N_geom"].max() >= 1
    gammas, gamma = [], 0.1
    for k in range(25):
        if k > 0:
            gamma = gamma * (1 - 0.3 * gamma)
        gammas.append(gamma)
    np.testing.assert_allclose(res.x, np.sum(gammas) * d_star, rtol=1e-13)


@pytest.mark.parametrize("scale", [0.01, 0.3, 3.0])
def test_constrained_ghost_single_constraint_closed_form_equals_linprog(scale):
    """Oracle 21: the m = 1 closed form t* = [c - rho ||J||_1]_+ against HiGHS, with t* > 0
    and t* = 0 both exercised."""
    from scipy.optimize import linprog

    from fairest.constrained._engine import ghost_kappa

    rng = np.random.default_rng(2)
    seen_positive = False
    for _ in range(5):
        J = scale * rng.normal(size=(1, 6))
        c = np.array([rng.uniform(0.0, 2.0)])
        kappa, t_star, d = ghost_kappa(c, J, 0.5, 0.8)
        res = linprog(
            np.r_[np.zeros(6), 1.0],
            A_ub=np.hstack([J, -np.ones((1, 1))]),
            b_ub=-c,
            bounds=[(-0.8, 0.8)] * 6 + [(0, None)],
            method="highs",
        )
        np.testing.assert_allclose(t_star, res.x[-1], atol=1e-9)
        assert c[0] + J[0] @ d <= t_star + 1e-12 and np.all(np.abs(d) <= 0.8)
        np.testing.assert_allclose(kappa, 0.5 * c[0] + 0.5 * t_star, rtol=1e-12)
        seen_positive |= t_star > 0
    assert seen_positive == (scale < 1.0)
