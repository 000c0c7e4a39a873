#pragma once
// A checkpoint's fingerprint: a hash of its config.json and of every tensor's name, dtype and
// shape. Each tensor-parallel rank reports its own with its ready message, so ranks on machines
// holding different checkpoints at the same path are an error naming the rank, not wrong output.
#include <cstdint>
#include <string>

namespace drift {

uint64_t checkpoint_fingerprint(const std::string& dir);

}  // namespace drift
