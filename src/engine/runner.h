// Runner: the middle verb of the engine step (engine.h): builds a scheduled step's batch, launches it on the
// model and hands back the tokens its sampled rows drew.
//
// launch() reads every scheduled sequence's new tokens and block tables, fills the token masks of
// constrained rows, and launches the step: sampled on the model's device where the backend can
// (Model::launch_step with one RowSampling per row; each row's RNG draw and penalty list are taken here),
// else for logits, which wait() samples on the host (rows in parallel, each request with its own RNG).
// A step with constrained rows on a backend that applies masks starts its forward first
// (Model::launch_forward), fills the masks while it runs, then gives the rows (Model::launch_sampling).
// wait() blocks until the oldest step's results are on the host and returns one SampledRow per sampled
// sequence, in batch order.
//
// Async scheduling (EngineConfig::async_scheduling on a model that feeds_pending_tokens_on_device()): a step
// that can_launch_ahead() may be launched while the step before it is in flight, before its tokens are
// read back; a sequence whose last token is pending (kPendingToken, drawn by the step in flight) then reads
// it on the model's device (SequenceInput::pending_from_row: its row in that step, Request::sampled_row).
// Not launched ahead (they keep launch after wait): a step whose sampled rows include a constrained one (its
// mask needs the previous token accepted by the grammar first), or a penalized row whose token is pending
// (its counts need that token), or any step while the one in flight samples on the host.
//
// Speculative decoding (ScheduledSequence::num_draft > 0): the sequence runs its last known token and its
// request's draft with a logits row each, and wait() returns 1 + num_draft rows for it (SampledRow above);
// such a step is never launched ahead.
//
// Contract: launch, wait, launch, ..., or launch, launch (only when can_launch_ahead), wait, launch, wait, ...:
// at most two steps in flight, waited for in launch order. Every token launch() reads must be known (no
// kPendingToken) except, in a step launched ahead, the last token of a sequence that the step in flight
// samples. The requests of a launched step must stay alive until wait() returns it (host sampling and
// logprobs write to them); their num_computed is the caller's to advance. launch() and wait() throw what
// the model throws; that step is then over (a step launched on top of it is still in flight).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/engine_config.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/token_mask_filler.h"
#include "model/model.h"

namespace gossamer::engine {

struct SampledRow {
  Request* request = nullptr;
  TokenId token = 0;
  bool no_token_allowed = false;  // the request's constraint allowed nothing: `token` is meaningless
  // Speculative decoding (speculative.h): a drafted sequence has 1 + num_draft rows in a row, row 0 being its
  // last known token's (which holds num_draft); each samples from its own copy of the request's RNG state,
  // advanced by its index (the request's state moves only when the engine keeps the tokens).
  bool speculative = false;
  int32_t num_draft = 0;
  uint64_t rng_state = 0;
  // A speculative row's logprobs (SamplingParams::logprobs ≥ 0): the engine reports those of the rows it keeps.
  // Other rows append theirs to Request::pending_logprobs.
  std::optional<SampledLogprobs> logprobs;
};

class Runner {
 public:
  Runner(model::Model& model, const EngineConfig& config);

  // Whether `step` may be launched now although a step is in flight (see above); false when none is.
  bool can_launch_ahead(const SchedulerOutput& step) const;
  void launch(const SchedulerOutput& step);
  bool in_flight() const { return num_in_flight_ > 0; }
  int32_t num_in_flight() const { return num_in_flight_; }
  // The oldest step in flight's sampled rows. Valid until the next launch().
  const std::vector<SampledRow>& wait();
  // The last launch()'s token masks: wall time spent filling them (the device waits meanwhile, unless the
  // backend started the forward in launch_forward) and the rows whose constraint was asked for one.
  double last_token_mask_seconds() const { return masks_.last_seconds(); }
  int32_t last_num_constrained_rows() const { return masks_.num_constrained(); }

 private:
  // A step in flight: its sampled rows (in batch order) and where they are drawn.
  struct LaunchedStep {
    int64_t launch = 0;  // its number among launch() calls, from 1 (Request::sampled_launch)
    bool on_device = false;
    std::vector<SampledRow> sampled;
  };
  LaunchedStep& newest() { return launched_[static_cast<size_t>((first_ + num_in_flight_ - 1) % 2)]; }
  const LaunchedStep& newest() const { return launched_[static_cast<size_t>((first_ + num_in_flight_ - 1) % 2)]; }

  void fill_token_masks(LaunchedStep& step);
  // rows_ from the step's sampled rows: each row's sampling settings (its RNG state advances) and token mask.
  void build_rows(const LaunchedStep& step);
  void abandon_forward(const LaunchedStep& step);
  void sample_on_host(LaunchedStep& step);

  model::Model& model_;
  bool device_sampling_ = true;    // EngineConfig::device_sampling
  bool async_scheduling_ = false;  // EngineConfig::async_scheduling on a model that feeds pending tokens
  int32_t vocab_size_ = 0;
  std::array<LaunchedStep, 2> launched_;  // the steps in flight, oldest at first_
  int32_t first_ = 0;
  int32_t num_in_flight_ = 0;
  int64_t num_launches_ = 0;

  // The step being launched (storage the batch's spans point into, reused step after step).
  std::vector<TokenId> tokens_;  // every sequence's new tokens, concatenated
  model::ForwardBatch batch_;
  std::vector<TokenConstraint*> constraints_;  // per sampled row, null = unconstrained
  TokenMaskFiller masks_;                      // the sampled rows' token masks
  std::vector<model::RowSampling> rows_;
  model::StepResult result_;
};

}  // namespace gossamer::engine
