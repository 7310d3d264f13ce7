"""Placing a fit's data on the configured devices (``fairest.config_context(devices=...)``).

With several devices the rows are sharded over a 1-D mesh (axis ``"rows"``, automatic
sharding propagation), padded to a multiple of the device count with zero rows (the fit's
weights of these rows are 0, so they change no sum), and everything else is replicated.
XLA then turns every reduction over rows (the gradient, the Hessian, the per-group
``segment_sum``) into a local sum plus an all-reduce: the solvers are unchanged and the
iterates never leave the devices.
"""

from __future__ import annotations

import numpy as np

from fairest._config import get_config
from fairest._kernels._buckets import pad_rows_to

__all__ = ["ROW_AXIS", "configured_devices", "place_replicated", "place_rows", "row_mesh"]

ROW_AXIS = "rows"


def configured_devices() -> list | None:
    """The devices of the current configuration: ``None`` (JAX's default placement) or a
    list of ``jax.Device`` (``"all"``: every device of every process, i.e. the local
    devices when there is one process)."""
    spec = get_config()["devices"]
    if spec is None:
        return None
    import jax

    return list(jax.devices()) if spec == "all" else list(spec)


def row_mesh(devices):
    """A 1-D mesh over ``devices`` whose single axis shards rows."""
    import jax
    from jax.sharding import AxisType

    return jax.make_mesh(
        (len(devices),), (ROW_AXIS,), axis_types=(AxisType.Auto,), devices=list(devices)
    )


def _row_sharding(mesh, ndim: int):
    from jax.sharding import NamedSharding, PartitionSpec

    return NamedSharding(mesh, PartitionSpec(ROW_AXIS, *([None] * (ndim - 1))))


def padded_length(n_rows: int, n_devices: int) -> int:
    """Smallest multiple of ``n_devices`` that is at least ``n_rows``."""
    return -(-n_rows // n_devices) * n_devices


def place_rows(arrays, devices=None):
    """Put row-aligned numpy arrays on ``devices`` (default: the configured ones).

    Parameters
    ----------
    arrays : sequence of ndarray
        Arrays with the same first dimension (data, targets, group codes, weights).
    devices : list of jax.Device, optional
        Defaults to :func:`configured_devices`. ``None`` or one device: the arrays go to
        that device (JAX's default one for ``None``) unchanged.

    Returns
    -------
    placed : list of jax.Array
        With several devices: each array padded with zero rows to a multiple of the device
        count and sharded by rows; the zero padding must carry zero weight in the fit.
    """
    import jax

    devices = configured_devices() if devices is None else devices
    if jax.process_count() > 1:
        return _place_process_rows(arrays, devices)
    if not devices:
        return [jax.device_put(np.asarray(a)) for a in arrays]
    if len(devices) == 1:
        return [jax.device_put(np.asarray(a), devices[0]) for a in arrays]
    mesh = row_mesh(devices)
    padded = _padded(arrays, lambda n_rows: padded_length(n_rows, len(devices)))
    return [jax.device_put(array, _row_sharding(mesh, array.ndim)) for array in padded]


def _padded(arrays, length_of) -> list[np.ndarray]:
    """The row-aligned ``arrays`` padded with zero rows to ``length_of(n_rows)``
    (:func:`~fairest._kernels._buckets.pad_rows_to`)."""
    arrays = [np.asarray(a) for a in arrays]
    n_rows = arrays[0].shape[0]
    if any(a.shape[0] != n_rows for a in arrays):
        raise ValueError("place_rows: the arrays must have the same number of rows.")
    return pad_rows_to(length_of(n_rows), *arrays)


def _place_process_rows(arrays, devices):
    """Multi-process placement: each process passes only its own rows; they are padded to
    the longest process's share (rounded to a multiple of the local device count) and
    assembled into one global row-sharded array per input
    (:func:`jax.make_array_from_process_local_data`)."""
    import jax
    from jax.experimental import multihost_utils

    devices = list(jax.devices()) if not devices else list(devices)
    if len(devices) != jax.device_count():
        raise ValueError(
            "with several processes (jax.distributed) fairest shards over every device: "
            "use config_context(devices='all')."
        )
    mesh = row_mesh(devices)

    def longest_share(n_local: int) -> int:
        longest = int(np.max(multihost_utils.process_allgather(np.array([n_local]))))
        return padded_length(longest, jax.local_device_count())

    return [
        jax.make_array_from_process_local_data(
            _row_sharding(mesh, local.ndim),
            local,
            (local.shape[0] * jax.process_count(),) + local.shape[1:],
        )
        for local in _padded(arrays, longest_share)
    ]


def place_replicated(tree, devices=None):
    """Put a pytree (parameters, settings) on ``devices``, replicated on each of them."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    devices = configured_devices() if devices is None else devices
    if not devices:
        return jax.device_put(tree)
    if len(devices) == 1:
        return jax.device_put(tree, devices[0])
    return jax.device_put(tree, NamedSharding(row_mesh(devices), PartitionSpec()))
