"""The analysis contract and registry.

An analysis takes one study's :class:`~simdesign.core.judgements.Judgements` and
returns a :class:`PairwiseResult`: an estimate, a two-sided p-value and a
status for every pair of systems (i, j), i < j in model order, estimates
oriented i minus j (docs/estimands.md).

Analyses register themselves with :func:`register`; configs name them, and
the engine calls them, only through :data:`ANALYSES`.
"""
from __future__ import annotations

import importlib
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from simdesign.core.errors import ConfigError
from simdesign.core.judgements import Judgements
from simdesign.methods import all_methods

# The shared statistics live in simdesign.stats.contrasts (imported by the native CLMM too); re-exported here
# because they are part of the analysis contract.
from simdesign.stats.contrasts import (ADJUSTMENTS, DEGENERATE, ERROR, FAILURES, NOT_CONVERGED, OK,  # noqa: F401
                                 SINGULAR, SINGULAR_TOLERANCE, PairwiseResult, pairwise_from_fit,
                                 relative_cholesky_is_singular, system_pairs, wald_contrasts)


@dataclass(frozen=True)
class AnalysisInfo:
    """A registry entry.

    Attributes
    ----------
    name : str
    function : callable
        ``function(judgements, rng, **options) -> PairwiseResult``.
    options : dict
        Option name -> (allowed values as a tuple, or a validator returning an
        error message or None; default value).
    needs_blocks : bool
        Only meaningful for block designs (the ``*_block`` tests).
    needs : str or None
        External software the analysis needs ('R'), for clear errors up front.
    description : str
    random_effects : bool
        The analysis fits random effects (a mixed model), so a fit can be
        singular and the summary reports its ``singular_rate``.
    """

    name: str
    function: Callable
    options: dict = field(default_factory=dict)
    needs_blocks: bool = False
    needs: str | None = None
    description: str = ""
    verbose: Callable | None = None
    """Optional ``verbose(judgements, **options) -> str``: the full fit output, for ``simdesign replay``."""
    random_effects: bool = False
    chunk_trials: int = 25
    """Trials per chunk the engine uses by default: fewer for slow fits, so that progress shows and an
    interruption loses little."""
    takes_rankings: bool = False
    """Whether the analysis is valid on rankings (reversed ranks, S = best, one permutation per
    (annotator, document)); each annotation method says which analyses it accepts
    (:meth:`simdesign.methods.AnnotationMethod.accepts`, :attr:`methods`), and a config pairing a test
    with a method that does not accept it is refused before simulating."""
    takes_preferences: bool = False
    """Whether the analysis reads pairwise preferences (:attr:`Judgements.preferences`, the pairwise method's
    judgements) instead of one value per output; each method accepts only analyses of its own kind."""
    uses_rng: bool | Callable[[dict], bool] = True
    """Whether the analysis draws random numbers, or a function of its options saying so. Where it does
    not, the engine passes ``rng=None`` instead of building the trial's analysis generator (a
    SeedSequence and a PCG64, a sizeable part of a t-test's time); the streams of those that do are
    unchanged, as they are keyed by label."""

    deprecated_values: dict = field(default_factory=dict)
    """Option -> {old value: current value}: renamed values still accepted for a release, with a FutureWarning
    (:func:`current_options`); a label written with the old value stays the label."""
    former_defaults: dict = field(default_factory=dict)
    """Option -> the value that results stored before the option existed were computed with, where that is
    not the option's default (a default changed after the option was added). Such stores are accepted only
    by a test that gives the option this value (``SimulationConfig``'s ``accepted_fingerprints``)."""

    needs_complete: bool | Callable[[dict], bool] = True
    """Whether the analysis needs every system's output for every document, or a function of its options
    saying so. A study under partial coverage (docs/designs.md) lacks some outputs; an analysis that does not
    say it handles that (False: paired tests on the units both systems cover, means over existing outputs,
    mixed models fitted to the judgements there are) is refused for such a design when the config is read,
    with :attr:`complete_reason`, and never sees a missing output (:func:`run_analysis`). True by default,
    so a plug-in is refused until it says otherwise."""
    complete_reason: str = "it has not been made to handle missing outputs"
    """Why the analysis needs complete data (the refusal's words)."""

    @property
    def methods(self) -> tuple:
        """The registered annotation methods whose judgements the analysis accepts (their names)."""
        return tuple(method.name for method in all_methods() if method.accepts(self))

    def draws_random_numbers(self, options: dict) -> bool:
        """Whether a run with ``options`` needs its random generator (see ``uses_rng``)."""
        return bool(self.uses_rng(options) if callable(self.uses_rng) else self.uses_rng)

    def requires_complete(self, options: dict) -> bool:
        """Whether a run with ``options`` needs every output to exist (see ``needs_complete``)."""
        return bool(self.needs_complete(options) if callable(self.needs_complete) else self.needs_complete)


def partial_coverage_refusal(info: AnalysisInfo, label: str, options: dict, design_label: str | None = None
                             ) -> str | None:
    """The refusal of a test that needs complete data on a design with missing outputs, or None when it may run."""
    if not info.requires_complete(options):
        return None
    what = "a study" if design_label is None else f"the design {design_label}"
    return (f"The test {label} cannot analyse {what}, whose systems lack outputs for some "
            f"documents (partial coverage): {info.complete_reason}; use a test that handles missing outputs "
            f"({', '.join(sorted(name for name, entry in ANALYSES.items() if not entry.requires_complete({})))})")


ANALYSES: dict[str, AnalysisInfo] = {}
"""Registry: analysis name -> :class:`AnalysisInfo`."""


BACKEND_CHECKS: dict[str, Callable[[], tuple[bool, str]]] = {}
"""External software name (AnalysisInfo.needs) -> check returning (available, how to install)."""


def register(info: AnalysisInfo) -> AnalysisInfo:
    """Make a test usable by name (the same test again, e.g. from a reloaded module, is harmless).

    Raises
    ------
    ConfigError
        Another test under a taken name.
    """
    from simdesign.core.registry import refuse_clash, same_entry

    if info.name in ANALYSES and not same_entry(ANALYSES[info.name], info):
        raise refuse_clash("test", info.name, ANALYSES[info.name])
    ANALYSES[info.name] = info
    return info


def unregister(name: str) -> None:
    """Remove a test (a test's or a plug-in's; as every registry's unregister)."""
    ANALYSES.pop(name, None)


def resolve_analysis(name: str) -> AnalysisInfo:
    """The registry entry for ``name``: a registered name, or an importable ``module:attribute``.

    ``module:attribute`` names an :class:`AnalysisInfo` (or a registered
    analysis's name is looked up again after the import, for modules that
    call :func:`register` when imported). Importing by name is what lets a
    fresh process (a loky or Dask worker) find an analysis defined in user
    code; the engine also sends each chunk's entries with the chunk.

    Raises
    ------
    KeyError
        Neither registered nor importable; the message lists the registered names.
    """
    if name in ANALYSES:
        return ANALYSES[name]
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        try:
            found = getattr(importlib.import_module(module_name), attribute)
        except Exception as exc:  # noqa: BLE001 - a plug-in's import may fail in any way; say how, naming it
            raise KeyError(f"analysis {name!r}: cannot import {attribute!r} from {module_name!r} "
                           f"({type(exc).__name__}: {exc})") from exc
        if isinstance(found, AnalysisInfo):
            return found
        if name in ANALYSES:
            return ANALYSES[name]
        raise KeyError(f"analysis {name!r}: {module_name}.{attribute} is not an AnalysisInfo")
    raise KeyError(f"unknown analysis {name!r}; registered: {sorted(ANALYSES)} "
                   "(or give an importable 'module:attribute' naming an AnalysisInfo)")


def current_options(info: AnalysisInfo, options: dict, where: str = "") -> dict:
    """``options`` with every deprecated value (:attr:`AnalysisInfo.deprecated_values`) renamed to its current one.

    Each rename warns with a FutureWarning that names the new form: it is meant for the people who write
    configs and call the API, and Python shows FutureWarning by default (a DeprecationWarning would be hidden
    from a CLI user).
    """
    renamed = dict(options)
    for option, aliases in info.deprecated_values.items():
        value = renamed.get(option)
        if isinstance(value, str) and value in aliases:
            renamed[option] = aliases[value]
            warnings.warn(f"{where or info.name}: '{option}: {value}' of {info.name} is deprecated and will be "
                          f"removed in the next release; write '{option}: {aliases[value]}' (the same test)",
                          FutureWarning, stacklevel=3)
    return renamed


def run_analysis(info: AnalysisInfo, judgements: Judgements, rng: np.random.Generator, options: dict) -> PairwiseResult:
    """Call an analysis, timing it and turning an unexpected exception into an 'error' result.

    An exception inside a fit is data (docs/estimands.md): it becomes a
    failed result with the exception's text, never a p-value.
    """
    n_pairs = judgements.n_systems * (judgements.n_systems - 1) // 2
    if not judgements.complete and info.requires_complete(options):
        # the config refuses this before a run; a call from code must not read a missing output as a score
        raise ConfigError(partial_coverage_refusal(info, info.name, options))
    start = time.perf_counter()
    try:
        result = info.function(judgements, rng, **options)
    except Exception as exc:  # noqa: BLE001 -- any failure of a fit is recorded, not raised
        result = PairwiseResult.failed(n_pairs, ERROR, f"{type(exc).__name__}: {exc}")
    result.fit_seconds = time.perf_counter() - start
    return result
