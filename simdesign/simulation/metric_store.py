"""Resumable storage of metric-validation trials (:mod:`simdesign.simulation.metric_validation`).

Layout of a results directory::

    manifest.json                       provenance: fingerprint, settings, root seed, versions, git commit
    trials/S<systems>-D<documents>/t0000000-0000020.parquet
                                        per-trial, per-estimand rows of one chunk of one cell

As in the simulation store (:mod:`simdesign.simulation.store`), a chunk file
appears only complete (written under a temporary name, then renamed), so an
interrupted run loses at most the chunks in flight, and a re-run computes
only the (cell, trial) pairs that no file holds yet, whatever the chunking or
number of workers of the earlier run. Stored trials are reused only when
everything that determines them (model, population, metrics, sizes per
document, methods, resamples, levels, seed: the fingerprint) is unchanged;
the cells (systems x documents) and the number of trials may change freely.
"""
from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import pandas as pd

from simdesign.core.errors import StoreError
from simdesign.simulation.config import stable_digest
from simdesign.simulation.store import TEMPORARY_SUFFIX, atomic_write_bytes, git_commit, package_versions

MANIFEST = "manifest.json"
TRIALS_DIR = "trials"
ROW_COLUMNS = ("systems", "documents", "trial", "estimand", "method", "scheme", "value")


class MetricValidationStore:
    """A metric-validation results directory (see the module docstring).

    Parameters
    ----------
    directory : str or path-like
    """

    def __init__(self, directory):
        self.directory = Path(directory)

    def prepare(self, settings: dict, root_seed: int) -> None:
        """Create or check the manifest for a run whose trials are determined by ``settings``.

        Raises
        ------
        StoreError
            If the directory holds trials computed with other settings.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        for leftover in self.directory.glob(f"**/.*{TEMPORARY_SUFFIX}"):  # from a killed process, never a chunk
            leftover.unlink()
        fingerprint = stable_digest(settings)
        path = self.directory / MANIFEST
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        manifest = {"created": now}
        if path.is_file():
            manifest = json.loads(path.read_text())
            if manifest.get("fingerprint") != fingerprint:
                raise StoreError(
                    f"{self.directory} holds metric-validation trials computed with other settings (model, "
                    "population, metrics, methods, resamples, levels or seed); they must not be mixed. "
                    "Write elsewhere with --out DIR, or delete the directory to start over.")
        manifest.update({"kind": "metric-validation", "fingerprint": fingerprint, "root_seed": root_seed,
                         "settings": settings, "updated": now, "versions": package_versions(),
                         "git_commit": git_commit()})
        atomic_write_bytes(path, json.dumps(manifest, indent=2, default=str).encode())

    def _files(self, cell: str) -> list[Path]:
        return sorted((self.directory / TRIALS_DIR / cell).glob("*.parquet"))

    def completed(self, cell: str) -> set[int]:
        """Trial indices already stored for one cell."""
        done: set[int] = set()
        for path in self._files(cell):
            done.update(int(t) for t in pd.read_parquet(path, columns=["trial"])["trial"].unique())
        return done

    def write_chunk(self, cell: str, first_trial: int, stop_trial: int, rows: pd.DataFrame) -> Path:
        """Store one finished chunk atomically."""
        path = self.directory / TRIALS_DIR / cell / f"t{first_trial:07d}-{stop_trial:07d}.parquet"
        atomic_write_bytes(path, rows.to_parquet(index=False))
        return path

    def read(self, cells: list[str], trials: int) -> pd.DataFrame:
        """The stored rows of ``cells`` with trial < ``trials``, sorted by cell (in the given order) and trial.

        Rows of one trial keep the order in which the trial wrote them, so the
        table does not depend on how the trials were chunked.

        Raises
        ------
        StoreError
            If two chunk files hold the same (cell, trial): the store is corrupt.
        """
        frames = []
        for position, cell in enumerate(cells):
            for path in self._files(cell):
                frame = pd.read_parquet(path)
                frame = frame[frame["trial"] < trials].copy()
                frame["_cell"], frame["_row"] = position, range(len(frame))
                frames.append(frame)
        if not frames:
            return pd.DataFrame({column: [] for column in ROW_COLUMNS})
        table = pd.concat(frames, ignore_index=True)
        keys = ["_cell", "trial", "estimand", "method", "scheme"]
        if table.duplicated(keys).any():
            raise StoreError(f"{self.directory}: {int(table.duplicated(keys).sum())} stored rows are duplicated; "
                             "the results directory is corrupt")
        table = table.sort_values(["_cell", "trial", "_row"], kind="stable", ignore_index=True)
        return table[list(ROW_COLUMNS)]
