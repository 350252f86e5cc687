"""Regenerate examples/judge_human.csv: a small synthetic judge-plus-human table for `simdesign analyse`.

    python examples/make_judge_human.py

Four systems write outputs for 60 documents; an LLM judge scores all 240 outputs on a 1-10 scale and six
annotators score the outputs of 20 documents on a 1-5 scale (every system's output of such a document, each by
two annotators). Each output has a latent quality (system effect + document effect + noise); a human score is
round(3 + quality + the annotator's severity + noise), the judge's round(5.5 + 2 * (quality + noise)), both
clipped to their scales, and the judge adds 1 point to `judge_family` (self-preference: its humans' mean is
sys_b's). The expected human scores are not printed anywhere: the table is for trying the command. Seed
20260114; tests/test_ppi.py checks that the committed file is what this script writes.
"""
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "judge_human.csv"
SYSTEMS = {"sys_a": 0.4, "sys_b": 0.0, "sys_c": 0.2, "judge_family": 0.0}  # latent effects
DOCUMENTS, HUMAN_DOCUMENTS, ANNOTATORS, PER_OUTPUT = 60, 20, 6, 2
SELF_PREFERENCE = 1.0  # judge points added to judge_family's outputs


def make_table(seed: int = 20260114) -> pd.DataFrame:
    """The example table: one row per judged output and human, the judge's score repeated on each."""
    rng = np.random.default_rng(seed)
    effects = np.array(list(SYSTEMS.values()))
    quality = effects[:, None] + rng.normal(0, 0.6, DOCUMENTS)[None, :] + rng.normal(0, 0.5, (len(SYSTEMS), DOCUMENTS))
    severity = rng.normal(0, 0.4, ANNOTATORS)
    judge = np.clip(np.round(5.5 + 2 * (quality + rng.normal(0, 0.5, quality.shape))), 1, 10)
    judge[list(SYSTEMS).index("judge_family")] = np.clip(judge[list(SYSTEMS).index("judge_family")] + SELF_PREFERENCE,
                                                         1, 10)
    rows = []
    for d in range(DOCUMENTS):
        annotators = [(d + k) % ANNOTATORS for k in range(PER_OUTPUT)] if d < HUMAN_DOCUMENTS else []
        for s, system in enumerate(SYSTEMS):
            base = {"system": system, "document": f"doc{d + 1:02d}", "judge": int(judge[s, d])}
            if not annotators:
                rows.append({**base, "human": None, "annotator": None})
            for a in annotators:
                human = int(np.clip(np.round(3 + quality[s, d] + severity[a] + rng.normal(0, 0.5)), 1, 5))
                rows.append({**base, "human": human, "annotator": f"ann{a + 1}"})
    return pd.DataFrame(rows).astype({"human": "Int64"})


if __name__ == "__main__":
    make_table().to_csv(OUT, index=False)
    print(f"wrote {OUT}")
