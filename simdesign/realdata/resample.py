"""Resampling analyses of a real study: sample blocks or annotators, compute an estimand, repeat.

Used for the paper's Figure 3 (cost-efficiency: how well does a smaller study,
costing so many minutes of annotation, reproduce the full study's system
scores?) and Figure 6 (nested vs crossed samples of equal effort), and usable
on any study with blocks (annotators who share a document set).

Three sampling schemes, each drawn without replacement from the real study:

* ``blocks``: ``size`` distinct blocks with all their annotators;
* ``nested``: ``size`` distinct blocks, one annotator drawn from each
  (``size`` annotators, each with their own documents);
* ``crossed``: all annotators of ``size / A`` blocks (``size`` annotators
  sharing documents A at a time; ``size`` must be a multiple of A, the
  annotators per block).

The default estimand is Pearson's r between the sample's system means and
the full study's (the paper's measure); any function of (sample means, full
means) can be given. Every (scheme, size) has its own random stream from
``simdesign.core.seeds.resample_rng(seed, scheme, size)``, so results are
reproducible and do not depend on which other sizes are run.

Examples
--------
>>> import numpy as np
>>> from simdesign import BlockDesign, load_model
>>> frame = load_model("coherence").sample(BlockDesign(6, 2, 3), np.random.default_rng(1)).to_frame()
>>> table = StudyTable.from_frame(frame.drop(columns="block"))
>>> table.n_blocks, table.annotators_per_block
(6, 3)
>>> draws = resample(table, "nested", sizes=[3], repetitions=4, seed=0)
>>> draws["judgements"].tolist()
[30, 30, 30, 30]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from simdesign.stats.annotation_time import CAP_SECONDS_PER_OUTPUT, capped_durations
from simdesign.core.errors import ConfigError, DataError
from simdesign.core.judgements import Judgements
from simdesign.core.seeds import resample_rng

SCHEMES = ("blocks", "nested", "crossed")


def capped_annotation_seconds(times: pd.DataFrame, outputs_per_item: int,
                              cap_per_output: float = CAP_SECONDS_PER_OUTPUT) -> pd.Series:
    """Total annotation time per annotator, each item's duration capped at ``cap_per_output x outputs_per_item``.

    The planner's cost rule: 300 s per judged output, so a Likert item (one
    output) is capped at 300 s and a ranking of 5 outputs at 1500 s; the few
    longer values in the paper's times (up to about 3300 s) are breaks.

    The capping itself is :func:`simdesign.stats.annotation_time.capped_durations`, the
    rule the planner's cost model uses.

    Parameters
    ----------
    times : pandas.DataFrame
        Columns ``annotator`` and ``time_stamp`` (seconds spent on the item,
        a duration; the paper's ``times/`` files) or ``seconds``.
    outputs_per_item : int
        Outputs judged in one item: 1 for Likert, S for a ranking of S outputs.
    cap_per_output : float

    Returns
    -------
    pandas.Series
        Seconds per annotator (index: annotator ids as strings).
    """
    column = "seconds" if "seconds" in times.columns else "time_stamp"
    if "annotator" not in times.columns or column not in times.columns:
        raise DataError(f"A times table needs the columns 'annotator' and 'time_stamp' (or 'seconds'); "
                          f"it has {list(times.columns)}")
    seconds = pd.to_numeric(times[column], errors="coerce")
    bad = times.index[seconds.isna() | (seconds < 0)]
    if len(bad):
        raise DataError(f"The times column {column!r} has {len(bad)} missing, non-numeric or negative value(s) "
                          f"(lines {', '.join(str(i + 2) for i in bad[:5])})")
    capped = capped_durations(seconds.to_numpy(), outputs_per_item, cap_per_output).to_numpy()
    return pd.Series(capped, index=times.index).groupby(times["annotator"].astype(str)).sum()


@dataclass(frozen=True)
class StudyTable:
    """A study reduced to per-annotator sums, so that a sample's system means cost one small product.

    Attributes
    ----------
    annotators : tuple of str
    block : ndarray of int, shape (A,)
        Block of each annotator (annotators sharing a document set).
    sums, counts : ndarray, shape (A, S)
        Per annotator and system: sum of values and number of judgements.
    systems : tuple of str
    """

    annotators: tuple
    block: np.ndarray
    sums: np.ndarray
    counts: np.ndarray
    systems: tuple

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, value_column: str = "score", systems=None,
                   block_column: str | None = None) -> "StudyTable":
        """From a long table (``annotator, document, system`` and ``value_column``); blocks recovered if absent.

        Raises
        ------
        ConfigError
            The study has no block structure (annotators' document sets
            overlap across groups), or fewer than two blocks.
        """
        columns = ["annotator", "document", "system", value_column] + ([block_column] if block_column else [])
        data = frame[columns].rename(columns={value_column: "score"})
        judgements = Judgements.from_frame(data, systems=systems, block_column=block_column)
        if not judgements.has_blocks:
            raise DataError("Resampling blocks needs a block design: groups of annotators who judge the same "
                              "documents, no document shared between groups; these data have none")
        n_ann, n_sys = int(judgements.annotator.max()) + 1, judgements.n_systems
        sums = np.zeros((n_ann, n_sys))
        np.add.at(sums, judgements.annotator, judgements.scores.astype(float))
        counts = np.zeros_like(sums)
        np.add.at(counts, judgements.annotator, 1.0)
        block = np.full(n_ann, -1, dtype=np.int64)
        block[judgements.annotator] = judgements.block
        labels = tuple(str(a) for a in sorted(pd.unique(frame["annotator"])))  # Judgements codes annotators sorted
        table = cls(annotators=labels, block=block, sums=sums, counts=counts, systems=judgements.systems)
        if table.n_blocks < 2:
            raise DataError(f"Resampling needs two or more blocks; these data have {table.n_blocks}")
        return table

    @property
    def n_blocks(self) -> int:
        return int(self.block.max()) + 1

    @property
    def annotators_per_block(self) -> int:
        """Annotators in the smallest block (what a crossed sample can take from every block)."""
        return int(np.bincount(self.block).min())

    def means(self, selected: np.ndarray | None = None) -> np.ndarray:
        """System means over the selected annotators (all when None)."""
        if selected is None:
            return self.sums.sum(axis=0) / self.counts.sum(axis=0)
        return self.sums[selected].sum(axis=0) / self.counts[selected].sum(axis=0)


def _draw(table: StudyTable, scheme: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """Annotator indices of one sample."""
    members = [np.flatnonzero(table.block == b) for b in range(table.n_blocks)]
    if scheme == "blocks":
        chosen = rng.choice(table.n_blocks, size=size, replace=False)
        return np.concatenate([members[b] for b in chosen])
    if scheme == "nested":
        chosen = rng.choice(table.n_blocks, size=size, replace=False)
        return np.array([rng.choice(members[b]) for b in chosen])
    per_block = table.annotators_per_block
    chosen = rng.choice(table.n_blocks, size=size // per_block, replace=False)
    return np.concatenate([rng.choice(members[b], size=per_block, replace=False) for b in chosen])


def _check_sizes(table: StudyTable, scheme: str, sizes) -> list[int]:
    if scheme not in SCHEMES:
        raise ConfigError(f"scheme must be one of {list(SCHEMES)}; got {scheme!r}")
    sizes = [int(s) for s in sizes]
    per_block = table.annotators_per_block
    limit = table.n_blocks if scheme in ("blocks", "nested") else table.n_blocks * per_block
    bad = [s for s in sizes if not 1 <= s <= limit or (scheme == "crossed" and s % per_block)]
    if bad:
        rule = (f"between 1 and {limit} blocks" if scheme == "blocks" else
                f"between 1 and {limit} annotators" if scheme == "nested" else
                f"multiples of {per_block} (annotators per block) up to {limit}")
        raise ConfigError(f"The {scheme} sizes {bad} are impossible for this study: sizes must be {rule}")
    return sizes


def pearson(sample: np.ndarray, full: np.ndarray) -> float:
    """Pearson's r, NaN when either side is constant."""
    a, b = sample - sample.mean(), full - full.mean()
    denominator = np.sqrt((a @ a) * (b @ b))
    return float(a @ b / denominator) if denominator > 1e-12 else float("nan")


def resample(table: StudyTable, scheme: str, sizes, repetitions: int, seed: int,
             estimand: Callable[[np.ndarray, np.ndarray], float] = pearson,
             seconds: pd.Series | None = None) -> pd.DataFrame:
    """Draw ``repetitions`` samples per size and compute the estimand on each.

    Parameters
    ----------
    table : StudyTable
    scheme : {'blocks', 'nested', 'crossed'}
    sizes : iterable of int
        Blocks (``blocks``) or annotators (``nested``, ``crossed``) per sample.
    repetitions : int
    seed : int
    estimand : callable
        ``estimand(sample_means, full_means) -> float``, both shape (S,) in
        ``table.systems`` order; default Pearson's r.
    seconds : pandas.Series, optional
        Annotation seconds per annotator id (:func:`capped_annotation_seconds`);
        adds the sample's total time.

    Returns
    -------
    pandas.DataFrame
        One row per sample: ``scheme, size, repetition, annotators,
        judgements, seconds`` (NaN without ``seconds``), ``estimate``.
    """
    sizes = _check_sizes(table, scheme, sizes)
    if int(repetitions) < 1:
        raise ConfigError(f"repetitions must be a positive integer; got {repetitions!r}")
    per_annotator_seconds = None
    if seconds is not None:
        missing = sorted(set(table.annotators) - set(seconds.index.astype(str)))
        if missing:
            raise DataError(f"The times table has no rows for {len(missing)} annotator(s) of the judgements, "
                              f"e.g. {missing[:3]}")
        per_annotator_seconds = seconds.reindex(list(table.annotators)).to_numpy(float)
    full = table.means()
    judgements_per_annotator = table.counts.sum(axis=1)
    rows = []
    for size in sizes:
        rng = resample_rng(int(seed), scheme, int(size))
        for repetition in range(int(repetitions)):
            selected = _draw(table, scheme, size, rng)
            rows.append({"scheme": scheme, "size": size, "repetition": repetition, "annotators": len(selected),
                         "judgements": int(judgements_per_annotator[selected].sum()),
                         "seconds": float(per_annotator_seconds[selected].sum()) if per_annotator_seconds is not None
                         else float("nan"),
                         "estimate": estimand(table.means(selected), full)})
    return pd.DataFrame(rows)


def mean_with_interval(values: pd.Series, level: float = 0.95) -> dict:
    """Mean of the defined values with a t interval for that mean (as the paper's Figure 3 bins)."""
    from scipy import stats

    clean = values.dropna().to_numpy(float)
    n = clean.size
    mean = float(clean.mean()) if n else float("nan")
    if n < 2:
        return {"mean": mean, "ci_low": float("nan"), "ci_high": float("nan"), "n": n}
    half = stats.t.ppf(0.5 + level / 2, n - 1) * clean.std(ddof=1) / np.sqrt(n)
    return {"mean": mean, "ci_low": mean - half, "ci_high": mean + half, "n": n}


def bin_by_time(draws: pd.DataFrame, minutes: float = 10.0) -> pd.DataFrame:
    """Mean estimate and its 95% interval per ``minutes``-wide bin of annotation time.

    Returns
    -------
    pandas.DataFrame
        ``bin_start_min, bin_mid_min, mean, ci_low, ci_high, n``.
    """
    start = np.floor(draws["seconds"] / 60.0 / minutes) * minutes
    rows = []
    for value, group in draws.groupby(start):
        rows.append({"bin_start_min": float(value), "bin_mid_min": float(value) + minutes / 2,
                     **mean_with_interval(group["estimate"])})
    return pd.DataFrame(rows)
