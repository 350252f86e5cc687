"""The fork backend: the same results as loky and threads, user-registered analyses in its workers,
R-backed tests refused, and a worker that dies costs only the recomputation of the unsaved chunks."""
import logging
import os

import pandas as pd
import pytest

from simdesign.core.errors import ConfigError
from simdesign.studies.backends import BackendSpec, check_backend
from simdesign.studies.rates.config import parse_config
from simdesign.studies.rates.engine import run_simulation
from simdesign.runner.forked_pool import fork_available, pool_size

pytestmark = pytest.mark.skipif(not fork_available(), reason="the fork backend needs Linux")

SMALL = {
    "name": "fork", "model": "coherence", "effect": "fitted", "trials": 30, "chunk_size": 5, "seed": 11,
    "designs": [{"kind": "block", "blocks": [1, 4], "docs_per_block": [12, 3], "annotators_per_block": [3, 2]}],
    "tests": ["ttest", "art", "art_doc"],
}


def _run(raw, out, **backend):
    config = parse_config(raw)
    store = run_simulation(config, out, raw, progress=False, **backend)
    # fit_seconds is wall-clock time, the only column allowed to differ between runs
    return store.read_trials(trials=config.trials).drop(columns="fit_seconds").sort_values(
        ["design", "test", "trial", "pair"], ignore_index=True)


@pytest.mark.slow  # a second or more: the full suite runs it, the fast tier stays under a minute
def test_fork_gives_the_results_of_loky_and_threads(tmp_path):
    forked = _run(SMALL, tmp_path / "fork", backend="fork", jobs=2)
    assert len(forked) == 30 * 2 * 3 * 10
    pd.testing.assert_frame_equal(forked, _run(SMALL, tmp_path / "loky", backend="loky", jobs=2), check_exact=True)
    pd.testing.assert_frame_equal(forked, _run(SMALL, tmp_path / "threads", backend="threading", jobs=1), check_exact=True)


def test_fork_refuses_r_backed_tests_without_needing_r():
    config = parse_config({**SMALL, "tests": ["ttest", {"name": "clmm", "structure": "intercepts"}]})
    with pytest.raises(ConfigError, match=r"fork backend cannot run the R-backed test\(s\) clmm\[intercepts\]"):
        check_backend(BackendSpec("fork"), config.analyses)
    check_backend(BackendSpec("fork"), parse_config(SMALL).analyses)


def test_pool_size_reads_jobs_as_joblib_does():
    from joblib import cpu_count  # what loky's -1 means (it respects CPU affinity and quotas)

    cores = cpu_count()
    assert pool_size(1) == 1 and pool_size(cores) == cores
    assert pool_size(cores + 3) == cores  # more workers than cores are capped (issue 29)
    assert pool_size(-1) == cores
    assert pool_size(-cores - 5) == 1


@pytest.mark.slow  # moved from the fast tier (about 0.5-1 s; the tier's budget is 60 s)
def test_user_registered_analysis_runs_in_forked_workers(tmp_path):
    from simdesign.significance import ANALYSES
    from user_analysis_helper import SIGN_TEST, register_sign_test

    was_registered = SIGN_TEST.name in ANALYSES
    register_sign_test()
    try:
        raw = {**SMALL, "name": "user", "trials": 6, "chunk_size": 2, "tests": ["ttest", "user_sign_test"]}
        table = _run(raw, tmp_path / "fork", backend="fork", jobs=2)
        user = table[table["test"] == "user_sign_test"]
        assert len(user) == 6 * 2 * 10 and (user["status"] == "ok").all(), user["message"].iloc[0]
        pd.testing.assert_frame_equal(table, _run(raw, tmp_path / "serial", jobs=1))
    finally:
        if not was_registered:
            del ANALYSES[SIGN_TEST.name]


@pytest.mark.slow  # moved from the fast tier (about 0.5-1 s; the tier's budget is 60 s)
def test_a_dead_worker_costs_only_its_unsaved_chunks(tmp_path, monkeypatch, caplog):
    import simdesign.studies.rates.engine as engine

    original = engine.simulate_chunk
    marker = tmp_path / "died"

    def dies_once(model, effect, seed, chunk, *registry):
        # runs in a forked worker (which has this patch): the first chunk of trial 10 kills its process once
        if chunk.first_trial == 10 and not marker.exists():
            marker.write_text("")
            os._exit(1)
        return original(model, effect, seed, chunk, *registry)

    monkeypatch.setattr(engine, "simulate_chunk", dies_once)
    with caplog.at_level(logging.WARNING, logger="simdesign.studies.rates.engine"):
        table = _run(SMALL, tmp_path / "dies", backend="fork", jobs=2)
    assert marker.exists() and "retry 1 of 3" in caplog.text
    monkeypatch.setattr(engine, "simulate_chunk", original)
    pd.testing.assert_frame_equal(table, _run(SMALL, tmp_path / "plain", backend="threading", jobs=1))
