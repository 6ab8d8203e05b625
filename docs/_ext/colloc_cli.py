"""``.. colloc-cli::``: the command-line reference, read from ``colloc.cli.build_parser()``.

Every sub-command (and every sub-command of a sub-command, such as ``colloc spine one-dof``)
becomes a section titled ``colloc NAME``, with its usage, its description and one entry per
argument (flags, metavar, help, default and choices), so the page cannot drift from the parser.
"""

from __future__ import annotations

import argparse

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each sub-command of ``parser``, in the order added."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                found.append((name, helps.get(name, ""), sub))
    return found


def _text(value: object) -> str:
    return " ".join(str(value).split())


def _arguments(parser: argparse.ArgumentParser) -> nodes.definition_list:
    """One definition-list item per argument of ``parser`` (help and version flags left out)."""
    items = nodes.definition_list()
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.option_strings:
            metavar = "" if action.nargs == 0 else " " + (
                action.metavar if isinstance(action.metavar, str) else action.dest.upper())
            term_text = ", ".join(f"{flag}{metavar}" for flag in action.option_strings)
        else:
            term_text = action.metavar if isinstance(action.metavar, str) else action.dest
        help_text = action.help if action.help and action.help != argparse.SUPPRESS else ""
        if "%(" in help_text:
            params = dict(vars(action), prog=parser.prog)
            params = {k: (", ".join(map(str, v)) if k == "choices" and v else v) for k, v in params.items()}
            help_text = help_text % params
        extra = []
        if action.choices and "%(choices)" not in (action.help or ""):
            extra.append("choices: " + ", ".join(map(str, action.choices)))
        if action.required and action.option_strings:
            extra.append("required")
        if (action.default not in (None, False, argparse.SUPPRESS, [])
                and action.nargs != 0 and "%(default)" not in (action.help or "")):
            extra.append(f"default: {action.default}")
        definition = nodes.definition()
        body = _text(help_text)
        if extra:
            body = (body + " " if body else "") + "(" + "; ".join(extra) + ")"
        definition += nodes.paragraph(text=body or "—")
        item = nodes.definition_list_item()
        item += nodes.term("", "", nodes.literal(text=term_text))
        item += definition
        items += item
    return items


def _section(name: str, summary: str, parser: argparse.ArgumentParser, env) -> nodes.section:
    title = f"colloc {name}"
    section = nodes.section(ids=[nodes.make_id(title)], names=[nodes.fully_normalize_name(title)])
    section += nodes.title(text=title)
    if summary:
        section += nodes.paragraph(text=_text(summary[0].upper() + summary[1:]) + ".")
    formatter = argparse.HelpFormatter(parser.prog, width=88)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    section += nodes.literal_block(text=formatter.format_help().strip(), language="text")
    if parser.description:
        for paragraph in str(parser.description).split("\n\n"):
            section += nodes.paragraph(text=_text(paragraph))
    arguments = _arguments(parser)
    if len(arguments):
        section += arguments
    if parser.epilog:
        section += nodes.paragraph(text=_text(parser.epilog))
    for sub_name, sub_summary, sub in _subcommands(parser):
        section += _section(f"{name} {sub_name}", sub_summary, sub, env)
    return section


class CollocCli(SphinxDirective):
    """The sections of every ``colloc`` sub-command."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from colloc.cli import build_parser

        parser = build_parser()
        return [_section(name, summary, sub, self.env) for name, summary, sub in _subcommands(parser)]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("colloc-cli", CollocCli)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
