#!/usr/bin/env bash
# Idempotent set-up: a virtual environment in .venv with simdesign installed (editable, with test
# dependencies), and R with its packages from Debian for the mixed-model analyses.
# A second run only checks stamps and takes a second or two.
#
#   bash scripts/setup.sh [--r required|optional] [--browser required|optional|skip]
#
# --r required (the default; scripts/test.sh): a failure of the R part stops the set-up.
# --r optional (scripts/run.sh): a failure of the R part is reported in one warning and the set-up
#   goes on, because the classical tests and clmm_native need no R; configs that ask for clmm or lmer
#   refuse to run before simulating.
# --browser (scripts/test.sh: required under CI=true, else optional; default skip): Debian's chromium and
#   chromium-driver for the explorer's browser tests (scripts/setup_browser.sh). Optional: a failure is
#   one warning, and the browser tests skip saying why.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="$root/.venv"

r_mode=required
browser_mode=skip
while [ $# -gt 0 ]; do
  case "$1" in
    --r) r_mode="${2:-}"; shift 2 || true ;;
    --r=*) r_mode="${1#--r=}"; shift ;;
    --browser) browser_mode="${2:-}"; shift 2 || true ;;
    --browser=*) browser_mode="${1#--browser=}"; shift ;;
    *) echo "[setup] unknown option '$1' (allowed: --r required|optional, --browser required|optional|skip)" >&2; exit 2 ;;
  esac
done
case "$r_mode" in
  required|optional) ;;
  *) echo "[setup] --r must be 'required' or 'optional'; got '$r_mode'" >&2; exit 2 ;;
esac
case "$browser_mode" in
  required|optional|skip) ;;
  *) echo "[setup] --browser must be 'required', 'optional' or 'skip'; got '$browser_mode'" >&2; exit 2 ;;
esac

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
  r_log="$venv/setup_r.log"
  if ! bash scripts/setup_r.sh "$venv/bin/python" 2>&1 | tee "$r_log"; then
    [ "$r_mode" = required ] && { echo "[setup] ERROR: the R part failed (log: $r_log)" >&2; exit 1; }
    reason="$(grep -m1 'ERROR:' "$r_log" | sed 's/^\[setup_r\] ERROR: //' || true)"
    echo "[setup] WARNING: the optional R part failed (${reason:-see $r_log}); classical tests and clmm_native work, clmm and lmer do not. Retry with: bash scripts/setup_r.sh .venv/bin/python" >&2
  fi
fi

# The explorer's browser tests: Debian's chromium and chromium-driver (only the test command asks).
if [ "$browser_mode" != skip ] && [ -f scripts/setup_browser.sh ]; then
  browser_log="$venv/setup_browser.log"
  if ! bash scripts/setup_browser.sh 2>&1 | tee "$browser_log"; then
    [ "$browser_mode" = required ] && { echo "[setup] ERROR: the browser part failed (log: $browser_log)" >&2; exit 1; }
    reason="$(grep -m1 'ERROR:' "$browser_log" | sed 's/^\[setup_browser\] ERROR: //' || true)"
    echo "[setup] WARNING: the browser part failed (${reason:-see $browser_log}); the explorer's browser tests will skip. Retry with: bash scripts/setup_browser.sh" >&2
  fi
fi

stamp="$venv/.simdesign-setup-stamp"
# constraints.txt: the versions the suite last passed with (a new release cannot change them unannounced)
want="$(cat pyproject.toml requirements-r.txt constraints.txt 2>/dev/null | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! "$venv/bin/python" -c 'import simdesign' 2>/dev/null; then
  echo "[setup] installing simdesign and its Python dependencies into $venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  # Until 0.1 the distribution was called `simdesign` (a name PyPI gives to another project): remove
  # that old editable install of this checkout, or two installs would claim the package.
  if "$venv/bin/python" -I - "$root" <<'PY'
import sys
from importlib import metadata
try:
    url = metadata.distribution("simdesign").read_text("direct_url.json") or ""
except metadata.PackageNotFoundError:
    sys.exit(1)
sys.exit(0 if sys.argv[1] in url else 1)
PY
  then
    "$venv/bin/python" -m pip uninstall --quiet --yes simdesign
  fi
  "$venv/bin/python" -m pip install --quiet -c constraints.txt -e ".[test,fast]"
  # ppi-python, the oracle of the LLM-judge estimators' tests, installs a top-level package named 'tests' that
  # would shadow this project's tests, so it goes into a folder of its own (its dependencies, numpy, scipy,
  # statsmodels, scikit-learn and numba, are in the venv already); tests/oracles.py imports it from there
  "$venv/bin/python" -m pip install --quiet --no-deps --upgrade --target "$venv/oracles/ppi" \
    "ppi-python==$(sed -n 's/^ppi-python==//p' constraints.txt)"
  echo "$want" > "$stamp"
fi

# lmm_native's compiled kernels (numba, cached in simdesign/lmm/__pycache__): compiled here once, so that no fit
# and no test pays for it; skipped while the cache is newer than the kernels' source (issue 41).
kernels_source="$root/simdesign/lmm/kernels.py"
newest_cache="$(ls -t "$root"/simdesign/lmm/__pycache__/kernels.solve-*.nbi 2>/dev/null | head -1 || true)"
slopes_cache="$(ls -t "$root"/simdesign/lmm/__pycache__/slope_kernels.slope_solve-*.nbi 2>/dev/null | head -1 || true)"
if [ -f "$kernels_source" ] && { [ -z "$newest_cache" ] || [ "$kernels_source" -nt "$newest_cache" ] || [ "$root/simdesign/lmm/small_linalg.py" -nt "$newest_cache" ] \
    || [ -z "$slopes_cache" ] || [ "$root/simdesign/lmm/slope_kernels.py" -nt "$slopes_cache" ] || [ "$root/simdesign/lmm/small_linalg.py" -nt "$slopes_cache" ]; }; then
  echo "[setup] compiling lmm_native's kernels (numba; once)"
  "$venv/bin/python" -c 'import simdesign.lmm as m; m.warm_up()' \
    || echo "[setup] WARNING: lmm_native's kernels did not compile; the numpy code runs instead" >&2
fi

# clmm_native's compiled kernels (numba, cached in simdesign/__pycache__), for random intercepts and for the
# maximal structure with five systems: compiled here once (a minute or two), skipped while the cache is newer
# than the kernels' source (issue 41). Another number of systems with slopes compiles at its first fit.
clmm_source="$root/simdesign/_clmm_numba.py"
newest_clmm_cache="$(ls -t "$root"/simdesign/__pycache__/_clmm_numba.evaluate-*.nbi 2>/dev/null | head -1 || true)"
if [ -f "$clmm_source" ] && { [ -z "$newest_clmm_cache" ] || [ "$clmm_source" -nt "$newest_clmm_cache" ]; }; then
  echo "[setup] compiling clmm_native's kernels (numba; once)"
  "$venv/bin/python" -c 'import simdesign.clmm as m; m.warm_up()' \
    || echo "[setup] WARNING: clmm_native's kernels did not compile; the numpy code runs instead" >&2
fi
