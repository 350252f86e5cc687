import pytest
import yaml

from simdesign.studies.rates.config import load_config, parse_config
from simdesign.core.errors import ConfigError

BASE = {
    "name": "t", "model": "coherence", "effect": "zero", "trials": 10, "seed": 1,
    "designs": [{"kind": "block", "blocks": 2, "docs_per_block": 5, "annotators_per_block": 3}],
    "tests": ["ttest", "art_doc"],
}


def _config(**changes):
    return parse_config({**BASE, **changes})


def test_defaults_and_labels():
    config = _config()
    assert config.alpha == 0.05 and config.art_resamples == 1000 and config.art_exact == "auto"
    assert [a.label for a in config.analyses] == ["ttest", "art_doc"]
    # ART inherits the config-level resamples but its label shows only written options
    assert config.analyses[1].options == {"resamples": 1000, "exact": "auto"}
    labelled = _config(tests=["art", {"name": "art", "resamples": 5000}, {"name": "art", "exact": "never",
                                                                          "label": "art-paper"}])
    assert [a.label for a in labelled.analyses] == ["art", "art[5000]", "art-paper"]
    assert labelled.analyses[1].options["resamples"] == 5000


def test_grid_mapping_zips_lists_and_broadcasts_scalars():
    config = _config(designs=[{"kind": "block", "blocks": [1, 2, 4], "docs_per_block": [100, 50, 25],
                               "annotators_per_block": 3},
                              {"kind": "pool", "docs": 100, "annotators": 30, "judgements_per_output": 3}])
    assert [d.label for d in config.designs] == ["block-B1-D100-A3", "block-B2-D50-A3", "block-B4-D25-A3",
                                                 "pool-N100-M30-k3"]


@pytest.mark.parametrize("changes,fragment", [
    (dict(alpha=1.5), "The 'alpha' field must be in (0, 1); got 1.5"),
    (dict(effect=None), "'effect'"),
    (dict(effect="null"), "'effect' field must be 'zero', 'fitted'"),
    (dict(trials=0), "'trials' field must be a positive integer"),
    (dict(model="nonexistent"), "'model' field must be a preset"),
    (dict(tests=["ttest", "nope"]), "'tests[1]' test 'nope' is unknown"),
    (dict(tests=["ttest", "ttest"]), "same analysis more than once"),
    (dict(tests=[{"name": "art", "resamples": 0}]), "resamples"),
    (dict(tests=[{"name": "art", "exact": "sometimes"}]), "exact"),
    (dict(tests=[{"name": "ttest", "structure": "paper"}]), "has no option"),
    (dict(designs=[{"kind": "blok", "blocks": 1}]), "'designs[0].kind' field must be one of"),
    (dict(designs=[{"kind": "block", "blocks": [1, 2], "docs_per_block": [5, 5, 5], "annotators_per_block": 1}]),
     "equal lengths"),
    (dict(designs=[{"kind": "pool", "docs": 10, "annotators": 2, "judgements_per_output": 3}]),
     "judgements_per_output"),
    (dict(designs=[{"kind": "pool", "docs": 10, "annotators": 5, "judgements_per_output": 3}],
          tests=["art_block"]), "do not apply to pool designs"),
    (dict(designs=[]), "'designs' field must be a non-empty list"),
    (dict(colour="red"), "Unknown config key"),
    (dict(figure={"x": "color"}), "figure.x"),
])
def test_bad_configs_name_the_field(changes, fragment):
    with pytest.raises(ConfigError) as info:
        _config(**changes)
    assert fragment in str(info.value)


def test_all_problems_reported_together():
    with pytest.raises(ConfigError) as info:
        _config(alpha=2, trials=-1, tests=["nope"])
    assert len(info.value.messages) == 3


def test_load_config_from_yaml_with_override(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(BASE))
    assert load_config(path, {"trials": 7}).trials == 7
    path.write_text("effect: zero\n  bad: [")
    with pytest.raises(ConfigError, match="YAML"):
        load_config(path)


def test_shipped_configs_are_valid():
    """Every shipped config parses as its study kind (or the driver over kinds, a sweep) does: the kind from the
    registry, no list of kinds here."""
    from conftest import REPO
    from simdesign.studies.kinds import kind_or_driver, study_kind

    kinds = set()
    for path in sorted((REPO / "configs").glob("*.yaml")):
        if path.name.startswith("plan"):
            continue  # planner configs have their own schema
        raw = yaml.safe_load(path.read_text())
        kind = kind_or_driver(study_kind(raw))  # replications: the rates kind
        kinds.add(kind.name)
        assert kind.config_name(kind.parse(raw, path.parent)), path.name
    assert {"rates", "panels", "metric-validation", "sweep", "tac", "crowd", "judge"} <= kinds


def test_effect_bound_depends_on_the_model_and_accepts_the_boundary():
    # coherence: largest |effect| 1.3716 -> factor 14.58; repetition: 2.1420 -> factor 9.34 (latent bound 20)
    assert _config(effect=14.5).effect == 14.5
    with pytest.raises(ConfigError, match=r"\|effect\| <= 9\.34 for the model 'repetition'"):
        _config(model="repetition", effect=9.4)
    assert _config(model="repetition", effect=-9.3).effect == -9.3


def test_figure_estimand_of_a_reliability_only_config_is_one_of_its_estimands():
    reliability = {"tests": None, "estimands": ["krippendorff_alpha", "shr"]}
    assert _config(**reliability, figure={"estimand": "shr"}).figure.estimand == "shr"
    with pytest.raises(ConfigError, match=r"'figure.estimand' field must be one of \['krippendorff_alpha', 'shr'\]"):
        _config(**reliability, figure={"estimand": "type1"})
    # with tests as well, the tests' estimands under the effect are allowed too
    assert _config(estimands=["shr"], figure={"estimand": "familywise"}).figure.estimand == "familywise"
    # singular_rate exists only for tests that fit a model
    assert _config(tests=["clmm_native"], figure={"estimand": "singular_rate"}).figure.estimand == "singular_rate"


def test_negative_effect_is_a_warning_not_an_error():
    from simdesign.studies.rates.config import config_warnings

    assert config_warnings(_config(effect=2)) == []
    [warning] = config_warnings(_config(effect=-0.5))
    assert "'effect' field is negative (-0.5)" in warning
