#include "workspace.h"

namespace eagle3 {

Workspace::Workspace(const Host& host, const std::vector<WorkspaceRole>& roles) {
  for (const WorkspaceRole& role : roles)
    if (role.elements > 0) buffers_[role.name] = host.alloc(role.dtype, {role.elements});
}

drift_tensor_t Workspace::get(const std::string& role, int32_t dtype, std::initializer_list<int64_t> shape) {
  int64_t wanted = 1;
  for (int64_t d : shape) wanted *= d;
  auto it = buffers_.find(role);
  if (it == buffers_.end() || it->second->dtype != dtype || numel(it->second.get()) < wanted)
    fail("workspace role '" + role + "' asks for " + std::to_string(wanted) +
         " elements, more than the memory plan's " +
         (it == buffers_.end() ? std::string("0") : std::to_string(numel(it->second.get()))));
  return view(it->second.get(), shape);
}

}  // namespace eagle3
