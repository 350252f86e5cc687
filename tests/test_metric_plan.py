"""The metric-validation planner question (simdesign/planning/metric_plan.py) on a hand-made summary."""
from __future__ import annotations

import pandas as pd
import pytest

from simdesign.core.errors import ConfigError
from simdesign.planning.metric_plan import metric_plan

TABLE = pd.DataFrame({"systems": [5, 10, 20, 5, 10, 20], "documents": [10, 10, 10, 40, 40, 40],
                      "estimand": "width", "scheme": "BOOT-BOTH",
                      "value": [0.9, 0.6, 0.45, 0.8, 0.48, 0.3],
                      "ci_low": [0.85, 0.55, 0.40, 0.75, 0.46, 0.28], "ci_high": [0.95, 0.65, 0.52, 0.85, 0.49, 0.32]})


def test_cheapest_cell_reaching_a_width_and_surely():
    plan = metric_plan(TABLE, 0.5, smaller_is_better=True, estimand="width")
    assert plan["cost"].tolist() == [50, 100, 200, 200, 400, 800]  # systems x documents, cheapest first
    # 20 x 10 (cost 200) has mean width 0.45 <= 0.5 but its interval reaches 0.52; 10 x 40 (cost 400) is sure
    assert (plan.attrs["answer"]["systems"], plan.attrs["answer"]["documents"]) == (20, 10)
    assert plan.loc[plan["reached_surely"], ["systems", "documents"]].iloc[0].tolist() == [10, 40]


def test_power_targets_and_a_cost_function():
    table = TABLE.rename(columns={"value": "rejection_rate"}).assign(
        rejection_rate=[0.2, 0.5, 0.85, 0.3, 0.82, 0.99], ci_low=[0.15, 0.45, 0.8, 0.25, 0.78, 0.97])
    plan = metric_plan(table, 0.8, value="rejection_rate", cost=lambda s, d: 100 * s + d)
    assert (plan.attrs["answer"]["systems"], plan.attrs["answer"]["documents"]) == (10, 40)  # cost 1040 < 2010
    assert metric_plan(table, 0.999, value="rejection_rate").attrs["answer"] is None


def test_selections_that_do_not_pick_one_row_per_cell_are_refused():
    with pytest.raises(ConfigError, match="no column"):
        metric_plan(TABLE, 0.5, test="Williams")
    with pytest.raises(ConfigError, match="No row"):
        metric_plan(TABLE, 0.5, estimand="coverage")
    with pytest.raises(ConfigError, match="several rows"):
        metric_plan(pd.concat([TABLE, TABLE]), 0.5)
