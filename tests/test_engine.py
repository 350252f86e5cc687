import contextlib
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
import yaml

from simdesign.studies.rates.config import parse_config
from simdesign.studies.rates.engine import plan_chunks, replay_trial, run_simulation
from simdesign.core.errors import ConfigError
from simdesign.studies.rates.store import rate_store

RAW = {
    "name": "engine-test", "model": "coherence", "effect": "fitted", "trials": 40, "seed": 7, "chunk_size": 6,
    "designs": [{"kind": "block", "blocks": [1, 4], "docs_per_block": [12, 3], "annotators_per_block": [3, 2]},
                {"kind": "pool", "docs": 12, "annotators": 6, "judgements_per_output": 2}],
    "tests": ["ttest", "art", "art_doc", "wilcoxon_doc"],
}


def _run(tmp_path, name, jobs=1, **changes):
    raw = {**RAW, **changes}
    config = parse_config(raw)
    store = run_simulation(config, tmp_path / name, raw, jobs=jobs, progress=False)
    return store.read_trials(trials=config.trials)


def _key_columns(table):
    return table.sort_values(["design", "test", "trial", "pair"], ignore_index=True)[
        ["design", "test", "trial", "pair", "estimate", "p_value", "status"]]


@pytest.mark.slow
def test_results_do_not_depend_on_workers_or_chunking(tmp_path):
    one = _run(tmp_path, "one", jobs=1)
    two = _run(tmp_path, "two", jobs=2, chunk_size=11)
    assert len(one) == 3 * 40 * 4 * 10
    pd.testing.assert_frame_equal(_key_columns(one), _key_columns(two))


@pytest.mark.slow
def test_raising_trials_and_adding_a_test_compute_only_what_is_new(tmp_path):
    _run(tmp_path, "grow", trials=20)
    config = parse_config({**RAW, "trials": 40, "tests": RAW["tests"] + ["ttest_doc"]})
    chunks = plan_chunks(config, rate_store(tmp_path / "grow"), 40)
    for chunk in chunks:
        labels = {spec.label for spec in chunk.analyses}
        if chunk.first_trial < 20:
            assert labels == {"ttest_doc"} and chunk.stop_trial <= 20
        else:
            assert len(labels) == 5
    grown = _run(tmp_path, "grow", tests=RAW["tests"] + ["ttest_doc"])
    fresh = _run(tmp_path, "fresh", tests=RAW["tests"] + ["ttest_doc"])
    pd.testing.assert_frame_equal(_key_columns(grown), _key_columns(fresh))
    # a finished config plans no work
    assert plan_chunks(config, rate_store(tmp_path / "grow"), 40) == []


@pytest.mark.slow
def test_adding_an_analysis_does_not_change_another_analysis_p_values(tmp_path):
    alone = _run(tmp_path, "alone", tests=["art"])
    together = _run(tmp_path, "together", tests=["ttest", "art_doc", "art"])
    art = together[together["test"] == "art"]
    pd.testing.assert_frame_equal(_key_columns(alone), _key_columns(art))


def test_changed_model_effect_or_seed_is_refused(tmp_path):
    _run(tmp_path, "fixed", trials=6)
    for change in ({"seed": 8}, {"effect": "zero"}, {"model": "repetition"}):
        raw = {**RAW, "trials": 6, **change}
        with pytest.raises(ConfigError, match="different model, effect or seed"):
            run_simulation(parse_config(raw), tmp_path / "fixed", raw, jobs=1, progress=False)
    raw = {**RAW, "trials": 6, "tests": [{"name": "art", "resamples": 99, "label": "art"}]}
    with pytest.raises(ConfigError, match="other options"):
        run_simulation(parse_config(raw), tmp_path / "fixed", raw, jobs=1, progress=False)
    # alpha only changes the summary: accepted
    raw = {**RAW, "trials": 6, "alpha": 0.01}
    run_simulation(parse_config(raw), tmp_path / "fixed", raw, jobs=1, progress=False)


def test_a_store_written_before_an_option_existed_resumes_at_its_default_only(tmp_path):
    """ttest_doc and wilcoxon_doc gained 'threshold' (default 'theory': the old p-values) and
    'bootstrap_resamples'; a store whose manifest predates them resumes with the defaults, not with others."""
    import json

    from simdesign.studies.rates.config import stable_digest

    raw = {**RAW, "trials": 6, "tests": ["ttest_doc", "wilcoxon_doc"]}
    run_simulation(parse_config(raw), tmp_path / "old", raw, jobs=1, progress=False)
    manifest_path = rate_store(tmp_path / "old").manifest_path
    manifest = json.loads(manifest_path.read_text())
    # the fingerprints the code before the option wrote: name and no options
    old = {name: stable_digest({"name": name, "options": {}}) for name in ("ttest_doc", "wilcoxon_doc")}
    assert manifest["analyses"] != old
    manifest["analyses"] = old
    manifest_path.write_text(json.dumps(manifest))
    grown = {**raw, "trials": 8}
    run_simulation(parse_config(grown), tmp_path / "old", grown, jobs=1, progress=False)
    assert len(rate_store(tmp_path / "old").read(trials=8)) == 3 * 8 * 2 * 10
    bootstrap = {**raw, "tests": [{"name": "ttest_doc", "threshold": "centred_bootstrap", "label": "ttest_doc"}]}
    manifest = json.loads(manifest_path.read_text())
    manifest["analyses"] = old
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(ConfigError, match="other options"):
        run_simulation(parse_config(bootstrap), tmp_path / "old", bootstrap, jobs=1, progress=False)


def test_replay_recreates_a_stored_trial(tmp_path):
    table = _run(tmp_path, "replay", trials=8)
    config = parse_config({**RAW, "trials": 8})
    _, result = replay_trial(config, "block-B4-D3-A2", 5, "art")
    stored = table[(table["design"] == "block-B4-D3-A2") & (table["trial"] == 5) & (table["test"] == "art")]
    np.testing.assert_array_equal(stored.sort_values("pair")["p_value"].to_numpy(), result.p_value)


def _chunk_files(directory):
    return list((directory / "trials").glob("*/*.parquet"))


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_interrupted_run_resumes_to_identical_results(tmp_path, how):
    raw = {**RAW, "name": "interrupt", "trials": 400, "chunk_size": 5}
    config_path = tmp_path / "interrupt.yaml"
    config_path.write_text(yaml.safe_dump(raw))
    out = tmp_path / "interrupted"
    command = [sys.executable, "-m", "simdesign.cli", "run", str(config_path), "--out", str(out), "--jobs", "2",
               "--quiet"]
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while len(_chunk_files(out)) < 10 and time.time() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert process.poll() is None, "the run finished before it could be interrupted; make it longer"
    os.killpg(process.pid, how)  # the whole group: coordinator and its workers, as Ctrl-C or a crash would
    process.wait(timeout=60)
    saved = len(_chunk_files(out))
    assert 10 <= saved < 3 * 80
    for path in _chunk_files(out):  # every chunk file that exists is complete
        assert len(pd.read_parquet(path)) > 0
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert not list(out.rglob("*.tmp")), "temporary files of the killed run were not cleaned up"
    reference = _run(tmp_path, "reference", jobs=2, trials=400, chunk_size=5)
    result = rate_store(out).read()
    pd.testing.assert_frame_equal(_key_columns(result), _key_columns(reference))


def _children(pid):
    listing = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(word) for word in listing.split()]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its new parent) computes nothing
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.slow
def test_sigterm_stops_the_workers_with_the_run(tmp_path):
    # SIGTERM to the coordinator alone, as `kill PID` or a batch system's time limit sends it: its loky
    # workers must not go on computing as orphans.
    raw = {**RAW, "name": "terminate", "trials": 4000, "chunk_size": 5}
    config_path = tmp_path / "terminate.yaml"
    config_path.write_text(yaml.safe_dump(raw))
    out = tmp_path / "terminated"
    command = [sys.executable, "-m", "simdesign.cli", "run", str(config_path), "--out", str(out), "--jobs", "2",
               "--quiet"]
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    try:
        deadline = time.time() + 120
        while len(_chunk_files(out)) < 3 and time.time() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert process.poll() is None, "the run finished before it could be stopped; make it longer"
        workers = _children(process.pid)
        assert len(workers) >= 2, f"expected the loky workers among the children; got {workers}"
        process.send_signal(signal.SIGTERM)
        returncode = process.wait(timeout=60)
        stopped = time.time()
        while any(_alive(pid) for pid in workers) and time.time() < stopped + 10:
            time.sleep(0.1)
        survivors = [pid for pid in workers if _alive(pid)]
        assert not survivors, f"worker process(es) {survivors} still run 10 s after SIGTERM"
        assert returncode == 128 + signal.SIGTERM
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # only this test's own process group
