"""Fixed-seed statistical properties: calibration under independence, inflation under crossing.

Tolerances come from the Monte-Carlo standard error with the trial as the
unit (docs/estimands.md).
"""
import pytest

from simdesign.significance.classical import CLASSICAL_TESTS
from simdesign.studies.rates.config import parse_config
from simdesign.studies.rates.engine import run_simulation
from simdesign.studies.rates.summary import summarise

from conftest import within_mcse

# Statistical property tests with hundreds of simulated studies each: tens of seconds in all.
pytestmark = pytest.mark.slow

CLASSICAL = sorted(CLASSICAL_TESTS)


def _summary(tmp_path, raw):
    config = parse_config(raw)
    store = run_simulation(config, tmp_path / raw["name"], raw, jobs=1, progress=False)
    return summarise(config, store.read_trials(trials=config.trials))


@pytest.fixture(scope="module")
def independent_null_summary(tmp_path_factory):
    """Every annotator judges one document: all units are independent, so every test should hold its level."""
    raw = {"name": "calibration", "model": "coherence", "effect": "zero", "trials": 1500, "seed": 99,
           "designs": [{"kind": "block", "blocks": 30, "docs_per_block": 1, "annotators_per_block": 1}],
           "tests": CLASSICAL}
    return _summary(tmp_path_factory.mktemp("calibration"), raw)


@pytest.mark.parametrize("name", CLASSICAL)
def test_null_calibration_of_every_classical_test(independent_null_summary, name):
    row = independent_null_summary.query("test == @name and estimand == 'type1'").iloc[0]
    assert row.trials == 1500 and row.n_failed == 0
    # valid: never above the level beyond Monte-Carlo noise
    assert row.rate <= 0.05 + 4 * row.mcse, (name, row.rate, row.mcse)
    if name.startswith("ttest"):
        assert within_mcse(row.rate, 0.05, row.mcse), (name, row.rate, row.mcse)
    else:
        # permutation tests on discrete Likert differences are conservative (atoms in the null
        # distribution of the sum), but not useless
        assert row.rate >= 0.025, (name, row.rate)


def test_art_holds_its_level_exactly_on_continuous_differences():
    """Without ties the randomisation p-value is uniform up to the (1 + count) / (R + 1) granularity."""
    import numpy as np
    from simdesign.significance.classical import randomisation_pvalues
    differences = np.random.default_rng(1).standard_normal((30, 4000))
    rejected = randomisation_pvalues(differences, np.random.default_rng(2), 1000) < 0.05
    standard_error = np.sqrt(0.05 * 0.95 / rejected.size)  # independent columns: binomial SE
    assert within_mcse(rejected.mean(), 0.05, standard_error)


def test_ttest_doc_holds_its_level_with_one_document_per_annotator(tmp_path):
    """The paper's one calibrated set-up: one document per annotator, per-document averaging (100 documents)."""
    raw = {"name": "doc", "model": "coherence", "effect": "zero", "trials": 2000, "seed": 5,
           "designs": [{"kind": "block", "blocks": 100, "docs_per_block": 1, "annotators_per_block": 3}],
           "tests": ["ttest_doc"]}
    row = _summary(tmp_path, raw).query("estimand == 'type1'").iloc[0]
    assert within_mcse(row.rate, 0.05, row.mcse), (row.rate, row.mcse)
    assert row.mcse < 0.0075  # the check has teeth: 4 SE < 0.03


def test_three_crossed_annotators_inflate_the_ttest(tmp_path):
    """Steen & Markert (2021): about 40% type I error with 3 annotators for 100 documents."""
    raw = {"name": "inflation", "model": "coherence", "effect": "zero", "trials": 300, "seed": 6,
           "designs": [{"kind": "block", "blocks": 1, "docs_per_block": 100, "annotators_per_block": 3}],
           "tests": ["ttest", "art"]}
    summary = _summary(tmp_path, raw).query("estimand == 'type1'").set_index("test")
    for test in ("ttest", "art"):
        assert summary.loc[test, "rate"] - 4 * summary.loc[test, "mcse"] > 0.25
        assert within_mcse(summary.loc[test, "rate"], 0.40, summary.loc[test, "mcse"], k=6)


def test_power_rises_with_effect_size(tmp_path):
    raw = {"name": "power", "model": "coherence", "trials": 200, "seed": 8,
           "designs": [{"kind": "block", "blocks": 20, "docs_per_block": 5, "annotators_per_block": 3}],
           "tests": ["ttest_doc"]}
    rates = []
    for effect in (0.25, 1.0):
        row = _summary(tmp_path, {**raw, "name": f"power{effect}", "effect": effect}).query(
            "estimand == 'power'").iloc[0]
        rates.append((row.rate, row.mcse))
    (low, low_se), (high, high_se) = rates
    assert high - low > 4 * (low_se ** 2 + high_se ** 2) ** 0.5
