"""The browser part of the set-up: its modes, and the messages when Chromium cannot be had (nothing installed)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import setup_copy_with_failing_part

REPO = Path(__file__).resolve().parents[1]


def test_setup_rejects_an_unknown_browser_mode():
    # the options are checked before anything is created or installed
    done = subprocess.run(["bash", str(REPO / "scripts" / "setup.sh"), "--browser", "sometimes"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert "'required', 'optional' or 'skip'" in done.stderr


def test_without_chromium_on_a_non_debian_system_the_browser_setup_says_what_is_missing(tmp_path):
    # a PATH with bash and the tools the script uses, but no dpkg-query, chromium or chromedriver
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "head"):
        os.symlink(shutil.which(tool), bin_dir / tool)
    done = subprocess.run([str(bin_dir / "bash"), str(REPO / "scripts" / "setup_browser.sh")], capture_output=True,
                          text=True, timeout=60, env={"PATH": str(bin_dir)})
    assert done.returncode == 1
    assert "not a Debian-like system" in done.stdout
    assert "ERROR: chromium is not on PATH" in done.stderr


@pytest.fixture
def checkout_with_failing_browser(tmp_path):
    """A copy of the set-up with the project's ready venv, no R part, and a browser set-up that fails."""
    return setup_copy_with_failing_part(tmp_path, "setup_browser.sh",
                                        "[setup_browser] ERROR: apt-get install chromium failed")


def _run_setup(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SIMDESIGN_SKIP_R": "1"}
    return subprocess.run(["bash", str(root / "scripts" / "setup.sh"), *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.mark.slow
def test_optional_browser_failure_warns_once_and_goes_on(checkout_with_failing_browser):
    done = _run_setup(checkout_with_failing_browser, "--browser", "optional")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("[setup] WARNING")]
    assert len(warnings) == 1 and "apt-get install chromium failed" in warnings[0]
    assert "browser tests will skip" in warnings[0]


@pytest.mark.slow
def test_required_browser_failure_stops_the_setup(checkout_with_failing_browser):
    done = _run_setup(checkout_with_failing_browser, "--browser", "required")
    assert done.returncode == 1 and "the browser part failed" in done.stderr


@pytest.mark.slow
def test_the_browser_part_is_skipped_by_default(checkout_with_failing_browser):
    assert _run_setup(checkout_with_failing_browser).returncode == 0  # run.sh's set-up: no browser


def test_a_machine_where_localhost_does_not_resolve_is_named_as_the_reason(monkeypatch):
    import socket

    from simdesign.explore import headless

    def no_names(*args, **kwargs):
        raise socket.gaierror("Name or service not known")

    monkeypatch.setattr(headless.socket, "getaddrinfo", no_names)
    monkeypatch.setattr(headless, "CHROMIUM", shutil.which("bash"))  # present executables: only the name fails
    monkeypatch.setattr(headless, "CHROMEDRIVER", shutil.which("bash"))
    pytest.importorskip("selenium")
    assert "localhost does not resolve" in headless.missing_browser()
