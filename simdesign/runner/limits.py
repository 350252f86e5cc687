"""Ceilings on the sizes a run may ask for, each refused before any work with the size and the ceiling.

A trial count is bounded because no machine finishes more: the cheapest tests run a few thousand
trials per second per core, so :data:`MAX_TRIALS` trials of one cell take hours to days; a typo such
as ``trials: 100000000000000000000`` would otherwise run until killed. docs/runner.md lists the ceilings.
"""
from __future__ import annotations

from simdesign.core.errors import ConfigError

MAX_TRIALS = 100_000_000  # per cell (design, grid cell or crowd setting)


def check_trial_count(trials: int, where: str = "'trials' (or --trials)") -> None:
    """Refuse a trial count above :data:`MAX_TRIALS`, naming it and the ceiling.

    Raises
    ------
    ConfigError
    """
    if trials > MAX_TRIALS:
        raise ConfigError(f"The {where} asks for {trials:,} trials per cell; the ceiling is {MAX_TRIALS:,} "
                          "(hours to days of computing at thousands of trials per second; see docs/runner.md)")
