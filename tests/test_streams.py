"""Fixed values pinning the random streams (data and analysis seeds) and the tests' arithmetic.

The literals below were computed once from the code as it stood when this test was written
(issue 11) and typed in; they are not derived from the code under test at run time. A change
that alters any simulated study or p-value makes this test fail: if the change is intended
(a new seed scheme, a corrected test), update the literals knowingly and say so in the commit.
"""
import numpy as np
import pytest

from simdesign.simulation.config import parse_config
from simdesign.simulation.engine import Chunk, replay_trial, simulate_chunk

RAW = {"name": "streams", "model": "coherence", "effect": "fitted",
       "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 5, "annotators_per_block": 3}],
       "tests": ["ttest", "wilcoxon_doc", {"name": "art_doc", "resamples": 200}], "trials": 3, "seed": 2021}
DESIGN = "block-B4-D5-A3"

# (trial, test label) -> p-values of the first four system pairs
PINNED_P = {
    (0, "ttest"): [0.1254201834214879, 0.0030347628871341664, 0.044527958421865056, 0.0025949451086569385],
    (0, "wilcoxon_doc"): [0.1333389944040993, 0.017505878381010767, 0.04842522145671157, 0.025901884708283474],
    # art_doc's p-values are (exceedances + 1) / 201: they pin the analysis stream of the resamples
    (0, "art_doc[200]"): [22 / 201, 3 / 201, 12 / 201, 5 / 201],
    (2, "ttest"): [0.08120217046202122, 4.4874977400238665e-06, 0.05152537718718576, 0.003074298218837824],
    (2, "wilcoxon_doc"): [0.015021210118070078, 0.0020241869382382222, 0.17586541793388966, 0.03258447023699416],
    (2, "art_doc[200]"): [5 / 201, 2 / 201, 38 / 201, 15 / 201],
}
# the first three judged (annotator, document) rows of trial 0 and trial 2: scores of the five systems
PINNED_SCORES = {0: [[6, 7, 6, 6, 5], [7, 6, 5, 5, 6], [5, 7, 7, 7, 1]],
                 2: [[1, 3, 5, 5, 2], [5, 3, 7, 7, 4], [3, 3, 6, 7, 2]]}


@pytest.fixture(scope="module")
def config():
    return parse_config(RAW)


@pytest.mark.parametrize("trial, test", sorted(PINNED_P))
def test_replayed_p_values_are_pinned(config, trial, test):
    judgements, result = replay_trial(config, DESIGN, trial, test)
    assert list(result.status[:4]) == ["ok"] * 4
    np.testing.assert_allclose(result.p_value[:4], PINNED_P[(trial, test)], rtol=1e-9, atol=0)
    np.testing.assert_array_equal(judgements.scores[:3], PINNED_SCORES[trial])


def test_engine_chunks_give_the_pinned_values(config):
    """The engine's chunk path (as run and the planner use it) draws the same streams as replay."""
    design = config.designs[0]
    frame = simulate_chunk(config.model, config.effect, config.seed, Chunk(design, 0, 3, config.analyses))
    for (trial, test), expected in PINNED_P.items():
        rows = frame[(frame["trial"] == trial) & (frame["test"] == test)].sort_values("pair")
        np.testing.assert_allclose(rows["p_value"].to_numpy()[:4], expected, rtol=1e-9, atol=0)
