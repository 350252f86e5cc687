"""Workers who judge only some items: a crowdsourcing platform's assignment as a pool design (issue 27 item 5)."""
import numpy as np
import pytest

from simdesign import ConfigError, PoolDesign
from simdesign.studies.rates.config import parse_config
from simdesign.studies.rates.engine import run_simulation
from simdesign.studies.rates.summary import summarise


def test_46_workers_judging_about_26_items_with_3_workers_each():
    design = PoolDesign.for_workers(46, 26, 3)
    assert (design.docs, design.annotators, design.judgements_per_output) == (399, 46, 3)
    for seed in range(3):
        assignment = design.assign(np.random.default_rng(seed))
        loads = np.bincount(assignment.annotator, minlength=46)
        assert assignment.n_annotators == 46 and loads.min() >= 26 and loads.max() <= 27
        # every item has 3 distinct workers
        per_item = np.bincount(assignment.document, minlength=399)
        assert (per_item == 3).all()
        pairs = set(zip(assignment.annotator.tolist(), assignment.document.tolist()))
        assert len(pairs) == 399 * 3


def test_bad_worker_numbers_are_refused():
    with pytest.raises(ConfigError, match="'items_per_worker' of a worker assignment"):
        PoolDesign.for_workers(46, 0, 3)
    with pytest.raises(ConfigError, match="judgements_per_output"):
        PoolDesign.for_workers(2, 5, 3)  # 3 workers per item from a pool of 2


@pytest.mark.slow  # about 2-4 s under load (399 documents x 5 systems, three trials)
def test_the_assignment_runs_through_the_runner_with_partial_coverage(tmp_path):
    design = PoolDesign.for_workers(46, 26, 3, coverage={"BART": 0.5})
    raw = {"name": "crowd", "model": "coherence", "effect": "fitted", "trials": 3, "seed": 8,
           "designs": [{"kind": "pool", "docs": design.docs, "annotators": 46, "judgements_per_output": 3,
                        "coverage": {"BART": 0.5}}],
           "tests": ["ttest_doc", "ttest_unpaired"]}
    config = parse_config(raw)
    assert config.designs == (design,)
    store = run_simulation(config, tmp_path / "out", raw, jobs=1, progress=False)
    summary = summarise(config, store.read_trials())
    assert set(summary["test"]) == {"ttest_doc", "ttest_unpaired"} and (summary["n_failed"] == 0).all()
