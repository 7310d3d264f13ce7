"""Benchmarks import fairest's public API or the internal entry points that
docs/contributing.md lists ("Internal entry points the benchmarks use"), so that a change
to one of those is a change to a documented interface, not a silent break of a script."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Internal entry points the benchmarks use"


def documented() -> dict[str, set[str]]:
    """``{module: names}`` from the contributing guide's list (a module alone: ``{"*"}``)."""
    text = (ROOT / "docs" / "contributing.md").read_text()
    assert SECTION in text, f"docs/contributing.md lost its section {SECTION!r}"
    body = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    listed: dict[str, set[str]] = {}
    for line in body.splitlines():
        match = re.match(r"- `(fairest[\w.]*)`(.*)", line.strip())
        if match:
            names = set(re.findall(r"`(\w+)`", match.group(2))) or {"*"}
            listed.setdefault(match.group(1), set()).update(names)
    return listed


def private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def is_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of this checkout."""
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def internal_imports(source: str):
    """``(module, name)`` for every import of a private fairest module in ``source``
    (``name`` is ``"*"`` where a whole private module is imported)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fairest"):
            for alias in node.names:
                if is_module(f"{node.module}.{alias.name}"):
                    if private(f"{node.module}.{alias.name}"):
                        yield f"{node.module}.{alias.name}", "*"  # a private module
                elif private(node.module) or alias.name.startswith("_"):
                    yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("fairest") and private(alias.name):
                    yield alias.name, "*"


SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmarks_import_public_or_documented_entry_points(script):
    listed = documented()
    missing = [
        f"{module}:{name}"
        for module, name in internal_imports(script.read_text())
        if name not in listed.get(module, set())
    ]
    assert not missing, (
        f"{script.name} imports undocumented internals {missing}: use the public API, or "
        f"list the entry point in docs/contributing.md ({SECTION!r}) with what it is for."
    )


def test_every_documented_entry_point_exists():
    import importlib

    for module, names in documented().items():
        assert not any(name.startswith("_") for name in names), (module, names)
        imported = importlib.import_module(module)
        for name in names - {"*"}:
            assert hasattr(imported, name), f"{module}.{name} is listed but does not exist"


def test_the_check_sees_private_names_and_modules():
    source = (
        "from fairest.selection._fair_ranking import _minimum_counts\n"
        "import fairest.reweighting._solve as module\n"
        "from fairest._solvers import _row_split\n"
        "from fairest.metrics import MetricFrame\n"
    )
    assert list(internal_imports(source)) == [
        ("fairest.selection._fair_ranking", "_minimum_counts"),
        ("fairest.reweighting._solve", "*"),
        ("fairest._solvers._row_split", "*"),
    ]
    assert "_minimum_counts" not in documented().get("fairest.selection._fair_ranking", set())
