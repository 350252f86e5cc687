"""Judgements: the scores of one (simulated or real) study.

Every assigned (annotator, document) pair scores all systems, so the natural
layout is *wide*: one row per pair, one column per system. Paired tests work
on it directly; :meth:`Judgements.to_frame` gives the tidy long table
(``annotator, document, block, system, score``) that model fitting uses.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simdesign.core.errors import ConfigError


@dataclass(frozen=True)
class Judgements:
    """Scores of every system for every assigned (annotator, document) pair.

    Attributes
    ----------
    scores : ndarray of int, shape (n_pairs, n_systems)
        Score values (on the model's scale, e.g. 1..7). Under partial coverage (a system without an
        output for some documents, docs/designs.md) a float array whose missing outputs are NaN:
        :attr:`observed` says which exist, :meth:`to_frame` lacks the others' rows, and only analyses
        that handle missing outputs get such a study (``AnalysisInfo.needs_complete``).
    annotator, document, block : ndarray of int, shape (n_pairs,)
        Dense 0-based ids; ``block`` is -1 where the design has no blocks.
    systems : tuple of str
        System names in model order (the first is the reference).

    The arrays are read-only copies of those given, so a study cannot change once built: analyses
    of one trial share quantities derived from it (:meth:`derived`) without any becoming stale.

    Parameters
    ----------
    scores, annotator, document, block, systems
        As the attributes (:meth:`from_frame` builds them from a long table).

    Examples
    --------
    >>> import numpy as np
    >>> data = Judgements(np.array([[3, 5]]), np.array([0]), np.array([0]), np.array([-1]), ("a", "b"))
    >>> data.n_pairs, data.n_systems
    (1, 2)
    """

    scores: np.ndarray
    annotator: np.ndarray
    document: np.ndarray
    block: np.ndarray
    systems: tuple
    preferences: np.ndarray | None = None
    first_shown: np.ndarray | None = None
    pair_log: dict | None = field(default=None, repr=False)
    _derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        for name in ("scores", "annotator", "document", "block", "preferences", "first_shown"):
            if getattr(self, name) is None:
                continue
            array = np.array(getattr(self, name))
            array.flags.writeable = False
            object.__setattr__(self, name, array)

    @property
    def is_pairwise(self) -> bool:
        """Whether the judgements are pairwise preferences (:attr:`preferences`), not one value per output."""
        return self.preferences is not None or self.pair_log is not None

    @classmethod
    def from_comparisons(cls, systems, annotator, document, block, first, second, outcome,
                         first_shown=None) -> "Judgements":
        """A pairwise study held as its list of comparisons only (a real battle log: a dense (annotator,
        document) x pair matrix of 1.7M battles among 100 systems would not fit in memory).

        Its :meth:`comparisons` are the arrays given (``first`` < ``second`` need not hold: a comparison with
        ``first`` > ``second`` is turned round, its outcome with it); it has no per-output rows (``scores`` is
        empty), so only tests reading :meth:`comparisons` take it.
        """
        first, second = np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)
        outcome = np.asarray(outcome, dtype=float)
        shown = np.zeros(first.size, dtype=bool) if first_shown is None else np.asarray(first_shown, dtype=bool)
        swap = first > second
        log = {"row": np.arange(first.size), "annotator": np.asarray(annotator, dtype=np.int64),
               "document": np.asarray(document, dtype=np.int64), "block": np.asarray(block, dtype=np.int64),
               "first": np.where(swap, second, first), "second": np.where(swap, first, second),
               "outcome": np.where(swap, 1.0 - outcome, outcome), "first_shown": np.where(swap, ~shown, shown)}
        for array in log.values():
            array.flags.writeable = False
        empty = np.zeros(0, dtype=np.int64)
        return cls(scores=np.zeros((0, len(systems))), annotator=empty, document=empty, block=empty,
                   systems=tuple(systems), pair_log=log)

    def comparisons(self) -> dict:
        """A pairwise study's comparisons as long arrays, one entry per pair shown (computed once).

        Returns
        -------
        dict of ndarray
            ``row`` (into :attr:`annotator`, :attr:`document`, :attr:`block`), ``annotator``, ``document``,
            ``block``, ``first`` and ``second`` (system indices, first < second: the model's order),
            ``outcome`` (1 = ``first`` preferred, 0.5 a tie, 0 = ``second`` preferred) and ``first_shown``
            (whether ``first`` was shown first; False where the study does not say).
        """
        if self.pair_log is not None:
            return self.pair_log
        if self.preferences is None:
            raise ConfigError("These judgements hold one value per output, not pairwise preferences")

        def compute(judgements: "Judgements") -> dict:
            first, second = np.triu_indices(judgements.n_systems, k=1)
            row, column = np.nonzero(~np.isnan(judgements.preferences))
            shown_first = (np.zeros(row.size, dtype=bool) if judgements.first_shown is None
                           else judgements.first_shown[row, column])
            found = {"row": row, "annotator": judgements.annotator[row], "document": judgements.document[row],
                     "block": judgements.block[row], "first": first[column].astype(np.int64),
                     "second": second[column].astype(np.int64),
                     "outcome": judgements.preferences[row, column], "first_shown": shown_first}
            for array in found.values():
                array.flags.writeable = False
            return found
        return self.derived("comparisons", compute)

    def comparisons_frame(self) -> pd.DataFrame:
        """A pairwise study's table: one row per comparison (``comparison, annotator, document, block, system_a,
        system_b, preferred``), ``preferred`` naming the preferred system or ``tie``; ``system_a`` is the output
        shown first; ``comparison`` numbers the rows, so that two battles alike in every other field (the same
        judge, prompt, pair and verdict, which Arena-style designs draw) stay two rows a reader keeps."""
        found = self.comparisons()
        names = np.asarray(self.systems, dtype=object)
        swap = ~found["first_shown"]
        system_a = np.where(swap, names[found["second"]], names[found["first"]])
        system_b = np.where(swap, names[found["first"]], names[found["second"]])
        winner = np.where(found["outcome"] == 1.0, names[found["first"]],
                          np.where(found["outcome"] == 0.0, names[found["second"]], "tie"))
        block = pd.array(found["block"], dtype="Int64")
        if not self.has_blocks:
            block[:] = pd.NA
        return pd.DataFrame({"comparison": np.arange(found["row"].size), "annotator": found["annotator"],
                             "document": found["document"], "block": block,
                             "system_a": system_a, "system_b": system_b, "preferred": winner})

    def derived(self, key, compute):
        """``compute(self)``, computed once per study and key and shared by every caller after the first.

        What ``compute`` returns must not be modified (return read-only arrays).
        """
        if key not in self._derived:
            self._derived[key] = compute(self)
        return self._derived[key]

    @property
    def n_pairs(self) -> int:
        return self.scores.shape[0]

    @property
    def n_systems(self) -> int:
        return self.scores.shape[1]

    @property
    def complete(self) -> bool:
        """Whether every system's output exists for every pair (no partial coverage)."""
        return self.observed is None

    @property
    def observed(self) -> np.ndarray | None:
        """Which judgements exist, bool shape (n_pairs, n_systems); None when all do (a complete study)."""
        def compute(judgements: "Judgements"):
            if judgements.scores.dtype.kind != "f":
                return None
            mask = ~np.isnan(judgements.scores)
            mask.flags.writeable = False
            return None if mask.all() else mask
        return self.derived("observed", compute)

    @property
    def has_blocks(self) -> bool:
        block = self.block if self.pair_log is None else self.pair_log["block"]
        return bool(block.size) and bool(block.min() >= 0)

    def to_frame(self) -> pd.DataFrame:
        """The tidy long table, one row per judgement.

        Returns
        -------
        pandas.DataFrame
            Columns ``annotator, document, block, system, score`` (no row for a missing output); ``block``
            is missing (<NA>) for designs without blocks; ``system`` holds
            the system names.
        """
        n_pairs, n_systems = self.scores.shape
        block = pd.array(np.repeat(self.block, n_systems), dtype="Int64")
        if not self.has_blocks:
            block[:] = pd.NA
        frame = pd.DataFrame({
            "annotator": np.repeat(self.annotator, n_systems),
            "document": np.repeat(self.document, n_systems),
            "block": block,
            "system": np.tile(np.asarray(self.systems, dtype=object), n_pairs),
            "score": self.scores.ravel(),
        })
        if self.complete:
            return frame
        # a missing output has no judgement: its row is left out, never written as a score
        frame = frame[self.observed.ravel()].reset_index(drop=True)
        return frame.astype({"score": np.int64})

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, systems=None, block_column: str | None = None,
                   allow_missing: bool = False) -> "Judgements":
        """Build from a long table with columns ``annotator, document, system, score``.

        Parameters
        ----------
        frame : pandas.DataFrame
            One row per judgement. Every (annotator, document) pair must score
            every system exactly once (with ``allow_missing``: at most once).
        systems : sequence of str, optional
            System order; default the order of first appearance.
        block_column : str, optional
            Column with block ids. Without it, blocks are recovered as the
            groups of annotators that share the same set of documents (the
            paper's data have no block column); if those groups overlap, the
            data have no block structure and ``block`` is -1.
        allow_missing : bool
            A system without a judgement in a pair is a missing output (NaN score, :attr:`observed`), as
            under partial coverage; otherwise it is an error.

        Returns
        -------
        Judgements
        """
        missing = {"annotator", "document", "system", "score"} - set(frame.columns)
        if missing:
            raise ConfigError(f"The judgements table lacks the column(s) {sorted(missing)}; "
                              "it needs annotator, document, system, score")
        if systems is None:
            systems = list(pd.unique(frame["system"]))
        counts = frame.pivot_table(index=["annotator", "document"], columns="system", values="score",
                                   aggfunc="count").reindex(columns=systems).fillna(0).to_numpy()
        if (counts > 1).any() or (not allow_missing and (counts != 1).any()):
            raise ConfigError("Every (annotator, document) pair must score every system exactly once"
                              + (" (at most once: outputs may be missing)" if allow_missing else ""))
        wide = frame.pivot(index=["annotator", "document"], columns="system", values="score").reindex(
            columns=list(systems))
        missing = bool((counts == 0).any())
        ann_codes, _ = pd.factorize(wide.index.get_level_values("annotator"), sort=True)
        doc_codes, _ = pd.factorize(wide.index.get_level_values("document"), sort=True)
        if block_column is not None:
            blocks = frame.groupby(["annotator", "document"])[block_column].first().reindex(wide.index)
            block, _ = pd.factorize(blocks, sort=True)
        else:
            block = _blocks_from_shared_documents(ann_codes, doc_codes)
        scores = wide.to_numpy().astype(float if missing else np.int64)  # NaN: a missing output
        return cls(scores=scores, annotator=ann_codes.astype(np.int64),
                   document=doc_codes.astype(np.int64), block=np.asarray(block, dtype=np.int64),
                   systems=tuple(systems))


def _blocks_from_shared_documents(annotator: np.ndarray, document: np.ndarray) -> np.ndarray:
    """Group annotators that judged the same document set into blocks (-1 if sets overlap)."""
    doc_sets: dict[int, frozenset] = {}
    for ann in np.unique(annotator):
        doc_sets[int(ann)] = frozenset(document[annotator == ann].tolist())
    distinct = sorted(set(doc_sets.values()), key=lambda s: min(s))
    seen: set = set()
    for docs in distinct:
        if seen & docs:
            return np.full(annotator.shape, -1, dtype=np.int64)
        seen |= docs
    block_of_set = {docs: i for i, docs in enumerate(distinct)}
    return np.array([block_of_set[doc_sets[int(a)]] for a in annotator], dtype=np.int64)
