#!/usr/bin/env bash
# Set up (idempotent) and run the test suite: bash scripts/test.sh [pytest options]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The browser tests need Chromium: required in CI, elsewhere a failed install makes them skip with the reason.
if [ "${CI:-}" = true ]; then browser=required; else browser=optional; fi
bash "$root/scripts/setup.sh" --browser "$browser"
cd "$root"
exec "$root/.venv/bin/python" -m pytest "$@"
