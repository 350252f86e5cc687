"""Analyse a judge-plus-human table: PPI and PPI++ beside the human-only and judge-only estimates.

``simdesign analyse TABLE`` (and ``simdesign.analyse(TABLE)``) on a table of an LLM judge's scores of every
output beside human scores of some (:mod:`simdesign.tables.judge`: ``system, document, judge, human``,
optional ``annotator``, ``judge_name``) reports, for every judge in it:

* each system's expected human score by prediction-powered inference: PPI (judge weight lam = 1;
  Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, 2023, Science) and PPI++ (lam tuned to the data, clipped to
  [0, 1]; Angelopoulos, Duchi & Zrnic, 2023), stratified by system as in Boyeau et al. (2024, "AutoEval done
  right"), with the human-only mean and the judge-only mean beside them;
* every pair's mean per-document difference (a - b, paired by document) by the same estimators, with a
  two-sided test (normal p-value) and Holm's adjustment over the pairs;
* the judge's bias (mean judge minus human score on the human-scored outputs) per system and pair;
* the effective number of human judgements the judge was worth: ``n_human * var(human-only) / var(PPI++)``.

Every interval is normal, with the standard error of a cluster bootstrap that resamples annotators and
documents (the human scores come from a few annotators who each score many outputs) and is reported beside
the textbook interval that ignores the clustering (ppi-python's), so the cost of ignoring it is seen. The
numbers come from :func:`simdesign.stats.ppi.ppi_study`, whose docstring says exactly what is computed.

Examples
--------
>>> import numpy as np, pandas as pd
>>> rng = np.random.default_rng(0)
>>> quality = rng.normal(size=(3, 30)) + np.array([[0.6], [0.3], [0.0]])
>>> table = pd.DataFrame({"system": np.repeat(["a", "b", "c"], 30), "document": np.tile(np.arange(30), 3),
...                       "judge": np.round(5 + 2 * quality + rng.normal(size=quality.shape)).ravel(),
...                       "human": np.where(np.arange(90) % 30 < 12, np.round(3 + quality).ravel(), np.nan)})
>>> result = analyse_judge_table(table, bootstrap=200)
>>> list(result.summary()["target"])
['a', 'b', 'c', 'a - b', 'a - c', 'b - c']
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.checks import is_integer, is_number
from simdesign.core.errors import ConfigError, DataError
from simdesign.core.results import Result
from simdesign.core.seeds import analysis_rng
from simdesign.tables.judge import check_judge_table, read_judge_table
from simdesign.stats.ppi import judge_study, ppi_study
from simdesign.stats.replication import adjusted_p_values

# What ``save`` (and ``simdesign analyse --out``) writes for a judge-plus-human table.
OUTPUTS = ("judge_analysis.csv", "judge_estimates.csv", "judge_analysis.md")
STREAM = "analyse-judge"
ADJUSTMENTS = ("none", "holm", "tukey")  # tukey (the command's default for Likert tables) becomes holm here
DEFAULT_BOOTSTRAP = 2000
# summary() column prefixes of the estimators (PPI++ as ppi_pp: a '+' is awkward in a column name)
PREFIXES = {"human_only": "human_only", "judge_only": "judge_only", "ppi": "ppi", "ppi++": "ppi_pp",
            "judge_bias": "judge_bias"}


def _interval_text(estimate: float, low: float, high: float, sign: bool = False) -> str:
    if not np.isfinite(estimate):
        return "-"
    number = "{:+.2f}" if sign else "{:.2f}"
    inside = f" [{number.format(low)}, {number.format(high)}]" if np.isfinite(low) else ""
    return number.format(estimate) + inside


def _number_text(value: float, digits: int = 0) -> str:
    return f"{value:.{digits}f}" if np.isfinite(value) else "-"


def _p_text(value: float) -> str:
    return "-" if not np.isfinite(value) else "<1e-15" if value < 1e-15 else f"{value:.3g}"


def write_outputs(analysis, out_dir, names) -> dict:
    """Write a judge analysis's three outputs, ``names``: its :meth:`summary` and ``estimates`` as CSV and its
    ``report()`` as Markdown, into ``out_dir`` (created); returns file name -> path, in that order."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in names]
    analysis.summary().to_csv(paths[0], index=False)
    analysis.estimates.to_csv(paths[1], index=False)
    paths[2].write_text(analysis.report())
    return dict(zip(names, paths))


@dataclass(repr=False)
class JudgeAnalysis(Result):
    """The analysis of a judge-plus-human table (module docstring).

    Attributes
    ----------
    estimates : pandas.DataFrame
        Every number, one row per judge, target (system or pair 'a - b'), estimator (``human_only``,
        ``judge_only``, ``ppi``, ``ppi++``, ``judge_bias``) and interval (``clustered``, ``independent``):
        the columns of :func:`simdesign.stats.ppi.ppi_study` after ``judge_name``, and ``p_adjusted``
        (Holm over the pairs of that judge, estimator and interval).
    info : dict
        What was read and how it was analysed.
    notes : list of str
    """

    estimates: pd.DataFrame
    info: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def _what(self) -> str:
        return "PPI++ means and pairs of a judge beside humans"

    def _size(self) -> str:
        return f"{len(self.info.get('judges', ()))} judge(s), {self.estimates['target'].nunique()} targets"

    def __str__(self) -> str:
        return self.report()

    def summary(self) -> pd.DataFrame:
        """One row per judge and target: every estimator's estimate with its clustered interval, the PPI++
        interval that ignores the clustering, PPI++'s lam, its test (pairs), the effective number of human
        judgements (``effective_n``, from the clustered variances) and ``judge_only_biased`` (the judge's bias
        interval excludes 0, so the judge-only value is not the human one)."""
        rows = []
        for (judge, target), group in self.estimates.groupby(["judge_name", "target"], sort=False):
            cells = group.set_index(["estimator", "interval"])
            first = group.iloc[0]
            row = {"judge_name": judge, "target": target, "system_a": first["system_a"],
                   "system_b": first["system_b"], "n_human": first["n_human"], "n_judge_only": first["n_judge_only"]}
            for estimator, prefix in PREFIXES.items():
                clustered = cells.loc[(estimator, "clustered")]
                row.update({prefix: clustered["estimate"], f"{prefix}_low": clustered["low"],
                            f"{prefix}_high": clustered["high"]})
            bias = cells.loc[("judge_bias", "clustered")]
            row["judge_only_biased"] = bool(bias["low"] > 0 or bias["high"] < 0)  # the judge-only value is off
            independent, tuned = cells.loc[("ppi++", "independent")], cells.loc[("ppi++", "clustered")]
            row.update({"ppi_pp_independent_low": independent["low"], "ppi_pp_independent_high": independent["high"],
                        "lam": tuned["lam"], "p_value": tuned["p_value"], "p_adjusted": tuned["p_adjusted"],
                        "significant": (bool(tuned["p_adjusted"] < self.info.get("alpha", 0.05))
                                        if np.isfinite(tuned["p_adjusted"]) else None),
                        "effective_n": tuned["effective_n"], "status": first["status"]})
            rows.append(row)
        return pd.DataFrame(rows)

    def report(self) -> str:
        """The report as Markdown (``judge_analysis.md``; the command prints it)."""
        info = self.info
        parts = ["# Judge-plus-human analysis", "", _data_sentence(info), "", _method_text(info), ""]
        table = self.summary()
        for judge, rows in table.groupby("judge_name", sort=False):
            if len(info["judges"]) > 1:
                parts += [f"## Judge {judge}", ""]
            parts += [_system_table(rows[rows["system_b"].isna()]), "", "Pairs (a - b, paired by document; p: PPI++ "
                      f"clustered, two-sided; adjusted: {info['adjust']} over the pairs):", "",
                      _pair_table(rows[rows["system_b"].notna()]), ""]
        parts += ["## Notes", ""] + [f"- {note}" for note in self.notes]
        return "\n".join(parts) + "\n"

    to_markdown = report

    def save(self, out_dir) -> dict:
        """Write ``judge_analysis.csv`` (:meth:`summary`), ``judge_estimates.csv`` (:attr:`estimates`) and
        ``judge_analysis.md`` (:meth:`report`) to ``out_dir``; returns file name -> path. (No figure: ``plot``
        raises :class:`~simdesign.core.results.NoFigureError`.)"""
        return write_outputs(self, out_dir, OUTPUTS)


def _data_sentence(info: dict) -> str:
    annotators = (f"by {info['annotators']} annotators" if info["annotators"] else
                  "(no annotator column: each human score is one observation)")
    judges = "" if info["judges"] == [""] else f" Judges: {', '.join(info['judges'])}."
    return (f"{info['source']}: {info['rows']} rows; {info['systems']} systems, {info['documents']} documents, "
            f"{info['outputs']} outputs scored by the judge, {info['human_scores']} human scores of "
            f"{info['human_outputs']} outputs {annotators}.{judges}")


def _method_text(info: dict) -> str:
    level = int(round(info["level"] * 100))
    units = "annotators and documents" if info["annotators"] else "documents"
    kind = ("intervals from a cluster bootstrap's standard error with the few-clusters corrections (times "
            "sqrt(G/(G-1)) and a t quantile on G-1 degrees of freedom, G annotators)" if info["annotators"]
            else "normal intervals from a cluster bootstrap")
    return (f"Each system's expected human score and each pair's mean per-document difference, with {level}% "
            f"{kind} ({info['bootstrap']} resamples of {units}, seed "
            f"{info['seed']}) unless marked 'ignoring clustering' (the textbook interval, ppi-python's, which treats "
            "every human score as independent). PPI: judge weight lam = 1 (Angelopoulos et al. 2023); PPI++: lam "
            "tuned per system and pair in [0, 1] (Angelopoulos, Duchi & Zrnic 2023); stratified by system (Boyeau "
            "et al. 2024). Judge only: the judge's mean, the human mean only for an unbiased judge on the human "
            "scale (shown to compare, not to use). Judge bias: mean judge minus human score on the human-scored "
            "outputs. Effective n: human scores x var(human only) / var(PPI++), both from the bootstrap: the human "
            "scores a human-only study of this design would need for PPI++'s precision.")


def _biased(row) -> str:
    return " (biased)" if row.judge_only_biased else ""


def _system_table(rows: pd.DataFrame) -> str:
    head = ("| system | human scores | judge only outputs | human only | PPI | PPI++ | lam | PPI++ ignoring clustering "
            "| judge only | judge bias | effective n |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
    body = "".join(
        f"| `{r.target}` | {r.n_human} | {r.n_judge_only} | "
        f"{_interval_text(r.human_only, r.human_only_low, r.human_only_high)} | "
        f"{_interval_text(r.ppi, r.ppi_low, r.ppi_high)} | {_interval_text(r.ppi_pp, r.ppi_pp_low, r.ppi_pp_high)} | "
        f"{_number_text(r.lam, 2)} | {_interval_text(r.ppi_pp, r.ppi_pp_independent_low, r.ppi_pp_independent_high)} | "
        f"{_interval_text(r.judge_only, r.judge_only_low, r.judge_only_high)}{_biased(r)} | "
        f"{_interval_text(r.judge_bias, r.judge_bias_low, r.judge_bias_high, True)} | {_number_text(r.effective_n)} |\n"
        for r in rows.itertuples())
    return "Systems (expected human score):\n\n" + head + body


def _pair_table(rows: pd.DataFrame) -> str:
    if rows.empty:
        return "(one system: no pairs)"
    head = ("| pair | documents with human scores of both | PPI++ | p | p adjusted | PPI++ ignoring clustering | human "
            "only | PPI | judge only | judge bias | effective n |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
    body = "".join(
        f"| `{r.target}` | {r.n_human} | {_interval_text(r.ppi_pp, r.ppi_pp_low, r.ppi_pp_high, True)} | "
        f"{_p_text(r.p_value)} | {_p_text(r.p_adjusted)} | "
        f"{_interval_text(r.ppi_pp, r.ppi_pp_independent_low, r.ppi_pp_independent_high, True)} | "
        f"{_interval_text(r.human_only, r.human_only_low, r.human_only_high, True)} | "
        f"{_interval_text(r.ppi, r.ppi_low, r.ppi_high, True)} | "
        f"{_interval_text(r.judge_only, r.judge_only_low, r.judge_only_high, True)}{_biased(r)} | "
        f"{_interval_text(r.judge_bias, r.judge_bias_low, r.judge_bias_high, True)} | "
        f"{_number_text(r.effective_n)} |\n" for r in rows.itertuples())
    return head + body


# ---------------------------------------------------------------------------------------------
# The analysis
# ---------------------------------------------------------------------------------------------

def _check_options(bootstrap, seed, level, alpha, adjust, rng) -> None:
    """Refuse bad options before any work, each naming the option (all at once)."""
    problems = []
    if not is_integer(bootstrap, 100):
        problems.append(f"bootstrap must be an integer of at least 100 resamples; got {bootstrap!r}")
    if not is_integer(seed, 0):
        problems.append(f"seed must be a non-negative integer; got {seed!r}")
    for name, value in (("level", level), ("alpha", alpha)):
        if not is_number(value) or not 0 < value < 1:
            problems.append(f"{name} must be a number between 0 and 1; got {value!r}")
    if adjust not in ADJUSTMENTS:
        problems.append(f"adjust must be one of {list(ADJUSTMENTS)} for a judge-plus-human table; got {adjust!r}")
    if rng is not None and not isinstance(rng, np.random.Generator):
        problems.append(f"rng must be a numpy Generator (np.random.default_rng(seed)) or None; got "
                        f"{type(rng).__name__}")
    if problems:
        raise ConfigError(problems)


def refuse_other_options(**given) -> None:
    """Refuse options of the Likert and Rank analysis given for a judge-plus-human table, naming each.

    ``given``: option name (as the command spells it) -> True when the user set it.
    """
    named = [name for name, set_ in given.items() if set_]
    if named:
        raise ConfigError(f"{', '.join(named)} appl{'ies' if len(named) == 1 else 'y'} to Likert and Rank tables; "
                          "this is a judge-plus-human table (a 'judge' and a 'human' column), analysed by "
                          "prediction-powered inference, which takes --bootstrap, --seed, --alpha, --adjust "
                          "(none or holm), --systems, --columns and --out (docs/how-to/analyse-judge-and-human.md)")


def _read(table, columns):
    if isinstance(table, (str, os.PathLike)):
        return read_judge_table(table, columns)
    if not isinstance(table, pd.DataFrame):
        raise DataError(f"The judge-plus-human table must be a pandas DataFrame or a file path; got "
                        f"{type(table).__name__}")
    if columns:
        raise ConfigError("'columns' applies to a file path; rename a DataFrame's columns yourself (DataFrame.rename)")
    return table


def analyse_judge_table(table, *, columns=None, systems=None, bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0,
                        rng: np.random.Generator | None = None, level: float = 0.95, alpha: float = 0.05,
                        adjust: str = "holm") -> JudgeAnalysis:
    """Analyse a judge-plus-human table (module docstring); ``simdesign.analyse`` calls this for such a table.

    Parameters
    ----------
    table : str, path-like or pandas.DataFrame
        CSV, JSON (a list of row objects) or JSON Lines (``.jsonl``), or a DataFrame with the same columns
        (:mod:`simdesign.tables.judge`).
    columns : dict or str, optional
        A path only: file column -> ours (``{'gpt4': 'judge'}``, or ``--columns`` text ``judge=gpt4``).
    systems : sequence of str, optional
        The systems' order (default: first appearance); pairs are a - b in this order.
    bootstrap : int
        Cluster-bootstrap resamples (at least 100).
    seed : int
        Seeds the bootstrap (one stream per judge) when ``rng`` is not given.
    rng : numpy.random.Generator, optional
        The bootstrap's random numbers instead of ``seed``'s.
    level : float
        The intervals' confidence level.
    alpha : float
        Significance level of the ``significant`` column (after the adjustment).
    adjust : {'holm', 'none', 'tukey'}
        Adjustment of the pairs' p-values; 'tukey' (the command's default for Likert tables) becomes Holm.

    Returns
    -------
    JudgeAnalysis

    Raises
    ------
    ConfigError
        A bad option.
    DataError
        A table that cannot be used, every problem at once naming the column and lines
        (:func:`~simdesign.tables.judge.check_judge_table`).
    """
    _check_options(bootstrap, seed, level, alpha, adjust, rng)
    frame = _read(table, columns)
    typed, checked = check_judge_table(frame, systems)
    if "judge_name" not in typed:
        typed = typed.assign(judge_name="")
    parts, notes = [], []
    for judge in checked["judges"]:
        judge = "" if judge is None else judge
        rows = typed[typed["judge_name"] == judge]
        order = [s for s in checked["systems"] if s in set(rows["system"])]
        generator = rng if rng is not None else analysis_rng(seed, STREAM, 0, judge)
        study = judge_study(rows, order)
        estimates = _few_clusters(ppi_study(study, generator, resamples=int(bootstrap), level=level), study, level)
        estimates.insert(0, "judge_name", judge)
        estimates["p_adjusted"] = _adjusted(estimates, "none" if adjust == "none" else "holm")
        parts.append(estimates)
        notes += [f"judge {judge}: {note}" if judge else note
                  for note in _judge_notes(rows, estimates, checked["scale_notes"].get(judge or None))]
    info = _info(frame, typed, checked, bootstrap, seed, level, alpha, adjust)
    return JudgeAnalysis(pd.concat(parts, ignore_index=True), info, _general_notes(info) + notes)


def _few_clusters(estimates: pd.DataFrame, study, level: float) -> pd.DataFrame:
    """The clustered intervals with the few-clusters corrections where annotators are named (the bootstrap SE
    times sqrt(G / (G - 1)) and a t quantile on G - 1 degrees of freedom, G annotators:
    :func:`simdesign.stats.judge_ipw.few_clusters_rows`). Measured (figures/judge_coverage.csv, 2,000 studies a
    cell): with 10 annotators the plain clustered PPI++ interval covers system means 0.937 [0.929, 0.944], the
    corrected one 0.971 [0.966, 0.976]; with 3 annotators 0.79 against 0.98."""
    from simdesign.stats.judge_ipw import few_clusters_rows

    if study.label_annotator is None or study.n_annotators < 2:
        return estimates  # documents are the clusters: many of them, the correction is negligible
    corrected = few_clusters_rows(estimates, study.n_annotators, level)
    estimates = estimates.copy()
    for column in ("standard_error", "low", "high", "p_value"):
        estimates.loc[corrected.index, column] = corrected[column]
    return estimates


def _adjusted(estimates: pd.DataFrame, correction: str) -> np.ndarray:
    """Holm-adjusted p-values over the pairs of each estimator and interval (NaN elsewhere)."""
    adjusted = np.full(len(estimates), np.nan)
    pairs = estimates["system_b"].notna().to_numpy()
    for _, group in estimates[pairs].groupby(["estimator", "interval"]):
        index = estimates.index.get_indexer(group.index)
        values = group["p_value"].to_numpy(float)
        ok = np.isfinite(values)
        adjusted[index[ok]] = adjusted_p_values(values[ok], correction)
    return adjusted


def _info(frame, typed: pd.DataFrame, checked: dict, bootstrap, seed, level, alpha, adjust) -> dict:
    scored = typed[np.isfinite(typed["human"].to_numpy())]
    return {"source": frame.attrs.get("source", "the table"), "rows": len(typed),
            "systems": typed["system"].nunique(), "documents": typed["document"].nunique(),
            "outputs": len(typed.drop_duplicates(["judge_name", "system", "document"])),
            "human_scores": len(scored), "human_outputs": len(scored.drop_duplicates(["system", "document"])),
            "annotators": scored["annotator"].nunique() if checked["annotators"] else 0,
            "judges": ["" if j is None else j for j in checked["judges"]], "system_order": checked["systems"],
            "bootstrap": int(bootstrap), "seed": seed, "level": level, "alpha": alpha,
            "adjust": "none" if adjust == "none" else "holm", "adjust_asked": adjust}


def _general_notes(info: dict) -> list:
    notes = []
    if not info["annotators"]:
        notes.append("The table has no annotator column: each human score is one observation (as if from its own "
                     "annotator); the clustered intervals resample documents only, so if a few annotators gave all "
                     "the human scores their differences are not accounted for: add the annotator column")
    if info["adjust_asked"] == "tukey":
        notes.append("the pairs' p-values are Holm-adjusted (Tukey's adjustment, the default for Likert and Rank "
                     "tables, needs the pairs' joint distribution; --adjust none for none)")
    return notes


def _judge_notes(rows: pd.DataFrame, estimates: pd.DataFrame, scale: str | None) -> list:
    """What a reader must know about one judge: its scale, its bias, lam at its bound, pairs without data."""
    notes = [scale] if scale else []
    bias = estimates[(estimates["estimator"] == "judge_bias") & (estimates["interval"] == "clustered")]
    away = bias[(bias["low"] > 0) | (bias["high"] < 0)]
    systems, pairs = away[away["system_b"].isna()], away[away["system_b"].notna()]
    if scale and len(away):  # on another scale the judge's score minus the human's is not a bias alone
        notes.append("judge minus human score is away from 0 for " + ", ".join(away["target"]) + ", which the "
                     "different scales alone can cause: the judge-only columns cannot be read on the human scale; "
                     "the PPI columns correct for scale and bias")
        systems, pairs = systems[:0], pairs[:0]
    if len(systems):
        notes.append("the judge is biased on " + ", ".join(f"{r.target} ({r.estimate:+.2f} [{r.low:+.2f}, "
                                                           f"{r.high:+.2f}])" for r in systems.itertuples())
                     + ": its judge-only means there are not the human means (the PPI estimates correct for it)")
    if len(pairs):
        notes.append("the judge's bias differs between the systems of " + ", ".join(pairs["target"])
                     + " (a preference for one system beyond the humans', e.g. for its own family's outputs): the "
                       "judge-only differences of these pairs are biased and their tests invalid")
    tuned = estimates[(estimates["estimator"] == "ppi++") & (estimates["interval"] == "clustered")]
    bound = tuned[tuned["lam"] >= 1.0]
    if len(bound):
        notes.append(f"PPI++'s weight lam reached its upper bound 1 (clipped, as ppi-python does) for "
                     f"{', '.join(bound['target'])}: the judge's scale is narrower than the humans'; the estimates "
                     "stay valid")
    for target, status in tuned.loc[tuned["status"] != "ok", ["target", "status"]].itertuples(index=False):
        notes.append(f"{target}: {status}")
    return notes + _unpaired_note(rows)


def _unpaired_note(rows: pd.DataFrame) -> list:
    """Human scores a paired difference cannot use: outputs on documents where another system has none."""
    scored = rows[np.isfinite(rows["human"].to_numpy())]
    documents = {system: set(group["document"]) for system, group in scored.groupby("system", sort=False)}
    judged = {system: set(group["document"]) for system, group in rows.groupby("system", sort=False)}
    lone = {s: sum(1 for d in docs if any(d in judged[o] and d not in documents[o] for o in documents if o != s))
            for s, docs in documents.items()}
    if not any(lone.values()):
        return []
    shown = ", ".join(f"{s}: {n}" for s, n in lone.items() if n)
    return [f"some human-scored outputs are on documents where another system's output has no human score ({shown}): "
            "a pair's paired difference uses the documents with human scores of both systems and counts the others "
            "as judge-only documents; for comparisons, have humans score every system's output of a document"]
