// `drift tokenize`: shows the ids the engine feeds the model for a prompt (BOS etc. as the
// checkpoint's tokenizer_config.json says), or the plain encoding with --no-special-tokens
// (what HF's add_special_tokens=False and the goldens give); --decode turns ids back into text.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "apps/command_registry.h"
#include "core/error.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/utf8.h"

namespace drift::app {
namespace {

namespace po = boost::program_options;

struct TokenizeOptions {
  std::string model_dir;
  std::optional<std::string> text, file, decode;
  bool json = false;
  bool no_special_tokens = false;
};

po::options_description describe_options() {
  po::options_description desc(
      "usage: drift tokenize --model DIR (--text T | --file F | --decode IDS) [--json] "
      "[--no-special-tokens]\n\noptions");
  desc.add_options()
      ("help,h", "show this help")
      ("model", po::value<std::string>()->value_name("DIR"),
       "checkpoint or tokenizer directory (tokenizer.json or tokenizer.model)")
      ("text", po::value<std::string>()->value_name("T"), "text to encode: one input, newlines included")
      ("file", po::value<std::string>()->value_name("F"), "file to encode, one input per line (LF or CRLF)")
      ("decode", po::value<std::string>()->value_name("IDS"), "comma-separated ids to decode, e.g. 1,2,3")
      ("json", po::bool_switch(), "one JSON object per input: {\"ids\": [...]} ({\"text\": ...} with --decode)")
      ("no-special-tokens", po::bool_switch(), "plain encoding: no BOS/EOS (HF add_special_tokens=False)");
  return desc;
}

std::optional<std::string> optional_value(const po::variables_map& vm, const char* name) {
  if (!vm.count(name)) return std::nullopt;
  return vm[name].as<std::string>();
}

// Parses the command line; returns nullopt after printing --help.
std::optional<TokenizeOptions> parse_options(const std::vector<std::string>& args) {
  po::options_description desc = describe_options();
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    fail("{} (see drift tokenize --help)", e.what());
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return std::nullopt;
  }
  TokenizeOptions o;
  if (!vm.count("model")) fail("option '--model' is required (see drift tokenize --help)");
  o.model_dir = vm["model"].as<std::string>();
  o.text = optional_value(vm, "text");
  o.file = optional_value(vm, "file");
  o.decode = optional_value(vm, "decode");
  o.json = vm["json"].as<bool>();
  o.no_special_tokens = vm["no-special-tokens"].as<bool>();
  int inputs = int(o.text.has_value()) + int(o.file.has_value()) + int(o.decode.has_value());
  if (inputs != 1) fail("give exactly one of '--text', '--file' and '--decode' (got {})", inputs);
  return o;
}

std::vector<int32_t> parse_ids(const std::string& list, int32_t vocab_size) {
  std::vector<int32_t> ids;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t begin = item.find_first_not_of(" \t"), end = item.find_last_not_of(" \t");
    std::string trimmed = begin == std::string::npos ? "" : item.substr(begin, end - begin + 1);
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(trimmed, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (trimmed.empty() || used != trimmed.size())
      fail("option '--decode': '{}' is not an integer id (expected e.g. 1,2,3)", trimmed);
    if (id < 0 || id >= vocab_size)
      fail("option '--decode': id {} is outside the vocabulary (0..{})", id, vocab_size - 1);
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out;
}

void print_ids(const Tokenizer& tok, const std::string& text, const TokenizeOptions& o) {
  std::vector<int32_t> ids = o.no_special_tokens ? tok.encode(text) : tok.encode_prompt(text);
  if (o.json) std::cout << nlohmann::json{{"ids", ids}}.dump() << "\n";
  else std::cout << join_ids(ids) << "\n";
}

// One input per line. A CRLF file gives the same inputs as an LF one: the \r is a line ending,
// not text (it would otherwise become an extra token).
void print_file_ids(const Tokenizer& tok, const TokenizeOptions& o) {
  std::error_code ec;
  if (std::filesystem::is_directory(*o.file, ec)) fail("option '--file': {} is a directory, not a text file", *o.file);
  std::ifstream in(*o.file, std::ios::binary);
  if (!in) fail("option '--file': cannot open {}", *o.file);
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (line.ends_with('\r')) line.pop_back();
    utf8::require_valid(line, fmt::format("option '--file': {} line {}", *o.file, number));
    print_ids(tok, line, o);
  }
}

int run_tokenize(const std::vector<std::string>& args) {
  auto options = parse_options(args);
  if (!options) return 0;
  const TokenizeOptions& o = *options;
  auto tokenizer = load_tokenizer(o.model_dir);
  if (o.decode) {
    std::string text = tokenizer->decode(parse_ids(*o.decode, tokenizer->vocab_size()));
    if (o.json) std::cout << nlohmann::json{{"text", text}}.dump() << "\n";
    else std::cout << text << "\n";
  } else if (o.text) {
    print_ids(*tokenizer, *o.text, o);
  } else {
    print_file_ids(*tokenizer, o);
  }
  return 0;
}

}  // namespace

DRIFT_REGISTER_COMMAND(tokenize, "tokenize", "encode text to token ids (or --decode ids) with a checkpoint's tokenizer",
                       run_tokenize);

}  // namespace drift::app
