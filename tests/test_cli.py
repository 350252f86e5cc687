import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from simdesign.cli import main

CONFIG = {"name": "cli", "model": "repetition", "effect": "zero", "trials": 12, "seed": 3,
          "designs": [{"kind": "block", "blocks": [1, 3], "docs_per_block": [6, 2], "annotators_per_block": 2},
                      {"kind": "pool", "docs": 8, "annotators": 4, "judgements_per_output": 2}],
          "tests": ["ttest", "art_doc"]}
SUMMARY_HEAD = ["design", "kind", "blocks", "docs_per_block", "annotators_per_block", "docs", "annotators",
                "judgements_per_output", "judgements", "test", "estimand", "rate", "ci_low", "ci_high", "mcse",
                "n_tests", "n_failed"]


@pytest.mark.slow
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


@pytest.mark.slow
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


def _summary_rows():
    # Hand-made summary rows: two block designs and one pool design at 30 annotators (the block line's middle).
    rows = []
    for design, kind, blocks, apb, annotators in (("block-B5-D20-A3", "block", 5, 3, 15),
                                                  ("block-B20-D5-A3", "block", 20, 3, 60),
                                                  ("pool-N100-M30-k3", "pool", None, None, 30)):
        rows.append({"design": design, "kind": kind, "blocks": blocks, "docs_per_block": None,
                     "annotators_per_block": apb, "docs": 100, "annotators": annotators,
                     "judgements_per_output": 3, "judgements": 1500, "test": "ttest", "estimand": "power",
                     "rate": 0.5, "ci_low": 0.4, "ci_high": 0.6, "trials": 100})
    return pd.DataFrame(rows)


def test_figure_draws_pool_and_block_designs_apart():
    from simdesign.studies.rates.config import FigureSpec
    from simdesign.studies.rates.plots import draw_summary

    for colour in ("test", "shape"):
        fig, notes = draw_summary(_summary_rows(), FigureSpec(x="annotators", colour=colour), "power", "t")
        lines = [line for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")]
        xs = sorted(tuple(sorted(line.get_xdata())) for line in lines)
        assert xs == [(15.0, 60.0), (30.0,)], f"colour {colour}: the pool design joined a block line: {xs}"
        pool_line = next(line for line in lines if tuple(line.get_xdata()) == (30.0,))
        block_line = next(line for line in lines if len(line.get_xdata()) == 2)
        assert pool_line.get_marker() != block_line.get_marker()
        assert "pool" in pool_line.get_label()
        assert notes == []


@pytest.mark.slow
def test_figure_says_which_designs_its_axis_leaves_out(tmp_path, caplog):
    from simdesign.studies.rates.config import FigureSpec
    from simdesign.studies.rates.plots import draw_summary, plot_summary

    fig, notes = draw_summary(_summary_rows(), FigureSpec(x="blocks"), "power", "t")
    assert len(notes) == 1 and "pool-N100-M30-k3" in notes[0] and "no 'blocks'" in notes[0]
    assert "not shown" in fig.axes[0].get_title() and "pool-N100-M30-k3" in fig.axes[0].get_title()
    drawn = [line for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")]
    assert [sorted(line.get_xdata()) for line in drawn] == [[5.0, 20.0]]
    with caplog.at_level("WARNING"):
        plot_summary(_summary_rows(), FigureSpec(x="blocks"), "power", "t", tmp_path / "fig")
    assert "pool-N100-M30-k3" in caplog.text and (tmp_path / "fig.png").is_file()


def test_blocks_axis_for_pool_designs_only_is_refused(tmp_path, capsys):
    path = tmp_path / "pool.yaml"
    path.write_text(yaml.safe_dump({**CONFIG, "designs": [CONFIG["designs"][1]], "figure": {"x": "blocks"}}))
    assert main(["run", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "The 'figure.x' field 'blocks' has no value for pool designs" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_bench_type1_runs_from_any_directory(tmp_path):
    # Run from a directory without configs/: the default config must be found next to the script.
    script = Path(__file__).resolve().parents[1] / "scripts" / "bench_type1.py"
    env = {**os.environ, "PYTHONPATH": str(script.parents[1])}
    done = subprocess.run([sys.executable, str(script), "--trials", "2", "--per-test-trials", "1", "--jobs", "1"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "whole grid through the engine: 8 designs x 2 trials" in done.stdout


@pytest.mark.slow
def test_chunk_size_option_overrides_the_config_key(tmp_path):
    path = tmp_path / "cli.yaml"
    path.write_text(yaml.safe_dump({**CONFIG, "chunk_size": 12}))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--quiet", "--chunk-size", "5"]) == 0
    names = sorted(p.name[:16] for p in (out / "trials" / "block-B3-D2-A2").glob("*.parquet"))
    assert names == ["t0000000-0000005", "t0000005-0000010", "t0000010-0000012"]
