"""The user documentation holds together: links resolve, configs it names exist, no pointer to a file
users do not have (the design notes live outside the repository)."""
import re
import subprocess
from pathlib import Path

import pytest

from simdesign.studies.rates.config import load_config

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").rglob("*.md"))
MARKDOWN = [ROOT / "README.md", *DOCS]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set:
    return {github_anchor(line.lstrip("#")) for line in path.read_text().splitlines() if line.startswith("#")}


def test_the_docs_exist():
    assert {path.name for path in DOCS} >= {"model.md", "estimands.md", "reliability.md", "designs.md"}


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: p.name)
def test_relative_links_resolve(path):
    broken = []
    for target in LINK.findall(path.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target}: no file {linked}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading with anchor #{anchor} in {linked.name}")
    assert not broken, broken


def test_no_reference_to_the_design_notes():
    # DESIGN.md is the developers' note outside the repository; users must be pointed to docs/.
    pattern = re.compile(r"DESIGN(\.md| \d| section| §)")
    files = [ROOT / "README.md", *DOCS, *(ROOT / "simdesign").rglob("*.py")]
    hits = [f"{path.relative_to(ROOT)}:{number}" for path in files
            for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits


def test_configs_named_by_the_reproduction_script_exist_and_load():
    script = (ROOT / "scripts" / "reproduce_paper.sh").read_text()
    named = set(re.findall(r"configs/[\w{},]+\.yaml", script))
    expanded = set()
    for name in named:
        match = re.search(r"\{([^}]*)\}", name)
        if match:
            expanded |= {name.replace(match.group(0), option) for option in match.group(1).split(",")}
        else:
            expanded.add(name)
    assert "configs/plan_example.yaml" in expanded and "configs/reliability_nested_vs_crossed.yaml" in expanded
    for name in sorted(expanded):
        assert (ROOT / name).is_file(), name
        if not name.startswith("configs/plan_"):
            load_config(ROOT / name)


@pytest.mark.parametrize("task, trials", [("coherence", 200), ("repetition", 100)])
def test_mixed_type1_configs_match_their_committed_figures(task, trials):
    # The figures' titles state these counts; a config asking for more would not redraw the same figure.
    assert load_config(ROOT / f"configs/paper_fig4_mixed_{task}.yaml").trials == trials


def test_reproduction_script_refuses_an_unknown_figure_before_set_up():
    completed = subprocess.run(["bash", str(ROOT / "scripts" / "reproduce_paper.sh")], env={"FIGURES": "fig4 fig9",
                               "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2
    assert "fig9" in completed.stderr and "fig4_mixed" in completed.stderr


@pytest.mark.slow  # 3 s: the example's pool of 100 documents with clmm_native, one trial
def test_the_criteria_example_of_designs_md_runs_from_a_config(tmp_path):
    """docs/designs.md's ``criteria:`` example runs as a config, as written (issue 39: it was routed to the
    crowd-study parser); the fast tier runs it with a small design (tests/test_hostile_inputs_39.py)."""
    import pandas as pd
    import yaml

    from simdesign.cli import main
    from test_hostile_inputs_39 import docs_criteria_example

    path = tmp_path / "criteria.yaml"
    path.write_text(yaml.safe_dump({**docs_criteria_example(), "name": "criteria", "trials": 1, "seed": 1}))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--jobs", "1", "--quiet"]) == 0
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert set(summary["criterion"]) == {"coherence", "repetition"}
    assert {"ttest_doc", "clmm_native"} <= set(summary["test"])
