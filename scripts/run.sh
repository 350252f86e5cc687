#!/usr/bin/env bash
# Set up (idempotent) and run a simulation config: bash scripts/run.sh [CONFIG] [simdesign run options]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh" --r optional
config="${1:-configs/quick.yaml}"
shift || true
cd "$root"
exec "$root/.venv/bin/simdesign" run "$config" "$@"
