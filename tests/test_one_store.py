"""One store class for every study kind (issue 40, item 2): :class:`simdesign.runner.stores.Store`.

Each kind keeps its on-disk format (file names, manifest fields, chunk metadata) as options of the one class
(:class:`~simdesign.runner.stores.StoreFormat`), so stores written before the change are read and resumed:
the rate and metric-validation stores below are built by hand as the former ``ResultsStore`` and
``MetricValidationStore`` wrote them. The claim is checked on every registered study kind.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import simdesign
import simdesign.studies.kinds  # noqa: F401 -- registers the built-in kinds
from simdesign.core.errors import StoreError
from simdesign.core.seeds import GENERATOR_VERSION
from simdesign.runner.stores import (LOCK_FILE, STORE_FORMAT, ManifestRequest, Store, StoreFormat, digest,
                                     holds_claim, short_fingerprint)
from simdesign.runner.study import REGISTERED
from simdesign.studies.metrics.metric_validation import cell_label, parse_metric_config, stored_settings
from simdesign.studies.rates.config import parse_config

PACKAGE = Path(simdesign.__file__).resolve().parent
RACE = {"name": "race", "model": "coherence", "effect": "zero",
        "designs": [{"kind": "block", "blocks": 6, "docs_per_block": 4, "annotators_per_block": 3}],
        "tests": ["ttest_doc", "wilcoxon_doc"], "trials": 10, "seed": 1, "chunk_size": 4}
TINY = {"name": "tiny", "model": "coherence", "metric": {"system_correlation": 0.8, "summary_correlation": 0.5},
        "systems": [4, 5], "documents": [6], "trials": 5, "bootstrap_resamples": 20, "permutation_resamples": 20,
        "seed": 3}


def test_the_package_has_one_store_class():
    """`git grep -nE "^class \\w*Store\\b"` finds one class: every kind's store is an instance of it."""
    found = [f"{path.relative_to(PACKAGE)}: {match}" for path in sorted(PACKAGE.rglob("*.py"))
             for match in re.findall(r"^class (\w*Stores?)\b", path.read_text(), flags=re.MULTILINE)]
    assert found == ["runner/stores.py: Store"]


def _manifest(fields: dict) -> bytes:
    return json.dumps({**fields, "store_format": STORE_FORMAT, "generator_version": GENERATOR_VERSION},
                      indent=2, default=str).encode()


def _write_rate_store_by_hand(directory: Path, config, rows: pd.DataFrame) -> None:
    """A rate study's store as the former ResultsStore wrote it (manifest without 'kind'; chunk names with the
    fingerprint's and the tests' digests; the tests' fingerprints in each chunk's Parquet metadata)."""
    fingerprint, analyses = config.results_fingerprint(), config.analysis_fingerprints()
    directory.mkdir(parents=True)
    (directory / "manifest.json").write_bytes(_manifest({
        "created": "2026-11-28T00:00:00+00:00", "root_seed": config.seed, "fingerprint": fingerprint,
        "analyses": analyses, "designs": {d.label: d.columns() for d in config.designs}, "history": [],
        "updated": "2026-11-28T00:00:00+00:00", "config_name": config.name, "config_hash": digest(config.to_mapping()),
        "config": config.to_mapping(), "versions": {}, "git_commit": "unknown"}))
    key = short_fingerprint(fingerprint)
    for design, frame in rows.groupby("design"):
        for first in range(0, config.trials, 3):  # chunks of 3 trials: another chunking than the config's
            stop = min(first + 3, config.trials)
            chunk = frame[(frame["trial"] >= first) & (frame["trial"] < stop)]
            tests = {label: analyses[label] for label in sorted(chunk["test"].unique())}
            table = pa.Table.from_pandas(chunk.reset_index(drop=True), preserve_index=False)
            metadata = {**(table.schema.metadata or {}), b"simdesign": json.dumps(
                {"fingerprint": fingerprint, "design": design, "analyses": tests}, default=str).encode()}
            path = directory / "trials" / design / f"t{first:07d}-{stop:07d}-{key}-{digest(tests)[:8]}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table.replace_schema_metadata(metadata), path)


def test_a_rate_store_written_before_the_one_store_is_read_and_resumed(tmp_path):
    fresh = simdesign.simulate(RACE, out_dir=tmp_path / "fresh", jobs=1, progress=False).trials
    config = parse_config(RACE)
    _write_rate_store_by_hand(tmp_path / "old", config, fresh)
    pd.testing.assert_frame_equal(simdesign.load_results(tmp_path / "old").trials, fresh)
    stamps = {path: path.stat().st_mtime_ns for path in (tmp_path / "old").rglob("*.parquet")}
    resumed = simdesign.simulate(RACE, out_dir=tmp_path / "old", jobs=1, progress=False).trials
    assert {path: path.stat().st_mtime_ns for path in (tmp_path / "old").rglob("*.parquet")} == stamps
    pd.testing.assert_frame_equal(resumed, fresh)
    # more trials: only the new ones are computed, and the rows are those of a clean run
    longer = simdesign.simulate({**RACE, "trials": 14}, out_dir=tmp_path / "old", jobs=1, progress=False).trials
    clean = simdesign.simulate({**RACE, "trials": 14}, out_dir=tmp_path / "clean", jobs=1, progress=False).trials
    pd.testing.assert_frame_equal(longer.drop(columns="fit_seconds"), clean.drop(columns="fit_seconds"))
    assert json.loads((tmp_path / "old" / "manifest.json").read_text()).get("kind") is None  # format kept


def test_a_metric_validation_store_written_before_the_one_store_is_read_and_resumed(tmp_path):
    kind = REGISTERED["metric-validation"]
    config = parse_metric_config(TINY)
    fresh = simdesign.simulate(TINY, out_dir=tmp_path / "fresh", jobs=1, progress=False).rows
    settings = stored_settings(config)
    old = tmp_path / "old"
    old.mkdir()
    (old / "manifest.json").write_bytes(_manifest({
        "created": "2026-11-28T00:00:00+00:00", "kind": "metric-validation", "fingerprint": digest(settings),
        "root_seed": config.seed, "settings": settings, "config": TINY, "updated": "2026-11-28T00:00:00+00:00",
        "versions": {}, "git_commit": "unknown"}))
    key = short_fingerprint(digest(settings))
    for systems, documents in config.cells():
        cell = cell_label(systems, documents)
        rows = fresh[(fresh["systems"] == systems) & (fresh["documents"] == documents)]
        for first, stop in [(0, 2), (2, 5)]:
            path = old / "trials" / cell / f"t{first:07d}-{stop:07d}-{key}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            rows[(rows["trial"] >= first) & (rows["trial"] < stop)].to_parquet(path, index=False)
    pd.testing.assert_frame_equal(kind.stored_rows(config, old), fresh)
    stamps = {path: path.stat().st_mtime_ns for path in old.rglob("*.parquet")}
    pd.testing.assert_frame_equal(simdesign.simulate(TINY, out_dir=old, jobs=1, progress=False).rows, fresh)
    assert {path: path.stat().st_mtime_ns for path in old.rglob("*.parquet")} == stamps


# -- the one class's mechanics, on a format of its own
CELLS = StoreFormat(kind="toy", unique=("cell", "trial", "row"))


def _rows(cell: str, first: int, stop: int) -> pd.DataFrame:
    return pd.DataFrame({"cell": cell, "trial": [t for t in range(first, stop) for _ in range(2)],
                         "row": [r for _ in range(first, stop) for r in (1, 0)]})


def _prepared(directory, fingerprint="a", format=CELLS) -> Store:
    store = Store(directory, format)
    store.prepare(ManifestRequest(fingerprint, {"kind": "toy", "fingerprint": fingerprint}))
    return store


def test_rows_come_back_by_cell_then_trial_in_the_order_each_trial_wrote_them(tmp_path):
    store = _prepared(tmp_path)
    for cell, first, stop in [("b", 3, 5), ("a", 2, 4), ("b", 0, 3), ("a", 0, 2)]:
        store.write_chunk(cell, first, stop, _rows(cell, first, stop))
    store.release()
    assert store.completed("a") == {0, 1, 2, 3} and store.completed("b") == set(range(5))
    table = Store(tmp_path, CELLS).read(["b", "a"], trials=4)
    assert list(zip(table["cell"], table["trial"], table["row"]))[:4] == [("b", 0, 1), ("b", 0, 0), ("b", 1, 1),
                                                                          ("b", 1, 0)]
    assert list(table["cell"]) == ["b"] * 8 + ["a"] * 8 and table["trial"].max() == 3
    pd.testing.assert_frame_equal(Store(tmp_path, CELLS).trial_rows("a", 2), _rows("a", 2, 3))


def test_overlapping_chunks_and_duplicated_rows_are_refused(tmp_path):
    store = _prepared(tmp_path)
    store.write_chunk("a", 0, 3, _rows("a", 0, 3))
    store.write_chunk("a", 2, 4, _rows("a", 2, 4))
    with pytest.raises(StoreError, match="hold the same trials; the results directory is corrupt"):
        store.read(["a"])
    store.release()


def test_a_store_of_another_kind_or_fingerprint_is_refused_and_the_claim_released(tmp_path):
    _prepared(tmp_path).release()
    with pytest.raises(StoreError, match="another toy config"):
        _prepared(tmp_path, fingerprint="b")
    assert not holds_claim(tmp_path)
    with pytest.raises(StoreError, match="another toy config"):
        _prepared(tmp_path, format=StoreFormat(kind="other"))
    with pytest.raises(StoreError, match="another toy config"):
        Store(tmp_path, CELLS).open(ManifestRequest("b"))


def test_a_chunk_whose_parts_changed_is_not_read(tmp_path):
    parts = StoreFormat(kind="toy", part_column="test", columns=("cell", "trial", "test"))
    store = Store(tmp_path, parts)
    store.prepare(ManifestRequest("a", {"kind": "toy", "fingerprint": "a"}, parts={"t1": "x", "t2": "y"}))
    frame = pd.DataFrame({"cell": "c", "trial": [0, 0, 1, 1], "test": ["t1", "t2"] * 2})
    store.write_chunk("c", 0, 2, ["t1", "t2"], frame)
    with pytest.raises(TypeError, match="parts, rows"):
        store.write_chunk("c", 2, 3, frame)
    store.release()
    assert store.completed("c") == {"t1": {0, 1}, "t2": {0, 1}}
    assert len(store.read(parts=["t1"])) == 2 and len(store.trial_rows("c", 1, "t2")) == 1
    with pytest.raises(StoreError, match=r"\['t2'\] computed with other options"):
        Store(tmp_path, parts).prepare(ManifestRequest("a", {}, parts={"t2": "z"}))
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    (tmp_path / "manifest.json").write_text(json.dumps({**manifest, "analyses": {"t1": "x", "t2": "z"}}))
    assert Store(tmp_path, parts).completed("c") == {} and Store(tmp_path, parts).read().empty


# -- every registered kind's store is claimed by its run (no hand-written list of kinds)
EXAMPLES = {label: mapping for kind in REGISTERED.values() for label, mapping in getattr(kind, "examples", dict)()
            .items()}


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_every_kind_refuses_a_store_another_run_holds(tmp_path, example):
    out = tmp_path / "held"
    out.mkdir()
    descriptor = os.open(out / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        # another open file description: the store's own claim conflicts with it, as with another process
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(descriptor, json.dumps({"pid": 1, "host": "elsewhere", "started": "now"}).encode())
        with pytest.raises(StoreError, match="in use by another run: pid 1 on host elsewhere"):
            simdesign.simulate(EXAMPLES[example], out_dir=out, jobs=1, progress=False)
    finally:
        os.close(descriptor)
    assert not holds_claim(out) and not list(out.rglob("*.parquet")) and not list(out.rglob("*.csv"))
