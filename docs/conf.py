"""Sphinx configuration of colloc's documentation.

Build (warnings are errors; the notebooks are executed in quick mode unless ``COLLOC_QUICK=0``)::

    python -m sphinx -W --keep-going -n -b html docs docs/_build/html
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

# The examples run on short records unless asked otherwise (``COLLOC_QUICK=0``): the notebooks
# read COLLOC_QUICK=1 and the kernels inherit this process's environment.
os.environ.setdefault("COLLOC_QUICK", "1")
# Executed kernels choose matplotlib's inline backend themselves, as a fresh Jupyter kernel does.
os.environ.pop("MPLBACKEND", None)

import colloc

project = "colloc"
author = "the colloc developers"
copyright = "the colloc developers, BSD-3-Clause"
release = colloc.__version__
version = release

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "colloc_cli",
    "colloc_refs",
]

root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
suppress_warnings = ["myst.header"]
# Options such as --data stay two hyphens (no typographic dashes or quotes in generated text).
smartquotes = False

# MyST: ``$…$`` maths, ``:::`` fences, heading anchors for ``[…](page.md#anchor)`` links.
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# MyST-NB: every notebook is executed once per build (the test suite's only execution of
# them, tests/test_docs.py), in a temporary folder, with a generous per-cell timeout; an
# error in a cell fails the build.
nb_execution_mode = os.environ.get("COLLOC_DOCS_EXECUTE", "force")
nb_execution_timeout = 900 if os.environ["COLLOC_QUICK"] == "1" else 3600  # s per cell
nb_execution_in_temp = True
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

# autodoc + napoleon read the numpy-style docstrings.
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
# Annotations spelled with these names show the name, not its expansion (numpy.typing.ArrayLike
# is a union of eight protocols); signatures show annotations only where a function is overloaded.
autodoc_type_aliases = {"ArrayLike": "numpy.typing.ArrayLike", "NDArray": "numpy.typing.NDArray"}
napoleon_numpy_docstring = True
napoleon_google_docstring = False
# The docstrings' "Parameters" sections come first; the annotations fill in only the types a
# documented parameter's entry does not give (no second list).  The docstrings' type prose
# ("array, shape (n,)", "mapping of str to float") is shown as written (docs/_ext/colloc_refs.py).
autodoc_typehints_description_target = "documented_params"
napoleon_use_ivar = True

# Types of other libraries (CasADi, NumPy, pandas, matplotlib, Dask, the standard library's
# less common ones) are named in signatures but not documented here: no link, no warning.
nitpick_ignore_regex = [
    ("py:.*", r"(casadi|ca|numpy|np|pandas|pd|matplotlib|scipy|dask|distributed|numpy\.typing|npt)(\..*)?"),
    ("py:.*", r"(ArrayLike|NDArray|DataFrame|Series|Figure|Axes|MX|SX|DM|Function|Client|Path|PathLike)"),
    ("py:.*", r"(abc|collections\.abc|typing|os|pathlib|concurrent|argparse|io|datetime|enum|dataclasses)\..*"),
    # the prose of numpy-style type fields ("ndarray, shape (n, 3)", "mapping of str to float")
    ("py:class", r"(ndarray|array|array_like|array-like|shape|optional|sequence|mapping|callable|iterable|N|m|d|q)"),
    ("py:class", r".*\s.*"),  # several words: prose, not a name
]

html_theme = "furo"
html_title = f"colloc {release}"
html_static_path: list[str] = []
html_show_sourcelink = False
