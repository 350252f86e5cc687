"""A pairwise judge fitted from a pilot table of judge and human verdicts (simdesign.realdata.judge_pairwise_fit)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simdesign.core.errors import DataError
from simdesign.methods.pairwise import PairwiseParameters, system_pair_indices
from simdesign.model import load_model
from simdesign.model.common import fixed_order_product
from simdesign.model.judge import document_parts, latent_quality, parse_judge
from simdesign.realdata.judge_pairwise_fit import fit_pairwise_judge, pairwise_judge_check

MODEL = load_model("coherence")
ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def _table(judge, documents=600, annotators=30, human_share=0.5, seed=1) -> pd.DataFrame:
    """Every pair compared on every document in a random order, by the judge (Judge.verdicts) and, on a share of
    the comparisons, by one of ``annotators`` humans with the pairwise method's assumed rule, written out here."""
    rng = np.random.default_rng(seed)
    quality = latent_quality(MODEL, document_parts(MODEL, documents, rng), "fitted")
    latent = quality + judge.bias_vector(MODEL.systems)[None, :] + judge.noise_sd(MODEL) * rng.standard_normal(
        quality.shape)
    first, second = system_pair_indices(MODEL.n_systems)
    in_order = rng.random((documents, first.size)) < 0.5     # the pair's first system (model order) shown first
    judged = judge.verdicts(latent, in_order)                # for the pair's first system
    people = fixed_order_product(rng.standard_normal((annotators, MODEL.n_systems)), MODEL._annotator_loading.T)
    who = rng.integers(0, annotators, (documents, first.size))
    eta = quality[:, None, :] + people[who]
    rows, cols = np.arange(documents)[:, None], np.arange(first.size)[None, :]
    human = PairwiseParameters()  # noise 1, tie band 0.5, no position bias
    delta = eta[rows, cols, first[None, :]] - eta[rows, cols, second[None, :]] + human.noise * rng.logistic(
        size=who.shape)
    humans = np.where(delta > human.tie_band, 1.0, np.where(delta < -human.tie_band, 0.0, 0.5))
    kept = rng.random(who.shape) < human_share
    names = np.asarray(MODEL.systems)

    def said(value, i, j):
        return "tie" if value == 0.5 else (names[i] if value == 1 else names[j])

    records = []
    for d in range(documents):
        for k, (i, j) in enumerate(zip(first, second)):
            shown = (names[i], names[j]) if in_order[d, k] else (names[j], names[i])
            records.append({"document": f"d{d}", "system_a": shown[0], "system_b": shown[1],
                            "judge_preferred": said(judged[d, k], i, j),
                            "preferred": said(humans[d, k], i, j) if kept[d, k] else "",
                            "annotator": f"a{who[d, k]}" if kept[d, k] else ""})
    return pd.DataFrame(records)


def test_the_fit_recovers_a_pairwise_judge_within_its_bootstrap_error():
    truth = parse_judge({"scale": "pairwise", "correlation": 0.6, "position_bias": 0.4, "tie_band": 0.2,
                         "bias": {"seneca": 0.5}}, MODEL)
    fit = fit_pairwise_judge(MODEL, _table(truth), bootstrap=40, seed=2)
    se = fit.se
    assert se["resamples"] == 40
    assert abs(fit.correlation - 0.6) < 4 * se["correlation"] and se["correlation"] < 0.15
    assert abs(fit.position_bias - 0.4) < 4 * se["position_bias"]
    assert abs(fit.tie_band - 0.2) < 4 * se["tie_band"]
    centred = {name: (0.5 if name == "seneca" else 0.0) - 0.1 for name in MODEL.systems}  # biases centred
    for name in MODEL.systems:
        assert abs(fit.bias[name] - centred[name]) < 4 * se["bias"][name], name
    assert any("assumed values" in note for note in fit.notes)  # the human rule the model lacks is said


def test_the_check_finds_a_judge_without_position_bias_at_odds_with_the_table():
    truth = parse_judge({"scale": "pairwise", "correlation": 0.7, "position_bias": 0.5}, MODEL)
    table = _table(truth, documents=300, seed=4)
    fit = fit_pairwise_judge(MODEL, table, bootstrap=0)
    checked, _ = pairwise_judge_check(MODEL, fit, table, trials=60, seed=1)
    first_shown = checked.set_index("statistic").loc["judge_first_shown_wins"]
    assert first_shown["inside"]
    wrong = type(fit)(fit.systems, fit.correlation, fit.bias, 0.0, fit.tie_band)  # the same judge, no position bias
    checked, _ = pairwise_judge_check(MODEL, wrong, table, trials=60, seed=1)
    assert not checked.set_index("statistic").loc["judge_first_shown_wins", "inside"]


def test_a_table_whose_verdicts_cannot_carry_the_fit_is_refused():
    table = pd.read_csv(ROOT / "examples" / "judge_pairwise.csv", dtype=str, keep_default_na=False)
    with pytest.raises(DataError, match="no human verdict|human verdict"):
        fit_pairwise_judge(MODEL, table.assign(preferred="", annotator=""), bootstrap=0)
    with pytest.raises(DataError, match="a constant judge"):
        fit_pairwise_judge(MODEL, table.assign(judge_preferred="tie"), bootstrap=0)
    few = table.drop_duplicates("preferred").copy()  # a human verdict or two per presentation: no correlation
    few = pd.concat([few, table.assign(preferred="", annotator="")], ignore_index=True)
    with pytest.raises(DataError, match="cannot be estimated"):
        fit_pairwise_judge(MODEL, few, bootstrap=0)


def test_the_command_writes_a_judge_file_a_study_reads(tmp_path, capsys):
    from simdesign.cli import main
    from simdesign.core.yamlio import load_yaml

    out = tmp_path / "judge.yaml"
    assert main(["fit", str(ROOT / "examples" / "judge_pairwise.csv"), "--likert-model", "coherence", "--out",
                 str(out), "--bootstrap", "5", "--check", "--check-trials", "5"]) == 0
    judge = parse_judge(load_yaml(out.read_text()), MODEL)
    assert judge.pairwise and judge.position_bias > 0 and judge.tie_band > 0 and "bootstrap" in judge.assumes
    assert (tmp_path / "check.csv").exists() and "position bias" in capsys.readouterr().out
