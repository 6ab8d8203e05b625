"""The documentation site (docs/): built with warnings as errors, every local link resolving,
every shipped problem, command and public name on a page, and the contracts cited by their page.

The build is the one command of docs/contributing.md, run once per test run by the fixture
``built_docs`` (tests/conftest.py) in quick mode (``COLLOC_QUICK=1``); it executes every
notebook and example page, and tests/test_notebooks.py reads what it executed.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

import colloc

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"

pytestmark = pytest.mark.xdist_group("docs")


class _Links(HTMLParser):
    """The ``href``/``src`` values and the ``id``/``name`` anchors of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.anchors: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if value is None:
                continue
            if key in ("href", "src"):
                self.links.append(value)
            elif key in ("id", "name"):
                self.anchors.add(value)


def parse(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def broken_links(html: Path) -> list[str]:
    """Every local ``href``/``src`` of the pages under ``html`` that names no file, or an anchor
    that its page does not have, as ``page: link``."""
    pages = {page: parse(page) for page in html.rglob("*.html")}
    broken = []
    for page, parsed in pages.items():
        for link in parsed.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue  # another site: not checked here (no network in CI)
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(html)}: {link}")
            elif parts.fragment and target.suffix == ".html":
                anchors = pages[target].anchors if target in pages else parse(target).anchors
                if unquote(parts.fragment) not in anchors:
                    broken.append(f"{page.relative_to(html)}: {link} (no such anchor)")
    return broken


def test_link_check_finds_a_missing_file_and_a_missing_anchor(tmp_path):
    """The checker itself, on a hand-made site: it must be able to fail."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text('<a href="sub/page.html#here">ok</a> <a href="sub/page.html#gone">x</a>'
                                         '<img src="missing.png"> <a href="https://example.org/x">out</a>'
                                         '<a href="#top">self</a><p id="top"></p>')
    (tmp_path / "sub" / "page.html").write_text('<h1 id="here">Here</h1><a href="../index.html">up</a>')
    assert sorted(broken_links(tmp_path)) == ["index.html: missing.png",
                                              "index.html: sub/page.html#gone (no such anchor)"]


def test_the_site_builds_without_a_warning(built_docs):
    assert built_docs.returncode == 0, built_docs.failure()
    # Sphinx's own (a kernel's "[IPKernelApp] WARNING | …" on stderr is not one of them)
    warnings = [line for line in built_docs.log.splitlines() if re.search(r"(^|: )(WARNING|ERROR|CRITICAL):", line)]
    assert not warnings, "\n".join(warnings[:20])
    assert (built_docs.html / "index.html").exists()


def test_every_local_link_of_the_built_site_resolves(built_docs):
    assert built_docs.returncode == 0, built_docs.failure()
    broken = broken_links(built_docs.html)
    assert not broken, f"{len(broken)} broken: " + "; ".join(broken[:20])


def test_every_shipped_problem_has_an_example_page(built_docs):
    from colloc.definition.registry import problem_entry_points

    assert built_docs.returncode == 0, built_docs.failure()
    index = (built_docs.html / "examples" / "index.html").read_text(encoding="utf-8")
    rows = re.findall(r"<tr[^>]*>\s*<td><p><code[^>]*><span class=\"pre\">([\w-]+)</span></code></p></td>"
                      r"\s*<td><p>(.*?)</p></td>", index, re.DOTALL)
    pages = {name: re.findall(r'href="([^"#]+\.html)"', cell) for name, cell in rows}
    missing = [name for name in problem_entry_points() if not pages.get(name)]
    assert not missing, f"no example page for {missing}"
    for name, hrefs in pages.items():
        for href in hrefs:
            page = (built_docs.html / "examples" / href).read_text(encoding="utf-8")
            assert '<img alt=' in page or "<img src=" in page, f"{name}: {href} shows no figure"


def test_every_command_has_a_section_of_the_cli_reference(built_docs):
    from colloc.cli import build_parser

    assert built_docs.returncode == 0, built_docs.failure()
    anchors = parse(built_docs.html / "cli.html").anchors
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    expected = []
    for name, command in sub.choices.items():
        expected.append(f"colloc-{name}")
        for action in command._actions:
            if action.__class__.__name__ == "_SubParsersAction":
                expected += [f"colloc-{name}-{inner}" for inner in action.choices]
    assert {"colloc-identify", "colloc-spine-one-dof", "colloc-ship-motion"} <= set(expected)
    missing = [anchor for anchor in expected if anchor not in anchors]
    assert not missing, f"commands without a section: {missing}"


def test_every_public_name_is_in_the_api_reference():
    public = set(colloc.__all__) | set(colloc._LAZY)
    text = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "api").glob("*.md"))
    documented = set(re.findall(r"^\.\. auto(?:class|function|exception):: (\w+)$", text, re.MULTILINE))
    assert public - documented == set(), f"not in docs/api: {sorted(public - documented)}"
    assert "automodule:: colloc.signals" in text and "automodule:: colloc.kalman" in text


def test_the_contracts_are_a_page_and_every_citation_points_there():
    page = (DOCS / "contracts.md").read_text(encoding="utf-8")
    for n in range(1, 5):
        assert f"(contracts-{n})=\n## {n}. " in page
    stale = []
    for path in REPO.rglob("*"):
        if ".git" in path.parts or "_build" in path.parts or not path.is_file() \
                or path.suffix not in {".py", ".md", ".ipynb", ".txt", ".toml", ".cfg"}:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if re.search(r"\bCONTRACTS\b", line) and path.name != "test_docs.py":
                stale.append(f"{path.relative_to(REPO)}:{number}")
    assert not stale, "cite docs/contracts.md §N: " + ", ".join(stale[:20])


def test_the_markdown_examples_show_their_figures(built_docs):
    """The example pages written as MyST notebooks: each ``plot_`` cell shows one image."""
    assert built_docs.returncode == 0, built_docs.failure()
    for page in sorted((DOCS / "examples").glob("*.md")):
        if "file_format: mystnb" not in page.read_text(encoding="utf-8"):
            continue
        nb = nbformat.read(built_docs.executed / "examples" / f"{page.stem}.ipynb", as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code" and ".plot_" in cell.source:
                shown = sum("image/png" in o.get("data", {}) for o in cell.outputs)
                assert shown == 1, f"{page.name}: {cell.source!r} shows {shown} images"
