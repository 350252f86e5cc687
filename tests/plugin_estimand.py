"""Estimands defined outside simdesign, as a user would write them (used by tests/test_plugins.py).

``mean_score`` is a per-trial value a config requests in its ``estimands`` list: the mean of a trial's
scores (every judgement of every system). Registering it is harmless to every other config (only a config
that names it computes it), so it is registered when this module is imported, as a user's module would.

``half_alpha_type1`` is a rate of every test (the share of pairs rejected at alpha / 2 when no system
differs). Such an estimand appears in every rate summary, so the tests register it only for as long as they
need it (:func:`half_alpha_rate`), leaving every other summary as it was.
"""
from __future__ import annotations

import contextlib

import numpy as np

from simdesign.core.estimands import Estimand, register_estimand, unregister_estimand
from simdesign.studies.rates.summary import rate_from_shares, summarise_estimand

def mean_score(judgements, rng) -> float:
    """The mean of the trial's scores (``rng``, the trial's own stream for this estimand, is not needed)."""
    return float(np.mean(judgements.scores))


MEAN_SCORE = register_estimand(Estimand(
    "mean_score", ("rates",), "value", "mean score of a study", summarise_estimand,
    "mean of a trial's scores over every judgement; mean over trials", per_trial=mean_score))


def _half_alpha_type1(table, group):
    """Share of pairs with p < alpha / 2: the rejections at alpha are counted from p-values again."""
    p_value = group["p_value"].to_numpy(float).reshape(table.reject.shape)
    rejected = (p_value < HALF_ALPHA["alpha"] / 2) & ~table.failed
    trials, n_pairs = rejected.shape
    return rate_from_shares(rejected.mean(axis=1), trials * n_pairs), int(table.failed.sum()), "at alpha / 2"


HALF_ALPHA = {"alpha": 0.05}  # the level the rate halves (the summary passes its alpha only to rejections)
HALF_ALPHA_TYPE1 = Estimand("half_alpha_type1", ("rates",), "rate", "type I error at alpha / 2", _half_alpha_type1,
                            "share of pairs rejected at alpha / 2 when no system differs", under="null",
                            nominal_level=True)


@contextlib.contextmanager
def half_alpha_rate():
    """``half_alpha_type1`` registered for the duration of a ``with`` block."""
    register_estimand(HALF_ALPHA_TYPE1)
    try:
        yield HALF_ALPHA_TYPE1
    finally:
        unregister_estimand(HALF_ALPHA_TYPE1.name)
