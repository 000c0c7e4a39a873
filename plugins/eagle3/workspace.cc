#include "workspace.h"

namespace eagle3 {

drift_tensor_t Workspace::get(const std::string& role, int32_t dtype, std::initializer_list<int64_t> shape) {
  int64_t wanted = 1;
  for (int64_t d : shape) wanted *= d;
  Tensor& buffer = buffers_[role];
  if (buffer.empty() || buffer->dtype != dtype || numel(buffer.get()) < wanted) {
    buffer.reset();  // free first: the old buffer is no longer needed
    // Grow by half again, so a slowly rising batch does not reallocate every step.
    const int64_t capacity = std::max<int64_t>(wanted + wanted / 2, 64);
    buffer = host_.alloc(dtype, {capacity});
  }
  return view(buffer.get(), shape);
}

}  // namespace eagle3
