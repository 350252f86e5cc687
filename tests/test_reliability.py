"""Krippendorff's alpha and split-half reliability: known answers, the paper's Table 3, simulation estimands."""
import itertools

import numpy as np
import pandas as pd
import pytest

from simdesign import BlockDesign, PoolDesign, load_model
from simdesign.api import load_results
from simdesign.cli import main
from simdesign.outputs import write_outputs
from simdesign.studies.rates.config import parse_config
from simdesign.studies.rates.engine import plan_chunks, run_simulation
from simdesign.core.errors import ConfigError
from simdesign.core.judgements import Judgements
from simdesign.stats.reliability import (UndefinedReliability, krippendorff_alpha, n_distinct_splits, shr,
                                   split_half_reliability)
from simdesign.studies.rates.store import rate_store


def _frame(rows):
    return pd.DataFrame(rows, columns=["annotator", "document", "system", "score"])


# ---------------------------------------------------------------------------------------------
# Krippendorff's alpha
# ---------------------------------------------------------------------------------------------

def test_ordinal_alpha_matches_a_hand_computation():
    # Units (d1,s1), (d1,s2), (d2,s1); coders A and B give (1,1), (1,2), (2,3).
    # Coincidences: o11 = 2, o12 = o21 = 1, o23 = o32 = 1; n1 = 3, n2 = 2, n3 = 1, n = 6.
    # Ordinal distances (sum of n_g from c to k less (n_c + n_k) / 2, squared): d12 = 2.5^2, d23 = 1.5^2, d13 = 4^2.
    # D_o = (2 * 6.25 + 2 * 2.25) / 6 = 17/6; D_e = 2 (6 * 6.25 + 2 * 2.25 + 3 * 16) / 30 = 6; alpha = 1 - 17/36.
    frame = _frame([("A", "d1", "s1", 1), ("B", "d1", "s1", 1), ("A", "d1", "s2", 1), ("B", "d1", "s2", 2),
                    ("A", "d2", "s1", 2), ("B", "d2", "s1", 3)])
    assert krippendorff_alpha(frame) == pytest.approx(19 / 36, abs=1e-12)
    # Unused scale values do not change ordinal alpha (they add no pairable values between ranks).
    assert krippendorff_alpha(frame, value_domain=range(1, 8)) == pytest.approx(19 / 36, abs=1e-12)


def test_ordinal_alpha_matches_krippendorffs_published_example_with_missing_values():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", 4 coders x 12 units, ordinal alpha 0.815.
    data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
            [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]]
    rows = [(coder, unit, "s", value) for coder, values in enumerate(data) for unit, value in enumerate(values)
            if value is not None]
    assert krippendorff_alpha(_frame(rows)) == pytest.approx(0.815, abs=5e-4)


def test_alpha_is_the_same_from_judgements_and_from_the_long_table(coherence, rng):
    data = coherence.sample(BlockDesign(4, 5, 3), rng)
    assert krippendorff_alpha(data) == pytest.approx(krippendorff_alpha(data.to_frame()), abs=1e-12)


def test_alpha_is_undefined_with_one_judgement_per_output(coherence, rng):
    with pytest.raises(UndefinedReliability, match="two or more annotators"):
        krippendorff_alpha(coherence.sample(BlockDesign(10, 2, 1), rng))
    with pytest.raises(UndefinedReliability, match="same value"):
        krippendorff_alpha(_frame([("A", "d", "s", 3), ("B", "d", "s", 3)]))


# ---------------------------------------------------------------------------------------------
# Split-half reliability
# ---------------------------------------------------------------------------------------------

def _shr_by_loops(data: Judgements) -> float:
    """SHR the slow way: every split of the blocks, half means from the long table, np.corrcoef."""
    frame = data.to_frame()
    blocks = sorted(frame["block"].unique())
    half = len(blocks) // 2
    seen, values = set(), []
    for first in itertools.combinations(blocks, half):
        rest = tuple(b for b in blocks if b not in first)
        if (rest, first) in seen:
            continue
        seen.add((first, rest))
        in_first = frame["block"].isin(first)
        a = frame[in_first].groupby("system")["score"].mean()
        b = frame[~in_first].groupby("system")["score"].mean()
        values.append(np.corrcoef(a.to_numpy(), b.reindex(a.index).to_numpy())[0, 1])
    return float(np.mean(values))


@pytest.mark.parametrize("blocks", [2, 5, 6])
def test_shr_matches_a_loop_over_all_splits(coherence, rng, blocks):
    data = coherence.sample(BlockDesign(blocks, 3, 2), rng)
    result = split_half_reliability(data)
    assert result.exact and result.n_blocks == blocks
    assert result.n_splits == n_distinct_splits(blocks)
    assert result.value == pytest.approx(_shr_by_loops(data), abs=1e-12)


def test_number_of_distinct_splits():
    assert n_distinct_splits(20) == 92378  # C(20, 10) / 2: a split and its mirror image are one
    assert n_distinct_splits(2) == 1
    assert n_distinct_splits(5) == 10  # halves of 2 and 3 blocks: C(5, 2)


def test_shr_enumerates_all_of_the_papers_92378_splits(coherence, rng):
    # speed is measured in scripts, not asserted here (timing assertions are flaky on shared machines)
    data = coherence.sample(BlockDesign(20, 5, 3), rng)
    result = split_half_reliability(data)
    assert result.exact and result.n_splits == 92378


def test_shr_uses_1000_random_splits_beyond_100000_and_needs_an_rng(coherence, rng):
    data = coherence.sample(BlockDesign(22, 2, 1), rng)  # C(22, 11) / 2 = 352,716 splits
    with pytest.raises(ValueError, match="rng"):
        split_half_reliability(data)
    one = split_half_reliability(data, np.random.default_rng(5))
    two = split_half_reliability(data, np.random.default_rng(5))
    assert not one.exact and one.n_splits == 1000 and one.value == two.value


def test_shr_needs_two_blocks(coherence, rng):
    with pytest.raises(UndefinedReliability, match="two or more blocks"):
        shr(coherence.sample(BlockDesign(1, 10, 3), rng))
    with pytest.raises(UndefinedReliability, match="no block structure"):
        shr(coherence.sample(PoolDesign(10, 6, 2), rng))


# ---------------------------------------------------------------------------------------------
# The paper's Table 3
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("task, alpha, split_half", [("coherence", 0.22, 0.96), ("repetition", 0.27, 0.95)])
def test_alpha_and_shr_match_the_papers_table_3(task, alpha, split_half, paper_data_dir):
    frame = pd.read_csv(paper_data_dir / "judgements" / f"likert_{task}_cnn_dm.csv")
    assert round(krippendorff_alpha(frame), 2) == alpha
    result = split_half_reliability(frame)  # blocks recovered from shared document sets
    assert result.n_blocks == 20 and result.exact and result.n_undefined == 0
    assert round(result.value, 2) == split_half


def test_reliability_command_prints_both(capsys, paper_data_dir):
    assert main(["reliability", str(paper_data_dir / "judgements" / "likert_coherence_cnn_dm.csv")]) == 0
    out = capsys.readouterr().out
    assert "alpha" in out and "0.2211" in out and "92378" in out and "0.9584" in out


# ---------------------------------------------------------------------------------------------
# Estimands in simulations
# ---------------------------------------------------------------------------------------------

RAW = {"name": "reliability-test", "model": "coherence", "effect": "fitted", "trials": 12, "seed": 3,
       "designs": [{"kind": "block", "blocks": [1, 4, 6], "docs_per_block": [8, 2, 2],
                    "annotators_per_block": [2, 2, 1]}],
       "estimands": ["krippendorff_alpha", "shr"], "chunk_size": 5}


def test_config_validates_estimands():
    config = parse_config(RAW)
    assert config.estimands == ("krippendorff_alpha", "shr") and config.analyses == ()
    with pytest.raises(ConfigError) as error:
        parse_config({**RAW, "estimands": ["shr", "kappa", "shr"], "tests": [{"name": "ttest", "label": "shr"}]})
    text = str(error.value)
    assert "unknown estimand(s) ['kappa']" in text and "more than once" in text and "estimand names" in text
    with pytest.raises(ConfigError, match="tests"):
        parse_config({key: value for key, value in RAW.items() if key != "estimands"})


@pytest.mark.slow
def test_estimands_are_per_trial_rows_summarised_with_notes_where_undefined(tmp_path):
    config = parse_config(RAW)
    store = run_simulation(config, tmp_path / "run", RAW, jobs=1, progress=False)
    table = store.read_trials()
    assert set(table["test"]) == {"krippendorff_alpha", "shr"} and (table["pair"] == -1).all()
    assert len(table) == 3 * 12 * 2
    # The stored values are the reliability of each trial's own data.
    design = config.designs[1]
    from simdesign.core.seeds import data_rng
    data = config.model.sample(design, data_rng(config.seed, design.label, 0), config.effect)
    row = table[(table["design"] == design.label) & (table["trial"] == 0) & (table["test"] == "krippendorff_alpha")]
    assert row["estimate"].iloc[0] == pytest.approx(krippendorff_alpha(data))

    summary = load_results(tmp_path / "run", config=config).summary()
    write_outputs(config, summary, tmp_path / "run")
    assert (tmp_path / "run" / "reliability-test.png").is_file()
    assert (tmp_path / "run" / "reliability-test-shr.png").is_file()
    rows = summary.set_index(["design", "estimand"])
    assert (summary["test"] == "").all()
    crossed, blocked, nested = (d.label for d in config.designs)
    assert np.isnan(rows.loc[(crossed, "shr"), "rate"]) and "two or more blocks" in rows.loc[(crossed, "shr"), "note"]
    assert np.isnan(rows.loc[(nested, "krippendorff_alpha"), "rate"])
    assert rows.loc[(nested, "krippendorff_alpha"), "n_failed"] == 12
    values = table[(table["design"] == blocked) & (table["test"] == "shr")]["estimate"]
    estimate = rows.loc[(blocked, "shr")]
    assert estimate["rate"] == pytest.approx(values.mean())
    assert estimate["mcse"] == pytest.approx(values.std(ddof=1) / np.sqrt(12))
    assert estimate["ci_low"] == pytest.approx(values.mean() - 1.959964 * estimate["mcse"], abs=1e-6)
    assert estimate["n_tests"] == 12 and estimate["trials"] == 12


@pytest.mark.slow
def test_estimands_resume_and_join_an_existing_run(tmp_path):
    with_tests = {**RAW, "tests": ["ttest_doc"], "estimands": ["krippendorff_alpha"]}
    run_simulation(parse_config(with_tests), tmp_path / "run", with_tests, jobs=1, progress=False)
    grown = {**with_tests, "estimands": ["krippendorff_alpha", "shr"]}
    config = parse_config(grown)
    chunks = plan_chunks(config, rate_store(tmp_path / "run"), config.trials)
    assert chunks and all({spec.label for spec in chunk.analyses} == {"shr"} for chunk in chunks)
    store = run_simulation(config, tmp_path / "run", grown, jobs=1, progress=False)
    assert plan_chunks(config, store, config.trials) == []
    table = store.read_trials()
    assert len(table[table["test"] == "ttest_doc"]) == 3 * 12 * 10
    fresh = run_simulation(config, tmp_path / "fresh", grown, jobs=2, progress=False).read_trials()
    key = ["design", "test", "trial", "pair"]
    pd.testing.assert_frame_equal(table.sort_values(key, ignore_index=True)[key + ["estimate", "status"]],
                                  fresh.sort_values(key, ignore_index=True)[key + ["estimate", "status"]])
    summary = load_results(tmp_path / "run", config=config).summary()
    write_outputs(config, summary, tmp_path / "run")
    assert {"type1", "power", "krippendorff_alpha", "shr"} & set(summary["estimand"]) >= {"power",
                                                                                         "krippendorff_alpha", "shr"}
