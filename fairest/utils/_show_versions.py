"""``fairest.show_versions()``: what to paste into a bug report."""

from __future__ import annotations

import platform
import sys
from importlib.metadata import PackageNotFoundError, version

__all__ = ["show_versions"]

_DEPENDENCIES = (
    "numpy",
    "scipy",
    "scikit-learn",
    "pandas",
    "jax",
    "jaxlib",
    "cvxpy",
    "clarabel",
    "matplotlib",
    "fairlearn",
    "dp-accounting",
)


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def _jax_devices() -> dict:
    import jax

    return {
        "backend": jax.default_backend(),
        "devices": ", ".join(str(device) for device in jax.devices()),
    }


def versions() -> dict:
    """fairest's, Python's and the dependencies' versions and JAX's devices, as a dict."""
    import fairest

    info = {
        "fairest": fairest.__version__,
        "python": sys.version.replace("\n", " "),
        "executable": sys.executable,
        "machine": platform.platform(),
    }
    info.update({name: _package_version(name) for name in _DEPENDENCIES})
    info.update({f"jax {key}": value for key, value in _jax_devices().items()})
    return info


def show_versions() -> None:
    """Print fairest's, Python's and the main dependencies' versions and JAX's devices.

    Paste the output into bug reports, as with :func:`sklearn.show_versions`.

    Examples
    --------
    >>> import fairest
    >>> fairest.show_versions()  # doctest: +SKIP
    """
    info = versions()
    width = max(len(key) for key in info)
    for key, value in info.items():
        print(f"{key:>{width}}: {value}")
