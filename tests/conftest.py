"""Shared fixtures and helpers for the test suite."""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data" / "steen-markert-2021"


@pytest.fixture
def paper_data_dir() -> Path:
    """The paper's data (../shared); the test is skipped, with the reason, in a clone without it."""
    if not (SHARED_DATA / "judgements").is_dir():
        pytest.skip(f"the Steen & Markert data are not present at {SHARED_DATA} (a clone without ../shared)")
    return SHARED_DATA


@pytest.fixture
def coherence():
    from simdesign import load_model
    return load_model("coherence")


@pytest.fixture
def rng():
    return np.random.default_rng(20211)


def within_mcse(value: float, target: float, mcse: float, k: float = 4.0) -> bool:
    """True when |value - target| <= k Monte-Carlo standard errors."""
    return abs(value - target) <= k * mcse


def write_executable(path: Path, text: str) -> None:
    """Write a script and make it executable by its owner."""
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def setup_copy_with_failing_part(root: Path, part: str, error_line: str) -> Path:
    """A copy of scripts/setup.sh in ``root`` with the project's ready venv, whose ``scripts/<part>`` fails.

    The failing stand-in prints ``error_line`` to stderr and exits 1, as a set-up part does when apt-get
    fails; the test is skipped where the project's .venv (made by scripts/setup.sh) is missing.
    """
    venv = REPO / ".venv"
    if not (venv / "bin" / "python").exists():
        pytest.skip("needs the project's .venv (made by scripts/setup.sh)")
    # The copy shares the real venv: with a stale set-up stamp its set-up would reinstall the package
    # editable from the temporary copy and leave the real venv pointing at a folder about to be deleted.
    stamp = venv / ".simdesign-setup-stamp"
    wanted = hashlib.sha256(b"".join((REPO / name).read_bytes() for name in ("pyproject.toml", "requirements-r.txt")
                                     if (REPO / name).exists())).hexdigest()[:16]
    if not stamp.exists() or stamp.read_text().strip() != wanted:
        pytest.skip("the project's .venv is not set up for this pyproject.toml: run scripts/setup.sh first")
    (root / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "setup.sh", root / "scripts" / "setup.sh")
    write_executable(root / "scripts" / part, f"#!/usr/bin/env bash\necho '{error_line}' >&2\nexit 1\n")
    for name in ("pyproject.toml", "requirements-r.txt"):
        shutil.copy(REPO / name, root / name)
    os.symlink(venv, root / ".venv")
    return root
