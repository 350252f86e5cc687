"""The built-in annotation methods' steps that live in the real-data layer: fitting their models, checking
them, and analysing a study (their table steps: :mod:`simdesign.tables.steps`).

A method (layer 1) never names a function of a layer above it; this module, in the layer that owns the
functions, gives them to the methods (:func:`simdesign.methods.register_step`). The package
:mod:`simdesign.realdata` imports it, so importing any real-data module registers these steps.
"""
from __future__ import annotations

from simdesign.methods import register_step
from simdesign.methods.likert import LIKERT
from simdesign.methods.pairwise import PAIRWISE
from simdesign.methods.rank import RANK
from simdesign.realdata.check import predictive_check
from simdesign.realdata.fit import fit_model
from simdesign.realdata.pairwise_analysis import analyse_pairwise
from simdesign.realdata.pairwise_check import pairwise_predictive_check
from simdesign.realdata.pairwise_fit import fit_pairwise
from simdesign.realdata.rank_check import rank_predictive_check
from simdesign.realdata.rank_fit import fit_rank_only
from simdesign.realdata.rank_noise import fit_rank_noise

for _role, _function in (("fit", fit_model),  # the cumulative-link mixed model
                         ("check", predictive_check)):
    register_step(LIKERT, _role, _function)
for _role, _function in (("fit", fit_rank_only),  # the rank-ordered logit with random slopes
                         ("fit_noise", fit_rank_noise),  # the rank_noise of a joint Likert/Rank model
                         ("check", rank_predictive_check)):
    register_step(RANK, _role, _function)
for _role, _function in (("fit_noise", fit_pairwise),  # noise, tie band and position bias of a Likert model
                         ("check", pairwise_predictive_check),
                         ("analyse", analyse_pairwise)):
    register_step(PAIRWISE, _role, _function)
