"""The public vocabulary of ``docs/conventions.md`` holds for every estimator."""

import inspect
import re
from pathlib import Path

import pytest
from numpydoc.docscrape import ClassDoc

from fairest.utils.discovery import all_estimators

CONVENTIONS = Path(__file__).resolve().parents[2] / "docs" / "conventions.md"
ESTIMATORS = [cls for _, cls in all_estimators()]
IDS = [cls.__name__ for cls in ESTIMATORS]


def documented_names() -> set[str]:
    """Every backticked name in the first column of the tables of conventions.md."""
    names = set()
    for line in CONVENTIONS.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `"):
            continue
        first_cell = line.split("|")[1]
        names.update(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", first_cell))
    return names


def public_parameters(cls) -> list[str]:
    return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]


def test_documented_names_parse():
    names = documented_names()
    assert {"metric", "tolerance", "fairness_weight", "alpha", "learning_rate"} <= names
    assert "rho" not in names


@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_public_parameters_are_in_the_vocabulary(cls):
    unknown = sorted(set(public_parameters(cls)) - documented_names())
    assert not unknown, (
        f"{cls.__name__} has public parameters outside docs/conventions.md: {unknown}"
    )


@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_fit_accepts_sample_weight(cls):
    if "sensitive_features" not in inspect.signature(cls.fit).parameters:
        pytest.skip("not a fairness-aware estimator (a transformer)")
    assert "sample_weight" in inspect.signature(cls.fit).parameters


@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_history_sits_behind_record_history(cls):
    attributes = {attr.name.split(":")[0].strip() for attr in ClassDoc(cls)["Attributes"]}
    if "history_" not in attributes:
        pytest.skip("no history_")
    assert "record_history" in public_parameters(cls)
    assert cls().record_history is False
