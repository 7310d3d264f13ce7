"""The package's modules import each other without circles (docs/contributing.md: imports
run from the estimator down to its solvers and kernels). Every ``import`` counts, those
inside functions too: a lazy import back up is a circle all the same, only hidden. The
package faces (``__init__.py``, which only hand names on) are left out."""

import ast
import pathlib

import fairest

ROOT = pathlib.Path(fairest.__file__).parent


def _module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: pathlib.Path = ROOT) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere in its code)."""
    paths = {_module_name(path, root): path for path in root.rglob("*.py")}
    graph = {name: set() for name in paths}
    for name, path in paths.items():
        if path.name == "__init__.py":
            continue
        package = name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parents = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parents + ([base] if base else []))
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base
                    for alias in node.names
                ]
            else:
                continue
            graph[name].update(t for t in targets if t in paths and t != name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_module_of_the_package_imports_itself_back():
    assert circles(import_graph()) == []


def test_the_check_finds_a_circle_hidden_in_a_function(tmp_path):
    package = tmp_path / "fairest"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "_a.py").write_text("from fairest.sub._b import g\n")
    (package / "sub" / "_b.py").write_text("def g():\n    from fairest.sub import _a\n")
    (package / "sub" / "_c.py").write_text("from . import _a\n")
    assert circles(import_graph(package)) == [["fairest.sub._a", "fairest.sub._b"]]
