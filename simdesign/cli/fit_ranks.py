"""``simdesign fit`` and ``simdesign check`` on Rank tables.

The Rank method's ``cli_fit`` and ``cli_check`` steps (:mod:`simdesign.methods.rank`): :mod:`simdesign.cli`
calls them when the table is a Rank table (a ``rank`` column, or ``--method rank``) or the checked model
generates only rankings. ``fit`` writes a ``kind: rank_only`` model (the
rank-ordered logit with random slopes, :mod:`simdesign.realdata.rank_fit`) or, with
``--likert-model M``, the Likert model M with the fitted ``rank_noise`` (a joint model,
:mod:`simdesign.realdata.rank_noise`).
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.cli.fit import check_directory
from simdesign.core.errors import ConfigError
from simdesign.methods import register_step
from simdesign.methods.rank import RANK
from simdesign.model import OrdinalMixedModel, RankOnlyModel, load_model


def _read(args) -> tuple[pd.DataFrame, dict]:
    from simdesign.methods.rank import RANK
    from simdesign.tables.recognise import describe, read_table_args

    frame, info = read_table_args(args)
    if info["method"] != RANK.name:
        raise ConfigError("This command needs a Rank table (a 'rank' column or --method rank); "
                          f"{args.judgements} was read as Likert scores")
    print(describe(info))
    return frame, info


def _write(model, path, header: str) -> Path:
    from simdesign.realdata.fit import model_file_text

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(model_file_text(model.to_dict(), path, header))
    return path


def fit(args) -> int:
    """``simdesign fit RANKS.csv --out M.yaml [--likert-model L.yaml]``."""
    from simdesign.tables.judgements import file_sha256

    if args.structure not in ("auto", "paper", "maximal"):
        raise ConfigError(f"--structure {args.structure} does not apply to ranks: random intercepts cancel within a "
                          "ranking, so a rank model has random slopes only; use auto, paper or maximal (all the same: "
                          "(system|annotator) + (system|document) slopes)")
    frame, _ = _read(args)
    source = {"file": Path(args.judgements).name, "sha256": file_sha256(args.judgements), "rows": len(frame)}
    name = args.name or Path(args.out).stem
    if args.likert_model:
        model = _fit_rank_noise(args, frame, source, name)
    else:
        model = _fit_rank_only(args, frame, source, name)
        if model is None:
            return 1
    if args.check:
        run_check(model, frame, check_directory(args), args.check_trials, args.seed)
    return 0


def _fit_rank_noise(args, frame, source: dict, name: str) -> OrdinalMixedModel:
    from simdesign.realdata.rank_noise import fit_rank_noise

    likert = load_model(args.likert_model)
    if not isinstance(likert, OrdinalMixedModel):
        raise ConfigError(f"--likert-model must be a Likert model (preset or fitted model file); "
                          f"{args.likert_model} is a rank-only model")
    result = fit_rank_noise(likert, frame, bootstrap=args.bootstrap, seed=args.seed)
    note = (f"rank_noise fitted by 'simdesign fit {source['file']} --likert-model {Path(str(args.likert_model)).name}': "
            f"{result.describe()}; maximum composite marginal likelihood of the pairwise preferences, parametric "
            f"bootstrap SE (seed {args.seed}) conditional on the Likert parameters; data sha256 {source['sha256']}")
    joint = dataclasses.replace(likert, name=name, rank_noise=float(result.rank_noise),
                                provenance=(likert.provenance + "\n" if likert.provenance else "") + note)
    path = _write(joint, args.out, "Joint Likert/Rank model: the Likert model with a fitted rank_noise.\n" + note)
    print(f"fitted rank_noise for {likert.name} on {result.n_rankings} rankings: {result.describe()}")
    print(result.pairs.rename(columns={"observed": "observed_share_first_preferred", "fitted": "fitted_probability"})
          .to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if result.at_bound:
        print("WARNING: rank_noise is on its search bound: the rank data do not identify it", file=sys.stderr)
    print(f"wrote {path}")
    return joint


def _fit_rank_only(args, frame, source: dict, name: str) -> RankOnlyModel | None:
    from simdesign.realdata.rank_fit import RankFitError, fit_rank_only

    try:
        result = fit_rank_only(frame, reference=args.reference, name=name, source=source)
    except RankFitError as exc:
        print(f"error: the rank-only fit failed: {exc}", file=sys.stderr)
        return None
    model = result.model
    header = (f"Rank-only model fitted by 'simdesign fit {source['file']}' (rank-ordered logit with random slopes, "
              "standard Gumbel noise); load with simdesign.model.load_model or name it as 'model' in a config.")
    path = _write(model, args.out, header)
    print(f"fitted the rank-ordered logit with random slopes to {len(frame) // model.n_systems} rankings: status "
          f"{result.status}, Laplace log-likelihood {result.loglik:.2f}, {result.seconds:.1f} s of CPU")
    print("  effects (SE): " + ", ".join(f"{s}={b:+.3f} ({se:.3f})" for s, b, se
                                          in zip(model.systems, model.effects, result.beta_se))
          + f" (reference {model.systems[0]}; Gumbel-noise scale)")
    for label, cov in (("annotator", model.annotator_slope_cov), ("document", model.document_slope_cov)):
        print(f"  {label} slope SDs: {', '.join(f'{v:.3f}' for v in np.sqrt(np.diag(cov)))}")
    print(f"wrote {path}")
    if result.status == "not_converged":
        print(f"WARNING: the fit did not converge ({result.message})", file=sys.stderr)
    return model


def check(args) -> int:
    """``simdesign check MODEL RANKS.csv``: the predictive check of a rank model on a Rank table."""
    model = load_model(args.model)
    frame, _ = _read(args)
    run_check(model, frame, args.out or Path("results") / f"check-{model.name}", args.trials, args.seed)
    return 0


def run_check(model, frame: pd.DataFrame, out_dir, trials: int, seed: int) -> None:
    from simdesign.realdata.rank_check import run_rank_check

    table, paths = run_rank_check(model, frame, out_dir, trials=trials, seed=seed)
    outside = table[~table["inside"]]
    print(f"predictive check of rankings: {trials} studies simulated with the data's own design; "
          f"{len(table) - len(outside)} of {len(table)} statistics inside the simulated 95% range")
    shown = table[table["statistic"] != "share"]
    with pd.option_context("display.width", 160, "display.max_rows", 100):
        print(shown[["statistic", "system", "other", "observed", "sim_low", "sim_high", "inside"]]
              .to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"wrote {', '.join(str(p) for p in paths)}")


# Rank's command-line steps, given by the layer that owns them (simdesign fit and simdesign check call them)
register_step(RANK, "cli_fit", fit)
register_step(RANK, "cli_check", check)
