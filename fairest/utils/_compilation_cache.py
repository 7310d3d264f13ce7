"""Opt-in persistent cache of compiled JAX programs (across processes).

fairest never changes JAX's configuration on import. Applications (the ``fairest``
command, a user's script) may call :func:`enable_compilation_cache` once to keep compiled
solvers on disk, so that a new process fits small problems without paying the XLA
compilation again. The cache reaches joblib workers (a ``GridSearchCV(n_jobs=2)``):
the folder is also exported as ``JAX_COMPILATION_CACHE_DIR`` (with the two thresholds),
which JAX reads when a worker process imports it.

:func:`count_compilations` counts the XLA executables a block of code compiles (tests and
``benchmarks/speed_table.py``). :func:`compile_in_background` compiles a jitted function
for given arguments in a thread (XLA compiles outside the GIL), so that a program needed
later compiles while the host or another program works.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import jax

__all__ = [
    "CompilationCount",
    "compile_in_background",
    "count_compilations",
    "enable_compilation_cache",
]

# The event JAX records once per executable it obtains from the backend: an XLA compilation
# or a persistent-cache hit (JAX 0.10 times both under this name); a hit also records
# _CACHE_HIT_EVENT, so compilations = backend events - cache hits.
_BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"


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
    # joblib's workers (loky: fresh processes) inherit the environment, and JAX reads its
    # configuration from these variables on import: their compilations hit the cache too
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(directory)
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
    return directory


class CompilationCount:
    """Running count of XLA compilations (``count``), of the executables loaded from the
    persistent cache instead (``cache_hits``) and the seconds of both (``seconds``)."""

    def __init__(self):
        self.executables = 0
        self.cache_hits = 0
        self.seconds = 0.0

    @property
    def count(self) -> int:
        return self.executables - self.cache_hits

    def _listen(self, event: str, duration: float, **_) -> None:
        if event == _BACKEND_COMPILE_EVENT:
            self.executables += 1
            self.seconds += duration

    def _listen_hits(self, event: str, **_) -> None:
        if event == _CACHE_HIT_EVENT:
            self.cache_hits += 1


@contextlib.contextmanager
def count_compilations():
    """Count the XLA executables compiled inside the block (all threads).

    Yields a :class:`CompilationCount`; persistent-cache hits are not compilations.

    Examples
    --------
    >>> with count_compilations() as compiled:  # doctest: +SKIP
    ...     model.fit(X, y)
    >>> compiled.count  # doctest: +SKIP
    """
    counter = CompilationCount()
    jax.monitoring.register_event_duration_secs_listener(counter._listen)
    jax.monitoring.register_event_listener(counter._listen_hits)
    try:
        yield counter
    finally:
        jax.monitoring.unregister_event_duration_listener(counter._listen)
        jax.monitoring.unregister_event_listener(counter._listen_hits)


# (function, argument signature, x64) of every compilation started by
# compile_in_background in this process: a later request for the same one starts no thread
_STARTED: set = set()


def _signature(args) -> tuple:
    """What a jitted function's compilation depends on in ``args``: their tree structure,
    the shape and dtype of every array leaf and the value of every other leaf (static
    strings, numbers)."""
    leaves, treedef = jax.tree_util.tree_flatten(args)
    return treedef, tuple(
        (tuple(leaf.shape), str(leaf.dtype)) if hasattr(leaf, "dtype") else leaf for leaf in leaves
    )


def compile_in_background(
    function, args: tuple, *, x64: bool | None = None
) -> threading.Thread | None:
    """Start compiling the jitted ``function`` for ``args`` in a daemon thread; returns
    the thread, which the caller joins before it calls ``function`` (a call made while
    the thread still compiles would compile the same program a second time), or ``None``
    when this process already started that compilation (a warm fit: no thread to run).

    Only compiled, never run: the later call finds the executable in JAX's caches and runs
    it on the real arguments (``args`` may be those, or arrays of the same shapes and
    dtypes). ``x64``: the ``jax.enable_x64`` setting of that call (a thread-local setting,
    part of the cache key); ``None`` takes the calling thread's. An error is ignored here:
    the later call compiles again and raises it. After ``jax.clear_caches()`` a started
    compilation is not started again: the later call then compiles it itself.
    """
    x64 = jax.config.jax_enable_x64 if x64 is None else x64
    key = (function, _signature(args), x64)
    if key in _STARTED:
        return None
    _STARTED.add(key)

    def compile_quietly():
        with jax.enable_x64(x64), contextlib.suppress(Exception):
            function.lower(*args).compile()

    thread = threading.Thread(target=compile_quietly, daemon=True)
    thread.start()
    return thread
