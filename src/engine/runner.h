// Runner: the middle verb of the engine step (engine.h): builds a scheduled step's batch, launches it on the
// model and hands back the tokens its sampled rows drew.
//
// launch() reads every scheduled sequence's new tokens and block tables, fills the token masks of
// constrained rows, and launches the step: sampled on the model's device where the backend can
// (Model::launch_step with one RowSampling per row; each row's RNG draw and penalty list are taken here),
// else for logits, which wait() samples on the host (rows in parallel, each request with its own RNG).
// A step with constrained rows on a backend that applies masks starts its forward first
// (Model::launch_forward), fills the masks while it runs, then gives the rows (Model::launch_sampling).
// wait() blocks until the step's results are on the host and returns one SampledRow per sampled sequence,
// in batch order.
//
// Contract: one step at a time: launch, wait, launch, ... Every token launch() reads must be known (no
// kPendingToken). The requests of a launched step must stay alive until wait() returns (host sampling and
// logprobs write to them); their num_computed is the caller's to advance. launch() and wait() throw what the
// model throws; the step is then over (nothing in flight).
#pragma once

#include <cstdint>
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
};

class Runner {
 public:
  Runner(model::Model& model, const EngineConfig& config);

  void launch(const SchedulerOutput& step);
  bool in_flight() const { return in_flight_; }
  // Valid until the next launch().
  const std::vector<SampledRow>& wait();
  // The last launch()'s token masks: wall time spent filling them (the device waits meanwhile, unless the
  // backend started the forward in launch_forward) and the rows whose constraint was asked for one.
  double last_token_mask_seconds() const { return masks_.last_seconds(); }
  int32_t last_num_constrained_rows() const { return masks_.num_constrained(); }

 private:
  void fill_token_masks();
  // rows_ from sampled_: each row's sampling settings (its RNG state advances) and token mask.
  void build_rows();
  void abandon_forward();
  void sample_on_host();

  model::Model& model_;
  bool device_sampling_ = true;  // EngineConfig::device_sampling
  int32_t vocab_size_ = 0;
  bool in_flight_ = false;
  bool on_device_ = false;  // the launched step samples on the model's device

  // The launched step (storage the batch's spans point into, reused step after step).
  std::vector<TokenId> tokens_;  // every sequence's new tokens, concatenated
  model::ForwardBatch batch_;
  std::vector<SampledRow> sampled_;            // the step's sampled rows, in batch order
  std::vector<TokenConstraint*> constraints_;  // per sampled row, null = unconstrained
  TokenMaskFiller masks_;                      // the sampled rows' token masks
  std::vector<model::RowSampling> rows_;
  model::StepResult result_;
};

}  // namespace gossamer::engine
