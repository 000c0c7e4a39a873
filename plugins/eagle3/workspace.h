#pragma once
// Workspace: the draft forward's temporaries, one buffer per role, allocated once at create at
// the size the memory plan gives it (memory_plan.h), so a step allocates nothing and the plugin
// holds exactly what it declared. get() hands out a contiguous view of the requested shape; a
// role the plan lacks, or a shape larger than planned, is a bug and throws naming both.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "host.h"
#include "memory_plan.h"

namespace eagle3 {

class Workspace {
 public:
  Workspace(const Host& host, const std::vector<WorkspaceRole>& roles);
  drift_tensor_t get(const std::string& role, int32_t dtype, std::initializer_list<int64_t> shape);

 private:
  std::map<std::string, Tensor> buffers_;
};

}  // namespace eagle3
