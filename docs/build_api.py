"""Generate ``docs/api.md``, the API reference, from the numpydoc docstrings.

Run from anywhere with fairest importable::

    python docs/build_api.py          # writes docs/api.md next to this script
    python docs/build_api.py --check  # exit 1 if docs/api.md is out of date

The public API is ``fairest.__all__`` plus the ``__all__`` of every public submodule
(no ``_`` in its dotted path; the ``fairest`` command's module is left out). An object
exported by several modules is documented once, under the most specific one (for example
``BADRClassifier`` under ``fairest.reweighting``); ``fairest`` itself lists the
re-exports with links. Classes also document their public methods and properties that
are defined in fairest (scikit-learn's inherited ones, such as ``get_params``, are not
repeated). The numpydoc validation test (``tests/docs/test_docs_numpydoc.py``) walks the
same API through :func:`public_api`.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from numpydoc.docscrape import NumpyDocString

API_PAGE = Path(__file__).resolve().parent / "api.md"
SKIPPED_MODULES = {"fairest.cli"}


# ------------------------------------------------------------------------------------
# the public API
# ------------------------------------------------------------------------------------


@dataclass
class ApiObject:
    """One documented object: its canonical dotted name and the object."""

    name: str  # e.g. "fairest.reweighting.BADRClassifier"
    obj: object
    kind: str  # "class" or "function"
    members: list[tuple[str, object]] = field(default_factory=list)  # (attribute, member)

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[1]

    @property
    def module(self) -> str:
        return self.name.rsplit(".", 1)[0]


def public_modules() -> list[str]:
    """``fairest`` and its public submodules that define ``__all__``, sorted."""
    import fairest

    names = ["fairest"]
    for info in pkgutil.walk_packages(fairest.__path__, prefix="fairest."):
        parts = info.name.split(".")
        if any(part.startswith("_") for part in parts) or info.name in SKIPPED_MODULES:
            continue
        if hasattr(importlib.import_module(info.name), "__all__"):
            names.append(info.name)
    return sorted(names)


def _is_sklearn_request_method(name: str) -> bool:
    return name.startswith("set_") and name.endswith("_request")


def public_members(cls: type) -> list[tuple[str, object]]:
    """Public methods and properties of ``cls`` defined in fairest (not inherited from
    scikit-learn or the standard library), in alphabetical order."""
    members = []
    for name in sorted(dir(cls)):
        if name.startswith("_") or _is_sklearn_request_method(name):
            continue
        owner = next((base for base in cls.__mro__ if name in vars(base)), None)
        if owner is None or not owner.__module__.startswith("fairest"):
            continue
        raw = vars(owner)[name]
        if isinstance(raw, (staticmethod, classmethod)):
            raw = raw.__func__
        if isinstance(raw, property) or callable(raw):
            members.append((name, getattr(cls, name)))
    return members


def public_api() -> dict[str, list[ApiObject]]:
    """The documented objects of every public module, keyed by module name.

    Each object appears once, under the most specific module that exports it; the
    ``"fairest"`` entry keeps only what no submodule exports (its re-exports are listed
    separately by :func:`reexports`).
    """
    exported: dict[int, tuple[str, str, object]] = {}
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if name.startswith("__") or not (inspect.isclass(obj) or callable(obj)):
                continue
            previous = exported.get(id(obj))
            if previous is None or len(module_name.split(".")) > len(previous[0].split(".")):
                exported[id(obj)] = (module_name, name, obj)
    api: dict[str, list[ApiObject]] = {name: [] for name in public_modules()}
    for module_name, name, obj in exported.values():
        kind = "class" if inspect.isclass(obj) else "function"
        members = public_members(obj) if kind == "class" else []
        api[module_name].append(ApiObject(f"{module_name}.{name}", obj, kind, members))
    for objects in api.values():
        objects.sort(key=lambda item: (item.kind != "class", item.short.lower()))
    return api


def reexports() -> list[str]:
    """Names of ``fairest.__all__`` (without ``__version__``)."""
    import fairest

    return [name for name in fairest.__all__ if not name.startswith("__")]


def all_targets() -> list[str]:
    """Dotted names of every documented object and member (for numpydoc validation)."""
    targets = []
    for objects in public_api().values():
        for item in objects:
            targets.append(item.name)
            targets.extend(f"{item.name}.{member}" for member, _ in item.members)
    return targets


# ------------------------------------------------------------------------------------
# reStructuredText -> Markdown (the subset used in fairest's docstrings)
# ------------------------------------------------------------------------------------


def anchor(name: str) -> str:
    """GitHub's heading anchor of ``### `name` ``."""
    return re.sub(r"[^a-z0-9_\- ]", "", name.lower()).replace(" ", "-")


class Linker:
    """Resolves ``:class:`X``` style references to anchors of this page."""

    def __init__(self, api: dict[str, list[ApiObject]]):
        self.by_name: dict[str, str] = {}
        for module_name in api:
            self.by_name[module_name] = anchor(module_name)
        short_names: dict[str, list[str]] = {}
        for objects in api.values():
            for item in objects:
                self.by_name[item.name] = anchor(item.name)
                short_names.setdefault(item.short, []).append(item.name)
                for member, _ in item.members:
                    full = f"{item.name}.{member}"
                    self.by_name[full] = anchor(full)
                    self.by_name[f"{item.short}.{member}"] = anchor(full)
        for short, fulls in short_names.items():
            if len(fulls) == 1:
                self.by_name.setdefault(short, anchor(fulls[0]))
        for name in reexports():  # fairest.BADRClassifier -> its canonical section
            self.by_name.setdefault(f"fairest.{name}", self.by_name.get(name, ""))

    def link(self, target: str, text: str) -> str:
        key = target.strip().lstrip("~").rstrip("()")
        found = self.by_name.get(key)
        return f"[`{text}`](#{found})" if found else f"`{text}`"


_ROLE = re.compile(r":(?:py:)?(?P<role>[a-z]+):`(?P<body>[^`]+)`")
_LITERAL = re.compile(r"``(?P<body>.+?)``", re.S)
_CITATION = re.compile(r"\[(?P<label>[0-9A-Za-z]+)\]_")
_TABLE_BORDER = re.compile(r"^\s*=+( +=+)+\s*$")


def _inline(text: str, linker: Linker) -> str:
    def role(match):
        kind, body = match["role"], match["body"]
        if kind == "math":
            return f"${body.strip()}$"
        explicit = re.match(r"(?P<text>.*?)\s*<(?P<target>[^>]+)>$", body)
        if explicit:
            return linker.link(explicit["target"], explicit["text"])
        shown = body.lstrip("~").rsplit(".", 1)[-1] if body.startswith("~") else body
        if kind in {"func", "meth"} and not shown.endswith(")"):
            shown += "()"
        return linker.link(body, shown)

    # protect ``literals`` first, so that roles inside them stay verbatim
    literals: list[str] = []

    def literal(match):
        literals.append(match["body"])
        return f"\x00{len(literals) - 1}\x00"

    text = _LITERAL.sub(literal, text)
    text = _ROLE.sub(role, text)
    text = _CITATION.sub(lambda m: f"[{m['label']}]", text)
    text = re.sub(r"\x00(\d+)\x00", lambda m: _code_span(literals[int(m[1])]), text)
    return text


def _code_span(body: str) -> str:
    fence = "``" if "`" in body else "`"
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def _table(lines: list[str], linker: Linker) -> list[str]:
    """An RST simple table (borders of ``=``) as a Markdown table."""
    border = lines[0]
    spans = [(m.start(), m.end()) for m in re.finditer(r"=+", border)]
    rows = []
    for line in lines:
        if _TABLE_BORDER.match(line):
            continue
        cells = []
        for j, (start, end) in enumerate(spans):
            stop = spans[j + 1][0] if j + 1 < len(spans) else None
            cells.append(_inline(line[start:stop].strip(), linker))
        rows.append(cells)
    header = "| " + " | ".join(" " for _ in spans) + " |"
    rule = "|" + "|".join("---" for _ in spans) + "|"
    return [header, rule] + ["| " + " | ".join(cells) + " |" for cells in rows]


def rst_to_md(lines: list[str] | str, linker: Linker) -> list[str]:
    """Convert docstring text to Markdown lines (roles, literals, math, tables, notes)."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    out: list[str] = []
    pending: list[str] = []  # plain lines, converted together (markup may span lines)

    def flush():
        if pending:
            out.extend(_inline("\n".join(pending), linker).split("\n"))
            pending.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        directive = re.match(r"\.\. (?P<name>[a-z]+)::\s*(?P<rest>.*)$", stripped)
        if directive or stripped.endswith("::"):
            flush()
            # collect the indented body of the directive / literal block
            body, j = [], i + 1
            while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
                body.append(lines[j])
                j += 1
            while body and not body[-1].strip():
                body.pop()
            body_indent = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
            body = [b[body_indent:] for b in body]
            while body and not body[0].strip():
                body.pop(0)
            if directive and directive["name"] == "math":
                out += ["", "```math", *body, "```", ""]
            elif directive:  # note, warning, ...: a quoted paragraph
                text = " ".join([directive["rest"], *(b.strip() for b in body)]).strip()
                out += ["", f"> **{directive['name'].capitalize()}:** {_inline(text, linker)}", ""]
            else:
                lead = stripped[:-2].rstrip()
                if lead:
                    out.append(_inline(lead + ":", linker))
                out += ["", "```text", *body, "```", ""]
            i = j
            continue
        if _TABLE_BORDER.match(line):
            flush()
            j = i + 1
            while j < len(lines) and not _TABLE_BORDER.match(lines[j]):
                j += 1
            out += ["", *_table([b.strip() for b in lines[i : j + 1]], linker), ""]
            i = j + 1
            continue
        pending.append(line)
        i += 1
    flush()
    return out


# ------------------------------------------------------------------------------------
# rendering
# ------------------------------------------------------------------------------------

_PARAMETER_SECTIONS = [
    ("Parameters", "Parameters"),
    ("Other Parameters", "Other parameters"),
    ("Returns", "Returns"),
    ("Yields", "Yields"),
    ("Raises", "Raises"),
    ("Warns", "Warns"),
    ("Attributes", "Attributes"),
]


def _signature(item_name: str, obj, kind: str, *, method: bool = False) -> str | None:
    """The call signature, without annotations (``None`` for exceptions and warnings)."""
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return None
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    params = [p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()]
    if method and params and params[0].name == "self":
        params = params[1:]
    signature = signature.replace(parameters=params, return_annotation=inspect.Signature.empty)
    prefix = "class " if kind == "class" else ""
    one_line = f"{prefix}{item_name}{signature}"
    if len(one_line) <= 88:
        return one_line
    # one parameter per line
    parts, star_done = [], False
    for param in params:
        if param.kind is inspect.Parameter.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            star_done = True
        parts.append(str(param))
    return f"{prefix}{item_name}(\n" + "".join(f"    {part},\n" for part in parts) + ")"


def _type(text: str, linker: Linker) -> str:
    if "``" in text or re.search(r":[a-z]+:`", text):  # already marked up: convert it
        return f"*{_inline(text, linker)}*"
    return _code_span(text)


def _parameter_list(entries, linker: Linker) -> list[str]:
    out = []
    for entry in entries:
        name, type_, desc = entry.name, entry.type, entry.desc
        if name and type_:
            head = f"- **{_escape(name)}** : {_type(type_, linker)}"
        elif name:
            head = f"- **{_escape(name)}**"
        else:  # Returns without a name: the type only
            head = f"- {_type(type_, linker)}"
        body = rst_to_md(desc, linker)
        if any(line.strip() for line in body):
            head += " \\"  # hard line break before the description
        out.append(head)
        for line in body:
            out.append(f"  {line}" if line.strip() else "")
    return out


def _escape(text: str) -> str:
    return text.replace("*", r"\*").replace("_", r"\_")


def _references(lines: list[str], linker: Linker) -> list[str]:
    items: list[str] = []
    for line in lines:
        match = re.match(r"\s*\.\. \[(?P<label>[^\]]+)\]\s*(?P<text>.*)", line)
        if match:
            items.append(f"[{match['label']}] {match['text'].strip()}")
        elif line.strip() and items:
            items[-1] += " " + line.strip()
        elif line.strip():
            items.append(line.strip())
    return [f"- {_inline(text, linker)}" for text in items]


def _see_also(entries, linker: Linker) -> list[str]:
    out = []
    for names, desc in entries:
        links = ", ".join(linker.link(name, name.rsplit(".", 1)[-1] if name.startswith("~") else name)
                          for name, _role in names)
        text = " ".join(desc).strip()
        out.append(f"- {links}" + (f": {_inline(text, linker)}" if text else ""))
    return out


def _examples(lines: list[str], linker: Linker) -> list[str]:
    text = "\n".join(lines).strip("\n")
    if not text:
        return []
    blocks, code = [], []

    def flush_code():
        if code:
            blocks.extend(["```pycon", *code, "```", ""])
            code.clear()

    chunks = text.split("\n\n")
    for chunk in chunks:
        chunk_lines = chunk.splitlines()
        if chunk_lines and chunk_lines[0].lstrip().startswith(">>>"):
            if code:
                code.append("")
            code.extend(chunk_lines)
        else:
            flush_code()
            blocks.extend([*rst_to_md(chunk_lines, linker), ""])
    flush_code()
    return blocks


def render_docstring(doc_text: str, linker: Linker) -> list[str]:
    """Markdown of one numpydoc docstring (sections as bold captions)."""
    doc = NumpyDocString(doc_text)
    out: list[str] = []
    summary = " ".join(doc["Summary"]).strip()
    if summary:
        out += [_inline(summary, linker), ""]
    if doc["Extended Summary"]:
        out += [*rst_to_md(doc["Extended Summary"], linker), ""]
    for key, caption in _PARAMETER_SECTIONS:
        if doc[key]:
            out += [f"**{caption}**", "", *_parameter_list(doc[key], linker), ""]
    if doc["See Also"]:
        out += ["**See also**", "", *_see_also(doc["See Also"], linker), ""]
    for key in ("Notes", "Warnings"):
        if doc[key]:
            out += [f"**{key}**", "", *rst_to_md(doc[key], linker), ""]
    if doc["References"]:
        out += ["**References**", "", *_references(doc["References"], linker), ""]
    if doc["Examples"]:
        out += ["**Examples**", "", *_examples(doc["Examples"], linker), ""]
    return out


def render(api: dict[str, list[ApiObject]]) -> str:
    linker = Linker(api)
    out = [
        "# API reference",
        "",
        "<!-- Generated by docs/build_api.py from the numpydoc docstrings; do not edit. -->",
        "",
        "Every estimator takes `fit(X, y, *, sensitive_features=None, sample_weight=None)`",
        "and predicts without the sensitive features. The guides explain when to use what:",
        "see the [user guide](index.md#map-of-the-documentation).",
        "",
        "## Contents",
        "",
    ]
    for module_name, objects in api.items():
        if not objects and module_name != "fairest":
            continue
        out.append(f"- [`{module_name}`](#{anchor(module_name)})")
        for item in objects:
            out.append(f"  - [`{item.short}`](#{anchor(item.name)})")
    out.append("")
    for module_name, objects in api.items():
        module = importlib.import_module(module_name)
        if not objects and module_name != "fairest":
            continue
        out += ["---", "", f"## `{module_name}`", ""]
        out += [*rst_to_md(inspect.cleandoc(module.__doc__ or ""), linker), ""]
        if module_name == "fairest":
            out += ["Re-exported at the top level (`from fairest import ...`):", ""]
            out += [f"- {linker.link(f'fairest.{name}', name)}" for name in reexports()]
            out.append("")
        for item in objects:
            out += [f"### `{item.name}`", ""]
            signature = _signature(item.name, item.obj, item.kind)
            if signature:
                out += ["```", signature, "```", ""]
            out += render_docstring(inspect.getdoc(item.obj) or "", linker)
            for member_name, member in item.members:
                full = f"{item.name}.{member_name}"
                out += [f"#### `{full}`", ""]
                if isinstance(member, property):
                    out += ["*property*", ""]
                    doc = inspect.getdoc(member) or ""
                else:
                    signature = _signature(f"{item.short}.{member_name}", member, "function", method=True)
                    if signature:
                        out += ["```", signature, "```", ""]
                    doc = inspect.getdoc(member) or ""
                out += render_docstring(doc, linker)
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if api.md is out of date")
    parser.add_argument("--output", type=Path, default=API_PAGE)
    args = parser.parse_args(argv)
    text = render(public_api())
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output.name} is out of date: run python docs/build_api.py", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output.name} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
