// The OpenAI request bodies: every accepted field reaches SamplingParams, and every bad one is a
// 400 naming the field as the client wrote it (the server's only defence against bad input before
// a request reaches the engine).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/openai_request.h"

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
      "logprobs": 2, "stream": true, "stream_options": {"include_usage": true},
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

TEST(OpenAiRequest, ChatLeavesTheRestOfTheContextAsMaxTokens) {
  ServingContext c = context();
  Json seen;
  c.encode_chat = [&seen](const Json& messages) {
    seen = messages;
    return std::vector<int32_t>(10, 7);
  };
  const GenerationRequest r = parse_chat_request(Json::parse(R"({"messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "hello "}, {"type": "text", "text": "there"}]}],
      "logprobs": true, "top_logprobs": 3})"),
                                                 c);
  EXPECT_EQ(r.params.max_new_tokens, 64 - 10);
  EXPECT_EQ(r.params.logprobs, 3);
  EXPECT_EQ(seen[1]["content"], "hello there");  // text parts joined for the template
  EXPECT_EQ(parse_chat_request(Json::parse(R"({"messages": [{"role": "user", "content": "x"}],
      "max_completion_tokens": 5})"),
                               c)
                .params.max_new_tokens,
            5);
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
        BadBody{R"({"prompt": "a", "temperature": -1})", 400, "temperature", "must be a finite number >= 0"},
        BadBody{R"({"prompt": "a", "top_p": 0})", 400, "top_p", "must be in (0, 1]"},
        BadBody{R"({"prompt": "a", "top_k": 2.5})", 400, "top_k", "must be an integer"},
        BadBody{R"({"prompt": "a", "min_p": 2})", 400, "min_p", "must be in [0, 1]"},
        BadBody{R"({"prompt": "a", "seed": -3})", 400, "seed", "must be >= 0"},
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
        BadBody{R"({"prompt": "a", "n": 2})", 400, "n", "only n = 1"},
        BadBody{R"({"prompt": "a", "logprobs": 21})", 400, "logprobs", "must be in [0, 20]"},
        BadBody{R"({"prompt": "a", "echo": true})", 400, "echo", "not supported"},
        BadBody{R"({"prompt": "a", "presence_penalty": 0.5})", 400, "presence_penalty", "not supported"},
        BadBody{R"({"prompt": "a", "logit_bias": {"5": 1}})", 400, "logit_bias", "not supported"},
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
        BadBody{R"({"prompt": "a", "cache_salt": 7})", 400, "cache_salt", "must be a string"}));

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
  c.encode_chat = [](const Json&) -> std::vector<int32_t> { throw std::runtime_error("System role not supported"); };
  const ApiError raised = error_of(R"({"messages": [{"role": "system", "content": "x"}]})", true, c);
  EXPECT_EQ(raised.param, "messages");
  EXPECT_THAT(raised.what(), HasSubstr("System role not supported"));
  c.encode_chat = [](const Json&) { return std::vector<int32_t>{1, 2}; };
  EXPECT_EQ(error_of(R"({"messages": []})", true, c).param, "messages");
  EXPECT_EQ(error_of(R"({"messages": [{"content": "x"}]})", true, c).param, "messages[0].role");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": 5}]})", true, c).param, "messages[0].content");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", true, c).param,
            "messages[0].content[0].type");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", true, c).param,
            "top_logprobs");
  EXPECT_EQ(
      error_of(R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})", true, c).param,
      "tools");
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
