"""MkDocs hook: the reference pages are generated from the code at build time, so they cannot go stale.

A page holds a marker line, ``<!-- generated: cli -->``, ``<!-- generated: config -->`` or
``<!-- generated: estimands -->``, which this hook replaces: the commands and options from
``simdesign.cli.build_parser()`` (the parser the command itself uses), the config keys from the validators'
own key tables and defaults, and the estimand registry (``simdesign.core.estimands``).
"""
from __future__ import annotations

import argparse
import re

MARKER = re.compile(r"^<!-- generated: (\w+) -->$", re.MULTILINE)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _option_row(action: argparse.Action) -> str:
    names = ", ".join(f"`{name}`" for name in action.option_strings) or f"`{action.dest}` (positional)"
    if action.choices:
        allowed = " \\| ".join(f"`{choice}`" for choice in action.choices)
    elif action.nargs == 0:
        allowed = "flag"
    else:
        allowed = f"`{action.metavar or action.dest.upper()}`"
    default = "" if action.default in (None, argparse.SUPPRESS, False) or action.required else f"`{action.default}`"
    if action.required and action.option_strings:
        default = "required"
    return f"| {names} | {allowed} | {default} | {_cell(action.help or '')} |"


def cli_reference() -> str:
    """Every command with its usage line and a table of its options."""
    from simdesign.cli import build_parser

    parser = build_parser()
    subparsers = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in subparsers._choices_actions}
    lines = []
    for name, command in subparsers.choices.items():
        usage = " ".join(command.format_usage().split())
        lines += [f"## `simdesign {name}`", "", _cell(helps.get(name) or command.description or ""), "",
                  "```text", usage.removeprefix("usage: "), "```", "",
                  "| option | values | default | meaning |", "|---|---|---|---|"]
        lines += [_option_row(action) for action in command._actions if not isinstance(action, argparse._HelpAction)]
        lines.append("")
    return "\n".join(lines)


def _rule(field) -> str:
    """A shared field's rule in words, from its declaration (simdesign.core.fields)."""
    from simdesign.core import fields

    if field.kind == fields.NAME:
        return "a non-empty string without slashes"
    if field.kind == fields.LEVEL:
        return "a number in (0, 1)"
    return {1: "a positive integer", 0: "a non-negative integer"}.get(field.minimum, f"an integer >= {field.minimum}")


def _key_table(title: str, keys, defaults: dict, note: str = "") -> list[str]:
    """One row per key; a field every kind shares gets its rule and help from its one declaration."""
    from simdesign.core.fields import SHARED_FIELDS

    lines = [f"## {title}", ""]
    if note:
        lines += [note, ""]
    lines += ["| key | default | rule | meaning |", "|---|---|---|---|"]
    for key in keys:
        field = SHARED_FIELDS.get(key)
        default = defaults.get(key, field.default if field is not None else None)
        shown = f"`{_cell(default)}`" if default is not None else ""
        rule, meaning = (_rule(field), _cell(field.help)) if field is not None else ("", "")
        lines.append(f"| `{key}` | {shown} | {rule} | {meaning} |")
    return lines + [""]


def config_reference() -> str:
    """The keys each kind of config accepts, read from the tables its validator checks against."""
    from simdesign.planning import planner
    from simdesign.studies.rates import config
    from simdesign.studies.metrics import metric_validation
    from simdesign.studies.panels import panel_study

    lines = []
    lines += _key_table("Simulation configs (`simdesign run`: rates and replications)", config.TOP_LEVEL_KEYS,
                        config.SCALAR_DEFAULTS, "Any other top-level key is an error. A config's `study:` key (or its "
                        "keys) chooses the study kind; every kind runs with `simdesign run`.")
    lines += _key_table("Plan configs (`simdesign plan`)", planner.PLAN_KEYS, {})
    lines += _key_table("Plan costs (`cost:`)", planner.COST_KEYS, {})
    lines += _key_table("Plan limits (`limits:`)", planner.LIMIT_KEYS, {})
    lines += _key_table("Plan search (`search:`)", planner.plan_search_keys(), {})
    lines += _key_table("Panel studies (crowd vs expert; `study: panels`)", panel_study.STUDY_KEYS, {})
    lines += _key_table("Metric validation (`study: metric-validation`)", metric_validation.KEYS, {})
    return "\n".join(lines)


def estimand_reference() -> str:
    """Every registered estimand (simdesign.core.estimands), with its study kinds, unit and plot label."""
    import simdesign.studies.metrics.metric_validation  # noqa: F401 -- each study kind's module registers its estimands
    import simdesign.studies.panels.panel_summary  # noqa: F401
    import simdesign.studies.sweep  # noqa: F401
    from simdesign.core.estimands import ESTIMANDS

    lines = ["| estimand | study kinds | unit | figure label | what it is |", "|---|---|---|---|---|"]
    lines += [f"| `{info.name}` | {', '.join(info.study_kinds)} | {info.unit} | {_cell(info.label)} | "
              f"{_cell(info.description)} |" for info in ESTIMANDS.values()]
    return "\n".join(lines)


GENERATORS = {"cli": cli_reference, "config": config_reference, "estimands": estimand_reference}


def on_page_markdown(markdown: str, page, config, files) -> str:
    def replace(match: re.Match) -> str:
        return GENERATORS[match.group(1)]()

    return MARKER.sub(replace, markdown)
