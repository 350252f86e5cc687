"""The results store: one Parquet file per finished chunk, written atomically.

Layout of a results directory::

    manifest.json                 provenance: config, its hash, root seed, versions, git commit
    trials/<design label>/t0000000-0000025-<tests>.parquet
                                  per-trial, per-test, per-pair rows of one chunk

A chunk file appears only complete (written to a temporary name, then
``os.replace``d), so an interrupted run loses at most the chunks in flight,
and a re-run computes only the (trial, test) combinations no file holds yet.
Stored trials are reused only when the model, effect and seed match (the
"results fingerprint") and each analysis label keeps its options; otherwise
the store refuses, so different settings are never mixed in one directory.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import subprocess
import uuid
from importlib import metadata
from pathlib import Path

import pandas as pd

from simdesign.simulation.config import SimulationConfig, stable_digest
from simdesign.core.errors import StoreError

MANIFEST = "manifest.json"
TRIALS_DIR = "trials"
RESULT_COLUMNS = ("design", "trial", "test", "pair", "system_a", "system_b", "true_diff", "estimate", "p_value",
                  "status", "message", "fit_status", "fit_seconds")
TEMPORARY_SUFFIX = ".tmp"
DISTRIBUTION = "simdesign-humeval"  # the import package is simdesign; PyPI's "simdesign" is another project
TRACKED_PACKAGES = (DISTRIBUTION, "numpy", "scipy", "pandas", "statsmodels", "joblib", "pyarrow", "rpy2", "pymer4")


def package_versions(packages=TRACKED_PACKAGES) -> dict:
    """Python's version and those of the installed ``packages`` (missing ones are left out)."""
    versions = {"python": platform.python_version()}
    for package in packages:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return versions


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same directory and rename (atomic on POSIX)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}{TEMPORARY_SUFFIX}")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        if temporary.exists():  # interrupted before the rename: the target was never touched
            temporary.unlink()


class ResultsStore:
    """A results directory (see the module docstring).

    Parameters
    ----------
    directory : str or path-like
    """

    def __init__(self, directory):
        self.directory = Path(directory)

    @property
    def manifest_path(self) -> Path:
        return self.directory / MANIFEST

    def manifest(self) -> dict:
        if not self.manifest_path.is_file():
            raise StoreError(f"{self.directory} is not a simdesign results directory (no {MANIFEST})")
        return json.loads(self.manifest_path.read_text())

    def prepare(self, config: SimulationConfig, raw_config: dict | None = None) -> None:
        """Create or check the manifest for ``config``; refuse incompatible stored trials.

        The manifest stores ``config.to_mapping()``, from which ``simdesign plot``
        and ``replay`` (and :func:`simdesign.api.load_results`) rebuild an equal
        config, however the run was started.

        Parameters
        ----------
        config : SimulationConfig
        raw_config : dict, optional
            Ignored (the mapping as read was stored before configs round-tripped); kept for callers.

        Raises
        ------
        StoreError
            If the directory holds trials of another model, effect or seed, or other options for a test label.
        """
        mapping = config.to_mapping()
        # A killed process can leave a temporary file behind (never a partial chunk): remove them.
        for leftover in self.directory.glob(f"**/.*{TEMPORARY_SUFFIX}"):
            leftover.unlink()
        fingerprint = config.results_fingerprint()
        analyses = config.analysis_fingerprints()
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        if self.manifest_path.is_file():
            manifest = self.manifest()
            if manifest.get("fingerprint") != fingerprint:
                raise StoreError(
                    f"{self.directory} holds trials simulated with a different model, effect or seed "
                    f"(stored {manifest.get('fingerprint')}, this config {fingerprint}); they must not be mixed. "
                    "Write elsewhere with --out DIR, or delete the directory to start over.")
            stored = manifest.get("analyses", {})
            # Likert tests also accept stores written before an option they now have at its default existed.
            accepted = {spec.label: spec.accepted_fingerprints for spec in config.analyses}
            clashes = sorted(label for label, digest in analyses.items()
                             if label in stored and stored[label] not in accepted.get(label, set()) | {digest})
            if clashes:
                raise StoreError(
                    f"{self.directory} holds results for test label(s) {clashes} computed with other options; "
                    "give the changed test a new 'label', or write elsewhere with --out DIR.")
            manifest["analyses"] = {**manifest.get("analyses", {}), **analyses}
            manifest["designs"] = {**manifest.get("designs", {}), **{d.label: d.columns() for d in config.designs}}
            manifest.setdefault("history", []).append({"time": now, "config_hash": stable_digest(mapping),
                                                      "git_commit": git_commit()})
        else:
            manifest = {
                "created": now, "root_seed": config.seed, "fingerprint": fingerprint, "analyses": analyses,
                "designs": {d.label: d.columns() for d in config.designs}, "history": [],
            }
        manifest.update({
            "updated": now, "config_name": config.name, "config_hash": stable_digest(mapping),
            "config": mapping, "versions": package_versions(), "git_commit": git_commit(),
        })
        atomic_write_bytes(self.manifest_path, json.dumps(manifest, indent=2, default=str).encode())

    def _chunk_files(self, design_label: str | None = None) -> list[Path]:
        root = self.directory / TRIALS_DIR
        pattern = f"{design_label}/*.parquet" if design_label else "*/*.parquet"
        return sorted(root.glob(pattern))

    def completed(self, design_label: str) -> dict[str, set[int]]:
        """Test label -> trial indices already stored for one design."""
        done: dict[str, set[int]] = {}
        for path in self._chunk_files(design_label):
            keys = pd.read_parquet(path, columns=["trial", "test"]).drop_duplicates()
            for test, trials in keys.groupby("test")["trial"]:
                done.setdefault(test, set()).update(int(t) for t in trials)
        return done

    def trial_rows(self, design_label: str, trial: int, test_label: str) -> pd.DataFrame:
        """The stored rows of one (design, trial, test), sorted by pair; empty if that trial was never stored."""
        frames = []
        for path in self._chunk_files(design_label):
            # The file name gives the chunk's trial range (write_chunk): read only the chunks that can hold it.
            span = re.match(r"t(\d+)-(\d+)-", path.name)
            if span and not int(span.group(1)) <= trial < int(span.group(2)):
                continue
            frame = pd.read_parquet(path)
            frames.append(frame[(frame["trial"] == trial) & (frame["test"] == test_label)])
        if not frames:
            return pd.DataFrame({column: [] for column in RESULT_COLUMNS})
        return pd.concat(frames, ignore_index=True).sort_values("pair", ignore_index=True)

    def write_chunk(self, design_label: str, first_trial: int, stop_trial: int, tests, frame: pd.DataFrame) -> Path:
        """Store one finished chunk atomically."""
        digest = stable_digest(sorted(tests))[:8]
        path = self.directory / TRIALS_DIR / design_label / f"t{first_trial:07d}-{stop_trial:07d}-{digest}.parquet"
        buffer = frame.to_parquet(index=False)
        atomic_write_bytes(path, buffer)
        return path

    def read_trials(self, designs=None, tests=None, trials: int | None = None) -> pd.DataFrame:
        """All stored per-trial rows, optionally restricted to designs, tests and trial < ``trials``.

        Raises
        ------
        StoreError
            If two chunk files hold the same (design, trial, test): the store is corrupt.
        """
        frames = []
        for design in (designs or [p.name for p in (self.directory / TRIALS_DIR).glob("*") if p.is_dir()]):
            for path in self._chunk_files(design):
                frame = pd.read_parquet(path)
                if tests is not None:
                    frame = frame[frame["test"].isin(list(tests))]
                if trials is not None:
                    frame = frame[frame["trial"] < trials]
                frames.append(frame)
        if not frames:
            return pd.DataFrame({column: [] for column in RESULT_COLUMNS})
        table = pd.concat(frames, ignore_index=True)
        if "method" in table:  # chunks of Likert-only work have no method column (engine.with_method_column)
            table["method"] = table["method"].fillna("likert")
        duplicated = table.duplicated(["design", "trial", "test", "pair"])
        if duplicated.any():
            raise StoreError(f"{self.directory}: {int(duplicated.sum())} stored rows are duplicated; "
                              "the results directory is corrupt")
        return table.sort_values(["design", "test", "trial", "pair"], ignore_index=True)
