#pragma once
// Workspace: the draft forward's temporaries, one growable buffer per role, reused across steps
// so a step allocates nothing once the largest batch has been seen (tensor_alloc on a device is
// a device allocation). get() hands out a contiguous view of the requested shape.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "host.h"

namespace eagle3 {

class Workspace {
 public:
  explicit Workspace(const Host& host) : host_(host) {}
  drift_tensor_t get(const std::string& role, int32_t dtype, std::initializer_list<int64_t> shape);

 private:
  const Host& host_;
  std::map<std::string, Tensor> buffers_;
};

}  // namespace eagle3
