"""A pairwise study held densely (rows x pairs, as simulations draw it) and as its list of comparisons only (as a
large battle log is read) gives every pairwise test the same result."""
from __future__ import annotations

import dataclasses

import numpy as np

from simdesign.significance import ANALYSES, run_analysis
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


def test_the_calibration_warnings_cover_the_designs_measured_liberal():
    """The pairwise method warns for every Figure-4 design on which figures/pairwise_type1.csv measured a test
    failing its level, and not where the test held it."""
    import pandas as pd

    from simdesign.core.designs import design_from_mapping
    from simdesign.methods.pairwise import PAIRWISE_CALIBRATION

    measured = pd.read_csv(__import__("pathlib").Path(__file__).resolve().parents[1] / "figures/pairwise_type1.csv")
    options = {"bradley_terry": {}, "bradley_terry_naive": {"errors": "model"}, "pair_sign": {}}
    blocks = measured[(measured["kind"] == "block") & measured["test"].isin(list(options))]
    assert len(blocks) >= 40
    for _, row in blocks.iterrows():
        design = design_from_mapping({"kind": "block", "blocks": int(row["blocks"]),
                                      "docs_per_block": int(row["docs_per_block"]),
                                      "annotators_per_block": int(row["annotators_per_block"])})
        name = "bradley_terry" if row["test"].startswith("bradley_terry") else row["test"]
        warned = PAIRWISE_CALIBRATION[name][0](design, options[row["test"]])
        if row["verdict"] == "fails":
            assert warned, (row["design"], row["test"])
        elif row["verdict"] == "holds":
            assert not warned, (row["design"], row["test"])
