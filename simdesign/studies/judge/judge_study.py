"""Judge-plus-human studies (``study: judge``): an LLM judge scores every output, humans a subset; PPI combines them.

A config (``configs/judge_coverage.yaml``; docs/how-to/llm-judge.md) gives the ``model`` (a Likert model),
its ``effect`` (zero, fitted or a factor), the ``documents`` whose outputs (every system's) the judge scores,
the ``judge`` (a preset of :data:`simdesign.model.judge.JUDGE_PRESETS` or a mapping; or ``judges``, a list whose
mean score PPI uses, with ``error_correlation``), the human ``designs`` (each a cell: who judges which of the
documents humans see, as a rate study's designs) and ``select``, which outputs go to humans:

* ``random``: the design's documents drawn at random from the ``documents``; humans judge every system's output
  of them (pairs stay paired);
* ``stratified``: each system its own random documents, as many as the design's (the same number of human
  scores per system; pairs are paired only where two systems' documents meet);
* ``least_certain``: each document sent to humans independently with a known probability, higher where the
  judge is less sure (:meth:`simdesign.model.judge.Judge.uncertainty`, mean over the document's outputs and the
  judges): ``p_d = min(1, c (floor + u_d))`` with ``c`` such that the expected number sent is the design's
  documents; the sent documents fill a block design's slots block by block (the last block part-filled) or
  make a pool design's documents. Analysed by inverse-probability-weighted PPI
  (:mod:`simdesign.stats.judge_ipw`) beside the unweighted estimators, which ignore the unequal
  probabilities.

One trial (all from label-keyed streams of :mod:`simdesign.core.seeds` for the cell and trial, so a trial is
the same on every backend and can be replayed alone): the documents' random parts
(:func:`~simdesign.core.seeds.data_rng`), each judge's noise (:func:`~simdesign.core.seeds.judge_rng`), the
selection, then the human design's assignment, annotator effects and noise (the data stream again), then
:func:`simdesign.stats.ppi.ppi_study` (its bootstrap from an analysis stream). A row per target (each system's
mean, each pair's difference) x estimator (human_only, judge_only, ppi, ppi++, judge_bias; with
``least_certain`` also ipw_ppi, ipw_ppi++ and their Hajek forms hajek_ppi, hajek_ppi++) x interval
(``clustered``: two-way annotator/document bootstrap; ``clustered_t``: the same with the few-clusters corrections of :func:`simdesign.stats.judge_ipw.few_clusters_rows`,
SE x sqrt(G / (G - 1)) and a t quantile on G - 1 degrees of freedom, G the annotators; ``independent``):
estimate, low, high, p_value, ``truth`` and ``covered`` (the interval holds the truth), ``rejected`` (pairs:
p < alpha).

The truth is the expected human score per system over the annotator and document populations,
:meth:`simdesign.model.OrdinalMixedModel.expected_scores` at the study's effect (one-dimensional Gauss-Hermite
integration of the cumulative-logit probabilities, exact to about 1e-12), and for a pair the difference of two
systems' values. ``judge_only`` is on the judge's scale: its coverage of the human-scale truth is meaningful only
where both are 0 (pair differences under ``effect: zero``), where it shows the judge-only test's type I error;
``judge_bias`` has no truth here (its coverage is left empty).

The summary (the trial is the unit, :mod:`simdesign.stats.montecarlo`): per cell, target, estimator and
interval, the coverage and the rejection rate with MCSE and Wilson intervals, the mean estimate's bias with its
MCSE, the mean interval width and the mean effective number of human judgements; and per cell, estimator and
interval the mean over trials of the share of systems (and of pairs) covered.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.checks import is_number
from simdesign.core.designs import BlockDesign, PoolDesign
from simdesign.core.errors import ConfigError
from simdesign.core.fields import field_problem
from simdesign.core.seeds import analysis_rng, data_rng, judge_rng
from simdesign.methods.pairwise import expected_win_rates, pairwise_parameters, system_pair_indices
from simdesign.model.judge import (JudgePanel, document_parts, human_scores, human_verdicts, latent_quality,
                                   parse_judge)
from simdesign.runner.study import StudyKind, register_study_kind, study_field_problems
from simdesign.studies.example_configs import read_examples
from simdesign.stats.judge_ipw import few_clusters_rows, ipw_study
from simdesign.stats.montecarlo import mean_interval, wilson_interval
from simdesign.stats.ppi import JudgeStudy, ppi_study

KIND = "judge"
KEYS = ("study", "name", "description", "model", "effect", "documents", "judge", "judges", "error_correlation",
        "designs", "select", "floor", "bootstrap_resamples", "confidence", "alpha", "trials", "seed", "chunk_size")
SELECTIONS = ("random", "stratified", "least_certain")
VERSUS = " vs "  # a pairwise target 'a vs b': the human win rate of a over b (a difference is 'a - b')
WIN_RATE_NULL = 0.5  # a win rate's value when neither system is better (ties half)
ROW_COLUMNS = ("target", "system_a", "system_b", "estimator", "interval", "estimate", "low", "high", "p_value",
               "lam", "n_human", "effective_n", "truth", "covered", "rejected")


@dataclass(frozen=True)
class JudgeStudyConfig:
    """A validated judge-plus-human study (module docstring); built by :func:`parse_judge_study`."""

    name: str
    model: object
    panel: JudgePanel
    designs: tuple
    documents: int = 500
    effect: object = "zero"
    select: str = "random"
    floor: float = 0.2
    bootstrap_resamples: int = 500
    confidence: float = 0.95
    alpha: float = 0.05
    trials: int = 200
    seed: int = 0
    chunk_size: int = 10
    raw: dict = field(default_factory=dict, compare=False)

    def design(self, cell: str):
        return {design.label: design for design in self.designs}[cell]

    @property
    def pairwise(self) -> bool:
        """Whether the judges (and so the humans) give pairwise verdicts (module docstring)."""
        return self.panel.pairwise

    def pair_names(self) -> list[str]:
        """The targets of a pairwise study: 'a vs b' for every pair, a before b in the model's order."""
        first, second = system_pair_indices(self.model.n_systems)
        return [f"{self.model.systems[i]}{VERSUS}{self.model.systems[j]}" for i, j in zip(first, second)]

    def truth(self) -> dict:
        """Target -> the expected human score (system) or difference (pair) over both populations; for pairwise
        verdicts, pair 'a vs b' -> the expected human win rate of a over b (a tie half)."""
        if self.pairwise:
            rates = expected_win_rates(self.model, pairwise_parameters(self.model), self.effect)
            return dict(zip(self.pair_names(), map(float, rates)))
        expected = self.model.expected_scores(self.effect)
        systems = self.model.systems
        truth = {s: float(expected[i]) for i, s in enumerate(systems)}
        for a in range(len(systems)):
            for b in range(a + 1, len(systems)):
                truth[f"{systems[a]} - {systems[b]}"] = float(expected[a] - expected[b])
        return truth


def _scalar_problems(raw: dict) -> list[str]:
    problems = [p for key in ("name", "trials", "seed", "chunk_size", "bootstrap_resamples", "alpha", "confidence")
                if key in raw and (p := field_problem(key, raw[key]))]
    if "name" not in raw:
        problems.append("The 'name' field is required (it names the results directory)")
    documents = raw.get("documents", 500)
    if isinstance(documents, bool) or not isinstance(documents, int) or documents < 2:
        problems.append(f"The 'documents' field must be an integer >= 2 (the documents the judge scores); "
                        f"got {documents!r}")
    if raw.get("select", "random") not in SELECTIONS:
        problems.append(f"The 'select' field must be one of {list(SELECTIONS)}; got {raw.get('select')!r}")
    floor = raw.get("floor", 0.2)
    if not is_number(floor) or not 0 < floor < math.inf:
        problems.append(f"The 'floor' field must be a positive number (least_certain: the uncertainty every "
                        f"document has at least, so none has probability 0); got {floor!r}")
    if "judge" in raw and "judges" in raw:
        problems.append("Give 'judge' (one) or 'judges' (a list whose mean score PPI uses), not both")
    return problems


def _panel(raw: dict, model, problems: list[str]):
    items = raw.get("judges", [raw.get("judge", "unbiased")])
    if not isinstance(items, list) or not items:
        problems.append(f"The 'judges' field must be a non-empty list of judges; got {items!r}")
        return None
    try:
        judges = tuple(parse_judge(item, model, default_name=f"judge{i + 1}") for i, item in enumerate(items))
        return JudgePanel(judges, raw.get("error_correlation", 0.0))
    except ConfigError as exc:
        problems.extend(exc.messages)
        return None


def _design_problems(designs, raw: dict) -> list[str]:
    documents, select = raw.get("documents", 500), raw.get("select", "random")
    problems = []
    for design in designs:
        docs = getattr(design, "docs", None)
        if isinstance(documents, int) and docs is not None and docs > documents:
            problems.append(f"The human design {design.label} has {docs} documents, more than the 'documents' "
                            f"({documents}) the judge scores: humans judge a subset of the judged outputs")
        if select == "least_certain" and not isinstance(design, (BlockDesign, PoolDesign)):
            problems.append(f"'select: least_certain' takes block and pool designs (their size follows the "
                            f"documents sent); got {design.label}")
        if getattr(design, "coverage", None) is not None:
            problems.append(f"The human design {design.label} has partial coverage; a judge-plus-human study "
                            "chooses its human outputs by 'select'")
    return problems


def _pairwise_problems(model, select) -> list[str]:
    """What a study with pairwise judges needs: humans who give pairwise verdicts, and a selection by document."""
    parameters = pairwise_parameters(model)
    if parameters is None:
        return ["Pairwise judges are checked against human pairwise verdicts, and the model has no 'preferences' "
                "mapping to draw them (model: {preset: NAME, preferences: {}} assumes every value; or give noise, "
                "tie_band, position_bias, pairs)"]
    problems = []
    if select == "stratified":
        problems.append("'select: stratified' draws each system's own documents; pairwise verdicts compare two "
                        "systems on one document: use 'random' or 'least_certain'")
    if select == "least_certain" and parameters.pairs != "all":
        problems.append(f"'select: least_certain' with pairwise judges needs humans to judge every pair of a sent "
                        f"document (the model's preferences.pairs: all); got pairs: {parameters.pairs!r}")
    return problems


def parse_judge_study(raw: dict, base_dir: Path | None = None) -> JudgeStudyConfig:
    """Validate a judge-plus-human study mapping; every problem at once in one ConfigError naming its field."""
    from simdesign.studies.rates.config import likert_model_or_problem, parse_designs, resolve_model

    if not isinstance(raw, dict):
        raise ConfigError(f"A judge-study config must be a mapping; got {type(raw).__name__}")
    problems = study_field_problems(raw, (KIND,))
    unknown = sorted(set(raw) - set(KEYS), key=str)
    if unknown:
        problems.append(f"Unknown judge-study key(s) {unknown}; allowed: {list(KEYS)}")
    problems += _scalar_problems(raw)
    model, _ = resolve_model(raw, base_dir, problems)
    model = likert_model_or_problem(model, "a judge-plus-human study", problems)
    panel = _panel(raw, model, problems) if model is not None else None
    designs = parse_designs(raw.get("designs"), problems)
    problems += _design_problems(designs, raw)
    if panel is not None and panel.pairwise:
        problems += _pairwise_problems(model, raw.get("select", "random"))
    if model is not None:
        try:
            model.effects_for(raw.get("effect", "zero"))
        except ConfigError as exc:
            problems.extend(exc.messages)
    if problems:
        raise ConfigError(list(dict.fromkeys(problems)))
    values = {key: raw[key] for key in ("documents", "effect", "select", "floor", "bootstrap_resamples",
                                        "confidence", "alpha", "trials", "seed", "chunk_size") if key in raw}
    return JudgeStudyConfig(name=raw["name"], model=model, panel=panel, designs=tuple(designs), raw=dict(raw),
                            **values)


# ------------------------------------------------------------------------------------------------ one trial
def is_pair_target(target) -> bool:
    """Whether a target names a pair ('a - b' difference, or 'a vs b' win rate) rather than one system."""
    return " - " in str(target) or VERSUS in str(target)


def null_value(target) -> float:
    """A target's value when the systems do not differ: 0.5 for a win rate, 0 for a difference."""
    return WIN_RATE_NULL if VERSUS in str(target) else 0.0


def _least_certain_probability(uncertainty: np.ndarray, expected: float, floor: float) -> np.ndarray:
    """p_d = min(1, c (floor + u_d)) with sum p_d = expected (c by bisection; module docstring)."""
    base = floor + uncertainty
    low, high = 0.0, 1.0 / base.min()
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if np.minimum(1.0, middle * base).sum() < expected else (low, middle)
    return np.minimum(1.0, high * base)


def _slots(config: JudgeStudyConfig, design, judged: np.ndarray, rng: np.random.Generator):
    """(design to assign, slots (slots, S) -> document, kept slots or None, probability per document or None)."""
    n_documents, n_systems = config.documents, config.model.n_systems
    if config.select == "random":
        chosen = rng.permutation(n_documents)[:design.docs]
        return design, np.repeat(chosen[:, None], n_systems, axis=1), None, None
    if config.select == "stratified":
        columns = [rng.permutation(n_documents)[:design.docs] for _ in range(n_systems)]
        return design, np.stack(columns, axis=1), None, None
    uncertainty = np.mean([judge.uncertainty(judged[k]) for k, judge in enumerate(config.panel.judges)], axis=0)
    probability = _least_certain_probability(uncertainty.mean(axis=1), design.docs, config.floor)
    sent = np.flatnonzero(rng.random(n_documents) < probability)
    count = max(sent.size, 1)  # a design needs one document; with none sent its slot is not kept
    if isinstance(design, BlockDesign):
        blocks = math.ceil(count / design.docs_per_block)
        realised = BlockDesign(blocks, design.docs_per_block, design.annotators_per_block)
    else:
        k = design.judgements_per_output
        realised = PoolDesign(count, min(design.annotators, count * k), k)
    slots = np.zeros(realised.docs, dtype=np.int64)
    slots[:sent.size] = sent
    keep = np.arange(realised.docs) < sent.size
    return realised, np.repeat(slots[:, None], n_systems, axis=1), keep, probability


@dataclass(frozen=True)
class JudgeTrial:
    """One simulated judge-plus-human study: what :func:`ppi_study` reads, and the IPW parts."""

    study: JudgeStudy
    judge: np.ndarray            # (S, D) the combined judge score
    probability: np.ndarray | None
    humans: object               # HumanScores


def draw_trial(config: JudgeStudyConfig, cell: str, trial: int) -> JudgeTrial:
    """One trial's study (module docstring: its streams and their order)."""
    model, design = config.model, config.design(cell)
    data = data_rng(config.seed, cell, trial)
    part = document_parts(model, config.documents, data)
    quality = latent_quality(model, part, config.effect)
    streams = [judge_rng(config.seed, cell, trial, judge.name) for judge in config.panel.judges]
    streams.append(judge_rng(config.seed, cell, trial, "judges:common"))
    judged = config.panel.scores(model, quality, streams)        # (judges, D, S)
    combined = config.panel.combined(judged)                     # (D, S)
    realised, slots, keep, probability = _slots(config, design, judged, analysis_rng(
        config.seed, cell, trial, "judge-study:selection"))
    if config.pairwise:  # 'systems' of the study are the pairs: its means are win rates (module docstring)
        humans = human_verdicts(model, pairwise_parameters(model), realised.assign(data), slots, part, data,
                                config.effect, keep)
        names = tuple(config.pair_names())
    else:
        humans = human_scores(model, realised.assign(data), slots, part, data, config.effect, keep)
        names = tuple(model.systems)
    n_columns, n_documents = combined.shape[1], config.documents
    study = JudgeStudy(names, np.repeat(np.arange(n_columns), n_documents),
                       np.tile(np.arange(n_documents), n_columns), combined.T.ravel(),
                       humans.system * n_documents + humans.document, humans.score, humans.annotator)
    return JudgeTrial(study, combined.T.copy(), probability, humans)


def _ipw_rows(config: JudgeStudyConfig, trial: JudgeTrial, rng: np.random.Generator) -> pd.DataFrame:
    humans, (n_systems, n_documents) = trial.humans, trial.judge.shape
    shape = (n_systems, max(humans.n_annotators, 1), n_documents)
    human_sum, count = np.zeros(shape), np.zeros(shape)
    np.add.at(human_sum, (humans.system, humans.annotator, humans.document), humans.score)
    np.add.at(count, (humans.system, humans.annotator, humans.document), 1.0)
    return ipw_study(trial.judge, human_sum, count, trial.probability, trial.study.systems, rng,
                     config.bootstrap_resamples, config.confidence)


def _as_win_rates(config: JudgeStudyConfig, rows: pd.DataFrame, clusters: int) -> pd.DataFrame:
    """A pairwise study's rows: the win-rate rows of each pair (the differences between pairs dropped), named by
    the pair's systems, with the test of 'win rate = 0.5' (normal; t on G - 1 df for ``clustered_t``, as its
    interval)."""
    from scipy import stats

    rows = rows[rows["system_b"].isna()].copy()
    first, second = system_pair_indices(config.model.n_systems)
    systems = np.asarray(config.model.systems)
    position = rows["target"].map({name: k for k, name in enumerate(config.pair_names())}).to_numpy(int)
    rows["system_a"], rows["system_b"] = systems[first[position]], systems[second[position]]
    statistic = np.abs(rows["estimate"].to_numpy(float) - WIN_RATE_NULL) / rows["standard_error"].to_numpy(float)
    with np.errstate(invalid="ignore"):
        p_value = np.where(rows["interval"] == "clustered_t", 2 * stats.t.sf(statistic, max(clusters - 1, 1)),
                           2 * stats.norm.sf(statistic))
    rows["p_value"] = np.where(rows["estimator"] == "judge_bias", rows["p_value"],
                               np.where(np.isfinite(statistic), p_value, np.nan))
    return rows


def trial_rows(config: JudgeStudyConfig, cell: str, trial: int) -> pd.DataFrame:
    """One trial of one cell as rows (:data:`ROW_COLUMNS`; module docstring)."""
    return judge_rows(config, cell, trial, draw_trial(config, cell, trial))


def judge_rows(config: JudgeStudyConfig, cell: str, trial: int, drawn: JudgeTrial) -> pd.DataFrame:
    """One trial's rows from its data (:func:`draw_trial`): PPI and the other estimators, each with its
    interval, p-value, coverage and rejection (the bootstraps' streams are the trial's, keyed by label)."""
    frames = [ppi_study(drawn.study, analysis_rng(config.seed, cell, trial, "judge-study:bootstrap"),
                        resamples=config.bootstrap_resamples, level=config.confidence)]
    if drawn.probability is not None:
        frames.append(_ipw_rows(config, drawn, analysis_rng(config.seed, cell, trial, "judge-study:ipw-bootstrap")))
    rows = pd.concat(frames, ignore_index=True)
    clusters = int(np.unique(drawn.humans.annotator).size)
    rows = pd.concat([rows, few_clusters_rows(rows, clusters, config.confidence)], ignore_index=True)
    if config.pairwise:
        rows = _as_win_rates(config, rows, clusters)
    truth = rows["target"].map(config.truth())
    rows["truth"] = np.where(rows["estimator"] == "judge_bias", np.nan, truth)
    inside = (rows["low"] <= rows["truth"]) & (rows["truth"] <= rows["high"])
    rows["covered"] = np.where(rows["truth"].notna() & rows["low"].notna(), inside.astype(float), np.nan)
    pair = rows["system_b"].notna()
    rows["rejected"] = np.where(pair & rows["p_value"].notna(), (rows["p_value"] < config.alpha).astype(float),
                                np.nan)
    for column in ROW_COLUMNS:
        if column not in rows:
            rows[column] = np.nan
    return rows[list(ROW_COLUMNS)]


# ------------------------------------------------------------------------------------------------ summary
def _rate(values) -> dict:
    """Rate, MCSE and Wilson interval of per-trial 0/1 values (NaN left out)."""
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    if not values.size:
        return {"rate": np.nan, "mcse": np.nan, "low": np.nan, "high": np.nan, "n": 0}
    rate = float(values.mean())
    mcse = float(values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else np.nan
    low, high = wilson_interval(rate, mcse, values.size, values.size)
    return {"rate": rate, "mcse": mcse, "low": low, "high": high, "n": int(values.size)}


def _target_summary(cell: str, key: tuple, group: pd.DataFrame) -> dict:
    target, estimator, interval = key
    coverage, rejection = _rate(group["covered"]), _rate(group["rejected"])
    error = (group["estimate"] - group["truth"]).to_numpy(float)
    bias, bias_mcse, _, _ = mean_interval(error[np.isfinite(error)]) if np.isfinite(error).sum() > 1 else \
        (np.nan, np.nan, np.nan, np.nan)
    return {"cell": cell, "target": target, "kind": "pair" if is_pair_target(target) else "system",
            "estimator": estimator, "interval": interval, "trials": int(group["trial"].nunique()),
            "truth": float(group["truth"].iloc[0]), "mean_estimate": float(group["estimate"].mean()),
            "bias": bias, "bias_mcse": bias_mcse, "coverage": coverage["rate"], "coverage_mcse": coverage["mcse"],
            "coverage_low": coverage["low"], "coverage_high": coverage["high"],
            "rejection_rate": rejection["rate"], "rejection_mcse": rejection["mcse"],
            "rejection_low": rejection["low"], "rejection_high": rejection["high"],
            "mean_width": float((group["high"] - group["low"]).mean()),
            "mean_n_human": float(group["n_human"].mean()), "mean_effective_n": float(group["effective_n"].mean())}


def _pooled_summary(cell: str, rows: pd.DataFrame) -> list[dict]:
    """Per estimator and interval, the mean over trials of the share of systems (pairs) covered (trial = unit)."""
    out = []
    kinds = np.where(rows["system_b"].notna(), "every pair", "every system")
    for (kind, estimator, interval), group in rows.assign(kind=kinds).groupby(["kind", "estimator", "interval"],
                                                                              sort=False):
        share = group.groupby("trial")["covered"].mean().to_numpy(float)
        share = share[np.isfinite(share)]
        if share.size < 2:
            continue
        mean, mcse, low, high = mean_interval(share)
        out.append({"cell": cell, "target": kind, "kind": "pooled", "estimator": estimator, "interval": interval,
                    "trials": int(share.size), "coverage": mean, "coverage_mcse": mcse, "coverage_low": low,
                    "coverage_high": high,
                    "rejection_rate": float(group["rejected"].mean()) if kind == "every pair" else np.nan,
                    "mean_width": float((group["high"] - group["low"]).mean()),
                    "mean_n_human": float(group["n_human"].mean()),
                    "mean_effective_n": float(group["effective_n"].mean())})
    return out


def summarise_judge_study(config: JudgeStudyConfig, rows: pd.DataFrame) -> pd.DataFrame:
    """Coverage, rejection, bias and width per cell, target, estimator and interval (module docstring)."""
    out = []
    for cell in [design.label for design in config.designs]:
        here = rows[rows["cell"] == cell]
        for key, group in here.groupby(["target", "estimator", "interval"], sort=False):
            out.append(_target_summary(cell, key, group))
        out += _pooled_summary(cell, here)
    table = pd.DataFrame(out)
    if len(table):
        table.insert(1, "design", table["cell"].map({d.label: d.describe() for d in config.designs}))
        table["nominal"] = config.confidence
        table["effect"] = str(config.effect)
        table["select"] = config.select
        table["judges"] = ", ".join(judge.name for judge in config.panel.judges)
    return table


def plot_judge_study(config: JudgeStudyConfig, summary: pd.DataFrame, out_base: Path) -> list[Path]:
    """Coverage of every system and pair by estimator and interval, one panel per human design."""
    from matplotlib.figure import Figure

    cells = [design.label for design in config.designs]
    figure = Figure(figsize=(6.5 * len(cells), 5.0))
    axes = np.atleast_1d(figure.subplots(1, len(cells), sharey=True))
    shown = summary[(summary["kind"] != "pooled") & (summary["estimator"] != "judge_bias")]
    labels = list(dict.fromkeys(shown["estimator"] + " / " + shown["interval"]))
    for axis, cell in zip(axes, cells):
        part = shown[shown["cell"] == cell]
        for kind, colour, offset in (("system", "tab:blue", -0.15), ("pair", "tab:orange", 0.15)):
            sub = part[part["kind"] == kind]
            y = (sub["estimator"] + " / " + sub["interval"]).map({label: i for i, label in enumerate(labels)})
            axis.errorbar(sub["coverage"], y + offset, xerr=[sub["coverage"] - sub["coverage_low"],
                                                              sub["coverage_high"] - sub["coverage"]],
                          fmt="o", ms=3, color=colour, alpha=0.6, lw=0.8, label=f"each {kind}")
        axis.axvline(config.confidence, color="grey", ls="--", lw=1)
        axis.set_title(cell, fontsize=9)
        axis.set_xlabel(f"coverage of the true value (Wilson 95%, {int(part['trials'].max())} trials)")
        axis.set_xlim(-0.02, 1.02)
    axes[0].set_yticks(range(len(labels)), labels)
    axes[0].invert_yaxis()
    axes[0].legend(loc="lower left", fontsize=8)
    figure.suptitle(f"{config.name}: judge(s) {', '.join(j.name for j in config.panel.judges)}, select "
                    f"{config.select}, effect {config.effect}, {config.documents} documents judged", fontsize=10)
    figure.tight_layout()
    path = Path(out_base).with_suffix(".png")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    return [path]


# ------------------------------------------------------------------------------------------------ the kind
class JudgeStudies(StudyKind):
    """Judge-plus-human studies (module docstring), run by the generic runner (its trial stream is unused: the
    trial's own label-keyed streams make the rows)."""

    name, keys = KIND, ("judge", "judges")

    def parse(self, mapping, base_dir=None):
        return parse_judge_study(mapping, base_dir)

    def with_trials(self, config, trials):
        from dataclasses import replace

        return replace(config, trials=trials, raw={**config.raw, "trials": trials})

    def cells(self, config):
        return [design.label for design in config.designs]

    def chunk_trials(self, config):
        return config.chunk_size

    def fingerprint(self, config):
        settings = {key: value for key, value in config.raw.items()
                    if key not in ("name", "description", "trials", "chunk_size", "model", "study", "designs")}
        return {"judge_study": 1, "settings": settings, "model": config.model.to_dict(),
                "judges": [judge.to_config() for judge in config.panel.judges]}

    def examples(self):
        return read_examples("judge")

    def generate(self, config, cell, trial, rng):
        # the judge study's streams are keyed by seed, cell, trial and label (module docstring), not ``rng``
        return draw_trial(config, cell, trial)

    def analyse(self, config, cell, trial, data, rng):
        return judge_rows(config, cell, trial, data)

    def summarise(self, config, rows):
        return summarise_judge_study(config, rows)

    def plot(self, config, summary, out_base):
        return plot_judge_study(config, summary, Path(out_base))


JUDGE_STUDIES = register_study_kind(JudgeStudies())
