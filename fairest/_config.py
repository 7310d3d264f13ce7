"""Global configuration of fairest, in the style of :func:`sklearn.set_config`.

One setting today, ``devices``: where the estimators place their data. The value is read
once per ``fit``; the configuration is thread-local (a ``config_context`` in one thread
does not leak into another), as scikit-learn's is.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

__all__ = ["config_context", "get_config", "set_config"]

_DEFAULTS = {"devices": None}
_thread_state = threading.local()


def _state() -> dict:
    if not hasattr(_thread_state, "config"):
        _thread_state.config = dict(_DEFAULTS)
    return _thread_state.config


def _check_devices(devices):
    """``None``, ``"all"`` or a non-empty sequence of distinct ``jax.Device``."""
    if devices is None or (isinstance(devices, str) and devices == "all"):
        return devices
    if isinstance(devices, str) or not isinstance(devices, Sequence) or not devices:
        raise ValueError(
            f"devices must be None, 'all' or a non-empty list of jax.Device; got {devices!r}."
        )
    import jax

    if not all(isinstance(device, jax.Device) for device in devices):
        raise TypeError("devices: every entry must be a jax.Device (see jax.devices()).")
    if len(set(devices)) != len(devices):
        raise ValueError("devices: the list names a device twice.")
    return list(devices)


def get_config() -> dict:
    """The current values of fairest's global settings.

    Returns
    -------
    config : dict
        ``{"devices": ...}``, a copy: changing it changes nothing.

    See Also
    --------
    set_config : Set the global configuration.
    config_context : Set it for a ``with`` block.

    References
    ----------
    .. [1] scikit-learn developers, :func:`sklearn.get_config`, the model of this
       function.
    """
    config = dict(_state())
    if isinstance(config["devices"], list):
        config["devices"] = list(config["devices"])
    return config


def set_config(*, devices: object = "unchanged") -> None:
    """Set fairest's global configuration (for the current thread).

    Parameters
    ----------
    devices : None, "all" or list of jax.Device, default="unchanged"
        Where estimators place their data during ``fit``. ``None``: JAX's default
        device, unsharded (the default). ``"all"``: every local device
        (:func:`jax.local_devices`). A list: those devices. With more than one device
        every estimator shards its rows over a 1-D mesh (padding rows carry zero weight)
        and keeps its parameters replicated; per-group statistics are segment sums,
        reduced across devices by XLA. The fitted model equals the single-device fit up to
        floating-point summation order (see the "Scaling out" page). Left out: unchanged.

    See Also
    --------
    get_config : The current configuration.
    config_context : Set it for a ``with`` block.

    References
    ----------
    .. [1] scikit-learn developers, :func:`sklearn.set_config`, the model of this
       function.
    """
    if not (isinstance(devices, str) and devices == "unchanged"):
        _state()["devices"] = _check_devices(devices)


@contextmanager
def config_context(*, devices: object = "unchanged") -> Iterator[None]:
    """Set fairest's configuration inside a ``with`` block, restored on exit.

    Parameters
    ----------
    devices : None, "all" or list of jax.Device, default="unchanged"
        As in :func:`set_config`.

    Yields
    ------
    None

    See Also
    --------
    set_config : Set the global configuration.
    get_config : The current configuration.

    References
    ----------
    .. [1] scikit-learn developers, :func:`sklearn.config_context`, the model of this
       function.

    Examples
    --------
    >>> import fairest
    >>> with fairest.config_context(devices="all"):
    ...     fairest.get_config()["devices"]
    'all'
    >>> fairest.get_config()["devices"] is None
    True
    """
    saved = dict(_state())
    set_config(devices=devices)
    try:
        yield
    finally:
        _state().clear()
        _state().update(saved)
