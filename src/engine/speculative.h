// Speculative decoding by prompt lookup (vLLM's "ngram" method): a decode row also runs a few draft tokens
// copied from earlier in the request's own tokens, and keeps the ones the model would have drawn anyway.
//
// The draft: the longest suffix of the request's known tokens, n from prompt_lookup_max down to
// prompt_lookup_min tokens, whose most recent earlier occurrence is followed by num_speculative_tokens tokens
// (else, as in a run of one token, the occurrence with the longest continuation); the
// tokens that followed become the draft. The step runs the last known token and the
// draft d_1..d_k at once with a logits row each (model::LogitsWanted::kAll) and draws t_0..t_k, row i with
// the request's own sampling settings and the RNG draw it would have made for that output position. The
// engine keeps t_0..t_a, where a is the number of leading drafts with t_{i-1} = d_i: every kept token is
// exactly what one-token decoding would have drawn from the same logits and the same draw, so the output
// does not depend on speculation (up to the backend's rounding of a multi-token step), only the number of
// steps does. The KV of the last known token and of d_1..d_a is kept; what the rejected drafts wrote lies
// past num_computed and is overwritten before anything reads it (model.h).
//
// Which requests draft (speculation_eligible): no structured-output constraint (a draft row's mask would
// need the grammar advanced through the drafts before it) and no penalties (their counts likewise). Others
// decode one token a step as before. Logprobs are reported for every kept token.
//
// Contract: NgramIndex belongs to one request (its tokens only ever grow: prompt, then output); the rest are
// pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/request.h"

namespace gossamer::engine {

struct SpeculativeConfig {
  int32_t num_speculative_tokens = 0;  // drafts per decode row; 0 = speculation off
  int32_t prompt_lookup_max = 4;       // longest suffix looked up
  int32_t prompt_lookup_min = 2;       // shortest suffix looked up
  // > 0: no drafts in a step once more than this many requests are running (at load the step is compute-bound
  // and the rejected drafts' rows cost throughput); 0 = always.
  int32_t disable_by_batch_size = 0;

  bool enabled() const { return num_speculative_tokens > 0; }
  // Throws gossamer::Error naming the first bad field.
  void validate() const;
};

inline constexpr int32_t kMaxSpeculativeTokens = 16;

// serve --speculative-config: vLLM's JSON, of which the "ngram" method's keys: {"method": "ngram",
// "num_speculative_tokens": k, "prompt_lookup_max": n, "prompt_lookup_min": m, "disable_by_batch_size": b}.
// num_speculative_tokens is required; one of the lookup sizes alone sets both (as vLLM), neither keeps 4 and
// 2. Throws gossamer::Error on anything else (other methods, draft models, unknown keys, bad values).
SpeculativeConfig parse_speculative_config(std::string_view json);

// The prompt-lookup proposer of one request: the positions of each token id among its tokens, caught up with them at
// every proposal (so a step's lookup costs the occurrences of its last token, not a scan of the whole context).
class NgramIndex {
 public:
  // The draft after the request's known tokens (`prompt` then `output`, read as one sequence, a prefix of which
  // was given before): at most max_tokens tokens (≤ config.num_speculative_tokens), empty when no suffix of
  // prompt_lookup_min or more tokens recurs.
  void propose(std::span<const TokenId> prompt, std::span<const TokenId> output, const SpeculativeConfig& config,
               int32_t max_tokens, std::vector<TokenId>& draft);

 private:
  std::unordered_map<TokenId, std::vector<int32_t>> positions_;  // token → its positions, ascending
  int64_t num_indexed_ = 0;
};

// How many leading drafts the model confirmed: the largest a with drawn[i] = draft[i] for every i < a
// (drawn[i] is what row i drew, row 0 being the last known token's).
int32_t count_accepted_drafts(std::span<const TokenId> draft, std::span<const TokenId> drawn);

// Whether the request may draft at all (above).
bool speculation_eligible(const Request& request);

}  // namespace gossamer::engine
