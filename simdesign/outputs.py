"""What a finished simulation writes and reports: summary.csv, figures, the failure report.

Shared by the Python API (:mod:`simdesign.api`) and the CLI (``run``,
``plot``), so a notebook and a command produce the same files.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

import pandas as pd

from simdesign.core.errors import ConfigError
from simdesign.core.estimands import has_nominal_level, headline_estimand, role_name
from simdesign.studies.rates.config import SimulationConfig, parse_config
from simdesign.methods import get_method
from simdesign.studies.rates.method_specs import DEFAULT_METHODS
from simdesign.studies.rates.store import rate_store

FAILURE_COLUMNS = ("design", "test", "n_failed", "n_tests", "rate", "note", "kind")
# The committed figures' tables ship with the package: simdesign/data/figures is a symbolic link to the
# repository's figures/ (package-data in pyproject.toml copies the CSVs it reaches into a wheel), so the
# shipped tables are the committed ones by construction and cannot drift from them.
SHIPPED_FIGURES = "data/figures"


def figure_estimand(config: SimulationConfig) -> str:
    """The estimand of the main figure: ``figure.estimand``, else type I error under the null, power otherwise."""
    if config.figure.estimand:
        return config.figure.estimand
    if not config.analyses and config.estimands:  # a reliability-only config has no rates to draw
        return config.estimands[0]
    return headline_estimand(config.is_null)


def figure_title(config: SimulationConfig) -> str:
    title = f"{config.name}: model {config.model.name}, effect {config.effect_label}"
    if tuple(config.methods) != DEFAULT_METHODS:  # say which methods, and what in the model generated them
        notes = [note for note in (get_method(m).model_note(config.model) for m in config.methods) if note]
        title += f", {' vs '.join(config.methods)}" + "".join(f" ({note})" for note in notes)
    return title


def figure_estimands(config: SimulationConfig, estimand: str | None = None) -> list[str]:
    """The main estimand first, then each requested reliability estimand (each gets its own figure)."""
    main = estimand or figure_estimand(config)
    return [main] + [extra for extra in config.estimands if extra != main]


def write_figures(config: SimulationConfig, summary: pd.DataFrame, base: Path) -> list[Path]:
    """The figures of a summary as ``base.png``/``.pdf`` (and ``base-<estimand>`` for reliability estimands).

    Beside each figure, ``base.csv`` holds the rows it draws: the columns of
    ``summary.csv``, restricted to the figure's estimand and to the designs on
    its x axis (:func:`simdesign.studies.rates.plots.figure_rows`).
    """
    from simdesign.studies.rates.plots import plot_summary

    paths = []
    for position, estimand in enumerate(figure_estimands(config)):
        out_base = base if position == 0 else base.with_name(f"{base.name}-{estimand}")
        alpha = config.alpha if has_nominal_level(estimand) else None
        paths += plot_summary(summary, config.figure, estimand, figure_title(config), out_base, alpha=alpha,
                              designs={design.label: design for design in config.designs})
    return paths


def write_outputs(config: SimulationConfig, summary: pd.DataFrame, out_dir: Path,
                  figure_base: Path | None = None) -> list[Path]:
    """Write ``summary.csv`` and the figures (each with its table, see :func:`write_figures`) into ``out_dir``.

    Returns the paths written, ``summary.csv`` first.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary_path = out_dir / "summary.csv"
    # Written before the figures so that a figure that cannot be drawn still leaves the summary behind.
    summary.to_csv(summary_path, index=False)
    figures = write_figures(config, summary, figure_base or (out_dir / config.name))
    if any(path.resolve() == summary_path.resolve() for path in figures):
        # A config named 'summary' puts its figure's table on summary.csv: the whole table wins.
        summary.to_csv(summary_path, index=False)
        figures = [path for path in figures if path.resolve() != summary_path.resolve()]
    return [summary_path] + figures


def failure_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The design x test combinations with failed tests (no p-value), one row each.

    ``kind`` is 'partial' (some tests failed), 'undefined' (every test failed
    because the test is undefined for the design, e.g. a block-level test with
    one block: every status is 'degenerate') or 'every' (every test failed
    otherwise: the run says nothing about that combination).
    """
    failures = summary[(summary["estimand"] == role_name("failure_share")) & (summary["n_failed"] > 0)]
    if "method" in failures:  # a rank row is named as the store and `simdesign replay` name it: <test>@rank
        from simdesign.studies.rates.method_specs import result_label
        failures = failures.assign(test=[result_label(test, method)
                                         for test, method in zip(failures["test"], failures["method"])])
    table = failures[list(FAILURE_COLUMNS[:-1])].reset_index(drop=True).copy()
    total = table["rate"] >= 1.0
    undefined = total & table["note"].astype(str).str.fullmatch(r"degenerate: \d+")
    table["kind"] = "partial"
    table.loc[total, "kind"] = "every"
    table.loc[undefined, "kind"] = "undefined"
    return table


def failure_report(summary: pd.DataFrame) -> tuple[str, str | None]:
    """The failure warning (empty when nothing failed) and an error when some design x test failed in every trial.

    Returns
    -------
    warning : str
        Failure counts, the undefined combinations noted; '' when no test failed.
    error : str or None
        Names the combinations where every test failed for another reason.
    """
    table = failure_table(summary)
    if table.empty:
        return "", None
    lines = [f"  {row.design} / {row.test}: {row.n_failed} of {row.n_tests} tests failed ({row.rate:.1%})"
             for row in table.itertuples()]
    warning = ("WARNING: failed tests (no p-value; counted as non-rejections in 'power', excluded in "
               "'power_fitted'; see status/message in the trial files, replay with 'simdesign replay'):\n"
               + "\n".join(lines))
    undefined = table[table["kind"] == "undefined"]
    if not undefined.empty:
        warning += ("\nNOTE: undefined for the design, so every test of it is 'degenerate' (e.g. a block-level test "
                    "with one block): " + ", ".join(f"{r.design} / {r.test}" for r in undefined.itertuples()))
    broken = table[table["kind"] == "every"]
    error = None if broken.empty else (
        "ERROR: every test failed for " + ", ".join(f"{r.design} / {r.test}" for r in broken.itertuples()))
    return warning, error


def config_from_results(out_dir, trials: int | None = None) -> SimulationConfig:
    """The config stored in a results directory's manifest (``trials`` overrides its trial count).

    Raises
    ------
    StoreError
        If ``out_dir`` is not a results directory.
    """
    raw = dict(rate_store(out_dir).manifest()["config"])
    if trials is not None:
        raw["trials"] = trials
    return parse_config(raw)


def shipped_figures_folder() -> Path:
    """The folder of the figure tables shipped with the package (in a checkout: ``figures/`` itself)."""
    return Path(str(resources.files("simdesign").joinpath(SHIPPED_FIGURES)))


def precomputed_curve_names() -> list[str]:
    """The names of the figure tables shipped with the package (``figures/<name>.csv``), sorted."""
    folder = resources.files("simdesign").joinpath(SHIPPED_FIGURES)
    if not folder.is_dir():
        return []
    return sorted(entry.name[:-len(".csv")] for entry in folder.iterdir() if entry.name.endswith(".csv"))


def precomputed_curves(name: str) -> pd.DataFrame:
    """The table of a committed figure: the rows it draws, with the columns of ``summary.csv``.

    Parameters
    ----------
    name : str
        The figure's name, e.g. ``'paper_fig4_coherence'`` (``figures/<name>.csv``);
        :func:`precomputed_curve_names` lists them.

    Returns
    -------
    pandas.DataFrame
        One row per design x test of the figure: design sizes (``blocks``,
        ``annotators``, ``judgements``...), ``test``, ``estimand``, ``rate``
        with ``ci_low``, ``ci_high``, ``mcse`` and ``trials``.

    Raises
    ------
    ConfigError
        If no figure of that name is shipped (the message lists those that are).

    Examples
    --------
    >>> curves = precomputed_curves("paper_fig4_coherence")
    >>> sorted(set(curves["test"]))
    ['art', 'art_doc', 'ttest', 'ttest_doc']
    """
    names = precomputed_curve_names()
    if name not in names:
        raise ConfigError(f"No precomputed curves named {name!r}; shipped: {', '.join(names) or 'none'}")
    with resources.files("simdesign").joinpath(SHIPPED_FIGURES).joinpath(f"{name}.csv").open("rb") as handle:
        return pd.read_csv(handle)
