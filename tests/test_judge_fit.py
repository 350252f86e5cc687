"""A judge fitted from a pilot judge-plus-human table, with its predictive check (issue 43, part 1).

The table is simulated by the judge model (simdesign/model/judge.py: its document parts, latent quality and
judge scores) with humans from the coherence model; the fit must recover the judge's correlation, centred
biases and thresholds within 4 bootstrap standard errors (the bootstrap over documents measures the estimate's
sampling spread; 4 SE bounds a normal error with probability 0.99994 per parameter, leaving room for the SE's
own error with 20 resamples, about 16%), and the predictive check must pass the true judge and flag a wrong one.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simdesign.model import load_model
from simdesign.model.common import fixed_order_product
from simdesign.model.judge import JudgePanel, document_parts, latent_quality, parse_judge
from simdesign.realdata.judge_fit import FittedJudge, fit_judge, from_judge, judge_check

MODEL = load_model("coherence")
TOLERANCE_SE = 4.0


def _table(judge, documents: int, annotators: int, seed: int) -> pd.DataFrame:
    """Every output judged by the judge, every output also scored by one of ``annotators`` humans."""
    rng = np.random.default_rng(seed)
    quality = latent_quality(MODEL, document_parts(MODEL, documents, rng))
    judged = JudgePanel((judge,)).scores(MODEL, quality, [rng])[0]
    who = np.arange(documents) % annotators
    parts = fixed_order_product(rng.standard_normal((annotators, MODEL.n_systems)), MODEL._annotator_loading.T)
    latent = quality + parts[who] + rng.logistic(size=quality.shape)
    human = np.asarray(MODEL.scale, float)[np.searchsorted(MODEL.thresholds, latent)]
    systems = np.tile(np.asarray(MODEL.systems), documents)
    return pd.DataFrame({"system": systems, "document": np.repeat([f"d{d}" for d in range(documents)], MODEL.n_systems),
                         "judge": judged.ravel(), "human": human.ravel(),
                         "annotator": np.repeat([f"a{a}" for a in who], MODEL.n_systems)})


@pytest.mark.slow
def test_a_likert_judge_is_recovered_and_checked():
    judge = parse_judge({"preset": "self_preferring", "correlation": 0.8}, MODEL)
    table = _table(judge, documents=2000, annotators=60, seed=11)
    fit = fit_judge(MODEL, table, bootstrap=20, seed=1)
    truth = from_judge(judge, MODEL)
    assert fit.scale == "ordinal" and fit.levels == truth.levels and fit.se["resamples"] == 20
    assert abs(fit.correlation - truth.correlation) <= TOLERANCE_SE * fit.se["correlation"]
    for name in MODEL.systems:
        assert abs(fit.bias[name] - truth.bias[name]) <= TOLERANCE_SE * fit.se["bias"][name], name
    error = np.abs(np.subtract(fit.thresholds, truth.thresholds))
    assert np.all(error <= TOLERANCE_SE * np.asarray(fit.se["thresholds"])), error
    # the preferred system's bias stands out from the others' (0.4 above them, centred)
    assert fit.bias[MODEL.systems[-1]] - max(fit.bias[s] for s in MODEL.systems[:-1]) > 0.3

    small = table[table["document"].isin([f"d{d}" for d in range(400)])]
    passed, _ = judge_check(MODEL, truth, small, trials=30, seed=2)
    assert list(passed.columns) == ["statistic", "system", "category", "observed", "sim_mean", "sim_low",
                                    "sim_high", "inside", "p_two_sided"]
    assert (~passed["inside"]).mean() <= 0.15  # pointwise 95% ranges: a few outside by chance
    wrong = FittedJudge(truth.systems, "ordinal", 0.3, {name: 0.0 for name in truth.systems}, truth.levels,
                        truth.thresholds)
    flagged, _ = judge_check(MODEL, wrong, small, trials=30, seed=2)
    overall = flagged[(flagged["statistic"] == "judge_human_correlation") & (flagged["system"] == "")]
    assert not overall["inside"].item()
    assert (~flagged["inside"]).sum() >= 3 * max(1, (~passed["inside"]).sum())


@pytest.mark.slow
@pytest.mark.parametrize("scale, correlation", [("continuous", 0.6), ("probability", 0.7)])
def test_a_continuous_or_probability_judge_is_recovered(scale, correlation):
    judge = parse_judge({"preset": "self_preferring", "correlation": correlation, "scale": scale}, MODEL)
    table = _table(judge, documents=1500, annotators=40, seed=12)
    fit = fit_judge(MODEL, table, bootstrap=20, seed=1)
    truth = from_judge(judge, MODEL)
    assert fit.scale == scale
    assert abs(fit.correlation - truth.correlation) <= TOLERANCE_SE * fit.se["correlation"]
    assert abs(fit.spread - truth.spread) <= TOLERANCE_SE * fit.se["spread"]
    assert abs(fit.location - truth.location) <= TOLERANCE_SE * fit.se["location"]
    for name in MODEL.systems:
        assert abs(fit.bias[name] - truth.bias[name]) <= TOLERANCE_SE * fit.se["bias"][name], name


@pytest.mark.slow  # moved from the fast tier (about 0.5-1 s; the tier's budget is 60 s)
def test_fit_writes_a_judge_file_the_judge_model_loads(tmp_path, capsys):
    from simdesign.cli import main
    from simdesign.core.yamlio import load_yaml

    judge = parse_judge({"preset": "self_preferring", "correlation": 0.7}, MODEL)
    table = _table(judge, documents=200, annotators=10, seed=3)
    table.loc[table["document"].isin([f"d{d}" for d in range(100, 200)]), ["human", "annotator"]] = [np.nan, ""]
    table.to_csv(tmp_path / "pilot.csv", index=False)
    out = tmp_path / "fitted" / "judge.yaml"
    assert main(["fit", str(tmp_path / "pilot.csv"), "--likert-model", "coherence", "--out", str(out),
                 "--bootstrap", "4", "--check", "--check-trials", "4"]) == 0
    loaded = parse_judge(load_yaml(out.read_text()), MODEL)
    assert loaded.levels == 10 and loaded.name == "judge" and set(loaded.bias) == set(MODEL.systems)
    assert 0 < loaded.correlation <= 1 and "bootstrap" in loaded.assumes
    assert len(loaded.thresholds) == 9 and np.all(np.diff(loaded.thresholds) > 0)  # simulated at the fitted cuts
    assert "cut at the fitted thresholds" in loaded.assumes
    assert (out.parent / "check.csv").exists() and "wrote" in capsys.readouterr().out
