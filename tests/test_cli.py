import pandas as pd
import yaml

from simdesign.cli import main

CONFIG = {"name": "cli", "model": "repetition", "effect": "zero", "trials": 12, "seed": 3,
          "designs": [{"kind": "block", "blocks": [1, 3], "docs_per_block": [6, 2], "annotators_per_block": 2},
                      {"kind": "pool", "docs": 8, "annotators": 4, "judgements_per_output": 2}],
          "tests": ["ttest", "art_doc"]}
SUMMARY_HEAD = ["design", "kind", "blocks", "docs_per_block", "annotators_per_block", "docs", "annotators",
                "judgements_per_output", "judgements", "test", "estimand", "rate", "ci_low", "ci_high", "mcse",
                "n_tests", "n_failed"]


def test_run_writes_summary_figure_and_manifest_then_plot_redraws(tmp_path, capsys):
    path = tmp_path / "cli.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary.columns[:len(SUMMARY_HEAD)]) == SUMMARY_HEAD
    assert set(summary["estimand"]) == {"type1", "familywise", "failure_rate"}
    assert len(summary) == 3 * 2 * 3
    pool = summary[summary["kind"] == "pool"]
    assert pool["blocks"].isna().all() and (pool["annotators"] == 4).all()
    assert (out / "cli.png").is_file() and (out / "cli.pdf").is_file()
    assert (out / "manifest.json").is_file()
    (out / "cli.png").unlink()
    (out / "summary.csv").unlink()
    assert main(["plot", str(out)]) == 0
    assert (out / "cli.png").is_file()
    pd.testing.assert_frame_equal(pd.read_csv(out / "summary.csv"), summary)
    assert main(["replay", str(out), "--design", "block-B3-D2-A2", "--trial", "4", "--test", "art_doc"]) == 0
    assert "art_doc" in capsys.readouterr().out


def test_more_trials_from_the_command_line(tmp_path):
    path = tmp_path / "cli.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--quiet", "--trials", "5"]) == 0
    assert (pd.read_csv(out / "summary.csv")["trials"] == 5).all()
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    assert (pd.read_csv(out / "summary.csv")["trials"] == 12).all()


def test_bad_config_exits_with_a_message(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**CONFIG, "alpha": 1.5, "tests": ["ttest", "art_block"]}))
    assert main(["run", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "The 'alpha' field must be in (0, 1); got 1.5" in err and "pool designs" in err


def test_presets_lists_both_models(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert "coherence" in out and "repetition" in out and "Steen" in out
