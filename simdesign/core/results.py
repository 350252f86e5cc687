"""One protocol for every result: simulations, plans and analyses of real studies alike (issue 40).

Every result simdesign returns derives from :class:`Result` and answers the same calls:

``summary()``
    Every number, as a pandas DataFrame (the one method a result must define).
``table(**options)``
    A readable DataFrame (default: the summary, rounded).
``plot(path=None)``
    The result's figure: a matplotlib Figure without ``path``; with it, the files written (a list of paths).
    A result without a figure raises :class:`NoFigureError`, naming its class.
``save(directory)``
    Writes the result's files into ``directory`` and returns ``{name: path}`` of every file written.
``_repr_html_()`` and ``repr()``
    The table as HTML in a notebook; one short line otherwise.

This module is layer 0 (pandas and numpy only); matplotlib is imported only when a figure is written.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

# Suffixes a figure path may carry; any other path is a stem and gets FIGURE_SUFFIX.
FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg")
FIGURE_SUFFIX = ".png"
TABLE_DIGITS = 3


class NoFigureError(NotImplementedError):
    """A result that has nothing to draw was asked for its figure.

    Attributes
    ----------
    args : tuple
        The message: names the result's class and where its numbers are instead.

    Examples
    --------
    >>> simdesign.reliability("study.csv").plot()        # doctest: +SKIP
    Traceback (most recent call last):
    simdesign.core.results.NoFigureError: Reliability has no figure to draw; ...
    """


class Result:
    """Base of every result: the protocol above and sensible defaults.

    A subclass defines :meth:`summary` and, when it has a figure, :meth:`figure` (a matplotlib Figure). It may
    override :meth:`table`, :meth:`save` and the parts of its ``repr`` (:meth:`_what`, :meth:`_size`, the
    ``out_dir`` attribute for where it is stored).

    Attributes
    ----------
    out_dir : Path or None
        Where the result is stored, when a subclass records it (shown by ``repr``); results in memory have
        none.

    Examples
    --------
    >>> result = simdesign.analyse("study.csv", bootstrap=200)       # doctest: +SKIP
    >>> result.summary(); result.table(); result.save("out")          # doctest: +SKIP
    """

    def summary(self) -> pd.DataFrame:
        """Every number of the result, one row per unit (design x test, system, candidate...)."""
        raise NotImplementedError(f"{type(self).__name__} does not define summary()")

    def table(self, digits: int = TABLE_DIGITS, **options) -> pd.DataFrame:
        """A readable copy of :meth:`summary`: numbers rounded to ``digits`` decimals.

        Parameters
        ----------
        digits : int
            Decimals shown.
        **options
            Passed to :meth:`summary` (e.g. ``alpha`` for a simulation).
        """
        return rounded(self.summary(**options), digits)

    def figure(self, **options):
        """The result's matplotlib Figure; :class:`NoFigureError` for a result without one."""
        raise NoFigureError(f"{type(self).__name__} has no figure to draw; its numbers are in summary() and "
                            f"table(), its files in save(directory)")

    def plot(self, path=None, **options):
        """Draw the result's figure.

        Parameters
        ----------
        path : str or path-like, optional
            Where to write it: a path ending in .png, .pdf or .svg is written as is; any other is a stem and
            gets ``.png``. Without it nothing is written.
        **options
            Passed to :meth:`figure`.

        Returns
        -------
        matplotlib.figure.Figure or list of Path
            The Figure without ``path`` (drawn without pyplot; Jupyter shows it after ``%matplotlib inline``);
            the files written with it.

        Raises
        ------
        NoFigureError
            The result has nothing to draw.
        """
        figure = self.figure(**options)
        return figure if path is None else [write_figure(figure, path)]

    def save(self, directory) -> dict:
        """Write ``summary.csv`` and, when the result has one, ``figure.png`` into ``directory`` (created).

        Returns
        -------
        dict
            Name -> Path of every file written.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        paths = {"summary": directory / "summary.csv"}
        self.summary().to_csv(paths["summary"], index=False)
        try:
            figure = self.figure()
        except NoFigureError:
            return paths
        paths["figure"] = write_figure(figure, directory / "figure.png")
        return paths

    def _what(self) -> str:
        """What the result is, in a few words (for ``repr``)."""
        return ""

    def _size(self) -> str:
        """How big the result is (for ``repr``); default the summary's rows."""
        return f"{len(self.summary())} summary rows"

    def __repr__(self) -> str:
        out_dir = getattr(self, "out_dir", None)
        where = f"stored in {out_dir}" if out_dir else "in memory"
        what = self._what()
        return f"<{type(self).__name__}{' ' + what if what else ''}: {self._size()}, {where}>"

    def _repr_html_(self) -> str:
        return self.table().to_html(index=False)


def rounded(frame: pd.DataFrame, digits: int = TABLE_DIGITS) -> pd.DataFrame:
    """A copy of ``frame`` with its float columns rounded to ``digits`` decimals."""
    if not isinstance(digits, (int, np.integer)) or isinstance(digits, bool) or digits < 0:
        raise ValueError(f"digits must be a non-negative integer; got {digits!r}")
    return frame.round(int(digits))  # numeric columns only; text columns kept as they are


def figure_path(path) -> Path:
    """``path`` as a figure file: kept when it ends in a figure suffix, else ``path`` + ``.png``."""
    path = Path(path)
    return path if path.suffix.lower() in FIGURE_SUFFIXES else path.with_name(path.name + FIGURE_SUFFIX)


def write_figure(figure, path) -> Path:
    """Write a matplotlib Figure to :func:`figure_path` of ``path`` (its folder created); returns the path."""
    target = figure_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=150)
    return target


def files_by_name(paths) -> dict:
    """Paths written, as ``{name: path}``: ``summary.csv`` under ``summary``, every other file under its name."""
    return {("summary" if Path(path).name == "summary.csv" else Path(path).name): Path(path) for path in paths}


def figure_of_files(draw):
    """A matplotlib Figure showing the first image ``draw(base)`` writes (into a temporary folder, removed).

    For results whose figures are drawn straight to files (a study kind's, a plan's): ``plot()`` without a path
    still returns a Figure, as every result's does.
    """
    import tempfile

    from matplotlib.figure import Figure
    from matplotlib.image import imread

    with tempfile.TemporaryDirectory(prefix="simdesign-figure-") as folder:
        images = [path for path in draw(Path(folder) / "figure") if Path(path).suffix.lower() == ".png"]
        if not images:
            raise NoFigureError("the figure was drawn without a .png image to show")
        image = imread(images[0])
    height, width = image.shape[:2]
    figure = Figure(figsize=(width / 150, height / 150), dpi=150)
    axis = figure.add_axes((0, 0, 1, 1))
    axis.imshow(image)
    axis.set_axis_off()
    return figure


class LegacyTable(pd.DataFrame):
    """A result's rows under the old attribute spelling ``result.table`` (a DataFrame before issue 40).

    It is the rows, so ``result.table["system"]`` keeps working for one release (with a FutureWarning), and,
    called, the result's readable table: ``result.table()`` is the protocol's method.
    """

    _metadata = ["_reader"]

    @property
    def _constructor(self):
        return pd.DataFrame  # anything derived from the rows is a plain DataFrame

    def __call__(self, *args, **options) -> pd.DataFrame:
        return self._reader(*args, **options)

    def __getitem__(self, key):
        # the old spelling's commonest use; other DataFrame methods keep working silently for the release
        warnings.warn("result.table is a method since issue 40: call result.table() for the readable table, or "
                      "read the rows as analysis.systems or plan.candidates; indexing result.table will stop "
                      "working in the next release", FutureWarning, stacklevel=2)
        return super().__getitem__(key)


def legacy_table(rows: pd.DataFrame, reader) -> LegacyTable:
    """``rows`` under a result's old ``table`` attribute: a DataFrame that, called, is ``reader(...)`` (the
    result's readable table)."""
    frame = LegacyTable(rows)
    frame._reader = reader
    return frame
