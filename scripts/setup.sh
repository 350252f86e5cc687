#!/usr/bin/env bash
# Idempotent set-up: a virtual environment in .venv with simdesign installed (editable, with test
# dependencies), and R with its packages from Debian for the mixed-model analyses.
# A second run only checks stamps and takes a second or two.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="$root/.venv"

pick_python() {
  for candidate in "${PYTHON:-}" python3.11 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  echo "simdesign needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
  return 1
}

if [ ! -x "$venv/bin/python" ]; then
  python="$(pick_python)"
  echo "[setup] creating $venv with $python"
  "$python" -m venv "$venv"
fi

# R first: the R bridge (rpy2) builds against the installed R.
if [ -f scripts/setup_r.sh ] && [ "${SIMDESIGN_SKIP_R:-0}" != "1" ]; then
  bash scripts/setup_r.sh "$venv/bin/python"
fi

stamp="$venv/.simdesign-setup-stamp"
want="$(cat pyproject.toml requirements-r.txt 2>/dev/null | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! "$venv/bin/python" -c 'import simdesign' 2>/dev/null; then
  echo "[setup] installing simdesign and its Python dependencies into $venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet -e ".[test,fast]"
  echo "$want" > "$stamp"
fi
