#!/usr/bin/env bash
# Perceptron paper, Figure 1 (simulated separable data), under both protocols:
# the authors' MATLAB code (configs/simulated_separable.yaml) and the paper's text
# (configs/simulated_separable_paper.yaml). Generated data only; runs in seconds.
# Usage: scripts/reproduce_figure1.sh [RESULTS_DIR]   (default: results)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-results}"
ltr="${LTR:-ltr}"
command -v "$ltr" >/dev/null || ltr=".venv/bin/ltr"
for cfg in simulated_separable simulated_separable_paper; do
  "$ltr" run "configs/$cfg.yaml" --out "$out"
  # the paper plots the first 400 of 1000 rounds
  "$ltr" plot "$out/$cfg" --max-rounds 400 --out "$out/$cfg/plots"
done
