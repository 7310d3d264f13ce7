"""``import fairest`` is cheap and lazy (PEP 562): public names load on first access, an
estimator's import loads only its own family, and every public name still resolves."""

import importlib
import json
import subprocess
import sys
import textwrap

import pytest

import fairest
from fairest.utils.discovery import _public_module_names

_HEAVY = ("jax", "pandas", "scipy", "sklearn", "optax", "matplotlib")
_FAMILIES = ("certified", "constrained", "ermi", "partial", "postprocessing", "reweighting")


def _loaded_after(code: str) -> list[str]:
    """The modules (top-level names and fairest subpackages) a fresh interpreter has
    loaded after running ``code``."""
    script = textwrap.dedent(code) + textwrap.dedent(
        """
        import json, sys
        print(json.dumps(sorted(sys.modules)))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_fairest_loads_no_heavy_dependency():
    """``import fairest`` alone imports none of JAX, pandas, SciPy, scikit-learn, optax or
    matplotlib, and no estimator family; so it leaves JAX's global config untouched."""
    loaded = _loaded_after("import fairest")
    assert [m for m in loaded if m.split(".")[0] in _HEAVY] == []
    assert [m for m in loaded if m.startswith("fairest.")] == [
        "fairest._config",
        "fairest.utils",
        "fairest.utils._lazy",
    ]


@pytest.mark.parametrize(
    ("name", "family", "absent"),
    [
        ("GroupWeightedClassifier", "reweighting", ("optax", "matplotlib")),
        ("LossGapConstrainedClassifier", "constrained", ("matplotlib",)),
        ("GroupThresholdClassifier", "postprocessing", ("jax", "optax", "matplotlib")),
    ],
)
def test_an_estimator_loads_only_its_family(name, family, absent):
    """What a joblib worker pays to unpickle an estimator: its own family, none of the
    others, no metric report / plotting code."""
    loaded = set(_loaded_after(f"import fairest; fairest.{name}"))
    families = {f for f in _FAMILIES if f"fairest.{f}" in loaded}
    assert families == {family}
    assert not loaded & {"fairest.plot", "fairest.metrics._frame", "fairest.datasets"}
    assert not loaded & set(absent)


def test_every_public_name_resolves():
    """``fairest.__all__`` and every public submodule's ``__all__``: each name resolves,
    is listed by ``dir`` and is the object its defining module holds."""
    for module_name in _public_module_names():
        module = importlib.import_module(module_name)
        names = getattr(module, "__all__", [])
        assert set(names) <= set(dir(module)), module_name
        for name in names:
            value = getattr(module, name)
            assert value is not None, f"{module_name}.{name}"
    assert fairest.metrics.MetricFrame.__module__ == "fairest.metrics._frame"
    from fairest import PrunedFairClassifier
    from fairest.constrained._pruned import PrunedFairClassifier as defined

    assert PrunedFairClassifier is defined


def test_star_import_and_unknown_names():
    namespace: dict = {}
    exec("from fairest import *", namespace)
    assert set(fairest.__all__) - {"__version__"} <= set(namespace)
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchEstimator'"):
        fairest.NoSuchEstimator  # noqa: B018
    with pytest.raises(ImportError):
        exec("from fairest.metrics import no_such_metric", {})


def test_submodules_are_attributes_on_first_access():
    loaded = _loaded_after(
        """
        import fairest
        assert callable(fairest.metrics.demographic_parity_difference)
        assert callable(fairest.datasets.make_grouped_classification)
        assert fairest.utils.discovery.all_estimators()
        """
    )
    assert "fairest.metrics._parity" in loaded
