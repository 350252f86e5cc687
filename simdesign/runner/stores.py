"""The one results store of every study kind (:class:`Store`): one writer at a time, a format version, named
damage, atomic files.

Every study kind's store (rates, metric validation, panel studies, the generic runner's kinds, a sweep's
manifest) is a :class:`Store`: a directory holding a ``manifest.json`` (what made the stored trials, their
fingerprint) and chunk files (a finished chunk of trials each). Each kind keeps the on-disk format it had
(file names, manifest fields, chunk metadata), given as a :class:`StoreFormat`; what the kind writes in
its manifest is a :class:`ManifestRequest`. Four rules keep two settings from ever being mixed in one
directory:

* **One writer.** A run claims its store with an OS lock (``fcntl.flock`` on ``.lock``), which the
  kernel releases when the process ends however it ends, so a killed run can be resumed at once. A
  second run into a claimed store is refused naming the holder's pid, host and start time.
* **A format.** Manifests carry :data:`STORE_FORMAT`; a store written before chunks carried their
  fingerprint is refused with one message that says to re-run, never adopted.
* **No manifest, no adoption.** A directory holding chunk files but no manifest cannot tell what made
  them: it is refused.
* **Chunks carry their fingerprint** (in their file names, each kind's store decides how), and a run
  reads only chunks with its own.

Damaged files (a truncated manifest, an unreadable chunk) raise a one-line StoreError naming the file
and how to recover.
"""
from __future__ import annotations

import datetime as _dt
import errno
import fcntl
import glob
import hashlib
import json
import os
import platform
import re
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Callable

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from simdesign.core.errors import StoreError
from simdesign.core.seeds import GENERATOR_VERSION
from simdesign.core.version import DISTRIBUTION

MANIFEST = "manifest.json"
LOCK_FILE = ".lock"
TEMPORARY_SUFFIX = ".tmp"
# Version 2: chunk files carry the fingerprint of what made them, and a run claims its store (issue 27).
STORE_FORMAT = 2
FINGERPRINT_CHARS = 12  # of a sha256 in chunk names: a chance clash needs ~10^7 configs in one directory
TRACKED_PACKAGES = (DISTRIBUTION, "numpy", "scipy", "pandas", "statsmodels", "joblib", "pyarrow", "rpy2", "pymer4")

# Store directory (resolved) -> [open lock file descriptor, claims held]: claims are re-entrant within a process.
_CLAIMS: dict[Path, list] = {}


def digest(obj) -> str:
    """sha256 of a canonical JSON form (stable across runs and machines)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def short_fingerprint(fingerprint) -> str:
    """The part of a fingerprint's digest that chunk file names carry, with the generator's version.

    The version is part of every chunk's name, so a chunk drawn by another generator is never read as one
    of this run's, whichever study kind's store holds it.
    """
    return digest({"fingerprint": fingerprint, "generator_version": GENERATOR_VERSION})[:FINGERPRINT_CHARS]


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


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


def _holder(lock_path: Path) -> str:
    """Who holds a claimed store, from what the holder wrote into the lock file."""
    for _ in range(20):  # the holder writes its name right after taking the lock: give it a moment
        try:
            holder = json.loads(lock_path.read_text() or "null")
        except (OSError, ValueError):
            holder = None
        if isinstance(holder, dict):
            return f"pid {holder.get('pid')} on host {holder.get('host')}, started {holder.get('started')}"
        time.sleep(0.05)
    return "a process that did not say who it is"


def claim_store(directory) -> None:
    """Claim ``directory`` for this process's run (re-entrant); refuse it if another process holds it.

    The claim is an exclusive ``flock`` on ``directory/.lock``: the kernel drops it when the process
    ends, however it ends, so a killed run can be resumed at once. Release it with :func:`release_store`.

    Raises
    ------
    StoreError
        If another process holds the store, naming its pid, host and start time.
    """
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise StoreError(f"The results directory {directory} is a file; give a directory with --out DIR")
    directory.mkdir(parents=True, exist_ok=True)
    key = directory.resolve()
    if key in _CLAIMS:
        _CLAIMS[key][1] += 1
        return
    lock_path = directory / LOCK_FILE
    descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(descriptor)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise StoreError(f"Cannot lock the results directory {directory} ({exc.strerror})") from exc
        raise StoreError(f"The results directory {directory} is in use by another run: {_holder(lock_path)}; "
                         "wait for it to finish, or write elsewhere with --out DIR") from None
    os.ftruncate(descriptor, 0)
    os.write(descriptor, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                     "started": now_utc()}).encode())
    _CLAIMS[key] = [descriptor, 1]


def release_store(directory) -> None:
    """Give back one claim of :func:`claim_store`; the lock is dropped with the last one."""
    key = Path(directory).resolve()
    claim = _CLAIMS.get(key)
    if claim is None:
        return
    claim[1] -= 1
    if claim[1] == 0:
        del _CLAIMS[key]
        os.close(claim[0])  # closing the descriptor drops the flock


def release_stores_under(directory) -> None:
    """Give back every claim on ``directory`` and the stores inside it (a plan's studies, a sweep's runs)."""
    root = Path(directory).resolve()
    for key in [key for key in _CLAIMS if key == root or root in key.parents]:
        os.close(_CLAIMS.pop(key)[0])


def holds_claim(directory) -> bool:
    """Whether this process has claimed ``directory``."""
    return Path(directory).resolve() in _CLAIMS


def remove_leftovers(directory: Path) -> None:
    """Remove the temporary files a killed writer can leave behind (never a partial chunk)."""
    for leftover in Path(directory).glob(f"**/.*{TEMPORARY_SUFFIX}"):
        leftover.unlink(missing_ok=True)


def read_manifest(path: Path) -> dict:
    """A store's manifest, refusing one that is damaged or of an older format, naming the file.

    Raises
    ------
    StoreError
        The file is missing, cannot be parsed (truncated, empty), or was written in an older format.
    """
    path = Path(path)
    if not path.is_file():
        raise StoreError(f"{path.parent} is not a simdesign results directory (no {path.name})")
    try:
        manifest = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise StoreError(f"{path} is damaged (not readable JSON: {exc}); the stored trials cannot be identified "
                         f"without it: delete {path.parent} (or write elsewhere with --out DIR) and run again") \
            from None
    if not isinstance(manifest, dict):
        raise StoreError(f"{path} is damaged (not a JSON mapping); delete {path.parent} (or write elsewhere with "
                         "--out DIR) and run again")
    if manifest.get("store_format") != STORE_FORMAT:
        raise StoreError(f"{path.parent} was written by an older simdesign (store format "
                         f"{manifest.get('store_format', 1)}, now {STORE_FORMAT}: chunks now carry the fingerprint "
                         "of what made them); it cannot be resumed or read: re-run into a new directory (delete it "
                         "or give another --out)")
    stored = manifest.get("generator_version", 1)
    if stored != GENERATOR_VERSION:
        raise StoreError(f"{path.parent} was drawn by simdesign's generator version {stored}, and this simdesign "
                         f"has generator version {GENERATOR_VERSION}: the same seeds now draw other studies, so its "
                         "trials cannot be resumed or mixed with new ones; re-run into a new directory (delete it "
                         "or give another --out)")
    return manifest


def refuse_orphan_chunks(directory: Path, chunk_dirs, pattern: str) -> None:
    """Refuse a directory that holds chunk files but no manifest: what made them cannot be told.

    Raises
    ------
    StoreError
    """
    directory = Path(directory)
    if (directory / MANIFEST).is_file():
        return
    for chunk_dir in chunk_dirs:
        found = next((directory / chunk_dir).glob(pattern), None)
        if found is not None:
            raise StoreError(f"{directory} holds chunk files (e.g. {found.relative_to(directory)}) but no {MANIFEST}: "
                             "what made them cannot be told, so they are never adopted; delete the directory or "
                             "write elsewhere with --out DIR")


def damaged_chunk(path: Path, exc: BaseException) -> StoreError:
    """The one-line error of a chunk file that cannot be read, with how to recover."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreError(f"The chunk file {path} is damaged ({reason[:120]}); delete it and run the same command "
                      "again to recompute it")


def write_manifest(path: Path, manifest: dict) -> None:
    """Write a manifest atomically, stamped with :data:`STORE_FORMAT` and the generator's version."""
    manifest = {**manifest, "store_format": STORE_FORMAT, "generator_version": GENERATOR_VERSION}
    atomic_write_bytes(Path(path), json.dumps(manifest, indent=2, default=str).encode())


# ----------------------------------------------------------------------------------------------------------------
# The one store class


@dataclass(frozen=True)
class ManifestRequest:
    """What a run asks of its store's manifest (a study kind's :attr:`StoreFormat.describe` builds it).

    Attributes
    ----------
    fingerprint : JSON-able
        The manifest's ``fingerprint``: everything the stored rows depend on (its digest names the chunks).
    fields : dict or callable
        The manifest's other fields, or a function of the manifest already stored (None for a new store)
        returning them; fields it does not return are kept.
    mismatch : callable, optional
        ``mismatch(directory, stored_manifest)``: the message refusing a store of another fingerprint.
    parts : dict, optional
        Part label (a rate study's test) -> its own fingerprint, merged into the manifest's
        :attr:`StoreFormat.parts_field`; a stored part of another fingerprint is refused.
    accepted : dict, optional
        Part label -> stored fingerprints it may also resume from (older defaults of its options).
    parts_clash : callable, optional
        ``parts_clash(directory, labels)``: the message refusing parts of other fingerprints.
    kind : str, optional
        The manifest's ``kind`` a stored manifest must have (default: the format's).
    """

    fingerprint: object
    fields: object = None
    mismatch: Callable | None = None
    parts: dict | None = None
    accepted: dict | None = None
    parts_clash: Callable | None = None
    kind: str | None = None


def _trial_store_request(kind: str, fingerprint, config: dict | None = None) -> ManifestRequest:
    """The generic runner's manifest (``Store.prepare(kind, fingerprint, config)``): the fingerprint's digest,
    its settings, and the latest run's config (its trial count), from which ``simdesign plot`` redraws it."""
    def fields(stored):
        return {"kind": kind, "fingerprint": digest(fingerprint), "settings": fingerprint, "config": config,
                "updated": now_utc(), "versions": package_versions()}

    def mismatch(directory, stored):
        return (f"{directory} holds trials of another {stored.get('kind')} config; they must not be mixed: write "
                "elsewhere with --out DIR, or delete the directory")

    return ManifestRequest(digest(fingerprint), fields, mismatch, kind=kind)


@dataclass(frozen=True)
class StoreFormat:
    """A study kind's on-disk format, as :class:`Store` writes and reads it (each kind keeps the one it had).

    Chunk files are ``<folder>/<cell>/t<first>-<stop>-<key>[-<parts>].<file_type>`` (``cell_folders``) or
    ``<folder>/<cell>-<first>-<stop>-<key>.<file_type>``, with ``digits`` digits per trial index and ``key``
    the fingerprint's digest (:func:`short_fingerprint`).

    Attributes
    ----------
    kind : str or None
        The manifest's ``kind`` (None: rate studies, whose manifests never had one); a store of another
        kind is refused.
    folders : tuple of str
        The folders holding chunk files (the first is the default one).
    cell_folders : bool
    digits : int
    file_type : {'parquet', 'csv'}
    part_column : str or None
        The column naming a row's part (a rate study's 'test'): chunks then carry the fingerprints of their
        parts in their Parquet metadata (and a digest of them in their names), and a chunk whose parts
        have other fingerprints than the manifest's is not read.
    parts_field : str
        The manifest's and the chunk metadata's field of the parts' fingerprints.
    metadata_cell : str
        The chunk metadata's field naming the cell.
    unique : tuple of str or None
        Columns identifying a stored row; two rows alike are a corrupt store. Chunks of a format without
        parts are also checked not to overlap (a trial of a cell in two files).
    order : tuple of str or None
        Columns the rows read are sorted by (default: by cell, in the order asked, then trial, stably:
        rows of one trial keep the order in which it wrote them); 'files': as the chunk files sort.
    columns : tuple of str
        Those of the empty table read from a store without rows.
    defaults : dict
        Column -> value filled in rows of chunks written before the column existed.
    describe : callable or None
        ``describe(*what)`` -> :class:`ManifestRequest`: what :meth:`Store.prepare` takes for this kind
        (default: ``(kind, fingerprint, config)``, the generic runner's).
    """

    kind: str | None = None
    folders: tuple = ("trials",)
    cell_folders: bool = True
    digits: int = 7
    file_type: str = "parquet"
    part_column: str | None = None
    parts_field: str = "analyses"
    metadata_cell: str = "cell"
    unique: tuple | None = None
    order: tuple | str | None = None
    columns: tuple = ("cell", "trial")
    defaults: dict = field(default_factory=dict)
    describe: Callable | None = None

    def with_defaults(self, rows: pd.DataFrame) -> pd.DataFrame:
        """``rows`` with :attr:`defaults` filled where their columns are missing values (in place, returned): as
        rows are read back, whether from a store or recomputed (a replay)."""
        for column, value in self.defaults.items():
            if column in rows:
                rows[column] = rows[column].fillna(value)
        return rows


TRIALS_DIR = "trials"
TRIAL_CHUNKS = StoreFormat(folders=(TRIALS_DIR,))
"""The generic runner's format: ``trials/<cell>/t<first>-<stop>-<key>.parquet`` (any registered kind)."""
CHUNK_METADATA = b"simdesign"  # the Parquet key-value metadata holding a chunk's fingerprints


class Store:
    """A study's results directory: manifest, claim, fingerprinted chunks, resume and replay, for every kind.

    Parameters
    ----------
    directory : path-like
    format : StoreFormat
        The kind's on-disk format (default: the generic runner's :data:`TRIAL_CHUNKS`).

    Notes
    -----
    A run :meth:`prepare`\\ s the store (claims it, checks or creates its manifest), writes each finished
    chunk with :meth:`write_chunk` and :meth:`release`\\ s it; :meth:`completed` tells which trials it
    holds (a resumed run computes only the others) and :meth:`read` returns the rows, sorted and checked for
    duplicates; :meth:`trial_rows` gives one stored trial (``simdesign replay``). A store object that was
    not prepared reads the fingerprint its chunk names carry from the manifest.
    """

    def __init__(self, directory, format: StoreFormat = TRIAL_CHUNKS):
        self.directory = Path(directory)
        self.format = format
        self._manifest: dict | None = None

    def __repr__(self) -> str:
        return f"Store({str(self.directory)!r}, kind={self.format.kind!r})"

    # -- manifest and claim
    @property
    def manifest_path(self) -> Path:
        return self.directory / MANIFEST

    def manifest(self) -> dict:
        """The manifest (read once; damaged, missing or old-format manifests raise StoreError)."""
        if self._manifest is None:
            self._manifest = read_manifest(self.manifest_path)
        return self._manifest

    @property
    def key(self) -> str:
        """The digest of the manifest's fingerprint that this store's chunk names carry."""
        return short_fingerprint(self.manifest().get("fingerprint"))

    def claim(self) -> None:
        """Claim the directory for this process's run (:func:`claim_store`); :meth:`release` gives it back."""
        claim_store(self.directory)

    def release(self) -> None:
        """Give back the claim :meth:`prepare` or :meth:`claim` took."""
        release_store(self.directory)

    def write_manifest(self, manifest: dict) -> None:
        """Write the manifest atomically (stamped with the store format and generator version)."""
        write_manifest(self.manifest_path, manifest)
        self._manifest = None

    def _request(self, what) -> ManifestRequest:
        if len(what) == 1 and isinstance(what[0], ManifestRequest):
            return what[0]
        return (self.format.describe or _trial_store_request)(*what)

    def prepare(self, *what) -> None:
        """Claim the store and create or check its manifest for a run (released by :meth:`release`).

        Parameters
        ----------
        *what
            What the kind's :attr:`StoreFormat.describe` takes (the generic runner's: ``kind, fingerprint,
            config``), or a :class:`ManifestRequest`.

        Raises
        ------
        StoreError
            Another run holds the store; it has chunks but no manifest, an older format, another kind, another
            fingerprint, or parts of other fingerprints.
        """
        request = self._request(what)
        self.claim()
        try:
            remove_leftovers(self.directory)
            refuse_orphan_chunks(self.directory, self._chunk_roots(),
                                 f"*/*.{self.format.file_type}" if self.format.cell_folders
                                 else f"*.{self.format.file_type}")
            self._manifest = None
            stored = self._checked_manifest(request) if self.manifest_path.is_file() else None
            fields = request.fields(stored) if callable(request.fields) else dict(request.fields or {})
            manifest = {**(stored or {}), **fields}
            if request.parts is not None:
                manifest[self.format.parts_field] = {**manifest.get(self.format.parts_field, {}), **request.parts}
            self.write_manifest(manifest)
        except BaseException:
            self.release()
            raise

    def open(self, *what) -> None:
        """Read a store without claiming it (to redraw or replay its results); refuse another kind or fingerprint.

        Raises
        ------
        StoreError
        """
        self._manifest = None
        self._checked_manifest(self._request(what), parts=False)

    def _checked_manifest(self, request: ManifestRequest, parts: bool = True) -> dict:
        stored = self.manifest()
        kind = request.kind or self.format.kind
        if (kind is not None and stored.get("kind") != kind) or stored.get("fingerprint") != request.fingerprint:
            raise StoreError(request.mismatch(self.directory, stored) if request.mismatch else
                             f"{self.directory} holds trials of another {stored.get('kind') or 'rates'} config; "
                             "they must not be mixed: write elsewhere with --out DIR, or delete the directory")
        if parts and request.parts:
            held, accepted = stored.get(self.format.parts_field, {}), request.accepted or {}
            clashes = sorted(label for label, own in request.parts.items()
                             if label in held and held[label] not in set(accepted.get(label, ())) | {own})
            if clashes:
                raise StoreError(request.parts_clash(self.directory, clashes) if request.parts_clash else
                                 f"{self.directory} holds {clashes} computed with other options; write elsewhere "
                                 "with --out DIR")
        return stored

    # -- chunk files
    def _chunk_roots(self) -> list[str]:
        return list(self.format.folders)

    def _name_pattern(self, cell: str) -> re.Pattern:
        digits, key, suffix = self.format.digits, re.escape(self.key), re.escape(self.format.file_type)
        parts = r"(?:-[0-9a-f]{8})?" if self.format.part_column else ""
        if self.format.cell_folders:
            return re.compile(rf"t(\d{{{digits},}})-(\d{{{digits},}})-{key}{parts}\.{suffix}")
        return re.compile(rf"{re.escape(cell)}-(\d{{{digits},}})-(\d{{{digits},}})-{key}{parts}\.{suffix}")

    def cells(self, folder: str | None = None) -> list[str]:
        """The cells with a folder of chunk files (a format with cell folders), sorted."""
        root = self.directory / (folder or self.format.folders[0])
        return sorted(path.name for path in root.glob("*") if path.is_dir()) if root.is_dir() else []

    def chunk_files(self, cell: str | None = None, folder: str | None = None) -> dict[Path, tuple[int, int]]:
        """The chunk files of this store's fingerprint (of one cell, or of every cell with a folder), sorted:
        path -> (first, stop), the trial range its name gives."""
        cells = [cell] if cell is not None else self.cells(folder)
        root = self.directory / (folder or self.format.folders[0])
        found = {}
        for name in cells:
            pattern = self._name_pattern(name)
            candidates = (root / name).glob(f"t*.{self.format.file_type}") if self.format.cell_folders else \
                root.glob(f"{glob.escape(name)}-*.{self.format.file_type}")
            for path in candidates:
                match = pattern.fullmatch(path.name)
                if match:
                    found[path] = (int(match.group(1)), int(match.group(2)))
        return dict(sorted(found.items()))

    def chunk_path(self, cell: str, first: int, stop: int, parts=None, folder: str | None = None) -> Path:
        """Where the chunk of trials ``first`` to ``stop - 1`` of ``cell`` is written."""
        digits = self.format.digits
        span = f"{first:0{digits}d}-{stop:0{digits}d}-{self.key}"
        if parts is not None:
            span += f"-{digest(parts)[:8]}"
        root = self.directory / (folder or self.format.folders[0])
        if self.format.cell_folders:
            return root / cell / f"t{span}.{self.format.file_type}"
        return root / f"{cell}-{span}.{self.format.file_type}"

    def write_chunk(self, cell: str, first: int, stop: int, *content, folder: str | None = None) -> Path:
        """Store one finished chunk atomically, its name (and, with parts, its metadata) carrying the
        fingerprint of what made it.

        Parameters
        ----------
        cell : str
        first, stop : int
            Its trials are ``first`` to ``stop - 1``.
        *content
            ``rows`` (a DataFrame); for a format with parts, ``parts, rows`` (the labels of the parts the
            chunk holds, e.g. a rate study's tests, then the rows).
        folder : str, optional
            One of the format's folders (default: the first).
        """
        parts, rows = (None, content[0]) if len(content) == 1 else content
        if (parts is None) != (self.format.part_column is None):
            raise TypeError(f"write_chunk of a {self.format.kind or 'rates'} store takes "
                            + ("parts, rows" if self.format.part_column else "rows") + " after the trial range")
        stamps = None
        if parts is not None:
            stored = self.manifest().get(self.format.parts_field, {})
            stamps = {label: stored.get(label, "") for label in sorted(parts)}
        path = self.chunk_path(cell, first, stop, stamps, folder)
        atomic_write_bytes(path, self._chunk_bytes(cell, rows, stamps))
        return path

    def _chunk_bytes(self, cell: str, rows, stamps) -> bytes:
        if self.format.file_type == "csv":
            return rows.to_csv(index=False).encode()
        if stamps is None:
            return rows.to_parquet(index=False)
        table = pa.Table.from_pandas(rows, preserve_index=False)
        metadata = {**(table.schema.metadata or {}), CHUNK_METADATA: json.dumps(
            {"fingerprint": self.manifest().get("fingerprint"), self.format.metadata_cell: cell,
             self.format.parts_field: stamps}, default=str).encode()}
        sink = pa.BufferOutputStream()
        pq.write_table(table.replace_schema_metadata(metadata), sink)
        return sink.getvalue().to_pybytes()

    def read_chunk(self, path: Path, columns=None) -> pd.DataFrame | None:
        """A chunk's rows, or None if its parts were computed with other fingerprints than the manifest's.

        Raises
        ------
        StoreError
            The file is damaged (one line naming it and how to recover).
        """
        if self.format.file_type == "csv":
            try:
                return pd.read_csv(path, usecols=columns)
            except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:  # EmptyDataError: ValueError
                raise damaged_chunk(path, exc) from None
        if self.format.part_column is None:
            try:
                return pd.read_parquet(path, columns=columns)
            except Exception as exc:  # pyarrow raises several types for a truncated or foreign file
                raise damaged_chunk(path, exc) from None
        try:
            table = pq.read_table(path, columns=columns)
        except (OSError, pa.ArrowException) as exc:
            raise damaged_chunk(path, exc) from None
        metadata = (table.schema.metadata or {}).get(CHUNK_METADATA)
        if metadata is None:
            raise damaged_chunk(path, ValueError("no simdesign fingerprint in its metadata"))
        own = self.manifest().get(self.format.parts_field, {})
        stamps = json.loads(metadata)[self.format.parts_field]
        if any(own.get(label, "") != stamp for label, stamp in stamps.items()):
            return None
        return table.to_pandas()

    # -- what a run resumes from
    def completed(self, cell: str, folder: str | None = None):
        """The trials of ``cell`` stored: a set (from the chunk names), or for a format with parts a dict
        part label -> set (from the chunks whose parts have the manifest's fingerprints)."""
        files = self.chunk_files(cell, folder)
        if self.format.part_column is None:
            return {trial for first, stop in files.values() for trial in range(first, stop)}
        done: dict[str, set[int]] = {}
        for path in files:
            keys = self.read_chunk(path, columns=["trial", self.format.part_column])
            if keys is None:
                continue
            for part, trials in keys.drop_duplicates().groupby(self.format.part_column)["trial"]:
                done.setdefault(part, set()).update(int(t) for t in trials)
        return done

    # -- reading
    def read(self, cells=None, trials: int | None = None, parts=None, folder: str | None = None) -> pd.DataFrame:
        """The stored rows of ``cells`` (default: every cell with a folder), trial < ``trials``, of the
        ``parts`` (a format with parts), in the format's order.

        Raises
        ------
        StoreError
            Two chunk files hold the same trial of a cell, two rows are alike in the format's
            :attr:`~StoreFormat.unique` columns (the store is corrupt), or a chunk is damaged.
        """
        cells = list(cells) if cells is not None else self.cells(folder)
        files = [(position, path, span) for position, cell in enumerate(cells)
                 for path, span in self.chunk_files(cell, folder).items()]
        if self.format.order == "files":
            files.sort(key=lambda item: item[1])
        self._refuse_overlaps(files)
        frames = []
        for position, path, _ in files:
            frame = self.read_chunk(path)
            if frame is None or (self.format.file_type == "csv" and frame.empty):  # an empty CSV has no types
                continue
            if parts is not None:
                frame = frame[frame[self.format.part_column].isin(list(parts))]
            if trials is not None:
                frame = frame[frame["trial"] < trials]
            if self.format.order is None:
                frame = frame.assign(_cell=position)
            frames.append(frame)
        if not frames:
            return pd.DataFrame({column: [] for column in self.format.columns})
        return self._ordered(pd.concat(frames, ignore_index=True))

    def read_trials(self, designs=None, tests=None, trials: int | None = None) -> pd.DataFrame:
        """:meth:`read` under a rate study's names (its cells are designs, its parts tests), kept for callers."""
        return self.read(designs, trials, parts=tests)

    def _refuse_overlaps(self, files: list) -> None:
        """Refuse two chunk files of one cell holding the same trial (without parts: chunks never overlap)."""
        if self.format.part_column is not None:
            return
        last: dict = {}
        for position, path, (first, stop) in sorted(files, key=lambda item: (item[0], item[2])):
            previous = last.get(position)
            if previous is not None and first < previous[1][1]:
                raise StoreError(f"{self.directory}: the chunk files {previous[0].name} and {path.name} hold the "
                                 "same trials; the results directory is corrupt")
            last[position] = (path, (first, stop))

    def _ordered(self, table: pd.DataFrame) -> pd.DataFrame:
        table = self.format.with_defaults(table)
        unique = list(self.format.unique or ())
        if unique and table.duplicated(unique).any():
            raise StoreError(f"{self.directory}: {int(table.duplicated(unique).sum())} stored rows are duplicated; "
                             "the results directory is corrupt")
        if self.format.order is None:
            table = table.sort_values(["_cell", "trial"], kind="stable", ignore_index=True)
            return table.drop(columns="_cell")
        if self.format.order == "files":
            return table
        return table.sort_values(list(self.format.order), ignore_index=True)

    def trial_rows(self, cell: str, trial: int, part: str | None = None, folder: str | None = None) -> pd.DataFrame:
        """The stored rows of one trial of ``cell`` (of one part), in the format's order; empty if it was never
        stored. Only the chunks whose names span the trial are read (what ``simdesign replay`` compares)."""
        frames = []
        for path, (first, stop) in self.chunk_files(cell, folder).items():
            if not first <= trial < stop:
                continue
            frame = self.read_chunk(path)
            if frame is not None:
                keep = frame["trial"] == trial
                if part is not None:
                    keep &= frame[self.format.part_column] == part
                frames.append(frame[keep])
        if not frames:
            return pd.DataFrame({column: [] for column in self.format.columns})
        table = pd.concat(frames, ignore_index=True)
        if isinstance(self.format.order, tuple):
            return table.sort_values(list(self.format.order), ignore_index=True)
        return table.sort_values("trial", kind="stable", ignore_index=True)
