"""A pairwise study held densely (rows x pairs, as simulations draw it) and as its list of comparisons only (as a
large battle log is read) gives every pairwise test the same result."""
from __future__ import annotations

import dataclasses

import numpy as np

from simdesign.analyses import ANALYSES, run_analysis
from simdesign.core.designs import BlockDesign
from simdesign.core.judgements import Judgements
from simdesign.model import load_model


def test_the_list_of_comparisons_gives_the_tests_of_the_dense_study():
    model = dataclasses.replace(load_model("coherence"), preferences={"pairs": 3})
    dense = model.sample(BlockDesign(4, 3, 3), np.random.default_rng(5), "fitted", method="pairwise")
    found = dense.comparisons()
    # turned round: the second system named first, its outcome mirrored (from_comparisons puts it back)
    log = Judgements.from_comparisons(dense.systems, found["annotator"], found["document"], found["block"],
                                      found["second"], found["first"], 1.0 - found["outcome"], ~found["first_shown"])
    assert log.is_pairwise and log.has_blocks and log.comparisons()["outcome"].tolist() == found["outcome"].tolist()
    for name, info in ANALYSES.items():
        if info.takes_preferences and info.needs != "R":
            a, b = (run_analysis(info, j, np.random.default_rng(1), {}) for j in (dense, log))
            np.testing.assert_allclose(a.estimate, b.estimate, rtol=1e-12, err_msg=name)
            np.testing.assert_allclose(a.p_value, b.p_value, rtol=1e-12, err_msg=name)
