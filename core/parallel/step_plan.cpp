#include "core/parallel/step_plan.h"

#include "core/error.h"
#include "core/parallel/byte_stream.h"

namespace drift {
namespace {

void put_attention(ByteWriter& w, const AttentionMetadata& a) {
  w.put(a.token_seq);
  w.put(a.kv_len);
  w.put(a.slots);
  w.put<uint64_t>(a.block_tables.size());
  for (const auto& table : a.block_tables) w.put(table);
  w.put(a.tables_per_seq);
  w.put(a.mask_start);
  w.put(a.mask);
  w.put(a.mask_words);
}

AttentionMetadata get_attention(ByteReader& r) {
  AttentionMetadata a;
  a.token_seq = r.get_vector<int32_t>();
  a.kv_len = r.get_vector<int32_t>();
  a.slots = r.get_vector<int64_t>();
  const auto tables = r.get<uint64_t>();
  if (tables > (1u << 24)) fail("a tensor-parallel step lists {} block tables", tables);
  for (uint64_t i = 0; i < tables; ++i) a.block_tables.push_back(r.get_vector<int32_t>());
  a.tables_per_seq = r.get<int64_t>();
  a.mask_start = r.get_vector<int32_t>();
  a.mask = r.get_vector<uint64_t>();
  a.mask_words = r.get<int64_t>();
  return a;
}

void put_batch(ByteWriter& w, const ForwardBatch& b) {
  w.put(b.tokens);
  w.put(b.positions);
  put_attention(w, b.attention);
  put_attention(w, b.window_attention);
  w.put(b.logit_rows);
  w.put<uint64_t>(b.layer_attention.size());
  for (const auto& a : b.layer_attention) put_attention(w, a);
  w.put(b.query_rows);
}

ForwardBatch get_batch(ByteReader& r) {
  ForwardBatch b;
  b.tokens = r.get_vector<int32_t>();
  b.positions = r.get_vector<int32_t>();
  b.attention = get_attention(r);
  b.window_attention = get_attention(r);
  b.logit_rows = r.get_vector<int32_t>();
  const auto layers = r.get<uint64_t>();
  if (layers > 1u << 16) fail("a tensor-parallel step lists {} per-layer views", layers);
  for (uint64_t i = 0; i < layers; ++i) b.layer_attention.push_back(get_attention(r));
  b.query_rows = r.get_vector<int32_t>();
  return b;
}

}  // namespace

std::vector<uint8_t> encode_forward(const ForwardBatch& batch) {
  ByteWriter w;
  w.put(StepCommand::kForward);
  put_batch(w, batch);
  return std::move(w.bytes());
}

std::vector<uint8_t> encode_page_copy(StepCommand command, int32_t src, int32_t dst) {
  DRIFT_CHECK(command == StepCommand::kCopyPage || command == StepCommand::kCopyWindowPage, "not a page copy");
  ByteWriter w;
  w.put(command);
  w.put(src);
  w.put(dst);
  return std::move(w.bytes());
}

std::vector<uint8_t> encode_slot_moves(StepCommand command, std::span<const int64_t> src,
                                       std::span<const int64_t> dst) {
  DRIFT_CHECK(command == StepCommand::kMoveSlots || command == StepCommand::kMoveWindowSlots, "not a slot move");
  ByteWriter w;
  w.put(command);
  w.put(std::vector<int64_t>(src.begin(), src.end()));
  w.put(std::vector<int64_t>(dst.begin(), dst.end()));
  return std::move(w.bytes());
}

std::vector<uint8_t> encode_shutdown() {
  ByteWriter w;
  w.put(StepCommand::kShutdown);
  return std::move(w.bytes());
}

StepPlanItem decode_step(const std::vector<uint8_t>& bytes) {
  ByteReader r(bytes);
  StepPlanItem item;
  item.command = r.get<StepCommand>();
  switch (item.command) {
    case StepCommand::kForward:
      item.batch = get_batch(r);
      break;
    case StepCommand::kCopyPage:
    case StepCommand::kCopyWindowPage:
      item.src_page = r.get<int32_t>();
      item.dst_page = r.get<int32_t>();
      break;
    case StepCommand::kMoveSlots:
    case StepCommand::kMoveWindowSlots:
      item.src_slots = r.get_vector<int64_t>();
      item.dst_slots = r.get_vector<int64_t>();
      break;
    case StepCommand::kShutdown:
      break;
    default:
      fail("a tensor-parallel step has the unknown command {}", static_cast<int>(item.command));
  }
  if (!r.done()) fail("a tensor-parallel step has bytes past its end");
  return item;
}

std::vector<uint8_t> encode_setup(const RankSetup& s) {
  ByteWriter w;
  w.put(s.model_path);
  w.put(s.backend);
  w.put(s.dtype);
  w.put(s.num_threads);
  w.put(s.remote_num_threads);
  w.put(s.local_ranks);
  w.put(s.block_size);
  w.put(s.num_pages);
  w.put(s.window_pages);
  w.put(s.timeout_ms);
  w.put(s.log_level);
  return std::move(w.bytes());
}

RankSetup decode_setup(const std::vector<uint8_t>& bytes) {
  ByteReader r(bytes);
  RankSetup s;
  s.model_path = r.get_string();
  s.backend = r.get_string();
  s.dtype = r.get_string();
  s.num_threads = r.get<int64_t>();
  s.remote_num_threads = r.get<int64_t>();
  s.local_ranks = r.get<int32_t>();
  s.block_size = r.get<int64_t>();
  s.num_pages = r.get<int64_t>();
  s.window_pages = r.get<int64_t>();
  s.timeout_ms = r.get<int64_t>();
  s.log_level = r.get<int32_t>();
  if (!r.done()) fail("a tensor-parallel setup has bytes past its end");
  return s;
}

}  // namespace drift
