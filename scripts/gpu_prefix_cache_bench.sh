#!/usr/bin/env bash
# The prefix cache on the GPU (docs/plugins.md): the random-weight Llama-3-8B-shape checkpoint,
# 64 prompts behind one shared 1,000-token system prompt, `drift bench` with and without
# plugins/prefix_cache side by side in one process: TTFT, hit rate, prefill tokens avoided, and
# whether the outputs are equal. Concurrency 1 (TTFT of a lone request) and 16 (a busy server).
# Needs shared/ in the checkout (tools/golden/make_shape.py); writes under $OUT (or gpu-logs/).
source "$(dirname "$0")/gpu_env.sh"
llama3_checkpoint
work=$(mktemp -d)
# 64 user prompts of 32-160 random ids (the checkpoint has no tokenizer).
python3 - "$work/prompts.jsonl" <<'PY'
import json, random, sys
random.seed(7)
with open(sys.argv[1], "w") as f:
    for _ in range(64):
        f.write(json.dumps({"prompt_ids": [random.randrange(1000, 120000) for _ in range(random.randint(32, 160))]}) + "\n")
PY
# plain-chunk512: plain with a smaller token budget, i.e. other prefill batch shapes -- how far
# the model's own greedy outputs move when only the batching changes (the yardstick for the
# cached run, whose pages were computed in another batch than the recomputation they replace).
for variant in plain cached plain-chunk512; do
  {
    echo "schema_version = 1"
    echo "[model]"; echo "path = \"$ckpt\""
    echo "[engine]"; echo "backend = \"cuda\""; echo "max_batch_size = 64"; echo "max_num_tokens = $([ $variant = plain-chunk512 ] && echo 512 || echo 2048)"
    echo "[kv_cache]"; echo "block_size = 16"; echo "memory_fraction = 0.5"
    if [ $variant = cached ]; then echo "[[plugins]]"; echo "name = \"prefix_cache\""; fi
  } > "$work/$variant.toml"
done
for c in 1 16; do
  ./build/apps/drift bench --config "$work/plain.toml" --compare "$work/cached.toml" --compare "$work/plain-chunk512.toml" --prompts "$work/prompts.jsonl" \
    --num-prompts 64 --max-new-tokens 32 --system-prompt-tokens 1000 --variants off --concurrency $c \
    --json "$out/prefix_cache_c$c.json" 2> >(grep -vE "\] \[info\]|prompts$" >&2) | head -4
done
