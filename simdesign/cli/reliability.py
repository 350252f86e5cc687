"""``simdesign reliability TABLE``: Krippendorff's alpha and split-half reliability of real judgements."""
from __future__ import annotations

from simdesign import api
from simdesign.cli.options import judgements_options, method_option


def cmd_reliability(args) -> int:
    from simdesign.tables.recognise import describe, read_table_args

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


def add_parser(sub) -> None:
    """Add the command to the CLI's subparsers."""
    reliability = sub.add_parser("reliability", help="Krippendorff's alpha and split-half reliability of real data")
    judgements_options(reliability)
    reliability.add_argument("--seed", type=int, default=0, help="for random splits (more than 100,000 splits)")
    method_option(reliability)
    reliability.set_defaults(func=cmd_reliability)
