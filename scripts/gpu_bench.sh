#!/usr/bin/env bash
# The GPU benchmark run (docs/cuda.md):
#   gpu_bench.sh ours   makes the random-weight Llama-3-8B-shape checkpoint (if missing) and runs
#                       `drift bench --sweep` on it;
#   gpu_bench.sh peer   builds llama.cpp and measures it on the same checkpoint
#                       (scripts/bench_peer_llamacpp.sh);
#   gpu_bench.sh all    both in one device call (a machine goes back after 30 s idle): the
#                       llama.cpp build runs while the checkpoint is made, and is done before
#                       anything is timed (it loads every core); then our sweep, then the peer.
# MODEL=gptoss-20b measures a gpt-oss-20b shape instead (random MXFP4 experts,
# tools/gptoss/random_checkpoint.py; llama.cpp keeps its experts MXFP4): the sweep adds the
# verification rows and 32K contexts, and llama.cpp reads the Llama 3 tokenizer (its vocabulary
# padded to GPT-OSS's 201,088: speed does not depend on the tokens' text).
# Needs shared/ in the checkout with tools/make_shape.py and peers/ (the Llama 3 tokenizer llama.cpp's
# converter reads ships in tests/data/tokenizers/llama3).
source "$(dirname "$0")/gpu_env.sh"
model=${MODEL:-llama3-8b}
case "$model" in
  llama3-8b) make_checkpoint=llama3_checkpoint ;;
  gptoss-20b)
    make_checkpoint=gptoss_checkpoint
    ckpt=$gptoss_ckpt
    # Batches 1/8/32 at 4K and 32K (the pool: 32 x 32K of GPT-OSS's KV fits an H100 beside its
    # weights), and batch 64 at 4K in a second sweep (SWEEP2_ARGS).
    SWEEP_ARGS=${SWEEP_ARGS:---sweep-only decode,prefill,verify --sweep-max-context 32768 --sweep-long-batches 1,8,32}
    SWEEP2_ARGS=${SWEEP2_ARGS:---sweep-only decode --sweep-max-context 4096 --sweep-long-batches 64}
    ;;
  *) echo "MODEL=$model: llama3-8b or gptoss-20b" >&2; exit 2 ;;
esac
ours() {
  $make_checkpoint
  ./build/apps/drift bench --model "$ckpt" --backend cuda --sweep ${SWEEP_ARGS:-} --json "$out/sweep-$model.json" \
    2> >(tee "$out/sweep-$model.err" | grep -vE "^\[.*\] \[info\]" >&2)
  [ -z "${SWEEP2_ARGS:-}" ] ||
    ./build/apps/drift bench --model "$ckpt" --backend cuda --sweep $SWEEP2_ARGS --json "$out/sweep2-$model.json" \
      2> >(tee "$out/sweep2-$model.err" | grep -vE "^\[.*\] \[info\]" >&2)
}
peer() {
  $make_checkpoint
  local tok=$PWD/tests/data/tokenizers/llama3
  [ -f "$tok/tokenizer.json" ] || tar xJf "$tok/tokenizer.json.tar.xz" -C "$tok"
  TOKENIZER_DIR=$tok bash scripts/bench_peer_llamacpp.sh bench "$ckpt"
}
case "${1:-}" in
  ours) ours ;;
  peer) peer ;;
  all)
    bash scripts/bench_peer_llamacpp.sh build > "$out/peer-build.out" 2>&1 &
    build_pid=$!
    $make_checkpoint
    wait "$build_pid" || echo "llama.cpp build failed: see $out/llamacpp-build.log" >&2
    ours
    peer
    ;;
  *) echo "usage: $0 ours | peer | all" >&2; exit 2 ;;
esac
