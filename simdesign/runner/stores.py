"""What every results store shares: one writer at a time, a format version, named damage, atomic files.

Every study kind's store (rates, metric validation, panel studies) is a directory holding a
``manifest.json`` (what made the stored trials, their fingerprint) and chunk files (a finished chunk of
trials each). Four rules keep two settings from ever being mixed in one directory:

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
import hashlib
import json
import os
import platform
import socket
import subprocess
import time
import uuid
from importlib import metadata
from pathlib import Path

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
