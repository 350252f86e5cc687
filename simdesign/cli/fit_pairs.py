"""``simdesign fit`` and ``simdesign check`` on pairwise tables and battle logs.

The pairwise method's ``cli_fit`` and ``cli_check`` steps: :mod:`simdesign.cli` calls them when the table is a
pairwise table (a ``preferred`` column), an Arena battle log (a ``winner`` column) or ``--method`` names the
method. ``fit PAIRS --likert-model L --out M.yaml`` writes the Likert model L with the fitted pairwise parameters
(noise, tie band, position bias: :mod:`simdesign.realdata.pairwise_fit`) as its ``preferences``;
``check M PAIRS`` runs the predictive check of M's pairwise judgements (:mod:`simdesign.realdata.pairwise_check`).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from simdesign.cli.fit import check_directory
from simdesign.core.errors import ConfigError
from simdesign.methods import register_step
from simdesign.methods.pairwise import PAIRWISE
from simdesign.model import OrdinalMixedModel, load_model


def _read(args) -> pd.DataFrame:
    from simdesign.tables.recognise import describe, read_table_args

    frame, info = read_table_args(args)
    if info["method"] != PAIRWISE.name:
        raise ConfigError(f"This command needs a table of {PAIRWISE.label.lower()} preferences (a 'preferred' column "
                          f"or an Arena log's 'winner'); {args.judgements} was read as another method's table")
    print(describe(info))
    return frame


def fit(args) -> int:
    """``simdesign fit PAIRS --likert-model L --out M.yaml``."""
    from simdesign.tables.judgements import file_sha256
    from simdesign.realdata.fit import model_file_text
    from simdesign.realdata.pairwise_fit import fit_pairwise, with_preferences

    if not args.likert_model:
        raise ConfigError("A pairwise table fits the pairwise parameters (noise, tie band, position bias) of a Likert "
                          "model: give it with --likert-model (a preset such as coherence, or a model file from "
                          "'simdesign fit' on Likert scores)")
    if args.structure != "auto":
        raise ConfigError(f"--structure {args.structure} does not apply to a pairwise table: its random effects are "
                          "the --likert-model's, held fixed")
    frame = _read(args)
    likert = load_model(args.likert_model)
    if not isinstance(likert, OrdinalMixedModel):
        raise ConfigError(f"--likert-model must be a Likert model (a preset or a fitted model file); "
                          f"{args.likert_model} is a rank-only model")
    result = fit_pairwise(likert, frame, bootstrap=args.bootstrap, seed=args.seed)
    source = Path(args.judgements).name
    note = (f"preferences fitted by 'simdesign fit {source} --likert-model {Path(str(args.likert_model)).name}': "
            f"{result.describe()}; maximum composite marginal likelihood of the verdicts, parametric bootstrap SEs "
            f"(seed {args.seed}) conditional on the Likert parameters; data sha256 {file_sha256(args.judgements)}")
    model = with_preferences(likert, result.preferences(), name=args.name or Path(args.out).stem,
                             provenance=(likert.provenance + "\n" if likert.provenance else "") + note)
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(model_file_text(model.to_dict(), path, "The Likert model with fitted pairwise parameters "
                                                           "('preferences').\n" + note))
    print(f"fitted the pairwise parameters of {likert.name} to {result.n_comparisons} comparisons: {result.describe()}")
    print(result.pairs.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    for key in result.at_bound:
        print(f"WARNING: {key} is on its search bound" + (" (no ties in the table)" if key == "tie_band" else
                                                           ": the table does not identify it"), file=sys.stderr)
    print(f"wrote {path}")
    if args.check:
        _run_check(model, frame, check_directory(args), args.check_trials, args.seed)
    return 0


def check(args) -> int:
    """``simdesign check MODEL PAIRS``: the predictive check of a model's pairwise judgements."""
    from simdesign.cli.check import file_name_part

    model = load_model(args.model)
    frame = _read(args)
    _run_check(model, frame, args.out or Path("results") / f"check-{file_name_part(model.name)}", args.trials,
               args.seed)
    return 0


def _run_check(model, frame: pd.DataFrame, out_dir, trials: int, seed: int) -> None:
    from simdesign.realdata.pairwise_check import run_pairwise_check

    table, paths = run_pairwise_check(model, frame, out_dir, trials=trials, seed=seed)
    outside = table[~table["inside"]]
    print(f"predictive check of pairwise judgements: {trials} studies simulated with the data's own design; "
          f"{len(table) - len(outside)} of {len(table)} statistics inside the simulated 95% range")
    with pd.option_context("display.width", 160, "display.max_rows", 200):
        print(table[["statistic", "system", "other", "observed", "sim_low", "sim_high", "inside"]]
              .to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"wrote {', '.join(str(p) for p in paths)}")


# The pairwise method's command-line steps, given by the layer that owns them (simdesign fit and check call them)
register_step(PAIRWISE, "cli_fit", fit)
register_step(PAIRWISE, "cli_check", check)
