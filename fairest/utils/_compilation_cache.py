"""Opt-in persistent cache of compiled JAX programs (across processes).

fairest never changes JAX's configuration on import. Applications (the ``fairest``
command, a user's script) may call :func:`enable_compilation_cache` once to keep compiled
solvers on disk, so that a new process fits small problems without paying the XLA
compilation again.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

__all__ = ["enable_compilation_cache"]


def enable_compilation_cache(directory: str | os.PathLike | None = None) -> Path:
    """Turn on JAX's persistent compilation cache (a global JAX setting, on request).

    Parameters
    ----------
    directory : str or path-like, default=None
        Cache folder; default ``$XDG_CACHE_HOME/fairest/jax`` (``~/.cache/fairest/jax``).

    Returns
    -------
    directory : Path
        The folder in use.

    References
    ----------
    .. [1] JAX documentation, "Persistent compilation cache".
    """
    if directory is None:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        directory = Path(base) / "fairest" / "jax"
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return directory
