"""Where each command writes: checked before any work, and a write that fails later ends in one line.

A results directory on a read-only mount, a parent of ``--out`` that is a file or a dangling symbolic link
used to surface as a traceback, some after minutes of work (``analyse`` printed the whole analysis first).
:func:`output_problems` refuses them before the command reads its input (exit 2, naming the path and what is
wrong); :func:`write_failure` turns an ``OSError`` of a write that still fails (a disk that fills up meanwhile)
into one line naming the file. The store itself writes each chunk atomically, so a run stopped this way
resumes from what it saved.
"""
from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

# command -> its outputs: (option dest, what it names, the default when the option is not given).
# "directory": a directory written into (created if missing); "file": one file; "base": a path without
# suffix, files base.png / base.csv written beside it; "existing": a directory read, then written into (plot's
# results: one that does not exist is the command's own error).
_STUDY = (("out", "directory", "results"), ("figure", "base", None))
OUTPUTS = {
    "run": _STUDY, "panels": _STUDY, "sweep": _STUDY, "metric-validation": _STUDY, "plan": _STUDY,
    "check": (("out", "directory", "results"),),
    "analyse": (("out", "directory", None),),
    "analyse-metrics": (("out", "directory", None),),
    "fit-crowd": (("out", "directory", None),),
    "fit": (("out", "file", None), ("check_out", "directory", None)),
    "draw-design": (("out", "file", None),),
    "replay": (("save", "file", None),),
    "plot": (("results", "existing", None), ("out", "base", None)),
}
# What a failed write says in OSError.errno (others are not about writing a file, and keep their traceback).
WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES, errno.EPERM, errno.ENOTDIR,
                errno.EISDIR, errno.EEXIST, errno.ELOOP, errno.ENAMETOOLONG, errno.EIO}
REASONS = {errno.EROFS: "is on a read-only file system", errno.EACCES: "is not writable (permission denied)",
           errno.EPERM: "is not writable (operation not permitted)", errno.ENOSPC: "is on a full disk",
           errno.EDQUOT: "is on a disk whose quota is used up"}


def command_outputs(args) -> list[tuple[str, Path, str]]:
    """(how the path is named in a message, the path, its kind) of what ``args.command`` will write."""
    found = []
    for dest, kind, default in OUTPUTS.get(getattr(args, "command", None), ()):
        value = getattr(args, dest, None)
        if value is not None:
            flag = f"'--{dest.replace('_', '-')}' option" if dest != "results" else "results directory"
            found.append((f"The {flag} {value}", Path(value), kind))
        elif default is not None:
            found.append((f"The default results directory {default} (no '--{dest}' given)", Path(default), kind))
    return found


def output_problems(args) -> list[str]:
    """Messages for every output of the command that cannot be written (empty: all can, as far as one can tell
    before writing)."""
    problems = []
    for named, path, kind in command_outputs(args):
        problem = path_problem(path, kind, args.command)
        if problem:
            problems.append(f"{named} {problem}")
    return problems


def path_problem(path: Path, kind: str, command: str = "") -> str | None:
    """What is wrong with writing ``path`` as a ``kind`` ('directory', 'file' or 'base'), or None."""
    if kind == "existing":
        return folder_problem(path) if path.is_dir() else None
    if kind != "base" and path.is_symlink() and not path.exists():  # (a base path itself is never written)
        return f"is a symbolic link to {os.readlink(path)}, which does not exist; remove it or give another path"
    if kind == "directory" and path.exists() and not path.is_dir():
        return "is a file; give a directory (created if missing)"
    if kind == "file" and path.is_dir():
        example = "model.yaml" if command == "fit" else "design.png" if command == "draw-design" else "out.csv"
        return f"is a directory; give a file name, e.g. {path / example}"
    if kind == "file" and path.is_file() and not os.access(path, os.W_OK):
        return "exists and is not writable (its permissions); give another file or change them"
    start = path if kind == "directory" and path.is_dir() else path.parent
    return folder_problem(start)


def folder_problem(folder: Path) -> str | None:
    """Whether files can be made in ``folder`` or, when it does not exist yet, in the folders it would be made in."""
    existing = folder
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if existing.is_symlink() and not existing.exists():
        return f"cannot be written: its parent {existing} is a symbolic link to {os.readlink(existing)}, " \
               "which does not exist"
    if not existing.is_dir():
        return f"cannot be written: its parent {existing} is a file, not a directory"
    failure = probe_write(existing)
    if failure is not None:
        reason = REASONS.get(failure.errno, f"cannot be written ({failure.strerror})")
        return f"cannot be written: {existing} {reason}"
    return None


def probe_write(folder: Path) -> OSError | None:
    """Make and remove an empty file in ``folder``: the one sure test that it can be written (as root, file
    modes allow everything; a read-only mount does not)."""
    try:
        # the stores' temporary suffix: a check killed before its unlink is a leftover a store's next run removes
        handle, name = tempfile.mkstemp(prefix=".simdesign-write-check-", suffix=".tmp", dir=folder)
    except OSError as exc:
        return exc
    os.close(handle)
    Path(name).unlink(missing_ok=True)  # (another run on the same store may have removed it as a leftover)
    return None


def write_failure(exc: OSError, args) -> str | None:
    """The one-line message for an OSError of a failed write, or None when it is no such error."""
    if exc.errno not in WRITE_ERRNOS:
        return None
    reason = exc.strerror or str(exc)
    outputs = [path for _, path, _ in command_outputs(args)]
    if not exc.filename:  # a write to an open file: which one is not known, the command's outputs are
        return f"cannot write {', '.join(str(path) for path in outputs) or 'the output'}: {reason}"
    written = exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG) or any(
        _within(exc.filename, path) for path in outputs)
    return f"cannot {'write' if written else 'use'} {exc.filename}: {reason}"


def _within(filename, path: Path) -> bool:
    """Whether ``filename`` is ``path`` or inside it, or beside a 'base' path's files."""
    target, path = Path(os.path.abspath(filename)), Path(os.path.abspath(path))
    return target == path or path in target.parents or target.parent == path.parent and \
        target.name.startswith(path.name)
