#!/usr/bin/env bash
# Re-create every committed figure: the paper's Figures 4, 5 and 7 for both tasks, the mixed model's
# type I error on the Figure-4 grid, the reliability of nested against crossed designs, and the
# planner's example. Each run is simulated at its config's size and its figure redrawn into figures/.
# Resumable: every finished chunk of trials is stored under results/, so running this again (in a
# later session, after an interruption) continues where it stopped and recomputes nothing stored.
#
#   bash scripts/reproduce_paper.sh [--jobs N]                 # everything (several hours on 2 cores)
#   FIGURES="fig4 reliability" bash scripts/reproduce_paper.sh  # a subset
#   WITH_LMER=1 bash scripts/reproduce_paper.sh                # also the lme4 variants of Figures 5 and 7
#
# FIGURES names (default: all, in this order):
#   fig4         configs/paper_fig4_{coherence,repetition}.yaml        -> figures/paper_fig4_*.{png,pdf}
#   fig4_mixed   configs/paper_fig4_mixed_{coherence,repetition}.yaml  -> figures/paper_fig4_mixed_*.{png,pdf}
#   fig5         configs/paper_fig5_{coherence,repetition}.yaml        -> figures/paper_fig5_*.{png,pdf}
#   fig7         configs/paper_fig7_{coherence,repetition}.yaml        -> figures/paper_fig7_*.{png,pdf}
#   reliability  configs/reliability_nested_vs_crossed.yaml            -> figures/reliability_nested_vs_crossed.{png,pdf}
#                (and figures/reliability_nested_vs_crossed-krippendorff_alpha.{png,pdf}, not committed)
#   plan         configs/plan_example.yaml (simdesign plan)            -> figures/plan_example.{png,pdf}
# The lme4 variants (WITH_LMER=1, configs/paper_fig{5,7}_*_lmer.yaml) need R and write
# figures/paper_fig{5,7}_*_lmer.{png,pdf}, which are not committed.
# Arguments (e.g. --jobs 2) are passed to every `simdesign run` and `simdesign plan`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
figures="${FIGURES:-fig4 fig4_mixed fig5 fig7 reliability plan}"
for figure in $figures; do  # refuse a typo before hours of set-up and simulation
  case "$figure" in
    fig4|fig4_mixed|fig5|fig7|reliability|plan) ;;
    *) echo "unknown figure '$figure' in FIGURES; allowed: fig4 fig4_mixed fig5 fig7 reliability plan" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh
simdesign="$root/.venv/bin/simdesign"

simulate_and_draw() {  # CONFIG [ARGS...]: run a simulation config, then redraw its figure into figures/
  local config="$1"
  shift
  local name results
  name="$(basename "$config" .yaml)"
  results="results/$(grep '^name:' "$config" | awk '{print $2}')"
  echo "== $config -> $results -> figures/$name.{png,pdf}"
  "$simdesign" run "$config" "$@"
  "$simdesign" plot "$results" --out "figures/$name"
}

for figure in $figures; do
  case "$figure" in
    fig4|fig4_mixed|fig5|fig7)
      for task in coherence repetition; do
        simulate_and_draw "configs/paper_${figure}_${task}.yaml" "$@"
        if [ "${WITH_LMER:-0}" = "1" ] && { [ "$figure" = "fig5" ] || [ "$figure" = "fig7" ]; }; then
          simulate_and_draw "configs/paper_${figure}_${task}_lmer.yaml" "$@"
        fi
      done
      ;;
    reliability)
      simulate_and_draw configs/reliability_nested_vs_crossed.yaml "$@"
      ;;
    plan)
      echo "== configs/plan_example.yaml -> results/plan_example -> figures/plan_example.{png,pdf}"
      "$simdesign" plan configs/plan_example.yaml --figure figures/plan_example "$@"
      ;;
  esac
done
