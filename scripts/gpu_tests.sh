#!/usr/bin/env bash
# Runs the GPU test suites on the GPU machine (see docs/cuda.md): every CUDA op against the CPU
# backend, the engine on CUDA against the goldens, and speculation on CUDA against plain CUDA.
# Build here first (scripts/build.sh), stage the runtime (scripts/stage_gpu_run.sh), then on the
# GPU machine run this from the checkout. Logs go to $OUT (or ./gpu-logs).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.deps/rt:${LD_LIBRARY_PATH:-}
export DRIFT_TEST_DATA=${DRIFT_TEST_DATA:-$PWD/tests/data}
# This is the GPU machine: a missing or unusable device fails the suites instead of skipping them.
export DRIFT_REQUIRE_GPU=1
# No link to the build machine's paths is needed: the test binaries find the build folder (drift,
# plugins, the oracle) from their own location, and drift its plugins beside itself.
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || {
  echo "gpu_tests: nvidia-smi found no usable GPU"
  exit 1
}
status=0
# Runs a suite into its log, then shows the log's lines matching $2 (at most $3). The summary is
# read after the run: a `| head` on the live output would close the pipe early and SIGPIPE would
# kill the suite mid-run (it did, once engine_gpu_test printed more than 60 metric lines).
run_logged() {
  local log=$1 pattern=$2 limit=$3
  shift 3
  "$@" > "$out/$log" 2>&1 || status=1
  grep -E "$pattern" "$out/$log" | head -"$limit"
}
for t in ${GPU_TESTS:-backend_ops_test plugin_services_gpu_test engine_gpu_test moe_routing_test}; do
  echo "== $t"
  run_logged "$t.log" "metric|FAILED|PASSED|SKIPPED|Failure|error|Expected|Which|actual" 80 \
    ./build/tests/$t --gtest_brief=1 ${GTEST_ARGS:-}
done
# The attention suites again with the warpgroup (wgmma) prefill kernel off: the mma.sync fused
# kernel that other GPUs run at head_dim 128 must keep passing (and keep the same bits) here too.
echo "== backend_ops_test attention, DRIFT_CUDA_WGMMA_ATTENTION=0"
run_logged backend_ops_test-mma-sync.log "FAILED|PASSED|Failure" 20 \
  env DRIFT_CUDA_WGMMA_ATTENTION=0 ./build/tests/backend_ops_test --gtest_brief=1 --gtest_filter='*CudaAttentionTest*'
# compute-sanitizer memcheck over short speculative runs (greedy and sampled; stories260K runs the
# CUDA-core attention, llama-tiny the tensor-core one) and over the attention kernels' bit-exact
# chain test. MEMCHECK=0 skips it.
if [ "${MEMCHECK:-1}" != 0 ]; then
  echo "== memcheck"
  run_logged memcheck.log "ERROR SUMMARY|PASSED|FAILED" 10 \
    compute-sanitizer --tool memcheck --error-exitcode 1 --print-limit 20 ./build/tests/engine_gpu_test --gtest_brief=1 \
    --gtest_filter='Models/GpuSpeculationTest.*/stories260K:Models/GpuSpeculationTest.*/llamatiny'
  # The attention kernels a small model never reaches: the one-warp decode kernel (many split
  # tasks: the chain test's 8300-token prefix), the 64-row split and fused kernels and, at head_dim
  # 128 on sm_90, the 64-row warpgroup (wgmma) one (the 20-node chains behind 600 queries)
  # and the 128-row one prefill runs (whole prompts in one forward).
  run_logged memcheck-attention.log "ERROR SUMMARY|PASSED|FAILED" 10 \
    compute-sanitizer --tool memcheck --error-exitcode 1 --print-limit 20 ./build/tests/backend_ops_test --gtest_brief=1 \
    --gtest_filter='Storage/CudaAttentionTest.BatchInvariantAcrossCompositionAndChainVerification/bf16:Storage/CudaAttentionTest.PrefillRowsEqualTheSameQueriesDecodedAlone/bf16'
  # GPT-OSS: the windowed, sink-carrying flash paths (fused, split, one-warp decode, the merge's
  # window start) and the MoE kernels (routing, grouping, the expert GEMV and grouped GEMM).
  run_logged memcheck-windows.log "ERROR SUMMARY|PASSED|FAILED" 10 \
    compute-sanitizer --tool memcheck --error-exitcode 1 --print-limit 20 ./build/tests/backend_ops_test --gtest_brief=1 \
    --gtest_filter='Storage/CudaAttentionTest.WindowedLayersWithSinksBatchInvariant/bf16'
  run_logged memcheck-moe.log "ERROR SUMMARY|PASSED|FAILED" 10 \
    compute-sanitizer --tool memcheck --error-exitcode 1 --print-limit 20 ./build/tests/moe_routing_test --gtest_brief=1
  # Logits shaping's in-place kernel over rows of several adjustments each.
  run_logged memcheck-shaping.log "ERROR SUMMARY|PASSED|FAILED" 10 \
    compute-sanitizer --tool memcheck --error-exitcode 1 --print-limit 20 ./build/tests/plugin_services_gpu_test \
    --gtest_brief=1 --gtest_filter='*ShapedDevicePicks*:*MaskedDevicePicks*'
fi
exit $status
