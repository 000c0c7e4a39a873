#pragma once
// Safetensors: read (mmap; single file or sharded through model.safetensors.index.json) and
// write checkpoints. Tensors are exposed zero-copy in their stored dtype; `to_f32` converts
// f32/f16/bf16 to fp32. Every malformed header, truncated file or missing tensor is a DriftError
// naming the file and the tensor.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace drift {

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void* data = nullptr;   // into the mapped file
  size_t nbytes = 0;
  std::string file;             // which file holds it (for error messages)
};

// The parsed header of a whole .safetensors file held in memory (8-byte little-endian header
// length, JSON header, data section). Every structural invariant of the format is checked: the
// header length fits the file, the JSON is an object of unique keys, each entry's dtype, shape and
// data_offsets agree, and the tensors tile the data section exactly (no overlap, no gap, nothing
// after the last one), as the reference implementation requires. TensorInfo::data points into
// `bytes`. Throws DriftError naming `file` and the tensor.
struct SafetensorsHeader {
  std::map<std::string, TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
};
SafetensorsHeader parse_safetensors_buffer(const uint8_t* bytes, size_t size, const std::string& file);

// model.safetensors.index.json's weight_map (tensor -> shard file). A shard must be a relative
// path inside the checkpoint folder ("../x", "/x" and "a/../../x" are errors naming the tensor).
std::map<std::string, std::string> parse_safetensors_index(const std::string& json_text,
                                                           const std::string& index_path);

// One mapped .safetensors file.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::string path_;
  void* mapping_ = nullptr;
  size_t mapping_size_ = 0;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// All tensors of a checkpoint directory (model.safetensors, or the shards named by
// model.safetensors.index.json), or of a single file path.
class SafetensorsCheckpoint {
 public:
  explicit SafetensorsCheckpoint(const std::string& dir_or_file);
  bool contains(const std::string& name) const;
  // Throws DriftError "tensor 'X' not found in <files>" when absent.
  const TensorInfo& get(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::string& description() const { return description_; }  // path(s) for messages

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorInfo*> index_;
  std::string description_;
};

// A host fp32 copy of a stored tensor (f32, f16 or bf16; other dtypes are an error).
Tensor to_f32(const TensorInfo& info);
// A host int32 copy of a stored integer tensor (i32, i64 whose values fit, or bool as 0/1; other
// dtypes and out-of-range values are errors naming the tensor and the file).
Tensor to_i32(const TensorInfo& info);
bool is_integer_dtype(DType dtype);  // I32, I64 or Bool

// Writes tensors (host memory, any of our dtypes) as one .safetensors file.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace drift
