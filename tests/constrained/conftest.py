"""Fixtures of the constrained family's tests."""

import jax
import pytest


@pytest.fixture
def x64():
    """Run the test with JAX's 64-bit mode on (scoped, as the estimators do)."""
    with jax.enable_x64(True):
        yield
