"""``simdesign fit TABLE --likert-model M --out judge.yaml`` on a judge-plus-human table (scores or pairwise verdicts).

Fits the judge (:mod:`simdesign.realdata.judge_fit`) against the humans' Likert model M and writes a judge file: a
mapping of the judge model's fields (``name, scale, levels, correlation, bias, assumes``) that
:func:`simdesign.model.judge.parse_judge` reads (``parse_judge(load_yaml(path), model)``, or pasted as a
config's ``judge``), with the fit's full record (thresholds, location and spread, bootstrap SEs) in its header
comments and under ``assumes``. ``--check`` then runs the judge's predictive check (``check.csv``, ``check.png``).
A table of pairwise verdicts (a ``judge_preferred`` column, :mod:`simdesign.realdata.judge_pairwise`) fits a
pairwise judge (:mod:`simdesign.realdata.judge_pairwise_fit`: correlation, position bias, tie band, biases).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from simdesign.core.errors import ConfigError
from simdesign.model import OrdinalMixedModel, load_model


def _numbers(values) -> str:
    return "[" + ", ".join(f"{v:.3f}" for v in values) + "]"


def judge_file_text(fit, source: str, likert_name: str, name: str, seed: int) -> str:
    """The judge file (module docstring) for a fitted judge."""
    from simdesign.realdata.judge_fit import CONTINUOUS, ORDINAL

    se = fit.se
    record = (f"fitted by 'simdesign fit {source} --likert-model {likert_name}': correlation {fit.correlation:.3f}"
              f" (SE {se.get('correlation', float('nan')):.3f}), biases centred over the systems (SE "
              f"{_numbers(se.get('bias', {}).values())}), ")
    if fit.scale == ORDINAL:
        record += (f"thresholds on the latent scale {_numbers(fit.thresholds)} (SE {_numbers(se.get('thresholds', []))})"
                   f" for the scores {list(fit.levels)}")
    else:
        record += (f"reported = {'expit' if fit.scale != CONTINUOUS else ''}(location + spread J*), location "
                   f"{fit.location:.3f}, spread {fit.spread:.3f}")
    record += (f"; SEs from {se.get('resamples', 0)} bootstrap resamples of the documents (seed {seed})"
               + (f". Simulated scores are 1..{len(fit.levels)} for the observed {list(fit.levels)}, cut at the "
                  "fitted thresholds" if fit.scale == ORDINAL else ""))
    data = {"name": name, "scale": fit.scale, "correlation": round(float(min(fit.correlation, 1.0)), 6),
            "bias": {k: round(v, 6) for k, v in fit.bias.items()}, "assumes": record}
    if fit.scale == ORDINAL:
        data["levels"] = len(fit.levels)
        data["thresholds"] = [round(float(v), 6) for v in fit.thresholds]
    header = ("A judge fitted from a judge-plus-human table (simdesign.realdata.judge_fit); load with "
              "simdesign.model.judge.parse_judge(load_yaml(path), model) or paste as a config's 'judge'.\n" + record)
    return "".join(f"# {line}\n" for line in header.splitlines()) + yaml.safe_dump(data, sort_keys=False, width=110)


def fit(args) -> int:
    """``simdesign fit TABLE --likert-model M --out judge.yaml [--check]``."""
    from simdesign.realdata.judge_fit import fit_judge, judge_check
    from simdesign.tables.judge import check_judge_table, read_judge_table

    likert = _likert_model(args)
    table, info = check_judge_table(read_judge_table(args.judgements, args.columns), systems=list(likert.systems))
    if len(info["judges"]) > 1:
        raise ConfigError(f"{args.judgements} holds several judges {info['judges']}: fit one at a time "
                          "(a table with one judge_name)")
    result = fit_judge(likert, table, bootstrap=max(args.bootstrap, 0), seed=args.seed)
    name = args.name or Path(args.out).stem
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(judge_file_text(result, Path(args.judgements).name, Path(str(args.likert_model)).name, name,
                                    args.seed))
    print(f"fitted the judge of {args.judgements} against {likert.name}: correlation {result.correlation:.3f}, "
          f"bias " + ", ".join(f"{s}={b:+.3f}" for s, b in result.bias.items()))
    print(f"wrote {path}")
    if args.check:
        from simdesign.realdata.check import check_title, write_check

        out_dir = Path(args.check_out) if args.check_out else Path(args.out).parent  # as fit --check
        checked, simulated = judge_check(likert, result, table, trials=args.check_trials, seed=args.seed)
        paths = write_check(checked, simulated, out_dir, "check",
                            check_title(f"judge '{name}' with {likert.name}", args.check_trials, checked))
        with pd.option_context("display.width", 160):
            print(checked[checked["category"].isna()][["statistic", "system", "observed", "sim_low", "sim_high",
                                                        "inside"]].to_string(index=False,
                                                                             float_format=lambda v: f"{v:.3f}"))
        print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def _likert_model(args):
    if not args.likert_model:
        raise ConfigError("A judge-plus-human table fits the judge against the humans' Likert model: give it with "
                          "--likert-model (a preset such as coherence, or a model file from 'simdesign fit')")
    likert = load_model(args.likert_model)
    if not isinstance(likert, OrdinalMixedModel):
        raise ConfigError(f"--likert-model must be a Likert model; {args.likert_model} is a rank-only model")
    return likert


def pairwise_judge_file_text(fit, source: str, likert_name: str, name: str, seed: int) -> str:
    """The judge file for a fitted pairwise judge (its fields, the fit's record in comments and ``assumes``)."""
    from simdesign.realdata.judge_pairwise_fit import position_bias_test

    se = fit.se
    record = (f"fitted by 'simdesign fit {source} --likert-model {likert_name}': correlation {fit.correlation:.3f} "
              f"(SE {se.get('correlation', float('nan')):.3f}), position bias {fit.position_bias:+.3f} (SE "
              f"{se.get('position_bias', float('nan')):.3f}, p {position_bias_test(fit):.3g}), tie band "
              f"{fit.tie_band:.3f} (SE {se.get('tie_band', float('nan')):.3f}), biases centred over the systems (SE "
              f"{_numbers(se.get('bias', {}).values())}); SEs from {se.get('resamples', 0)} bootstrap resamples of "
              f"the documents (seed {seed})" + "".join(f"; {note}" for note in fit.notes))
    header = ("A pairwise judge fitted from a table of judge and human verdicts (simdesign.realdata.judge_pairwise_fit); "
              "load with simdesign.model.judge.parse_judge(load_yaml(path), model) or paste as a config's 'judge'.\n"
              + record)
    data = fit.judge_config(name, record)
    return "".join(f"# {line}\n" for line in header.splitlines()) + yaml.safe_dump(data, sort_keys=False, width=110)


def fit_pairwise(args) -> int:
    """``simdesign fit VERDICTS --likert-model M --out judge.yaml [--check]`` on a table of pairwise verdicts."""
    from simdesign.realdata.judge_pairwise import read_judge_pairwise
    from simdesign.realdata.judge_pairwise_fit import fit_pairwise_judge, pairwise_judge_check

    likert = _likert_model(args)
    table = read_judge_pairwise(args.judgements)
    result = fit_pairwise_judge(likert, table, bootstrap=max(args.bootstrap, 0), seed=args.seed)
    name = args.name or Path(args.out).stem
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(pairwise_judge_file_text(result, Path(args.judgements).name, Path(str(args.likert_model)).name,
                                             name, args.seed))
    print(f"fitted the pairwise judge of {args.judgements} against {likert.name}: correlation "
          f"{result.correlation:.3f}, position bias {result.position_bias:+.3f}, tie band {result.tie_band:.3f}, "
          f"bias " + ", ".join(f"{s}={b:+.3f}" for s, b in result.bias.items()))
    for note in result.notes:
        print(f"note: {note}")
    print(f"wrote {path}")
    if args.check:
        from simdesign.realdata.check import check_title, write_check

        out_dir = Path(args.check_out) if args.check_out else Path(args.out).parent
        checked, simulated = pairwise_judge_check(likert, result, table, trials=args.check_trials, seed=args.seed)
        paths = write_check(checked, simulated, out_dir, "check",
                            check_title(f"pairwise judge '{name}' with {likert.name}", args.check_trials, checked))
        with pd.option_context("display.width", 160):
            print(checked[["statistic", "system", "observed", "sim_low", "sim_high", "inside"]].to_string(
                index=False, float_format=lambda v: f"{v:.3f}"))
        print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0
