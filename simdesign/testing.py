"""Contract checks a plug-in author can run on their own annotation method, design kind, test, estimand and study
kind, as the project runs them on its own (in the spirit of scikit-learn's ``check_estimator``).

Each ``check_*`` function raises ``AssertionError`` naming what is broken and returns None when the entry keeps
the contract. :func:`parametrize_with_checks` turns the registered entries (plug-ins included) into a pytest
parametrisation, one test per (entry, check)::

    # test_my_plugin.py
    import my_plugin  # registers its method, design kind and test
    from simdesign.testing import parametrize_with_checks

    @parametrize_with_checks()
    def test_simdesign_contract(entry, check):
        check(entry)

A design kind is checked on an example design: give its class an ``example()`` classmethod returning a small
design (the built-in kinds have one); a kind without it is skipped, saying so.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from simdesign.significance import ANALYSES, run_analysis, system_pairs
from simdesign.significance.base import ERROR, FAILURES, OK, SINGULAR
from simdesign.core.designs import DESIGN_KINDS, design_from_mapping, design_to_mapping, shape_of_row
from simdesign.core.errors import ConfigError
from simdesign.core.estimands import ESTIMANDS, ROLES, UNITS, role_holder
from simdesign.core.seeds import data_rng, helper_rng
from simdesign.methods import all_methods, get_method, split_result_label
from simdesign.runner.study import REGISTERED as STUDY_KINDS
from simdesign.runner.study import StudyKind

STATUSES = {OK, SINGULAR} | set(FAILURES)


def _models():
    """Models to sample methods from: the coherence preset (Likert and Rank), the same with pairwise preferences
    (every value assumed), and a small rank-only model."""
    import dataclasses

    from simdesign.model import RankOnlyModel, load_model

    rank_only = RankOnlyModel("toy", ("a", "b", "c"), [0.0, 0.5, 1.0], np.eye(2) * 0.2, np.eye(2) * 0.1)
    coherence = load_model("coherence")
    return [coherence, dataclasses.replace(coherence, preferences={}), rank_only]


def _check_judgements(method, model, data, design) -> None:
    """One sampled study's judgements: one value per output (integers), or a pair-covering method's verdicts
    (one per row and pair of systems, 1 / 0.5 / 0 or NaN where not shown), and what an annotator sees (items)."""
    rows, n_systems = design.pairs, model.n_systems
    assert data.scores.shape == (rows, n_systems), f"responses of shape {data.scores.shape}"
    judged = design.judgements(n_systems)
    if method.covers != "pair":
        assert data.scores.dtype.kind == "i", "responses must be integers"
        assert method.items(judged, n_systems, design, model) == (rows if method.covers == "ranking" else judged)
        return
    n_pairs = n_systems * (n_systems - 1) // 2
    assert data.preferences is not None and data.preferences.shape == (rows, n_pairs), "one verdict per row and pair"
    shown = data.preferences[~np.isnan(data.preferences)]
    assert set(np.unique(shown)) <= {0.0, 0.5, 1.0}, "verdicts are 1, 0.5 (a tie) or 0"
    comparisons = data.comparisons()
    assert (comparisons["first"] < comparisons["second"]).all() and comparisons["outcome"].size == shown.size
    assert method.items(judged, n_systems, design, model) == shown.size, "items: the comparisons shown"
    assert len(method.study_table(data)) == shown.size, "the study's table: one comparison a row"


def check_method(method, models=None) -> None:
    """An annotation method: found by name, its own stream and label suffix, responses of the right shape from
    every model that can generate it (and a refusal naming it from the others), its steps functions.

    Parameters
    ----------
    method : AnnotationMethod
        Registered.
    models : sequence, optional
        Models to sample from (default: the coherence preset and a small rank-only model); at least one
        must generate the method.
    """
    from simdesign.core.designs import BlockDesign

    assert get_method(method.name) is method, f"{method.name!r} is not the registered method of that name"
    assert method.label and method.value_column and method.value_name, "label, value_column, value_name needed"
    suffixes = [m.stream_suffix for m in all_methods()]
    assert len(set(suffixes)) == len(suffixes), f"stream suffixes are not distinct: {suffixes}"
    plain = data_rng(7, "d", 3).random(2).tolist()
    assert (plain == data_rng(7, "d", 3, method.stream_suffix).random(2).tolist()) == method.is_default
    label = method.result_label("ttest_doc")
    assert split_result_label(label) == ("ttest_doc", method.name), f"result label {label!r} does not round-trip"
    design = BlockDesign(4, 3, 2)
    models = list(models) if models is not None else _models()
    generating = [model for model in models if method.can_generate(model)]
    assert generating, f"no model given generates {method.name!r}"
    for model in generating:
        data = model.sample(design, helper_rng("testing/check_method"), method=method.name)
        _check_judgements(method, model, data, design)
    for model in models:
        if not method.can_generate(model):
            try:
                model.sample(design, helper_rng("testing/check_method"), method=method.name)
            except ConfigError as error:
                assert method.name in str(error), f"the refusal does not name {method.name!r}: {error}"
            else:
                raise AssertionError(f"{model.name} cannot generate {method.name!r} but sampled it")
    for role, step in method.steps.items():
        assert callable(method.step(role)), f"step {role!r} is not a function: {step!r}"


def check_design_kind(design) -> None:
    """A design kind, on an example design: its mapping round-trips, its columns and shape, and its assignment
    (every assigned pair, documents and annotators counted, loads and judgements agreeing)."""
    cls = DESIGN_KINDS.get(design.kind)
    assert type(design) is cls, f"{design!r} is not of the registered kind {design.kind!r}"
    assert design.label.startswith(design.kind), f"label {design.label!r} does not start with {design.kind!r}"
    assert design_from_mapping(design_to_mapping(design)) == design, "the design's mapping does not round-trip"
    from simdesign.studies.rates.summary import DESIGN_COLUMNS

    assert set(design.columns()) == set(DESIGN_COLUMNS) - {"judgements"}, f"columns {sorted(design.columns())}"
    assert design.shape in cls.shapes and shape_of_row(design.columns()) == design.shape, "shape"
    assert isinstance(cls.kind_label, str) and cls.kind_label and design.describe(), "kind_label and describe()"
    assert len(cls.plot_style) == 2, "plot_style needs a marker and a line style"
    assignment = design.assign(helper_rng("testing/check_design_kind"))
    n = design.pairs
    assert len(assignment.annotator) == len(assignment.document) == len(assignment.block) == n, "assignment size"
    assert (assignment.block >= 0).all() == cls.has_blocks, "blocks: has_blocks and the assignment disagree"
    if getattr(cls, "only_covering", None) == "pair":
        _check_battle_kind(design, assignment)
        return
    assert assignment.n_annotators == design.annotators == len(np.unique(assignment.annotator)), "annotators"
    assert assignment.n_documents == design.docs == len(np.unique(assignment.document)), "documents"
    per_document = pd.Series(assignment.annotator).groupby(assignment.document).nunique()
    assert math.isclose(per_document.mean(), design.judgements_per_output), "judgements per output"
    loads = np.bincount(assignment.annotator) * 5
    systems = tuple(f"s{k}" for k in range(5))
    assert design.judgements(5) == design.judgements(5, systems) == n * 5 == loads.sum(), "judgements"
    assert design.max_judgements_per_annotator(5) == loads.max(), "max_judgements_per_annotator"


def _check_battle_kind(design, assignment) -> None:
    """A design whose every judgement is one pair drawn at random (Arena battles): its pools bound the ids drawn,
    and a judgement shows two outputs."""
    assert assignment.n_annotators == design.annotators and assignment.annotator.max() < design.annotators, \
        "judges: ids within the pool"
    assert assignment.n_documents == design.docs and assignment.document.max() < design.docs, \
        "prompts: ids within the pool"
    assert design.judgements(5) == 2 * design.pairs, "judgements: two outputs per comparison"


def _small_study(preferences: bool = False):
    import dataclasses

    from simdesign.core.designs import BlockDesign
    from simdesign.methods import all_methods
    from simdesign.model import load_model

    if not preferences:
        return load_model("coherence").sample(BlockDesign(4, 5, 2), helper_rng("testing/small_study"), "fitted")
    # a test of pairwise preferences gets a pairwise study (every value of the model's preferences assumed)
    method = next(m for m in all_methods() if m.covers == "pair")
    model = dataclasses.replace(load_model("coherence"), preferences={})
    return model.sample(BlockDesign(4, 5, 2), helper_rng("testing/small_study"), "fitted", method=method)


def check_analysis(info, study=None) -> None:
    """A test (analysis): one estimate, p-value and status per system pair on a small regular study, statuses
    from the known ones, no crash, a failed fit never a p-value, p-values in [0, 1]."""
    study = _small_study(bool(getattr(info, "takes_preferences", False))) if study is None else study
    defaults = {option: default for option, (_, default) in info.options.items()}
    if "resamples" in defaults:  # keep resampling tests fast: the statistics are not checked here
        defaults["resamples"] = 199
    result = run_analysis(info, study, helper_rng("testing/check_analysis"), defaults)
    n_pairs = len(system_pairs(study.n_systems))
    assert np.shape(result.estimate) == np.shape(result.p_value) == np.shape(result.status) == (n_pairs,), \
        f"{info.name}: one estimate, p-value and status per pair ({n_pairs})"
    assert set(result.status) <= STATUSES, f"{info.name}: unknown statuses {set(result.status) - STATUSES}"
    assert ERROR not in set(result.status), f"{info.name} crashed on a small regular design: {result.message}"
    failed = np.isin(result.status, list(FAILURES))
    p_value = np.asarray(result.p_value, dtype=float)
    assert np.isnan(p_value[failed]).all(), f"{info.name}: a failed fit turned into a p-value"
    assert ((p_value[~failed] >= 0) & (p_value[~failed] <= 1)).all(), f"{info.name}: p-values outside [0, 1]"
    assert math.isfinite(result.fit_seconds) and info.description, f"{info.name}: fit_seconds and a description"
    assert info.chunk_trials >= 1, f"{info.name}: chunk_trials"


def check_estimand(info) -> None:
    """An estimand: a valid entry (unit, label, description, summarise), study kinds that exist, roles it holds."""
    assert not info.problems(), f"{info.name}: {info.problems()}"
    assert info.unit in UNITS and info.label and info.description, f"{info.name}: unit, label and description"
    from simdesign.studies.kinds import known_kinds

    assert set(info.study_kinds) <= set(known_kinds()), f"{info.name}: unknown study kinds {info.study_kinds}"
    assert callable(info.summarise), f"{info.name}: summarise must be a function"
    for role in ROLES:
        assert (role in info.roles) == (role_holder(role) is info), f"{info.name}: role {role!r}"


def check_study_kind(kind, trials: int = 2) -> None:
    """A study kind: a named, registered :class:`~simdesign.runner.study.StudyKind` with the protocol's hooks,
    and on each of its :meth:`~simdesign.runner.study.StudyKind.examples` (``trials`` trials each): parsed, run
    into a fresh store, run again (the stored rows come back: nothing is drawn differently), read back, and
    summarised into a non-empty table; a kind that separates :meth:`generate` and :meth:`analyse` gives every
    trial the same rows through :meth:`analyse_chunk` as :meth:`trial_rows` gives it alone."""
    assert isinstance(kind, StudyKind) and kind.name, f"{kind!r} is not a named StudyKind"
    assert STUDY_KINDS.get(kind.name) is kind, f"{kind.name!r} is not the registered study kind of that name"
    assert isinstance(kind.keys, tuple), f"{kind.name}: keys must be a tuple of config keys"
    for hook in ("parse", "with_trials", "run", "stored_rows", "summarise", "plot", "examples"):
        assert callable(getattr(kind, hook, None)), f"{kind.name}: the study kind has no {hook}()"
    examples = kind.examples()
    assert isinstance(examples, dict) and examples, (f"{kind.name}: examples() must give at least one small config "
                                                     "mapping by label (the contract checks run it)")
    for label, mapping in examples.items():
        _check_study_example(kind, label, dict(mapping), trials)


def without_clock(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows without wall-clock columns (``*_seconds``: how long a fit took is not a result)."""
    return rows.drop(columns=[column for column in rows if str(column).endswith("_seconds")])


def _check_study_example(kind, label: str, mapping: dict, trials: int) -> None:
    import tempfile
    from pathlib import Path

    import yaml

    from simdesign.runner.backends import BackendSpec
    from simdesign.runner.study import trial_stream

    config = kind.with_trials(kind.parse(mapping), trials)
    backend = BackendSpec("threading", 1)  # no worker processes to start: the check stays quick
    with tempfile.TemporaryDirectory(prefix="simdesign-check-") as directory:
        path = Path(directory) / f"{label}.yaml"
        path.write_text(yaml.safe_dump(mapping, sort_keys=False))
        loaded = kind.load(path, {"trials": trials})  # the one loader signature: a file and its overrides
        assert kind.config_name(loaded) == kind.config_name(config), f"{label}: load() and parse() differ"
        store = Path(directory) / "store"
        rows = kind.run(config, store, backend, False)
        assert isinstance(rows, pd.DataFrame) and len(rows), f"{label}: run() gave no rows"
        again = kind.run(config, store, backend, False)
        pd.testing.assert_frame_equal(without_clock(again), without_clock(rows),
                                      obj=f"{label}: a second run into the same store")
        pd.testing.assert_frame_equal(without_clock(kind.stored_rows(config, store)), without_clock(rows),
                                      obj=f"{label}: stored_rows()")
    summary = kind.summarise(config, rows)
    assert isinstance(summary, pd.DataFrame) and len(summary), f"{label}: summarise() gave no table"
    if kind.separates_trials():
        cell, seed = kind.cells(config)[0], kind.seed(config)
        chunk = list(range(trials))
        streams = [trial_stream(seed, cell, trial) for trial in chunk]
        # generate advances each stream: analyse_chunk gets them as the runner hands them on
        data = [kind.generate(config, cell, trial, stream) for trial, stream in zip(chunk, streams)]
        together = kind.analyse_chunk(config, cell, chunk, data, streams)
        for trial, found in zip(chunk, together):
            alone = kind.trial_rows(config, cell, trial, trial_stream(seed, cell, trial))
            pd.testing.assert_frame_equal(found.reset_index(drop=True), alone.reset_index(drop=True),
                                          obj=f"{label}: trial {trial} through analyse_chunk")


def registered_checks() -> list[tuple[str, object, object]]:
    """(id, entry, check) for every registered entry of every registry, plug-ins included."""
    found = [(f"method-{m.name}", m, check_method) for m in all_methods()]
    for kind, cls in DESIGN_KINDS.items():
        example = getattr(cls, "example", None)
        found.append((f"design_kind-{kind}", cls.example() if example else cls, check_design_kind))
    found += [(f"test-{name}", info, check_analysis) for name, info in ANALYSES.items() if info.needs is None]
    found += [(f"estimand-{name}", info, check_estimand) for name, info in ESTIMANDS.items()]
    found += [(f"study_kind-{name}", kind, check_study_kind) for name, kind in STUDY_KINDS.items()]
    return found


def parametrize_with_checks(entries=None):
    """A ``pytest.mark.parametrize("entry, check", ...)`` over ``entries`` (default: every registered entry;
    tests that need R are left out), one test id per (entry, check). A design kind without an ``example()``
    classmethod is skipped with the reason."""
    import pytest

    params = []
    for test_id, entry, check in (registered_checks() if entries is None else entries):
        marks = ()
        if isinstance(entry, type):  # a design kind class without an example design
            marks = pytest.mark.skip(reason=f"{test_id}: give the class an example() classmethod to check it")
        params.append(pytest.param(entry, check, id=test_id, marks=marks))
    return pytest.mark.parametrize("entry, check", params)


__all__ = ["check_method", "check_design_kind", "check_analysis", "check_estimand", "check_study_kind", "without_clock",
           "registered_checks", "parametrize_with_checks"]
