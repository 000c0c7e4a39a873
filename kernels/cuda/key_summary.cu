// Page key summaries (SpecPV / Quest page selection): per listed page, the elementwise max and
// min of its keys over the page's filled slots, in fp32.
#include "kernels/cuda/dtype.cuh"

#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

template <typename T>
__global__ void key_summary_kernel(const T* keys, int64_t row, int64_t block_size, const int32_t* pages,
                                   const int32_t* filled, float* kmax, float* kmin) {
  const int64_t i = blockIdx.x;
  const T* first = keys + static_cast<int64_t>(pages[i]) * block_size * row;
  for (int64_t j = threadIdx.x; j < row; j += blockDim.x) {
    float hi = to_float(first[j]), lo = hi;
    for (int32_t slot = 1; slot < filled[i]; ++slot) {
      const float v = to_float(first[slot * row + j]);
      hi = fmaxf(hi, v);
      lo = fminf(lo, v);
    }
    kmax[i * row + j] = hi;
    kmin[i * row + j] = lo;
  }
}

}  // namespace

void key_summary(const void* keys, int64_t row_elems, int64_t block_size, const int32_t* pages, const int32_t* filled,
                 int64_t num_pages, float* kmax, float* kmin, ElemType storage, cudaStream_t stream) {
  if (num_pages <= 0) return;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    key_summary_kernel<T><<<static_cast<unsigned>(num_pages), 128, 0, stream>>>(static_cast<const T*>(keys), row_elems,
                                                                                block_size, pages, filled, kmax, kmin);
  });
}

}  // namespace drift::cuda
