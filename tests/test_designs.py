import numpy as np
import pytest

from simdesign import BlockDesign, ConfigError, PoolDesign


def test_block_design_totals_and_layout():
    design = BlockDesign(blocks=20, docs_per_block=5, annotators_per_block=3)
    assert design.label == "block-B20-D5-A3"
    assert (design.docs, design.annotators, design.judgements_per_output) == (100, 60, 3)
    assert design.judgements(5) == 1500
    assert design.judgements_per_annotator(5) == 25
    assignment = design.assign(np.random.default_rng(0))
    assert len(assignment.annotator) == design.pairs == 300
    # every annotator judges exactly the documents of its own block, each once
    for annotator in range(design.annotators):
        docs = assignment.document[assignment.annotator == annotator]
        blocks = set(assignment.block[assignment.annotator == annotator])
        assert len(docs) == 5 and len(set(docs)) == 5 and len(blocks) == 1
        block = blocks.pop()
        assert set(docs) == set(range(block * 5, block * 5 + 5))
    # every document is judged by the 3 annotators of its block
    assert np.all(np.bincount(assignment.document) == 3)


@pytest.mark.parametrize("design,shape", [(BlockDesign(60, 5, 1), "nested"), (BlockDesign(1, 100, 3), "crossed"),
                                          (BlockDesign(20, 5, 3), "crossed")])
def test_block_design_shapes(design, shape):
    assert design.shape == shape


def test_pool_design_loads_even_and_annotators_distinct():
    design = PoolDesign(docs=100, annotators=30, judgements_per_output=3)
    assert design.label == "pool-N100-M30-k3"
    rng = np.random.default_rng(5)
    first = design.assign(rng)
    second = design.assign(rng)
    for assignment in (first, second):
        loads = np.bincount(assignment.annotator, minlength=30)
        assert loads.max() - loads.min() <= 1 and loads.sum() == 300
        for doc in range(100):
            annotators = assignment.annotator[assignment.document == doc]
            assert len(annotators) == 3 and len(set(annotators)) == 3
        assert np.all(assignment.block == -1)
    # the assignment is redrawn in every trial
    assert not np.array_equal(first.annotator, second.annotator)


def test_pool_design_uneven_loads():
    assignment = PoolDesign(docs=7, annotators=4, judgements_per_output=3).assign(np.random.default_rng(1))
    loads = np.bincount(assignment.annotator, minlength=4)
    assert sorted(loads) == [5, 5, 5, 6]


@pytest.mark.parametrize("kwargs,field", [
    (dict(blocks=0, docs_per_block=5, annotators_per_block=3), "blocks"),
    (dict(blocks=2, docs_per_block=-1, annotators_per_block=3), "docs_per_block"),
    (dict(blocks=2, docs_per_block=5, annotators_per_block=2.5), "annotators_per_block"),
])
def test_block_design_rejects_bad_sizes(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        BlockDesign(**kwargs)


def test_pool_design_rejects_k_above_pool():
    with pytest.raises(ConfigError, match="judgements_per_output"):
        PoolDesign(docs=10, annotators=2, judgements_per_output=3)


@pytest.mark.parametrize("docs,annotators,k", [(5, 30, 1), (4, 9, 2)])
def test_pool_design_refuses_annotators_who_would_judge_nothing(docs, annotators, k):
    # N x k judged pairs cannot occupy M annotators when N x k < M: the label would count idle annotators.
    with pytest.raises(ConfigError) as info:
        PoolDesign(docs=docs, annotators=annotators, judgements_per_output=k)
    message = str(info.value)
    assert "'docs' x 'judgements_per_output' >= 'annotators'" in message
    assert f"got docs {docs} x judgements_per_output {k} = {docs * k} judged pairs for annotators {annotators}" \
        in message


def test_pool_design_where_every_annotator_judges_is_accepted():
    design = PoolDesign(docs=5, annotators=5, judgements_per_output=1)  # N x k == M: the boundary is allowed
    assignment = design.assign(np.random.default_rng(0))
    assert assignment.n_annotators == 5
