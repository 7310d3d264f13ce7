"""Test configuration: cheaper XLA compilation, shared data location."""

import os
from pathlib import Path

import pytest

# Test problems are tiny, so XLA compilation dominates the suite: cheaper LLVM passes make
# compiles about 4x faster at a small cost in run time (measured on the Newton solver).
os.environ["XLA_FLAGS"] = " ".join(
    [
        os.environ.get("XLA_FLAGS", ""),
        "--xla_backend_optimization_level=0",
        "--xla_llvm_disable_expensive_passes=true",
    ]
).strip()

SHARED_DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """The shared real-data folder; skips the test when it is absent."""
    folder = Path(os.environ.get("FAIREST_SHARED_DATASETS", SHARED_DATASETS))
    if not folder.is_dir():
        pytest.skip(f"shared datasets folder not found ({folder.name}); skipping")
    return folder


def _compilations(function) -> list:
    """What XLA compiled during ``function()``: JAX's compilation log messages up to their
    shapes (``"Compiling jit(name)"``), in order, repeats kept."""
    import logging

    import jax

    messages = []

    class Collect(logging.Handler):
        def emit(self, record):
            message = record.getMessage()
            if "ompiling" in message:
                messages.append(message.split(" with")[0])

    handler, logger = Collect(level=logging.DEBUG), logging.getLogger("jax")
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        with jax.log_compiles(True):
            function()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
    return messages


@pytest.fixture
def compilations():
    """``compilations(function)``: JAX's ``"Compiling jit(name)"`` messages of ``function()``."""
    return _compilations


@pytest.fixture
def count_compilations():
    """``count_compilations(function)``: how many XLA compilations ``function()`` triggers."""
    return lambda function: len(_compilations(function))


@pytest.fixture(autouse=True, scope="module")
def release_compiled_code():
    """Drop JAX's compiled executables after every test module.

    The suite compiles thousands of small XLA programs in one process; each keeps memory
    mappings alive, and past the kernel's limit on mappings per process (65,530 by
    default) the next compilation crashes the interpreter. Tests within a module still
    share their compiled code.
    """
    yield
    import jax

    jax.clear_caches()


@pytest.fixture
def oracle_tuning():
    """Set fields of BADR's ``ORACLE_TUNING`` for one test: ``oracle_tuning(name=value)``.

    The changes are undone at the test's end (``Tuning.override``), so a small problem can
    take the large-data code path without patching module attributes.
    """
    import contextlib

    from fairest.reweighting._defaults import ORACLE_TUNING

    with contextlib.ExitStack() as stack:
        yield lambda **changes: stack.enter_context(ORACLE_TUNING.override(**changes))
