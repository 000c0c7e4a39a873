#include "core/tools/tool_call_stream.h"

#include <algorithm>

#include "core/tools/tool_call_parser.h"

namespace drift::tools {

ToolCallStream::ToolCallStream(ToolCallFormat format, std::string prefill, bool parallel)
    : format_(format),
      hold_all_(!prefill.empty() || format == ToolCallFormat::Harmony),
      parallel_(parallel),
      text_(std::move(prefill)),
      prefill_(text_.size()),
      sent_(text_.size()) {}

size_t ToolCallStream::safe_end() const {
  if (hold_all_) return sent_;
  const std::string_view text(text_);
  if (format_ == ToolCallFormat::Llama3Json) {
    // A call is the whole reply: a reply that starts like JSON (or the python tag) is held.
    const size_t first = text.find_first_not_of(" \t\r\n", prefill_);
    if (first == std::string_view::npos) return sent_;
    return text[first] == '{' || text[first] == '<' ? sent_ : text.size();
  }
  const std::string_view marker = tool_call_marker(format_);
  // Text already sent holds no marker (nor the start of one): search only what came since.
  size_t end = std::min(text.find(marker, sent_), text.size());
  if (end == text.size()) {  // the tail may be the marker's beginning
    for (size_t keep = std::min(marker.size() - 1, text.size() - prefill_); keep > 0; --keep)
      if (marker.starts_with(text.substr(text.size() - keep))) {
        end = text.size() - keep;
        break;
      }
  }
  // Whitespace right before a call is no content (ParsedReply drops it): wait for what follows.
  const size_t last = text.substr(0, end).find_last_not_of(" \t\r\n");
  return std::max(sent_, last == std::string_view::npos ? prefill_ : std::max(prefill_, last + 1));
}

std::string ToolCallStream::feed(std::string_view piece) {
  text_ += piece;
  const size_t end = safe_end();
  std::string out = text_.substr(sent_, end - sent_);
  sent_ = end;
  return out;
}

ParsedReply ToolCallStream::finish() {
  ParsedReply reply = parse_tool_calls(format_, text_);
  if (!parallel_ && reply.calls.size() > 1) reply.calls.resize(1);
  const size_t sent = sent_ - prefill_;
  if (reply.calls.empty()) {
    reply.content = text_.substr(sent_);
  } else {
    // Text before the first call went out as it came: the rest of the content follows it.
    reply.content = reply.content.size() > sent ? reply.content.substr(sent) : "";
  }
  return reply;
}

}  // namespace drift::tools
