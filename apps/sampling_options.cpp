#include "apps/sampling_options.h"

#include <algorithm>

#include "apps/engine_options.h"
#include "core/error.h"

namespace po = boost::program_options;

namespace drift::app {

void add_sampling_options(po::options_description& desc, SamplingArgs& a) {
  desc.add_options()("max-new-tokens", po::value<int64_t>(), "tokens to generate per prompt")(
      "temperature", po::value<double>(), "0 = greedy")(
      "top-k", po::value<int64_t>(), "keep the k most likely tokens (0 = off)")("top-p", po::value<double>(),
                                                                                "nucleus sampling mass (1 = off)")(
      "min-p", po::value<double>(), "drop tokens below min_p x the top probability (0 = off)")(
      "seed", po::value<std::string>(), "sampling seed, 0 to 2^64-1 (same seed, same output)")(
      "presence-penalty", po::value<double>(), "subtracted from the logit of each token the output holds, [-2, 2]")(
      "frequency-penalty", po::value<double>(),
      "subtracted from a token's logit per occurrence in the output, [-2, 2]")(
      "repetition-penalty", po::value<double>(),
      "divides a positive logit (multiplies a negative one) of tokens in the prompt or output (1 = off)")(
      "logit-bias", po::value(&a.logit_bias), "TOKEN=BIAS (repeatable): added to that token id's logit, [-100, 100]")(
      "min-tokens", po::value<int64_t>(), "end-of-sequence and stop token ids cannot end the output before this many")(
      "ignore-eos", po::bool_switch(&a.ignore_eos), "keep generating past end-of-sequence tokens")(
      "stop", po::value(&a.stop), "stop string (repeatable): generation ends before it; it is never printed")(
      "speculative", po::value(&a.speculative),
      "speculative decoding for these prompts: off, or a configured draft provider's name (default: [speculative])")(
      "cache-salt", po::value(&a.cache_salt),
      "prefix-cache isolation key: only requests with the same salt share cached pages (default: none)")(
      "no-prefix-cache", po::bool_switch(&a.no_prefix_cache), "keep these prompts out of the prefix cache")(
      "full-verification", po::bool_switch(&a.full_verification),
      "verify drafts against the whole context even when [speculative] verification is a partial policy (specpv)");
  add_structured_output_options(desc, a.structured);
}

void read_sampling_options(const po::variables_map& vm, SamplingArgs& a) {
  if (vm.count("max-new-tokens")) a.max_new_tokens = vm["max-new-tokens"].as<int64_t>();
  if (vm.count("temperature")) a.temperature = vm["temperature"].as<double>();
  if (vm.count("top-k")) a.top_k = vm["top-k"].as<int64_t>();
  if (vm.count("top-p")) a.top_p = vm["top-p"].as<double>();
  if (vm.count("min-p")) a.min_p = vm["min-p"].as<double>();
  if (vm.count("seed")) a.seed = parse_uint64(vm["seed"].as<std::string>(), "--seed");
  if (vm.count("presence-penalty")) a.presence_penalty = vm["presence-penalty"].as<double>();
  if (vm.count("frequency-penalty")) a.frequency_penalty = vm["frequency-penalty"].as<double>();
  if (vm.count("repetition-penalty")) a.repetition_penalty = vm["repetition-penalty"].as<double>();
  if (vm.count("min-tokens")) a.min_tokens = vm["min-tokens"].as<int64_t>();
}

namespace {

// --logit-bias TOKEN=BIAS: a token id and a number.
std::pair<int32_t, double> parse_logit_bias(const std::string& text) {
  const size_t eq = text.find('=');
  const auto bad = [&] {
    return DriftError(fmt::format("--logit-bias {}: expected TOKEN=BIAS (a token id, a number)", text));
  };
  if (eq == std::string::npos) throw bad();
  int32_t token = 0;
  double bias = 0.0;
  try {
    size_t used = 0;
    const long long id = std::stoll(text.substr(0, eq), &used);
    if (used != eq || id < 0 || id > INT32_MAX) throw bad();
    token = static_cast<int32_t>(id);
    const std::string number = text.substr(eq + 1);
    bias = std::stod(number, &used);
    if (used != number.size()) throw bad();
  } catch (const std::logic_error&) {
    throw bad();
  }
  return {token, bias};
}

// [generation] was validated with the config, so an out-of-range value came from its CLI option
// (top_p -> --top-p).
void check_cli_sampling(const SamplingParams& params) {
  const auto bad = find_invalid_sampling_param(params);
  if (!bad) return;
  std::string option = bad->field;
  std::replace(option.begin(), option.end(), '_', '-');
  fail("--{} {}: {}", option, bad->value, bad->requirement);
}

}  // namespace

SamplingParams sampling_params_from_args(const SamplingArgs& a, const GenerationSection& defaults) {
  SamplingParams p = sampling_params_from(defaults);
  if (a.max_new_tokens) p.max_new_tokens = *a.max_new_tokens;
  if (a.temperature) p.temperature = *a.temperature;
  if (a.top_k) p.top_k = *a.top_k;
  if (a.top_p) p.top_p = *a.top_p;
  if (a.min_p) p.min_p = *a.min_p;
  if (a.seed) p.seed = *a.seed;
  if (a.presence_penalty) p.presence_penalty = *a.presence_penalty;
  if (a.frequency_penalty) p.frequency_penalty = *a.frequency_penalty;
  if (a.repetition_penalty) p.repetition_penalty = *a.repetition_penalty;
  if (a.min_tokens) p.min_tokens = *a.min_tokens;
  for (const std::string& entry : a.logit_bias) p.logit_bias.push_back(parse_logit_bias(entry));
  p.ignore_eos = a.ignore_eos;
  p.stop = a.stop;
  p.speculative = a.speculative;
  p.cache_salt = a.cache_salt;
  p.prefix_cache = !a.no_prefix_cache;
  p.full_verification = a.full_verification;
  p.structured_output = structured_output_from_args(a.structured);
  check_cli_sampling(p);
  return p;
}

}  // namespace drift::app
