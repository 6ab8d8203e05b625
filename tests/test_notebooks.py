"""Notebooks are committed without outputs, execute top to bottom, and show their figures.

The notebooks are executed once per test run, by the documentation build (the fixture
``built_docs``, tests/conftest.py: MyST-NB runs each in quick mode, ``COLLOC_QUICK=1``, and
writes the executed copy to docs/_build/jupyter_execute/examples/); these tests read those
copies.  The kernels run as a fresh Jupyter kernel does: ``MPLBACKEND`` unset, so the kernel
picks matplotlib's inline backend itself.  A figure is shown as an ``image/png`` output exactly
once: a cell shows as many images as it makes figures.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from colloc_problems import pendulum
from nbclient import NotebookClient

import colloc as co

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))

#: A call that makes one figure: a matplotlib ``Figure(...)``, ``plt.subplots(...)`` or
#: ``plt.figure(...)``, or one of colloc's plots (``result.plot_fit()``, ``comparison.
#: plot_estimates()``, ``profile.plot()`` …, a study's ``.figure()``).
FIGURE_CALL = re.compile(r"(?<![\w.])Figure\(|\bplt\.(?:subplots|figure)\(|\.plot_\w+\(|\bprof\w*\.plot\(|"
                         r"\.figure\(\)")


def images(cell) -> int:
    """How many outputs of ``cell`` carry a PNG image."""
    return sum("image/png" in output.get("data", {}) for output in cell.outputs)


def run(nb, path: Path, monkeypatch, backend: str | None = None) -> None:
    """Execute ``nb`` in ``path``; ``backend``: the kernel's ``MPLBACKEND`` (None: unset, as a
    fresh Jupyter kernel, which then chooses the inline backend)."""
    if backend is None:
        monkeypatch.delenv("MPLBACKEND", raising=False)
    else:
        monkeypatch.setenv("MPLBACKEND", backend)
    NotebookClient(nb, timeout=None, kernel_name="python3", resources={"metadata": {"path": str(path)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{errors[0].ename}: {errors[0].evalue}" if errors else None


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds at least one narrative notebook"


def test_figure_calls_are_recognised():
    """The counter of figures per cell, on the forms the notebooks use."""
    cell = ('fig = Figure(figsize=(6, 3))\nax = fig.subplots(1, 2)\nfig, ax = plt.subplots(2)\n'
            'result.plot_fit()\nview.figure()\nprof.plot()\nax.plot(t, y)\nfrom matplotlib.figure import Figure\n'
            'fig.tight_layout()\nplt.tight_layout()\nax.figure\n')
    assert len(FIGURE_CALL.findall(cell)) == 5


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear outputs"
            assert "matplotlib.use(" not in cell.source, f"{path.name}: no forced backend (figures would not show)"


def test_every_notebook_is_an_example_page():
    """docs/examples/ links every notebook (so the documentation build executes it)."""
    linked = {p.name: p.resolve() for p in (REPO / "docs" / "examples").glob("*.ipynb")}
    assert {p.name: p for p in NOTEBOOKS} == linked, \
        "link each notebook into docs/examples/ (ln -s ../../notebooks/NAME.ipynb) and list it in its index.md"


@pytest.mark.xdist_group("docs")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes_and_shows_its_figures(path, built_docs):
    # Notebooks read COLLOC_QUICK=1 and run on short records in the default suite; the full
    # runs are in the slow lane (pytest -m slow tests/slow/test_notebooks_full.py).
    executed = built_docs.executed / "examples" / path.name
    assert executed.exists(), f"{path.name} was not executed; " + built_docs.failure()
    nb = nbformat.read(executed, as_version=4)
    assert [c.source for c in nb.cells] == [c.source for c in nbformat.read(path, as_version=4).cells], \
        f"{executed} is not the executed {path}"
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{errors[0].ename}: {errors[0].evalue}" if errors else None
    wrong = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            made, shown = len(FIGURE_CALL.findall(cell.source)), images(cell)
            if made != shown:
                wrong.append(f"cell {i} ({cell.source.splitlines()[0]!r}…): {made} figure(s), {shown} image(s)")
    assert not wrong, f"{path.name}: " + "; ".join(wrong)


@pytest.mark.parametrize("backend", [None, "Agg"], ids=["fresh-kernel", "MPLBACKEND=Agg"])
def test_result_figures_show_once_in_a_kernel(backend, tmp_path, monkeypatch, noisy_pendulum_trial):
    """``result.plot_fit()`` as a cell's value is one image, whatever the backend and whether
    pyplot was imported; ``path=`` writes the PNG as well; nothing enters pyplot's figure list."""
    result = co.solve(pendulum.problem(noisy_pendulum_trial), co.Midpoint(), solver=co.Ipopt(simulate=False))
    result.to_json(tmp_path / "result.json")
    cells = ["import colloc as co\nresult = co.Result.from_json('result.json')",
             "result.plot_fit()",
             "fig = result.plot_residuals(path='residuals.png')\nfig",
             "result.plot_fit();",  # a trailing ';' hides the value: no image
             "import matplotlib.pyplot as plt\nresult.plot_fit()",
             "plt.get_fignums()"]
    expected = [0, 1, 1, 0, 1, 0]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    run(nb, tmp_path, monkeypatch, backend)
    assert [images(c) for c in nb.cells] == expected
    assert nb.cells[-1].outputs[0]["data"]["text/plain"] == "[]"
    assert (tmp_path / "residuals.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
