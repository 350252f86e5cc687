#!/usr/bin/env bash
# Set up R for simdesign's R-backed analyses (clmm, lmer) -- idempotent.
#
#   bash scripts/setup_r.sh [PYTHON]
#
# 1. R and its packages from Debian (apt-get install --no-install-recommends; apt-get update
#    only when the install fails with the current package lists).
# 2. A stub R package `report` when the real one is absent: pymer4 >= 0.9 loads `report` at
#    import, Debian does not ship it (no r-cran-report) and CRAN may be unreachable. The stub's
#    report() stops with an explanation; nothing else in pymer4 uses it.
# 3. The pinned Python bridge (requirements-r.txt: rpy2, pymer4 and pymer4's undeclared
#    dependencies) into the environment of PYTHON (default: the active python3).
#
# When everything is already in place it only checks, in about a second.
# Exits non-zero, saying what failed, when something cannot be installed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$root/requirements-r.txt"
python="${1:-$(command -v python3 || command -v python || true)}"

DEBIAN_PACKAGES=(
  r-base-core r-base-dev
  r-cran-lme4 r-cran-lmertest r-cran-ordinal r-cran-emmeans
  r-cran-broom r-cran-broom.mixed r-cran-tibble r-cran-boot
  r-cran-parameters r-cran-performance r-cran-insight
  r-cran-pbkrtest  # Kenward-Roger: the oracle of the native implementations (tests)
)

# shellcheck source=lib/apt.sh
source "$root/scripts/lib/apt.sh"
# shellcheck source=lib/python_headers.sh
source "$root/scripts/lib/python_headers.sh"

say() { echo "[setup_r] $*"; }
die() { echo "[setup_r] ERROR: $*" >&2; exit 1; }

[ -n "$python" ] && "$python" -c 'import sys' 2>/dev/null ||
  die "no usable Python interpreter (got '${python}'); pass one: bash scripts/setup_r.sh /path/to/venv/bin/python"
[ -f "$requirements" ] || die "missing $requirements"

# ---------------------------------------------------------------- 1. Debian R packages
if ! command -v dpkg-query >/dev/null 2>&1; then
  command -v Rscript >/dev/null 2>&1 ||
    die "R is not installed and this is not a Debian-like system; install R (>= 4.2) with the packages lme4, lmerTest, ordinal by hand"
  say "not a Debian-like system: using the R on PATH as it is"
else
  PREFIX=setup_r apt_ensure "${DEBIAN_PACKAGES[@]}" || die "could not install the Debian R packages"
fi

command -v Rscript >/dev/null 2>&1 || die "Rscript is not on PATH after installing R"

# ---------------------------------------------------------------- 2. stub for R's `report`
if ! Rscript -e 'quit(status = if (requireNamespace("report", quietly = TRUE)) 0 else 1)' >/dev/null 2>&1; then
  # The first writable library on R's search path (root: /usr/local/lib/R/site-library, outside
  # dpkg's files); otherwise the user library, which R searches once it exists.
  library_dir="$(Rscript -e 'p <- .libPaths(); w <- p[file.access(p, 2) == 0]; cat(if (length(w)) w[1] else "")')"
  if [ -z "$library_dir" ]; then
    library_dir="$(Rscript -e 'cat(path.expand(Sys.getenv("R_LIBS_USER")))')"
    mkdir -p "$library_dir"
  fi
  say "installing a stub R package 'report' (for pymer4's import) into $library_dir"
  stub="$(mktemp -d)"
  trap 'rm -rf "$stub"' EXIT
  mkdir -p "$stub/report/R"
  cat > "$stub/report/DESCRIPTION" <<'EOF'
Package: report
Version: 0.0.0.9000
Title: Stub of easystats' 'report', installed by simdesign's scripts/setup_r.sh
Description: pymer4 (>= 0.9) loads the R package 'report' when it is imported, but Debian does
    not package it. This stub lets pymer4 import; its report() stops with an explanation.
    Installing the real 'report' from CRAN replaces it.
License: MIT
Encoding: UTF-8
EOF
  echo 'export(report)' > "$stub/report/NAMESPACE"
  cat > "$stub/report/R/report.R" <<'EOF'
report <- function(x, ...) {
  stop("This 'report' is a stub installed by simdesign's scripts/setup_r.sh so that pymer4 imports; ",
       "install the real package with install.packages(\"report\") to use pymer4's .report().",
       call. = FALSE)
}
EOF
  R CMD INSTALL --no-test-load --library="$library_dir" "$stub/report" >"$stub/install.log" 2>&1 ||
    { cat "$stub/install.log" >&2; die "could not install the stub R package 'report' into $library_dir"; }
  Rscript -e 'quit(status = if (requireNamespace("report", quietly = TRUE)) 0 else 1)' ||
    die "the stub R package 'report' was installed into $library_dir but R does not find it"
fi

# ---------------------------------------------------------------- 3. pinned Python bridge
pins_satisfied() {
  "$python" - "$requirements" <<'EOF'
import re, sys
from importlib import metadata

for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    # Exact pins must match; other specifiers (pip enforced them at install) only need the package.
    name, operator, wanted = re.match(r"([A-Za-z0-9_.\-]+)\s*(==|>=|<=|~=|!=|<|>)?\s*(\S*)", line).groups()
    try:
        installed = metadata.version(name)
    except metadata.PackageNotFoundError:
        sys.exit(1)
    if operator == "==" and installed != wanted:
        sys.exit(1)
EOF
}

if ! pins_satisfied; then
  # rpy2 compiles against the interpreter's headers.
  PREFIX=setup_r ensure_python_headers "$python" || die "the Python headers are missing (see above)"
  say "installing the pinned R bridge from requirements-r.txt into $("$python" -c 'import sys; print(sys.prefix)')"
  "$python" -m pip install --quiet -r "$requirements" ||
    die "pip could not install requirements-r.txt (rpy2 builds from source: it needs r-base-dev and a C compiler)"
  pins_satisfied || die "requirements-r.txt is still not satisfied after pip install"
  "$python" -c '
import rpy2.robjects as ro
ro.r("suppressMessages({library(ordinal); library(lme4); library(lmerTest)})")
' || die "rpy2 is installed but cannot load R and the packages ordinal, lme4, lmerTest"
  say "R bridge ready"
fi
