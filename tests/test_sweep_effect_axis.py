"""A sweep over effect sizes alone (issue 31 part 3, configs/replication_effects.yaml) draws its figure."""
import pandas as pd
import pytest

from simdesign.studies.sweep import draw_sweep


def test_an_effect_sweep_of_a_replication_draws_against_the_effect_multiple(tmp_path, monkeypatch):
    import simdesign.studies.sweep as sweep

    raw = {"name": "effects", "model": "coherence", "sweep": {"effect": ["zero", 0.25, 1]}}
    rows = [{"design": "d", "test": "ttest_doc", "estimand": "power", "effect": label, "rate": rate,
             "ci_low": rate - 0.01, "ci_high": rate + 0.01, "trials": 10}
            for label, rate in (("zero", 0.05), ("x0.25", 0.3), ("x1", 0.8))]
    # a replication's rows without a test, and rates held as objects (as a summary built in memory may hold them)
    rows.append({"design": "d", "test": None, "estimand": "replication_r", "effect": "x1", "rate": 0.9,
                 "ci_low": None, "ci_high": None, "trials": 10})
    summary = pd.DataFrame(rows).astype({"rate": object, "ci_low": object, "ci_high": object})
    seen = {}
    original = sweep.plot_sweep

    def spy(frame, x, *args, **kwargs):
        seen["x"] = frame.loc[frame["estimand"] == "power"].sort_values("effect")[x].tolist()
        return original(frame, x, *args, **kwargs)

    monkeypatch.setattr(sweep, "plot_sweep", spy)
    paths = draw_sweep(raw, summary, tmp_path / "effects")
    assert [path.exists() for path in paths] == [True]
    # sorted by label: x0.25, x1, zero -> their multiples of the fitted effects
    assert seen["x"] == [0.25, 1.0, 0.0]


@pytest.mark.slow  # two runs, two figures: about 5 s
def test_plot_redraws_a_sweep_directory_from_its_stored_runs(tmp_path, monkeypatch):
    """`simdesign plot DIR` of a sweep: the stacked summary from the runs' stores equals the run's (issue 27)."""
    import pandas as pd

    from simdesign.cli import main

    config = tmp_path / "sweep.yaml"
    config.write_text("name: sw\nmodel: coherence\ntests: [ttest_doc]\ntrials: 6\nseed: 3\n"
                      "designs:\n  - {kind: block, blocks: 3, docs_per_block: 4, annotators_per_block: 2}\n"
                      "sweep:\n  effect: [zero, fitted]\n")
    out = tmp_path / "out"
    assert main(["run", str(config), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    ran = pd.read_csv(out / "summary.csv")
    (out / "summary.csv").unlink()
    (out / "sw.png").unlink()
    monkeypatch.chdir(tmp_path)  # redrawn from elsewhere: the manifest records what the runs resolved
    assert main(["plot", str(out)]) == 0
    redrawn = pd.read_csv(out / "summary.csv")
    assert (out / "sw.png").is_file() and set(redrawn["estimand"]) >= {"type1", "power", "power_size_adjusted"}
    pd.testing.assert_frame_equal(ran.drop(columns="run_seconds"), redrawn.drop(columns="run_seconds"))
    assert redrawn["run_seconds"].isna().all()


@pytest.mark.slow  # two runs of 200 trials and the command: about a second
def test_power_of_a_test_its_null_run_shows_liberal_is_marked_in_the_summary(tmp_path, capsys):
    """A sweep over the effect with a null run: where the null run shows a test to reject a true null more
    often than 0.075 (the planner's rule on the run's own interval), its power row says it is no evidence.
    With 2 blocks of 3 crossed annotators both t-tests are liberal (about 0.18 and 0.13; the paper's Figure
    4); with one annotator per block of 3 documents they hold (about 0.05), and their rows are left alone."""
    import yaml

    from simdesign.studies.sweep import LEVEL_NOTE, run_sweep
    from simdesign.stats.montecarlo import level_verdict

    raw = {"name": "level", "model": "coherence", "tests": ["ttest", "ttest_doc"], "trials": 200, "seed": 4,
           "designs": [{"kind": "block", "blocks": 2, "docs_per_block": 15, "annotators_per_block": 3},
                       {"kind": "block", "blocks": 10, "docs_per_block": 3, "annotators_per_block": 1}],
           "sweep": {"effect": ["zero", "fitted"]}}
    path = tmp_path / "level.yaml"
    path.write_text(yaml.safe_dump(raw))
    summary, _ = run_sweep(path, out_dir=tmp_path / "out", jobs=1)
    type1 = summary[summary["estimand"] == "type1"].set_index(["design", "test"])
    power = summary[summary["estimand"] == "power"].set_index(["design", "test"])
    marked = {key: LEVEL_NOTE.split(":")[0] in str(power.at[key, "note"]) for key in power.index}
    verdicts = {key: level_verdict(type1.at[key, "ci_low"], type1.at[key, "ci_high"], 0.075) for key in power.index}
    assert marked == {key: verdict == "fails" for key, verdict in verdicts.items()}
    assert marked[("block-B2-D15-A3", "ttest")] and not marked[("block-B10-D3-A1", "ttest")]
    # and the command says so (the stored runs are read again)
    from simdesign.cli import main

    capsys.readouterr()
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "do not hold their level" in err and "block-B2-D15-A3 / ttest" in err
    assert "block-B10-D3-A1 / ttest" not in err
