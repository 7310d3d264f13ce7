"""SGDA internals kept fast without changing the algorithm (issue 5): the batch sampler's
random draws (Lemire's multiply-shift), the exact uniform m-subset, and the float32 data path."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fairest.ermi import ERMIClassifier
from fairest.ermi._sampling import draw_below, draws_per_round, uniform_subset


@pytest.mark.parametrize("n", [7, 33_916, 70_001, 2**31 - 1])
def test_draw_below_is_lemires_multiply_shift(n):
    """value = (x n) >> 32, usable iff (x n) mod 2^32 >= 2^32 mod n, for the raw 32-bit draws x
    (numpy uint64 arithmetic as the independent reference)."""
    with jax.enable_x64(True):
        for seed in range(3):
            key = jax.random.key(seed, impl="rbg")
            values, usable = draw_below(key, (517,), n)
            x = np.asarray(jax.random.bits(key, (517,), jnp.uint32)).astype(np.uint64)
            product = x * np.uint64(n)
            np.testing.assert_array_equal(values, (product >> np.uint64(32)).astype(np.int64))
            np.testing.assert_array_equal(
                usable, (product & np.uint64(2**32 - 1)) >= np.uint64(2**32 % n)
            )
            assert np.all((np.asarray(values) >= 0) & (np.asarray(values) < n))


def test_draw_below_rejects_the_biased_low_words():
    """Every x whose low word is below 2^32 mod n is rejected; for n = 3 * 2^29 + 1 that is
    about a quarter of all draws, and the accepted values are uniform (chi-square)."""
    n = 3 * 2**29 + 1
    with jax.enable_x64(True):
        values, usable = draw_below(jax.random.key(0, impl="rbg"), (200_000,), n)
    values, usable = np.asarray(values), np.asarray(usable)
    assert abs(1.0 - usable.mean() - (2**32 % n) / 2**32) < 0.01
    counts = np.bincount((values[usable].astype(np.int64) * 8) // n, minlength=8)
    expected = usable.sum() / 8
    assert np.sum((counts - expected) ** 2 / expected) < 24.3  # chi-square, 7 dof, p = 0.001


def test_draws_per_round():
    assert draws_per_round(50_000, 1024) < 1100  # about m + m^2 / (2n) + margin, not 2m + 16 = 2064
    assert draws_per_round(50, 8) >= 8 + 16
    assert draws_per_round(300, 299) > 299


def _reference_subset(key, n, m):
    """First m distinct usable values of the draws draw_below(fold_in(key, r), ...), r = 0, 1, ..."""
    chosen, seen, round_ = [], set(), 0
    while len(chosen) < m:
        values, usable = draw_below(jax.random.fold_in(key, round_), (draws_per_round(n, m),), n)
        for v, ok in zip(np.asarray(values).tolist(), np.asarray(usable).tolist()):
            if ok and v not in seen and len(chosen) < m:
                seen.add(v)
                chosen.append(v)
        round_ += 1
    return np.array(chosen)


@pytest.mark.parametrize("n, m", [(50, 8), (300, 299), (5, 3)])  # one round; several rounds; tiny
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
            # the precomputed round-0 key gives the same subset
            idx2, _ = subset(key, owner, n, m, jax.random.fold_in(key, 0))
            np.testing.assert_array_equal(idx2, idx)


def test_uniform_subset_includes_every_index_with_probability_m_over_n():
    n, m, calls = 20, 5, 4000
    sentinel = np.iinfo(np.int32).max
    with jax.enable_x64(True):
        keys = jax.random.split(jax.random.key(7, impl="rbg"), calls)

        def one(owner, key):
            idx, owner = uniform_subset(key, owner, n, m)
            return owner, idx

        _, subsets = jax.lax.scan(one, jnp.full(n, sentinel, jnp.int32), keys)
    subsets = np.asarray(subsets)
    assert all(len(set(row)) == m for row in subsets.tolist())
    counts = np.bincount(subsets.ravel(), minlength=n)
    expected = calls * m / n
    assert np.sum((counts - expected) ** 2 / expected) < 43.8  # chi-square, 19 dof, p = 0.001
    # pairs: every unordered pair equally likely, C(m, 2) / C(n, 2)
    pairs = np.zeros((n, n))
    for row in subsets:
        pairs[np.ix_(row, row)] += 1
    off = pairs[np.triu_indices(n, 1)]
    expected_pair = calls * m * (m - 1) / (n * (n - 1))
    assert np.sum((off - expected_pair) ** 2 / expected_pair) < 240.0  # 189 dof, p ~ 0.001


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
