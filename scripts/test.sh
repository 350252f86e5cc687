#!/usr/bin/env bash
# Set up (idempotent) and run the test suite: bash scripts/test.sh [pytest options]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The browser tests need Chromium: required in CI, elsewhere a failed install makes them skip with the reason.
if [ "${CI:-}" = true ]; then browser=required; else browser=optional; fi
bash "$root/scripts/setup.sh" --browser "$browser"
cd "$root"
# Two worker processes (pytest-xdist), one per core of the 2-core machine the suite is sized for; most tests are
# single-threaded. SIMDESIGN_TEST_WORKERS=0 runs everything in this process (a later -n in "$@" also wins).
exec "$root/.venv/bin/python" -m pytest -n "${SIMDESIGN_TEST_WORKERS:-2}" "$@"
