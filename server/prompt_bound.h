#pragma once
// A byte length past which a prompt's text can never fit the context, so the server can refuse an
// over-long prompt before tokenizing it (tokenizing a 30 MB body took 5.7 s of CPU).
//
// Every token stands for at most L bytes of input text, so text of more than max_seq_len * L
// bytes has more than max_seq_len tokens. L is bounded from the vocabulary: the longest text any
// single token decodes to, plus 1 (a SentencePiece piece decoded alone loses its leading space),
// times 4 (a normalizer such as NFKC can turn a 4-byte character into a 1-byte one). The bound
// is loose by design: it must never refuse a prompt that fits, and it only needs to stop text
// orders of magnitude too long. The exception: a tokenizer that folds an unbounded run of input
// into one token (whitespace stripped by the normalizer, an added token's lstrip/rstrip, BPE's
// fuse_unk) fits more; only prompts of megabytes of blanks or unknown characters rely on that.
#include <cstddef>
#include <cstdint>

#include "core/tokenizer/tokenizer.h"

namespace drift::server {

size_t prompt_byte_bound(const Tokenizer& tokenizer, int64_t max_seq_len);

}  // namespace drift::server
