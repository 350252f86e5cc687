"""Metric validation is resumable: chunked storage, streams keyed by cell and trial (issue 16 follow-up)."""
import pandas as pd
import pytest

from simdesign.core.errors import StoreError
from simdesign.studies.metrics import metric_validation
from simdesign.studies.metrics.metric_validation import parse_metric_config, run_metric_validation

TINY = {"name": "tiny", "model": "coherence", "metric": {"system_correlation": 0.8, "summary_correlation": 0.5},
        "second_metric": {"system_correlation": 0.5, "summary_correlation": 0.4}, "systems": [4, 5],
        "documents": [6], "trials": 6, "bootstrap_resamples": 30, "permutation_resamples": 30, "seed": 3}


def _chunk_files(directory):
    return {path: path.stat().st_mtime_ns for path in directory.rglob("*.parquet")}


@pytest.mark.slow
def test_jobs_and_chunking_do_not_change_the_results(tmp_path):
    config = parse_metric_config(TINY)
    one = run_metric_validation(config, tmp_path / "one", jobs=1, chunk_trials=4)
    two = run_metric_validation(config, tmp_path / "two", jobs=2, chunk_trials=1)
    assert len(one) and set(one["trial"]) == set(range(6)) and set(one["systems"]) == {4, 5}
    pd.testing.assert_frame_equal(one, two)


@pytest.mark.slow
def test_an_interrupted_or_partial_run_resumes_to_the_same_results(tmp_path, monkeypatch):
    config = parse_metric_config(TINY)
    fresh = run_metric_validation(config, tmp_path / "fresh", chunk_trials=2)
    original = metric_validation.one_trial

    def failing(config, n_systems, n_documents, trial, targets):
        if n_systems == 5 and trial == 3:
            raise KeyboardInterrupt
        return original(config, n_systems, n_documents, trial, targets)

    monkeypatch.setattr(metric_validation, "one_trial", failing)
    with pytest.raises(KeyboardInterrupt):
        run_metric_validation(config, tmp_path / "cut", chunk_trials=2)
    monkeypatch.setattr(metric_validation, "one_trial", original)
    kept = _chunk_files(tmp_path / "cut")
    # the chunks finished before the interruption are kept: all of cell S4, trials 0-1 of S5
    assert sorted(path.parent.name + "/" + path.name[:16] for path in kept) == [
        "S4-D6/t0000000-0000002", "S4-D6/t0000002-0000004", "S4-D6/t0000004-0000006", "S5-D6/t0000000-0000002"]
    pd.testing.assert_frame_equal(run_metric_validation(config, tmp_path / "cut", chunk_trials=2), fresh)
    assert all(_chunk_files(tmp_path / "cut")[path] == stamp for path, stamp in kept.items())
    # a shorter run, then more trials and another cell: only what is missing is computed
    short = parse_metric_config({**TINY, "trials": 3, "systems": [5]})
    run_metric_validation(short, tmp_path / "grow", chunk_trials=5)
    pd.testing.assert_frame_equal(run_metric_validation(config, tmp_path / "grow", chunk_trials=5), fresh)
    stamps = _chunk_files(tmp_path / "grow")
    pd.testing.assert_frame_equal(run_metric_validation(config, tmp_path / "grow"), fresh)
    assert _chunk_files(tmp_path / "grow") == stamps  # a complete store: nothing recomputed
    with pytest.raises(StoreError, match="other settings"):
        run_metric_validation(parse_metric_config({**TINY, "seed": 4}), tmp_path / "grow")


@pytest.mark.slow
def test_a_sweep_resumes_run_by_run(tmp_path):
    """``simdesign sweep`` stores each combination as an ordinary run: a re-run computes only missing chunks."""
    import yaml

    from simdesign.studies.sweep import run_sweep

    raw = {"name": "tiny-sweep", "model": "coherence", "trials": 4, "seed": 1, "chunk_size": 2,
           "designs": [{"kind": "block", "blocks": 6, "docs_per_block": 1, "annotators_per_block": 1}],
           "tests": ["ttest_doc"], "sweep": {"effect": ["zero", 1]}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(raw))
    fresh, _ = run_sweep(path, out_dir=tmp_path / "out")
    files = _chunk_files(tmp_path / "out")
    assert len(files) == 2 * 2  # two runs of two chunks
    lost = sorted(files)[-1]
    lost.unlink()  # as if the run had been interrupted while that chunk was in flight
    again, _ = run_sweep(path, out_dir=tmp_path / "out")
    timings = [column for column in fresh.columns if column.endswith("seconds")]  # a recomputed chunk's times differ
    pd.testing.assert_frame_equal(again.drop(columns=timings), fresh.drop(columns=timings))
    assert all(_chunk_files(tmp_path / "out")[path] == stamp for path, stamp in files.items() if path != lost)
    assert lost.is_file()
