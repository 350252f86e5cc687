"""Pictures of annotation designs: who judges which document (like Figure 1 of Steen & Markert, 2021).

A design is drawn from its :class:`~simdesign.core.designs.Assignment` (``design.assign(rng)``), the
public interface every registered design kind has, so a new kind is drawn without code of its own:
annotators are rows, documents columns, a filled cell is an assigned (annotator, document) pair (that
annotator judges the outputs of every system for that document), and cells of the same block share a
colour. Designs whose assignment is random (pool) are drawn from one draw, said in the title.

Used by ``simdesign draw-design``, the explorer (``simdesign explore``) and the planner's
recommendation (``recommended_design.png``).
"""
from __future__ import annotations

import io
from pathlib import Path

import matplotlib.ticker
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure  # no pyplot: library code neither needs nor changes the backend

from simdesign.core.errors import ConfigError  # noqa: E402
from simdesign.core.seeds import helper_rng  # noqa: E402

# Alternating block colours (colour-blind safe pairs from the Okabe-Ito palette); index 0 is "not assigned".
BLOCK_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7")
NO_BLOCK_COLOUR = "#555555"
EMPTY_COLOUR = "#F4F4F4"
# Above this many rows or columns the cell borders would be thinner than a pixel: drawn without them.
MAX_GRIDDED_CELLS = 40
# Longest side drawn cell by cell (a figure has fewer pixels than this anyway).
MAX_SIDE = 600
PICTURE_FORMATS = (".png", ".pdf", ".svg")
# A design of many blocks drawn whole is a hairline diagonal: its first blocks are drawn (all blocks are alike).
MAX_DRAWN_BLOCKS = 12
# the stream of a random design's example draw: helper_rng(PICTURE_STREAM, seed), seed as the caller gives it
PICTURE_STREAM = "design_picture/assignment"


def assignment_matrix(assignment, max_side: int = MAX_SIDE) -> np.ndarray:
    """Annotators x documents: 0 where the pair is not assigned, else 1 + (block index mod colours).

    Designs without blocks (``block == -1``) get 1 everywhere they are assigned. A side longer than
    ``max_side`` is drawn coarser: each cell then stands for several annotators (documents) and is filled
    when any of their pairs is assigned, so a huge design never needs a huge matrix.
    """
    rows = min(assignment.n_annotators, max_side)
    columns = min(assignment.n_documents, max_side)
    matrix = np.zeros((rows, columns), dtype=np.int64)
    colour = np.where(assignment.block >= 0, 1 + assignment.block % len(BLOCK_COLOURS), 1)
    matrix[assignment.annotator * rows // assignment.n_annotators,
           assignment.document * columns // assignment.n_documents] = colour
    return matrix


def design_facts(design, assignment, n_systems: int) -> str:
    """One line of totals under the picture: documents, annotators, judgements per output, judgements."""
    per_document = np.bincount(assignment.document, minlength=assignment.n_documents)
    k = (f"{per_document.min()}" if per_document.min() == per_document.max()
         else f"{per_document.min()}-{per_document.max()}")
    judgements = "judgement" if k == "1" else "judgements"
    return (f"{assignment.n_annotators} annotators x {assignment.n_documents} documents, {k} {judgements} per "
            f"output: {design.judgements(n_systems):,} judgements of {n_systems} systems")


def first_blocks(assignment, blocks: int = MAX_DRAWN_BLOCKS):
    """The pairs of the first ``blocks`` blocks, ids renumbered densely (the assignment itself if it has fewer)."""
    if assignment.n_blocks <= blocks:
        return assignment
    keep = assignment.block < blocks
    annotators, annotator = np.unique(assignment.annotator[keep], return_inverse=True)
    documents, document = np.unique(assignment.document[keep], return_inverse=True)
    return type(assignment)(annotator=annotator, document=document, block=assignment.block[keep],
                            n_annotators=len(annotators), n_documents=len(documents), n_blocks=blocks)


def draw_design_on(ax, design, n_systems: int = 5, seed: int = 0, title: str | None = None) -> None:
    """Draw one design's assignment on a matplotlib Axes.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    design : a registered design kind (``simdesign.core.designs.DESIGN_KINDS``)
    n_systems : int
        Systems whose outputs every assigned pair judges (for the judgement count).
    seed : int
        Seed of the draw for designs whose assignment is random (pool).
    title : str, optional
        Default: the design's label and its description.
    """
    whole = design.assign(helper_rng(PICTURE_STREAM, seed))
    assignment = first_blocks(whole)
    matrix = assignment_matrix(assignment)
    has_blocks = bool(assignment.n_blocks)
    colours = [EMPTY_COLOUR, *(BLOCK_COLOURS if has_blocks else (NO_BLOCK_COLOUR,))]
    # extent in annotator and document ids, whether or not the matrix is coarser than one cell per pair
    ax.imshow(matrix, cmap=ListedColormap(colours), vmin=0, vmax=len(colours) - 1, aspect="auto",
              interpolation="nearest",
              extent=(-0.5, assignment.n_documents - 0.5, assignment.n_annotators - 0.5, -0.5))
    rows, columns = assignment.n_annotators, assignment.n_documents
    if max(rows, columns) <= MAX_GRIDDED_CELLS:
        ax.set_xticks(np.arange(-0.5, columns, 1), minor=True)
        ax.set_yticks(np.arange(-0.5, rows, 1), minor=True)
        ax.grid(which="minor", color="white", linewidth=1.0)
        ax.tick_params(which="minor", length=0)
    ax.set_xlabel("documents")
    ax.set_ylabel("annotators")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True, nbins=6))
        # ids are 0-based inside, but people count annotators and documents from 1
        axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{int(round(value)) + 1}"))
    drawn = "" if has_blocks or not _is_random(design) else f" (one random draw, seed {seed})"
    if assignment is not whole:
        drawn += f" (first {assignment.n_blocks} of {whole.n_blocks} blocks, all alike)"
    heading = title if title is not None else f"{design.label}{drawn}"
    ax.set_title(f"{heading}\n{_wrap(design.describe())}\n{_wrap(design_facts(design, whole, n_systems))}",
                 fontsize=8)


def _is_random(design) -> bool:
    """Whether two seeds give different assignments (a pool draws its annotators anew in every trial)."""
    first, second = (design.assign(helper_rng(PICTURE_STREAM, seed)) for seed in (0, 1))
    return not (np.array_equal(first.annotator, second.annotator) and np.array_equal(first.document, second.document))


def _wrap(text: str, width: int = 46) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


def draw_designs(designs, n_systems: int = 5, seed: int = 0, columns: int | None = None,
                 subplot_size: tuple = (3.8, 4.0)):
    """A figure with one subplot per design.

    Parameters
    ----------
    designs : design, mapping, or a sequence of them
        Design objects, or mappings as a config's ``designs:`` entries (list-valued fields zipped).
    n_systems, seed
        As :func:`draw_design_on`.
    columns : int, optional
        Panels per row (default: all in one row, at most 4).
    subplot_size : (width, height) in inches

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from simdesign.core.designs import BlockDesign
    >>> figure = draw_designs([BlockDesign(blocks=4, docs_per_block=5, annotators_per_block=3)])
    >>> len(figure.axes)
    1
    """
    designs = as_designs(designs)
    columns = columns or min(len(designs), 4)
    rows = -(-len(designs) // columns)
    figure = Figure(figsize=(subplot_size[0] * columns, subplot_size[1] * rows + 0.6))
    axes = figure.subplots(rows, columns, squeeze=False)
    for ax, design in zip(axes.ravel(), designs):
        draw_design_on(ax, design, n_systems=n_systems, seed=seed)
    for ax in axes.ravel()[len(designs):]:
        ax.set_visible(False)
    with_blocks = any(design.assign(helper_rng(PICTURE_STREAM, seed)).n_blocks for design in designs)
    note = _wrap("a filled cell: that annotator judges the outputs of every system for that document"
                 + ("; colours: blocks" if with_blocks else ""), 55 * columns)
    figure.text(0.5, 0.005, note, ha="center", va="bottom", fontsize=8, color="#444444")
    figure.tight_layout(rect=(0, 0.025 * (note.count("\n") + 1.5) / rows, 1, 1))
    return figure


def as_designs(designs) -> list:
    """Design objects from designs or config ``designs:`` entries (checked by the config's rules: ConfigError)."""
    from simdesign.studies.rates.config import parse_designs

    items = list(designs) if isinstance(designs, (list, tuple)) else [designs]
    found, errors = [], []
    for item in items:
        found.extend(parse_designs([item], errors) if isinstance(item, dict) else [item])
    if errors:
        raise ConfigError(errors)
    return found


def check_picture_path(path) -> Path:
    """The picture's path, refused (ConfigError) when its suffix is not .png/.pdf/.svg or its folder does not exist."""
    path = Path(path)
    if path.suffix.lower() not in PICTURE_FORMATS:
        raise ConfigError(f"The picture file (--out) must end in one of {list(PICTURE_FORMATS)}; got {str(path)!r}")
    if not path.parent.is_dir():
        raise ConfigError(f"The picture file (--out) {path}: the directory {path.parent} does not exist; create it first")
    return path


def write_design_picture(designs, path, n_systems: int = 5, seed: int = 0, columns: int | None = None) -> Path:
    """Draw ``designs`` (one design or a sequence) into ``path`` (PNG, PDF or SVG, by its suffix); returns the path."""
    path = check_picture_path(path)
    figure = draw_designs(designs, n_systems=n_systems, seed=seed, columns=columns)
    figure.savefig(path, dpi=150)
    return path


def design_png(design, n_systems: int = 5, seed: int = 0, dpi: int = 100) -> bytes:
    """One design's picture as PNG bytes (for a web page)."""
    figure = draw_designs([design], n_systems=n_systems, seed=seed, subplot_size=(4.6, 3.8))
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()
