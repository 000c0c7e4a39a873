// Tree attention in the verify forward: for a draft tree verified in ONE ragged forward (mixed
// with another sequence's prefill chunk and a third one's decode token), the logits of the root
// and of every node equal a plain causal forward of that node's root-to-node path, within fp32
// rounding -- also under gptoss-tiny's sliding windows, which a node measures from its own
// position (the prefix's depth plus its own), not from its slot. The batch comes from the engine's own builder
// (core/batch_builder), so a wrong position, slot, visible length or mask bit shows up as wrong logits.
#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "core/backend.h"
#include "core/batch_builder.h"
#include "core/model/model_config.h"
#include "core/model/model_runner.h"
#include "core/model/model_weights.h"
#include "support/test_data.h"

namespace drift {
namespace {

constexpr int64_t kBlockSize = 4;  // small pages: the tree's slots cross page boundaries
constexpr int64_t kPages = 256;

struct Model {
  std::unique_ptr<Backend> backend = create_backend("cpu");
  std::unique_ptr<ModelRunner> runner;
  KVCacheManager kv{kPages, kBlockSize};

  explicit Model(const std::string& dir) {
    ModelConfig config = load_model_config(dir);
    runner =
        std::make_unique<ModelRunner>(config, load_model_weights(dir, config, *backend), *backend, kPages, kBlockSize);
  }
  int64_t vocab() const { return runner->vocab_size(); }

  // Runs `scheduled` (slots already appended) and returns its logits rows.
  Tensor run(const SchedulerOutput& scheduled) { return runner->forward(build_forward_batch(scheduled, kv)); }

  // Plain causal forward of a whole token sequence in a fresh KV sequence; the last row's logits.
  std::vector<float> last_logits(const std::vector<int32_t>& tokens) {
    Sequence s;
    s.prompt = tokens;
    s.kv = kv.create_sequence();
    EXPECT_TRUE(kv.append(s.kv, static_cast<int64_t>(tokens.size())));
    SchedulerOutput plan;
    plan.chunks.push_back({&s, 0, static_cast<int64_t>(tokens.size()), true, {}});
    Tensor logits = run(plan);
    kv.free(s.kv);
    return {logits.as<float>(), logits.as<float>() + vocab()};
  }
};

// A random tree of `n` nodes: each node's parent is uniform among the root and earlier nodes,
// sibling tokens distinct.
DraftTree random_tree(int64_t n, int64_t vocab, std::mt19937& rng) {
  DraftTree tree;
  while (static_cast<int64_t>(tree.size()) < n) {
    const auto parent = static_cast<int32_t>(std::uniform_int_distribution<int64_t>(-1, tree.size() - 1)(rng));
    const auto token = static_cast<int32_t>(std::uniform_int_distribution<int64_t>(0, vocab - 1)(rng));
    if (tree.child_with_token(parent, token) >= 0) continue;
    tree.parents.push_back(parent);
    tree.tokens.push_back(token);
  }
  return tree;
}

// A broom of `n` nodes: six siblings, then a chain under the last one. Its deep nodes' windows
// (gptoss-tiny's 16) start among their own ancestors, which sit five slots past their positions.
DraftTree random_broom(int64_t n, int64_t vocab, std::mt19937& rng) {
  DraftTree tree;
  for (int32_t i = 0; i < n; ++i) {
    tree.parents.push_back(i < 6 ? -1 : i - 1);
    tree.tokens.push_back(i < 6 ? i : static_cast<int32_t>(std::uniform_int_distribution<int64_t>(0, vocab - 1)(rng)));
  }
  return tree;
}

std::vector<int32_t> path_tokens(const DraftTree& tree, int32_t node) {
  std::vector<int32_t> path;
  for (; node >= 0; node = tree.parents[node]) path.push_back(tree.tokens[node]);
  std::reverse(path.begin(), path.end());
  return path;
}

double max_relative_diff(const float* ours, const std::vector<float>& reference) {
  double diff = 0, scale = 1;
  for (size_t v = 0; v < reference.size(); ++v) {
    diff = std::max(diff, static_cast<double>(std::fabs(ours[v] - reference[v])));
    scale = std::max(scale, static_cast<double>(std::fabs(reference[v])));
  }
  return diff / scale;
}

class TreeVerifyTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TreeVerifyTest, EveryNodeSeesExactlyItsPath) {
  const std::string dir = test::test_data_path(GetParam());
  ASSERT_FALSE(dir.empty());
  Model m(dir);
  // A model with sliding windows (gptoss-tiny: 16) gets prompts past them, so that every path's
  // window cuts its prefix; the others keep short ones (the test recomputes every path).
  const std::vector<LayerSpec> layers = load_model_config(dir).layers;
  const bool windowed =
      std::any_of(layers.begin(), layers.end(), [](const LayerSpec& l) { return l.attention_window > 0; });
  std::mt19937 rng(7);
  auto random_tokens = [&](int64_t n) {
    std::vector<int32_t> ids(n);
    for (auto& id : ids) id = static_cast<int32_t>(std::uniform_int_distribution<int64_t>(1, m.vocab() - 1)(rng));
    return ids;
  };
  // 70 nodes: the mask takes two 64-bit words; -26: a broom of 26, 21 deep.
  for (int64_t size : {1, 7, 23, 70, -26}) {
    const int64_t nodes = std::abs(size);
    // The verifying sequence: its committed prefix is in the cache, its last token is the root.
    Sequence verifying;
    verifying.prompt = random_tokens(windowed ? 25 : 9);
    verifying.kv = m.kv.create_sequence();
    const int64_t prefix = static_cast<int64_t>(verifying.prompt.size()) - 1;
    ASSERT_TRUE(m.kv.append(verifying.kv, prefix));
    SchedulerOutput prefill;
    prefill.chunks.push_back({&verifying, 0, prefix, false, {}});
    m.run(prefill);

    // One forward: another sequence's prefill chunk, the verify tree, a third one's first token.
    Sequence other, single;
    other.prompt = random_tokens(windowed ? 20 : 6);
    single.prompt = random_tokens(1);
    for (Sequence* s : {&other, &single}) {
      s->kv = m.kv.create_sequence();
      ASSERT_TRUE(m.kv.append(s->kv, static_cast<int64_t>(s->prompt.size())));
    }
    DraftTree tree = size < 0 ? random_broom(nodes, m.vocab(), rng) : random_tree(nodes, m.vocab(), rng);
    ASSERT_TRUE(m.kv.append(verifying.kv, 1 + nodes));
    SchedulerOutput step;
    step.chunks.push_back({&other, 0, static_cast<int64_t>(other.prompt.size()), true, {}});
    step.chunks.push_back({&verifying, prefix, 1 + nodes, true, tree});
    step.chunks.push_back({&single, 0, 1, true, {}});
    Tensor logits = m.run(step);
    ASSERT_EQ(logits.dim(0), 1 + (1 + nodes) + 1);

    const float* rows = logits.as<float>();
    EXPECT_LE(max_relative_diff(rows, m.last_logits(other.prompt)), 1e-5)
        << nodes << " nodes: the prefill beside the tree";
    EXPECT_LE(max_relative_diff(rows + (2 + nodes) * m.vocab(), m.last_logits(single.prompt)), 1e-5) << "decode beside";
    EXPECT_LE(max_relative_diff(rows + m.vocab(), m.last_logits(verifying.prompt)), 1e-5) << "the root";
    for (int32_t i = 0; i < nodes; ++i) {
      std::vector<int32_t> path = verifying.prompt;
      for (int32_t t : path_tokens(tree, i)) path.push_back(t);
      EXPECT_LE(max_relative_diff(rows + (2 + i) * m.vocab(), m.last_logits(path)), 1e-5)
          << nodes << " nodes: node " << i << " (parent " << tree.parents[i] << ")";
    }
    for (Sequence* s : {&verifying, &other, &single}) m.kv.free(s->kv);
    m.kv.check_integrity();
    EXPECT_EQ(m.kv.num_free_pages(), kPages);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, TreeVerifyTest,
                         ::testing::Values("golden/llama-tiny", "golden/qwen2-tiny", "golden/qwen3-tiny",
                                           "golden/gptoss-tiny", "models/stories260K"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace_if(
                               name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return name;
                         });

}  // namespace
}  // namespace drift
