"""Regenerate examples/pairwise_study.csv and examples/arena_battles.jsonl: two simulated pairwise studies.

    python examples/make_pairwise_examples.py

Both come from the ``coherence`` preset (the model Steen & Markert 2021 fitted to their CNN/DailyMail coherence
judgements) with the pairwise parameters ``preferences: {tie_band: 0.3, position_bias: 0.1}`` (noise assumed 1),
generator version 2:

* ``pairwise_study.csv``: an A/B study, 10 blocks of 4 documents with 3 annotators each, every annotator judging 4
  of the 10 pairs of systems per document (a balanced subset: ``pairs: 4``), 480 comparisons;
  ``annotator, document, system_a, system_b, preferred`` (``system_a`` shown first, ``preferred`` a system or
  ``tie``), ids renamed ``ann01`` and ``doc01``; seed ``SeedSequence(20261128)``, spawn key ``pairwise_study``.
* ``arena_battles.jsonl``: a Chatbot Arena-style log, 600 battles over 150 prompts and 12 judges (each battle
  draws its prompt, judge and pair), in the Arena's form ``question_id, model_a, model_b, winner, judge, tstamp`` (a time
  stamp, as the Arena's logs have: a judge may meet the same pair on the same prompt twice);
  ``winner`` is ``model_a``, ``model_b`` or ``tie``, and a third of the ties (drawn at random) are written
  ``tie (bothbad)`` to show that form (the analysis counts both as ties); spawn key ``arena_battles``.

tests/test_analyse_pairwise.py checks that the committed files are what this script writes.
"""
import dataclasses
import json
from pathlib import Path

import numpy as np

from simdesign.core.designs import BattleDesign, BlockDesign
from simdesign.core.seeds import label_key
from simdesign.model import load_model

ROOT = Path(__file__).resolve().parents[1]
SEED = 20261128
PREFERENCES = {"tie_band": 0.3, "position_bias": 0.1}
START = 1_764_288_000  # the log's first time stamp (seconds since 1970), one battle every 37 s
STUDY, LOG = ROOT / "examples" / "pairwise_study.csv", ROOT / "examples" / "arena_battles.jsonl"


def _rng(label: str) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(SEED, spawn_key=(label_key(label),)))


def _model(**extra):
    return dataclasses.replace(load_model("coherence"), preferences={**PREFERENCES, **extra})


def make_study():
    """The A/B study as a DataFrame."""
    frame = _model(pairs=4).sample(BlockDesign(10, 4, 3), _rng("pairwise_study"), method="pairwise") \
        .comparisons_frame()
    frame["annotator"] = [f"ann{a + 1:02d}" for a in frame["annotator"]]
    frame["document"] = [f"doc{d + 1:02d}" for d in frame["document"]]
    return frame[["annotator", "document", "system_a", "system_b", "preferred"]]


def make_log() -> list[dict]:
    """The battle log as a list of records."""
    rng = _rng("arena_battles")
    frame = _model().sample(BattleDesign(battles=600, prompts=150, judges=12), rng, method="pairwise") \
        .comparisons_frame()
    bothbad = rng.random(len(frame)) < 1 / 3
    records = []
    for row, bad in zip(frame.itertuples(), bothbad):
        winner = ("model_a" if row.preferred == row.system_a else "model_b" if row.preferred == row.system_b
                  else "tie (bothbad)" if bad else "tie")
        records.append({"question_id": f"q{row.document + 1:03d}", "model_a": row.system_a,
                        "model_b": row.system_b, "winner": winner, "judge": f"judge{row.annotator + 1:02d}",
                        "tstamp": START + 37 * len(records)})
    return records


def log_text(records) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


if __name__ == "__main__":
    make_study().to_csv(STUDY, index=False)
    LOG.write_text(log_text(make_log()))
    print(f"wrote {STUDY} and {LOG}")
