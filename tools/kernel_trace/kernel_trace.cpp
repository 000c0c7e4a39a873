// Kernel timeline recorder for the GPU machine, which has Nsight Compute but no working Nsight
// Systems importer: loaded by the CUDA driver through CUDA_INJECTION64_PATH, it records every
// kernel's start and end with CUPTI's activity API -- kernels replayed from CUDA graphs one node
// at a time, so a graph-replayed decode step shows its real per-kernel times and the gaps between
// them (Nsight Compute times each kernel alone, serialised, which says little about small ones).
// Writes CSV (start_ns, end_ns, grid, block, graph_id, name) to $DRIFT_KERNEL_TRACE at exit.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

std::FILE* g_out = nullptr;
std::mutex g_mutex;
constexpr size_t kBufferBytes = 16u << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = kBufferBytes;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard lock(g_mutex);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    char name[96];
    std::snprintf(name, sizeof(name), "%s", k->name ? k->name : "?");
    for (char* c = name; *c; ++c)
      if (*c == ',') *c = ';';
    std::fprintf(g_out, "%llu,%llu,%d,%d,%u,%s\n", static_cast<unsigned long long>(k->start),
                 static_cast<unsigned long long>(k->end), k->gridX * k->gridY * k->gridZ,
                 k->blockX * k->blockY * k->blockZ, k->graphId, name);
  }
  std::free(buffer);
}

void flush_at_exit() {
  cuptiActivityFlushAll(1);
  std::lock_guard lock(g_mutex);
  if (g_out) std::fclose(g_out);
  g_out = nullptr;
}

}  // namespace

extern "C" int InitializeInjection() {
  const char* path = std::getenv("DRIFT_KERNEL_TRACE");
  g_out = std::fopen(path ? path : "kernel_trace.csv", "w");
  if (!g_out) return 0;
  std::fprintf(g_out, "start_ns,end_ns,grid,block,graph_id,name\n");
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
    return 0;
  std::atexit(flush_at_exit);
  return 1;
}
