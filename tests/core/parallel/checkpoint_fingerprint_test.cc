// A checkpoint's fingerprint, which each tensor-parallel rank reports with its ready message: the
// same checkpoint anywhere gives the same one; a different config.json or a different tensor does
// not.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/parallel/checkpoint_fingerprint.h"
#include "support/test_data.h"

namespace drift {
namespace {

namespace fs = std::filesystem;

TEST(CheckpointFingerprint, SameCheckpointSameFingerprintAnyChangeAnother) {
  const std::string stories = test::test_data_path("models/stories260K");
  const std::string copy = test::make_temp_dir("fingerprint") + "/stories";
  fs::create_directories(copy);
  for (const char* file : {"config.json", "model.safetensors"})
    fs::copy_file(fs::path(stories) / file, fs::path(copy) / file);
  EXPECT_EQ(checkpoint_fingerprint(copy), checkpoint_fingerprint(stories));  // another place, the same model
  EXPECT_NE(checkpoint_fingerprint(test::test_data_path("golden/llama-tiny")), checkpoint_fingerprint(stories));
  std::string config;
  {
    std::ifstream in(fs::path(copy) / "config.json");
    config.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = config.find("\"rms_norm_eps\"");
  ASSERT_NE(at, std::string::npos);
  config.insert(at, "\"note\": 1, ");
  std::ofstream(fs::path(copy) / "config.json") << config;
  EXPECT_NE(checkpoint_fingerprint(copy), checkpoint_fingerprint(stories));
}

}  // namespace
}  // namespace drift
