"""The how-to pages list every file the commands write (issue 39): plan.md and analyse-a-study.md missed some.

Each page's **Outputs** bullet is compared with what the command really writes on a small input.
"""
import re
from pathlib import Path

import pytest

from simdesign.cli import main

ROOT = Path(__file__).resolve().parents[1]
PILOT = ROOT / "tests" / "fixtures" / "fit_nested" / "nested_30x4_3systems.csv"
FILE_NAME = re.compile(r"`([A-Za-z_<>.-]+\.(?:csv|md|png|pdf)(?:/\.(?:csv|md|png|pdf))*)`")


def listed(page: str) -> set[str]:
    """File names in backticks in the page's '**Outputs**' bullet (up to the next bullet)."""
    text = (ROOT / "docs" / "how-to" / page).read_text()
    bullet = re.search(r"- \*\*Outputs\*\*(.*?)(?:\n- |\n\n)", text, re.DOTALL).group(1)
    names = set()
    for found in FILE_NAME.findall(bullet):  # `<name>.png/.pdf` is two files
        first, *suffixes = found.split("/")
        names |= {first, *(first.rsplit(".", 1)[0] + suffix for suffix in suffixes)}
    return names


def written(directory: Path) -> set[str]:
    return {path.name for path in directory.iterdir() if path.is_file()}


@pytest.mark.slow  # real runs, half a second or more: the fast tier stays under a minute
def test_analyse_writes_what_its_page_lists(tmp_path):
    assert main(["analyse", str(PILOT), "--tests", "ttest", "--bootstrap", "100", "--out", str(tmp_path)]) == 0
    assert written(tmp_path) == listed("analyse-a-study.md")


@pytest.mark.slow  # real runs, half a second or more: the fast tier stays under a minute
def test_plan_writes_what_its_page_lists(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text("name: tiny\nmodel: coherence\neffect: fitted\ntests: [ttest_doc]\ntarget_power: 0.3\n"
                      "cost: {pay_per_hour: 12, per_annotator: 1}\nmax_type1: null\n"
                      "search: {designs: [{kind: block, blocks: 20, docs_per_block: 5, annotators_per_block: 1}]}\n"
                      "screen_trials: 10\nmax_trials: 20\nconfirm_trials: 20\nseed: 1\n")
    out = tmp_path / "out"
    assert main(["plan", str(config), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    names = {name.replace("<name>", "tiny") for name in listed("plan.md")}
    assert written(out) == names
