"""Fitting the rank-only Plackett-Luce model, the rank CLI (fit, --likert-model, check) and the rank check."""
import dataclasses

import numpy as np
import pandas as pd
import pytest
import yaml

from simdesign import cli
from simdesign.core.designs import BlockDesign
from simdesign.model import RankOnlyModel, load_model
from simdesign.realdata.rank_check import rank_predictive_check
from simdesign.realdata.rank_fit import (RankProblem, _laplace, _start, fit_rank_only, plackett_luce_terms,
                                         rank_problem_from_frame)


@pytest.mark.slow
@pytest.mark.slow
def test_plackett_luce_terms_against_the_product_formula_and_finite_differences():
    rng = np.random.default_rng(3)
    eta = rng.normal(size=(4, 4))
    order = np.array([rng.permutation(4) for _ in range(4)])
    terms = plackett_luce_terms(eta, order)
    for i in range(4):
        values = eta[i, order[i]]
        direct = sum(values[k] - np.log(np.exp(values[k:]).sum()) for k in range(3))
        assert terms.loglik[i] == pytest.approx(direct, abs=1e-12)
    step = 1e-6
    for j in range(4):
        moved = eta.copy()
        moved[:, j] += step
        shifted = plackett_luce_terms(moved, order)
        assert np.allclose((shifted.loglik - terms.loglik) / step, terms.g[:, j], atol=1e-5)
        assert np.allclose(-(shifted.g - terms.g) / step, terms.w[:, :, j], atol=1e-5)


def test_laplace_gradient_matches_finite_differences():
    model = RankOnlyModel("toy", ("a", "b", "c"), [0.0, 0.5, 1.0], [[0.3, 0.1], [0.1, 0.2]], [[0.15, 0.0], [0.0, 0.1]])
    data = model.sample(BlockDesign(4, 5, 3), np.random.default_rng(1))
    problem = RankProblem.from_scores(data.scores, data.annotator, data.document, model.systems)
    theta = _start(problem) + np.random.default_rng(2).normal(size=_start(problem).size) * 0.2
    point = _laplace(problem, theta, np.zeros(problem.q))
    step = 1e-5
    for k in range(theta.size):
        e = np.zeros_like(theta)
        e[k] = step
        numeric = (_laplace(problem, theta + e, point.mode, False).value
                   - _laplace(problem, theta - e, point.mode, False).value) / (2 * step)
        assert point.gradient[k] == pytest.approx(numeric, abs=1e-6)


@pytest.mark.slow
def test_rank_only_fit_recovers_effects_of_a_large_study():
    truth = RankOnlyModel("toy", ("a", "b", "c"), [0.0, 0.8, -0.5], [[0.2, 0.05], [0.05, 0.1]], [[0.1, 0.0], [0.0, 0.1]])
    frame = truth.sample(BlockDesign(100, 5, 3), np.random.default_rng(4)).to_frame()
    result = fit_rank_only(frame, reference="a")
    assert result.model.systems == ("a", "b", "c")
    # Each beta within 4 of its own standard error (about 0.05 with 1500 rankings).
    assert np.all(np.abs(result.model.effects - truth.effects) <= 4 * np.maximum(result.beta_se, 0.03))


def test_rank_problem_puts_the_reference_first():
    frame = pd.DataFrame({"annotator": [0] * 3 + [1] * 3, "document": [0] * 6, "system": list("xyz") * 2,
                          "score": [3, 1, 2, 1, 2, 3]})
    problem = rank_problem_from_frame(frame, reference="z")
    assert problem.systems == ("z", "x", "y")
    assert problem.order.tolist() == [[1, 0, 2], [0, 2, 1]]  # best first: x, z, y then z, y, x


def test_rank_check_reports_mean_ranks_and_preferences():
    model = dataclasses.replace(load_model("coherence"), rank_noise=0.6)
    frame = model.sample(BlockDesign(4, 5, 3), np.random.default_rng(9), method="rank").to_frame().drop(columns="block")
    table, simulated = rank_predictive_check(model, frame, trials=20, seed=1)
    means = table[table["statistic"] == "mean_rank"]
    assert len(means) == 5 and means["observed"].sum() == pytest.approx(15.0)  # ranks 1..5 average to 3
    assert (table["statistic"] == "prefer").sum() == 10 and simulated.shape == (20, len(table))
    with pytest.raises(Exception, match="rank_noise"):
        rank_predictive_check(dataclasses.replace(load_model("coherence"), rank_noise=None), frame, trials=5)


def _rank_csv(tmp_path, model, seed=0):
    data = model.sample(BlockDesign(6, 5, 3), np.random.default_rng(seed), method="rank").to_frame()
    data["rank"] = model.n_systems - data["score"]  # 0 = best, as the paper's files
    path = tmp_path / "ranks.csv"
    data[["annotator", "document", "system", "rank"]].to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_cli_fits_rank_only_and_rank_noise(tmp_path, capsys):
    path = _rank_csv(tmp_path, dataclasses.replace(load_model("coherence"), rank_noise=0.6))
    out = tmp_path / "rank_only.yaml"
    assert cli.main(["fit", str(path), "--out", str(out), "--reference", "__REFERENCE__"]) == 0
    assert isinstance(load_model(out), RankOnlyModel)
    joint = tmp_path / "joint.yaml"
    assert cli.main(["fit", str(path), "--out", str(joint), "--likert-model", "coherence", "--bootstrap", "5"]) == 0
    written = yaml.safe_load(joint.read_text())
    assert written["rank_noise"] > 0 and load_model(joint).methods == ("likert", "rank")
    assert cli.main(["check", str(joint), str(path), "--trials", "5", "--out", str(tmp_path / "chk")]) == 0
    assert (tmp_path / "chk" / "check.csv").exists()


def test_cli_refuses_intercepts_for_ranks_and_likert_model_for_scores(tmp_path, capsys):
    path = _rank_csv(tmp_path, dataclasses.replace(load_model("coherence"), rank_noise=0.6))
    assert cli.main(["fit", str(path), "--out", str(tmp_path / "m.yaml"), "--structure", "intercepts"]) == 2
    assert "intercepts cancel" in capsys.readouterr().err
    likert = load_model("coherence").sample(BlockDesign(2, 5, 3), np.random.default_rng(0)).to_frame()
    likert_path = tmp_path / "likert.csv"
    likert.drop(columns="block").to_csv(likert_path, index=False)
    assert cli.main(["fit", str(likert_path), "--out", str(tmp_path / "l.yaml"), "--likert-model", "coherence"]) == 2
    assert "--likert-model applies to Rank tables" in capsys.readouterr().err
