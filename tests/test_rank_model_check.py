"""The Rank model the Rank-vs-Likert figure and the method plans use passes its predictive check (issue 30 part 3).

The criterion: the share of Rank statistics outside their simulated 95% ranges is at most the share
of Likert statistics outside theirs when the same model's Likert part is checked the same way
(200 studies with the data's own design, seed 0) on the same task's Likert file. The joint model
(Rank from the Likert model and rank_noise) fails it on coherence: 10 of 42 against 1 of 44.
"""
from pathlib import Path

import pytest

from simdesign.realdata.check import predictive_check
from simdesign.realdata.rank_check import rank_predictive_check
from simdesign.tables.recognise import read_table
from simdesign.studies.rates.config import load_config

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "steen-markert-2021" / "judgements"
TRIALS, SEED = 200, 0

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not DATA.is_dir(), reason="the paper's data (../shared/data) is not here")]


def outside_share(table) -> float:
    return float((~table["inside"]).mean())


def model_of(config: str):
    from simdesign.planning.planner import load_plan

    return (load_plan if "plan_" in config else load_config)(ROOT / config).model


def test_the_figure_and_the_coherence_plan_use_one_model():
    assert model_of("configs/rank_vs_likert_coherence.yaml").to_dict() == \
        model_of("configs/plan_methods_coherence.yaml").to_dict()


@pytest.mark.parametrize("task, config", [("coherence", "configs/rank_vs_likert_coherence.yaml"),
                                          ("repetition", "configs/plan_methods_repetition.yaml")])
def test_rank_check_has_at_most_the_likert_checks_share_of_misfits(task, config):
    model = model_of(config)
    likert, _ = read_table(DATA / f"likert_{task}_cnn_dm.csv", "likert")
    ranks, _ = read_table(DATA / f"rank_{task}_cnn_dm.csv", "rank")
    likert_table, _ = predictive_check(model, likert, trials=TRIALS, seed=SEED)
    rank_table, _ = rank_predictive_check(model, ranks, trials=TRIALS, seed=SEED)
    assert len(rank_table) == 42 and len(likert_table) == 44
    assert outside_share(rank_table) <= outside_share(likert_table), (
        rank_table[~rank_table["inside"]], likert_table[~likert_table["inside"]])
