"""The config fields every study kind shares, declared once: name, type, range, default and help.

Each kind's validator (rates in :mod:`simdesign.studies.rates.config`, panel studies, metric validation)
checks these fields through :func:`field_problem`, so a rule (the name rule, a level in (0, 1), a
count) and its message exist once, and a reference page can be generated from :data:`SHARED_FIELDS`.
"""
from __future__ import annotations

from dataclasses import dataclass

from simdesign.core.checks import is_integer, is_number

NAME, COUNT, LEVEL = "name", "count", "level"


@dataclass(frozen=True)
class Field:
    """One shared config field.

    Attributes
    ----------
    key : str
    kind : {'name', 'count', 'level'}
        A results-directory name; an integer of at least ``minimum``; a number in (0, 1).
    minimum : int
        For counts.
    default : object
        The default where a kind has one (None: required or kind-specific).
    help : str
    """

    key: str
    kind: str
    minimum: int = 1
    default: object = None
    help: str = ""

    def problem(self, value) -> str | None:
        """The message for a bad ``value`` of this field, or None."""
        if self.kind == NAME:
            if not isinstance(value, str) or not value.strip() or any(c in value for c in "/\\"):
                return f"The '{self.key}' field must be a non-empty string without slashes; got {value!r}"
        elif self.kind == COUNT:
            return count_problem(self.key, value, self.minimum)
        elif self.kind == LEVEL:
            if not is_number(value) or not 0 < value < 1:
                return f"The '{self.key}' field must be in (0, 1); got {value!r}"
        return None


def count_problem(key: str, value, minimum: int = 1, what: str = "field") -> str | None:
    """The one wording of "must be an integer of at least ``minimum``" (positive, non-negative or >= n)."""
    if is_integer(value, minimum):
        return None
    kind = {1: "a positive integer", 0: "a non-negative integer"}.get(minimum, f"an integer >= {minimum}")
    return f"The '{key}' {what} must be {kind}; got {value!r}"


SHARED_FIELDS = {field.key: field for field in (
    Field("name", NAME, help="names the results directory (results/<name>): a non-empty string without slashes"),
    Field("trials", COUNT, 1, help="Monte-Carlo trials per cell (the trial is the unit of every rate and mean)"),
    Field("seed", COUNT, 0, 0, help="root seed; every trial's streams are derived from it, its cell and index"),
    Field("chunk_size", COUNT, 1, help="trials per stored chunk (results do not depend on it)"),
    Field("alpha", LEVEL, default=0.05, help="significance level of the tests"),
    Field("confidence", LEVEL, default=0.95, help="level of the intervals whose coverage is estimated"),
    Field("art_resamples", COUNT, 1, help="permutations of the ART tests"),
    Field("docs", COUNT, 1, default=10, help="documents of a panel study"),
    Field("subsamples", COUNT, 1, default=20, help="subsamples of k crowd workers per trial"),
    Field("bootstrap", COUNT, 1, default=1000, help="resamples of the trials for the knee's interval"),
    Field("annotators_per_document", COUNT, 1, default=3, help="annotators of each document (metric validation)"),
    Field("bootstrap_resamples", COUNT, 1, default=500, help="bootstrap resamples per interval"),
    Field("permutation_resamples", COUNT, 1, default=500, help="resamples of the permutation test"),
)}


def field_problem(key: str, value) -> str | None:
    """The problem of ``value`` for the shared field ``key`` (see :data:`SHARED_FIELDS`), or None."""
    return SHARED_FIELDS[key].problem(value)
