"""DP-FERMI noise calibration (spec ermi.md section 6, oracles 10-11)."""

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fairest.ermi import ERMIClassifier, PrivacyWarning, dp_fermi_noise
from fairest.ermi._dp import (
    check_validity,
    effective_noise,
    noise_multiplier,
    rdp_epsilon,
)
from fairest.ermi._kernels import Strata
from fairest.ermi._sgda import SGDAHyper
from fairest.ermi._solvers import sgda_solve

WORKED = dict(
    n_samples=10_000, batch_size=1_000, n_iter=100, epsilon=1.0, delta=1e-8, min_group_fraction=0.3
)


def paper_all_features_noise(
    n_samples, n_iter, epsilon, delta, min_group_fraction, *, lipschitz, radius, n_classes
):
    """The paper's all-features stds (Thm 3.3, second part), for reference only (spec 6.4).

    Returns ``(sigma_theta_statement, sigma_theta_proof, sigma_w)``. Both ignore the
    sensitivity of the loss gradient and are not used by the estimator.
    """
    rho = min_group_fraction
    c = n_iter * math.log(1.0 / delta) / (epsilon**2 * n_samples**2)
    L2, D2, l2 = lipschitz**2, radius**2, n_classes**2
    statement = math.sqrt(64 * L2 * D2 * c / rho + 32 * D2**2 * L2 * l2 * c)
    proof = math.sqrt(8 * L2 * D2 * c * (4 / rho + l2))
    sigma_w = math.sqrt(32 * c * (1 / rho + D2))
    return statement, proof, sigma_w


def test_worked_example_reproduced():
    """Spec 6.7, to 1e-6."""
    sigma_theta, sigma_w = dp_fermi_noise(**WORKED, lipschitz=5.0, radius=5.0)
    assert sigma_w == pytest.approx(0.0313438, abs=1e-6)
    assert sigma_theta == pytest.approx(0.7835960, abs=1e-6)
    assert sigma_theta == pytest.approx(25 * sigma_w, rel=1e-12)
    joint = dp_fermi_noise(**WORKED, lipschitz=5.0, radius=5.0, accounting="joint")
    assert joint == pytest.approx((1.1081721, 0.0443269), abs=1e-6)
    generic = dp_fermi_noise(**WORKED, unit="all", clip=5.0, fairness_weight=1.0, radius=5.0)
    assert generic == pytest.approx((0.0606971, 0.1657211), abs=1e-6)
    assert 2 * (5.0 + 1 / math.sqrt(0.3)) == pytest.approx(13.651484, abs=1e-6)  # B_W
    paper = paper_all_features_noise(
        10_000, 100, 1.0, 1e-8, 0.3, lipschitz=5.0, radius=5.0, n_classes=2
    )
    assert paper == pytest.approx((6.2687680, 1.2635106, 0.1292340), abs=1e-6)


def test_scaling_laws_and_non_private_zero():
    base = np.array(dp_fermi_noise(**WORKED))
    assert dp_fermi_noise(**{**WORKED, "epsilon": None}) == (0.0, 0.0)
    np.testing.assert_allclose(dp_fermi_noise(**{**WORKED, "n_iter": 400}), 2 * base, rtol=1e-12)
    np.testing.assert_allclose(dp_fermi_noise(**{**WORKED, "epsilon": 2.0}), base / 2, rtol=1e-12)
    np.testing.assert_allclose(
        dp_fermi_noise(**{**WORKED, "n_samples": 20_000}), base / 2, rtol=1e-12
    )
    np.testing.assert_allclose(
        dp_fermi_noise(**{**WORKED, "min_group_fraction": 0.075}), 2 * base, rtol=1e-12
    )
    with pytest.raises(ValueError, match="min_group_fraction"):
        dp_fermi_noise(**{**WORKED, "min_group_fraction": 0.0})


@pytest.mark.parametrize(
    "scaling, expected",
    [("lambda", (0.5, 0.5)), ("paper_text", (0.5, 1.0)), ("authors_code", (1.0, 0.5))],
)
def test_noise_scaling_variants(scaling, expected):
    assert effective_noise(2.0, 4.0, 0.5, scaling=scaling) == pytest.approx(
        (2.0 * expected[0], 4.0 * expected[1])
    )
    assert effective_noise(2.0, 4.0, 0.5, unit="all", scaling=scaling) == (2.0, 4.0)


def test_validity_warnings_fire_exactly_outside_the_conditions():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_validity(10_000, 1_000, 25, 1.0, 1e-8)  # T = T_min = 25, eps < 36.84
        check_validity(10_000, 1_000, 920, 36.8, 1e-8)  # T = T_min(36.8) = 920, eps < 36.84
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        check_validity(10_000, 1_000, 24, 1.0, 1e-8)
        check_validity(10_000, 1_000, 10**6, 37.0, 1e-8)
    assert [type(r.message) for r in records] == [PrivacyWarning, PrivacyWarning]


def test_estimator_stores_the_calibrated_noise():
    rng = np.random.default_rng(0)
    n = 400
    s = np.r_[np.zeros(120, int), np.ones(280, int)]
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0).astype(int)
    lam = 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        clf = ERMIClassifier(  # the closed form (accounting="paper") and its radius
            fairness_weight=lam,
            dp_epsilon=2.0,
            batch_size=100,
            n_epochs=2,
            random_state=0,
            accounting="paper",
            dual_radius=5.0,
        )
        clf.fit(X, y, sensitive_features=s)
    rho = (120 - 1) / n
    assert clf.min_group_fraction_ == pytest.approx(rho)
    assert clf.delta_ == pytest.approx(1 / n**2)
    sigma_theta, sigma_w = dp_fermi_noise(n, 100, 8, 2.0, 1 / n**2, rho)
    assert clf.sigma_theta_ == pytest.approx(lam * sigma_theta, rel=1e-12)
    assert clf.sigma_w_ == pytest.approx(lam * sigma_w, rel=1e-12)
    z = noise_multiplier(n, 100, 8, 2.0, 1 / n**2)
    np.testing.assert_allclose(clf.noise_multipliers_, [z, z], rtol=1e-12)


def test_empirical_noise_matches_sigma():
    """Spec oracle 11: one step with eta = 1 and R = inf; the update minus the noiseless one."""
    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        n, d, k, l = 64, 3000, 20, 10
        X = jnp.asarray(rng.normal(size=(n, d)) / np.sqrt(d))
        y = jnp.asarray(rng.integers(0, l, n), dtype=jnp.int32)
        s = jnp.asarray(np.arange(n) % k, dtype=jnp.int32)
        t = jnp.zeros(n, jnp.int32)
        strata = Strata(jnp.full((1, k), np.sqrt(k)), jnp.ones(1), jnp.ones((1, k)))
        theta0, W0 = jnp.zeros((d + 1, l)), jnp.zeros((1, k, l))

        def run(sig_theta, sig_w, seed):
            hyper = SGDAHyper(
                *(
                    jnp.asarray(v)
                    for v in (1.0, 1.0, 1.0, np.inf, np.inf, np.inf, sig_theta, sig_w, 0.0)
                )
            )
            return sgda_solve(
                theta0,
                W0,
                X,
                y,
                s,
                t,
                jnp.ones(n),
                strata,
                hyper,
                jax.random.key(seed, impl="rbg"),
                binary=False,
                batch_size=n,
                n_epochs=1,
                batching="uniform",
                record_history=False,
                random_iterate=False,
            )[:2]

        base_theta, base_w = run(0.0, 0.0, 0)
        theta_noise, w_noise = [], []
        for seed in range(10):
            theta, W = run(0.3, 0.02, seed)
            theta_noise.append(np.asarray(base_theta - theta).ravel())
            w_noise.append(np.asarray(W - base_w).ravel())
    assert np.std(np.concatenate(theta_noise)) == pytest.approx(0.3, rel=0.03)
    assert np.std(np.concatenate(w_noise)) == pytest.approx(0.02, rel=0.03)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_closed_form_agrees_with_rdp_accountant(epsilon):
    """Cross-check with dp-accounting (optional extra) on Adult's constants (spec 6.8)."""
    pytest.importorskip("dp_accounting")
    n, m = 33_916, 1024
    n_iter = 200 * math.ceil(n / m)
    delta = 1 / n**2
    z = noise_multiplier(n, m, n_iter, epsilon, delta)
    spent = rdp_epsilon(z, m / n, n_iter, delta)
    assert 0.8 * epsilon <= spent <= epsilon  # the closed form is valid and not loose
