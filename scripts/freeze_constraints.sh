#!/usr/bin/env bash
# Rewrite constraints.txt with the versions installed in .venv of the packages it already names (the direct
# dependencies), after the test suite has passed with them:
#   .venv/bin/python -m pip install -U -e '.[test,fast]' && bash scripts/test.sh && bash scripts/freeze_constraints.sh
# To pin another package, add a line 'name==x' to constraints.txt first.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
.venv/bin/python - <<'PY'
from importlib import metadata
from pathlib import Path

path = Path("constraints.txt")
lines = path.read_text().splitlines()
out = []
for line in lines:
    if line.startswith("#") or "==" not in line:
        out.append(line)
        continue
    name = line.split("==")[0].strip()
    out.append(f"{name}=={metadata.version(name)}")
path.write_text("\n".join(out) + "\n")
print(f"wrote constraints.txt ({sum('==' in l for l in out)} packages)")
PY
