"""Annotation designs: who judges which document.

Every assigned (annotator, document) pair judges the outputs of all systems
for that document, as in Steen & Markert (2021). A design turns into an
:class:`Assignment` (one row per assigned pair); the model then samples the
scores of every system for every row.

Two kinds exist (docs/designs.md):

* :class:`BlockDesign` -- ``blocks`` blocks, each with its own
  ``docs_per_block`` documents and ``annotators_per_block`` annotators who
  judge every document of their block. *Nested* is ``annotators_per_block=1``,
  *fully crossed* is ``blocks=1``.
* :class:`PoolDesign` -- ``docs`` documents share a pool of ``annotators``
  workers; each document gets ``judgements_per_output`` distinct annotators,
  drawn anew in every trial with loads as even as possible.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simdesign.errors import ConfigError


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
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        errors.append(f"The '{field}' field must be a positive integer; got {value!r}")
        return 1
    return int(value)


@dataclass(frozen=True)
class BlockDesign:
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
    kind: ClassVar[str] = "block"
    has_blocks: ClassVar[bool] = True

    def __post_init__(self):
        errors: list[str] = []
        for field in ("blocks", "docs_per_block", "annotators_per_block"):
            _positive_int(errors, field, getattr(self, field))
        if errors:
            raise ConfigError(errors)

    @property
    def label(self) -> str:
        return f"block-B{self.blocks}-D{self.docs_per_block}-A{self.annotators_per_block}"

    @property
    def shape(self) -> str:
        """'nested' (one annotator per block) or 'crossed' (several; fully crossed when there is one block)."""
        return "nested" if self.annotators_per_block == 1 else "crossed"

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

    def judgements(self, n_systems: int) -> int:
        return self.pairs * n_systems

    def judgements_per_annotator(self, n_systems: int) -> int:
        return self.docs_per_block * n_systems

    def columns(self) -> dict:
        """The design's fields and totals, as written in every output table."""
        return {
            "design": self.label, "kind": self.kind, "blocks": self.blocks,
            "docs_per_block": self.docs_per_block, "annotators_per_block": self.annotators_per_block,
            "docs": self.docs, "annotators": self.annotators,
            "judgements_per_output": self.judgements_per_output,
        }

    def assign(self, rng: np.random.Generator) -> Assignment:
        """The fixed block layout (``rng`` is unused: block designs are not random)."""
        blocks, dpb, apb = self.blocks, self.docs_per_block, self.annotators_per_block
        block = np.repeat(np.arange(blocks), dpb * apb)
        within_doc = np.tile(np.repeat(np.arange(dpb), apb), blocks)
        within_ann = np.tile(np.arange(apb), blocks * dpb)
        return Assignment(
            annotator=block * apb + within_ann,
            document=block * dpb + within_doc,
            block=block,
            n_annotators=self.annotators,
            n_documents=self.docs,
            n_blocks=blocks,
        )


@dataclass(frozen=True)
class PoolDesign:
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
    kind: ClassVar[str] = "pool"
    has_blocks: ClassVar[bool] = False
    shape: ClassVar[str] = "pool"

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
        if errors:
            raise ConfigError(errors)

    @property
    def label(self) -> str:
        return f"pool-N{self.docs}-M{self.annotators}-k{self.judgements_per_output}"

    @property
    def pairs(self) -> int:
        return self.docs * self.judgements_per_output

    def judgements(self, n_systems: int) -> int:
        return self.pairs * n_systems

    def judgements_per_annotator(self, n_systems: int) -> float:
        return self.pairs * n_systems / self.annotators

    def columns(self) -> dict:
        return {
            "design": self.label, "kind": self.kind, "blocks": None, "docs_per_block": None,
            "annotators_per_block": None, "docs": self.docs, "annotators": self.annotators,
            "judgements_per_output": self.judgements_per_output,
        }

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


DESIGN_KINDS = {"block": BlockDesign, "pool": PoolDesign}
"""Registry of design kinds: the config's ``kind`` field -> class."""

Design = BlockDesign | PoolDesign
