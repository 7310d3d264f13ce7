"""SGDA internals kept fast without changing the algorithm (issue 5): the batch sampler's
random draws, the exact m-subset, and the float32 data path."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fairest.ermi import ERMIClassifier
from fairest.ermi._solvers import _randint_from_split, _subset_round_keys, uniform_subset


@pytest.mark.parametrize("n", [7, 33_916, 70_001, 2**31 - 1])  # (2**16 % n)**2 wraps in uint32 for n > 2**16
def test_randint_from_split_equals_jax_randint(n):
    with jax.enable_x64(True):
        for seed in range(3):
            key = jax.random.key(seed, impl="rbg")
            expected = jax.random.randint(key, (517,), 0, n, dtype=jnp.int32)
            k1, k2 = jax.random.split(key)
            np.testing.assert_array_equal(_randint_from_split(k1, k2, (517,), n), expected)


def _reference_subset(key, n, m):
    """First m distinct values of the draws randint(fold_in(key, r), (2m + 16,)), r = 0, 1, ..."""
    chosen, seen, round_ = [], set(), 0
    while len(chosen) < m:
        draws = jax.random.randint(jax.random.fold_in(key, round_), (2 * m + 16,), 0, n, dtype=jnp.int32)
        for v in np.asarray(draws).tolist():
            if v not in seen and len(chosen) < m:
                seen.add(v)
                chosen.append(v)
        round_ += 1
    return np.array(chosen)


@pytest.mark.parametrize("n, m", [(50, 8), (300, 250)])  # one round; several rounds
def test_uniform_subset_is_the_sequential_dedup_of_the_draws(n, m):
    sentinel = np.iinfo(np.int32).max
    with jax.enable_x64(True):
        owner = jnp.full(n, sentinel, jnp.int32)
        subset = jax.jit(uniform_subset, static_argnums=(2, 3))
        for seed in range(3):
            key = jax.random.key(seed, impl="rbg")
            idx, owner = subset(key, owner, n, m)
            np.testing.assert_array_equal(idx, _reference_subset(key, n, m))
            assert np.all(np.asarray(owner) == sentinel)  # scratch array reset for the next call
            # the precomputed round-0 keys give the same subset
            idx2, _ = subset(key, owner, n, m, _subset_round_keys(key))
            np.testing.assert_array_equal(idx2, idx)


def test_float32_data_path_gives_the_same_model_up_to_rounding():
    rng = np.random.default_rng(0)
    n = 600
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 4)) + s[:, None]
    y = (X[:, 0] + rng.normal(size=n) > 0.5).astype(int)
    params = dict(solver="sgda", batch_size=64, n_epochs=3, dp_epsilon=2.0, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PrivacyWarning: few epochs
        a = ERMIClassifier(1.0, **params).fit(X, y, sensitive_features=s)
        b = ERMIClassifier(1.0, dtype="float32", **params).fit(X, y, sensitive_features=s)
    assert b.coef_.dtype == np.float64
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b.W_, a.W_, rtol=1e-4, atol=1e-5)
    assert not np.array_equal(b.coef_, a.coef_)  # the products really ran in float32
