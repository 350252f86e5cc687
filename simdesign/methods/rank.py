"""Rank: each annotator orders the outputs of one document from best to worst.

The latent value of output ``s`` for (annotator ``a``, document ``d``) is the same as for Likert; a ranking
sorts it with the model's ranking noise (:meth:`~simdesign.model.OrdinalMixedModel.ranking_noise`: logistic
of scale ``rank_noise`` for a joint Likert/Rank model, standard Gumbel for a rank-only model). Judgements
are stored as *reversed* ranks, ``S + 1 - rank`` (S = best), so that, as for Likert scores, higher means
better and every test reads them the same way; tables report ranks 1-based (1 = best), as the paper does.

Rank studies get their own random streams (the key gains the label ``rank``) and their results the label
suffix ``@rank``, so they are independent of the Likert ones and the same whichever other methods a config
lists.
"""
from __future__ import annotations

import numpy as np

from simdesign.methods.base import AnnotationMethod, register_method


def reversed_ranks(latent: np.ndarray) -> np.ndarray:
    """Reversed ranks per row: S for the largest latent value, 1 for the smallest.

    Parameters
    ----------
    latent : ndarray, shape (n_rankings, S)

    Returns
    -------
    ndarray of int64, shape (n_rankings, S)

    Examples
    --------
    >>> reversed_ranks(np.array([[0.3, -1.0, 2.0]]))
    array([[2, 1, 3]])
    """
    return np.argsort(np.argsort(latent, axis=1, kind="stable"), axis=1, kind="stable").astype(np.int64) + 1


# Tests measured to be miscalibrated on rankings (issue 13): test name -> (applies(design, n_systems), warning).
# With one document per annotator the mixed model's annotator slopes can reproduce every ranking of that
# one document. Measured as README "Rank studies" says (coherence, rank_noise 1.0,
# 40 documents x 3 annotators, each annotator ranks one document, effect zero, 50 trials, seed 13).
RANK_CALIBRATION = {
    "clmm_native": (
        lambda design, n_systems: design.max_judgements_per_annotator(n_systems) == n_systems,
        "each annotator ranks one document, so the mixed model's annotator slopes can reproduce every ranking; "
        "measured on ranks there (coherence, rank_noise 1.0, 40 documents x 3 annotators, 50 trials): type I "
        "error 0.22 [0.15, 0.31] with failed fits counted as non-rejections, and 60% of fits failing (not "
        "converged), against 0.064 [0.041, 0.099] and no failures on Likert scores (README, 'Rank studies'). "
        "Use a per-document or per-block test, or let each annotator rank several documents"),
}


class Rank(AnnotationMethod):
    name = "rank"
    label = "Rank"
    colour = "tab:orange"
    value_column = "rank"
    value_name = "mean rank (1 = best)"
    best_is_low = True
    rankings = True
    covers = "ranking"
    stream_suffix = ("rank",)  # the key rank studies have always had (label_key('rank') appended)
    result_suffix = "@rank"
    model_requirement = ("a Likert model generates ranks only with a 'rank_noise' (in its file, or "
                         "model: {preset: NAME, rank_noise: VALUE}) or a rank model fitted to rankings "
                         "(model: {preset: NAME, rank_model: NAME or FILE}); a rank-only model (kind: rank_only) "
                         "generates rankings only")
    planning_requirement = ("a model of both methods (separately fitted: model: {preset: TASK, rank_model: TASK}; "
                            "or a joint Likert/Rank model, a Likert model with 'rank_noise': the presets, or "
                            "'simdesign fit RANKS.csv --likert-model MODEL')")
    analysis_note = ("Rank data: tests work on the reversed rank S + 1 - rank (positive estimate = a better), the "
                     "table reports mean ranks 1-based (1 = best)")
    # its table steps, fits (fit: the rank-ordered logit; fit_noise: a joint model's rank_noise) and check are
    # registered by the pilot layer (simdesign/realdata/method_steps.py), its commands (cli_fit, cli_check) by
    # simdesign/cli/fit_ranks.py: the layers that own them
    steps: dict = {}

    def can_generate(self, model) -> bool:
        return bool(getattr(model, "generates_rankings", False))

    def responses(self, model, eta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return reversed_ranks(eta + model.ranking_noise(rng, eta.shape))

    def file_form(self, frame, n_systems: int):
        # responses are reversed ranks (S = best); a Rank file holds ranks, 1 = best
        return frame.assign(rank=n_systems + 1 - frame["score"]).drop(columns="score")

    def fingerprint(self, model) -> dict:
        # a joint model's rank trials depend on its rank_noise, a separately fitted pair's on its rank model
        # (simdesign.model.method_pair); the shared model digest leaves both out
        rank_model = getattr(model, "rank_model", None)
        if rank_model is not None:
            return {"rank_model": rank_model.to_dict()}
        noise = getattr(model, "rank_noise", None)
        return {} if noise is None else {"rank_noise": float(noise)}

    def model_note(self, model) -> str:
        rank_model = getattr(model, "rank_model", None)
        if rank_model is not None:
            return f"rankings from {rank_model.name}"
        noise = getattr(model, "rank_noise", None)
        return "" if noise is None else f"rank_noise {noise:g}"

    def warnings(self, config) -> list[str]:
        found = []
        for spec in config.analyses:
            entry = RANK_CALIBRATION.get(spec.name)
            if entry is None:
                continue
            applies, text = entry
            designs = [d.label for d in config.designs if applies(d, config.model.n_systems)]
            if designs:
                found.append(f"The test {spec.label} on ranks is not calibrated for the design(s) {designs}: {text}")
        return found


RANK = register_method(Rank())
