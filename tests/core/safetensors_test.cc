#include "core/safetensors.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/model/model_config.h"
#include "support/test_data.h"

namespace drift {
namespace {

namespace fs = std::filesystem;

// Runs `fn`, expects a DriftError whose message contains every one of `parts`.
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected a DriftError";
  } catch (const DriftError& e) {
    std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

// Writes a safetensors-shaped file by hand so tests can corrupt any part of it.
void write_raw(const std::string& path, const std::string& header, const std::string& data,
               uint64_t header_len_override = 0) {
  uint64_t len = header_len_override ? header_len_override : header.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << header << data;
}

template <typename T>
Tensor make_tensor(std::vector<int64_t> shape, DType dtype, const std::vector<T>& values) {
  Tensor t = Tensor::zeros(std::move(shape), dtype);
  EXPECT_EQ(t.nbytes(), values.size() * sizeof(T));
  std::memcpy(t.data(), values.data(), t.nbytes());
  return t;
}

class SafetensorsTest : public ::testing::Test {
 protected:
  std::string dir_ = drift::test::make_temp_dir("drift-safetensors");
  std::string file(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  void TearDown() override { fs::remove_all(dir_); }
};

TEST(SafetensorsGolden, ReadsLlamaTinyCheckpointMatchingConfig) {
  std::string dir = drift::test::test_data_path("golden/llama-tiny");
  ASSERT_FALSE(dir.empty());
  ModelConfig config = load_model_config(dir);
  SafetensorsCheckpoint ckpt(dir);

  const TensorInfo& embed = ckpt.get("model.embed_tokens.weight");
  EXPECT_EQ(embed.dtype, DType::F32);
  EXPECT_EQ(embed.shape, (std::vector<int64_t>{config.vocab_size, config.hidden_size}));
  EXPECT_EQ(embed.shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(embed.nbytes, 512u * 64u * 4u);
  EXPECT_EQ(ckpt.get("model.layers.1.self_attn.k_proj.weight").shape,
            (std::vector<int64_t>{config.num_kv_heads * config.head_dim, config.hidden_size}));
  EXPECT_EQ(ckpt.get("model.layers.0.mlp.gate_proj.weight").shape,
            (std::vector<int64_t>{config.intermediate_size, config.hidden_size}));
  EXPECT_TRUE(ckpt.contains("lm_head.weight"));  // untied
  EXPECT_EQ(ckpt.names().size(), 2u + 9u * config.num_layers + 1u);

  // Norm weights are finite and not all zero: the mapping points at real data.
  Tensor norm = to_f32(ckpt.get("model.norm.weight"));
  ASSERT_EQ(norm.numel(), 64);
  float sum = 0;
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(std::isfinite(norm.as<float>()[i]));
    sum += std::fabs(norm.as<float>()[i]);
  }
  EXPECT_GT(sum, 0.f);

  // The same file opened directly carries the header metadata.
  SafetensorsFile single(dir + "/model.safetensors");
  EXPECT_EQ(single.metadata().at("format"), "pt");
  EXPECT_EQ(single.tensors().size(), ckpt.names().size());
}

TEST_F(SafetensorsTest, WriteReadRoundTripEveryDtype) {
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"f32", make_tensor<float>({2, 3}, DType::F32, {1.5f, -2.f, 0.f, 3.25f, 1e-30f, -7.f})},
      {"f16", make_tensor<uint16_t>({3}, DType::F16, {0x3c00, 0xc000, 0x0001})},
      {"bf16", make_tensor<uint16_t>({1, 2}, DType::BF16, {0x3f80, 0x4049})},
      {"i32", make_tensor<int32_t>({4}, DType::I32, {0, -1, 2147483647, 42})},
      {"empty", Tensor::zeros({0, 4}, DType::F32)},
  };
  std::string path = file("rt.safetensors");
  write_safetensors(path, tensors, {{"format", "pt"}, {"note", "round trip"}});

  // The data section starts 8-byte aligned.
  std::ifstream raw(path, std::ios::binary);
  uint64_t header_len = 0;
  raw.read(reinterpret_cast<char*>(&header_len), 8);
  EXPECT_EQ(header_len % 8, 0u);

  SafetensorsCheckpoint ckpt(path);
  EXPECT_EQ(ckpt.names().size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    const TensorInfo& info = ckpt.get(name);
    EXPECT_EQ(info.dtype, t.dtype()) << name;
    EXPECT_EQ(info.shape, t.shape()) << name;
    ASSERT_EQ(info.nbytes, t.nbytes()) << name;
    EXPECT_EQ(std::memcmp(info.data, t.data(), t.nbytes()), 0) << name;
    EXPECT_EQ(info.file, path);
  }
  SafetensorsFile f(path);
  EXPECT_EQ(f.metadata().at("note"), "round trip");

  Tensor back = to_f32(ckpt.get("f32"));
  EXPECT_EQ(back.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_FLOAT_EQ(back.as<float>()[3], 3.25f);
  EXPECT_EQ(to_f32(ckpt.get("bf16")).as<float>()[1], 3.140625f);
}

// Writes `bits` as one tensor of `dtype`, reads it back through to_f32.
std::vector<float> convert(const std::string& path, DType dtype, const std::vector<uint16_t>& bits) {
  write_safetensors(path, {{"t", make_tensor<uint16_t>({static_cast<int64_t>(bits.size())}, dtype, bits)}});
  SafetensorsCheckpoint ckpt(path);
  Tensor t = to_f32(ckpt.get("t"));
  return {t.as<float>(), t.as<float>() + t.numel()};
}

TEST_F(SafetensorsTest, F16ToF32IsExact) {
  std::vector<float> v = convert(file("f16.safetensors"), DType::F16,
                                 {0x3c00, 0xc000, 0x3555, 0x7bff, 0x0400, 0x0001, 0x03ff, 0x0200, 0x8000,
                                  0x7c00, 0xfc00, 0x7e00, 0x8001});
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], 0.333251953125f);            // nearest half to 1/3
  EXPECT_EQ(v[3], 65504.0f);                   // largest finite half
  EXPECT_EQ(v[4], std::ldexp(1.0f, -14));      // smallest normal
  EXPECT_EQ(v[5], std::ldexp(1.0f, -24));      // smallest subnormal
  EXPECT_EQ(v[6], std::ldexp(1023.0f, -24));   // largest subnormal
  EXPECT_EQ(v[7], std::ldexp(1.0f, -15));
  EXPECT_EQ(v[8], 0.0f);
  EXPECT_TRUE(std::signbit(v[8]));             // -0 keeps its sign
  EXPECT_EQ(v[9], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[10], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(v[11]));
  EXPECT_EQ(v[12], -std::ldexp(1.0f, -24));
}

TEST_F(SafetensorsTest, Bf16ToF32IsExact) {
  std::vector<float> v =
      convert(file("bf16.safetensors"), DType::BF16, {0x3f80, 0xc040, 0x4049, 0x7f80, 0xff80, 0x7fc0, 0x0001, 0x8000});
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -3.0f);
  EXPECT_EQ(v[2], 3.140625f);
  EXPECT_EQ(v[3], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[4], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(v[5]));
  EXPECT_EQ(v[6], std::bit_cast<float>(0x00010000u));  // subnormal survives
  EXPECT_TRUE(std::signbit(v[7]));
}

TEST_F(SafetensorsTest, ToF32RejectsInt32NamingTensorAndFile) {
  std::string path = file("i.safetensors");
  write_safetensors(path, {{"ids", make_tensor<int32_t>({1}, DType::I32, {7})}});
  SafetensorsCheckpoint ckpt(path);
  expect_error([&] { to_f32(ckpt.get("ids")); }, {"ids", path, "int32"});
}

TEST_F(SafetensorsTest, LoadsShardedCheckpointThroughIndex) {
  write_safetensors(file("model-00001-of-00002.safetensors"),
                    {{"a.weight", make_tensor<float>({2}, DType::F32, {1.f, 2.f})},
                     {"b.weight", make_tensor<float>({1}, DType::F32, {3.f})}});
  write_safetensors(file("model-00002-of-00002.safetensors"),
                    {{"c.weight", make_tensor<uint16_t>({1}, DType::BF16, {0x4000})}});
  nlohmann::json index = {{"metadata", {{"total_size", 16}}},
                          {"weight_map",
                           {{"a.weight", "model-00001-of-00002.safetensors"},
                            {"b.weight", "model-00001-of-00002.safetensors"},
                            {"c.weight", "model-00002-of-00002.safetensors"}}}};
  std::ofstream(file("model.safetensors.index.json")) << index.dump(2);

  SafetensorsCheckpoint ckpt(dir_);
  EXPECT_EQ(ckpt.names(), (std::vector<std::string>{"a.weight", "b.weight", "c.weight"}));
  EXPECT_EQ(ckpt.get("a.weight").file, file("model-00001-of-00002.safetensors"));
  EXPECT_EQ(ckpt.get("c.weight").file, file("model-00002-of-00002.safetensors"));
  EXPECT_EQ(to_f32(ckpt.get("c.weight")).as<float>()[0], 2.0f);
  EXPECT_EQ(to_f32(ckpt.get("b.weight")).as<float>()[0], 3.0f);
  // Missing tensors name every shard searched.
  expect_error([&] { ckpt.get("d.weight"); },
               {"d.weight", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"});
}

TEST_F(SafetensorsTest, IndexNamingMissingShardIsAnError) {
  write_safetensors(file("model-00001-of-00002.safetensors"),
                    {{"a.weight", make_tensor<float>({1}, DType::F32, {1.f})}});
  nlohmann::json index = {{"weight_map",
                           {{"a.weight", "model-00001-of-00002.safetensors"},
                            {"b.weight", "model-00002-of-00002.safetensors"}}}};
  std::ofstream(file("model.safetensors.index.json")) << index.dump();
  expect_error([&] { SafetensorsCheckpoint ckpt(dir_); },
               {"model-00002-of-00002.safetensors", "b.weight", "model.safetensors.index.json"});
}

TEST_F(SafetensorsTest, IndexNamingTensorAbsentFromItsShardIsAnError) {
  write_safetensors(file("s1.safetensors"), {{"a.weight", make_tensor<float>({1}, DType::F32, {1.f})}});
  nlohmann::json index = {{"weight_map", {{"a.weight", "s1.safetensors"}, {"z.weight", "s1.safetensors"}}}};
  std::ofstream(file("model.safetensors.index.json")) << index.dump();
  expect_error([&] { SafetensorsCheckpoint ckpt(dir_); }, {"z.weight", "s1.safetensors"});
}

TEST_F(SafetensorsTest, MissingPathsNameThePath) {
  std::string missing = file("no-such-dir");
  expect_error([&] { SafetensorsCheckpoint ckpt(missing); }, {missing});
  // A directory without any checkpoint file.
  expect_error([&] { SafetensorsCheckpoint ckpt(dir_); }, {dir_, "model.safetensors"});
  expect_error([&] { SafetensorsFile f(file("absent.safetensors")); }, {"absent.safetensors"});
}

TEST_F(SafetensorsTest, GetMissingTensorNamesTensorAndFile) {
  std::string path = file("one.safetensors");
  write_safetensors(path, {{"a", make_tensor<float>({1}, DType::F32, {1.f})}});
  SafetensorsCheckpoint ckpt(path);
  EXPECT_TRUE(ckpt.contains("a"));
  EXPECT_FALSE(ckpt.contains("b"));
  expect_error([&] { ckpt.get("b"); }, {"'b'", path});
}

TEST_F(SafetensorsTest, EmptyFileIsAnError) {
  std::string path = file("empty.safetensors");
  std::ofstream(path).close();
  expect_error([&] { SafetensorsFile f(path); }, {path, "too small"});
}

TEST_F(SafetensorsTest, TruncatedHeaderLengthIsAnError) {
  std::string path = file("short.safetensors");
  std::ofstream(path, std::ios::binary) << "abc";
  expect_error([&] { SafetensorsFile f(path); }, {path});
}

TEST_F(SafetensorsTest, HeaderLengthBeyondFileIsAnError) {
  std::string path = file("long.safetensors");
  write_raw(path, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "", 1 << 20);
  expect_error([&] { SafetensorsFile f(path); }, {path, "header length 1048576", "exceeds the file size"});
}

TEST_F(SafetensorsTest, TruncatedHeaderJsonIsAnError) {
  // The length claims more header than remains (the file was cut inside the JSON).
  std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  std::string path = file("cut.safetensors");
  write_raw(path, header.substr(0, 20), "", header.size());
  expect_error([&] { SafetensorsFile f(path); }, {path});
}

TEST_F(SafetensorsTest, CorruptJsonIsAnError) {
  std::string path = file("corrupt.safetensors");
  write_raw(path, R"({"a": {"dtype": "F32", "shape": [1], )", "");
  expect_error([&] { SafetensorsFile f(path); }, {path, "corrupt JSON"});
}

TEST_F(SafetensorsTest, OffsetsBeyondFileAreAnError) {
  std::string path = file("offsets.safetensors");
  write_raw(path, R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", std::string(8, '\0'));
  expect_error([&] { SafetensorsFile f(path); }, {path, "'w'", "beyond"});
}

TEST_F(SafetensorsTest, UnknownDtypeIsAnError) {
  std::string path = file("dtype.safetensors");
  write_raw(path, R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", std::string(8, '\0'));
  expect_error([&] { SafetensorsFile f(path); }, {path, "'w'", "F64"});
}

TEST_F(SafetensorsTest, ShapeBytesMismatchIsAnError) {
  std::string path = file("mismatch.safetensors");
  write_raw(path, R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,16]}})", std::string(16, '\0'));
  expect_error([&] { SafetensorsFile f(path); }, {path, "'w'", "16 bytes", "24"});
}

TEST_F(SafetensorsTest, MalformedEntriesAreErrors) {
  std::string path = file("bad.safetensors");
  write_raw(path, R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", "");
  expect_error([&] { SafetensorsFile f(path); }, {path, "'w'", "dimension"});
  write_raw(path, R"({"w":{"dtype":"F32","shape":[1]}})", std::string(4, '\0'));
  expect_error([&] { SafetensorsFile f(path); }, {path, "'w'", "data_offsets"});
  write_raw(path, R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", std::string(4, '\0'));
  expect_error([&] { SafetensorsFile f(path); }, {path, "'w'", "reversed"});
}

TEST_F(SafetensorsTest, WriteRejectsDuplicateNames) {
  Tensor t = Tensor::zeros({1});
  expect_error([&] { write_safetensors(file("dup.safetensors"), {{"x", t}, {"x", t}}); }, {"'x'", "dup.safetensors"});
}

// Hardening item 3: every structural invariant of the format is checked, so a corrupt file is an
// error and never garbage weights.
TEST_F(SafetensorsTest, OverlappingTensorsAreAnError) {
  std::string path = file("overlap.safetensors");
  write_raw(path,
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
            std::string(12, '\0'));
  expect_error([&] { SafetensorsFile f(path); }, {path, "'b'", "overlaps tensor 'a'"});
  // Two tensors sharing the same bytes are the same overlap.
  write_raw(path,
            R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
            std::string(4, '\0'));
  expect_error([&] { SafetensorsFile f(path); }, {path, "overlaps"});
}

TEST_F(SafetensorsTest, RepeatedKeysAreAnError) {
  std::string path = file("repeat.safetensors");
  write_raw(path,
            R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
            std::string(8, '\0'));
  expect_error([&] { SafetensorsFile f(path); }, {path, "key 'w' appears more than once"});
  write_raw(path, R"({"w":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0'));
  expect_error([&] { SafetensorsFile f(path); }, {path, "key 'dtype' appears more than once"});
}

TEST_F(SafetensorsTest, BytesOwnedByNoTensorAreAnError) {
  std::string path = file("gap.safetensors");
  write_raw(path,
            R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
            std::string(12, '\0'));
  expect_error([&] { SafetensorsFile f(path); }, {path, "bytes [4, 8)", "before tensor 'b'"});
  write_raw(path, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", std::string(6, '\0'));
  expect_error([&] { SafetensorsFile f(path); }, {path, "bytes [4, 6) at the end"});
  write_raw(path, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, '\0'));
  expect_error([&] { SafetensorsFile f(path); }, {path, "bytes [0, 4)"});
}

TEST_F(SafetensorsTest, HeaderMustBeAJsonObjectStartingTheHeader) {
  std::string path = file("lead.safetensors");
  write_raw(path, R"(  {"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0'));
  expect_error([&] { SafetensorsFile f(path); }, {path, "must start with '{'"});
  write_raw(path, "", "");
  expect_error([&] { SafetensorsFile f(path); }, {path, "must start with '{'"});
  // Trailing spaces pad the header (allowed, and what write_safetensors does for alignment).
  write_raw(path, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}   )", std::string(4, '\0'));
  EXPECT_EQ(SafetensorsFile(path).tensors().size(), 1u);
}

TEST_F(SafetensorsTest, ParsesABufferWithoutAFile) {
  std::string header = R"({"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})";
  std::string bytes(8, '\0');
  uint64_t len = header.size();
  std::memcpy(bytes.data(), &len, 8);
  bytes += header + std::string("\x80\x3f\x00\x40", 4);
  SafetensorsHeader parsed =
      parse_safetensors_buffer(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "mem");
  ASSERT_EQ(parsed.tensors.count("a"), 1u);
  EXPECT_EQ(parsed.metadata.at("format"), "pt");
  EXPECT_EQ(to_f32(parsed.tensors.at("a")).as<float>()[0], 1.0f);
  EXPECT_EQ(to_f32(parsed.tensors.at("a")).as<float>()[1], 2.0f);
}

TEST_F(SafetensorsTest, IndexMayNameOnlyFilesInsideTheCheckpointFolder) {
  const std::string outside = drift::test::make_temp_dir("drift-safetensors-outside");
  write_safetensors((fs::path(outside) / "model.safetensors").string(),
                    {{"a.weight", make_tensor<float>({1}, DType::F32, {1.f})}});
  const std::string escape = "../" + fs::path(outside).filename().string() + "/model.safetensors";
  for (const std::string& shard : {escape, (fs::path(outside) / "model.safetensors").string(),
                                   std::string("sub/../../x.safetensors"), std::string("")}) {
    nlohmann::json index = {{"weight_map", {{"a.weight", shard}}}};
    std::ofstream(file("model.safetensors.index.json")) << index.dump();
    expect_error([&] { SafetensorsCheckpoint ckpt(dir_); },
                 {"model.safetensors.index.json", "a.weight", "not a file inside the checkpoint folder"});
  }
  fs::remove_all(outside);
  // A subfolder inside the checkpoint is fine.
  fs::create_directories(file("shards"));
  write_safetensors(file("shards/s1.safetensors"), {{"a.weight", make_tensor<float>({1}, DType::F32, {1.f})}});
  std::ofstream(file("model.safetensors.index.json")) << R"({"weight_map":{"a.weight":"shards/s1.safetensors"}})";
  EXPECT_EQ(SafetensorsCheckpoint(dir_).names(), std::vector<std::string>{"a.weight"});
}

TEST_F(SafetensorsTest, IndexWithRepeatedTensorIsAnError) {
  expect_error([&] { parse_safetensors_index(R"({"weight_map":{"a":"x.safetensors","a":"y.safetensors"}})", "idx"); },
               {"idx", "key 'a' appears more than once"});
}

TEST_F(SafetensorsTest, ADirectoryIsNotASafetensorsFile) {
  fs::create_directories(file("model.safetensors"));
  expect_error([&] { SafetensorsCheckpoint ckpt(dir_); }, {"model.safetensors", "not a regular file"});
}

}  // namespace
}  // namespace drift
