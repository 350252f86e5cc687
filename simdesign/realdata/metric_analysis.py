"""How well do automatic metrics agree with human scores, and is one metric better? (real data)

``simdesign analyse-metrics TABLE.csv`` (and :func:`analyse_metrics`) reads a
table of metric and human scores of the outputs of several systems on the same
inputs and reports, after Deutsch, Dror and Roth (2021, TACL):

* each metric's correlation (Pearson, Spearman, Kendall tau-b) with the human
  scores at the **system** level (systems' mean scores over inputs), the
  **summary** level (per input, across systems, then the mean over inputs;
  the paper's name, "input level" in their nlpstats package) and the
  **global** level (all outputs at once);
* four intervals for each: BOOT-SYSTEMS (systems resampled, inputs fixed:
  the systems are a sample, these inputs the whole population), BOOT-INPUTS
  (the reverse), BOOT-BOTH (both a sample; the paper's recommendation and
  the widest), percentile intervals of Deutsch et al.'s Algorithm 1, and the
  Fisher z interval (:func:`simdesign.stats.metric_comparison.fisher_interval`;
  valid at the system level only, where n is the number of systems);
* for every pair of metrics, tests of H0 "both correlate equally with the
  human scores": the paired bootstrap (BOOT-BOTH resamples), the permutation
  tests PERM-SYSTEMS, PERM-INPUTS and PERM-BOTH and Williams' test (system and
  global level), two-sided and one-sided ('greater': the first metric is
  better).

Which test to read. Deutsch et al. recommend PERM-BOTH, one-sided (marked
``paper`` in the table). It swaps the two metrics' scores of single outputs,
which is exact only when the scores are exchangeable output by output: when each
metric has its own system biases (a metric that favours some systems whatever
their quality, the common case), PERM-BOTH rejects a true null far too often
(simdesign's metric validation: 26-30% at alpha 0.05, PERM-INPUTS 31-34%;
configs/metric_validation_null.yaml, figures/metric_comparison_power.png).
PERM-SYSTEMS swaps whole systems, which keeps each system's bias with its
metric, and holds its level there (as does Williams' test); it is the default
(marked ``default``), two-sided because which metric is better is rarely known
beforehand.

The input table (CSV, one row per output; docs/how-to/analyse-metrics.md)::

    system,input,metric_a,metric_b,human
    system0,doc00,0.41,1.2,4.33
    ...

``system`` and ``input`` name the output; ``human`` (or the column named by
``human=``) is its human score (e.g. the mean of its judgements); every other
column is a metric (or ``metrics=`` names them). Every score must be a finite
number, each (system, input) appear once, and every system be scored on every
input: a missing (system, input) cell is refused, naming the systems and the
inputs they lack, because the levels' correlations and the resampling of
inputs assume a complete systems x inputs matrix; ``drop_incomplete_inputs=True``
(``--drop-incomplete-inputs``) keeps only the inputs every system was scored on
and says how many it dropped (dropping systems instead would change which
systems the correlation is about, a choice left to the user).

Random numbers: one stream per (level, scheme) for the bootstrap (every metric
sees the same resamples, which pairs the paired bootstrap) and one per (level,
method, scheme, pair of metrics) for the permutations, all from ``seed``
(:func:`simdesign.core.seeds.analysis_rng`), so a result does not depend on
which other metrics, levels or methods are asked for.

Examples
--------
>>> import pandas as pd
>>> rows = [(f"s{s}", f"d{d}", s + 0.3 * d % 2, s + (d * s) % 3, s + 0.5 * (d % 2)) for s in range(4)
...         for d in range(5)]
>>> table = pd.DataFrame(rows, columns=["system", "input", "m1", "m2", "human"])
>>> result = analyse_metrics(table, levels=["system"], methods=["pearson"], resamples=200)
>>> sorted(result.correlations["interval"].unique())
['BOOT-BOTH', 'BOOT-INPUTS', 'BOOT-SYSTEMS', 'Fisher']
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.checks import missing_file_problem
from simdesign.core.errors import DataError
from simdesign.core.results import Result, write_figure
from simdesign.core.seeds import analysis_rng
from simdesign.runner.limits import MAX_RESAMPLES
from simdesign.tables.judgements import EXAMPLES_SHOWN, read_table_csv
from simdesign.stats.metric_comparison import (bootstrap_correlations, fisher_interval, paired_bootstrap_test,
                                               permutation_p_values, sample_size, williams_test)
from simdesign.stats.metric_correlation import ALTERNATIVES, LEVELS, METHODS, SCHEMES, level_correlation

ID_COLUMNS = ("system", "input")
DEFAULT_HUMAN = "human"
BOOTSTRAP_NAMES = {"systems": "BOOT-SYSTEMS", "inputs": "BOOT-INPUTS", "both": "BOOT-BOTH"}
PERMUTATION_NAMES = {"systems": "PERM-SYSTEMS", "inputs": "PERM-INPUTS", "both": "PERM-BOTH"}
# (test, alternative) -> role: what the paper recommends, and the default this module argues for (docstring)
ROLES = {("PERM-BOTH", "greater"): "paper", ("PERM-SYSTEMS", "two-sided"): "default"}
# Williams' test needs n independent triples: the system level's systems or the global level's outputs.
WILLIAMS_LEVELS = ("system", "global")
STREAM = "analyse-metrics"
# Outputs (rows) of a metric table analysed without --max-outputs: the largest metric studies (WMT's
# segment level, 20 systems x 2,000-3,000 segments) have under 100,000. A 900,000-row table needed 670 MB to
# read and about 6 minutes at 20 resamples (hours at the default 1000): refused before it is read, with
# how to raise the ceiling (issue 39).
MAX_OUTPUTS = 200_000
PROGRESS_FROM = 10_000_000  # outputs x resamples from which progress is shown (tens of seconds of work and more)


# ---------------------------------------------------------------------------------------------
# Reading and checking the table
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MetricScores:
    """A checked table as matrices: ``metrics[name]`` and ``human`` of shape (n_systems, n_inputs)."""

    systems: tuple
    inputs: tuple
    metrics: dict
    human: np.ndarray
    human_name: str = DEFAULT_HUMAN
    notes: tuple = ()


def _lines(frame: pd.DataFrame, mask) -> str:
    lines = frame.attrs.get("lines")
    lines = np.asarray(lines if lines is not None and len(lines) == len(frame) else np.arange(len(frame)) + 2)
    lines = lines[np.asarray(mask, bool)]
    more = len(lines) - EXAMPLES_SHOWN
    return ", ".join(str(int(v)) for v in lines[:EXAMPLES_SHOWN]) + (f" and {more} more" if more > 0 else "")


def _column_errors(frame: pd.DataFrame, metrics, human: str) -> tuple[list, list]:
    """(metric columns, problems): the required columns present, the metrics named or found."""
    problems = []
    missing = [c for c in (*ID_COLUMNS, human) if c not in frame.columns]
    if metrics is None:
        metrics = [c for c in frame.columns if c not in (*ID_COLUMNS, human)]
        if not metrics:
            problems.append(f"The table has no metric column: besides {[*ID_COLUMNS, human]} it needs one column "
                            f"per metric (its columns: {list(frame.columns)})")
    else:
        missing += [c for c in metrics if c not in frame.columns]
        for name in set(metrics) & {*ID_COLUMNS, human}:
            problems.append(f"The metric column {name!r} is also the {name if name in ID_COLUMNS else 'human'} "
                            "column; name different columns")
        if len(set(metrics)) != len(metrics):
            problems.append(f"The metrics {list(metrics)} name a column twice")
    if missing:
        problems.insert(0, f"The table lacks the column(s) {missing} (its columns: {list(frame.columns)}); "
                           f"it needs system, input, the human score column ({human!r}; --human names another) "
                           "and one column per metric")
    return list(metrics), problems


def _value_errors(frame: pd.DataFrame, columns) -> tuple[dict, list]:
    """(numeric columns, problems): empty ids, and scores that are not finite numbers, with their lines."""
    problems, values = [], {}
    for column in ID_COLUMNS:
        empty = frame[column].isna() | (frame[column].astype(str).str.strip() == "")
        if empty.any():
            problems.append(f"The '{column}' column is empty on line(s) {_lines(frame, empty)}")
    for column in columns:
        numbers = pd.to_numeric(frame[column], errors="coerce")
        bad = ~np.isfinite(numbers.to_numpy(float))
        if bad.any():
            example = frame[column][bad].iloc[0]
            problems.append(f"The '{column}' column must hold finite numbers, but line(s) {_lines(frame, bad)} "
                            f"hold {'an empty value' if pd.isna(example) else repr(example)}"
                            f"{' and others' if bad.sum() > 1 else ''}")
        values[column] = numbers.to_numpy(float)
    return values, problems


def _completeness(frame: pd.DataFrame, drop_incomplete_inputs: bool) -> tuple[tuple, tuple, list, list]:
    """(systems, inputs kept, problems, notes): duplicated and missing (system, input) cells."""
    duplicated = frame.duplicated(list(ID_COLUMNS), keep=False)
    if duplicated.any():
        return (), (), [f"{duplicated.sum()} rows repeat a (system, input) pair (lines {_lines(frame, duplicated)}); "
                        "each output must have one row (average repeated scores first)"], []
    systems, inputs = tuple(pd.unique(frame["system"])), tuple(pd.unique(frame["input"]))
    present = set(zip(frame["system"], frame["input"]))
    lacking = {s: [i for i in inputs if (s, i) not in present] for s in systems}
    lacking = {s: missing for s, missing in lacking.items() if missing}
    if not lacking:
        return systems, inputs, [], []
    if drop_incomplete_inputs:
        dropped = {i for missing in lacking.values() for i in missing}
        kept = tuple(i for i in inputs if i not in dropped)
        return systems, kept, [], [f"dropped {len(dropped)} of {len(inputs)} inputs that some system was not "
                                   f"scored on (--drop-incomplete-inputs); {len(kept)} inputs kept"]
    shown = "; ".join(f"system {s!r} lacks {len(m)} of {len(inputs)} inputs, e.g. {m[:3]}"
                      for s, m in list(lacking.items())[:EXAMPLES_SHOWN])
    more = f"; and {len(lacking) - EXAMPLES_SHOWN} more systems" if len(lacking) > EXAMPLES_SHOWN else ""
    return (), (), [f"Missing (system, input) cells: {shown}{more}. Every system must be scored on every input "
                    "(a complete systems x inputs matrix); add the rows, or pass --drop-incomplete-inputs "
                    "(drop_incomplete_inputs=True) to keep only the inputs every system has"], []


def metric_scores(frame: pd.DataFrame, metrics=None, human: str = DEFAULT_HUMAN,
                  drop_incomplete_inputs: bool = False) -> MetricScores:
    """Check a table of metric and human scores (module docstring) and turn it into matrices.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per output; ``frame.attrs['lines']`` (set by :func:`read_metric_table`) holds each
        row's file line for messages, else row i is line i + 2.
    metrics : sequence of str, optional
        The metric columns (default: every column but system, input and ``human``).
    human : str
    drop_incomplete_inputs : bool

    Returns
    -------
    MetricScores

    Raises
    ------
    DataError
        Every problem at once, naming columns and lines: missing columns, empty ids, scores that are
        not finite numbers, repeated (system, input) pairs, missing cells, fewer than 3 systems or 2 inputs.
    """
    inferred = metrics is None
    metrics, problems = _column_errors(frame, metrics, human)
    if problems:
        raise DataError(problems)
    frame = frame.copy()
    for column in ID_COLUMNS:
        frame[column] = frame[column].astype("string").str.strip()
    values, problems = _value_errors(frame, [*metrics, human])
    if problems and inferred:
        problems.append(f"Every column but system, input and {human!r} was taken as a metric ({metrics}); "
                        "--metrics (metrics=) names the metric columns")
    if problems:
        raise DataError(problems)
    systems, inputs, problems, notes = _completeness(frame, drop_incomplete_inputs)
    if not problems and (len(systems) < 3 or len(inputs) < 2):
        problems.append(f"The table has {len(systems)} systems and {len(inputs)} complete inputs; a correlation "
                        "across systems needs at least 3 systems, and resampling inputs at least 2 inputs")
    if problems:
        raise DataError(problems)
    row = pd.Index(systems).get_indexer(frame["system"])
    column = pd.Index(inputs).get_indexer(frame["input"])
    keep = column >= 0

    def matrix(name):
        out = np.full((len(systems), len(inputs)), np.nan)
        out[row[keep], column[keep]] = values[name][keep]
        return out

    constant = [name for name in [*metrics, human] if np.ptp(values[name][keep]) == 0]
    if human in constant:  # every correlation with it is undefined: no analysis to show (was a KeyError)
        raise DataError(f"The human score column {human!r} holds the same value ({values[human][keep][0]:g}) on every "
                        "output: its correlation with any metric is undefined (it has no variance), so there is "
                        "nothing to analyse; check the column, or name another with --human (human=)")
    notes = notes + [f"the '{name}' scores are all equal: its correlations are undefined (shown empty)"
                     for name in constant]
    return MetricScores(systems, inputs, {name: matrix(name) for name in metrics}, matrix(human), human,
                        tuple(notes))


def _refuse_too_many_outputs(rows: int, max_outputs: int, where: str) -> None:
    if not isinstance(max_outputs, (int, np.integer)) or isinstance(max_outputs, bool) or max_outputs < 1:
        raise DataError(f"--max-outputs (max_outputs=) must be a positive integer; got {max_outputs!r}")
    if rows > max_outputs:
        raise DataError(f"{where} has {rows:,} rows (outputs); analyse-metrics takes at most {max_outputs:,} unless "
                        f"told otherwise: its resamples cost time in proportion to the outputs (a 900,000-row table "
                        f"ran minutes at 20 resamples). Raise the ceiling with --max-outputs N (max_outputs=N), or "
                        f"analyse a sample of inputs")


def _count_rows(path: Path) -> int:
    """Data rows of a CSV (lines after the header), counted in constant memory before it is read."""
    lines, last = 0, b"\n"
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines - 1 + (last != b"\n")


def read_metric_table(path, metrics=None, human: str = DEFAULT_HUMAN,
                      drop_incomplete_inputs: bool = False, max_outputs: int = MAX_OUTPUTS) -> MetricScores:
    """Read and check a CSV of metric and human scores (:func:`metric_scores`), naming file lines in errors."""
    path = Path(path)
    problem = missing_file_problem(path, "metric scores", "CSV")  # missing, or not a regular file
    if problem:
        raise DataError(problem)
    _refuse_too_many_outputs(_count_rows(path), max_outputs, str(path))
    frame = read_table_csv(path, required=(*ID_COLUMNS, human, "<one column per metric>"))
    return metric_scores(frame, metrics, human, drop_incomplete_inputs)


# ---------------------------------------------------------------------------------------------
# The analysis
# ---------------------------------------------------------------------------------------------

def _correlation_rows(scores: MetricScores, levels, methods, resamples: int, seed: int,
                      confidence: float, bar=None) -> tuple[list, dict]:
    """Rows of the correlation table and the bootstrap resamples {(level, scheme, metric): {method: values}}."""
    rows, boot = [], {}
    shape = scores.human.shape
    for level in levels:
        for scheme in SCHEMES:
            for name, metric in scores.metrics.items():
                # one stream per (level, scheme): every metric sees the same resamples
                rng = analysis_rng(seed, STREAM, 0, f"boot:{level}:{scheme}")
                boot[level, scheme, name] = bootstrap_correlations(metric, scores.human, level, scheme, rng,
                                                                   resamples, methods)
                if bar is not None:
                    bar.update(1)
        for name, metric in scores.metrics.items():
            for method in methods:
                estimate = level_correlation(metric, scores.human, level, method)
                n = sample_size(shape, level)
                base = {"level": level, "method": method, "metric": name, "estimate": estimate, "n": n}
                low, high = fisher_interval(estimate, n, method, confidence)
                rows.append({**base, "interval": "Fisher", "low": low, "high": high, "resamples": np.nan})
                for scheme in SCHEMES:
                    values = boot[level, scheme, name][method]
                    finite = values[np.isfinite(values)]
                    tail = (1 - confidence) / 2
                    low, high = np.quantile(finite, [tail, 1 - tail]) if finite.size else (np.nan, np.nan)
                    rows.append({**base, "interval": BOOTSTRAP_NAMES[scheme], "low": float(low),
                                 "high": float(high), "resamples": int(finite.size)})
    return rows, boot


def _comparison_rows(scores: MetricScores, levels, methods, resamples: int, seed: int, confidence: float,
                     boot: dict, bar=None) -> list:
    rows = []
    for first, second in combinations(scores.metrics, 2):
        a, b = scores.metrics[first], scores.metrics[second]
        for level in levels:
            for method in methods:
                base = {"level": level, "method": method, "first": first, "second": second}
                observed = (level_correlation(a, scores.human, level, method)
                            - level_correlation(b, scores.human, level, method))
                paired = paired_bootstrap_test(observed, boot[level, "both", first][method],
                                               boot[level, "both", second][method], confidence=confidence)
                rows += _test_rows(base, "paired bootstrap (BOOT-BOTH)", paired, low=paired["low"],
                                   high=paired["high"])
                for scheme in SCHEMES:
                    rng = analysis_rng(seed, STREAM, 0, f"perm:{level}:{method}:{scheme}:{first}|{second}")
                    result = permutation_p_values(a, b, scores.human, level, method, scheme, rng, resamples)
                    rows += _test_rows(base, PERMUTATION_NAMES[scheme], result)
                    if bar is not None:
                        bar.update(1)
                if level in WILLIAMS_LEVELS:
                    rows += _williams_rows(base, a, b, scores.human, level, method)
    return rows


def _williams_rows(base: dict, a: np.ndarray, b: np.ndarray, human: np.ndarray, level: str, method: str) -> list:
    r12, r13 = level_correlation(a, human, level, method), level_correlation(b, human, level, method)
    r23 = level_correlation(a, b, level, method)
    out = {"difference": r12 - r13}
    for alternative in ALTERNATIVES[:2]:
        t, out[f"p_{alternative}"] = williams_test(r12, r13, r23, sample_size(human.shape, level), alternative)
    return _test_rows(base, "Williams", out, statistic=t)


def _test_rows(base: dict, test: str, result: dict, **extra) -> list:
    return [{**base, "test": test, "alternative": alternative, "difference": result["difference"],
             "p_value": result[f"p_{alternative}"], "role": ROLES.get((test, alternative), ""),
             **{"statistic": np.nan, "low": np.nan, "high": np.nan, **extra}}
            for alternative in ALTERNATIVES[:2]]


def _markdown_table(table: pd.DataFrame, number: str) -> str:
    def cell(value):
        if isinstance(value, (float, np.floating)):
            return number.format(value) if np.isfinite(value) else "-"
        return str(value)

    head = "| " + " | ".join(map(str, table.columns)) + " |\n|" + "---|" * len(table.columns) + "\n"
    return head + "".join("| " + " | ".join(cell(v) for v in row) + " |\n" for row in table.itertuples(index=False))


@dataclass(repr=False)
class MetricAnalysis(Result):
    """The result of :func:`analyse_metrics`.

    Attributes
    ----------
    correlations : pandas.DataFrame
        ``level, method, metric, estimate, n, interval, low, high, resamples``: one row per interval
        (Fisher, BOOT-SYSTEMS, BOOT-INPUTS, BOOT-BOTH) of each metric's correlation; ``resamples`` the
        defined bootstrap resamples.
    comparisons : pandas.DataFrame
        ``level, method, first, second, test, alternative, difference, p_value, role, statistic, low,
        high``: difference = first's correlation minus second's; alternative 'greater' = the first is
        better; role 'paper' (Deutsch et al.'s PERM-BOTH, one-sided) or 'default' (PERM-SYSTEMS,
        two-sided); statistic is Williams' t; low/high the paired bootstrap's interval of the difference.
    info : dict
    notes : list of str
    """

    correlations: pd.DataFrame
    comparisons: pd.DataFrame
    info: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def wide(self) -> pd.DataFrame:
        """The correlations with one 'low..high' column per interval."""
        table = self.correlations.copy()
        table["text"] = [f"{low:.3f}..{high:.3f}" if np.isfinite(low) else "-"
                         for low, high in zip(table["low"], table["high"])]
        keys = ["level", "method", "metric", "estimate", "n"]
        # grouped keeping NaN keys: an undefined estimate (a constant metric) is a row of '-', not a lost row
        rows = [{**dict(zip(keys, key)), **dict(zip(group["interval"], group["text"]))}
                for key, group in table.groupby(keys, sort=False, dropna=False)]
        return pd.DataFrame(rows, columns=[*keys, "Fisher", *BOOTSTRAP_NAMES.values()])

    def _what(self) -> str:
        return f"metrics {', '.join(self.info.get('metrics', ()))} against '{self.info.get('human')}'"[:90]

    def _size(self) -> str:
        return f"{len(self.correlations)} correlation rows, {len(self.comparisons)} comparisons"

    def __str__(self) -> str:
        return self.report()

    def summary(self) -> pd.DataFrame:
        """Every correlation with each interval, one row per level, method, metric and interval (a copy of
        :attr:`correlations`; the comparisons are :attr:`comparisons`, the printed report :meth:`report`)."""
        return self.correlations.copy()

    def table(self, digits: int = 3) -> pd.DataFrame:
        """The correlations for reading: one row per level, method and metric, each interval as 'low..high'
        (:meth:`wide`), the estimate rounded to ``digits``."""
        return self.wide().round(digits)

    def report(self) -> str:
        """A plain-text report: the correlations with their intervals, then the comparisons (``summary()``
        before issue 40; ``simdesign analyse-metrics`` prints it)."""
        info = self.info
        lines = [f"{info['systems']} systems x {info['inputs']} inputs; metrics {', '.join(info['metrics'])}; "
                 f"human scores '{info['human']}'; {info['resamples']} resamples, seed {info['seed']}; "
                 f"{int(info['confidence'] * 100)}% intervals", ""]
        with pd.option_context("display.width", 220, "display.max_rows", 500):
            lines.append(self.wide().to_string(index=False, float_format=lambda v: f"{v:.3f}"))
            if not self.comparisons.empty:
                lines += ["", "Comparisons (difference = first - second; 'greater': first better; role: "
                              "'default' = PERM-SYSTEMS two-sided, 'paper' = Deutsch et al.'s PERM-BOTH one-sided, "
                              "not valid when each metric has its own system bias):"]
                shown = self.comparisons[["level", "method", "first", "second", "test", "alternative",
                                          "difference", "p_value", "role"]]
                lines.append(shown.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The report as Markdown (``metric_analysis.md``)."""
        notes = "".join(f"- {note}\n" for note in self.notes)
        comparisons = self.comparisons.drop(columns=["statistic", "low", "high"])
        return ("# Metric analysis\n\n" + self.report().split("\n\n")[0] + "\n\n## Correlations\n\n"
                + _markdown_table(self.wide(), "{:.3f}") + "\n## Comparisons\n\n"
                + (_markdown_table(comparisons, "{:.4f}") if not comparisons.empty
                   else "(one metric: nothing to compare)\n") + (f"\n## Notes\n\n{notes}" if notes else ""))

    def plot(self, path=None, interval: str = "BOOT-BOTH"):
        """Each metric's correlation with its ``interval`` and the Fisher interval: a panel per level and method.

        Returns
        -------
        matplotlib.figure.Figure or list of Path
            The Figure (drawn without pyplot), or with ``path`` (a .png, .pdf or .svg suffix, else .png added)
            the file written.
        """
        figure = self.figure(interval)
        return figure if path is None else [write_figure(figure, path)]

    def figure(self, interval: str = "BOOT-BOTH"):
        """The figure :meth:`plot` draws, as a matplotlib Figure."""
        from matplotlib.figure import Figure

        table = self.correlations
        levels, methods = list(pd.unique(table["level"])), list(pd.unique(table["method"]))
        metrics = list(pd.unique(table["metric"]))
        figure = Figure(figsize=(3.4 * len(methods), 0.45 * len(metrics) * len(levels) + 1.6))
        axes = figure.subplots(len(levels), len(methods), squeeze=False, sharex=True)
        for i, level in enumerate(levels):
            for j, method in enumerate(methods):
                axis = axes[i][j]
                for k, (name, offset, colour) in enumerate(((interval, -0.12, "black"), ("Fisher", 0.12, "tab:blue"))):
                    rows = table[(table["level"] == level) & (table["method"] == method)
                                 & (table["interval"] == name)].set_index("metric").reindex(metrics)
                    y = np.arange(len(metrics)) + offset
                    axis.errorbar(rows["estimate"], y, xerr=[rows["estimate"] - rows["low"],
                                                             rows["high"] - rows["estimate"]],
                                  fmt="o" if k == 0 else "s", color=colour, capsize=3, markersize=4,
                                  label=name if i == j == 0 else None)
                axis.set_yticks(np.arange(len(metrics)), metrics)
                axis.axvline(0, color="grey", lw=0.5)
                axis.set_title(f"{level} level, {method}", fontsize=9)
                axis.grid(axis="x", alpha=0.3)
        axes[-1][0].set_xlabel("correlation with the human scores")
        figure.legend(loc="lower right", fontsize=8)
        figure.tight_layout()
        return figure

    def save(self, out_dir) -> dict:
        """Write correlations.csv, comparisons.csv, metric_analysis.md and metric_analysis.png to ``out_dir``;
        returns name (``correlations``, ``comparisons``, ``report``, ``figure``) -> path."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"correlations": out / "correlations.csv", "comparisons": out / "comparisons.csv",
                 "report": out / "metric_analysis.md", "figure": out / "metric_analysis.png"}
        self.correlations.to_csv(paths["correlations"], index=False)
        self.comparisons.to_csv(paths["comparisons"], index=False)
        paths["report"].write_text(self.to_markdown())
        self.plot(paths["figure"])
        return paths


def _progress(scores: MetricScores, levels, methods, resamples: int):
    """A progress display for a large analysis, none for a small one.

    A large table is shown progress rather than refused: a careful user with a real table of several hundred
    thousand outputs wants its answer and can wait minutes for it, but must see that the work advances and
    how long it will take (a table of 300 systems x 3000 inputs ran 400 s without a word). Below
    :data:`PROGRESS_FROM` (outputs x resamples, a few seconds of work) nothing is printed.
    """
    from simdesign.runner.progress import progress_bar

    steps = len(levels) * len(SCHEMES) * len(scores.metrics) \
        + len(list(combinations(scores.metrics, 2))) * len(levels) * len(methods) * len(SCHEMES)
    large = scores.human.size * resamples >= PROGRESS_FROM
    return progress_bar(steps, f"analyse-metrics ({len(scores.systems)} systems x {len(scores.inputs)} inputs)",
                        enabled=large, unit="step")


def _check_options(levels, methods, resamples, confidence) -> None:
    problems = []
    if not levels or any(level not in LEVELS for level in levels):
        problems.append(f"--level must name levels from {list(LEVELS)}; got {list(levels)!r}")
    if not methods or any(method not in METHODS for method in methods):
        problems.append(f"--methods must name correlations from {list(METHODS)}; got {list(methods)!r}")
    if not isinstance(resamples, (int, np.integer)) or isinstance(resamples, bool) or resamples < 1:
        problems.append(f"--resamples must be a positive integer; got {resamples!r}")
    elif resamples > MAX_RESAMPLES:  # the runner's ceiling (docs/runner.md): checked before the table is read
        problems.append(f"--resamples asks for {resamples:,} resamples; the ceiling is {MAX_RESAMPLES:,} (a "
                        f"p-value's resolution is 1 / (resamples + 1); more cost memory and time no answer needs)")
    if not 0 < confidence < 1:
        problems.append(f"--confidence must be in (0, 1); got {confidence!r}")
    if problems:
        raise DataError(problems)


def _oriented(scores: MetricScores, lower_is_better) -> MetricScores:
    """The scores with every lower-is-better metric negated, and a note per metric that correlates negatively.

    Williams' test and the comparisons compare signed correlations: a metric whose scores fall as quality
    rises (an error rate, a perplexity) correlates negatively and would be judged worse than it is (issue 39:
    p 5e-7 against 0.0068 with the correlations' absolute values, the convention of nlpstats and of the WMT
    scripts). Negating it first makes "higher correlation = better" hold for every metric.
    """
    lower = list(dict.fromkeys(lower_is_better or ()))
    unknown = [name for name in lower if name not in scores.metrics]
    if unknown:
        raise DataError(f"--lower-is-better (lower_is_better=) names {unknown}, not metrics of the table; its "
                        f"metrics: {list(scores.metrics)}")
    metrics = {name: -values if name in lower else values for name, values in scores.metrics.items()}
    notes = [f"{name} is lower-is-better: its scores were negated, so its correlations are those of -{name}"
             for name in lower]
    for name, values in metrics.items():
        r = level_correlation(values, scores.human, "system", "pearson")
        if name not in lower and np.isfinite(r) and r < 0:
            notes.append(f"{name} correlates negatively with the human scores (system-level Pearson {r:.3f}): the "
                         "comparisons count that as worse; if lower is better for it, say so with "
                         f"--lower-is-better {name} (lower_is_better=)")
    return replace(scores, metrics=metrics, notes=tuple(scores.notes) + tuple(notes))


def analyse_metrics(table, metrics=None, human: str = DEFAULT_HUMAN, levels=LEVELS, methods=METHODS,
                    resamples: int = 1000, seed: int = 0, confidence: float = 0.95,
                    drop_incomplete_inputs: bool = False, lower_is_better=(),
                    max_outputs: int = MAX_OUTPUTS) -> MetricAnalysis:
    """Correlations of metrics with human scores, their intervals, and tests comparing metrics (module docstring).

    Parameters
    ----------
    table : str, path-like, pandas.DataFrame or MetricScores
        A CSV path or a frame with columns system, input, one per metric and the human score.
    metrics : sequence of str, optional
        The metric columns (default: all but system, input and ``human``).
    human : str
        The human score column.
    levels : sequence of {'system', 'summary', 'global'}
    methods : sequence of {'pearson', 'spearman', 'kendall'}
    resamples : int
        Bootstrap resamples and permutations of each interval and test.
    seed : int
    confidence : float
    drop_incomplete_inputs : bool
        Keep only the inputs every system was scored on instead of refusing a table with missing cells.
    lower_is_better : sequence of str
        Metrics whose lower scores are better (an error rate): negated before everything, so that a higher
        correlation means a better metric for every metric (default: every metric is higher-is-better; a
        metric that correlates negatively at the system level gets a note).
    max_outputs : int
        The most rows (outputs) a table may have (default 200,000): checked before a file is read.

    Returns
    -------
    MetricAnalysis

    Raises
    ------
    DataError
        A table or option that cannot be used (every problem, naming columns and file lines).
    """
    levels, methods = list(levels), list(methods)
    _check_options(levels, methods, resamples, confidence)
    if isinstance(table, MetricScores):
        scores = table
    elif isinstance(table, pd.DataFrame):
        _refuse_too_many_outputs(len(table), max_outputs, "The metric table")
        scores = metric_scores(table, metrics, human, drop_incomplete_inputs)
    elif isinstance(table, (str, os.PathLike)):
        scores = read_metric_table(table, metrics, human, drop_incomplete_inputs, max_outputs)
    else:  # None or a number reached Path() as a raw TypeError
        raise DataError(f"The metric table must be a pandas DataFrame or a CSV file path; got {type(table).__name__}")
    scores = _oriented(scores, lower_is_better)
    with _progress(scores, levels, methods, resamples) as bar:
        rows, boot = _correlation_rows(scores, levels, methods, resamples, seed, confidence, bar)
        comparisons = _comparison_rows(scores, levels, methods, resamples, seed, confidence, boot, bar)
    columns = ["level", "method", "first", "second", "test", "alternative", "difference", "p_value", "role",
               "statistic", "low", "high"]
    info = {"systems": len(scores.systems), "inputs": len(scores.inputs), "metrics": list(scores.metrics),
            "human": scores.human_name, "levels": levels, "methods": methods, "resamples": resamples,
            "seed": seed, "confidence": confidence,
            "lower_is_better": [name for name in dict.fromkeys(lower_is_better or ())]}
    return MetricAnalysis(pd.DataFrame(rows), pd.DataFrame(comparisons, columns=columns), info,
                          list(scores.notes))
