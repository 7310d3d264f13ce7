"""The documentation site builds, with every public name and every gallery example.

The full build (``sphinx-build -W``, warnings are errors, gallery executed) takes a minute
or two and is marked slow; CI builds the site in ``.ci/run`` instead. The API listing
that the build generates is checked here quickly.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fairest.utils.discovery import public_api

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))


def _load_docs_helpers():
    spec = importlib.util.spec_from_file_location("fairest_docs", DOCS / "_ext" / "fairest_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_listing_covers_the_public_api(tmp_path):
    """Every public class and function gets an autosummary entry, under its module."""
    listing = tmp_path / "_listing.rst"
    _load_docs_helpers().write_api_listing(listing)
    text = listing.read_text(encoding="utf-8")
    sections = text.split(".. py:module:: ")[1:]
    by_module = {section.split("\n", 1)[0]: section for section in sections}
    api = public_api()
    assert set(by_module) == set(api)
    for module_name, entries in api.items():
        entries_listed = {
            line.strip()
            for line in by_module[module_name].splitlines()
            if line.startswith("   ") and not line.strip().startswith(":")
        }
        for name, _ in entries:
            assert name.rsplit(".", 1)[1] in entries_listed, f"{name} is not in the API listing"


def test_gallery_examples_are_sphinx_gallery_scripts():
    assert len(EXAMPLES) >= 6, "the gallery lost examples"
    for path in EXAMPLES:
        text = path.read_text(encoding="utf-8")
        assert text.startswith('"""\n'), f"{path.name}: no docstring title"
        title, underline = text.splitlines()[1:3]
        assert underline == "=" * len(title), f"{path.name}: the title's underline is off"
        assert "\n# %%\n" in text, f"{path.name}: no '# %%' cells"
        assert "plt." in text, f"{path.name}: draws no matplotlib figure"


@pytest.mark.slow
def test_site_builds(tmp_path):
    for module in (
        "sphinx",
        "pydata_sphinx_theme",
        "sphinx_gallery",
        "myst_parser",
        "numpydoc",
        "matplotlib",
    ):
        pytest.importorskip(module, reason='the site needs the docs extra: pip install ".[docs]"')
    html = tmp_path / "html"
    # run_stale_examples: execute the gallery even where docs/auto_examples holds the
    # output of an earlier build (sphinx-gallery skips unchanged scripts otherwise)
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-b",
        "html",
        "-D",
        "sphinx_gallery_conf.run_stale_examples=True",
        "-d",
        str(tmp_path / "doctrees"),
        str(DOCS),
        str(html),
    ]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    result = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200
    )
    assert result.returncode == 0, (
        f"sphinx-build failed:\n{result.stdout[-5000:]}\n{result.stderr[-5000:]}"
    )

    for page in (
        "index",
        "getting_started",
        "choosing_a_method",
        "conventions",
        "contributing",
        "user_guide/index",
        "user_guide/reweighting",
        "user_guide/partial",
        "user_guide/ermi",
        "user_guide/constrained",
        "user_guide/metrics",
        "user_guide/model_selection",
        "api/index",
        "auto_examples/index",
    ):
        assert (html / f"{page}.html").is_file(), f"{page}.html was not built"
    for entries in public_api().values():
        for name, _ in entries:
            assert (html / "api" / "generated" / f"{name}.html").is_file(), (
                f"no API page for {name}"
            )
    for path in EXAMPLES:
        page = (html / "auto_examples" / f"{path.stem}.html").read_text(encoding="utf-8")
        assert f"sphx_glr_{path.stem}_001.png" in page, f"{path.name}: no figure on its page"
