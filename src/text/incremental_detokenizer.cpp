#include "text/incremental_detokenizer.h"

#include "text/utf8.h"

namespace gossamer::text {

std::string IncrementalDetokenizer::push(TokenId id) {
  return push_bytes(tokenizer_.token_bytes(id));
}

std::string IncrementalDetokenizer::push(std::span<const TokenId> ids) {
  std::string bytes;
  for (const TokenId id : ids) bytes.append(tokenizer_.token_bytes(id));
  return push_bytes(bytes);
}

std::string IncrementalDetokenizer::push_bytes(std::string_view bytes) {
  pending_.append(bytes);
  std::string out;
  out.reserve(pending_.size());
  const std::string_view text(pending_);
  size_t i = 0;
  while (i < text.size()) {
    const size_t valid = utf8_valid_prefix(text.substr(i));
    out.append(text.substr(i, valid));
    i += valid;
    if (i == text.size()) break;
    const Utf8Step step = utf8_step(text.substr(i));
    if (step.kind == Utf8Step::Kind::kIncomplete) break;  // wait for the rest of this character
    append_utf8(out, kReplacementChar);
    i += step.length;
  }
  pending_.erase(0, i);
  return out;
}

std::string IncrementalDetokenizer::flush() {
  std::string out = utf8_lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace gossamer::text
