"""One config loader signature (issue 40): every config is read by ``load_<kind>(path, overrides=None)`` and
validated by ``parse_<kind>(mapping, base_dir=None)``, and every study kind by ``kind.load(path, overrides)``."""
import inspect

import pytest
import yaml

from simdesign.core.errors import ConfigError
from simdesign.planning.planner import load_plan, parse_plan
from simdesign.planning.replication_plan import load_replication_plan, parse_replication_plan
from simdesign.studies.metrics.metric_validation import load_metric_config, parse_metric_config
from simdesign.studies.panels.panel_study import load_panel_study, parse_panel_study
from simdesign.studies.rates.config import load_config, parse_config
from simdesign.studies.sweep import SweepConfig, load_sweep, parse_sweep

LOADERS = [load_config, load_plan, load_replication_plan, load_panel_study, load_metric_config, load_sweep]
PARSERS = [parse_config, parse_plan, parse_replication_plan, parse_panel_study, parse_metric_config, parse_sweep]


@pytest.mark.parametrize("loader", LOADERS, ids=lambda f: f.__name__)
def test_every_loader_takes_a_path_and_overrides(loader):
    positional = [p for p in inspect.signature(loader).parameters.values()
                  if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert [p.name for p in positional] == ["path", "overrides"] and positional[1].default is None


@pytest.mark.parametrize("parser", PARSERS, ids=lambda f: f.__name__)
def test_every_parser_takes_a_mapping_and_a_base_directory(parser):
    positional = [p for p in inspect.signature(parser).parameters.values()
                  if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert [p.name for p in positional] == ["raw", "base_dir"] and positional[1].default is None


def test_a_sweep_is_a_config_object_with_overrides(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"name": "sw", "model": "coherence", "tests": ["ttest_doc"], "trials": 4,
                                    "designs": [{"kind": "block", "blocks": 2, "docs_per_block": 2,
                                                 "annotators_per_block": 2}],
                                    "sweep": {"effect": ["zero", 0.5]}}))
    sweep = load_sweep(path, {"trials": 3})
    assert isinstance(sweep, SweepConfig) and sweep.name == "sw" and len(sweep.runs) == 2
    assert {config.trials for _, _, config in sweep.runs} == {3}
    with pytest.raises(ConfigError, match="overrides must be a mapping"):
        load_sweep(path, 3)
    with pytest.raises(ConfigError, match="overrides must be a mapping"):
        load_metric_config(path, 3)


@pytest.mark.parametrize("loader", LOADERS, ids=lambda f: f.__name__)
def test_every_loader_refuses_overrides_that_are_not_a_mapping(loader, tmp_path):
    # the one reader (core.yamlio.read_config_mapping) checks them: before, four loaders merged overrides
    # themselves and a list raised a bare TypeError
    path = tmp_path / "any.yaml"
    path.write_text("name: x\n")
    with pytest.raises(ConfigError, match="overrides must be a mapping"):
        loader(path, ["trials", 3])
