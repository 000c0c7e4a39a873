// OutputText: stop strings matched on the streamed text of real tokenizers (llama2 SentencePiece,
// llama3 byte-level BPE), across token boundaries. What is emitted never holds any part of a stop
// string, the stop is reported on the token that completes it, held-back text comes out at the
// end when no stop string completes, and without stop strings the text is the full decode.
#include "core/tokenizer/output_text.h"

#include <random>

#include <gtest/gtest.h>

#include "core/tokenizer/sentencepiece_tokenizer.h"
#include "support/test_data.h"

namespace drift {
namespace {

struct Streamed {
  std::string text;         // everything emitted, finish() included unless stopped
  int64_t stopped_at = -1;  // index of the token that completed a stop string
};

Streamed stream(const Tokenizer& tok, const std::vector<int32_t>& ids, std::vector<std::string> stops,
                bool include_stop = false) {
  OutputText out(tok, std::move(stops), include_stop);
  Streamed run;
  for (size_t i = 0; i < ids.size(); ++i) {
    OutputText::Update u = out.push(ids[i]);
    run.text += u.text;
    if (u.stopped) {
      run.stopped_at = static_cast<int64_t>(i);
      EXPECT_EQ(run.text, out.emitted());
      return run;
    }
  }
  run.text += out.finish();
  EXPECT_EQ(run.text, out.emitted());
  return run;
}

// The index of the first token after which decode(ids[0..i]) contains `stop`.
int64_t completing_token(const Tokenizer& tok, const std::vector<int32_t>& ids, const std::string& stop) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (tok.decode({ids.begin(), ids.begin() + i + 1}).find(stop) != std::string::npos) return static_cast<int64_t>(i);
  return -1;
}

class OutputTextTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const std::string path = test::test_data_path(GetParam());
    ASSERT_FALSE(path.empty());
    tok_ = std::string(GetParam()).ends_with(".model") ? std::make_unique<SentencePieceTokenizer>(path)
                                                       : load_tokenizer(path);
    ids_ = tok_->encode(
        "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
        "park. One day, she saw a big, red ball. \xC3\xA9t\xC3\xA9 \xE2\x82\xAC 42.");
    text_ = tok_->decode(ids_);
  }
  std::unique_ptr<Tokenizer> tok_;
  std::vector<int32_t> ids_;
  std::string text_;
};

TEST_P(OutputTextTest, WithoutStopStringsTheTextIsTheFullDecode) {
  EXPECT_EQ(stream(*tok_, ids_, {}).text, text_);
  std::mt19937 rng(3);
  std::vector<int32_t> random(300);
  for (auto& id : random) id = static_cast<int32_t>(rng() % tok_->vocab_size());
  EXPECT_EQ(stream(*tok_, random, {}).text, tok_->decode(random));
}

TEST_P(OutputTextTest, StopStringAcrossTokensCutsExactlyBeforeIt) {
  for (const std::string stop : {"girl named", "e park. One", "ly. S", "a big", "\xE2\x82\xAC 4"}) {
    SCOPED_TRACE(stop);
    const size_t at = text_.find(stop);
    ASSERT_NE(at, std::string::npos);
    const Streamed run = stream(*tok_, ids_, {stop});
    EXPECT_EQ(run.text, text_.substr(0, at));
    EXPECT_EQ(run.stopped_at, completing_token(*tok_, ids_, stop)) << "stopped on the token that completes it";
  }
}

TEST_P(OutputTextTest, IncludeStopKeepsTheEarliestMatchedStopStringAndNothingAfterIt) {
  // vLLM's include_stop_str_in_output. "a big" and "a big, red" start together: the one that
  // completes first ends the text.
  for (const std::string stop : {"girl named", "e park. One", "\xE2\x82\xAC 4"}) {
    SCOPED_TRACE(stop);
    const size_t at = text_.find(stop);
    const Streamed run = stream(*tok_, ids_, {"zzz", stop}, true);
    EXPECT_EQ(run.text, text_.substr(0, at + stop.size()));
    EXPECT_EQ(run.stopped_at, completing_token(*tok_, ids_, stop));
  }
  EXPECT_EQ(stream(*tok_, ids_, {"a big, red", "a big"}, true).text, text_.substr(0, text_.find("a big") + 5));
  // One token (" big") completes both: the text ends where the first of them completed.
  EXPECT_EQ(stream(*tok_, ids_, {"a big", "a b"}, true).text, text_.substr(0, text_.find("a big") + 3));
}

TEST_P(OutputTextTest, APartialMatchThatNeverCompletesIsReleasedAtTheEnd) {
  const Streamed run = stream(*tok_, ids_, {"42.!", "ball. \xC3\xA9t\xC3\xA9 X"});
  EXPECT_EQ(run.stopped_at, -1);
  EXPECT_EQ(run.text, text_);
}

TEST_P(OutputTextTest, TheEarliestOccurrenceWinsWhicheverStringIsListedFirst) {
  const Streamed run = stream(*tok_, ids_, {"red ball", "Lily", "Lily. She loved"});
  EXPECT_EQ(run.text, text_.substr(0, text_.find("Lily")));
  EXPECT_EQ(run.stopped_at, completing_token(*tok_, ids_, "Lily"));
}

TEST_P(OutputTextTest, TextThatMayBeginAStopStringIsHeldUntilItCannot) {
  // The stop string runs on from "park" until "blue", where the text says "red": until then the
  // text from "park" on may still become the stop string and must not be emitted.
  const std::string stop = "park. One day, she saw a big, blue";
  OutputText out(*tok_, {stop});
  std::string emitted;
  for (size_t i = 0; i < ids_.size(); ++i) {
    OutputText::Update u = out.push(ids_[i]);
    emitted += u.text;
    ASSERT_FALSE(u.stopped);
    const std::string decoded = tok_->decode({ids_.begin(), ids_.begin() + i + 1});
    if (decoded.find("big, r") == std::string::npos) {
      EXPECT_EQ(emitted.find("park"), std::string::npos) << "emitted part of a possible stop string: " << emitted;
    }
  }
  emitted += out.finish();
  EXPECT_EQ(emitted, text_);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, OutputTextTest,
                         ::testing::Values("tokenizers/llama2/tokenizer.model", "tokenizers/llama3"),
                         [](const auto& info) {
                           return std::string(info.param).find("llama2") != std::string::npos ? "llama2" : "llama3";
                         });

TEST(StopStrings, ValidationNamesTheBadOne) {
  EXPECT_EQ(validate_stop_strings({"a", "bc"}), "");
  EXPECT_EQ(validate_stop_strings({"a", ""}), "stop string 1 is empty");
  EXPECT_EQ(validate_stop_strings({std::string("\xC3", 1)}), "stop string 0 is not valid UTF-8");
  EXPECT_EQ(validate_stop_strings({std::string(257, 'x')}), "stop string 0 has 257 bytes; at most 256 are allowed");
  EXPECT_EQ(validate_stop_strings(std::vector<std::string>(17, "x")), "17 stop strings given; at most 16 are allowed");
}

}  // namespace
}  // namespace drift
