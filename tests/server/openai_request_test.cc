// The OpenAI request bodies: every accepted field reaches SamplingParams, and every bad one is a
// 400 naming the field as the client wrote it (the server's only defence against bad input before
// a request reaches the engine).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/grammar/structured_output.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/request_json.h"

namespace drift::server {
namespace {

using Json = nlohmann::ordered_json;
using ::testing::HasSubstr;

ServingContext context() {
  ServingContext c;
  c.model_name = "tiny";
  c.max_seq_len = 64;
  c.vocab_size = 100;
  c.defaults.max_new_tokens = 128;
  c.defaults.temperature = 0.5;
  // One id per byte (the byte value mod 90, + 10), with BOS 1: easy to count.
  c.encode_text = [](const std::string& text) {
    std::vector<int32_t> ids{1};
    for (unsigned char ch : text) ids.push_back(10 + ch % 90);
    return ids;
  };
  c.draft_providers = {"ngram", "suffix_cache"};
  c.default_draft_provider = "ngram";
  return c;
}

// The ApiError a body gives (fails the test when it parses).
ApiError error_of(const std::string& body, bool chat = false, ServingContext c = context()) {
  try {
    const Json json = Json::parse(body);
    chat ? parse_chat_request(json, c) : parse_completion_request(json, c);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "");
}

TEST(OpenAiRequest, CompletionFieldsReachSamplingParams) {
  const GenerationRequest r = parse_completion_request(Json::parse(R"({
      "model": "tiny", "prompt": "abc", "max_tokens": 7, "temperature": 0.8, "top_p": 0.9, "top_k": 5,
      "min_p": 0.05, "seed": 42, "stop": ["x", "yz"], "stop_token_ids": [3, 4], "ignore_eos": true,
      "logprobs": 2, "stream": true, "stream_options": {"include_usage": true}, "n": 3,
      "speculative": {"draft_provider": "suffix_cache", "full_verification": true}, "cache_salt": "tenant-a",
      "user": "ignored"})"),
                                                       context());
  EXPECT_EQ(r.prompt, (std::vector<int32_t>{1, 10 + 'a' % 90, 10 + 'b' % 90, 10 + 'c' % 90}));
  EXPECT_EQ(r.params.max_new_tokens, 7);
  EXPECT_DOUBLE_EQ(r.params.temperature, 0.8);
  EXPECT_DOUBLE_EQ(r.params.top_p, 0.9);
  EXPECT_EQ(r.params.top_k, 5);
  EXPECT_DOUBLE_EQ(r.params.min_p, 0.05);
  EXPECT_EQ(r.params.seed, 42u);
  EXPECT_EQ(r.params.stop, (std::vector<std::string>{"x", "yz"}));
  EXPECT_EQ(r.params.stop_token_ids, (std::vector<int32_t>{3, 4}));
  EXPECT_TRUE(r.params.ignore_eos);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.params.logprobs, 2);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.params.speculative, "suffix_cache");
  EXPECT_TRUE(r.params.full_verification);
  EXPECT_EQ(r.params.cache_salt, "tenant-a");
  EXPECT_EQ(r.n, 3);
}

TEST(OpenAiRequest, LeftOutFieldsTakeTheConfigDefaultsAndOpenAisMaxTokens) {
  const GenerationRequest r = parse_completion_request(Json::parse(R"({"prompt": [5, 6, 7]})"), context());
  EXPECT_EQ(r.prompt, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_DOUBLE_EQ(r.params.temperature, 0.5);  // [generation]
  EXPECT_EQ(r.params.max_new_tokens, 16);       // OpenAI's completions default
  EXPECT_EQ(r.params.speculative, "");          // [speculative]'s provider
  EXPECT_FALSE(r.params.full_verification);     // [speculative]'s verification policy decides
  EXPECT_EQ(r.params.logprobs, -1);
  EXPECT_FALSE(r.stream);
  // A single prompt may come wrapped in a list; top_k -1 means off (vLLM).
  EXPECT_EQ(parse_completion_request(Json::parse(R"({"prompt": ["ab"], "top_k": -1})"), context()).params.top_k, 0);
  EXPECT_EQ(parse_completion_request(Json::parse(R"({"prompt": [[8, 9]]})"), context()).prompt,
            (std::vector<int32_t>{8, 9}));
  // Speculation off for one request.
  EXPECT_EQ(parse_completion_request(Json::parse(R"({"prompt": "a", "speculative": {"enabled": false}})"), context())
                .params.speculative,
            "off");
}

TEST(OpenAiRequest, ChatDefaultsMaxTokensToTheConfigsCappedByTheContext) {
  ServingContext c = context();
  Json seen;
  c.encode_chat = [&seen](const ChatPrompt& chat) {
    seen = chat.messages;
    return std::vector<int32_t>(10, 7);
  };
  const GenerationRequest r = parse_chat_request(Json::parse(R"({"messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "hello "}, {"type": "text", "text": "there"}]}],
      "logprobs": true, "top_logprobs": 3})"),
                                                 c);
  EXPECT_EQ(r.params.max_new_tokens, 64 - 10);  // [generation] max_new_tokens 128 > the room left
  EXPECT_EQ(r.params.logprobs, 3);
  EXPECT_EQ(seen[1]["content"], "hello there");  // text parts joined for the template
  EXPECT_EQ(parse_chat_request(Json::parse(R"({"messages": [{"role": "user", "content": "x"}],
      "max_completion_tokens": 5})"),
                               c)
                .params.max_new_tokens,
            5);
  // Not the whole context: under guaranteed_no_evict that reserved a context per chat, so a
  // chat server ran only a few of its batch at once.
  c.defaults.max_new_tokens = 20;
  EXPECT_EQ(
      parse_chat_request(Json::parse(R"({"messages": [{"role": "user", "content": "x"}]})"), c).params.max_new_tokens,
      20);
  // Both names, equal: fine.
  EXPECT_EQ(parse_chat_request(Json::parse(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 6,
      "max_completion_tokens": 6})"),
                               c)
                .params.max_new_tokens,
            6);
}

TEST(OpenAiRequest, ChatRenderingFieldsReachTheTemplate) {
  ServingContext c = context();
  ChatPrompt seen;
  c.encode_chat = [&seen](const ChatPrompt& chat) {
    seen = chat;
    return std::vector<int32_t>{1, 2};
  };
  parse_chat_request(Json::parse(R"({"messages": [{"role": "developer", "content": "x"}, {"role": "user",
      "content": "y"}]})"),
                     c);
  EXPECT_TRUE(seen.add_generation_prompt);
  EXPECT_FALSE(seen.continue_final_message);
  EXPECT_TRUE(seen.template_kwargs.empty());
  parse_chat_request(Json::parse(R"({"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": false,
      "chat_template_kwargs": {"enable_thinking": false, "custom": [1]}})"),
                     c);
  EXPECT_FALSE(seen.add_generation_prompt);
  EXPECT_EQ(seen.template_kwargs, Json::parse(R"({"enable_thinking": false, "custom": [1]})"));
  parse_chat_request(Json::parse(R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant",
      "content": "The answer is"}], "continue_final_message": true})"),
                     c);
  EXPECT_TRUE(seen.continue_final_message);
  EXPECT_FALSE(seen.add_generation_prompt);
  EXPECT_EQ(seen.messages.size(), 2u);
}

TEST(OpenAiRequest, IncludeStopStrAndFullRangeSeedsReachSamplingParams) {
  const GenerationRequest r = parse_completion_request(
      Json::parse(R"({"prompt": "a", "stop": "x", "include_stop_str_in_output": true, "seed": 18446744073709551615,
          "temperature": 2, "min_tokens": 0, "guided_json": null, "grammar": null, "logit_bias": {}})"),
      context());
  EXPECT_TRUE(r.params.include_stop_str_in_output);
  EXPECT_EQ(r.params.seed, UINT64_MAX);  // nlohmann reads it as unsigned: the CLI's range
  EXPECT_DOUBLE_EQ(r.params.temperature, 2.0);
  EXPECT_FALSE(
      parse_completion_request(Json::parse(R"({"prompt": "a"})"), context()).params.include_stop_str_in_output);
  EXPECT_EQ(parse_completion_request(Json::parse(R"({"prompt": "a", "seed": 0})"), context()).params.seed, 0u);
}

// Penalties, logit_bias and min_tokens reach the engine's SamplingParams (vLLM's fields).
TEST(OpenAiRequest, LogitsShapingFieldsReachSamplingParams) {
  const GenerationRequest r = parse_completion_request(
      Json::parse(R"({"prompt": "a", "max_tokens": 8, "presence_penalty": 0.5, "frequency_penalty": -0.25,
          "repetition_penalty": 1.2, "logit_bias": {"5": 1.5, "7": -100}, "min_tokens": 3})"),
      context());
  EXPECT_DOUBLE_EQ(r.params.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(r.params.frequency_penalty, -0.25);
  EXPECT_DOUBLE_EQ(r.params.repetition_penalty, 1.2);
  EXPECT_EQ(r.params.logit_bias, (std::vector<std::pair<int32_t, double>>{{5, 1.5}, {7, -100.0}}));
  EXPECT_EQ(r.params.min_tokens, 3);
  EXPECT_TRUE(r.params.shapes_logits());
  EXPECT_FALSE(parse_completion_request(Json::parse(R"({"prompt": "a", "presence_penalty": 0, "repetition_penalty": 1,
      "logit_bias": {}, "min_tokens": 0})"),
                                        context())
                   .params.shapes_logits());
}

// Every way to ask for a structured output reaches SamplingParams with its grammar compiled, and
// the same schema sent twice is compiled once.
TEST(OpenAiRequest, StructuredOutputFieldsReachSamplingParams) {
  using grammar::StructuredKind;
  auto kind_of = [](const char* body) {
    const auto& so = parse_completion_request(Json::parse(body), context()).params.structured_output;
    EXPECT_TRUE(so && so->grammar) << body;
    return so ? so->kind : StructuredKind::JsonObject;
  };
  EXPECT_EQ(kind_of(R"({"prompt": "a", "response_format": {"type": "json_object"}})"), StructuredKind::JsonObject);
  EXPECT_EQ(kind_of(R"({"prompt": "a", "response_format": {"type": "json_schema", "json_schema": {"name": "p",
      "strict": true, "schema": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}}})"),
            StructuredKind::JsonSchema);
  EXPECT_EQ(kind_of(R"({"prompt": "a", "guided_json": "{\"type\": \"string\"}"})"), StructuredKind::JsonSchema);
  EXPECT_EQ(kind_of(R"({"prompt": "a", "guided_regex": "[0-9]+"})"), StructuredKind::Regex);
  EXPECT_EQ(kind_of(R"({"prompt": "a", "guided_choice": ["yes", "no"]})"), StructuredKind::Choice);
  EXPECT_EQ(kind_of(R"({"prompt": "a", "guided_grammar": "root ::= \"x\"+"})"), StructuredKind::Grammar);
  EXPECT_EQ(kind_of(R"({"prompt": "a", "structured_outputs": {"regex": "a|b"}})"), StructuredKind::Regex);
  EXPECT_EQ(kind_of(R"({"prompt": "a", "structured_outputs": {"json_object": true}})"), StructuredKind::JsonObject);
  const char* schema = R"({"prompt": "a", "guided_json": {"type": "object", "properties": {"k": {"enum": [1, 2]}}}})";
  const auto first = parse_completion_request(Json::parse(schema), context()).params.structured_output;
  const auto second = parse_completion_request(Json::parse(schema), context()).params.structured_output;
  EXPECT_EQ(first->grammar, second->grammar);
  EXPECT_FALSE(
      parse_completion_request(Json::parse(R"({"prompt": "a", "response_format": {"type": "text"}})"), context())
          .params.structured_output);
}

TEST(OpenAiRequest, OverLongPromptsAreRefusedBeforeTokenizing) {
  ServingContext c = context();
  c.max_prompt_bytes = 1000;
  int encodes = 0;
  c.encode_text = [&encodes](const std::string&) {
    ++encodes;
    return std::vector<int32_t>{1};
  };
  c.encode_chat = [&encodes](const ChatPrompt&) {
    ++encodes;
    return std::vector<int32_t>{1};
  };
  const std::string long_text(1001, 'a');
  ApiError e = error_of(Json({{"prompt", long_text}}).dump(), false, c);
  EXPECT_EQ(e.param, "prompt");
  EXPECT_THAT(e.what(), HasSubstr("1001 bytes"));
  // Chat: the messages' contents together.
  const Json half = {{"role", "user"}, {"content", std::string(501, 'a')}};
  e = error_of(Json({{"messages", {half, half}}}).dump(), true, c);
  EXPECT_EQ(e.param, "messages");
  EXPECT_EQ(encodes, 0);
  error_of(Json({{"prompt", std::string(1000, 'a')}, {"max_tokens", 0}}).dump(), false, c);
  EXPECT_EQ(encodes, 1);  // at the bound: tokenized
  // Token ids: the count is checked before any id is read.
  e = error_of(Json({{"prompt", std::vector<int>(100, 5)}}).dump(), false, c);
  EXPECT_EQ(e.param, "prompt");
  EXPECT_THAT(e.what(), HasSubstr("the prompt has 100 tokens"));
}

TEST(OpenAiRequest, BodiesThatAreNotJsonAre400sNot500s) {
  for (const char* text :
       {R"({"prompt": "a", "temperature": 1e400})", R"({"prompt": "a", "seed": -1e999})", R"({"prompt": "a",)",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}) {
    try {
      parse_request_json(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400) << text;
    }
  }
  EXPECT_EQ(parse_request_json(R"({"seed": 18446744073709551615})")["seed"].get<uint64_t>(), UINT64_MAX);
}

struct BadBody {
  const char* body;
  int status;
  const char* param;
  const char* message;
};

class OpenAiRequestRejects : public ::testing::TestWithParam<BadBody> {};

TEST_P(OpenAiRequestRejects, NamingTheField) {
  const BadBody& bad = GetParam();
  const ApiError e = error_of(bad.body);
  EXPECT_EQ(e.status, bad.status) << bad.body;
  EXPECT_EQ(e.param, bad.param) << bad.body;
  EXPECT_THAT(e.what(), HasSubstr(bad.message)) << bad.body;
}

INSTANTIATE_TEST_SUITE_P(
    Bodies, OpenAiRequestRejects,
    ::testing::Values(
        BadBody{R"([1])", 400, "", "the request body must be a JSON object"},
        BadBody{R"({"max_tokens": 3})", 400, "prompt", "prompt is required"},
        BadBody{R"({"prompt": []})", 400, "prompt", "prompt is empty"},
        BadBody{R"({"prompt": ["a", "b"]})", 400, "prompt", "holds 2 prompts"},
        BadBody{R"({"prompt": [1, 100]})", 400, "prompt[1]", "token ids are in [0, 100)"},
        BadBody{R"({"prompt": [1, "x"]})", 400, "prompt[1]", "must be a token id"},
        BadBody{R"({"prompt": 5})", 400, "prompt", "must be a list of token ids"},
        BadBody{R"({"model": "other", "prompt": "a"})", 404, "model", "does not exist"},
        BadBody{R"({"prompt": "a", "temperature": "hot"})", 400, "temperature", "must be a number"},
        BadBody{R"({"prompt": "a", "temperature": -1})", 400, "temperature", "must be in [0, 2]"},
        BadBody{R"({"prompt": "a", "top_p": 0})", 400, "top_p", "must be in (0, 1]"},
        BadBody{R"({"prompt": "a", "top_k": 2.5})", 400, "top_k", "must be an integer"},
        BadBody{R"({"prompt": "a", "min_p": 2})", 400, "min_p", "must be in [0, 1]"},
        BadBody{R"({"prompt": "a", "seed": -3})", 400, "seed", "must be in [0, 2^64-1]"},
        BadBody{R"({"prompt": "a", "max_tokens": 0})", 400, "max_tokens", "must be >= 1"},
        BadBody{R"({"prompt": "a", "max_tokens": 63})", 400, "max_tokens", "at most 62 can be generated"},
        BadBody{R"({"prompt": "a", "max_tokens": 18446744073709551615})", 400, "max_tokens", "out of range"},
        BadBody{R"({"prompt": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,
                    33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64]})",
                400, "prompt", "the prompt has 64 tokens"},
        BadBody{R"({"prompt": "a", "stop": 3})", 400, "stop", "a string or a list of strings"},
        BadBody{R"({"prompt": "a", "stop": [""]})", 400, "stop", "stop:"},
        BadBody{R"({"prompt": "a", "stop_token_ids": [100]})", 400, "stop_token_ids[0]", "token ids are in"},
        BadBody{R"({"prompt": "a", "ignore_eos": 1})", 400, "ignore_eos", "must be a boolean"},
        BadBody{R"({"prompt": "a", "n": 0})", 400, "n", "must be in [1, 128]"},
        BadBody{R"({"prompt": "a", "n": 129})", 400, "n", "must be in [1, 128]"},
        BadBody{R"({"prompt": "a", "logprobs": 21})", 400, "logprobs", "must be in [0, 20]"},
        BadBody{R"({"prompt": "a", "echo": true})", 400, "echo", "not supported"},
        BadBody{R"({"prompt": "a", "presence_penalty": 2.5})", 400, "presence_penalty", "must be in [-2, 2]"},
        BadBody{R"({"prompt": "a", "frequency_penalty": -3})", 400, "frequency_penalty", "must be in [-2, 2]"},
        BadBody{R"({"prompt": "a", "repetition_penalty": 0})", 400, "repetition_penalty",
                "must be a finite number > 0"},
        BadBody{R"({"prompt": "a", "logit_bias": [1]})", 400, "logit_bias", "must be an object"},
        BadBody{R"({"prompt": "a", "logit_bias": {"x": 1}})", 400, "logit_bias[\"x\"]", "must be a token id"},
        BadBody{R"({"prompt": "a", "logit_bias": {"-1": 1}})", 400, "logit_bias[\"-1\"]", "must be a token id"},
        BadBody{R"({"prompt": "a", "logit_bias": {"100": 1}})", 400, "logit_bias[\"100\"]", "token ids are in"},
        BadBody{R"({"prompt": "a", "logit_bias": {"5": 101}})", 400, "logit_bias[\"5\"]", "must be in [-100, 100]"},
        BadBody{R"({"prompt": "a", "logit_bias": {"5": "up"}})", 400, "logit_bias[\"5\"]", "must be a number"},
        BadBody{R"({"prompt": "a", "stream_options": {"include_usage": true}})", 400, "stream_options",
                "only allowed with stream = true"},
        BadBody{R"({"prompt": "a", "stream": true, "stream_options": {"include_usage": "yes"}})", 400,
                "stream_options.include_usage", "must be a boolean"},
        BadBody{R"({"prompt": "a", "speculative": true})", 400, "speculative", "must be a JSON object"},
        BadBody{R"({"prompt": "a", "speculative": {"enabled": "no"}})", 400, "speculative.enabled",
                "must be a boolean"},
        BadBody{R"({"prompt": "a", "speculative": {"provider": "ngram"}})", 400, "speculative.provider",
                "is not a setting"},
        BadBody{R"({"prompt": "a", "speculative": {"full_verification": 1}})", 400, "speculative.full_verification",
                "must be a boolean"},
        BadBody{R"({"prompt": "a", "speculative": {"draft_provider": "eagle3"}})", 400, "speculative.draft_provider",
                "not a configured draft provider (configured: ngram, suffix_cache)"},
        BadBody{R"({"prompt": "a", "speculative": {"enabled": false, "draft_provider": "ngram"}})", 400,
                "speculative.draft_provider", "enabled = false"},
        BadBody{R"({"prompt": "a", "cache_salt": 7})", 400, "cache_salt", "must be a string"},
        // Options that would change the output and that the engine cannot honour.
        // Structured outputs that cannot be compiled, or more than one.
        BadBody{R"({"prompt": "a", "guided_json": {"type": "object", "minProperties": 1}})", 400, "guided_json",
                "the keyword 'minProperties' is not supported"},
        BadBody{R"({"prompt": "a", "guided_json": 5})", 400, "guided_json", "must be a JSON schema"},
        BadBody{R"({"prompt": "a", "grammar": "root ::= x"})", 400, "grammar", "cannot be compiled"},
        BadBody{R"({"prompt": "a", "guided_regex": "a(b"})", 400, "guided_regex", "cannot be compiled: regex"},
        BadBody{R"({"prompt": "a", "guided_choice": []})", 400, "guided_choice", "non-empty list"},
        BadBody{R"({"prompt": "a", "guided_choice": ["a", 1]})", 400, "guided_choice[1]", "must be a string"},
        BadBody{R"({"prompt": "a", "structured_outputs": {"json": {"type": "nope"}}})", 400, "structured_outputs.json",
                "unknown type 'nope'"},
        BadBody{R"({"prompt": "a", "structured_outputs": {"xml": "<a/>"}})", 400, "structured_outputs.xml",
                "not a structured output"},
        BadBody{R"({"prompt": "a", "guided_regex": "a", "guided_choice": ["a"]})", 400, "guided_choice", "give one"},
        BadBody{R"({"prompt": "a", "response_format": {"type": "json_schema"}})", 400, "response_format.json_schema",
                "is required"},
        BadBody{R"({"prompt": "a", "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}})", 400,
                "response_format.json_schema.schema", "is required"},
        BadBody{R"({"prompt": "a", "response_format": {"type": "yaml"}})", 400, "response_format.type",
                "must be \"text\", \"json_object\" or \"json_schema\""},
        BadBody{R"({"prompt": "a", "guided_whitespace_pattern": " "})", 400, "guided_whitespace_pattern",
                "not supported"},
        BadBody{R"({"prompt": "a", "min_tokens": 17})", 400, "min_tokens", "must be in [0, max_new_tokens]"},
        BadBody{R"({"prompt": "a", "min_tokens": -1})", 400, "min_tokens", "must be in [0, max_new_tokens]"},
        BadBody{R"({"prompt": "a", "allowed_token_ids": [1]})", 400, "allowed_token_ids", "not supported"},
        BadBody{R"({"prompt": "a", "bad_words": ["x"]})", 400, "bad_words", "not supported"},
        BadBody{R"({"prompt": "a", "truncate_prompt_tokens": 5})", 400, "truncate_prompt_tokens", "not supported"},
        BadBody{R"({"prompt": "a", "prompt_logprobs": 1})", 400, "prompt_logprobs", "not supported"},
        BadBody{R"({"prompt": "a", "use_beam_search": true})", 400, "use_beam_search", "not supported"},
        BadBody{R"({"prompt": "a", "add_special_tokens": false})", 400, "add_special_tokens", "only true"},
        BadBody{R"({"prompt": "a", "tool_choice": "required"})", 400, "tool_choice", "for /v1/chat/completions"},
        BadBody{R"({"prompt": "a", "function_call": {"name": "f"}})", 400, "function_call", "send tools"},
        BadBody{R"({"prompt": "a", "tools": [{"type": "function", "function": {"name": "f"}}]})", 400, "tools",
                "for /v1/chat/completions"},
        BadBody{R"({"prompt": "a", "functions": [{"name": "f"}]})", 400, "functions", "send tools"},
        BadBody{R"({"prompt": "a", "chat_template": "{{ x }}"})", 400, "chat_template", "not supported"},
        // Numbers: OpenAI's ranges, every out-of-range value a 400 naming the field.
        BadBody{R"({"prompt": "a", "temperature": 2.5})", 400, "temperature", "must be in [0, 2]"},
        BadBody{R"({"prompt": "a", "temperature": true})", 400, "temperature", "must be a number"},
        BadBody{R"({"prompt": "a", "top_p": 1e308})", 400, "top_p", "must be in (0, 1]"},
        BadBody{R"({"prompt": "a", "top_k": -2})", 400, "top_k", "must be >= 0"},
        BadBody{R"({"prompt": "a", "top_k": 9223372036854775808})", 400, "top_k", "out of range"},
        BadBody{R"({"prompt": "a", "seed": -1})", 400, "seed", "must be in [0, 2^64-1]"},
        BadBody{R"({"prompt": "a", "seed": 1.5})", 400, "seed", "must be an integer"},
        BadBody{R"({"prompt": "a", "seed": 1e30})", 400, "seed", "must be an integer"},
        BadBody{R"({"prompt": "a", "max_tokens": 1.0})", 400, "max_tokens", "must be an integer"},
        BadBody{R"({"prompt": "a", "max_tokens": -9223372036854775808})", 400, "max_tokens", "must be >= 1"},
        BadBody{R"({"prompt": "a", "max_tokens": 4, "max_completion_tokens": 5})", 400, "max_completion_tokens",
                "give one, or equal values"},
        BadBody{R"({"prompt": "a", "max_completion_tokens": 63})", 400, "max_completion_tokens", "at most 62"},
        BadBody{R"({"prompt": "a", "logprobs": -1})", 400, "logprobs", "must be in [0, 20]"},
        BadBody{R"({"prompt": "a", "logprobs": true})", 400, "logprobs", "must be an integer"},
        BadBody{R"({"prompt": "a", "n": 18446744073709551615})", 400, "n", "out of range"},
        BadBody{R"({"prompt": "a", "presence_penalty": false})", 400, "presence_penalty", "must be a number"},
        BadBody{R"({"prompt": [1, 18446744073709551615]})", 400, "prompt[1]", "token ids are in"},
        BadBody{R"({"prompt": [1, -5]})", 400, "prompt[1]", "token ids are in"},
        BadBody{R"({"prompt": "a", "stop": ["a", "b", "c", "d", "e"]})", 400, "stop", "at most 4"}));

TEST(OpenAiRequest, SpeculationEnabledWithoutAnyProviderNamesTheField) {
  ServingContext c = context();
  c.draft_providers.clear();
  c.default_draft_provider.clear();
  const ApiError e = error_of(R"({"prompt": "a", "speculative": {"enabled": true}})", false, c);
  EXPECT_EQ(e.param, "speculative.enabled");
  EXPECT_THAT(e.what(), HasSubstr("no draft provider is configured"));
}

TEST(OpenAiRequest, ChatErrorsNameMessagesAndTheirParts) {
  ServingContext c = context();
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": "x"}]})", true, c).param, "messages");  // no template
  c.encode_chat = [](const ChatPrompt&) -> std::vector<int32_t> {
    throw std::runtime_error("System role not supported");
  };
  const ApiError raised = error_of(R"({"messages": [{"role": "system", "content": "x"}]})", true, c);
  EXPECT_EQ(raised.param, "messages");
  EXPECT_THAT(raised.what(), HasSubstr("System role not supported"));
  c.encode_chat = [](const ChatPrompt&) { return std::vector<int32_t>{1, 2}; };
  EXPECT_EQ(error_of(R"({"messages": []})", true, c).param, "messages");
  // OpenAI's roles only.
  const ApiError role = error_of(R"({"messages": [{"role": "user", "content": "x"}, {"role": "robot",
      "content": "y"}]})",
                                 true, c);
  EXPECT_EQ(role.param, "messages[1].role");
  EXPECT_THAT(role.what(), HasSubstr("must be system, developer, user, assistant or tool"));
  // The chat rendering fields.
  const char* user = R"("messages": [{"role": "user", "content": "x"}])";
  EXPECT_EQ(error_of(fmt::format(R"({{{}, "chat_template_kwargs": [1]}})", user), true, c).param,
            "chat_template_kwargs");
  EXPECT_EQ(error_of(fmt::format(R"({{{}, "chat_template_kwargs": {{"messages": []}}}})", user), true, c).param,
            "chat_template_kwargs.messages");
  EXPECT_EQ(error_of(fmt::format(R"({{{}, "add_generation_prompt": 1}})", user), true, c).param,
            "add_generation_prompt");
  EXPECT_EQ(error_of(fmt::format(R"({{{}, "continue_final_message": true}})", user), true, c).param,
            "continue_final_message");  // the last message is the user's
  EXPECT_EQ(error_of(R"({"messages": [{"role": "assistant", "content": "x"}], "continue_final_message": true,
      "add_generation_prompt": true})",
                     true, c)
                .param,
            "continue_final_message");
  EXPECT_EQ(error_of(fmt::format(R"({{{}, "documents": [{{"text": "d"}}]}})", user), true, c).param, "documents");
  EXPECT_EQ(error_of(fmt::format(R"({{{}, "add_special_tokens": true}})", user), true, c).param, "add_special_tokens");
  EXPECT_EQ(error_of(R"({"messages": [{"content": "x"}]})", true, c).param, "messages[0].role");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": 5}]})", true, c).param, "messages[0].content");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", true, c).param,
            "messages[0].content[0].type");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", true, c).param,
            "top_logprobs");
  EXPECT_EQ(
      error_of(R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})", true, c).param,
      "tools[0].function");
}

// tools, tool_choice and parallel_tool_calls: what reaches the template and the engine, and a 400
// naming the field for each kind of mistake.
TEST(OpenAiRequest, ToolFieldsReachTheTemplateAndForcedCallsGetTheirGrammar) {
  ServingContext c = context();
  c.tool_support.template_renders_tools = true;
  c.tool_support.format = tools::ToolCallFormat::Hermes;
  ChatPrompt seen;
  c.encode_chat = [&seen](const ChatPrompt& chat) {
    seen = chat;
    return std::vector<int32_t>{1, 2};
  };
  const std::string tool = R"({"type": "function", "function": {"name": "get_weather", "description": "d",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})";
  const std::string user = R"("messages": [{"role": "user", "content": "x"}])";
  const auto parse = [&](const std::string& rest) {
    return parse_chat_request(Json::parse(fmt::format(R"({{{}, "tools": [{}]{}}})", user, tool, rest)), c);
  };
  GenerationRequest r = parse("");  // auto: tools rendered, replies read, nothing forced
  EXPECT_EQ(seen.tools.size(), 1u);
  EXPECT_EQ(r.tool_format, tools::ToolCallFormat::Hermes);
  EXPECT_FALSE(r.params.structured_output);
  r = parse(R"(, "tool_choice": "required", "parallel_tool_calls": false)");
  ASSERT_TRUE(r.params.structured_output);
  EXPECT_EQ(r.params.structured_output->kind, grammar::StructuredKind::ToolCalls);
  r = parse(R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})");
  ASSERT_TRUE(r.params.structured_output);
  r = parse(R"(, "tool_choice": "none")");  // tools off: not rendered, replies not read
  EXPECT_TRUE(seen.tools.is_null());
  EXPECT_FALSE(r.tool_format);
  // History: an assistant's calls (arguments as JSON text, content null) reach the template as objects.
  parse_chat_request(Json::parse(R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant",
      "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather",
      "arguments": "{\"city\": \"Oslo\"}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "22 C"}]})"),
                     c);
  EXPECT_EQ(seen.messages[1]["tool_calls"][0]["function"]["arguments"], Json::parse(R"({"city": "Oslo"})"));

  const auto param_of = [&](const std::string& body) { return error_of(body, true, c).param; };
  const std::string tools_with = fmt::format(R"({}, "tools": [{}])", user, tool);
  EXPECT_EQ(param_of(fmt::format(R"({{{}, "tools": {{}}}})", user)), "tools");
  EXPECT_EQ(param_of(fmt::format(R"({{{}, "tools": [{{"type": "code"}}]}})", user)), "tools[0].type");
  EXPECT_EQ(param_of(fmt::format(R"({{{}, "tools": [{{"type": "function", "function": {{"name": "a b"}}}}]}})", user)),
            "tools[0].function.name");
  EXPECT_EQ(param_of(fmt::format(R"({{{}, "tools": [{}, {}]}})", user, tool, tool)), "tools[1].function.name");
  EXPECT_EQ(param_of(fmt::format(
                R"({{{}, "tools": [{{"type": "function", "function": {{"name": "f", "parameters": 3}}}}]}})", user)),
            "tools[0].function.parameters");
  EXPECT_EQ(param_of(fmt::format(R"({{{}, "tool_choice": "sometimes"}})", tools_with)), "tool_choice");
  EXPECT_EQ(param_of(fmt::format(R"({{{}, "tool_choice": "required"}})", user)), "tool_choice");
  EXPECT_EQ(param_of(fmt::format(R"({{{}, "tool_choice": {{"type": "function", "function": {{"name": "nope"}}}}}})",
                                 tools_with)),
            "tool_choice.function.name");
  EXPECT_EQ(param_of(fmt::format(R"({{{}, "tool_choice": "required", "response_format": {{"type": "json_object"}}}})",
                                 tools_with)),
            "tool_choice");
  EXPECT_EQ(param_of(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f",
      "arguments": "[1]"}}]}]})"),
            "messages[0].tool_calls[0].function.arguments");
  // Arguments nested deeper than any JSON the engine reads: a 400, not a stack overflow.
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  EXPECT_EQ(param_of(fmt::format(R"({{"messages": [{{"role": "assistant", "tool_calls": [{{"function": {{"name": "f",
      "arguments": "{{\"a\": {}}}"}}}}]}}]}})",
                                 deep)),
            "messages[0].tool_calls[0].function.arguments");
  // A forced call opens a new assistant turn.
  EXPECT_EQ(param_of(fmt::format(R"({{{}, "tool_choice": "required", "add_generation_prompt": false}})", tools_with)),
            "tool_choice");
  r = parse(R"(, "parallel_tool_calls": false)");
  EXPECT_FALSE(r.parallel_tool_calls);
  // A required call whose parameters cannot be compiled: 400 naming tools, with the reason.
  const ApiError e = error_of(
      fmt::format(R"({{{}, "tool_choice": "required", "tools": [{{"type": "function", "function": {{"name": "f",
          "parameters": {{"type": "object", "properties": {{"n": {{"type": "integer", "minimum": 1}}}}}}}}}}]}})",
                  user),
      true, c);
  EXPECT_EQ(e.param, "tools");
  EXPECT_THAT(e.what(), HasSubstr("minimum"));
  // A template whose tool syntax drift does not read refuses tools, saying why.
  ServingContext unsupported = c;
  unsupported.tool_support.format.reset();
  unsupported.tool_support.unsupported = "the chat template writes tool calls in a syntax drift does not read";
  EXPECT_THAT(error_of(fmt::format("{{{}}}", tools_with), true, unsupported).what(), HasSubstr("does not read"));
}

TEST(OpenAiRequest, ErrorObjectsHaveOpenAisShape) {
  const nlohmann::json body = error_json(bad_request("top_p", "top_p = 2: must be in (0, 1]"));
  EXPECT_EQ(body["error"]["message"], "top_p = 2: must be in (0, 1]");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["param"], "top_p");
  EXPECT_TRUE(body["error"]["code"].is_null());  // OpenAI's code string or null, never the status
  EXPECT_TRUE(error_json(ApiError(429, "full"))["error"]["param"].is_null());
  EXPECT_EQ(error_json(ApiError(401, "key"))["error"]["type"], "authentication_error");
}

}  // namespace
}  // namespace drift::server

namespace drift::server {
namespace {

// A chat reply read for tool calls: calls in message.tool_calls with finish_reason "tool_calls",
// content null when nothing else was said; with parallel_tool_calls false only the first call.
TEST(OpenAiResponse, ToolCallsAreReadOutOfTheReply) {
  ResponseContext context;
  context.endpoint = Endpoint::ChatCompletions;
  context.token_text = [](std::span<const int32_t>) { return std::string(); };
  context.tool_format = tools::ToolCallFormat::Hermes;
  StreamEvent reply;
  reply.finished = true;
  reply.finish_reason = FinishReason::Stop;
  reply.text =
      "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", "
      "\"arguments\": {}}\n</tool_call>";
  const std::vector<StreamEvent> choices{reply};
  nlohmann::json body = full_response(context, choices, 3);
  const nlohmann::json& choice = body["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 2u);
  EXPECT_EQ(choice["message"]["tool_calls"][1]["function"]["name"], "b");
  EXPECT_EQ(nlohmann::json::parse(choice["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            nlohmann::json::parse(R"({"x": 1})"));
  context.parallel_tool_calls = false;
  body = full_response(context, choices, 3);
  EXPECT_EQ(body["choices"][0]["message"]["tool_calls"].size(), 1u);
  // Without tools the same text is content, as it was written.
  context.tool_format.reset();
  body = full_response(context, choices, 3);
  EXPECT_EQ(body["choices"][0]["message"]["content"], reply.text);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
}

}  // namespace
}  // namespace drift::server
