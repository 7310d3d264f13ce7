"""Engine pieces: initialisation, flattening, samplers, padding (constrained spec 1, 5.1-5.3)."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from scipy import stats

from fairest.constrained._common import ravel_params, unravel_params
from fairest.constrained._engine import MLP, GroupSampler, group_means, per_sample_stats


def test_constrained_pytorch_init_distribution_and_flatten_order():
    model = MLP(9, (64, 32), 1)
    params = model.init(np.random.default_rng(0), jnp.float32)
    assert sum(W.size + b.size for W, b in params) == 2753  # spec 3.3
    for (W, b), fan_in in zip(params, (9, 64, 32)):
        bound = 1 / np.sqrt(fan_in)
        values = np.concatenate([np.ravel(W), np.ravel(b)])
        assert np.abs(values).max() <= bound
        # Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch nn.Linear's default
        assert stats.kstest(values, stats.uniform(-bound, 2 * bound).cdf).pvalue > 1e-3
    flat = ravel_params(params)
    np.testing.assert_array_equal(flat, ravel_pytree(params)[0])
    back = unravel_params(model, flat)
    for (W, b), (W2, b2) in zip(params, back):
        np.testing.assert_array_equal(W, W2)
        np.testing.assert_array_equal(b, b2)


def test_constrained_group_sampler_passes_and_balance():
    """Oracle 1: exactly b rows of every group per draw; each pass covers every row once."""
    rng = np.random.default_rng(0)
    cells = rng.integers(0, 3, 100)
    sampler = GroupSampler(cells, 3, 4, np.random.default_rng(1))
    counts = np.bincount(cells)
    idx, w = sampler.draw(60)
    assert idx.shape == (60, 12) and np.all(w == 1)
    for c in range(3):
        rows = idx[:, 4 * c : 4 * c + 4].ravel()
        assert np.all(cells[rows] == c)
        n_c = counts[c]
        for p in range(len(rows) // n_c):
            np.testing.assert_array_equal(
                np.sort(rows[p * n_c : (p + 1) * n_c]), np.flatnonzero(cells == c)
            )
    replay = GroupSampler(cells, 3, 4, np.random.default_rng(1), mode="replay")
    idx, w = replay.draw(2 * int(np.ceil(counts[0] / 4)))
    half = idx.shape[0] // 2
    np.testing.assert_array_equal(idx[:half, :4], idx[half:, :4])  # replays its first pass
    assert w[half - 1, :4].sum() == counts[0] - 4 * (half - 1)  # short last batch


def test_constrained_padding_rows_change_nothing(x64):
    """Oracle 3: rows with weight 0 leave group means and gradients unchanged."""
    rng = np.random.default_rng(0)
    X = jnp.asarray(rng.normal(size=(20, 3)))
    y = jnp.asarray(rng.integers(0, 2, 20))
    g = jnp.asarray(rng.integers(0, 2, 20))
    model = MLP(3, (4,), 1)
    x = ravel_params(model.init(np.random.default_rng(1), jnp.float64))

    def group_loss(x, X, y, g, w):
        loss, _, _ = per_sample_stats(MLP.apply(unravel_params(model, x), X), y)
        return group_means(loss, g, w, 3)[0]

    pad = 7
    Xp = jnp.concatenate([X, jnp.asarray(rng.normal(size=(pad, 3)))])
    yp = jnp.concatenate([y, jnp.ones(pad, y.dtype)])
    gp = jnp.concatenate([g, jnp.full(pad, 2, g.dtype)])
    w, wp = jnp.ones(20), jnp.concatenate([jnp.ones(20), jnp.zeros(pad)])
    a = group_loss(x, X, y, g, w)
    b = group_loss(x, Xp, yp, gp, wp)
    np.testing.assert_allclose(a, b, rtol=1e-14)
    assert float(a[2]) == 0.0  # absent group: mean 0
    ja = jax.jacrev(group_loss)(x, X, y, g, w)
    jb = jax.jacrev(group_loss)(x, Xp, yp, gp, wp)
    np.testing.assert_allclose(ja, jb, rtol=1e-13, atol=1e-15)
