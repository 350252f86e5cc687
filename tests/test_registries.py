"""Contract tests over every registry: analyses, design kinds and estimands.

A new entry in any registry is picked up here without editing this file (except a design
kind, which must add one small example to EXAMPLE_DESIGNS: the test fails until it does).
The estimands of every study kind are in one registry (simdesign.core.estimands); the modules
that register them are imported here, and the test-only ones of tests/plugin_estimand.py too.
"""
import ast
import contextlib
import dataclasses
import importlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simdesign.significance import ANALYSES
from simdesign.significance.base import OK, SINGULAR
import plugin_design_kind
import simdesign
import plugin_estimand  # noqa: F401 -- registers the test-only estimands
import simdesign.studies.metrics.metric_validation  # noqa: F401 -- each study kind's module registers its estimands
import simdesign.studies.panels.panel_summary  # noqa: F401
import simdesign.studies.sweep  # noqa: F401
from simdesign.core.estimands import ESTIMANDS, REGISTERED_IN
from simdesign.stats.reliability import UndefinedReliability
from simdesign.core.designs import DESIGN_KINDS, BattleDesign, BlockDesign, OverlapDesign, PoolDesign, design_from_mapping
from simdesign.core.errors import ConfigError
from simdesign.testing import check_analysis, check_design_kind, check_estimand
from simdesign.model import load_model
from simdesign.studies.rates.summary import estimand_names, rejections, summarise_group, rates_of_a_test

EXAMPLE_DESIGNS = {"block": BlockDesign(4, 5, 2), "pool": PoolDesign(docs=12, annotators=6, judgements_per_output=2),
                   "overlap": OverlapDesign(shared_docs=2, unique_docs_per_annotator=3, annotators=3),
                   "battles": BattleDesign(battles=60, prompts=20, judges=5),
                   "ring": plugin_design_kind.EXAMPLE}  # the test-only kind, registered only while a test runs


# ---------------------------------------------------------------------------------------------------------------
# Analyses


def _r_missing() -> str | None:
    from simdesign.significance.rsession import r_available

    ok, message = r_available()
    return None if ok else message


@pytest.fixture(scope="module")
def small_study():
    model = load_model("coherence")
    return model.sample(BlockDesign(4, 5, 2), np.random.default_rng(7), "fitted")


@pytest.mark.parametrize("name", [pytest.param(name, marks=[pytest.mark.needs_r, pytest.mark.slow]) if ANALYSES[name].needs == "R"
                                  else name for name in sorted(ANALYSES)])
def test_every_analysis_returns_one_result_per_pair(name, small_study):
    info = ANALYSES[name]
    if info.needs == "R" and (why := _r_missing()):
        pytest.skip(f"{name} needs R: {why}")
    allowed_structures = info.options.get("structure", ((),))[0]
    if isinstance(allowed_structures, tuple) and "intercepts" in allowed_structures:
        # random slopes made R's clmm take minutes on this tiny design: the check runs its default otherwise
        info = dataclasses.replace(info, options={**info.options,
                                                  "structure": (allowed_structures, "intercepts")})
    # the checks a plug-in author runs too (simdesign.testing); a test of pairwise preferences gets its own study
    check_analysis(info, None if info.takes_preferences else small_study)


# ---------------------------------------------------------------------------------------------------------------
# Design kinds


# Test-only kinds (registered from a test module, and only while a test runs): checked like the package's.
TEST_ONLY_KINDS = {"ring": plugin_design_kind.ring_kind}
KINDS = sorted(set(DESIGN_KINDS) | set(TEST_ONLY_KINDS))


@pytest.fixture
def kind_registered(kind):
    """The parametrised kind, registered for the test if it is a test-only one."""
    with TEST_ONLY_KINDS[kind]() if kind not in DESIGN_KINDS else contextlib.nullcontext():
        yield


def test_every_design_kind_has_an_example_here():
    assert set(EXAMPLE_DESIGNS) == set(DESIGN_KINDS) | set(TEST_ONLY_KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_every_design_kind_keeps_its_contract(kind, kind_registered):
    design = EXAMPLE_DESIGNS[kind]
    check_design_kind(design)  # the checks a plug-in author runs too (simdesign.testing): columns, assignment...
    cls = DESIGN_KINDS[kind]
    assignment = design.assign(np.random.default_rng(3))
    # documents get judgements_per_output distinct annotators (on average where documents differ, as in
    # an overlap design, whose shared documents have more)
    per_document = pd.Series(assignment.annotator).groupby(assignment.document).nunique()
    assert (per_document == design.judgements_per_output).all() or per_document.nunique() > 1
    # a judgement shows every output of its document (5 systems), or two under a design of comparisons (battles)
    outputs_each = 2 if getattr(cls, "only_covering", None) == "pair" else 5
    loads = np.bincount(assignment.annotator, minlength=assignment.n_annotators) * outputs_each
    assert design.judgements_per_annotator(5) == pytest.approx(loads.mean()) or cls.has_blocks


@pytest.mark.parametrize("kind", KINDS)
def test_every_design_kinds_planner_hook_makes_designs_of_its_kind(kind, kind_registered):
    cls = DESIGN_KINDS[kind]
    if not getattr(cls, "search_shapes", ()):
        pytest.skip(f"{kind} designs are planned only through 'search.designs'")
    grid = lambda key, default: default  # noqa: E731 -- every 'search' key at the kind's defaults
    for shape in cls.search_shapes:
        designs = cls.search_designs(shape, 100, grid)
        assert designs and all(type(d) is cls and d.docs == 100 for d in designs), shape
        assert all(d.shape in cls.plan_colours for d in designs)  # the plan figure has a colour for each


def test_a_design_mapping_with_a_wrong_kind_or_field_names_them():
    with pytest.raises(ConfigError, match="'kind' field must be one of"):
        design_from_mapping({"kind": "lattice"})
    with pytest.raises(ConfigError, match="unknown: \\['blocks'\\]"):
        design_from_mapping({"kind": "pool", "docs": 4, "annotators": 2, "judgements_per_output": 1, "blocks": 2})


# ---------------------------------------------------------------------------------------------------------------
# Estimands


def _rows(p_values: np.ndarray, statuses: np.ndarray, estimates: np.ndarray, true_diff) -> pd.DataFrame:
    """Stored rows of one (design, test): trials x pairs, sorted by trial and pair."""
    trials, n_pairs = p_values.shape
    singular = np.where(np.arange(trials) % 2 == 0, SINGULAR, OK)
    return pd.DataFrame({
        "trial": np.repeat(np.arange(trials), n_pairs), "pair": np.tile(np.arange(n_pairs), trials),
        "p_value": p_values.ravel(), "status": statuses.ravel(), "estimate": estimates.ravel(),
        "true_diff": np.tile(true_diff, trials), "fit_status": np.repeat(singular, n_pairs)})


@pytest.fixture
def table():
    rng = np.random.default_rng(4)
    p_values = rng.random((40, 3)) * 0.2
    statuses = np.where(rng.random((40, 3)) < 0.1, "not_converged", OK).astype(object)
    p_values[statuses != OK] = np.nan
    estimates = rng.normal(size=(40, 3))
    return _rows(p_values, statuses, estimates, [0.5, -0.5, 0.0])


def test_the_rate_study_has_the_rates_of_the_paper_under_each_hypothesis():
    # written out here (not read from the registry): the summary's rows of a test under each hypothesis
    assert estimand_names(is_null=True) == ("type1", "familywise", "failure_rate", "singular_rate")
    assert estimand_names(is_null=False) == ("power", "power_fitted", "type_s", "failure_rate", "singular_rate")
    assert estimand_names(is_null=True, random_effects=False) == ("type1", "familywise", "failure_rate")


@pytest.mark.parametrize("name", sorted(ESTIMANDS))
def test_every_estimand_keeps_its_contract(name):
    info = ESTIMANDS[name]
    check_estimand(info)  # the checks a plug-in author runs too (simdesign.testing)
    # registered from a module that computes it: the one module its name is written in (see below)
    module = REGISTERED_IN[name]
    assert module in {"plugin_estimand"} or module.startswith("simdesign."), module
    source = Path(importlib.import_module(module).__file__).read_text()
    assert f'"{name}"' in source


@pytest.mark.parametrize("name", sorted(info.name for info in rates_of_a_test()))
def test_every_rate_of_a_test_is_a_rate_with_its_interval(name, table):
    info = ESTIMANDS[name]
    assert info.under in ("null", "effect", "both") and info.unit == "rate"
    computed = info.compute(rejections(table, 0.05), table)
    assert computed is not None
    rate, failures, note = computed
    assert 0 <= rate.ci_low <= rate.rate <= rate.ci_high <= 1 and rate.mcse > 0 and rate.n_tests > 0
    assert failures == int((table["status"] != OK).sum() if info.under != "effect"
                           else (table.loc[table["true_diff"] != 0, "status"] != OK).sum())
    assert isinstance(note, str)
    for is_null in (True, False):
        listed = {row["estimand"] for row in summarise_group(table, 0.05, is_null, random_effects=True)}
        assert (name in listed) == info.applies(is_null, random_effects=True)


@pytest.fixture(scope="module")
def block_study():
    model = load_model("coherence")
    return model.sample(BlockDesign(4, 5, 2), np.random.default_rng(7), "fitted")


@pytest.mark.parametrize("name", sorted(name for name, info in ESTIMANDS.items() if info.requestable))
def test_every_requestable_estimand_gives_one_value_per_trial_and_a_mean_with_its_interval(name, block_study):
    info = ESTIMANDS[name]
    values = []
    for trial in range(12):
        try:
            values.append(float(info.per_trial(block_study, np.random.default_rng(trial))))
        except UndefinedReliability:
            values.append(float("nan"))
    assert np.isfinite(values).all(), values  # four blocks of two annotators: every built-in one is defined
    group = pd.DataFrame({"trial": range(12), "estimate": values, "status": OK, "message": ""})
    row = info.summarise(group)
    assert row["rate"] == pytest.approx(np.mean(values)) and row["ci_low"] <= row["rate"] <= row["ci_high"]
    assert row["n_tests"] == 12 and row["n_failed"] == 0


def test_estimand_values_against_hand_counts(table):
    rows = {r["estimand"]: r for r in summarise_group(table, 0.05, is_null=False, random_effects=True)}
    ok = (table["status"] == OK).to_numpy().reshape(40, 3)
    reject = (table["p_value"].to_numpy().reshape(40, 3) < 0.05) & ok
    sign = np.sign(table["estimate"].to_numpy().reshape(40, 3))
    right = reject[:, :2] & (sign[:, :2] == [1, -1])
    assert rows["power"]["rate"] == pytest.approx(right.sum() / 80)
    assert rows["power_fitted"]["rate"] == pytest.approx(right.sum() / ok[:, :2].sum())
    assert rows["type_s"]["rate"] == pytest.approx((reject[:, :2] & (sign[:, :2] == [-1, 1])).sum() / 80)
    assert rows["failure_rate"]["rate"] == pytest.approx(1 - ok.mean())
    assert rows["singular_rate"]["rate"] == pytest.approx(0.5)
    null = {r["estimand"]: r for r in summarise_group(table, 0.05, is_null=True)}
    assert null["type1"]["rate"] == pytest.approx(reject.mean())
    assert null["familywise"]["rate"] == pytest.approx(reject.any(axis=1).mean())
    assert "singular_rate" not in null


def test_the_registry_refuses_a_second_registration_of_a_name():
    """Every analysis is defined once: registering another entry under a name (e.g. to add an option) is an
    error; the same entry again (a reloaded module) is harmless (issue 40)."""
    import dataclasses

    from simdesign.significance import register

    for name in ("ttest_doc", "wilcoxon_doc"):
        before = ANALYSES[name]
        changed = dataclasses.replace(before, options={**before.options, "extra": 1})
        with pytest.raises(ConfigError, match=f"The test '{name}' is registered already"):
            register(changed)
        assert register(before) is before and ANALYSES[name] is before and "threshold" in before.options


# ---------------------------------------------------------------------------------------------------------------
# No estimand special-cased by name

PACKAGE = Path(simdesign.__file__).resolve().parent
# Modules that write an estimand's name although they do not register it, each with why. The list may only
# shrink: an entry no longer needed fails the test, and a name written anywhere else fails it too.
ALLOWED_MENTIONS = {
    # the plan table's own columns, named after the rates they hold (renaming them changes the plan's outputs)
    "simdesign/planning/plan_report.py": {"power", "type1"},
    "simdesign/planning/plan_search.py": {"power", "type1"},
    "simdesign/planning/plan_views.py": {"power", "type1"},
    "simdesign/cli/plan.py": {"power"},  # the plan table's columns it prints
    "simdesign/planning/replication_plan.py": {"power"},  # the plan table's column it renames to 'probability'
    "simdesign/planning/judge_plan.py": {"power"},  # the judge plan's table column (as the plan table's), drawn
    # the judge study's rows: its interval coverage of the true system means, a column of its own table (the
    # metric-validation estimand's homonym), and a design's 'coverage' field it refuses
    "simdesign/studies/judge/judge_study.py": {"coverage"},
    # the predictive check's statistics of real data (a table of its own, compared with simulated studies)
    "simdesign/realdata/check.py": {"krippendorff_alpha", "shr"},
    "simdesign/realdata/rank_check.py": {"krippendorff_alpha", "shr"},
    # a design kind's registration: the estimands its configs refuse (refused_estimands); and the design field
    # 'coverage' (partial coverage: which outputs exist), a homonym of the metric-validation estimand
    "simdesign/core/designs.py": {"shr", "coverage"},
    # homonyms: the word means something else there. Spearman's rho as a correlation method, and the panel
    # study's per-trial column of it (from which its 'spearman' estimand is the mean)
    "simdesign/api.py": {"spearman"},
    "simdesign/stats/metric_comparison.py": {"spearman"},
    "simdesign/stats/metric_correlation.py": {"spearman"},
    "simdesign/studies/metrics/metric_validation.py": {"spearman"},
    "simdesign/studies/panels/panel_study.py": {"spearman"},
    # a metric's fields (MetricSpec.system_correlation, .summary_correlation), which its estimands estimate
    "simdesign/model/metric.py": {"system_correlation", "summary_correlation"},
    "simdesign/studies/metrics/metric_power.py": {"system_correlation"},
    # the coverage column of the pilot's parameter-recovery table
    "simdesign/realdata/fit.py": {"coverage"},
}
FOLDED_METHODS = {"lower", "upper", "strip", "casefold", "title", "capitalize"}


def _constant(node: ast.AST):
    """A string (folded) or number a source spells out, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    return _folded(node)


def _folded(node: ast.AST) -> str | None:
    """The text a string expression spells out from constants alone: a constant, constants joined with ``+``,
    an f-string, ``%``, ``.format``, ``.replace`` or ``sep.join([...])`` of them, or a case change of one; None
    for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.JoinedStr):
        parts = [_folded(value.value if isinstance(value, ast.FormattedValue) else value) for value in node.values]
        return None if None in parts else "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):  # "%s%s" % ("ty", "pe1")
        template = _folded(node.left)
        values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        parts = [_constant(value) for value in values]
        if template is not None and None not in parts:
            try:
                return template % tuple(parts)
            except (TypeError, ValueError):
                return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = _folded(node.func.value)
        if owner is not None and node.func.attr in FOLDED_METHODS and not node.args:
            return getattr(owner, node.func.attr)()
        if owner is not None and node.func.attr in ("format", "replace") and not node.keywords:
            parts = [_constant(arg) for arg in node.args]
            if None not in parts:
                try:
                    return getattr(owner, node.func.attr)(*parts)
                except (IndexError, KeyError, TypeError, ValueError):
                    return None
        if owner is not None and node.func.attr == "join" and len(node.args) == 1 \
                and isinstance(node.args[0], (ast.List, ast.Tuple)):
            parts = [_folded(element) for element in node.args[0].elts]
            return None if None in parts else owner.join(parts)
    return None


def estimand_mentions(source: str) -> dict[str, list[int]]:
    """Registered estimand names (any letter case) the source spells out as strings -> their lines."""
    found: dict[str, list[int]] = {}
    for node in ast.walk(ast.parse(source)):
        text = _folded(node)
        if text is not None and text.lower() in ESTIMANDS:
            found.setdefault(text.lower(), set()).add(node.lineno)
    return {name: sorted(lines) for name, lines in found.items()}


def test_the_mention_finder_sees_through_rewording():
    source = ('x = "singular" + "_rate"\ny = f"{\'type\'}1"\nz = "_".join(["pow" + "er", "fitted"])\n'
              'w = "Failure_Rate".lower()\nv = ("ty" "pe_s")\nu = "power (right direction)"\n'
              't = "%s_%s" % ("familywise", "x")[:10]\ns = "type{}".format(1)\nr = "shr".upper()\n'
              'q = "fami" "lywise"\np = "krippendorff-alpha".replace("-", "_")\n')
    assert estimand_mentions(source) == {"singular_rate": [1], "type1": [2, 8], "power_fitted": [3], "power": [3],
                                         "failure_rate": [4], "type_s": [5], "familywise": [7, 10],
                                         "shr": [9], "krippendorff_alpha": [11]}


def test_no_module_special_cases_an_estimand_by_name():
    """An estimand's name is written only in the module that registers it; everything else asks the registry.

    Read from the source (folding string concatenations, f-strings, joins and case changes), so a rewording
    of a comparison does not hide it. Names of test-only estimands count too.
    """
    problems, used = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).as_posix()
        module = relative[:-3].replace("/", ".").removesuffix(".__init__")
        for name, lines in estimand_mentions(path.read_text()).items():
            if REGISTERED_IN[name] == module:
                continue
            if name in ALLOWED_MENTIONS.get(relative, set()):
                used.add((relative, name))
                continue
            problems.append(f"{relative}:{lines} writes the estimand {name!r} (registered in {REGISTERED_IN[name]}); "
                            "ask simdesign.core.estimands (its roles, unit, label) or use the registered entry")
    assert not problems, "\n".join(problems)
    stale = {(module, name) for module, names in ALLOWED_MENTIONS.items() for name in names} - used
    assert not stale, f"ALLOWED_MENTIONS entries no longer needed (remove them): {sorted(stale)}"


TINY_STUDIES = {
    "rates": {"name": "r", "model": "coherence", "effect": "zero", "tests": ["ttest_doc", "clmm_native"],
              "trials": 6, "seed": 2, "estimands": ["krippendorff_alpha", "shr"],
              "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 2, "annotators_per_block": 2}]},
    "replication": {"name": "rep", "model": "coherence", "effect": "fitted", "tests": ["ttest_doc"], "trials": 6,
                    "seed": 3, "replication": {"tolerance": 0, "kappa": True},
                    "designs": [{"kind": "overlap", "shared_docs": 4, "unique_docs_per_annotator": 2,
                                 "annotators": 3}]},
    "panels": {"name": "ps", "model": "coherence", "docs": 4, "trials": 4, "subsamples": 2, "bootstrap": 10,
               "seed": 3, "panels": {"expert": {"annotators": 2, "judge": "all"},
                                     "crowd": {"pool": 10, "per_output": 4}}},
    "metric-validation": {"name": "mv", "model": "coherence", "population": {"kind": "normal"},
                          "metric": {"summary_correlation": 0.5, "system_correlation": 0.8},
                          "second_metric": {"summary_correlation": 0.5, "system_correlation": 0.6},
                          "heldout": True, "summary_intervals": True, "systems": [5], "documents": [10],
                          "methods": ["pearson"], "trials": 4, "bootstrap_resamples": 20,
                          "permutation_resamples": 20, "seed": 3},
    "sweep": {"name": "sw", "model": "coherence", "tests": ["ttest_doc"], "trials": 6, "seed": 2,
              "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 2, "annotators_per_block": 2}],
              "sweep": {"effect": ["zero", 0.5]}},
}


@pytest.mark.slow  # a tiny study of every built-in kind: about half a minute
def test_every_study_kind_reports_only_its_registered_estimands_and_each_of_them(tmp_path):
    reported: dict[str, set] = {}
    for kind, mapping in TINY_STUDIES.items():
        result = simdesign.simulate(mapping, out_dir=tmp_path / kind, jobs=1, backend="threading")
        summary = result.summary()
        names = set(summary["estimand"])
        registered = {info.name for info in ESTIMANDS.values() if kind in info.study_kinds}
        assert names <= registered, (kind, sorted(names - registered))
        reported.setdefault(kind, set()).update(names)
    # the panel study reports its tests' rates in a table of their own (significance.csv): not run here
    not_run = {"panels": {"type1", "power", "type_s"}}
    for info in ESTIMANDS.values():
        for kind in set(info.study_kinds) & set(TINY_STUDIES):
            if info.name in not_run.get(kind, ()) or info.name in {"mean_score"}:  # test-only: tests/test_plugins.py
                continue
            # the null run of a study has no power rows, an effect run no type I error: one of them suffices
            assert info.name in reported[kind] or any(
                info.name in reported[other] for other in info.study_kinds if other in reported), (kind, info.name)
