#!/usr/bin/env bash
# Write constraints.txt: the versions installed in .venv, which the test suite has just passed with.
#   .venv/bin/python -m pip install -U -e '.[test,fast]' && bash scripts/test.sh && bash scripts/freeze_constraints.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
{
  sed -n '/^#/p' constraints.txt
  .venv/bin/python -m pip freeze --exclude-editable 2>/dev/null | grep -v '^simdesign' | grep -v ' @ '
} > constraints.txt.new
mv constraints.txt.new constraints.txt
echo "wrote constraints.txt ($(grep -vc '^#' constraints.txt) packages)"
