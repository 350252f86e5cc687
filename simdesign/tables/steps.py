"""The built-in annotation methods' table steps: reading, orienting and describing their tables.

A method (layer 1) never names a function of a layer above it; this module, in the layer that owns the
functions, gives them to the methods (:func:`simdesign.methods.register_step`). Whatever calls a table step
imports this module first (:func:`simdesign.tables.recognise.load_steps`); the fit, check and analyse steps are
registered by :mod:`simdesign.realdata.method_steps`.
"""
from __future__ import annotations

from simdesign.methods import register_step
from simdesign.methods.likert import LIKERT
from simdesign.methods.pairwise import PAIRWISE
from simdesign.methods.rank import RANK
from simdesign.tables.likert import describe_likert, orient_likert, read_likert_table
from simdesign.tables.pairwise import describe_pairwise, orient_pairwise, read_pairwise_table
from simdesign.tables.ranks import describe_ranks, orient_ranks, read_rank_table

for _method, _steps in ((LIKERT, (read_likert_table, orient_likert, describe_likert)),
                        (RANK, (read_rank_table, orient_ranks, describe_ranks)),
                        (PAIRWISE, (read_pairwise_table, orient_pairwise, describe_pairwise))):  # and Arena logs
    for _role, _function in zip(("read_table", "orient", "describe"), _steps):
        register_step(_method, _role, _function)
