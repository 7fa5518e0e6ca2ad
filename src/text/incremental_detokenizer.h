// Streaming token ids -> UTF-8 text, never emitting a partial character.
//
// Contract:
//  - push() appends the bytes of the given ids and returns the text completed by them: always valid UTF-8,
//    possibly empty. Bytes of a character that is still incomplete stay buffered (at most 3) until the ids
//    that complete it arrive.
//  - Bytes that can never become valid (e.g. 0xFF, or a lead byte followed by a non-continuation) are
//    emitted as one U+FFFD per maximal invalid subpart, like Python's errors="replace".
//  - flush() returns the buffered bytes of a dangling partial character as U+FFFD (empty if none) and
//    leaves the detokenizer empty, ready for a new stream.
//  - Concatenating every push() and the final flush() gives utf8_lossy(decode_bytes(all ids)).
//  - Unknown ids throw gossamer::Error (from Tokenizer::token_bytes); the state is unchanged then.
//  - Holds a reference to the Tokenizer, which must outlive it. Not thread-safe: one per stream.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "text/tokenizer.h"

namespace gossamer::text {

class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  std::string push(TokenId id);
  std::string push(std::span<const TokenId> ids);
  // Pushes raw bytes directly (for callers that already hold token bytes).
  std::string push_bytes(std::string_view bytes);
  std::string flush();

  // Bytes of an incomplete character waiting for more tokens (0..3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;
};

}  // namespace gossamer::text
