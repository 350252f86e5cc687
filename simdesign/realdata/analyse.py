"""Analyse a real study: which systems differ, with intervals and the paper's rank sets.

``analyse(frame)`` takes a checked Likert or Rank table (see
:func:`simdesign.tables.recognise.read_table`) and returns an :class:`Analysis`:

* ``systems`` (``summary()``; ``table()`` to read): per system the mean score (Likert) or mean rank (Rank, 1-based,
  1 = best, as in the paper's Table 2), a 95% bootstrap interval, the number
  of judgements, and the set of ranks the system could take (``groups``,
  the paper's "3/4" notation);
* ``pairs``: the pairwise tests of every requested registered analysis
  (default ``clmm_native`` with structure ``paper`` and Tukey adjustment,
  the paper's analysis: ``ordinal::clmm`` with emmeans' Tukey contrasts);
  the mixed model is fitted with the refit rule ``starts='codings'``
  (:func:`simdesign.clmm.fit`), so its optimum does not depend on which
  system is the reference, and ``info['fits']`` reports its log-likelihood,
  structure, status and starts;
* ``report()`` (the printed report), ``plot()`` and ``save(directory)``.

Rank data are modelled on the reversed rank (S + 1 - rank, higher = better),
as ordinal 1..S by the same model, as the paper did.

Interval (why this bootstrap): judgements of one annotator, or of one
document, are correlated, so an interval must resample the units that are
independent. In a block design annotators and documents are both nested in
blocks, and blocks are independent: with at least ``MIN_BLOCKS`` blocks the
interval is a studentized (bootstrap-t) *block* bootstrap, resampling whole
blocks with replacement and studentizing by the cluster-robust standard
error of each system's mean. With 20 blocks a plain percentile interval is
too narrow (it ignores the uncertainty of the standard error itself: about
93% coverage for a mean of 20 cluster means); bootstrap-t corrects this.
Designs without enough blocks (pools, fully crossed studies) get a two-way
("pigeonhole") bootstrap: annotators and documents are resampled
independently and each judgement is weighted by the product of its
annotator's and its document's multiplicity; percentile interval. Coverage
(``scripts/check_bootstrap_coverage.py``; README, "Analysing a real study"):
95.1-95.2% for the block bootstrap-t on the paper's design (93% for a plain
percentile block interval), 94-95% for the two-way fallback with 4 blocks,
and about 99% (conservative) for it on a pool design.

Rank sets (one rule, fixed before looking at the paper's table): with the
first requested test, a pair differs when its p-value is below ``alpha``
(0.05) and its fit did not fail. A system that is significantly worse than
``b`` systems and significantly better than ``w`` systems can take the ranks
``b + 1 .. S - w``; ``groups`` lists them joined by '/'. Failed pairs count
as not significant.
"""
from __future__ import annotations

import functools
import inspect
import os
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.checks import is_integer, is_number
from simdesign.core.errors import ConfigError, DataError
from simdesign.core.suggest import did_you_mean, suggestions
from simdesign.core.judgements import Judgements
from simdesign.core.seeds import bootstrap_rng, stream
from simdesign.core.results import Result, legacy_table, write_figure
from simdesign.methods import get_method

# A block bootstrap needs enough independent blocks for its resamples to vary like new studies.
MIN_BLOCKS = 10
DEFAULT_TESTS = ("clmm_native",)
DEFAULT_BOOTSTRAP = 2000
# One real study is fitted once: afford the multi-start refit rule of clmm.fit (docs/model.md, "Starts").
DEFAULT_STARTS = "codings"
ADJUST_CHOICES = ("none", "holm", "tukey")
# What Analysis.save writes (``simdesign analyse --out``): key -> file name.
ANALYSIS_OUTPUTS = {"table": "analysis.csv", "pairs": "pairs.csv", "report": "analysis.md", "figure": "analysis.png",
                    "info": "analysis_info.csv"}


def _p_text(value: float) -> str:
    """A p-value for reports; the Tukey tail underflows to 0 below about 1e-16, shown as a bound."""
    if pd.isna(value):
        return "failed"
    return "<1e-15" if value < 1e-15 else f"{value:.4g}"


@dataclass(repr=False)
class Analysis(Result):
    """The analysis of one study; see the module docstring for what each part means.

    Attributes
    ----------
    systems : pandas.DataFrame
        ``system, mean, ci_low, ci_high, n, groups, rank_low, rank_high`` (``summary()`` is a copy, ``table()``
        the rounded form). Called ``table`` before issue 40: ``result.table`` is still these rows for one
        release.
    pairs : pandas.DataFrame
        ``test, system_a, system_b, mean_difference, estimate, p_value,
        status, adjust, significant`` (estimate a minus b on the test's own
        scale; for ``clmm_native`` the latent scale, positive = a better).
    method : str
        The annotation method's name (:mod:`simdesign.methods`).
    info : dict
        How the table was read and analysed (base of ranks, scale, bootstrap
        scheme and repetitions, seed, alpha, rule).
    notes : list of str
    """

    systems: pd.DataFrame
    pairs: pd.DataFrame
    method: str
    info: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @property
    def table(self):
        """The readable per-system table, called: ``result.table(digits=3)``; used as a DataFrame (the
        spelling before issue 40), :attr:`systems` itself for one release."""
        return legacy_table(self.systems, lambda *args, **options: Result.table(self, *args, **options))

    def _what(self) -> str:
        return f"{self.method}, {self.info.get('primary_test', '')} groups"

    def _size(self) -> str:
        return f"{len(self.systems)} systems, {self.info.get('judgements')} judgements"

    def __str__(self) -> str:
        return self.report()

    def summary(self) -> pd.DataFrame:
        """The per-system table: means with their intervals, judgements and rank groups (a copy of
        :attr:`systems`; the pairwise tests are :attr:`pairs`, the printed report :meth:`report`)."""
        return self.systems.copy()

    def _repr_html_(self) -> str:
        import html

        info = self.info
        head = (f"<p>{html.escape(str(info.get('description', self.method)))}: {info.get('judgements')} "
                f"judgements, {info.get('annotators')} annotators, {info.get('documents')} documents. "
                f"{html.escape(self.value_name)} with 95% intervals ({html.escape(str(info.get('bootstrap_text')))}"
                f"); groups: ranks each system can take ({html.escape(str(info.get('primary_test')))}, p &lt; "
                f"{info.get('alpha')}).</p>")
        return head + self.systems.to_html(index=False, float_format=lambda v: f"{v:.3f}")

    @property
    def value_name(self) -> str:
        return get_method(self.method).value_name

    def report(self) -> str:
        """A plain-text report: the table, the interval and rule used, and the p-values behind the groups
        (``summary()`` before issue 40; ``simdesign analyse`` prints it)."""
        info = self.info
        lines = [f"{info.get('description', self.method)}",
                 f"{info['judgements']} judgements, {info['annotators']} annotators, {info['documents']} documents, "
                 f"{len(self.systems)} systems",
                 f"95% intervals: {info['bootstrap_text']}",
                 f"groups: ranks each system can take given the non-significant differences of "
                 f"{info['primary_test']} (p < {info['alpha']}; {info['rule']})", ""]
        shown = self.systems.copy()
        with pd.option_context("display.width", 200):
            lines.append(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
            lines.append("")
            pairs = self.pairs.copy()
            pairs["p_value"] = pairs["p_value"].map(_p_text)
            lines.append(pairs.to_string(index=False, float_format=lambda v: f"{v:+.3f}"))
        lines.extend(f"model fit: {_fit_text(label, details)}" for label, details in info.get("fits", {}).items())
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The report as a Markdown document (``analysis.md``)."""
        info = self.info
        table = self.systems.copy()
        head = "| system | " + self.value_name + " | 95% interval | n | groups |\n|---|---|---|---|---|\n"
        rows = "".join(f"| `{r.system}` | {r.mean:.2f} | {r.ci_low:.2f} to {r.ci_high:.2f} | {r.n} | {r.groups} |\n"
                       for r in table.itertuples())
        pair_head = "| test | a | b | estimate | p | status | adjust |\n|---|---|---|---|---|---|---|\n"
        pair_rows = "".join(
            f"| {r.test} | `{r.system_a}` | `{r.system_b}` | {r.estimate:+.3f} | "
            f"{_p_text(r.p_value)} | {r.status} | {r.adjust} |\n"
            for r in self.pairs.itertuples())
        notes = "".join(f"- {note}\n" for note in self.notes)
        fits = "".join(f"- {_fit_text(label, details)}\n" for label, details in info.get("fits", {}).items())
        return (f"# Analysis\n\n{info.get('description', self.method)}.\n\n"
                f"{info['judgements']} judgements, {info['annotators']} annotators, {info['documents']} documents.\n\n"
                f"Intervals: {info['bootstrap_text']}.\n\n"
                f"Groups: {info['rule']} (test {info['primary_test']}, alpha {info['alpha']}).\n\n"
                f"{head}{rows}\n## Pairwise tests\n\n{pair_head}{pair_rows}\n"
                + (f"## Model fits\n\n{fits}\n" if fits else "")
                + (f"## Notes\n\n{notes}" if notes else ""))

    def plot(self, path=None, ax=None, title: str | None = None):
        """Means with their 95% intervals, best system on top, groups as labels.

        Parameters
        ----------
        path : str or path-like, optional
            Write the figure there (a .png, .pdf or .svg suffix decides the format; any other path gets .png).
        ax : matplotlib Axes, optional
        title : str, optional

        Returns
        -------
        matplotlib.figure.Figure or list of Path
            Without ``path`` the Figure, drawn without pyplot (no backend is needed or chosen; Jupyter shows it
            after ``%matplotlib inline``); with it, the file written.
        """
        figure = self.figure(ax, title)
        return figure if path is None else [write_figure(figure, path)]

    def save(self, directory, title: str | None = None) -> dict:
        """Write :data:`ANALYSIS_OUTPUTS` (the systems, the pairs, the report as Markdown, the figure titled
        ``title``, the info) into ``directory`` (created); returns key -> path written."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        paths = {key: directory / name for key, name in ANALYSIS_OUTPUTS.items()}
        self.systems.to_csv(paths["table"], index=False)
        self.pairs.to_csv(paths["pairs"], index=False)
        paths["report"].write_text(self.to_markdown())
        self.plot(paths["figure"], title=title)
        pd.Series({key: str(value) for key, value in self.info.items()}).to_csv(paths["info"], header=["value"])
        return paths

    def figure(self, ax=None, title: str | None = None):
        """The figure :meth:`plot` draws, as a matplotlib Figure (on ``ax`` when given)."""
        from matplotlib.figure import Figure

        best_is_low = get_method(self.method).best_is_low
        table = self.systems.sort_values("mean", ascending=not best_is_low).reset_index(drop=True)
        if ax is None:
            figure = Figure(figsize=(6, 0.5 * len(table) + 1.5))
            ax = figure.subplots()
        else:
            figure = ax.figure
        y = np.arange(len(table))
        ax.errorbar(table["mean"], y, xerr=[table["mean"] - table["ci_low"], table["ci_high"] - table["mean"]],
                    fmt="o", color="black", capsize=3)
        ax.set_yticks(y, [f"{s} ({g})" for s, g in zip(table["system"], table["groups"])])
        ax.set_xlabel(f"{self.value_name}, 95% {self.info.get('bootstrap_short', 'bootstrap')} interval")
        if best_is_low:
            ax.invert_xaxis()  # best (e.g. rank 1) on the right, like a score's panel
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(title or f"{self.method}: {self.info['primary_test']} groups (p < {self.info['alpha']})",
                     fontsize=10)
        figure.tight_layout()
        return figure


# ---------------------------------------------------------------------------------------------
# Bootstrap intervals
# ---------------------------------------------------------------------------------------------

def _block_bootstrap_t(sums: np.ndarray, counts: np.ndarray, repetitions: int, rng: np.random.Generator,
                       level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Studentized block-bootstrap interval of each system's mean from per-block sums and counts, each (B, S).

    The statistic is the ratio sum/count (blocks weigh by their judgements);
    its standard error is the cluster-robust (linearised) one, recomputed in
    every resample so the interval carries the uncertainty of the SE itself.
    """
    n_blocks = sums.shape[0]
    total, n = sums.sum(axis=0), counts.sum(axis=0)
    mean = total / n

    def cluster_se(weights, means):
        # sum_b w_b (sums_b - m counts_b)^2, expanded so all resamples are matrix products
        squares = (weights @ sums ** 2 - 2 * means * (weights @ (sums * counts)) + means ** 2 * (weights @ counts ** 2))
        size = weights @ counts
        return np.sqrt(np.clip(squares, 0, None) * n_blocks / (n_blocks - 1)) / size

    se = cluster_se(np.ones((1, n_blocks)), mean[None, :])[0]
    weights = rng.multinomial(n_blocks, np.full(n_blocks, 1.0 / n_blocks), size=repetitions).astype(float)
    boot_mean = (weights @ sums) / (weights @ counts)
    boot_se = cluster_se(weights, boot_mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (boot_mean - mean) / boot_se
    tail = (1 - level) / 2
    low, high = np.empty_like(mean), np.empty_like(mean)
    for s in range(len(mean)):
        usable = t[np.isfinite(t[:, s]), s]  # a resample of identical blocks has SE 0: no t
        q_low, q_high = np.quantile(usable, [tail, 1 - tail]) if usable.size else (0.0, 0.0)
        low[s], high[s] = mean[s] - q_high * se[s], mean[s] - q_low * se[s]
    return low, high


def _two_way_bootstrap(values: np.ndarray, annotator: np.ndarray, document: np.ndarray, system: np.ndarray,
                       n_systems: int, repetitions: int, rng: np.random.Generator,
                       level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval from the pigeonhole bootstrap: annotators and documents resampled independently."""
    n_ann, n_doc = int(annotator.max()) + 1, int(document.max()) + 1
    ann_w = rng.multinomial(n_ann, np.full(n_ann, 1.0 / n_ann), size=repetitions).astype(float)
    doc_w = rng.multinomial(n_doc, np.full(n_doc, 1.0 / n_doc), size=repetitions).astype(float)
    weight = ann_w[:, annotator] * doc_w[:, document]  # (R, n)
    onehot = np.zeros((len(values), n_systems))
    onehot[np.arange(len(values)), system] = 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = (weight @ (onehot * values[:, None])) / (weight @ onehot)
    tail = (1 - level) / 2
    low = np.array([np.nanquantile(boot[:, s], tail) for s in range(n_systems)])
    high = np.array([np.nanquantile(boot[:, s], 1 - tail) for s in range(n_systems)])
    return low, high


def bootstrap_intervals(frame: pd.DataFrame, value_column: str, systems, repetitions: int,
                        rng: np.random.Generator, min_blocks: int = MIN_BLOCKS) -> tuple[np.ndarray, np.ndarray, dict]:
    """95% intervals of the per-system means of ``value_column``; see the module docstring for the scheme.

    Returns
    -------
    low, high : ndarray, shape (S,)
    scheme : dict
        ``name`` ('block_t' or 'two_way'), ``text`` (a sentence), ``blocks``.
    """
    # Values are whole numbers (scores or ranks), so Judgements' integer matrix holds them exactly.
    # A missing output (NaN) adds nothing to its block's sum and count: the mean is over the judged outputs.
    judgements = Judgements.from_frame(frame[["annotator", "document", "system", value_column]]
                                       .rename(columns={value_column: "score"}), systems=list(systems),
                                       allow_missing=True)
    n_blocks = int(judgements.block.max()) + 1 if judgements.has_blocks else 0
    if n_blocks >= min_blocks:
        scores = judgements.scores.astype(float)
        judged = np.isfinite(scores)
        sums = np.zeros((n_blocks, len(systems)))
        np.add.at(sums, judgements.block, np.where(judged, scores, 0.0))
        counts = np.zeros_like(sums)
        np.add.at(counts, judgements.block, judged.astype(float))
        low, high = _block_bootstrap_t(sums, counts, repetitions, rng)
        text = (f"studentized block bootstrap ({repetitions} resamples of the {n_blocks} blocks, which hold both "
                f"annotators and documents; bootstrap-t with the cluster-robust SE)")
        return low, high, {"name": "block_t", "text": text, "short": "block bootstrap-t", "blocks": n_blocks}
    codes = {name: pd.factorize(frame[name], sort=True)[0] for name in ("annotator", "document")}
    system_code = pd.Categorical(frame["system"], categories=list(systems)).codes
    low, high = _two_way_bootstrap(frame[value_column].to_numpy(float), codes["annotator"], codes["document"],
                                   system_code, len(systems), repetitions, rng)
    why = (f"only {n_blocks} blocks" if n_blocks else "no block structure")
    text = (f"two-way (pigeonhole) percentile bootstrap ({repetitions} resamples of annotators and documents, "
            f"independently; {why}, fewer than {min_blocks} for a block bootstrap)")
    return low, high, {"name": "two_way", "text": text, "short": "two-way bootstrap", "blocks": n_blocks}


# ---------------------------------------------------------------------------------------------
# Tests and rank sets
# ---------------------------------------------------------------------------------------------

def rank_sets(systems, p_value: np.ndarray, estimate: np.ndarray, alpha: float = 0.05) -> pd.DataFrame:
    """The ranks each system can take given which pairwise differences are significant.

    Parameters
    ----------
    systems : sequence of str
        In the order the pairs refer to.
    p_value, estimate : ndarray, shape (S(S-1)/2,)
        Per pair (i, j), i < j (see :func:`simdesign.significance.base.system_pairs`);
        estimate i minus j with positive = i better. NaN p-values (failed
        pairs) count as not significant.
    alpha : float

    Returns
    -------
    pandas.DataFrame
        ``system, rank_low, rank_high, groups``: a system significantly worse
        than b systems and better than w systems takes ranks b+1 .. S-w.

    Examples
    --------
    >>> rank_sets(["a", "b", "c"], np.array([0.01, 0.01, 0.5]), np.array([1.0, 1.2, 0.2]))["groups"].tolist()
    ['1', '2/3', '2/3']
    """
    from simdesign.significance.base import system_pairs

    n_systems = len(systems)
    pairs = system_pairs(n_systems)
    if len(p_value) != len(pairs) or len(estimate) != len(pairs):
        raise ValueError(f"{n_systems} systems have {len(pairs)} pairs; got {len(p_value)} p-values")
    better_than = np.zeros(n_systems, dtype=int)  # significantly better than this many
    worse_than = np.zeros(n_systems, dtype=int)
    for (i, j), p, est in zip(pairs, p_value, estimate):
        if not (np.isfinite(p) and p < alpha and np.isfinite(est) and est != 0):
            continue
        winner, loser = (i, j) if est > 0 else (j, i)
        better_than[winner] += 1
        worse_than[loser] += 1
    low = worse_than + 1
    high = n_systems - better_than
    return pd.DataFrame({"system": list(systems), "rank_low": low, "rank_high": high,
                         "groups": ["/".join(str(r) for r in range(lo, hi + 1)) for lo, hi in zip(low, high)]})


def _fit_text(label: str, details: dict) -> str:
    """One line on a model fit behind a test's pairs: log-likelihood, structure, status, starts."""
    terms = " + ".join(details["terms"]) or "none"
    return (f"{label}: log-likelihood {details['loglik']:.4f}, structure {details['structure']} (random terms: "
            f"{terms}; reference {details['reference']}), status {details['status']}, "
            f"starts {details['starts_text']}")


def split_tests(text: str) -> list[str]:
    """``--tests`` text split at the commas outside brackets: ``a[x=1,y],b`` -> ``['a[x=1,y]', 'b']``."""
    return [part.strip() for part in re.split(r",(?![^\[]*\])", text) if part.strip()]


def parse_test_text(text: str) -> dict:
    """A test written as text, ``name`` or ``name[option=value,...]``, as a config's test mapping.

    Inside the brackets a bare value names the one option of the test that allows it, so the labels the
    summaries print read back (``ttest_unpaired[mc]`` is ``{name: ttest_unpaired, threshold: mc}``);
    values are read as YAML scalars (``bootstrap_resamples=2000`` is the integer 2000).

    Raises
    ------
    ConfigError
        Unbalanced brackets, or a bare value that no option (or more than one) of the test allows.
    """
    from simdesign.core.yamlio import load_yaml

    from simdesign.significance import ANALYSES

    match = re.fullmatch(r"\s*([^\[\]]+?)\s*(?:\[(.*)\])?\s*", text)
    if match is None:
        raise ConfigError(f"test {text!r}: write a registered name, or name[option=value,...], e.g. "
                          "ttest_unpaired[threshold=mc]")
    name, inside = match.group(1), match.group(2)
    item = {"name": name}
    if not inside:
        return item
    info = ANALYSES.get(name)
    for part in (p.strip() for p in inside.split(",") if p.strip()):
        option, equals, value = part.partition("=")
        if equals:
            item[option.strip()] = load_yaml(value.strip())
            continue
        owners = [o for o, (allowed, _) in (info.options.items() if info else ()) if not callable(allowed)
                  and part in allowed or part in (info.deprecated_values.get(o, {}) if info else {})]
        if len(owners) != 1:
            choices = {o: list(allowed) for o, (allowed, _) in (info.options.items() if info else ())
                       if not callable(allowed)}
            raise ConfigError(f"test {text!r}: {part!r} is not a value of exactly one option of {name} (its "
                              f"options with listed values: {choices}); write option={part}")
        item[owners[0]] = part
    return item


def _analysis_specs(tests, adjust: str, structure: str | None, starts: str | None = None,
                    df: str | None = None):
    """Registry specs for the requested tests, with ``adjust``/``structure``/``starts``/``df`` passed where a
    test takes them."""
    from simdesign.significance import ANALYSES
    from simdesign.studies.rates.config import analysis_label, parse_analyses

    items, errors = [], []
    for test in tests:
        item = dict(test) if isinstance(test, dict) else parse_test_text(str(test))
        info = ANALYSES.get(item["name"])
        if info is not None:
            if "adjust" in info.options and "adjust" not in item:
                item["adjust"] = adjust
            if structure is not None and "structure" in info.options and "structure" not in item:
                item["structure"] = structure
            if starts is not None and "starts" in info.options and "starts" not in item:
                if starts == DEFAULT_STARTS and "label" not in item:
                    # analyse's own default rule stays out of the label (as before the rule existed);
                    # the report's model-fit line says which rule ran
                    item["label"] = analysis_label(item["name"], {k: v for k, v in item.items()
                                                                  if k not in ("name", "label")})
                item["starts"] = starts
            if df is not None and "df" in info.options and "df" not in item:
                item["df"] = df
        items.append(item)
    specs = parse_analyses(items, errors, {})
    if errors:
        raise ConfigError(errors)
    return specs


def _run_tests(judgements: Judgements, specs, adjust: str, seed: int) -> tuple[pd.DataFrame, dict]:
    """The pairs of every test, and test label -> its model fit's details (tests that report one)."""
    from statsmodels.stats.multitest import multipletests

    from simdesign.significance import ANALYSES
    from simdesign.significance.base import FAILURES, run_analysis, system_pairs

    pairs = system_pairs(judgements.n_systems)
    # over the judged outputs, as the system table's means; a study held as its comparisons only (a battle log:
    # Judgements.from_comparisons) has no per-output values, so no mean difference (pairwise reports win rates)
    means = (np.nanmean(judgements.scores, axis=0) if judgements.scores.size
             else np.full(judgements.n_systems, np.nan))
    rows, fits = [], {}
    for spec in specs:
        info = ANALYSES[spec.name]
        rng = stream(seed, "analyse/test", spec.label)  # the same whichever other tests are asked
        result = run_analysis(info, judgements, rng, spec.options)
        if result.fit_details is not None:
            fits[spec.label] = result.fit_details
        p_value = np.asarray(result.p_value, dtype=float)
        applied = spec.options.get("adjust", "none")
        if "adjust" not in spec.options and adjust != "none":
            # Tukey needs the joint covariance of a model's contrasts; a pair-by-pair test gets Holm instead.
            ok = np.isfinite(p_value)
            if ok.any():
                p_value = p_value.copy()
                p_value[ok] = multipletests(p_value[ok], method="holm")[1]
            applied = "holm" if adjust == "holm" else "holm (tukey needs a model's joint covariance)"
        for (i, j), est, p, status in zip(pairs, result.estimate, p_value, result.status):
            rows.append({"test": spec.label, "system_a": judgements.systems[i], "system_b": judgements.systems[j],
                         "mean_difference": float(means[i] - means[j]), "estimate": float(est),
                         "p_value": float(p) if status not in FAILURES else float("nan"), "status": status,
                         "adjust": applied, "message": result.message})
    return pd.DataFrame(rows), fits


def analyse(frame, method: str | None = None, tests=DEFAULT_TESTS, adjust: str = "tukey",
            structure: str | None = "paper", alpha: float = 0.05, seed: int = 0, bootstrap: int = DEFAULT_BOOTSTRAP,
            systems=None, min_blocks: int = MIN_BLOCKS, starts: str | None = DEFAULT_STARTS, df: str | None = None,
            *, columns: dict | None = None, scale=None, ties: str | None = None, anchor=None) -> Analysis:
    """Analyse a Likert or Rank study: means with intervals, pairwise tests, rank sets.

    Parameters
    ----------
    frame : pandas.DataFrame or path-like
        Likert: ``annotator, document, system, score``; Rank: ``annotator, document, system, rank``
        (0..S-1 or 1..S, checked). A path is read by :func:`~simdesign.tables.recognise.read_table`.
        A judge-plus-human table (``judge``, ``human`` columns) gives a :class:`~.judge_analysis.JudgeAnalysis`.
        Pairwise preferences or an Arena battle log (CSV, JSON, JSONL): a :class:`~.pairwise_analysis.PairwiseAnalysis`
        (``ties``, ``anchor``: pairwise tables only, see :func:`~.pairwise_analysis.analyse_pairwise`).
    method : str, optional
        A registered annotation method (``likert``, ``rank``); default: inferred from the columns.
    tests : str or sequence
        Registered analyses: names, ``name[option=value,...]`` or ``name[value]`` (:func:`parse_test_text`,
        e.g. ``ttest_unpaired[mc]``), or mappings as in a config's ``tests``. The first decides the groups.
    adjust : {'none', 'holm', 'tukey'}
        Passed to tests with an ``adjust`` option; tests without one get Holm unless 'none' is asked.
    structure : str, optional
        Passed to tests with a ``structure`` option (default 'paper').
    alpha : float
    seed : int
        Seeds the bootstrap and any randomised test (:mod:`simdesign.core.seeds` streams keyed by seed and label).
    bootstrap : int
        Bootstrap resamples.
    systems : sequence of str, optional
        Output order of ``table`` (default rank order, best first); the pairs' too (default: first appearance).
    min_blocks : int
        Fewest blocks for the block bootstrap.
    starts : {'codings', 'single'}, optional
        ``clmm_native``'s refit rule (:func:`simdesign.clmm.fit`; default 'codings': the best coding's optimum).
    columns : dict, optional
        A path only: file column -> ours (annotator, document, system, score or rank).
    scale : sequence of int, optional
        Likert: the scale's values (default: the observed values: a contiguous range, not looking like ranks).
    df : str, optional
        ``clmm_native``'s reference distribution ('z', 'design' or 'satterthwaite'; default the test's own).

    Returns
    -------
    Analysis

    Raises
    ------
    ConfigError
        A bad option (naming it), a test that cannot take the table's method or a study too small for it.
    DataError
        A table that cannot be used (naming the column or line), or ``frame`` neither a table nor a path.

    Examples
    --------
    >>> result = simdesign.analyse("study.csv", tests=["ttest_doc"], bootstrap=200)   # doctest: +SKIP
    >>> result.table()                                                                # doctest: +SKIP
    """
    tests = [tests] if isinstance(tests, (str, dict)) else tests
    _check_options(adjust, alpha, bootstrap, seed, tests)
    if (other := _other_analysis(frame, locals())) is not None:  # pairwise preferences; a judge-plus-human table
        return other
    data, info = _read_or_oriented(frame, method, columns, scale)
    method = get_method(info["method"])
    given_order = systems is not None
    systems = _checked_systems(systems, data)
    specs = _analysis_specs(list(tests), adjust, structure, starts, df)
    _refuse_unfit_tests(specs, data, method)
    judgements, missing = _study_judgements(data, systems, specs, method)
    value_column = method.value_column
    boot_rng = bootstrap_rng(seed, "analyse/bootstrap")
    low, high, scheme = bootstrap_intervals(data, value_column, systems, int(bootstrap), boot_rng, min_blocks)
    pairs, fits = _run_tests(judgements, specs, adjust, seed)
    primary = pairs[pairs["test"] == specs[0].label]
    sets = rank_sets(systems, primary["p_value"].to_numpy(float), primary["estimate"].to_numpy(float), alpha)
    table = _system_table(data[["system", value_column]], systems, low, high, sets,
                          rank_order=not given_order, best_is_low=method.best_is_low)
    notes = _analysis_notes(primary, specs[0].label, method) + _design_notes(specs, data) + _missing_note(missing)
    details = {"bootstrap": int(bootstrap), "seed": seed, "alpha": alpha, "adjust": adjust, "fits": fits}
    return Analysis(systems=table, pairs=pairs.drop(columns="message"), method=method.name,
                    info=_details(data, info, scheme, specs, details), notes=notes)


def _judge_table_analysis(frame, options: dict):
    """The analysis of a judge-plus-human table (None for any other table): the options of :func:`analyse`
    that apply to Likert and Rank tables only are refused when set."""
    from simdesign.realdata.judge_analysis import analyse_judge_table, refuse_other_options
    from simdesign.tables.judge import source_is_judge_table

    if not source_is_judge_table(frame, options["columns"]):
        return None
    refuse_other_options(**{
        "--method (method=)": options["method"] is not None,
        "--tests (tests=)": [str(t) for t in options["tests"]] != list(DEFAULT_TESTS),
        "--structure (structure=)": options["structure"] != "paper",
        "--starts (starts=)": options["starts"] != DEFAULT_STARTS, "--df (df=)": options["df"] is not None,
        "--scale (scale=)": options["scale"] is not None, "min_blocks=": options["min_blocks"] != MIN_BLOCKS})
    return analyse_judge_table(frame, columns=options["columns"], systems=options["systems"],
                               bootstrap=options["bootstrap"], seed=options["seed"], alpha=options["alpha"],
                               adjust=options["adjust"])


def _judge_pairwise_analysis(frame, options: dict):
    """The analysis of a table of pairwise judge verdicts (:mod:`simdesign.realdata.judge_pairwise`)."""
    from simdesign.realdata.judge_pairwise import analyse_judge_pairwise, refuse_options

    refuse_options(**{
        "--method (method=)": options["method"] is not None, "--columns (columns=)": bool(options["columns"]),
        "--tests (tests=)": [str(t) for t in options["tests"]] != list(DEFAULT_TESTS),
        "--structure (structure=)": options["structure"] != "paper", "--df (df=)": options["df"] is not None,
        "--starts (starts=)": options["starts"] != DEFAULT_STARTS, "--scale (scale=)": options["scale"] is not None,
        "ties/anchor": options["ties"] is not None or options["anchor"] is not None,
        "min_blocks=": options["min_blocks"] != MIN_BLOCKS})
    return analyse_judge_pairwise(frame, systems=options["systems"], bootstrap=options["bootstrap"],
                                  seed=options["seed"], alpha=options["alpha"], adjust=options["adjust"])


def _other_analysis(frame, options: dict):
    """The analysis of a table of another kind than one value per output (None for a Likert or Rank table): of a
    method that analyses its tables itself (an ``analyse`` step: pairwise preferences and battle logs,
    :mod:`simdesign.realdata.pairwise_analysis`; the Likert default ``tests`` means none was asked for), or of a
    judge-plus-human table (:func:`_judge_table_analysis`)."""
    from simdesign.realdata.judge_pairwise import source_is_judge_pairwise
    from simdesign.tables.recognise import source_method

    if source_is_judge_pairwise(frame, options["columns"]):  # before the method's: it has a 'preferred' column
        return _judge_pairwise_analysis(frame, options)
    found = source_method(frame, options["method"], options["columns"])
    if found is None or "analyse" not in found.steps:
        if options["ties"] is not None or options["anchor"] is not None:
            raise ConfigError("ties and anchor apply to tables of pairwise preferences and battle logs (Bradley-Terry "
                              "strengths and their Elo scale); this table is not one")
        return _judge_table_analysis(frame, options)
    data, info = _read_or_oriented(frame, found.name, options["columns"], options["scale"])
    tests = None if [str(t) for t in options["tests"]] == list(DEFAULT_TESTS) else options["tests"]
    return found.step("analyse")(data, info, tests=tests, ties=options["ties"], anchor=options["anchor"],
                                 alpha=options["alpha"], adjust=options["adjust"], seed=options["seed"],
                                 bootstrap=options["bootstrap"], systems=options["systems"])


def _system_table(values: pd.DataFrame, systems, low, high, sets: pd.DataFrame, rank_order: bool,
                  best_is_low: bool) -> pd.DataFrame:
    """Means with intervals and rank groups, one row per system; in rank order (best first) when asked."""
    grouped = values.groupby("system")[values.columns[1]]
    table = pd.DataFrame({"system": systems, "mean": grouped.mean().reindex(systems).to_numpy(),
                          "ci_low": low, "ci_high": high, "n": grouped.size().reindex(systems).to_numpy()})
    table = table.merge(sets, on="system")
    if rank_order:  # a reader looks for the best system first, unless the caller set an order
        table = table.sort_values("mean", ascending=best_is_low, kind="stable").reset_index(drop=True)
    return table


def _checked_systems(systems, data: pd.DataFrame) -> list:
    """The output order: given (the table's systems, each once), else the order of first appearance."""
    if systems is None:
        return list(pd.unique(data["system"]))
    systems = list(systems)
    if sorted(map(str, systems)) != sorted(map(str, data["system"].unique())):
        strays = [s for s in systems if s not in set(data["system"])]
        raise ConfigError(f"systems {systems} do not match the table's {sorted(data['system'].unique())}"
                          f"{suggestions(strays, data['system'].unique())}")
    return systems


def _details(data: pd.DataFrame, info: dict, scheme: dict, specs, options: dict) -> dict:
    """What :attr:`Analysis.info` records: the table, the bootstrap, the tests and the options."""
    from simdesign.tables.recognise import describe

    return {
        "description": describe(info), "judgements": len(data), "annotators": data["annotator"].nunique(),
        "documents": data["document"].nunique(), "bootstrap_text": scheme["text"], "bootstrap_short": scheme["short"],
        "bootstrap_scheme": scheme["name"], "blocks": scheme["blocks"], **options,
        "primary_test": specs[0].label, "tests": [s.label for s in specs],
        "rule": ("a system significantly worse than b systems and significantly better than w systems can take "
                 "ranks b+1 .. S-w"),
        **{key: value for key, value in info.items() if key != "method"},
    }


def _check_options(adjust: str, alpha: float, bootstrap: int, seed=0, tests=("clmm_native",)) -> None:
    """Refuse bad options before any work is done, each problem naming the option (all at once)."""
    problems = []
    if adjust not in ADJUST_CHOICES:
        problems.append(f"adjust must be one of {list(ADJUST_CHOICES)}; got {adjust!r}"
                        f"{did_you_mean(adjust, ADJUST_CHOICES)}")
    if not is_number(alpha) or not 0 < alpha < 1:
        problems.append(f"alpha must be a number between 0 and 1; got {alpha!r}")
    if not is_integer(bootstrap, 100):
        problems.append(f"bootstrap must be an integer of at least 100 resamples; got {bootstrap!r}")
    if not is_integer(seed, 0):
        problems.append(f"seed must be a non-negative integer; got {seed!r}")
    if isinstance(tests, (str, bytes)) or not hasattr(tests, "__iter__") or not list(tests):
        problems.append(f"tests must be a test name or a non-empty list of them; got {tests!r}")
    if problems:
        raise ConfigError(problems)


def _read_or_oriented(frame, method, columns, scale) -> tuple[pd.DataFrame, dict]:
    """The oriented table from a DataFrame or a CSV path (read as ``simdesign analyse`` reads it)."""
    from simdesign.tables.recognise import orient_any, read_table

    if isinstance(frame, (str, os.PathLike)):
        # checked by read_table (with the scale given): a second check without it would refuse a gap the scale allows
        return read_table(frame, method, columns, scale)
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"The judgements must be a pandas DataFrame or a CSV file path; got {type(frame).__name__}")
    if columns:
        raise ConfigError("'columns' applies to a CSV path; rename a DataFrame's columns yourself (DataFrame.rename)")
    return orient_any(frame, method, scale)


def _study_judgements(data: pd.DataFrame, systems, specs, method) -> tuple[Judgements, int]:
    """The study as Judgements (missing outputs as NaN) and how many outputs are missing; the tests that
    need complete data refused when some are."""
    judgements = Judgements.from_frame(data[["annotator", "document", "system", "score"]], systems=systems,
                                       allow_missing=True)
    missing = 0 if judgements.complete else int(np.count_nonzero(~judgements.observed))
    if missing:
        _refuse_tests_needing_complete_data(specs, method, missing)
    return judgements, missing


def _missing_note(missing: int) -> list:
    return [f"{missing} outputs are missing (a system not judged by an annotator on a document): means and "
            "intervals are over the judged outputs, and the tests are ones that handle missing outputs "
            "(docs/designs.md, partial coverage)"] if missing else []


def _refuse_tests_needing_complete_data(specs, method, missing: int) -> None:
    """Tests that need every system judged in every pair, refused as ``run`` refuses them under partial
    coverage (:func:`simdesign.significance.base.partial_coverage_refusal`); a ranking needs every output."""
    from simdesign.significance import ANALYSES
    from simdesign.significance.base import partial_coverage_refusal
    from simdesign.studies.rates.coverage import COMPLETE_ONLY_SETTINGS

    if method.rankings:
        raise ConfigError(f"{missing} judgements are missing from the {method.label} table (a system not "
                          f"ranked by an annotator on a document): {COMPLETE_ONLY_SETTINGS['rankings']}; give "
                          "each (annotator, document) pair one rank per system")
    problems = [refusal for spec in specs if spec.name in ANALYSES
                for refusal in [partial_coverage_refusal(ANALYSES[spec.name], spec.label, spec.options)] if refusal]
    if problems:
        raise ConfigError([f"{missing} outputs are missing (a system not judged by an annotator on a document). "
                           + problem for problem in problems])


def _refuse_unfit_tests(specs, data: pd.DataFrame, method) -> None:
    """Refuse what ``run`` and ``fit`` refuse: a test that cannot take the method, annotator effects from one.

    ``fit`` refuses a single-annotator pilot: between-annotator variation cannot be estimated from one
    annotator, so a model fitting annotator effects is singular and its p-values are not to be trusted.
    """
    from simdesign.significance import ANALYSES

    problems = []
    for spec in specs:
        info = ANALYSES.get(spec.name)
        if info is not None and not method.accepts(info):
            takes = sorted(name for name, other in ANALYSES.items() if method.accepts(other))
            problems.append(f"The test {spec.label} does not take {method.label} judgements ({method.refusal(info)}; "
                            f"it takes "
                            f"{list(info.methods)}); tests for {method.name} data: {takes}")
    annotators = data["annotator"].nunique()
    fitting = [spec.label for spec in specs if getattr(ANALYSES.get(spec.name), "random_effects", False)]
    if annotators < 2 and fitting:
        problems.append(f"The study has a single annotator ({data['annotator'].iloc[0]!r}): {fitting} fit "
                        "annotator random effects, which one annotator cannot estimate (the fit is singular and "
                        "its p-values are not to be trusted; `simdesign fit` refuses such a pilot). Use a test "
                        "on document means (e.g. ttest_doc) or collect judgements from several annotators")
    if problems:
        raise ConfigError(problems)


def _design_notes(specs, data: pd.DataFrame) -> list:
    """Why an answer may be unreliable: too few annotators for the random slopes a test fits."""
    from simdesign.significance import ANALYSES

    annotators, n_systems = data["annotator"].nunique(), data["system"].nunique()
    slopes = [spec.label for spec in specs if getattr(ANALYSES.get(spec.name), "random_effects", False)
              and spec.options.get("structure") in ("paper", "maximal")]
    if not slopes or annotators >= n_systems + 1:
        return []
    return [f"{annotators} annotators for {n_systems} systems: a full annotator covariance (random slopes, as "
            f"{slopes} fit with their structure) needs at least systems + 1 = {n_systems + 1} annotators "
            "(`simdesign fit` refuses fewer without --allow-reduced); expect singular fits and treat their "
            "p-values with caution"]


def _analysis_notes(primary: pd.DataFrame, label: str, method) -> list:
    """What a reader must know about the primary test's failed or singular fits and about rank data."""
    notes = []
    failed = primary[primary["p_value"].isna()]
    if len(failed):
        notes.append(f"{len(failed)} pair(s) of {label} failed ({failed['status'].iloc[0]}: "
                     f"{failed['message'].iloc[0]}); they count as not significant in the groups")
    if (primary["status"] == "singular").any():
        notes.append(f"{label}: singular fit (a random-effects variance or correlation at its bound); "
                     "its p-values are kept, as for lme4/ordinal (a failed fit would give none)")
    if method.analysis_note:
        notes.append(method.analysis_note)
    return notes


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`analyse`: ``simdesign.analyse(frame)`` runs the analysis while
    ``import simdesign.realdata.analyse`` and ``from simdesign.realdata.analyse import Analysis`` keep working (a function
    exported under the module's name would be replaced by the module on its first import, or hide it)."""

    @functools.wraps(analyse)
    def __call__(self, *args, **kwargs) -> Analysis:
        return analyse(*args, **kwargs)


# inspect.signature(simdesign.analyse) shows analyse's own signature, not (*args, **kwargs), and its docstring
# (what help() and inspect.getdoc show for the callable module) starts with the function's.
__signature__ = inspect.signature(analyse)
__doc__ = (f"{inspect.getdoc(analyse)}\n\nThe module ``simdesign.realdata.analyse``\n"
           f"-------------------------------------\n\n{__doc__}")
sys.modules[__name__].__class__ = _CallableModule
