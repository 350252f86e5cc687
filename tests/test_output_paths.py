"""Outputs that cannot be written (issue 39): every writing command refuses them before any work, exit 2 naming
the path and what is wrong, nothing written; a write that fails later (disk full, read-only) is one line, exit 2.

Tests run as root, where file modes do not stop writes: an unwritable directory, a full disk and a read-only
mount are simulated by making the write raise the OSError the system would.
"""
from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pandas as pd
import pytest

import simdesign
from simdesign.cli import main

REPO = Path(__file__).resolve().parents[1]
STUDY = str(REPO / "examples" / "study.csv")
# command -> (its arguments with {out} where the path goes, the kind of path: directory, file or base)
COMMANDS = {
    "run": (["run", str(REPO / "configs" / "quick.yaml"), "--out", "{out}"], "directory"),
    "run-figure": (["run", str(REPO / "configs" / "quick.yaml"), "--out", "{tmp}/fresh", "--figure", "{out}"],
                   "base"),
    "plan": (["plan", str(REPO / "configs" / "plan_example.yaml"), "--out", "{out}"], "directory"),
    "sweep": (["sweep", str(REPO / "configs" / "quick.yaml"), "--out", "{out}"], "directory"),
    "check": (["check", "coherence", STUDY, "--out", "{out}"], "directory"),
    "analyse": (["analyse", STUDY, "--tests", "ttest", "--out", "{out}"], "directory"),
    "analyse-metrics": (["analyse-metrics", str(REPO / "examples" / "metric_scores.csv"), "--out", "{out}"],
                        "directory"),
    "fit-crowd": (["fit-crowd", str(REPO / "examples" / "crowd_pilot.csv"), "--out", "{out}"], "directory"),
    "fit": (["fit", STUDY, "--out", "{out}"], "file"),
    "fit-check-out": (["fit", STUDY, "--out", "{tmp}/fresh/m.yaml", "--check", "--check-out", "{out}"],
                      "directory"),
    "draw-design": (["draw-design", "--kind", "block", "--blocks", "2", "--docs-per-block", "2",
                     "--annotators-per-block", "2", "--out", "{out}"], "file"),
    "replay": (["replay", "{tmp}/no-results", "--design", "d", "--trial", "0", "--save", "{out}"], "file"),
    "plot": (["plot", "{tmp}/no-results", "--out", "{out}"], "base"),
}
SUFFIX = {"directory": "", "file": ".png", "base": ""}  # (draw-design needs a picture suffix; fit takes any)


def listing(root: Path) -> set:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def refused(capsys, tmp_path, name: str, out: Path, *fragments: str) -> None:
    argv, _ = COMMANDS[name]
    before = listing(tmp_path)
    argv = [word.replace("{out}", str(out)).replace("{tmp}", str(tmp_path)) for word in argv]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert str(out) in error and "Traceback" not in error, error
    for fragment in fragments:
        assert fragment in error, error
    assert listing(tmp_path) == before  # nothing written (not even the results directory)


@pytest.fixture
def plain_file(tmp_path) -> Path:
    path = tmp_path / "a_file"
    path.write_text("x")
    return path


@pytest.mark.parametrize("name", COMMANDS)
def test_an_output_under_a_file_is_refused_before_any_work(capsys, tmp_path, plain_file, name):
    out = plain_file / ("out" + SUFFIX[COMMANDS[name][1]])
    refused(capsys, tmp_path, name, out, f"its parent {plain_file} is a file")


@pytest.mark.parametrize("name", [n for n, (_, kind) in COMMANDS.items() if kind != "base"])
def test_a_dangling_symlink_as_output_is_refused(capsys, tmp_path, name):
    link = tmp_path / ("link" + SUFFIX[COMMANDS[name][1]])
    link.symlink_to(tmp_path / "nowhere" / "target")
    refused(capsys, tmp_path, name, link, "symbolic link", "does not exist")


@pytest.mark.parametrize("name", [n for n, (_, kind) in COMMANDS.items() if kind == "base"])
def test_a_figure_under_a_dangling_symlink_is_refused(capsys, tmp_path, name):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")
    refused(capsys, tmp_path, name, link / "figure", f"its parent {link} is a symbolic link")


@pytest.mark.parametrize("name", [n for n, (_, kind) in COMMANDS.items() if kind == "directory"])
def test_a_file_where_a_directory_is_written_is_refused(capsys, tmp_path, plain_file, name):
    refused(capsys, tmp_path, name, plain_file, "is a file; give a directory")


@pytest.mark.parametrize("code, words", [(errno.EROFS, "is on a read-only file system"),
                                         (errno.EACCES, "is not writable (permission denied)"),
                                         (errno.ENOSPC, "is on a full disk")])
@pytest.mark.parametrize("name", COMMANDS)
def test_an_unwritable_directory_is_refused_before_any_work(capsys, tmp_path, monkeypatch, name, code, words):
    def cannot(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(tempfile, "mkstemp", cannot)
    out = tmp_path / "sub" / ("out" + SUFFIX[COMMANDS[name][1]])
    refused(capsys, tmp_path, name, out, f"cannot be written: {tmp_path} {words}")


@pytest.mark.parametrize("name", [n for n, (_, kind) in COMMANDS.items() if kind == "file"])
def test_an_existing_file_that_cannot_be_overwritten_is_refused(capsys, tmp_path, monkeypatch, name):
    out = tmp_path / "kept.png"
    out.write_text("x")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if Path(path) == out else real_access(path, mode))
    refused(capsys, tmp_path, name, out, "is not writable")
    assert out.read_text() == "x"


def test_the_write_check_leaves_nothing_behind(capsys, tmp_path):
    from simdesign.cli.out_paths import folder_problem

    assert folder_problem(tmp_path / "not" / "yet") is None
    assert listing(tmp_path) == set()


def no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as a write() to an open file: no file name


def read_only(self, path, *args, **kwargs):
    raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))  # as open() on a read-only mount


@pytest.mark.slow  # real runs, half a second or more: the fast tier stays under a minute
@pytest.mark.parametrize("failure", [no_space, read_only])
def test_a_write_that_fails_after_the_check_is_one_line_naming_the_file(capsys, tmp_path, monkeypatch, failure):
    monkeypatch.setattr(pd.DataFrame, "to_csv", failure)
    out = tmp_path / "analysis"
    assert main(["analyse", STUDY, "--tests", "ttest", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    (line,) = error.strip().splitlines()
    assert line.startswith("error: cannot write ") and "Traceback" not in error
    assert str(out) in line and os.strerror(failure is no_space and errno.ENOSPC or errno.EROFS) in line


def test_a_run_whose_disk_fills_up_stops_with_one_line_and_its_store_holds_the_same_rates(
        capsys, tmp_path, monkeypatch):
    config = tmp_path / "small.yaml"
    config.write_text("name: small\nmodel: coherence\neffect: zero\ntests: [ttest]\ntrials: 4\nseed: 1\n"
                      "designs: [{kind: block, blocks: 2, docs_per_block: 2, annotators_per_block: 2}]\n")
    out = tmp_path / "out"
    with monkeypatch.context() as patch:
        patch.setattr(pd.DataFrame, "to_csv", no_space)  # summary.csv: after every trial was stored
        assert main(["run", str(config), "--out", str(out), "--jobs", "1", "--quiet"]) == 2
    error = capsys.readouterr().err
    assert f"error: cannot write {out}" in error and "No space left on device" in error and "Traceback" not in error
    assert not list(out.rglob("*.tmp"))  # the store is clean: every chunk whole, no temporary file left
    # what was stored is what a fresh simulation (in memory) computes
    stored = simdesign.load_results(out).summary()
    fresh = simdesign.simulate(simdesign.load_config(config), jobs=1, progress=False).summary()
    columns = lambda frame: frame.drop(columns="mean_fit_seconds").reset_index(drop=True)  # noqa: E731 - wall time
    pd.testing.assert_frame_equal(columns(stored), columns(fresh))


def test_an_error_that_is_not_about_writing_keeps_its_traceback(tmp_path, monkeypatch):
    from simdesign.cli import analyse

    def broken(args):
        raise OSError(errno.ECONNREFUSED, "Connection refused")

    monkeypatch.setattr(analyse, "run", broken)
    with pytest.raises(OSError, match="Connection refused"):
        main(["analyse", STUDY, "--out", str(tmp_path / "o")])
