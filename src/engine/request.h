// A generation request as the engine sees it: token ids in, token ids out, sampling and stopping rules.
//
// Contract: the engine owns Request objects; callers see them only through RequestOutput events and the
// id returned by Engine::submit. States only move forward, except kRunning → kPreempted → kRunning
// (preemption by recompute); any state may jump to kFinished.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace gossamer::engine {

class NgramIndex;
class TokenConstraint;
using TokenId = int32_t;
using RequestId = uint64_t;
using Clock = std::chrono::steady_clock;

// Overlapped steps (engine.h): the token a step still in flight samples for a request, until its id is back.
inline constexpr TokenId kPendingToken = -1;

enum class RequestState : uint8_t {
  kWaiting = 0,    // queued, no KV blocks
  kRunning = 1,    // in the batch (prefilling or decoding), holds KV blocks
  kPreempted = 2,  // blocks taken back; will recompute from scratch, back in the queue at its front
  kFinished = 3,   // done; blocks freed
};

enum class FinishReason : uint8_t {
  kNone = 0,
  kStop,    // one of SamplingParams::stop_token_ids, or a stop string found by the caller
  kLength,  // max_tokens or the context length
  kAbort,   // cancelled (client gone, server shutdown)
};

const char* to_string(RequestState state);
const char* to_string(FinishReason reason);

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy
  float top_p = 1.0f;        // nucleus mass in (0, 1]
  int32_t top_k = 0;         // 0 = off
  std::optional<uint64_t> seed;
  int32_t max_tokens = 0;   // 0 = up to the context length
  bool ignore_eos = false;  // keep going past stop_token_ids (benchmarks)
  // Tokens that end the request (kept in its output). The engine knows no chat format: the caller names
  // them (the server: Harmony's <|return|> and <|call|>, and <|endoftext|>). Empty = none.
  std::vector<TokenId> stop_token_ids;
  // Structured output: which tokens may come next (token_constraint.h); null = any.
  std::shared_ptr<TokenConstraint> constraint;
  // Penalties (kernels/sampling.h step 0): presence and frequency over the output tokens, repetition over
  // the prompt's and the output's. 0, 0 and 1 are off.
  float presence_penalty = 0.0f;    // [-2, 2]
  float frequency_penalty = 0.0f;   // [-2, 2]
  float repetition_penalty = 1.0f;  // (0, 2]
  int32_t logprobs = -1;  // -1 off; else report each drawn token's raw logprob and this many top ones (≤ 20)

  bool has_penalties() const {
    return presence_penalty != 0.0f || frequency_penalty != 0.0f || repetition_penalty != 1.0f;
  }
};

struct TokenLogprob {
  TokenId token = 0;
  float logprob = 0.0f;  // raw: log_softmax of the model's logits (before penalties and temperature)
};

// One drawn token's log-probability and the row's most likely tokens (SamplingParams::logprobs of them).
struct SampledLogprobs {
  float logprob = 0.0f;
  std::vector<TokenLogprob> top;  // by logprob, highest first (ties → lowest id)
};

// The penalty bookkeeping of one request: the distinct tokens penalized so far and their output counts
// (kernels/sampling.h's list), caught up with the output by the sampler.
struct PenaltyState {
  std::vector<TokenId> tokens;                 // distinct
  std::vector<int32_t> counts;                 // count in the output, per entry of tokens
  std::unordered_map<TokenId, int32_t> index;  // token → entry
  size_t num_output_counted = 0;
  bool prompt_listed = false;
};

// Timestamps of one request's life, for metrics.
struct RequestTimes {
  Clock::time_point arrival;
  Clock::time_point first_scheduled;  // left the queue (first time)
  Clock::time_point first_token;
  Clock::time_point finished;
};

// What the engine reports for a request after a step that produced tokens, or when it finishes.
struct RequestOutput {
  RequestId id = 0;
  std::vector<TokenId> new_tokens;  // tokens generated since the last event (includes a stop token)
  int32_t num_prompt_tokens = 0;
  int32_t num_output_tokens = 0;  // total so far
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  std::optional<TokenId> stop_token;  // set when a stop token ended the request
  RequestTimes times;
  int32_t num_preemptions = 0;
  int32_t num_cached_tokens = 0;          // prompt tokens whose KV came from the prefix cache
  std::vector<SampledLogprobs> logprobs;  // one per new token, when SamplingParams::logprobs ≥ 0
};

// Called on the engine thread; must be quick (the server only queues the event for an HTTP thread) and
// must not call back into the engine except cancel().
using OutputCallback = std::function<void(RequestOutput)>;

struct Request {
  RequestId id = 0;
  std::vector<TokenId> prompt;
  std::vector<TokenId> output;
  SamplingParams sampling;
  OutputCallback on_output;
  RequestState state = RequestState::kWaiting;
  FinishReason finish_reason = FinishReason::kNone;
  int32_t max_total_tokens = 0;  // prompt + output limit (min of context and prompt + max_tokens)

  // KV bookkeeping: positions [0, num_computed) of all_tokens() are in the cache through block_table.
  std::vector<int32_t> block_table;
  // The sliding-window ring (EngineConfig::num_sliding_kv_blocks > 0): the sliding layers' blocks, same
  // indexing; entries [0, sliding_trimmed) were returned to the sliding pool (stale ids, never read).
  std::vector<int32_t> sliding_block_table;
  int32_t sliding_trimmed = 0;
  int32_t num_computed = 0;
  int32_t num_preemptions = 0;
  // Prefix cache: hashes of the full blocks of the known tokens computed so far (still valid after a
  // preemption: tokens only grow), how many of block_table's blocks were offered to the cache, and the
  // prompt positions found in the cache when the request was first scheduled.
  std::vector<uint64_t> block_hashes;
  int32_t num_cached_blocks = 0;
  int32_t num_cached_tokens = 0;

  RequestTimes times;
  uint64_t rng_state = 0;  // per-request sampler state (splitmix64), advanced only when sampling
  PenaltyState penalty;    // used when sampling.has_penalties()
  // SamplingParams::logprobs ≥ 0: the drawn tokens' logprobs in order, until their output event takes them.
  std::vector<SampledLogprobs> pending_logprobs;
  // Overlapped steps (engine.h): output ends with this many kPendingToken placeholders while the steps that
  // sample them are in flight (two with async scheduling: steps N and N+1 both sample it).
  int32_t num_pending = 0;
  // The Runner's mark of the last launched step that samples this request (counted by Runner launches) and
  // the logits row it samples it in: where a step launched on top of it reads the pending token (runner.h).
  int64_t sampled_launch = -1;
  int32_t sampled_row = -1;
  // Speculative decoding (speculative.h): the draft tokens the step in flight runs after the last known token,
  // and num_preemptions when it was launched (a request preempted meanwhile keeps its tokens, not their KV).
  std::vector<TokenId> draft;
  int32_t draft_preemptions = 0;
  std::shared_ptr<NgramIndex> ngram_index;  // its prompt-lookup proposer, made at its first draft
  // The scheduler's mark of the step being composed (Scheduler::step_): the tokens this request got in it.
  int64_t scheduled_step = -1;
  int32_t num_scheduled = 0;

  int32_t num_tokens() const { return static_cast<int32_t>(prompt.size() + output.size()); }
  // Tokens whose ids are known: all but the pending last ones.
  int32_t num_known_tokens() const { return num_tokens() - num_pending; }
  int32_t num_known_output() const { return static_cast<int32_t>(output.size()) - num_pending; }
  TokenId token_at(int32_t position) const {
    const auto prompt_len = static_cast<int32_t>(prompt.size());
    return position < prompt_len ? prompt[position] : output[position - prompt_len];
  }
  int32_t num_uncomputed() const { return num_tokens() - num_computed; }
};

}  // namespace gossamer::engine
