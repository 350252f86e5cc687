"""A TAC-sized paired-vs-unpaired study (Rankel et al. 2011): how many system pairs each test separates.

Rankel, Conroy, Slud and O'Leary (2011) counted, on a TAC year's ROUGE-2 scores, how many of all
system pairs and of the human-vs-machine pairs the unpaired t-test, the paired t-test and the
Wilcoxon signed-rank test over topics call significant (TAC 2010: 275 / 309 / 305 of 344
human-vs-machine pairs). This study kind (``study: tac``) simulates such a year, trial by trial,
through the one runner (:func:`simdesign.runner.study.run_trials`); docs/how-to/paired-unpaired.md
runs it and docs/literature.md gives the numbers taken from the paper and their sources.

One trial
---------
* **Systems from a population** (:class:`simdesign.model.metric.SystemPopulation`): ``machines.count``
  machine effects beta_s on the latent scale of the base ``model`` (by default N(mean, sd^2) of the
  model's effects), and ``humans.count`` human summarisers much better than the machines:
  beta_h = mean + ``humans.advantage`` * sd + ``humans.sd`` * sd * z (advantage and spread in machine-
  population SDs).
* **Latent quality** of system s's output for document d: q_sd = beta_s + c_d + w_sd, with c_d and
  w_sd the shared and system-specific parts of the base model's document random effects made
  exchangeable (:func:`simdesign.model.metric.exchangeable_moments`: variance v, covariance c;
  c_d ~ N(0, c), w_sd ~ N(0, v - c)).
* **A metric score** per output, as metric validation simulates it
  (:class:`simdesign.model.metric.MetricGenerator`): m_sd = a q_sd + b_s + g_d + e_sd (system bias,
  document difficulty ``metric_generator.document_sd``, noise; set by the metric's correlation targets over the
  machine population).
* **One assessor per document**: as in TAC, document d's assessor is one of the human summarisers who
  wrote for it; the assessor shifts every output of d by a_j ~ N(0, ``assessors.sd``^2) and system s's
  by i_js ~ N(0, ``assessors.system_sd``^2) (an assessor who favours some systems: it makes a
  system's scores on documents of the same assessor correlated).
* **Unequal score variance across documents**: document d's spread factor
  h_d = exp(sigma z_d - sigma^2) (E h_d^2 = 1, sigma = ``score.spread``) multiplies its deviations,
  and the score is ``score.location + score.scale * h_d * (m_sd + a_j + i_js - a * mean)``: a
  ROUGE-2-like scale (machines' mean ``score.location``).
* **Missing outputs**: each document has ``humans.per_document`` of the human summarisers (TAC: 4 of
  8, so each covers about half the topics), drawn at random per document; each machine output is
  missing with probability ``machines.missing`` (TAC: 0). The availability mask comes from the
  trial's stream; a missing output is absent: the tests read the available outputs only
  (:mod:`simdesign.significance.partial_pairs`), never a NaN as if observed.

Outcome of a trial
------------------
For every test and threshold (``tests``) and multiplicity correction (``multiplicity``: none, or a
method of ``statsmodels.stats.multitest.multipletests`` over all pairs of the test), the numbers of
significant pairs among all pairs, human-vs-machine, machine-machine and human-human pairs, and of
pairs whose statistic is undefined (counted, never decided). Each test draws its resamples from its own
stream keyed by its label, so adding a test changes no other test's results.

The summary gives each count's mean over trials with its MCSE (trial = unit) and interval, the
2.5-97.5% range of single trials (what one TAC year could show), and each test's margin over the
unpaired t-test with the theoretical threshold (per trial, then averaged) with the share of trials in
which the test finds more pairs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.significance.partial_pairs import PARTIAL_TESTS, partial_pair_pvalues
from simdesign.core.checks import is_integer, is_number
from simdesign.core.errors import ConfigError, from_mapping
from simdesign.core.fields import field_problem
from simdesign.core.seeds import entropy_rng
from simdesign.core.suggest import suggestions
from simdesign.model.metric import MetricGenerator, MetricSpec, SystemPopulation, exchangeable_moments
from simdesign.runner.study import StudyKind, study_field_problems
from simdesign.studies.example_configs import read_examples
from simdesign.studies.rates.config import likert_model_or_problem, resolve_model
from simdesign.stats.montecarlo import mean_interval, wilson_interval

KIND = "tac"
KEYS = ("study", "name", "description", "model", "documents", "machines", "humans", "metric_generator", "assessors",
        "score",
        "tests", "multiplicity", "alpha", "bootstrap_resamples", "trials", "seed", "chunk_size")
CORRECTIONS = ("none", "bonferroni", "holm", "fdr_bh", "fdr_by")
PAIR_CLASSES = ("all", "human-machine", "machine-machine", "human-human")
PAPER_2010 = {"ttest_unpaired": 275, "ttest_doc": 309, "wilcoxon_doc": 305}
"""Rankel et al. (2011): human-vs-machine pairs of TAC 2010 significant on ROUGE-2 (of 344), theoretical
thresholds, no multiplicity correction (issue 31; docs/literature.md)."""
PAPER_2010_PAIRS = 344


def _number_problem(where: str, value, low: float, low_open: bool, high: float | None = None) -> str | None:
    ok = is_number(value) and np.isfinite(value) and (value > low if low_open else value >= low) and \
        (high is None or value <= high)
    if ok:
        return None
    bound = f"{'>' if low_open else '>='} {low:g}" + ("" if high is None else f" and <= {high:g}")
    return f"The '{where}' field must be a number {bound}; got {value!r}"


def _raise(problems: list) -> None:
    problems = [p for p in problems if p]
    if problems:
        raise ConfigError(problems)


@dataclass(frozen=True)
class Machines:
    """Machine summarisers: how many, the population of their effects, the chance an output is missing."""

    count: int = 43
    population: dict = field(default_factory=dict)
    missing: float = 0.0

    def __post_init__(self):
        found: list[str] = []
        population = from_mapping(SystemPopulation, self.population, "machines.population", ("kind", "mean", "sd"),
                                  found)
        _raise([None if is_integer(self.count, 2) else
                f"The 'machines.count' field must be an integer >= 2; got {self.count!r}",
                _number_problem("machines.missing", self.missing, 0, False, 0.9)]
               + [m.replace("'population.", "'machines.population.") for m in found])
        object.__setattr__(self, "population", population)


@dataclass(frozen=True)
class Humans:
    """Human summarisers: how many, how many write for each document, how much better and how spread."""

    count: int = 8
    per_document: int = 4
    advantage: float = 3.0
    sd: float = 0.5

    def __post_init__(self):
        _raise([None if is_integer(self.count, 0) else
                f"The 'humans.count' field must be a non-negative integer; got {self.count!r}",
                None if is_integer(self.per_document, 1) and (not is_integer(self.count, 0) or
                                                              self.per_document <= max(self.count, 1)) else
                f"The 'humans.per_document' field must be an integer from 1 to humans.count ({self.count!r}); "
                f"got {self.per_document!r}",
                _number_problem("humans.advantage", self.advantage, -np.inf, True),
                _number_problem("humans.sd", self.sd, 0, False)])


@dataclass(frozen=True)
class Assessors:
    """One assessor per document: the SD of their shift of every output, and of their system-specific shift."""

    sd: float = 0.0
    system_sd: float = 0.0

    def __post_init__(self):
        _raise([_number_problem("assessors.sd", self.sd, 0, False),
                _number_problem("assessors.system_sd", self.system_sd, 0, False)])


@dataclass(frozen=True)
class ScoreScale:
    """The ROUGE-2-like scale: the machines' mean, score units per metric unit, the documents' spread SD."""

    location: float = 0.065
    scale: float = 0.012
    spread: float = 0.0

    def __post_init__(self):
        _raise([_number_problem("score.location", self.location, -np.inf, True),
                _number_problem("score.scale", self.scale, 0, True),
                _number_problem("score.spread", self.spread, 0, False, 3)])


@dataclass(frozen=True)
class TacTest:
    """A test and its threshold (:data:`simdesign.significance.partial_pairs.PARTIAL_TESTS`)."""

    name: str
    threshold: str = "theory"

    @property
    def label(self) -> str:
        return self.name if self.threshold == "theory" else f"{self.name}[{self.threshold}]"


@dataclass(frozen=True)
class TacConfig:
    """A validated TAC-sized study (module docstring); build it with :func:`parse_tac_config`."""

    name: str
    model: object
    documents: int
    machines: Machines
    humans: Humans
    metric: MetricSpec
    assessors: Assessors
    score: ScoreScale
    tests: tuple
    multiplicity: tuple
    alpha: float
    bootstrap_resamples: int
    trials: int
    seed: int
    chunk_size: int
    raw: dict = field(default_factory=dict, compare=False)

    @property
    def n_systems(self) -> int:
        return self.machines.count + self.humans.count

    def pairs(self) -> list[tuple[int, int]]:
        """Every system pair (i < j); systems 0..count-1 are the machines, then the humans."""
        return [(i, j) for i in range(self.n_systems) for j in range(i + 1, self.n_systems)]

    def pair_classes(self) -> np.ndarray:
        """Each pair's class: 'human-machine', 'machine-machine' or 'human-human'."""
        human = np.arange(self.n_systems) >= self.machines.count
        kinds = {0: "machine-machine", 1: "human-machine", 2: "human-human"}
        return np.array([kinds[int(human[i]) + int(human[j])] for i, j in self.pairs()])

    def generator(self) -> MetricGenerator:
        """The metric generator, its noise set on the machine population (module docstring)."""
        return MetricGenerator.for_population(self.model, self.machines.population, (self.metric,))


def _parse_tests(value, problems: list[str]) -> tuple:
    if not isinstance(value, list) or not value:
        problems.append(f"The 'tests' field must be a non-empty list of tests (a name, or {{name, threshold}}) from "
                        f"{PARTIAL_TESTS}; got {value!r}")
        return ()
    tests = []
    for position, item in enumerate(value):
        entry = {"name": item} if isinstance(item, str) else item
        if not isinstance(entry, dict) or set(entry) - {"name", "threshold"} or entry.get("name") not in PARTIAL_TESTS:
            name = entry.get("name") if isinstance(entry, dict) else item
            problems.append(f"The 'tests' field's entry {position + 1} ({item!r}) must be a test name from "
                            f"{list(PARTIAL_TESTS)} or a mapping with 'name' and 'threshold'"
                            f"{suggestions([name], PARTIAL_TESTS) if isinstance(name, str) else ''}")
            continue
        threshold = entry.get("threshold", "theory")
        if threshold not in PARTIAL_TESTS[entry["name"]]:
            problems.append(f"The 'tests' field's entry {position + 1}: threshold {threshold!r} of {entry['name']} "
                            f"must be one of {list(PARTIAL_TESTS[entry['name']])}")
            continue
        tests.append(TacTest(entry["name"], threshold))
    labels = [test.label for test in tests]
    if len(set(labels)) < len(labels):
        problems.append(f"The 'tests' field lists a test twice: {labels}")
    return tuple(tests)


def _parse_multiplicity(value, problems: list[str]) -> tuple:
    values = value if isinstance(value, list) else [value]
    if not values or any(v not in CORRECTIONS for v in values) or len(set(values)) < len(values):
        problems.append(f"The 'multiplicity' field must be one of {list(CORRECTIONS)} or a list of them without "
                        f"repeats; got {value!r}")
        return ("none",)
    return tuple(values)


def parse_tac_config(raw: dict, base_dir: Path | None = None) -> TacConfig:
    """Validate a TAC-study mapping; every problem is reported at once (ConfigError naming the field)."""
    problems: list[str] = []
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        problems.append(f"Unknown key(s) {unknown}; allowed: {list(KEYS)}{suggestions(unknown, KEYS)}")
    problems += study_field_problems(raw, (KIND,))
    defaults = {"name": "tac", "alpha": 0.05, "bootstrap_resamples": 1000, "trials": 200, "seed": 0,
                "chunk_size": 5}
    problems += [p for key, default in defaults.items() if (p := field_problem(key, raw.get(key, default)))]
    documents = raw.get("documents", 46)
    if not is_integer(documents, 2):
        problems.append(f"The 'documents' field must be an integer >= 2; got {documents!r}")
    model, _ = resolve_model({"model": raw.get("model", "coherence")}, base_dir, problems)
    model = likert_model_or_problem(model, "TAC study", problems) if model is not None else None
    parts = {}
    for key, cls in (("machines", Machines), ("humans", Humans), ("assessors", Assessors), ("score", ScoreScale),
                     ("metric_generator", MetricSpec)):
        found: list[str] = []
        parts[key] = from_mapping(cls, raw.get(key, {}), key, list(cls.__dataclass_fields__), found)
        problems += [m.replace("'metric.", f"'{key}.") for m in found]  # MetricSpec says 'metric.<field>'
    parts["metric"] = parts.pop("metric_generator")
    tests = _parse_tests(raw.get("tests", list(PARTIAL_TESTS)), problems)
    multiplicity = _parse_multiplicity(raw.get("multiplicity", "none"), problems)
    if problems or None in parts.values() or model is None:
        raise ConfigError(problems or ["invalid TAC study config"])
    config = TacConfig(
        name=str(raw.get("name", "tac")), model=model, documents=int(documents), tests=tests,
        multiplicity=multiplicity, alpha=float(raw.get("alpha", 0.05)),
        bootstrap_resamples=int(raw.get("bootstrap_resamples", 1000)), trials=int(raw.get("trials", 200)),
        seed=int(raw.get("seed", 0)), chunk_size=int(raw.get("chunk_size", 5)), raw=dict(raw), **parts)
    _raise(tac_size_problems(config))
    try:
        config.generator()  # raises on correlation targets the system bias rules out
    except ConfigError as exc:
        raise ConfigError([m.replace("'metric.", "'metric_generator.") for m in exc.messages]) from None
    return config


def tac_size_problems(config: TacConfig) -> list[str]:
    """Messages for a TAC study larger than a run can hold, checked from the sizes before anything is drawn.

    One trial holds a score per (system, document) and tests every system pair over the documents, so both
    are bounded by the runner's ceiling on one study's judgements (docs/runner.md); a typo such as
    ``documents: 10000000`` would otherwise fill the memory while the first year is drawn.
    """
    from simdesign.runner.limits import MAX_JUDGEMENTS_PER_STUDY, MAX_RESAMPLES

    scores = config.n_systems * config.documents
    pair_cells = config.n_systems * (config.n_systems - 1) // 2 * config.documents
    problems = []
    if scores > MAX_JUDGEMENTS_PER_STUDY:
        problems.append(f"The TAC study holds {scores:,} scores per simulated year ('documents' {config.documents:,} "
                        f"x {config.n_systems:,} systems, 'machines.count' + 'humans.count'); the ceiling is "
                        f"{MAX_JUDGEMENTS_PER_STUDY:,} (each year is held in memory whole)")
    elif pair_cells > MAX_JUDGEMENTS_PER_STUDY:
        problems.append(f"The TAC study tests {pair_cells:,} (system pair, document) cells per simulated year "
                        f"('documents' {config.documents:,} x the pairs of {config.n_systems:,} systems); the "
                        f"ceiling is {MAX_JUDGEMENTS_PER_STUDY:,}")
    if config.bootstrap_resamples > MAX_RESAMPLES:
        problems.append(f"The 'bootstrap_resamples' field asks for {config.bootstrap_resamples:,} resamples; the "
                        f"ceiling is {MAX_RESAMPLES:,}")
    return problems


# ---------------------------------------------------------------------------------------------- one trial
@dataclass(frozen=True)
class TacYear:
    """One simulated year: scores (systems x documents; NaN where missing), availability, assessors."""

    scores: np.ndarray
    available: np.ndarray
    assessor: np.ndarray
    effects: np.ndarray


def _availability(config: TacConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Who wrote for which document, and each document's assessor (one of its human summarisers)."""
    n_machines, n_humans, n_documents = config.machines.count, config.humans.count, config.documents
    available = np.ones((config.n_systems, n_documents), bool)
    available[:n_machines] = rng.random((n_machines, n_documents)) >= config.machines.missing
    assessor = np.zeros(n_documents, int)
    if n_humans:
        # per document, a random subset of per_document humans: the first per_document of a random order
        order = np.argsort(rng.random((n_documents, n_humans)), axis=1)
        writes = np.zeros((n_documents, n_humans), bool)
        np.put_along_axis(writes, order[:, :config.humans.per_document], True, axis=1)
        available[n_machines:] = writes.T
        assessor = order[np.arange(n_documents), rng.integers(0, config.humans.per_document, n_documents)]
    return available, assessor


def simulate_year(config: TacConfig, rng: np.random.Generator) -> TacYear:
    """One trial's scores and availability (module docstring), from ``rng`` in a fixed order."""
    base_effects = np.asarray(config.model.effects, float)
    mean, variance = config.machines.population.moments(base_effects)
    sd = float(np.sqrt(variance))
    machines = config.machines.population.draw(base_effects, config.machines.count, rng)
    humans = mean + config.humans.advantage * sd + config.humans.sd * sd * rng.standard_normal(config.humans.count)
    effects = np.concatenate([machines, humans])
    available, assessor = _availability(config, rng)
    part_variance, part_covariance = exchangeable_moments(config.model.sampled_document_cov)
    n, d = config.n_systems, config.documents
    quality = (effects[None, :] + np.sqrt(part_covariance) * rng.standard_normal((d, 1))
               + np.sqrt(part_variance - part_covariance) * rng.standard_normal((d, n)))
    metric = config.generator().scores(quality, rng)[0]  # (systems, documents)
    pool = max(config.humans.count, 1)
    shift = config.assessors.sd * rng.standard_normal(pool)[assessor][None, :]
    favour = config.assessors.system_sd * rng.standard_normal((n, pool))[:, assessor]
    spread = np.exp(config.score.spread * rng.standard_normal(d) - config.score.spread ** 2)
    centred = metric + shift + favour - config.metric.scale * mean
    scores = config.score.location + config.score.scale * spread[None, :] * centred
    return TacYear(scores=np.where(available, scores, np.nan), available=available, assessor=assessor,
                   effects=effects)


def significant_counts(p_value: np.ndarray, classes: np.ndarray, alpha: float, correction: str) -> dict:
    """Counts of significant and undefined pairs, overall and per pair class, after ``correction``.

    The family of a correction is every pair whose p-value is defined; an undefined pair is never
    significant.
    """
    defined = np.isfinite(p_value)
    significant = np.zeros(p_value.size, bool)
    if defined.any():
        if correction == "none":
            significant[defined] = p_value[defined] < alpha
        else:
            from statsmodels.stats.multitest import multipletests

            significant[defined] = multipletests(p_value[defined], alpha=alpha, method=correction)[0]
    counts = {"significant_all": int(significant.sum()), "undefined_all": int((~defined).sum())}
    for name in PAIR_CLASSES[1:]:
        member = classes == name
        counts[f"significant_{name}"] = int(significant[member].sum())
        counts[f"undefined_{name}"] = int((~defined & member).sum())
    return counts


def draw_year(config: TacConfig, rng: np.random.Generator) -> tuple:
    """One trial's data: the root of the tests' streams (the trial's first draw, one stream per test label) and
    the simulated year."""
    analysis_root = int(rng.integers(0, 2 ** 63))
    return analysis_root, simulate_year(config, rng)


def count_significant(config: TacConfig, drawn: tuple) -> pd.DataFrame:
    """One trial's rows from its data (:func:`draw_year`): a row per (test, correction) with its counts
    (:func:`significant_counts`)."""
    analysis_root, year = drawn
    pairs, classes = config.pairs(), config.pair_classes()
    rows = []
    for test in config.tests:
        stream = entropy_rng(analysis_root, test.label)  # SeedSequence([analysis_root, label_key(test.label)])
        p_value = partial_pair_pvalues(year.scores, year.available, pairs, test.name, test.threshold, stream,
                                       config.bootstrap_resamples)
        for correction in config.multiplicity:
            rows.append({"label": test.label, "test": test.name, "threshold": test.threshold,
                         "correction": correction,
                         **significant_counts(p_value, classes, config.alpha, correction)})
    return pd.DataFrame(rows)


def trial_counts(config: TacConfig, rng: np.random.Generator) -> pd.DataFrame:
    """One trial: :func:`count_significant` of :func:`draw_year`."""
    return count_significant(config, draw_year(config, rng))


# ---------------------------------------------------------------------------------------------- summary
def _pair_numbers(config: TacConfig) -> dict:
    classes = config.pair_classes()
    return {"all": classes.size, **{name: int((classes == name).sum()) for name in PAIR_CLASSES[1:]}}


def summarise_tac(config: TacConfig, rows: pd.DataFrame) -> pd.DataFrame:
    """Counts per (test, correction, pair class) with MCSE, interval and trial range; margins over the unpaired t.

    Columns: label, test, threshold, correction, pairs, measure ('significant', 'undefined',
    'margin_over_unpaired'), mean, mcse, ci_low, ci_high, trial_low, trial_high (2.5% and 97.5% of single
    trials), share_above (margins: the share of trials with a positive margin), its Wilson interval,
    n_pairs, trials, paper_2010 (Rankel et al.'s count where it applies).
    """
    numbers, out = _pair_numbers(config), []
    reference = "ttest_unpaired"
    for (label, correction), group in rows.groupby(["label", "correction"], sort=False):
        group = group.sort_values("trial")
        first = group.iloc[0]
        base = rows[(rows["label"] == reference) & (rows["correction"] == correction)].sort_values("trial")
        for pairs in PAIR_CLASSES:
            for measure in ("significant", "undefined", "margin_over_unpaired"):
                if measure == "margin_over_unpaired":
                    if label == reference or len(base) != len(group):
                        continue
                    values = group[f"significant_{pairs}"].to_numpy() - base[f"significant_{pairs}"].to_numpy()
                else:
                    values = group[f"{measure}_{pairs}"].to_numpy()
                mean, mcse, low, high = mean_interval(values)
                row = {"label": label, "test": first["test"], "threshold": first["threshold"],
                       "correction": correction, "pairs": pairs, "measure": measure, "mean": mean, "mcse": mcse,
                       "ci_low": low, "ci_high": high, "trial_low": float(np.quantile(values, 0.025)),
                       "trial_high": float(np.quantile(values, 0.975)), "n_pairs": numbers[pairs],
                       "trials": len(values)}
                if measure == "margin_over_unpaired":
                    share = float((values > 0).mean())
                    share_mcse = float(np.sqrt(share * (1 - share) / len(values)))
                    row["share_above"] = share
                    row["share_low"], row["share_high"] = wilson_interval(share, share_mcse, len(values), len(values))
                paper = PAPER_2010.get(first["test"]) if (pairs == "human-machine" and measure == "significant" and
                                                          first["threshold"] == "theory" and correction == "none") \
                    else None
                row["paper_2010"] = paper
                out.append(row)
    return pd.DataFrame(out)


def plot_tac(config: TacConfig, summary: pd.DataFrame, out_base: Path) -> list[Path]:
    """Significant human-vs-machine and all pairs per test and correction, with the paper's 2010 counts."""
    from matplotlib.figure import Figure

    significant = summary[summary["measure"] == "significant"]
    labels = list(dict.fromkeys(significant["label"]))
    corrections = list(dict.fromkeys(significant["correction"]))
    figure = Figure(figsize=(11, 0.45 * len(labels) * len(corrections) + 2.2))
    axes = figure.subplots(1, 2, sharey=True)
    colours = dict(zip(corrections, ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown"]))
    for axis, pairs, title in ((axes[0], "human-machine", "human vs machine pairs"), (axes[1], "all", "all pairs")):
        table = significant[significant["pairs"] == pairs]
        for c_index, correction in enumerate(corrections):
            part = table[table["correction"] == correction].set_index("label").reindex(labels)
            y = np.arange(len(labels)) * len(corrections) + c_index
            axis.hlines(y, part["trial_low"], part["trial_high"], color=colours[correction], lw=1, alpha=0.5)
            axis.errorbar(part["mean"], y, xerr=[part["mean"] - part["ci_low"], part["ci_high"] - part["mean"]],
                          fmt="o", color=colours[correction], ms=4, capsize=2,
                          label=f"correction: {correction}" if pairs == "all" else None)
            if pairs == "human-machine" and correction == "none":
                paper = part["paper_2010"].astype(float) * part["n_pairs"] / PAPER_2010_PAIRS
                axis.plot(paper, y, "x", color="tab:red", ms=8, mew=2,
                          label="Rankel et al. 2010 (scaled to these pairs)")
        axis.axvline(int(table["n_pairs"].iloc[0]), color="grey", ls="--", lw=1)
        axis.set_title(f"{title} ({int(table['n_pairs'].iloc[0])})")
        axis.set_xlabel("significant pairs per trial (mean, 95% CI; line: 2.5-97.5% of trials)")
    axes[0].set_yticks(np.arange(len(labels)) * len(corrections) + (len(corrections) - 1) / 2, labels)
    axes[0].invert_yaxis()
    axes[0].legend(loc="lower left", fontsize=8)
    axes[1].legend(loc="lower left", fontsize=8)
    # The headline reading (paired over unpaired, and the counts' level) follows from two assumed magnitudes,
    # not estimated from TAC data: the figure says so where the reading is made (issue 39).
    figure.suptitle(f"{config.name}: {config.machines.count} machines, {config.humans.count} humans "
                    f"({config.humans.per_document} per document), {config.documents} documents, "
                    f"{int(significant['trials'].iloc[0])} trials\nassumed, not estimated from TAC data: topic difficulty SD "
                    f"{config.metric.document_sd:g} (sets the paired-over-unpaired margin),\nhumans "
                    f"{config.humans.advantage:g} machine-population SDs above the machines (sets the counts' "
                    "level); sensitivity: docs/literature.md", fontsize=10)
    figure.tight_layout()
    path = Path(out_base).with_suffix(".png")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    return [path]


# ---------------------------------------------------------------------------------------------- the kind
class TacStudy(StudyKind):
    """The TAC-sized paired-vs-unpaired study (module docstring), run by the generic runner."""

    name, keys = KIND, ("machines", "humans")

    def parse(self, mapping, base_dir=None):
        return parse_tac_config(mapping, base_dir)

    def with_trials(self, config, trials):
        return parse_tac_config({**config.raw, "trials": trials})

    def cells(self, config):
        return ["tac"]

    def chunk_trials(self, config):
        return config.chunk_size

    def fingerprint(self, config):
        # everything the rows depend on: the model's parameters (not its name or path), the settings
        settings = {key: value for key, value in config.raw.items()
                    if key not in ("name", "description", "trials", "chunk_size", "model", "study")}
        model = config.model
        return {"settings": settings, "model": {"effects": np.asarray(model.effects, float).tolist(),
                                                "document_cov": np.asarray(model.sampled_document_cov).tolist()},
                "seed": config.seed}

    def examples(self):
        return read_examples("tac")

    def generate(self, config, cell, trial, rng):
        return draw_year(config, rng)

    def analyse(self, config, cell, trial, data, rng):
        return count_significant(config, data)

    def summarise(self, config, rows):
        return summarise_tac(config, rows)

    def plot(self, config, summary, out_base):
        return plot_tac(config, summary, Path(out_base))
