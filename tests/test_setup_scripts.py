"""The set-up scripts' decisions that a bare machine depends on, tested without touching the system.

The scripts are run on copies with stand-ins for the parts that would install things: a failing R
set-up, and interpreters whose headers are missing.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import setup_copy_with_failing_part, write_executable

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def checkout_with_failing_r(tmp_path):
    """A copy of the set-up with the project's ready venv and an R set-up that fails."""
    return setup_copy_with_failing_part(tmp_path, "setup_r.sh", "[setup_r] ERROR: apt-get install r-base-core failed")


def _run_setup(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SIMDESIGN_SKIP_R"}
    return subprocess.run(["bash", str(root / "scripts" / "setup.sh"), *args], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.mark.slow
def test_optional_r_failure_warns_once_and_goes_on(checkout_with_failing_r):
    done = _run_setup(checkout_with_failing_r, "--r", "optional")
    assert done.returncode == 0, done.stderr
    # pip may print its own warnings (e.g. about find-links locations); the set-up says one of its own.
    warnings = [line for line in done.stderr.splitlines() if line.startswith("[setup] WARNING")]
    assert len(warnings) == 1
    assert "apt-get install r-base-core failed" in warnings[0]
    assert "bash scripts/setup_r.sh" in warnings[0]


@pytest.mark.slow
def test_required_r_failure_stops_the_setup(checkout_with_failing_r):
    done = _run_setup(checkout_with_failing_r)
    assert done.returncode == 1
    assert "the R part failed" in done.stderr


def test_setup_rejects_an_unknown_r_mode(checkout_with_failing_r):
    done = _run_setup(checkout_with_failing_r, "--r", "sometimes")
    assert done.returncode == 2
    assert "'required' or 'optional'" in done.stderr


def _headers_check(tmp_path: Path, base_executable: str) -> subprocess.CompletedProcess:
    """Run ensure_python_headers against a stand-in interpreter whose include directory is empty."""
    include = tmp_path / "include"
    include.mkdir()
    fake_python = tmp_path / "python"
    write_executable(fake_python, f"#!/bin/sh\nprintf '%s\\n%s\\n%s\\n' '{include}' '{base_executable}' '3.11'\n")
    # apt_ensure is replaced by a stand-in that records its arguments: nothing is installed.
    script = (f"source {REPO}/scripts/lib/apt.sh; source {REPO}/scripts/lib/python_headers.sh; "
              f"apt_ensure() {{ echo \"apt_ensure $*\"; }}; ensure_python_headers {fake_python}")
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)


def test_missing_headers_of_debians_python_are_installed_with_apt(tmp_path):
    done = _headers_check(tmp_path, "/usr/bin/python3.11")
    assert "apt_ensure python3.11-dev" in done.stdout
    # The stand-in installed nothing, so the headers are still missing and the check says so.
    assert done.returncode == 1
    assert "still missing" in done.stderr


def test_missing_headers_of_another_python_stop_with_advice(tmp_path):
    done = _headers_check(tmp_path, "/opt/conda/bin/python3.11")
    assert done.returncode == 1
    assert "apt_ensure" not in done.stdout
    assert "not Debian's" in done.stderr and "Python.h" in done.stderr


def test_present_headers_need_nothing(tmp_path):
    include = tmp_path / "include"
    include.mkdir()
    (include / "Python.h").write_text("")
    fake_python = tmp_path / "python"
    write_executable(fake_python, f"#!/bin/sh\nprintf '%s\\n%s\\n%s\\n' '{include}' '/usr/bin/python3.11' '3.11'\n")
    script = (f"source {REPO}/scripts/lib/apt.sh; source {REPO}/scripts/lib/python_headers.sh; "
              f"apt_ensure() {{ echo \"apt_ensure $*\"; }}; ensure_python_headers {fake_python}")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "apt_ensure" not in done.stdout
