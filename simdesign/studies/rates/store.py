"""The results store of rate studies: one Parquet file per finished chunk, written atomically.

Layout of a results directory::

    manifest.json                 provenance: config, its fingerprint, root seed, versions, git commit
    .lock                         the claim of the run writing it (simdesign.runner.stores)
    trials/<design label>/t0000000-0000025-<fingerprint>-<tests>.parquet
                                  per-trial, per-test, per-pair rows of one chunk

A chunk file appears only complete (written to a temporary name, then
``os.replace``d), so an interrupted run loses at most the chunks in flight,
and a re-run computes only the (trial, test) combinations no file holds yet.
Stored trials are reused only when the model, effect and seed match (the
"results fingerprint") and each analysis label keeps its options; otherwise
the store refuses, so different settings are never mixed in one directory.
Each chunk carries that fingerprint (its digest in the file name, and the
fingerprints of its tests in the file's metadata), and a store reads only
chunks of its own; one run at a time writes a store (:mod:`simdesign.runner.stores`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from simdesign.core.errors import StoreError
from simdesign.runner.stores import (DISTRIBUTION, MANIFEST, TEMPORARY_SUFFIX, TRACKED_PACKAGES,  # noqa: F401
                                     atomic_write_bytes, claim_store, damaged_chunk, git_commit, now_utc,
                                     package_versions, read_manifest, refuse_orphan_chunks, release_store,
                                     remove_leftovers, short_fingerprint, write_manifest)
from simdesign.studies.rates.config import SimulationConfig, stable_digest
from simdesign.studies.rates.method_specs import DEFAULT_METHODS

TRIALS_DIR = "trials"
RESULT_COLUMNS = ("design", "trial", "test", "pair", "system_a", "system_b", "true_diff", "estimate", "p_value",
                  "status", "message", "fit_status", "fit_seconds")
CHUNK_METADATA = b"simdesign"  # the Parquet key-value metadata holding a chunk's fingerprints


class ResultsStore:
    """A results directory (see the module docstring).

    Parameters
    ----------
    directory : str or path-like
    """

    def __init__(self, directory):
        self.directory = Path(directory)
        self._manifest: dict | None = None

    @property
    def manifest_path(self) -> Path:
        return self.directory / MANIFEST

    def manifest(self) -> dict:
        """The manifest (read once; damaged, missing or old-format manifests raise StoreError)."""
        if self._manifest is None:
            self._manifest = read_manifest(self.manifest_path)
        return self._manifest

    def prepare(self, config: SimulationConfig, raw_config: dict | None = None) -> None:
        """Claim the store for this process, create or check the manifest for ``config``; refuse incompatible
        stored trials.

        The manifest stores ``config.to_mapping()``, from which ``simdesign plot``
        and ``replay`` (and :func:`simdesign.api.load_results`) rebuild an equal
        config, however the run was started. The claim lasts until :meth:`release`
        (or the process ends).

        Parameters
        ----------
        config : SimulationConfig
        raw_config : dict, optional
            Ignored (the mapping as read was stored before configs round-tripped); kept for callers.

        Raises
        ------
        StoreError
            If another run holds the store, the directory has chunks but no manifest, was written in an
            older format, or holds trials of another model, effect or seed, or other options for a test label.
        """
        claim_store(self.directory)
        try:
            self._prepare(config)
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """Give back the claim :meth:`prepare` took."""
        release_store(self.directory)

    def _clash_message(self, clashes: list, config: SimulationConfig) -> str:
        """Why stored results of these labels cannot be resumed: the options, or the model's rank generator."""
        from simdesign.methods import get_method
        from simdesign.studies.rates.method_specs import spec_method

        ranked = {spec.label for spec in config.work_specs if not get_method(spec_method(spec)).is_default}
        rank_clashes = [label for label in clashes if label in ranked]
        parts = []
        if rank_clashes:
            # a rank result's fingerprint holds the model's rank_noise: a changed rank_noise is the usual cause
            parts.append(f"rank result(s) {rank_clashes} were computed with another 'rank_noise' of the model "
                         f"(now {getattr(config.model, 'rank_noise', None)!r}) or other test options: give the "
                         "model its stored rank_noise")
        others = [label for label in clashes if label not in ranked]
        if others:
            parts.append(f"test label(s) {others} were computed with other options: give the changed test a new "
                         "'label'")
        return f"{self.directory} holds results that this config would mix with others: {'; '.join(parts)}; " \
               "or write elsewhere with --out DIR."

    def _prepare(self, config: SimulationConfig) -> None:
        mapping = config.to_mapping()
        remove_leftovers(self.directory)
        refuse_orphan_chunks(self.directory, [TRIALS_DIR], "*/*.parquet")
        fingerprint = config.results_fingerprint()
        analyses = config.analysis_fingerprints()
        now = now_utc()
        self._manifest = None
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
                raise StoreError(self._clash_message(clashes, config))
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
        write_manifest(self.manifest_path, manifest)
        self._manifest = None

    def run_key(self) -> str:
        """The digest of the manifest's results fingerprint that this store's chunk names carry."""
        return short_fingerprint(self.manifest().get("fingerprint"))

    def chunk_files(self, design_label: str | None = None) -> list[Path]:
        """The chunk files of this store's own fingerprint (optionally of one design), sorted."""
        root = self.directory / TRIALS_DIR
        if not root.is_dir():
            return []
        pattern = f"t*-{self.run_key()}-*.parquet"
        return sorted(root.glob(f"{design_label}/{pattern}" if design_label else f"*/{pattern}"))

    def _read_chunk(self, path: Path, columns=None) -> pd.DataFrame | None:
        """A chunk's rows, or None if its tests were computed with options other than the manifest's."""
        try:
            table = pq.read_table(path, columns=columns)
        except (OSError, pa.ArrowException) as exc:
            raise damaged_chunk(path, exc) from None
        metadata = (table.schema.metadata or {}).get(CHUNK_METADATA)
        if metadata is None:
            raise damaged_chunk(path, ValueError("no simdesign fingerprint in its metadata"))
        own = self.manifest().get("analyses", {})
        if any(own.get(label, "") != digest for label, digest in json.loads(metadata)["analyses"].items()):
            return None
        return table.to_pandas()

    def completed(self, design_label: str) -> dict[str, set[int]]:
        """Test label -> trial indices already stored for one design."""
        done: dict[str, set[int]] = {}
        for path in self.chunk_files(design_label):
            keys = self._read_chunk(path, columns=["trial", "test"])
            if keys is None:
                continue
            for test, trials in keys.drop_duplicates().groupby("test")["trial"]:
                done.setdefault(test, set()).update(int(t) for t in trials)
        return done

    def trial_rows(self, design_label: str, trial: int, test_label: str) -> pd.DataFrame:
        """The stored rows of one (design, trial, test), sorted by pair; empty if that trial was never stored."""
        frames = []
        for path in self.chunk_files(design_label):
            # The file name gives the chunk's trial range (write_chunk): read only the chunks that can hold it.
            span = re.match(r"t(\d+)-(\d+)-", path.name)
            if span and not int(span.group(1)) <= trial < int(span.group(2)):
                continue
            frame = self._read_chunk(path)
            if frame is not None:
                frames.append(frame[(frame["trial"] == trial) & (frame["test"] == test_label)])
        if not frames:
            return pd.DataFrame({column: [] for column in RESULT_COLUMNS})
        return pd.concat(frames, ignore_index=True).sort_values("pair", ignore_index=True)

    def write_chunk(self, design_label: str, first_trial: int, stop_trial: int, tests, frame: pd.DataFrame) -> Path:
        """Store one finished chunk atomically, named and stamped with the fingerprints of what made it."""
        stored = self.manifest().get("analyses", {})
        analyses = {label: stored.get(label, "") for label in sorted(tests)}
        name = (f"t{first_trial:07d}-{stop_trial:07d}-{self.run_key()}-"
                f"{stable_digest(analyses)[:8]}.parquet")
        table = pa.Table.from_pandas(frame, preserve_index=False)
        metadata = {**(table.schema.metadata or {}), CHUNK_METADATA: json.dumps(
            {"fingerprint": self.manifest().get("fingerprint"), "design": design_label,
             "analyses": analyses}, default=str).encode()}
        sink = pa.BufferOutputStream()
        pq.write_table(table.replace_schema_metadata(metadata), sink)
        path = self.directory / TRIALS_DIR / design_label / name
        atomic_write_bytes(path, sink.getvalue().to_pybytes())
        return path

    def read_trials(self, designs=None, tests=None, trials: int | None = None) -> pd.DataFrame:
        """All stored per-trial rows of this store's fingerprint, optionally restricted to designs, tests and
        trial < ``trials``.

        Raises
        ------
        StoreError
            If two chunk files hold the same (design, trial, test): the store is corrupt; or a chunk is damaged.
        """
        frames = []
        for design in (designs or [p.name for p in (self.directory / TRIALS_DIR).glob("*") if p.is_dir()]):
            for path in self.chunk_files(design):
                frame = self._read_chunk(path)
                if frame is None:
                    continue
                if tests is not None:
                    frame = frame[frame["test"].isin(list(tests))]
                if trials is not None:
                    frame = frame[frame["trial"] < trials]
                frames.append(frame)
        if not frames:
            return pd.DataFrame({column: [] for column in RESULT_COLUMNS})
        table = pd.concat(frames, ignore_index=True)
        if "method" in table:  # chunks of Likert-only work have no method column (engine.with_method_column)
            table["method"] = table["method"].fillna(DEFAULT_METHODS[0])
        duplicated = table.duplicated(["design", "trial", "test", "pair"])
        if duplicated.any():
            raise StoreError(f"{self.directory}: {int(duplicated.sum())} stored rows are duplicated; "
                              "the results directory is corrupt")
        return table.sort_values(["design", "test", "trial", "pair"], ignore_index=True)
