"""Regenerate examples/judge_pairwise.csv: pairwise judge verdicts beside human verdicts for `simdesign analyse`.

    python examples/make_judge_pairwise.py

The paper's coherence model (its 5 systems, pairwise verdicts with the method's defaults: no preferences set)
draws a study of 60 documents in 10 blocks of 6, one annotator a block, every pair of systems compared on
every document (600 comparisons). An LLM judge gives a verdict on every comparison from the same latent
difference the humans see (each output's system effect plus its document part, first shown minus second),
plus its own noise (sd JUDGE_NOISE) and a position bias (POSITION_BIAS latent units towards the output shown
first), a tie when the result is within TIE_BAND of 0. Humans' verdicts are kept on a random 30% of the
comparisons (the rest left empty). The true win rates are not printed: the table is for trying the command.
tests/test_judge_pairwise.py checks that the committed file is what this script writes.
"""
import dataclasses
from pathlib import Path

import numpy as np

from simdesign.core.designs import BlockDesign
from simdesign.methods.pairwise import PAIRWISE
from simdesign.model import load_model

OUT = Path(__file__).resolve().parent / "judge_pairwise.csv"
SEED = 20261128
JUDGE_NOISE, POSITION_BIAS, TIE_BAND, HUMAN_SHARE = 0.5, 0.3, 0.15, 0.3


def make_table(seed: int = SEED):
    """The example table as a DataFrame (document, system_a, system_b, judge_preferred, preferred, annotator)."""
    rng = np.random.default_rng(seed)
    model = dataclasses.replace(load_model("coherence"), preferences={})
    # sample_with_document_part: model.sample's draws, and the outputs' document parts the judge sees
    study, document_part = model.sample_with_document_part(BlockDesign(10, 6, 1), rng, method=PAIRWISE)
    frame = study.comparisons_frame()
    latent = model.effects_for("fitted") + document_part  # (documents, systems): quality without the annotator
    index = {name: k for k, name in enumerate(model.systems)}
    first, second = frame["system_a"].map(index).to_numpy(), frame["system_b"].map(index).to_numpy()
    documents = frame["document"].to_numpy()
    difference = latent[documents, first] - latent[documents, second] + POSITION_BIAS \
        + rng.normal(0, JUDGE_NOISE, len(frame))
    frame["judge_preferred"] = np.where(np.abs(difference) < TIE_BAND, "tie",
                                        np.where(difference > 0, frame["system_a"], frame["system_b"]))
    human = rng.random(len(frame)) < HUMAN_SHARE
    frame["preferred"] = frame["preferred"].where(human, "")
    frame["annotator"] = [f"ann{a + 1:02d}" if h else "" for a, h in zip(frame["annotator"], human)]
    frame["document"] = [f"doc{d + 1:02d}" for d in frame["document"]]
    return frame[["document", "system_a", "system_b", "judge_preferred", "preferred", "annotator"]]


if __name__ == "__main__":
    make_table().to_csv(OUT, index=False)
    print(f"wrote {OUT}")
