#!/usr/bin/env bash
# SuffixDecoding (plugins/suffix_cache) measured side by side on the CPU: tree and chain drafts,
# EAGLE-3 alone and the hybrid (suffix drafts, eagle3 where they expect < fallback_below tokens),
# each against its own non-speculative run in the same drift bench process, on two workloads:
# a repetitive editing-agent loop (tools/workloads/agent_loop.py: a story for stories260K, code
# for SmolLM2) and MT-Bench.
#   bash scripts/bench_suffix.sh [stories|smollm2] [drift bench args: --num-prompts N ...]
#   WORKLOADS=mt_bench bash scripts/bench_suffix.sh smollm2 ...   (one workload)
# stories (default): stories260K, all four variants. smollm2: SmolLM2-135M (scripts/setup.sh
# fetches it), tree and chain only (no EAGLE-3 head exists for it). Results: a table per
# workload on stdout, JSON in the printed folder.
set -euo pipefail
cd "$(dirname "$0")/.."
drift=$(realpath build/apps/drift)
[[ -x $drift && -f build/plugins/libdrift_suffix_cache.so ]] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
model=stories
[[ ${1:-} == stories || ${1:-} == smollm2 ]] && { model=$1; shift; }
out=$(mktemp -d)
document=code
[[ $model == stories ]] && document=story  # stories260K knows stories only, in 512 tokens
python3 tools/workloads/agent_loop.py --document $document > "$out/agent_loop.jsonl"

# A config's copy in $out, its relative paths made absolute (they resolve against configs/).
configs=$(realpath configs)
copy() { sed "s#\"\.\./#\"$configs/../#g" "configs/$1" > "$out/$2"; }
suffix_section() {  # draft: tree | chain
  printf '\n[speculative]\nenabled = true\ndraft_provider = "suffix_cache"\nmax_draft_tokens = 16\n'
  printf '\n[[plugins]]\nname = "suffix_cache"\n[plugins.suffix_cache]\ndraft = "%s"\n' "$1"
}
if [[ $model == stories ]]; then
  copy stories260k-suffix.toml suffix-tree.toml
  sed 's/^draft = "tree"/draft = "chain"/' "$out/suffix-tree.toml" > "$out/suffix-chain.toml"
  copy stories260k-eagle3.toml eagle3.toml
  sed 's/^draft_provider = "suffix_cache"/&\nfallback_provider = "eagle3"\nfallback_below = 1.5/' \
    "$out/suffix-tree.toml" > "$out/hybrid.toml"
  sed -n '/^\[\[plugins\]\]/,$p' "$out/eagle3.toml" >> "$out/hybrid.toml"
  compare=(--compare suffix-chain.toml --compare eagle3.toml --compare hybrid.toml)
else
  copy smollm2.toml base.toml
  { cat "$out/base.toml"; suffix_section tree; } > "$out/suffix-tree.toml"
  { cat "$out/base.toml"; suffix_section chain; } > "$out/suffix-chain.toml"
  compare=(--compare suffix-chain.toml)
fi

for workload in ${WORKLOADS:-agent_loop mt_bench}; do
  prompts=$out/agent_loop.jsonl
  chat=()
  if [[ $workload == mt_bench ]]; then
    prompts=$PWD/datasets/mt_bench.jsonl
    [[ $model == smollm2 ]] && chat=(--chat)  # a chat model gets the questions as user turns
  fi
  echo "== $workload ($model)"
  (cd "$out" && "$drift" bench --config suffix-tree.toml "${compare[@]}" --prompts "$prompts" "${chat[@]}" \
    --json "$workload.json" --log-level warn "$@" 2> "$workload.log") | sed -n '1,/^{/p' | sed '$d'
  grep -h "outputs equal" "$out/$workload.log" >&2
done
echo "configs, JSON and logs: $out" >&2
