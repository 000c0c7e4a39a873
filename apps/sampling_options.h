#pragma once
// The per-request options shared by the commands that generate (generate, chat): sampling,
// stop strings, speculation and prefix-cache choices, applied over the config's [generation].
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "apps/structured_output_options.h"
#include "core/config.h"
#include "core/sampling_params.h"

namespace drift::app {

struct SamplingArgs {
  std::optional<int64_t> max_new_tokens;
  std::optional<double> temperature, top_p, min_p;
  std::optional<double> presence_penalty, frequency_penalty, repetition_penalty;
  std::optional<int64_t> top_k, min_tokens;
  std::vector<std::string> logit_bias;  // TOKEN=BIAS
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  std::string speculative;  // "" = the config's [speculative]; "off"; or a draft provider's name
  std::string cache_salt;
  bool no_prefix_cache = false;
  bool full_verification = false;
  bool ignore_eos = false;
  StructuredOutputArgs structured;
};

void add_sampling_options(boost::program_options::options_description& desc, SamplingArgs& args);
// Reads the options add_sampling_options declared without a storage target.
void read_sampling_options(const boost::program_options::variables_map& vm, SamplingArgs& args);
// The config's defaults with the options applied; DriftError naming the option when a value is
// out of range.
SamplingParams sampling_params_from_args(const SamplingArgs& args, const GenerationSection& defaults);

}  // namespace drift::app
