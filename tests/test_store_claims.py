"""A store cannot be mixed (issue 27): one writer at a time, chunks carry their fingerprint, no adoption
without a manifest, old formats and damaged files refused with a message that says what to do.

Every study kind's store is covered: rates (``run``), metric validation and panel studies.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from simdesign.cli import main
from simdesign.core.errors import StoreError
from simdesign.runner.stores import LOCK_FILE, claim_store, holds_claim, release_store

ROOT = Path(__file__).resolve().parents[1]
RACE = {"name": "race", "model": "coherence", "effect": "zero",
        "designs": [{"kind": "block", "blocks": 10, "docs_per_block": 5, "annotators_per_block": 3}],
        "tests": ["ttest_doc"], "trials": 40, "seed": 1, "chunk_size": 10}


def write_config(path: Path, **changes) -> Path:
    path.write_text(yaml.safe_dump({**RACE, **changes}))
    return path


def simdesign_command(*args) -> list[str]:
    return [sys.executable, "-c", "import sys; from simdesign.cli import main; sys.exit(main(sys.argv[1:]))", *args]


def environment() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def hold_lock(directory: Path) -> subprocess.Popen:
    """Another process claiming ``directory`` (as a running ``run`` does) until it is killed."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from simdesign.runner.stores import claim_store; "
                               "claim_store(sys.argv[1]); print('ready', flush=True); time.sleep(120)",
         str(directory)], stdout=subprocess.PIPE, text=True, env=environment())
    assert holder.stdout.readline().strip() == "ready"
    return holder


@pytest.mark.slow  # a second or more: the fast tier stays under a minute
def test_a_claimed_store_is_refused_naming_the_holder(tmp_path, capsys):
    out = tmp_path / "store"
    holder = hold_lock(out)
    try:
        code = main(["run", str(write_config(tmp_path / "c.yaml")), "--out", str(out), "--jobs", "1", "--quiet"])
        err = capsys.readouterr().err
        assert code == 2
        assert f"pid {holder.pid} on host {socket.gethostname()}, started " in err
        assert "--out" in err and not (out / "manifest.json").exists()
    finally:
        holder.kill()
        holder.wait()
    # the kernel dropped the claim with the process: the store can be used (kill/resume keeps working)
    assert main(["run", str(tmp_path / "c.yaml"), "--out", str(out), "--jobs", "1", "--quiet"]) == 0


def test_claims_are_reentrant_in_one_process_and_released(tmp_path):
    claim_store(tmp_path)
    claim_store(tmp_path)
    release_store(tmp_path)
    assert holds_claim(tmp_path)
    release_store(tmp_path)
    assert not holds_claim(tmp_path)
    assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid()


@pytest.mark.slow
@pytest.mark.parametrize("change", [{"effect": "fitted"}, {"seed": 7}], ids=["effect", "seed"])
def test_two_runs_started_together_cannot_mix_a_new_store(tmp_path, change):
    """Both start at once into one new --out: one runs, the other exits 2 naming it; the store equals a clean run."""
    out = tmp_path / "store"
    configs = [write_config(tmp_path / "a.yaml", trials=6000, chunk_size=100),
               write_config(tmp_path / "b.yaml", trials=6000, chunk_size=100, **change)]
    runs = [subprocess.Popen(simdesign_command("run", str(path), "--out", str(out), "--jobs", "1", "--quiet"),
                             stderr=subprocess.PIPE, text=True, env=environment()) for path in configs]
    errors = [run.communicate(timeout=300)[1] for run in runs]
    codes = [run.returncode for run in runs]
    assert sorted(codes) == [0, 2], errors
    winner, loser = (0, 1) if codes[0] == 0 else (1, 0)
    assert f"pid {runs[winner].pid} on host" in errors[loser]
    clean = tmp_path / "clean"
    assert main(["run", str(configs[winner]), "--out", str(clean), "--jobs", "1", "--quiet"]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(out / "summary.csv").drop(columns=["mean_fit_seconds"]),
                                  pd.read_csv(clean / "summary.csv").drop(columns=["mean_fit_seconds"]))


def test_a_store_without_its_manifest_is_refused(tmp_path, capsys):
    config = write_config(tmp_path / "c.yaml")
    out = tmp_path / "store"
    assert main(["run", str(config), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    (out / "manifest.json").unlink()
    other = write_config(tmp_path / "other.yaml", seed=7)
    capsys.readouterr()
    assert main(["run", str(other), "--out", str(out), "--jobs", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "no manifest.json" in err and "never adopted" in err
    assert not (out / "manifest.json").exists()


def test_chunks_of_another_fingerprint_are_not_read(tmp_path):
    """A chunk another seed made, put into a store, is ignored (its name carries its fingerprint)."""
    import simdesign

    seven = simdesign.simulate(RACE | {"seed": 7}, out_dir=tmp_path / "seven", jobs=1, progress=False)
    one = simdesign.simulate(RACE, out_dir=tmp_path / "one", jobs=1, progress=False)
    design = RACE["designs"][0]
    label = "block-B10-D5-A3"
    for path in (tmp_path / "seven" / "trials" / label).glob("*.parquet"):
        path.rename(tmp_path / "one" / "trials" / label / path.name)
    again = simdesign.load_results(tmp_path / "one")
    pd.testing.assert_frame_equal(again.trials, one.trials)
    assert not one.trials.equals(seven.trials) and design["blocks"] == 10


def test_an_old_format_store_is_refused_with_one_message(tmp_path, capsys):
    config = write_config(tmp_path / "c.yaml")
    out = tmp_path / "store"
    assert main(["run", str(config), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["store_format"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    for command in (["run", str(config), "--out", str(out), "--jobs", "1", "--quiet"], ["plot", str(out)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "older simdesign" in err and "re-run into a new directory" in err, command


def test_a_store_drawn_by_another_generator_is_refused_naming_both_versions(tmp_path, capsys):
    from simdesign.core.seeds import GENERATOR_VERSION

    config = write_config(tmp_path / "c.yaml")
    out = tmp_path / "store"
    assert main(["run", str(config), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["generator_version"] == GENERATOR_VERSION == 2
    (out / "manifest.json").write_text(json.dumps({**manifest, "generator_version": 1}))
    capsys.readouterr()
    assert main(["run", str(config), "--out", str(out), "--jobs", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "generator version 1" in err and "generator version 2" in err and "new directory" in err
    # a manifest written before versions were recorded is version 1
    del manifest["generator_version"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert main(["run", str(config), "--out", str(out), "--jobs", "1", "--quiet"]) == 2
    assert "generator version 1" in capsys.readouterr().err


# one damage in the fast tier, the other two in the slow one (each writes and reads a store: 0.6-1.2 s)
@pytest.mark.parametrize("damage", [pytest.param(b"", marks=pytest.mark.slow), b"PAR1 truncated",
                                    pytest.param(None, marks=pytest.mark.slow)], ids=["empty", "garbage", "truncated"])
def test_a_damaged_chunk_is_named_with_how_to_recover(tmp_path, capsys, damage):
    config = write_config(tmp_path / "c.yaml")
    out = tmp_path / "store"
    assert main(["run", str(config), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    chunk = sorted((out / "trials").glob("*/*.parquet"))[1]
    data = chunk.read_bytes()
    chunk.write_bytes(data[: len(data) // 2] if damage is None else damage)
    capsys.readouterr()
    for command in (["run", str(config), "--out", str(out), "--jobs", "1", "--quiet", "--trials", "50"],
                    ["plot", str(out)]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert str(chunk) in err and "delete it and run the same command again to recompute it" in err
    chunk.unlink()  # as the message says: the chunk is recomputed
    assert main(["run", str(config), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    assert len(list((out / "trials").glob("*/*.parquet"))) == 4


@pytest.mark.parametrize("content", [pytest.param("", marks=pytest.mark.slow), '{"fingerprint": '],
                         ids=["empty", "truncated"])  # one in the fast tier
def test_a_damaged_manifest_is_named(tmp_path, capsys, content):
    config = write_config(tmp_path / "c.yaml")
    out = tmp_path / "store"
    assert main(["run", str(config), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    (out / "manifest.json").write_text(content)
    capsys.readouterr()
    for command in (["run", str(config), "--out", str(out), "--jobs", "1", "--quiet"], ["plot", str(out)]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert str(out / "manifest.json") in err and "damaged" in err and "delete" in err


# ---- the other study kinds' stores


def metric_config(**changes):
    from simdesign.studies.metrics.metric_validation import parse_metric_config

    raw = {"name": "mv", "model": "coherence", "population": {"kind": "normal"},
           "metric": {"summary_correlation": 0.5, "system_correlation": 0.8}, "systems": [5], "documents": [10],
           "methods": ["pearson"], "trials": 4, "bootstrap_resamples": 20, "permutation_resamples": 20, "seed": 3}
    return parse_metric_config({**raw, **changes})


def panel_config(**changes):
    from simdesign.studies.panels.panel_study import parse_panel_study

    raw = {"name": "ps", "model": "coherence", "docs": 4, "trials": 4, "subsamples": 2, "bootstrap": 20, "seed": 3,
           "chunk_size": 2, "panels": {"expert": {"annotators": 2, "judge": "all"},
                                       "crowd": {"pool": 10, "per_output": 4}}}
    return parse_panel_study({**raw, **changes})


def run_metric(config, out):
    from simdesign.studies.metrics.metric_validation import run_metric_validation

    return run_metric_validation(config, out)


def run_panels(config, out):
    from simdesign.studies.panels.panel_study import run_panel_study

    return run_panel_study(config, out)


KINDS = {"metric-validation": (metric_config, run_metric, "trials/*/*.parquet"),
         "panels": (panel_config, run_panels, "chunks/*.csv")}


@pytest.mark.parametrize("kind", [pytest.param(kind, marks=pytest.mark.slow) if kind in ("panels", "metric-validation")
                                  else kind for kind in KINDS])  # those two take 0.7-0.8 s: the slow tier
def test_every_store_is_claimed_and_refuses_what_it_cannot_tell(tmp_path, kind):
    make, run, pattern = KINDS[kind]
    out = tmp_path / "store"
    first = run(make(), out)
    assert not holds_claim(out)  # released after the run
    holder = hold_lock(out)
    try:
        with pytest.raises(StoreError, match=f"in use by another run: pid {holder.pid} on host"):
            run(make(), out)
    finally:
        holder.kill()
        holder.wait()
    # a chunk of another seed is not read
    other = run(make(seed=11), tmp_path / "other")
    for path in (tmp_path / "other").glob(pattern):
        path.rename(out / path.relative_to(tmp_path / "other"))
    pd.testing.assert_frame_equal(run(make(), out), first)
    assert not other.equals(first)
    # old format, damaged manifest, then no manifest
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({k: v for k, v in manifest.items() if k != "store_format"}))
    with pytest.raises(StoreError, match="older simdesign.*re-run into a new directory"):
        run(make(), out)
    # drawn by another generator (issue 38): refused, naming both versions
    (out / "manifest.json").write_text(json.dumps({**manifest, "generator_version": 1}))
    with pytest.raises(StoreError, match="generator version 1.*generator version 2.*re-run into a new directory"):
        run(make(), out)
    (out / "manifest.json").write_text("{")
    with pytest.raises(StoreError, match="manifest.json is damaged"):
        run(make(), out)
    (out / "manifest.json").unlink()
    with pytest.raises(StoreError, match="no manifest.json.*never adopted"):
        run(make(seed=11), out)


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_store_names_a_damaged_chunk(tmp_path, kind):
    make, run, pattern = KINDS[kind]
    out = tmp_path / "store"
    run(make(), out)
    chunk = sorted(out.glob(pattern))[0]
    chunk.write_bytes(b"\xff\xfe garbage" if kind == "metric-validation" else b"")
    with pytest.raises(StoreError, match=f"{chunk}.*delete it and run the same command again to recompute it"):
        run(make(), out)
