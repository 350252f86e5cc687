"""Progress of a long run: a tqdm bar on a terminal, plain lines in a log.

A bar redraws itself many times a second with carriage returns; written to a file or a batch system's log
that is thousands of fragments. When standard error is not a terminal, :func:`progress_bar` returns a
:class:`ProgressLines` instead, which prints one complete line at most every ``PLAIN_INTERVAL`` seconds
and one at the end (the same counts, rate and time left).
"""
from __future__ import annotations

import sys
import time

from tqdm.auto import tqdm

PLAIN_INTERVAL = 30.0  # seconds between plain progress lines


class ProgressLines:
    """The part of tqdm's interface the runs use (``update``, ``close``, a context manager), as log lines."""

    def __init__(self, total: int, desc: str, initial: int = 0, unit: str = "trial", stream=None,
                 interval: float = PLAIN_INTERVAL):
        self.total, self.desc, self.n, self.unit = int(total), desc, int(initial), unit
        self._initial, self._stream, self._interval = int(initial), stream, interval
        self._started = self._last = time.monotonic()
        self._closed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += int(n)
        now = time.monotonic()
        if now - self._last >= self._interval:
            self._last = now
            self._write(now)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.n > self._initial:
                self._write(time.monotonic())

    def line(self, now: float) -> str:
        """``name: 120/1000 trials (12%), 35.0 trials/s, about 25 s left``."""
        done = self.n - self._initial
        elapsed = max(now - self._started, 1e-9)
        rate = done / elapsed
        share = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        left = (self.total - self.n) / rate if rate > 0 and self.total else float("nan")
        remaining = f", about {left:.0f} s left" if left == left and self.n < self.total else ""
        units = plural(self.unit)
        return f"{self.desc}: {self.n}/{self.total} {units}{share}, {rate:.1f} {units}/s{remaining}"

    def _write(self, now: float) -> None:
        print(self.line(now), file=self._stream or sys.stderr, flush=True)


def plural(noun: str) -> str:
    """An English plural of a unit's name, for the progress line.

    >>> plural("trial"), plural("study"), plural("day"), plural("batch")
    ('trials', 'studies', 'days', 'batches')
    """
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def progress_bar(total: int, desc: str, initial: int = 0, enabled: bool = True, unit: str = "trial", stream=None):
    """A progress display for ``total`` units: a tqdm bar on a terminal, plain lines elsewhere, nothing when
    ``enabled`` is false.

    Parameters
    ----------
    total : int
    desc : str
        What is computed (the config's name).
    initial : int
        Units already done (stored trials a resumed run does not recompute).
    enabled : bool
    unit : str
    stream : file, optional
        Where to write (default standard error).

    Returns
    -------
    tqdm.tqdm or ProgressLines
        Either has ``update(n)``, ``close()`` and works as a context manager.

    Examples
    --------
    >>> import io
    >>> bar = progress_bar(10, "demo", stream=io.StringIO())   # not a terminal: plain lines
    >>> bar.update(10); bar.close()
    """
    stream = stream or sys.stderr
    if enabled and not (hasattr(stream, "isatty") and stream.isatty()):
        return ProgressLines(total, desc, initial, unit, stream)
    return tqdm(total=total, initial=initial, unit=unit, desc=desc, disable=not enabled, smoothing=0.05,
                file=stream)
