"""The per-study sharing behind the classical grid's speed: immutable studies, cached differences, no idle generators."""
import numpy as np
import pytest

from simdesign.significance.base import resolve_analysis
from simdesign.significance.classical import paired_randomisation, paired_ttest, unit_differences
from simdesign.core.designs import BlockDesign
from simdesign.core.judgements import Judgements
from simdesign.model import load_model


@pytest.fixture
def study():
    return load_model("coherence").sample(BlockDesign(4, 5, 3), np.random.default_rng(3), "zero")


def test_a_study_owns_read_only_copies_of_its_arrays():
    scores = np.array([[1, 2], [3, 4]])
    ids = np.array([0, 1])
    judgements = Judgements(scores=scores, annotator=ids, document=ids, block=ids, systems=("a", "b"))
    scores[0, 0] = 7  # the caller's array stays the caller's
    assert judgements.scores[0, 0] == 1
    assert scores.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        judgements.scores[0, 0] = 5


@pytest.mark.parametrize("unit", ["single", "doc", "block"])
def test_unit_differences_are_computed_once_and_read_only(study, unit):
    first = unit_differences(study, unit)
    second = unit_differences(study, unit)
    assert all(a is b for a, b in zip(first, second))
    assert not any(array.flags.writeable for array in first)
    # a new study with the same data computes them afresh, to the same values
    copy = Judgements(scores=study.scores, annotator=study.annotator, document=study.document, block=study.block,
                      systems=study.systems)
    fresh = unit_differences(copy, unit)
    assert fresh[0] is not first[0]
    for got, expected in zip(first, fresh):
        np.testing.assert_array_equal(got, expected)


def test_tests_sharing_differences_give_the_results_of_tests_on_fresh_studies(study):
    def copy():
        return Judgements(scores=study.scores, annotator=study.annotator, document=study.document,
                          block=study.block, systems=study.systems)
    shared = [paired_ttest(study, None, "doc"), paired_randomisation(study, np.random.default_rng(5), "doc")]
    alone = [paired_ttest(copy(), None, "doc"), paired_randomisation(copy(), np.random.default_rng(5), "doc")]
    for got, expected in zip(shared, alone):
        np.testing.assert_array_equal(got.p_value, expected.p_value)
        np.testing.assert_array_equal(got.estimate, expected.estimate)


@pytest.mark.parametrize("name, options, draws", [
    ("ttest", {}, False), ("ttest_block", {}, False), ("ttest_doc", {"threshold": "theory"}, False),
    ("ttest_doc", {"threshold": "centred_bootstrap"}, True), ("wilcoxon_doc", {"threshold": "theory"}, False),
    ("art", {}, True), ("art_doc", {}, True), ("ttest_unpaired", {"threshold": "theory"}, False),
    ("ttest_unpaired", {"threshold": "independent_bootstrap"}, True), ("ttest_unpaired", {"threshold": "mc"}, True),
    ("wilcoxon_doc", {"threshold": "hb"}, True),
])
def test_only_analyses_that_draw_get_a_generator(name, options, draws):
    assert resolve_analysis(name).draws_random_numbers(options) is draws
