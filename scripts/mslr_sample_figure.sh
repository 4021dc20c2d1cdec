#!/usr/bin/env bash
# The README's MSLR figure (docs/figures/mslr_sample_ndcg.png): configs/mslr_slam.yaml on the
# first 5,000 lines of MSLR-WEB10K Fold1/train.txt (43 real queries; rankeval's test file
# msn1.fold1.train.5k.txt is that sample), 20 shuffled passes, then the NDCG@10 figure.
# Usage: scripts/mslr_sample_figure.sh SAMPLE [RESULTS_DIR]
#   SAMPLE: the 5,000-line file, or MSLR-WEB10K/Fold1/train.txt (its first 5,000 lines are taken)
#   RESULTS_DIR (default results/mslr_sample): where the runs and plots/ go
set -euo pipefail
cd "$(dirname "$0")/.."
sample="${1:?usage: scripts/mslr_sample_figure.sh SAMPLE [RESULTS_DIR]}"
out="${2:-results/mslr_sample}"
ltr="${LTR:-ltr}"
command -v "$ltr" >/dev/null || ltr=".venv/bin/ltr"
if [ "$(wc -l < "$sample")" -gt 5000 ]; then
  mkdir -p "$out"
  head -n 5000 "$sample" > "$out/train.5k.txt"
  sample="$out/train.5k.txt"
fi
"$ltr" run configs/mslr_slam.yaml --data "$sample" --set protocol.passes=20 --set protocol.shuffle=true --out "$out"
"$ltr" plot "$out/mslr_slam" --metric ndcg@10 --out "$out/plots"
echo "the figure: $out/plots/mslr_slam_ndcg_at_10.png (docs/figures/mslr_sample_ndcg.png)"
