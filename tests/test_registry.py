"""The problem protocol and the registry (colloc.definition.registry): every registered problem
follows the protocol; a module that does not is refused once, by name, with every missing or
ill-typed attribute; sub-commands and shipped data of other packages come through entry points."""

from __future__ import annotations

import sys
import tomllib
import types
import typing
from importlib import metadata
from pathlib import Path

import pytest

from colloc import OptionsError, ProblemError
from colloc.cli import build_parser, main
from colloc.definition import registry
from colloc.definition.registry import (
    ProblemHooks,
    ProblemModule,
    check_problem_module,
    command_entry_points,
    problem_entry_points,
    problem_spec,
)

REPO = Path(__file__).resolve().parents[1]
ENTRY_POINTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
#: The sub-commands of colloc itself (the others come from the colloc.commands entry points).
BUILT_IN = {"identify", "demo", "compare", "delay-margin", "batch", "predict", "problems", "cohort"}


def _module(name: str, **attrs) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


def _good(name: str = "mine.problem", **extra) -> types.ModuleType:
    attrs = {"TRUE": {"p": 1.0}, "DEFAULT_DATA": ("mine", "mine.csv"), "REQUIRED_COLUMNS": ("y",),
             "load_trial": lambda path, missing="error": path, "problem": lambda trials, noise=0.1: trials}
    return _module(name, **{**attrs, **extra})


@pytest.fixture
def installed(monkeypatch):
    """Register extra entry points (group → {name: value}) for the test, beside the real ones."""
    real = metadata.entry_points
    extra: dict[str, dict[str, str]] = {}

    def entry_points(**params):
        group = params.get("group")
        eps = list(real(**params))
        names = {ep.name for ep in eps}
        for name, value in extra.get(group, {}).items():
            eps = [ep for ep in eps if ep.name != name] if name in names else eps
            eps.append(metadata.EntryPoint(name=name, value=value, group=group))
        return eps

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    return extra


# ---- every registered problem --------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ENTRY_POINTS["colloc.problems"]))
def test_every_registered_problem_follows_the_protocol(name):
    spec = problem_spec(name)
    assert spec.name == name and spec.module_name == ENTRY_POINTS["colloc.problems"][name]
    assert spec.required_columns and "time" not in spec.required_columns
    assert all(spec.data_path(*parts).exists() for parts in spec.default_data)
    assert bool(spec.own_methods) == (spec.identify_method is not None)


def test_the_registry_lists_what_pyproject_declares():
    assert set(ENTRY_POINTS["colloc.problems"]) <= set(problem_entry_points())
    assert set(ENTRY_POINTS["colloc.commands"]) <= set(command_entry_points())


def test_the_checks_are_the_protocols():
    """One check per attribute of ProblemModule and ProblemHooks, nothing else."""
    declared = set()
    for protocol in (ProblemModule, ProblemHooks):
        declared |= set(typing.get_type_hints(protocol, localns=vars(registry)))
        declared |= {k for k, v in vars(protocol).items() if callable(v) and not k.startswith("_")}
    assert declared == {a.name for a in registry._ATTRIBUTES}
    assert {a.name for a in registry._ATTRIBUTES if a.required} == \
        set(typing.get_type_hints(ProblemModule)) | {"load_trial", "problem"}


# ---- a module that does not follow it ------------------------------------------------------------------
def test_a_module_off_the_protocol_is_refused_with_every_fault_named():
    bad = _module("mine.bad", TRUE=[1.0], REQUIRED_COLUMNS="y", load_trial=lambda: None, problem=lambda trials: None,
                  OWN_METHODS=("fast",), IPOPT_OPTIONS={"hessian": "gauss-newton"}, body=lambda height: {})
    with pytest.raises(ProblemError) as err:
        check_problem_module(bad, "bad")
    text = str(err.value)
    assert text.startswith("problem 'bad' (mine.bad) does not follow the problem protocol")
    for fault in ("TRUE is [1.0], not a mapping parameter name → number",
                  "DEFAULT_DATA is missing",
                  "REQUIRED_COLUMNS is 'y', not a tuple of column names",
                  "load_trial is <lambda>(), not a function load_trial(path)",
                  "body is <lambda>(height), not a function body(height=, mass=)",
                  "OWN_METHODS is ('fast',) but identify_method is missing"):
        assert fault in text, (fault, text)
    assert "IPOPT_OPTIONS" not in text and "problem is" not in text  # the good ones are not named


def test_hooks_are_read_when_present_and_none_when_absent():
    spec = check_problem_module(_good())
    assert spec.name == "mine.problem" and spec.default_data == (("mine", "mine.csv"),)
    assert spec.identify_result is None and spec.own_methods == () and spec.ipopt_options == {}
    assert "missing" in spec.keywords["load_trial"] and "columns" not in spec.keywords["load_trial"]
    assert "noise" in spec.keywords["problem"]
    own = check_problem_module(_good(OWN_METHODS=("fast",), COLUMNS=("time", "y", "u"), DEFAULT_DATA=(("a",), ("b",)),
                                     identify_method=lambda trials, *, method, **options: method))
    assert own.own_methods == ("fast",) and own.identify_method([], method="fast") == "fast"
    assert own.keywords["identify_method"].accepts("time_limit") and "time_limit" not in own.keywords["identify_method"]
    assert own.default_data == (("a",), ("b",))
    both = check_problem_module(_module("m", **{**vars(_good()), "COLUMNS": ("time", "z")}))
    assert both.required_columns == ("y",)  # REQUIRED_COLUMNS first
    cols = check_problem_module(_module("m", **{k: v for k, v in vars(_good()).items() if k != "REQUIRED_COLUMNS"},
                                        COLUMNS=("time", "z", "w")))
    assert cols.required_columns == ("z", "w")


def test_identify_method_without_own_methods_is_refused():
    with pytest.raises(ProblemError, match="identify_method is defined but OWN_METHODS"):
        check_problem_module(_good(identify_method=lambda trials, **options: None))


def test_unknown_and_unloadable_problems(installed, monkeypatch):
    with pytest.raises(OptionsError, match=r"unknown problem 'nope'; available: .*pendulum"):
        problem_spec("nope")
    installed["colloc.problems"] = {"ghost": "h1_registry_ghost_module"}
    with pytest.raises(ProblemError, match=r"problem 'ghost': its entry point colloc.problems ghost = "
                                           r"h1_registry_ghost_module cannot be loaded \(ModuleNotFoundError"):
        problem_spec("ghost")
    monkeypatch.setitem(sys.modules, "h1_registry_half", _module("h1_registry_half", TRUE={}))
    installed["colloc.problems"] = {"half": "h1_registry_half"}
    with pytest.raises(ProblemError, match=r"problem 'half' \(h1_registry_half\) does not follow"):
        problem_spec("half")


def test_the_command_line_refuses_a_module_off_the_protocol_in_one_line(installed, monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "h1_registry_half", _module("h1_registry_half", TRUE={}))
    installed["colloc.problems"] = {"half": "h1_registry_half"}
    (tmp_path / "r.csv").write_text("time,y\n0,1\n")
    code = main(["identify", "half", "--data", str(tmp_path / "r.csv")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "problem 'half' (h1_registry_half) does not follow the problem protocol" in err
    assert "DEFAULT_DATA is missing" in err and "load_trial is missing" in err


# ---- shipped data --------------------------------------------------------------------------------------
def test_shipped_data_come_from_the_hook_or_the_package_entry_point(installed, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "mine.csv").write_text("time,y\n0,1\n")
    hooked = check_problem_module(_good(data_path=lambda *parts: tmp_path.joinpath(*parts)))
    assert hooked.data_path("mine", "mine.csv") == tmp_path / "mine" / "mine.csv"
    plain = check_problem_module(_good("h1pkg.problem"))
    with pytest.raises(ProblemError, match=r"problem 'h1pkg.problem' ships no data: it has no data_path hook and "
                                           r"no colloc.data entry point named 'h1pkg'"):
        plain.data_path("mine", "mine.csv")
    installed["colloc.data"] = {"h1pkg": "colloc_problems._data:data_path"}
    assert plain.data_path("pendulum", "pendulum.csv") == problem_spec("pendulum").data_path("pendulum", "pendulum.csv")
    installed["colloc.data"] = {"h1pkg": "colloc_problems._data:__all__"}
    with pytest.raises(ProblemError, match=r"colloc.data entry point colloc_problems._data:__all__ is not a function"):
        plain.data_path("pendulum", "pendulum.csv")


# ---- sub-commands --------------------------------------------------------------------------------------
def _commands(parser) -> set[str]:
    return set(parser._subparsers._group_actions[0].choices)


def test_colloc_lists_its_commands_and_the_plugged_ones():
    assert _commands(build_parser()) == BUILT_IN | set(ENTRY_POINTS["colloc.commands"])
    assert {"spine", "ship-motion"} <= set(ENTRY_POINTS["colloc.commands"])
    assert all(value.startswith("colloc_problems.") for value in ENTRY_POINTS["colloc.commands"].values())


def test_a_broken_command_plugin_is_left_out_with_a_warning(installed, capsys):
    installed["colloc.commands"] = {"ghost": "h1_registry_ghost_module:add_parser",
                                    "wrong": "colloc_problems.spine.command:add_stability_parser"}  # adds stability
    parser = build_parser()
    err = capsys.readouterr().err
    assert "colloc: warning: command 'ghost' (colloc.commands) left out: command 'ghost': its entry point" in err
    assert ("command 'wrong' (colloc.commands) left out: colloc_problems.spine.command:add_stability_parser "
            "did not add and return the parser of 'colloc wrong'") in err
    assert {"ghost", "wrong"}.isdisjoint(_commands(parser)) and BUILT_IN <= _commands(parser)
