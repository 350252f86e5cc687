"""Backends: the same chunks on local processes, threads or a Dask cluster give identical results,
and a worker killed in the middle of a run costs nothing but the recomputation of its chunk."""
import logging
import os
import signal
import threading
import time

import pandas as pd
import pytest
import yaml

from simdesign.studies.backends import BackendSpec, ChunkExecutor, check_backend, own_libpython_for_children
from simdesign.cli import main
from simdesign.studies.rates.config import parse_config
from simdesign.studies.rates.engine import run_simulation
from simdesign.core.errors import ConfigError
from simdesign.studies.rates.store import rate_store

SMALL = {
    "name": "backends", "model": "coherence", "effect": "fitted", "trials": 30, "chunk_size": 5, "seed": 11,
    "designs": [{"kind": "block", "blocks": [1, 4], "docs_per_block": [12, 3], "annotators_per_block": [3, 2]}],
    "tests": ["ttest", "art", "art_doc"],
}
# About 0.3 s per chunk of 2 trials (20000 sign flips), so a kill lands while chunks are in flight.
SLOW = {
    "name": "kill", "model": "coherence", "effect": "fitted", "trials": 40, "chunk_size": 2, "seed": 5,
    "art_resamples": 20000,
    "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 25, "annotators_per_block": 3}],
    "tests": ["ttest", "art", "art_doc"],
}
PAIRS = 10


def _run(raw, out, **backend):
    config = parse_config(raw)
    store = run_simulation(config, out, raw, progress=False, **backend)
    return store.read_trials(trials=config.trials)


def _results(table):
    # fit_seconds is wall-clock time, the only column allowed to differ between runs
    return table.drop(columns="fit_seconds").sort_values(["design", "test", "trial", "pair"], ignore_index=True)


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    # An earlier test may have started R in this process, which points LD_LIBRARY_PATH at the system's libpython.
    with own_libpython_for_children():
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=":0") as local:
            with distributed.Client(local, set_as_default=False) as client:
                client.wait_for_workers(2, timeout=60)
                yield local, client


@pytest.fixture(scope="module")
def slow_reference(tmp_path_factory):
    return _results(_run(SLOW, tmp_path_factory.mktemp("slow") / "loky", backend="loky", jobs=2))


def test_threading_refuses_r_backed_tests_without_needing_r():
    config = parse_config({**SMALL, "tests": ["ttest", {"name": "clmm", "structure": "intercepts"}]})
    with pytest.raises(ConfigError, match=r"threading backend cannot run the R-backed test\(s\) clmm\[intercepts\]"):
        check_backend(BackendSpec("threading"), config.analyses)
    # the refusal comes before any check for R or any work
    with pytest.raises(ConfigError, match="not thread-safe"):
        run_simulation(config, "/nonexistent/never-created", SMALL, backend="threading", progress=False)
    check_backend(BackendSpec("loky"), config.analyses)
    check_backend(BackendSpec("threading"), parse_config(SMALL).analyses)


def test_inconsistent_backend_options_are_refused(tmp_path, capsys):
    assert BackendSpec("dask", workers=2).problems() == []
    assert len(BackendSpec("dask", scheduler="tcp://127.0.0.1:1", workers=2).problems()) == 1
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(SMALL))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--scheduler", "tcp://127.0.0.1:1", "--quiet"]) == 2
    assert "--scheduler needs --backend dask" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_threading_and_loky_give_identical_results(tmp_path):
    loky = _run(SMALL, tmp_path / "loky", backend="loky", jobs=2)
    threads = _run(SMALL, tmp_path / "threads", backend="threading", jobs=2)
    assert len(loky) == 30 * 2 * 3 * PAIRS
    pd.testing.assert_frame_equal(_results(loky), _results(threads))


@pytest.mark.slow
def test_dask_cluster_gives_results_identical_to_loky(cluster, tmp_path):
    local, _ = cluster
    loky = _run(SMALL, tmp_path / "loky", backend="loky", jobs=2)
    dask = _run(SMALL, tmp_path / "dask", backend="dask", scheduler=local.scheduler_address)
    assert len(dask) == 30 * 2 * 3 * PAIRS
    pd.testing.assert_frame_equal(_results(loky), _results(dask))


@pytest.mark.slow
def test_cli_dask_with_its_own_local_cluster(tmp_path):
    pytest.importorskip("distributed")
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump({**SMALL, "trials": 10}))
    assert main(["run", str(path), "--out", str(tmp_path / "dask"), "--backend", "dask", "--workers", "1",
                 "--quiet"]) == 0
    dask = rate_store(tmp_path / "dask").read()
    loky = _run({**SMALL, "trials": 10}, tmp_path / "loky", backend="loky", jobs=1)
    pd.testing.assert_frame_equal(_results(loky), _results(dask))
    assert (tmp_path / "dask" / "summary.csv").is_file()


@pytest.mark.slow
def test_lost_worker_error_resubmits_only_unsaved_chunks(tmp_path, monkeypatch, caplog):
    distributed = pytest.importorskip("distributed")
    import simdesign.studies.rates.engine as engine

    original = engine.simulate_chunk
    calls = []

    def flaky(model, effect, seed, chunk, *registry):
        calls.append(chunk.first_trial)
        if len(calls) == 3:  # as if the worker computing the third chunk had died
            raise distributed.scheduler.KilledWorker("chunk", None, 0)
        return original(model, effect, seed, chunk, *registry)

    monkeypatch.setattr(engine, "simulate_chunk", flaky)
    with caplog.at_level(logging.WARNING, logger="simdesign.studies.rates.engine"):
        table = _run(SMALL, tmp_path / "flaky", backend="threading", jobs=1)
    assert "retry 1 of 3" in caplog.text
    monkeypatch.setattr(engine, "simulate_chunk", original)
    pd.testing.assert_frame_equal(_results(table), _results(_run(SMALL, tmp_path / "plain", jobs=1)))
    # the two chunks saved before the failure were not computed again
    assert len(calls) == 12 + 1

    def broken(model, effect, seed, chunk, *registry):
        raise distributed.scheduler.KilledWorker("chunk", None, 0)

    monkeypatch.setattr(engine, "simulate_chunk", broken)
    with pytest.raises(distributed.scheduler.KilledWorker):
        _run(SMALL, tmp_path / "broken", backend="threading", jobs=1, retries=2)


def test_r_backed_tests_need_single_threaded_dask_workers():
    executor = ChunkExecutor(BackendSpec("dask"), needs_r=True)
    with pytest.raises(ConfigError, match="single-threaded Dask workers"):
        executor._check_r_workers({"tcp://127.0.0.1:1": {"nthreads": 2}, "tcp://127.0.0.1:2": {"nthreads": 1}})


@pytest.mark.slow
@pytest.mark.needs_r
def test_r_backed_test_on_dask_equals_local_and_keeps_one_r_per_worker(cluster, tmp_path):
    from simdesign.significance.rsession import r_available

    ok, message = r_available()
    if not ok:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the R-backed tests: {message}")
        pytest.skip(message)
    local, client = cluster
    raw = {**SMALL, "trials": 2, "chunk_size": 1, "tests": [{"name": "clmm", "structure": "intercepts"}],
           "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 3, "annotators_per_block": 2}]}
    pids = client.run(os.getpid)
    dask = _run(raw, tmp_path / "dask", backend="dask", scheduler=local.scheduler_address)
    assert (dask["status"] != "error").all(), dask["message"].iloc[0]
    pd.testing.assert_frame_equal(_results(_run(raw, tmp_path / "local", jobs=1)), _results(dask))
    # each worker started R once (the R check before the run) and reused it for its chunks
    assert client.run(os.getpid) == pids
    assert all(client.run(lambda: __import__("simdesign.significance.rsession", fromlist=["_SESSION"])._SESSION is not None).values())


def _kill_a_busy_worker_during(run, out, client):
    """Start ``run`` in a thread, SIGKILL a worker computing a chunk once 3 chunks are stored; return the error."""
    pids = client.run(os.getpid)
    errors = []

    def target():
        try:
            run()
        except BaseException as exc:  # noqa: BLE001 -- re-raised by the test
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    deadline = time.monotonic() + 90
    while len(list(out.glob("trials/*/*.parquet"))) < 3:
        assert thread.is_alive() and time.monotonic() < deadline, "the run ended before the kill"
        time.sleep(0.02)
    busy = [worker for worker, keys in client.processing().items() if keys] or list(pids)
    os.kill(pids[busy[0]], signal.SIGKILL)
    thread.join(timeout=120)
    assert not thread.is_alive(), "the run did not finish after the kill"
    client.wait_for_workers(2, timeout=60)  # the nanny restarts the killed worker
    return errors[0] if errors else None


@pytest.mark.slow
@pytest.mark.parametrize("allowed_failures", [3, 0], ids=["dask-reschedules", "engine-resubmits"])
def test_killing_a_worker_mid_run_loses_nothing(cluster, slow_reference, tmp_path, caplog, allowed_failures):
    local, client = cluster
    # 3 (Dask's default): the scheduler reruns the lost task itself. 0: the lost task fails with KilledWorker
    # at once, and the engine must resubmit the unsaved chunks.
    local.scheduler.allowed_failures = allowed_failures
    out = tmp_path / "killed"
    try:
        with caplog.at_level(logging.WARNING, logger="simdesign.studies.rates.engine"):
            error = _kill_a_busy_worker_during(
                lambda: run_simulation(parse_config(SLOW), out, SLOW, backend="dask",
                                       scheduler=local.scheduler_address, progress=False), out, client)
    finally:
        local.scheduler.allowed_failures = 3
    assert error is None
    assert "left the cluster" in caplog.text
    if allowed_failures == 0:
        assert "KilledWorker" in caplog.text and "retry 1 of 3" in caplog.text
    table = rate_store(out).read()  # raises if a (design, trial, test, pair) is stored twice
    assert len(table) == 40 * 3 * PAIRS
    assert sorted(set(table["trial"])) == list(range(40))
    pd.testing.assert_frame_equal(slow_reference, _results(table))


# ---------------------------------------------------------------------------------------------------------------
# The planner and user-registered analyses on every backend


def _user_raw():
    return {**SMALL, "name": "user", "trials": 6, "chunk_size": 2, "tests": ["ttest", "user_sign_test"]}


@pytest.fixture
def user_analysis():
    """The helper's analysis registered in this process only: worker processes never import it by themselves."""
    from user_analysis_helper import SIGN_TEST, register_sign_test
    from simdesign.significance import ANALYSES

    was_registered = SIGN_TEST.name in ANALYSES
    register_sign_test()
    yield SIGN_TEST
    if not was_registered:
        del ANALYSES[SIGN_TEST.name]


@pytest.mark.slow
def test_user_registered_analysis_runs_in_loky_workers(user_analysis, tmp_path):
    table = _run(_user_raw(), tmp_path / "loky", backend="loky", jobs=2)
    user = table[table["test"] == "user_sign_test"]
    assert len(user) == 6 * 2 * PAIRS and (user["status"] == "ok").all(), user["message"].iloc[0]
    # the same p-values as computed in this process (jobs 1: no worker)
    pd.testing.assert_frame_equal(_results(table), _results(_run(_user_raw(), tmp_path / "serial", jobs=1)))


@pytest.mark.slow
def test_user_registered_analysis_runs_on_dask(user_analysis, cluster, tmp_path):
    local, _ = cluster
    dask = _run(_user_raw(), tmp_path / "dask", backend="dask", scheduler=local.scheduler_address)
    assert (dask.loc[dask["test"] == "user_sign_test", "status"] == "ok").all()
    pd.testing.assert_frame_equal(_results(dask), _results(_run(_user_raw(), tmp_path / "serial", jobs=1)))


def test_analysis_named_by_module_and_attribute_resolves_in_a_fresh_process():
    from simdesign.significance import resolve_analysis
    from user_analysis_helper import SIGN_TEST

    assert resolve_analysis("user_analysis_helper:SIGN_TEST") is SIGN_TEST
    with pytest.raises(KeyError, match="cannot import"):
        resolve_analysis("user_analysis_helper:NO_SUCH_ANALYSIS")
    with pytest.raises(KeyError, match="registered:"):
        resolve_analysis("no_such_analysis")


def _tiny_plan():
    from simdesign.planning.planner import parse_plan

    return parse_plan({
        "name": "plan-dask", "model": "coherence", "effect": "fitted", "tests": ["ttest_doc"], "alpha": 0.05,
        "target_power": 0.6, "cost": {"pay_per_hour": 12.0, "per_annotator": 0.0}, "seed": 11, "max_type1": 0.1,
        "search": {"designs": [{"kind": "block", "blocks": [4, 20], "docs_per_block": [5, 5],
                                "annotators_per_block": [1, 1]}]},
        "screen_trials": 20, "max_trials": 40, "confirm_trials": 40,
    })


@pytest.mark.slow
def test_plan_on_dask_gives_the_loky_plan(cluster, tmp_path):
    from simdesign.planning.plan_report import plan_table
    from simdesign.planning.plan_search import run_plan

    local, _ = cluster
    loky = run_plan(_tiny_plan(), tmp_path / "loky", jobs=2)
    dask = run_plan(_tiny_plan(), tmp_path / "dask", backend="dask", scheduler=local.scheduler_address)
    assert dask.new_studies == loky.new_studies > 0
    pd.testing.assert_frame_equal(plan_table(dask), plan_table(loky))
    assert (dask.recommended is None) == (loky.recommended is None)
    if loky.recommended is not None:
        assert dask.recommended.candidate.key == loky.recommended.candidate.key
