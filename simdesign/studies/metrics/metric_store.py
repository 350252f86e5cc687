"""Resumable storage of metric-validation trials (:mod:`simdesign.studies.metrics.metric_validation`).

Layout of a results directory::

    manifest.json                       provenance: fingerprint, settings, root seed, versions, git commit
    .lock                               the claim of the run writing it (simdesign.runner.stores)
    trials/S<systems>-D<documents>/t0000000-0000020-<fingerprint>.parquet
                                        per-trial, per-estimand rows of one chunk of one cell

As in the simulation store (:mod:`simdesign.studies.rates.store`), a chunk file
appears only complete (written under a temporary name, then renamed), so an
interrupted run loses at most the chunks in flight, and a re-run computes
only the (cell, trial) pairs that no file holds yet, whatever the chunking or
number of workers of the earlier run. Stored trials are reused only when
everything that determines them (model, population, metrics, sizes per
document, methods, resamples, levels, seed: the fingerprint) is unchanged;
the cells (systems x documents) and the number of trials may change freely.
Each chunk's name carries that fingerprint, and a store reads only chunks of its own; one run at a
time writes a store (:mod:`simdesign.runner.stores`).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from simdesign.core.errors import StoreError
from simdesign.runner.stores import (MANIFEST, atomic_write_bytes, claim_store, damaged_chunk, git_commit, now_utc,
                                     package_versions, read_manifest, refuse_orphan_chunks, release_store,
                                     remove_leftovers, short_fingerprint, write_manifest)
from simdesign.studies.rates.config import stable_digest

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
        self._key: str | None = None  # the fingerprint's digest in chunk names, from the manifest

    def prepare(self, settings: dict, root_seed: int, config: dict | None = None) -> None:
        """Claim the store, create or check the manifest for a run whose trials are determined by ``settings``.

        The claim lasts until :meth:`release` (or the process ends).

        Raises
        ------
        StoreError
            If another run holds the store, it has chunks but no manifest, was written in an older format, or
            holds trials computed with other settings.
        """
        claim_store(self.directory)
        try:
            self._prepare(settings, root_seed, config)
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """Give back the claim :meth:`prepare` took."""
        release_store(self.directory)

    def _prepare(self, settings: dict, root_seed: int, config: dict | None) -> None:
        remove_leftovers(self.directory)
        refuse_orphan_chunks(self.directory, [TRIALS_DIR], "*/*.parquet")
        fingerprint = stable_digest(settings)
        path = self.directory / MANIFEST
        now = now_utc()
        manifest = {"created": now}
        if path.is_file():
            manifest = read_manifest(path)
            if manifest.get("fingerprint") != fingerprint:
                raise StoreError(
                    f"{self.directory} holds metric-validation trials computed with other settings (model, "
                    "population, metrics, methods, resamples, levels or seed); they must not be mixed. "
                    "Write elsewhere with --out DIR, or delete the directory to start over.")
        manifest.update({"kind": "metric-validation", "fingerprint": fingerprint, "root_seed": root_seed,
                         "settings": settings, "config": config, "updated": now, "versions": package_versions(),
                         "git_commit": git_commit()})
        write_manifest(path, manifest)
        self._key = short_fingerprint(fingerprint)

    def _files(self, cell: str) -> list[Path]:
        """The chunk files of one cell made with this store's fingerprint."""
        if self._key is None:
            self._key = short_fingerprint(read_manifest(self.directory / MANIFEST)["fingerprint"])
        return sorted((self.directory / TRIALS_DIR / cell).glob(f"t*-{self._key}.parquet"))

    @staticmethod
    def _read_chunk(path: Path, columns=None) -> pd.DataFrame:
        try:
            return pd.read_parquet(path, columns=columns)
        except Exception as exc:  # pyarrow raises several types for a truncated or foreign file
            raise damaged_chunk(path, exc) from None

    def completed(self, cell: str) -> set[int]:
        """Trial indices already stored for one cell."""
        done: set[int] = set()
        for path in self._files(cell):
            done.update(int(t) for t in self._read_chunk(path, columns=["trial"])["trial"].unique())
        return done

    def write_chunk(self, cell: str, first_trial: int, stop_trial: int, rows: pd.DataFrame) -> Path:
        """Store one finished chunk atomically, its name carrying the store's fingerprint."""
        self._files(cell)  # reads the fingerprint if this store object was not prepared
        path = self.directory / TRIALS_DIR / cell / f"t{first_trial:07d}-{stop_trial:07d}-{self._key}.parquet"
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
                frame = self._read_chunk(path)
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
