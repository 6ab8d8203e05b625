"""Cross-references of the docstrings to colloc's internal module paths, resolved.

The docstrings name objects where they live (``colloc.results.report.finalize``,
``colloc.definition.model.Variable``), but the reference documents the public names
(``colloc.finalize``).  A Python reference that Sphinx cannot resolve is pointed at the public
name of the same object when there is one; one to an internal helper that has no public name
(``colloc.solving.hybrid.solve_hybrid``, a module's own helper named without its module, a
word of a numpy-style type field such as ``shape``) is shown as code without a link.  A dotted
reference into another package still warns unless ``nitpick_ignore_regex`` names it.
"""

from __future__ import annotations

import importlib
import re

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

#: A Python reference that names a colloc internal (a dotted path into a sub-package, a
#: private name, or a module-level constant in capitals).
INTERNAL = re.compile(r"^(~?colloc\.(base|cli|definition|inference|multibody|results|seakeeping|shooting|signals|"
                      r"simulation|solving|stability|studies|transcription)\..+|_\w+|[A-Z][A-Z0-9_]+|"
                      r"colloc_problems(\..+)?)$")


def _public_name(target: str) -> str | None:
    """``colloc.<name>`` when ``target`` (a dotted path, or a bare name) is a public colloc object."""
    import colloc

    public = set(getattr(colloc, "__all__", ())) | set(getattr(colloc, "_LAZY", {}))
    name = target.rsplit(".", 1)[-1]
    if name not in public:
        return None
    if "." not in target:
        return f"colloc.{name}"
    module_path = target.rsplit(".", 1)[0]
    try:
        obj = getattr(importlib.import_module(module_path), name)
    except (ImportError, AttributeError):
        return None
    return f"colloc.{name}" if getattr(colloc, name) is obj else None


def _resolve(app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.Element):
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~")
    public = _public_name(target)
    if public is not None:
        domain = env.get_domain("py")
        for role in (node["reftype"], "class", "func", "obj"):
            found = domain.resolve_xref(env, node["refdoc"], app.builder, role, public, node, contnode)
            if found is not None:
                return found
    if INTERNAL.match(target) or target.startswith("colloc.") or "." not in target:
        return contnode  # an internal helper (or a docstring's prose type): code, no link, no warning
    return None


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("missing-reference", _resolve)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
