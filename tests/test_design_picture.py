"""Design pictures: the matrix drawn is the design's assignment; the command's input rules are the config's."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from test_registries import EXAMPLE_DESIGNS

from simdesign import cli
from simdesign.core.designs import DESIGN_KINDS, BlockDesign, PoolDesign
from simdesign.core.errors import ConfigError
from simdesign.studies.rates.config import parse_config
from simdesign.studies.design_picture import assignment_matrix, draw_designs, write_design_picture

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_block_matrix_is_the_blocks_written_out_by_hand():
    # 2 blocks of 3 documents, 2 annotators each: annotators 0-1 judge documents 0-2 (block 1 colour),
    # annotators 2-3 judge documents 3-5 (block 2 colour), nothing else.
    matrix = assignment_matrix(BlockDesign(blocks=2, docs_per_block=3, annotators_per_block=2).assign(None))
    expected = np.array([[1, 1, 1, 0, 0, 0],
                         [1, 1, 1, 0, 0, 0],
                         [0, 0, 0, 2, 2, 2],
                         [0, 0, 0, 2, 2, 2]])
    np.testing.assert_array_equal(matrix, expected)


def test_pool_matrix_has_k_annotators_per_document_and_no_blocks():
    design = PoolDesign(docs=12, annotators=6, judgements_per_output=3)
    matrix = assignment_matrix(design.assign(np.random.default_rng(0)))
    assert matrix.shape == (6, 12)
    assert set(np.unique(matrix)) == {0, 1}  # one colour: no blocks
    assert ((matrix > 0).sum(axis=0) == 3).all()  # k = 3 distinct annotators per document
    assert (matrix > 0).sum(axis=1).max() - (matrix > 0).sum(axis=1).min() <= 1  # loads as even as possible


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(DESIGN_KINDS))
def test_every_registered_kind_is_drawn_from_its_public_interface(kind, tmp_path):
    design = EXAMPLE_DESIGNS[kind]
    figure = draw_designs([design])
    assert design.label in figure.axes[0].get_title()
    path = write_design_picture(design, tmp_path / f"{kind}.png")
    assert path.read_bytes()[:8] == PNG_MAGIC


@pytest.mark.slow
def test_draw_design_command_writes_png_and_pdf(tmp_path, capsys):
    assert cli.main(["draw-design", "--design", "{kind: block, blocks: [4, 1], docs_per_block: [5, 20], "
                     "annotators_per_block: 3}", "--design", "{kind: pool, docs: 20, annotators: 6, "
                     "judgements_per_output: 2}", "--out", str(tmp_path / "d.png")]) == 0
    assert (tmp_path / "d.png").read_bytes()[:8] == PNG_MAGIC
    assert "block-B4-D5-A3, block-B1-D20-A3, pool-N20-M6-k2" in capsys.readouterr().out
    assert cli.main(["draw-design", "--kind", "block", "--blocks", "2", "--docs-per-block", "3",
                     "--annotators-per-block", "1", "--out", str(tmp_path / "d.pdf")]) == 0
    assert (tmp_path / "d.pdf").read_bytes()[:5] == b"%PDF-"


def config_messages(design: dict) -> list[str]:
    """What 'simdesign run' says about a config holding this design."""
    with pytest.raises(ConfigError) as caught:
        parse_config({"name": "x", "model": "coherence", "designs": [design], "tests": ["ttest"]})
    return caught.value.messages


@pytest.mark.parametrize("argv, design, field", [
    (["--kind", "block", "--blocks", "-1", "--docs-per-block", "5", "--annotators-per-block", "3"],
     {"kind": "block", "blocks": -1, "docs_per_block": 5, "annotators_per_block": 3}, "'blocks'"),
    (["--design", "{kind: pool, docs: 5, annotators: 30, judgements_per_output: 1}"],
     {"kind": "pool", "docs": 5, "annotators": 30, "judgements_per_output": 1}, "'annotators'"),
    (["--kind", "blok", "--blocks", "2"], {"kind": "blok", "blocks": 2}, "kind"),
])
def test_bad_designs_exit_2_with_the_configs_message(argv, design, field, tmp_path, capsys):
    assert cli.main(["draw-design", *argv, "--out", str(tmp_path / "d.png")]) == 2
    error = capsys.readouterr().err
    assert field in error
    for message in config_messages(design):
        assert message in error
    assert not (tmp_path / "d.png").exists()


def test_bad_picture_paths_exit_2_naming_the_option(tmp_path, capsys):
    design = "{kind: block, blocks: 2, docs_per_block: 2, annotators_per_block: 2}"
    assert cli.main(["draw-design", "--design", design, "--out", str(tmp_path / "d.gif")]) == 2
    assert "--out" in capsys.readouterr().err
    assert cli.main(["draw-design", "--design", design, "--out", str(tmp_path / "no" / "d.png")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_the_planner_draws_the_recommended_design_and_removes_a_stale_picture(tmp_path):
    from simdesign.model import load_model
    from simdesign.planning.plan_report import write_recommended_design

    design = BlockDesign(blocks=20, docs_per_block=5, annotators_per_block=1)
    config = SimpleNamespace(model=load_model("coherence"), seed=0)
    picked = SimpleNamespace(recommended=SimpleNamespace(candidate=SimpleNamespace(design=design)), config=config)
    path = write_recommended_design(picked, tmp_path)
    assert path == tmp_path / "recommended_design.png" and path.read_bytes()[:8] == PNG_MAGIC
    assert write_recommended_design(SimpleNamespace(recommended=None, config=config), tmp_path) is None
    assert not path.exists()


def test_a_huge_design_is_drawn_coarser_not_cell_by_cell():
    # 3000 nested annotators, one document each: a 3000 x 3000 diagonal, drawn on at most 600 x 600 cells
    design = BlockDesign(blocks=3000, docs_per_block=1, annotators_per_block=1)
    matrix = assignment_matrix(design.assign(None), max_side=600)
    assert matrix.shape == (600, 600)
    assert (np.diag(matrix) > 0).all() and (matrix > 0).sum() == 600  # still the diagonal, nothing else
    figure = draw_designs([design])  # a picture of 3000 blocks shows its first blocks, all alike
    assert figure.axes[0].get_xlim() == (-0.5, 11.5) and "first 12 of 3000 blocks" in figure.axes[0].get_title()
    pool = PoolDesign(docs=3000, annotators=2000, judgements_per_output=1)  # no blocks: drawn coarser
    assert assignment_matrix(pool.assign(np.random.default_rng(0))).shape == (600, 600)


def test_captions_count_in_words_and_from_one():
    figure = draw_designs([BlockDesign(blocks=4, docs_per_block=1, annotators_per_block=1),
                           PoolDesign(docs=12, annotators=6, judgements_per_output=1)])
    texts = " ".join(" ".join(ax.get_title() for ax in figure.axes).split())  # titles are wrapped
    assert "(s)" not in texts and "1 document" in texts and "1 judgement per output" in texts
    figure.draw_without_rendering()  # tick labels exist once drawn
    ax = figure.axes[0]
    low, high = sorted(ax.get_ylim())
    labels = [label.get_text() for tick, label in zip(ax.get_yticks(), ax.get_yticklabels()) if low <= tick <= high]
    assert labels[:2] == ["1", "2"]  # annotator 0 inside is "1": numbered as people count
    note = figure.texts[0].get_text()
    assert "colours: blocks" in note
    pool_only = draw_designs([PoolDesign(docs=12, annotators=6, judgements_per_output=3)])
    assert "blocks" not in pool_only.texts[0].get_text()  # a pool has no blocks to colour


def test_many_blocks_are_drawn_as_their_first_blocks_not_a_hairline(tmp_path):
    design = BlockDesign(blocks=200, docs_per_block=5, annotators_per_block=3)
    figure = draw_designs([design])
    title = figure.axes[0].get_title()
    assert "first 12 of 200 blocks" in title
    assert "600 annotators x 1000 documents" in title  # the totals are the whole design's
    image = figure.axes[0].images[0].get_array()
    assert image.shape == (36, 60)  # 12 blocks x 3 annotators, 12 blocks x 5 documents: one cell per pair
    assert (image > 0).sum() == 12 * 3 * 5


def test_svg_pictures_are_written(tmp_path):
    path = write_design_picture([BlockDesign(blocks=2, docs_per_block=2, annotators_per_block=2)], tmp_path / "d.svg")
    assert path.read_text().lstrip().startswith(("<?xml", "<svg"))
