"""Two processes x two CPU devices (jax.distributed on loopback, gloo collectives): each
process passes only its own rows, the fit's reductions are global, and the solution equals
the single-process one on all rows."""

import socket
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.multidevice

WORKER = textwrap.dedent(
    """
    import sys
    import jax
    jax.config.update("jax_num_cpu_devices", 2)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    process_id, port = int(sys.argv[1]), sys.argv[2]
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=process_id)
    import jax.numpy as jnp
    import numpy as np
    import fairest
    from fairest._kernels import Batch, group_sums
    from fairest._solvers._newton import newton_solve
    from fairest.utils._devices import place_rows

    assert jax.device_count() == 4 and jax.local_device_count() == 2
    rng = np.random.default_rng(0)
    n, d, G = 1001, 5, 3
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) + rng.normal(size=n) > 0).astype(float)
    groups = rng.integers(0, G, n).astype(np.int32)
    weight = np.full(n, 1.0 / n)
    mine = slice(0, 600) if process_id == 0 else slice(600, n)  # unequal shares
    with jax.enable_x64(True):
        with fairest.config_context(devices="all"):
            Xs, ys, gs, ws = place_rows([X[mine], y[mine], groups[mine], weight[mine]])
        assert Xs.shape == (1200, d) and len(Xs.sharding.device_set) == 4
        theta0 = jnp.zeros(d + 1)
        spmd = newton_solve("logistic", Xs, ys, ws, 0.01, 0.0, theta0)
        local = jax.local_devices()[0]
        full = [jax.device_put(a, local) for a in (X, y, groups, weight)]
        solo = newton_solve("logistic", full[0], full[1], full[3], 0.01, 0.0,
                            jax.device_put(theta0, local))
        theta = np.asarray(spmd.theta.addressable_data(0))
        np.testing.assert_allclose(theta, np.asarray(solo.theta), rtol=1e-9, atol=1e-12)
        sums = group_sums("logistic", spmd.theta, Batch(Xs, ys, gs, ws), G)
        reference = group_sums("logistic", solo.theta, Batch(*full), G)
        for a, b in zip(sums, reference):
            np.testing.assert_allclose(np.asarray(a.addressable_data(0)), np.asarray(b),
                                       rtol=1e-9, atol=1e-14)
    print(f"process {process_id}: multi-host == single-process")
    jax.distributed.shutdown()
    """
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_processes_equal_one():
    port = str(_free_port())
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(process_id), port],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for process_id in range(2)
    ]
    outputs = []
    try:
        for worker in workers:
            stdout, stderr = worker.communicate(timeout=300)
            outputs.append((worker.returncode, stdout, stderr))
    finally:
        for worker in workers:
            worker.kill()
    for process_id, (code, stdout, stderr) in enumerate(outputs):
        assert code == 0, stderr[-3000:]
        assert f"process {process_id}: multi-host == single-process" in stdout
