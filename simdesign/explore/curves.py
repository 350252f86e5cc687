"""The explorer's second view: the current design placed on precomputed curves.

The curves are the summary tables committed beside the paper's figures, ``figures/<name>.csv``
(the columns of a run's ``summary.csv``, written by ``simdesign run``/``plot``). They are read from
the tables shipped with the package (:func:`simdesign.outputs.precomputed_curve_names`: the committed
``figures/*.csv``; ``simdesign explore --figures DIR`` reads another folder), and a
table's config, ``configs/<name>.yaml`` when it exists, says its model and effect, so the view
offers the curves that match the current model and effect first. A missing table is not an error:
the view says which file it would read and how to make it.
"""
from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pandas as pd
import yaml
from matplotlib.figure import Figure

from simdesign.core.yamlio import load_yaml
from simdesign.outputs import shipped_figures_folder
from simdesign.simulation.methods import result_label

REPOSITORY = Path(__file__).resolve().parents[2]
DEFAULT_FIGURES = shipped_figures_folder()
DEFAULT_CONFIGS = REPOSITORY / "configs"
# The paper's figures whose tables the lesson uses: Figure 4 (type I error), 5 (power), 7 (nested vs crossed).
PAPER_CURVES = ("paper_fig4_{model}", "paper_fig5_{model}", "paper_fig7_{model}")
CURVE_COLUMNS = ("design", "annotators", "test", "estimand", "rate", "ci_low", "ci_high")


def curve_tables(figures_dir: Path = DEFAULT_FIGURES, configs_dir: Path = DEFAULT_CONFIGS) -> list[dict]:
    """The curve tables the view can offer: name, path (None when missing), model, effect, description."""
    names = {path.stem for path in Path(figures_dir).glob("*.csv")}
    for model in ("coherence", "repetition"):
        names |= {pattern.format(model=model) for pattern in PAPER_CURVES}
    tables = []
    for name in sorted(names):
        path = Path(figures_dir) / f"{name}.csv"
        info = _config_info(Path(configs_dir) / f"{name}.yaml")
        tables.append({"name": name, "path": str(path) if path.is_file() else None, **info})
    return tables


def _config_info(path: Path) -> dict:
    """Model, effect and first comment line of a config (best effort: a table without one still draws)."""
    if not path.is_file():
        return {"model": None, "effect": None, "description": ""}
    try:
        text = path.read_text()
        raw = load_yaml(text) or {}
    except (OSError, yaml.YAMLError):
        return {"model": None, "effect": None, "description": ""}
    # The config's first comment names the figure ("Steen & Markert (2021), Figure 4: type I error of ...").
    comment = next((line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#")), "")
    comment = comment.split(":", 1)[0]
    return {"model": raw.get("model") if isinstance(raw.get("model"), str) else None,
            "effect": raw.get("effect"), "description": comment}


def best_table(tables: list[dict], model_source: str, is_null: bool) -> str | None:
    """The table for the same model and hypothesis (null or not), present ones first; else any present one.

    A matching table that is missing is still named, so that the view can say which file to make.
    """
    matching = [t for t in tables if t["model"] and Path(str(model_source)).name.startswith(t["model"])
                and (t["effect"] == "zero") == is_null]
    present = [t for t in tables if t["path"]]
    for table in matching:
        if table["path"]:
            return table["name"]
    if matching:
        return matching[0]["name"]
    return present[0]["name"] if present else None


def read_curves(path) -> pd.DataFrame:
    """A figure's summary table, checked for the columns the view draws."""
    table = pd.read_csv(path)
    missing = [c for c in CURVE_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{path} lacks the summary column(s) {missing}")
    return table


def draw_position(curves: pd.DataFrame, estimand: str, current: list[dict], annotators: int, title: str):
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

    Returns
    -------
    matplotlib.figure.Figure
    """
    figure = Figure(figsize=(6.4, 4.0))
    ax = figure.subplots()
    shown = curves[curves["estimand"] == estimand].sort_values("annotators")
    # A table of several methods (rank_vs_likert_*) has one curve per (test, method), named by the engine's
    # result label ('ttest_doc@rank'); a table without a method column is Likert.
    shown = shown.assign(curve=[result_label(test, method) for test, method in
                                zip(shown["test"], shown.get("method", pd.Series("likert", index=shown.index)))])
    colours = {}
    for test, rows in shown.groupby("curve", sort=True):
        (line,) = ax.plot(rows["annotators"], rows["rate"], marker="o", markersize=3, label=f"{test} (precomputed)")
        ax.fill_between(rows["annotators"], rows["ci_low"], rows["ci_high"], alpha=0.15, color=line.get_color())
        colours[test] = line.get_color()
    for row in (r for r in current if r["estimand"] == estimand and r["rate"] is not None):
        name = result_label(row["test"], row.get("method", "likert"))
        colour = colours.get(name, "black")
        low, high = row["ci_low"] or row["rate"], row["ci_high"] or row["rate"]
        ax.errorbar([annotators], [row["rate"]], yerr=[[row["rate"] - low], [high - row["rate"]]], fmt="*",
                    markersize=13, color=colour, markeredgecolor="black", capsize=4,
                    label=f"{name}: your design")
    if estimand == "type1":
        ax.axhline(0.05, color="grey", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("annotators in total")
    ax.set_ylabel("type I error rate" if estimand == "type1" else "power")
    ax.set_ylim(bottom=0)
    ax.set_title("\n".join(textwrap.fill(line, 80) for line in title.splitlines()), fontsize=8.5)
    ax.legend(fontsize=7, loc="best")
    figure.tight_layout()
    return figure


def position_png(curves: pd.DataFrame, estimand: str, current: list[dict], annotators: int, title: str) -> bytes:
    figure = draw_position(curves, estimand, current, annotators, title)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()
