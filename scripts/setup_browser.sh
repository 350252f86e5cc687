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
# Selenium reaches chromedriver, and chromedriver the browser, at the name localhost. A bare root made by
# debootstrap (or a minimal container) has no /etc/hosts, so the name does not resolve; Debian's installer
# writes these entries on every installed system.
if ! getent hosts localhost >/dev/null 2>&1; then
  if [ -w /etc/hosts ] || { [ ! -e /etc/hosts ] && [ -w /etc ]; }; then
    say "the name localhost does not resolve: adding Debian's default localhost entries to /etc/hosts"
    printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >> /etc/hosts
  else
    die "the name localhost does not resolve (no entry in /etc/hosts), and chromedriver needs it: as root, add the line '127.0.0.1 localhost' to /etc/hosts"
  fi
fi
for program in chromium chromedriver; do
  command -v "$program" >/dev/null 2>&1 || die "$program is not on PATH"
done
chromedriver --version >/dev/null 2>&1 || die "chromedriver does not start ($(chromedriver --version 2>&1 | head -1))"
