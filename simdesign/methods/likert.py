"""Likert: each annotator gives every output of a document a score on an ordered scale (the default method).

A cumulative-logit model generates it: the latent value plus standard logistic noise falls between two of
the model's thresholds, which picks the score (docs/model.md). Likert keeps the streams and result labels
results had before annotation methods existed (no stream or label suffix).
"""
from __future__ import annotations

import numpy as np

from simdesign.methods.base import AnnotationMethod, register_method


class Likert(AnnotationMethod):
    name = "likert"
    label = "Likert"
    colour = "tab:blue"
    value_column = "score"
    value_name = "mean score"
    is_default = True
    model_requirement = "a Likert model (thresholds on a score scale: a preset or a fitted model file)"
    planning_requirement = "a Likert model"
    # read_table, orient, describe, fit and check are registered by the pilot layer that owns them
    # (simdesign/realdata/method_steps.py), never named here: a method does not point at a layer above it
    steps: dict = {}

    def can_generate(self, model) -> bool:
        return getattr(model, "thresholds", None) is not None

    def responses(self, model, eta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        latent = eta + rng.logistic(size=eta.shape)
        category = np.searchsorted(model.thresholds, latent, side="left")
        return np.asarray(model.scale, dtype=np.int64)[category]


LIKERT = register_method(Likert())
