"""Ceilings on the sizes a run may ask for, each refused before any work with the size and the ceiling.

A trial count is bounded because no machine finishes more: the cheapest tests run a few thousand
trials per second per core, so :data:`MAX_TRIALS` trials of one cell take hours to days; a typo such
as ``trials: 100000000000000000000`` would otherwise run until killed. docs/runner.md lists the ceilings.
"""
from __future__ import annotations

from simdesign.core.errors import ConfigError

MAX_TRIALS = 100_000_000  # per cell (design, grid cell or crowd setting)
# One simulated study is held in memory whole (scores, latent values, ids: about 40 bytes a judgement), in
# every worker at once: 10 million judgements is about 400 MB, a study far larger than any human evaluation.
MAX_JUDGEMENTS_PER_STUDY = 10_000_000
MAX_DESIGNS = 10_000  # designs (cells) of one config: each has its own store folder and summary rows
# Resampling and permutation counts: a test's p-value resolution is 1 / (resamples + 1), and past a million
# the resamples cost more memory (resamples x units) than any p-value needs.
MAX_RESAMPLES = 1_000_000
RESAMPLE_OPTIONS = ("resamples", "bootstrap_resamples", "permutation_resamples")


def check_trial_count(trials: int, where: str = "'trials' (or --trials)") -> None:
    """Refuse a trial count above :data:`MAX_TRIALS`, naming it and the ceiling.

    Raises
    ------
    ConfigError
    """
    if trials > MAX_TRIALS:
        raise ConfigError(f"The {where} asks for {trials:,} trials per cell; the ceiling is {MAX_TRIALS:,} "
                          "(hours to days of computing at thousands of trials per second; see docs/runner.md)")


def study_size_problems(designs, n_systems: int, analyses=(), art_resamples: int | None = None) -> list[str]:
    """Messages for a config whose studies are larger than a run can hold, each naming the size and the ceiling.

    Checked before anything is built: a typo such as ``blocks: 100000000`` would otherwise fill the memory
    while the first study is sampled (docs/runner.md lists the ceilings).

    Parameters
    ----------
    designs : sequence of design objects
    n_systems : int
        Systems whose outputs every assigned pair judges.
    analyses : sequence of AnalysisSpec
        Their resampling options are checked.
    art_resamples : int, optional
        The config's default resamples of the ART tests.

    Returns
    -------
    list of str

    Examples
    --------
    >>> from simdesign.core.designs import BlockDesign
    >>> study_size_problems([BlockDesign(100_000_000, 5, 3)], 5)[0][:46]
    "The design 'block-B100000000-D5-A3' holds 7,50"
    """
    problems = []
    if len(designs) > MAX_DESIGNS:
        problems.append(f"The config has {len(designs):,} designs; the ceiling is {MAX_DESIGNS:,}")
    for design in designs:
        judgements = design.judgements(n_systems)
        if judgements > MAX_JUDGEMENTS_PER_STUDY:
            problems.append(f"The design {design.label!r} holds {judgements:,} judgements per simulated study; the "
                            f"ceiling is {MAX_JUDGEMENTS_PER_STUDY:,} (each study is held in memory whole)")
    counts = [("art_resamples", art_resamples)] if art_resamples is not None else []
    counts += [(f"{spec.label}: {option}", spec.options[option]) for spec in analyses for option in RESAMPLE_OPTIONS
               if isinstance(spec.options.get(option), int)]
    problems += [f"The '{where}' asks for {count:,} resamples; the ceiling is {MAX_RESAMPLES:,}"
                 for where, count in counts if count > MAX_RESAMPLES]
    return problems
