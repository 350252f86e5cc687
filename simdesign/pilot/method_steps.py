"""The built-in annotation methods' steps that live in the pilot layer: reading, orienting and describing
their tables, fitting their models and checking them.

A method (layer 1) never names a function of a layer above it; this module, in the layer that owns the
functions, gives them to the methods (:func:`simdesign.methods.register_step`). Whatever calls a method's
step imports this module first (:func:`simdesign.pilot.tables.load_steps`).
"""
from __future__ import annotations

from simdesign.methods import register_step
from simdesign.methods.likert import LIKERT
from simdesign.methods.pairwise import PAIRWISE
from simdesign.methods.rank import RANK
from simdesign.pilot.check import predictive_check
from simdesign.pilot.fit import fit_model
from simdesign.pilot.likert_table import describe_likert, orient_likert, read_likert_table
from simdesign.pilot.pairwise_check import pairwise_predictive_check
from simdesign.pilot.pairwise_fit import fit_pairwise
from simdesign.pilot.pairwise_table import describe_pairwise, orient_pairwise, read_pairwise_table
from simdesign.pilot.rank_check import rank_predictive_check
from simdesign.pilot.rank_fit import fit_rank_only
from simdesign.pilot.rank_noise import fit_rank_noise
from simdesign.pilot.ranks import describe_ranks, orient_ranks, read_rank_table

for _role, _function in (("read_table", read_likert_table), ("orient", orient_likert),
                         ("describe", describe_likert), ("fit", fit_model),  # the cumulative-link mixed model
                         ("check", predictive_check)):
    register_step(LIKERT, _role, _function)
for _role, _function in (("read_table", read_rank_table), ("orient", orient_ranks), ("describe", describe_ranks),
                         ("fit", fit_rank_only),  # the rank-ordered logit with random slopes
                         ("fit_noise", fit_rank_noise),  # the rank_noise of a joint Likert/Rank model
                         ("check", rank_predictive_check)):
    register_step(RANK, _role, _function)
for _role, _function in (("read_table", read_pairwise_table), ("orient", orient_pairwise),  # and Arena battle logs
                         ("describe", describe_pairwise),
                         ("fit_noise", fit_pairwise),  # noise, tie band and position bias of a Likert model
                         ("check", pairwise_predictive_check)):
    register_step(PAIRWISE, _role, _function)
# (its 'analyse' step is registered by simdesign.pilot.pairwise_analysis, which imports simdesign.pilot.analyse:
# importing it here would close a cycle through simdesign.pilot.tables)
