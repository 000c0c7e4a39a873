# Sourced by the GPU scripts (bash): runs from the checkout, logs under $OUT (or gpu-logs/), the
# staged runtime libraries (.deps/rt), and the random-weight Llama-3-8B-shape checkpoint at $CKPT
# (default /tmp/llama3-8b), made on the GPU machine by llama3_checkpoint when missing
# (gptoss_checkpoint: a gpt-oss-20b shape with MXFP4 experts at $GPTOSS_CKPT, /tmp/gptoss-20b).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.deps/rt:${LD_LIBRARY_PATH:-}
ckpt=${CKPT:-/tmp/llama3-8b}
llama3_checkpoint() {
  local maker=shared/tools/make_shape.py  # a copy of ../shared/tools/golden/make_shape.py
  [ -f "$maker" ] || maker=shared/tools/golden/make_shape.py
  [ -f "$ckpt/config.json" ] || python3 "$maker" llama3-8b "$ckpt" 2>&1 | tail -1
}
gptoss_ckpt=${GPTOSS_CKPT:-/tmp/gptoss-20b}
gptoss_checkpoint() {
  [ -f "$gptoss_ckpt/config.json" ] || python3 tools/gptoss/random_checkpoint.py "$gptoss_ckpt" 2>&1 | tail -1
}
