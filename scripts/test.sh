#!/usr/bin/env bash
# Set up (idempotent) and run the test suite: bash scripts/test.sh [pytest options]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
cd "$root"
exec "$root/.venv/bin/python" -m pytest "$@"
