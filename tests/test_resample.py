"""Resampling analyses of real tables: schemes, reproducibility, capped annotation time."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simdesign import BlockDesign, PoolDesign, load_model
from simdesign.core.errors import ConfigError
from simdesign.realdata.resample import StudyTable, bin_by_time, capped_annotation_seconds, pearson, resample


@pytest.fixture(scope="module")
def table():
    frame = load_model("repetition").sample(BlockDesign(8, 2, 3), np.random.default_rng(4)).to_frame()
    return StudyTable.from_frame(frame.drop(columns="block"))


def test_reproducible_from_seed(table):
    first = resample(table, "nested", [2, 4], 30, seed=9)
    again = resample(table, "nested", [2, 4], 30, seed=9)
    other = resample(table, "nested", [2, 4], 30, seed=10)
    pd.testing.assert_frame_equal(first, again)
    assert not np.array_equal(first["estimate"], other["estimate"])
    # a size's stream does not depend on the other sizes requested
    alone = resample(table, "nested", [4], 30, seed=9)
    np.testing.assert_array_equal(alone["estimate"], first.loc[first["size"] == 4, "estimate"])


def test_schemes_take_what_they_say(table, monkeypatch):
    import simdesign.realdata.resample as module

    seen = []
    original = module._draw

    def spy(table_, scheme, size, rng):
        chosen = original(table_, scheme, size, rng)
        seen.append((scheme, size, chosen))
        return chosen

    monkeypatch.setattr(module, "_draw", spy)
    resample(table, "nested", [3], 20, seed=1)
    resample(table, "crossed", [6], 20, seed=1)
    resample(table, "blocks", [2], 20, seed=1)
    for scheme, size, chosen in seen:
        blocks = table.block[chosen]
        assert len(set(chosen.tolist())) == len(chosen)  # without replacement
        if scheme == "nested":
            assert len(chosen) == 3 and len(set(blocks.tolist())) == 3
        elif scheme == "crossed":
            assert len(chosen) == 6 and sorted(np.bincount(blocks).tolist())[-2:] == [3, 3]
        else:
            assert len(chosen) == 6 and len(set(blocks.tolist())) == 2


def test_judgement_counts_and_full_sample(table):
    draws = resample(table, "crossed", [3, 6], 5, seed=0)
    assert draws.groupby("size")["judgements"].first().tolist() == [3 * 2 * 5, 6 * 2 * 5]  # annotators x docs x systems
    everything = resample(table, "blocks", [table.n_blocks], 3, seed=0)
    np.testing.assert_allclose(everything["estimate"], 1.0)  # all blocks: the sample is the full study


def test_impossible_sizes_and_designs_are_refused(table):
    with pytest.raises(ConfigError, match="multiples of 3"):
        resample(table, "crossed", [4], 5, seed=0)
    with pytest.raises(ConfigError, match="between 1 and 8 blocks"):
        resample(table, "blocks", [9], 5, seed=0)
    with pytest.raises(ConfigError, match="scheme"):
        resample(table, "random", [2], 5, seed=0)
    pool = load_model("coherence").sample(PoolDesign(12, 6, 2), np.random.default_rng(1)).to_frame()
    with pytest.raises(ConfigError, match="block design"):
        StudyTable.from_frame(pool.drop(columns="block"))


def test_capped_seconds_by_hand():
    times = pd.DataFrame({"annotator": ["a", "a", "a", "b"], "time_stamp": [10.0, 400.0, 2000.0, 50.0]})
    likert = capped_annotation_seconds(times, outputs_per_item=1)
    assert likert.to_dict() == {"a": 10 + 300 + 300, "b": 50}
    ranking = capped_annotation_seconds(times, outputs_per_item=5)
    assert ranking.to_dict() == {"a": 10 + 400 + 1500, "b": 50}
    with pytest.raises(ConfigError, match="lines 3"):
        capped_annotation_seconds(times.assign(time_stamp=[1.0, -2.0, 3.0, 4.0]), 1)


def test_seconds_and_custom_estimand(table):
    seconds = pd.Series(60.0, index=list(table.annotators))
    draws = resample(table, "nested", [4], 10, seed=2, seconds=seconds,
                     estimand=lambda sample, full: float(np.abs(sample - full).max()))
    assert (draws["seconds"] == 240.0).all() and (draws["estimate"] >= 0).all()
    with pytest.raises(ConfigError, match="no rows"):
        resample(table, "nested", [4], 1, seed=2, seconds=seconds.iloc[1:])
    binned = bin_by_time(draws.assign(seconds=[300.0] * 5 + [900.0] * 5), minutes=10)
    assert binned["bin_start_min"].tolist() == [0.0, 10.0] and binned["n"].tolist() == [5, 5]


def test_pearson_constant_side_is_nan():
    assert np.isnan(pearson(np.ones(3), np.arange(3.0)))
    assert pearson(np.arange(3.0), 2 * np.arange(3.0) + 1) == pytest.approx(1.0)
