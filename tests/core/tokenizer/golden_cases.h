#pragma once
// Golden tokenizer cases (../shared/golden/tokenizers/*.jsonl: {"text", "ids", "decoded"}) and
// small helpers shared by the tokenizer tests.
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"
#include "support/test_data.h"

namespace drift::test {

struct GoldenCase {
  std::string text;
  std::vector<int32_t> ids;
  std::string decoded;
};

inline std::vector<GoldenCase> load_golden_cases(const std::string& name) {
  std::vector<GoldenCase> cases;
  std::string path = test_data_path("golden/tokenizers/" + name + ".jsonl");
  if (path.empty()) return cases;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    cases.push_back({j["text"].get<std::string>(), j["ids"].get<std::vector<int32_t>>(),
                     j["decoded"].get<std::string>()});
  }
  return cases;
}

// Checks every case: encode == ids and decode(ids) == decoded. Returns the number that passed
// both (reported per tokenizer in the test log).
inline int check_golden_cases(const Tokenizer& tokenizer, const std::vector<GoldenCase>& cases,
                              const std::string& name) {
  int passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const GoldenCase& c = cases[i];
    std::vector<int32_t> ids = tokenizer.encode(c.text);
    std::string decoded = tokenizer.decode(c.ids);
    EXPECT_EQ(ids, c.ids) << name << " line " << i + 1 << " text: " << c.text;
    EXPECT_EQ(decoded, c.decoded) << name << " line " << i + 1;
    if (ids == c.ids && decoded == c.decoded) ++passed;
  }
  std::printf("[golden] %s: %d/%zu lines pass\n", name.c_str(), passed, cases.size());
  return passed;
}

}  // namespace drift::test
