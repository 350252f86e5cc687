"""Debian's headless Chromium driven by Selenium: the explorer's browser tests and its README screenshot.

Only Debian's packages are used (``chromium``, ``chromium-driver``; ``bash scripts/setup_browser.sh``):
the driver's path is given, so Selenium Manager never looks for (or downloads) a browser or a driver.
"""
from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# No sandbox and no /dev/shm: also in a bare root or a container; no background traffic of the browser's own.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--no-first-run", "--disable-extensions", "--disable-default-apps")


def missing_browser() -> str | None:
    """Why Chromium cannot be driven here (None when it can)."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (Path(path).is_file() and os.access(path, os.X_OK)):
            return f"{path} is missing (bash scripts/setup_browser.sh installs Debian's chromium and chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    try:  # Selenium and chromedriver connect by this name
        socket.getaddrinfo("localhost", None)
    except OSError:
        return ("the name localhost does not resolve (no entry in /etc/hosts); bash scripts/setup_browser.sh adds "
                "Debian's default entries as root")
    return None


def start_chromium(window_size: tuple = (1400, 1000), performance_log: bool = True):
    """A headless Chromium WebDriver with a fresh profile (removed with ``driver.quit()`` by :func:`stop_chromium`).

    Returns
    -------
    selenium.webdriver.Chrome
        Its ``profile_dir`` attribute is the temporary profile.
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager, if ever reached, must not go online
    profile = tempfile.mkdtemp(prefix="simdesign-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={window_size[0]},{window_size[1]}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", **({"performance": "ALL"} if performance_log
                                                                        else {})})
    try:
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    except Exception:
        shutil.rmtree(profile, ignore_errors=True)
        raise
    driver.profile_dir = profile
    return driver


def stop_chromium(driver) -> None:
    try:
        driver.quit()
    finally:
        shutil.rmtree(driver.profile_dir, ignore_errors=True)
