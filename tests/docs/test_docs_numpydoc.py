"""numpydoc validation of the public API.

The public API is the one of the site's API reference: ``fairest.__all__`` and the
``__all__`` of every public submodule (:func:`fairest.utils.discovery.public_api`), with
the public methods and properties that fairest defines (``_public_api.py`` walks them).
"""

import importlib
import inspect

import pytest
from sklearn.base import BaseEstimator

pytest.importorskip(
    "numpydoc", reason="numpydoc is needed for the docstring checks (pip install numpydoc)"
)

from _public_api import all_targets, api_objects
from numpydoc.validate import validate

# numpydoc codes enforced on every public object (see numpydoc's validation docs):
CHECKS = {
    "GL06": "unknown section",
    "GL07": "sections in the wrong order",
    "GL08": "no docstring",
    "SS01": "no summary",
    "SS02": "summary does not start with a capital letter",
    "SS03": "summary does not end with a period",
    "SS04": "summary has leading whitespace",
    "SS05": "summary starts with a third-person verb",
    "SS06": "summary longer than one line",
    "PR01": "parameter of the signature not documented",
    "PR02": "documented parameter not in the signature",
    "PR03": "parameters documented in the wrong order",
    "PR07": "parameter without a description",
    "PR08": "parameter description does not start with a capital letter",
    "PR09": "parameter description does not end with a period",
    "PR10": "no space around the colon of 'name : type'",
    "RT01": "no Returns section although the function returns something",
    "RT03": "return value without a description",
    "YD01": "no Yields section for a generator",
}


API = api_objects()
TARGETS = all_targets()
CLASSES = [item for item in API if item.kind == "class"]


def test_the_walk_covers_the_public_api():
    documented = {item.short for item in API}
    for module_name in (
        "fairest",
        "fairest.reweighting",
        "fairest.partial",
        "fairest.ermi",
        "fairest.constrained",
        "fairest.metrics",
        "fairest.model_selection",
        "fairest.plot",
        "fairest.datasets",
        "fairest.utils",
        "fairest.utils.discovery",
    ):
        exported = {
            name
            for name in importlib.import_module(module_name).__all__
            if not name.startswith("__")
        }
        assert exported <= documented, (
            f"{module_name}: {sorted(exported - documented)} not documented"
        )
    assert "fairest.reweighting.BADRClassifier.fit" in TARGETS  # methods are walked
    assert "fairest.BADRClassifier" not in TARGETS  # once, under the most specific module
    assert not any(target.endswith("_request") for target in TARGETS)  # sklearn's generated ones


@pytest.mark.parametrize("target", TARGETS)
def test_numpydoc(target):
    report = validate(target)
    failures = [
        f"{code} ({CHECKS[code]}): {message}"
        for code, message in report["errors"]
        if code in CHECKS
    ]
    assert not failures, (
        f"{target} ({report.get('file')}:{report.get('file_line')}):\n  " + "\n  ".join(failures)
    )


ESTIMATORS = [item for item in CLASSES if issubclass(item.obj, BaseEstimator)]


@pytest.mark.parametrize("item", ESTIMATORS, ids=[item.short for item in ESTIMATORS])
def test_estimators_cite_their_method(item):
    doc = inspect.getdoc(item.obj)
    assert "References\n----------" in doc, f"{item.name}: no References section"
    assert ".. [1]" in doc, f"{item.name}: the References section cites nothing"


def test_estimators_have_an_attributes_section():
    missing = [
        item.name for item in ESTIMATORS if "Attributes\n----------" not in inspect.getdoc(item.obj)
    ]
    assert not missing, f"estimators without an Attributes section: {missing}"
