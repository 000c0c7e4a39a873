#!/usr/bin/env bash
# llama.cpp, the peer DriftEngine is measured against, on the GPU machine: builds it from
# ../shared/peers/llama.cpp-src.tar.xz (see its README; ~5 minutes on 16 cores), converts an HF
# checkpoint to GGUF bf16 (a GPT-OSS checkpoint's MXFP4 experts stay MXFP4: llama.cpp's converter
# repacks them) and runs llama-bench and llama-batched-bench with flash attention on.
# Usage: bench_peer_llamacpp.sh build            (only build, e.g. in the background)
#        bench_peer_llamacpp.sh bench CKPT_DIR    (convert + measure; builds first if needed)
# Env: PEER_SRC (the tarball; default shared/peers/llama.cpp-src.tar.xz), PEER_DIR (work folder,
# default /tmp/llamacpp), TOKENIZER_DIR (tokenizer files copied into CKPT_DIR when it has none),
# OUT (where logs go).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=${PEER_SRC:-$root/shared/peers/llama.cpp-src.tar.xz}
dir=${PEER_DIR:-/tmp/llamacpp}
out=${OUT:-$dir/logs}
mkdir -p "$dir" "$out"

build() {
  [ -x "$dir/llama.cpp/b/bin/llama-batched-bench" ] && return
  tar xJf "$src" -C "$dir"
  cd "$dir/llama.cpp"
  cmake -S . -B b -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=ON \
    > "$out/llamacpp-configure.log" 2>&1
  cmake --build b -j "$(nproc)" --target llama-bench llama-batched-bench > "$out/llamacpp-build.log" 2>&1
  touch "$dir/build.done"
}

bench() {
  local ckpt=$1 gguf="$dir/$(basename "$1").gguf"
  build
  cd "$dir/llama.cpp"
  if [ ! -f "$ckpt/tokenizer.json" ] && [ -n "${TOKENIZER_DIR:-}" ]; then cp "$TOKENIZER_DIR"/tokenizer*.json "$ckpt/"; fi
  [ -f "$gguf" ] || PYTHONPATH=$PWD/gguf-py python3 convert_hf_to_gguf.py "$ckpt" --outtype bf16 \
    --outfile "$gguf" > "$out/llamacpp-convert.log" 2>&1
  b/bin/llama-bench -m "$gguf" -ngl 99 -fa 1 -p 512,8192 -n 128 -r 3 -o md 2>&1 | tee "$out/llamacpp-bench.md"
  b/bin/llama-bench -m "$gguf" -ngl 99 -fa 1 -p 0 -n 128 -d 512,4096,32768 -r 2 -o md 2>&1 |
    tee -a "$out/llamacpp-bench.md"
  b/bin/llama-batched-bench -m "$gguf" -ngl 99 -fa on -c 50000 -npp 512 -ntg 128 -npl 1,8,32,64 2>&1 |
    grep -E "^\|" | tee "$out/llamacpp-batched.md"
}

case "${1:-}" in
  build) build ;;
  bench) bench "$2" ;;
  *) echo "usage: $0 build | bench CKPT_DIR" >&2; exit 2 ;;
esac
