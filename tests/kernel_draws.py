"""One trial of every generator simdesign has, written to an .npz: run under two BLAS kernels and compared.

    python tests/kernel_draws.py OUT.npz

tests/test_same_draws_on_every_kernel.py runs this in a subprocess under the default OpenBLAS kernel and
under ``OPENBLAS_CORETYPE=Prescott`` and requires the same latent values (to 1e-12) and the same integer
responses (exactly). Every study kind draws its data through one of these generators:

* rates, plans, sweeps, replications, criteria: ``OrdinalMixedModel.sample`` (block, pool and partial-coverage
  designs), a Likert/Rank pair (``LikertRankModel``) and the rank-only models, each with every method it
  generates (each method's ``responses`` is wrapped so that the latent values it is given are recorded too);
* panel studies: ``sample_panels``; crowd studies: ``sample_crowd`` (single items and systems' outputs);
* metric validation: ``simulate_study`` (the committed example table is one of its studies);
* TAC-sized studies: ``simulate_year``.

The kernel the process ran is recorded, so the test can tell that the two runs really used two kernels.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SEED = 20261128


def _rng(offset: int) -> np.random.Generator:
    return np.random.default_rng([SEED, offset])


def _record_latents(record: dict) -> None:
    """Wrap every registered method's ``responses`` so that its latent input is recorded, in call order."""
    from simdesign.methods import all_methods

    for method in all_methods():
        original = method.responses

        def responses(model, eta, rng, _original=original, _name=method.name):
            out = _original(model, eta, rng)
            record[f"latent-{len(record):03d}-{_name}"] = np.asarray(eta, dtype=float)
            return out

        object.__setattr__(method, "responses", responses)


def _rate_models(record: dict) -> None:
    from simdesign.core.designs import BlockDesign, PoolDesign
    from simdesign.model import load_model
    from simdesign.model.method_pair import likert_rank_model
    from simdesign.studies.rates.config import parse_designs

    designs = {"block": BlockDesign(4, 5, 3), "pool": PoolDesign(20, 8, 3)}
    errors: list = []
    covered = parse_designs([{"kind": "block", "blocks": 2, "docs_per_block": 6, "annotators_per_block": 2,
                              "coverage": 0.5}], errors)[0]
    assert not errors, errors
    for offset, name in enumerate(("coherence", "repetition")):
        model = load_model(name)
        for label, design in designs.items():
            judgements, document_part = model.sample_with_document_part(design, _rng(offset), effect="fitted")
            record[f"{name}-{label}-scores"] = judgements.scores
            record[f"{name}-{label}-document-part"] = document_part
        record[f"{name}-coverage-scores"] = model.sample(covered, _rng(offset + 10)).scores
        pair = likert_rank_model(name, name)
        for method in pair.methods:
            record[f"{name}-pair-{method}"] = pair.sample(designs["block"], _rng(offset + 20),
                                                               method=method).scores
        record[f"rank_{name}-block"] = pair.rank_model.sample(designs["block"], _rng(offset + 30)).scores


def _panels(record: dict) -> None:
    from simdesign.model.panels import sample_panels
    from simdesign.studies.panels.panel_study import load_panel_study

    config = load_panel_study(ROOT / "configs" / "crowd_vs_expert.yaml")
    sample = sample_panels(config.model, config.docs, config.panels, _rng(40))
    for name, judgements in sample.judgements.items():
        record[f"panel-{name}-scores"] = judgements.scores
    record["panel-document-part"] = sample.document_part


def _crowds(record: dict) -> None:
    import yaml

    from simdesign.model.crowd import sample_crowd
    from simdesign.studies.crowd.crowd_study import parse_crowd_study

    for offset, name in enumerate(("crowd_paper", "crowd_systems")):
        config = parse_crowd_study(yaml.safe_load((ROOT / "configs" / f"{name}.yaml").read_text()), ROOT / "configs")
        sample = sample_crowd(config.structure, config.criteria, config.workers, _rng(50 + offset), config.model,
                              config.effect)
        for field in ("crowd", "experts", "truth"):
            record[f"{name}-{field}"] = np.asarray(getattr(sample, field), dtype=float)


def _metrics_and_tac(record: dict) -> None:
    import yaml

    from simdesign.studies.metrics.metric_validation import example_table, load_metric_config
    from simdesign.studies.tac.tac_study import parse_tac_config, simulate_year

    config = load_metric_config(ROOT / "configs" / "metric_validation.yaml")
    table = example_table(config, 12, 30, 0, decimals=15)  # examples/metric_scores.csv before its rounding
    record["metric-example"] = table[["metric_a", "metric_b", "human"]].to_numpy(dtype=float)
    tac = parse_tac_config(yaml.safe_load((ROOT / "configs" / "tac_paired_vs_unpaired.yaml").read_text()),
                           ROOT / "configs")
    year = simulate_year(tac, _rng(60))
    for field, value in vars(year).items():
        if isinstance(value, np.ndarray):
            record[f"tac-{field}"] = value.astype(float)


def _pairwise_and_judges(record: dict) -> None:
    """Pairwise preferences (every pair, a balanced subset, Arena-style battles) and LLM judges' scores."""
    import dataclasses

    from simdesign.core.designs import BattleDesign, BlockDesign
    from simdesign.model import load_model
    from simdesign.model.judge import JudgePanel, document_parts, latent_quality, parse_judge

    model = load_model("coherence")
    for offset, (label, design, preferences) in enumerate((
            ("all", BlockDesign(4, 5, 3), {"position_bias": 0.2}), ("subset", BlockDesign(4, 5, 3), {"pairs": 3}),
            ("battles", BattleDesign(300, 40, 6), {}))):
        pairwise = dataclasses.replace(model, preferences=preferences)
        judgements = pairwise.sample(design, _rng(offset + 60), effect="fitted", method="pairwise")
        record[f"pairwise-{label}-preferences"] = judgements.preferences
        record[f"pairwise-{label}-first-shown"] = judgements.first_shown.astype(float)
    judges = tuple(parse_judge({"preset": preset, "scale": scale}, model)
                   for preset, scale in (("unbiased", "ordinal"), ("self_preferring", "continuous")))
    rng = _rng(70)
    quality = latent_quality(model, document_parts(model, 50, rng))
    record["judge-quality"] = quality
    for judge, scores in zip(judges, JudgePanel(judges).scores(model, quality, [_rng(71), _rng(72)])):
        record[f"judge-{judge.scale}-scores"] = np.asarray(scores, dtype=float)


def main(out: str) -> None:
    import threadpoolctl

    record: dict = {}
    _record_latents(record)
    _rate_models(record)
    _panels(record)
    _crowds(record)
    _metrics_and_tac(record)
    _pairwise_and_judges(record)
    kernels = sorted({str(info.get("architecture")) for info in threadpoolctl.threadpool_info()
                      if info.get("user_api") == "blas"})
    record["kernel"] = np.array(",".join(kernels))
    np.savez(out, **record)


if __name__ == "__main__":
    main(sys.argv[1])
