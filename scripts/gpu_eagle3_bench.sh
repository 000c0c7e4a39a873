#!/usr/bin/env bash
# EAGLE-3 on the GPU (docs/speculation.md), every figure from `drift bench` runs that put the
# variants side by side in one process. Parts (run in this order on one warm machine):
#   stories  stories260K + its trained head: speculative vs plain tokens/s at batch 1 and 8
#            (real acceptance, real draft cost), chain and dynamic tree
#   short    the random-weight Llama-3-8B shape + a random EAGLE-3 head of matching shape (fc
#            [4096, 12288], draft vocab 32000): the draft's cost per step against the target's
#            decode step; then the oracle provider replaying the plain run with acceptance dialled
#            to EAGLE-3's published tau (chains of 5, corruption 0.1: tau ~ 4.7) against plain
#   single-32k, batch4-16k, single-64k   the scenarios: plain and the oracle at that tau side by
#            side, and the random head (its draft cost per decode step at a long context; its
#            memory declared and budgeted with the KV pool, ABI 1.4)
# MODEL=gptoss-20b runs short and the scenarios on a random gpt-oss-20b checkpoint (MXFP4 experts,
# tools/gptoss/random_checkpoint.py) with a random head shaped as the published gpt-oss EAGLE-3
# heads (no lm_head: the target's vocabulary and head; random_head.py --target-head) instead.
# Needs shared/ in the checkout (tools/make_shape.py or tools/golden/make_shape.py); writes under
# $OUT (or gpu-logs/). The checkpoint and head are made in /tmp on first use.
source "$(dirname "$0")/gpu_env.sh"  # out, the runtime libraries, the checkpoints' makers
export DRIFT_TEST_DATA=${DRIFT_TEST_DATA:-$PWD/tests/data}
drift=./build/apps/drift
oracle=$PWD/build/tests/speculation/plugins/libdrift_oracle.so
model=${MODEL:-llama3-8b}
[ "$model" = gptoss-20b ] && ckpt=$gptoss_ckpt
head=${HEAD_DIR:-/tmp/$model-eagle3}
work=$(mktemp -d)
quiet() { grep -vE "\] \[info\]|prompts$" >&2; }

# The 8B target on CUDA (room for the 32K scenario), speculating with draft provider $1.
config_8b() {
  cat <<TOML
schema_version = 1
[model]
path = "$ckpt"
[engine]
backend = "cuda"
max_batch_size = 8
max_num_tokens = ${MAX_NUM_TOKENS:-2048}
max_seq_len = ${MAX_SEQ_LEN:-33024}
[kv_cache]
block_size = 16
memory_fraction = 0.5
[speculative]
enabled = true
draft_provider = "$1"
max_draft_tokens = 5
TOML
}
eagle3_plugin() {
  printf '[[plugins]]\nname = "eagle3"\n[plugins.eagle3]\ncheckpoint = "%s"\ntree = "chain"\ndepth = 5\n' "$head"
}
oracle_plugin() {  # reference file
  printf '[[plugins]]\nname = "oracle"\npath = "%s"\n[plugins.oracle]\nreference = "%s"\ncorruption = 0.1\nbranching = 1\ndepth = 5\n' \
    "$oracle" "$1"
}
make_8b() {
  if [ "$model" = gptoss-20b ]; then
    gptoss_checkpoint
    [ -f "$head/config.json" ] || python3 tools/eagle3/random_head.py "$ckpt" "$head" --target-head 2>&1 | tail -1
  else
    llama3_checkpoint
    [ -f "$head/config.json" ] || python3 tools/eagle3/random_head.py "$ckpt" "$head" 2>&1 | tail -1
  fi
  { config_8b eagle3; eagle3_plugin; } > "$work/eagle3.toml"
  # 16 prompts of 64-200 random ids (the checkpoint has no tokenizer); the scenarios cycle them.
  python3 - "$work/prompts.jsonl" <<'PY'
import json, random, sys
random.seed(11)
with open(sys.argv[1], "w") as f:
    for _ in range(16):
        f.write(json.dumps({"prompt_ids": [random.randrange(1000, 120000) for _ in range(random.randint(64, 200))]}) + "\n")
PY
}
# The plain run's outputs (what the oracle replays), then oracle.toml's plain and oracle variants
# side by side in one process, then the random head (eagle3.toml) for its cost per step. $1 =
# label, $2 = the head's variants ("off,eagle3", or "eagle3" where a long prefill makes a
# second plain run too costly), then drift bench arguments.
oracle_vs_plain() {
  local label=$1 head_variants=$2; shift 2
  config_8b "" | sed '/^\[speculative\]/,$d' > "$work/plain.toml"
  "$drift" bench --config "$work/plain.toml" --variants off --write-reference "$work/$label.ref.jsonl" "$@" \
    --log-level warn > /dev/null 2> >(quiet)
  { config_8b oracle; oracle_plugin "$work/$label.ref.jsonl"; } > "$work/oracle.toml"
  "$drift" bench --config "$work/oracle.toml" --json "$out/eagle3_${label}_oracle.json" "$@" 2> >(quiet) | head -3
  "$drift" bench --config "$work/eagle3.toml" --variants "$head_variants" --json "$out/eagle3_${label}_head.json" "$@" \
    2> >(quiet) | tail -n +2 | head -2
}

case "${1:-}" in
  stories)
    for c in 1 8; do
      for tree in chain dynamic; do
        # The shipped config (chain of 4), or a dynamic tree at the same budget of 8 nodes.
        sed -e "s#\"\.\./models/#\"$PWD/models/#" configs/stories260k-eagle3.toml > "$work/stories.toml"
        [ $tree = dynamic ] && sed -i -e 's/^tree = .*/tree = "dynamic"/' -e 's/^depth = .*/depth = 6\ntopk = 2\nnum_nodes = 8/' \
          "$work/stories.toml"
        echo "== stories260K + head on CUDA, concurrency $c, $tree"
        "$drift" bench --config "$work/stories.toml" --backend cuda --num-prompts 40 --max-new-tokens 128 \
          --concurrency $c --ignore-eos --json "$out/eagle3_stories_c${c}_$tree.json" 2> >(quiet) | head -3
      done
    done
    ;;
  short)
    make_8b
    oracle_vs_plain short off,eagle3 --prompts "$work/prompts.jsonl" --num-prompts 16 --max-new-tokens 128 --ignore-eos
    ;;
  single-32k | batch4-16k | single-64k)
    # Whole prompts in one step: then every sequence decodes in lockstep and no decode row ever
    # shares a forward with a prefill chunk, so the plain run the oracle replays (a separate
    # process) and the measured runs batch -- and round -- alike.
    export MAX_NUM_TOKENS=${MAX_NUM_TOKENS:-65536}
    [ "$1" = single-64k ] && export MAX_SEQ_LEN=${MAX_SEQ_LEN:-65792}
    make_8b
    oracle_vs_plain "$1" eagle3 --scenario "$1" --max-new-tokens 256 --ignore-eos --prompts "$work/prompts.jsonl"
    ;;
  *) echo "usage: $0 stories | short | single-32k | batch4-16k | single-64k" >&2; exit 2 ;;
esac
