"""Fixtures of the constrained family's tests."""

import jax
import pytest


@pytest.fixture
def x64():
    """Run the test with JAX's 64-bit mode on (scoped, as the estimators do)."""
    with jax.enable_x64(True):
        yield


def pytest_collection_modifyitems(items):
    """The cheap settings of these tests (a few steps on a few hundred synthetic rows) often
    end barely above the majority class, which the fit rightly warns about; the tests check
    other things. test_constrained_defaults checks that warning itself with pytest.warns."""
    mark = pytest.mark.filterwarnings("ignore:.*barely beats the majority class")
    for item in items:
        if "tests/constrained/" in str(item.path).replace("\\", "/"):
            item.add_marker(mark)
