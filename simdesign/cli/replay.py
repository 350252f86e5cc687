"""``simdesign replay RESULTS``: re-create one stored trial from its seed, beside the stored rows."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simdesign import api
from simdesign.core.errors import ConfigError, StoreError
from simdesign.outputs import config_from_results


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
    from simdesign.studies.rates.store import rate_store

    store = rate_store(out_dir)
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
    from simdesign.studies.rates.engine import check_replay_request, replay_trial

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
    from simdesign.significance import system_pairs
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
        from simdesign.significance import ANALYSES
        spec = {s.label: s for s in config.work_specs}[args.test]
        verbose = ANALYSES[spec.name].verbose
        print(verbose(judgements, **spec.options) if verbose else f"({spec.name} has no verbose output)")
    if args.save:
        from simdesign.methods import get_method, split_result_label

        # the method's own file form (a Rank trial as ranks), which `simdesign analyse` and `fit` read back
        method = get_method(split_result_label(args.test)[1])
        method.study_table(judgements).to_csv(args.save, index=False)
        print(f"wrote the trial's judgements to {args.save} ({method.label}, column '{method.value_column}')")
    return 0


def replay_other_kind(out_dir: Path, args) -> int:
    """``replay`` of a study of another kind: one stored trial of one cell recomputed from its seed, beside the
    stored rows (a panel study's crowd setting, a metric validation's cell, a plug-in kind's cell)."""
    result = api.load_study(out_dir)
    kind, config = result.kind, result.config
    try:
        if not hasattr(kind, "replay_cells"):  # a driver over kinds (a sweep): no trials of its own
            raise NotImplementedError
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


def add_parser(sub) -> None:
    """Add the command to the CLI's subparsers."""
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
