#!/usr/bin/env bash
# Reproduce Steen & Markert (2021), Figures 4, 5 and 7, for both tasks, at full size, and redraw the
# committed figures. Resumable: every finished chunk of trials is stored under results/, so running
# this again (in a later session, after an interruption) continues where it stopped.
#
#   bash scripts/reproduce_paper.sh [--jobs N]         # all figures
#   FIGURES="fig4 fig5" bash scripts/reproduce_paper.sh  # a subset
#   WITH_LMER=1 bash scripts/reproduce_paper.sh        # also the lme4 variants of Figures 5 and 7
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
simdesign="$root/.venv/bin/simdesign"
figures="${FIGURES:-fig4 fig5 fig7}"
for figure in $figures; do
  for task in coherence repetition; do
    variants=("")
    if [ "${WITH_LMER:-0}" = "1" ] && [ "$figure" != "fig4" ]; then variants+=("_lmer"); fi
    for variant in "${variants[@]}"; do
      config="configs/paper_${figure}_${task}${variant}.yaml"
      name="$(basename "$config" .yaml)"
      results="results/$(grep '^name:' "$config" | awk '{print $2}')"
      echo "== $config -> $results"
      "$simdesign" run "$config" "$@"
      "$simdesign" plot "$results" --out "figures/$name"
    done
  done
done
