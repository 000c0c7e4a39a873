// llama_cpp_greedy: greedy decoding with llama.cpp on the CPU, for DriftEngine's reference data
// (tests/data/smollm2, written by tools/smollm2/record_llama_cpp.sh).
//
// Our own program over llama.cpp's public C API (llama.h) only; it is not part of the DriftEngine
// build. Build (record_llama_cpp.sh does this):
//   g++ -std=c++17 -O2 tools/smollm2/llama_cpp_greedy.cpp -I LLAMA_SRC/include -I LLAMA_SRC/ggml/include
//       -L LLAMA_BUILD/bin -lllama -lggml -lggml-base -Wl,-rpath,LLAMA_BUILD/bin -o llama_cpp_greedy
// Run:
//   llama_cpp_greedy --model MODEL.gguf [--threads N] [--kv-f32] < requests.jsonl > results.jsonl
//     (--kv-f32: fp32 KV cache instead of llama.cpp's default f16)
//   llama_cpp_greedy --model MODEL.gguf --print-chat-template   # the GGUF's tokenizer.chat_template
//
// Input: one JSON object per line,
//   {"prompt_ids": [...], "n_predict": 48, "stop_at_eog": false, ...any other fields...}
// Output: one JSON object per input line: the input's fields plus
//   "output_ids": greedy tokens (an end-of-generation token that stopped it included),
//   "top2_ids":   per step, the runner-up token,
//   "margins":    per step, logit(top-1) - logit(top-2) (rounded to 1e-4),
//   "text":       llama_detokenize of output_ids without end-of-generation tokens.
// Ties are broken towards the lower token id (as an argmax over the logits does). Each request
// runs alone in sequence 0 of an emptied KV cache; the whole prompt is one llama_decode call.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llama.h"

namespace {

void quiet_log(enum ggml_log_level level, const char* text, void*) {
  if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "llama_cpp_greedy: %s\n", message.c_str());
  std::exit(1);
}

std::string detokenize(const llama_vocab* vocab, const std::vector<llama_token>& ids) {
  std::string text(ids.size() * 16 + 16, '\0');
  int32_t n = llama_detokenize(vocab, ids.data(), static_cast<int32_t>(ids.size()), text.data(),
                               static_cast<int32_t>(text.size()), /*remove_special=*/false, /*unparse_special=*/false);
  if (n < 0) {
    text.assign(static_cast<size_t>(-n), '\0');
    n = llama_detokenize(vocab, ids.data(), static_cast<int32_t>(ids.size()), text.data(),
                         static_cast<int32_t>(text.size()), false, false);
  }
  if (n < 0) die("llama_detokenize failed");
  text.resize(static_cast<size_t>(n));
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path;
  int threads = 2;
  int n_ctx = 4096;
  bool print_chat_template = false;
  bool kv_f32 = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die("missing value for " + arg);
      return argv[++i];
    };
    if (arg == "--model" || arg == "-m")
      model_path = value();
    else if (arg == "--threads" || arg == "-t")
      threads = std::stoi(value());
    else if (arg == "--ctx")
      n_ctx = std::stoi(value());
    else if (arg == "--print-chat-template")
      print_chat_template = true;
    else if (arg == "--kv-f32")
      kv_f32 = true;
    else
      die("unknown argument " + arg + " (usage: llama_cpp_greedy --model M.gguf [--threads N] [--ctx N] < in.jsonl)");
  }
  if (model_path.empty()) die("--model is required");

  llama_log_set(quiet_log, nullptr);
  llama_backend_init();

  llama_model_params mparams = llama_model_default_params();
  mparams.n_gpu_layers = 0;  // CPU only
  llama_model* model = llama_model_load_from_file(model_path.c_str(), mparams);
  if (!model) die("cannot load " + model_path);
  if (print_chat_template) {
    const char* tmpl = llama_model_chat_template(model, nullptr);
    if (!tmpl) die(model_path + " has no chat template");
    std::fputs(tmpl, stdout);
    llama_model_free(model);
    return 0;
  }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int32_t n_vocab = llama_vocab_n_tokens(vocab);

  llama_context_params cparams = llama_context_default_params();
  cparams.n_ctx = static_cast<uint32_t>(n_ctx);
  cparams.n_batch = static_cast<uint32_t>(n_ctx);
  cparams.n_seq_max = 1;
  cparams.n_threads = threads;
  cparams.n_threads_batch = threads;
  cparams.no_perf = true;
  if (kv_f32) cparams.type_k = cparams.type_v = GGML_TYPE_F32;
  llama_context* ctx = llama_init_from_model(model, cparams);
  if (!ctx) die("cannot create a context");

  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    nlohmann::json request = nlohmann::json::parse(line);
    std::vector<llama_token> prompt = request.at("prompt_ids").get<std::vector<llama_token>>();
    const int n_predict = request.value("n_predict", 48);
    const bool stop_at_eog = request.value("stop_at_eog", false);
    if (prompt.empty()) die("empty prompt_ids");
    if (static_cast<int>(prompt.size()) + n_predict > n_ctx) die("prompt + n_predict exceeds --ctx");

    llama_memory_clear(llama_get_memory(ctx), true);
    std::vector<llama_token> output, top2;
    std::vector<double> margins;
    std::vector<llama_token> next = prompt;
    for (int step = 0; step < n_predict; ++step) {
      if (llama_decode(ctx, llama_batch_get_one(next.data(), static_cast<int32_t>(next.size()))) != 0) {
        die("llama_decode failed");
      }
      const float* logits = llama_get_logits_ith(ctx, -1);
      int32_t best = 0, second = -1;
      for (int32_t t = 1; t < n_vocab; ++t) {
        if (logits[t] > logits[best]) {
          second = best;
          best = t;
        } else if (second < 0 || logits[t] > logits[second]) {
          second = t;
        }
      }
      output.push_back(best);
      top2.push_back(second);
      margins.push_back(std::round(static_cast<double>(logits[best] - logits[second]) * 1e4) / 1e4);
      if (stop_at_eog && llama_vocab_is_eog(vocab, best)) break;
      next.assign(1, best);
    }
    std::vector<llama_token> text_ids;
    for (llama_token t : output)
      if (!llama_vocab_is_eog(vocab, t)) text_ids.push_back(t);

    request.erase("n_predict");
    request.erase("stop_at_eog");
    request["output_ids"] = output;
    request["top2_ids"] = top2;
    request["margins"] = margins;
    request["text"] = detokenize(vocab, text_ids);
    std::cout << request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n" << std::flush;
  }

  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
