// The model API shared by the `cpu` and `cuda` backends.
//
// A forward step takes slices of several sequences at once (prefill chunks and decode tokens mixed).
// The KV cache is paged: the caller (engine) owns block allocation and passes each sequence's block
// table; the model owns the cache memory (num_blocks × block_size positions × every layer).
//
// Contract:
//  - allocate_kv_cache must be called before forward; it discards any previous cache contents.
//  - For each sequence, positions [0, num_cached) must already be in the cache (written by earlier
//    forward calls through the same blocks); forward writes positions [num_cached, num_cached + n).
//  - block_table must cover positions [0, num_cached + n): ceil((num_cached + n) / block_size) blocks.
//  - Within one forward, every sequence's new K/V of a layer is written before any of that layer's
//    attention reads, so a sequence may read cached positions that another sequence of the same batch
//    writes in this step (the engine's prefix cache shares blocks still being computed).
//  - Logits come back float32, one row of vocab_size per requested position, in batch order
//    (sequence by sequence; kAll gives every new position, kLast only the last new position).
//  - Invalid input (token id ≥ vocab, positions past max_position_embeddings, short block table)
//    throws gossamer::Error before anything is written.
//  - Sliding-window ring (num_sliding_blocks > 0): the sliding-window layers keep their K/V in a second,
//    smaller pool addressed by each sequence's sliding_block_table (same indexing: position / block_size).
//    Entries for positions below max(0, num_cached − window + 1 − kSlidingKeepMargin) are never read, so
//    the caller may recycle those blocks (keeping any in-range id in the table). With no sliding pool the
//    sliding layers share block_table's blocks like every other layer.
//  - Asynchronous steps (launch_step / wait_step): one step in flight at a time (two where the backend
//    feeds_pending_tokens_on_device(), below), each run after every step before it; so a KV block that the
//    caller frees while a step is in flight and hands to the next step is written by that next step only
//    after the one in flight is done with it.
//  - Pending tokens (async scheduling, feeds_pending_tokens_on_device()): a sampled step N+1 may be launched
//    while sampled step N is in flight, before N's tokens are on the host. A sequence of N+1 whose last token
//    is the one N draws for its logits row r says so with pending_from_row = r; the backend reads that id on
//    its device from N's drawn tokens (the value in tokens.back() is ignored and not validated). At most two
//    steps in flight; wait_step returns N's results first. N+1 computes as if the id had been known: a
//    sequence that N's token ends (a stop token) still computes that token's position in N+1, and the caller
//    discards what N+1 drew for it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/config.h"
#include "model/routing_trace.h"
#include "model/step_phases.h"

namespace gossamer::model {

enum class LogitsWanted : uint8_t { kNone, kLast, kAll };

// Positions below a sliding layer's window that kernels may still touch (masked) when they round the
// window start down to their key tile: blocks wholly below window start − margin may be recycled.
inline constexpr int32_t kSlidingKeepMargin = 128;

struct SequenceInput {
  std::span<const int32_t> tokens;       // [num_new] token ids to run
  int32_t num_cached = 0;                // position of tokens[0]; earlier positions are in the cache
  std::span<const int32_t> block_table;  // KV block ids for positions [0, num_cached + num_new)
  LogitsWanted logits = LogitsWanted::kLast;
  std::span<const int32_t> sliding_block_table = {};  // sliding-pool block ids (same indexing), or empty
  // ≥ 0: tokens.back() is the token that the step in flight draws for its logits row pending_from_row, read
  // on the device (only where feeds_pending_tokens_on_device()); −1: every token is known.
  int32_t pending_from_row = -1;
};

struct ForwardBatch {
  std::vector<SequenceInput> sequences;
};

// How to draw one row's token in forward_sample (the semantics of kernels/sampling.h): penalties first
// (when penalty_tokens is not empty), then temperature 0 is greedy (lowest id on ties); otherwise
// softmax(logits / temperature) filtered by top_k (0 = off) and top_p (1 = off), one draw from `seed`.
struct RowSampling {
  float temperature = 0.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  uint64_t seed = 0;
  std::span<const int32_t> penalty_tokens = {};  // distinct ids (prompt's for repetition, output's)
  std::span<const int32_t> penalty_counts = {};  // their counts in the output (0: prompt only)
  float presence = 0.0f;
  float frequency = 0.0f;
  float repetition = 1.0f;
  int32_t num_top_logprobs = -1;  // ≥ 0: report the drawn token's raw logprob and this many top ones (≤ 20)
  // Structured output: [ceil(vocab_size / 32)] words, bit t % 32 of word t / 32 = token t allowed; the
  // refused tokens' logits are -inf before the draw. Null = every token. Only for samples_with_token_masks().
  const uint32_t* token_mask = nullptr;
};

// The drawn token's raw log-probability and the row's most likely tokens, for a row that asked for them.
struct RowLogprobs {
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;  // (token, logprob), highest first
};

// What a launched step gives back (Model::wait_step).
struct StepResult {
  std::vector<int32_t> tokens;        // a sampled step's drawn tokens, one per logits row
  std::vector<RowLogprobs> logprobs;  // a sampled step's, one per row (set where num_top_logprobs ≥ 0)
  std::vector<float> logits;          // a logits step's [num_rows, vocab_size] float32
};

class Model {
 public:
  Model();
  virtual ~Model();
  virtual const GptOssConfig& config() const = 0;
  virtual std::string backend_name() const = 0;
  // The tensor/expert-parallel layout of this model's ranks (model/sharding.h), e.g. "TP1 EP1".
  virtual std::string parallel_layout() const { return "TP1 EP1"; }
  // Allocates (or re-allocates) the paged KV cache: num_blocks blocks for every layer, or with
  // num_sliding_blocks > 0 (the ring) num_blocks for the full-attention layers and num_sliding_blocks for
  // the sliding-window layers.
  void allocate_kv_cache(int32_t num_blocks, int32_t block_size, int32_t num_sliding_blocks = 0) {
    allocate_kv_cache_impl(num_blocks, block_size, num_sliding_blocks);
  }
  virtual int32_t kv_num_blocks() const = 0;
  virtual int32_t kv_num_sliding_blocks() const { return 0; }
  virtual int32_t kv_block_size() const = 0;
  // Bytes one KV block takes over all layers (for sizing the cache from a memory budget).
  virtual int64_t kv_bytes_per_block() const = 0;
  // Bytes K and V of one position take over all layers, known before allocate_kv_cache (for sizing the
  // cache from a memory budget). The default assumes float32.
  virtual int64_t kv_bytes_per_token() const { return int64_t{2} * config().num_layers * config().kv_width() * 4; }
  // Bytes K and V of one position take in ONE layer of the given kind (sliding-window or full attention),
  // known before allocate_kv_cache: the two differ when only the full layers are FP8 (--kv-cache-dtype fp8
  // on cuda). The default is an even share of kv_bytes_per_token() (every layer alike).
  virtual int64_t kv_layer_bytes_per_token(bool /*sliding*/) const {
    return kv_bytes_per_token() / std::max(1, config().num_layers);
  }
  // The KV cache's element type(s), for the load summary (e.g. "bf16", "float32").
  virtual std::string kv_cache_dtype_name() const { return "float32"; }
  // Runs one step. logits is resized to [num_rows, vocab_size] float32 (row-major).
  virtual void forward(const ForwardBatch& batch, std::vector<float>& logits) = 0;
  // True when forward_sample is available: the backend samples on its device and only token ids come
  // back (no full-vocabulary logits copied to the host).
  virtual bool samples_on_device() const { return false; }
  // True when forward_sample applies RowSampling::token_mask (else the engine samples masked rows on the host).
  virtual bool samples_with_token_masks() const { return false; }
  // Runs one step like forward() and draws one token per logits row (rows in the same order; `rows` has
  // one entry per row). tokens and logprobs are resized to the number of rows; logprobs entries are set for
  // rows with num_top_logprobs ≥ 0. Throws where unsupported.
  virtual void forward_sample(const ForwardBatch& batch, std::span<const RowSampling> rows,
                              std::vector<int32_t>& tokens, std::vector<RowLogprobs>& logprobs);
  void forward_sample(const ForwardBatch& batch, std::span<const RowSampling> rows, std::vector<int32_t>& tokens) {
    std::vector<RowLogprobs> unused;
    forward_sample(batch, rows, tokens, unused);
  }
  // The step in two halves, so that the caller's host work overlaps the device's (engine/engine.h):
  // launch_step() starts one step, sampled like forward_sample when `rows` is given (one entry per logits
  // row), else for logits like forward(); wait_step() blocks until its results are on the host.
  // Contract: launch, wait, launch, ... (at most one step in flight; no forward() or forward_sample() while
  // one is), or with feeds_pending_tokens_on_device() launch, launch, wait, launch, wait, ... (a second
  // sampled step launched on top of a sampled one in flight, its pending rows reading the first's tokens;
  // never more than two in flight; wait_step returns them in launch order). launch_step reads batch and rows
  // only before it returns. Either call may throw what forward() and forward_sample() throw; that step is
  // then over; a step launched on top of a failed one must still be waited for, and fails too (or returns
  // meaningless tokens for its pending rows). The default copies the step and runs it synchronously inside
  // wait_step (so the caller's work between the calls still comes before the step; with
  // feeds_pending_tokens_on_device() it keeps two copies and writes the second's pending ids from the
  // tokens the first drew); the cuda backend enqueues sampled steps and waits on an event behind the
  // tokens' copy to pinned memory.
  virtual void launch_step(const ForwardBatch& batch, std::optional<std::span<const RowSampling>> rows);
  virtual void wait_step(StepResult& result);
  // True when launch_step takes a sampled step with pending rows (SequenceInput::pending_from_row) on top of
  // a sampled step in flight, so that the caller launches step N+1 before it reads step N's tokens back
  // (engine.h, async scheduling). Only launch_step: launch_forward and launch_sampling (and logits steps)
  // still need nothing in flight.
  virtual bool feeds_pending_tokens_on_device() const { return false; }
  // A sampled step launched in two calls, for rows whose token masks are filled after the forward could
  // start (structured output: the masks need the previous step's tokens, but only the sampling reads them):
  // launch_forward(batch) then launch_sampling(rows) are one launch_step(batch, rows); then wait_step().
  // Contract: `batch` stays valid and unchanged until launch_sampling returns; rows are read only before it
  // returns; nothing else is called in between. The default launches the whole step in launch_sampling (so
  // the caller's work in between comes before the step); a backend that overrides both starts the forward
  // in launch_forward, and the caller's work in between overlaps it.
  virtual void launch_forward(const ForwardBatch& batch);
  virtual void launch_sampling(std::span<const RowSampling> rows);
  // Bytes of weights the backend holds on its device (0 when it reads them in place, like the cpu backend).
  virtual uint64_t weight_bytes() const { return 0; }
  // Benchmarks: per-phase timing of the following forward steps (model/step_phases.h); off by default.
  // Returns false (and times nothing) where the backend cannot.
  virtual bool set_phase_timing(bool /*on*/) { return false; }
  // The last timed forward's phases (valid = false when none was timed); waits for the device.
  virtual PhaseSeconds last_phase_seconds() { return {}; }
  // Benchmarks: record which experts the following forward steps route each token to (model/routing_trace.h);
  // off by default. Returns false (and records nothing) where the backend cannot.
  virtual bool set_routing_trace(bool /*on*/) { return false; }
  // The last traced forward's rows per expert and layer (not valid() when none was traced); waits for the device.
  virtual RoutingCounts last_routing() { return {}; }
  // Layers with a sliding window (the ring's pool serves them).
  int32_t num_sliding_layers() const {
    int32_t count = 0;
    for (bool sliding : config().layer_is_sliding) count += sliding;
    return config().sliding_window > 0 ? count : 0;
  }

 protected:
  virtual void allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t num_sliding_blocks) = 0;

 private:
  struct DeferredSteps;                            // the default launch_step's copies of the steps in flight
  std::unique_ptr<DeferredSteps> deferred_;        // null until the default launch_step is first used
  const ForwardBatch* forward_waiting_ = nullptr;  // the default launch_forward's batch, until launch_sampling
};

// Bytes one position takes in each KV block pool, over the layers that pool serves: the main pool (the
// full-attention layers, and the sliding-window layers too when there is no ring) and the ring (the
// sliding-window layers; 0 without a ring). The one rule for sizing the cache from a memory budget.
struct KvPoolBytes {
  int64_t main = 0;
  int64_t ring = 0;
};
inline KvPoolBytes kv_pool_bytes_per_token(const Model& model, bool ring) {
  const int64_t sliding = model.num_sliding_layers(), layers = model.config().num_layers;
  const int64_t full_bytes = (layers - sliding) * model.kv_layer_bytes_per_token(false);
  const int64_t sliding_bytes = sliding * model.kv_layer_bytes_per_token(true);
  return ring && sliding > 0 ? KvPoolBytes{full_bytes, sliding_bytes} : KvPoolBytes{full_bytes + sliding_bytes, 0};
}

}  // namespace gossamer::model
