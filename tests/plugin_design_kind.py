"""A design kind defined outside simdesign, as a user would write one (used by tests/test_plugins.py).

A *ring* design: ``docs`` documents and ``ring_size`` annotators seated in a ring; document d is judged by
the ``judgements_per_output`` annotators d, d + 1, ... (mod ``ring_size``). Neighbouring documents share
annotators, so the design has no independent blocks. Its planner hook reads a 'search' key no built-in kind
has (``ring_size``), so the planner accepts that key only if it reads the registry when it parses a plan.

A registered design kind appears in every list of kinds (error messages, the explorer's controls), so the
tests register it only for as long as they need it (:func:`ring_kind`).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simdesign.core.designs import Assignment, register_design_kind, unregister_design_kind
from simdesign.core.errors import ConfigError


@dataclass(frozen=True)
class RingDesign:
    """Documents judged by consecutive annotators of a ring.

    Parameters
    ----------
    docs : int
        Documents N.
    ring_size : int
        Annotators A (every one judges something: N + k - 1 >= A).
    judgements_per_output : int
        Annotators per document k (at most A).
    """

    docs: int
    ring_size: int
    judgements_per_output: int
    kind: ClassVar[str] = "ring"
    kind_label: ClassVar[str] = "ring design"
    has_blocks: ClassVar[bool] = False
    shape: ClassVar[str] = "ring"
    fields: ClassVar[tuple] = ("docs", "ring_size", "judgements_per_output")
    shapes: ClassVar[tuple] = ("ring",)
    plot_style: ClassVar[tuple] = ("-.", "D")
    no_blocks_reason: ClassVar[str] = "neighbouring documents of a ring share annotators: there are no blocks"
    search_shapes: ClassVar[tuple] = ("ring",)
    search_keys: ClassVar[tuple] = ("ring_size", "judgements_per_output")
    plan_colours: ClassVar[dict] = {"ring": "tab:brown"}

    def __post_init__(self):
        values = (self.docs, self.ring_size, self.judgements_per_output)
        if not all(isinstance(v, int) and v >= 1 for v in values):
            raise ConfigError(f"A ring design's {list(self.fields)} must be positive integers; got {list(values)}")
        if self.judgements_per_output > self.ring_size or self.docs + self.judgements_per_output - 1 < self.ring_size:
            raise ConfigError(f"A ring design needs judgements_per_output <= ring_size <= docs + "
                              f"judgements_per_output - 1; got {list(values)}")

    @property
    def label(self) -> str:
        return f"ring-N{self.docs}-R{self.ring_size}-k{self.judgements_per_output}"

    @classmethod
    def search_designs(cls, shape: str, n_docs: int, grid) -> list:
        """Planner hook: ring sizes from ``search.ring_size``, k from ``search.judgements_per_output``."""
        return [cls(n_docs, size, k) for size in grid("ring_size", [4]) for k in grid("judgements_per_output", [2])
                if k <= size <= n_docs + k - 1]

    @staticmethod
    def shape_of(columns) -> str:
        return "ring"

    @property
    def annotators(self) -> int:
        return self.ring_size

    @property
    def pairs(self) -> int:
        return self.docs * self.judgements_per_output

    def judgements(self, n_systems: int, systems=None) -> int:
        return self.pairs * n_systems  # complete: every system judged on every assigned pair

    def judgements_per_annotator(self, n_systems: int) -> float:
        return self.pairs * n_systems / self.ring_size

    def max_judgements_per_annotator(self, n_systems: int) -> int:
        return int(np.bincount(self.assign(None).annotator).max()) * n_systems

    def describe(self) -> str:
        return (f"{self.docs} documents around a ring of {self.ring_size} annotators, "
                f"{self.judgements_per_output} neighbours per document")

    def columns(self) -> dict:
        return {"design": self.label, "kind": self.kind, "blocks": None, "docs_per_block": None,
                "annotators_per_block": None, "docs": self.docs, "annotators": self.annotators,
                "judgements_per_output": self.judgements_per_output}

    def assign(self, rng) -> Assignment:
        """The fixed ring layout (``rng`` is unused)."""
        k = self.judgements_per_output
        document = np.repeat(np.arange(self.docs), k)
        annotator = (document + np.tile(np.arange(k), self.docs)) % self.ring_size
        return Assignment(annotator=annotator.astype(np.int64), document=document.astype(np.int64),
                          block=np.full(self.pairs, -1, dtype=np.int64), n_annotators=self.ring_size,
                          n_documents=self.docs, n_blocks=0)


EXAMPLE = RingDesign(docs=9, ring_size=4, judgements_per_output=2)


@contextlib.contextmanager
def ring_kind():
    """The ring kind registered for the duration of a ``with`` block."""
    register_design_kind(RingDesign)
    try:
        yield RingDesign
    finally:
        unregister_design_kind(RingDesign.kind)
