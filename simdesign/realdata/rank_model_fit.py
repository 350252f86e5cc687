"""Fit a rank-only model in either choice order and keep the one the rankings support better.

The rank-ordered logit builds a ranking by successive logit choices. The usual order is best
first (latent ``eta + e``, ``e`` standard Gumbel: the best output is chosen among all, then the
best of the rest); the other is worst first (latent ``eta - e``: the worst is chosen first, then
the worst of the rest). Both have closed-form ranking probabilities and the same parameters
(:class:`simdesign.model.RankOnlyModel`, its ``choice`` field), and neither nests the other, so
with equal numbers of parameters the one with the higher likelihood is the better description
(equal AIC penalties).

A worst-first fit is a best-first fit of the reversed rankings: if ``-latent = -eta + e``, then
the reversed ranking is a best-first ranking with effects ``-beta`` and the same slope
covariances (a slope's sign does not change its covariance), with the same likelihood. So
:func:`fit_rank_choice` reverses the table, fits it with :func:`simdesign.realdata.rank_fit.fit_rank_only`
and negates the effects; standard errors carry over unchanged.

On the paper's files worst-first is the better order for both tasks (Laplace log-likelihood
-1172.60 against -1178.49 for coherence, -1372.52 against -1375.31 for repetition), and its
predictive check puts all 42 statistics of each Rank file inside their simulated ranges (best
first: 41 of 42 for coherence; docs/how-to/likert-or-rank.md).
"""
from __future__ import annotations

import dataclasses

import pandas as pd

from simdesign.core.errors import ConfigError
from simdesign.model import RankOnlyModel
from simdesign.model.ranks import CHOICES
from simdesign.realdata.rank_fit import RankFitResult, fit_rank_only


def fit_rank_choice(frame: pd.DataFrame, choice: str = "best_first", reference=None, name: str = "fitted",
                    source: dict | None = None, standard_errors: bool = True) -> RankFitResult:
    """The rank-only model with ``choice`` order, fitted to a checked Rank table.

    Parameters
    ----------
    frame : pandas.DataFrame
        A checked Rank table (:func:`simdesign.tables.recognise.read_table`: ``score`` = reversed rank, S = best).
    choice : {'best_first', 'worst_first'}
    reference, name, source, standard_errors
        As :func:`simdesign.realdata.rank_fit.fit_rank_only`.

    Returns
    -------
    RankFitResult
        Its model has the given ``choice``; ``theta`` is the best-first parameterisation of the
        table that was fitted (the reversed one for worst first).

    Examples
    --------
    >>> import numpy as np
    >>> from simdesign.core.designs import BlockDesign
    >>> truth = RankOnlyModel("toy", ("a", "b", "c"), [0.0, 0.5, 1.0], np.eye(2) * 0.2, np.eye(2) * 0.1,
    ...                       choice="worst_first")
    >>> frame = truth.sample(BlockDesign(4, 5, 3), np.random.default_rng(0)).to_frame()
    >>> fit_rank_choice(frame, "worst_first", standard_errors=False).model.choice
    'worst_first'
    """
    if choice not in CHOICES:
        raise ConfigError(f"The rank model's choice must be one of {', '.join(CHOICES)}; got {choice!r}")
    if choice == "best_first":
        return fit_rank_only(frame, reference, name, source, standard_errors)
    n_systems = frame["system"].nunique()
    reversed_table = frame.assign(score=n_systems + 1 - pd.to_numeric(frame["score"]))
    result = fit_rank_only(reversed_table, reference, name, source, standard_errors)
    fitted = result.model
    # 0.0 - beta rather than -beta: the reference's effect is written 0.0, not -0.0
    model = RankOnlyModel(name=fitted.name, systems=fitted.systems, effects=0.0 - fitted.effects,
                          annotator_slope_cov=fitted.annotator_slope_cov, document_slope_cov=fitted.document_slope_cov,
                          citation=fitted.citation, choice="worst_first",
                          provenance=fitted.provenance.replace("standard Gumbel noise",
                                                               "worst-first choices (minus standard Gumbel noise)"))
    return dataclasses.replace(result, model=model)


def fit_better_choice(frame: pd.DataFrame, reference=None, name: str = "fitted", source: dict | None = None,
                      standard_errors: bool = True) -> tuple[RankFitResult, dict]:
    """Fit both choice orders; return the fit with the higher log-likelihood and every order's.

    Returns
    -------
    best : RankFitResult
    logliks : dict
        choice -> Laplace log-likelihood.
    """
    fits = {choice: fit_rank_choice(frame, choice, reference, name, source, standard_errors) for choice in CHOICES}
    best = max(fits, key=lambda choice: fits[choice].loglik)
    return fits[best], {choice: fit.loglik for choice, fit in fits.items()}
