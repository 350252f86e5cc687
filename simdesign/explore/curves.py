"""The explorer's second view: the current design placed on precomputed curves.

The curves are the summary tables committed beside the paper's figures, ``figures/<name>.csv``
(the columns of a run's ``summary.csv``, written by ``simdesign run``/``plot``). They are read from
the tables shipped with the package (:func:`simdesign.outputs.precomputed_curve_names`: the committed
``figures/*.csv``; ``simdesign explore --figures DIR`` reads another folder), and a
table's config, ``configs/<name>.yaml`` when it exists, says its model. Only curve tables are offered (one rule, by
their columns: :func:`curve_problem`), and the view follows the run's estimand: it shows a table
with rows of that estimand (type I error or power) made with the same model, the paper's figures
first. A missing paper table is not an error: the view says which file it would read and how to
make it.
"""
from __future__ import annotations

import io
import itertools
import textwrap
from pathlib import Path

import pandas as pd
import yaml
from matplotlib import rcParams
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter, ScalarFormatter

from simdesign.core.estimands import estimand_label, has_nominal_level, headline_estimand
from simdesign.core.yamlio import load_yaml
from simdesign.model.common import effect_scale
from simdesign.outputs import shipped_figures_folder
from simdesign.studies.rates.method_specs import DEFAULT_METHODS, result_label

REPOSITORY = Path(__file__).resolve().parents[2]
DEFAULT_FIGURES = shipped_figures_folder()
DEFAULT_CONFIGS = REPOSITORY / "configs"
# The paper's figures whose tables the lesson uses: Figure 4 (type I error), 5 (power), 7 (nested vs crossed).
PAPER_CURVES = ("paper_fig4_{model}", "paper_fig5_{model}", "paper_fig7_{model}")
CURVE_COLUMNS = ("design", "annotators", "test", "estimand", "rate", "ci_low", "ci_high")


def view_estimands() -> tuple[str, str]:
    """What a live run shows: effect zero gives the null rate (type I error), others the effect rate (power)."""
    return headline_estimand(is_null=True), headline_estimand(is_null=False)


def curve_problem(columns) -> str | None:
    """Why a table with these columns is not a curve table (None when it is): the one rule for "curve table".

    A curve table is a run's summary (``summary.csv``, a figure's ``figures/<name>.csv``): one row per design
    and test with the design's annotators and the estimand's rate and 95% interval, which is what the view
    draws. Other tables beside the figures (a plan's candidates, a crowd study's settings, a bootstrap's
    coverage) lack some of these columns and are not offered.
    """
    missing = [column for column in CURVE_COLUMNS if column not in set(columns)]
    return f"lacks the summary column(s) {missing}" if missing else None


def curve_tables(figures_dir: Path = DEFAULT_FIGURES, configs_dir: Path = DEFAULT_CONFIGS) -> list[dict]:
    """The curve tables the view can offer: name, path (None when missing), model, effect, description, estimands.

    Present tables are offered when they are curve tables (:func:`curve_problem`); the paper's figures are
    also named when their table is missing, so that the view can say which file to make. ``estimands`` lists
    which of 'type1' and 'power' a table has rows of (for a missing table, what its config's effect gives).
    """
    folder = Path(figures_dir)
    tables = []
    names = {path.stem for path in folder.glob("*.csv")}
    for model in ("coherence", "repetition"):
        names |= {pattern.format(model=model) for pattern in PAPER_CURVES}
    for name in sorted(names, key=_offer_order):
        path = folder / f"{name}.csv"
        info = _config_info(Path(configs_dir) / f"{name}.yaml")
        if path.is_file():
            estimands = _curve_estimands(path)
            if estimands is None:
                continue  # not a curve table
        else:
            path = None
            estimands = [] if info["effect"] is None else [headline_estimand(info["effect"] == "zero")]
        tables.append({"name": name, "path": None if path is None else str(path), **info, "estimands": estimands})
    return tables


def _offer_order(name: str) -> tuple:
    """The paper's figures first (Figure 4, 5, 7), then the other tables by name."""
    for rank, pattern in enumerate(PAPER_CURVES):
        if name.startswith(pattern.split("{")[0]):
            return (0, rank, name)
    return (1, 0, name)


_ESTIMANDS_CACHE: dict = {}  # (path, mtime, size) -> estimands, or None for a table that is not a curve table


def _curve_estimands(path: Path) -> list | None:
    """The view's estimands (the headline rates under the null and an effect) a table has rows of; None when it is
    not a curve table."""
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _ESTIMANDS_CACHE:
        try:
            header = pd.read_csv(path, nrows=0).columns
            if curve_problem(header):
                found = None
            else:
                present = set(pd.read_csv(path, usecols=["estimand"])["estimand"])
                found = [estimand for estimand in view_estimands() if estimand in present]
        except (OSError, ValueError):
            found = None  # unreadable: not offered (a table that cannot be read cannot be drawn)
        _ESTIMANDS_CACHE[key] = found
    return _ESTIMANDS_CACHE[key]


def _config_info(path: Path) -> dict:
    """Model, effect and first comment line of a config (best effort: a table without one still draws)."""
    if not path.is_file():
        return {"model": None, "effect": None, "description": ""}
    try:
        text = path.read_text()
        raw = load_yaml(text) or {}
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return {"model": None, "effect": None, "description": ""}
    if not isinstance(raw, dict):
        return {"model": None, "effect": None, "description": ""}
    # The config's first comment names the figure ("Steen & Markert (2021), Figure 4: type I error of ...").
    comment = next((line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#")), "")
    comment = comment.split(":", 1)[0]
    return {"model": raw.get("model") if isinstance(raw.get("model"), str) else None,
            "effect": raw.get("effect") if isinstance(raw.get("effect"), (str, int, float)) else None,
            "description": comment}


def best_table(tables: list[dict], model_source: str, estimand: str) -> str | None:
    """The table to show for a run of ``estimand`` ('type1' or 'power') with the model ``model_source``.

    The first table (in :func:`curve_tables`' order: the paper's figures first) that has rows of the
    estimand and was made with the same model, a present one before a missing one (a missing one is still
    named, so that the view can say which file to make); else any present table with rows of the estimand;
    None when no table has any.
    """
    with_estimand = [t for t in tables if estimand in t["estimands"]]
    matching = [t for t in with_estimand if t["model"] and Path(str(model_source)).name.startswith(t["model"])]
    for candidates in ([t for t in matching if t["path"]], matching, [t for t in with_estimand if t["path"]]):
        if candidates:
            return candidates[0]["name"]
    return None


def read_curves(path) -> pd.DataFrame:
    """A figure's summary table, checked to be a curve table (:func:`curve_problem`)."""
    table = pd.read_csv(path)
    problem = curve_problem(table.columns)
    if problem:
        raise ValueError(f"{path} {problem}")
    return table


def draw_position(curves: pd.DataFrame, estimand: str, current: list[dict], annotators: int, title: str,
                  caveat: str | None = None):
    """Curves of ``estimand`` against annotators, one per test, with the current design's rates on them.

    Parameters
    ----------
    curves : DataFrame
        A summary table (:func:`read_curves`).
    estimand : str
        'type1' or 'power'.
    current : list of dict
        The live run's rows (test, method, estimand, rate, ci_low, ci_high).
    annotators : int
        The current design's annotators (its x).
    title : str
    caveat : str, optional
        Written under the axes in red (:func:`effect_caveat`: the stars are at another effect than the curves).

    Returns
    -------
    matplotlib.figure.Figure
        With ``figure.colours``: ``{'curves': {name: colour}, 'stars': {name: colour}}`` as drawn (hex), what
        the page is told beside the picture.
    """
    figure = Figure(figsize=(6.4, 4.0))
    ax = figure.subplots()
    shown = curves[curves["estimand"] == estimand].sort_values("annotators")
    # A table of several methods (rank_vs_likert_*) has one curve per (test, method), named by the engine's
    # result label ('ttest_doc@rank'); a table without a method column is Likert.
    shown = shown.assign(curve=[result_label(test, method) for test, method in
                                zip(shown["test"], shown.get("method", pd.Series(DEFAULT_METHODS[0], index=shown.index)))])
    colours = _draw_curves(ax, shown)
    figure.colours = {"curves": colours,
                      "stars": _draw_stars(ax, current, estimand, annotators, colours, marked=caveat is not None)}
    if has_nominal_level(estimand):
        ax.axhline(0.05, color="grey", linestyle=":", linewidth=1)
    _annotator_axis(ax, shown, annotators)
    ax.set_ylabel(estimand_label(estimand))
    ax.set_ylim(bottom=0)
    ax.set_title("\n".join(textwrap.fill(line, 80) for line in title.splitlines()), fontsize=8.5)
    ax.legend(fontsize=7, loc="best")
    if caveat:
        figure.text(0.01, 0.01, textwrap.fill(caveat, 110), color=CAVEAT_COLOUR, fontsize=7.5, va="bottom")
        figure.tight_layout(rect=(0, 0.09, 1, 1))  # room for the caveat's two lines under the axis label
    else:
        figure.tight_layout()
    return figure


CAVEAT_COLOUR = "#b00020"  # the page's colour for what must be read before the figure


def _draw_curves(ax, shown: pd.DataFrame) -> dict:
    """One line per curve (with its interval as a band); curve name -> its colour (hex)."""
    colours = {}
    for name, rows in shown.groupby("curve", sort=True):
        (line,) = ax.plot(rows["annotators"], rows["rate"], marker="o", markersize=3, label=f"{name} (precomputed)")
        ax.fill_between(rows["annotators"], rows["ci_low"], rows["ci_high"], alpha=0.15, color=line.get_color())
        colours[name] = to_hex(line.get_color())
    return colours


def star_colours(names, curve_colours: dict) -> dict:
    """The colour of each star: its curve's, so that a star reads as a point of its curve; a test the table has no
    curve of gets the next colour of the cycle no curve uses (one colour per test, never black, which would
    read as "no test")."""
    cycle = [to_hex(c) for c in rcParams["axes.prop_cycle"].by_key()["color"]]
    free = [c for c in cycle if c not in curve_colours.values()] or cycle
    spare = itertools.cycle(free)
    return {name: curve_colours.get(name) or next(spare) for name in names}


def _draw_stars(ax, current: list[dict], estimand: str, annotators: int, curve_colours: dict, marked: bool) -> dict:
    """The live run's rates as stars with their intervals at the design's annotators; name -> colour drawn."""
    rows = [r for r in current if r["estimand"] == estimand and r["rate"] is not None]
    names = [result_label(r["test"], r.get("method", DEFAULT_METHODS[0])) for r in rows]
    colours = star_colours(names, curve_colours)
    for name, row in zip(names, rows):
        low, high = row["ci_low"] or row["rate"], row["ci_high"] or row["rate"]
        notes = [note for note, wanted in (("your effect", marked), ("no curve here", name not in curve_colours))
                 if wanted]
        ax.errorbar([annotators], [row["rate"]], yerr=[[row["rate"] - low], [high - row["rate"]]], fmt="*",
                    markersize=13, color=colours[name], markeredgecolor="black", capsize=4,
                    label=f"{name}: your design" + (f" ({'; '.join(notes)})" if notes else ""))
    return colours


def _annotator_axis(ax, shown: pd.DataFrame, annotators: int) -> None:
    """A log axis with ticks at the table's designs and the current one, written as plain numbers (3, 60, 300),
    not 3x10^0."""
    ax.set_xscale("log")
    ticks = sorted({int(a) for a in shown["annotators"]} | {int(annotators)})
    ax.set_xticks(ticks if len(ticks) <= 12 else ticks[::len(ticks) // 12 + 1])
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel("annotators in total")


def _effect_scale_of_label(label) -> float | None:
    """The scale factor a summary's 'effect' label stands for ('zero', 'fitted', 'x0.5'); None when unreadable."""
    text = str(label)
    if text in ("zero", "fitted"):
        return effect_scale(text)
    try:
        return float(text[1:]) if text.startswith("x") else float(text)
    except ValueError:
        return None


def _effect_words(scale: float) -> str:
    if scale == 0:
        return "effect zero"
    return "the fitted effects (scale 1)" if scale == 1 else f"{scale:g} x the fitted effects"


def effect_caveat(curves: pd.DataFrame, estimand: str, run_scale: float) -> str | None:
    """What to say when the run's effect is not the one the table's curves of ``estimand`` were computed at.

    Power depends on the effect: a design's power at half the fitted effects is not a point of a curve at the
    fitted effects. The stars are still drawn (how far the design falls below the curve at the user's effect is
    what one changes the effect to see), with this sentence on the figure and beside it. None when the effects
    agree, or when the table does not say its effect (a summary without an 'effect' column).
    """
    if "effect" not in curves.columns:
        return None
    scales = {_effect_scale_of_label(label) for label in curves.loc[curves["estimand"] == estimand, "effect"]}
    if not scales or scales == {run_scale} or None in scales:
        return None
    theirs = " and ".join(_effect_words(s) for s in sorted(scales))
    return (f"Your effect is {_effect_words(run_scale)}; these curves are at {theirs}: the stars show your "
            f"design at your effect, not a point of these curves.")


def position_png(curves: pd.DataFrame, estimand: str, current: list[dict], annotators: int, title: str,
                 caveat: str | None = None) -> tuple[bytes, dict]:
    """The PNG of :func:`draw_position` and the colours of its curves and stars (its ``figure.colours``)."""
    figure = draw_position(curves, estimand, current, annotators, title, caveat)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue(), figure.colours
