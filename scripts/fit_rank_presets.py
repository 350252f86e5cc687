"""Fit the rank-only presets (simdesign/model/presets/rank_{coherence,repetition}.yaml) to the paper's Rank files.

Each is the rank-ordered logit (Plackett-Luce) with crossed random slopes (simdesign.realdata.rank_fit), in
the choice order (best or worst first) of higher likelihood (simdesign.realdata.rank_model_fit), coded against the Likert preset's reference system and written in the Likert preset's system order,
so that ``model: {preset: TASK, rank_model: TASK}`` simulates Likert from the Likert fit and Rank from
this one (simdesign.model.method_pair). Deterministic (no random starts): rerunning rewrites the same files.

    PYTHONPATH=$PWD python scripts/fit_rank_presets.py [--data ../shared/data/steen-markert-2021]
"""
from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np
import yaml

from simdesign.model import load_model
from simdesign.model.method_pair import RANK_PRESET_FILE, reordered
from simdesign.realdata.rank_model_fit import fit_better_choice
from simdesign.tables.recognise import read_table

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ROOT / "simdesign" / "model" / "presets"


def fit_task(task: str, data: Path) -> tuple[dict, str]:
    """The task's rank-only fit in the file form, and the header comment of its preset file."""
    likert = load_model(task)
    path = data / "judgements" / f"rank_{task}_cnn_dm.csv"
    frame, _ = read_table(path, "rank")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    result, logliks = fit_better_choice(frame, reference=likert.systems[0], name=f"rank_{task}",
                                        source={"file": path.name, "sha256": digest, "rows": len(frame)})
    model = reordered(result.model, likert.systems)
    mapping = model.to_dict()
    mapping["citation"] = likert.citation
    se = dict(zip(result.model.systems, np.round(result.beta_se, 4).tolist()))
    header = (f"# Preset 'rank_{task}': the rank-only model fitted to Steen & Markert's (2021) {path.name}\n"
              f"# (scripts/fit_rank_presets.py; choice {result.model.choice}, status {result.status}; Laplace\n"
              f"# log-likelihood by choice order: {', '.join(f'{k} {v:.4f}' for k, v in logliks.items())}).\n"
              f"# Standard errors of the effects: {se}.\n"
              f"# Rankings of the '{task}' preset's Likert/Rank model: model: {{preset: {task}, rank_model: {task}}}.\n")
    return mapping, header


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT / ".." / "shared" / "data" / "steen-markert-2021"))
    parser.add_argument("--out", default=str(PRESETS))
    args = parser.parse_args(argv)
    for task in ("coherence", "repetition"):
        mapping, header = fit_task(task, Path(args.data))
        target = Path(args.out) / RANK_PRESET_FILE.format(task)
        target.write_text(header + yaml.safe_dump(mapping, sort_keys=False, width=110))
        print(f"wrote {target}: effects {np.round(mapping['effects'], 3).tolist()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
