"""Every study kind on every backend, and SIGKILL/resume for every kind (issue 27): identical rows.

Slow tier: each kind runs with one worker, loky with two, threading, fork and one shared Dask
LocalCluster; a run killed with SIGKILL mid-way and resumed gives the rows of an uninterrupted run.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

import plugin_study_kind  # noqa: F401 -- registers the coin-flips kind
import simdesign
from simdesign.cli import main

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
RATES = {"name": "r", "model": "coherence", "effect": "zero", "tests": ["ttest_doc", "wilcoxon_doc"], "trials": 24,
         "seed": 2, "chunk_size": 5, "estimands": ["krippendorff_alpha"],
         "designs": [{"kind": "block", "blocks": 6, "docs_per_block": 2, "annotators_per_block": 3}]}
# pairwise preference (issue 42): a rates study of another method, on a block design and Arena-style battles
PAIRWISE = {"name": "pw", "model": {"preset": "coherence", "preferences": {"tie_band": 0.3, "pairs": 4}},
            "method": "pairwise", "effect": "zero", "tests": ["pair_sign", "bradley_terry"], "trials": 24, "seed": 2,
            "chunk_size": 5, "designs": [{"kind": "block", "blocks": 6, "docs_per_block": 2, "annotators_per_block": 3},
                                          {"kind": "battles", "battles": 300, "prompts": 40, "judges": 6}]}
REPLICATION = {"name": "rep", "model": "coherence", "effect": "fitted", "tests": ["ttest_doc"], "trials": 12,
               "seed": 3, "chunk_size": 4, "replication": {"tolerance": 0},
               "designs": [{"kind": "overlap", "shared_docs": 6, "unique_docs_per_annotator": 2, "annotators": 3}]}
PANEL = {"name": "ps", "model": "coherence", "docs": 4, "trials": 8, "subsamples": 2, "bootstrap": 20, "seed": 3,
         "chunk_size": 2, "panels": {"expert": {"annotators": 2, "judge": "all"},
                                     "crowd": {"pool": 10, "per_output": 4}}}
METRIC = {"name": "mv", "model": "coherence", "population": {"kind": "normal"},
          "metric": {"summary_correlation": 0.5, "system_correlation": 0.8}, "systems": [5, 6], "documents": [10],
          "methods": ["pearson"], "trials": 8, "bootstrap_resamples": 20, "permutation_resamples": 20, "seed": 3}
# the swept key is not also given at the top level (a config doing so is refused: its value would be ignored)
SWEEP = {**{key: value for key, value in RATES.items() if key != "effect"}, "name": "sw", "estimands": [],
         "sweep": {"effect": ["zero", 0.5]}}
CROWD = {"study": "crowd", "name": "cw", "items": {"structure": "single", "items": 15},
         "workers": {"workers": 8, "per_item": 4, "spammer_share": 0.25}, "ks": [1, 2, 4], "subsamples": 2,
         "aggregations": ["mean", "mace"], "grid": {"spammer_share": [0.0, 0.25]}, "trials": 12, "seed": 5}
COINS = {"name": "coins", "coins": [0.2, 0.7], "flips": 20, "trials": 30, "seed": 4}
TAC = {"study": "tac", "name": "tac", "documents": 10, "machines": {"count": 5, "missing": 0.2},
       "humans": {"count": 4, "per_document": 2}, "bootstrap_resamples": 49, "trials": 12, "chunk_size": 2, "seed": 6,
       "tests": ["ttest_unpaired", {"name": "ttest_doc", "threshold": "mc"}, "wilcoxon_doc"]}
# a judge-plus-human study (issue 43): the judge's and the humans' streams, the selection and the PPI bootstrap
JUDGE = {"study": "judge", "name": "jd", "model": "coherence", "effect": "fitted", "documents": 30,
         "judge": "self_preferring", "select": "least_certain", "bootstrap_resamples": 20, "trials": 12,
         "chunk_size": 2, "seed": 8, "designs": [{"kind": "pool", "docs": 10, "annotators": 4,
                                                 "judgements_per_output": 2}]}
KINDS = {"rates": RATES, "rates-pairwise": PAIRWISE, "replication": REPLICATION, "panels": PANEL, "metric-validation": METRIC, "sweep": SWEEP,
         "crowd": CROWD, "coin-flips": COINS, "tac": TAC, "judge": JUDGE}
TIMING = ["fit_seconds", "run_seconds", "mean_fit_seconds"]


def rows_of(result) -> pd.DataFrame:
    """The per-trial rows (a sweep's: its summary) without wall-clock columns, in a fixed order."""
    frame = result.trials if isinstance(result, simdesign.SimulationResult) else result.rows
    return frame.drop(columns=[c for c in TIMING if c in frame]).reset_index(drop=True)


@pytest.fixture(scope="module")
def dask_scheduler():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


BACKENDS = [("loky", 2, {}), ("threading", 2, {}), ("fork", 2, {}), ("dask", 2, "shared")]


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_gives_the_same_rows_on_every_backend(tmp_path, kind, dask_scheduler):
    mapping = KINDS[kind]
    reference = rows_of(simdesign.simulate(mapping, out_dir=tmp_path / "one", jobs=1, progress=False))
    assert len(reference)
    for backend, jobs, options in BACKENDS:
        options = {"scheduler": dask_scheduler} if options == "shared" else options
        result = simdesign.simulate(mapping, out_dir=tmp_path / backend, jobs=jobs, backend=backend,
                                    progress=False, **options)
        pd.testing.assert_frame_equal(rows_of(result), reference, obj=f"{kind} on {backend}")


def chunk_files(out: Path) -> list[Path]:
    return [p for p in out.rglob("*") if p.suffix in (".parquet", ".csv") and "trials" in p.parts or
            "chunks" in p.parts]


@pytest.mark.parametrize("kind, size", [("rates", {"trials": 1500}), ("rates-pairwise", {"trials": 400}),
                                        ("replication", {"trials": 600}),
                                        ("panels", {"trials": 300}), ("metric-validation", {"trials": 400}),
                                        ("crowd", {"trials": 150}), ("tac", {"trials": 200}),
                                        ("judge", {"trials": 150})])
def test_sigkill_then_resume_gives_the_rows_of_an_uninterrupted_run(tmp_path, kind, size):
    mapping = {**KINDS[kind], **size}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(mapping, sort_keys=False))  # panels draw in their order: keep it
    out = tmp_path / "killed"
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; from simdesign.cli import main; sys.exit(main(sys.argv[1:]))", "run",
         str(path), "--out", str(out), "--jobs", "2", "--quiet"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and len(chunk_files(out)) < 3 and process.poll() is None:
        time.sleep(0.05)
    assert process.poll() is None, "the run ended before it could be killed: make it longer"
    process.send_signal(signal.SIGKILL)
    process.wait()
    # Resumed and clean runs on two workers (rows do not depend on the number: the backend test above)
    assert main(["run", str(path), "--out", str(out), "--jobs", "2", "--quiet"]) == 0  # resume
    resumed = rows_of(simdesign.simulate(path, out_dir=out, jobs=1, progress=False))  # reads, simulates nothing
    clean = rows_of(simdesign.simulate(path, out_dir=tmp_path / "clean", jobs=2, progress=False))
    pd.testing.assert_frame_equal(resumed, clean)
