"""The kernels run unchanged on data sharded over a device mesh (4 virtual CPU devices)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from fairest._kernels import Batch, group_sums, pad_rows, value_grad_hessian
from fairest._solvers._newton import newton_solve

pytestmark = pytest.mark.multidevice


@pytest.fixture
def mesh():
    if len(jax.devices()) < 4:
        pytest.skip("needs 4 devices (tests/conftest.py sets jax_num_cpu_devices=4)")
    return Mesh(np.array(jax.devices()[:4]), ("data",))


def _shard_rows(mesh, *arrays):
    out = []
    for a in arrays:
        spec = PartitionSpec("data", *([None] * (a.ndim - 1)))
        out.append(jax.device_put(a, NamedSharding(mesh, spec)))
    return out


def test_sharded_equals_unsharded(mesh):
    rng = np.random.default_rng(0)
    n, d, G = 1001, 6, 5
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) + rng.normal(size=n) > 0).astype(float)
    groups = rng.integers(0, G, n).astype(np.int32)
    weight = np.full(n, 1.0 / n)
    padded = pad_rows(n, X, y, groups, weight)
    with jax.enable_x64(True):
        local = [jnp.asarray(a) for a in padded]
        sharded = _shard_rows(mesh, *padded)
        assert len(sharded[0].sharding.device_set) == 4
        theta = jnp.asarray(rng.normal(size=d + 1))
        for a, b in zip(group_sums("logistic", theta, Batch(*local), G), group_sums("logistic", theta, Batch(*sharded), G)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
        args_local = (local[0], local[1], local[3], 0.01, 0.0)
        args_sharded = (sharded[0], sharded[1], sharded[3], 0.01, 0.0)
        for a, b in zip(value_grad_hessian("logistic", theta, *args_local), value_grad_hessian("logistic", theta, *args_sharded)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
        start = jnp.zeros(d + 1)
        solo = newton_solve("logistic", *args_local, start)
        spmd = newton_solve("logistic", *args_sharded, start)
        np.testing.assert_allclose(solo.theta, spmd.theta, rtol=1e-9, atol=1e-12)
        assert bool(spmd.converged)
