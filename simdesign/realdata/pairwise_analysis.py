"""Analyse a pairwise study or an Arena battle log: strengths, Elo, intervals, win rates, tests, rank groups.

The pairwise method's ``analyse`` step: :func:`simdesign.realdata.analyse.analyse` (``simdesign analyse FILE``)
hands it a table read by :mod:`simdesign.tables.pairwise`. Per system it reports

* the **Bradley-Terry log-strength** (maximum likelihood, centred to mean 0; :func:`simdesign.stats.preferences.
  bradley_terry`), a tie counting as half a win to each side (the Chatbot Arena's convention, the default) or by
  Davidson's tie model (``ties='davidson'``);
* the same on the **Arena's Elo scale**: 400 / ln 10 points per unit of log-strength (400 points = odds of
  10 to 1), anchored where the user says (``anchor='SYSTEM=VALUE'``; default the mean at 1000);
* a 95% **percentile bootstrap interval** of both, resampling prompts and, where the table names the judges,
  judges independently (a two-way cluster bootstrap: one prompt's comparisons, and one judge's, are
  dependent); resamples without a finite estimate are counted and reported, not hidden;
* the **win rate** over all its comparisons (ties half), wins, ties and losses;
* **rank groups** as for Likert and Rank (:func:`simdesign.realdata.analyse.rank_sets`): the ranks each system
  can take given the significant differences of the first test (default ``bradley_terry``: Wald tests with
  two-way cluster-robust errors by judge and prompt), then every requested test's pairs (default also
  ``pair_sign``, the exact sign test over prompts) with the pair's win rate.

Random streams: the bootstrap's generator is ``bootstrap_rng(seed, 'bootstrap')``
(:mod:`simdesign.core.seeds`), so the intervals depend on the seed and nothing else.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.checks import is_number
from simdesign.core.errors import ConfigError
from simdesign.core.results import Result, write_figure
from simdesign.core.seeds import bootstrap_rng
from simdesign.core.suggest import did_you_mean
from simdesign.methods.pairwise import PAIRWISE
from simdesign.realdata.analyse import (_analysis_specs, _p_text, _refuse_unfit_tests, _run_tests, parse_test_text,
                                        rank_sets)
from simdesign.tables.pairwise import comparisons_of, describe_pairwise, ordered_systems, study_judgements

DEFAULT_PAIRWISE_TESTS = ("bradley_terry", "pair_sign")
TIES = ("half", "davidson")
ELO_PER_UNIT = 400 / np.log(10)
DEFAULT_ELO = 1000.0
BOOTSTRAP_STREAM = "bootstrap"
# What PairwiseAnalysis.save writes (docs/how-to/arena-log.md lists the same), by key.
PAIRWISE_OUTPUTS = {"table": "analysis.csv", "pairs": "pairs.csv", "win_rates": "win_rates.csv",
                    "report": "analysis.md", "figure": "analysis.png", "info": "analysis_info.csv"}


def parse_anchor(anchor, systems) -> tuple[int | None, float]:
    """(system index or None for the mean, Elo value) from ``'SYSTEM=VALUE'``, ``'VALUE'``, a number, a
    ``(system, value)`` pair or ``{system: value}``; None is the mean at 1000.

    Examples
    --------
    >>> parse_anchor("b=1200", ["a", "b"]), parse_anchor(None, ["a", "b"]), parse_anchor("1500", ["a"])
    ((1, 1200.0), (None, 1000.0), (None, 1500.0))
    """
    if anchor is None:
        return None, DEFAULT_ELO
    if isinstance(anchor, dict) and len(anchor) == 1:
        anchor = next(iter(anchor.items()))
    if isinstance(anchor, str):
        system, equals, value = anchor.rpartition("=")
        anchor = (system.strip(), value.strip()) if equals else (None, anchor.strip())
    if is_number(anchor) and np.isfinite(anchor):
        return None, float(anchor)
    if not (isinstance(anchor, (tuple, list)) and len(anchor) == 2):
        raise ConfigError(f"anchor must be SYSTEM=VALUE (that system's Elo), VALUE (the mean's) or None (the mean "
                          f"at {DEFAULT_ELO:g}); got {anchor!r}")
    system, value = anchor
    try:
        value = float(value)
    except (TypeError, ValueError):
        value = float("nan")
    problems = [] if np.isfinite(value) else [f"anchor's value must be a number; got {anchor[1]!r}"]
    names = [str(s) for s in systems]
    if system is not None and str(system) not in names:
        problems.append(f"anchor names the system {system!r}, which the table does not have; its systems: "
                        f"{names}{did_you_mean(str(system), names)}")
    if problems:
        raise ConfigError(problems)
    return (None if system is None else names.index(str(system))), value


@dataclass(repr=False)
class PairwiseAnalysis(Result):
    """The analysis of a pairwise study or a battle log (see the module docstring).

    Attributes
    ----------
    ratings : pandas.DataFrame
        Per system: ``system, elo, elo_low, elo_high, strength, strength_low, strength_high, win_rate, wins,
        ties, losses, comparisons, rank_low, rank_high, groups`` (best first unless an order was given).
    pairs : pandas.DataFrame
        Per test and pair: ``test, system_a, system_b, win_rate`` (a's share of their comparisons, ties half),
        ``comparisons, estimate`` (positive = a better; log-strength difference for Bradley-Terry, mean share
        minus 1/2 over units for the sign test), ``p_value, status, adjust, significant``.
    win_rates : pandas.DataFrame
        Row system's share of its comparisons with the column system (ties half); NaN where never compared.
    info : dict
        What was read and how it was analysed.
    notes : list of str
    """

    ratings: pd.DataFrame
    pairs: pd.DataFrame
    win_rates: pd.DataFrame
    info: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    method: str = PAIRWISE.name

    def _what(self) -> str:
        return f"Bradley-Terry strengths and Elo, {self.info.get('primary_test', '')} groups"

    def _size(self) -> str:
        return f"{len(self.ratings)} systems, {self.info.get('comparisons')} comparisons"

    def __str__(self) -> str:
        return self.report()

    def summary(self) -> pd.DataFrame:
        """The per-system table (a copy of :attr:`ratings`)."""
        return self.ratings.copy()

    def table(self, digits: int = 0) -> pd.DataFrame:
        """The per-system table for reading: Elo and log-strength with their intervals as text, win rate, groups."""
        rows = self.ratings
        return pd.DataFrame({
            "system": rows["system"],
            "elo (95% interval)": [f"{e:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"
                                   for e, lo, hi in zip(rows["elo"], rows["elo_low"], rows["elo_high"])],
            "log-strength": [f"{s:+.3f} [{lo:+.3f}, {hi:+.3f}]"
                             for s, lo, hi in zip(rows["strength"], rows["strength_low"], rows["strength_high"])],
            "win rate": rows["win_rate"].map(lambda v: f"{v:.3f}"),
            "W/T/L": [f"{w:g}/{t:g}/{lo:g}" for w, t, lo in zip(rows["wins"], rows["ties"], rows["losses"])],
            "groups": rows["groups"]})

    def _head(self) -> list[str]:
        info = self.info
        who = "judges" if info["format"] == "arena" else "annotators"
        judges = f"{info['annotators']} {who}" if info["judges"] else "no judge column"
        return [info["description"],
                f"{info['comparisons']} comparisons ({info['ties_observed']} ties"
                + (f", {info['bothbad']} of them 'tie (bothbad)'" if info["format"] == "arena" else "")
                + f"), {judges}, {info['documents']} prompts, {len(self.ratings)} systems",
                f"strengths: {info['ties_text']}; Elo = {ELO_PER_UNIT:.2f} x log-strength, {info['anchor_text']}",
                f"95% intervals: {info['bootstrap_text']}",
                f"groups: ranks each system can take given the significant differences of {info['primary_test']} "
                f"(p < {info['alpha']}; {info['rule']})"]

    def report(self) -> str:
        """A plain-text report: how the table was read and analysed, the systems, the tests, the notes."""
        lines = self._head() + [""]
        with pd.option_context("display.width", 200, "display.max_rows", 500):
            lines.append(self.table().to_string(index=False))
            lines.append("")
            pairs = self.pairs.assign(p_value=self.pairs["p_value"].map(_p_text))
            lines.append(pairs.to_string(index=False, float_format=lambda v: f"{v:+.3f}"))
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The report as a Markdown document (``analysis.md``)."""
        table = self.table()
        head = "| " + " | ".join(table.columns) + " |\n|" + "---|" * len(table.columns) + "\n"
        rows = "".join("| " + " | ".join(f"`{v}`" if k == 0 else str(v) for k, v in enumerate(row)) + " |\n"
                       for row in table.itertuples(index=False))
        pair_head = ("| test | a | b | a's win rate | comparisons | estimate | p | status | adjust |\n"
                     "|---|---|---|---|---|---|---|---|---|\n")
        pair_rows = "".join(f"| {r.test} | `{r.system_a}` | `{r.system_b}` | {r.win_rate:.3f} | {r.comparisons} | "
                            f"{r.estimate:+.3f} | {_p_text(r.p_value)} | {r.status} | {r.adjust} |\n"
                            for r in self.pairs.itertuples())
        notes = "".join(f"- {note}\n" for note in self.notes)
        return ("# Analysis of pairwise preferences\n\n" + "\n\n".join(self._head()) + "\n\n" + head + rows
                + "\n## Pairwise tests\n\n" + pair_head + pair_rows + (f"\n## Notes\n\n{notes}" if notes else ""))

    def plot(self, path=None, ax=None, title: str | None = None):
        """Elo with its 95% interval per system, best on top, the rank groups in the labels (no pyplot): the
        matplotlib Figure, or with ``path`` (a .png, .pdf or .svg suffix, else .png added) the file written."""
        figure = self.figure(ax, title)
        return figure if path is None else [write_figure(figure, path)]

    def figure(self, ax=None, title: str | None = None):
        """The figure :meth:`plot` draws, as a matplotlib Figure (on ``ax`` when given)."""
        from matplotlib.figure import Figure

        table = self.ratings.sort_values("elo", ascending=True, na_position="first").reset_index(drop=True)
        if ax is None:
            figure = Figure(figsize=(6, 0.45 * len(table) + 1.6))
            ax = figure.subplots()
        else:
            figure = ax.figure
        y = np.arange(len(table))
        ax.errorbar(table["elo"], y, xerr=[table["elo"] - table["elo_low"], table["elo_high"] - table["elo"]],
                    fmt="o", color="black", capsize=3)
        ax.set_yticks(y, [f"{s} ({g})" for s, g in zip(table["system"], table["groups"])])
        ax.set_xlabel(f"Elo ({self.info['anchor_text']}), 95% bootstrap interval")
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(title or f"Bradley-Terry ({self.info['ties']} ties): {self.info['primary_test']} groups "
                              f"(p < {self.info['alpha']})", fontsize=10)
        figure.tight_layout()
        return figure

    def save(self, directory) -> dict:
        """Write :data:`PAIRWISE_OUTPUTS` into ``directory`` (created); returns key -> path written."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        paths = {key: directory / name for key, name in PAIRWISE_OUTPUTS.items()}
        self.ratings.to_csv(paths["table"], index=False)
        self.pairs.to_csv(paths["pairs"], index=False)
        self.win_rates.to_csv(paths["win_rates"], index_label="system")
        paths["report"].write_text(self.to_markdown())
        self.plot(paths["figure"])
        pd.Series({key: str(value) for key, value in self.info.items()}).to_csv(paths["info"], header=["value"])
        return paths


# ---------------------------------------------------------------------------------------------------------------
# The analysis
# ---------------------------------------------------------------------------------------------------------------

def analyse_pairwise(data: pd.DataFrame, info: dict, *, tests=None, ties: str | None = None, anchor=None,
                     alpha: float = 0.05, adjust: str = "tukey", seed: int = 0, bootstrap: int = 2000,
                     systems=None, **_options) -> PairwiseAnalysis:
    """Analyse a checked pairwise table (the pairwise method's ``analyse`` step; see the module docstring).

    Parameters
    ----------
    data, info
        What :func:`simdesign.tables.pairwise.read_pairwise_table` (or ``orient_pairwise``) returned.
    tests : sequence, optional
        Registered pairwise tests as :func:`simdesign.realdata.analyse.analyse` takes them (default
        ``bradley_terry`` then ``pair_sign``); the first decides the groups. A test with a ``ties`` option gets
        ``ties`` unless it sets its own.
    ties : {'half', 'davidson'}, optional
        A tie as half a win to each side (default) or Davidson's tie model.
    anchor : str, tuple, dict or number, optional
        Where the Elo scale sits (:func:`parse_anchor`); default the mean at 1000.
    alpha, adjust, seed, bootstrap, systems
        As for :func:`simdesign.realdata.analyse.analyse` (checked there). Other options (a mixed model's
        structure, starts, df) do not apply and are ignored.

    Returns
    -------
    PairwiseAnalysis
    """
    from simdesign.stats.preferences import bradley_terry

    ties = "half" if ties is None else ties
    if ties not in TIES:
        raise ConfigError(f"ties must be one of {list(TIES)} (half: a tie is half a win to each side, the Arena's "
                          f"convention; davidson: Davidson's tie model); got {ties!r}{did_you_mean(ties, TIES)}")
    given_order = systems is not None
    systems = ordered_systems(data, systems)
    anchor_index, anchor_value = parse_anchor(anchor, systems)
    specs = _pairwise_specs(DEFAULT_PAIRWISE_TESTS if tests is None else tests, adjust, ties)
    _refuse_unfit_tests(specs, data, PAIRWISE)
    comparisons = comparisons_of(data, systems, info.get("judges", True))
    arrays = (comparisons.first, comparisons.second, comparisons.outcome, comparisons.n_systems)
    fit = bradley_terry(*arrays, ties=ties)
    boot = _bootstrap(comparisons, ties, bootstrap, seed)
    share, count = _win_matrix(comparisons)
    pairs, _ = _run_tests(study_judgements(comparisons), specs, adjust, seed)
    pairs = _with_win_rates(pairs, systems, share, count, alpha)
    primary = pairs[pairs["test"] == specs[0].label]
    sets = rank_sets(systems, primary["p_value"].to_numpy(float), primary["estimate"].to_numpy(float), alpha)
    ratings = _ratings(comparisons, fit, boot, (anchor_index, anchor_value), sets, sort=not given_order)
    details = _details(data, info, comparisons, fit, boot, specs,
                       {"ties": ties, "alpha": alpha, "adjust": adjust, "seed": seed, "bootstrap": int(bootstrap),
                        "anchor_text": _anchor_text(anchor_index, anchor_value, systems)})
    notes = _notes(comparisons, fit, boot, primary, specs[0].label, ties)
    return PairwiseAnalysis(ratings, pairs, pd.DataFrame(share, index=systems, columns=systems), details, notes)


def _pairwise_specs(tests, adjust: str, ties: str):
    """Registry specs of the requested tests, ``ties`` passed to a test that takes it and sets none (its default
    'half' left out of the label)."""
    from simdesign.significance import ANALYSES

    tests = [tests] if isinstance(tests, (str, dict)) else list(tests)
    items = []
    for test in tests:
        item = dict(test) if isinstance(test, dict) else parse_test_text(str(test))
        info = ANALYSES.get(item.get("name"))
        if info is not None and "ties" in info.options and "ties" not in item and ties != "half":
            item["ties"] = ties
        items.append(item)
    return _analysis_specs(items, adjust, None, None, None)


def _bootstrap(comparisons, ties: str, bootstrap: int, seed: int):
    """Bootstrap of the strengths resampling prompts (and judges, when the table names them)."""
    from simdesign.stats.preferences import bootstrap_strengths

    rng = bootstrap_rng(seed, BOOTSTRAP_STREAM)
    return bootstrap_strengths(comparisons.first, comparisons.second, comparisons.outcome, comparisons.n_systems,
                               prompts=comparisons.document,
                               judges=comparisons.annotator if comparisons.judges else None,
                               rng=rng, n_resamples=int(bootstrap), ties=ties)


def _win_matrix(comparisons) -> tuple[np.ndarray, np.ndarray]:
    from simdesign.stats.preferences import win_rates

    return win_rates(comparisons.first, comparisons.second, comparisons.outcome, comparisons.n_systems)


def _with_win_rates(pairs: pd.DataFrame, systems, share, count, alpha: float) -> pd.DataFrame:
    """The tests' pairs with each pair's win rate and number of comparisons in place of a mean difference."""
    index = {name: k for k, name in enumerate(systems)}
    i = pairs["system_a"].map(index).to_numpy()
    j = pairs["system_b"].map(index).to_numpy()
    out = pairs.drop(columns=["mean_difference", "message"])
    out.insert(3, "win_rate", share[i, j])
    out.insert(4, "comparisons", count[i, j].astype(np.int64))
    out["significant"] = out["p_value"] < alpha
    return out


def _ratings(comparisons, fit, boot, anchor: tuple, sets: pd.DataFrame, sort: bool) -> pd.DataFrame:
    """The per-system table: Elo and log-strength with intervals, win rates, rank groups."""
    from simdesign.stats.preferences import elo

    n = comparisons.n_systems
    index, value = anchor
    rating = elo(fit.strength, anchor=index, anchor_value=value)
    if boot.draws.shape[0]:
        draws = np.vstack([elo(draw, anchor=index, anchor_value=value) for draw in boot.draws])
        elo_low, elo_high = np.quantile(draws, [(1 - boot.level) / 2, (1 + boot.level) / 2], axis=0)
    else:
        elo_low = elo_high = np.full(n, np.nan)
    wins, ties, losses = (np.zeros(n) for _ in range(3))
    for side, credit in ((comparisons.first, comparisons.outcome), (comparisons.second, 1 - comparisons.outcome)):
        np.add.at(wins, side, credit == 1.0)
        np.add.at(ties, side, credit == 0.5)
        np.add.at(losses, side, credit == 0.0)
    total = wins + ties + losses
    table = pd.DataFrame({"system": list(comparisons.systems), "elo": rating, "elo_low": elo_low, "elo_high": elo_high,
                          "strength": fit.strength, "strength_low": boot.lower, "strength_high": boot.upper,
                          "win_rate": (wins + 0.5 * ties) / total, "wins": wins.astype(np.int64),
                          "ties": ties.astype(np.int64), "losses": losses.astype(np.int64),
                          "comparisons": total.astype(np.int64)})
    table = table.merge(sets, on="system")
    if sort:
        table = table.sort_values(["elo", "win_rate"], ascending=False, kind="stable").reset_index(drop=True)
    return table


def _anchor_text(index, value: float, systems) -> str:
    return f"the mean at {value:g}" if index is None else f"{systems[index]} at {value:g}"


def _details(data, info: dict, comparisons, fit, boot, specs, options: dict) -> dict:
    """What :attr:`PairwiseAnalysis.info` records."""
    resampled = "prompts and judges, independently" if comparisons.judges else "prompts (the table names no judges)"
    bootstrap_text = (f"percentile bootstrap ({boot.n_resamples} resamples of {resampled}; seed {options['seed']}"
                      + (f"; {boot.n_failed} resamples without a finite estimate left out" if boot.n_failed else "")
                      + ")")
    ties_text = ("Bradley-Terry, a tie half a win to each side (the Arena's convention)" if options["ties"] == "half"
                 else f"Bradley-Terry with Davidson's tie model (nu = {fit.tie_parameter:.3f})"
                 if fit.tie_parameter is not None and np.isfinite(fit.tie_parameter)
                 else "Bradley-Terry with Davidson's tie model")
    return {"description": describe_pairwise(info), "format": info.get("format", "pairs"),
            "judges": comparisons.judges, "comparisons": comparisons.size,
            "ties_observed": int((comparisons.outcome == 0.5).sum()),
            "bothbad": int(data["bothbad"].sum()) if "bothbad" in data else 0,
            "annotators": len(comparisons.annotators), "documents": len(comparisons.documents),
            "systems": list(comparisons.systems), "ties_text": ties_text, "bootstrap_text": bootstrap_text,
            "bootstrap_failed": boot.n_failed, "log_likelihood": fit.log_likelihood,
            "tie_parameter": fit.tie_parameter, "fit_converged": fit.converged, **options,
            "primary_test": specs[0].label, "tests": [s.label for s in specs],
            "rule": ("a system significantly worse than b systems and significantly better than w systems can take "
                     "ranks b+1 .. S-w"),
            "file_format": info.get("file_format", "")}


def _notes(comparisons, fit, boot, primary: pd.DataFrame, label: str, ties: str) -> list:
    notes = [PAIRWISE.analysis_note if ties == "half" else
             "ties by Davidson's model in the strengths, Elo and the tests that take it; win rates and the sign "
             "tests still count a tie half a win to each side"]
    if not fit.converged:
        notes.append(f"the Bradley-Terry fit has no finite estimate ({fit.message}): strengths and Elo are NaN; "
                     "win rates and the sign tests stand")
    if boot.n_failed:
        notes.append(f"{boot.n_failed} of {boot.n_resamples} bootstrap resamples had no finite estimate (a system "
                     "never won or never lost in them); the intervals are over the others")
    failed = primary[primary["p_value"].isna()]
    if len(failed):
        notes.append(f"{len(failed)} pair(s) of {label} have no p-value ({failed['status'].iloc[0]}); they count "
                     "as not significant in the groups")
    if not comparisons.judges:
        notes.append("the log names no judges: each battle counts as judged by a judge of its own, the intervals "
                     "resample prompts only and the cluster-robust errors cluster by prompt")
    never = int((_win_matrix(comparisons)[1] == 0).sum() - comparisons.n_systems) // 2
    if never:
        notes.append(f"{never} pair(s) of systems were never compared: their order rests on comparisons with others")
    return notes


# The pairwise method's analysis, given by the module that owns it (simdesign.realdata.analyse asks the method; this
# module is imported by simdesign/__init__.py, since simdesign.realdata.method_steps cannot import it: it imports
# simdesign.realdata.analyse, which imports the table readers that import method_steps).
