#pragma once
// OutputText: the text of one request's output as it grows token by token, with its stop strings.
// A stop string is matched on the detokenized text, across token boundaries; the text emitted never
// contains any part of a stop string: text that might still become the start of one is held back
// until it cannot, and once a stop string completes, the text before it is the last text emitted
// (or, with `include_stop`, the text up to and including the stop string, as vLLM's
// include_stop_str_in_output).
#include <cstdint>
#include <string>
#include <vector>

#include "core/tokenizer/streaming_decoder.h"
#include "core/tokenizer/tokenizer.h"

namespace drift {

class OutputText {
 public:
  OutputText(const Tokenizer& tokenizer, std::vector<std::string> stop_strings, bool include_stop = false);
  struct Update {
    std::string text;      // newly emitted text (may be empty)
    bool stopped = false;  // a stop string completed with this token: generation must end here
  };
  Update push(int32_t token);  // one committed output token
  std::string finish();        // generation ended for another reason: releases held-back text
  const std::string& emitted() const { return emitted_; }  // all text emitted so far

 private:
  std::string emit(size_t length);
  size_t stop_cut() const;  // where the text ends when a stop string completed in pending_; npos: none did

  StreamingDecoder decoder_;
  std::vector<std::string> stops_;
  bool include_stop_ = false;
  std::string pending_;  // settled text not yet emitted: it may begin a stop string
  std::string emitted_;
  bool stopped_ = false;
};

// "" when the stop strings are acceptable, else why not (an empty string, invalid UTF-8, more than
// 16 stop strings or one longer than 256 bytes), naming the index.
std::string validate_stop_strings(const std::vector<std::string>& stops);

}  // namespace drift
