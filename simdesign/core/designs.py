"""Annotation designs: who judges which document.

Every assigned (annotator, document) pair judges the outputs of all systems
for that document, as in Steen & Markert (2021). A design turns into an
:class:`Assignment` (one row per assigned pair); the model then samples the
scores of every system for every row.

Three kinds exist (docs/designs.md):

* :class:`BlockDesign` -- ``blocks`` blocks, each with its own
  ``docs_per_block`` documents and ``annotators_per_block`` annotators who
  judge every document of their block. *Nested* is ``annotators_per_block=1``,
  *fully crossed* is ``blocks=1``.
* :class:`PoolDesign` -- ``docs`` documents share a pool of ``annotators``
  workers; each document gets ``judgements_per_output`` distinct annotators,
  drawn anew in every trial with loads as even as possible.
* :class:`OverlapDesign` -- ``shared_docs`` judged by all ``annotators`` plus
  ``unique_docs_per_annotator`` judged by one annotator each (ReproHum's layout).
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from simdesign.core.errors import ConfigError
from simdesign.core.checks import is_integer, is_number
from simdesign.core.seeds import helper_rng


@dataclass(frozen=True)
class Assignment:
    """The (annotator, document) pairs of one realised design.

    Attributes
    ----------
    annotator, document : ndarray of int, shape (n_pairs,)
        Integer ids, 0-based and dense.
    block : ndarray of int, shape (n_pairs,)
        Block id of each pair, or -1 for designs without blocks.
    n_annotators, n_documents, n_blocks : int
        Counts of distinct ids (``n_blocks`` is 0 without blocks).
    """

    annotator: np.ndarray
    document: np.ndarray
    block: np.ndarray
    n_annotators: int
    n_documents: int
    n_blocks: int


def _positive_int(errors: list[str], field: str, value) -> int:
    if not is_integer(value, 1):
        errors.append(f"The '{field}' field must be a positive integer; got {value!r}")
        return 1
    return int(value)


COVERAGE_FIELD = "coverage"
"""The optional design field of every design kind: which documents each system has outputs for."""


@dataclass(frozen=True)
class Coverage:
    """Which documents each system has an output for: *partial coverage* (docs/designs.md).

    A system that covers only part of the documents has no output for the others, so nobody judges
    them there: those (system, document) judgements do not exist (the study's
    :class:`~simdesign.core.judgements.Judgements` marks them missing, its long table lacks their rows).

    Parameters
    ----------
    systems : tuple of (str, value)
        ``(system name, share or documents)`` sorted by name; a share in (0, 1] means that system has
        outputs for round(share x docs) documents, drawn anew in every trial (uniformly, without
        replacement, from the trial's data stream after every other draw); a tuple of 0-based document
        indices means exactly those documents in every trial. Systems not named cover every document.
        The name ``*`` stands for every system not named otherwise.

    Examples
    --------
    >>> Coverage.from_config(0.8).label, Coverage.from_config({"b": [0, 2]}).describe()
    ('cov0.8', 'b: documents [0, 2]')
    """

    systems: tuple

    EVERY: ClassVar[str] = "*"

    @classmethod
    def from_config(cls, value) -> "Coverage":
        """The config's form: a share for every system, or a mapping system -> share or list of documents.

        Raises
        ------
        ConfigError
            Naming the system and value (the documents' range is checked by the design, which knows it).
        """
        if isinstance(value, Coverage):
            return value
        mapping = {cls.EVERY: value} if is_number(value) else value
        if not isinstance(mapping, dict) or not mapping:
            raise ConfigError(f"The '{COVERAGE_FIELD}' field must be a share in (0, 1] for every system, or a "
                              f"mapping system -> share or list of 0-based documents; got {value!r}")
        errors, items = [], []
        for system, spec in mapping.items():
            where = COVERAGE_FIELD if system == cls.EVERY else f"{COVERAGE_FIELD}.{system}"
            if not isinstance(system, str) or not system:
                errors.append(f"The '{COVERAGE_FIELD}' field's keys must be system names; got {system!r}")
            elif is_number(spec):
                if not 0 < spec <= 1:
                    errors.append(f"The '{where}' share must be in (0, 1]; got {spec!r}")
                items.append((system, float(spec)))
            elif isinstance(spec, (list, tuple)) and spec and all(is_integer(d, 0) for d in spec):
                if len(set(spec)) != len(spec):
                    errors.append(f"The '{where}' documents list some document twice; got {list(spec)}")
                items.append((system, tuple(sorted(int(d) for d in spec))))
            else:
                errors.append(f"The '{where}' field must be a share in (0, 1] or a non-empty list of 0-based "
                              f"document indices; got {spec!r}")
        if errors:
            raise ConfigError(errors)
        return cls(tuple(sorted(items)))

    def to_config(self):
        """The config's form (:meth:`from_config` of it gives an equal Coverage)."""
        if len(self.systems) == 1 and self.systems[0][0] == self.EVERY:
            return self.systems[0][1]
        return {system: (list(spec) if isinstance(spec, tuple) else spec) for system, spec in self.systems}

    @property
    def label(self) -> str:
        """``cov<share>`` for one share of every system, else ``cov`` and a digest of the mapping."""
        if len(self.systems) == 1 and self.systems[0][0] == self.EVERY:
            return f"cov{self.systems[0][1]:g}"
        return "cov" + hashlib.sha256(json.dumps(self.to_config(), sort_keys=True).encode()).hexdigest()[:8]

    def named(self) -> list[str]:
        """The system names the coverage gives (``*`` left out)."""
        return [system for system, _ in self.systems if system != self.EVERY]

    def spec_of(self, system: str):
        """A system's share or documents, or None when it covers every document."""
        found = dict(self.systems)
        return found.get(system, found.get(self.EVERY))

    def problems(self, docs: int) -> list[str]:
        """What does not fit a design of ``docs`` documents (a document out of range, a share of no document)."""
        errors = []
        for system, spec in self.systems:
            where = f"{COVERAGE_FIELD}.{system}"
            if isinstance(spec, tuple) and spec[-1] >= docs:
                errors.append(f"The '{where}' documents must be 0-based indices below the design's {docs} "
                              f"documents; got {list(spec)}")
            elif isinstance(spec, float) and round(spec * docs) < 1:
                errors.append(f"The '{where}' share {spec:g} of {docs} documents covers no document; give a "
                              f"share of at least {1 / docs:.3g}")
        return errors

    def covered_count(self, spec, docs: int) -> int:
        """How many documents a system with ``spec`` (a share or documents) covers."""
        return len(spec) if isinstance(spec, tuple) else int(round(spec * docs))

    def covered(self, rng: np.random.Generator, systems, docs: int) -> np.ndarray:
        """Which documents each system covers in one trial: bool, shape (docs, len(systems)).

        A share's documents are drawn from ``rng`` (system by system in model order); document lists
        draw nothing.

        Raises
        ------
        ConfigError
            The coverage names a system the model does not have.
        """
        unknown = sorted(set(self.named()) - set(systems))
        if unknown:
            raise ConfigError(f"The '{COVERAGE_FIELD}' field names system(s) {unknown} the model does not have; "
                              f"its systems: {list(systems)}")
        covered = np.ones((docs, len(systems)), dtype=bool)
        for column, system in enumerate(systems):
            spec = self.spec_of(system)
            if spec is None:
                continue
            covered[:, column] = False
            chosen = spec if isinstance(spec, tuple) else rng.choice(docs, self.covered_count(spec, docs),
                                                                     replace=False)
            covered[list(chosen), column] = True
        return covered

    def judgements(self, pairs_per_document: np.ndarray, systems) -> float:
        """Expected judgements of a study whose documents have ``pairs_per_document`` assigned annotators."""
        docs, pairs = len(pairs_per_document), float(pairs_per_document.sum())
        total = 0.0
        for system in systems:
            spec = self.spec_of(system)
            if spec is None:
                total += pairs
            elif isinstance(spec, tuple):
                total += float(pairs_per_document[list(spec)].sum())
            else:  # a uniform draw: every document is covered with probability count / docs
                total += pairs * self.covered_count(spec, docs) / docs
        return total

    def describe(self) -> str:
        """One phrase: which share or documents each named system covers."""
        parts = []
        for system, spec in self.systems:
            name = "every system" if system == self.EVERY else system
            parts.append(f"{name}: documents {list(spec)}" if isinstance(spec, tuple)
                         else f"{name}: {spec:.0%} of documents")
        return "; ".join(parts)


def _with_coverage(design, errors: list[str]) -> None:
    """Check a design's ``coverage`` field and store it as a :class:`Coverage` (None: every output exists)."""
    value = design.coverage
    if value is None:
        return
    try:
        coverage = Coverage.from_config(value)
    except ConfigError as exc:
        errors.extend(exc.messages)
        return
    object.__setattr__(design, COVERAGE_FIELD, coverage)
    if not errors:
        errors.extend(coverage.problems(design.docs))


def design_coverage(design):
    """The design's :class:`Coverage`, or None when every output exists (also for a plug-in design kind
    without the ``coverage`` field)."""
    return getattr(design, COVERAGE_FIELD, None)


def coverage_suffix(design) -> str:
    """The label's part for partial coverage: ``-cov...``, or '' for a design whose outputs all exist."""
    coverage = design_coverage(design)
    return "" if coverage is None else f"-{coverage.label}"


def expected_judgements(design, n_systems: int, systems=None) -> float:
    """Judgements of one study of ``design``: the expected count under partial coverage, else the exact one.

    ``systems`` (the model's names) are needed only when the coverage names systems; without them every
    system counts as covered like the coverage's ``*`` entry (or fully).
    """
    coverage = design_coverage(design)
    if coverage is None:
        return design.pairs * n_systems
    names = list(systems) if systems is not None else [f"\0{k}" for k in range(n_systems)]
    total = coverage.judgements(_pairs_per_document(design), names)
    return int(total) if total == int(total) else total


@dataclass(frozen=True)
class Layout:
    """Who judges what in one trial: the assignment, and which documents each system covers (None: all)."""

    assignment: Assignment
    covered: np.ndarray | None = None


def draw_layout(design, rng: np.random.Generator, systems) -> Layout:
    """The layout of one trial, drawn as a study's sampling draws it (the assignment first, the coverage last).

    For studies that share one layout (several criteria judged by the same annotators on the same outputs);
    ``systems`` are the model's names, in order.
    """
    assignment = design.assign(rng)
    coverage = design_coverage(design)
    covered = None if coverage is None else coverage.covered(rng, systems, assignment.n_documents)
    return Layout(assignment, covered)


@functools.lru_cache(maxsize=64)
def _pairs_per_document(design) -> np.ndarray:
    """Assigned annotators of each document (the same in every trial for every design kind)."""
    assignment = design.assign(helper_rng("designs/pairs-per-document"))
    return np.bincount(assignment.document, minlength=assignment.n_documents)


class _Described:
    """:meth:`describe` of every design kind: its layout's phrase, and which outputs exist under partial coverage."""

    def describe(self) -> str:
        """One phrase for reports (docs/designs.md)."""
        phrase = self._layout_phrase()
        if self.coverage is None:
            return phrase
        return f"{phrase}; partial coverage ({self.coverage.describe()}; the other outputs do not exist)"


@dataclass(frozen=True)
class BlockDesign(_Described):
    """Blocks of documents, each judged by its own annotators.

    Parameters
    ----------
    blocks : int
        Number of blocks B.
    docs_per_block : int
        Documents in each block D.
    annotators_per_block : int
        Annotators in each block A; each judges all D documents of the block.

    Examples
    --------
    >>> d = BlockDesign(blocks=20, docs_per_block=5, annotators_per_block=3)
    >>> d.label, d.docs, d.annotators, d.judgements_per_output, d.judgements(5)
    ('block-B20-D5-A3', 100, 60, 3, 1500)
    """

    blocks: int
    docs_per_block: int
    annotators_per_block: int
    coverage: Coverage | None = field(default=None, kw_only=True)
    kind: ClassVar[str] = "block"

    @classmethod
    def example(cls):
        """A small design of this kind, for the contract checks (:mod:`simdesign.testing`)."""
        return BlockDesign(4, 5, 2)

    kind_label: ClassVar[str] = "block design"
    has_blocks: ClassVar[bool] = True
    fields: ClassVar[tuple] = ("blocks", "docs_per_block", "annotators_per_block")
    shapes: ClassVar[tuple] = ("nested", "crossed")
    plot_style: ClassVar[tuple] = ("-", "o")  # line style and marker in figures
    # Planner hooks (search_designs): the 'search.shapes' it generates, the 'search' keys it reads,
    # and the colour of each design shape in the plan figure.
    search_shapes: ClassVar[tuple] = ("nested", "block", "crossed")
    search_keys: ClassVar[tuple] = ("docs_per_block", "annotators_per_block")
    plan_colours: ClassVar[dict] = {"nested": "tab:blue", "block": "tab:green", "crossed": "tab:red"}

    def __post_init__(self):
        errors: list[str] = []
        for field in ("blocks", "docs_per_block", "annotators_per_block"):
            _positive_int(errors, field, getattr(self, field))
        _with_coverage(self, errors)
        if errors:
            raise ConfigError(errors)

    @property
    def label(self) -> str:
        return (f"block-B{self.blocks}-D{self.docs_per_block}-A{self.annotators_per_block}"
                + coverage_suffix(self))

    @classmethod
    def search_designs(cls, shape: str, n_docs: int, grid) -> list:
        """Planner hook: the designs of a search shape with ``n_docs`` documents in all.

        Documents per block D from ``search.docs_per_block`` (only where D divides the documents):
        *nested* with A = 1, *block* with B >= 2 and A >= 2 from ``search.annotators_per_block``,
        *crossed* with B = 1. ``grid(key, default)`` reads a 'search' key as a sorted list of ints.
        """
        if shape == "crossed":
            return [cls(1, n_docs, a) for a in grid("annotators_per_block", [2, 3]) if a >= 2]
        per_block = [d for d in grid("docs_per_block", [1, 2, 5, 10]) if n_docs % d == 0]
        if shape == "nested":
            return [cls(n_docs // d, d, 1) for d in per_block]
        return [cls(n_docs // d, d, a) for d in per_block for a in grid("annotators_per_block", [2, 3])
                if n_docs // d >= 2 and a >= 2]

    @property
    def shape(self) -> str:
        """'nested' (one annotator per block) or 'crossed' (several; fully crossed when there is one block)."""
        return self.shape_of(self.columns())

    @staticmethod
    def shape_of(columns) -> str:
        """The shape of a design from its output-table columns (:meth:`columns`)."""
        return "nested" if columns["annotators_per_block"] == 1 else "crossed"

    @property
    def docs(self) -> int:
        return self.blocks * self.docs_per_block

    @property
    def annotators(self) -> int:
        return self.blocks * self.annotators_per_block

    @property
    def judgements_per_output(self) -> int:
        return self.annotators_per_block

    @property
    def pairs(self) -> int:
        """Assigned (annotator, document) pairs."""
        return self.docs * self.annotators_per_block

    def judgements(self, n_systems: int, systems=None) -> int | float:
        """Judgements of one study (expected under partial coverage: :func:`expected_judgements`)."""
        return expected_judgements(self, n_systems, systems)

    def judgements_per_annotator(self, n_systems: int) -> int:
        return self.docs_per_block * n_systems

    def max_judgements_per_annotator(self, n_systems: int) -> int:
        """The heaviest annotator's load (every annotator of a block design has the same)."""
        return self.judgements_per_annotator(n_systems)

    def _layout_phrase(self) -> str:
        """The layout in one phrase (:meth:`describe` adds the coverage)."""
        if self.shape == "nested":
            documents = "document" if self.docs_per_block == 1 else "documents"
            return f"nested: {self.annotators} annotators, each judging their own {self.docs_per_block} {documents}"
        if self.blocks == 1:
            return f"fully crossed: {self.annotators} annotators all judging the same {self.docs} documents"
        return (f"{self.blocks} blocks of {self.docs_per_block} documents, {self.annotators_per_block} "
                f"annotators per block ({self.annotators} in all)")

    def columns(self) -> dict:
        """The design's fields and totals, as written in every output table."""
        return {
            "design": self.label, "kind": self.kind, "blocks": self.blocks,
            "docs_per_block": self.docs_per_block, "annotators_per_block": self.annotators_per_block,
            "docs": self.docs, "annotators": self.annotators,
            "judgements_per_output": self.judgements_per_output,
        }

    def assign(self, rng: np.random.Generator) -> Assignment:
        """The fixed block layout (``rng`` is unused: block designs are not random).

        Built once per layout and shared by every call (a study per trial asks for it), so its arrays
        are read-only.
        """
        return _block_assignment(self.blocks, self.docs_per_block, self.annotators_per_block)


@functools.lru_cache(maxsize=256)
def _block_assignment(blocks: int, dpb: int, apb: int) -> Assignment:
    block = np.repeat(np.arange(blocks), dpb * apb)
    within_doc = np.tile(np.repeat(np.arange(dpb), apb), blocks)
    within_ann = np.tile(np.arange(apb), blocks * dpb)
    assignment = Assignment(annotator=block * apb + within_ann, document=block * dpb + within_doc, block=block,
                            n_annotators=blocks * apb, n_documents=blocks * dpb, n_blocks=blocks)
    for array in (assignment.annotator, assignment.document, assignment.block):
        array.flags.writeable = False
    return assignment


class _WithoutBlocks(_Described):
    """The summary columns of a design kind without blocks (pool, overlap): its block columns are empty."""

    def columns(self) -> dict:
        return {
            "design": self.label, "kind": self.kind, "blocks": None, "docs_per_block": None,
            "annotators_per_block": None, "docs": self.docs, "annotators": self.annotators,
            "judgements_per_output": self.judgements_per_output,
        }


@dataclass(frozen=True)
class PoolDesign(_WithoutBlocks):
    """A pool of annotators shares the documents, without block structure.

    Parameters
    ----------
    docs : int
        Number of documents N.
    annotators : int
        Size of the annotator pool M.
    judgements_per_output : int
        Distinct annotators per document k (k <= M, and N x k >= M so that
        every annotator of the pool judges something).

    Examples
    --------
    >>> d = PoolDesign(docs=100, annotators=30, judgements_per_output=3)
    >>> d.label, d.judgements(5)
    ('pool-N100-M30-k3', 1500)
    """

    docs: int
    annotators: int
    judgements_per_output: int
    coverage: Coverage | None = field(default=None, kw_only=True)
    kind: ClassVar[str] = "pool"

    @classmethod
    def example(cls):
        """A small design of this kind, for the contract checks (:mod:`simdesign.testing`)."""
        return PoolDesign(docs=12, annotators=6, judgements_per_output=2)

    kind_label: ClassVar[str] = "pool design"
    has_blocks: ClassVar[bool] = False
    shape: ClassVar[str] = "pool"
    fields: ClassVar[tuple] = ("docs", "annotators", "judgements_per_output")
    shapes: ClassVar[tuple] = ("pool",)
    # A pool's sizes mean something else than a block design's (M annotators share N documents),
    # so figures draw it in its own style and never join it to a block design by one line.
    plot_style: ClassVar[tuple] = ("--", "s")
    no_blocks_reason: ClassVar[str] = "pool designs have no blocks"
    search_shapes: ClassVar[tuple] = ("pool",)
    search_keys: ClassVar[tuple] = ("annotators", "judgements_per_output")
    plan_colours: ClassVar[dict] = {"pool": "tab:purple"}

    def __post_init__(self):
        errors: list[str] = []
        docs = _positive_int(errors, "docs", self.docs)
        annotators = _positive_int(errors, "annotators", self.annotators)
        k = _positive_int(errors, "judgements_per_output", self.judgements_per_output)
        if not errors and k > annotators:
            errors.append(
                f"The 'judgements_per_output' field must be at most 'annotators' ({annotators}): "
                f"each document needs distinct annotators; got {k}"
            )
        if not errors and docs * k < annotators:
            # Otherwise some of the pool never judges anything: the label (and every figure's x) would
            # count annotators who are not in the data.
            errors.append(
                f"The pool design needs 'docs' x 'judgements_per_output' >= 'annotators', so that every "
                f"annotator of the pool judges something; got docs {docs} x judgements_per_output {k} = "
                f"{docs * k} judged pairs for annotators {annotators}"
            )
        _with_coverage(self, errors)
        if errors:
            raise ConfigError(errors)

    @property
    def label(self) -> str:
        return f"pool-N{self.docs}-M{self.annotators}-k{self.judgements_per_output}" + coverage_suffix(self)

    @classmethod
    def for_workers(cls, workers: int, items_per_worker: int, workers_per_item: int, **options) -> "PoolDesign":
        """The pool in which each of ``workers`` judges about ``items_per_worker`` items (documents, each with
        all its systems' outputs) and every item gets ``workers_per_item`` distinct workers.

        A crowdsourcing platform's assignment (docs/designs.md, "Workers who judge some items"): the
        documents are round(workers x items_per_worker / workers_per_item), and the pool's loads differ by at
        most one document. ``options`` go to the design (e.g. ``coverage``).

        Examples
        --------
        >>> d = PoolDesign.for_workers(46, 26, 3)
        >>> d.label, d.pairs / d.annotators
        ('pool-N399-M46-k3', 26.02173913043478)
        """
        for name, value in (("workers", workers), ("items_per_worker", items_per_worker),
                            ("workers_per_item", workers_per_item)):
            if not is_integer(value, 1):
                raise ConfigError(f"The '{name}' of a worker assignment must be a positive integer; got {value!r}")
        return cls(docs=max(1, round(workers * items_per_worker / workers_per_item)), annotators=workers,
                   judgements_per_output=workers_per_item, **options)

    @classmethod
    def search_designs(cls, shape: str, n_docs: int, grid) -> list:
        """Planner hook: pool size M from ``search.annotators``, k from ``search.judgements_per_output``."""
        return [cls(n_docs, m, k) for m in grid("annotators", [10, 20, 40])
                for k in grid("judgements_per_output", [1, 2, 3]) if k <= m and n_docs * k >= m]

    @property
    def pairs(self) -> int:
        return self.docs * self.judgements_per_output

    def judgements(self, n_systems: int, systems=None) -> int | float:
        """Judgements of one study (expected under partial coverage: :func:`expected_judgements`)."""
        return expected_judgements(self, n_systems, systems)

    def judgements_per_annotator(self, n_systems: int) -> float:
        return self.pairs * n_systems / self.annotators

    def max_judgements_per_annotator(self, n_systems: int) -> int:
        """The heaviest annotator's load (pool loads differ by at most one document)."""
        return math.ceil(self.pairs / self.annotators) * n_systems

    @staticmethod
    def shape_of(columns) -> str:
        return "pool"

    def _layout_phrase(self) -> str:
        """The layout in one phrase (:meth:`describe` adds the coverage)."""
        annotators = "annotator" if self.judgements_per_output == 1 else "annotators"
        return (f"a pool of {self.annotators} annotators sharing {self.docs} documents, "
                f"{self.judgements_per_output} {annotators} per document")

    def assign(self, rng: np.random.Generator) -> Assignment:
        """Draw k distinct annotators per document with loads differing by at most one.

        Documents are visited in order; each takes the k least-loaded
        annotators, ties broken by a fresh random priority. This keeps loads
        within one of each other (a greedy fill of the lowest levels) while
        mixing which annotators share documents.
        """
        n_docs, pool, k = self.docs, self.annotators, self.judgements_per_output
        load = np.zeros(pool, dtype=np.int64)
        chosen = np.empty((n_docs, k), dtype=np.int64)
        priorities = rng.random((n_docs, pool))
        for doc in range(n_docs):
            # load dominates; the random priority in [0, 1) only breaks ties
            picked = np.argpartition(load + priorities[doc], k - 1)[:k]
            chosen[doc] = picked
            load[picked] += 1
        # annotator ids are relabelled so that only annotators with work appear, densely
        used, dense = np.unique(chosen.ravel(), return_inverse=True)
        return Assignment(
            annotator=dense.astype(np.int64),
            document=np.repeat(np.arange(n_docs), k),
            block=np.full(n_docs * k, -1, dtype=np.int64),
            n_annotators=len(used),
            n_documents=n_docs,
            n_blocks=0,
        )


@dataclass(frozen=True)
class OverlapDesign(_WithoutBlocks):
    """Shared documents judged by every annotator, plus documents of each annotator's own.

    The layout of ReproHum's re-runs (Ito & Gatt 2023): a few documents are
    judged by all annotators (to measure agreement), the rest by one
    annotator each. The shared documents tie every annotator to every other,
    so the design has no independent blocks: block-level tests and SHR do
    not apply (the config refuses them).

    Parameters
    ----------
    shared_docs : int
        Documents S judged by every annotator (at least 1).
    unique_docs_per_annotator : int
        Documents U each annotator judges alone (0 or more).
    annotators : int
        Annotators A (at least 2: with one, nothing is shared).

    Examples
    --------
    >>> d = OverlapDesign(shared_docs=10, unique_docs_per_annotator=30, annotators=3)
    >>> d.label, d.docs, d.pairs, d.judgements(5), d.judgements_per_annotator(5)
    ('overlap-S10-U30-A3', 100, 120, 600, 200)
    """

    shared_docs: int
    unique_docs_per_annotator: int
    annotators: int
    coverage: Coverage | None = field(default=None, kw_only=True)
    kind: ClassVar[str] = "overlap"

    @classmethod
    def example(cls):
        """A small design of this kind, for the contract checks (:mod:`simdesign.testing`)."""
        return OverlapDesign(shared_docs=2, unique_docs_per_annotator=3, annotators=3)

    kind_label: ClassVar[str] = "overlap design"
    has_blocks: ClassVar[bool] = False
    shape: ClassVar[str] = "overlap"
    fields: ClassVar[tuple] = ("shared_docs", "unique_docs_per_annotator", "annotators")
    shapes: ClassVar[tuple] = ("overlap",)
    plot_style: ClassVar[tuple] = (":", "^")
    no_blocks_reason: ClassVar[str] = ("the shared documents tie all annotators together, so the design has no "
                                       "independent blocks to test over or split in halves")
    refused_estimands: ClassVar[tuple] = ("shr",)
    search_shapes: ClassVar[tuple] = ("overlap",)
    search_keys: ClassVar[tuple] = ("shared_docs", "annotators")
    plan_colours: ClassVar[dict] = {"overlap": "tab:orange"}

    def __post_init__(self):
        errors: list[str] = []
        _positive_int(errors, "shared_docs", self.shared_docs)
        unique = self.unique_docs_per_annotator
        if not is_integer(unique, 0):
            errors.append(f"The 'unique_docs_per_annotator' field must be a non-negative integer; got {unique!r}")
        annotators = self.annotators
        if not is_integer(annotators, 2):
            errors.append(f"The 'annotators' field of an overlap design must be an integer of at least 2 "
                          f"(with one annotator nothing is shared); got {annotators!r}")
        _with_coverage(self, errors)
        if errors:
            raise ConfigError(errors)

    @property
    def label(self) -> str:
        return (f"overlap-S{self.shared_docs}-U{self.unique_docs_per_annotator}-A{self.annotators}"
                + coverage_suffix(self))

    @classmethod
    def search_designs(cls, shape: str, n_docs: int, grid) -> list:
        """Planner hook: S from ``search.shared_docs`` (default 10), A from ``search.annotators`` (default 3).

        The other documents are split evenly, so only (S, A) where A divides ``n_docs`` - S qualify.
        """
        return [cls(s, (n_docs - s) // a, a) for s in grid("shared_docs", [10]) for a in grid("annotators", [3])
                if a >= 2 and s <= n_docs and (n_docs - s) % a == 0]

    @property
    def docs(self) -> int:
        return self.shared_docs + self.unique_docs_per_annotator * self.annotators

    @property
    def pairs(self) -> int:
        return (self.shared_docs + self.unique_docs_per_annotator) * self.annotators

    @property
    def judgements_per_output(self) -> float:
        """The mean over documents: shared ones get ``annotators`` judgements, the others one."""
        mean = self.pairs / self.docs
        return int(mean) if mean == int(mean) else mean

    def judgements(self, n_systems: int, systems=None) -> int | float:
        """Judgements of one study (expected under partial coverage: :func:`expected_judgements`)."""
        return expected_judgements(self, n_systems, systems)

    def judgements_per_annotator(self, n_systems: int) -> int:
        return (self.shared_docs + self.unique_docs_per_annotator) * n_systems

    def max_judgements_per_annotator(self, n_systems: int) -> int:
        """Every annotator has the same load."""
        return self.judgements_per_annotator(n_systems)

    @staticmethod
    def shape_of(columns) -> str:
        return "overlap"

    def _layout_phrase(self) -> str:
        """The layout in one phrase (:meth:`describe` adds the coverage)."""
        shared = "document" if self.shared_docs == 1 else "documents"
        own = "document" if self.unique_docs_per_annotator == 1 else "documents"
        return (f"{self.annotators} annotators all judging the same {self.shared_docs} shared {shared}, "
                f"plus {self.unique_docs_per_annotator} {own} each of their own ({self.docs} in all)")

    def assign(self, rng: np.random.Generator) -> Assignment:
        """The fixed layout (``rng`` is unused): documents 0..S-1 are shared, then each annotator's own."""
        shared, unique, annotators = self.shared_docs, self.unique_docs_per_annotator, self.annotators
        shared_annotator = np.tile(np.arange(annotators), shared)
        shared_document = np.repeat(np.arange(shared), annotators)
        own_annotator = np.repeat(np.arange(annotators), unique)
        own_document = shared + np.arange(annotators * unique)
        return Assignment(
            annotator=np.concatenate([shared_annotator, own_annotator]).astype(np.int64),
            document=np.concatenate([shared_document, own_document]).astype(np.int64),
            block=np.full(self.pairs, -1, dtype=np.int64),
            n_annotators=annotators,
            n_documents=self.docs,
            n_blocks=0,
        )


DESIGN_KINDS: dict[str, type] = {}
"""Registry of design kinds: the config's ``kind`` field -> class.

A design kind is a frozen dataclass whose fields are its config fields, with the class attributes
``kind``, ``kind_label``, ``has_blocks``, ``fields``, ``shapes``, ``plot_style``, optionally
``no_blocks_reason`` and ``refused_estimands`` (designs without blocks: why block tests do not apply,
and estimands the config refuses), the planner hooks ``search_shapes``, ``search_keys``,
``plan_colours`` and ``search_designs(shape, n_docs, grid)``, and the members
``label``, ``shape``, ``shape_of(columns)``, ``docs``, ``annotators``, ``judgements_per_output``,
``pairs``, ``judgements(n, systems=None)`` (``systems``: the model's system names, which a ``coverage``
reads), ``judgements_per_annotator(n)``, ``max_judgements_per_annotator(n)``, ``columns()``,
``describe()`` and ``assign(rng)``; tests/test_registries.py checks every registered kind.
"""


@dataclass(frozen=True)
class BattleDesign(_WithoutBlocks):
    """Arena-style battles: each judgement is one pair of systems' outputs for one prompt, judged by one judge.

    For pairwise preference only (:mod:`simdesign.methods.pairwise`), as in Chatbot Arena's logs (Chiang et
    al., 2024): every battle draws its prompt (document) uniformly from ``prompts``, its judge (annotator)
    uniformly from ``judges`` and its pair of systems uniformly from all pairs, so a prompt and a judge
    appear in many battles and some in none.

    Parameters
    ----------
    battles : int
        Judgements in the study (each one comparison).
    prompts : int
        The pool of prompts (documents) battles draw from.
    judges : int
        The pool of judges (annotators) battles draw from.

    Examples
    --------
    >>> d = BattleDesign(battles=2000, prompts=500, judges=50)
    >>> d.label, d.pairs
    ('battles-N2000-P500-J50', 2000)
    """

    battles: int
    prompts: int
    judges: int
    coverage: Coverage | None = field(default=None, kw_only=True)
    kind: ClassVar[str] = "battles"
    kind_label: ClassVar[str] = "Arena-style battles"
    has_blocks: ClassVar[bool] = False
    shape: ClassVar[str] = "battles"
    fields: ClassVar[tuple] = ("battles", "prompts", "judges")
    shapes: ClassVar[tuple] = ("battles",)
    plot_style: ClassVar[tuple] = (":", "^")
    no_blocks_reason: ClassVar[str] = "battle designs have no blocks"
    search_shapes: ClassVar[tuple] = ("battles",)
    search_keys: ClassVar[tuple] = ("battles", "judges")
    plan_colours: ClassVar[dict] = {"battles": "tab:olive"}
    one_pair_each: ClassVar[bool] = True  # a pairwise judgement shows one pair drawn at random
    only_covering: ClassVar[str] = "pair"  # only for methods whose judgement covers a pair of outputs

    @classmethod
    def example(cls):
        """A small design of this kind, for the contract checks (:mod:`simdesign.testing`)."""
        return BattleDesign(battles=60, prompts=20, judges=5)

    def __post_init__(self):
        errors: list[str] = []
        for name in self.fields:
            _positive_int(errors, name, getattr(self, name))
        if self.coverage is not None:
            errors.append("A battles design has no 'coverage' field: a battle draws its pair among the systems")
        if errors:
            raise ConfigError(errors)

    @property
    def label(self) -> str:
        return f"battles-N{self.battles}-P{self.prompts}-J{self.judges}"

    @classmethod
    def search_designs(cls, shape: str, n_docs: int, grid) -> list:
        """Planner hook ("how many battles"): ``n_docs`` prompts, battles from ``search.battles`` and the judges'
        pool from ``search.judges``."""
        return [cls(battles, n_docs, judges) for battles in grid("battles", [1000, 2000, 5000, 10000])
                for judges in grid("judges", [50])]

    @property
    def docs(self) -> int:
        return self.prompts

    @property
    def annotators(self) -> int:
        return self.judges

    @property
    def pairs(self) -> int:
        """Rows of a study: one (judge, prompt) per battle."""
        return self.battles

    @property
    def judgements_per_output(self) -> float:
        return self.battles / self.prompts

    def judgements(self, n_systems: int, systems=None) -> int:
        """Outputs judged: two per battle."""
        return 2 * self.battles

    def judgements_per_annotator(self, n_systems: int) -> float:
        return 2 * self.battles / self.judges

    def max_judgements_per_annotator(self, n_systems: int) -> float:
        """The expected load of a judge (battles draw judges uniformly, so loads vary)."""
        return self.judgements_per_annotator(n_systems)

    @staticmethod
    def shape_of(columns) -> str:
        return "battles"

    def _layout_phrase(self) -> str:
        return (f"{self.battles} battles, each one pair of outputs for a prompt drawn from {self.prompts}, "
                f"judged by one of {self.judges} judges")

    def assign(self, rng: np.random.Generator) -> Assignment:
        """Each battle's prompt, then each battle's judge, drawn uniformly (the pair is drawn by the method)."""
        document = rng.integers(self.prompts, size=self.battles).astype(np.int64)
        annotator = rng.integers(self.judges, size=self.battles).astype(np.int64)
        return Assignment(annotator=annotator, document=document, block=np.full(self.battles, -1, dtype=np.int64),
                          n_annotators=self.judges, n_documents=self.prompts, n_blocks=0)


def register_design_kind(cls: type) -> type:
    """Add a design kind to :data:`DESIGN_KINDS` (usable as a class decorator; the same class again is harmless).

    Raises
    ------
    ConfigError
        Another class under a taken kind name.
    """
    from simdesign.core.registry import refuse_clash, same_entry

    if cls.kind in DESIGN_KINDS and not same_entry(DESIGN_KINDS[cls.kind], cls):
        raise refuse_clash("design kind", cls.kind, DESIGN_KINDS[cls.kind])
    DESIGN_KINDS[cls.kind] = cls
    return cls


def unregister_design_kind(kind: str) -> None:
    """Remove a design kind (for a test that registers one of its own for a while)."""
    DESIGN_KINDS.pop(kind, None)


# Readers of the registry at call time: a kind registered after a module that uses them was imported (a plug-in,
# a test's own kind) is planned and drawn like the built-in ones.
def search_shapes() -> tuple:
    """The planner's 'search.shapes' values: every registered kind's ``search_shapes``, in registration order."""
    return tuple(shape for cls in DESIGN_KINDS.values() for shape in getattr(cls, "search_shapes", ()))


def search_keys() -> tuple:
    """The 'search' keys the registered kinds' planner hooks read (each once, in registration order)."""
    return tuple(dict.fromkeys(key for cls in DESIGN_KINDS.values() for key in getattr(cls, "search_keys", ())))


def plan_colours() -> dict:
    """Design shape -> its colour in the plan figure, from every registered kind's ``plan_colours``."""
    return {shape: colour for cls in DESIGN_KINDS.values()
            for shape, colour in getattr(cls, "plan_colours", {}).items()}


def shape_markers() -> dict:
    """Design shape -> the marker of its kind's ``plot_style``, for every registered kind."""
    return {shape: cls.plot_style[1] for cls in DESIGN_KINDS.values() for shape in cls.shapes}


def design_to_mapping(design) -> dict:
    """A design as a config writes it (one design, scalar fields): ``{'kind': ..., field: value, ...}``."""
    mapping = {"kind": design.kind, **{name: getattr(design, name) for name in design.fields}}
    coverage = design_coverage(design)
    if coverage is not None:  # written only when set, so complete designs keep their form
        mapping[COVERAGE_FIELD] = coverage.to_config()
    return mapping


def design_from_mapping(mapping: dict):
    """The inverse of :func:`design_to_mapping` (raises ConfigError naming the kind or the fields)."""
    kind = mapping.get("kind")
    if kind not in DESIGN_KINDS:
        raise ConfigError(f"The design 'kind' field must be one of {sorted(DESIGN_KINDS)}; got {kind!r}")
    cls = DESIGN_KINDS[kind]
    unknown = sorted(set(mapping) - {"kind", COVERAGE_FIELD, *cls.fields})
    missing = [field for field in cls.fields if field not in mapping]
    if unknown or missing:
        raise ConfigError(f"A {kind} design has the fields {list(cls.fields)}; "
                          f"unknown: {unknown}, missing: {missing}")
    # coverage only when given: a plug-in design kind need not have the field
    extra = {COVERAGE_FIELD: mapping[COVERAGE_FIELD]} if mapping.get(COVERAGE_FIELD) is not None else {}
    return cls(**{name: mapping[name] for name in cls.fields}, **extra)


def shape_of_row(row) -> str:
    """The shape of the design in an output-table row (its ``kind`` and design columns)."""
    return DESIGN_KINDS[row["kind"]].shape_of(row)


register_design_kind(BlockDesign)
register_design_kind(PoolDesign)
register_design_kind(OverlapDesign)
register_design_kind(BattleDesign)

Design = BlockDesign | PoolDesign | OverlapDesign | BattleDesign
