#!/usr/bin/env bash
# The GPU benchmark run (docs/cuda.md), in two device calls on one warm machine:
#   gpu_bench.sh ours   makes the random-weight Llama-3-8B-shape checkpoint, runs
#                       `drift bench --sweep` on it, then starts the llama.cpp build in the
#                       background (never during our timings: it loads every core);
#   gpu_bench.sh peer   measures llama.cpp on the same checkpoint (scripts/bench_peer_llamacpp.sh).
# Needs shared/ in the checkout with tools/make_shape.py, peers/ and tokenizers/llama3.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.deps/rt:${LD_LIBRARY_PATH:-}
ckpt=${CKPT:-/tmp/llama3-8b}
case "${1:-}" in
  ours)
    [ -f "$ckpt/config.json" ] || python3 shared/tools/make_shape.py llama3-8b "$ckpt" 2>&1 | tail -1
    ./build/apps/drift bench --model "$ckpt" --backend cuda --sweep ${SWEEP_ARGS:-} --json "$out/sweep.json" \
      2> >(tee "$out/sweep.err" | grep -vE "^\[.*\] \[info\]" >&2)
    setsid nohup bash scripts/bench_peer_llamacpp.sh build > /tmp/peer-build.log 2>&1 < /dev/null &
    ;;
  peer)
    # A build started by `ours` may still be running: wait for it (at most 6 minutes).
    for _ in $(seq 72); do [ -f /tmp/llamacpp/build.done ] || ! pgrep -x ninja > /dev/null && break; sleep 5; done
    TOKENIZER_DIR=$PWD/shared/tokenizers/llama3 bash scripts/bench_peer_llamacpp.sh bench "$ckpt"
    ;;
  *) echo "usage: $0 ours | peer" >&2; exit 2 ;;
esac
