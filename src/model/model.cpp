#include "model/model.h"

#include <algorithm>
#include <array>
#include <utility>

#include "core/error.h"
#include "model/step_copy.h"

namespace gossamer::model {

// The default launch_step's copies of the steps in flight (two at most, oldest at `first`), and the tokens
// the last step run drew (the ids a step launched on top of it reads for its pending rows).
struct Model::DeferredSteps {
  std::array<StepCopy, 2> steps;
  int first = 0;
  int count = 0;
  std::vector<int32_t> last_drawn;
  bool last_failed = false;
};

Model::Model() = default;
Model::~Model() = default;

void Model::forward_sample(const ForwardBatch&, std::span<const RowSampling>, std::vector<int32_t>&,
                           std::vector<RowLogprobs>&) {
  GOSSAMER_THROW("the ", backend_name(), " backend does not sample on its device (use forward)");
}

void Model::launch_step(const ForwardBatch& batch, std::optional<std::span<const RowSampling>> rows) {
  if (!deferred_) deferred_ = std::make_unique<DeferredSteps>();
  DeferredSteps& deferred = *deferred_;
  const bool pending = std::any_of(batch.sequences.begin(), batch.sequences.end(),
                                   [](const SequenceInput& seq) { return seq.pending_from_row >= 0; });
  if (deferred.count > 0) {
    const StepCopy& before = deferred.steps[static_cast<size_t>((deferred.first + deferred.count - 1) % 2)];
    GOSSAMER_CHECK(feeds_pending_tokens_on_device() && deferred.count == 1 && rows && before.sampled,
                   "launch_step: a step is already in flight");
  }
  GOSSAMER_CHECK(!pending || (feeds_pending_tokens_on_device() && deferred.count == 1),
                 "launch_step: pending rows need a sampled step in flight on a backend that feeds them");
  StepCopy& step = deferred.steps[static_cast<size_t>((deferred.first + deferred.count) % 2)];
  step.assign(batch, rows, config().vocab_size);
  ++deferred.count;
}

void Model::launch_forward(const ForwardBatch& batch) {
  GOSSAMER_CHECK(forward_waiting_ == nullptr, "launch_forward: a forward already waits for its rows");
  forward_waiting_ = &batch;
}

void Model::launch_sampling(std::span<const RowSampling> rows) {
  GOSSAMER_CHECK(forward_waiting_ != nullptr, "launch_sampling without launch_forward");
  const ForwardBatch& batch = *std::exchange(forward_waiting_, nullptr);
  launch_step(batch, rows);
}

void Model::wait_step(StepResult& result) {
  GOSSAMER_CHECK(deferred_ && deferred_->count > 0, "wait_step: no step in flight");
  DeferredSteps& deferred = *deferred_;
  StepCopy& step = deferred.steps[static_cast<size_t>(deferred.first)];
  deferred.first = (deferred.first + 1) % 2;
  --deferred.count;  // NOTE: the step is over even when it throws
  const bool feeds = step.has_pending_tokens();
  const bool failed_before = deferred.last_failed;
  deferred.last_failed = true;  // until it returns
  if (feeds) {
    GOSSAMER_CHECK(!failed_before, "wait_step: the step its pending tokens come from failed");
    step.feed_pending_tokens(deferred.last_drawn);
  }
  deferred.last_drawn.clear();
  if (step.sampled) {
    forward_sample(step.batch, step.rows, result.tokens, result.logprobs);
    if (feeds_pending_tokens_on_device()) deferred.last_drawn = result.tokens;
  } else {
    forward(step.batch, result.logits);
  }
  deferred.last_failed = false;
}

}  // namespace gossamer::model
