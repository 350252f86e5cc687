"""Fixed values pinning the random streams (data and analysis seeds) and the tests' arithmetic.

The literals below were computed once from the code as it stood when this test was written
(issue 11) and typed in; they are not derived from the code under test at run time. A change
that alters any simulated study or p-value makes this test fail: if the change is intended
(a new seed scheme, a corrected test), update the literals knowingly and say so in the commit.
Regenerated for generator version 2 (issue 38: covariance roots without LAPACK), the only change since.
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
    (0, "ttest"): [0.46650686042362155, 0.00012547453548797036, 0.0548721802506137, 0.04288055050987124],
    (0, "wilcoxon_doc"): [0.5688114004133373, 0.005242214351664538, 0.1132510933365004, 0.17519547507527267],
    # art_doc's p-values are (exceedances + 1) / 201: they pin the analysis stream of the resamples
    (0, "art_doc[200]"): [100 / 201, 1 / 201, 23 / 201, 23 / 201],
    (2, "ttest"): [0.011121046005071638, 2.5843618386826007e-07, 0.1048881383948356, 0.017654435021438226],
    (2, "wilcoxon_doc"): [0.01726489220321131, 0.0002751231831316407, 0.2030326920076072, 0.06910817009520422],
    (2, "art_doc[200]"): [2 / 201, 1 / 201, 36 / 201, 12 / 201],
}
# the first three judged (annotator, document) rows of trial 0 and trial 2: scores of the five systems
PINNED_SCORES = {0: [[3, 5, 7, 5, 4], [3, 4, 4, 3, 2], [2, 6, 7, 6, 1]],
                 2: [[1, 2, 4, 4, 3], [3, 2, 6, 6, 3], [2, 3, 6, 7, 2]]}


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
