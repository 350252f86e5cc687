"""Every word ``cost.seconds_per_judgement`` accepts is in its error message and in the plan how-to (issue 39).

``seconds_per_judgement: coherence`` worked but was in neither list.
"""
import re
from pathlib import Path

import pytest

from simdesign.core.errors import ConfigError
from simdesign.planning.planner import RULES, annotation_times, parse_plan
from test_planner import plan

ROOT = Path(__file__).resolve().parents[1]
TASKS = tuple(annotation_times()["likert"])
WORDS = ("auto",) + tuple(RULES) + TASKS


def cost(value) -> dict:
    return plan(cost={"pay_per_hour": 12.0, "seconds_per_judgement": value})


@pytest.mark.parametrize("word", WORDS)
def test_each_accepted_word_is_accepted_and_listed(word):
    assert parse_plan(cost(word)).cost.seconds_per_judgement > 0
    with pytest.raises(ConfigError) as error:
        parse_plan(cost("fast"))
    assert repr(word) in str(error.value)
    page = " ".join((ROOT / "docs" / "how-to" / "plan.md").read_text().split())
    sentence = re.search(r"`seconds_per_judgement` takes (.*?)\. ", page).group(1)
    assert f"`{word}`" in sentence, sentence


def test_the_message_shows_the_per_method_form_and_a_near_miss():
    with pytest.raises(ConfigError, match=r"\{likert: auto, rank: 20\}.*did you mean 'coherence'"):
        parse_plan(cost("coherenc"))
