"""Pairwise judge verdicts beside human verdicts: each pair's human win rate by prediction-powered inference.

A table of comparisons (CSV, JSON or JSON Lines), an LLM judge's verdict on every one and a human's on some::

    document,system_a,system_b,judge_preferred,preferred,annotator
    doc01,sysA,sysB,sysA,sysA,ann1      # the judge and ann1 both preferred sysA
    doc01,sysB,sysC,tie,,               # no human judged this comparison

``judge_preferred`` names a system of the row or ``tie``; ``preferred`` is the human verdict (the same
words), empty where no human judged the comparison; ``annotator`` is optional (without it each human verdict
is one observation).

Reduction to PPI. For each pair of systems i < j (in the systems' order) the target is the expected human
win rate of i over j, a tie half a win. Each comparison of i and j (either shown first) is a unit whose judge
value is the judge's verdict for i (1, 0.5, 0) and whose human value is the human's. The study handed to
:func:`simdesign.stats.ppi.ppi_study` has one "system" per pair ('i vs j') and one "output" per (pair,
document) cell: the judge's value of a cell is the mean of its comparisons' verdicts, and every human
verdict in the cell is a label of it. Averaging (rather than one output per comparison) is what keeps the
document a cluster: :class:`~simdesign.stats.ppi.JudgeStudy` holds one output per system and document, and
the bootstrap resamples documents, so comparisons of one document (often the two presentation orders, which
share the document's content) move together, as they are dependent. With one comparison per cell (the usual
case, and the example's) both choices are the same. Each pair is its own stratum, so PPI++'s weight is tuned
per pair; the pair-of-pairs differences ppi_study also computes are not reported.

Reported per pair: PPI and PPI++ win rates with the clustered interval (few-clusters corrected where
annotators are named, as :mod:`simdesign.realdata.judge_analysis` does) and the interval ignoring clustering,
the human-only and judge-only win rates, the judge's bias (judge minus human win rate on the human-judged
comparisons, with its test), the test of 'win rate = 0.5' on PPI++ (t on G - 1 degrees of freedom where the
interval is, else normal), Holm-adjusted over the pairs, and the effective number of human verdicts.

Examples
--------
>>> table = pd.DataFrame({"document": ["d1", "d2", "d3", "d4"], "system_a": ["x", "y", "x", "x"],
...                       "system_b": ["y", "x", "y", "y"], "judge_preferred": ["x", "x", "tie", "y"],
...                       "preferred": ["x", "y", None, "x"]})
>>> units = pair_units(*check_judge_pairwise(table))
>>> units[["pair", "judge", "human"]].values.tolist()
[['x vs y', 1.0, 1.0], ['x vs y', 1.0, 0.0], ['x vs y', 0.5, nan], ['x vs y', 0.0, 1.0]]
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.errors import DataError
from simdesign.core.results import Result
from simdesign.core.seeds import analysis_rng
from simdesign.realdata.judge_analysis import (_check_options, _few_clusters, _interval_text, _number_text, _p_text,
                                               write_outputs)
from simdesign.tables.pairwise import TIE
from simdesign.stats.ppi import judge_study, ppi_study
from simdesign.stats.replication import adjusted_p_values

REQUIRED = ("document", "system_a", "system_b", "judge_preferred", "preferred")
JUDGE_COLUMN = "judge_preferred"
OUTPUTS = ("judge_pairwise.csv", "judge_pairwise_estimates.csv", "judge_pairwise.md")
STREAM = "analyse-judge-verdicts"
SHOWN = 5
PREFIXES = {"human_only": "human_only", "judge_only": "judge_only", "ppi": "ppi", "ppi++": "ppi_pp",
            "judge_bias": "judge_bias"}


def source_is_judge_pairwise(source, columns=None) -> bool:
    """Whether a DataFrame or a file (its header line or first record) has a ``judge_preferred`` column."""
    from simdesign.tables.judge import _header, _loose_mapping

    mapping = _loose_mapping(columns)
    if isinstance(source, pd.DataFrame):
        names = source.columns
    elif isinstance(source, (str, os.PathLike)):
        names = _header(Path(source)) or []
    else:
        return False
    return JUDGE_COLUMN in {mapping.get(c, c) for c in names}


def read_judge_pairwise(path) -> pd.DataFrame:
    """The table of a CSV, JSON (a list of objects) or JSON Lines file, as strings, unchecked."""
    from simdesign.tables.judge import _json_records

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file (a table of pairwise judge verdicts: {', '.join(REQUIRED)})")
    if path.suffix.lower() in (".json", ".jsonl", ".ndjson"):
        records, lines, unit = _json_records(path, path.read_text(encoding="utf-8-sig"))
        frame = pd.DataFrame.from_records(records)
    else:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
        lines, unit = list(range(2, len(frame) + 2)), "line"
    frame.attrs.update(lines=lines, unit=unit, source=str(path))
    return frame


def _where(frame: pd.DataFrame, mask) -> str:
    lines = np.asarray(frame.attrs.get("lines", np.arange(len(frame)) + 1))[np.asarray(mask)]
    shown = ", ".join(str(n) for n in lines[:SHOWN])
    unit = frame.attrs.get("unit", "row")
    return f"{unit}(s) {shown}" + (f" and {lines.size - SHOWN} more" if lines.size > SHOWN else "")


def check_judge_pairwise(frame: pd.DataFrame, systems=None) -> tuple[pd.DataFrame, list]:
    """The table with its fields as stripped strings ('' for an empty field), and the systems' order.

    Refuses, all problems at once (:class:`DataError`): a missing column, an empty required field, a system
    compared with itself, a verdict (judge or human) naming neither system of its row nor 'tie', a judge whose
    verdict is the same on every row (always a tie, always the first shown, or always the second), no human
    verdict at all, and a pair of systems with no human verdict (named).
    """
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise DataError(f"The table of pairwise judge verdicts has no column {', '.join(map(repr, missing))} "
                        f"(its columns: {list(frame.columns)}); it needs {', '.join(REQUIRED)}, optionally "
                        "annotator")
    keep = [*REQUIRED, *(["annotator"] if "annotator" in frame.columns else [])]
    typed = frame[keep].apply(lambda c: c.map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v))
                                              else str(v).strip()))
    typed.attrs.update(frame.attrs)
    problems = []
    for column in ("document", "system_a", "system_b", JUDGE_COLUMN):
        empty = typed[column] == ""
        if empty.any():
            problems.append(f"The '{column}' field is empty on {_where(typed, empty)}: every comparison needs it")
    same = (typed["system_a"] == typed["system_b"]) & (typed["system_a"] != "")
    if same.any():
        problems.append(f"A system is compared with itself on {_where(typed, same)}")
    for column, who in ((JUDGE_COLUMN, "judge"), ("preferred", "human")):
        value = typed[column]
        bad = (value != "") & (value != typed["system_a"]) & (value != typed["system_b"]) & (value != TIE)
        if bad.any():
            first = typed[bad].iloc[0]
            problems.append(f"The {who} verdict '{column}' names neither system of its row nor '{TIE}' on "
                            f"{_where(typed, bad)} (first: {first[column]!r}, the row compares "
                            f"{first['system_a']!r} and {first['system_b']!r})")
    if not problems:
        said = np.where(typed[JUDGE_COLUMN] == TIE, "a tie", np.where(typed[JUDGE_COLUMN] == typed["system_a"],
                                                                     "the system shown first (system_a)",
                                                                     "the system shown second (system_b)"))
        if len(set(said)) == 1:
            problems.append(f"The judge's verdict '{JUDGE_COLUMN}' is {said[0]} on every row: a constant judge says "
                            "nothing about the outputs (PPI would be the human-only win rate); check the column, or "
                            "analyse the human verdicts alone (`simdesign analyse` on the table without "
                            f"'{JUDGE_COLUMN}')")
    if "annotator" in typed:
        no_one = (typed["preferred"] != "") & (typed["annotator"] == "")
        if no_one.any():
            problems.append(f"A human verdict has no annotator on {_where(typed, no_one)}")
    if problems:
        raise DataError(problems)
    order = _order(typed, systems)
    return typed, order


def _order(typed: pd.DataFrame, systems) -> list:
    seen = list(pd.unique(np.column_stack([typed["system_a"], typed["system_b"]]).ravel()))
    if systems is None:
        return seen
    systems = [str(s) for s in systems]
    unknown = [s for s in systems if s not in seen]
    absent = [s for s in seen if s not in systems]
    if unknown or absent:
        raise DataError(f"systems must list the table's systems {seen} once each" +
                        (f"; not in the table: {unknown}" if unknown else "") +
                        (f"; missing: {absent}" if absent else ""))
    return systems


def _verdict_for_first(verdict: pd.Series, first: pd.Series) -> np.ndarray:
    """1 when the verdict prefers ``first``, 0.5 for a tie, 0 for the other system, NaN when empty."""
    return np.where(verdict == "", np.nan, np.where(verdict == TIE, 0.5, (verdict == first).astype(float)))


def pair_units(typed: pd.DataFrame, order: list) -> pd.DataFrame:
    """One row per comparison: ``pair`` ('i vs j', i before j in ``order``), ``document``, ``judge`` and
    ``human`` (the verdicts for i: 1, 0.5, 0; human NaN where no human judged) and ``annotator`` if given."""
    rank = {s: k for k, s in enumerate(order)}
    a_first = typed["system_a"].map(rank) < typed["system_b"].map(rank)
    first = typed["system_a"].where(a_first, typed["system_b"])
    second = typed["system_b"].where(a_first, typed["system_a"])
    units = pd.DataFrame({"pair": first + " vs " + second, "first": first, "second": second,
                          "document": typed["document"], "judge": _verdict_for_first(typed[JUDGE_COLUMN], first),
                          "human": _verdict_for_first(typed["preferred"], first)})
    if "annotator" in typed:
        units["annotator"] = typed["annotator"]
    return units


def _pairs_in_order(units: pd.DataFrame, order: list) -> list:
    rank = {s: k for k, s in enumerate(order)}
    found = units.drop_duplicates("pair")
    return [r.pair for r in sorted(found.itertuples(), key=lambda r: (rank[r.first], rank[r.second]))]


def reduction(units: pd.DataFrame) -> pd.DataFrame:
    """The judge-plus-human frame :func:`~simdesign.stats.ppi.judge_study` reads: ``system`` = the pair,
    ``document``, ``judge`` = the mean judge verdict of the (pair, document) cell, ``human`` = each human
    verdict (one row each; a cell without one, one row with NaN), ``annotator`` if given."""
    frame = units.rename(columns={"pair": "system"})
    frame["judge"] = frame.groupby(["system", "document"], sort=False)["judge"].transform("mean")
    labelled = frame[np.isfinite(frame["human"])]
    cells = frame.drop_duplicates(["system", "document"])
    bare = cells.merge(labelled[["system", "document"]].drop_duplicates(), how="left", indicator=True)
    bare = cells[(bare["_merge"] == "left_only").to_numpy()].assign(human=np.nan)
    if "annotator" in bare:
        bare = bare.assign(annotator=None)
    columns = ["system", "document", "judge", "human", *(["annotator"] if "annotator" in frame else [])]
    return pd.concat([labelled[columns], bare[columns]], ignore_index=True)


@dataclass(repr=False)
class JudgePairwiseAnalysis(Result):
    """The analysis of a table of pairwise judge verdicts (module docstring).

    ``estimates``: ppi_study's rows for the pairs (target 'i vs j'), clustered intervals few-clusters corrected;
    ``info``: what was read; ``notes``.
    """

    estimates: pd.DataFrame
    info: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def _what(self) -> str:
        return "PPI++ win rates of a judge's pairwise verdicts beside humans"

    def _size(self) -> str:
        return f"{self.estimates['target'].nunique()} pairs, {self.info.get('rows')} comparisons"

    def __str__(self) -> str:
        return self.report()

    def summary(self) -> pd.DataFrame:
        """One row per pair: every estimator's win rate (bias: judge minus human) with its clustered interval, the
        PPI++ interval ignoring clustering, lam, the test of 'win rate = 0.5' (``p_value``, ``p_adjusted``:
        Holm over the pairs, ``significant``), the bias test (``bias_p_value``) and ``effective_n``."""
        rows = []
        for pair, group in self.estimates.groupby("target", sort=False):
            cells = group.set_index(["estimator", "interval"])
            first = group.iloc[0]
            row = {"pair": pair, "system_a": first["first"], "system_b": first["second"],
                   "n_human": first["n_human"], "n_judge_only_cells": first["n_judge_only"]}
            for estimator, prefix in PREFIXES.items():
                clustered = cells.loc[(estimator, "clustered")]
                row.update({prefix: clustered["estimate"], f"{prefix}_low": clustered["low"],
                            f"{prefix}_high": clustered["high"]})
            tuned, independent = cells.loc[("ppi++", "clustered")], cells.loc[("ppi++", "independent")]
            row.update({"ppi_pp_independent_low": independent["low"], "ppi_pp_independent_high": independent["high"],
                        "lam": tuned["lam"], "p_value": tuned["p_half"],
                        "bias_p_value": cells.loc[("judge_bias", "clustered")]["p_value"],
                        "effective_n": tuned["effective_n"], "status": first["status"]})
            rows.append(row)
        table = pd.DataFrame(rows)
        ok = np.isfinite(table["p_value"].to_numpy(float))
        adjusted = np.full(len(table), np.nan)
        adjusted[ok] = adjusted_p_values(table["p_value"].to_numpy(float)[ok], self.info.get("adjust", "holm"))
        table.insert(table.columns.get_loc("bias_p_value"), "p_adjusted", adjusted)
        table.insert(table.columns.get_loc("bias_p_value"), "significant",
                     [bool(p < self.info.get("alpha", 0.05)) if np.isfinite(p) else None for p in adjusted])
        return table

    def report(self) -> str:
        """The report as Markdown (``judge_pairwise.md``; the command prints it)."""
        info, table = self.info, self.summary()
        annotators = (f"by {info['annotators']} annotators" if info["annotators"] else
                      "(no annotator column: each human verdict is one observation)")
        head = (f"# Pairwise judge verdicts beside human verdicts\n\n{info['source']}: {info['rows']} comparisons of "
                f"{info['systems']} systems on {info['documents']} documents, judged by the judge; "
                f"{info['human']} human verdicts {annotators}.\n\n"
                f"Each pair's expected human win rate (first system over second, a tie half), by PPI and PPI++ "
                f"with {int(round(info['level'] * 100))}% intervals from a cluster bootstrap ({info['bootstrap']} "
                f"resamples, seed {info['seed']}; few-clusters corrected when annotators are named). p: PPI++'s "
                f"test of 'win rate = 0.5', adjusted: {info['adjust']} over the pairs. Judge bias: judge minus "
                "human win rate on the human-judged comparisons.\n\n")
        lines = ["| pair | human verdicts | PPI++ | p | p adjusted | PPI++ ignoring clustering | PPI | human only "
                 "| judge only | judge bias | effective n |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in table.itertuples():
            lines.append(f"| `{r.pair}` | {r.n_human} | {_interval_text(r.ppi_pp, r.ppi_pp_low, r.ppi_pp_high)} | "
                         f"{_p_text(r.p_value)} | {_p_text(r.p_adjusted)} | "
                         f"{_interval_text(r.ppi_pp, r.ppi_pp_independent_low, r.ppi_pp_independent_high)} | "
                         f"{_interval_text(r.ppi, r.ppi_low, r.ppi_high)} | "
                         f"{_interval_text(r.human_only, r.human_only_low, r.human_only_high)} | "
                         f"{_interval_text(r.judge_only, r.judge_only_low, r.judge_only_high)} | "
                         f"{_interval_text(r.judge_bias, r.judge_bias_low, r.judge_bias_high, True)} | "
                         f"{_number_text(r.effective_n)} |")
        notes = "".join(f"- {note}\n" for note in self.notes)
        return head + "\n".join(lines) + "\n" + (f"\n## Notes\n\n{notes}" if notes else "")

    to_markdown = report

    def save(self, out_dir) -> dict:
        """Write :data:`OUTPUTS` (summary, estimates, report) to ``out_dir``; returns file name -> path (as every
        result's ``save``; ``simdesign analyse --out`` prints them). No figure: ``plot`` raises
        :class:`~simdesign.core.results.NoFigureError`."""
        return write_outputs(self, out_dir, OUTPUTS)


def _half_test(estimates: pd.DataFrame, clusters: int | None) -> np.ndarray:
    """Two-sided p-value of 'win rate = 0.5' from each row's estimate and SE (t on G - 1 df for the corrected
    clustered rows, normal otherwise); NaN for the bias rows."""
    from scipy import stats

    statistic = (estimates["estimate"].to_numpy(float) - 0.5) / estimates["standard_error"].to_numpy(float)
    t_rows = (estimates["interval"] == "clustered").to_numpy() & (estimates["estimator"] != "judge_only").to_numpy()
    with np.errstate(invalid="ignore"):
        p = 2 * stats.norm.sf(np.abs(statistic))
        if clusters is not None:
            p = np.where(t_rows, 2 * stats.t.sf(np.abs(statistic), clusters - 1), p)
    return np.where(estimates["estimator"] == "judge_bias", np.nan, p)


def _read(table):
    if isinstance(table, (str, os.PathLike)):
        return read_judge_pairwise(table)
    if not isinstance(table, pd.DataFrame):
        raise DataError(f"The table of pairwise judge verdicts must be a pandas DataFrame or a file path; got "
                        f"{type(table).__name__}")
    return table


def analyse_judge_pairwise(table, *, systems=None, bootstrap: int = 2000, seed: int = 0,
                           rng: np.random.Generator | None = None, level: float = 0.95, alpha: float = 0.05,
                           adjust: str = "holm") -> JudgePairwiseAnalysis:
    """Analyse a table of pairwise judge verdicts (module docstring); ``simdesign analyse`` calls this for a
    table with a ``judge_preferred`` column. Options as :func:`~simdesign.realdata.judge_analysis.analyse_judge_table`
    ('tukey' becomes Holm). Raises DataError for a table that cannot be used (every problem at once), naming
    the pairs without a human verdict."""
    _check_options(bootstrap, seed, level, alpha, adjust, rng)
    frame = _read(table)
    typed, order = check_judge_pairwise(frame, systems)
    units = pair_units(typed, order)
    judged = units[np.isfinite(units["human"])]
    if judged.empty:
        raise DataError("The table has no human verdict (every 'preferred' field is empty): PPI needs human "
                        "verdicts on some comparisons of every pair")
    pairs = _pairs_in_order(units, order)
    without = [p for p in pairs if p not in set(judged["pair"])]
    if without:
        raise DataError(f"No human verdict on the pair(s) {', '.join(without)}: PPI needs human verdicts on some "
                        "comparisons of every pair (add them, or drop the pair's rows)")
    study = judge_study(reduction(units), pairs)
    generator = rng if rng is not None else analysis_rng(seed, STREAM, 0, "")
    estimates = ppi_study(study, generator, resamples=int(bootstrap), level=level)
    estimates = estimates[estimates["system_b"].isna()].reset_index(drop=True)  # the pairs, not pair differences
    named = study.label_annotator is not None and study.n_annotators >= 2
    estimates = _few_clusters(estimates, study, level).drop(columns=["system_a", "system_b"])
    estimates.insert(1, "first", estimates["target"].map(dict(zip(units["pair"], units["first"]))))
    estimates.insert(2, "second", estimates["target"].map(dict(zip(units["pair"], units["second"]))))
    estimates["p_half"] = _half_test(estimates, study.n_annotators if named else None)
    info = {"source": frame.attrs.get("source", "the table"), "rows": len(typed), "systems": len(order),
            "documents": typed["document"].nunique(), "human": len(judged),
            "annotators": judged["annotator"].nunique() if "annotator" in judged else 0, "system_order": order,
            "bootstrap": int(bootstrap), "seed": seed, "level": level, "alpha": alpha,
            "adjust": "none" if adjust == "none" else "holm"}
    notes = [f"{t}: {s}" for t, s in estimates.drop_duplicates("target")[["target", "status"]].itertuples(index=False)
             if s != "ok"]
    if (units.groupby(["pair", "document"]).size() > 1).any():
        notes.append("some (pair, document) cells hold several comparisons: the judge's verdicts of a cell are "
                     "averaged (the document is the cluster), each human verdict is one label of it")
    return JudgePairwiseAnalysis(estimates, info, notes)


def refuse_options(**given) -> None:
    """Refuse options that do not apply to pairwise judge verdicts, naming each (``given``: name -> set)."""
    from simdesign.core.errors import ConfigError

    named = [name for name, set_ in given.items() if set_]
    if named:
        raise ConfigError(f"{', '.join(named)} do(es) not apply to a table of pairwise judge verdicts (a "
                          f"'{JUDGE_COLUMN}' column), analysed by prediction-powered inference, which takes "
                          "--bootstrap, --seed, --alpha, --adjust (none or holm), --systems and --out "
                          "(docs/how-to/analyse-judge-and-human.md)")
