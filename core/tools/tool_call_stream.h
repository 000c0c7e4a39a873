#pragma once
// A streamed reply that may hold tool calls: text goes out as content as soon as it cannot be the
// start of a call; from a call's marker on, everything is held until the reply ends and is then
// parsed (a call is sent whole, its arguments complete). The content streamed, joined, equals
// the ParsedReply's content of the whole reply.
#include <string>
#include <string_view>

#include "core/tools/tool_call.h"

namespace drift::tools {

class ToolCallStream {
 public:
  // `prefill`: what the prompt already holds of the reply (a forced call's opening); with one,
  // or in harmony (whose channels decide what is content), nothing goes out before the end.
  // `parallel` false: a reply reports only its first call (parallel_tool_calls).
  ToolCallStream(ToolCallFormat format, std::string prefill = "", bool parallel = true);

  // The content that can go out now, given the reply's next piece of text.
  std::string feed(std::string_view text);
  // At the end: the content not yet sent, and the calls.
  ParsedReply finish();

 private:
  size_t safe_end() const;  // text_[0, safe_end) cannot be (the start of) a call

  ToolCallFormat format_;
  bool hold_all_ = false;
  bool parallel_ = true;
  std::string text_;  // prefill + the reply so far
  size_t prefill_ = 0;
  size_t sent_ = 0;  // of text_, content already sent (from prefill_ on)
};

}  // namespace drift::tools
