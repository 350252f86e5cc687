"""``simdesign draw-design``: a picture of who judges what (annotators x documents, blocks shaded).

Registered in :mod:`simdesign.cli` by :func:`add_parser`; the drawing is
:func:`simdesign.studies.design_picture.write_design_picture`. A design is given as in a config's
``designs:`` entry (``--design '{kind: block, blocks: 4, docs_per_block: 5, annotators_per_block: 3}'``,
list-valued fields zipped into several designs) or with flags (``--kind block --blocks 4 ...``), and is
checked by the config's own rules, so a bad one gets the message ``simdesign run`` gives.
"""
from __future__ import annotations

import yaml

from simdesign.core.designs import DESIGN_KINDS
from simdesign.core.errors import ConfigError
from simdesign.core.yamlio import load_yaml


def design_field_options() -> list[str]:
    """Every field of every registered design kind, once, in registration order."""
    return list(dict.fromkeys(field for cls in DESIGN_KINDS.values() for field in cls.fields))


def add_parser(subparsers) -> None:
    """Add the ``draw-design`` subcommand to the CLI's subparsers."""
    parser = subparsers.add_parser(
        "draw-design", help="draw designs (annotators x documents, blocks shaded, judgements per output) to PNG/PDF")
    parser.add_argument("--design", action="append", metavar="YAML",
                        help="a design as in a config's 'designs:' list, e.g. '{kind: block, blocks: 4, "
                             "docs_per_block: 5, annotators_per_block: 3}'; list-valued fields are zipped; "
                             "repeat for more designs")
    parser.add_argument("--kind", help=f"instead of --design: the design kind ({', '.join(DESIGN_KINDS)}) "
                                       "with its fields as options below")
    for field in design_field_options():
        kinds = [kind for kind, cls in DESIGN_KINDS.items() if field in cls.fields]
        parser.add_argument(f"--{field.replace('_', '-')}", dest=f"field_{field}", metavar="N",
                            help=f"with --kind {' or '.join(kinds)}")
    parser.add_argument("--out", required=True, help="picture file: .png, .pdf or .svg")
    parser.add_argument("--systems", type=int, default=5,
                        help="systems whose outputs each assigned pair judges, for the judgement counts (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draw for random designs (pool)")
    parser.add_argument("--columns", type=int, help="panels per row (default: up to 4 in a row)")
    parser.set_defaults(func=cmd_draw_design)


def design_mappings(args) -> list:
    """The designs the options describe, as config entries (not yet checked)."""
    given_fields = {field: getattr(args, f"field_{field}") for field in design_field_options()
                    if getattr(args, f"field_{field}") is not None}
    if args.design and (args.kind or given_fields):
        raise ConfigError("Give designs either with --design or with --kind and its fields, not both")
    if args.design:
        mappings = []
        for text in args.design:
            try:
                mappings.append(load_yaml(text))
            except yaml.YAMLError as exc:
                raise ConfigError(f"The '--design' option must be a YAML mapping like a config's designs entry, "
                                  f"e.g. '{{kind: block, blocks: 4, docs_per_block: 5, annotators_per_block: 3}}'; "
                                  f"could not parse {text!r}: {exc}") from exc
        return mappings
    if args.kind is None:
        raise ConfigError("Give a design: --design '{kind: block, blocks: 4, docs_per_block: 5, "
                          "annotators_per_block: 3}', or --kind with its fields")
    # Values are read as YAML, as in a config file, so that '-1' or 'abc' get the config's messages.
    return [{"kind": args.kind, **{field: load_yaml(value) for field, value in given_fields.items()}}]


def cmd_draw_design(args) -> int:
    from simdesign.runner.limits import study_size_problems
    from simdesign.studies.rates.config import parse_designs
    from simdesign.studies.design_picture import check_picture_path, write_design_picture

    if args.systems < 1:
        raise ConfigError(f"The '--systems' option must be a positive integer; got {args.systems}")
    if args.columns is not None and args.columns < 1:
        raise ConfigError(f"The '--columns' option must be a positive number of panels per row; got {args.columns}")
    check_picture_path(args.out)
    errors: list[str] = []
    designs = parse_designs(design_mappings(args), errors)
    if not errors:
        # the runner's ceiling, checked before the layout is drawn: a typo such as --blocks 100000000 would
        # otherwise fill the memory while the picture's assignment is built
        errors = study_size_problems(designs, args.systems)
    if errors:
        raise ConfigError(errors)
    path = write_design_picture(designs, args.out, n_systems=args.systems, seed=args.seed, columns=args.columns)
    print(f"wrote {path} ({', '.join(design.label for design in designs)})")
    return 0
