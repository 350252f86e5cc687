"""Contract tests over every registry: analyses, design kinds and estimands.

A new entry in any registry is picked up here without editing this file (except a design
kind, which must add one small example to EXAMPLE_DESIGNS: the test fails until it does).
"""
import math

import numpy as np
import pandas as pd
import pytest

from simdesign.analyses import ANALYSES, run_analysis, system_pairs
from simdesign.analyses.base import ERROR, FAILURES, OK, SINGULAR
from simdesign.simulation.config import EFFECT_ESTIMANDS, NULL_ESTIMANDS
from simdesign.core.designs import (DESIGN_KINDS, BlockDesign, OverlapDesign, PoolDesign, design_from_mapping, design_to_mapping,
                               shape_of_row)
from simdesign.core.errors import ConfigError
from simdesign.model import load_model
from simdesign.simulation.summary import DESIGN_COLUMNS, ESTIMANDS, estimand_names, rejections, summarise_group

STATUSES = {OK, SINGULAR} | set(FAILURES)
EXAMPLE_DESIGNS = {"block": BlockDesign(4, 5, 2), "pool": PoolDesign(docs=12, annotators=6, judgements_per_output=2),
                   "overlap": OverlapDesign(shared_docs=2, unique_docs_per_annotator=3, annotators=3)}


# ---------------------------------------------------------------------------------------------------------------
# Analyses


def _r_missing() -> str | None:
    from simdesign.analyses.rsession import r_available

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
    defaults = {option: default for option, (_, default) in info.options.items()}
    if "resamples" in defaults:  # keep resampling tests fast; the statistics are not checked here
        defaults["resamples"] = 199
    allowed_structures = info.options.get("structure", ((),))[0]
    if isinstance(allowed_structures, tuple) and "intercepts" in allowed_structures:
        defaults["structure"] = "intercepts"  # random slopes made R's clmm take minutes on this tiny design
    result = run_analysis(info, small_study, np.random.default_rng(1), defaults)
    n_pairs = len(system_pairs(small_study.n_systems))
    assert np.shape(result.estimate) == np.shape(result.p_value) == np.shape(result.status) == (n_pairs,)
    assert set(result.status) <= STATUSES, result.message
    assert ERROR not in set(result.status), result.message  # a small regular design must not crash a test
    failed = np.isin(result.status, list(FAILURES))
    p_value = np.asarray(result.p_value, dtype=float)
    assert np.isnan(p_value[failed]).all()  # a failed fit is never a p-value
    assert ((p_value[~failed] >= 0) & (p_value[~failed] <= 1)).all()
    assert math.isfinite(result.fit_seconds) and isinstance(info.description, str) and info.description
    assert info.chunk_trials >= 1


# ---------------------------------------------------------------------------------------------------------------
# Design kinds


def test_every_design_kind_has_an_example_here():
    assert set(EXAMPLE_DESIGNS) == set(DESIGN_KINDS)


@pytest.mark.parametrize("kind", sorted(DESIGN_KINDS))
def test_every_design_kind_keeps_its_contract(kind):
    design = EXAMPLE_DESIGNS[kind]
    cls = DESIGN_KINDS[kind]
    assert type(design) is cls and design.kind == kind and design.label.startswith(kind)
    assert design_from_mapping(design_to_mapping(design)) == design
    assert set(design.columns()) == set(DESIGN_COLUMNS) - {"judgements"}
    assert design.shape in cls.shapes and shape_of_row(design.columns()) == design.shape
    assert isinstance(cls.kind_label, str) and cls.kind_label and design.describe()
    assert len(cls.plot_style) == 2
    assignment = design.assign(np.random.default_rng(3))
    assert len(assignment.annotator) == len(assignment.document) == len(assignment.block) == design.pairs
    assert assignment.n_annotators == design.annotators == len(np.unique(assignment.annotator))
    assert assignment.n_documents == design.docs == len(np.unique(assignment.document))
    # documents get judgements_per_output distinct annotators (on average where documents differ, as in
    # an overlap design, whose shared documents have more)
    per_document = pd.Series(assignment.annotator).groupby(assignment.document).nunique()
    assert per_document.mean() == pytest.approx(design.judgements_per_output)
    assert (per_document == design.judgements_per_output).all() or per_document.nunique() > 1
    loads = np.bincount(assignment.annotator) * 5
    assert design.judgements(5) == design.pairs * 5 == loads.sum()
    assert design.max_judgements_per_annotator(5) == loads.max()
    assert design.judgements_per_annotator(5) == pytest.approx(loads.mean()) or cls.has_blocks
    assert (assignment.block >= 0).all() == cls.has_blocks


@pytest.mark.parametrize("kind", sorted(DESIGN_KINDS))
def test_every_design_kinds_planner_hook_makes_designs_of_its_kind(kind):
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


def test_config_estimand_lists_are_the_registrys():
    assert NULL_ESTIMANDS == estimand_names(is_null=True)
    assert EFFECT_ESTIMANDS == estimand_names(is_null=False)


@pytest.mark.parametrize("name", sorted(ESTIMANDS))
def test_every_estimand_is_a_rate_with_its_interval(name, table):
    info = ESTIMANDS[name]
    assert info.under in ("null", "effect", "both") and info.description
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
    """Every analysis is defined once: re-registering a name (e.g. to add an option) is an error."""
    from simdesign.analyses import register

    for name in ("ttest_doc", "wilcoxon_doc"):
        before = ANALYSES[name]
        with pytest.raises(ValueError, match="registered twice"):
            register(before)
        assert ANALYSES[name] is before and "threshold" in before.options
