#!/usr/bin/env bash
# Kernel timeline of the sweep's recorded forwards on the GPU machine (docs/cuda.md): every kernel
# of a graph replay with its real duration, through CUPTI (build/tools/kernel_trace, loaded by the
# driver via CUDA_INJECTION64_PATH). Nsight Compute times kernels one at a time, serialised and
# eager, which misstates short kernels; this shows the step as it runs.
# Usage: gpu_trace.sh CKPT_DIR [more drift bench --sweep options, e.g. --sweep-max-context 4096]
# Writes $OUT/kernel-trace.csv.xz, $OUT/kernel-trace.md (per graph, per kernel) and the sweep's output.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.deps/rt:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
ckpt=$1
shift
CUDA_INJECTION64_PATH=$PWD/build/tools/kernel_trace/libdrift_kernel_trace.so DRIFT_KERNEL_TRACE=$out/kernel-trace.csv \
  ./build/apps/drift bench --model "$ckpt" --backend cuda --sweep --sweep-only decode --sweep-repeats 5 "$@" \
  > "$out/trace-sweep.out" 2>&1 || { tail -5 "$out/trace-sweep.out"; exit 1; }
grep "^| decode" "$out/trace-sweep.out"
python3 scripts/kernel_trace_summary.py "$out/kernel-trace.csv" | tee "$out/kernel-trace.md"
xz -f "$out/kernel-trace.csv"
