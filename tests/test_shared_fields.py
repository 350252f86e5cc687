"""Config fields declared once (issue 27): every study kind's validator applies the same rule, with the same
message, to the shared fields (simdesign/core/fields.py)."""
from __future__ import annotations

import pytest

from simdesign.core.errors import ConfigError
from simdesign.core.fields import SHARED_FIELDS, field_problem
from simdesign.studies.rates.config import parse_config
from simdesign.studies.metrics.metric_validation import parse_metric_config
from simdesign.studies.panels.panel_study import parse_panel_study

RATES = {"name": "r", "model": "coherence", "tests": ["ttest_doc"], "trials": 6,
         "designs": [{"kind": "block", "blocks": 6, "docs_per_block": 1, "annotators_per_block": 3}]}
PANEL = {"name": "ps", "model": "coherence", "docs": 4, "trials": 4,
         "panels": {"expert": {"annotators": 2, "judge": "all"}, "crowd": {"pool": 10, "per_output": 4}}}
METRIC = {"name": "mv", "model": "coherence", "population": {"kind": "normal"},
          "metric": {"summary_correlation": 0.5, "system_correlation": 0.8}, "systems": [5], "documents": [10]}
PARSERS = {"rates": (parse_config, RATES), "panels": (parse_panel_study, PANEL),
           "metric-validation": (parse_metric_config, METRIC)}
BAD = [("name", "a/b"), ("alpha", 1.5), ("alpha", "0.05"), ("trials", 0), ("trials", True), ("seed", -1)]


@pytest.mark.parametrize("kind", list(PARSERS))
@pytest.mark.parametrize("key, value", BAD, ids=[f"{k}={v!r}" for k, v in BAD])
def test_every_kind_refuses_a_bad_shared_field_in_the_same_words(kind, key, value):
    parse, good = PARSERS[kind]
    expected = field_problem(key, value)
    assert expected is not None and f"'{key}'" in expected and repr(value) in expected
    with pytest.raises(ConfigError) as caught:
        parse({**good, key: value})
    assert expected in caught.value.messages


def test_the_table_reads_as_a_reference():
    assert {"name", "trials", "seed", "alpha", "confidence"} <= set(SHARED_FIELDS)
    assert all(field.help for field in SHARED_FIELDS.values())
    assert field_problem("seed", 0) is None and field_problem("trials", 1) is None
    assert field_problem("alpha", 0.05) is None and field_problem("name", "ok") is None
