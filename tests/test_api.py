"""API hygiene: every public name is exported on purpose and documented."""

from __future__ import annotations

import inspect

import colloc as co


def public_objects():
    for name in co.__all__:
        yield name, getattr(co, name)


def test_all_names_exist_and_nothing_else_is_public():
    exported = set(co.__all__)
    assert all(hasattr(co, n) for n in exported)
    modules = {n for n, v in vars(co).items() if inspect.ismodule(v)}
    public = {n for n in vars(co) if not n.startswith("_")} - modules
    assert public == exported, f"public but not in __all__: {sorted(public - exported)}"


def test_every_public_object_and_method_has_a_docstring():
    missing = []
    for name, obj in public_objects():
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") or not callable(member) and not isinstance(member, property):
                    continue
                doc = member.__doc__ if not isinstance(member, property) else member.fget.__doc__
                if not (doc or "").strip():
                    missing.append(f"{name}.{attr}")
    assert not missing, f"undocumented: {missing}"


def test_documented_parameters_match_signatures():
    """Each parameter of the main entry points is named in its docstring."""
    for func in (co.solve, co.simulate, co.Problem, co.Ipopt, co.Model.state, co.Model.parameter,
                 co.Model.add_residual, co.Model.known_input, co.Model.free_input, co.Model.output,
                 co.Trial.from_csv):
        doc = (func.__doc__ or "") + (getattr(func, "__init__", None).__doc__ or "" if inspect.isclass(func) else "")
        params = [p for p in inspect.signature(func).parameters if p not in ("self", "cls")]
        undocumented = [p for p in params if p not in doc]
        assert not undocumented, f"{func.__qualname__}: {undocumented} not documented"
