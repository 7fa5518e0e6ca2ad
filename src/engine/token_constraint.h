// TokenConstraint: a per-request rule on which token may come next (structured output), made outside
// the engine: the engine knows no grammar and no chat format, only this mask interface.
//
// Contract:
//  - The engine calls fill_mask() on its own thread before each token of the request is sampled, then
//    accept() with the token drawn, in order, exactly once per generated token (a preempted request
//    keeps its tokens: nothing is replayed). Different requests' constraints may be called at the same
//    time from different threads; one constraint is never called concurrently.
//  - fill_mask() writes mask[num_words] (bit t % 32 of word t / 32 set = token t allowed) and returns
//    true, or returns false when every token is allowed at this step (mask left as is). A mask it fills
//    must allow at least one token below the vocabulary size.
#pragma once

#include <cstdint>
#include <span>

#include "engine/request.h"

namespace gossamer::engine {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  virtual bool fill_mask(std::span<uint32_t> mask) = 0;
  virtual void accept(TokenId token) = 0;
};

inline int32_t token_mask_words(int32_t vocab_size) {
  return (vocab_size + 31) / 32;
}

// Sets logits[t] to -inf wherever mask bit t is clear. logits: [vocab_size] float32; mask: [words].
void apply_token_mask(std::span<float> logits, std::span<const uint32_t> mask);
// True when some token below vocab_size is allowed.
bool token_mask_allows_any(std::span<const uint32_t> mask, int32_t vocab_size);

}  // namespace gossamer::engine
