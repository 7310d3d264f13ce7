"""Every Python example of the documentation runs.

Each Markdown page of ``docs/`` (and ``README.md``) is one test: its ```python blocks run
in order in one namespace, in a temporary working directory, with scikit-learn's global
configuration restored afterwards and warnings turned into errors (the suite's setting),
so an example that warns fails. A block opened with ```python no-run is shown but not
run. Tracebacks point at the page and line of the failing example. The ``>>>`` examples
of the docstrings (shown in the site's API reference) run as doctests.
"""

import doctest
import importlib
import re
import sys
import textwrap
from pathlib import Path

import pytest
import sklearn

ROOT = Path(__file__).resolve().parents[2]
BUILD_OUTPUTS = {"_build", "auto_examples", "generated"}  # written by the site's build
PAGES = sorted(
    page
    for page in (ROOT / "docs").rglob("*.md")
    if not BUILD_OUTPUTS & set(page.relative_to(ROOT).parts)
) + [ROOT / "README.md"]
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})(?P<info>[^`\n]*)\n(?P<body>.*?)^(?P=indent)(?P=ticks)[ \t]*$",
    re.S | re.M,
)
# pages that must teach by example
PAGES_WITH_EXAMPLES = [
    "docs/index.md",
    "docs/getting_started.md",
    "docs/user_guide/reweighting.md",
    "docs/user_guide/partial.md",
    "docs/user_guide/ermi.md",
    "docs/user_guide/constrained.md",
    "docs/user_guide/metrics.md",
    "docs/user_guide/model_selection.md",
    "docs/user_guide/regression.md",
    "docs/user_guide/selection.md",
    "docs/user_guide/deployment.md",
    "docs/user_guide/monitoring.md",
    "README.md",
]


def code_blocks(text):
    """``(line, language, flags, source)`` of every fenced block of a Markdown text."""
    blocks = []
    for match in FENCE.finditer(text):
        info = match["info"].strip().split()
        language, flags = (info[0].lower(), info[1:]) if info else ("", [])
        line = text.count("\n", 0, match.start("body")) + 1
        blocks.append((line, language, flags, textwrap.dedent(match["body"])))
    return blocks


def python_blocks(path):
    return [
        (line, source)
        for line, language, flags, source in code_blocks(path.read_text(encoding="utf-8"))
        if language in {"python", "py"} and "no-run" not in flags
    ]


def _page_id(path):
    return path.relative_to(ROOT).as_posix()


RUNNABLE = [page for page in PAGES if python_blocks(page)]


def test_code_block_parser():
    text = "x\n```python\na = 1\n```\n\n  ```python no-run\n  b = 2\n  ```\n````md\n```python\nc\n```\n````\n"
    blocks = code_blocks(text)
    assert [(line, language, flags) for line, language, flags, _ in blocks] == [
        (3, "python", []),
        (7, "python", ["no-run"]),
        (10, "md", []),
    ]
    assert blocks[1][3] == "b = 2\n"


@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES)
def test_guide_pages_have_examples(page):
    assert (ROOT / page).is_file(), f"{page} is missing"
    assert python_blocks(ROOT / page), f"{page} has no runnable ```python example"


@pytest.mark.parametrize("page", RUNNABLE, ids=[_page_id(page) for page in RUNNABLE])
def test_page_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples write their files (plots, reports) here
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace = {"__name__": "__main__"}
    with sklearn.config_context():  # restores any set_config(...) of the examples
        for line, source in python_blocks(page):
            # pad so that tracebacks show the line numbers of the page
            code = compile("\n" * (line - 1) + source, str(page), "exec")
            exec(code, namespace)


LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)|!\[[^\]]*\]\((?P<image>[^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=[_page_id(page) for page in PAGES])
def test_relative_links_resolve(page):
    """Links between pages, to their headings, to images and to the API point at something.

    ``[text](#fairest.metrics.ermi)`` links the API page of a public object (or module):
    the site resolves it; here the dotted name must be importable.
    """
    text = page.read_text(encoding="utf-8")
    prose = FENCE.sub("", text)
    broken = []
    for match in LINK.finditer(prose):
        target = match["target"] or match["image"]
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        if not path and fragment.startswith("fairest"):
            if not _is_public_object(fragment):
                broken.append(target)
            continue
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(target)
        elif fragment and destination.suffix == ".md" and fragment not in _anchors(destination):
            broken.append(target)
    assert not broken, f"{_page_id(page)}: broken links {broken}"


def _is_public_object(dotted):
    """Whether ``dotted`` names a public module or an object of its ``__all__``."""
    module_name, _, name = dotted.rpartition(".")
    for candidate, attribute in ((dotted, None), (module_name, name)):
        try:
            module = importlib.import_module(candidate)
        except ImportError:
            continue
        return attribute is None or attribute in getattr(module, "__all__", ())
    return False


def _anchors(path):
    """GitHub's anchors of the headings of a Markdown page."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    anchors = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", text, re.M):
        anchors.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return anchors


def _docstring_tests():
    from _public_api import api_objects

    finder = doctest.DocTestFinder(recurse=False)
    tests = []
    for item in api_objects():
        members = [item.obj] + [member for _, member in item.members]
        module = sys.modules[item.obj.__module__]
        for obj in members:
            if ">>>" in (obj.__doc__ or ""):
                found = finder.find(obj, item.name, module=False, globs=dict(vars(module)))
                tests += [test for test in found if test.examples]
    return tests


def test_docstring_examples(tmp_path, monkeypatch):
    """The ``>>>`` examples of the public docstrings (shown in the API reference) hold."""
    tests = _docstring_tests()
    assert tests, "no docstring examples found"
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with sklearn.config_context():
        for test in tests:
            runner.run(test)  # failures are printed (pytest shows them with the error)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples failed"
