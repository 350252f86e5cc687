"""The manual: the site builds in strict mode, the README stays short, and every Python example runs.

Examples keep realistic counts on the page; here they run with small trial counts, by wrapping the API
functions they call (the wrapper lowers ``trials`` and a plan's trial counts and changes nothing else).
A block preceded by ``<!-- example: skip REASON -->`` is not run (it needs a cluster, say): the reason
is on the page for its readers.
"""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import simdesign

ROOT = Path(__file__).resolve().parents[1]
HOW_TO = sorted((ROOT / "docs" / "how-to").glob("*.md"))
EXAMPLE_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "tutorials").glob("*.md")), *HOW_TO]
BLOCK = re.compile(r"(<!-- example: skip [^>]+-->\s*)?```python\n(.*?)```", re.DOTALL)
README_MAX_LINES = 250
EXAMPLE_TRIALS = 8


def python_examples(path: Path) -> list[str]:
    return [code for skip, code in BLOCK.findall(path.read_text()) if not skip]


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= README_MAX_LINES


def test_every_how_to_page_is_in_the_site_navigation():
    navigation = (ROOT / "mkdocs.yml").read_text()
    missing = [path.name for path in HOW_TO if f"how-to/{path.name}" not in navigation]
    assert not missing, missing


def test_the_pages_have_examples_to_run():
    # The collection below must not silently find nothing (a changed fence would make every test vacuous).
    assert len(python_examples(ROOT / "README.md")) >= 2
    assert sum(len(python_examples(path)) for path in EXAMPLE_PAGES) >= 4


def _small(function, **lowered):
    def wrapper(*args, **kwargs):
        kwargs.update(lowered)
        return function(*args, **kwargs)
    return wrapper


def _small_plan(plan):
    from simdesign.planning.planner import PlanConfig, load_plan, parse_plan

    def wrapper(config, *args, **kwargs):
        if _is_judge_plan(config):  # a judge plan (issue 43): every variant's plan with small trial counts
            from simdesign.planning.judge_plan import parse_judge_plan

            config = parse_judge_plan(_plan_mapping(config)) if not hasattr(config, "plans") else config
            plans = {variant: dataclasses.replace(one, screen_trials=10, max_trials=20, confirm_trials=20)
                     for variant, one in config.plans.items()}
            return plan(dataclasses.replace(config, plans=plans), *args, **kwargs)
        if isinstance(config, dict):
            config = parse_plan(config)
        elif not isinstance(config, PlanConfig):
            config = load_plan(config)
        fields = {field.name for field in dataclasses.fields(config)}
        small = {name: value for name, value in (("screen_trials", 10), ("max_trials", 20), ("confirm_trials", 20))
                 if name in fields}
        return plan(dataclasses.replace(config, **small), *args, **kwargs)
    return wrapper


def _plan_mapping(config) -> dict:
    from simdesign.studies.rates.config import read_config_mapping

    return config if isinstance(config, dict) else read_config_mapping(Path(config), "plan config")


def _is_judge_plan(config) -> bool:
    if hasattr(config, "plans"):
        return True
    return isinstance(config, (dict, str, Path)) and "judge_plan" in _plan_mapping(config)


@pytest.mark.slow
@pytest.mark.parametrize("page", [path for path in EXAMPLE_PAGES if python_examples(path)],
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_python_examples_run(page, tmp_path, monkeypatch):
    # A page's blocks build on each other, so they run in order in one namespace, in a scratch folder that
    # sees the checkout's configs/ and examples/ (the paths the pages use) and keeps what they write.
    for name in ("configs", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(simdesign, "simulate", _small(simdesign.simulate, trials=EXAMPLE_TRIALS))
    monkeypatch.setattr(simdesign, "check_model", _small(simdesign.check_model, trials=EXAMPLE_TRIALS))
    monkeypatch.setattr(simdesign, "plan", _small_plan(simdesign.plan))
    namespace: dict = {}
    for number, code in enumerate(python_examples(page), 1):
        try:
            exec(compile(code, f"{page.name}, example {number}", "exec"), namespace)
        except Exception as error:  # noqa: BLE001 - name the page and the example
            pytest.fail(f"{page.relative_to(ROOT)}, Python example {number} failed: {type(error).__name__}: {error}")


@pytest.mark.slow
def test_the_site_builds_in_strict_mode(tmp_path):
    # Strict: a broken link, a missing anchor, a page outside the navigation or an API name that does not
    # resolve fails the build.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    for page in ("reference/cli/index.html", "reference/config/index.html", "reference/api/index.html"):
        assert (tmp_path / "site" / page).stat().st_size > 10_000, page
    assert "simdesign run</code>" in (tmp_path / "site" / "reference/cli/index.html").read_text()
    # offline: no page loads web fonts (issue 39; mkdocs.yml theme.font: false)
    pages = [page for page in (tmp_path / "site").rglob("*.html") if "fonts.googleapis.com" in page.read_text()]
    assert not pages, pages[:3]


def test_the_site_loads_no_web_fonts():
    # Material loads Roboto from Google Fonts unless theme.font is false: the site would need the network
    import yaml

    class Loader(yaml.SafeLoader):  # mkdocs.yml may hold !!python/name tags (the theme's extensions)
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    assert yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)["theme"]["font"] is False


def test_the_readmes_first_recipe_runs_every_test_it_names(monkeypatch):
    # issue 39: the recipe paired art_block with a 1-block design, where every one of its tests is degenerate
    # and the table printed a rate of 0.000 as if it were measured
    monkeypatch.setattr(simdesign, "simulate", _small(simdesign.simulate, trials=4, jobs=1, progress=False))
    namespace: dict = {}
    monkeypatch.setattr("builtins.print", lambda *args, **kwargs: None)
    exec(compile(python_examples(ROOT / "README.md")[0], "README.md, example 1", "exec"), namespace)
    result = namespace["result"]
    assert result.failures().empty, result.failures()
    assert not result.table("type1").apply(lambda column: column.str.contains("every test")).any().any()


def test_every_how_to_opens_with_a_short_answer():
    # issue 39: the pages are accurate but dense; each opens with the answer, in a few lines, before its detail
    for path in HOW_TO:
        lines = path.read_text().splitlines()
        body = [line for line in lines[1:] if line.strip()]
        assert lines[0].startswith("# ") and body[0].startswith("**In short:**"), path.name
        paragraph = lines[lines.index(body[0]):]
        paragraph = paragraph[:paragraph.index("")] if "" in paragraph else paragraph
        assert len(paragraph) <= 3, (path.name, paragraph)
