// Weight validation on small broken copies of llama-tiny written to a temporary directory: a
// missing or mis-shaped tensor, and tensors config.json says the model does not have, are errors
// naming the tensor and the file (the right shard of a sharded checkpoint); harmless extras load
// with a warning.
#include "core/model/model_weights.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "support/checkpoint_copy.h"
#include "support/test_data.h"

namespace drift {
namespace {

class ModelWeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string source = test::test_data_path("golden/llama-tiny");
    ASSERT_FALSE(source.empty());
    llama_ = test::read_checkpoint(source);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `copy` and loads it; returns the load error ("" when it loaded).
  std::string load_error(const test::CheckpointCopy& copy, int num_shards = 1) {
    test::write_checkpoint(dir_, copy, DType::F32, num_shards);
    auto backend = create_backend("cpu");
    try {
      load_model_weights(dir_, load_model_config(dir_), *backend);
    } catch (const DriftError& e) {
      return e.what();
    }
    return "";
  }
  std::string file(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_ = test::make_temp_dir("drift-weights");
  test::CheckpointCopy llama_;
};

TEST_F(ModelWeightsTest, IntactCopyLoads) { EXPECT_EQ(load_error(llama_), ""); }

TEST_F(ModelWeightsTest, MissingTensorNamesTensorAndFile) {
  llama_.tensors.erase("model.layers.1.mlp.down_proj.weight");
  EXPECT_EQ(load_error(llama_),
            "tensor 'model.layers.1.mlp.down_proj.weight' not found in " + file("model.safetensors"));
}

TEST_F(ModelWeightsTest, MisShapedTensorNamesTensorFileAndBothShapes) {
  llama_.tensors["model.layers.0.self_attn.k_proj.weight"] = Tensor::zeros({16, 64});  // config: [2 * 16, 64]
  EXPECT_EQ(load_error(llama_), "tensor 'model.layers.0.self_attn.k_proj.weight' in " + file("model.safetensors") +
                                    " has shape [16, 64], expected [32, 64] from config.json");
}

TEST_F(ModelWeightsTest, MisShapedTensorInAShardNamesThatShard) {
  llama_.tensors["model.norm.weight"] = Tensor::zeros({63});
  const std::string error = load_error(llama_, 2);
  EXPECT_NE(error.find("tensor 'model.norm.weight' in " + file("model-00002-of-00002.safetensors") + " has shape [63]"),
            std::string::npos)
      << error;
}

struct ExtraTensor {
  const char* name;
  std::vector<int64_t> shape;
  const char* reason;
};

TEST_F(ModelWeightsTest, TensorsTheConfigExcludesAreErrors) {
  const std::vector<ExtraTensor> extras = {
      {"model.layers.0.self_attn.q_proj.bias", {64}, "attention_bias = false"},
      {"model.layers.2.input_layernorm.weight", {64}, "num_hidden_layers = 2"},
      {"model.layers.1.self_attn.q_norm.weight", {16}, "only qwen3 has q/k norms"},
      {"model.layers.0.mlp.gate_proj.bias", {160}, "no such tensor in this architecture"},
  };
  for (const ExtraTensor& extra : extras) {
    SCOPED_TRACE(extra.name);
    test::CheckpointCopy copy = llama_;
    copy.tensors[extra.name] = Tensor::zeros(extra.shape);
    EXPECT_EQ(load_error(copy), "tensor '" + std::string(extra.name) + "' in " + file("model.safetensors") +
                                    " is not used by the llama model config.json describes (" + extra.reason +
                                    "): the checkpoint and its config.json disagree");
  }
}

TEST_F(ModelWeightsTest, HarmlessExtrasLoadWithAWarning) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  spdlog::default_logger()->sinks().push_back(sink);
  llama_.tensors["model.layers.0.self_attn.rotary_emb.inv_freq"] = Tensor::zeros({8});
  llama_.config["tie_word_embeddings"] = true;  // lm_head.weight stays in the file, redundant now
  const std::string error = load_error(llama_);
  spdlog::default_logger()->sinks().pop_back();
  EXPECT_EQ(error, "");
  std::string log;
  for (const std::string& line : sink->last_formatted()) log += line;
  EXPECT_NE(log.find("'model.layers.0.self_attn.rotary_emb.inv_freq' in " + file("model.safetensors") + " is ignored"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("'lm_head.weight' in " + file("model.safetensors") + " is ignored: tie_word_embeddings = true"),
            std::string::npos)
      << log;
}

}  // namespace
}  // namespace drift
