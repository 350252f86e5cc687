"""``simdesign check MODEL TABLE``: the predictive check of a model against real judgements."""
from __future__ import annotations

import re
from pathlib import Path

from simdesign.methods import get_method
from simdesign.model import load_model
from simdesign.cli.options import judgements_options, method_option
from simdesign.cli.fit import read_judgements_args, run_check_command


def cmd_check(args) -> int:
    from simdesign.tables.recognise import table_method

    method = table_method(args)
    model = load_model(args.model)
    model_method = get_method(model.methods[0])  # a rank-only model checks its rankings
    for own in (method, model_method):
        if "cli_check" in own.steps:  # a method with a check command of its own (Rank: simdesign/cli/fit_ranks.py)
            return own.step("cli_check")(args)
    if not method.is_default and "check" in method.steps:  # a plug-in's check step, called through the method
        return _method_check(args, method, model)
    frame, _ = read_judgements_args(args)
    run_check_command(model, frame, args.out or Path("results") / f"check-{file_name_part(model.name)}", args.trials,
                      args.seed)
    return 0


def _method_check(args, method, model) -> int:
    """``simdesign check`` of a method with a ``check`` step and no command of its own: its table read by its own
    reader, its check run, the table written as check.csv (the command called only Likert's check before)."""
    from simdesign.tables.recognise import read_table_args

    frame, _ = read_table_args(args)
    table, simulated = method.step("check")(model, frame, trials=args.trials, seed=args.seed)
    out_dir = Path(args.out or Path("results") / f"check-{file_name_part(model.name)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(out_dir / "check.csv", index=False)
    inside = int(table["inside"].sum())
    print(f"predictive check ({method.label}): {len(simulated)} studies simulated with the data's own design; "
          f"{inside} of {len(table)} statistics inside the simulated 95% range")
    print(f"wrote {out_dir / 'check.csv'}")
    return 0


def file_name_part(name: str) -> str:
    """A model's name made safe as part of a file name: a name read from a model file (``../../x``) never
    chooses where results are written."""
    return re.sub(r"[^\w.+-]+", "_", str(name)).strip("._") or "model"


def add_parser(sub) -> None:
    """Add the command to the CLI's subparsers."""
    check = sub.add_parser("check", help="predictive check: simulate studies with the data's design from a model "
                                         "and compare statistics with the data")
    check.add_argument("model", help="model file or preset")
    judgements_options(check)
    check.add_argument("--trials", type=int, default=200)
    check.add_argument("--out", help="directory for check.csv and check.png (default results/check-<model>)")
    check.add_argument("--seed", type=int, default=0)
    method_option(check)
    check.set_defaults(func=cmd_check)
