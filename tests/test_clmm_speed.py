"""Issue 41: clmm_native's faster fit gives the fits it gave before.

The speed-ups (one kernel call per evaluation of the objective, passes over the observations with exp and log
written out so that they vectorise, per-cell sums in the gradient, L-BFGS-B driven without ``minimize``'s
wrappers, a design's pairs and components found once for all its trials) change no fit beyond rounding:
scripts/check_clmm_equal.py compares 208 studies per structure with the code before them; these tests keep
the pieces honest, and a few of those studies' fits as they were.
"""
from __future__ import annotations

import numpy as np
import pytest

from simdesign import BlockDesign, clmm, load_model
from simdesign.significance.mixed_native import clmm_native_analysis
from simdesign.clmm import compiled, lbfgsb, optimise, prepare

pytestmark = pytest.mark.slow

# (structure, preset, blocks, docs per block, seed) -> the fit before issue 41 (commit 5938798, clmm_native as
# simulations run it): log-likelihood, status, and each pair's decision (1: p < 0.05, t with containment df)
BEFORE = {
    ("intercepts", "coherence", 1, 100, 1000): (-2513.1734479391457, "ok", "1110110111"),
    ("intercepts", "coherence", 1, 100, 1001): (-2540.3679763061455, "singular", "0111111011"),
    ("intercepts", "coherence", 20, 5, 20000): (-2559.4564058684796, "ok", "0111111111"),
    ("intercepts", "repetition", 4, 25, 4000): (-2267.7208727913044, "ok", "1111110111"),
    ("maximal", "coherence", 1, 100, 1000): (-2456.6959058940156, "singular", "0100100110"),
    ("maximal", "coherence", 1, 100, 1001): (-2502.0086155397944, "singular", "0001000011"),
    ("maximal", "coherence", 20, 5, 20000): (-2522.7161950500144, "singular", "0111111111"),
    ("maximal", "repetition", 4, 25, 4000): (-2202.3137084336586, "singular", "1111110011"),
}


def _study(preset, blocks, docs, seed):
    return load_model(preset).sample(BlockDesign(blocks, docs, 3), np.random.default_rng(seed))


@pytest.mark.parametrize("case", list(BEFORE), ids=lambda case: "-".join(map(str, case)))
def test_fits_equal_the_fits_before_the_speed_ups(case):
    structure, *study = case
    loglik, status, decisions = BEFORE[case]
    result = clmm_native_analysis(_study(*study), structure=structure)
    assert result.fit_details["loglik"] == pytest.approx(loglik, abs=1e-6)
    assert result.fit_details["status"] == status
    assert "".join("1" if p < 0.05 else "0" for p in result.p_value) == decisions


def test_exp_and_log_written_out_are_within_a_unit_in_the_last_place():
    kernels = compiled._accelerator()
    if kernels is None:
        pytest.skip("needs numba (the fast extra)")
    rng = np.random.default_rng(0)
    x = np.concatenate([-rng.uniform(0, 708, 300), -rng.uniform(0, 1, 300), [0.0, -708.0, -1e-300]])
    exp = np.array([kernels._exp_nonpositive(v) for v in x])
    assert np.max(np.abs(exp - np.exp(x)) / np.spacing(np.exp(x))) <= 1.0
    y = np.concatenate([rng.uniform(1e-300, 1, 300), np.exp(rng.uniform(-700, 700, 300)), [1.0, 5e-324, 1e-310]])
    log = np.array([kernels._log_positive(v) for v in y])
    assert np.max(np.abs(log - np.log(y)) / np.spacing(np.abs(np.log(y)) + 1e-300)) <= 1.0


def test_the_direct_lbfgsb_loop_takes_minimizes_steps(monkeypatch):
    assert lbfgsb._same_iterates()
    study = _study("coherence", 4, 25, 7)
    fits = {}
    for direct in (True, False):
        monkeypatch.setattr(lbfgsb, "_checked", direct)  # False: scipy.optimize.minimize itself
        fits[direct] = clmm.fit(study, "maximal", study.systems[0], starts="single")
    assert fits[True].loglik == fits[False].loglik
    assert fits[True].n_evaluations == fits[False].n_evaluations
    np.testing.assert_array_equal(fits[True].fixed_effects_cov, fits[False].fixed_effects_cov)
    assert fits[True].optimizer_message == fits[False].optimizer_message


def test_a_designs_structure_is_found_once_and_changes_no_fit(monkeypatch):
    first, second = _study("coherence", 20, 5, 1), _study("coherence", 20, 5, 2)
    problems = [prepare._prepare(study, "maximal", study.systems[0]) for study in (first, second)]
    assert problems[0].pair_code is problems[1].pair_code
    assert compiled._compiled_arrays(problems[0]) is compiled._compiled_arrays(problems[1])
    shared = clmm.fit(second, "maximal", second.systems[0], starts="single")
    monkeypatch.setattr(prepare, "_DESIGN_CACHE", {})
    alone = clmm.fit(second, "maximal", second.systems[0], starts="single")
    assert shared.loglik == alone.loglik
    np.testing.assert_array_equal(shared.fixed_effects_cov, alone.fixed_effects_cov)


def test_a_fit_that_compiles_says_so_in_one_line(monkeypatch, capsys):
    if compiled._accelerator() is None:
        pytest.skip("needs numba (the fast extra)")
    assert clmm.warm_up()
    study = _study("coherence", 2, 3, 0)
    problem = prepare._prepare(study, "intercepts", study.systems[0])
    monkeypatch.setattr(compiled, "_checked", set())
    monkeypatch.setattr(optimise, "_compiled_for", lambda q: False)  # as on a fresh install
    optimise._check_kernels(problem)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "compiling clmm_native's kernels" in lines[0] and "warm_up" in lines[0]
    optimise._check_kernels(problem)  # checked: no second note
    assert capsys.readouterr().err == ""
