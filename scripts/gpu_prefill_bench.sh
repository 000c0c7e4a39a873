#!/usr/bin/env bash
# Prefill on the GPU machine (docs/cuda.md, "What limits prefill 8K"): our prefill rows of
# `drift bench --sweep` (512 and 8K tokens, with TFLOP/s) for each DRIFT_CUDA_SCALED_OUTPUT_MB
# value in $CHUNKS_MB (alternating, two rounds), the kernel trace of the eager prefill forwards by
# kernel (kernel_trace_summary.py --eager), and llama.cpp's pp512 / pp8192 on the same checkpoint
# (built in the same call; scripts/bench_peer_llamacpp.sh). Writes under $OUT (or gpu-logs/).
# Needs shared/ in the checkout with tools/make_shape.py and peers/ (as scripts/gpu_bench.sh).
source "$(dirname "$0")/gpu_env.sh"
drift=./build/apps/drift
bash scripts/bench_peer_llamacpp.sh build > "$out/peer-build.out" 2>&1 &
build_pid=$!
llama3_checkpoint
wait "$build_pid" || echo "llama.cpp build failed: see $out/llamacpp-build.log" >&2
for round in 1 2; do
  for mb in ${CHUNKS_MB:-64 256 1024}; do
    DRIFT_CUDA_SCALED_OUTPUT_MB=$mb "$drift" bench --model "$ckpt" --backend cuda --sweep --sweep-only prefill \
      --sweep-repeats 5 2>/dev/null | grep "^| prefill" | sed "s/^/chunk ${mb} MB, round $round: /"
  done
done | tee "$out/prefill_ab.txt"
CUDA_INJECTION64_PATH=$PWD/build/tools/kernel_trace/libdrift_kernel_trace.so DRIFT_KERNEL_TRACE=$out/prefill-trace.csv \
  "$drift" bench --model "$ckpt" --backend cuda --sweep --sweep-only prefill --sweep-repeats 3 > "$out/trace.out" 2>&1
# 5 forwards of 8K (2 warm-ups, 3 timed) dominate the trace; the 512-token row adds ~5%.
python3 scripts/kernel_trace_summary.py --eager --forwards 5 "$out/prefill-trace.csv" | tee "$out/prefill-trace.md" | head -20
xz -f "$out/prefill-trace.csv"
tok=$PWD/tests/data/tokenizers/llama3
[ -f "$tok/tokenizer.json" ] || tar xJf "$tok/tokenizer.json.tar.xz" -C "$tok"
cp "$tok"/tokenizer*.json "$ckpt/"
(cd /tmp/llamacpp/llama.cpp &&
  { [ -f /tmp/llamacpp/model.gguf ] || PYTHONPATH=$PWD/gguf-py python3 convert_hf_to_gguf.py "$ckpt" --outtype bf16 \
      --outfile /tmp/llamacpp/model.gguf > "$out/llamacpp-convert.log" 2>&1; } &&
  b/bin/llama-bench -m /tmp/llamacpp/model.gguf -ngl 99 -fa 1 -p 512,8192 -n 0 -r 3 -o md 2>&1 | tee "$out/llamacpp-prefill.md")
