#!/usr/bin/env bash
# Set up the browser the explorer's browser tests drive (idempotent): Debian's Chromium and its
# WebDriver, from the package registry (no browser or driver downloads of their own).
#
#   bash scripts/setup_browser.sh
#
# Installs chromium and chromium-driver with apt-get when they are missing (root or passwordless
# sudo), then checks that both start. Exits non-zero, saying what failed, when they cannot be had.
# When they are in place it only checks, in about a second.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/apt.sh
source "$root/scripts/lib/apt.sh"

say() { echo "[setup_browser] $*"; }
die() { echo "[setup_browser] ERROR: $*" >&2; exit 1; }

if command -v dpkg-query >/dev/null 2>&1; then
  PREFIX=setup_browser apt_ensure chromium chromium-driver || die "could not install chromium and chromium-driver"
else
  say "not a Debian-like system: using the chromium and chromedriver on PATH, if any"
fi
for program in chromium chromedriver; do
  command -v "$program" >/dev/null 2>&1 || die "$program is not on PATH"
done
chromedriver --version >/dev/null 2>&1 || die "chromedriver does not start ($(chromedriver --version 2>&1 | head -1))"
