"""Reliability of a study: Krippendorff's alpha and split-half reliability (docs/reliability.md).

Two measures from Steen & Markert (2021, section 4.1), which answer
different questions:

* **Krippendorff's alpha** (ordinal level): do annotators agree on single
  judgements? The unit is one system's output for one document, the coders
  are the annotators. It is low for Likert quality judgements (0.22 and
  0.27 on the paper's data) however many judgements a study collects.
* **Split-half reliability** (SHR): would another study of the same shape
  rank the systems the same way? The blocks are split at random into two
  halves; each half gives a mean score per system; SHR is the Pearson
  correlation between the two halves' system means, averaged over splits.
  It grows with the number of independent blocks (0.96 and 0.95 on the
  paper's data), without Spearman-Brown or Fisher-z corrections.

Both accept a :class:`~simdesign.core.judgements.Judgements` or a long table with
columns ``annotator, document, system, score`` (and optionally ``block``).

Examples
--------
>>> import numpy as np
>>> from simdesign import BlockDesign, load_model
>>> data = load_model("coherence").sample(BlockDesign(20, 5, 3), np.random.default_rng(3))
>>> 0 < krippendorff_alpha(data) < 1
True
>>> result = split_half_reliability(data)
>>> result.n_splits, result.exact
(92378, True)
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import krippendorff
import numpy as np
import pandas as pd

from simdesign.core.errors import ConfigError
from simdesign.core.judgements import Judgements

# The paper enumerates every split when there are at most this many (20 blocks give 92,378) ...
MAX_EXACT_SPLITS = 100_000
# ... and otherwise averages over this many random splits.
RANDOM_SPLITS = 1000


class UndefinedReliability(ConfigError):
    """The measure is undefined for these data (e.g. SHR with one block, alpha with one judgement per unit)."""


@dataclass(frozen=True)
class SplitHalfResult:
    """Split-half reliability and how it was computed.

    Attributes
    ----------
    value : float
        Mean Pearson r over the splits where r is defined.
    n_splits : int
        Splits averaged over (distinct splits when ``exact``).
    exact : bool
        True when every distinct split was enumerated.
    n_undefined : int
        Splits left out because one half's system means were all equal (r undefined).
    n_blocks : int
    """

    value: float
    n_splits: int
    exact: bool
    n_undefined: int
    n_blocks: int


def _long_frame(data) -> pd.DataFrame:
    if isinstance(data, Judgements):
        return data.to_frame()
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"expected Judgements or a pandas DataFrame; got {type(data).__name__}")
    missing = {"annotator", "document", "system", "score"} - set(data.columns)
    if missing:
        raise ConfigError(f"The judgements table lacks the column(s) {sorted(missing)}; "
                          "it needs annotator, document, system, score")
    return data


def krippendorff_alpha(data, value_domain=None) -> float:
    """Krippendorff's alpha at the ordinal level; unit = (document, system), coders = annotators.

    Parameters
    ----------
    data : Judgements or pandas.DataFrame
        A long table needs the columns ``annotator, document, system, score``,
        one row per judgement (an annotator judges a unit at most once).
    value_domain : sequence of int, optional
        The ordered score values (e.g. the scale 1..7). Default: the observed
        values. Unobserved values do not change ordinal alpha (its distances
        count only observed values), so the default is safe.

    Returns
    -------
    float

    Raises
    ------
    UndefinedReliability
        No unit has two or more judgements (e.g. a nested design with one
        annotator per document), or every judgement has the same value.

    Notes
    -----
    Computed from per-unit value counts with the ``krippendorff`` package
    (its ordinal metric is Krippendorff's: the squared number of pairable
    values between two ranks, less half of the two ranks' own counts).
    """
    if isinstance(data, Judgements):
        n_systems = data.n_systems
        units = (data.document[:, None] * n_systems + np.arange(n_systems)[None, :]).ravel()
        values = data.scores.ravel()
    else:
        frame = _long_frame(data)
        units, _ = pd.factorize(pd.MultiIndex.from_frame(frame[["document", "system"]]))
        values = frame["score"].to_numpy()
    return alpha_from_units(units, values, value_domain)


def alpha_from_units(units: np.ndarray, values: np.ndarray, value_domain=None) -> float:
    """Ordinal Krippendorff's alpha from one (unit, value) pair per judgement.

    Parameters
    ----------
    units : ndarray of int, shape (n,)
        Dense unit ids (0-based).
    values : ndarray, shape (n,)
        The judgement's score.
    value_domain : sequence, optional
        Ordered score values; default the observed ones.

    Returns
    -------
    float
    """
    units = np.asarray(units, dtype=np.int64)
    values = np.asarray(values)
    domain = np.unique(values) if value_domain is None else np.asarray(sorted(value_domain))
    outside = np.setdiff1d(np.unique(values), domain)
    if outside.size:
        raise ConfigError(f"Scores {outside.tolist()} are not in the value domain {domain.tolist()}")
    counts = np.zeros((int(units.max()) + 1, len(domain)), dtype=np.int64)
    np.add.at(counts, (units, np.searchsorted(domain, values)), 1)
    pairable = counts[counts.sum(axis=1) >= 2]
    if pairable.shape[0] == 0:
        raise UndefinedReliability("Krippendorff's alpha needs units (document, system) judged by two or more "
                                   "annotators; every unit here has a single judgement")
    if np.count_nonzero(pairable.sum(axis=0)) < 2:
        raise UndefinedReliability("Krippendorff's alpha is undefined when every pairable judgement has the "
                                   "same value (no expected disagreement)")
    return float(krippendorff.alpha(value_counts=pairable, value_domain=domain, level_of_measurement="ordinal"))


def _block_sums(data) -> tuple[np.ndarray, np.ndarray]:
    """Per-(block, system) score sums and judgement counts, shape (B, S) each."""
    if isinstance(data, Judgements):
        if not data.has_blocks:
            raise UndefinedReliability("Split-half reliability needs blocks; these data have no block structure "
                                       "(annotators share documents across groups, or a pool design)")
        n_blocks = int(data.block.max()) + 1
        sums = np.zeros((n_blocks, data.n_systems))
        np.add.at(sums, data.block, data.scores)
        counts = np.zeros((n_blocks, data.n_systems))
        np.add.at(counts, data.block, 1.0)
        return sums, counts
    frame = _long_frame(data)
    if "block" in frame.columns and frame["block"].notna().all():
        block, _ = pd.factorize(frame["block"], sort=True)
    else:
        # The paper's files have no block column: recover blocks as annotators sharing a document set.
        judgements = Judgements.from_frame(frame)
        return _block_sums(judgements)
    system, _ = pd.factorize(frame["system"], sort=True)
    shape = (int(block.max()) + 1, int(system.max()) + 1)
    sums = np.zeros(shape)
    np.add.at(sums, (block, system), frame["score"].to_numpy(float))
    counts = np.zeros(shape)
    np.add.at(counts, (block, system), 1.0)
    return sums, counts


def n_distinct_splits(n_blocks: int) -> int:
    """Distinct ways to split ``n_blocks`` into halves of floor(B/2) and ceil(B/2) blocks.

    r is symmetric in the two halves, so for even B a split and its mirror
    image count once: C(B, B/2) / 2 (92,378 for 20 blocks).
    """
    half = n_blocks // 2
    total = math.comb(n_blocks, half)
    return total // 2 if n_blocks % 2 == 0 else total


@functools.lru_cache(maxsize=8)
def _exact_split_masks(n_blocks: int) -> np.ndarray:
    """Every distinct split as a 0/1 column (1 = first half), shape (B, n_splits)."""
    half = n_blocks // 2
    if n_blocks % 2 == 0:
        # Keeping block 0 in the first half picks one of each mirror pair.
        combos = np.fromiter(itertools.chain.from_iterable(
            (0,) + c for c in itertools.combinations(range(1, n_blocks), half - 1)), dtype=np.int64)
    else:
        combos = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n_blocks), half)),
                             dtype=np.int64)
    combos = combos.reshape(-1, half)
    masks = np.zeros((n_blocks, combos.shape[0]))
    masks[combos, np.arange(combos.shape[0])[:, None]] = 1.0
    masks.setflags(write=False)
    return masks


def _random_split_masks(n_blocks: int, n_splits: int, rng: np.random.Generator) -> np.ndarray:
    ranks = rng.random((n_splits, n_blocks)).argsort(axis=1)
    return np.ascontiguousarray((ranks < n_blocks // 2).T, dtype=float)


def split_half_reliability(data, rng: np.random.Generator | None = None, *, max_exact: int = MAX_EXACT_SPLITS,
                           random_splits: int = RANDOM_SPLITS) -> SplitHalfResult:
    """The paper's split-half reliability of the system means (docs/reliability.md).

    Split the blocks into halves of floor(B/2) and ceil(B/2) blocks; each
    half gives a mean score per system (over all its judgements); r is
    Pearson's correlation of the two halves' system means. SHR is the plain
    mean of r over every distinct split when there are at most
    ``max_exact`` of them, else over ``random_splits`` random splits.

    Parameters
    ----------
    data : Judgements or pandas.DataFrame
        A long table may carry a ``block`` column; without one, blocks are
        recovered as the groups of annotators sharing a document set.
    rng : numpy.random.Generator, optional
        Needed only when the splits are drawn at random (more than
        ``max_exact`` distinct splits, e.g. 22 or more blocks).
    max_exact : int
    random_splits : int

    Returns
    -------
    SplitHalfResult

    Raises
    ------
    UndefinedReliability
        Fewer than two blocks (a fully crossed study, or one without block
        structure), or r undefined in every split.
    """
    sums, counts = _block_sums(data)
    return split_half_from_block_sums(sums, counts, rng, max_exact=max_exact, random_splits=random_splits)


def split_half_from_block_sums(sums: np.ndarray, counts: np.ndarray, rng: np.random.Generator | None = None, *,
                               max_exact: int = MAX_EXACT_SPLITS,
                               random_splits: int = RANDOM_SPLITS) -> SplitHalfResult:
    """Split-half reliability from per-(block, system) score sums and judgement counts, each (B, S).

    See :func:`split_half_reliability`; sums and counts (rather than means)
    let unbalanced blocks weigh by their judgements.
    """
    sums = np.asarray(sums, dtype=float)
    counts = np.asarray(counts, dtype=float)
    n_blocks = sums.shape[0]
    if n_blocks < 2:
        raise UndefinedReliability(f"Split-half reliability needs two or more blocks to split; these data have "
                                   f"{n_blocks} (a fully crossed study: every annotator judges every document)")
    n_total = n_distinct_splits(n_blocks)
    exact = n_total <= max_exact
    if exact:
        masks = _exact_split_masks(n_blocks)
    else:
        if rng is None:
            raise ValueError(f"{n_blocks} blocks have {n_total} distinct splits (more than {max_exact}): "
                             "pass an rng to draw random splits")
        masks = _random_split_masks(n_blocks, random_splits, rng)
    # Half sums for all splits in one (2S x B) @ (B x splits) product; the other half is the total less it.
    # Splits run along the long, contiguous last axis, so the reductions over systems stay vectorised.
    n_systems = sums.shape[1]
    both = np.vstack([sums.T, counts.T])
    first_both = both @ masks
    rest_both = both.sum(axis=1, keepdims=True) - first_both
    first = first_both[:n_systems] / first_both[n_systems:]
    rest = rest_both[:n_systems] / rest_both[n_systems:]
    first -= first.mean(axis=0)
    rest -= rest.mean(axis=0)
    denominator = np.sqrt(np.einsum("sn,sn->n", first, first) * np.einsum("sn,sn->n", rest, rest))
    defined = denominator > 1e-12
    if not defined.any():
        raise UndefinedReliability("Split-half reliability is undefined: in every split one half gives all "
                                   "systems the same mean")
    r = np.einsum("sn,sn->n", first, rest)[defined] / denominator[defined]
    return SplitHalfResult(value=float(r.mean()), n_splits=int(masks.shape[1]), exact=exact,
                           n_undefined=int((~defined).sum()), n_blocks=n_blocks)


def shr(data, rng: np.random.Generator | None = None) -> float:
    """Split-half reliability as a number; see :func:`split_half_reliability`."""
    return split_half_reliability(data, rng).value
