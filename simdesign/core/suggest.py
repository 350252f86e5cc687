""""Did you mean ...?": the closest allowed names to a mistyped one, for every message that lists allowed values.

One rule (difflib's ratio, cutoff 0.6, as Python's own "Did you mean" for attribute names) for unknown
config keys, tests, design kinds, presets, systems and commands, so every message suggests alike.
"""
from __future__ import annotations

import difflib

# difflib's default: 'rn' -> 'run' (0.8) and 'spearmann' -> 'spearman' qualify; 'xyz' -> 'run' does not.
CUTOFF = 0.6


def closest(word, allowed, count: int = 1) -> list[str]:
    """The allowed names closest to ``word`` (best first), matched ignoring case; empty when none is close.

    Parameters
    ----------
    word : object
        What the user wrote (a non-string has no suggestion).
    allowed : iterable of str
        The names that would have been accepted.
    count : int
        At most this many suggestions.

    Returns
    -------
    list of str

    Examples
    --------
    >>> closest("ttest_dco", ["ttest", "ttest_doc", "art"])
    ['ttest_doc']
    >>> closest("xyz", ["ttest", "art"])
    []
    """
    if not isinstance(word, str):
        return []
    names = [str(name) for name in allowed]
    by_folded = {}
    for name in names:
        by_folded.setdefault(name.casefold(), name)
    matches = difflib.get_close_matches(word.casefold(), list(by_folded), n=count, cutoff=CUTOFF)
    return [by_folded[match] for match in matches if by_folded[match] != word]


def did_you_mean(word, allowed) -> str:
    """``"; did you mean 'x'?"`` for the closest allowed name, or '' when none is close (to append to a message).

    Parameters
    ----------
    word : object
        What the user wrote.
    allowed : iterable of str
        The accepted names.

    Returns
    -------
    str

    Examples
    --------
    >>> did_you_mean("coherance", ["coherence", "repetition"])
    " (did you mean 'coherence'?)"
    """
    return suggestions([word], allowed)


def suggestions(words, allowed) -> str:
    """:func:`did_you_mean` for several unknown words at once: ``" (did you mean 'a' for 'b', ...?)"`` or ''.

    Parameters
    ----------
    words : iterable
        The unknown names the user wrote.
    allowed : iterable of str
        The accepted names.

    Returns
    -------
    str

    Examples
    --------
    >>> suggestions(["tirals", "colour"], ["trials", "seed"])
    " (did you mean 'trials' for 'tirals'?)"
    """
    words, allowed = list(words), list(allowed)  # read twice below: a generator would be empty the second time
    pairs = [(word, found[0]) for word in words for found in [closest(word, allowed)] if found]
    if not pairs:
        return ""
    if len(pairs) == 1 and len(words) == 1:
        return f" (did you mean {pairs[0][1]!r}?)"
    return " (did you mean " + ", ".join(f"{right!r} for {wrong!r}" for wrong, right in pairs) + "?)"
