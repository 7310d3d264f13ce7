"""Every estimator wired to ``fairest.config_context(devices=...)`` gives the same model on
4 virtual CPU devices as on one (float64: 1e-9 relative), and its privacy accounting does
not change with the device count. The 4-device run lives in a subprocess: splitting the
CPU for the whole session would slow every other test down."""

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.multidevice

PRELUDE = textwrap.dedent(
    """
    import jax
    jax.config.update("jax_num_cpu_devices", 4)
    import numpy as np
    import fairest

    assert len(jax.devices()) == 4
    rng = np.random.default_rng(0)
    n, d = 1003, 5  # not a multiple of 4: the sharded fit pads rows
    groups = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d)) + 0.5 * groups[:, None]
    y = (X[:, 0] + 0.7 * groups + rng.normal(size=n) > 0.8).astype(int)
    weight = rng.uniform(0.5, 2.0, n)

    import sys
    import fairest.utils._devices as devices_module

    placed_on = []

    def spy(arrays, devices=None):
        placed = devices_module.place_rows(arrays, devices)
        placed_on.append(len(placed[0].sharding.device_set))
        return placed

    def both(make, weighted=True):
        fit = dict(sensitive_features=groups, sample_weight=weight if weighted else None)
        solo = make().fit(X, y, **fit)
        for module in list(sys.modules.values()):  # every family that places rows
            if getattr(module, "__name__", "").startswith("fairest.") and hasattr(module, "place_rows"):
                if module is not devices_module:
                    module.place_rows = spy
        placed_on.clear()
        with fairest.config_context(devices="all"):
            spmd = make().fit(X, y, **fit)
        assert placed_on and max(placed_on) == 4, placed_on  # the fit really was sharded
        return solo, spmd

    def same(a, b, rtol=1e-9, atol=1e-12):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)
    """
)

# partial_fit over 3 chunks (each placed on the mesh), ``calls`` passes over them; indented
# as the cases are, which it precedes
STREAMED = textwrap.indent(
    textwrap.dedent(
        """
    class Streamed:
        def __init__(self, model, calls=1):
            self.model, self.calls = model, calls

        def fit(self, X, y, *, sensitive_features, sample_weight):
            for _ in range(self.calls):
                for rows in np.array_split(np.arange(y.size), 3):
                    self.model.partial_fit(
                        X[rows], y[rows], sensitive_features=sensitive_features[rows],
                        sample_weight=sample_weight[rows], classes=[0, 1])
            return self
"""
    ),
    " " * 8,
)

CASES = {
    "group-weighted-newton": """
        from fairest import GroupWeightedClassifier
        solo, spmd = both(lambda: GroupWeightedClassifier(weights="balanced"))
        same(solo.coef_, spmd.coef_)
        same(solo.intercept_, spmd.intercept_)
    """,
    "group-weighted-regressor-minimax": """
        from fairest import GroupWeightedRegressor
        solo, spmd = both(lambda: GroupWeightedRegressor(weights="minimax"))
        same(solo.coef_, spmd.coef_)
    """,
    "badr": """
        from fairest import BADRClassifier
        solo, spmd = both(lambda: BADRClassifier(max_iter=5))
        same(solo.coef_, spmd.coef_, rtol=1e-7, atol=1e-9)
        same(solo.group_weights_, spmd.group_weights_, rtol=1e-7, atol=1e-9)
    """,
    "ermi-full-batch": """
        from fairest import ERMIClassifier
        solo, spmd = both(lambda: ERMIClassifier(solver="full-batch", fairness_weight=2.0))
        # one device solves by Newton with the exact Hessian, the mesh by L-BFGS: both stop
        # at the solver's optimality tolerance, so they agree to it, not to rounding
        same(solo.coef_, spmd.coef_, rtol=1e-5, atol=1e-7)
        same(solo.intercept_, spmd.intercept_, rtol=1e-5, atol=1e-7)
    """,
    "ermi-dp-sgda": """
        from fairest import ERMIClassifier
        make = lambda: ERMIClassifier(solver="sgda", fairness_weight=2.0, dp_epsilon=1.0,
                                      n_epochs=3, batch_size=128, random_state=0)
        solo, spmd = both(make, weighted=False)
        same(solo.coef_, spmd.coef_)
        assert solo.epsilon_spent_ == spmd.epsilon_spent_
        assert solo.sigma_theta_ == spmd.sigma_theta_
    """,
    "loss-gap-ssl-alm-minibatch": """
        from fairest import LossGapConstrainedClassifier
        make = lambda: LossGapConstrainedClassifier(hidden_layer_sizes=(4,), n_epochs=2,
                                                    batch_size=32, dtype="float64", random_state=0)
        solo, spmd = both(make)
        for (W1, b1), (W2, b2) in zip(solo.params_, spmd.params_):
            same(W1, W2)
            same(b1, b2)
        same(solo.multipliers_, spmd.multipliers_)
    """,
    "loss-gap-ssw-full-batch": """
        from fairest import LossGapConstrainedClassifier
        make = lambda: LossGapConstrainedClassifier(
            hidden_layer_sizes=(), solver="ssw", n_epochs=3, batch_size=None,
            constraint_batch_size=None, dtype="float64", random_state=0)
        solo, spmd = both(make)
        same(solo.coef_, spmd.coef_)
        assert solo.step_counts_ == spmd.step_counts_
    """,
    "loss-gap-ghost": """
        from fairest import LossGapConstrainedClassifier
        make = lambda: LossGapConstrainedClassifier(
            hidden_layer_sizes=(4,), solver="ghost", max_iter=6, dtype="float64", random_state=0)
        solo, spmd = both(make)
        for (W1, b1), (W2, b2) in zip(solo.params_, spmd.params_):
            same(W1, W2)
            same(b1, b2)
    """,
    "loss-gap-sparse-x": """
        import scipy.sparse as sp
        from fairest import LossGapConstrainedClassifier
        from fairest.constrained._defaults import CONSTRAINED_TUNING
        X = sp.csr_matrix(np.where(np.abs(X) > 0.8, X, 0.0))  # replicated entries, sharded rows
        make = lambda: LossGapConstrainedClassifier(
            hidden_layer_sizes=(4,), n_epochs=2, batch_size=32, dtype="float64", random_state=0)
        with CONSTRAINED_TUNING.override(densify_max_bytes=0):  # the sparse placement
            solo, spmd = both(make)
        same(solo.decision_function(X), spmd.decision_function(X))
    """,
    "loss-gap-partial-fit": STREAMED
    + """
        from fairest import LossGapConstrainedClassifier
        solo, spmd = both(lambda: Streamed(LossGapConstrainedClassifier(
            hidden_layer_sizes=(4,), batch_size=32, dtype="float64", random_state=0)))
        same(solo.model.decision_function(X), spmd.model.decision_function(X))
        same(solo.model.multipliers_, spmd.model.multipliers_)
    """,
    "pruned-partial-fit": STREAMED
    + """
        from fairest import PrunedFairClassifier
        solo, spmd = both(lambda: Streamed(PrunedFairClassifier(
            hidden_layer_sizes=(8,), dense_n_epochs=1, n_epochs=2, pruning_epochs=1,
            target_sparsity=0.5, batch_size=64, dtype="float64", random_state=0), calls=2))
        same(solo.model.decision_function(X), spmd.model.decision_function(X))
    """,
    "partial-fairness": """
        # The default smoothed ALM solves in float32 (fairest.partial._fast.SOLVER_DTYPE);
        # its row sums are reduced in the fixed order of fairest.partial._rows, but XLA
        # compiles its Gauss-Newton loop differently around a row-sharded reduction, which
        # moves the iterates by a float32 rounding (pDP below: equal; pSP: 4e-4 of max
        # |coef| measured), so the models are checked to 1e-3.
        from fairest import PartialParityClassifier
        solo, spmd = both(lambda: PartialParityClassifier(
            metric="partial_demographic_parity", tolerance=0.1, alpha=1e-2))
        scale = np.max(np.abs(solo.coef_))
        same(solo.coef_, spmd.coef_, rtol=0, atol=1e-3 * scale)
        same(solo.predict_proba(X), spmd.predict_proba(X), rtol=0, atol=1e-3)
        same(solo.train_unfairness_, spmd.train_unfairness_, rtol=0, atol=1e-6)
        # the round a float32 run stops at can move by that rounding too (its stopping
        # tests are at float32 resolution, fairest.partial._fast._FTOL), so n_iter_ is
        # not compared; the models above are
        assert solo.interval_ == spmd.interval_
        # The penalty baseline's default L-BFGS minimises, stage after stage, a smoothed
        # objective F_s = f0 + lam P_s in float32, and XLA sums its float32 row terms in
        # an order that depends on the device count. The bounds below follow from that:
        # * A float32 sum of m terms, in any order, is within (m - 1) u sum|terms| of the
        #   exact sum (u = 2^-24; Higham, "Accuracy and Stability of Numerical
        #   Algorithms", 2nd ed., eq. (4.4)). f0 sums n non-negative weighted losses
        #   (weights summing to 1); P_s is 2 lam / (beta - alpha) times a smooth maximum
        #   (1-Lipschitz) of group means of ramps in [0, 1] (pSP), or of differences of
        #   two such 1-Lipschitz functions of group means (pDP), each mean summing at
        #   most n_max terms. With the float32 scores' own rounding ((d + 1) u times
        #   |b| + |x| |w|, through slopes <= 1), every value either run computes is
        #   within eta of F_s.
        # * A stage ends when one step lowered the computed F_s by at most tol |F_s|
        #   (PENALTY_TOL) or its gradient is flat (PENALTY_GTOL): as computed, a run
        #   certifies its end point within tol |F_s| + 2 eta of where it converges, and
        #   both runs converge to the same point of the same problem from the same start,
        #   so their F_s (evaluated here in float64) differ by at most twice that.
        # * Near that point F_s grows at least mu / 2 |x - x*|^2 (mu the smallest
        #   eigenvalue of its Hessian at the 1-device model, when positive), so the two
        #   models, each within reach of x*, are within 2 sqrt(2 reach / mu).
        # * The exact objective is F_s plus lam (P - P_s), and P - P_s lies in an
        #   interval fixed by the last stage's smoothing (delta, tau): the ramp within
        #   delta / 4, the pDP min within delta log 2, the smooth maximum of m terms
        #   within tau log(2 m); its width is added.
        # A model fit at the default fairness_weight 0.3 instead of 1 must violate the F_s
        # bound: the check tells models of different problems apart.
        import jax.numpy as jnp
        from fairest import PartialParityPenaltyClassifier
        from fairest.partial import _defaults
        from fairest.partial._baselines import _penalised_objective
        from fairest.partial._common import build_data
        from fairest.partial._dc import Config
        lo, hi, lam = 0.1, 0.6, 1.0
        u = float(np.finfo(np.float32).eps) / 2
        delta, tau = (float(v) for v in _defaults.PENALTY_SMOOTHING[-1])
        n_max = np.bincount(groups).max()

        def point(model):
            return np.concatenate([model.intercept_, model.coef_.ravel(), model.thresholds_])

        def F_s(model):  # the last stage's smoothed objective, in float64
            with jax.enable_x64(True):
                return float(smoothed(jnp.asarray(point(model))))

        for metric in ("partial_statistical_parity", "partial_demographic_parity"):
            make = lambda fairness=lam: PartialParityPenaltyClassifier(
                metric=metric, interval=(lo, hi), fairness_weight=fairness)
            solo, spmd = both(make)
            G, J = len(solo.groups_), solo.grid_.size
            statistical = metric == "partial_statistical_parity"
            cfg = Config("statistical" if statistical else "demographic", "ramp", "minimal",
                         G, d, J)
            with jax.enable_x64(True):
                data = build_data(X, y.astype(float), groups, weight, G, grid=solo.grid_,
                                  slack=0.0, lo=lo, hi=hi, threshold=0.0, alpha=0.0, mu=0.0,
                                  rho=0.0, width=1.0)
                smoothed = lambda x: _penalised_objective(x, data, cfg, lam, (delta, tau))
                hessian = jax.jacrev(jax.grad(smoothed))(jnp.asarray(point(solo)))
                mu = np.linalg.eigvalsh(np.asarray(hessian))[0]
            scores = np.abs(solo.intercept_[0]) + np.abs(X) @ np.abs(solo.coef_.ravel())
            penalty_slope = 2 * lam / (hi - lo)
            eta = u * ((n - 1) * solo.objective_ + penalty_slope * (n_max - 1)
                       + (d + 1) * scores.max() * (1 + penalty_slope))
            reach = _defaults.PENALTY_TOL * abs(F_s(solo)) + 2 * eta
            same(F_s(solo), F_s(spmd), rtol=0, atol=2 * reach)
            if mu > 0:
                distance = np.linalg.norm(point(solo) - point(spmd))
                assert distance <= 2 * np.sqrt(2 * reach / mu), (distance, reach, mu)
            if statistical:
                gap = 2 / (hi - lo) * (delta / 2 + tau * np.log(2 * G * J))
            else:
                gap = (4 * (delta / 4 + delta * np.log(2)) + tau * np.log(2 * G * G)) / (hi - lo)
            same(solo.objective_ + solo.penalty_, spmd.objective_ + spmd.penalty_,
                 rtol=0, atol=2 * reach + lam * gap)
            other = make(0.3).fit(X, y, sensitive_features=groups, sample_weight=weight)
            assert abs(F_s(other) - F_s(solo)) > 2 * reach, (F_s(other), F_s(solo), reach)
    """,
    "partial-fairness-idca": """
        # IDCA (SSG inner solves), direct SSG and the penalty's subgradient descent run in
        # float64 with every row sum in the fixed order of fairest.partial._rows: the
        # same iterates, ties (most violated constraint, feasibility, ramp kinks, the
        # penalty's argmax) broken alike, so the same model (1e-9 relative).
        import scipy.sparse as sp
        from fairest import PartialParityClassifier, PartialParityPenaltyClassifier
        def same_model(solo, spmd):
            same(solo.coef_, spmd.coef_)
            same(solo.intercept_, spmd.intercept_)
            same(solo.thresholds_, spmd.thresholds_)
            assert solo.n_iter_ == spmd.n_iter_
        for metric, interval in (("partial_statistical_parity", (0.0, 0.5)),
                                 ("partial_demographic_parity", (0.2, 0.6))):
            solo, spmd = both(lambda: PartialParityClassifier(
                metric=metric, solver="idca", interval=interval, tolerance=0.1,
                max_iter=8, inner_max_iter=60))
            same_model(solo, spmd)
            same(solo.objective_, spmd.objective_)
        solo, spmd = both(lambda: PartialParityClassifier(
            solver="ssg_direct", interval=(0.0, 0.5), tolerance=0.1, max_iter=4,
            inner_max_iter=60))
        same_model(solo, spmd)
        for metric in ("partial_statistical_parity", "partial_demographic_parity"):
            solo, spmd = both(lambda: PartialParityPenaltyClassifier(
                metric=metric, interval=(0.1, 0.6), max_iter=800, solver="subgradient"))
            same_model(solo, spmd)
            same(solo.penalty_, spmd.penalty_)
        # one-hot-like rows stored by their non-zeros (ELL slots)
        Xs = np.zeros((n, 40))
        np.put_along_axis(Xs, rng.integers(0, 40, (n, 4)), rng.normal(size=(n, 4)), axis=1)
        X = sp.csr_matrix(Xs + (Xs != 0) * groups[:, None])
        solo, spmd = both(lambda: PartialParityClassifier(
            solver="idca", interval=(0.0, 0.5), tolerance=0.1, max_iter=8, inner_max_iter=60))
        same_model(solo, spmd)
        solo, spmd = both(lambda: PartialParityPenaltyClassifier(
            max_iter=800, solver="subgradient"))
        same_model(solo, spmd)
    """,
    "partial-fairness-problem-data": """
        # padding rows carry zero weight and zero group membership, so the loss, the
        # group means of every band and the surrogate constraints equal the unpadded ones
        # (on 3 devices, whose padding breaks the fixed order, to rounding)
        import jax.numpy as jnp
        from fairest.partial._common import build_data
        from fairest.partial._dc import Config, constraint_values, objective
        grid = np.linspace(0.1, 0.9, 5)
        hyper = dict(grid=grid, slack=0.01, lo=0.1, hi=0.9, threshold=0.0, alpha=0.0,
                     mu=0.0, rho=0.0, width=0.05)
        x = np.concatenate([rng.normal(size=1 + d), -np.sort(rng.normal(size=grid.size))])
        with jax.enable_x64(True):
            for kind in ("statistical", "demographic"):
                cfg = Config(kind, "ramp", "minimal", 3, d, grid.size if kind == "statistical" else 0)
                xk = jnp.asarray(x[: 1 + d + cfg.num_levels])
                args = (X, y.astype(float), groups, weight, 3)
                one = build_data(*args, **hyper)
                for devices in ("all", jax.devices()[:3]):  # 3: 1024 bucket rows + 2 pads
                    with fairest.config_context(devices=devices):
                        many = build_data(*args, **hyper)
                    assert len(many.membership.sharding.device_set) == len(jax.devices(
                        )[:3] if devices != "all" else jax.devices())
                    same(objective(xk, one, cfg), objective(xk, many, cfg))
                    same(constraint_values(xk, one, cfg), constraint_values(xk, many, cfg))
    """,
    "pruned": """
        from fairest import PrunedFairClassifier
        make = lambda: PrunedFairClassifier(
            hidden_layer_sizes=(8,), dense_n_epochs=3, n_epochs=4, pruning_epochs=2,
            target_sparsity=0.5, batch_size=64, dtype="float64", random_state=0)
        solo, spmd = both(make)
        for (W1, b1), (W2, b2) in zip(solo.params_, spmd.params_):
            same(W1, W2)
            same(b1, b2)
        same(solo.multipliers_, spmd.multipliers_)
        assert all((m1 == m2).all() for m1, m2 in zip(solo.masks_, spmd.masks_))
    """,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_four_devices_equal_one(case):
    script = PRELUDE + textwrap.dedent(CASES[case]) + "\nprint('equal')\n"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "equal" in result.stdout
