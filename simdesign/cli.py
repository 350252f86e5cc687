"""Command-line interface: ``simdesign run | plot | replay | plan | fit | check | reliability | presets``."""
from __future__ import annotations

import argparse
import contextlib
import re
import signal
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign import api
from simdesign.simulation.backends import BACKENDS, DEFAULT_RETRIES
from simdesign.simulation.config import SimulationConfig, config_warnings, load_config
from simdesign.core.estimands import estimands_of
from simdesign.core.errors import ConfigError, MissingBackendError, StoreError
from simdesign.methods import get_method, method_names
from simdesign.model import PRESETS, load_model
from simdesign.outputs import config_from_results, failure_report, write_outputs


def print_failures(summary: pd.DataFrame) -> None:
    """The failure warning on stderr; exit with an error if some design x test failed in every trial."""
    warning, error = failure_report(summary)
    if warning:
        print(warning, file=sys.stderr)
    if error:
        raise SystemExit(error)


def write_and_report(config: SimulationConfig, summary: pd.DataFrame, out_dir: Path,
                     figure_base: Path | None = None) -> None:
    paths = write_outputs(config, summary, out_dir, figure_base)
    print(f"wrote {paths[0]} and {', '.join(str(p) for p in paths[1:])}")
    print_failures(summary)


def cmd_run(args) -> int:
    """``simdesign run CONFIG``: every study kind (:mod:`simdesign.simulation.study_kinds`)."""
    from simdesign.simulation.config import read_config_mapping
    from simdesign.simulation.study_kinds import ENGINE_KINDS, study_kind

    kind = study_kind(read_config_mapping(Path(args.config), "config"))
    if kind not in ENGINE_KINDS:
        return run_other_kind(kind, args)
    return run_rates(args)


def run_other_kind(kind: str, args) -> int:
    """Run a panel study, a sweep or a metric validation with ``run``'s arguments."""
    from simdesign import cli_literature, cli_panels
    from simdesign.cli_study import check_study_arguments

    check_study_arguments(args)
    if args.chunk_size is not None:
        print(f"warning: --chunk-size applies to rate studies; a {kind} config is chunked by its own settings "
              "(ignored)", file=sys.stderr)
    commands = {"panels": cli_panels.run, "sweep": cli_literature.cmd_sweep,
                "metric-validation": cli_literature.cmd_metric_validation}
    if kind in commands:
        return commands[kind](args)
    return run_registered_kind(args)


def run_registered_kind(args) -> int:
    """``run`` for a plug-in study kind: simulate, then write summary.csv and the figure into the results."""
    from simdesign.cli_study import study_backend, study_out_dir, write_study_figures

    kind, config = api.study_of(args.config, args.trials)
    out_dir = study_out_dir(args, kind.config_name(config))
    result = api.StudyResult(kind, config, kind.run(config, out_dir, study_backend(args), not args.quiet), out_dir)
    summary = result.summary()
    summary.to_csv(result.out_dir / "summary.csv", index=False)
    paths = write_study_figures(args, result.out_dir, result.kind.config_name(result.config), summary,
                                lambda base: result.kind.plot(result.config, summary, base))
    print(f"wrote {result.out_dir / 'summary.csv'} and {', '.join(str(p) for p in paths)}", file=sys.stderr)
    if not args.quiet:
        print(summary.to_string(index=False))
    return 0


def run_rates(args) -> int:
    """``run`` for a rate (or replication) study: the engine, summary, figure and table."""
    from simdesign.simulation.engine import default_out_dir

    overrides = {key: value for key, value in (("trials", args.trials), ("chunk_size", args.chunk_size))
                 if value is not None}
    config = load_config(args.config, overrides)
    for warning in config_warnings(config):
        print(f"warning: {warning}", file=sys.stderr)
    out_dir = Path(args.out) if args.out else default_out_dir(config)
    result = api.simulate(config, out_dir=out_dir, jobs=args.jobs, progress=not args.quiet, backend=args.backend,
                          scheduler=args.scheduler, workers=args.workers, retries=args.retries)
    summary = result.summary()
    write_and_report(config, summary, out_dir)
    if args.figure:
        result.plot(args.figure)
    if not args.quiet:
        # the rates a valid test keeps at alpha, the headline power, the requested values and a replication's own
        shown = [info.name for info in estimands_of("rates") if info.nominal_level or "effect_rate" in info.roles]
        if config.replication:
            shown += [info.name for info in estimands_of("replication") if "rates" not in info.study_kinds
                      and info.unit == "value"]
        show = summary[summary["estimand"].isin([*shown, *config.estimands])]
        with pd.option_context("display.width", 160, "display.max_rows", 200):
            extra = [column for column in ("method", "criterion") if column in show]
            print(show[["design", "test", *extra, "estimand", "rate", "ci_low",
                        "ci_high", "mcse", "n_failed"]]
                  .to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0


def cmd_plot(args) -> int:
    from simdesign.runner.stores import MANIFEST, read_manifest

    out_dir = Path(args.results)
    kind = read_manifest(out_dir / MANIFEST).get("kind") if (out_dir / MANIFEST).is_file() else None
    if kind not in (None, "rates"):
        return plot_other_kind(out_dir, Path(args.out) if args.out else None)
    result = api.load_results(out_dir)
    write_and_report(result.config, result.summary(), out_dir, Path(args.out) if args.out else None)
    return 0


def plot_other_kind(out_dir: Path, figure: Path | None) -> int:
    """``plot`` of a study of another kind: its summary and figure from the stored rows, simulating nothing."""
    result = api.load_study(out_dir)
    summary = result.summary()
    summary.to_csv(out_dir / "summary.csv", index=False)
    name = result.kind.config_name(result.config)
    paths = result.plot(figure or out_dir / name)
    print(f"wrote {out_dir / 'summary.csv'} and {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0


def check_save_path(value: str | None, option: str) -> None:
    """Refuse an output file whose directory does not exist, before any work (rather than an OSError after it)."""
    if value is None:
        return
    path = Path(value)
    if path.is_dir():
        raise ConfigError(f"{option} {value} is a directory; give a file name, e.g. {path / 'trial.csv'}")
    if not path.parent.is_dir():
        raise ConfigError(f"{option} {value}: the directory {path.parent} does not exist; create it first")


def stored_trial_or_error(out_dir: Path, design: str, trial: int, test: str) -> pd.DataFrame:
    """The stored rows of the trial to replay, or a StoreError naming the trials that are stored."""
    from simdesign.simulation.store import ResultsStore

    store = ResultsStore(out_dir)
    stored = store.trial_rows(design, trial, test)
    if not stored.empty:
        return stored
    done = sorted(store.completed(design).get(test, ()))
    if not done:
        held = "none"
    elif done == list(range(done[-1] + 1)):
        held = f"0..{done[-1]} ({len(done)} trials)"
    else:
        held = f"{len(done)} trials between {done[0]} and {done[-1]}"
    raise StoreError(f"The trial (--trial) {trial} of design {design}, test {test} was never stored in {out_dir}; "
                      f"stored trials: {held}")


def cmd_replay(args) -> int:
    from simdesign.runner.stores import MANIFEST, read_manifest
    from simdesign.simulation.engine import check_replay_request, replay_trial

    out_dir = Path(args.results)
    kind = read_manifest(out_dir / MANIFEST).get("kind") if (out_dir / MANIFEST).is_file() else None
    if kind not in (None, "rates"):
        return replay_other_kind(out_dir, args)
    if args.test is None:
        raise ConfigError("The --test option is required to replay a trial of a rate study: the test's label as in "
                          "summary.csv, e.g. ttest_doc or art_doc[5000]")
    config = config_from_results(out_dir)
    check_save_path(args.save, "--save")
    check_replay_request(config, args.design, args.trial, args.test)
    stored = stored_trial_or_error(out_dir, args.design, args.trial, args.test)
    judgements, result = replay_trial(config, args.design, args.trial, args.test)
    print(f"design {args.design}, trial {args.trial}, test {args.test}, root seed {config.seed}")
    # nanmean: under partial coverage a missing output is NaN (docs/designs.md)
    print(f"data: {judgements.n_pairs} (annotator, document) pairs x {judgements.n_systems} systems; "
          f"system means {dict(zip(judgements.systems, np.nanmean(judgements.scores, axis=0).round(3).tolist()))}")
    from simdesign.analyses import system_pairs
    pairs = system_pairs(judgements.n_systems)
    table = pd.DataFrame({
        "system_a": [judgements.systems[i] for i, _ in pairs], "system_b": [judgements.systems[j] for _, j in pairs],
        "estimate": result.estimate, "p_value": result.p_value, "status": result.status,
    })
    # The stored rows beside the recomputed ones: a replay that differs would mean the trial is not reproducible.
    stored_by_pair = stored.set_index("pair")
    table["stored_p_value"] = stored_by_pair["p_value"].reindex(range(len(pairs))).to_numpy(dtype=float)
    table["stored_status"] = stored_by_pair["status"].reindex(range(len(pairs))).to_numpy()
    print(table.to_string(index=False))
    # Not bit-equality: BLAS threads differ between a worker (one thread) and this process.
    same = bool(np.allclose(table["p_value"].to_numpy(dtype=float), table["stored_p_value"].to_numpy(dtype=float),
                            rtol=1e-8, atol=1e-12, equal_nan=True) and (table["status"] == table["stored_status"]).all())
    print("replayed p-values and statuses equal the stored ones" if same else
          "WARNING: the replayed p-values or statuses differ from the stored ones (another software version?)")
    print(f"fit status: {result.fit_status}; seconds: {result.fit_seconds:.3f}; message: {result.message or '-'}")
    if args.verbose:
        from simdesign.analyses import ANALYSES
        spec = {s.label: s for s in config.work_specs}[args.test]
        verbose = ANALYSES[spec.name].verbose
        print(verbose(judgements, **spec.options) if verbose else f"({spec.name} has no verbose output)")
    if args.save:
        judgements.to_frame().to_csv(args.save, index=False)
        print(f"wrote the trial's judgements to {args.save}")
    return 0


def replay_other_kind(out_dir: Path, args) -> int:
    """``replay`` of a study of another kind: one stored trial of one cell recomputed from its seed, beside the
    stored rows (a panel study's crowd setting, a metric validation's cell, a plug-in kind's cell)."""
    result = api.load_study(out_dir)
    kind, config = result.kind, result.config
    try:
        cells = kind.replay_cells(config)
    except NotImplementedError:
        raise ConfigError(f"A {kind.name} study has no trials of its own to replay; replay a trial of one of its "
                          f"runs: simdesign replay {out_dir}/<run directory> --design ... --trial ...") from None
    if args.design not in cells:
        raise ConfigError(f"The cell {args.design!r} (--design) is not in this {kind.name} study; its cells: {cells}")
    if args.trial < 0:
        raise ConfigError(f"The trial (--trial) must be a non-negative integer; got {args.trial}")
    stored = kind.stored_trial(config, result.rows, args.design, args.trial)
    if stored.empty:
        raise StoreError(f"Trial {args.trial} of {args.design} is not stored in {out_dir} "
                         f"(stored trials: below {int(result.rows['trial'].max()) + 1 if len(result.rows) else 0})")
    try:
        replayed = kind.replay(config, args.design, args.trial)
    except NotImplementedError:
        raise ConfigError(f"A {kind.name} study cannot replay a trial") from None
    print(f"{kind.name} study, {args.design}, trial {args.trial}:")
    with pd.option_context("display.width", 160, "display.max_rows", 400):
        print(replayed.to_string(index=False))
    print("replayed rows equal the stored ones" if same_rows(replayed, stored) else
          "WARNING: the replayed rows differ from the stored ones (another software version?)")
    if args.save:
        replayed.to_csv(args.save, index=False)
        print(f"wrote the trial's rows to {args.save}")
    return 0


def same_rows(replayed: pd.DataFrame, stored: pd.DataFrame) -> bool:
    """Whether recomputed rows equal stored ones: the same columns and rows, numbers to rounding (a stored
    CSV keeps 17 digits; BLAS threads differ between a worker and this process)."""
    if list(replayed.columns) != list(stored.columns) or len(replayed) != len(stored):
        return False
    for column in replayed.columns:
        mine, theirs = replayed[column], stored[column]
        if pd.api.types.is_numeric_dtype(mine) and pd.api.types.is_numeric_dtype(theirs):
            if not np.allclose(mine.to_numpy(float), theirs.to_numpy(float), rtol=1e-8, atol=1e-12, equal_nan=True):
                return False
        elif not (mine.fillna("").astype(str).to_numpy() == theirs.fillna("").astype(str).to_numpy()).all():
            return False
    return True


def plan_has_replication(path) -> bool:
    """Whether a plan config has a 'replication' mapping (read again, checked, by the planner that takes it)."""
    from simdesign.core.yamlio import load_yaml

    try:
        raw = load_yaml(Path(path).read_text())
    except Exception:  # noqa: BLE001 -- any unreadable file: the ordinary planner reads it again and reports it
        return False
    return isinstance(raw, dict) and "replication" in raw


def cmd_plan(args) -> int:
    from simdesign.planning.planner import load_plan

    overrides = {key: value for key, value in (("max_trials", args.max_trials), ("screen_trials", args.screen_trials))
                 if value is not None}
    if plan_has_replication(args.config):  # a replication plan (simdesign.planning.replication_plan)
        from simdesign.planning.replication_plan import cmd_replication_plan

        api.check_jobs(args.jobs)
        return cmd_replication_plan(args, overrides)
    config = load_plan(args.config, overrides)
    out_dir = Path(args.out) if args.out else Path("results") / config.name
    simulated = sum(1 for c in config.candidates if not c.excluded)
    api.check_jobs(args.jobs)
    print(f"planning {config.name}: {len(config.candidates)} candidates (design x test), {simulated} to simulate; "
              f"{config.screen_trials} screening trials, up to {config.max_trials}")
    outcome = api.plan(config, out_dir=out_dir, jobs=args.jobs, progress=not args.quiet, backend=args.backend,
                       figure=args.figure, scheduler=args.scheduler, workers=args.workers, retries=args.retries)
    paths = outcome.paths
    shown = outcome.table[outcome.table["trials"] > 0].head(args.show)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(shown[["rank", "design", "test", "judgements", "annotators", "cost", "power", "ci_low", "ci_high",
                     "trials", "decision"]].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print()
    print(outcome.recommendation)
    print(outcome.effort)
    print(f"wrote {paths['table']}, {paths['recommendation']}, {', '.join(str(p) for p in paths['figures'])}")
    return 0 if outcome.recommended is not None else 1


def _read_judgements_args(args):
    # One reader and one validator for fit, check and reliability: a table one refuses, all refuse.
    from simdesign.pilot.fit import parse_columns, parse_scale

    scale = parse_scale(args.scale) if args.scale else None
    return api.read_judgements_table(args.judgements, parse_columns(args.columns), scale)


def cmd_reliability(args) -> int:
    from simdesign.pilot.tables import describe, read_table_args

    frame, info = read_table_args(args)  # Likert or Rank (reversed ranks: alpha and SHR unchanged)
    scale = info["scale"]
    print(describe(info))
    print(f"{args.judgements}: {len(frame)} judgements, {frame['annotator'].nunique()} annotators, "
          f"{frame['document'].nunique()} documents, {frame['system'].nunique()} systems; scale {list(scale)}")
    result = api.reliability_of_checked(frame, scale, seed=args.seed)
    if result.krippendorff_alpha is not None:
        print(f"Krippendorff's alpha (ordinal; unit = document x system, coders = annotators): "
              f"{result.krippendorff_alpha:.4f}")
    for note in result.notes:
        print(note)
    split = result.split_half
    if split is None:
        return 0
    how = (f"mean over all {split.n_splits} distinct splits" if split.exact
           else f"mean over {split.n_splits} random splits, seed {args.seed}")
    skipped = f"; {split.n_undefined} splits with undefined r left out" if split.n_undefined else ""
    print(f"split-half reliability (Pearson r of system means between halves of {split.n_blocks} blocks, {how}"
          f"{skipped}): {split.value:.4f}")
    return 0


def cmd_fit(args) -> int:
    from simdesign.pilot.fit import FitError, file_sha256, write_model
    from simdesign.pilot.tables import table_method

    method = table_method(args)
    if "cli_fit" in method.steps:  # a method with a fit command of its own (Rank: simdesign/cli_rank_fit.py)
        return method.step("cli_fit")(args)
    if args.likert_model:
        raise ConfigError("--likert-model applies to Rank tables (it fits rank_noise for a joint model); "
                          f"{args.judgements} was read as Likert scores")
    frame, scale = _read_judgements_args(args)
    source = {"file": Path(args.judgements).name, "sha256": file_sha256(args.judgements), "rows": len(frame)}
    if args.columns:
        source["columns"] = args.columns
    name = args.name or Path(args.out).stem
    try:
        outcome = api.fit_model(frame, structure=args.structure, reference=args.reference, scale=scale, name=name,
                                source=source, allow_reduced=args.allow_reduced)
    except FitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    model, result = outcome.model, outcome.result
    header = (f"Fitted by 'simdesign fit {Path(args.judgements).name} --structure {args.structure}"
              f"{' --allow-reduced' if args.allow_reduced else ''}'; "
              f"load with simdesign.model.load_model or name it as 'model' in a config.")
    path = write_model(model, args.out, header=header)
    print(f"fitted {len(frame)} judgements (structure {args.structure}: {outcome.provenance['formula']}): "
          f"status {result.status}, "
          f"log-likelihood {result.loglik:.2f}, {result.seconds:.1f} s")
    print(f"  starts:     {result.starts_text}")
    print(f"  thresholds: {', '.join(f'{v:.3f}' for v in model.thresholds)}")
    print(f"  effects:    {', '.join(f'{s}={b:+.3f}' for s, b in zip(model.systems, model.effects))} "
          f"(reference {model.systems[0]})")
    for term, sd in result.random_effects_sd.items():
        print(f"  {term} SDs: {', '.join(f'{v:.3f}' for v in sd)}")
    for note in outcome.provenance["notes"]:
        print(f"  note: {note}")
    print(f"wrote {path}")
    if result.status == "not_converged":
        print("WARNING: the fit did not converge; the model file records this in its provenance", file=sys.stderr)
    if args.check:
        run_check_command(model, frame, args.check_out or Path(args.out).with_suffix(""), args.check_trials,
                          args.seed)
    return 0


def run_check_command(model, frame, out_dir, trials: int, seed: int) -> None:
    table = api.check_model(model, frame, trials=trials, seed=seed, out_dir=out_dir)
    paths = [Path(out_dir) / "check.csv", Path(out_dir) / "check.png"]
    outside = table[~table["inside"]]
    print(f"predictive check: {trials} studies simulated with the data's own design; "
          f"{len(table) - len(outside)} of {len(table)} statistics inside the simulated 95% range")
    singles = table[table["category"].isna()]
    with pd.option_context("display.width", 160):
        print(singles[["statistic", "system", "observed", "sim_low", "sim_high", "inside"]]
              .to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if not outside.empty:
        print("outside the range: " + "; ".join(
            f"{r.statistic} {r.system} {'' if pd.isna(r.category) else r.category} observed {r.observed:.3f}, "
            f"range {r.sim_low:.3f}..{r.sim_high:.3f}" for r in outside.itertuples()))
    print(f"wrote {', '.join(str(p) for p in paths)}")


def cmd_check(args) -> int:
    from simdesign.pilot.tables import table_method

    method = table_method(args)
    model_method = get_method(load_model(args.model).methods[0])  # a rank-only model checks its rankings
    for own in (method, model_method):
        if "cli_check" in own.steps:  # a method with a check command of its own (Rank: simdesign/cli_rank_fit.py)
            return own.step("cli_check")(args)
    frame, _ = _read_judgements_args(args)
    model = load_model(args.model)
    run_check_command(model, frame, args.out or Path("results") / f"check-{file_name_part(model.name)}", args.trials,
                      args.seed)
    return 0


def file_name_part(name: str) -> str:
    """A model's name made safe as part of a file name: a name read from a model file (``../../x``) never
    chooses where results are written."""
    return re.sub(r"[^\w.+-]+", "_", str(name)).strip("._") or "model"


def cmd_presets(args) -> int:
    for name in PRESETS:
        model = load_model(name)
        means = model.expected_scores("fitted")
        print(f"{name}: {len(model.scale)}-point scale, systems {', '.join(model.systems)}")
        print(f"  effects (latent): {', '.join(f'{s}={b:+.3f}' for s, b in zip(model.systems, model.effects))}")
        print(f"  expected scores:  {', '.join(f'{s}={m:.2f}' for s, m in zip(model.systems, means))}")
        print(f"  source: {model.citation}")
    return 0


def backend_options(command) -> None:
    """--backend, --scheduler, --workers, --retries: where a command's chunks of trials are computed."""
    command.add_argument("--backend", choices=BACKENDS, default="loky",
                         help="where chunks run: local processes (loky, default), local processes forked from this "
                              "one (fork: no imports per worker; Linux, not for R-backed tests), local threads "
                              "(threading; not for R-backed tests) or a Dask cluster (dask); results are identical")
    command.add_argument("--scheduler", metavar="ADDRESS",
                         help="dask: address of a running scheduler, e.g. tcp://host:8786 (default: a local "
                              "cluster for the run)")
    command.add_argument("--workers", type=int, metavar="N",
                         help="dask: worker processes of the local cluster (default: all cores)")
    command.add_argument("--retries", type=int, default=DEFAULT_RETRIES, metavar="N",
                         help="resubmit unsaved chunks up to N times when workers die (default %(default)s)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="simdesign", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="simulate a config of any study kind (rates, replication, panels, "
                                     "metric-validation, "
                                     "sweep: its 'study' field or its keys say which; resumes stored trials) and "
                                     "write summary and figure")
    run.add_argument("config")
    run.add_argument("--out", help="results directory (default results/<config name>)")
    run.add_argument("--jobs", type=int, default=-1, help="parallel workers (default: all cores)")
    run.add_argument("--trials", type=int, help="override the config's trials")
    run.add_argument("--chunk-size", type=int, metavar="N",
                     help="override the config's chunk_size: trials per unit of work (results do not depend on it)")
    backend_options(run)
    run.add_argument("--quiet", action="store_true", help="no progress bar or table")
    run.add_argument("--figure", help="also write the figure and its table as FIGURE.png and FIGURE.csv")
    run.set_defaults(func=cmd_run)

    plot = sub.add_parser("plot", help="redraw summary and figures from stored results, without simulating")
    plot.add_argument("results")
    plot.add_argument("--out", help="figure path without suffix (default <results>/<config name>)")
    plot.set_defaults(func=cmd_plot)

    replay = sub.add_parser("replay", help="re-create one trial from its seed and re-run one test")
    replay.add_argument("results")
    replay.add_argument("--design", required=True,
                        help="the design's label; for a panel study its crowd setting, for a metric validation "
                             "its cell (e.g. S10-D50)")
    replay.add_argument("--trial", type=int, required=True)
    replay.add_argument("--test",
                        help="the test's label as in summary.csv, with its written options, e.g. art_doc[5000] "
                             "(rate studies; other kinds replay the whole trial)")
    replay.add_argument("--verbose", action="store_true", help="print the full fit output where available")
    replay.add_argument("--save", help="write the trial's judgements to this CSV")
    replay.set_defaults(func=cmd_replay)

    plan = sub.add_parser("plan", help="find the cheapest design reaching a target power (or the most powerful "
                                       "within a budget) under a cost model")
    plan.add_argument("config", help="plan config (YAML; see configs/plan_example.yaml)")
    plan.add_argument("--out", help="results directory (default results/<plan name>); a re-run resumes")
    plan.add_argument("--jobs", type=int, default=-1, help="parallel workers (default: all cores)")
    plan.add_argument("--screen-trials", type=int, help="override the config's screen_trials")
    plan.add_argument("--max-trials", type=int, help="override the config's max_trials")
    plan.add_argument("--figure", help="figure path without suffix (default <out>/<plan name>)")
    plan.add_argument("--show", type=int, default=15, help="rows of the ranked table to print")
    backend_options(plan)
    plan.add_argument("--quiet", action="store_true", help="no per-stage progress lines")
    plan.set_defaults(func=cmd_plan)

    def judgements_options(command):
        command.add_argument("judgements", help="CSV, one row per judgement: annotator, document, system, score")
        command.add_argument("--columns", help="map column names, e.g. annotator=worker,score=rating")
        command.add_argument("--scale", help="the scale's values, e.g. 1..7 (default: the observed values)")

    reliability = sub.add_parser("reliability", help="Krippendorff's alpha and split-half reliability of real data")
    judgements_options(reliability)
    reliability.add_argument("--seed", type=int, default=0, help="for random splits (more than 100,000 splits)")
    reliability.add_argument("--method", choices=method_names(), help="default: from a score or rank column")
    reliability.set_defaults(func=cmd_reliability)

    fit = sub.add_parser("fit", help="fit the generator (cumulative link mixed model) to judgements; "
                                     "write a model file")
    judgements_options(fit)
    fit.add_argument("--out", required=True, help="model file to write (YAML)")
    fit.add_argument("--structure", default="auto", choices=["auto", "paper", "maximal", "intercepts"],
                     help="random effects (default auto: the largest the pilot's design identifies; see the README)")
    fit.add_argument("--allow-reduced", action="store_true",
                     help="with fewer annotators (documents) than systems + 1, fit that term's intercept only "
                          "instead of refusing (recorded in the model's provenance)")
    fit.add_argument("--reference", help="reference system (default: first in sorted order; the paper's "
                                         "models use __REFERENCE__)")
    fit.add_argument("--name", help="model name (default: the output file's stem)")
    fit.add_argument("--check", action="store_true", help="then run the predictive check")
    fit.add_argument("--check-trials", type=int, default=200, help="simulated studies for --check")
    fit.add_argument("--check-out", help="directory for the check's CSV and PNG (default: next to --out)")
    fit.add_argument("--seed", type=int, default=0, help="seed of the check's simulations (and of --bootstrap)")
    fit.add_argument("--method", choices=method_names(), help="default: from a score or rank column; a Rank "
                     "table fits the rank-only model (rank-ordered logit with random slopes)")
    fit.add_argument("--likert-model", help="Rank tables: fit only rank_noise for this Likert model (preset or "
                     "file), writing it as a joint Likert/Rank model")
    fit.add_argument("--bootstrap", type=int, default=200, help="with --likert-model: parametric-bootstrap "
                     "replicates for rank_noise's standard error")
    fit.set_defaults(func=cmd_fit)

    check = sub.add_parser("check", help="predictive check: simulate studies with the data's design from a model "
                                         "and compare statistics with the data")
    check.add_argument("model", help="model file or preset")
    judgements_options(check)
    check.add_argument("--trials", type=int, default=200)
    check.add_argument("--out", help="directory for check.csv and check.png (default results/check-<model>)")
    check.add_argument("--seed", type=int, default=0)
    check.add_argument("--method", choices=method_names(), help="default: from a score or rank column")
    check.set_defaults(func=cmd_check)

    presets = sub.add_parser("presets", help="list the built-in models")
    presets.set_defaults(func=cmd_presets)

    from simdesign import cli_analyse, cli_crowd, cli_design, cli_explore, cli_literature, cli_metrics, cli_panels
    cli_analyse.add_parser(sub)
    cli_crowd.add_parser(sub)
    cli_metrics.add_parser(sub)
    cli_panels.add_parser(sub)
    cli_literature.add_parser(sub)
    cli_design.add_parser(sub)
    cli_explore.add_parser(sub)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that a run stops exactly as it does on Ctrl-C."""


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Turn SIGTERM into :class:`Terminated` while a command runs.

    Python's default SIGTERM action ends the process at once, without
    unwinding: joblib never aborts its pool, and the loky workers go on
    computing their chunks as orphans for a minute or more. As a
    KeyboardInterrupt, SIGTERM takes Ctrl-C's path instead (the pool is
    killed, a Dask cluster closed, the saved chunks reported).
    """
    if threading.current_thread() is not threading.main_thread():  # signal handlers live in the main thread only
        yield
        return

    def raise_terminated(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# Commands whose --out is a directory, and those whose --out is a file: either is refused before any work
# when the path exists as the other kind (an IsADirectoryError after fitting, or a results directory
# "created" over a file, were the alternatives).
DIRECTORY_OUT = ("run", "plan", "check", "analyse", "panels", "sweep", "metric-validation")
FILE_OUT = ("fit", "draw-design")
# Options that only matter beside another: (command, option dest, flag, needs, what it needs in words).
DEPENDENT_OPTIONS = (
    ("fit", "bootstrap", "--bootstrap", lambda a: a.likert_model, "--likert-model (a Rank table's rank_noise)"),
    ("fit", "check_trials", "--check-trials", lambda a: a.check, "--check"),
    ("fit", "check_out", "--check-out", lambda a: a.check, "--check"),
    ("analyse", "structure", "--structure", lambda a: tests_take(a.tests, "structure"),
     "a test that takes a structure (e.g. clmm_native) in --tests"),
    # (--scheduler and --workers without --backend dask are errors: BackendSpec.problems)
)


def tests_take(tests: str, option: str) -> bool:
    """Whether any of the comma-separated registered tests has ``option`` (unknown names: assumed so, the
    command itself names them)."""
    from simdesign.analyses import ANALYSES

    names = [name.strip() for name in tests.split(",") if name.strip()]
    return any(name not in ANALYSES or option in ANALYSES[name].options for name in names)


def subcommands(parser: argparse.ArgumentParser) -> dict:
    """Command name -> its own parser (argparse keeps them in its subparsers action)."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    return action.choices


def option_problems(args) -> list[str]:
    """Option values refused before any work (each naming the option and what is allowed)."""
    problems = []
    if isinstance(getattr(args, "seed", None), int) and args.seed < 0:
        problems.append(f"The '--seed' option must be a non-negative integer; got {args.seed}")
    out = getattr(args, "out", None)
    if out is not None and args.command in DIRECTORY_OUT and Path(out).exists() and not Path(out).is_dir():
        problems.append(f"The '--out' option {out} is a file; give a directory (created if missing)")
    if out is not None and args.command in FILE_OUT and Path(out).is_dir():
        problems.append(f"The '--out' option {out} is a directory; give a file name, e.g. {Path(out) / 'model.yaml'}"
                        if args.command == "fit" else
                        f"The '--out' option {out} is a directory; give a picture file, e.g. {Path(out) / 'design.png'}")
    if args.command == "fit":
        problems += fit_option_problems(args)
    if args.command == "check" and args.trials < 2:
        problems.append(f"The '--trials' option must be at least 2 simulated studies; got {args.trials}")
    if args.command == "plan" and args.show < 0:
        problems.append(f"The '--show' option must be 0 or more rows; got {args.show}")
    return problems


def fit_option_problems(args) -> list[str]:
    """``fit``'s own options: a model name that is a file name, a check that can run, a bootstrap that can."""
    problems = []
    if args.name is not None and (not args.name.strip() or any(c in args.name for c in "/\\")
                                  or args.name.strip(".") == ""):
        problems.append(f"The '--name' option names the model (and the check's results): a non-empty name "
                        f"without slashes, not '.' or '..'; got {args.name!r}")
    if args.check and args.check_trials < 2:
        problems.append(f"The '--check-trials' option must be at least 2 simulated studies; got {args.check_trials}")
    if args.check_out is not None and Path(args.check_out).exists() and not Path(args.check_out).is_dir():
        problems.append(f"The '--check-out' option {args.check_out} is a file; give a directory")
    if args.likert_model and args.bootstrap < 0:
        problems.append(f"The '--bootstrap' option must be 0 (none) or more replicates; got {args.bootstrap}")
    return problems


def ignored_option_warnings(args, parser: argparse.ArgumentParser) -> list[str]:
    """Options given (not at their defaults) that the command will not use, so the user is not misled."""
    sub = subcommands(parser)[args.command]
    found = []
    for command, dest, flag, needed, needs in DEPENDENT_OPTIONS:
        if (command in (None, args.command) and hasattr(args, dest)
                and getattr(args, dest) != sub.get_default(dest) and not needed(args)):
            found.append(f"'{flag}' is ignored without {needs}")
    return found


def unknown_command_message(argv: list[str], parser: argparse.ArgumentParser) -> str | None:
    """For ``simdesign rn ...``: the unknown command with the closest ones, before argparse's own message."""
    from simdesign.core.suggest import did_you_mean

    commands = list(subcommands(parser))
    first = next((word for word in argv if not word.startswith("-")), None)
    if first is None or first in commands:
        return None
    return f"unknown command {first!r}{did_you_mean(first, commands)}; commands: {', '.join(commands)}"


def main(argv=None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    unknown = unknown_command_message(words, parser)
    if unknown:
        print(f"error: {unknown}", file=sys.stderr)
        return 2
    args = parser.parse_args(words)
    try:
        with sigterm_as_interrupt():
            problems = option_problems(args)
            if problems:
                raise ConfigError(problems)
            for warning in ignored_option_warnings(args, parser):
                print(f"warning: {warning}", file=sys.stderr)
            return args.func(args)
    except (ConfigError, MissingBackendError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Terminated:
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
