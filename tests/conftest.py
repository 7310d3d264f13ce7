"""Test configuration: 4 virtual CPU devices (for sharding tests), shared data location."""

import os
from pathlib import Path

import jax
import pytest

# Must run before any JAX computation; only the test process is affected, never fairest.
jax.config.update("jax_num_cpu_devices", 4)

SHARED_DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """The shared real-data folder; skips the test when it is absent."""
    folder = Path(os.environ.get("FAIREST_SHARED_DATASETS", SHARED_DATASETS))
    if not folder.is_dir():
        pytest.skip(f"shared datasets folder not found ({folder.name}); skipping")
    return folder
