// drift score: teacher-forced fp32 logits [len, vocab] of a token sequence, written as
// safetensors (tensors "logits" and "ids"), with the sequence's perplexity on stdout.
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "apps/command_registry.h"
#include "apps/engine_options.h"
#include "core/engine.h"
#include "core/error.h"
#include "core/safetensors.h"

namespace po = boost::program_options;

namespace drift::app {
namespace {

// exp(mean over t of -log softmax(logits[t])[ids[t+1]]).
double perplexity(const Tensor& logits, const std::vector<int32_t>& ids) {
  if (ids.size() < 2) return NAN;
  const int64_t vocab = logits.dim(1);
  double nll = 0.0;
  for (size_t t = 0; t + 1 < ids.size(); ++t) {
    const float* row = logits.as<float>() + t * vocab;
    double max_v = row[0], sum = 0.0;
    for (int64_t v = 1; v < vocab; ++v) max_v = std::max<double>(max_v, row[v]);
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(row[v] - max_v);
    nll += -(row[ids[t + 1]] - max_v - std::log(sum));
  }
  return std::exp(nll / static_cast<double>(ids.size() - 1));
}

int run_score(const std::vector<std::string>& args) {
  EngineSource source;
  std::string ids_text, prompt, out_path;
  po::options_description desc("drift score options");
  desc.add_options()("help,h", "show this help");
  add_engine_options(desc, source);
  desc.add_options()
      ("ids", po::value(&ids_text), "token ids to score, comma-separated")
      ("prompt", po::value(&prompt), "text to score (tokenized as a prompt, BOS included)")
      ("out", po::value(&out_path), "write logits [len, vocab] (fp32) and ids to this .safetensors file");
  po::variables_map vm;
  if (!parse_command_line(args, desc, vm, "usage: drift score (--config F | --model DIR) --ids 1,2,3 --out F")) return 0;
  if (ids_text.empty() == prompt.empty()) fail("give exactly one of --ids or --prompt");
  if (vm.count("out") && out_path.empty()) fail("--out '': give the path of the .safetensors file to write");
  std::error_code ec;
  if (!out_path.empty() && std::filesystem::is_directory(out_path, ec))
    fail("--out '{}' is a directory; give the path of the .safetensors file to write", out_path);

  auto engine = Engine::from_config(resolve_engine_config(source));
  std::vector<int32_t> ids;
  if (!ids_text.empty()) {
    ids = parse_id_list(ids_text, "--ids");
  } else {
    if (!engine->tokenizer()) fail("--prompt needs a tokenizer, and the model directory has none; use --ids");
    ids = engine->tokenizer()->encode_prompt(prompt);
  }
  Tensor logits = engine->score(ids);
  if (!out_path.empty()) {
    Tensor id_tensor = Tensor::zeros({static_cast<int64_t>(ids.size())}, DType::I32);
    std::copy(ids.begin(), ids.end(), id_tensor.as<int32_t>());
    write_safetensors(out_path, {{"logits", logits}, {"ids", id_tensor}});
  }
  std::printf("tokens %zu  vocab %ld  perplexity %.4f%s%s\n", ids.size(), static_cast<long>(logits.dim(1)),
              perplexity(logits, ids), out_path.empty() ? "" : "  written to ", out_path.c_str());
  return 0;
}

}  // namespace

DRIFT_REGISTER_COMMAND(score, "score", "teacher-forced logits (and perplexity) of a token sequence", run_score);

}  // namespace drift::app
