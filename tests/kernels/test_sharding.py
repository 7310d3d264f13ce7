"""The kernels run unchanged on data sharded over a device mesh (4 virtual CPU devices).

The mesh lives in a subprocess: splitting the CPU into 4 virtual devices for the whole
test session would slow every other test down, while only this one needs it.
"""

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.multidevice

SCRIPT = textwrap.dedent(
    """
    import jax
    jax.config.update("jax_num_cpu_devices", 4)
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from fairest._kernels import Batch, group_sums, pad_rows, value_grad_hessian
    from fairest._solvers._newton import newton_solve

    assert len(jax.devices()) == 4, jax.devices()
    mesh = Mesh(np.array(jax.devices()), ("data",))

    def shard_rows(*arrays):
        return [
            jax.device_put(a, NamedSharding(mesh, PartitionSpec("data", *([None] * (a.ndim - 1)))))
            for a in arrays
        ]

    rng = np.random.default_rng(0)
    n, d, G = 1001, 6, 5
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) + rng.normal(size=n) > 0).astype(float)
    groups = rng.integers(0, G, n).astype(np.int32)
    weight = np.full(n, 1.0 / n)
    padded = pad_rows(n, X, y, groups, weight)
    with jax.enable_x64(True):
        local = [jnp.asarray(a) for a in padded]
        sharded = shard_rows(*padded)
        assert len(sharded[0].sharding.device_set) == 4
        theta = jnp.asarray(rng.normal(size=d + 1))
        pairs = list(zip(group_sums("logistic", theta, Batch(*local), G),
                         group_sums("logistic", theta, Batch(*sharded), G)))
        args_local = (local[0], local[1], local[3], 0.01, 0.0)
        args_sharded = (sharded[0], sharded[1], sharded[3], 0.01, 0.0)
        pairs += list(zip(value_grad_hessian("logistic", theta, *args_local),
                          value_grad_hessian("logistic", theta, *args_sharded)))
        for a, b in pairs:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
        solo = newton_solve("logistic", *args_local, jnp.zeros(d + 1))
        spmd = newton_solve("logistic", *args_sharded, jnp.zeros(d + 1))
        np.testing.assert_allclose(solo.theta, spmd.theta, rtol=1e-9, atol=1e-12)
        assert bool(spmd.converged)
    print("sharded == unsharded")
    """
)


def test_sharded_equals_unsharded():
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "sharded == unsharded" in result.stdout
