"""fairest.set_config / get_config / config_context and the placement of a fit's rows."""

import subprocess
import sys
import textwrap
import threading

import jax
import numpy as np
import pytest

import fairest
from fairest.utils._devices import padded_length, place_rows


def test_default_is_single_device_and_context_restores():
    assert fairest.get_config() == {"devices": None}
    with fairest.config_context(devices="all"):
        assert fairest.get_config()["devices"] == "all"
        with fairest.config_context(devices=jax.devices()[:1]):
            assert fairest.get_config()["devices"] == jax.devices()[:1]
        assert fairest.get_config()["devices"] == "all"
    assert fairest.get_config()["devices"] is None


def test_context_restores_after_an_error():
    with pytest.raises(RuntimeError), fairest.config_context(devices="all"):
        raise RuntimeError("inside")
    assert fairest.get_config()["devices"] is None


def test_set_config_and_unchanged_default():
    try:
        fairest.set_config(devices="all")
        fairest.set_config()  # nothing given: nothing changes
        assert fairest.get_config()["devices"] == "all"
    finally:
        fairest.set_config(devices=None)
    assert fairest.get_config()["devices"] is None


def test_get_config_returns_a_copy():
    config = fairest.get_config()
    config["devices"] = "all"
    assert fairest.get_config()["devices"] is None


def test_config_is_thread_local():
    seen = {}

    def other_thread():
        seen["devices"] = fairest.get_config()["devices"]

    with fairest.config_context(devices="all"):
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert seen["devices"] is None


@pytest.mark.parametrize(
    "devices, error, match",
    [
        ("gpu", ValueError, "devices must be None, 'all'"),
        ([], ValueError, "non-empty"),
        (["cpu:0"], TypeError, "jax.Device"),
        (3, ValueError, "devices must be"),
    ],
)
def test_bad_devices_are_refused(devices, error, match):
    with pytest.raises(error, match=match):
        fairest.set_config(devices=devices)
    assert fairest.get_config()["devices"] is None


def test_duplicate_device_is_refused():
    device = jax.devices()[0]
    with pytest.raises(ValueError, match="twice"):
        fairest.set_config(devices=[device, device])


def test_single_device_placement_is_unpadded():
    X = np.arange(12.0).reshape(6, 2)
    (placed,) = place_rows([X], devices=jax.devices()[:1])
    np.testing.assert_array_equal(np.asarray(placed), X)
    assert padded_length(6, 4) == 8 and padded_length(8, 4) == 8


SCRIPT = textwrap.dedent(
    """
    import jax
    jax.config.update("jax_num_cpu_devices", 4)
    import jax.numpy as jnp
    import numpy as np
    import fairest
    from fairest.utils._devices import place_replicated, place_rows

    assert len(jax.devices()) == 4
    rng = np.random.default_rng(0)
    n, d, G = 1001, 3, 5
    X = rng.normal(size=(n, d))
    groups = rng.integers(0, G, n).astype(np.int32)
    weight = rng.uniform(size=n)
    with fairest.config_context(devices="all"):
        Xs, gs, ws = place_rows([X, groups, weight])
        theta = place_replicated(jnp.ones(d))
    assert Xs.shape == (1004, d) and len(Xs.sharding.device_set) == 4
    assert len(theta.sharding.device_set) == 4
    sums = jax.ops.segment_sum(ws * (Xs @ theta), gs, num_segments=G)
    reference = np.bincount(groups, weights=weight * (X @ np.ones(d)), minlength=G)
    np.testing.assert_allclose(np.asarray(sums), reference, rtol=1e-5)
    print("placed and reduced")
    """
)


@pytest.mark.multidevice
def test_rows_shard_over_four_devices_and_padding_changes_no_sum():
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=False, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "placed and reduced" in result.stdout
