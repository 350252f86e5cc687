"""``fit --check`` writes check.csv and check.png where the docs say: the folder of ``--out`` (issue 39).

It wrote them into a folder named after the model file (``--out pilot/pilot.yaml``: pilot/pilot/check.csv).
"""
from pathlib import Path

import pytest

from simdesign.cli import main
from simdesign.cli.fit import check_directory
from simdesign.cli.main import build_parser

REPO = Path(__file__).resolve().parents[1]
PILOT = REPO / "tests" / "fixtures" / "fit_nested" / "nested_30x4_3systems.csv"


def test_the_check_goes_next_to_the_model_file_unless_check_out_says_otherwise():
    parser = build_parser()
    args = parser.parse_args(["fit", "pilot.csv", "--out", "pilot/pilot.yaml", "--check"])
    assert check_directory(args) == Path("pilot")
    args = parser.parse_args(["fit", "pilot.csv", "--out", "pilot/pilot.yaml", "--check", "--check-out", "checks"])
    assert check_directory(args) == Path("checks")


@pytest.mark.slow
def test_fit_check_writes_beside_the_model(tmp_path):
    out = tmp_path / "pilot" / "pilot.yaml"
    assert main(["fit", str(PILOT), "--out", str(out), "--check", "--check-trials", "2"]) == 0
    assert (tmp_path / "pilot" / "check.csv").is_file() and (tmp_path / "pilot" / "check.png").is_file()
    assert not (tmp_path / "pilot" / "pilot").exists()
