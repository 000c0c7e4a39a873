#!/usr/bin/env bash
# The GPU benchmark run (docs/cuda.md):
#   gpu_bench.sh ours   makes the random-weight Llama-3-8B-shape checkpoint (if missing) and runs
#                       `drift bench --sweep` on it;
#   gpu_bench.sh peer   builds llama.cpp and measures it on the same checkpoint
#                       (scripts/bench_peer_llamacpp.sh);
#   gpu_bench.sh all    both, in that order, in one device call (the build never runs during our
#                       timings: it loads every core).
# Needs shared/ in the checkout with tools/make_shape.py, peers/ and tokenizers/llama3.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.deps/rt:${LD_LIBRARY_PATH:-}
ckpt=${CKPT:-/tmp/llama3-8b}
ours() {
  [ -f "$ckpt/config.json" ] || python3 shared/tools/make_shape.py llama3-8b "$ckpt" 2>&1 | tail -1
  ./build/apps/drift bench --model "$ckpt" --backend cuda --sweep ${SWEEP_ARGS:-} --json "$out/sweep.json" \
    2> >(tee "$out/sweep.err" | grep -vE "^\[.*\] \[info\]" >&2)
}
peer() {
  [ -f "$ckpt/config.json" ] || python3 shared/tools/make_shape.py llama3-8b "$ckpt" 2>&1 | tail -1
  TOKENIZER_DIR=$PWD/shared/tokenizers/llama3 bash scripts/bench_peer_llamacpp.sh bench "$ckpt"
}
case "${1:-}" in
  ours) ours ;;
  peer) peer ;;
  all) ours && peer ;;
  *) echo "usage: $0 ours | peer | all" >&2; exit 2 ;;
esac
