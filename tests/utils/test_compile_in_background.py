"""compile_in_background: a jitted function compiled in a thread, never run, is found
compiled by the later call made under the same x64 setting."""

import jax
import numpy as np
import pytest

from fairest.utils._compilation_cache import compile_in_background


def _named(messages, name) -> list:
    return [m for m in messages if m == f"Compiling jit({name})"]


def test_compiled_not_run_and_found_by_the_call(compilations):
    runs = []

    @jax.jit
    def kernel(x):
        jax.debug.callback(lambda: runs.append(1))
        return 2.0 * x

    args = (np.ones(3),)
    compile_in_background(kernel, args, x64=True).join()
    assert runs == []
    with jax.enable_x64(True):
        assert not _named(compilations(lambda: jax.block_until_ready(kernel(*args))), "kernel")
    assert runs == [1]


def test_takes_the_callers_x64_setting(compilations):
    @jax.jit
    def twice(x):
        return 2.0 * x

    args = (np.ones(4),)
    with jax.enable_x64(True):
        compile_in_background(twice, args).join()
        assert not _named(compilations(lambda: jax.block_until_ready(twice(*args))), "twice")
    with jax.enable_x64(False):  # another setting, another program
        assert _named(compilations(lambda: jax.block_until_ready(twice(*args))), "twice")


def test_an_error_is_left_to_the_call():
    @jax.jit
    def bad(x):
        return x @ np.ones(5)  # shapes (3,) and (5,) do not match

    compile_in_background(bad, (np.ones(3),)).join()  # no exception in the thread
    with pytest.raises(TypeError, match="dot_general"):
        bad(np.ones(3))


def test_a_started_compilation_starts_no_second_thread(monkeypatch):
    """The same function, argument shapes and x64 setting: one thread (a warm fit starts
    none); other shapes or another setting: a new one."""
    from fairest.utils import _compilation_cache

    monkeypatch.setattr(_compilation_cache, "_STARTED", set())

    @jax.jit
    def add(x, y):
        return x + y

    first = compile_in_background(add, (np.ones(3), np.ones(3)), x64=True)
    assert first is not None
    first.join()
    assert compile_in_background(add, (np.zeros(3), np.zeros(3)), x64=True) is None
    for args, x64 in (((np.ones(4), np.ones(4)), True), ((np.ones(3), np.ones(3)), False)):
        thread = compile_in_background(add, args, x64=x64)
        assert thread is not None
        thread.join()
